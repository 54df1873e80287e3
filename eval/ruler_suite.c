// eval/ruler_suite.c — RULER's suite through a model, a task of the needle harness: the measure, a document's prompt and its answer taken until complete; every (length, task, sample) document generated and answered; the suite's results.json.
#include "eval/ruler_suite.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "checkpoints/model_tokenizer.h"
#include "core/common.h"

size_t ruler_measure_tokens(void *ctx, const char *text, size_t n) {
    RulerTokMeasure *m = ctx;
    size_t got = 0;
    tokenizer_encode(&m->enc, (const unsigned char *)text, n, &m->ids, &got, &m->cap);
    return got;
}

void ruler_prompt(const Tokenizer *tok, int64_t start, const RulerDoc *d, int max_tokens, bool context, NeedlePrompt *p) {
    *p = (NeedlePrompt){.max_new = max_tokens};
    p->n = model_prompt_ids(tok, start, (const unsigned char *)d->text, d->n, &p->ids);
    if (!context) return;
    uint32_t *ctx;   // (n_ctx)
    size_t n_ctx = model_prompt_ids(tok, start, (const unsigned char *)d->text, d->question_at, &ctx);
    if (n_ctx < p->n && memcmp(ctx, p->ids, n_ctx * sizeof *ctx) == 0) p->n_ctx = n_ctx;
    free(ctx);
}

NeedleTake ruler_take(void *answer, int id) {
    RulerAnswer *a = answer;
    if (id == a->tok->eos) return NEEDLE_END;
    size_t len;
    const unsigned char *b = tokenizer_token(a->tok, (uint32_t)id, &len);
    if (!b) len = 0;
    if (a->n + len + 1 > a->cap) a->text = xrealloc(a->text, a->cap = (a->n + len + 1) * 2, "an answer");
    for (size_t i = 0; i < len; i++) a->text[a->n++] = b[i] ? (char)b[i] : ' ';
    a->text[a->n] = 0;
    return ruler_score(a->d, a->text) == 1 ? NEEDLE_DONE : NEEDLE_MORE;
}

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

int ruler_suite_check(const RulerSuite *s, char *why, size_t n) {
    for (int li = 0; li < s->n_len; li++)
        for (int t = 0; t < s->n_task; t++) {
            int64_t target = s->lengths[li] - (s->start >= 0) - ruler_task_tokens(s, t);   // the start token and the answer
            RulerDoc d;
            char gen[512];
            if (target < 1 || ruler_generate(&s->specs[t], task_seed(s, t), 0, (size_t)target, ruler_measure_tokens, s->tm, &d, gen,
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

// A sample being answered: its document, prompt and answer.
typedef struct {
    RulerDoc d;
    NeedlePrompt p;
    RulerAnswer a;
} Sample;

static void *sample_make(const void *ctx, const NeedleJob *j, NeedlePrompt *p) {
    const RulerSuite *s = ctx;
    Sample *x = xcalloc(1, sizeof *x, "a RULER sample");
    char why[512];
    int64_t target = s->lengths[j->li] - (s->start >= 0) - ruler_task_tokens(s, j->col);
    if (ruler_generate(&s->specs[j->col], task_seed(s, j->col), (uint64_t)j->sample, (size_t)target, ruler_measure_tokens, s->tm,
                       &x->d, why, sizeof why))
        fail_data(NULL, "ruler: --lengths %" PRId64 ", task %s, sample %d: %s", s->lengths[j->li], s->names[j->col], j->sample, why);
    ruler_prompt(s->tok, s->start, &x->d, ruler_task_tokens(s, j->col), s->specs[j->col].asks > 1, &x->p);
    x->a = (RulerAnswer){.d = &x->d, .tok = s->tok};
    *p = x->p;
    return x;
}

static NeedleTake sample_take(void *x, int id) { return ruler_take(&((Sample *)x)->a, id); }

// The sample's score, its prompt's ids, its answer and expected items as text (ruler_suite_run).
static void sample_finish(const void *ctx, void *sample, NeedleRecord *rec) {
    Sample *x = sample;
    const char *answer = x->a.text ? x->a.text : "";
    (void)ctx;
    rec->values[0] = ruler_score(&x->d, answer), rec->values[1] = (double)x->p.n;
    size_t n = x->a.n + 2;
    for (int i = 0; i < x->d.n_items; i++) n += strlen(x->d.items[i]) + 1;
    char *t = xmalloc(n, "a sample's text"), *p = t;
    memcpy(p, answer, x->a.n + 1), p += x->a.n + 1;
    for (int i = 0; i < x->d.n_items; i++) p += sprintf(p, "%s%s", i ? "\n" : "", x->d.items[i]);
    *p = 0;
    rec->text = t, rec->text_n = (size_t)(p + 1 - t);
    ruler_doc_free(&x->d);
    free(x->p.ids), free(x->a.text), free(x);
}

NeedleResults ruler_suite_run(GPT *m, const CommGrid *cg, const RulerSuite *s) {
    int asks[RULER_MAX_TASKS];
    for (int t = 0; t < s->n_task; t++) asks[t] = s->specs[t].asks;
    NeedleTask t = {.name = "ruler", .col_word = "task", .sample_word = "sample", .col_names = s->names, .n_len = s->n_len,
                    .n_col = s->n_task, .samples = s->samples, .n_values = 2, .lengths = s->lengths,
                    .asks = asks, .ctx = s, .make = sample_make, .take = sample_take, .finish = sample_finish};
    return needle_run(m, cg, &t);
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

// Cell c after its length: its task, its score, every sample's score, prompt, answer and expected items.
static void cell_json(const void *ctx, const NeedleResults *r, int c, cJSON *cell) {
    const RulerSuite *s = ctx;
    cJSON *samples = cJSON_CreateArray();
    cJSON_AddStringToObject(cell, "task", s->names[c % s->n_task]);
    cJSON_AddNumberToObject(cell, "score", 100 * needle_cell_mean(r, c, 0));
    for (size_t job = (size_t)c * s->samples; job < (size_t)(c + 1) * s->samples; job++) {
        char *answer = r->text[job], *items = answer + strlen(answer) + 1;
        cJSON *j = cJSON_CreateObject(), *exp = cJSON_CreateArray();
        cJSON_AddNumberToObject(j, "score", 100 * r->values[job * r->n_values]);
        cJSON_AddNumberToObject(j, "prompt_tokens", r->values[job * r->n_values + 1]);
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
void ruler_write_json(const char *dir, const RulerRunInfo *ri, const RulerSuite *s, const NeedleResults *r) {
    cJSON *root = cJSON_CreateObject(), *lengths = cJSON_CreateArray(), *tasks = cJSON_CreateArray(), *tokens = cJSON_CreateObject(),
          *scores = cJSON_CreateObject(), *avg = cJSON_CreateArray();
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
        cJSON_AddItemToArray(avg, cJSON_CreateNumber(100 * needle_length_mean(r, li)));
    }
    for (int t = 0; t < s->n_task; t++) {
        cJSON *row = cJSON_CreateArray();
        cJSON_AddItemToArray(tasks, cJSON_CreateString(s->names[t]));
        cJSON_AddNumberToObject(tokens, s->names[t], ruler_task_tokens(s, t));
        for (int li = 0; li < s->n_len; li++) cJSON_AddItemToArray(row, cJSON_CreateNumber(100 * needle_cell_mean(r, li * s->n_task + t, 0)));
        cJSON_AddItemToObject(scores, s->names[t], row);
    }
    cJSON_AddItemToObject(root, "lengths", lengths);
    cJSON_AddItemToObject(root, "tasks", tasks);
    cJSON_AddItemToObject(root, "answer_tokens", tokens);
    cJSON_AddItemToObject(root, "scores", scores);
    cJSON_AddItemToObject(root, "average", avg);
    cJSON_AddNumberToObject(root, "effective_length", (double)needle_effective_length(r, ri->threshold / 100));
    cJSON_AddNumberToObject(root, "seconds", r->total_s);
    double prefill = r->sums[1] > 0 ? r->sums[0] / r->sums[1] : 0, decode = r->sums[3] > 0 ? r->sums[2] / r->sums[3] : 0;
    cJSON_AddNumberToObject(root, "prefill_tokens_per_s", prefill);   // per ring: tokens over the rings' summed seconds
    cJSON_AddNumberToObject(root, "decode_tokens_per_s", decode);
    char path[4200];
    snprintf(path, sizeof path, "%s/results.json", dir);
    needle_write_json(path, root, r, cell_json, s);
    log_info("ruler: %.1f s (per ring: prefill %.0f tokens/s, decode %.1f tokens/s); results in %s\n", r->total_s, prefill, decode,
             path);
}
