// tokenizer/bpe_train.c — byte-level BPE training (multi-threaded pre-tokenize and count, then merges by pair count) and tokenizer.json out.
#define _GNU_SOURCE   // memmem, qsort_r
#define PCRE2_CODE_UNIT_WIDTH 8
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"
#include "tokenizer/bpe.h"
#include "tokenizer/bpe_tables.h"
#include "tokenizer/normalize.h"
#include "tokenizer/tokenizer.h"

static const char *const SPECIALS[] = {"<|endoftext|>", "<|begin_of_text|>", "<|pad|>"};
enum { N_SPECIALS = 3, CHUNK = 4 << 20 };

// ---- word counts: a hash map from pre-token bytes to a count -------------------------------------
typedef struct {
    uint32_t off, len;        // bytes in the arena
    uint64_t count;
    uint64_t hash;
} WordSlot;

typedef struct {
    WordSlot *slot;           // (mask + 1), len 0 = empty
    size_t mask, used;
    unsigned char *arena;
    size_t arena_len, arena_cap;
} WordMap;

static void wm_init(WordMap *m, size_t slots) {
    *m = (WordMap){.mask = slots - 1};
    m->slot = xcalloc(slots, sizeof *m->slot, "the word counts");
}

static void wm_add(WordMap *m, const unsigned char *s, size_t n, uint64_t h, uint64_t count);

static void wm_grow(WordMap *m) {
    WordMap big = *m;
    big.mask = 2 * m->mask + 1;
    big.slot = xcalloc(big.mask + 1, sizeof *big.slot, "the word counts");
    for (size_t i = 0; i <= m->mask; i++) {
        WordSlot *w = &m->slot[i];
        if (!w->len) continue;
        size_t j = w->hash & big.mask;
        while (big.slot[j].len) j = (j + 1) & big.mask;
        big.slot[j] = *w;
    }
    free(m->slot);
    m->slot = big.slot;
    m->mask = big.mask;
}

static void wm_add(WordMap *m, const unsigned char *s, size_t n, uint64_t h, uint64_t count) {
    size_t j = h & m->mask;
    for (;; j = (j + 1) & m->mask) {
        WordSlot *w = &m->slot[j];
        if (!w->len) break;
        if (w->hash == h && w->len == n && memcmp(m->arena + w->off, s, n) == 0) {
            w->count += count;
            return;
        }
    }
    if (m->arena_len + n > m->arena_cap) {
        m->arena_cap = 2 * (m->arena_len + n) + (1 << 20);
        m->arena = xrealloc(m->arena, m->arena_cap, "the word arena");
    }
    if (m->arena_len + n > UINT32_MAX) fail("more than 4 GB of distinct pre-tokens; train on less text");
    memcpy(m->arena + m->arena_len, s, n);
    m->slot[j] = (WordSlot){(uint32_t)m->arena_len, (uint32_t)n, count, h};
    m->arena_len += n;
    if (++m->used * 2 > m->mask) wm_grow(m);
}

static void wm_free(WordMap *m) {
    free(m->slot);
    free(m->arena);
}

// ---- counting: chunks of the input files, cut after a newline, shared out to threads ---------------
typedef struct {
    const char *path;
    uint64_t off, len;
} Chunk;

typedef struct {
    Chunk *chunks;
    size_t n_chunks;
    atomic_size_t next;
    atomic_uint_fast64_t bytes_done;
    const pcre2_code *re;
    uint64_t total_bytes;
    double t0;
    bool quiet;
} CountJob;

typedef struct {
    CountJob *job;
    WordMap map;
    uint64_t words;
    int index;
} Counter;

static void count_piece(Counter *c, pcre2_match_data *md, const unsigned char *s, size_t n) {
    size_t at = 0;
    while (at < n) {
        int rc = pcre2_match(c->job->re, s, n, at, 0, md, NULL);
        if (rc < 0) break;
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        if (ov[0] > at) wm_add(&c->map, s + at, ov[0] - at, bpe_hash_bytes(s + at, ov[0] - at), 1);   // unmatched bytes (bad UTF-8)
        if (ov[1] == ov[0]) {
            at = ov[0] + 1;
            continue;
        }
        wm_add(&c->map, s + ov[0], ov[1] - ov[0], bpe_hash_bytes(s + ov[0], ov[1] - ov[0]), 1);
        c->words++;
        at = ov[1];
    }
    if (at < n) wm_add(&c->map, s + at, n - at, bpe_hash_bytes(s + at, n - at), 1);
}

// Special-token text is not learned from: the text is cut around it.
static void count_text(Counter *c, pcre2_match_data *md, const unsigned char *s, size_t n) {
    size_t at = 0;
    for (;;) {
        const unsigned char *best = NULL;
        size_t best_len = 0;
        for (int k = 0; k < N_SPECIALS; k++) {
            const unsigned char *p = memmem(s + at, n - at, SPECIALS[k], strlen(SPECIALS[k]));
            if (p && (!best || p < best)) best = p, best_len = strlen(SPECIALS[k]);
        }
        if (!best) break;
        count_piece(c, md, s + at, (size_t)(best - s) - at);
        at = (size_t)(best - s) + best_len;
    }
    count_piece(c, md, s + at, n - at);
}

static void *count_thread(void *arg) {
    Counter *c = arg;
    CountJob *j = c->job;
    pcre2_match_data *md = pcre2_match_data_create(4, NULL);
    unsigned char *buf = NULL;
    size_t cap = 0;
    double last = now_seconds();
    for (size_t i; (i = atomic_fetch_add(&j->next, 1)) < j->n_chunks;) {
        const Chunk *ch = &j->chunks[i];
        if (ch->len > cap) buf = xrealloc(buf, cap = ch->len, "a text chunk");
        int fd = open(ch->path, O_RDONLY);
        if (fd < 0) fail_io(ch->path, errno, "cannot open");
        for (uint64_t got = 0; got < ch->len;) {
            ssize_t k = pread(fd, buf + got, ch->len - got, (off_t)(ch->off + got));
            if (k <= 0) fail_data(ch->path, "read failed at byte %" PRIu64 " (%s)", ch->off + got, k ? strerror(errno) : "file shrank");
            got += (uint64_t)k;
        }
        close(fd);
        count_text(c, md, buf, ch->len);
        uint64_t done = atomic_fetch_add(&j->bytes_done, ch->len) + ch->len;
        double t = now_seconds();
        if (!j->quiet && c->index == 0 && t - last > 2) {
            last = t;
            fprintf(stderr, "tokenizer train: counted %.1f of %.1f MB, %.1f MB/s\n", done / 1e6, j->total_bytes / 1e6, done / 1e6 / (t - j->t0));
        }
    }
    free(buf);
    pcre2_match_data_free(md);
    return NULL;
}

// Chunks of about CHUNK bytes, each ending after a newline where there is one nearby.
static Chunk *make_chunks(const char *const *files, size_t n_files, size_t *n_chunks, uint64_t *total) {
    size_t n = 0, cap = 64;
    Chunk *c = xmalloc(cap * sizeof *c, "the chunk list");
    unsigned char tail[4096];
    *total = 0;
    for (size_t f = 0; f < n_files; f++) {
        struct stat st;
        if (stat(files[f], &st) != 0) fail_io(files[f], errno, "cannot read input");
        uint64_t size = (uint64_t)st.st_size, at = 0;
        FILE *fp = xfopen(files[f], "rb");
        while (at < size) {
            uint64_t end = at + CHUNK < size ? at + CHUNK : size;
            if (end < size && fseeko(fp, (off_t)end, SEEK_SET) == 0) {
                size_t k = fread(tail, 1, sizeof tail, fp);
                unsigned char *nl = memchr(tail, '\n', k);
                end += nl ? (uint64_t)(nl - tail) + 1 : 0;
            }
            if (n == cap) c = xrealloc(c, (cap *= 2) * sizeof *c, "the chunk list");
            c[n++] = (Chunk){files[f], at, end - at};
            at = end;
        }
        fclose(fp);
        *total += size;
    }
    *n_chunks = n;
    return c;
}

// ---- merging --------------------------------------------------------------------------------------
typedef struct {
    uint32_t *sym;            // the word's current symbols
    uint32_t len;
    uint64_t count;
    uint32_t stamp;           // last merge that rewrote it (dedups the occurrence lists)
} Word;

typedef struct {
    uint64_t key;             // left << 32 | right
    int64_t count;            // weighted occurrences
    uint32_t *occ;            // words that had the pair when it was added (may be stale or repeated)
    uint32_t n_occ, cap_occ;
    uint32_t touched;         // last merge that raised its count (queued once per merge)
} Pair;

typedef struct {
    Pair *pairs;
    size_t n, cap;
    uint32_t *index;          // open addressing: pair index + 1
    size_t mask;
} PairSet;

static uint32_t pair_of(PairSet *s, uint64_t key) {
    size_t j = (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 20) & s->mask;
    for (;; j = (j + 1) & s->mask) {
        uint32_t v = s->index[j];
        if (!v) break;
        if (s->pairs[v - 1].key == key) return v - 1;
    }
    if (s->n == s->cap) s->pairs = xrealloc(s->pairs, (s->cap = s->cap ? 2 * s->cap : 1 << 16) * sizeof *s->pairs, "the pair table");
    s->pairs[s->n] = (Pair){.key = key};
    s->index[j] = (uint32_t)++s->n;
    if (s->n * 2 > s->mask) {
        free(s->index);
        s->mask = 2 * s->mask + 1;
        s->index = xcalloc(s->mask + 1, sizeof *s->index, "the pair index");
        for (size_t i = 0; i < s->n; i++) {
            size_t k = (size_t)((s->pairs[i].key * 0x9E3779B97F4A7C15ULL) >> 20) & s->mask;
            while (s->index[k]) k = (k + 1) & s->mask;
            s->index[k] = (uint32_t)i + 1;
        }
    }
    return (uint32_t)(s->n - 1);
}

static void add_occ(Pair *p, uint32_t w) {
    if (p->n_occ && p->occ[p->n_occ - 1] == w) return;
    if (p->n_occ == p->cap_occ) p->occ = xrealloc(p->occ, (p->cap_occ = p->cap_occ ? 2 * p->cap_occ : 4) * sizeof *p->occ, "a pair's words");
    p->occ[p->n_occ++] = w;
}

// A max-heap of (count, pair) with lazy deletion: an entry whose count is stale is re-pushed when popped.
typedef struct {
    int64_t count;
    uint64_t key;             // ties: the smaller (left, right) first, so the result never depends on threads
    uint32_t pair;
} HeapItem;

typedef struct {
    HeapItem *h;
    size_t n, cap;
} Heap;

static bool above(const HeapItem *a, const HeapItem *b) { return a->count > b->count || (a->count == b->count && a->key < b->key); }

static void heap_push(Heap *q, HeapItem it) {
    if (q->n == q->cap) q->h = xrealloc(q->h, (q->cap = q->cap ? 2 * q->cap : 1 << 16) * sizeof *q->h, "the pair heap");
    size_t i = q->n++;
    while (i && above(&it, &q->h[(i - 1) / 2])) {
        q->h[i] = q->h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    q->h[i] = it;
}

static HeapItem heap_pop(Heap *q) {
    HeapItem top = q->h[0], it = q->h[--q->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= q->n) break;
        if (c + 1 < q->n && above(&q->h[c + 1], &q->h[c])) c++;
        if (!above(&q->h[c], &it)) break;
        q->h[i] = q->h[c];
        i = c;
    }
    q->h[i] = it;
    return top;
}

// The byte strings of the tokens learned so far.
typedef struct {
    unsigned char **bytes;
    uint32_t *len;
    size_t n, cap;
} Vocab;

static void vocab_add(Vocab *v, const unsigned char *s, uint32_t n) {
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 1024;
        v->bytes = xrealloc(v->bytes, v->cap * sizeof *v->bytes, "the vocab");
        v->len = xrealloc(v->len, v->cap * sizeof *v->len, "the vocab");
    }
    v->bytes[v->n] = xmalloc(n ? n : 1, "a token");
    memcpy(v->bytes[v->n], s, n);
    v->len[v->n++] = n;
}

static int cmp_word(const void *a, const void *b, void *arena) {
    const WordSlot *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = memcmp((unsigned char *)arena + x->off, (unsigned char *)arena + y->off, n);
    return c ? c : (x->len > y->len) - (x->len < y->len);
}

typedef struct {
    uint32_t *p;
    size_t n, cap;
} Touched;

// Rewrites word w with pair (l, r) merged into m; pair counts move from the old pairs to the new ones.
// Pairs that gain (those with m) are listed in t once per merge, to be queued at their final count.
static void merge_word(Word *w, uint32_t wi, uint32_t l, uint32_t r, uint32_t m, uint32_t merge, PairSet *ps, Touched *t) {
    int64_t c = (int64_t)w->count;
    for (uint32_t i = 0; i + 1 < w->len; i++) {
        uint32_t p = pair_of(ps, (uint64_t)w->sym[i] << 32 | w->sym[i + 1]);
        ps->pairs[p].count -= c;
    }
    uint32_t k = 0;
    for (uint32_t i = 0; i < w->len; i++) {
        if (i + 1 < w->len && w->sym[i] == l && w->sym[i + 1] == r) {
            w->sym[k++] = m;
            i++;
        } else w->sym[k++] = w->sym[i];
    }
    w->len = k;
    for (uint32_t i = 0; i + 1 < k; i++) {
        uint32_t p = pair_of(ps, (uint64_t)w->sym[i] << 32 | w->sym[i + 1]);
        Pair *q = &ps->pairs[p];
        q->count += c;
        if (w->sym[i] != m && w->sym[i + 1] != m) continue;
        add_occ(q, wi);
        if (q->touched == merge) continue;
        q->touched = merge;
        if (t->n == t->cap) t->p = xrealloc(t->p, (t->cap = t->cap ? 2 * t->cap : 1024) * sizeof *t->p, "the touched pairs");
        t->p[t->n++] = p;
    }
}

// ---- tokenizer.json ------------------------------------------------------------------------------
static char *byte_level(const unsigned char *s, size_t n) {
    char *out = xmalloc(2 * n + 1, "a token string"), *o = out;
    for (size_t i = 0; i < n; i++) o += byte_level_utf8(s[i], o);
    *o = 0;
    return out;
}

static cJSON *byte_level_obj(bool prefix, bool trim, bool regex) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "type", "ByteLevel");
    cJSON_AddBoolToObject(o, "add_prefix_space", prefix);
    cJSON_AddBoolToObject(o, "trim_offsets", trim);
    cJSON_AddBoolToObject(o, "use_regex", regex);
    return o;
}

// A tokenizer.json's root: its special tokens at ids first.. (with the flags HF writes for them), no normalizer.
static cJSON *json_root(const char *const *specials, int n, int first) {
    cJSON *root = cJSON_CreateObject(), *added = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "version", "1.0");
    cJSON_AddNullToObject(root, "truncation");
    cJSON_AddNullToObject(root, "padding");
    for (int k = 0; k < n; k++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "id", first + k);
        cJSON_AddStringToObject(t, "content", specials[k]);
        cJSON_AddBoolToObject(t, "single_word", false);
        cJSON_AddBoolToObject(t, "lstrip", false);
        cJSON_AddBoolToObject(t, "rstrip", false);
        cJSON_AddBoolToObject(t, "normalized", false);
        cJSON_AddBoolToObject(t, "special", true);
        cJSON_AddItemToArray(added, t);
    }
    cJSON_AddItemToObject(root, "added_tokens", added);
    cJSON_AddNullToObject(root, "normalizer");
    return root;
}

// The root's byte-level BPE model (no dropout, unk or affixes) with its vocab and merges, and the whole as text.
static char *json_text(cJSON *root, cJSON *vocab, cJSON *merges) {
    cJSON *model = cJSON_CreateObject();
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddNullToObject(model, "dropout");
    cJSON_AddNullToObject(model, "unk_token");
    cJSON_AddNullToObject(model, "continuing_subword_prefix");
    cJSON_AddNullToObject(model, "end_of_word_suffix");
    cJSON_AddBoolToObject(model, "fuse_unk", false);
    cJSON_AddBoolToObject(model, "byte_fallback", false);
    cJSON_AddBoolToObject(model, "ignore_merges", false);
    cJSON_AddItemToObject(model, "vocab", vocab);
    cJSON_AddItemToObject(model, "merges", merges);
    cJSON_AddItemToObject(root, "model", model);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) fail("out of memory writing tokenizer.json");
    return text;
}

static char *write_json(const Vocab *v, const uint32_t (*merges)[2], size_t n_merges, const char *pattern) {
    cJSON *root = json_root(SPECIALS, N_SPECIALS, 256);
    if (pattern == BPE_LLAMA3_PATTERN) {
        cJSON *seq = cJSON_CreateObject(), *list = cJSON_CreateArray(), *split = cJSON_CreateObject(), *pat = cJSON_CreateObject();
        cJSON_AddStringToObject(seq, "type", "Sequence");
        cJSON_AddStringToObject(split, "type", "Split");
        cJSON_AddStringToObject(pat, "Regex", pattern);
        cJSON_AddItemToObject(split, "pattern", pat);
        cJSON_AddStringToObject(split, "behavior", "Isolated");
        cJSON_AddBoolToObject(split, "invert", false);
        cJSON_AddItemToArray(list, split);
        cJSON_AddItemToArray(list, byte_level_obj(false, true, false));
        cJSON_AddItemToObject(seq, "pretokenizers", list);
        cJSON_AddItemToObject(root, "pre_tokenizer", seq);
    } else {
        cJSON_AddItemToObject(root, "pre_tokenizer", byte_level_obj(false, true, true));
    }
    cJSON_AddItemToObject(root, "post_processor", byte_level_obj(true, false, true));
    cJSON_AddItemToObject(root, "decoder", byte_level_obj(true, true, true));
    cJSON *vocab = cJSON_CreateObject(), *ml = cJSON_CreateArray();
    for (size_t id = 0; id < v->n; id++) {
        char *s = id >= 256 && id < 256 + N_SPECIALS ? xstrdup(SPECIALS[id - 256]) : byte_level(v->bytes[id], v->len[id]);
        cJSON_AddItemToObject(vocab, s, cJSON_CreateNumber((double)id));
        free(s);
    }
    for (size_t i = 0; i < n_merges; i++) {
        cJSON *m = cJSON_CreateArray();
        for (int side = 0; side < 2; side++) {
            char *s = byte_level(v->bytes[merges[i][side]], v->len[merges[i][side]]);
            cJSON_AddItemToArray(m, cJSON_CreateString(s));
            free(s);
        }
        cJSON_AddItemToArray(ml, m);
    }
    return json_text(root, vocab, ml);
}

char *bpe_byte260_json(void) {
    cJSON *root = json_root(TOK_SPECIAL_TEXT, TOK_VOCAB_SIZE - TOK_EOS, TOK_EOS), *vocab = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "pre_tokenizer", byte_level_obj(false, false, false));   // no merges: the split would change nothing
    cJSON_AddNullToObject(root, "post_processor");
    cJSON_AddItemToObject(root, "decoder", byte_level_obj(false, false, false));
    for (int b = 0; b < 256; b++) {
        char s[4] = {0};
        byte_level_utf8((unsigned char)b, s);
        cJSON_AddNumberToObject(vocab, s, b);
    }
    return json_text(root, vocab, cJSON_CreateArray());
}

// ---- the whole training ------------------------------------------------------------------------
static WordMap count_words(const char *const *files, size_t n_files, const BpeTrainOptions *o, const pcre2_code *re, BpeTrainStats *st) {
    CountJob job = {.re = re, .t0 = now_seconds(), .quiet = o->quiet};
    job.chunks = make_chunks(files, n_files, &job.n_chunks, &job.total_bytes);
    int nt = o->threads < 1 ? 1 : o->threads;
    Counter *c = xcalloc((size_t)nt, sizeof *c, "the counters");
    pthread_t *th = xmalloc((size_t)nt * sizeof *th, "the threads");
    for (int i = 0; i < nt; i++) {
        c[i] = (Counter){.job = &job, .index = i};
        wm_init(&c[i].map, 1 << 16);
        if (pthread_create(&th[i], NULL, count_thread, &c[i]) != 0) fail("cannot start a counting thread (%s)", strerror(errno));
    }
    for (int i = 0; i < nt; i++) pthread_join(th[i], NULL);
    WordMap all = c[0].map;
    st->words = c[0].words;
    for (int i = 1; i < nt; i++) {
        for (size_t j = 0; j <= c[i].map.mask; j++) {
            WordSlot *w = &c[i].map.slot[j];
            if (w->len) wm_add(&all, c[i].map.arena + w->off, w->len, w->hash, w->count);
        }
        st->words += c[i].words;
        wm_free(&c[i].map);
    }
    st->bytes = job.total_bytes;
    st->unique_words = all.used;
    free(c);
    free(th);
    free(job.chunks);
    return all;
}

// The words of wm in byte order (so that the result does not depend on the thread count), each its bytes as symbols
// in *syms; wm is freed. Returns their count.
static size_t sorted_words(WordMap *wm, Word **words, uint32_t **syms) {
    size_t nw = 0;
    for (size_t j = 0; j <= wm->mask; j++)
        if (wm->slot[j].len) wm->slot[nw++] = wm->slot[j];
    qsort_r(wm->slot, nw, sizeof *wm->slot, cmp_word, wm->arena);
    *words = xmalloc((nw ? nw : 1) * sizeof **words, "the words");
    *syms = xmalloc((wm->arena_len ? wm->arena_len : 1) * sizeof **syms, "the word symbols");
    for (size_t i = 0, at = 0; i < nw; i++) {
        (*words)[i] = (Word){*syms + at, wm->slot[i].len, wm->slot[i].count, UINT32_MAX};
        for (uint32_t k = 0; k < wm->slot[i].len; k++) (*syms)[at + k] = wm->arena[wm->slot[i].off + k];
        at += wm->slot[i].len;
    }
    wm_free(wm);
    return nw;
}

// Everything the merge loop updates.
typedef struct {
    Word *words;
    uint32_t *syms;           // (the words' symbols) their storage
    size_t n_words;
    Vocab v;
    PairSet ps;
    Heap q;                   // pairs by count, highest first (stale entries skipped when popped)
    Touched touched;
    uint32_t (*merges)[2];    // (vocab_size, 2) the merges learned, in order
    size_t n_merges;
} Merger;

// The bytes, the special tokens, and every adjacent pair of the words counted and queued.
static void merger_init(Merger *g, WordMap *wm, uint32_t vocab_size) {
    *g = (Merger){.ps = {.mask = (1 << 16) - 1}};
    g->n_words = sorted_words(wm, &g->words, &g->syms);
    for (int b = 0; b < 256; b++) vocab_add(&g->v, &(unsigned char){(unsigned char)b}, 1);
    for (int k = 0; k < N_SPECIALS; k++) vocab_add(&g->v, (const unsigned char *)SPECIALS[k], (uint32_t)strlen(SPECIALS[k]));
    g->ps.index = xcalloc(g->ps.mask + 1, sizeof *g->ps.index, "the pair index");
    for (size_t i = 0; i < g->n_words; i++)
        for (uint32_t k = 0; k + 1 < g->words[i].len; k++) {
            uint32_t pi = pair_of(&g->ps, (uint64_t)g->words[i].sym[k] << 32 | g->words[i].sym[k + 1]);
            Pair *p = &g->ps.pairs[pi];
            p->count += (int64_t)g->words[i].count;
            add_occ(p, (uint32_t)i);
        }
    for (size_t i = 0; i < g->ps.n; i++) heap_push(&g->q, (HeapItem){g->ps.pairs[i].count, g->ps.pairs[i].key, (uint32_t)i});
    g->merges = xmalloc(vocab_size * sizeof *g->merges, "the merge list");
}

static void merger_free(Merger *g) {
    for (size_t i = 0; i < g->v.n; i++) free(g->v.bytes[i]);
    for (size_t i = 0; i < g->ps.n; i++) free(g->ps.pairs[i].occ);
    free(g->v.bytes), free(g->v.len), free(g->ps.pairs), free(g->ps.index), free(g->q.h);
    free(g->merges), free(g->touched.p), free(g->words), free(g->syms);
}

// The id of token l's bytes followed by r's: a string reached by another merge path keeps its first id (as HF's
// trainer); a new one is added.
static uint32_t token_of(Vocab *v, uint32_t l, uint32_t r) {
    uint32_t n = v->len[l] + v->len[r];
    unsigned char *cat = xmalloc(n, "a token");
    memcpy(cat, v->bytes[l], v->len[l]);
    memcpy(cat + v->len[l], v->bytes[r], v->len[r]);
    uint32_t m = (uint32_t)v->n;
    for (uint32_t id = BPE_TRAIN_FIRST_MERGE; id < v->n; id++)
        if (v->len[id] == n && memcmp(v->bytes[id], cat, n) == 0) m = id;
    if (m == v->n) vocab_add(v, cat, n);
    free(cat);
    return m;
}

// Merges pair index pi into token m in every word that holds it; the pairs whose counts rose are queued again.
static void merge_pair(Merger *g, uint32_t pi, uint32_t m) {
    Pair *p = &g->ps.pairs[pi];
    uint32_t l = (uint32_t)(p->key >> 32), r = (uint32_t)p->key;
    g->merges[g->n_merges][0] = l, g->merges[g->n_merges][1] = r;
    uint32_t stamp = (uint32_t)++g->n_merges;
    uint32_t *occ = p->occ, n_occ = p->n_occ;
    p->occ = NULL;
    p->n_occ = p->cap_occ = 0;
    g->touched.n = 0;
    for (uint32_t i = 0; i < n_occ; i++) {
        Word *w = &g->words[occ[i]];
        if (w->stamp == stamp) continue;
        w->stamp = stamp;
        merge_word(w, occ[i], l, r, m, stamp, &g->ps, &g->touched);   // may move ps.pairs: p is not read after
    }
    for (size_t k = 0; k < g->touched.n; k++) {
        const Pair *t = &g->ps.pairs[g->touched.p[k]];
        if (t->count > 0) heap_push(&g->q, (HeapItem){t->count, t->key, g->touched.p[k]});
    }
    free(occ);
    g->ps.pairs[pi].count = 0;
}

static const char *pattern_of(const char *name) {
    const char *pattern = !name || strcmp(name, "gpt2") == 0 ? BPE_GPT2_PATTERN : strcmp(name, "llama3") == 0 ? BPE_LLAMA3_PATTERN : NULL;
    if (!pattern) fail_usage("--pattern must be gpt2 or llama3, not '%s'", name);
    return pattern;
}

char *bpe_train(const char *const *files, size_t n_files, const BpeTrainOptions *o, BpeTrainStats *st) {
    *st = (BpeTrainStats){0};
    const char *pattern = pattern_of(o->pattern);
    if (o->vocab_size < BPE_TRAIN_FIRST_MERGE) fail_usage("--vocab must be at least %d (256 bytes + %d special tokens)", BPE_TRAIN_FIRST_MERGE, N_SPECIALS);
    int code;
    PCRE2_SIZE at;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &code, &at, NULL);
    if (!re) fail("internal: the %s pattern does not compile (PCRE2 error %d)", o->pattern, code);
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    double t0 = now_seconds();
    WordMap wm = count_words(files, n_files, o, re, st);
    pcre2_code_free(re);
    if (!st->words) fail_usage("no text to learn from: the input holds only special-token text (<|endoftext|> and the like); give text files");
    st->count_seconds = now_seconds() - t0;
    Merger g;
    merger_init(&g, &wm, o->vocab_size);
    uint64_t min_freq = o->min_frequency ? o->min_frequency : 1;
    double t1 = now_seconds(), last = t1;
    while (g.v.n < o->vocab_size && g.q.n) {
        HeapItem top = heap_pop(&g.q);
        const Pair *p = &g.ps.pairs[top.pair];
        if (top.count != p->count) {   // stale: counts only fall, so re-queue at the true count
            if (p->count > 0) heap_push(&g.q, (HeapItem){p->count, p->key, top.pair});
            continue;
        }
        if ((uint64_t)p->count < min_freq) break;
        merge_pair(&g, top.pair, token_of(&g.v, (uint32_t)(p->key >> 32), (uint32_t)p->key));
        double t = now_seconds();
        if (!o->quiet && t - last > 2) {
            last = t;
            fprintf(stderr, "tokenizer train: %zu of %u tokens, %.0f merges/s\n", g.v.n, o->vocab_size, g.n_merges / (t - t1));
        }
    }
    st->merges = g.n_merges;
    st->merge_seconds = now_seconds() - t1;
    char *json = write_json(&g.v, (const uint32_t(*)[2])g.merges, g.n_merges, pattern);
    merger_free(&g);
    return json;
}
