// cli/prepare.c — `ringgpt prepare`: its flags, the mix file, the output directory and what it prints (the pipeline: data/prepare.h).
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/args.h"
#include "core/common.h"
#include "core/outdir.h"
#include "data/prepare.h"
#include "cli/commands.h"

enum { MAX_INPUTS = 4096 };

typedef struct {
    PrepareSpec spec;
    const char *config, *mix, *out_exists;
    bool quiet;
} PrepareArgs;

// Every entry of a directory counts: a dataset directory holds one dataset.
static bool any_entry(const char *name) { return name[0] != 0; }

// --out belongs to this prepare before anything is written there: locked for the process's life (another
// prepare or writer there exits 2), and refused or moved aside when it holds anything (core/outdir.h).
static void claim_out(const PrepareArgs *a) {
    const char *out = a->spec.out;
    OutdirMode mode;
    if (!outdir_mode_parse(a->out_exists, &mode)) fail_usage("--out-exists must be refuse or move, not '%s'", a->out_exists);
    char err[600], moved[4200] = "";
    int errno_out = 0;
    int rc = outdir_claim(out, mode, any_entry, err, sizeof err, moved, sizeof moved, &errno_out);
    if (rc == OUTDIR_BUSY) fail_usage("--out %s is being written by another ringgpt process (%s); wait for it, or use another --out", out, err);
    if (rc == OUTDIR_TAKEN)
        fail_usage("--out %s is not empty (%s); give a new --out, or add --out-exists move to move it aside (nothing is "
                   "deleted)", out, err);
    if (rc == OUTDIR_FAILED && exit_code_for_errno(errno_out) == EXIT_USAGE) fail_usage("--out %s", err);
    if (rc == OUTDIR_FAILED) fail("--out %s", err);
    if (moved[0] && !a->quiet) fprintf(stderr, "prepare: moved what %s held to %s (--out-exists move)\n", out, moved);
}

// The inputs the plan left out, said once each.
static void report_skipped(const PreparePlan *plan) {
    size_t b = plan->skipped_binary, e = plan->skipped_empty;
    if (b)
        fprintf(stderr, "prepare: skipped %zu binary file%s (a NUL byte in the first 8 KiB), e.g. %s; --include GLOBS picks "
                "the files to read\n", b, b == 1 ? "" : "s", plan->binary_example);
    if (e) fprintf(stderr, "prepare: skipped %zu empty file%s, e.g. %s\n", e, e == 1 ? "" : "s", plan->empty_example);
}

static void progress(void *ctx, const PrepareProgress *p) {
    (void)ctx;
    fprintf(stderr, "prepare: %.1f MB read, %" PRIu64 " doc%s, %.2fM tokens, %.1f MB/s\n", p->in_bytes / 1e6, p->docs,
            plural((long long)p->docs), p->tokens / 1e6,
            p->in_bytes / 1e6 / p->seconds);
}

// What a passkey mix with distractors realised: short documents have no room for all of them.
static void mix_report(const PrepareResult *r, const PrepareMix *m) {
    double w = r->with_distractors ? (double)r->with_distractors : 1;
    printf("prepare: %.1f %% of %" PRIu64 " passkey documents hold distractors (distractor-frac %g; short ones have no room), "
           "%.2f distractors and %.2f questions each (distractors %d, ask %d)\n",
           r->passkey_docs ? 100.0 * (double)r->with_distractors / (double)r->passkey_docs : 0.0, r->passkey_docs,
           m->passkey.distractor_frac, (double)r->distractors / w, (double)r->questions / w, m->passkey.distractors, m->passkey.ask);
}

static void summary(const char *out, const PrepareResult *r, uint32_t token_bytes) {
    double dt = r->seconds, raw = 0, disk = 0, in = (double)r->in_bytes;
    printf("prepared %s:", out);
    for (int i = 0; i < N_SPLITS; i++) {
        const SplitSummary *s = &r->splits[i];
        if (!s->shards) continue;
        printf(" %s %" PRIu64 " doc%s, %" PRIu64 " token%s in %" PRIu64 " shard%s;", SPLIT_NAMES[i], s->docs, plural((long long)s->docs),
               s->tokens, plural((long long)s->tokens), s->shards,
               s->shards == 1 ? "" : "s");
        raw += (double)s->raw_bytes;
        disk += (double)s->file_bytes;
    }
    printf("\n  input %.2f MB -> shards %.2f MB: compression %.2fx vs raw %u-byte tokens, %.2fx vs the input\n", in / 1e6, disk / 1e6,
           disk > 0 ? raw / disk : 0.0, token_bytes, disk > 0 ? in / disk : 0.0);
    printf("  %.2f s, %.1f MB/s of input\n", dt, dt > 0 ? in / 1e6 / dt : 0.0);
}

// --mix FILE into the spec: a bad file is one line naming it, the key and the fix (exit 2).
static void load_mix(PrepareArgs *a) {
    if (!a->mix) return;
    char err[1024];
    if (prepare_mix_load(a->mix, &a->spec.mix, err, sizeof err) != 0) fail_usage("%s", err);
}

// The passkey-curriculum flags became keys of the mix file: where one went (ArgCommand.moved).
static const char *mix_key_moved(const char *name) {
    return prepare_mix_has_key(name) ? "it is a key of the mix file now: put it in a JSON file ({\"key\": value, ...}) "
                                       "and give --mix FILE (docs/data.md)" : NULL;
}

static const ArgCommand CMD = {
    "prepare", "ringgpt prepare --out DIR [flags] INPUT... | ringgpt prepare --out DIR --synthetic passkey|recall [--mix FILE] [flags]",
    "Turns text files (one document per file, or per directory with --doc-per dir; directories are read recursively),\n"
    "JSONL text records (one document each: --text-field), JSONL prompt/completion records (one document each, loss\n"
    "on the completion only), raw uint16/uint32 token files (documents end at --eos) or llm.c .bin shards into a\n"
    "dataset of zlib-compressed, checksummed shards with a manifest, or generates a synthetic long-context task.\n"
    "Text and JSONL files may be gzip or zstd compressed (told by their first bytes). Files are written under .tmp\n"
    "names and renamed when complete; a prepare that fails (a bad record, a truncated file) leaves no dataset.\n"
    "A mix file (--mix) is a JSON object of the synthetic documents' variations: depth, edge-frac, edge-span, edge-far,\n"
    "long-frac, key-max, distractor-frac, distractors, distractor-alike, ask, recall-frac, pairs, queries, haystack,\n"
    "haystack-frac, held-out, text, text-frac (docs/data.md says what each does; a key left out keeps its default).",
    mix_key_moved};

static int parse_flags(PrepareArgs *a, int argc, char **argv, const char **inputs) {
    PrepareSpec *s = &a->spec;
    ArgSpec specs[] = {
        ARG_GROUP("output"),
        {"--out", ARG_STRING, &s->out, "output dataset directory (created; shards + manifest.json); an existing one must be empty"},
        {"--out-exists", ARG_STRING, &a->out_exists, "an --out that is not empty: refuse (exit 2), or move it aside to OUT.old1, "
                                                     "OUT.old2, ... (never deleted)"},
        {"--val-fraction", ARG_DOUBLE, &s->val_fraction, "fraction of documents written to the val split (spread evenly)"},
        {"--config", ARG_STRING, &a->config, "flags as a JSON object {\"synthetic\": \"passkey\", ...}; the command line overrides it"},
        {"--quiet", ARG_BOOL, &a->quiet, "no progress lines"},
        ARG_GROUP("inputs (files and directories)"),
        {"--input-kind", ARG_STRING, &s->input_kind, "auto, text, u16, u32, llmc, jsonl (prompt/completion records) or jsonl-text; auto: "
                                                     "llm.c .bin by magic, *.jsonl (and *.jsonl, *.json .gz/.zst) JSONL, jsonl when the "
                                                     "first record has prompt and completion, else jsonl-text; text otherwise"},
        {"--text-field", ARG_STRING, &s->text_field, "the field of JSONL text records that holds the document's text; a record "
                                                     "without it (as a string) stops prepare naming the file and line (exit 2)"},
        {"--doc-per", ARG_STRING, &s->doc_per, "text: a document per file, or per dir: each directory inside an input directory "
                                               "is one document, its files in name order, each after a line '==> PATH <=='"},
        {"--shuffle-docs", ARG_BOOL, &s->shuffle_docs, "write the documents of all inputs in a random order drawn from --seed "
                                                       "(then the val split); holds a copy of the tokens in a temporary file in --out"},
        {"--include", ARG_STRING, &s->include, "comma-separated globs of the file names to read in input directories ('*.txt,*.md')",
         .dflt = "every file but dotfiles and binary files"},
        {"--tokenizer", ARG_STRING, &s->tokenizer, "a tokenizer.json (a BPE: byte-level or SentencePiece-style) to encode text and JSONL with, copied into the "
                                                   "dataset; with token files, their tokenizer.json or just an id to record"},
        {"--eos", ARG_I64, &s->eos, "document delimiter id for u16/u32 (and llm.c override)",
         .dflt = "the input's: text <eos> 256, llm.c its EOT; u16/u32 need it"},
        {"--vocab", ARG_I64, &s->vocab, "vocab size (every id is checked)", .dflt = "text 260, llm.c 50257/128256, u16 65536"},
        ARG_GROUP("synthetic tasks (instead of inputs)"),
        {"--synthetic", ARG_STRING, &s->synthetic, "generate a long-context task instead of reading inputs: passkey or recall"},
        {"--docs", ARG_I64, &s->docs, "number of documents"},
        {"--doc-len", ARG_STRING, &s->doc_len, "tokens per document, its EOS included (= --seq-len: one document per "
                                               "window); a comma list (K = 1024) is cycled through"},
        {"--mix", ARG_STRING, &a->mix, "a mix file: the documents' variations (its keys above; docs/data.md)",
         .dflt = "none: the plain task"},
        {"--seed", ARG_I64, &s->seed, "seed of the synthetic documents, and of --shuffle-docs' order"},
        ARG_GROUP("shards"),
        {"--shard-tokens", ARG_I64, &s->shard_tokens, "tokens per shard"},
        {"--block-tokens", ARG_I64, &s->block_tokens, "tokens per independently compressed block"},
        {"--level", ARG_INT, &s->level, "zlib compression level 0..9"},
        {"--token-bytes", ARG_INT, &s->token_bytes, "token width on disk: 2 or 4", .dflt = "2 when vocab <= 65536, else 4"},
        {"--byte-planes", ARG_BOOL, &s->byte_planes, "deflate each block as byte planes (codec 2; =false: plain LE bytes, codec 1)"},
        {"--threads", ARG_INT, &s->threads, "threads compressing shard blocks (every input kind) and encoding text with --tokenizer",
         .dflt = "free cores"},
    };
    int n = (int)(sizeof specs / sizeof specs[0]);
    int n_in = args_parse(&CMD, specs, n, argc, argv, inputs, MAX_INPUTS);
    args_apply_config(&CMD, specs, n);
    return n_in;
}

int cmd_prepare(int argc, char **argv) {
    PrepareArgs a = {.spec = prepare_spec_defaults(), .out_exists = "refuse"};
    a.spec.threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    const char *inputs[MAX_INPUTS];
    a.spec.n_inputs = parse_flags(&a, argc, argv, inputs);
    a.spec.inputs = inputs;
    if (!a.spec.out) fail_usage("prepare needs --out DIR (see `ringgpt prepare --help`)");
    args_check_seed("--seed", a.spec.seed);
    load_mix(&a);
    PreparePlan plan;
    prepare_plan(&a.spec, &plan);
    if (!a.quiet) report_skipped(&plan);
    claim_out(&a);
    PrepareResult r;
    prepare_write(&plan, a.quiet ? NULL : progress, NULL, &r);
    if (plan.kind == PREPARE_SYNTHETIC && a.spec.mix.passkey.distractor_frac > 0) mix_report(&r, &a.spec.mix);
    summary(a.spec.out, &r, plan.shard.token_bytes);
    prepare_plan_free(&plan);
    prepare_mix_free(&a.spec.mix);
    return 0;
}
