// tokenizer/bpe_tables.c — the BPE's hash tables: strings -> ids over the token table, merge pairs -> rank and merged id.
#include "tokenizer/bpe_tables.h"

#include <stdlib.h>
#include <string.h>

#include "core/common.h"

uint64_t bpe_hash_bytes(const unsigned char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        h = (h ^ w) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    uint64_t w = 0;
    if (n > i) memcpy(&w, s + i, n - i);   // s may be NULL when n == 0
    return bpe_mix64(h ^ w);
}

static uint32_t table_size(size_t n) {
    uint32_t m = 16;
    while (m < 2 * n + 16) m *= 2;
    return m;
}

void str_table_init(StrTable *t, size_t n_ids, unsigned char *const *tok, const uint32_t *tok_len) {
    *t = (StrTable){.mask = table_size(n_ids) - 1, .tok = tok, .tok_len = tok_len};
    t->slot = xcalloc((size_t)t->mask + 1, sizeof(uint32_t), "the vocab table");
}

int64_t str_table_find(const StrTable *t, const unsigned char *s, size_t n) {
    for (uint32_t i = (uint32_t)bpe_hash_bytes(s, n) & t->mask;; i = (i + 1) & t->mask) {
        uint32_t v = t->slot[i];
        if (!v) return -1;
        if (t->tok_len[v - 1] == n && memcmp(t->tok[v - 1], s, n) == 0) return v - 1;
    }
}

void str_table_insert(StrTable *t, uint32_t id) {
    uint32_t i = (uint32_t)bpe_hash_bytes(t->tok[id], t->tok_len[id]) & t->mask;
    while (t->slot[i]) i = (i + 1) & t->mask;
    t->slot[i] = id + 1;
}

void pair_table_init(PairTable *t, size_t n_pairs) {
    t->mask = table_size(n_pairs) - 1;
    t->key = xmalloc(((size_t)t->mask + 1) * sizeof *t->key, "the merge table");
    memset(t->key, 0xff, ((size_t)t->mask + 1) * sizeof *t->key);
    t->rank = xmalloc(((size_t)t->mask + 1) * sizeof *t->rank, "the merge table");
    t->merged = xmalloc(((size_t)t->mask + 1) * sizeof *t->merged, "the merge table");
}

void pair_table_insert(PairTable *t, uint32_t l, uint32_t r, uint32_t rank, uint32_t merged) {
    uint64_t k = (uint64_t)l << 32 | r;
    uint32_t i = (uint32_t)bpe_mix64(k) & t->mask;
    while (t->key[i] != UINT64_MAX && t->key[i] != k) i = (i + 1) & t->mask;
    t->key[i] = k;
    t->rank[i] = rank;
    t->merged[i] = merged;
}

void pair_table_free(PairTable *t) {
    free(t->key);
    free(t->rank);
    free(t->merged);
}
