// core/backend.h — the backend table: memory and every op the model and the attention drivers call (CPU, CUDA).
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/real.h"

// ---- storage of activations (train --activations) ----
// The CPU stores everything as `real` (fp32; the reference). The CUDA backend may store the tensors a
// call marks [act] in bf16 (2 bytes per element at the same element index): the normalised matmul inputs,
// q, k, v, gate, up, the SwiGLU output and its gradients, and with them the ring's K/V packets. The
// residual stream, attention's output O (the running softmax accumulator), the other gradients, the
// statistics (rstd, LSE, D), the logits and the loss stay fp32 whatever the storage.
typedef enum {
    ACT_F32 = 0,    // real (fp32; fp64 in the gradient-check build)
    ACT_BF16 = 1,   // bf16 (CUDA only)
} ActStore;

// Bytes of one element stored as s.
static inline size_t act_elem_bytes(ActStore s) { return s == ACT_BF16 ? 2 : sizeof(real); }
// Element i of a tensor stored as s: offsets into [act] tensors go through here, never `p + i`.
static inline real *act_at(const real *p, ActStore s, size_t i) {
    return (real *)((const char *)p + i * act_elem_bytes(s));
}

// ---- the attention block contract (attention/attention.h documents the kernels) ----
// Layout: token-major. A Q block of nq tokens is q (nq, H, hd) with row stride H*hd; a KV block of
// nk tokens is k, v (nk, Hkv, hd) with row stride Hkv*hd. Query head h reads kv head h / (H/Hkv)
// (GQA: KV is never repeated). Per-row statistics are (nq, H).
typedef struct {
    int n_head;      // H
    int n_kv_head;   // Hkv, divides H
    int head_dim;    // hd
    ActStore qkv;    // storage of q, k, v in the block calls (out, dout, dq, dk, dv, the state: always fp32)
} AttnShape;

typedef enum {
    ATTN_FULL,     // every q row sees every k row (a KV block entirely in the past)
    ATTN_CAUSAL,   // q and k blocks start at the same position: q row i sees k rows j <= i (nq == nk)
} AttnMask;

// Document masking (--doc-mask): the document id of every Q row (nq) and every K row (nk) of a
// block call, in the backend's memory. Row i sees key j only when q[i] == k[j] (and the AttnMask
// allows it). The block calls take a pointer to one, NULL for no document mask. Kernels skip
// (tile × tile) pieces whose Q and K ids cannot match (the ids are ranges: min/max per tile).
typedef struct {
    const int32_t *q;   // (nq)
    const int32_t *k;   // (nk)
} AttnDocs;

// The running softmax state of one Q block, fp32 in the product build, normalised once at the end.
typedef struct {
    real *acc;   // (nq, H, hd) sum_j exp(s_ij - m_i) v_j, unnormalised
    real *m;     // (nq, H) running row max of the scaled scores, -inf before any key
    real *l;     // (nq, H) running sum of exp(s_ij - m_i)
} AttnState;

// One tensor of an AdamW update: elements [offset, offset + n) of the parameter buffer.
typedef struct {
    size_t offset, n;
    int decay;   // AdamW weight decay applies (2-D weights)
} AdamwSpan;

// The orchestration (model/gpt.c) and the attention drivers call ops only through this table, so
// a second backend plugs in without touching them. Shapes: N rows (tokens), C model width,
// F ffn width, V vocab. Param-gradient outputs (dw...) accumulate (+=) — callers zero once per
// step — and input-gradient outputs overwrite unless the name says accumulate.
typedef struct Backend {
    const char *name;
    bool device;   // buffers in an accelerator's memory: they travel through a device communicator (comm_cuda_wrap)
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
    // y [act ys] = x / rms(x) * w; rstd (N) kept for the backward. x, y (N, C), w (C). With add != NULL the
    // residual add comes first, in the same pass: x += add (N, C), then the norm of the new x.
    void (*rmsnorm_forward)(real *y, real *rstd, real *x, const real *add, const real *w, int N, int C, float eps,
                            ActStore ys);
    // dx += ..., dw += ... from dy (N, C)
    void (*rmsnorm_backward)(real *dx, real *dw, const real *dy, const real *x, const real *w, const real *rstd, int N,
                             int C);
    // out [act outs] (N, Out) = in [act ins] (N, In) @ w (Out, In)ᵀ
    void (*matmul_forward)(real *out, const real *in, const real *w, int N, int In, int Out, ActStore outs,
                           ActStore ins);
    // din [act dins] (N, In) = (or += when accumulate) dout [act douts] @ w; dw (Out, In) += doutᵀ @ in [act ins]
    void (*matmul_backward)(real *din, real *dw, const real *dout, const real *in, const real *w, int N, int In, int Out,
                            int accumulate_din, ActStore dins, ActStore douts, ActStore ins);
    // Rotates q (N, Hq, hd) and k (N, Hk, hd) [act s] in place by the angles of the global positions pos (N),
    // in one pass (the angles are shared): pair (2i, 2i+1) of position p by p·inv_freq[i] (inv_freq (hd/2), host
    // memory: model/rope.h rope_frequencies), cos and sin times scale (YaRN's attention factor, else 1);
    // inverse = true applies the transpose (backward).
    void (*rope)(real *q, real *k, const int32_t *pos, int N, int Hq, int Hk, int hd, const double *inv_freq,
                 double scale, int inverse, ActStore s);
    // h (N, F) = silu(gate) * up, all three [act s]
    void (*swiglu_forward)(real *h, const real *gate, const real *up, int N, int F, ActStore s);
    // dgate, dup (N, F) from dh, all five [act s]; dgate, dup may be gate and up themselves (in place: recompute's
    // arena does so)
    void (*swiglu_backward)(real *dgate, real *dup, const real *dh, const real *gate, const real *up, int N, int F,
                            ActStore s);
    // y (n) += x (n)
    void (*add_inplace)(real *y, const real *x, size_t n);
    // Fused LM head + cross-entropy over N rows in chunks of `chunk` rows (the (N, V) logits never
    // exist). x [act xs] (N, C), w (V, C), targets (N) with -1 = skip. Returns the sum of losses over rows
    // with a target. When dx != NULL: dx (N, C) = d(loss_sum * grad_scale)/dx and dw (V, C) += likewise.
    // losses (N) gets each row's loss (0 for skipped rows) when not NULL.
    double (*lmhead_ce)(real *dx, real *dw, real *losses, const real *x, const real *w, const int32_t *targets, int N,
                        int C, int V, int chunk, double grad_scale, ActStore xs);

    // attention block API (attention/attention.h); docs: the rows' document ids, NULL for none; q, k, v are stored
    // as s->qkv says
    void (*attn_state_reset)(const AttnShape *s, AttnState st, int nq);
    void (*attn_forward_block)(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                               int nk, AttnMask mask, const AttnDocs *docs);
    void (*attn_finalize)(const AttnShape *s, AttnState st, real *out, real *lse, int nq);
    void (*attn_backward_prep)(const AttnShape *s, real *D, const real *dout, const real *out, int nq);
    void (*attn_backward_block)(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                                const real *v, const real *out, const real *dout, const real *lse, const real *D,
                                int nq, int nk, AttnMask mask, const AttnDocs *docs);

    // sum of squares of x (n), in double
    double (*sumsq)(const real *x, size_t n);
    // x (n) *= a
    void (*scale)(real *x, float a, size_t n);
    // One AdamW step over every span (one launch on a GPU): w, g, m, v are the parameters, their gradients and
    // moments, spans their tensors (offsets into all four); weight decay wd applies to the spans with decay.
    void (*adamw)(real *w, const real *g, real *m, real *v, const AdamwSpan *spans, int n_spans, float lr, float beta1,
                  float beta2, float eps, float wd, int step);

    // Device memory figures in bytes for the memory plan (NULL on the CPU, whose figures are the
    // process's RSS and /proc/meminfo): the allocator's high-water mark, and what is free now.
    size_t (*mem_peak)(void);
    size_t (*mem_free)(void);
} Backend;

