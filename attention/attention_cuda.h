// attention/attention_cuda.h — every CUDA attention prototype: the block API behind the backend table, its implementations (--attn), cuDNN's graphs.
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "attention/attention.h"
#include "attention/sdpa_plan.h"

// ---- the block API on the GPU (attention/attention_cuda.cu) ----
// The same contract as the CPU kernels in attention/attention.h; every pointer is device memory, q, k, v are
// stored as s->qkv says (fp32 or bf16), and docs (optional, NULL = none) holds device pointers.
// model/cuda/backend.cu puts them in BACKEND_CUDA. Within one pass — from attn_cuda_state_reset (forward) or
// attn_cuda_backward_prep (backward) to the pass's last block call — the q, out and dout rows passed must not
// change (the cuDNN path converts them to bf16 once per pass).
void attn_cuda_state_reset(const AttnShape *s, AttnState st, int nq);
void attn_cuda_forward_block(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                             int nk, AttnMask mask, const AttnDocs *docs);
void attn_cuda_finalize(const AttnShape *s, AttnState st, real *out, real *lse, int nq);
void attn_cuda_backward_prep(const AttnShape *s, real *D, const real *dout, const real *out, int nq);
void attn_cuda_backward_block(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                              const real *v, const real *out, const real *dout, const real *lse, const real *D, int nq,
                              int nk, AttnMask mask, const AttnDocs *docs);
// Which kernels the block calls run (--attn): "flash" (the sm_80 mma.sync kernels; the default where cuDNN does
// not load), "cudnn" (cuDNN's fused attention per block, attention/attention_cudnn.cu: hd 64 and 128 without
// document ids; cuDNN is loaded here and a build or a machine without it is an error) or, in a
// -DRINGGPT_SM90_KERNELS=ON build only, "sm90" (the Hopper kernels: hd 64 and 128 on a compute capability 9.0
// device without document ids). Calls the chosen path cannot run use the flash kernels. Anything else, and
// "sm90" in a build without them, is a usage error (exit 2).
void attn_cuda_set_impl(const char *name);
// "flash", "cudnn" or "sm90": what attn_cuda_set_impl chose.
const char *attn_cuda_impl(void);
// true when this build has the cuDNN path and libcudnn loads here (train's default --attn on a GPU).
bool attn_cuda_cudnn_available(void);

#ifdef RINGGPT_HAVE_SM90
// ---- the Hopper kernels (attention/attention_sm90.cu, sm_90a only; built with -DRINGGPT_SM90_KERNELS=ON) ----
// True on a compute capability 9.0 device (sm_90a code runs nowhere else).
bool attn_sm90_device(void);
// As attn_cuda_forward_block / attn_cuda_backward_block, with hd 64 or 128, nq, nk > 0, causal = (mask ==
// ATTN_CAUSAL) and no document ids.
void attn_sm90_forward_block(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                             int nk, int causal);
void attn_sm90_backward_block(const AttnShape *s, float *dq, float *dk, float *dv, const real *q, const real *k,
                              const real *v, const float *dout, const float *lse, const float *D, int nq, int nk,
                              int causal);
#endif

// ---- cuDNN's fused attention per block (attention/attention_cudnn.cu; built with RINGGPT_HAVE_CUDNN) ----
// As attn_cuda_forward_block / attn_cuda_backward_block for the calls sdpa_unsupported() accepts: the block's O
// and LSE from cuDNN, merged into the fp32 state by our kernel (never inf − inf); the backward from the global
// out, LSE and dout, its bf16 dq, dk, dv added into the fp32 accumulators. false when cuDNN cannot build this
// shape's graph (said once per shape on stderr): the caller runs the flash kernels.
bool attn_cudnn_forward_block(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                              int nk, AttnMask mask);
bool attn_cudnn_backward_block(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                               const real *v, const real *out, const real *dout, const real *lse, int nq, int nk,
                               AttnMask mask);
// Marks the start of a forward or backward pass: the rows converted to bf16 in the last pass are stale.
void attn_cudnn_new_pass(void);

// ---- cuDNN's graphs (attention/cudnn_sdpa.cpp: the one C++ translation unit, the cuDNN frontend behind C) ----
// Loads libcudnn.so.9 (the loader's path, then the toolkit's lib directory found at configure time) and
// creates the handle on the backend's stream. Fails with one line (exit 1) when cuDNN cannot be loaded.
// Idempotent.
void cudnn_sdpa_load(void);
// The loaded library's version (cudnnGetVersion, e.g. 91900), or 0 when it cannot be loaded (no failure:
// for messages and tests).
size_t cudnn_sdpa_version(void);
// Runs plan p's graph (built on first use and cached by plan): forward q, k, v (bf16, token-major) -> o (bf16,
// token-major) and stats (fp32, p->stats layout); backward q, k, v, o, dout (bf16), stats -> dq, dk, dv (bf16,
// token-major). false when cuDNN cannot build the graph (the reason is said once per plan).
bool cudnn_sdpa_forward(const SdpaPlan *p, const void *q, const void *k, const void *v, void *o, float *stats);
bool cudnn_sdpa_backward(const SdpaPlan *p, const void *q, const void *k, const void *v, const void *o,
                         const void *dout, const float *stats, void *dq, void *dk, void *dv);
// Graphs built and cache hits so far (tests, benchmarks).
SdpaCacheStats cudnn_sdpa_cache_stats(void);
