// tokenizer/bpe.c — loads a Hugging Face tokenizer.json BPE (byte-level or SentencePiece-style) for an encoder with ids identical to `tokenizers`.
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "tokenizer/bpe_model.h"

const char BPE_GPT2_PATTERN[] = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char BPE_LLAMA3_PATTERN[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
// Rust's char::is_numeric (Digits), and regex's \w (single_word added tokens: Alphabetic, marks, Nd, Pc, joiners).
static const char DIGIT_PATTERN[] = "\\p{N}", DIGITS_PATTERN[] = "\\p{N}+";
static const char WORD_PATTERN[] = "[\\p{L}\\p{Nl}\\p{M}\\p{Nd}\\p{Pc}\\x{200C}\\x{200D}]";

// ---- GPT-2's byte <-> unicode map (bytes_to_unicode, tokenizer/normalize.h) ----------------------
// The raw bytes of a token string in the byte-level alphabet. A string with a character outside it stands
// for its own UTF-8 bytes (as HF's ByteLevel decoder does) but can never be produced by ByteLevel: *in_alphabet
// false, and the encoder never matches it. Returns the length written to out.
static size_t unmap_token(const char *s, size_t n, unsigned char *out, bool *in_alphabet) {
    size_t k = 0;
    *in_alphabet = true;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        uint32_t cp;
        int w = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
        if (i + (size_t)w > n) w = 1;
        cp = w == 1 ? c : w == 2 ? (c & 31u) : w == 3 ? (c & 15u) : (c & 7u);
        for (int j = 1; j < w; j++) cp = cp << 6 | ((unsigned char)s[i + j] & 63u);
        int byte = byte_level_byte(cp);
        if (byte < 0) {
            memcpy(out, s, n);
            *in_alphabet = false;
            return n;
        }
        out[k++] = (unsigned char)byte;
        i += (size_t)w;
    }
    return k;
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

static const char *str_of(const cJSON *o, const char *key) { return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key)); }

// Runs step on p, or on each step of p when it is a Sequence (its list under key; nested ones too), naming each one's field.
typedef bool (*StepFn)(void *ctx, Errs *e, const cJSON *p, const char *type, const char *field);
static bool each_step(void *ctx, Errs *e, const cJSON *p, const char *key, const char *field, StepFn step) {
    const char *type = type_of(p);
    if (!type) return bad(e, "%s: missing \"type\"", field);
    if (strcmp(type, "Sequence") != 0) return step(ctx, e, p, type, field);
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(p, key), *it;
    if (!cJSON_IsArray(list)) return bad(e, "%s.%s: missing or not a list", field, key);
    char sub[96];
    int i = 0;
    cJSON_ArrayForEach(it, list) {
        snprintf(sub, sizeof sub, "%s.%s[%d]", field, key, i++);
        if (!each_step(ctx, e, it, key, sub, step)) return false;
    }
    return true;
}

static pcre2_code *compile(Errs *e, const char *pattern, bool literal, const char *field) {
    int code;
    PCRE2_SIZE at;
    uint32_t opts = PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : 0);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, opts, &code, &at, NULL);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof msg);
        bad(e, "%s: regex does not compile at offset %zu: %s", field, (size_t)at, (char *)msg);
        return NULL;
    }
    pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);   // falls back to the interpreter when JIT is unavailable
    return re;
}

static Stage *new_stage(Bpe *b, Errs *e, StageKind kind, const char *field) {
    if (b->n_stages == MAX_STAGES) {
        bad(e, "%s: more than %d pre-tokenizer steps", field, MAX_STAGES);
        return NULL;
    }
    if (b->n_stages && b->stages[b->n_stages - 1].kind == STAGE_BYTE_LEVEL) {
        bad(e, "%s: a step after ByteLevel is not supported (ByteLevel must be the last pre-tokenizer)", field);
        return NULL;
    }
    Stage *s = &b->stages[b->n_stages++];
    s->kind = kind;
    return s;
}

static bool add_split(Bpe *b, Errs *e, StageKind kind, const char *pattern, bool literal, const char *field) {
    Stage *s = new_stage(b, e, kind, field);
    if (!s) return false;
    // Cutting at a line cut leaves the pieces of GPT-2's, Llama 3's and the digit regexes as they were.
    s->known = !pattern || (!literal && (strcmp(pattern, BPE_GPT2_PATTERN) == 0 || strcmp(pattern, BPE_LLAMA3_PATTERN) == 0 ||
                                         strcmp(pattern, DIGIT_PATTERN) == 0 || strcmp(pattern, DIGITS_PATTERN) == 0));
    return !pattern || (s->re = compile(e, pattern, literal, field)) != NULL;
}

// Metaspace: {"replacement": "▁", "prepend_scheme": "first"|"always"|"never", "split": bool}; older files
// have "add_prefix_space" (true = always) instead of prepend_scheme, and no "split" (true).
static bool add_metaspace(Bpe *b, Errs *e, const cJSON *p, const char *field) {
    const char *rep = str_of(p, "replacement"), *scheme = str_of(p, "prepend_scheme");
    if (!rep || !rep[0] || strlen(rep) != utf8_char_len((const unsigned char *)rep, strlen(rep)))
        return bad(e, "%s.replacement: needs one character (\"\\u2581\")", field);
    Stage *s = new_stage(b, e, STAGE_METASPACE, field);
    if (!s) return false;
    s->rep_len = strlen(rep);
    memcpy(s->rep, rep, s->rep_len);
    const cJSON *split = cJSON_GetObjectItemCaseSensitive(p, "split");
    s->split = !split || cJSON_IsTrue(split);
    if (!scheme) s->prepend = is_false_or_null(p, "add_prefix_space") ? PREPEND_NEVER : PREPEND_ALWAYS;
    else if (strcmp(scheme, "first") == 0) s->prepend = PREPEND_FIRST;
    else if (strcmp(scheme, "always") == 0) s->prepend = PREPEND_ALWAYS;
    else if (strcmp(scheme, "never") == 0) s->prepend = PREPEND_NEVER;
    else return bad(e, "%s.prepend_scheme: '%s' is not first, always or never", field, scheme);
    return true;
}

static bool pre_tokenizer_step(void *ctx, Errs *e, const cJSON *p, const char *type, const char *field) {
    Bpe *b = ctx;
    if (strcmp(type, "ByteLevel") == 0) {
        const cJSON *use = cJSON_GetObjectItemCaseSensitive(p, "use_regex");
        bool regex = !use || cJSON_IsTrue(use);
        if (!add_split(b, e, STAGE_BYTE_LEVEL, regex ? BPE_GPT2_PATTERN : NULL, false, field)) return false;
        b->stages[b->n_stages - 1].prefix_space = !is_false_or_null(p, "add_prefix_space");
        return true;
    }
    if (strcmp(type, "Digits") == 0)   // HF: split on char::is_numeric, Isolated (individual) or Contiguous (runs)
        return add_split(b, e, STAGE_SPLIT, is_false_or_null(p, "individual_digits") ? DIGITS_PATTERN : DIGIT_PATTERN, false, field);
    if (strcmp(type, "Metaspace") == 0) return add_metaspace(b, e, p, field);
    if (strcmp(type, "Split") == 0) {
        const cJSON *pat = cJSON_GetObjectItemCaseSensitive(p, "pattern"), *beh = cJSON_GetObjectItemCaseSensitive(p, "behavior");
        const cJSON *re = cJSON_GetObjectItemCaseSensitive(pat, "Regex"), *lit = cJSON_GetObjectItemCaseSensitive(pat, "String");
        if (!cJSON_IsString(re) && !cJSON_IsString(lit)) return bad(e, "%s.pattern: needs {\"Regex\": ...} or {\"String\": ...}", field);
        if (!cJSON_IsString(beh) || strcmp(beh->valuestring, "Isolated") != 0)
            return bad(e, "%s.behavior: only \"Isolated\" is supported, not %s", field, cJSON_IsString(beh) ? beh->valuestring : "(missing)");
        if (!is_false_or_null(p, "invert")) return bad(e, "%s.invert: true is not supported", field);
        return add_split(b, e, STAGE_SPLIT, cJSON_IsString(re) ? re->valuestring : lit->valuestring, !cJSON_IsString(re), field);
    }
    return bad(e, "%s.type: '%s' is not supported (ByteLevel, Split with Isolated, Digits, Metaspace, Sequence)", field, type);
}

static bool add_norm(Bpe *b, Errs *e, const char *from, const char *to, const char *field) {
    return norm_add(&b->norm, from, to) || bad(e, "%s: more than %d normalizer steps", field, MAX_NORM);
}

// Normalizers: Prepend and Replace of a literal string (SentencePiece-style BPE), alone or in a Sequence.
static bool normalizer_step(void *ctx, Errs *e, const cJSON *p, const char *type, const char *field) {
    Bpe *b = ctx;
    if (strcmp(type, "Prepend") == 0) {
        const char *s = str_of(p, "prepend");
        return s ? add_norm(b, e, NULL, s, field) : bad(e, "%s.prepend: missing or not a string", field);
    }
    if (strcmp(type, "Replace") == 0) {
        const char *from = str_of(cJSON_GetObjectItemCaseSensitive(p, "pattern"), "String"), *to = str_of(p, "content");
        if (!from || !from[0]) return bad(e, "%s.pattern: only a non-empty {\"String\": ...} is supported (not a Regex)", field);
        return to ? add_norm(b, e, from, to, field) : bad(e, "%s.content: missing or not a string", field);
    }
    return bad(e, "%s: type '%s' is not supported (Prepend, Replace of a string, Sequence)", field, type);
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
    const char *affix[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (int i = 0; i < 2; i++) {
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(m, affix[i]);
        if (v && !cJSON_IsNull(v) && !(cJSON_IsString(v) && !v->valuestring[0])) return bad(e, "model.%s: is not supported (must be null)", affix[i]);
    }
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(m, "dropout"), *unk = cJSON_GetObjectItemCaseSensitive(m, "unk_token");
    if (d && !cJSON_IsNull(d) && !(cJSON_IsNumber(d) && d->valuedouble == 0)) return bad(e, "model.dropout: BPE dropout is not supported (must be null)");
    if (unk && !cJSON_IsNull(unk) && !cJSON_IsString(unk)) return bad(e, "model.unk_token: not a string or null");
    return true;
}

// Sets id's match string: byte-level tokens by their raw bytes, others as written. Only model.vocab
// strings are matched by the model (added tokens are matched as a whole, before it).
static bool set_token(Bpe *b, Errs *e, uint32_t id, const char *s, const char *field, bool in_vocab) {
    if (b->tok[id]) return bad(e, "%s: id %u is used twice", field, id);
    size_t n = strlen(s);
    if (!n) return bad(e, "%s: empty token string for id %u", field, id);
    bool matchable = true;
    b->tok[id] = xmalloc(n, "a token");
    if (b->char_mode) {
        memcpy(b->tok[id], s, n);
        b->tok_len[id] = (uint32_t)n;
    } else b->tok_len[id] = (uint32_t)unmap_token(s, n, b->tok[id], &matchable);
    if (in_vocab && matchable) str_table_insert(&b->vocab, id);
    return true;
}

static bool check_id(const cJSON *id) {
    return cJSON_IsNumber(id) && id->valuedouble >= 0 && id->valuedouble <= MAX_ID && id->valuedouble == (double)(int64_t)id->valuedouble;
}

// Fills byte_id, fallback_id and unk_id from the vocab. A byte (character) with no token is dropped by
// HF's BPE when there is no byte fallback and no unk_token; so it is here.
static bool special_ids(Bpe *b, Errs *e, const cJSON *model) {
    for (int c = 0; c < 256; c++) {
        unsigned char byte = (unsigned char)c;
        char hex[8];
        snprintf(hex, sizeof hex, "<0x%02X>", c);
        int64_t id = str_table_find(&b->vocab, &byte, 1), fb = b->char_mode ? str_table_find(&b->vocab, (const unsigned char *)hex, 6) : -1;
        b->byte_id[c] = id < 0 ? NO_ID : (uint32_t)id;
        b->fallback_id[c] = fb < 0 ? NO_ID : (uint32_t)fb;
    }
    const char *unk = str_of(model, "unk_token");
    b->unk_id = NO_ID;
    if (unk) {
        int64_t id = str_table_find(&b->vocab, (const unsigned char *)unk, strlen(unk));
        if (id < 0) return bad(e, "model.unk_token: '%.60s' is not in model.vocab", unk);
        b->unk_id = (uint32_t)id;
    }
    b->fuse_unk = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "fuse_unk"));
    b->byte_fallback = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "byte_fallback"));
    return true;
}

// The model.vocab id of a string as written (byte-level: in the byte alphabet), -1 if none.
static int64_t vocab_id(const Bpe *b, const char *s, unsigned char *scratch) {
    bool in_alphabet = true;
    size_t n = strlen(s), k = b->char_mode ? n : unmap_token(s, n, scratch, &in_alphabet);
    if (b->char_mode) memcpy(scratch, s, n);
    return in_alphabet ? str_table_find(&b->vocab, scratch, k) : -1;
}

// The added tokens: flags as HF reads them; a normalized token matches its content as normalized. HF
// gives a token the id of its content in model.vocab, else the next id after the vocab's count (and the
// added ones before it), whatever the file says: a file that says otherwise is refused.
static bool parse_added(Bpe *b, Errs *e, const cJSON *added, int n_vocab) {
    const cJSON *it;
    b->added = xcalloc((size_t)cJSON_GetArraySize(added) + 1, sizeof *b->added, "the added tokens");
    TextBuf bufs[2] = {{0}};
    uint32_t next = (uint32_t)n_vocab;
    int i = 0;
    cJSON_ArrayForEach(it, added) {
        const char *content = str_of(it, "content");
        uint32_t id = (uint32_t)cJSON_GetObjectItemCaseSensitive(it, "id")->valuedouble;
        unsigned char *scratch = xmalloc(strlen(content) + 1, "an added token");
        int64_t in_vocab = vocab_id(b, content, scratch);
        free(scratch);
        uint32_t hf_id = in_vocab >= 0 ? (uint32_t)in_vocab : bpe_added_id(b, content) >= 0 ? (uint32_t)bpe_added_id(b, content) : next++;
        if (hf_id != id) {
            bad(e, "added_tokens[%d]: '%.60s' has id %u, but HF tokenizers gives it %u (%s); correct the id", i, content, id, hf_id,
                in_vocab >= 0 ? "its id in model.vocab" : "the next id after model.vocab's tokens and the added ones before it");
            break;
        }
        i++;
        AddedToken *a = &b->added[b->n_added++];
        a->content = xstrdup(content);
        a->id = id;
        a->normalized = !is_false_or_null(it, "normalized");
        a->lstrip = !is_false_or_null(it, "lstrip");
        a->rstrip = !is_false_or_null(it, "rstrip");
        a->single_word = !is_false_or_null(it, "single_word");
        size_t n = strlen(content);
        const unsigned char *s = a->normalized ? norm_apply(&b->norm, bufs, (const unsigned char *)content, n, &n) : (const unsigned char *)content;
        a->bytes = xmalloc(n + 1, "an added token");
        memcpy(a->bytes, s, n);
        a->bytes[n] = 0;
        a->len = n;
        b->added_first[a->normalized][a->bytes[0]] = true;
        if (a->single_word && !b->word_re && !(b->word_re = compile(e, WORD_PATTERN, false, "added_tokens"))) break;
        // An id already in the vocab keeps its string; HF decodes the id to the added content, the same here.
        if (!b->tok[id] && !set_token(b, e, id, content, "added_tokens", false)) break;
    }
    free(bufs[0].p);
    free(bufs[1].p);
    return !e->failed;
}

static bool parse_vocab(Bpe *b, Errs *e, const cJSON *vocab, const cJSON *added) {
    const cJSON *it;
    double top = -1;
    cJSON_ArrayForEach(it, vocab) {
        if (!check_id(it)) return bad(e, "model.vocab[\"%.60s\"]: id is not an integer in 0..%d", it->string, MAX_ID);
        if (it->valuedouble > top) top = it->valuedouble;
    }
    int i = 0;
    cJSON_ArrayForEach(it, added) {
        const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id"), *c = cJSON_GetObjectItemCaseSensitive(it, "content");
        if (!check_id(id) || !cJSON_IsString(c) || !c->valuestring[0])
            return bad(e, "added_tokens[%d]: needs an integer \"id\" in 0..%d and a non-empty \"content\"", i, MAX_ID);
        if (id->valuedouble > top) top = id->valuedouble;
        i++;
    }
    if (top < 0) return bad(e, "model.vocab: empty");
    b->vocab_size = (uint32_t)top + 1;
    b->tok = xcalloc(b->vocab_size, sizeof *b->tok, "the token table");
    b->tok_len = xcalloc(b->vocab_size, sizeof *b->tok_len, "the token table");
    str_table_init(&b->vocab, b->vocab_size, b->tok, b->tok_len);
    cJSON_ArrayForEach(it, vocab) if (!set_token(b, e, (uint32_t)it->valuedouble, it->string, "model.vocab", true)) return false;
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

// A merge side's match string into out (byte-level: its raw bytes); returns its length.
static size_t side_bytes(const Bpe *b, const char *s, size_t n, unsigned char *out) {
    bool in_alphabet;
    if (!b->char_mode) return unmap_token(s, n, out, &in_alphabet);
    memcpy(out, s, n);
    return n;
}

static bool parse_merges(Bpe *b, Errs *e, const cJSON *merges) {
    int n = cJSON_GetArraySize(merges), i = 0;
    PairTable *t = &b->merges;
    pair_table_init(t, (size_t)n);
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
        size_t nl = side_bytes(b, l, sl, raw);
        int64_t li = str_table_find(&b->vocab, raw, nl);
        size_t nr = side_bytes(b, r, sr, raw + nl);
        int64_t ri = str_table_find(&b->vocab, raw + nl, nr), m = str_table_find(&b->vocab, raw, nl + nr);
        if (li < 0 || ri < 0) ok = bad(e, "model.merges[%d]: token '%.60s' is not in model.vocab", i, li < 0 ? l : r);
        else if (m < 0) ok = bad(e, "model.merges[%d]: merged token '%.60s%.60s' is not in model.vocab", i, l, r);
        if (!ok) break;
        pair_table_insert(t, (uint32_t)li, (uint32_t)ri, (uint32_t)i, (uint32_t)m);
        i++;
    }
    free(buf);
    free(raw);
    return ok;
}

// ---- decoders ------------------------------------------------------------------------------------
enum { DECODE_GROWTH = 16 };   // the room decode_token has: this many times a token's length (+ 16)

// The SentencePiece-style decoder steps ringgpt applies to each token: Replace (a string by a string),
// ByteFallback (<0xNN> -> the byte), Metaspace (the replacement -> " ", none in the first token), and
// Strip of leading characters after Fuse (only the text's first token loses them).
typedef struct {
    char from[8][16], to[8][16];
    int n_replace;
    int growth;               // how many times the Replace steps may lengthen a token at most (their product)
    bool byte_fallback;
    char meta[8];             // Metaspace's replacement, "" if none
    bool meta_first;          // ... dropped in the first token (prepend_scheme not never)
    char strip[8];            // Strip's content
    int strip_start;          // ... how many leading ones the first token loses
    bool fused;               // a Fuse came before
} Decoder;

static bool decoder_step(void *ctx, Errs *e, const cJSON *p, const char *type, const char *field) {
    Decoder *d = ctx;
    if (d->strip_start) return bad(e, "%s: a step after Strip is not supported", field);
    if (strcmp(type, "ByteFallback") == 0) return d->byte_fallback = true;
    if (strcmp(type, "Fuse") == 0) return d->fused = true;
    if (strcmp(type, "Replace") == 0) {
        const char *from = str_of(cJSON_GetObjectItemCaseSensitive(p, "pattern"), "String"), *to = str_of(p, "content");
        if (!from || !to || !from[0] || strlen(from) >= 16 || strlen(to) >= 16 || d->n_replace == 8)
            return bad(e, "%s: only a Replace of a short {\"String\": ...} by a short \"content\" is supported", field);
        size_t step = (strlen(to) + strlen(from) - 1) / strlen(from);   // a step lengthens a token at most this many times
        d->growth = (d->growth ? d->growth : 1) * (int)(step > 1 ? step : 1);
        if (d->growth > DECODE_GROWTH)
            return bad(e, "%s: Replace steps that lengthen a token more than %d times are not supported", field, DECODE_GROWTH);
        snprintf(d->from[d->n_replace], 16, "%s", from);
        snprintf(d->to[d->n_replace++], 16, "%s", to);
        return true;
    }
    if (strcmp(type, "Strip") == 0) {
        const char *c = str_of(p, "content");
        const cJSON *start = cJSON_GetObjectItemCaseSensitive(p, "start"), *stop = cJSON_GetObjectItemCaseSensitive(p, "stop");
        if (!c || !c[0] || strlen(c) >= 8 || !cJSON_IsNumber(start) || start->valueint < 0 || start->valueint > 8 || !cJSON_IsNumber(stop) || stop->valueint != 0)
            return bad(e, "%s: only a Strip of up to 8 leading characters (\"stop\": 0) is supported", field);
        if (!d->fused && start->valueint) return bad(e, "%s: a Strip before Fuse is not supported", field);
        snprintf(d->strip, sizeof d->strip, "%s", c);
        d->strip_start = start->valueint;
        return true;
    }
    if (strcmp(type, "Metaspace") == 0) {
        const char *rep = str_of(p, "replacement"), *scheme = str_of(p, "prepend_scheme");
        if (!rep || !rep[0] || strlen(rep) >= 8) return bad(e, "%s.replacement: needs one character", field);
        snprintf(d->meta, sizeof d->meta, "%s", rep);
        d->meta_first = scheme ? strcmp(scheme, "never") != 0 : !is_false_or_null(p, "add_prefix_space");
        return true;
    }
    return bad(e, "%s: type '%s' is not supported with a SentencePiece-style BPE (Replace, ByteFallback, Fuse, Strip, Metaspace)", field, type);
}

// Replaces every `from` in s[0..n) by `to` into out, which has room for the growth.
static size_t replace_all(const unsigned char *s, size_t n, const char *from, const char *to, unsigned char *out) {
    size_t fl = strlen(from), tl = strlen(to), k = 0;
    for (size_t i = 0; i < n;) {
        if (i + fl <= n && memcmp(s + i, from, fl) == 0) {
            memcpy(out + k, to, tl);
            k += tl;
            i += fl;
        } else out[k++] = s[i++];
    }
    return k;
}

static int hex_digit(char c) { return c >= '0' && c <= '9' ? c - '0' : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (c | 0x20) - 'a' + 10 : -1; }

// One token through the decoder; first: as the text's first token. Returns the length written to out; out and tmp
// have room for DECODE_GROWTH x the token's length + 16 (the Replace steps' growth is bounded by decoder_step).
static size_t decode_token(const Decoder *d, const unsigned char *s, size_t n, bool first, unsigned char *out, unsigned char *tmp) {
    memcpy(out, s, n);
    for (int i = 0; i < d->n_replace; i++) {
        n = replace_all(out, n, d->from[i], d->to[i], tmp);
        memcpy(out, tmp, n);
    }
    if (d->byte_fallback && n == 6 && memcmp(out, "<0x", 3) == 0 && out[5] == '>' && hex_digit((char)out[3]) >= 0 && hex_digit((char)out[4]) >= 0) {
        out[0] = (unsigned char)(hex_digit((char)out[3]) << 4 | hex_digit((char)out[4]));
        n = 1;
    }
    if (d->meta[0]) {
        n = replace_all(out, n, d->meta, first && d->meta_first ? "" : " ", tmp);
        memcpy(out, tmp, n);
    }
    size_t sl = strlen(d->strip), skip = 0;
    for (int i = 0; first && i < d->strip_start && skip + sl <= n && memcmp(out + skip, d->strip, sl) == 0; i++) skip += sl;
    memmove(out, out + skip, n - skip);
    return n - skip;
}

// The bytes each token decodes to: byte-level tokens are their raw bytes already; SentencePiece-style
// ones go through the decoder, once inside a text and once as its first token.
static bool build_decoded(Bpe *b, Errs *e, const cJSON *dec) {
    b->dec_first = xcalloc(b->vocab_size, sizeof *b->dec_first, "the token table");
    b->dec_first_len = xcalloc(b->vocab_size, sizeof *b->dec_first_len, "the token table");
    if (!b->char_mode) {
        if (!cJSON_IsObject(dec) || !type_of(dec) || strcmp(type_of(dec), "ByteLevel") != 0)
            return bad(e, "decoder: '%s' is not supported (a ByteLevel pre_tokenizer needs the ByteLevel decoder)",
                       cJSON_IsObject(dec) && type_of(dec) ? type_of(dec) : "missing");
        b->dec = b->tok;
        b->dec_len = b->tok_len;
        return true;
    }
    Decoder d = {0};
    if (!cJSON_IsObject(dec)) return bad(e, "decoder: missing (a SentencePiece-style BPE needs Metaspace or Replace, ByteFallback, Fuse, Strip)");
    if (!each_step(&d, e, dec, "decoders", "decoder", decoder_step)) return false;
    b->dec = xcalloc(b->vocab_size, sizeof *b->dec, "the token table");
    b->dec_len = xcalloc(b->vocab_size, sizeof *b->dec_len, "the token table");
    const char **content = xcalloc(b->vocab_size, sizeof *content, "the token table");
    // HF decodes an id to its added content first, as normalized for a normalized token (simple_id_to_token).
    for (size_t i = 0; i < b->n_added; i++) content[b->added[i].id] = b->added[i].normalized ? (const char *)b->added[i].bytes : b->added[i].content;
    unsigned char *buf = NULL, *tmp = NULL;   // (cap) each
    size_t cap = 0;
    for (uint32_t id = 0; id < b->vocab_size; id++) {
        if (!b->tok[id]) continue;
        const unsigned char *s = content[id] ? (const unsigned char *)content[id] : b->tok[id];
        size_t n = content[id] ? strlen(content[id]) : b->tok_len[id];
        if (cap < DECODE_GROWTH * n + 16) {
            cap = 2 * (DECODE_GROWTH * n + 16);
            buf = xrealloc(buf, cap, "a decoded token"), tmp = xrealloc(tmp, cap, "a decoded token");
        }
        size_t k = decode_token(&d, s, n, false, buf, tmp);
        b->dec[id] = xmalloc(k + 1, "a decoded token");
        memcpy(b->dec[id], buf, k);
        b->dec_len[id] = (uint32_t)k;
        size_t k1 = decode_token(&d, s, n, true, buf, tmp);
        if (k1 != k || memcmp(buf, b->dec[id], k) != 0) {
            b->dec_first[id] = xmalloc(k1 + 1, "a decoded token");
            memcpy(b->dec_first[id], buf, k1);
            b->dec_first_len[id] = (uint32_t)k1;
        }
    }
    free(content);
    free(buf);
    free(tmp);
    return true;
}

// SentencePiece-style text reaches the model in long words (Metaspace without split, or the normalizer
// form: a whole piece between special tokens). When "▁" has a token and no merge makes a token with
// "▁" right after another character (runs "▁▁" are fine), no merge joins a symbol to a "▁" that follows
// another character: cutting the word there gives the same ids, in pieces short enough for the cache.
static void find_cut(Bpe *b) {
    const char *rep = NULL;
    for (int i = 0; i < b->n_stages; i++)
        if (b->stages[i].kind == STAGE_METASPACE) rep = b->stages[i].rep;
    for (int i = 0; i < b->norm.n; i++)
        if (!b->norm.step[i].prepend && strcmp(b->norm.step[i].from, " ") == 0) rep = b->norm.step[i].to;
    if (!b->char_mode || b->ignore_merges || !rep || !rep[0] || strlen(rep) >= sizeof b->cut) return;
    size_t n = strlen(rep);
    if (str_table_find(&b->vocab, (const unsigned char *)rep, n) < 0) return;
    const PairTable *t = &b->merges;
    for (uint32_t i = 0; i <= t->mask; i++) {
        if (t->key[i] == UINT64_MAX) continue;
        const unsigned char *m = b->tok[t->merged[i]];
        for (size_t k = 1; k + n <= b->tok_len[t->merged[i]]; k++)
            if (memcmp(m + k, rep, n) == 0 && !(k >= n && memcmp(m + k - n, rep, n) == 0)) return;
    }
    memcpy(b->cut, rep, n);
    b->cut_len = n;
}

// ---- the whole file ------------------------------------------------------------------------------
static bool has_byte_level(const cJSON *p) {
    const char *type = type_of(p);
    if (!type) return false;
    if (strcmp(type, "ByteLevel") == 0) return true;
    const cJSON *it;
    if (strcmp(type, "Sequence") == 0) cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(p, "pretokenizers")) if (has_byte_level(it)) return true;
    return false;
}

static void load_root(Bpe *b, Errs *e, const cJSON *root) {
    const cJSON *model = cJSON_GetObjectItemCaseSensitive(root, "model"), *norm = cJSON_GetObjectItemCaseSensitive(root, "normalizer");
    const cJSON *pre = cJSON_GetObjectItemCaseSensitive(root, "pre_tokenizer"), *dec = cJSON_GetObjectItemCaseSensitive(root, "decoder");
    const cJSON *added = cJSON_GetObjectItemCaseSensitive(root, "added_tokens");
    const cJSON *vocab = cJSON_GetObjectItemCaseSensitive(model, "vocab"), *merges = cJSON_GetObjectItemCaseSensitive(model, "merges");
    if (!cJSON_IsObject(model)) bad(e, "model: missing or not an object");
    else if (!check_model_options(e, model)) return;
    else if (!cJSON_IsObject(vocab)) bad(e, "model.vocab: missing or not an object of token -> id");
    else if (!cJSON_IsArray(merges)) bad(e, "model.merges: missing or not a list");
    else if (added && !cJSON_IsNull(added) && !cJSON_IsArray(added)) bad(e, "added_tokens: not a list");
    else if (pre && !cJSON_IsNull(pre) && !cJSON_IsObject(pre)) bad(e, "pre_tokenizer: not an object");
    if (e->failed) return;
    b->char_mode = !has_byte_level(pre);
    if (norm && !cJSON_IsNull(norm) && !each_step(b, e, norm, "normalizers", "normalizer", normalizer_step)) return;
    if (cJSON_IsObject(pre) && !each_step(b, e, pre, "pretokenizers", "pre_tokenizer", pre_tokenizer_step)) return;
    if (!b->char_mode && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "byte_fallback")))
        bad(e, "model.byte_fallback: true is not supported with a ByteLevel pre_tokenizer (it has a token for every byte)");
    else if (parse_vocab(b, e, vocab, cJSON_IsArray(added) ? added : NULL) && special_ids(b, e, model) &&
             parse_added(b, e, cJSON_IsArray(added) ? added : NULL, cJSON_GetArraySize(vocab)) && parse_merges(b, e, merges) && build_decoded(b, e, dec)) {
        b->ignore_merges = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(model, "ignore_merges"));
        find_cut(b);
        parse_template(b, cJSON_GetObjectItemCaseSensitive(root, "post_processor"));
    }
}

Bpe *bpe_from_json(const char *json, size_t len, char *err, size_t err_len) {
    Errs e = {err, err_len, false};
    cJSON *root = cJSON_ParseWithLength(json, len);
    Bpe *b = xcalloc(1, sizeof *b, "a tokenizer");
    b->template_bos = -1;
    if (!root || !cJSON_IsObject(root)) {
        const char *at = root ? NULL : cJSON_GetErrorPtr();
        bad(&e, "not a JSON object (parse error near byte %td)", at && at >= json && at <= json + len ? at - json : (ptrdiff_t)0);
    } else load_root(b, &e, root);
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
    for (uint32_t i = 0; i < b->vocab_size; i++) {
        if (b->tok) free(b->tok[i]);
        if (b->dec && b->dec != b->tok) free(b->dec[i]);
        if (b->dec_first) free(b->dec_first[i]);
    }
    if (b->dec != b->tok) {
        free(b->dec);
        free(b->dec_len);
    }
    free(b->tok);
    free(b->tok_len);
    free(b->dec_first);
    free(b->dec_first_len);
    free(b->vocab.slot);
    pair_table_free(&b->merges);
    for (int i = 0; i < b->n_stages; i++) pcre2_code_free(b->stages[i].re);
    norm_free(&b->norm);
    pcre2_code_free(b->word_re);
    for (size_t i = 0; i < b->n_added; i++) {
        free(b->added[i].bytes);
        free(b->added[i].content);
    }
    free(b->added);
    free(b);
}

uint32_t bpe_vocab_size(const Bpe *b) { return b->vocab_size; }

bool bpe_safe_cuts(const Bpe *b) {
    if (b->char_mode || b->norm.n) return false;   // Prepend and Metaspace act at the start of every piece
    for (int i = 0; i < b->n_stages; i++)
        if (!b->stages[i].known || b->stages[i].prefix_space) return false;
    for (size_t i = 0; i < b->n_added; i++)
        if (memchr(b->added[i].bytes, '\n', b->added[i].len) || b->added[i].lstrip || b->added[i].rstrip) return false;
    return true;
}

int64_t bpe_added_id(const Bpe *b, const char *content) {
    for (size_t i = 0; i < b->n_added; i++)
        if (strcmp(b->added[i].content, content) == 0) return b->added[i].id;
    return -1;
}

bool bpe_template_bos(const Bpe *b, int64_t *bos_id) {
    *bos_id = b->template_bos;
    return b->template_bos >= 0;
}

const unsigned char *bpe_token_bytes(const Bpe *b, uint32_t id, bool first, size_t *len) {
    if (id >= b->vocab_size || !b->tok[id]) return NULL;
    if (first && b->dec_first[id]) {
        *len = b->dec_first_len[id];
        return b->dec_first[id];
    }
    *len = b->dec_len[id];
    return b->dec[id];
}
