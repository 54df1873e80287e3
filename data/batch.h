// data/batch.h — one micro-batch as this rank sees it: tokens, targets, global positions and document boundaries.
#pragma once
#include <stdint.h>

#include "data/placement.h"

// B sequences of this rank's T tokens each (T = the full seq-len on one rank; with the ring,
// T = seq_len / sp and the rows are this rank's zigzag slices). Row-major (B, T).
typedef struct {
    int B, T;
    int32_t *tokens;    // (B, T) input token ids
    int32_t *targets;   // (B, T) next-token ids; -1 = no target (masked by the data's loss weights, or
                        // none): neither counted in the loss nor differentiated
    int32_t *pos;       // (B, T) global positions in the sequence, for RoPE
    // Document boundaries, for document masking. A document starts at position 0 and right after
    // every EOS token; they are computed on the full sample, so every sp rank sees the same list.
    int64_t *sample;    // (B) global sample number k of each row (the same k on every layout)
    int32_t *n_docs;    // (B) documents in each full sample
    int32_t *doc_start; // (B, doc_cap) start positions of those documents, ascending, first = 0
    int32_t *layout;    // (B, doc_cap) the row's layout (data/placement.h): rank j's T global positions at
                        // layout + row·doc_cap + j·T, ascending; this rank's are its `pos`
    int32_t *docs;      // (B, doc_cap) the document number (0, 1, ...) of every position of the layout, in its order:
                        // rank j's T ids at j·T. The ring's document mask reads every rank's (attention/ring.h): no id travels.
    int doc_cap;        // full seq-len once a source has filled the batch (0 before)
} Batch;

Batch batch_alloc(int B, int T);
void batch_free(Batch *b);
// Which part of a sample a rank takes: rank sp_index of the sp ranks of a ring, the sample placed by `placement`
// (data/placement.h) over `groups` of them — 0 or sp: each rank its own part; the hybrid's sp/N Ulysses groups: group g's
// part (ascending) cut into N consecutive slices, member m of the group holding slice m (the same (sp, T/sp) array).
typedef struct {
    int sp, sp_index;
    Placement placement;
    int groups;
} RankSlice;

// Writes rank s's positions of one global sample (T+1 tokens) into row `row` of b: the row's layout (data/placement.h;
// PLACE_ZIGZAG over sp ranks: rank r keeps chunks r and 2·sp−1−r of 2·sp; sp = 1 keeps the whole sample), the tokens,
// their next-token targets and their global positions, and b's document fields: a document starts at 0 and after
// every `eos` (-1: none, the sample is one).
void batch_put_sample(Batch *b, int row, const int32_t *sample, int T, int32_t eos, RankSlice s);
// After batch_put_sample: the loss weights of the same sample's T+1 tokens mask row `row`'s targets: a
// target whose token has weight 0 becomes -1. Uses the row's global positions, so it works on any slice.
void batch_mask_targets(Batch *b, int row, const uint8_t *weight);
// Targets of b that count in the loss (>= 0).
long batch_count_targets(const Batch *b);
