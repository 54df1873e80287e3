// attention/attention_cuda.h — the CUDA block kernels behind the backend table (attention/attention_cuda.cu), one prototype each.
#pragma once
#include "attention/attention.h"

// The same contract as the CPU kernels in attention/attention.h; every pointer is device memory and
// docs (optional, NULL = none) holds device pointers. model/ops_cuda.cu puts them in BACKEND_CUDA.
void attn_cuda_state_reset(const AttnShape *s, AttnState st, int nq);
void attn_cuda_forward_block(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                             int nk, AttnMask mask, const AttnDocs *docs);
void attn_cuda_finalize(const AttnShape *s, AttnState st, real *out, real *lse, int nq);
void attn_cuda_backward_prep(const AttnShape *s, real *D, const real *dout, const real *out, int nq);
void attn_cuda_backward_block(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                              const real *v, const real *dout, const real *lse, const real *D, int nq, int nk,
                              AttnMask mask, const AttnDocs *docs);
// Which kernels the block calls run (--attn): "flash" (the sm_80 mma.sync kernels: the default and the
// reference) or "sm90" (the Hopper kernels, attention/attention_sm90.cu: hd 64 and 128 on a compute
// capability 9.0 device without document ids; other calls keep flash). Anything else is a usage error.
void attn_cuda_set_impl(const char *name);
