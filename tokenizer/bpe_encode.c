// tokenizer/bpe_encode.c — BPE encoding as HF `tokenizers` does it: added tokens, normalizer, pre-tokenizers, then merges per pre-token.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "tokenizer/bpe_model.h"

enum { CACHE_SLOTS = 1 << 14, CACHE_KEY = 30 };

typedef struct {
    uint8_t len, n;             // key bytes; ids (0 = empty slot)
    unsigned char key[CACHE_KEY];
    uint32_t ids[CACHE_KEY];
} CacheEntry;

struct BpeEncoder {
    const Bpe *b;
    pcre2_match_data *md;
    CacheEntry *cache;          // (CACHE_SLOTS)
    uint32_t *sym, *next, *prev;   // (cap) symbols of the word being merged, as a linked list
    uint64_t *heap;             // (cap) rank << 32 | position, a min-heap
    size_t cap;
    TextBuf stage_buf[MAX_STAGES];   // a stage's rewritten piece (prefix space, Metaspace)
    TextBuf norm_buf[2];        // the normalizer's output (two, swapped between steps)
    uint32_t **out;             // the caller's output while encoding
    size_t *n_out, *out_cap;
};

BpeEncoder *bpe_encoder_new(const Bpe *b) {
    BpeEncoder *e = xcalloc(1, sizeof *e, "an encoder");
    e->b = b;
    e->md = pcre2_match_data_create(4, NULL);
    if (!e->md) fail("out of memory for regex match data");
    e->cache = xcalloc(CACHE_SLOTS, sizeof *e->cache, "the word cache");
    return e;
}

void bpe_encoder_free(BpeEncoder *e) {
    if (!e) return;
    pcre2_match_data_free(e->md);
    free(e->cache);
    free(e->sym);
    free(e->next);
    free(e->prev);
    free(e->heap);
    for (int i = 0; i < MAX_STAGES; i++) free(e->stage_buf[i].p);
    free(e->norm_buf[0].p);
    free(e->norm_buf[1].p);
    free(e);
}

// ---- merges --------------------------------------------------------------------------------------
static inline void emit(BpeEncoder *e, uint32_t id) {
    if (*e->n_out == *e->out_cap) {
        *e->out_cap = *e->out_cap ? 2 * *e->out_cap : 1024;
        *e->out = xrealloc(*e->out, *e->out_cap * sizeof **e->out, "the token output");
    }
    (*e->out)[(*e->n_out)++] = id;
}

static inline void heap_push(uint64_t *h, size_t *n, uint64_t v) {
    size_t i = (*n)++;
    while (i) {
        size_t p = (i - 1) / 2;
        if (h[p] <= v) break;
        h[i] = h[p];
        i = p;
    }
    h[i] = v;
}

static inline uint64_t heap_pop(uint64_t *h, size_t *n) {
    uint64_t top = h[0], v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n) break;
        if (c + 1 < *n && h[c + 1] < h[c]) c++;
        if (v <= h[c]) break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
    return top;
}

static void grow_scratch(BpeEncoder *e, size_t n) {
    if (n <= e->cap) return;
    e->cap = n + n / 2 + 64;
    e->sym = xrealloc(e->sym, e->cap * sizeof *e->sym, "BPE scratch");
    e->next = xrealloc(e->next, e->cap * sizeof *e->next, "BPE scratch");
    e->prev = xrealloc(e->prev, e->cap * sizeof *e->prev, "BPE scratch");
    e->heap = xrealloc(e->heap, e->cap * sizeof *e->heap, "BPE scratch");
}

static inline void push_pair(BpeEncoder *e, size_t *nh, uint32_t pos) {
    uint32_t rank, merged, nx = e->next[pos];
    if (nx != UINT32_MAX && pair_table_find(&e->b->merges, e->sym[pos], e->sym[nx], &rank, &merged))
        heap_push(e->heap, nh, (uint64_t)rank << 32 | pos);
}

// The model's first symbols of a pre-token, as HF's merge_word: each character (byte-level: each byte) by
// its vocab token; an unknown one by its <0xNN> tokens (byte_fallback), else by unk (fused with the
// unknown ones next to it under fuse_unk; it waits for the next known character or the end, so it comes
// after byte-fallback tokens in between), else dropped. Returns the count written to e->sym.
static size_t first_symbols(BpeEncoder *e, const unsigned char *s, size_t n) {
    const Bpe *b = e->b;
    size_t k = 0;
    bool unk = false;
    for (size_t i = 0; i < n;) {
        size_t w = b->char_mode ? utf8_char_len(s + i, n - i) : 1;
        uint32_t id = w == 1 ? b->byte_id[s[i]] : NO_ID;
        if (w > 1) {
            int64_t f = str_table_find(&b->vocab, s + i, w);
            if (f >= 0) id = (uint32_t)f;
        }
        if (id != NO_ID) {
            if (unk) e->sym[k++] = b->unk_id;
            unk = false;
            e->sym[k++] = id;
        } else {
            bool fb = b->byte_fallback;
            for (size_t j = 0; fb && j < w; j++) fb = b->fallback_id[s[i + j]] != NO_ID;
            if (fb) {
                for (size_t j = 0; j < w; j++) e->sym[k++] = b->fallback_id[s[i + j]];
            } else if (b->unk_id != NO_ID) {
                if (unk && !b->fuse_unk) e->sym[k++] = b->unk_id;
                unk = true;
            }
        }
        i += w;
    }
    if (unk) e->sym[k++] = b->unk_id;
    return k;
}

// One pre-token: first symbols, then merges applied lowest rank first, leftmost first among equals
// (HF's order). A linked list over the symbols and a heap of candidate pairs keep it O(n log n) for any
// word, runs of spaces or digits and whole SentencePiece-style texts included. Short words are cached.
static void bpe_word(BpeEncoder *e, const unsigned char *s, size_t n) {
    const Bpe *b = e->b;
    if (b->ignore_merges) {
        int64_t id = str_table_find(&b->vocab, s, n);
        if (id >= 0) {
            emit(e, (uint32_t)id);
            return;
        }
    }
    CacheEntry *c = NULL;
    if (n <= CACHE_KEY) {
        c = &e->cache[bpe_hash_bytes(s, n) & (CACHE_SLOTS - 1)];
        if (c->n && c->len == n && memcmp(c->key, s, n) == 0) {
            for (int i = 0; i < c->n; i++) emit(e, c->ids[i]);
            return;
        }
    }
    grow_scratch(e, n + 1);
    size_t ns = first_symbols(e, s, n), nh = 0;
    for (size_t i = 0; i < ns; i++) {
        e->next[i] = i + 1 < ns ? (uint32_t)i + 1 : UINT32_MAX;
        e->prev[i] = i ? (uint32_t)i - 1 : UINT32_MAX;
    }
    for (size_t i = 0; i + 1 < ns; i++) push_pair(e, &nh, (uint32_t)i);
    while (nh) {
        uint64_t top = heap_pop(e->heap, &nh);
        uint32_t pos = (uint32_t)top, rank, merged, nx = e->next[pos];
        // Stale entries: the symbol was merged into its left neighbour, or its right neighbour changed.
        if (e->sym[pos] == UINT32_MAX || nx == UINT32_MAX) continue;
        if (!pair_table_find(&b->merges, e->sym[pos], e->sym[nx], &rank, &merged) || rank != (uint32_t)(top >> 32)) continue;
        e->sym[pos] = merged;
        e->sym[nx] = UINT32_MAX;
        e->next[pos] = e->next[nx];
        if (e->next[nx] != UINT32_MAX) e->prev[e->next[nx]] = pos;
        if (e->prev[pos] != UINT32_MAX) push_pair(e, &nh, e->prev[pos]);
        push_pair(e, &nh, pos);
    }
    size_t first = *e->n_out;
    if (ns)
        for (uint32_t i = 0; i != UINT32_MAX; i = e->next[i]) emit(e, e->sym[i]);
    if (c && *e->n_out - first <= CACHE_KEY) {
        c->len = (uint8_t)n;
        c->n = (uint8_t)(*e->n_out - first);
        memcpy(c->key, s, n);
        if (c->n) memcpy(c->ids, *e->out + first, c->n * sizeof(uint32_t));   // no ids: *e->out may still be NULL
    }
}

// ---- pre-tokenizers ------------------------------------------------------------------------------
static void pre_tokenize(BpeEncoder *e, int stage, const unsigned char *s, size_t n, bool origin);

// Cuts s[0..n) into a regex's matches and the gaps between them and passes each on.
static void split_regex(BpeEncoder *e, int stage, const pcre2_code *re, const unsigned char *s, size_t n, bool origin) {
    size_t at = 0;
    while (at < n) {
        int rc = pcre2_match(re, s, n, at, 0, e->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) fail("pre-tokenizer regex failed at byte %zu (PCRE2 error %d)", at, rc);
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(e->md);
        size_t m0 = ov[0], m1 = ov[1];
        if (m1 == m0) {   // an empty match splits nothing; look again one byte on
            if (m0 + 1 > n) break;
            pre_tokenize(e, stage + 1, s + at, m0 + 1 - at, origin && at == 0);
            at = m0 + 1;
            continue;
        }
        pre_tokenize(e, stage + 1, s + at, m0 - at, origin && at == 0);   // the gap (bytes no alternative matched, e.g. invalid UTF-8)
        pre_tokenize(e, stage + 1, s + m0, m1 - m0, origin && m0 == 0);
        at = m1;
    }
    pre_tokenize(e, stage + 1, s + at, n - at, origin && at == 0);
}

// Metaspace: " " -> rep, rep first (always, or for the piece at the text's start), then a cut before each rep.
static void metaspace(BpeEncoder *e, int stage, const Stage *st, const unsigned char *s, size_t n, bool origin) {
    bool starts = s[0] == ' ' || (n >= st->rep_len && memcmp(s, st->rep, st->rep_len) == 0);
    bool pre = !starts && (st->prepend == PREPEND_ALWAYS || (st->prepend == PREPEND_FIRST && origin));
    unsigned char *o = buf_room(&e->stage_buf[stage], (n + 1) * st->rep_len);
    size_t k = 0;
    if (pre) memcpy(o, st->rep, st->rep_len), k = st->rep_len;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ') memcpy(o + k, st->rep, st->rep_len), k += st->rep_len;
        else o[k++] = s[i];
    }
    if (!st->split) {
        pre_tokenize(e, stage + 1, o, k, origin);
        return;
    }
    size_t from = 0;
    for (size_t i = 1; i + st->rep_len <= k; i++)
        if (o[i] == (unsigned char)st->rep[0] && memcmp(o + i, st->rep, st->rep_len) == 0) {
            pre_tokenize(e, stage + 1, o + from, i - from, origin && from == 0);
            from = i;
        }
    pre_tokenize(e, stage + 1, o + from, k - from, origin && from == 0);
}

// origin: the piece starts where the text does (Metaspace's "first").
static void pre_tokenize(BpeEncoder *e, int stage, const unsigned char *s, size_t n, bool origin) {
    if (!n) return;
    if (stage == e->b->n_stages) {
        const Bpe *b = e->b;
        size_t from = 0;
        if (b->cut_len)   // before a "▁" that follows another character: the same ids as the whole word (find_cut in bpe.c)
            for (size_t i = 1; i + b->cut_len <= n; i++)
                if (s[i] == (unsigned char)b->cut[0] && memcmp(s + i, b->cut, b->cut_len) == 0 &&
                    !(i >= b->cut_len && memcmp(s + i - b->cut_len, b->cut, b->cut_len) == 0)) {
                    bpe_word(e, s + from, i - from);
                    from = i;
                }
        bpe_word(e, s + from, n - from);
        return;
    }
    const Stage *st = &e->b->stages[stage];
    if (st->kind == STAGE_METASPACE) {
        metaspace(e, stage, st, s, n, origin);
        return;
    }
    if (st->prefix_space && s[0] != ' ') {
        unsigned char *o = buf_room(&e->stage_buf[stage], n + 1);
        o[0] = ' ';
        memcpy(o + 1, s, n);
        s = o;
        n++;
    }
    if (st->re) split_regex(e, stage, st->re, s, n, origin);
    else pre_tokenize(e, stage + 1, s, n, origin);
}

// ---- added tokens --------------------------------------------------------------------------------
static uint32_t code_point(const unsigned char *s, size_t w) {
    if (w == 1) return s[0];
    uint32_t cp = s[0] & (0x7Fu >> w);
    for (size_t i = 1; i < w; i++) cp = cp << 6 | (s[i] & 63u);
    return cp;
}

// Rust's char::is_whitespace (Unicode White_Space), which HF's lstrip/rstrip take.
static bool is_space(uint32_t c) {
    return (c >= 9 && c <= 13) || c == ' ' || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
           c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

// Start of the UTF-8 character that ends at s[at) (at > 0).
static size_t char_before(const unsigned char *s, size_t at) {
    size_t i = at - 1;
    while (i > 0 && at - i < 4 && (s[i] & 0xC0) == 0x80) i--;
    return utf8_char_len(s + i, at - i) == at - i ? i : at - 1;
}

static bool word_char_at(BpeEncoder *e, const unsigned char *s, size_t n, size_t at) {
    return pcre2_match(e->b->word_re, s, n, at, PCRE2_ANCHORED, e->md, NULL) > 0;
}

// The leftmost added token of one pass at or after `from`, longest first at a position; -1 if none.
static ptrdiff_t find_added(const Bpe *b, int pass, const unsigned char *s, size_t n, size_t from, const AddedToken **hit) {
    for (size_t i = from; i < n; i++) {
        if (!b->added_first[pass][s[i]]) continue;
        const AddedToken *best = NULL;
        for (size_t k = 0; k < b->n_added; k++) {
            const AddedToken *a = &b->added[k];
            if (a->normalized == pass && a->len <= n - i && (!best || a->len > best->len) && memcmp(a->bytes, s + i, a->len) == 0) best = a;
        }
        if (best) {
            *hit = best;
            return (ptrdiff_t)i;
        }
    }
    return -1;
}

static void normalized_piece(BpeEncoder *e, const unsigned char *s, size_t n, bool origin);

static void piece(BpeEncoder *e, int pass, const unsigned char *s, size_t n, bool origin) {
    if (pass == 0) normalized_piece(e, s, n, origin);
    else pre_tokenize(e, 0, s, n, origin);
}

// HF's AddedVocabulary::find_matches over s[0..n) for one pass: leftmost-longest matches; a single_word one
// only with no word character beside it (else skipped, the search going on after it); lstrip / rstrip
// ones take the white space on their left / right. The pieces between go on to `piece`.
static void split_added(BpeEncoder *e, int pass, const unsigned char *s, size_t n, bool origin) {
    const Bpe *b = e->b;
    size_t done = 0, from = 0;
    const AddedToken *a;
    ptrdiff_t i;
    while ((i = find_added(b, pass, s, n, from, &a)) >= 0) {
        size_t start = (size_t)i, stop = start + a->len;
        from = stop;
        if (a->single_word && ((start > 0 && word_char_at(e, s, n, char_before(s, start))) || (stop < n && word_char_at(e, s, n, stop))))
            continue;
        if (a->lstrip) {
            size_t j = start;
            while (j > 0) {
                size_t c = char_before(s, j);
                if (!is_space(code_point(s + c, j - c))) break;
                j = c;
            }
            start = j > done ? j : done;
        }
        if (a->rstrip)
            while (stop < n) {
                size_t w = utf8_char_len(s + stop, n - stop);
                if (!is_space(code_point(s + stop, w))) break;
                stop += w;
            }
        if (done < start) piece(e, pass, s + done, start - done, origin && done == 0);
        emit(e, a->id);
        done = stop;
    }
    if (done < n) piece(e, pass, s + done, n - done, origin && done == 0);
}

// A piece between special (non-normalized) tokens: normalized, then cut at the normalized tokens.
static void normalized_piece(BpeEncoder *e, const unsigned char *s, size_t n, bool origin) {
    size_t m;
    const unsigned char *t = norm_apply(&e->b->norm, e->norm_buf, s, n, &m);
    split_added(e, 1, t, m, origin);
}

size_t bpe_encode(BpeEncoder *e, const unsigned char *text, size_t n, uint32_t **out, size_t *n_out, size_t *cap) {
    e->out = out;
    e->n_out = n_out;
    e->out_cap = cap;
    split_added(e, 0, text, n, true);
    return *n_out;
}
