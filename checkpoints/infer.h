// checkpoints/infer.h — token-by-token inference with a KV cache (for `ringgpt sample`), over the model's named weights.
#pragma once
#include "checkpoints/checkpoint.h"
#include "model/gpt.h"

// One sequence, one token per call. Caches keys/values of every layer: (n_layer, max_t, Hkv·hd) each.
typedef struct {
    GPT *m;
    int max_t, len;                 // capacity and tokens fed so far
    real *kc, *vc;                  // (n_layer, max_t, KV) caches, k after RoPE
    real *x, *xn, *q, *k, *v, *att, *tmp, *gate, *up, *h, *rstd;   // one row of each
    real *m_row, *l_row;            // (H) attention state of the one query row; m_row ends as its lse
    real *lg;                       // (V) logits on the backend
    real *lg_host;                  // (V) the same, copied to the host
    float *logits;                  // (V) of the last token fed
} Infer;

void infer_init(Infer *s, GPT *m, int max_t);
void infer_free(Infer *s);
// Feeds `token` at position s->len and returns the logits (V) of the next token.
const float *infer_step(Infer *s, int token);

// Loads a model for inference from a checkpoint (step or run directory) or an HF directory.
// rope_theta > 0 overrides the stored base. *state (optional) gets the checkpoint's state (zeroed for HF).
void infer_load(const char *path, GPT *m, float rope_theta, CkptState *state);
