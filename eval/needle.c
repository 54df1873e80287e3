// eval/needle.c — the needle harness: a task's documents in grid order, each dp group its turn, every answer decoded greedily from one decoder (a shared context kept prefilled), the records shared with every rank; the cells' scores, the results JSON and its directory.
#include "eval/needle.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "eval/sample.h"

void needle_decoder_free(NeedleDecoder *k) {
    if (k->max_new) decoder_free(&k->dec);
    free(k->ctx);
    *k = (NeedleDecoder){0};
}

// k's decoder with room for max_new tokens after a prefill: the one it has, or a larger one (nothing kept).
static void decoder_room(NeedleDecoder *k, GPT *m, Comm *ring, int max_new) {
    if (k->max_new >= max_new) return;
    needle_decoder_free(k);
    decoder_init(&k->dec, m, ring, max_new);
    k->max_new = max_new;
}

// The logits after p's prompt: the context from k's prefill (made and kept first unless k holds it) and the rest
// fed token by token; or, without a context, the prompt prefilled whole.
static const float *prompt_logits(NeedleDecoder *k, GPT *m, Comm *ring, const NeedlePrompt *p, NeedleStats *st) {
    size_t n_ctx = p->n_ctx < p->n ? p->n_ctx : 0;
    double t0 = now_seconds();
    const float *logits = NULL;
    if (!n_ctx) {
        decoder_room(k, m, ring, p->max_new);
        free(k->ctx), k->ctx = NULL, k->n_ctx = 0;   // the prefill takes the cache a kept context was in
        logits = decode_prefill(&k->dec, (const int32_t *)p->ids, (int)p->n);   // ids < vocab < 2^31
        st->prefilled = p->n;
    } else {
        int need = (int)(p->n - n_ctx) + p->max_new;   // what the decoder takes after the context
        if (k->n_ctx == n_ctx && memcmp(k->ctx, p->ids, n_ctx * sizeof *p->ids) == 0 && need <= k->max_new) {
            decode_rewind(&k->dec, k->mark);
        } else {
            free(k->ctx), k->ctx = NULL, k->n_ctx = 0;
            decoder_room(k, m, ring, need + 64);   // the next documents' questions may be a little longer
            decode_prefill(&k->dec, (const int32_t *)p->ids, (int)n_ctx);
            k->ctx = xmalloc(n_ctx * sizeof *k->ctx, "a kept context"), memcpy(k->ctx, p->ids, n_ctx * sizeof *k->ctx);
            k->n_ctx = n_ctx, k->mark = decode_mark(&k->dec), st->prefilled += n_ctx;
        }
        for (size_t i = n_ctx; i < p->n; i++) logits = decode_step(&k->dec, (int)p->ids[i]);
        st->prefilled += p->n - n_ctx;
    }
    st->prefill_s = now_seconds() - t0;
    return logits;
}

void needle_answer(NeedleDecoder *k, GPT *m, Comm *ring, const NeedlePrompt *p, NeedleTakeFn take, void *answer,
                   NeedleStats *st) {
    *st = (NeedleStats){0};
    const float *logits = prompt_logits(k, m, ring, p, st);
    double t1 = now_seconds();
    for (int i = 0; i < p->max_new; i++) {
        int id = decode_agree(&k->dec, logits_argmax(logits, m->cfg.vocab_size));
        NeedleTake t = take(answer, id);   // the same id on every rank: every rank stops at the same token
        if (t == NEEDLE_END) break;
        st->made++;
        if (t == NEEDLE_DONE) break;
        if (i + 1 < p->max_new) logits = decode_step(&k->dec, id);
    }
    st->decode_s = now_seconds() - t1;
}

// Job j is this dp group's: the groups take the documents in turn, and a document's asks (samples a·asks ..
// a·asks + asks − 1 of a cell) are one document.
static bool mine(const NeedleTask *t, const NeedleJob *j, const CommGrid *cg) {
    size_t asks = t->asks && t->asks[j->col] > 1 ? (size_t)t->asks[j->col] : 1;
    return (int)((j->index - (size_t)j->sample + (size_t)j->sample / asks) % (size_t)cg->dp) == cg->dp_index;
}

// This group's documents of cell (li, col), one at a time: made, answered, recorded. One log line as the cell ends
// with col_names (a run can take hours): the score of the samples this group ran.
static void run_cell(const NeedleTask *t, GPT *m, const CommGrid *cg, NeedleDecoder *dec, NeedleResults *r, int li, int col) {
    double t_cell = now_seconds(), score = 0;
    int ran = 0;
    for (int k = 0; k < t->samples; k++) {
        NeedleJob j = {li, col, k, ((size_t)li * t->n_col + col) * t->samples + k};
        if (!mine(t, &j, cg)) continue;
        double t0 = now_seconds();
        NeedlePrompt p;
        void *answer = t->make(t->ctx, &j, &p);
        NeedleStats st;
        needle_answer(dec, m, cg->ring, &p, t->take, answer, &st);
        NeedleRecord rec = {{0}};
        t->finish(t->ctx, answer, &rec);
        score += rec.values[0], ran++;
        if (cg->sp_index != 0) {   // the reporting rank of the ring records the job: the others' stay 0 for share's sums
            free(rec.text);
            continue;
        }
        memcpy(r->values + j.index * r->n_values, rec.values, (size_t)r->n_values * sizeof(double));
        r->text[j.index] = rec.text, r->text_n[j.index] = rec.text_n;
        double add[4] = {(double)st.prefilled, st.prefill_s, st.made, st.decode_s};
        for (int i = 0; i < 4; i++) r->sums[i] += add[i];
        r->seconds[(size_t)li * t->n_col + col] += now_seconds() - t0;
    }
    if (t->col_names)
        log_info("%s: length %" PRId64 ", %s: %.1f %% of %d %s%s%s in %.1f s\n", t->name, t->lengths[li], t->col_names[col],
                 ran ? 100 * score / ran : 0.0, ran, t->sample_word, plural(ran), cg->dp > 1 ? " (this group's)" : "",
                 now_seconds() - t_cell);
}

// Every rank gets every job's record: numbers by sums (each job's come from one rank, zeros from the rest), texts
// packed at their offsets in one buffer of 64-bit words summed the same way (bytes of different jobs never
// overlap, so the sum is a copy).
static void share(NeedleResults *r, Comm *world) {
    size_t cells = (size_t)r->n_len * r->n_col, jobs = cells * r->samples;
    comm_allreduce(world, r->values, jobs * r->n_values, COMM_F64, COMM_SUM, "the scores");
    comm_allreduce(world, r->seconds, cells, COMM_F64, COMM_SUM, "the cells' timings");
    comm_allreduce(world, r->sums, 4, COMM_F64, COMM_SUM, "the timings");
    comm_allreduce(world, r->text_n, jobs, COMM_U64, COMM_SUM, "the answers' lengths");
    uint64_t total = 0, at = 0;
    for (size_t c = 0; c < jobs; c++) total += r->text_n[c];
    uint64_t *w = xcalloc((size_t)(total + 7) / 8 + 1, sizeof(uint64_t), "the answers");   // (total bytes) packed
    for (size_t c = 0; c < jobs; at += r->text_n[c], c++)
        if (r->text[c]) memcpy((char *)w + at, r->text[c], (size_t)r->text_n[c]), free(r->text[c]);
    comm_allreduce(world, w, (size_t)(total + 7) / 8, COMM_U64, COMM_SUM, "the answers");
    at = 0;
    for (size_t c = 0; c < jobs; at += r->text_n[c], c++) {
        r->text[c] = xmalloc((size_t)r->text_n[c] + 1, "an answer");
        memcpy(r->text[c], (char *)w + at, (size_t)r->text_n[c]);
    }
    free(w);
}

NeedleResults needle_run(GPT *m, const CommGrid *cg, const NeedleTask *t) {
    size_t cells = (size_t)t->n_len * t->n_col, jobs = cells * t->samples;
    NeedleResults r = {t->n_len, t->n_col, t->samples, t->n_values, t->lengths, xcalloc(jobs * t->n_values, sizeof(double), "the scores"),
                       xcalloc(jobs, sizeof(char *), "the answers"), xcalloc(jobs, sizeof(uint64_t), "the answers' lengths"),
                       xcalloc(cells, sizeof(double), "the cells' timings")};
    NeedleDecoder dec = {0};
    double t_run = now_seconds();
    for (int li = 0; li < t->n_len; li++) {
        double t_len = now_seconds();
        for (int col = 0; col < t->n_col; col++) run_cell(t, m, cg, &dec, &r, li, col);
        log_info("%s: length %" PRId64 ": %d %s%s x %d %s%s in %.1f s\n", t->name, t->lengths[li], t->n_col, t->col_word,
                 plural(t->n_col), t->samples, t->sample_word, plural(t->samples), now_seconds() - t_len);
    }
    needle_decoder_free(&dec);
    share(&r, cg->world);
    r.total_s = now_seconds() - t_run;
    return r;
}

void needle_results_free(NeedleResults *r) {
    for (size_t c = 0; r->text && c < (size_t)r->n_len * r->n_col * r->samples; c++) free(r->text[c]);
    free(r->values), free(r->text), free(r->text_n), free(r->seconds);
    *r = (NeedleResults){0};
}

double needle_cell_sum(const NeedleResults *r, int c, int v) {
    double sum = 0;
    for (int k = 0; k < r->samples; k++) sum += r->values[((size_t)c * r->samples + k) * r->n_values + v];
    return sum;
}

double needle_cell_mean(const NeedleResults *r, int c, int v) { return r->samples ? needle_cell_sum(r, c, v) / r->samples : 0; }

double needle_length_mean(const NeedleResults *r, int li) {
    double sum = 0;
    for (int col = 0; col < r->n_col; col++) sum += needle_cell_mean(r, li * r->n_col + col, 0);
    return r->n_col ? sum / r->n_col : 0;
}

int64_t needle_effective_length(const NeedleResults *r, double threshold) {
    int64_t eff = 0;
    for (int li = 0; li < r->n_len && needle_length_mean(r, li) >= threshold; li++) eff = r->lengths[li];
    return eff;
}

void needle_write_json(const char *path, cJSON *root, const NeedleResults *r, NeedleCellJson cell, const void *ctx) {
    cJSON *cells = cJSON_AddArrayToObject(root, "cells");
    for (int c = 0; c < r->n_len * r->n_col; c++) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "length", (double)r->lengths[c / r->n_col]);
        cell(ctx, r, c, o);
        cJSON_AddItemToArray(cells, o);
    }
    char *text = cJSON_Print(root);
    if (!text) fail("%s: out of memory while writing the results", path);
    FILE *f = xfopen(path, "w");
    xfwrite(text, strlen(text), f, path);
    xfwrite("\n", 1, f, path);
    xfclose(f, path);
    free(text);
    cJSON_Delete(root);
}

void needle_check_out(const char *dir, const char *out, const char *what, Comm *world) {
    char why[4400] = "";
    if (comm_rank(world) == 0) {
        struct stat st;
        if (stat(dir, &st) != 0 && mkdir_parents(dir) != 0) snprintf(why, sizeof why, "cannot create %s (%s)", dir, strerror(errno));
        else if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) snprintf(why, sizeof why, "%s is not a directory", dir);
        else if (access(dir, W_OK) != 0) snprintf(why, sizeof why, "cannot write into %s (%s)", dir, strerror(errno));
    }
    double bad = why[0] != 0;
    comm_allreduce(world, &bad, 1, COMM_F64, COMM_MAX, "the --out check");
    if (bad) comm_fail_usage_all("--out %s: %s; give a writable %s", out, why, what);
}
