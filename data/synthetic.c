// data/synthetic.c — generates passkey and associative-recall documents of any length from (seed, doc).
#include "data/synthetic.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"

static const char INTRO[] = "There is a pass key hidden in this text. Remember it. ";
static const char FILLER[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ";
static const char NEEDLE_PREFIX[] = "The pass key is ";
static const char NEEDLE_SUFFIX[] = ". Remember it. ";
static const char QUESTION[] = "What is the pass key? The pass key is ";
static const char PAIRS_INTRO[] = "Remember these pairs: ";
static const char RECALL_INTRO[] = "Recall: ";
enum { PAIR_CHARS = RECALL_KEY_CHARS + 1 + RECALL_VALUE_CHARS + 2 };   // "abcd=1234, "

static void seed_doc(Rng *r, uint64_t seed, uint64_t doc) { rng_seed(r, seed * 0x9E3779B97F4A7C15ull ^ (doc + 0x632BE59BD9B4E019ull)); }

// Appends text to out at *p.
static void put_text(uint32_t *out, uint64_t *p, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) out[(*p)++] = (unsigned char)s[i];
}

// n filler tokens continuing the filler text from its offset `from`.
static void put_filler(uint32_t *out, uint64_t *p, uint64_t from, uint64_t n) {
    const size_t m = sizeof FILLER - 1;
    for (uint64_t i = 0; i < n; i++) out[(*p)++] = (unsigned char)FILLER[(from + i) % m];
}

uint64_t passkey_min_len(void) {
    return (sizeof INTRO - 1) + (sizeof NEEDLE_PREFIX - 1) + PASSKEY_KEY_DIGITS + (sizeof NEEDLE_SUFFIX - 1) + (sizeof QUESTION - 1) +
           PASSKEY_KEY_DIGITS;
}

// n tokens of the haystack from its offset `from` (hay holds the whole filler).
static void put_hay(uint32_t *out, uint64_t *p, const uint32_t *hay, uint64_t from, uint64_t n) {
    for (uint64_t i = 0; i < n; i++) out[(*p)++] = hay[from + i];
}

// The passkey layout around a filler: the built-in sentences (hay NULL) or real text.
static void passkey_doc(uint64_t seed, uint64_t doc, uint64_t len, double depth, const uint32_t *hay, uint32_t *out,
                        PasskeyInfo *info) {
    if (len < passkey_min_len()) fail_usage("--doc-len %" PRIu64 " is too short for a passkey document (at least %" PRIu64 ")", len, passkey_min_len());
    Rng r;
    seed_doc(&r, seed, doc);
    uint32_t key = 10000 + (uint32_t)rng_below(&r, 90000);
    double u = rng_uniform(&r);
    if (depth < 0) depth = u;
    if (depth > 1) depth = 1;
    char digits[8];
    snprintf(digits, sizeof digits, "%05u", key);
    uint64_t filler = len - passkey_min_len(), before = (uint64_t)(depth * (double)filler + 0.5), p = 0;
    if (before > filler) before = filler;
    *info = (PasskeyInfo){.key = key, .depth = depth};
    put_text(out, &p, INTRO, sizeof INTRO - 1);
    if (hay) put_hay(out, &p, hay, 0, before);
    else put_filler(out, &p, 0, before);
    info->needle_pos = p;
    put_text(out, &p, NEEDLE_PREFIX, sizeof NEEDLE_PREFIX - 1);
    info->key_pos = p;
    put_text(out, &p, digits, PASSKEY_KEY_DIGITS);
    put_text(out, &p, NEEDLE_SUFFIX, sizeof NEEDLE_SUFFIX - 1);
    if (hay) put_hay(out, &p, hay, before, filler - before);
    else put_filler(out, &p, before, filler - before);
    put_text(out, &p, QUESTION, sizeof QUESTION - 1);
    info->answer_pos = p;
    put_text(out, &p, digits, PASSKEY_KEY_DIGITS);
}

void synth_passkey(uint64_t seed, uint64_t doc, uint64_t len, double depth, const uint32_t *hay, uint32_t *out,
                   PasskeyInfo *info) {
    passkey_doc(seed, doc, len, depth, hay, out, info);
}

// The needle's depth of training document k: fixed, or within edge_span of either end of the filler in
// edge_frac of the documents (the far edge, depth ~0, in edge_far of them, else the near edge), else -1
// (the generator's uniform draw).
static double mix_depth(Rng *r, const PasskeyMix *mx) {
    if (mx->depth >= 0) return mx->depth;
    if (!(rng_uniform(r) < mx->edge_frac)) return -1;
    double u = rng_uniform(r) * mx->edge_span;
    return rng_uniform(r) < mx->edge_far ? u : 1 - u;
}

// Inserts the m digits of extra at position at of out (n tokens), shifting the tail right.
static void insert_digits(uint32_t *out, uint64_t n, uint64_t at, const char *extra, int m) {
    memmove(out + at + m, out + at, (size_t)(n - at) * sizeof *out);
    for (int i = 0; i < m; i++) out[at + i] = (unsigned char)extra[i];
}

uint64_t synth_passkey_train(uint64_t seed, uint64_t k, uint64_t len, const PasskeyMix *mix, const uint32_t *hay,
                             uint32_t *out, uint8_t *weight, PasskeyInfo *info) {
    Rng r;
    rng_seed(&r, seed * 0xD1B54A32D192ED03ull ^ (k + 0x8CB92BA72F3D8DD7ull));   // apart from the document's stream
    double depth = mix_depth(&r, mix);
    char extra[PASSKEY_KEY_MAX];
    int m = 0;
    if (mix->key_max > PASSKEY_KEY_DIGITS && rng_uniform(&r) < mix->long_frac) {
        m = 1 + (int)rng_below(&r, (uint64_t)(mix->key_max - PASSKEY_KEY_DIGITS));
        for (int i = 0; i < m; i++) extra[i] = (char)('0' + rng_below(&r, 10));
    }
    passkey_doc(seed, k, len, depth, hay, out, info);
    insert_digits(out, len, info->key_pos + PASSKEY_KEY_DIGITS, extra, m);   // the needle's key ...
    info->answer_pos += (uint64_t)m;
    insert_digits(out, len + (uint64_t)m, len + (uint64_t)m, extra, m);      // ... and the answer's, at the end
    uint64_t n = len + 2 * (uint64_t)m;
    memset(weight, 0, (size_t)n);
    memset(weight + info->answer_pos, 1, (size_t)(n - info->answer_pos));
    return n;
}

uint64_t recall_min_len(int n_pairs, int n_queries) {
    return (sizeof PAIRS_INTRO - 1) + (uint64_t)PAIR_CHARS * n_pairs + (sizeof RECALL_INTRO - 1) + (uint64_t)PAIR_CHARS * n_queries - 2;
}

static void random_key(Rng *r, char *key, char keys[][RECALL_KEY_CHARS], int n) {
    for (;;) {
        for (int c = 0; c < RECALL_KEY_CHARS; c++) key[c] = (char)('a' + rng_below(r, 26));
        int dup = 0;
        for (int i = 0; i < n && !dup; i++) dup = memcmp(keys[i], key, RECALL_KEY_CHARS) == 0;
        if (!dup) return;
    }
}

// "abcd=1234" (+ ", " unless last); records where the key and the value start.
static void put_pair(uint32_t *out, uint64_t *p, const char *key, const char *val, int last, uint64_t *key_pos, uint64_t *val_pos) {
    if (key_pos) *key_pos = *p;
    put_text(out, p, key, RECALL_KEY_CHARS);
    put_text(out, p, "=", 1);
    *val_pos = *p;
    put_text(out, p, val, RECALL_VALUE_CHARS);
    if (!last) put_text(out, p, ", ", 2);
}

void synth_recall(uint64_t seed, uint64_t doc, uint64_t len, int n_pairs, int n_queries, uint32_t *out, RecallInfo *info) {
    if (n_pairs < 1 || n_pairs > RECALL_MAX_PAIRS || n_queries < 1 || n_queries > RECALL_MAX_PAIRS)
        fail_usage("--pairs and --queries must be in 1..%d (got %d and %d)", RECALL_MAX_PAIRS, n_pairs, n_queries);
    if (len < recall_min_len(n_pairs, n_queries))
        fail_usage("--doc-len %" PRIu64 " is too short for %d pairs and %d queries (at least %" PRIu64 ")", len, n_pairs, n_queries,
                   recall_min_len(n_pairs, n_queries));
    Rng r;
    seed_doc(&r, seed, doc);
    char keys[RECALL_MAX_PAIRS][RECALL_KEY_CHARS];
    char vals[RECALL_MAX_PAIRS][RECALL_VALUE_CHARS + 1];
    memset(info, 0, sizeof *info);
    info->n_pairs = n_pairs;
    info->n_queries = n_queries;
    for (int i = 0; i < n_pairs; i++) {
        random_key(&r, keys[i], keys, i);
        snprintf(vals[i], sizeof vals[i], "%04u", (unsigned)rng_below(&r, 10000));
    }
    uint64_t p = 0;
    put_text(out, &p, PAIRS_INTRO, sizeof PAIRS_INTRO - 1);
    for (int i = 0; i < n_pairs; i++) put_pair(out, &p, keys[i], vals[i], 0, NULL, &info->pair_value_pos[i]);
    put_filler(out, &p, 0, len - recall_min_len(n_pairs, n_queries));
    put_text(out, &p, RECALL_INTRO, sizeof RECALL_INTRO - 1);
    for (int q = 0; q < n_queries; q++) {
        int i = (int)rng_below(&r, (uint64_t)n_pairs);
        info->query_pair[q] = i;
        put_pair(out, &p, keys[i], vals[i], q == n_queries - 1, &info->query_key_pos[q], &info->query_value_pos[q]);
    }
}

void passkey_weights(const PasskeyInfo *info, uint64_t len, uint8_t *weight) {
    memset(weight, 0, len);
    memset(weight + info->answer_pos, 1, PASSKEY_KEY_DIGITS);
}

void recall_weights(const RecallInfo *info, uint64_t len, uint8_t *weight) {
    memset(weight, 0, len);
    for (int q = 0; q < info->n_queries; q++) memset(weight + info->query_value_pos[q], 1, RECALL_VALUE_CHARS);
}
