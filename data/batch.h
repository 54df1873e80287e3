// data/batch.h — one micro-batch as this rank sees it: tokens, targets and global positions.
#pragma once
#include <stdint.h>

// B sequences of this rank's T tokens each (T = the full seq-len on one rank; with the ring,
// T = seq_len / sp and the rows are this rank's zigzag slices). Row-major (B, T).
typedef struct {
    int B, T;
    int32_t *tokens;    // (B, T) input token ids
    int32_t *targets;   // (B, T) next-token ids; -1 = no target (not counted in the loss)
    int32_t *pos;       // (B, T) global positions in the sequence, for RoPE
} Batch;
