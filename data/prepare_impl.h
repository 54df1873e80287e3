// data/prepare_impl.h — the parts of data/prepare.c: input files, documents and their split, synthetic documents.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/dataset.h"
#include "data/prepare.h"

// A dataset being written: the document in progress, its split, and the counts progress reports.
typedef struct {
    DatasetWriter *w;
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

// data/prepare_docs.c: documents into the writer, and the readers of each input kind.
void prep_progress(Prep *p);
// A whole document with a loss weight per token and one for its EOS.
void prep_weighted_doc(Prep *p, const uint32_t *t, const uint8_t *weight, size_t n, uint8_t eos_weight);
// Every input file of the plan, in order, as documents.
void prep_read_inputs(Prep *p, const PreparePlan *plan);

// data/prepare_synth.c: the synthetic task's checks (the mix against the task and --doc-len) and what it reads
// (the haystack, the text records' text), then its documents.
void prepare_synth_plan(PreparePlan *plan);
void prep_synthesize(Prep *p, const PreparePlan *plan, PrepareResult *r);
