// data/prepare.h — the dataset pipeline of `ringgpt prepare`: input files or a synthetic task -> a dataset directory.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"
#include "data/haystack.h"
#include "data/prepare_mix.h"
#include "data/tokenizer.h"

// What prepare reads: every input the same kind. Auto (the spec's "auto") picks llm.c for files with its
// magic, JSONL for *.jsonl (and *.jsonl or *.json compressed: .gz, .zst) and text otherwise; a JSONL file
// whose first record has string fields prompt and completion is prompt/completion records, else text records.
typedef enum { PREPARE_TEXT, PREPARE_U16, PREPARE_U32, PREPARE_LLMC, PREPARE_SYNTHETIC, PREPARE_JSONL, PREPARE_JSONL_TEXT } PrepareKind;
extern const char *const PREPARE_KIND_NAMES[];   // "text", "u16", "u32", "llmc", "synthetic", "jsonl", "jsonl-text"

// A dataset to make: what each flag of `ringgpt prepare` says (docs/data.md); prepare_spec_defaults gives the defaults.
typedef struct {
    const char *out;                 // the dataset directory, claimed by the caller before prepare_write (core/outdir.h)
    const char *const *inputs;       // (n_inputs) files and directories (read recursively, in name order); none for synthetic
    int n_inputs;
    const char *input_kind;          // "auto", "text", "u16", "u32", "llmc", "jsonl" (prompt/completion) or "jsonl-text"
    const char *include;             // comma-separated globs of the file names to read in directories, or NULL: every one
    const char *text_field;          // the field of JSONL text records that holds a document's text
    const char *doc_per;             // text: "file" (a document each) or "dir" (a directory of an input directory, its files joined)
    bool shuffle_docs;               // documents written in an order drawn from seed, not in the order they are read
    const char *tokenizer;           // a tokenizer.json to encode text with, or with token files an id to record; or NULL
    int64_t eos, vocab;              // -1: the input's (text 256 and 260, llm.c's, u16 needs eos)
    int64_t shard_tokens, block_tokens;
    int level, token_bytes, threads;   // zlib level; token width 0 (2 when vocab <= 65536, else 4), 2 or 4
    bool byte_planes;
    double val_fraction;             // documents sent to the val split, spread evenly
    const char *synthetic;           // "passkey" or "recall": generate documents instead of reading inputs; or NULL
    int64_t docs, seed;              // seed: the synthetic documents', and the order of --shuffle-docs
    const char *doc_len;             // synthetic document lengths, the EOS included: "4096" or a list cycled through
    PrepareMix mix;                  // how synthetic documents vary (prepare_mix_defaults, or a mix file)
} PrepareSpec;

PrepareSpec prepare_spec_defaults(void);

enum { PREPARE_MAX_DOC_LENS = 64 };
// A checked spec and what it found; made by prepare_plan, nothing written yet.
typedef struct {
    PrepareSpec spec;
    PrepareKind kind;
    char **files;                    // (n_files) the inputs, binary and empty files left out
    size_t n_files;
    size_t *label_at;                // (n_files) doc_per dir: where each path's part below its input directory starts
    bool *joins;                     // (n_files) doc_per dir: the file continues the document of the one before
    uint32_t llmc_magic;             // the llm.c inputs' magic (0 for other kinds)
    Tokenizer tok;                   // spec.tokenizer's tokenizer.json (tok.bpe NULL without one)
    ShardParams shard;               // vocab, EOS, token width, codec, threads of the shards
    int n_lens;
    int64_t lens[PREPARE_MAX_DOC_LENS];   // synthetic: spec.doc_len's lengths
    Haystack hay;                    // synthetic: spec.mix.haystack's text (n 0 without one)
    unsigned char *text;             // synthetic: spec.mix.text's bytes for the text records (NULL without)
    size_t text_len;
    size_t skipped_binary, skipped_empty;   // text inputs left out: a NUL byte in the first 8 KiB, 0 bytes
    char *binary_example, *empty_example;   // the first of each (NULL when none)
} PreparePlan;

// Checks the spec, finds the input files and reads the tokenizer, the haystack and the text records' text:
// everything that can be wrong with the input is found before anything is written. Bad input is a usage
// error (one line naming the flag, the mix key or the file; exit 2), as in the rest of data/. The plan keeps
// the spec's strings and its mix's (not copies): they outlive the plan.
void prepare_plan(const PrepareSpec *spec, PreparePlan *plan);
void prepare_plan_free(PreparePlan *plan);

// Where a running prepare is, reported every 2 s.
typedef struct {
    uint64_t in_bytes, docs, tokens;
    double seconds;
} PrepareProgress;
typedef void (*PrepareProgressFn)(void *ctx, const PrepareProgress *p);

// What a prepare made.
typedef struct {
    SplitSummary splits[N_SPLITS];
    uint64_t in_bytes;               // input read (synthetic: the documents' tokens and text records' bytes)
    double seconds;
    // Passkey documents as the mix realised them (short documents hold fewer distractors and questions than asked for).
    uint64_t passkey_docs, with_distractors, distractors, questions;
} PrepareResult;

// Writes the plan's dataset into spec.out: shards under .tmp names renamed when complete, then manifest.json,
// which records the inputs or the synthetic task and its mix. A failure halfway (bad input, a full disk)
// removes what was written. progress may be NULL.
void prepare_write(PreparePlan *plan, PrepareProgressFn progress, void *ctx, PrepareResult *r);
