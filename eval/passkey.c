// eval/passkey.c — the passkey grid: its depths and checks, each trial's document in the model's tokens, the harness's task (the key decoded greedily over the ring), the scores, the result files (OUT.json, OUT.csv, OUT.docs.jsonl).
#include "eval/passkey.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "tokenizer/tokenizer.h"

// start:stop:step with stop included; 0 or -1 with why.
static int depth_range(PasskeyGrid *g, const char *spec, double a, double b, double step, char *why, size_t n) {
    if (!(step > 0) || !(b >= a)) {
        snprintf(why, n, "--depths %s: need start <= stop and step > 0, e.g. 0:1:0.1", spec);
        return -1;
    }
    double count = floor((b - a) / step + 1e-9) + 1;
    if (count > PASSKEY_MAX_DEPTHS) {
        snprintf(why, n, "--depths %s: %.0f depths, at most %d; use a larger step", spec, count, PASSKEY_MAX_DEPTHS);
        return -1;
    }
    for (int i = 0; i < (int)count; i++) g->depths[g->n_depth++] = a + i * step;
    return 0;
}

// A comma list; 0 or -1 with why.
static int depth_list(PasskeyGrid *g, const char *spec, char *why, size_t n) {
    for (const char *p = spec; *p;) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || (*end != ',' && *end)) {
            snprintf(why, n, "--depths %s: write start:stop:step (0:1:0.1) or a list (0,0.5,1)", spec);
            return -1;
        }
        if (g->n_depth == PASSKEY_MAX_DEPTHS) {
            snprintf(why, n, "--depths: at most %d depths", PASSKEY_MAX_DEPTHS);
            return -1;
        }
        g->depths[g->n_depth++] = v;
        p = *end ? end + 1 : end;
    }
    return 0;
}

int passkey_grid_depths(PasskeyGrid *g, const char *spec, char *why, size_t n) {
    double a, b, step;
    int used = 0;
    g->n_depth = 0;
    bool range = sscanf(spec, "%lf:%lf:%lf%n", &a, &b, &step, &used) == 3 && spec[used] == 0;
    if ((range ? depth_range(g, spec, a, b, step, why, n) : depth_list(g, spec, why, n)) != 0) return -1;
    if (g->n_depth == 0) {
        snprintf(why, n, "--depths is empty; write e.g. --depths 0:1:0.1");
        return -1;
    }
    for (int i = 0; i < g->n_depth; i++) {
        if (fabs(g->depths[i] - 1) < 1e-9) g->depths[i] = 1;   // 0:1:0.1 lands on 1 up to rounding
        if (!(g->depths[i] >= 0 && g->depths[i] <= 1)) {
            snprintf(why, n, "--depths %s: depth %g is outside 0..1 (0 = the key right after the intro, 1 = just before the"
                     " question)", spec, g->depths[i]);
            return -1;
        }
    }
    return 0;
}

int passkey_grid_check(const PasskeyGrid *g, char *why, size_t n) {
    if (g->trials < 1) {
        snprintf(why, n, "--trials must be at least 1 (got %d)", g->trials);
        return -1;
    }
    long long docs = (long long)g->n_len * g->n_depth * g->trials;
    if (docs > PASSKEY_MAX_DOCS) {
        snprintf(why, n, "--trials %d: %d length%s x %d depth%s x %d trials is %lld documents, more than the %d (1M) one call "
                 "evaluates; give fewer trials, lengths or depths", g->trials, g->n_len, plural(g->n_len), g->n_depth,
                 plural(g->n_depth), g->trials, docs, PASSKEY_MAX_DOCS);
        return -1;
    }
    if (g->distractors < 0 || g->distractors > PASSKEY_MAX_DISTRACTORS) {
        snprintf(why, n, "--distractors %d: give 0..%d", g->distractors, PASSKEY_MAX_DISTRACTORS);
        return -1;
    }
    uint64_t least = passkey_min_len(g->text, g->distractors) + 2;
    for (int i = 0; i < g->n_len; i++)
        if ((uint64_t)g->lengths[i] < least) {
            snprintf(why, n, "--lengths: %" PRId64 " tokens is too short for a passkey document%s (at least %" PRIu64
                     " with its EOS); use longer lengths%s", g->lengths[i], g->distractors ? " with its distractors" : "", least,
                     g->distractors ? " or fewer --distractors" : "");
            return -1;
        }
    return 0;
}

int passkey_grid_load_haystack(PasskeyGrid *g, char *why, size_t n) {
    haystack_load(g->haystack, &g->hay);
    haystack_encode(&g->hay, g->tok);
    for (int i = 0; i < g->n_len; i++)
        if (g->hay.n < (uint64_t)g->lengths[i]) {
            if (g->text)
                snprintf(why, n, "--haystack %s holds %" PRIu64 " tokens of text (%" PRIu64 " bytes), fewer than a document of --lengths "
                         "%" PRId64 "; give more text or shorter --lengths", g->haystack, g->hay.n, g->hay.bytes, g->lengths[i]);
            else
                snprintf(why, n, "--haystack %s holds %" PRIu64 " bytes of text, fewer than a document of --lengths %" PRId64 "; give "
                         "more text or shorter --lengths", g->haystack, g->hay.n, g->lengths[i]);
            return -1;
        }
    return 0;
}

int passkey_grid_tokenizer(PasskeyGrid *g, const Tokenizer *t, int model_vocab, const char *path, char *why, size_t n) {
    if (!tokenizer_can_encode(t)) {
        snprintf(why, n, "%s: its tokenizer (%s, vocab %u) is known by id only; passkey documents are text: import the model with "
                 "its tokenizer.json", path, t->id, t->vocab_size);
        return -1;
    }
    if (t->vocab_size > (uint32_t)model_vocab) {
        snprintf(why, n, "%s: its tokenizer has %u ids, more than the model's vocab %d", path, t->vocab_size, model_vocab);
        return -1;
    }
    g->tok = t->bpe ? t : NULL;
    g->text = synth_text_new(t);
    return 0;
}

void passkey_grid_free(PasskeyGrid *g) {
    haystack_free(&g->hay);
    synth_text_free(g->text);
    g->text = NULL;
}

// The haystack window of a trial: len tokens of the text starting where (seed, len, trial) says, wrapping
// around at its end; the same window for the same trial whatever the ranks. Returns where it starts.
static uint64_t hay_window(const Haystack *h, uint64_t seed, uint64_t len, int trial, uint32_t *out) {
    Rng r;
    rng_seed(&r, seed * 0xA0761D6478BD642Full ^ (len * 0xE7037ED1A0B428DBull + (uint64_t)trial));
    uint64_t at = rng_below(&r, h->n);
    for (uint64_t i = 0; i < len; i++) out[i] = h->tok[(at + i) % h->n];
    return at;
}

uint64_t passkey_trial_doc(const PasskeyGrid *g, int64_t len, double depth, int trial, uint32_t *hay, uint32_t *doc,
                           PasskeyInfo *info) {
    uint64_t content = (uint64_t)len - 1, at = 0;
    if (g->haystack) at = hay_window(&g->hay, g->seed, content, trial, hay);
    synth_passkey(g->text, g->seed, (uint64_t)trial, content, depth, g->distractors, g->haystack ? hay : NULL, doc, info);
    return at;
}

int passkey_answer_add(const Tokenizer *t, int id, int32_t *answer, int got) {
    size_t len = 0;
    const unsigned char *b = id < 0 || id == t->eos || id == t->bos || id == t->pad ? NULL : tokenizer_token(t, (uint32_t)id, &len);
    if (!b) return -1;
    for (size_t i = 0; i < len && got < PASSKEY_KEY_DIGITS; i++)
        if (got || !isspace(b[i])) answer[got++] = b[i];
    return got;
}

void passkey_answer_text(const int32_t *answer, char *out) {
    for (int d = 0; d < PASSKEY_KEY_DIGITS; d++) out[d] = answer[d] >= 32 && answer[d] < 127 ? (char)answer[d] : '?';
    out[PASSKEY_KEY_DIGITS] = 0;
}

PasskeyScore passkey_score(const PasskeyInfo *info, int distractors, const char *answer) {
    char key[8], first[8];
    snprintf(key, sizeof key, "%05u", info->key);
    snprintf(first, sizeof first, "%05u", info->first_key);
    PasskeyScore sc = {0, 0, 0, 0, 0};
    for (int d = 0; d < PASSKEY_KEY_DIGITS; d++) sc.digits += answer[d] == key[d];
    PasskeyAnswer kind = passkey_answer_kind(answer, info->key, info->others, distractors);
    sc.exact = kind == PASSKEY_ANSWER_EXACT;
    sc.other = kind == PASSKEY_ANSWER_OTHER_KEY;
    sc.first = kind == PASSKEY_ANSWER_OTHER_KEY && memcmp(answer, first, PASSKEY_KEY_DIGITS) == 0;
    sc.drifted = kind == PASSKEY_ANSWER_DRIFTED;
    return sc;
}

PasskeyScore passkey_cell_score(const NeedleResults *r, int c) {
    return (PasskeyScore){(int)needle_cell_sum(r, c, PASSKEY_EXACT), (int)needle_cell_sum(r, c, PASSKEY_DIGITS),
                          (int)needle_cell_sum(r, c, PASSKEY_OTHER), (int)needle_cell_sum(r, c, PASSKEY_FIRST),
                          (int)needle_cell_sum(r, c, PASSKEY_DRIFTED)};
}

// A trial being answered: its document and the answer's characters so far.
typedef struct {
    PasskeyInfo info;
    uint32_t *hay, *doc;                  // (len) its haystack window, its document
    uint64_t at;                          // where the window starts in the haystack
    int32_t answer[PASSKEY_KEY_DIGITS];   // byte260's tokens, or a BPE's decoded text (passkey_answer_add)
    int got;
    const Tokenizer *tok;                 // a BPE's; NULL: byte tokens
} Trial;

// The job's document cut before the answer; the key is decoded in byte260's 5 tokens or a BPE's text.
static void *trial_make(const void *ctx, const NeedleJob *j, NeedlePrompt *p) {
    const PasskeyGrid *g = ctx;
    int64_t len = g->lengths[j->li];
    Trial *t = xcalloc(1, sizeof *t, "a passkey trial");
    t->hay = g->haystack ? xmalloc((size_t)len * sizeof(uint32_t), "a haystack window") : NULL;
    t->doc = xmalloc((size_t)len * sizeof(uint32_t), "a passkey document");
    t->tok = g->text ? g->tok : NULL;
    t->at = passkey_trial_doc(g, len, g->depths[j->col], j->sample, t->hay, t->doc, &t->info);
    *p = (NeedlePrompt){t->doc, t->info.answer_pos, 0, g->text ? PASSKEY_ANSWER_TOKENS : PASSKEY_KEY_DIGITS};
    return t;
}

static void trial_free(Trial *t) { free(t->hay), free(t->doc), free(t); }

// Byte tokens: each one a character. A BPE's: its text's characters (passkey_answer_add), its end an end.
static NeedleTake trial_take(void *answer, int id) {
    Trial *t = answer;
    int got = t->tok ? passkey_answer_add(t->tok, id, t->answer, t->got) : (t->answer[t->got] = id, t->got + 1);
    if (got < 0) return NEEDLE_END;
    t->got = got;
    return got == PASSKEY_KEY_DIGITS ? NEEDLE_DONE : NEEDLE_MORE;
}

// The trial's scores, its keys (the asked one, the first needle's, the distractors') and its answer's text.
static void trial_finish(const void *ctx, void *answer, NeedleRecord *rec) {
    const PasskeyGrid *g = ctx;
    Trial *t = answer;
    for (int d = t->got; d < PASSKEY_KEY_DIGITS; d++) t->answer[d] = -1;   // characters it never wrote
    rec->text_n = PASSKEY_KEY_DIGITS + 1;
    rec->text = xmalloc(rec->text_n, "a passkey answer");
    passkey_answer_text(t->answer, rec->text);
    PasskeyScore sc = passkey_score(&t->info, g->distractors, rec->text);
    double scores[] = {sc.exact, sc.digits, sc.other, sc.first, sc.drifted};
    memcpy(rec->values, scores, sizeof scores);
    rec->values[PASSKEY_KEY] = t->info.key, rec->values[PASSKEY_FIRST_KEY] = t->info.first_key;
    for (int k = 0; k < g->distractors; k++) rec->values[PASSKEY_OTHER_KEYS + k] = t->info.others[k];
    trial_free(t);
}

NeedleResults passkey_grid_run(GPT *m, const PasskeyGrid *g, const CommGrid *cg) {
    NeedleTask t = {.name = "passkey", .col_word = "depth", .sample_word = "trial", .n_len = g->n_len, .n_col = g->n_depth,
                    .samples = g->trials, .n_values = PASSKEY_OTHER_KEYS + g->distractors,
                    .lengths = g->lengths, .ctx = g, .make = trial_make, .take = trial_take, .finish = trial_finish};
    return needle_run(m, cg, &t);
}

// The checkpoint, the haystack, the grid's settings and layout: the JSON's members before "cells".
static void add_run(cJSON *root, const PasskeyGrid *g, const InferModel *im, const char *label, double seconds) {
    cJSON_AddStringToObject(root, "checkpoint", im->ckpt);
    cJSON_AddStringToObject(root, "label", label);
    cJSON_AddNumberToObject(root, "trained_seq_len", (double)im->state.run.seq_len);
    cJSON_AddNumberToObject(root, "rope_theta", im->model.cfg.rope_theta);
    cJSON_AddNumberToObject(root, "params", (double)config_num_params(&im->model.cfg));
    cJSON_AddStringToObject(root, "haystack", g->haystack ? g->haystack : "generator filler");
    if (g->haystack) {
        cJSON_AddNumberToObject(root, "haystack_bytes", (double)g->hay.bytes);
        if (g->text) cJSON_AddNumberToObject(root, "haystack_tokens", (double)g->hay.n);
        cJSON_AddNumberToObject(root, "haystack_files", g->hay.files);
        char crc[16];
        snprintf(crc, sizeof crc, "%08x", g->hay.crc);
        cJSON_AddStringToObject(root, "haystack_crc32", crc);
    }
    if (g->tok) cJSON_AddStringToObject(root, "tokenizer", g->tok->id);   // byte260 without the key, as before
    cJSON_AddNumberToObject(root, "distractors", g->distractors);
    cJSON_AddNumberToObject(root, "seed", (double)g->seed);
    cJSON_AddNumberToObject(root, "trials", g->trials);
    cJSON_AddNumberToObject(root, "sp", im->grid.sp);
    cJSON_AddNumberToObject(root, "dp", im->grid.dp);
    cJSON_AddNumberToObject(root, "seconds", seconds);
    cJSON *lens = cJSON_AddArrayToObject(root, "lengths"), *deps = cJSON_AddArrayToObject(root, "depths");
    for (int i = 0; i < g->n_len; i++) cJSON_AddItemToArray(lens, cJSON_CreateNumber((double)g->lengths[i]));
    for (int i = 0; i < g->n_depth; i++) cJSON_AddItemToArray(deps, cJSON_CreateNumber(g->depths[i]));
}

static cJSON *key_string(int64_t key) {
    char text[8];
    snprintf(text, sizeof text, "%05d", (int)key);
    return cJSON_CreateString(text);
}

// A cell's "first_keys": per trial, the key of the first needle; "other_keys": per trial, the distractors' keys.
static void add_other_keys(cJSON *cell, const PasskeyGrid *g, const NeedleResults *r, int c) {
    cJSON *firsts = cJSON_AddArrayToObject(cell, "first_keys"), *all = cJSON_AddArrayToObject(cell, "other_keys");
    for (int t = 0; t < g->trials; t++) {
        const double *v = r->values + ((size_t)c * g->trials + t) * r->n_values;
        cJSON *these = cJSON_CreateArray();
        for (int k = 0; k < g->distractors; k++) cJSON_AddItemToArray(these, key_string((int64_t)v[PASSKEY_OTHER_KEYS + k]));
        cJSON_AddItemToArray(firsts, key_string((int64_t)v[PASSKEY_FIRST_KEY]));
        cJSON_AddItemToArray(all, these);
    }
}

// Cell c after its length: its depth, its scores as fractions of its trials, its time, every trial's key and answer.
static void cell_json(const void *ctx, const NeedleResults *r, int c, cJSON *o) {
    const PasskeyGrid *g = ctx;
    PasskeyScore sc = passkey_cell_score(r, c);
    cJSON_AddNumberToObject(o, "depth", g->depths[c % g->n_depth]);
    cJSON_AddNumberToObject(o, "exact_match", (double)sc.exact / g->trials);
    cJSON_AddNumberToObject(o, "digit_accuracy", (double)sc.digits / (g->trials * PASSKEY_KEY_DIGITS));
    cJSON_AddNumberToObject(o, "other_key_match", (double)sc.other / g->trials);
    cJSON_AddNumberToObject(o, "first_key_match", (double)sc.first / g->trials);
    cJSON_AddNumberToObject(o, "drifted", (double)sc.drifted / g->trials);
    cJSON_AddNumberToObject(o, "seconds", r->seconds[c]);
    cJSON *ks = cJSON_AddArrayToObject(o, "keys"), *as = cJSON_AddArrayToObject(o, "answers");
    for (size_t job = (size_t)c * g->trials; job < (size_t)(c + 1) * g->trials; job++) {
        cJSON_AddItemToArray(ks, key_string((int64_t)r->values[job * r->n_values + PASSKEY_KEY]));
        cJSON_AddItemToArray(as, cJSON_CreateString(r->text[job]));
    }
    if (g->distractors) add_other_keys(o, g, r, c);
}

void passkey_write_json(const char *path, const PasskeyGrid *g, const NeedleResults *r, const InferModel *im, const char *label) {
    cJSON *root = cJSON_CreateObject();
    add_run(root, g, im, label, r->total_s);
    needle_write_json(path, root, r, cell_json, g);
}

void passkey_write_csv(const char *path, const PasskeyGrid *g, const NeedleResults *r) {
    FILE *f = xfopen(path, "w");
    if (fprintf(f, "length,depth,trials,exact_match,digit_accuracy,seconds,other_key_match,drifted,first_key_match\n") < 0)
        fail("%s: write failed", path);
    for (int c = 0; c < g->n_len * g->n_depth; c++) {
        PasskeyScore sc = passkey_cell_score(r, c);
        if (fprintf(f, "%" PRId64 ",%.4g,%d,%.4f,%.4f,%.3f,%.4f,%.4f,%.4f\n", g->lengths[c / g->n_depth], g->depths[c % g->n_depth],
                    g->trials, (double)sc.exact / g->trials, (double)sc.digits / (g->trials * PASSKEY_KEY_DIGITS), r->seconds[c],
                    (double)sc.other / g->trials, (double)sc.drifted / g->trials, (double)sc.first / g->trials) < 0)
            fail("%s: write failed", path);
    }
    xfclose(f, path);
}

// A prompt's tokens doc (n) decoded to bytes (byte260's tokens are bytes; a BPE's, each token's bytes), as a
// JSON string's text: bytes 1..127 as themselves, 128..255 as U+0080..U+00FF (Latin-1: .encode("latin-1") gives
// the bytes back, and a window cut inside a UTF-8 character stays valid JSON), a NUL byte as U+2400.
static char *prompt_text(const Tokenizer *t, const uint32_t *doc, uint64_t n) {
    size_t cap = (size_t)n * 3 + 1, k = 0;
    char *s = xmalloc(cap, "a passkey prompt's text");
    for (uint64_t i = 0; i < n; i++) {
        size_t len = 1;
        unsigned char one = (unsigned char)(doc[i] & 0xFF);   // byte tokens
        const unsigned char *bytes = t ? tokenizer_token(t, doc[i], &len) : &one;
        if (!bytes) bytes = (const unsigned char *)"?", len = 1;
        if (k + len * 3 + 1 > cap) s = xrealloc(s, cap = (k + len * 3 + 1) * 2, "a passkey prompt's text");
        for (size_t j = 0; j < len; j++) {
            unsigned b = bytes[j];
            if (b == 0) s[k++] = (char)0xE2, s[k++] = (char)0x90, s[k++] = (char)0x80;
            else if (b < 0x80) s[k++] = (char)b;
            else s[k++] = (char)(0xC0 | b >> 6), s[k++] = (char)(0x80 | (b & 0x3F));
        }
    }
    s[k] = 0;
    return s;
}

// One line of OUT.docs.jsonl: job j's document t beside its answer.
static void write_doc_line(FILE *f, const char *path, const PasskeyGrid *g, const NeedleResults *r, const NeedleJob *j,
                           const Trial *t) {
    cJSON *o = cJSON_CreateObject();
    char key[8];
    snprintf(key, sizeof key, "%05u", t->info.key);
    cJSON_AddNumberToObject(o, "length", (double)g->lengths[j->li]);
    cJSON_AddNumberToObject(o, "depth", g->depths[j->col]);
    cJSON_AddNumberToObject(o, "trial", j->sample);
    cJSON_AddStringToObject(o, "key", key);
    cJSON_AddStringToObject(o, "answer", r->text[j->index]);
    if (g->haystack) cJSON_AddNumberToObject(o, "haystack_offset", (double)t->at);
    cJSON_AddNumberToObject(o, "needle_pos", (double)t->info.needle_pos);
    cJSON_AddNumberToObject(o, "key_pos", (double)t->info.key_pos);
    cJSON_AddNumberToObject(o, "answer_pos", (double)t->info.answer_pos);
    char *text = prompt_text(g->tok, t->doc, t->info.answer_pos);
    cJSON_AddStringToObject(o, "prompt", text);
    free(text);
    char *line = cJSON_PrintUnformatted(o);
    if (!line) fail("%s: out of memory while writing the documents", path);
    xfwrite(line, strlen(line), f, path);
    xfwrite("\n", 1, f, path);
    free(line);
    cJSON_Delete(o);
}

void passkey_write_docs(const char *path, const PasskeyGrid *g, const NeedleResults *r) {
    FILE *f = xfopen(path, "w");
    for (size_t job = 0; job < (size_t)g->n_len * g->n_depth * g->trials; job++) {
        int c = (int)(job / g->trials);
        NeedleJob j = {c / g->n_depth, c % g->n_depth, (int)(job % g->trials), job};
        NeedlePrompt p;
        Trial *t = trial_make(g, &j, &p);
        write_doc_line(f, path, g, r, &j, t);
        trial_free(t);
    }
    xfclose(f, path);
}
