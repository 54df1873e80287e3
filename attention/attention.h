// attention/attention.h — blockwise causal attention with an fp32 log-sum-exp state: the block API the ring drives.
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "core/real.h"

// Layout: token-major. A Q block of nq tokens is q (nq, H, hd) with row stride H*hd; a KV block of
// nk tokens is k, v (nk, Hkv, hd) with row stride Hkv*hd. Query head h reads kv head h / (H/Hkv)
// (GQA: KV is never repeated). Per-row statistics are (nq, H).
typedef struct {
    int n_head;      // H
    int n_kv_head;   // Hkv, divides H
    int head_dim;    // hd
} AttnShape;

typedef enum {
    ATTN_FULL,     // every q row sees every k row (a KV block entirely in the past)
    ATTN_CAUSAL,   // q and k blocks start at the same position: q row i sees k rows j <= i (nq == nk)
} AttnMask;

// Document masking (--doc-mask): the document id of every Q row (nq) and every K row (nk) of a
// block call, in the backend's memory. Row i sees key j only when q[i] == k[j] (and the AttnMask
// allows it). q == NULL: no document mask, exactly the plain kernels. Kernels skip (tile × tile)
// pieces whose Q and K ids cannot match (the ids are ranges: min/max per tile).
typedef struct {
    const int32_t *q;   // (nq) or NULL
    const int32_t *k;   // (nk)
} AttnDocs;

// The running softmax state of one Q block, fp32 in the product build, normalised once at the end.
typedef struct {
    real *acc;   // (nq, H, hd) sum_j exp(s_ij - m_i) v_j, unnormalised
    real *m;     // (nq, H) running row max of the scaled scores, -inf before any key
    real *l;     // (nq, H) running sum of exp(s_ij - m_i)
} AttnState;

struct Backend;

// The block kernels (one per backend, reached through the backend table; the CPU ones here):
// attn_state_reset: acc = 0, m = -inf, l = 0 for nq rows.
void attn_cpu_state_reset(const AttnShape *s, AttnState st, int nq);
// attn_forward_block: folds one KV block into the state of one Q block (online softmax). Never
// materialises more than a (tile × tile) piece of the scores. Scale is 1/sqrt(hd).
void attn_cpu_forward_block(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                            int nk, AttnMask mask);
// The same with document ids (AttnDocs; docs.q == NULL is the call above).
void attn_cpu_forward_block_docs(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                                 int nk, AttnMask mask, AttnDocs docs);
// attn_finalize: out = acc / l, lse = m + log(l); rows that saw no key get out = 0 and lse = -inf.
// out may alias st.acc.
void attn_cpu_finalize(const AttnShape *s, AttnState st, real *out, real *lse, int nq);
// attn_backward_prep: D = rowsum(dout ∘ out) per (row, head): (nq, H), once before the blocks.
void attn_cpu_backward_prep(const AttnShape *s, real *D, const real *dout, const real *out, int nq);
// attn_backward_block: one Q block × KV block of the backward from the global lse and D:
// dq += dS K·scale (nq, H, hd), dk += dSᵀ Q·scale, dv += Pᵀ dout (nk, Hkv, hd). Rows with lse = -inf add nothing.
void attn_cpu_backward_block(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                             const real *v, const real *dout, const real *lse, const real *D, int nq, int nk,
                             AttnMask mask);
void attn_cpu_backward_block_docs(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                                  const real *v, const real *dout, const real *lse, const real *D, int nq, int nk,
                                  AttnMask mask, AttnDocs docs);
// (TILE × TILE) pieces the CPU kernels skipped because no Q row's document appears among the K rows,
// since the process started (all threads).
long attn_cpu_doc_tiles_skipped(void);
enum { ATTN_CPU_TILE = 128 };

// Whole-sequence causal attention on one rank (no ring), through the backend table:
// out (T, H, hd), lse (T, H); scratch_l: (T, H) reals.
void attention_causal_forward(const struct Backend *be, const AttnShape *s, real *out, real *lse, real *scratch_l,
                              const real *q, const real *k, const real *v, int T);
// dq (T, H, hd), dk, dv (T, Hkv, hd) are overwritten. scratch_D: (T, H) reals.
void attention_causal_backward(const struct Backend *be, const AttnShape *s, real *dq, real *dk, real *dv,
                               real *scratch_D, const real *q, const real *k, const real *v, const real *out,
                               const real *lse, const real *dout, int T);
// The same restricted to documents: doc (T) is the document id of every token (backend memory), NULL =
// plain causal attention.
void attention_causal_forward_docs(const struct Backend *be, const AttnShape *s, real *out, real *lse, real *scratch_l,
                                   const real *q, const real *k, const real *v, int T, const int32_t *doc);
void attention_causal_backward_docs(const struct Backend *be, const AttnShape *s, real *dq, real *dk, real *dv,
                                    real *scratch_D, const real *q, const real *k, const real *v, const real *out,
                                    const real *lse, const real *dout, int T, const int32_t *doc);
