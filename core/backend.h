// core/backend.h — the backend table: memory and every op the model orchestration calls (CPU now, CUDA next).
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "attention/attention.h"
#include "core/real.h"

// The orchestration (model/gpt.c) and the attention drivers call ops only through this table, so
// a second backend plugs in without touching them. Shapes: N rows (tokens), C model width,
// F ffn width, V vocab. Param-gradient outputs (dw...) accumulate (+=) — callers zero once per
// step — and input-gradient outputs overwrite unless the name says accumulate.
typedef struct Backend {
    const char *name;
    // memory (device memory for an accelerator; plain heap for the CPU)
    void *(*alloc)(size_t bytes, const char *what);
    void (*release)(void *p);
    void (*zero)(void *p, size_t bytes);
    void (*copy)(void *dst, const void *src, size_t bytes);          // device to device
    void (*to_device)(void *dst, const void *host, size_t bytes);
    void (*to_host)(void *host, const void *src, size_t bytes);

    // out (N, C) = table[tokens] (V, C)
    void (*embedding_forward)(real *out, const int32_t *tokens, const real *table, int N, int C);
    // dtable += scatter of dout (N, C) to the rows named by tokens
    void (*embedding_backward)(real *dtable, const real *dout, const int32_t *tokens, int N, int C);
    // y = x / rms(x) * w; rstd (N) kept for the backward. x, y (N, C), w (C)
    void (*rmsnorm_forward)(real *y, real *rstd, const real *x, const real *w, int N, int C, float eps);
    // dx += ..., dw += ... from dy (N, C)
    void (*rmsnorm_backward)(real *dx, real *dw, const real *dy, const real *x, const real *w, const real *rstd, int N,
                             int C);
    // out (N, Out) = in (N, In) @ w (Out, In)ᵀ
    void (*matmul_forward)(real *out, const real *in, const real *w, int N, int In, int Out);
    // din (N, In) = (or += when accumulate) dout @ w; dw (Out, In) += doutᵀ @ in
    void (*matmul_backward)(real *din, real *dw, const real *dout, const real *in, const real *w, int N, int In, int Out,
                            int accumulate_din);
    // Rotates x (N, nh, hd) in place by the angles of the global positions pos (N).
    // Pairs are (2i, 2i+1) with frequency theta^(-2i/hd); inverse = true applies the transpose (backward).
    void (*rope)(real *x, const int32_t *pos, int N, int nh, int hd, float theta, int inverse);
    // h (N, F) = silu(gate) * up
    void (*swiglu_forward)(real *h, const real *gate, const real *up, int N, int F);
    // dgate, dup (N, F) from dh
    void (*swiglu_backward)(real *dgate, real *dup, const real *dh, const real *gate, const real *up, int N, int F);
    // y (n) += x (n)
    void (*add_inplace)(real *y, const real *x, size_t n);
    // Fused LM head + cross-entropy over N rows in chunks of `chunk` rows (the (N, V) logits never
    // exist). x (N, C), w (V, C), targets (N) with -1 = skip. Returns the sum of losses over rows
    // with a target. When dx != NULL: dx (N, C) = d(loss_sum * grad_scale)/dx and dw (V, C) += likewise.
    // losses (N) gets each row's loss (0 for skipped rows) when not NULL.
    double (*lmhead_ce)(real *dx, real *dw, real *losses, const real *x, const real *w, const int32_t *targets, int N,
                        int C, int V, int chunk, double grad_scale);

    // attention block API (attention/attention.h)
    void (*attn_state_reset)(const AttnShape *s, AttnState st, int nq);
    void (*attn_forward_block)(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                               int nk, AttnMask mask);
    void (*attn_finalize)(const AttnShape *s, AttnState st, real *out, real *lse, int nq);
    void (*attn_backward_prep)(const AttnShape *s, real *D, const real *dout, const real *out, int nq);
    void (*attn_backward_block)(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                                const real *v, const real *dout, const real *lse, const real *D, int nq, int nk,
                                AttnMask mask);
    // The same two with document ids of the Q and K rows (attention.h, AttnDocs; docs.q NULL = the calls above).
    void (*attn_forward_block_docs)(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                                    int nk, AttnMask mask, AttnDocs docs);
    void (*attn_backward_block_docs)(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                                     const real *v, const real *dout, const real *lse, const real *D, int nq, int nk,
                                     AttnMask mask, AttnDocs docs);

    // sum of squares of x (n), in double
    double (*sumsq)(const real *x, size_t n);
    // x (n) *= a
    void (*scale)(real *x, float a, size_t n);
    // One AdamW step over n elements: m, v moments; weight decay wd applied where decay != 0.
    void (*adamw)(real *w, const real *g, real *m, real *v, size_t n, float lr, float beta1, float beta2, float eps,
                  float wd, int step, int decay);
} Backend;

extern const Backend BACKEND_CPU;
