// attention/attention_sm90.h — the Hopper (sm_90a) attention kernels behind the CUDA block API, chosen with --attn sm90.
#pragma once
#include <stdbool.h>

#include "attention/attention.h"

// True when --attn sm90 was chosen (attn_cuda_set_impl, attention/attention_cuda.h), the device is compute
// capability 9.0 and head_dim is 64 or 128; then attention/attention_cuda.cu's block entry points run the
// kernels below (the same contract as attention.h: fp32 q, k, v, dout and state; converted to bf16 inside).
// Otherwise the sm_80 mma.sync kernels run (the default, and the reference).
bool attn_sm90_selected(int head_dim);
// As attn_cuda_forward_block / attn_cuda_backward_block, with nq, nk > 0 and causal = (mask == ATTN_CAUSAL).
void attn_sm90_forward_block(const AttnShape *s, AttnState st, const float *q, int nq, const float *k, const float *v,
                             int nk, int causal);
void attn_sm90_backward_block(const AttnShape *s, float *dq, float *dk, float *dv, const float *q, const float *k,
                              const float *v, const float *dout, const float *lse, const float *D, int nq, int nk,
                              int causal);
