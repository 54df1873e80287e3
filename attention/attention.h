// attention/attention.h — blockwise causal attention with an fp32 log-sum-exp state: the block API the ring drives.
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "core/backend.h"

// The block contract (AttnShape, AttnMask, AttnDocs, AttnState and the table's entries) is part of the
// backend table, core/backend.h. `docs` is always optional: NULL means no document mask.

// The block kernels (one per backend, reached through the backend table; the CPU ones here):
// attn_state_reset: acc = 0, m = -inf, l = 0 for nq rows.
void attn_cpu_state_reset(const AttnShape *s, AttnState st, int nq);
// attn_forward_block: folds one KV block into the state of one Q block (online softmax). Never
// materialises more than a (tile × tile) piece of the scores. Scale is 1/sqrt(hd).
void attn_cpu_forward_block(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                            int nk, AttnMask mask, const AttnDocs *docs);
// attn_finalize: out = acc / l, lse = m + log(l); rows that saw no key get out = 0 and lse = -inf.
// out may alias st.acc.
void attn_cpu_finalize(const AttnShape *s, AttnState st, real *out, real *lse, int nq);
// attn_backward_prep: D = rowsum(dout ∘ out) per (row, head): (nq, H), once before the blocks.
void attn_cpu_backward_prep(const AttnShape *s, real *D, const real *dout, const real *out, int nq);
// attn_backward_block: one Q block × KV block of the backward from the global out, lse and D (all three of
// these rows after the last block): dq += dS K·scale (nq, H, hd), dk += dSᵀ Q·scale, dv += Pᵀ dout (nk, Hkv, hd).
// Rows with lse = -inf add nothing. The hand-written kernels use D; cuDNN's computes D from out and dout itself.
void attn_cpu_backward_block(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                             const real *v, const real *out, const real *dout, const real *lse, const real *D, int nq,
                             int nk, AttnMask mask, const AttnDocs *docs);
// (TILE × TILE) pieces the CPU kernels skipped because no Q row's document appears among the K rows,
// since the process started (all threads).
long attn_cpu_doc_tiles_skipped(void);
enum { ATTN_CPU_TILE = 128 };

// Whole-sequence causal attention on one rank (no ring), through the backend table:
// out (T, H, hd), lse (T, H); scratch_l: (T, H) reals. doc (T): the document id of every token
// (backend memory), NULL = plain causal attention.
void attention_causal_forward(const Backend *be, const AttnShape *s, real *out, real *lse, real *scratch_l,
                              const real *q, const real *k, const real *v, int T, const int32_t *doc);
// dq (T, H, hd), dk, dv (T, Hkv, hd) are overwritten. scratch_D: (T, H) reals.
void attention_causal_backward(const Backend *be, const AttnShape *s, real *dq, real *dk, real *dv,
                               real *scratch_D, const real *q, const real *k, const real *v, const real *out,
                               const real *lse, const real *dout, int T, const int32_t *doc);
