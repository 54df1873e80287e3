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

// ---- one attention call, the same for one rank, the ring, Ulysses and the hybrid (attention/cp.h) ----

// One rank's tensors of one attention call: its L rows (the layout's), all heads.
typedef struct {
    int L;                   // rows of this rank; T = sp·L
    const real *q, *k, *v;   // q (L, H, hd), k, v (L, Hkv, hd) [act s->qkv]
    real *out, *lse;         // (L, H, hd), (L, H): written by the forward, read by the backward
    real *tmp;               // (L, H) scratch: the forward's running sum, the backward's D (one rank and the ring)
    const real *dout;        // backward: (L, H, hd)
    real *dq, *dk, *dv;      // backward outputs, overwritten: dq (L, H, hd), dk, dv (L, Hkv, hd)
} AttnRows;

// Where one sequence's T = sp·L tokens sit on the sp ranks, and their documents. The same on every rank: each computes
// it from its batch (data/placement.h), so no position or id travels.
typedef struct {
    // (sp, L) host: the global positions rank j holds, ascending, at pos + j·L (a permutation of 0..T−1).
    // NULL: the zigzag, rank j holding chunk j then chunk 2·sp−1−j of T/(2·sp) positions each. One rank: unread.
    const int32_t *pos;
    // Document masking, NULL = none: (sp, L) the document id of every row, in the order of pos, never falling with
    // position (ids of the document starts); docs in backend memory (for the kernels), docs_host the same in host memory
    // (for the lists of what is read and to skip whole blocks no Q row may see). One rank reads docs only.
    const int32_t *docs, *docs_host;
} AttnLayout;

// Whole-sequence causal attention on one rank (no ring), through the backend table: t->out, t->lse from t->q, k, v
// (T = t->L rows in position order). lay NULL or lay->docs NULL: plain causal attention.
void attention_causal_forward(const Backend *be, const AttnShape *s, const AttnRows *t, const AttnLayout *lay);
// The backward from t->q, k, v, out, lse, dout: t->dq, dk, dv overwritten.
void attention_causal_backward(const Backend *be, const AttnShape *s, const AttnRows *t, const AttnLayout *lay);
