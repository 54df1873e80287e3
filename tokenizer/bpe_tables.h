// tokenizer/bpe_tables.h — a BPE's open-addressing tables: token string -> id, and (left id, right id) -> (merge rank, merged id).
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static inline uint64_t bpe_mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}
uint64_t bpe_hash_bytes(const unsigned char *s, size_t n);

// Strings -> ids; the strings stay the caller's (tok[id], tok_len[id] bytes), the table holds ids.
typedef struct {
    uint32_t *slot;               // (mask + 1) ids + 1; 0 = empty
    uint32_t mask;
    unsigned char *const *tok;    // (ids)
    const uint32_t *tok_len;      // (ids)
} StrTable;
void str_table_init(StrTable *t, size_t n_ids, unsigned char *const *tok, const uint32_t *tok_len);
void str_table_insert(StrTable *t, uint32_t id);
int64_t str_table_find(const StrTable *t, const unsigned char *s, size_t n);   // -1 when absent

typedef struct {
    uint64_t *key;                // (mask + 1) left << 32 | right, UINT64_MAX = empty
    uint32_t *rank, *merged;      // (mask + 1)
    uint32_t mask;
} PairTable;
void pair_table_init(PairTable *t, size_t n_pairs);
// A later duplicate of a pair replaces the earlier one, as in HF's map built from the merge list.
void pair_table_insert(PairTable *t, uint32_t l, uint32_t r, uint32_t rank, uint32_t merged);
void pair_table_free(PairTable *t);

// Inline: the encoder looks a pair up for every candidate merge.
static inline bool pair_table_find(const PairTable *t, uint32_t l, uint32_t r, uint32_t *rank, uint32_t *merged) {
    uint64_t k = (uint64_t)l << 32 | r;
    for (uint32_t i = (uint32_t)bpe_mix64(k) & t->mask;; i = (i + 1) & t->mask) {
        if (t->key[i] == k) {
            *rank = t->rank[i];
            *merged = t->merged[i];
            return true;
        }
        if (t->key[i] == UINT64_MAX) return false;
    }
}
