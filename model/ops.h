// model/ops.h — the backend tables: BACKEND_CPU (model/ops_cpu.c, with attention/attention_cpu.c) and BACKEND_CUDA (model/cuda/*.cu).
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "core/backend.h"

// The reference: fp32 everywhere (fp64 in the gradient-check build), C + OpenMP + BLAS.
extern const Backend BACKEND_CPU;

// ---- the CUDA backend (built when the toolkit is found: RINGGPT_HAVE_CUDA) ----
// It keeps the table's contract exactly (model/gpt.c runs unchanged), with this storage convention: every
// buffer the table sees is fp32 in device memory (parameters are therefore the fp32 master weights, and the
// AdamW moments are fp32), except the [act] tensors of a call that names ACT_BF16 (train --activations bf16;
// core/backend.h), which are bf16. The math is mixed precision inside the ops: matmuls run on tensor cores with
// fp32 accumulation — TF32 with fp32 operands by default (--matmul tf32), or bf16 operands (--matmul bf16:
// cuBLASLt bf16 A/B, fp32 or bf16 C/D, COMPUTE_32F; weights come from a bf16 shadow of the parameter buffer
// that AdamW refreshes in its own kernel, fp32 activations are converted per matmul, bf16 ones read as they
// are); attention (--attn) rounds Q, K, V to bf16 and keeps an fp32 softmax state; norms, softmax statistics,
// losses and reductions are fp32 or fp64.
// Token ids, targets and positions may be host pointers (model/gpt.c passes the Batch's): the ops copy them to
// the device themselves. The device, its stream and memory are core/backend_cuda.h's.
extern const Backend BACKEND_CUDA;
// cuda_device_init, then the cuBLASLt handle and workspace. Idempotent. world_rank is used in messages.
void cuda_backend_init(int local_rank, int world_rank);
// "NVIDIA H200 (GPU 0, 139.8 GiB, sm_90, 132 SMs), driver 13.0, runtime 13.0, matmul tf32 (fp32 operands),
// attention flash" — for logs and reports.
void cuda_device_describe(char *buf, size_t n);
// Matmul precision (--matmul): "tf32" (NULL: this call's default; train asks for bf16 with bf16 activations),
// "bf16" or "fp32" (tests compare fp32 paths at 1e-5). May be called before or after cuda_backend_init.
void cuda_backend_set_matmul(const char *mode);
// The fused LM head's logits budget in MiB (--logits-mb; default 512): the rows of a chunk are raised to fill
// it, which keeps the GPU's matmuls large. 0 keeps the chunk the caller asked for (tests).
void cuda_backend_set_logits_mb(long mb);
// Names the fp32 parameter buffer (bytes) whose bf16 shadow the bf16 matmuls read for weights inside it
// (model/cuda/backend.cu says why the shadow cannot be stale). cb_alloc calls it for the allocation named
// "parameters" (model/gpt.c's); one buffer at a time, a new one replaces the old.
void cuda_backend_register_params(void *p, size_t bytes);
// How many times the shadow was converted in full so far (tests).
unsigned long cuda_backend_shadow_refreshes(void);
// Dense bf16 peak of this GPU in TFLOP/s for MFU, from a table of known GPUs (H100/H200 SXM 989, H100 PCIe
// 756, H100 NVL 835, A100 312); 0 when unknown (MFU is then not reported unless train --peak-tflops says).
double cuda_device_peak_tflops(void);
