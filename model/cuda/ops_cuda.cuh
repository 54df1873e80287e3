// model/cuda/ops_cuda.cuh — what the CUDA backend's sources share: its state, scratch, device token ids, the bf16 parameter shadow, storage-typed loads and stores, reductions.
// The backend is split by op family (model/cuda/*.cu, built into the model layer: cmake/cuda.cmake);
// model/cuda/backend.cu holds the state, memory and the table, the others one family of ops each.
#pragma once
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <stdint.h>

#include "core/cuda_check.h"

RINGGPT_EXTERN_C_BEGIN
#include "core/backend_cuda.h"
#include "model/ops.h"
RINGGPT_EXTERN_C_END

#ifdef RINGGPT_F64
#error "the CUDA backend is built for real = float only"
#endif

// ---- state (model/cuda/backend.cu) ----
enum { WORKSPACE_BYTES = 32 << 20 };   // cuBLASLt workspace (llm.c uses the same)

typedef struct {
    int rank;
    bool ready;
    cudaStream_t stream;
    cublasLtHandle_t lt;
    void *workspace;
    cublasComputeType_t compute;
    bool bf16_operands;   // true: A, B are CUDA_R_16BF (--matmul bf16); false: fp32 operands (tf32, fp32)
    const char *compute_name;
    cudaDeviceProp prop;
} CudaBackend;
extern CudaBackend CB;

void cb_ensure_init(void);
// The table's memory entries: core's counted device memory plus the shadow's bookkeeping.
void *cb_alloc(size_t bytes, const char *what);
void cb_release(void *p);
void cb_zero(void *p, size_t bytes);
void cb_copy(void *dst, const void *src, size_t bytes);
void cb_to_device(void *dst, const void *host, size_t bytes);
void cb_to_host(void *host, const void *src, size_t bytes);
bool cb_is_device_pointer(const void *p);

// Grow-only scratch buffers owned by the backend, one per purpose.
// SCR_BF16_A/B: bf16 copies of a matmul's fp32 operands (activations and gradients; weights use the shadow).
enum { SCR_PARTIAL, SCR_LOGITS, SCR_ROWLOSS, SCR_EMB_ORDER, SCR_EMB_STARTS, SCR_EMB_TOKENS, SCR_BF16_A, SCR_BF16_B,
       SCR_ADAMW_SPANS, SCR_ROPE_FREQ, SCR_COUNT };
void *cb_scratch(int slot, size_t bytes);
// A device copy of n token ids, targets or positions (host pointers are copied, device ones returned as they are).
const int32_t *cb_dev_ints(const int32_t *p, size_t n);
// Blocks of `threads` for a grid-stride loop over n items.
int cb_blocks(size_t n, int threads);

// ---- the bf16 parameter shadow (model/cuda/backend.cu says why it is never stale) ----
void cb_params_written(const void *dst, size_t bytes);
bool cb_in_params(const void *p);
// The bf16 copy of a matmul operand of n floats at p: the shadow inside the parameters, else a conversion into
// the scratch `slot`.
const __nv_bfloat16 *cb_bf16_operand(const float *p, size_t n, int slot);
// The bf16 copy of the n parameters from w when the shadow is fresh (AdamW keeps it so), NULL otherwise.
__nv_bfloat16 *cb_fresh_shadow(const float *w, size_t n);
void cb_to_bf16(__nv_bfloat16 *dst, const float *src, size_t n);

// ---- GEMM (model/cuda/matmul.cu) ----
// Row-major C (M, N) = op(A)·op(B) + beta·C with cblas-style arguments (A is (M, K) unless ta); every operand in
// its storage (A, B: bf16 are read as they are, fp32 ones converted in bf16 mode; C bf16 only with beta = 0).
void cb_gemm(bool ta, bool tb, int M, int N, int K, const void *A, int lda, ActStore as, const void *B, int ldb,
             ActStore bs, float beta, void *C, int ldc, ActStore cs);

// ---- the ops of the table, by family ----
void cuda_embedding_forward(real *out, const int32_t *tokens, const real *table, int N, int C);
void cuda_embedding_backward(real *dtable, const real *dout, const int32_t *tokens, int N, int C);
void cuda_rmsnorm_forward(real *y, real *rstd, real *x, const real *add, const real *w, int N, int C, float eps,
                          ActStore ys);
void cuda_rmsnorm_backward(real *dx, real *dw, const real *dy, const real *x, const real *w, const real *rstd, int N,
                           int C);
void cuda_matmul_forward(real *out, const real *in, const real *w, int N, int In, int Out, ActStore outs, ActStore ins);
void cuda_matmul_backward(real *din, real *dw, const real *dout, const real *in, const real *w, int N, int In, int Out,
                          int accumulate_din, ActStore dins, ActStore douts, ActStore ins);
void cuda_rope(real *q, real *k, const int32_t *pos, int N, int Hq, int Hk, int hd, const double *inv_freq, double scale,
               int inverse, ActStore s);
void cuda_swiglu_forward(real *h, const real *gate, const real *up, int N, int F, ActStore s);
void cuda_swiglu_backward(real *dgate, real *dup, const real *dh, const real *gate, const real *up, int N, int F,
                          ActStore s);
void cuda_add_inplace(real *y, const real *x, size_t n);
void cuda_scale(real *x, float a, size_t n);
double cuda_lmhead_ce(real *dx, real *dw, real *losses, const real *x, const real *w, const int32_t *targets, int N,
                      int C, int V, int chunk, double grad_scale, ActStore xs);
double cuda_sumsq(const real *x, size_t n);
void cuda_adamw(real *w, const real *g, real *m, real *v, const AdamwSpan *spans, int n_spans, float lr, float beta1,
                float beta2, float eps, float wd, int step);

// ---- device helpers ----
// Element loads and stores in a tensor's storage, math in fp32.
static __device__ __forceinline__ float ldf(const float *p) { return *p; }
static __device__ __forceinline__ float ldf(const __nv_bfloat16 *p) { return __bfloat162float(*p); }
static __device__ __forceinline__ void stf(float *p, float v) { *p = v; }
static __device__ __forceinline__ void stf(__nv_bfloat16 *p, float v) { *p = __float2bfloat16_rn(v); }

// V consecutive elements (16 bytes when V = 16 / sizeof(T): one vector access; p then 16-byte aligned) into d.
template <int V>
static __device__ __forceinline__ void ldv(float (&d)[V], const float *p) {
    if constexpr (V == 4) {
        float4 x = *reinterpret_cast<const float4 *>(p);
        d[0] = x.x, d[1] = x.y, d[2] = x.z, d[3] = x.w;
    } else {
#pragma unroll
        for (int i = 0; i < V; i++) d[i] = p[i];
    }
}
template <int V>
static __device__ __forceinline__ void ldv(float (&d)[V], const __nv_bfloat16 *p) {
    if constexpr (V == 8) {
        uint4 x = *reinterpret_cast<const uint4 *>(p);
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&x);
#pragma unroll
        for (int i = 0; i < 4; i++) {
            float2 f = __bfloat1622float2(h[i]);
            d[2 * i] = f.x, d[2 * i + 1] = f.y;
        }
    } else {
#pragma unroll
        for (int i = 0; i < V; i++) d[i] = __bfloat162float(p[i]);
    }
}
template <int V>
static __device__ __forceinline__ void stv(float *p, const float (&d)[V]) {
    if constexpr (V == 4) {
        *reinterpret_cast<float4 *>(p) = make_float4(d[0], d[1], d[2], d[3]);
    } else {
#pragma unroll
        for (int i = 0; i < V; i++) p[i] = d[i];
    }
}
template <int V>
static __device__ __forceinline__ void stv(__nv_bfloat16 *p, const float (&d)[V]) {
    if constexpr (V == 8) {
        uint4 x;
        __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&x);
#pragma unroll
        for (int i = 0; i < 4; i++) h[i] = __floats2bfloat162_rn(d[2 * i], d[2 * i + 1]);
        *reinterpret_cast<uint4 *>(p) = x;
    } else {
#pragma unroll
        for (int i = 0; i < V; i++) p[i] = __float2bfloat16_rn(d[i]);
    }
}

// Reductions in a fixed tree (deterministic: reruns are bit-equal).
template <typename T>
static __device__ __forceinline__ T warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
static __device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Every thread of the block gets the sum. sh: 32 elements of shared memory.
template <typename T>
static __device__ __forceinline__ T block_sum(T v, T *sh) {
    v = warp_sum(v);
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : (T)0;
    return warp_sum(v);
}
static __device__ __forceinline__ float block_max(float v, float *sh) {
    v = warp_max(v);
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : -INFINITY;
    return warp_max(v);
}

// ---- host helpers ----
// Calls f(T()) with T the element type of storage s (float or __nv_bfloat16): one launch site for both.
template <typename F>
static inline void by_store(ActStore s, F f) {
    if (s == ACT_BF16) f(__nv_bfloat16());
    else f(0.0f);
}
static inline bool aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }
