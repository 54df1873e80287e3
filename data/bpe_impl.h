// data/bpe_impl.h — the inside of a loaded BPE tokenizer, shared by its loader (bpe.c) and its encoder (bpe_encode.c).
#pragma once
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "data/bpe.h"

enum { MAX_STAGES = 8, MAX_NORM = 8, CACHE_SLOTS = 1 << 14, CACHE_KEY = 30, MAX_ID = (1 << 22) - 1 };
#define NO_ID UINT32_MAX

typedef enum { STAGE_SPLIT, STAGE_BYTE_LEVEL, STAGE_METASPACE } StageKind;
typedef enum { PREPEND_NEVER, PREPEND_FIRST, PREPEND_ALWAYS } PrependScheme;

// One pre-tokenizer step. Split, Digits and ByteLevel's regex cut a piece into the regex's matches and the
// gaps between them (HF's "Isolated"); ByteLevel may first put a space before it; Metaspace turns " " into
// its replacement, may put one before the piece and may cut before each.
typedef struct {
    StageKind kind;
    pcre2_code *re;            // NULL = no cut (ByteLevel with use_regex false)
    bool prefix_space;         // ByteLevel add_prefix_space: " " before a piece that does not start with one
    char rep[8];               // Metaspace: the replacement of " " (UTF-8, "▁")
    size_t rep_len;
    PrependScheme prepend;     // Metaspace: rep before the text's first piece / every piece / none
    bool split;                // Metaspace: a piece starts at each rep
    bool known;                // cuts at a line cut are safe (see bpe_safe_cuts)
} Stage;

// One normalizer step: Prepend(text) to a non-empty piece, or Replace every `from` by `to`.
typedef struct {
    bool prepend;
    char *from, *to;           // from NULL for Prepend
    size_t from_len, to_len;
} NormStep;

typedef struct {
    char *content;             // as written
    unsigned char *bytes;      // what the text matches: the content, normalized for normalized tokens
    size_t len;
    uint32_t id;
    bool normalized;           // matched in HF's second pass, inside the normalized pieces
    bool lstrip, rstrip;       // the match takes the white space on its left / right
    bool single_word;          // matches only with no word character on either side
} AddedToken;

// Open-addressing tables: token strings -> id (model.vocab only), and (left id, right id) -> (rank, merged id).
typedef struct {
    uint32_t *slot;            // (mask + 1) ids + 1; 0 = empty
    uint32_t mask;
} StrTable;
typedef struct {
    uint64_t *key;             // (mask + 1) left << 32 | right, UINT64_MAX = empty
    uint32_t *rank, *merged;
    uint32_t mask;
} PairTable;

struct Bpe {
    uint32_t vocab_size;
    bool char_mode;             // no ByteLevel step: the model sees UTF-8 characters (SentencePiece-style), not bytes
    unsigned char **tok;        // (vocab_size) the string the model matches (byte-level: the raw bytes); NULL = unused id
    uint32_t *tok_len;          // (vocab_size)
    unsigned char **dec;        // (vocab_size) the bytes a token decodes to inside a text (== tok in byte-level mode)
    uint32_t *dec_len;          // (vocab_size)
    unsigned char **dec_first;  // (vocab_size) the bytes at the start of a text where they differ (Strip, Metaspace), else NULL
    uint32_t *dec_first_len;    // (vocab_size)
    uint32_t byte_id[256];      // the vocab token of each single byte (byte-level) or one-byte character; NO_ID if none
    bool byte_fallback;         // an unknown character becomes its <0xNN> tokens
    uint32_t fallback_id[256];  // <0xNN>; NO_ID if absent
    uint32_t unk_id;            // model.unk_token's id, NO_ID if none (an unknown character is then dropped, as HF does)
    bool fuse_unk;              // consecutive unknown characters make one unk
    StrTable vocab;
    PairTable merges;
    bool ignore_merges;
    char cut[8];                // SentencePiece-style: a word may be cut before each "▁" (no merge can join across one), "" if not
    size_t cut_len;
    NormStep norm[MAX_NORM];
    int n_norm;
    Stage stages[MAX_STAGES];
    int n_stages;
    AddedToken *added;
    size_t n_added;
    bool added_first[2][256];   // [normalized] a token of that pass starts with this byte
    pcre2_code *word_re;        // a word character (single_word tokens), NULL when none has the flag
    int64_t template_bos;       // post_processor's leading special token, -1 if none
};

typedef struct {
    uint8_t len, n;             // key bytes; ids (0 = empty slot)
    unsigned char key[CACHE_KEY];
    uint32_t ids[CACHE_KEY];
} CacheEntry;

// A growable byte buffer of the encoder (normalized text, prefixed pieces).
typedef struct {
    unsigned char *p;
    size_t cap;
} Buf;

struct BpeEncoder {
    const Bpe *b;
    pcre2_match_data *md;
    CacheEntry *cache;          // (CACHE_SLOTS)
    uint32_t *sym, *next, *prev;   // (cap) symbols of the word being merged, as a linked list
    uint64_t *heap;             // (cap) rank << 32 | position, a min-heap
    size_t cap;
    Buf stage_buf[MAX_STAGES];  // a stage's rewritten piece (prefix space, Metaspace)
    Buf norm_buf[2];            // the normalizer's output (two, swapped between steps)
    uint32_t **out;             // the caller's output while encoding
    size_t *n_out, *out_cap;
};

static inline uint64_t bpe_mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}
uint64_t bpe_hash_bytes(const unsigned char *s, size_t n);
int64_t bpe_str_find(const Bpe *b, const unsigned char *s, size_t n);
// Length of the UTF-8 character at s (1 for an invalid byte, which then stands alone).
size_t bpe_utf8_len(const unsigned char *s, size_t n);
// Applies the normalizer to s[0..n) into one of e's buffers (or returns s when there is none); *out_n gets the length.
const unsigned char *bpe_normalize(const Bpe *b, Buf bufs[2], const unsigned char *s, size_t n, size_t *out_n);
