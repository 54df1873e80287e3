// eval/passkey_files.c — the passkey result files: OUT.json, OUT.csv and OUT.docs.jsonl from a grid and its results.
#include "eval/passkey_files.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

// text (a cJSON print) and a newline into path; the text is freed.
static void write_text(const char *path, char *text, const char *what) {
    if (!text) fail("%s: out of memory while writing the %s", path, what);
    FILE *f = xfopen(path, "w");
    xfwrite(text, strlen(text), f, path);
    xfwrite("\n", 1, f, path);
    xfclose(f, path);
    free(text);
}

// The checkpoint, the haystack, the grid's settings and layout: the JSON's members before "cells".
static void add_run(cJSON *root, const PasskeyGrid *g, const PasskeyRunInfo *ri) {
    cJSON_AddStringToObject(root, "checkpoint", ri->ckpt);
    cJSON_AddStringToObject(root, "label", ri->label);
    cJSON_AddNumberToObject(root, "trained_seq_len", (double)ri->trained_len);
    cJSON_AddNumberToObject(root, "rope_theta", ri->model->rope_theta);
    cJSON_AddNumberToObject(root, "params", (double)config_num_params(ri->model));
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
    cJSON_AddNumberToObject(root, "sp", ri->sp);
    cJSON_AddNumberToObject(root, "dp", ri->dp);
    cJSON_AddNumberToObject(root, "seconds", ri->seconds);
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
static void add_other_keys(cJSON *cell, const PasskeyGrid *g, const PasskeyResults *r, int c) {
    cJSON *firsts = cJSON_AddArrayToObject(cell, "first_keys");
    for (int t = 0; t < g->trials; t++) cJSON_AddItemToArray(firsts, key_string(r->firsts[(size_t)c * g->trials + t]));
    cJSON *all = cJSON_AddArrayToObject(cell, "other_keys");
    for (int t = 0; t < g->trials; t++) {
        cJSON *these = cJSON_CreateArray();
        for (int k = 0; k < g->distractors; k++)
            cJSON_AddItemToArray(these, key_string(r->others[((size_t)c * g->trials + t) * (size_t)g->distractors + k]));
        cJSON_AddItemToArray(all, these);
    }
}

// Cell c: where it sits, its scores as fractions of its trials, its time, every trial's key and answer.
static cJSON *cell_json(const PasskeyGrid *g, const PasskeyResults *r, int c) {
    const PasskeyScore *sc = &r->scores[c];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "length", (double)g->lengths[c / g->n_depth]);
    cJSON_AddNumberToObject(o, "depth", g->depths[c % g->n_depth]);
    cJSON_AddNumberToObject(o, "exact_match", (double)sc->exact / g->trials);
    cJSON_AddNumberToObject(o, "digit_accuracy", (double)sc->digits / (g->trials * PASSKEY_KEY_DIGITS));
    cJSON_AddNumberToObject(o, "other_key_match", (double)sc->other / g->trials);
    cJSON_AddNumberToObject(o, "first_key_match", (double)sc->first / g->trials);
    cJSON_AddNumberToObject(o, "drifted", (double)sc->drifted / g->trials);
    cJSON_AddNumberToObject(o, "seconds", r->seconds[c]);
    cJSON *ks = cJSON_AddArrayToObject(o, "keys"), *as = cJSON_AddArrayToObject(o, "answers");
    for (int t = 0; t < g->trials; t++) {
        char ans[PASSKEY_KEY_DIGITS + 1];
        passkey_answer_text(r, (size_t)c * g->trials + t, ans);
        cJSON_AddItemToArray(ks, key_string(r->keys[(size_t)c * g->trials + t]));
        cJSON_AddItemToArray(as, cJSON_CreateString(ans));
    }
    if (g->distractors) add_other_keys(o, g, r, c);
    return o;
}

void passkey_write_json(const char *path, const PasskeyGrid *g, const PasskeyResults *r, const PasskeyRunInfo *ri) {
    cJSON *root = cJSON_CreateObject();
    add_run(root, g, ri);
    cJSON *cells = cJSON_AddArrayToObject(root, "cells");
    for (int c = 0; c < g->n_len * g->n_depth; c++) cJSON_AddItemToArray(cells, cell_json(g, r, c));
    write_text(path, cJSON_Print(root), "results");
    cJSON_Delete(root);
}

void passkey_write_csv(const char *path, const PasskeyGrid *g, const PasskeyResults *r) {
    FILE *f = xfopen(path, "w");
    if (fprintf(f, "length,depth,trials,exact_match,digit_accuracy,seconds,other_key_match,drifted,first_key_match\n") < 0)
        fail("%s: write failed", path);
    for (int c = 0; c < g->n_len * g->n_depth; c++) {
        const PasskeyScore *sc = &r->scores[c];
        if (fprintf(f, "%" PRId64 ",%.4g,%d,%.4f,%.4f,%.3f,%.4f,%.4f,%.4f\n", g->lengths[c / g->n_depth], g->depths[c % g->n_depth],
                    g->trials, (double)sc->exact / g->trials, (double)sc->digits / (g->trials * PASSKEY_KEY_DIGITS), r->seconds[c],
                    (double)sc->other / g->trials, (double)sc->drifted / g->trials, (double)sc->first / g->trials) < 0)
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

// Where a trial sits and what its document was: its cell, the haystack window's start (at), the document (doc).
typedef struct {
    size_t job;
    int64_t len;
    double depth;
    int trial;
    uint64_t at;
    const uint32_t *doc;
    const PasskeyInfo *info;
} TrialDoc;

// One line of OUT.docs.jsonl.
static void write_doc_line(FILE *f, const char *path, const PasskeyGrid *g, const PasskeyResults *r, const TrialDoc *d) {
    cJSON *o = cJSON_CreateObject();
    char key[8], ans[PASSKEY_KEY_DIGITS + 1];
    snprintf(key, sizeof key, "%05u", d->info->key);
    passkey_answer_text(r, d->job, ans);
    cJSON_AddNumberToObject(o, "length", (double)d->len);
    cJSON_AddNumberToObject(o, "depth", d->depth);
    cJSON_AddNumberToObject(o, "trial", d->trial);
    cJSON_AddStringToObject(o, "key", key);
    cJSON_AddStringToObject(o, "answer", ans);
    if (g->haystack) cJSON_AddNumberToObject(o, "haystack_offset", (double)d->at);
    cJSON_AddNumberToObject(o, "needle_pos", (double)d->info->needle_pos);
    cJSON_AddNumberToObject(o, "key_pos", (double)d->info->key_pos);
    cJSON_AddNumberToObject(o, "answer_pos", (double)d->info->answer_pos);
    char *text = prompt_text(g->tok, d->doc, d->info->answer_pos);
    cJSON_AddStringToObject(o, "prompt", text);
    free(text);
    char *line = cJSON_PrintUnformatted(o);
    if (!line) fail("%s: out of memory while writing the documents", path);
    xfwrite(line, strlen(line), f, path);
    xfwrite("\n", 1, f, path);
    free(line);
    cJSON_Delete(o);
}

void passkey_write_docs(const char *path, const PasskeyGrid *g, const PasskeyResults *r) {
    FILE *f = xfopen(path, "w");
    size_t job = 0;
    for (int li = 0; li < g->n_len; li++) {
        int64_t len = g->lengths[li];
        uint32_t *hay = g->haystack ? xmalloc((size_t)len * sizeof(uint32_t), "a haystack window") : NULL;   // (len)
        uint32_t *doc = xmalloc((size_t)len * sizeof(uint32_t), "a passkey document");                        // (len)
        for (int di = 0; di < g->n_depth; di++)
            for (int t = 0; t < g->trials; t++, job++) {
                PasskeyInfo info;
                uint64_t at = passkey_trial_doc(g, len, g->depths[di], t, hay, doc, &info);
                write_doc_line(f, path, g, r, &(TrialDoc){job, len, g->depths[di], t, at, doc, &info});
            }
        free(hay);
        free(doc);
    }
    xfclose(f, path);
}
