// model/gpt.h — the model: parameters by name, activations, and the forward/backward orchestration written once.
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "core/backend.h"
#include "data/batch.h"
#include "model/config.h"
#include "model/params.h"

struct AttnRing;   // attention/ring.h: the ring of sp ranks this model's attention spans (NULL = one rank)

// Saved for the backward, per layer, for a micro-batch of N = B·T rows (T = this rank's tokens).
typedef struct {
    real *x;        // (N, C) layer input (residual stream)
    real *rstd1;    // (N) 1/rms of x
    real *xn1;      // (N, C) attention-norm output
    real *q;        // (N, H·hd) after RoPE
    real *k, *v;    // (N, Hkv·hd) k after RoPE
    real *att;      // (N, H·hd) attention output
    real *lse;      // (N, H) fp32 log-sum-exp of each row
    real *xm;       // (N, C) residual after attention
    real *rstd2;    // (N)
    real *xn2;      // (N, C) mlp-norm output
    real *gate, *up;// (N, F)
} LayerActs;

typedef struct {
    LayerActs *layers;  // n_layer
    real *x_final;      // (N, C) last residual
    real *rstd_f;       // (N)
    real *xn_f;         // (N, C) final-norm output, input to the LM head
    real *dx_f;         // (N, C) gradient of the loss w.r.t. xn_f (filled by the forward's fused head)
    // scratch shared by all layers
    real *res;          // (N, C) residual gradient during the backward
    real *d_c;          // (N, C)
    real *d_q;          // (N, H·hd)
    real *d_k, *d_v;    // (N, Hkv·hd)
    real *h;            // (N, F) swiglu output / its gradient
    real *d_gate, *d_up;// (N, F)
    real *attn_tmp;     // (N, H) attention scratch (running sum, D)
    int B, T;           // the shape these buffers were sized for
} Activations;

typedef struct {
    ModelConfig cfg;
    const Backend *be;
    ParamTable table;
    real *params;        // (table.total) every weight, in table order
    real *grads;         // (table.total) their gradients, same layout
    ModelTensors w, g;   // named views of params and grads
    Activations act;
    struct AttnRing *ring;  // NULL: the whole sequence is on this rank
    int loss_chunk;      // rows per chunk of the fused LM head + loss
    bool doc_mask;       // attention stays inside each document of a packed window (--doc-mask; Batch doc_start)
    int32_t *doc_ids, *doc_ids_host;   // (B, T·sp) each sample's document ids in zigzag rank order (backend, host)
    size_t doc_ids_cap;  // elements the two buffers hold
} GPT;

// Builds the table, allocates parameters and gradients on the backend, initialises from seed.
void gpt_init(GPT *m, const ModelConfig *c, const Backend *be, uint64_t seed);
void gpt_free(GPT *m);
void gpt_zero_grad(GPT *m);
// Forward over the batch. Returns the sum of per-token losses over rows with a target.
// With want_grad, the fused head also leaves d(loss_sum·grad_scale)/d(xn_f) for gpt_backward
// and accumulates the LM-head gradient. losses (B·T), optional, receives each row's loss.
double gpt_forward(GPT *m, const Batch *b, double grad_scale, bool want_grad, real *losses);
// Backward of the last gpt_forward(want_grad) on the same batch: accumulates into m->grads.
void gpt_backward(GPT *m, const Batch *b);
// Logits of every row (B·T, V) into out (host memory), for evaluation and export checks.
void gpt_logits(GPT *m, const Batch *b, float *out);
