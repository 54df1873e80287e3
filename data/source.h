// data/source.h — where training batches come from: one interface over text files and shard datasets.
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "data/batch.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    int seq_len;          // T: tokens per sample (each sample holds T+1 tokens: inputs and targets)
    int batch;            // B: sequences per data-parallel group per micro-step
    uint64_t seed;        // shuffles the sample order per epoch
    int dp, dp_index;     // data-parallel groups and this rank's group
    int sp, sp_index;     // ring size and this rank's place in it
    Placement placement;  // how a sample's tokens go to the sp ranks (data/placement.h; PLACE_ZIGZAG by default)
    int place_groups;     // ... placed over this many groups of them (RankSlice.groups; 0: sp; the hybrid: sp/N)
    double val_fraction;  // text files without --val-data: the held-out tail used for validation
    bool no_shuffle;      // samples in stream order every epoch (--no-shuffle), for debugging and tests
    bool loss_on_all;     // --loss-on all: ignore the data's per-token loss weights (every target counts)
} DataOptions;

// Resume state: global, identical on every rank, independent of the dp×sp layout.
typedef struct {
    uint64_t seed;
    uint64_t consumed;    // global samples consumed so far (all dp groups together)
    uint64_t epoch;       // consumed / samples per epoch, for the record (data_restore derives it again)
} DataState;

typedef struct DataSource DataSource;

// Opens a text file (byte tokenizer), a dataset directory made by `ringgpt prepare` or one shard
// file. `validation` selects the held-out part: text, the last val_fraction of the bytes; a dataset,
// its "val" split, or when it has none, the last val_fraction of its training token stream (the
// training source then leaves that tail out). Bad input ends with a clear message.
DataSource *data_open(const char *path, const DataOptions *o, bool validation);
// Fills b (allocated by batch_alloc(B, T/sp)) with this rank's part of the next B×dp global samples
// and advances the global position by B·dp samples.
void data_next(DataSource *d, Batch *b);
// Token ids are < this (text: the byte tokenizer's 260; a dataset: its manifest's vocab_size).
// The training loop must check it against the model's vocab before the first step.
uint32_t data_vocab_size(const DataSource *d);
// True when the data has per-token loss weights and they apply (not loss_on_all): targets whose token
// has weight 0 come as -1 ("no target"), so a batch may count fewer than B·T targets.
bool data_masks_targets(const DataSource *d);
// The tokenizer the data was made with (byte260 for text; a dataset's tokenizer.json, or its id only).
const Tokenizer *data_tokenizer(const DataSource *d);
// The number of distinct samples in one epoch.
uint64_t data_num_samples(const DataSource *d);
DataState data_state(const DataSource *d);
void data_restore(DataSource *d, DataState s);
void data_close(DataSource *d);
