// data/prepare_impl.h — the parts of data/prepare.c: input files, documents and their split, text inputs, the shuffle, synthetic documents.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"
#include "data/prepare.h"

typedef struct Spool Spool;

// A dataset being written: the document in progress, its split, and the counts progress reports.
typedef struct {
    DatasetWriter *w;
    Spool *spool;              // --shuffle-docs: documents go here first, and to w in a random order at the end
    double val_fraction;
    uint64_t doc_index;        // documents begun so far: decides each one's split
    uint64_t in_bytes, tokens;
    double t0, last_report;
    bool in_doc;
    uint32_t eos;              // the document delimiter of raw and llm.c inputs
    int64_t bos;               // a tokenizer whose documents start with BOS: its id, else -1
    uint32_t *buf;             // (PREP_CHUNK_BYTES) token scratch
    PrepareProgressFn progress;
    void *ctx;
} Prep;

enum { PREP_CHUNK_BYTES = 1 << 20 };
// llm.c's .bin shards: the magic of its GPT-2 and Llama 3 files, and the header before the tokens.
enum { LLMC_GPT2 = 20240520, LLMC_LLAMA3 = 20240801, LLMC_HEADER_BYTES = 1024 };

// data/prepare_inputs.c: the spec's input files (recursively, in name order, --include applied), their kind
// (every input the same), binary and empty text inputs left out. Usage errors name the file.
void prepare_find_inputs(PreparePlan *plan);

// data/prepare_inputs.c calls this for a JSONL file under --input-kind auto: PREPARE_JSONL when its first record
// has string fields prompt and completion, PREPARE_JSONL_TEXT when it has text_field, -1 when it has no record
// (data/prepare_text.c).
int prep_jsonl_kind(const char *path, const char *text_field);

// data/prepare_docs.c: documents into the writer (or the spool), and the readers of token inputs.
void prep_progress(Prep *p);
// Tokens of the document in progress (one begins when none is), with a loss weight each (weight NULL: all 1).
void prep_doc_tokens(Prep *p, const uint32_t *t, const uint8_t *weight, size_t n);
// Ends the document (begun if it was not: an empty one) with EOS and the EOS's loss weight.
void prep_doc_end(Prep *p, uint8_t eos_weight);
// Every input file of the plan, in order, as documents.
void prep_read_inputs(Prep *p, const PreparePlan *plan);

// data/prepare_text.c: text inputs (text files, JSONL text records) as documents, encoded on the plan's threads
// with a tokenizer.json; JSONL prompt/completion records.
void prep_read_text(Prep *p, const PreparePlan *plan);
void prep_read_jsonl(Prep *p, const PreparePlan *plan);

// data/prepare_shuffle.c: --shuffle-docs. Documents are kept in unlinked temporary files in dir (the token ids at
// their dataset width, a byte each for loss weights) and their ends in memory (8 bytes each), then written through
// prep_doc_* in the order a seeded permutation gives (8 more bytes a document): their split follows that order.
Spool *spool_open(const char *dir, uint32_t token_bytes, bool weights);
void spool_tokens(Spool *s, const uint32_t *t, const uint8_t *weight, size_t n);
void spool_doc_end(Spool *s, uint32_t eos, uint8_t eos_weight);
// Writes the spooled documents to p's writer in the permuted order and frees the spool (p->spool is NULL after).
void spool_write(Prep *p, uint64_t seed);

// data/prepare_synth.c: the synthetic task's checks (the mix against the task and --doc-len) and what it reads
// (the haystack, the text records' text), then its documents.
void prepare_synth_plan(PreparePlan *plan);
void prep_synthesize(Prep *p, const PreparePlan *plan, PrepareResult *r);
