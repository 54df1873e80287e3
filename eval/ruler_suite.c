// eval/ruler_suite.c — RULER's suite through a model: every (length, task, sample) document generated, answered over
// the ring by the dp groups in turn, its results shared with every rank; and the suite's results.json.
#include "eval/ruler_suite.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "core/common.h"

// RULER's answer budget per task (tokens_to_generate).
static int default_tokens(RulerTask t) {
    switch (t) {
    case RULER_NIAH: return 128;
    case RULER_VT: return 30;
    case RULER_CWE: return 120;
    case RULER_FWE: return 50;
    default: return 32;
    }
}

int ruler_task_tokens(const RulerSuite *s, int t) { return s->tokens ? s->tokens : default_tokens(s->specs[t].task); }

// A document's seed: the run's, apart for every task by its name (two presets of one kind must not share their keys,
// and a task gives the same documents whatever other tasks run with it).
static uint64_t task_seed(const RulerSuite *s, int t) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = s->names[t]; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return s->seed ^ h;
}

int ruler_suite_check(const RulerSuite *s, RulerTokMeasure *tm, char *why, size_t n) {
    for (int li = 0; li < s->n_len; li++)
        for (int t = 0; t < s->n_task; t++) {
            int64_t target = s->lengths[li] - (s->start >= 0) - ruler_task_tokens(s, t);   // the start token and the answer
            RulerDoc d;
            char gen[512];
            if (target < 1 || ruler_generate(&s->specs[t], task_seed(s, t), 0, (size_t)target, ruler_measure_tokens, tm, &d, gen,
                                             sizeof gen) != 0) {
                snprintf(why, n, "--lengths %" PRId64 ", task %s: %s%s (a length holds the prompt, the start token and %d answer "
                         "tokens)", s->lengths[li], s->names[t], target < 1 ? "no room for a prompt; use a longer length" : gen,
                         s->tokens ? " or fewer --tokens" : "", ruler_task_tokens(s, t));
                return -1;
            }
            ruler_doc_free(&d);
        }
    return 0;
}

// Document c's results (the reporting rank of its ring only: the others' stay 0 for the sums of share_results).
static void record(RulerResults *o, size_t c, const RulerAnswer *a, const RulerDoc *d) {
    o->scores[c] = a->score, o->prompt[c] = (double)a->prompt_tokens;
    size_t n = a->n + 2;
    for (int i = 0; i < d->n_items; i++) n += strlen(d->items[i]) + 1;
    char *t = xmalloc(n, "a sample's text"), *p = t;
    memcpy(p, a->text, a->n + 1), p += a->n + 1;
    for (int i = 0; i < d->n_items; i++) p += sprintf(p, "%s%s", i ? "\n" : "", d->items[i]);
    *p = 0;
    o->text[c] = t, o->text_n[c] = (uint64_t)(p + 1 - t);
    double add[4] = {(double)a->prefilled, a->prefill_s, a->made, a->decode_s};
    for (int i = 0; i < 4; i++) o->sums[i] += add[i];
}

// Every rank gets every document's results: numbers by sums (each document's come from one rank, zeros from the
// rest), texts packed at their offsets in one buffer of 64-bit words summed the same way (bytes of different
// documents never overlap, so the sum is a copy).
static void share_results(RulerResults *o, size_t cells, Comm *world) {
    comm_allreduce(world, o->scores, cells, COMM_F64, COMM_SUM, "ruler scores");
    comm_allreduce(world, o->prompt, cells, COMM_F64, COMM_SUM, "ruler prompt tokens");
    comm_allreduce(world, o->sums, 4, COMM_F64, COMM_SUM, "ruler timings");
    comm_allreduce(world, o->text_n, cells, COMM_U64, COMM_SUM, "ruler answer lengths");
    uint64_t total = 0;
    for (size_t c = 0; c < cells; c++) total += o->text_n[c];
    uint64_t *w = xcalloc((size_t)(total + 7) / 8 + 1, sizeof(uint64_t), "the answers");   // (total bytes) packed
    uint64_t at = 0;
    for (size_t c = 0; c < cells; at += o->text_n[c], c++)
        if (o->text[c]) memcpy((char *)w + at, o->text[c], (size_t)o->text_n[c]), free(o->text[c]);
    comm_allreduce(world, w, (size_t)(total + 7) / 8, COMM_U64, COMM_SUM, "ruler answers");
    at = 0;
    for (size_t c = 0; c < cells; at += o->text_n[c], c++) {
        o->text[c] = xmalloc((size_t)o->text_n[c], "a sample's text");
        memcpy(o->text[c], (char *)w + at, (size_t)o->text_n[c]);
    }
    free(w);
}

// One line a cell as it ends (a suite can run for hours): the score of the samples rank 0's group ran (all of them
// with one group; the table at the end has every group's).
static void cell_progress(const RulerSuite *s, int li, int t, int ran, double score, double seconds, int dp) {
    log_info("ruler: length %" PRId64 ", %s: %.1f %% of %d sample%s%s in %.1f s\n", s->lengths[li], s->names[t],
             ran ? 100 * score / ran : 0.0, ran, plural(ran), dp > 1 ? " (this group's)" : "", seconds);
}

// Every document of the suite, the dp groups taking them in turn: generated, prefilled over the group's ring, its
// answer decoded greedily and scored; then shared with every rank.
RulerResults ruler_suite_run(GPT *m, const Tokenizer *tok, const CommGrid *cg, const RulerSuite *s, RulerTokMeasure *tm) {
    size_t cells = (size_t)s->n_len * s->n_task * s->samples;
    RulerResults o = {xcalloc(cells, sizeof(double), "the scores"), xcalloc(cells, sizeof(double), "the prompt lengths"),
                xcalloc(cells, sizeof(char *), "the answers"), xcalloc(cells, sizeof(uint64_t), "the answer lengths")};
    double t_run = now_seconds();
    RulerPrefill keep = {0};
    for (int li = 0; li < s->n_len; li++) {
        double t_len = now_seconds();
        for (int t = 0; t < s->n_task; t++) {
            double t_cell = now_seconds(), score = 0;
            int ran = 0;
            for (int k = 0; k < s->samples; k++) {
                size_t c = ((size_t)li * s->n_task + t) * s->samples + k, asks = s->specs[t].asks > 1 ? (size_t)s->specs[t].asks : 1;
                if ((int)((c - (size_t)k + (size_t)k / asks) % (size_t)cg->dp) != cg->dp_index) continue;   // a document's asks: one group
                RulerDoc d;
                char why[512];
                int64_t target = s->lengths[li] - (s->start >= 0) - ruler_task_tokens(s, t);
                if (ruler_generate(&s->specs[t], task_seed(s, t), (uint64_t)k, (size_t)target, ruler_measure_tokens, tm, &d, why, sizeof why))
                    fail_data(NULL, "ruler: --lengths %" PRId64 ", task %s, sample %d: %s", s->lengths[li], s->names[t], k, why);
                RulerAnswer a;
                ruler_answer(m, cg->ring, tok, s->start, &d, ruler_task_tokens(s, t), asks > 1 ? &keep : NULL, &a);
                if (cg->sp_index == 0) record(&o, c, &a, &d);
                score += a.score, ran++;
                ruler_answer_free(&a);
                ruler_doc_free(&d);
            }
            cell_progress(s, li, t, ran, score, now_seconds() - t_cell, cg->dp);
        }
        log_info("ruler: length %" PRId64 ": %d task%s x %d sample%s in %.1f s\n", s->lengths[li], s->n_task, plural(s->n_task),
                 s->samples, plural(s->samples), now_seconds() - t_len);
    }
    ruler_prefill_free(&keep);
    share_results(&o, cells, cg->world);
    o.seconds = now_seconds() - t_run;
    return o;
}

// s with every byte that is not part of valid UTF-8 replaced by '?' (results.json is UTF-8).
static void utf8_clean(char *s) {
    for (unsigned char *p = (unsigned char *)s; *p;) {
        int len = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4 : 0;
        bool ok = len > 0;
        for (int i = 1; i < len && ok; i++) ok = (p[i] & 0xC0) == 0x80;
        if (!ok) *p++ = '?';
        else p += len;
    }
}

static cJSON *cell_json(const RulerSuite *s, const RulerResults *o, const RulerTable *tb, int li, int t) {
    cJSON *cell = cJSON_CreateObject(), *samples = cJSON_CreateArray();
    cJSON_AddNumberToObject(cell, "length", (double)s->lengths[li]);
    cJSON_AddStringToObject(cell, "task", s->names[t]);
    cJSON_AddNumberToObject(cell, "score", 100 * ruler_cell_mean(tb, li, t));
    for (int k = 0; k < s->samples; k++) {
        size_t c = ((size_t)li * s->n_task + t) * s->samples + k;
        char *answer = o->text[c], *items = answer + strlen(answer) + 1;
        cJSON *j = cJSON_CreateObject(), *exp = cJSON_CreateArray();
        cJSON_AddNumberToObject(j, "score", 100 * o->scores[c]);
        cJSON_AddNumberToObject(j, "prompt_tokens", o->prompt[c]);
        utf8_clean(answer);
        cJSON_AddStringToObject(j, "answer", answer);
        for (char *p = items; *p;) {
            size_t len = strcspn(p, "\n");
            char item[RULER_ITEM_CHARS];
            snprintf(item, sizeof item, "%.*s", (int)len, p);
            cJSON_AddItemToArray(exp, cJSON_CreateString(item));
            p += len + (p[len] == '\n');
        }
        cJSON_AddItemToObject(j, "expected", exp);
        cJSON_AddItemToArray(samples, j);
    }
    cJSON_AddItemToObject(cell, "samples", samples);
    return cell;
}

// How and when the table was made: the command line and the date (UTC).
static void add_provenance(cJSON *root, const RulerRunInfo *ri) {
    char date[64] = "";
    time_t now = time(NULL);
    struct tm utc;
    if (gmtime_r(&now, &utc)) strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
    cJSON_AddStringToObject(root, "command", ri->command);
    cJSON_AddStringToObject(root, "date", date);
}

// DIR/results.json (rank 0).
void ruler_write_json(const char *dir, const RulerRunInfo *ri, const RulerSuite *s, const RulerResults *o, const RulerTable *tb) {
    cJSON *root = cJSON_CreateObject(), *lengths = cJSON_CreateArray(), *tasks = cJSON_CreateArray(), *tokens = cJSON_CreateObject(),
          *scores = cJSON_CreateObject(), *avg = cJSON_CreateArray(), *cells = cJSON_CreateArray();
    add_provenance(root, ri);
    cJSON_AddStringToObject(root, "ckpt", ri->ckpt);
    cJSON_AddStringToObject(root, "label", ri->label);
    cJSON_AddStringToObject(root, "tokenizer", ri->tokenizer);
    if (ri->haystack) cJSON_AddStringToObject(root, "haystack", ri->haystack);
    else cJSON_AddNullToObject(root, "haystack");
    cJSON_AddNumberToObject(root, "seed", (double)s->seed);
    cJSON_AddNumberToObject(root, "samples", s->samples);
    cJSON_AddNumberToObject(root, "threshold", ri->threshold);
    for (int li = 0; li < s->n_len; li++) {
        cJSON_AddItemToArray(lengths, cJSON_CreateNumber((double)s->lengths[li]));
        cJSON_AddItemToArray(avg, cJSON_CreateNumber(100 * ruler_length_mean(tb, li)));
    }
    for (int t = 0; t < s->n_task; t++) {
        cJSON *row = cJSON_CreateArray();
        cJSON_AddItemToArray(tasks, cJSON_CreateString(s->names[t]));
        cJSON_AddNumberToObject(tokens, s->names[t], ruler_task_tokens(s, t));
        for (int li = 0; li < s->n_len; li++) cJSON_AddItemToArray(row, cJSON_CreateNumber(100 * ruler_cell_mean(tb, li, t)));
        cJSON_AddItemToObject(scores, s->names[t], row);
    }
    cJSON_AddItemToObject(root, "lengths", lengths);
    cJSON_AddItemToObject(root, "tasks", tasks);
    cJSON_AddItemToObject(root, "answer_tokens", tokens);
    cJSON_AddItemToObject(root, "scores", scores);
    cJSON_AddItemToObject(root, "average", avg);
    cJSON_AddNumberToObject(root, "effective_length", (double)ruler_effective_length(tb, ri->threshold / 100));
    cJSON_AddNumberToObject(root, "seconds", o->seconds);
    double prefill = o->sums[1] > 0 ? o->sums[0] / o->sums[1] : 0, decode = o->sums[3] > 0 ? o->sums[2] / o->sums[3] : 0;
    cJSON_AddNumberToObject(root, "prefill_tokens_per_s", prefill);   // per ring: tokens over the rings' summed seconds
    cJSON_AddNumberToObject(root, "decode_tokens_per_s", decode);
    for (int li = 0; li < s->n_len; li++)
        for (int t = 0; t < s->n_task; t++) cJSON_AddItemToArray(cells, cell_json(s, o, tb, li, t));
    cJSON_AddItemToObject(root, "cells", cells);
    char *text = cJSON_Print(root), path[4200];
    if (!text) fail("ruler: out of memory printing results.json");
    snprintf(path, sizeof path, "%s/results.json", dir);
    FILE *f = xfopen(path, "wb");
    xfwrite(text, strlen(text), f, path);
    xfwrite("\n", 1, f, path);
    xfclose(f, path);
    free(text);
    cJSON_Delete(root);
    log_info("ruler: %.1f s (per ring: prefill %.0f tokens/s, decode %.1f tokens/s); results in %s\n", o->seconds, prefill, decode,
             path);
}

void ruler_results_free(RulerResults *o, const RulerSuite *s) {
    for (size_t c = 0; c < (size_t)s->n_len * s->n_task * s->samples; c++) free(o->text[c]);
    free(o->scores), free(o->prompt), free(o->text), free(o->text_n);
}
