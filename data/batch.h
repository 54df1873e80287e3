// data/batch.h — one micro-batch as this rank sees it: tokens, targets, global positions and document boundaries.
#pragma once
#include <stdint.h>

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
    int32_t *seg;       // (B, T) document number within the full sample of each token (0, 1, ...)
    int32_t *n_docs;    // (B) documents in each full sample
    int32_t *doc_start; // (B, doc_cap) start positions of those documents, ascending, first = 0
    int32_t *layout;    // (B, doc_cap) the row's layout (data/placement.h): rank j's T global positions at
                        // layout + row·doc_cap + j·T, ascending; this rank's are its `pos`
    int doc_cap;        // full seq-len once a source has filled the batch (0 before)
} Batch;

// The document number of every position of row `row`'s full sample (T = b->T·sp tokens) in zigzag rank
// order: rank j's b->T ids, in its local order, at out + j·b->T (sp = 1: position order). Every sp
// rank computes the same array from its batch's document starts (ring.h, ring_attention_forward_docs).
void batch_zigzag_docs(const Batch *b, int row, int sp, int32_t *out);
// The document number of every position of row `row`'s full sample in the row's layout order: rank j's
// b->T ids at out + j·b->T (the zigzag layout: what batch_zigzag_docs gives).
void batch_layout_docs(const Batch *b, int row, int sp, int32_t *out);
