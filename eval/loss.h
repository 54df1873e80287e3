// eval/loss.h — loss evaluation: the mean loss of a model over the first batches of a split, in the order training sees them, over dp × sp ranks.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    const char *ckpt;           // the model's path, named in errors
    const Tokenizer *tok;       // the model's tokenizer: the data's must feed it
    const char *data;           // a text file or a dataset directory
    bool val;                   // the val split (a text file's last val_fraction), else train
    float val_fraction;
    int seq_len, batch;         // T (divisible by 2·sp on a ring), B sequences per batch
    const char *batches;        // "N": the first N batches (a multiple of dp; the dp groups take turns), "all": the split
    uint64_t seed;              // data order
    bool loss_on_all;           // every target counts, not only the data's weighted ones
    const char *dump_logits;    // NULL, or a directory: the first batch's tokens, targets and logits as .npy (one rank)
} LossEval;

typedef struct {
    double loss, tokens;   // mean loss per target, targets counted
    int batches;           // full batches of B evaluated
    uint64_t rest;         // samples after them evaluated one by one (batches "all": the split's last, partial round)
} LossResult;

// Evaluates m (loss_chunk and doc_mask set) over cg: sp > 1 splits each sequence over the ring (attached here,
// gpt_set_cp, and released before returning), the dp groups split the batches; the same samples and loss as one rank.
// Returns 0, or -1 with one line in why (size n) naming the flag and the way out: a usage error every rank meets
// alike (a sequence the ring cannot split, more batches than the split holds, none of the data's targets weighted).
int loss_eval(GPT *m, const LossEval *e, const CommGrid *cg, LossResult *r, char *why, size_t n);
