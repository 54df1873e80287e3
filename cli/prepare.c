// cli/prepare.c — `ringgpt prepare`: text files, raw token files, llm.c shards or synthetic tasks -> a shard dataset.
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/args.h"
#include "core/common.h"
#include "core/outdir.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "data/dataset_tokenizer.h"
#include "data/haystack.h"
#include "data/synthetic.h"
#include "data/text_encode.h"
#include "data/tokenizer.h"
#include "cli/commands.h"

enum { KIND_TEXT, KIND_U16, KIND_U32, KIND_LLMC, KIND_SYNTH, KIND_JSONL };
static const char *const KIND_NAMES[] = {"text", "u16", "u32", "llmc", "synthetic", "jsonl"};
enum { LLMC_GPT2 = 20240520, LLMC_LLAMA3 = 20240801, LLMC_HEADER_BYTES = 1024, CHUNK_BYTES = 1 << 20 };

enum { MAX_DOC_LENS = 64 };

typedef struct {
    const char *out, *kind, *synthetic, *tokenizer, *include, *doc_len, *text, *config, *haystack, *held_out, *out_exists;
    int64_t shard_tokens, block_tokens, eos, vocab, docs, seed;
    int level, token_bytes, pairs, queries, threads;
    double val_fraction, text_frac;
    PasskeyMix mix;            // passkey: the needle's depth (mix.depth, --depth) and the training variations
    bool quiet, byte_planes;
    int n_lens;
    int64_t lens[MAX_DOC_LENS];   // --doc-len: the documents cycle through these lengths (EOS included)
} PrepareArgs;

typedef struct {
    DatasetWriter *w;
    double val_fraction;
    uint64_t doc_index;        // documents begun so far: decides each one's split
    uint64_t in_bytes, tokens;
    double t0, last_report;
    bool quiet, in_doc;
    uint32_t eos;              // the document delimiter of raw and llm.c inputs
    int64_t bos;               // --tokenizer whose documents start with BOS: its id, else -1
    uint32_t *buf;             // (CHUNK_BYTES) token scratch
} Prep;

// ---- input files ----------------------------------------------------------------------------------
typedef struct {
    char **paths;
    size_t n, cap;
} FileList;

static void add_file(FileList *l, const char *path) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->paths = xrealloc(l->paths, l->cap * sizeof *l->paths, "the input list");
    }
    l->paths[l->n++] = xstrdup(path);
}

// True if name matches one of the comma-separated globs of include (NULL: every name).
static bool included(const char *name, const char *include) {
    if (!include) return true;
    char glob[256];
    for (const char *p = include; *p;) {
        size_t n = strcspn(p, ",");
        snprintf(glob, sizeof glob, "%.*s", (int)n, p);
        if (n && fnmatch(glob, name, 0) == 0) return true;
        p += n + (p[n] == ',');
    }
    return false;
}

// Regular files under path, recursively, in name order (so a dataset is reproducible); dotfiles skipped.
// Files found in directories must match --include (files named on the command line are always read).
static void collect(FileList *l, const char *path, const char *include, bool named) {
    struct stat st;
    if (stat(path, &st) != 0) fail_usage("%s: cannot read input (%s); check the path", path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        const char *base = strrchr(path, '/');
        if (named || included(base ? base + 1 : path, include)) add_file(l, path);
        return;
    }
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0) fail_io(path, errno, "cannot list directory");
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            size_t k = strlen(path) + strlen(names[i]->d_name) + 2;
            char *child = xmalloc(k, "a path");
            snprintf(child, k, "%s/%s", path, names[i]->d_name);
            collect(l, child, include, false);
            free(child);
        }
        free(names[i]);
    }
    free(names);
}

// A text input with a NUL byte in its first 8 KiB is binary (a .pyc, an image): prepare skips it.
static bool looks_binary(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;   // read_text reports it
    unsigned char b[8192];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    return memchr(b, 0, n) != NULL;
}

static bool is_empty(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && st.st_size == 0;   // one that cannot be read is reported when it is read
}

// Removes the files `skip` picks from the list; returns how many, with the first in *example (free it).
static size_t drop_files(FileList *l, bool (*skip)(const char *path), char **example) {
    size_t kept = 0, skipped = 0;
    *example = NULL;
    for (size_t i = 0; i < l->n; i++) {
        if (!skip(l->paths[i])) {
            l->paths[kept++] = l->paths[i];
            continue;
        }
        if (!*example) *example = l->paths[i];
        else free(l->paths[i]);
        skipped++;
    }
    l->n = kept;
    return skipped;
}

static void drop_binary(FileList *l, bool quiet) {
    char *example;
    size_t skipped = drop_files(l, looks_binary, &example);
    if (skipped && !quiet)
        fprintf(stderr, "prepare: skipped %zu binary file%s (a NUL byte in the first 8 KiB), e.g. %s; --include GLOBS picks "
                "the files to read\n", skipped, skipped == 1 ? "" : "s", example);
    free(example);
}

// Empty inputs hold no document: skipped, and when nothing is left, refused before anything is written.
static void drop_empty(FileList *l, bool quiet) {
    char *example;
    size_t skipped = drop_files(l, is_empty, &example);
    if (!l->n) fail_usage("every input is empty (0 bytes), e.g. %s; give files with text or tokens in them", example);
    if (skipped && !quiet) fprintf(stderr, "prepare: skipped %zu empty file%s, e.g. %s\n", skipped, skipped == 1 ? "" : "s", example);
    free(example);
}

// Every entry of a directory counts: a dataset directory holds one dataset.
static bool any_entry(const char *name) { return name[0] != 0; }

// --out belongs to this prepare before anything is written there: locked for the process's life (another
// prepare or writer there exits 2), and refused or moved aside when it holds anything (core/outdir.h).
static void claim_out(const PrepareArgs *a) {
    OutdirMode mode;
    if (!outdir_mode_parse(a->out_exists, &mode)) fail_usage("--out-exists must be refuse or move, not '%s'", a->out_exists);
    char err[600], moved[4200] = "";
    int errno_out = 0;
    int rc = outdir_claim(a->out, mode, any_entry, err, sizeof err, moved, sizeof moved, &errno_out);
    if (rc == OUTDIR_BUSY) fail_usage("--out %s is being written by another ringgpt process (%s); wait for it, or use another --out", a->out, err);
    if (rc == OUTDIR_TAKEN)
        fail_usage("--out %s is not empty (%s); give a new --out, or add --out-exists move to move it aside (nothing is "
                   "deleted)", a->out, err);
    if (rc == OUTDIR_FAILED && exit_code_for_errno(errno_out) == EXIT_USAGE) fail_usage("--out %s", err);
    if (rc == OUTDIR_FAILED) fail("--out %s", err);
    if (moved[0] && !a->quiet) fprintf(stderr, "prepare: moved what %s held to %s (--out-exists move)\n", a->out, moved);
}

static uint32_t llmc_magic(const char *path) {
    FILE *f = fopen(path, "rb");
    unsigned char b[4];
    uint32_t m = 0;
    if (f && fread(b, 1, 4, f) == 4) m = rd32(b);
    if (f) fclose(f);
    return m == LLMC_GPT2 || m == LLMC_LLAMA3 ? m : 0;
}

// ---- documents -----------------------------------------------------------------------------------
static void progress(Prep *p) {
    double t = now_seconds();
    if (p->quiet || t - p->last_report < 2.0) return;
    p->last_report = t;
    fprintf(stderr, "prepare: %.1f MB read, %" PRIu64 " docs, %.2fM tokens, %.1f MB/s\n", p->in_bytes / 1e6, p->doc_index,
            p->tokens / 1e6, p->in_bytes / 1e6 / (t - p->t0));
}

static void doc_begin(Prep *p) {
    uint64_t i = p->doc_index++;
    bool val = floor((double)(i + 1) * p->val_fraction) > floor((double)i * p->val_fraction);
    dataset_doc_begin(p->w, val ? SPLIT_VAL : SPLIT_TRAIN);
    p->in_doc = true;
}

static void doc_end(Prep *p) {
    dataset_doc_end(p->w);
    p->tokens++;
    p->in_doc = false;
}

static void doc_tokens(Prep *p, const uint32_t *t, size_t n) {
    if (!n) return;
    if (!p->in_doc) doc_begin(p);
    dataset_doc_tokens(p->w, t, n);
    p->tokens += n;
}

// A whole document with a loss weight per token and one for its EOS.
static void weighted_doc(Prep *p, const uint32_t *t, const uint8_t *weight, size_t n, uint8_t eos_weight) {
    doc_begin(p);
    dataset_doc_tokens_weighted(p->w, t, weight, n);
    dataset_doc_end_weighted(p->w, eos_weight);
    p->tokens += n + 1;
    p->in_doc = false;
}

// Tokens of a raw or llm.c stream, documents delimited by EOS: after each (raw) or before each (llm.c).
static void delimited_tokens(Prep *p, const uint32_t *t, size_t n, bool eos_first) {
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] != p->eos) continue;
        doc_tokens(p, t + run, i - run);
        if (eos_first) {
            if (p->in_doc) doc_end(p);
            doc_begin(p);
        } else {
            if (!p->in_doc) doc_begin(p);
            doc_end(p);
        }
        run = i + 1;
    }
    doc_tokens(p, t + run, n - run);
}

static void read_text(Prep *p, const char *path) {
    FILE *f = xfopen(path, "rb");
    unsigned char *chunk = xmalloc(CHUNK_BYTES, "a read buffer");
    doc_begin(p);
    size_t n;
    while ((n = fread(chunk, 1, CHUNK_BYTES, f)) > 0) {
        for (size_t i = 0; i < n; i++) p->buf[i] = chunk[i];
        doc_tokens(p, p->buf, n);
        p->in_bytes += n;
        progress(p);
    }
    if (ferror(f)) fail_io(path, errno, "read failed");
    doc_end(p);
    fclose(f);
    free(chunk);
}

// --tokenizer FILE on text: a file is a document unless its text holds the EOS token's text
// (<|endoftext|>), which ends one document and starts the next, as in raw token files.
static void bpe_text_piece(void *ctx, size_t file, const uint32_t *ids, size_t n, uint64_t bytes, bool first, bool last) {
    Prep *p = ctx;
    size_t run = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && ids[i] != p->eos) continue;
        if (i > run && !p->in_doc && p->bos >= 0) {   // a document's first tokens: BOS first
            uint32_t bos = (uint32_t)p->bos;
            doc_tokens(p, &bos, 1);
        }
        doc_tokens(p, ids + run, i - run);
        if (i < n) {
            if (!p->in_doc) doc_begin(p);
            doc_end(p);
        }
        run = i + 1;
    }
    if (last && p->in_doc) doc_end(p);
    p->in_bytes += bytes;
    progress(p);
}

// Raw little-endian tokens of width w from byte `from` to the end; each id checked against vocab.
static void read_tokens(Prep *p, const char *path, int w, uint64_t from, uint32_t vocab, bool eos_first) {
    FILE *f = xfopen(path, "rb");
    if (fseek(f, (long)from, SEEK_SET) != 0) fail_io(path, errno, "seek failed");
    unsigned char *chunk = xmalloc(CHUNK_BYTES, "a read buffer");
    uint64_t at = from;
    size_t n;
    while ((n = fread(chunk, 1, CHUNK_BYTES, f)) > 0) {
        if (n % w) fail_data(path, "size is not a multiple of %d bytes: truncated at byte %" PRIu64 "? (a token file holds %d-byte ids)", w,
                             at + n, w);
        size_t k = n / w;
        for (size_t i = 0; i < k; i++) {
            p->buf[i] = w == 2 ? (uint32_t)chunk[2 * i] | (uint32_t)chunk[2 * i + 1] << 8 : rd32(chunk + 4 * i);
            if (p->buf[i] >= vocab)
                fail_data(path, "token at byte %" PRIu64 " has id %u, not below --vocab %u; give the tokenizer's vocab size with --vocab",
                          at + (uint64_t)i * w, p->buf[i], vocab);
        }
        delimited_tokens(p, p->buf, k, eos_first);
        at += n;
        p->in_bytes += n;
        progress(p);
    }
    if (ferror(f)) fail_io(path, errno, "read failed");
    if (p->in_doc) doc_end(p);
    fclose(f);
    free(chunk);
}

// An llm.c .bin shard: int32[256] header (magic, version, ntok), then ntok tokens of 2 or 4 bytes.
static void read_llmc(Prep *p, const char *path, uint32_t vocab) {
    size_t len;
    FILE *f = xfopen(path, "rb");
    unsigned char h[LLMC_HEADER_BYTES];
    if (fread(h, 1, sizeof h, f) != sizeof h) fail_data(path, "shorter than the 1024-byte llm.c header: truncated");
    if (fseek(f, 0, SEEK_END) != 0) fail_io(path, errno, "seek failed");
    len = (size_t)ftell(f);
    fclose(f);
    uint32_t magic = rd32(h), version = rd32(h + 4), ntok = rd32(h + 8);
    int w = magic == LLMC_GPT2 ? 2 : 4;
    if ((magic == LLMC_GPT2 && version != 1) || (magic == LLMC_LLAMA3 && version != 7) || (magic != LLMC_GPT2 && magic != LLMC_LLAMA3))
        fail_data(path, "header at byte 0: llm.c magic %u version %u is not supported (20240520/1 uint16 or 20240801/7 uint32)", magic, version);
    if ((uint64_t)len != LLMC_HEADER_BYTES + (uint64_t)ntok * w)
        fail_data(path, "header at byte 8 says %u tokens (%" PRIu64 " bytes) but the file has %zu bytes: truncated or damaged", ntok,
                  LLMC_HEADER_BYTES + (uint64_t)ntok * w, len);
    read_tokens(p, path, w, LLMC_HEADER_BYTES, vocab, true);
    p->in_bytes += LLMC_HEADER_BYTES;
}

// The synthetic flags that make sense together; every bad value is a usage error naming the flag.
static void check_synthetic(const PrepareArgs *a, bool passkey) {
    const PasskeyMix *mx = &a->mix;
    if (a->pairs < 1 || a->pairs > RECALL_MAX_PAIRS || a->queries < 1 || a->queries > RECALL_MAX_PAIRS)
        fail_usage("--pairs and --queries must be in 1..%d (got %d and %d)", RECALL_MAX_PAIRS, a->pairs, a->queries);
    if (!(mx->distractor_frac >= 0 && mx->distractor_frac <= 1)) fail_usage("--distractor-frac %g: give a fraction in 0..1", mx->distractor_frac);
    if (mx->distractors < 1 || mx->distractors > PASSKEY_MAX_DISTRACTORS)
        fail_usage("--distractors %d: give 1..%d (the most other keys a document may hold)", mx->distractors, PASSKEY_MAX_DISTRACTORS);
    if (mx->ask < 1 || mx->ask > PASSKEY_MAX_DISTRACTORS + 1)
        fail_usage("--ask %d: give 1..%d (questions a document with distractors asks)", mx->ask, PASSKEY_MAX_DISTRACTORS + 1);
    if (!(mx->alike_frac >= 0 && mx->alike_frac <= 1)) fail_usage("--distractor-alike %g: give a fraction in 0..1", mx->alike_frac);
    if (mx->alike_frac > 0 && !(mx->distractor_frac > 0))
        fail_usage("--distractor-alike %g needs --distractor-frac (only documents with distractors have keys to make alike)", mx->alike_frac);
    if (mx->ask > 1 && !(mx->distractor_frac > 0)) fail_usage("--ask %d needs --distractor-frac (only documents with distractors ask more)", mx->ask);
    if (!(mx->hay_frac >= 0 && mx->hay_frac <= 1)) fail_usage("--haystack-frac %g: give a fraction in 0..1", mx->hay_frac);
    if (mx->hay_frac > 0 && !a->haystack) fail_usage("--haystack-frac needs --haystack (the text the needles hide in)");
    if (a->haystack && !(mx->hay_frac > 0)) fail_usage("--haystack needs --haystack-frac (the share of documents that use it)");
    if (a->held_out && !a->haystack) fail_usage("--held-out is checked against --haystack; give both");
    if (!passkey && (mx->distractor_frac > 0 || mx->hay_frac > 0 || mx->recall_frac > 0))
        fail_usage("--distractor-frac, --haystack-frac and --recall-frac shape passkey documents; drop them for --synthetic recall");
    if (!(mx->recall_frac >= 0 && mx->recall_frac <= 1)) fail_usage("--recall-frac %g: give a fraction in 0..1", mx->recall_frac);
    uint64_t need = 1 + (passkey ? passkey_train_min_len(mx, 0) : recall_min_len(a->pairs, a->queries));
    for (int i = 0; i < a->n_lens; i++)
        if ((uint64_t)a->lens[i] < need)
            fail_usage("--doc-len %" PRId64 " is too short for a %s document (at least %" PRIu64 ", the EOS included)", a->lens[i],
                       a->synthetic, need);
    if (!(mx->depth <= 1)) fail_usage("--depth %g: give a depth in 0..1 (or a negative one: drawn per document)", mx->depth);
    if (!(mx->edge_frac >= 0 && mx->edge_frac <= 1)) fail_usage("--edge-frac %g: give a fraction in 0..1", mx->edge_frac);
    if (!(mx->edge_span > 0 && mx->edge_span <= 1)) fail_usage("--edge-span %g: give a fraction in (0, 1]", mx->edge_span);
    if (!(mx->edge_far >= 0 && mx->edge_far <= 1)) fail_usage("--edge-far %g: give a fraction in 0..1", mx->edge_far);
    if (!(mx->long_frac >= 0 && mx->long_frac <= 1)) fail_usage("--long-frac %g: give a fraction in 0..1", mx->long_frac);
    if (mx->key_max < PASSKEY_KEY_DIGITS || mx->key_max > PASSKEY_KEY_MAX)
        fail_usage("--key-max %d: give %d..%d digits", mx->key_max, PASSKEY_KEY_DIGITS, PASSKEY_KEY_MAX);
    if (!passkey && (mx->edge_frac > 0 || mx->long_frac > 0))
        fail_usage("--edge-frac and --long-frac shape passkey documents; drop them for --synthetic recall");
    if (!(a->text_frac >= 0 && a->text_frac <= 1)) fail_usage("--text-frac %g: give a fraction in 0..1", a->text_frac);
    if (a->text_frac > 0 && !a->text) fail_usage("--text-frac needs --text FILE (the text its records are cut from)");
}

// Interleaved text records (--text, --text-frac): windows of 256..1023 bytes of the text, each a document
// with the loss on every token, drawn from their own random stream.
typedef struct {
    unsigned char *text;
    size_t len;
    double frac;
    Rng rng;
} TextMix;

enum { TEXT_RECORD_MIN = 256, TEXT_RECORD_MAX = 1024 };

static void text_mix_open(TextMix *t, const PrepareArgs *a) {
    memset(t, 0, sizeof *t);
    if (!(a->text_frac > 0)) return;
    t->text = read_whole_file(a->text, &t->len);
    if (t->len < TEXT_RECORD_MAX)
        fail_usage("--text %s holds %zu bytes; its records are up to %d bytes long: give more text", a->text, t->len, TEXT_RECORD_MAX);
    t->frac = a->text_frac;
    rng_seed(&t->rng, (uint64_t)a->seed * 0x9E6C63D0676A9A99ull ^ 0x5851F42D4C957F2Dull);
}

// After each synthetic document: a text record with probability frac.
static void text_mix_maybe(TextMix *t, Prep *p) {
    if (!t->text || !(rng_uniform(&t->rng) < t->frac)) return;
    size_t n = TEXT_RECORD_MIN + (size_t)rng_below(&t->rng, TEXT_RECORD_MAX - TEXT_RECORD_MIN);
    size_t at = (size_t)rng_below(&t->rng, (uint64_t)(t->len - n));
    uint32_t tok[TEXT_RECORD_MAX];
    uint8_t weight[TEXT_RECORD_MAX];
    for (size_t i = 0; i < n; i++) tok[i] = t->text[at + i], weight[i] = 1;
    weighted_doc(p, tok, weight, n, 1);
    p->in_bytes += n;
}

// --haystack: the text the needles of a --haystack-frac share of the documents hide in, checked apart from
// --held-out (the evaluation's haystack) and long enough for the longest document.
static void load_haystack(const PrepareArgs *a, Haystack *hay, uint64_t longest, PasskeyMix *mix) {
    haystack_load(a->haystack, hay);
    if (hay->n < longest)
        fail_usage("--haystack %s holds %" PRIu64 " bytes of text, shorter than the longest document (%" PRIu64 "); give more text "
                   "or shorter --doc-len", a->haystack, hay->n, longest);
    if (a->held_out) {
        Haystack held;
        haystack_load(a->held_out, &held);
        haystack_check_apart(hay, a->haystack, &held, a->held_out);
        haystack_free(&held);
    }
    mix->hay = hay->tok, mix->hay_len = hay->n;
}

// What a passkey mix realised: short documents hold fewer distractors and questions than asked for.
typedef struct {
    uint64_t docs, with, others, asked;   // passkey documents; those with distractors, their distractors and questions
} MixCount;

static void mix_count(MixCount *c, const PasskeyInfo *pk) {
    if (pk->needles == 0) return;   // a recall document
    c->docs++;
    if (pk->needles > 1) c->with++, c->others += (uint64_t)(pk->needles - 1), c->asked += (uint64_t)pk->asked;
}

static void mix_report(const MixCount *c, const PrepareArgs *a) {
    double w = c->with ? (double)c->with : 1;
    printf("prepare: %.1f %% of %" PRIu64 " passkey documents hold distractors (--distractor-frac %g; short ones have no room), "
           "%.2f distractors and %.2f questions each (--distractors %d, --ask %d)\n",
           c->docs ? 100.0 * (double)c->with / (double)c->docs : 0.0, c->docs, a->mix.distractor_frac, (double)c->others / w,
           (double)c->asked / w, a->mix.distractors, a->mix.ask);
}

// --doc-len counts the EOS: doc-len = seq-len gives exactly one document per training window; a list of
// lengths is cycled through. Passkey: the whole answer and the EOS that ends it get loss weight 1 (as a
// JSONL completion does), recall: the queried values; everything else 0.
static void synthesize(Prep *p, const PrepareArgs *a) {
    bool passkey = strcmp(a->synthetic, "passkey") == 0;
    if (!passkey && strcmp(a->synthetic, "recall") != 0) fail_usage("--synthetic must be passkey or recall, not '%s'", a->synthetic);
    check_synthetic(a, passkey);
    int64_t longest = 0;
    for (int i = 0; i < a->n_lens; i++) longest = a->lens[i] > longest ? a->lens[i] : longest;
    size_t cap = (size_t)passkey_train_cap((uint64_t)longest);
    PasskeyMix mix = a->mix;
    mix.recall_pairs = a->pairs, mix.recall_queries = a->queries;
    Haystack hay = {0};
    if (a->haystack) load_haystack(a, &hay, (uint64_t)longest, &mix);
    uint32_t *doc = xmalloc(cap * sizeof(uint32_t), "a synthetic document");
    uint8_t *weight = xmalloc(cap, "a synthetic document");
    TextMix text;
    text_mix_open(&text, a);
    MixCount count = {0};
    for (int64_t i = 0; i < a->docs; i++) {
        uint64_t len = (uint64_t)a->lens[i % a->n_lens] - 1, n = len;
        PasskeyInfo pk;
        RecallInfo rc;
        if (passkey) n = synth_passkey_train((uint64_t)a->seed, (uint64_t)i, len, &mix, doc, weight, &pk), mix_count(&count, &pk);
        else synth_recall((uint64_t)a->seed, (uint64_t)i, len, a->pairs, a->queries, doc, &rc), recall_weights(&rc, len, weight);
        weighted_doc(p, doc, weight, n, passkey);
        p->in_bytes += n;
        text_mix_maybe(&text, p);
        progress(p);
    }
    if (passkey && a->mix.distractor_frac > 0) mix_report(&count, a);
    free(text.text);
    haystack_free(&hay);
    free(doc);
    free(weight);
}

// JSONL prompt/completion records (the fine-tuning case), one document each: the prompt's tokens have
// loss weight 0, the completion's and the EOS weight 1. Byte-level tokens. Blank lines are skipped.
static void push_id(uint32_t **ids, size_t *n, size_t *cap, uint32_t id) {
    if (*n == *cap) *ids = xrealloc(*ids, (*cap = *cap ? 2 * *cap : 256) * sizeof **ids, "a JSONL record");
    (*ids)[(*n)++] = id;
}

// Appends the ids of a NUL-terminated string: the tokenizer's (BPE), or one per byte (byte260).
static void encode_text(TokEncoder *enc, const char *text, uint32_t **ids, size_t *n, size_t *cap) {
    size_t len = strlen(text);
    if (enc->tok->bpe) tokenizer_encode(enc, (const unsigned char *)text, len, ids, n, cap);
    else
        for (size_t i = 0; i < len; i++) push_id(ids, n, cap, (unsigned char)text[i]);
}

// Prompt and completion are encoded apart (the boundary is a token boundary), so the mask is exact.
static void read_jsonl(Prep *p, const char *path, const Tokenizer *t) {
    TokEncoder enc = tokenizer_encoder(t);
    FILE *f = xfopen(path, "rb");
    char *line = NULL;
    size_t cap = 0, line_no = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        line_no++;
        p->in_bytes += (uint64_t)n;
        if (strspn(line, " \t\r\n") == (size_t)n) continue;
        cJSON *rec = cJSON_ParseWithLength(line, (size_t)n);
        if (!rec) fail_usage("%s: line %zu: not valid JSON; each line must be one {\"prompt\": ..., \"completion\": ...} object", path, line_no);
        const cJSON *pr = cJSON_GetObjectItemCaseSensitive(rec, "prompt"), *co = cJSON_GetObjectItemCaseSensitive(rec, "completion");
        if (!cJSON_IsString(pr) || !cJSON_IsString(co))
            fail_usage("%s: line %zu: the record needs string fields \"prompt\" and \"completion\" (missing or not strings);"
                       " fix the line or remove it", path, line_no);
        size_t np = 0, nc = 0, id_cap = 0;
        uint32_t *tok = NULL;   // (np + nc) the prompt's ids (BOS first where the tokenizer adds one), then the completion's
        if (p->bos >= 0) push_id(&tok, &np, &id_cap, (uint32_t)p->bos);
        encode_text(&enc, pr->valuestring, &tok, &np, &id_cap);
        nc = np;
        encode_text(&enc, co->valuestring, &tok, &nc, &id_cap);
        nc -= np;
        uint8_t *weight = xmalloc(np + nc + 1, "a JSONL record");
        memset(weight, 0, np);
        memset(weight + np, 1, nc);
        weighted_doc(p, tok, weight, np + nc, 1);
        free(tok);
        free(weight);
        cJSON_Delete(rec);
        progress(p);
    }
    if (ferror(f)) fail_io(path, errno, "read failed");
    free(line);
    fclose(f);
    tokenizer_encoder_free(&enc);
}

// ---- the command ---------------------------------------------------------------------------------
static int parse_kind(const char *s) {
    const int kinds[] = {KIND_TEXT, KIND_U16, KIND_U32, KIND_LLMC, KIND_JSONL};
    for (int k = 0; k < 5; k++)
        if (strcmp(s, KIND_NAMES[kinds[k]]) == 0) return kinds[k];
    if (strcmp(s, "auto") == 0) return -1;
    fail_usage("--input-kind must be auto, text, u16, u32, llmc or jsonl, not '%s'", s);
}

static bool ends_with(const char *s, const char *tail) {
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

// Every input must be the same kind; auto means llm.c for files with its magic, JSONL for *.jsonl, text otherwise.
static int input_kind(const PrepareArgs *a, const FileList *l, uint32_t *magic) {
    int want = parse_kind(a->kind);
    *magic = 0;
    int kind = want;
    for (size_t i = 0; i < l->n; i++) {
        uint32_t m = llmc_magic(l->paths[i]);
        int k = want >= 0 ? want : m ? KIND_LLMC : ends_with(l->paths[i], ".jsonl") ? KIND_JSONL : KIND_TEXT;
        if (k == KIND_LLMC && !m) fail_data(l->paths[i], "header at byte 0: not an llm.c shard (magic 20240520 or 20240801)");
        if (k == KIND_LLMC && *magic && m != *magic) fail_data(l->paths[i], "llm.c magic %u differs from the other inputs' %u; prepare them separately", m, *magic);
        if (kind >= 0 && k != kind) fail_data(l->paths[i], "is %s input but earlier inputs are %s; prepare them separately",
                                              KIND_NAMES[k], KIND_NAMES[kind]);
        if (k == KIND_LLMC) *magic = m;
        kind = k;
    }
    return kind;
}

// Vocab, EOS, token width and tokenizer id of the dataset, from the input kind and the flags.
static ShardParams shard_params(const PrepareArgs *a, int kind, uint32_t magic, const Tokenizer *tok) {
    ShardParams sp = {.block_tokens = (uint32_t)a->block_tokens, .level = a->level, .byte_planes = a->byte_planes, .tokenizer = a->tokenizer,
                      .threads = a->threads};
    int64_t vocab = a->vocab, eos = a->eos;
    sp.weights = kind == KIND_SYNTH || kind == KIND_JSONL;   // answers / completions carry the loss
    if (tok->bpe) {   // a tokenizer.json: its id, vocab and EOS unless the flags say otherwise
        if (kind == KIND_SYNTH) fail_usage("--synthetic writes byte260 tasks; drop --tokenizer");
        if (vocab >= 0 && vocab != tok->vocab_size) fail_usage("--vocab %" PRId64 " disagrees with --tokenizer %s (vocab %u)", vocab, a->tokenizer, tok->vocab_size);
        vocab = tok->vocab_size;
        if (eos < 0) eos = tok->eos;
        if (eos < 0) fail_usage("--tokenizer %s has no end-of-text token (<|endoftext|>, <|end_of_text|>, </s>); give --eos ID", a->tokenizer);
        sp.tokenizer = tok->id;
    } else if (kind == KIND_TEXT || kind == KIND_SYNTH || kind == KIND_JSONL) {
        if (vocab < 0) vocab = TOK_VOCAB_SIZE;
        if (eos < 0) eos = TOK_EOS;
        if (!sp.tokenizer) sp.tokenizer = TOKENIZER_ID;
    } else if (kind == KIND_LLMC) {
        if (vocab < 0) vocab = magic == LLMC_GPT2 ? 50257 : 128256;
        if (eos < 0) eos = magic == LLMC_GPT2 ? 50256 : 128000;
        if (!sp.tokenizer) sp.tokenizer = magic == LLMC_GPT2 ? "gpt2" : "llama3";
    } else {
        if (eos < 0) fail_usage("raw token input needs --eos ID, the token that ends each document");
        if (vocab < 0 && kind == KIND_U32) fail_usage("u32 token input needs --vocab N (every id is checked against it)");
        if (vocab < 0) vocab = 65536;
        if (!sp.tokenizer) sp.tokenizer = "unknown";
    }
    if (vocab < 1 || vocab > 0xffffffffLL || eos < 0 || eos >= vocab) fail_usage("--eos %" PRId64 " must be below --vocab %" PRId64, eos, vocab);
    if (a->level < 0 || a->level > 9) fail_usage("--level must be 0..9 (zlib), not %d", a->level);
    if (a->block_tokens < 1 || a->block_tokens > (1 << 28)) fail_usage("--block-tokens must be in 1..2^28");
    if (a->token_bytes != 0 && a->token_bytes != 2 && a->token_bytes != 4) fail_usage("--token-bytes must be 0 (auto), 2 or 4");
    sp.vocab_size = (uint32_t)vocab;
    sp.eos_id = (uint32_t)eos;
    sp.token_bytes = a->token_bytes ? (uint32_t)a->token_bytes : vocab <= 65536 ? 2 : 4;
    if (sp.token_bytes == 2 && vocab > 65536) fail_usage("--vocab %" PRId64 " needs --token-bytes 4", vocab);
    return sp;
}

static char *source_json(const PrepareArgs *a, int kind, const FileList *l) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", KIND_NAMES[kind]);
    if (kind == KIND_SYNTH) {
        cJSON_AddStringToObject(o, "task", a->synthetic);
        cJSON_AddNumberToObject(o, "seed", (double)a->seed);
        cJSON_AddNumberToObject(o, "docs", (double)a->docs);
        cJSON_AddStringToObject(o, "doc_len", a->doc_len);
        if (strcmp(a->synthetic, "passkey") == 0) {
            cJSON_AddNumberToObject(o, "depth", a->mix.depth);
            cJSON_AddNumberToObject(o, "edge_frac", a->mix.edge_frac);
            cJSON_AddNumberToObject(o, "edge_span", a->mix.edge_span);
            cJSON_AddNumberToObject(o, "edge_far", a->mix.edge_far);
            cJSON_AddNumberToObject(o, "long_frac", a->mix.long_frac);
            cJSON_AddNumberToObject(o, "key_max", a->mix.key_max);
            if (a->mix.distractor_frac > 0) {
                cJSON_AddNumberToObject(o, "distractor_frac", a->mix.distractor_frac);
                cJSON_AddNumberToObject(o, "distractors", a->mix.distractors);
                cJSON_AddNumberToObject(o, "ask", a->mix.ask);
                if (a->mix.alike_frac > 0) cJSON_AddNumberToObject(o, "distractor_alike", a->mix.alike_frac);
            }
            if (a->mix.recall_frac > 0) {
                cJSON_AddNumberToObject(o, "recall_frac", a->mix.recall_frac);
                cJSON_AddNumberToObject(o, "pairs", a->pairs);
                cJSON_AddNumberToObject(o, "queries", a->queries);
            }
            if (a->mix.hay_frac > 0) {
                cJSON_AddStringToObject(o, "haystack", a->haystack);
                cJSON_AddNumberToObject(o, "haystack_frac", a->mix.hay_frac);
            }
        } else {
            cJSON_AddNumberToObject(o, "pairs", a->pairs);
            cJSON_AddNumberToObject(o, "queries", a->queries);
        }
        if (a->text_frac > 0) {
            cJSON_AddStringToObject(o, "text", a->text);
            cJSON_AddNumberToObject(o, "text_frac", a->text_frac);
        }
    } else {
        cJSON_AddNumberToObject(o, "files", (double)l->n);
    }
    cJSON_AddNumberToObject(o, "val_fraction", a->val_fraction);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    return s;
}

static void summary(const PrepareArgs *a, const Prep *p, const SplitSummary *s, uint32_t tb) {
    double dt = now_seconds() - p->t0, raw = 0, disk = 0;
    printf("prepared %s:", a->out);
    for (int i = 0; i < N_SPLITS; i++) {
        if (!s[i].shards) continue;
        printf(" %s %" PRIu64 " docs, %" PRIu64 " tokens in %" PRIu64 " shard%s;", SPLIT_NAMES[i], s[i].docs, s[i].tokens, s[i].shards,
               s[i].shards == 1 ? "" : "s");
        raw += (double)s[i].raw_bytes;
        disk += (double)s[i].file_bytes;
    }
    printf("\n  input %.2f MB -> shards %.2f MB: compression %.2fx vs raw %u-byte tokens, %.2fx vs the input\n", p->in_bytes / 1e6,
           disk / 1e6, disk > 0 ? raw / disk : 0.0, tb, disk > 0 ? p->in_bytes / disk : 0.0);
    printf("  %.2f s, %.1f MB/s of input\n", dt, dt > 0 ? p->in_bytes / 1e6 / dt : 0.0);
}

int cmd_prepare(int argc, char **argv) {
    PrepareArgs a = {.kind = "auto", .shard_tokens = 1 << 26, .block_tokens = SHARD_DEFAULT_BLOCK_TOKENS, .eos = -1, .vocab = -1,
                     .docs = 100, .doc_len = "4096", .seed = 1337, .level = 6, .pairs = 16, .queries = 4, .byte_planes = true,
                     .val_fraction = 0.1, .threads = (int)sysconf(_SC_NPROCESSORS_ONLN),
                     .mix = {.depth = -1, .edge_span = 0.03, .edge_far = 0.5, .key_max = 40, .distractors = 3, .ask = 1},
                     .out_exists = "refuse"};
    ArgSpec specs[] = {
        {"--out", ARG_STRING, &a.out, "output dataset directory (created; shards + manifest.json); an existing one must be empty"},
        {"--out-exists", ARG_STRING, &a.out_exists, "an --out that is not empty: refuse (exit 2), or move it aside to OUT.old1, "
                                                    "OUT.old2, ... (never deleted)"},
        {"--config", ARG_STRING, &a.config, "flags as a JSON object {\"synthetic\": \"passkey\", ...}; the command line overrides it"},
        {"--input-kind", ARG_STRING, &a.kind, "auto (llm.c .bin by magic, *.jsonl JSONL, else text), text, u16, u32, llmc or jsonl"},
        {"--eos", ARG_I64, &a.eos, "document delimiter id for u16/u32 (and llm.c override)",
         .dflt = "the input's: text <eos> 256, llm.c its EOT; u16/u32 need it"},
        {"--vocab", ARG_I64, &a.vocab, "vocab size (every id is checked)", .dflt = "text 260, llm.c 50257/128256, u16 65536"},
        {"--tokenizer", ARG_STRING, &a.tokenizer, "a tokenizer.json (byte-level BPE) to encode text and JSONL with, copied into the "
                                                  "dataset; with token files, their tokenizer.json or just an id to record"},
        {"--threads", ARG_INT, &a.threads, "threads compressing shard blocks (every input kind) and encoding text with --tokenizer",
         .dflt = "all cores"},
        {"--shard-tokens", ARG_I64, &a.shard_tokens, "tokens per shard"},
        {"--block-tokens", ARG_I64, &a.block_tokens, "tokens per independently compressed block"},
        {"--level", ARG_INT, &a.level, "zlib compression level 0..9"},
        {"--token-bytes", ARG_INT, &a.token_bytes, "token width on disk: 2 or 4", .dflt = "2 when vocab <= 65536, else 4"},
        {"--byte-planes", ARG_BOOL, &a.byte_planes, "deflate each block as byte planes (codec 2; =false: plain LE bytes, codec 1)"},
        {"--val-fraction", ARG_DOUBLE, &a.val_fraction, "fraction of documents written to the val split (spread evenly)"},
        {"--synthetic", ARG_STRING, &a.synthetic, "generate a long-context task instead of reading inputs: passkey or recall"},
        {"--docs", ARG_I64, &a.docs, "synthetic: number of documents"},
        {"--doc-len", ARG_STRING, &a.doc_len, "synthetic: tokens per document, its EOS included (= --seq-len: one document per "
                                              "window); a comma list (K = 1024) is cycled through"},
        {"--depth", ARG_DOUBLE, &a.mix.depth, "passkey: depth of the key in the filler, 0..1 (negative: random)",
         .dflt = "random per document"},
        {"--edge-frac", ARG_DOUBLE, &a.mix.edge_frac, "passkey: share of documents whose needle (with distractors: one needle, chosen evenly) sits near the filler's start or end"},
        {"--edge-span", ARG_DOUBLE, &a.mix.edge_span, "passkey: how near, as a fraction of the filler"},
        {"--edge-far", ARG_DOUBLE, &a.mix.edge_far, "passkey: of the edge documents, the share with the needle at the start"},
        {"--long-frac", ARG_DOUBLE, &a.mix.long_frac, "passkey: share of documents whose key gets 1..KEY_MAX-5 more digits"},
        {"--key-max", ARG_INT, &a.mix.key_max, "passkey: the longest key, in digits (5..60)"},
        {"--distractors", ARG_INT, &a.mix.distractors, "passkey: the most other named keys a --distractor-frac document holds "
                                                       "(1..8; a short document holds as many as fit)"},
        {"--distractor-frac", ARG_DOUBLE, &a.mix.distractor_frac, "passkey: share of documents with 1..--distractors other named keys"},
        {"--distractor-alike", ARG_DOUBLE, &a.mix.alike_frac, "passkey: share of distractor keys that begin with the asked key's "
                                                              "first 1..4 digits and then differ (hard negatives for the copy)"},
        {"--ask", ARG_INT, &a.mix.ask, "passkey: questions a --distractor-frac document asks, each for another of its keys and each "
                                       "answer in the loss (1..9; as many as fit)"},
        {"--haystack", ARG_STRING, &a.haystack, "passkey: real text (a file, a directory of files or a byte-level dataset) the needles "
                                                "of --haystack-frac of the documents hide in"},
        {"--haystack-frac", ARG_DOUBLE, &a.mix.hay_frac, "passkey: share of documents whose filler is a window of --haystack"},
        {"--held-out", ARG_STRING, &a.held_out, "passkey: the evaluation's haystack; --haystack sharing any text with it is an error"},
        {"--text", ARG_STRING, &a.text, "synthetic: a text file whose windows are mixed in as documents (loss on every token)"},
        {"--text-frac", ARG_DOUBLE, &a.text_frac, "synthetic: text records per synthetic document (0..1)"},
        {"--pairs", ARG_INT, &a.pairs, "recall (and passkey's --recall-frac documents): key-value pairs per document"},
        {"--queries", ARG_INT, &a.queries, "recall (and passkey's --recall-frac documents): queries per document"},
        {"--recall-frac", ARG_DOUBLE, &a.mix.recall_frac, "passkey: share of documents that are associative recall instead "
                                                          "(--pairs, --queries; fewer where a document is short)"},
        {"--seed", ARG_I64, &a.seed, "synthetic: seed"},
        {"--include", ARG_STRING, &a.include, "comma-separated globs of the file names to read in input directories ('*.txt,*.md')",
         .dflt = "every file but dotfiles and binary files"},
        {"--quiet", ARG_BOOL, &a.quiet, "no progress lines"},
    };
    ArgCommand cmd = {"prepare", "ringgpt prepare --out DIR [flags] INPUT... | ringgpt prepare --out DIR --synthetic passkey|recall [flags]",
                      "Turns text files (one document per file; directories are read recursively), JSONL prompt/completion records\n"
                      "(one document each, loss on the completion only), raw uint16/uint32 token files (documents end at --eos) or\n"
                      "llm.c .bin shards into a dataset of zlib-compressed, checksummed shards with a\n"
                      "manifest, or generates a synthetic long-context task. Files are written under .tmp names and renamed when complete."};
    const char *inputs[4096];
    int n_in = args_parse(&cmd, specs, sizeof specs / sizeof specs[0], argc, argv, inputs, 4096);
    args_apply_config(&cmd, specs, sizeof specs / sizeof specs[0]);
    if (!a.out) fail_usage("prepare needs --out DIR (see `ringgpt prepare --help`)");
    if (!(a.val_fraction >= 0 && a.val_fraction < 1)) fail_usage("--val-fraction must be in [0, 1), not %g", a.val_fraction);
    if (a.shard_tokens < 1) fail_usage("--shard-tokens must be positive (got %" PRId64 ")", a.shard_tokens);
    a.n_lens = args_parse_lengths("--doc-len", a.doc_len, a.lens, MAX_DOC_LENS);
    if (a.docs < 1 || a.pairs < 0 || a.queries < 0) fail_usage("--docs must be positive, --pairs and --queries not negative");
    if (a.text && access(a.text, R_OK) != 0) fail_usage("--text %s: cannot open (%s); check the path", a.text, strerror(errno));
    if (a.synthetic && n_in) fail_usage("--synthetic generates its data; give no input files");
    if (!a.synthetic && !n_in) fail_usage("prepare needs input files or directories, or --synthetic (see `ringgpt prepare --help`)");
    FileList files = {0};
    for (int i = 0; i < n_in; i++) collect(&files, inputs[i], a.include, true);
    if (!a.synthetic && !files.n) fail_usage("no input files found under the given paths%s", a.include ? " that match --include" : "");
    uint32_t magic = 0;
    int kind = a.synthetic ? KIND_SYNTH : input_kind(&a, &files, &magic);
    if (a.threads < 1 || a.threads > 1024) fail_usage("--threads must be in 1..1024, not %d", a.threads);
    Tokenizer tok = {0};
    struct stat tst;
    if (a.tokenizer && (stat(a.tokenizer, &tst) == 0 || strstr(a.tokenizer, ".json"))) {
        char err[600];
        if (tokenizer_load(a.tokenizer, &tok, err, sizeof err) != 0) fail_usage("%s", err);
    } else if (a.tokenizer && (kind == KIND_TEXT || kind == KIND_SYNTH || kind == KIND_JSONL)) {
        fail_usage("--tokenizer %s: no such file; text needs a tokenizer.json (or no --tokenizer for the byte tokenizer)", a.tokenizer);
    }
    if (kind == KIND_TEXT) drop_binary(&files, a.quiet);
    if (!a.synthetic && !files.n) fail_usage("every input file is binary; give text files (or --input-kind u16|u32|llmc)");
    if (!a.synthetic) drop_empty(&files, a.quiet);
    ShardParams sp = shard_params(&a, kind, magic, &tok);
    claim_out(&a);
    Prep p = {.val_fraction = a.val_fraction, .t0 = now_seconds(), .quiet = a.quiet, .eos = sp.eos_id, .bos = tok.add_bos ? tok.bos : -1};
    p.last_report = p.t0;
    p.buf = xmalloc(CHUNK_BYTES * sizeof(uint32_t), "a token buffer");
    p.w = dataset_writer_open(a.out, &sp, (uint64_t)a.shard_tokens);
    char *src = source_json(&a, kind, &files);
    dataset_writer_source(p.w, src);
    free(src);
    if (tok.bpe) {
        char *entry = dataset_tokenizer_write(a.out, &tok);
        dataset_writer_tokenizer(p.w, entry);
        free(entry);
    }
    if (kind == KIND_TEXT && tok.bpe)
        encode_files((const char *const *)files.paths, files.n, &tok, a.threads, (TextSink){bpe_text_piece, &p});
    if (kind == KIND_SYNTH) synthesize(&p, &a);
    for (size_t i = 0; i < files.n; i++) {
        if (kind == KIND_TEXT && tok.bpe) {
        } else if (kind == KIND_TEXT) read_text(&p, files.paths[i]);
        else if (kind == KIND_JSONL) read_jsonl(&p, files.paths[i], &tok);
        else if (kind == KIND_LLMC) read_llmc(&p, files.paths[i], sp.vocab_size);
        else read_tokens(&p, files.paths[i], kind == KIND_U16 ? 2 : 4, 0, sp.vocab_size, false);
        free(files.paths[i]);
    }
    free(files.paths);
    SplitSummary sums[N_SPLITS];
    dataset_writer_close(p.w, sums);   // refuses a dataset whose training split is empty (and removes its shards)
    summary(&a, &p, sums, sp.token_bytes);
    free(p.buf);
    tokenizer_free(&tok);
    return 0;
}
