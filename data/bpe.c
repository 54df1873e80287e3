// data/bpe.c — byte-level BPE encoder/decoder reading Hugging Face tokenizer.json (ids identical to `tokenizers`).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "data/bpe.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <pcre2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

// The pre-tokenizer regex that HF's ByteLevel applies when use_regex is true (GPT-2's).
static const char GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
// Llama 3's Split regex (tokenizer.json of Meta-Llama-3).
static const char LLAMA3_PATTERN[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
enum { MAX_STAGES = 8, CACHE_SLOTS = 1 << 14, CACHE_KEY = 30, MAX_ID = (1 << 22) - 1 };

// One pre-tokenizer step: optionally prepend a space (ByteLevel add_prefix_space), then split by a
// regex into matches and the gaps between them (HF's "Isolated" behaviour); NULL regex = no split.
typedef struct {
    pcre2_code *re;
    bool prefix_space;
    bool known;        // no regex, or GPT-2's or Llama 3's (see bpe_safe_cuts)
} Stage;

typedef struct {
    unsigned char *bytes;
    size_t len;
    uint32_t id;
    bool normalized;   // matched in HF's second pass (after the non-normalized tokens)
} AddedToken;

// Open-addressing tables: raw-byte strings -> id, and (left id, right id) -> (rank, merged id).
typedef struct {
    uint32_t *slot;    // (mask + 1) ids + 1; 0 = empty
    uint32_t mask;
} StrTable;
typedef struct {
    uint64_t *key;     // (mask + 1) left << 32 | right, UINT64_MAX = empty
    uint32_t *rank, *merged;
    uint32_t mask;
} PairTable;

struct Bpe {
    uint32_t vocab_size;
    unsigned char **tok;        // (vocab_size) the bytes each id stands for; NULL = unused id
    uint32_t *tok_len;          // (vocab_size)
    uint32_t byte_id[256];      // the single-byte token of each byte
    StrTable vocab;             // model.vocab by raw bytes (for ignore_merges and merges)
    PairTable merges;
    bool ignore_merges;
    Stage stages[MAX_STAGES];
    int n_stages;
    AddedToken *added;
    size_t n_added;
    bool added_first[2][256];   // [normalized] a token of that pass starts with this byte
    int64_t template_bos;       // post_processor's leading special token, -1 if none
};

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
    unsigned char *prefixed[MAX_STAGES];   // " " + piece for add_prefix_space
    size_t prefixed_cap[MAX_STAGES];
    uint32_t **out;             // the caller's output while encoding
    size_t *n_out, *out_cap;
};

// ---- GPT-2's byte <-> unicode map (bytes_to_unicode) --------------------------------------------
static void byte_map(uint32_t cp_of_byte[256], int16_t byte_of_cp[324]) {
    int n = 0;
    for (int i = 0; i < 324; i++) byte_of_cp[i] = -1;
    for (int b = 0; b < 256; b++) {
        bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
        cp_of_byte[b] = printable ? (uint32_t)b : 256u + (uint32_t)n++;
        byte_of_cp[cp_of_byte[b]] = (int16_t)b;
    }
}

// The raw bytes of a token string in the byte-level alphabet; a string with a character outside it
// stands for its own UTF-8 bytes (as HF's ByteLevel decoder does). Returns the length written to out.
static size_t unmap_token(const char *s, size_t n, unsigned char *out) {
    static uint32_t cp_of_byte[256];
    static int16_t byte_of_cp[324];
    static bool ready;
    if (!ready) {
        byte_map(cp_of_byte, byte_of_cp);
        ready = true;
    }
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        uint32_t cp;
        int w = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
        if (i + (size_t)w > n) w = 1;
        cp = w == 1 ? c : w == 2 ? (c & 31u) : w == 3 ? (c & 15u) : (c & 7u);
        for (int j = 1; j < w; j++) cp = cp << 6 | ((unsigned char)s[i + j] & 63u);
        if (cp >= 324 || byte_of_cp[cp] < 0) {
            memcpy(out, s, n);
            return n;
        }
        out[k++] = (unsigned char)byte_of_cp[cp];
        i += (size_t)w;
    }
    return k;
}

// ---- hash tables ---------------------------------------------------------------------------------
static inline uint64_t mix64(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    return x;
}

static uint64_t hash_bytes(const unsigned char *s, size_t n) {
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
    return mix64(h ^ w);
}

static uint32_t table_size(size_t n) {
    uint32_t m = 16;
    while (m < 2 * n + 16) m *= 2;
    return m;
}

static int64_t str_find(const Bpe *b, const unsigned char *s, size_t n) {
    const StrTable *t = &b->vocab;
    for (uint32_t i = (uint32_t)hash_bytes(s, n) & t->mask;; i = (i + 1) & t->mask) {
        uint32_t v = t->slot[i];
        if (!v) return -1;
        if (b->tok_len[v - 1] == n && memcmp(b->tok[v - 1], s, n) == 0) return v - 1;
    }
}

static void str_insert(Bpe *b, uint32_t id) {
    StrTable *t = &b->vocab;
    uint32_t i = (uint32_t)hash_bytes(b->tok[id], b->tok_len[id]) & t->mask;
    while (t->slot[i]) i = (i + 1) & t->mask;
    t->slot[i] = id + 1;
}

static inline bool pair_find(const PairTable *t, uint32_t l, uint32_t r, uint32_t *rank, uint32_t *merged) {
    uint64_t k = (uint64_t)l << 32 | r;
    for (uint32_t i = (uint32_t)mix64(k) & t->mask;; i = (i + 1) & t->mask) {
        if (t->key[i] == k) {
            *rank = t->rank[i];
            *merged = t->merged[i];
            return true;
        }
        if (t->key[i] == UINT64_MAX) return false;
    }
}

// A later duplicate of a merge replaces the earlier one, as in HF's map built from the list.
static void pair_insert(PairTable *t, uint32_t l, uint32_t r, uint32_t rank, uint32_t merged) {
    uint64_t k = (uint64_t)l << 32 | r;
    uint32_t i = (uint32_t)mix64(k) & t->mask;
    while (t->key[i] != UINT64_MAX && t->key[i] != k) i = (i + 1) & t->mask;
    t->key[i] = k;
    t->rank[i] = rank;
    t->merged[i] = merged;
}

// ---- loading tokenizer.json ----------------------------------------------------------------------
typedef struct {
    char *err;
    size_t err_len;
    bool failed;
} Errs;

static bool bad(Errs *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool bad(Errs *e, const char *fmt, ...) {
    if (!e->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e->err, e->err_len, fmt, ap);
        va_end(ap);
    }
    e->failed = true;
    return false;
}

static bool is_false_or_null(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return !v || cJSON_IsNull(v) || cJSON_IsFalse(v);
}

static const char *type_of(const cJSON *o) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(t) ? t->valuestring : NULL;
}

static bool add_stage(Bpe *b, Errs *e, const char *pattern, bool literal, bool prefix_space, const char *field) {
    if (b->n_stages == MAX_STAGES) return bad(e, "%s: more than %d pre-tokenizer steps", field, MAX_STAGES);
    Stage *s = &b->stages[b->n_stages++];
    s->prefix_space = prefix_space;
    s->known = !pattern || (!literal && (strcmp(pattern, GPT2_PATTERN) == 0 || strcmp(pattern, LLAMA3_PATTERN) == 0));
    if (!pattern) return true;
    int code;
    PCRE2_SIZE at;
    uint32_t opts = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : 0);
    s->re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts, &code, &at, NULL);
    if (!s->re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof msg);
        return bad(e, "%s: regex does not compile at offset %zu: %s", field, (size_t)at, (char *)msg);
    }
    pcre2_jit_compile(s->re, PCRE2_JIT_COMPLETE);   // falls back to the interpreter when JIT is unavailable
    return true;
}

static bool parse_pre_tokenizer(Bpe *b, Errs *e, const cJSON *p, const char *field, bool *byte_level) {
    const char *type = type_of(p);
    char sub[96];
    if (!type) return bad(e, "%s: missing \"type\" (a byte-level BPE needs ByteLevel, optionally after Split in a Sequence)", field);
    if (strcmp(type, "Sequence") == 0) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, "pretokenizers"), *it;
        if (!cJSON_IsArray(list)) return bad(e, "%s.pretokenizers: missing or not a list", field);
        int i = 0;
        cJSON_ArrayForEach(it, list) {
            snprintf(sub, sizeof sub, "%s.pretokenizers[%d]", field, i++);
            if (!parse_pre_tokenizer(b, e, it, sub, byte_level)) return false;
        }
        return true;
    }
    if (strcmp(type, "ByteLevel") == 0) {
        const cJSON *use = cJSON_GetObjectItemCaseSensitive(p, "use_regex");
        bool regex = !use || cJSON_IsTrue(use);
        *byte_level = true;
        return add_stage(b, e, regex ? GPT2_PATTERN : NULL, false, !is_false_or_null(p, "add_prefix_space"), field);
    }
    if (strcmp(type, "Split") == 0) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern"), *beh = cJSON_GetObjectItemCaseSensitive(p, "behavior");
        const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex"), *lit = cJSON_GetObjectItemCaseSensitive(pat, "String");
        if (!cJSON_IsString(re) && !cJSON_IsString(lit)) return bad(e, "%s.pattern: needs {\"Regex\": ...} or {\"String\": ...}", field);
        if (!cJSON_IsString(beh) || strcmp(beh->valuestring, "Isolated") != 0)
            return bad(e, "%s.behavior: only \"Isolated\" is supported, not %s", field, cJSON_IsString(beh) ? beh->valuestring : "(missing)");
        if (!is_false_or_null(p, "invert")) return bad(e, "%s.invert: true is not supported", field);
        return add_stage(b, e, cJSON_IsString(re) ? re->valuestring : lit->valuestring, !cJSON_IsString(re), false, field);
    }
    return bad(e, "%s.type: '%s' is not supported (ByteLevel, Split with Isolated, Sequence)", field, type);
}

static void parse_template(Bpe *b, const cJSON *p) {
    const char *type = p ? type_of(p) : NULL;
    if (!type) return;
    if (strcmp(type, "Sequence") == 0) {
        const cJSON *it;
        cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(p, "processors")) parse_template(b, it);
        return;
    }
    if (strcmp(type, "TemplateProcessing") != 0) return;
    const cJSON *first = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(p, "single"), 0);
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(first, "SpecialToken"), "id");
    if (!cJSON_IsString(name)) return;
    const cJSON *spec = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(p, "special_tokens"), name->valuestring);
    const cJSON *id = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(spec, "ids"), 0);
    if (cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble < b->vocab_size) b->template_bos = (int64_t)id->valuedouble;
}

static bool check_model_options(Errs *e, const cJSON *m) {
    const char *type = type_of(m);
    if (!type || strcmp(type, "BPE") != 0) return bad(e, "model.type: '%s' is not supported (only BPE)", type ? type : "(missing)");
    if (!is_false_or_null(m, "byte_fallback")) return bad(e, "model.byte_fallback: true is not supported (byte-level BPE needs none)");
    const char *affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, affix[i]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsString(v) && !v->valuestring[0])) return bad(e, "model.%s: is not supported (must be null)", affix[i]);
    }
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(m, "dropout");
    if (d && !cJSON_IsNull(d) && !(cJSON_IsNumber(d) && d->valuedouble == 0)) return bad(e, "model.dropout: BPE dropout is not supported (must be null)");
    return true;
}

// Sets id's bytes from its token string (byte-level alphabet).
static bool set_token(Bpe *b, Errs *e, uint32_t id, const char *s, const char *field) {
    if (b->tok[id]) return bad(e, "%s: id %u is used twice", field, id);
    size_t n = strlen(s);
    if (!n) return bad(e, "%s: empty token string for id %u", field, id);
    b->tok[id] = xmalloc(n, "a token");
    b->tok_len[id] = (uint32_t)unmap_token(s, n, b->tok[id]);
    return true;
}

static bool parse_vocab(Bpe *b, Errs *e, const cJSON *vocab, const cJSON *added) {
    const cJSON *it;
    double top = -1;
    cJSON_ArrayForEach(it, vocab) {
        if (!cJSON_IsNumber(it) || it->valuedouble < 0 || it->valuedouble > MAX_ID || it->valuedouble != (double)(int64_t)it->valuedouble)
            return bad(e, "model.vocab[\"%.60s\"]: id is not an integer in 0..%d", it->string, MAX_ID);
        if (it->valuedouble > top) top = it->valuedouble;
    }
    int i = 0;
    cJSON_ArrayForEach(it, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id"), *c = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!cJSON_IsNumber(id) || id->valuedouble < 0 || id->valuedouble > MAX_ID || id->valuedouble != (double)(int64_t)id->valuedouble ||
            !cJSON_IsString(c) || !c->valuestring[0])
            return bad(e, "added_tokens[%d]: needs an integer \"id\" in 0..%d and a non-empty \"content\"", i, MAX_ID);
        const char *opts[] = {"lstrip", "rstrip", "single_word"};
        for (int k = 0; k < 3; k++)
            if (!is_false_or_null(it, opts[k])) return bad(e, "added_tokens[%d].%s: true is not supported", i, opts[k]);
        if (id->valuedouble > top) top = id->valuedouble;
        i++;
    }
    if (top < 0) return bad(e, "model.vocab: empty");
    b->vocab_size = (uint32_t)top + 1;
    b->tok = xcalloc(b->vocab_size, sizeof *b->tok, "the token table");
    b->tok_len = xcalloc(b->vocab_size, sizeof *b->tok_len, "the token table");
    cJSON_ArrayForEach(it, vocab) if (!set_token(b, e, (uint32_t)it->valuedouble, it->string, "model.vocab")) return false;
    b->vocab.mask = table_size(b->vocab_size) - 1;
    b->vocab.slot = xcalloc((size_t)b->vocab.mask + 1, sizeof(uint32_t), "the vocab table");
    for (uint32_t id = 0; id < b->vocab_size; id++)
        if (b->tok[id]) str_insert(b, id);
    for (int c = 0; c < 256; c++) {
        unsigned char byte = (unsigned char)c;
        int64_t id = str_find(b, &byte, 1);
        if (id < 0) return bad(e, "model.vocab: has no token for byte 0x%02x (a byte-level BPE has all 256)", c);
        b->byte_id[c] = (uint32_t)id;
    }
    // Added tokens: an id already in the vocab keeps its string; the content is what the text matches.
    b->added = xcalloc((size_t)cJSON_GetArraySize(added) + 1, sizeof *b->added, "the added tokens");
    cJSON_ArrayForEach(it, added) {
        const char *content = cJSON_GetObjectItemCaseSensitive(it, "content")->valuestring;
        uint32_t id = (uint32_t)cJSON_GetObjectItemCaseSensitive(it, "id")->valuedouble;
        AddedToken *a = &b->added[b->n_added++];
        a->len = strlen(content);
        a->bytes = (unsigned char *)xstrdup(content);
        a->id = id;
        a->normalized = !is_false_or_null(it, "normalized");
        b->added_first[a->normalized][a->bytes[0]] = true;
        if (!b->tok[id] && !set_token(b, e, id, content, "added_tokens")) return false;
    }
    return true;
}

// The two sides of merge i: ["a", "b"] or the older "a b" (split at its only space) into buf.
static bool merge_side(const cJSON *it, const char **l, const char **r, char **buf) {
    if (cJSON_IsArray(it) && cJSON_GetArraySize(it) == 2) {
        *l = cJSON_GetStringValue(cJSON_GetArrayItem(it, 0));
        *r = cJSON_GetStringValue(cJSON_GetArrayItem(it, 1));
        return *l && *r;
    }
    if (!cJSON_IsString(it)) return false;
    free(*buf);
    *buf = xstrdup(it->valuestring);
    char *sp = strchr(*buf, ' ');
    if (!sp || strchr(sp + 1, ' ')) return false;
    *sp = 0;
    *l = *buf;
    *r = sp + 1;
    return true;
}

static bool parse_merges(Bpe *b, Errs *e, const cJSON *merges) {
    int n = cJSON_GetArraySize(merges), i = 0;
    PairTable *t = &b->merges;
    t->mask = table_size((size_t)n) - 1;
    t->key = xmalloc(((size_t)t->mask + 1) * sizeof *t->key, "the merge table");
    memset(t->key, 0xff, ((size_t)t->mask + 1) * sizeof *t->key);
    t->rank = xmalloc(((size_t)t->mask + 1) * sizeof *t->rank, "the merge table");
    t->merged = xmalloc(((size_t)t->mask + 1) * sizeof *t->merged, "the merge table");
    char *buf = NULL;
    unsigned char *raw = NULL;
    size_t raw_cap = 0;
    const cJSON *it;
    bool ok = true;
    cJSON_ArrayForEach(it, merges) {
        const char *l, *r;
        if (!merge_side(it, &l, &r, &buf)) {
            ok = bad(e, "model.merges[%d]: not \"a b\" nor [\"a\", \"b\"]", i);
            break;
        }
        size_t sl = strlen(l), sr = strlen(r);
        if (sl == 0 || sr == 0) {   // "" is no token a merge can join (found by fuzzing: a merge " ")
            ok = bad(e, "model.merges[%d]: an empty side; both sides must be tokens of model.vocab", i);
            break;
        }
        if (raw_cap < sl + sr) raw = xrealloc(raw, raw_cap = 2 * (sl + sr), "a merge");
        size_t nl = unmap_token(l, sl, raw);
        int64_t li = str_find(b, raw, nl);
        size_t nr = unmap_token(r, sr, raw + nl);
        int64_t ri = str_find(b, raw + nl, nr), m = str_find(b, raw, nl + nr);
        if (li < 0 || ri < 0) ok = bad(e, "model.merges[%d]: token '%.60s' is not in model.vocab", i, li < 0 ? l : r);
        else if (m < 0) ok = bad(e, "model.merges[%d]: merged token '%.60s%.60s' is not in model.vocab", i, l, r);
        if (!ok) break;
        pair_insert(t, (uint32_t)li, (uint32_t)ri, (uint32_t)i, (uint32_t)m);
        i++;
    }
    free(buf);
    free(raw);
    return ok;
}

Bpe *bpe_from_json(const char *json, size_t len, char *err, size_t err_len) {
    Errs e = {err, err_len, false};
    cJSON *root = cJSON_ParseWithLength(json, len);
    Bpe *b = xcalloc(1, sizeof *b, "a tokenizer");
    b->template_bos = -1;
    if (!root || !cJSON_IsObject(root)) {
        const char *at = root ? NULL : cJSON_GetErrorPtr();
        bad(&e, "not a JSON object (parse error near byte %td)", at && at >= json && at <= json + len ? at - json : (ptrdiff_t)0);
        goto done;
    }
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model"), *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), *dec = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab"), *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    bool byte_level = false;
    if (!cJSON_IsObject(model)) bad(&e, "model: missing or not an object");
    else if (!check_model_options(&e, model)) {
    } else if (!cJSON_IsObject(vocab)) bad(&e, "model.vocab: missing or not an object of token -> id");
    else if (!cJSON_IsArray(merges)) bad(&e, "model.merges: missing or not a list");
    else if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added)) bad(&e, "added_tokens: not a list");
    else if (norm && !cJSON_IsNull(norm)) bad(&e, "normalizer: type '%s' is not supported (byte-level BPE uses none)", type_of(norm) ? type_of(norm) : "?");
    else if (!cJSON_IsObject(pre)) bad(&e, "pre_tokenizer: missing (a byte-level BPE needs ByteLevel)");
    else if (!cJSON_IsObject(dec) || !type_of(dec) || strcmp(type_of(dec), "ByteLevel") != 0)
        bad(&e, "decoder: '%s' is not supported (needs ByteLevel)", cJSON_IsObject(dec) && type_of(dec) ? type_of(dec) : "missing");
    else if (parse_pre_tokenizer(b, &e, pre, "pre_tokenizer", &byte_level) && !byte_level)
        bad(&e, "pre_tokenizer: has no ByteLevel step (a byte-level BPE needs one)");
    else if (!e.failed && parse_vocab(b, &e, vocab, cJSON_IsArray(added) ? added : NULL) && parse_merges(b, &e, merges)) {
        b->ignore_merges = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "ignore_merges"));
        parse_template(b, cJSON_GetObjectItemCaseSensitive(root, "post_processor"));
    }
done:
    cJSON_Delete(root);
    if (e.failed) {
        bpe_free(b);
        return NULL;
    }
    return b;
}

Bpe *bpe_load(const char *path, char *err, size_t err_len) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, err_len, "%s: cannot open (%s)", path, strerror(errno));
        return NULL;
    }
    fclose(f);
    size_t n;
    unsigned char *text = read_whole_file(path, &n);
    char msg[512];
    Bpe *b = bpe_from_json((const char *)text, n, msg, sizeof msg);
    if (!b) snprintf(err, err_len, "%s: %s", path, msg);
    free(text);
    return b;
}

void bpe_free(Bpe *b) {
    if (!b) return;
    for (uint32_t i = 0; i < b->vocab_size; i++) free(b->tok[i]);
    free(b->tok);
    free(b->tok_len);
    free(b->vocab.slot);
    free(b->merges.key);
    free(b->merges.rank);
    free(b->merges.merged);
    for (int i = 0; i < b->n_stages; i++) pcre2_code_free(b->stages[i].re);
    for (size_t i = 0; i < b->n_added; i++) free(b->added[i].bytes);
    free(b->added);
    free(b);
}

uint32_t bpe_vocab_size(const Bpe *b) { return b->vocab_size; }

bool bpe_safe_cuts(const Bpe *b) {
    for (int i = 0; i < b->n_stages; i++)
        if (!b->stages[i].known || b->stages[i].prefix_space) return false;
    for (size_t i = 0; i < b->n_added; i++)
        if (memchr(b->added[i].bytes, '\n', b->added[i].len)) return false;
    return true;
}

int64_t bpe_added_id(const Bpe *b, const char *content) {
    for (size_t i = 0; i < b->n_added; i++)
        if (strcmp((const char *)b->added[i].bytes, content) == 0) return b->added[i].id;
    return -1;
}

bool bpe_template_bos(const Bpe *b, int64_t *bos_id) {
    *bos_id = b->template_bos;
    return b->template_bos >= 0;
}

const unsigned char *bpe_token_bytes(const Bpe *b, uint32_t id, size_t *len) {
    if (id >= b->vocab_size || !b->tok[id]) return NULL;
    *len = b->tok_len[id];
    return b->tok[id];
}

// ---- encoding ------------------------------------------------------------------------------------
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
    for (int i = 0; i < MAX_STAGES; i++) free(e->prefixed[i]);
    free(e);
}

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
    if (nx != UINT32_MAX && pair_find(&e->b->merges, e->sym[pos], e->sym[nx], &rank, &merged))
        heap_push(e->heap, nh, (uint64_t)rank << 32 | pos);
}

// One pre-token: bytes -> single-byte symbols -> merges applied lowest rank first, leftmost first
// among equals (HF's order). A linked list over the symbols and a heap of candidate pairs keep it
// O(n log n) for any word, runs of spaces or digits included. Results for short words are cached.
static void bpe_word(BpeEncoder *e, const unsigned char *s, size_t n) {
    const Bpe *b = e->b;
    if (b->ignore_merges) {
        int64_t id = str_find(b, s, n);
        if (id >= 0) {
            emit(e, (uint32_t)id);
            return;
        }
    }
    CacheEntry *c = NULL;
    if (n <= CACHE_KEY) {
        c = &e->cache[hash_bytes(s, n) & (CACHE_SLOTS - 1)];
        if (c->n && c->len == n && memcmp(c->key, s, n) == 0) {
            for (int i = 0; i < c->n; i++) emit(e, c->ids[i]);
            return;
        }
    }
    grow_scratch(e, n);
    size_t nh = 0;
    for (size_t i = 0; i < n; i++) {
        e->sym[i] = b->byte_id[s[i]];
        e->next[i] = i + 1 < n ? (uint32_t)i + 1 : UINT32_MAX;
        e->prev[i] = i ? (uint32_t)i - 1 : UINT32_MAX;
    }
    for (size_t i = 0; i + 1 < n; i++) push_pair(e, &nh, (uint32_t)i);
    while (nh) {
        uint64_t top = heap_pop(e->heap, &nh);
        uint32_t pos = (uint32_t)top, rank, merged, nx = e->next[pos];
        // Stale entries: the symbol was merged into its left neighbour, or its right neighbour changed.
        if (e->sym[pos] == UINT32_MAX || nx == UINT32_MAX) continue;
        if (!pair_find(&b->merges, e->sym[pos], e->sym[nx], &rank, &merged) || rank != (uint32_t)(top >> 32)) continue;
        e->sym[pos] = merged;
        e->sym[nx] = UINT32_MAX;
        e->next[pos] = e->next[nx];
        if (e->next[nx] != UINT32_MAX) e->prev[e->next[nx]] = pos;
        if (e->prev[pos] != UINT32_MAX) push_pair(e, &nh, e->prev[pos]);
        push_pair(e, &nh, pos);
    }
    size_t first = *e->n_out;
    for (uint32_t i = 0; i != UINT32_MAX; i = e->next[i]) emit(e, e->sym[i]);
    if (c) {
        c->len = (uint8_t)n;
        c->n = (uint8_t)(*e->n_out - first);
        memcpy(c->key, s, n);
        memcpy(c->ids, *e->out + first, c->n * sizeof(uint32_t));
    }
}

static void pre_tokenize(BpeEncoder *e, int stage, const unsigned char *s, size_t n) {
    if (!n) return;
    if (stage == e->b->n_stages) {
        bpe_word(e, s, n);
        return;
    }
    const Stage *st = &e->b->stages[stage];
    if (st->prefix_space && s[0] != ' ') {
        if (e->prefixed_cap[stage] < n + 1) {
            e->prefixed_cap[stage] = 2 * n + 64;
            e->prefixed[stage] = xrealloc(e->prefixed[stage], e->prefixed_cap[stage], "a pre-token");
        }
        e->prefixed[stage][0] = ' ';
        memcpy(e->prefixed[stage] + 1, s, n);
        s = e->prefixed[stage];
        n++;
    }
    if (!st->re) {
        pre_tokenize(e, stage + 1, s, n);
        return;
    }
    size_t at = 0;
    while (at < n) {
        int rc = pcre2_match(st->re, s, n, at, 0, e->md, NULL);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) fail("pre-tokenizer regex failed at byte %zu (PCRE2 error %d)", at, rc);
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(e->md);
        size_t m0 = ov[0], m1 = ov[1];
        if (m1 == m0) {   // an empty match splits nothing; look again one byte on
            if (m0 + 1 > n) break;
            pre_tokenize(e, stage + 1, s + at, m0 + 1 - at);
            at = m0 + 1;
            continue;
        }
        pre_tokenize(e, stage + 1, s + at, m0 - at);   // the gap (bytes no alternative matched, e.g. invalid UTF-8)
        pre_tokenize(e, stage + 1, s + m0, m1 - m0);
        at = m1;
    }
    pre_tokenize(e, stage + 1, s + at, n - at);
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

// HF splits on added tokens in two passes: the non-normalized (special) ones over the whole text, then
// the normalized ones inside what is left; the pieces between them are pre-tokenized and merged.
static void split_added(BpeEncoder *e, int pass, const unsigned char *s, size_t n) {
    if (pass == 2) {
        pre_tokenize(e, 0, s, n);
        return;
    }
    size_t at = 0;
    const AddedToken *a;
    ptrdiff_t i;
    while ((i = find_added(e->b, pass, s, n, at, &a)) >= 0) {
        split_added(e, pass + 1, s + at, (size_t)i - at);
        emit(e, a->id);
        at = (size_t)i + a->len;
    }
    split_added(e, pass + 1, s + at, n - at);
}

size_t bpe_encode(BpeEncoder *e, const unsigned char *text, size_t n, uint32_t **out, size_t *n_out, size_t *cap) {
    e->out = out;
    e->n_out = n_out;
    e->out_cap = cap;
    split_added(e, 0, text, n);
    return *n_out;
}
