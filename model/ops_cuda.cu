// model/ops_cuda.cu — the CUDA backend table: every model op as kernels, matmuls through cuBLASLt, the bf16 parameter shadow.
// Storage is fp32 (see model/ops.h for why); matmuls read bf16 operands (a bf16 shadow of the
// parameters, activations converted per call) on tensor cores with fp32 accumulation.
// Reductions that decide the loss or the gradients use fixed-order trees, never atomics: reruns are bit-equal.
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_check.h"

RINGGPT_EXTERN_C_BEGIN
#include "attention/attention_cuda.h"
#include "core/backend_cuda.h"
#include "model/ops.h"
RINGGPT_EXTERN_C_END

#ifdef RINGGPT_F64
#error "the CUDA backend is built for real = float only"
#endif

// ---------------------------------------------------------------------------------------------
// cuBLASLt handle and matmul settings; the device, its stream and memory are core/cuda_device.c's.

enum { WORKSPACE_BYTES = 32 << 20 };   // cuBLASLt workspace (llm.c uses the same)

static struct {
    int rank;
    bool ready;
    cudaStream_t stream;
    cublasLtHandle_t lt;
    void *workspace;
    cublasComputeType_t compute;
    bool bf16_operands;   // true: A, B are CUDA_R_16BF copies (the default); false: fp32 operands (tf32/fp32)
    const char *compute_name;
    cudaDeviceProp prop;
} G;

void cuda_backend_set_matmul(const char *mode) {
    // bf16: bf16 A/B, fp32 C/D, COMPUTE_32F — true bf16 tensor-core GEMMs. (COMPUTE_32F_FAST_16BF with
    // fp32 operands, the old default, ran TF32 kernels on an H100: issue 9.) tf32 and fp32 keep fp32 operands.
    if (!mode || !*mode || !strcmp(mode, "bf16"))
        G.compute = CUBLAS_COMPUTE_32F, G.bf16_operands = true, G.compute_name = "bf16 (bf16 operands, fp32 accumulate)";
    else if (!strcmp(mode, "tf32"))
        G.compute = CUBLAS_COMPUTE_32F_FAST_TF32, G.bf16_operands = false, G.compute_name = "tf32 (fp32 operands)";
    else if (!strcmp(mode, "fp32"))
        G.compute = CUBLAS_COMPUTE_32F, G.bf16_operands = false, G.compute_name = "fp32 (fp32 operands)";
    else fail_usage("--matmul %s: use bf16, tf32 or fp32", mode);
}

void cuda_backend_init(int local_rank, int world_rank) {
    if (G.ready) return;
    cuda_device_init(local_rank, world_rank);
    G.rank = world_rank;
    G.stream = (cudaStream_t)cuda_backend_stream();
    CUDA_CHECK(cudaGetDeviceProperties(&G.prop, cuda_current_device()));
    CUBLAS_CHECK(cublasLtCreate(&G.lt));
    G.workspace = cuda_mem_alloc(WORKSPACE_BYTES, "cuBLASLt workspace");
    if (!G.compute_name) cuda_backend_set_matmul(NULL);   // the default, unless --matmul came first
    G.ready = true;
}

static void ensure_init(void) {
    if (!G.ready) cuda_backend_init(cuda_local_rank(), 0);
}

void cuda_device_describe(char *buf, size_t n) {
    ensure_init();
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    snprintf(buf, n, "%s (GPU %d, %.1f GiB, sm_%d%d, %d SMs), driver %d.%d, runtime %d.%d, matmul %s", G.prop.name,
             cuda_current_device(), G.prop.totalGlobalMem / 1073741824.0, G.prop.major, G.prop.minor,
             G.prop.multiProcessorCount, drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10, G.compute_name);
}

double cuda_device_peak_tflops(void) {
    ensure_init();
    static const struct {
        const char *name;   // a part of cudaDeviceProp.name; the first match wins
        double tflops;
    } PEAKS[] = {{"H100 PCIe", 756}, {"H100 NVL", 835}, {"H100", 989}, {"H200", 989}, {"A100", 312}};
    for (size_t i = 0; i < sizeof PEAKS / sizeof PEAKS[0]; i++)
        if (strstr(G.prop.name, PEAKS[i].name)) return PEAKS[i].tflops;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Memory: the table's entries are core's counted device memory plus the bookkeeping of the bf16
// parameter shadow (below), which must see every write into the parameters.

static void params_registered(void *p, size_t bytes);
static void params_released(void *p);
static void params_written(const void *dst, size_t bytes);

static void *cuda_alloc(size_t bytes, const char *what) {
    ensure_init();
    void *p = cuda_mem_alloc(bytes, what);
    // model/gpt.c allocates its parameter buffer under this name; the backend keeps a bf16 shadow of it.
    if (what && !strcmp(what, "parameters")) params_registered(p, bytes);
    return p;
}

static void cuda_release(void *p) {
    if (!p) return;
    params_released(p);
    cuda_mem_release(p);
}

static size_t cuda_mem_free(void) { return cuda_mem_free_bytes(); }

static void cuda_zero(void *p, size_t bytes) {
    params_written(p, bytes);
    cuda_mem_zero(p, bytes);
}
static void cuda_copy(void *dst, const void *src, size_t bytes) {
    params_written(dst, bytes);
    cuda_mem_copy(dst, src, bytes);
}
static void cuda_to_device(void *dst, const void *host, size_t bytes) {
    ensure_init();
    params_written(dst, bytes);
    cuda_mem_to_device(dst, host, bytes);
}
static void cuda_to_host(void *host, const void *src, size_t bytes) { cuda_mem_to_host(host, src, bytes); }

static bool is_device_pointer(const void *p) {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

// Grow-only scratch buffers owned by the backend, one per purpose.
// SCR_BF16_A/B: the bf16 copies of a matmul's two operands (activations; weights use the shadow).
enum { SCR_PARTIAL, SCR_LOGITS, SCR_ROWLOSS, SCR_EMB_ORDER, SCR_EMB_STARTS, SCR_EMB_TOKENS, SCR_BF16_A, SCR_BF16_B,
       SCR_COUNT };
static void *scratch(int slot, size_t bytes) {
    static void *buf[SCR_COUNT];
    static size_t cap[SCR_COUNT];
    if (bytes > cap[slot]) {
        if (buf[slot]) cuda_release(buf[slot]);
        buf[slot] = cuda_alloc(bytes, "CUDA backend scratch");
        cap[slot] = bytes;
    }
    return buf[slot];
}

// Token ids, targets and positions arrive as host pointers (the Batch). A few device copies are
// kept and reused while the host contents are unchanged: RoPE reads the same positions 4× a layer.
enum { INT_SLOTS = 6 };
typedef struct {
    int32_t *host, *dev;
    size_t n, cap;
    long used;
} IntSlot;

static const int32_t *dev_ints(const int32_t *p, size_t n) {
    if (is_device_pointer(p)) return p;
    static IntSlot slots[INT_SLOTS];
    static long clock_;
    clock_++;
    IntSlot *victim = &slots[0];
    for (int i = 0; i < INT_SLOTS; i++) {
        IntSlot *s = &slots[i];
        if (s->n == n && s->host && memcmp(s->host, p, n * sizeof(int32_t)) == 0) {
            s->used = clock_;
            return s->dev;
        }
        if (s->used < victim->used) victim = s;
    }
    if (n > victim->cap) {
        free(victim->host);
        if (victim->dev) cuda_release(victim->dev);
        victim->host = (int32_t *)xmalloc(n * sizeof(int32_t), "token id cache");
        victim->dev = (int32_t *)cuda_alloc(n * sizeof(int32_t), "token ids on the device");
        victim->cap = n;
    }
    memcpy(victim->host, p, n * sizeof(int32_t));
    victim->n = n;
    victim->used = clock_;
    // Stream-ordered after every kernel that read this slot before; synchronous for the host copy.
    CUDA_CHECK(cudaMemcpyAsync(victim->dev, victim->host, n * sizeof(int32_t), cudaMemcpyHostToDevice, G.stream));
    CUDA_CHECK(cudaStreamSynchronize(G.stream));
    return victim->dev;
}

// ---------------------------------------------------------------------------------------------
// Reductions: fixed trees (deterministic).

template <typename T>
__device__ T warp_sum(T v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
__device__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
// Every thread of the block gets the sum. sh: 32 elements of shared memory.
template <typename T>
__device__ T block_sum(T v, T *sh) {
    v = warp_sum(v);
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : (T)0;
    return warp_sum(v);
}
__device__ float block_max(float v, float *sh) {
    v = warp_max(v);
    int w = threadIdx.x / 32, lane = threadIdx.x % 32, nw = blockDim.x / 32;
    __syncthreads();
    if (lane == 0) sh[w] = v;
    __syncthreads();
    v = lane < nw ? sh[lane] : -INFINITY;
    return warp_max(v);
}

static int blocks_for(size_t n, int threads) {
    size_t b = (n + threads - 1) / threads;
    return (int)(b > 65535 * 16 ? 65535 * 16 : b < 1 ? 1 : b);
}

// ---------------------------------------------------------------------------------------------
// The bf16 shadow of the parameters: the weight copies the bf16 matmuls read (the fp32 master weights
// stay the table's `params`). Why it is never stale: the shadow has a version, the fp32 buffer has one.
// Every write into the parameter range through this backend (to_device: init, checkpoint load, import;
// copy, zero, scale) bumps the buffer's version; AdamW writes the fp32 weight and its bf16 copy in the
// same kernel, so it keeps equal versions equal and never makes them so. A matmul that reads a weight
// inside the range first refreshes the whole shadow (one conversion pass) when the versions differ.
// Nothing else in ringgpt writes the parameters (no collective does: ranks initialize alike and
// all-reduce gradients), so every write is seen. cuda_backend_register_params names the buffer;
// cuda_alloc does so itself for model/gpt.c's allocation called "parameters".

static struct {
    char *base;                 // the fp32 parameter buffer (numel floats)
    size_t numel;
    __nv_bfloat16 *shadow;      // (numel) bf16, allocated on the first bf16 matmul that reads a weight
    unsigned long version;      // bumped by every write into the range that does not update the shadow
    unsigned long shadow_version;   // the version the shadow was converted from
    unsigned long refreshes;        // full conversions so far (for the tests)
} P;

static __global__ void params_to_bf16_kernel(__nv_bfloat16 *dst, const float *src, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16_rn(src[i]);
}

static void to_bf16(__nv_bfloat16 *dst, const float *src, size_t n) {
    if (!n) return;
    params_to_bf16_kernel<<<blocks_for(n, 256), 256, 0, G.stream>>>(dst, src, n);
    CUDA_CHECK_LAUNCH("fp32 to bf16");
}

void cuda_backend_register_params(void *p, size_t bytes) { params_registered(p, bytes); }

static void params_registered(void *p, size_t bytes) {
    if (P.shadow) cuda_release(P.shadow);
    P.base = (char *)p, P.numel = bytes / sizeof(float), P.shadow = NULL;
    P.version++;
}
static void params_released(void *p) {
    if (!P.base || p != (void *)P.base) return;
    P.base = NULL, P.numel = 0;
    __nv_bfloat16 *s = P.shadow;
    P.shadow = NULL;
    if (s) cuda_release(s);
}
static bool in_params(const void *p) {
    return P.base && (const char *)p >= P.base && (const char *)p < P.base + P.numel * sizeof(float);
}
static void params_written(const void *dst, size_t bytes) {
    if (!P.base || !bytes) return;
    const char *d = (const char *)dst;
    if (d < P.base + P.numel * sizeof(float) && d + bytes > P.base) P.version++;
}
// Number of shadow refreshes so far (tests: a stale shadow is refreshed exactly when it must be).
unsigned long cuda_backend_shadow_refreshes(void) { return P.refreshes; }

// The bf16 copy of a matmul operand of `n` floats at p: inside the parameters, the shadow (refreshed
// when stale); elsewhere (activations, gradients) a conversion into the grow-only scratch `slot`.
static const __nv_bfloat16 *bf16_operand(const float *p, size_t n, int slot) {
    if (in_params(p)) {
        if (!P.shadow) {
            P.shadow = (__nv_bfloat16 *)cuda_alloc(P.numel * sizeof(__nv_bfloat16), "bf16 weight copies");
            P.shadow_version = P.version - 1;
        }
        if (P.shadow_version != P.version) {
            to_bf16(P.shadow, (const float *)P.base, P.numel);
            P.shadow_version = P.version;
            P.refreshes++;
        }
        return P.shadow + ((const float *)p - (const float *)P.base);
    }
    __nv_bfloat16 *b = (__nv_bfloat16 *)scratch(slot, n * sizeof(__nv_bfloat16));
    to_bf16(b, p, n);
    return b;
}

// ---------------------------------------------------------------------------------------------
// Embedding.

// out (N, C) = table (V, C)[tokens (N)]; one block per row.
__global__ void embedding_forward_kernel(float *out, const int32_t *tokens, const float *table, int C) {
    int n = blockIdx.x;
    const float *src = table + (size_t)tokens[n] * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) out[(size_t)n * C + c] = src[c];
}

static void embedding_forward(real *out, const int32_t *tokens, const real *table, int N, int C) {
    if (N <= 0) return;
    embedding_forward_kernel<<<N, 256, 0, G.stream>>>(out, dev_ints(tokens, N), table, C);
    CUDA_CHECK_LAUNCH("embedding_forward");
}

// One block per distinct token u: dtable[tok_u] += dout rows order[starts[u]..starts[u+1]) in row
// order — the CPU's summation order exactly, and no two blocks write one row (no atomics).
__global__ void embedding_backward_kernel(float *dtable, const float *dout, const int32_t *order,
                                          const int32_t *starts, const int32_t *utok, int C) {
    int u = blockIdx.y;
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float *d = dtable + (size_t)utok[u] * C + c;
    float acc = *d;
    for (int i = starts[u]; i < starts[u + 1]; i++) acc += dout[(size_t)order[i] * C + c];
    *d = acc;
}

typedef struct {
    int32_t tok, row;
} TokRow;
static int cmp_tokrow(const void *a, const void *b) {
    const TokRow *x = (const TokRow *)a, *y = (const TokRow *)b;
    return x->tok != y->tok ? (x->tok < y->tok ? -1 : 1) : (x->row < y->row ? -1 : x->row > y->row);
}

// Buckets the rows by token on the host (as llm.c does), then one kernel.
static void embedding_backward(real *dtable, const real *dout, const int32_t *tokens, int N, int C) {
    if (N <= 0) return;
    int32_t *host_tok = NULL;
    if (is_device_pointer(tokens)) {
        host_tok = (int32_t *)xmalloc((size_t)N * sizeof(int32_t), "token ids");
        cuda_to_host(host_tok, tokens, (size_t)N * sizeof(int32_t));
        tokens = host_tok;
    }
    TokRow *tr = (TokRow *)xmalloc((size_t)N * sizeof(TokRow), "embedding buckets");
    for (int n = 0; n < N; n++) tr[n] = TokRow{tokens[n], n};
    qsort(tr, N, sizeof(TokRow), cmp_tokrow);
    int32_t *order = (int32_t *)xmalloc((size_t)N * sizeof(int32_t), "embedding buckets");
    int32_t *starts = (int32_t *)xmalloc(((size_t)N + 1) * sizeof(int32_t), "embedding buckets");
    int32_t *utok = (int32_t *)xmalloc((size_t)N * sizeof(int32_t), "embedding buckets");
    int U = 0;
    for (int i = 0; i < N; i++) {
        if (i == 0 || tr[i].tok != tr[i - 1].tok) starts[U] = i, utok[U++] = tr[i].tok;
        order[i] = tr[i].row;
    }
    starts[U] = N;
    int32_t *d_order = (int32_t *)scratch(SCR_EMB_ORDER, (size_t)N * sizeof(int32_t));
    int32_t *d_starts = (int32_t *)scratch(SCR_EMB_STARTS, ((size_t)N + 1) * sizeof(int32_t));
    int32_t *d_utok = (int32_t *)scratch(SCR_EMB_TOKENS, (size_t)N * sizeof(int32_t));
    cuda_to_device(d_order, order, (size_t)N * sizeof(int32_t));
    cuda_to_device(d_starts, starts, ((size_t)U + 1) * sizeof(int32_t));
    cuda_to_device(d_utok, utok, (size_t)U * sizeof(int32_t));
    dim3 grid((C + 127) / 128, U);
    embedding_backward_kernel<<<grid, 128, 0, G.stream>>>(dtable, dout, d_order, d_starts, d_utok, C);
    CUDA_CHECK_LAUNCH("embedding_backward");
    free(tr), free(order), free(starts), free(utok), free(host_tok);
}

// ---------------------------------------------------------------------------------------------
// RMSNorm.

// y (N, C) = x / rms(x) * w, rstd (N); one block per row.
__global__ void rmsnorm_forward_kernel(float *y, float *rstd, const float *x, const float *w, int C, float eps) {
    __shared__ float sh[32];
    int n = blockIdx.x;
    const float *xr = x + (size_t)n * C;
    float ss = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) ss += xr[c] * xr[c];
    ss = block_sum(ss, sh);
    float r = 1.0f / sqrtf(ss / C + eps);
    if (threadIdx.x == 0) rstd[n] = r;
    for (int c = threadIdx.x; c < C; c += blockDim.x) y[(size_t)n * C + c] = xr[c] * r * w[c];
}

static void rmsnorm_forward(real *y, real *rstd, const real *x, const real *w, int N, int C, float eps) {
    if (N <= 0) return;
    rmsnorm_forward_kernel<<<N, 256, 0, G.stream>>>(y, rstd, x, w, C, eps);
    CUDA_CHECK_LAUNCH("rmsnorm_forward");
}

// dx (N, C) += r·(dy∘w) − r³/C · x · Σ(dy∘w∘x); one block per row.
__global__ void rmsnorm_backward_dx_kernel(float *dx, const float *dy, const float *x, const float *w,
                                           const float *rstd, int C) {
    __shared__ float sh[32];
    int n = blockIdx.x;
    const float *xr = x + (size_t)n * C, *dyr = dy + (size_t)n * C;
    float r = rstd[n], dot = 0;
    for (int c = threadIdx.x; c < C; c += blockDim.x) dot += dyr[c] * w[c] * xr[c];
    dot = block_sum(dot, sh);
    float k = r * r * r * dot / C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) dx[(size_t)n * C + c] += r * dyr[c] * w[c] - k * xr[c];
}

// Column sums in two fixed-order stages. Stage 1: partial (chunks, C) = Σ over one chunk of rows
// of dy∘x·r; block (32 columns × 8 row lanes).
__global__ void rmsnorm_dw_partial_kernel(float *partial, const float *dy, const float *x, const float *rstd, int N,
                                          int C, int rows_per_chunk) {
    __shared__ float sh[8][33];
    int c = blockIdx.x * 32 + threadIdx.x, chunk = blockIdx.y;
    int r0 = chunk * rows_per_chunk, r1 = min(N, r0 + rows_per_chunk);
    float s = 0;
    if (c < C)
        for (int n = r0 + threadIdx.y; n < r1; n += 8) s += dy[(size_t)n * C + c] * x[(size_t)n * C + c] * rstd[n];
    sh[threadIdx.y][threadIdx.x] = s;
    __syncthreads();
    if (threadIdx.y == 0 && c < C) {
        float t = 0;
        for (int i = 0; i < 8; i++) t += sh[i][threadIdx.x];
        partial[(size_t)chunk * C + c] = t;
    }
}
// Stage 2: dw (C) += Σ_chunks partial, chunks in order.
__global__ void column_sum_add_kernel(float *dw, const float *partial, int chunks, int C) {
    int c = blockIdx.x * blockDim.x + threadIdx.x;
    if (c >= C) return;
    float t = 0;
    for (int i = 0; i < chunks; i++) t += partial[(size_t)i * C + c];
    dw[c] += t;
}

static void rmsnorm_backward(real *dx, real *dw, const real *dy, const real *x, const real *w, const real *rstd, int N,
                             int C) {
    if (N <= 0) return;
    rmsnorm_backward_dx_kernel<<<N, 256, 0, G.stream>>>(dx, dy, x, w, rstd, C);
    CUDA_CHECK_LAUNCH("rmsnorm_backward dx");
    int rows_per_chunk = 256, chunks = (N + rows_per_chunk - 1) / rows_per_chunk;
    if (chunks > 1024) chunks = 1024, rows_per_chunk = (N + chunks - 1) / chunks;
    float *partial = (float *)scratch(SCR_PARTIAL, (size_t)chunks * C * sizeof(float));
    dim3 grid((C + 31) / 32, chunks), block(32, 8);
    rmsnorm_dw_partial_kernel<<<grid, block, 0, G.stream>>>(partial, dy, x, rstd, N, C, rows_per_chunk);
    CUDA_CHECK_LAUNCH("rmsnorm_backward dw");
    column_sum_add_kernel<<<(C + 255) / 256, 256, 0, G.stream>>>(dw, partial, chunks, C);
    CUDA_CHECK_LAUNCH("rmsnorm_backward dw sum");
}

// ---------------------------------------------------------------------------------------------
// Matmuls: row-major C = op(A)·op(B) through cuBLASLt (column-major), descriptors and the chosen
// algorithm cached per shape.

typedef struct {
    cublasOperation_t ta, tb;
    int m, n, k, lda, ldb, ldc, align;
    cublasComputeType_t compute;
    bool bf16;   // A, B are CUDA_R_16BF (C stays CUDA_R_32F)
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulAlgo_t algo;
} GemmPlan;

enum { MAX_PLANS = 128 };
static GemmPlan g_plans[MAX_PLANS];
static int g_nplans;

static int pointer_alignment(const void *p) {
    uintptr_t a = (uintptr_t)p;
    int al = 256;
    while (al > 2 && a % al) al /= 2;   // 2: a bf16 weight at an odd element offset
    return al;
}

static GemmPlan *gemm_plan(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, int lda, int ldb, int ldc,
                           int align) {
    for (int i = 0; i < g_nplans; i++) {
        GemmPlan *p = &g_plans[i];
        if (p->ta == ta && p->tb == tb && p->m == m && p->n == n && p->k == k && p->lda == lda && p->ldb == ldb &&
            p->ldc == ldc && p->align == align && p->compute == G.compute &&
            p->bf16 == G.bf16_operands)
            return p;
    }
    GemmPlan *p = &g_plans[g_nplans < MAX_PLANS ? g_nplans++ : MAX_PLANS - 1];   // the last slot is recycled
    if (p->desc) {
        cublasLtMatmulDescDestroy(p->desc);
        cublasLtMatrixLayoutDestroy(p->la), cublasLtMatrixLayoutDestroy(p->lb), cublasLtMatrixLayoutDestroy(p->lc);
    }
    *p = GemmPlan{};
    p->ta = ta, p->tb = tb, p->m = m, p->n = n, p->k = k, p->lda = lda, p->ldb = ldb, p->ldc = ldc, p->align = align;
    p->compute = G.compute, p->bf16 = G.bf16_operands;
    cudaDataType_t ab = p->bf16 ? CUDA_R_16BF : CUDA_R_32F;
    CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, G.compute, CUDA_R_32F));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    // Stored shapes (column-major): A is m×k (or k×m transposed), B is k×n (or n×k), C is m×n.
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->la, ab, ta == CUBLAS_OP_N ? m : k, ta == CUBLAS_OP_N ? k : m, lda));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lb, ab, tb == CUBLAS_OP_N ? k : n, tb == CUBLAS_OP_N ? n : k, ldb));
    CUBLAS_CHECK(cublasLtMatrixLayoutCreate(&p->lc, CUDA_R_32F, m, n, ldc));
    cublasLtMatmulPreference_t pref;
    CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    uint64_t ws = WORKSPACE_BYTES;
    uint32_t al = (uint32_t)align;
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &al, sizeof al));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &al, sizeof al));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &al, sizeof al));
    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &al, sizeof al));
    cublasLtMatmulHeuristicResult_t res;
    int found = 0;
    CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(G.lt, p->desc, p->la, p->lb, p->lc, p->lc, pref, 1, &res, &found));
    cublasLtMatmulPreferenceDestroy(pref);
    if (found == 0)
        fail("rank %d, GPU %d: cuBLASLt has no algorithm for a %d×%d×%d matmul (compute %s, alignment %d)", G.rank,
             cuda_current_device(), m, n, k, G.compute_name, align);
    p->algo = res.algo;
    return p;
}

// Floats a stored row-major operand spans: rows rows of ld, the last one cols long.
static size_t operand_span(int rows, int cols, int ld) { return (size_t)(rows - 1) * ld + cols; }

// Row-major C (M, N) = alpha·op(A)·op(B) + beta·C, cblas-style arguments (A is (M, K) unless ta).
// In bf16 mode A and B are read as bf16 copies (bf16_operand); C stays fp32 (beta = 1 accumulates in fp32).
static void gemm_rm(bool ta, bool tb, int M, int N, int K, const float *A32, int lda, const float *B32, int ldb,
                    float beta, float *C, int ldc) {
    if (M <= 0 || N <= 0) return;
    if (K <= 0) {   // an empty sum: C = beta·C
        if (beta == 0) for (int i = 0; i < M; i++) cuda_zero(C + (size_t)i * ldc, (size_t)N * sizeof(float));
        return;
    }
    const void *A = A32, *B = B32;
    if (G.bf16_operands) {   // A stored (M, K) or (K, M) when ta; B stored (K, N) or (N, K) when tb
        A = bf16_operand(A32, ta ? operand_span(K, M, lda) : operand_span(M, K, lda), SCR_BF16_A);
        B = bf16_operand(B32, tb ? operand_span(N, K, ldb) : operand_span(K, N, ldb), SCR_BF16_B);
    }
    // Row-major C = op(A) op(B) is column-major Cᵀ = op(B)ᵀ op(A)ᵀ: swap the operands.
    int align = pointer_alignment(A);
    int ab = pointer_alignment(B), ac = pointer_alignment(C);
    align = ab < align ? ab : align;
    align = ac < align ? ac : align;
    GemmPlan *p = gemm_plan(tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, ldb, lda, ldc,
                            align);
    float alpha = 1.0f;
    CUBLAS_CHECK(cublasLtMatmul(G.lt, p->desc, &alpha, B, p->la, A, p->lb, &beta, C, p->lc, C, p->lc, &p->algo,
                                G.workspace, WORKSPACE_BYTES, G.stream));
}

static void matmul_forward(real *out, const real *in, const real *w, int N, int In, int Out) {
    gemm_rm(false, true, N, Out, In, in, In, w, In, 0.0f, out, Out);
}

static void matmul_backward(real *din, real *dw, const real *dout, const real *in, const real *w, int N, int In, int Out,
                            int accumulate_din) {
    if (din) gemm_rm(false, false, N, In, Out, dout, Out, w, In, accumulate_din ? 1.0f : 0.0f, din, In);
    if (dw) gemm_rm(true, false, Out, In, N, dout, Out, in, In, 1.0f, dw, In);
}

// ---------------------------------------------------------------------------------------------
// RoPE, SwiGLU, elementwise.

// One thread per (token n, pair i): the angle in double (at a million positions a float angle is
// off by ~0.1 rad), then the same rotation for every head. x (N, nh, hd).
__global__ void rope_kernel(float *x, const int32_t *pos, int N, int nh, int hd, double theta, double sign) {
    int half = hd / 2;
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)N * half) return;
    int n = (int)(idx / half), i = (int)(idx % half);
    double a = pos[n] * pow(theta, -2.0 * i / hd);   // as the CPU computes it
    float c = (float)cos(a), s = (float)(sign * sin(a));
    for (int h = 0; h < nh; h++) {
        float *p = x + ((size_t)n * nh + h) * hd + 2 * i;
        float x0 = p[0], x1 = p[1];
        p[0] = x0 * c - x1 * s;
        p[1] = x0 * s + x1 * c;
    }
}

static void rope(real *x, const int32_t *pos, int N, int nh, int hd, float theta, int inverse) {
    if (N <= 0) return;
    size_t n = (size_t)N * (hd / 2);
    rope_kernel<<<blocks_for(n, 256), 256, 0, G.stream>>>(x, dev_ints(pos, N), N, nh, hd, (double)theta,
                                                         inverse ? -1.0 : 1.0);
    CUDA_CHECK_LAUNCH("rope");
}

__global__ void swiglu_forward_kernel(float *h, const float *gate, const float *up, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float g = gate[i], s = 1.0f / (1.0f + expf(-g));
        h[i] = g * s * up[i];
    }
}

// h = g·σ(g)·u:  dg = dh·u·σ(g)·(1 + g·(1−σ(g))),  du = dh·g·σ(g)
__global__ void swiglu_backward_kernel(float *dgate, float *dup, const float *dh, const float *gate, const float *up,
                                       size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float g = gate[i], s = 1.0f / (1.0f + expf(-g)), d = dh[i];
        dgate[i] = d * up[i] * s * (1 + g * (1 - s));
        dup[i] = d * g * s;
    }
}

static void swiglu_forward(real *h, const real *gate, const real *up, int N, int F) {
    size_t n = (size_t)N * F;
    if (!n) return;
    swiglu_forward_kernel<<<blocks_for(n, 256), 256, 0, G.stream>>>(h, gate, up, n);
    CUDA_CHECK_LAUNCH("swiglu_forward");
}

static void swiglu_backward(real *dgate, real *dup, const real *dh, const real *gate, const real *up, int N, int F) {
    size_t n = (size_t)N * F;
    if (!n) return;
    swiglu_backward_kernel<<<blocks_for(n, 256), 256, 0, G.stream>>>(dgate, dup, dh, gate, up, n);
    CUDA_CHECK_LAUNCH("swiglu_backward");
}

__global__ void add_kernel(float *y, const float *x, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] += x[i];
}
static void add_inplace(real *y, const real *x, size_t n) {
    if (!n) return;
    add_kernel<<<blocks_for(n, 256), 256, 0, G.stream>>>(y, x, n);
    CUDA_CHECK_LAUNCH("add_inplace");
}

__global__ void scale_kernel(float *x, float a, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] *= a;
}
static void scale(real *x, float a, size_t n) {
    params_written(x, n * sizeof(float));
    if (!n) return;
    scale_kernel<<<blocks_for(n, 256), 256, 0, G.stream>>>(x, a, n);
    CUDA_CHECK_LAUNCH("scale");
}

// ---------------------------------------------------------------------------------------------
// LM head + cross-entropy, chunked over rows.

// One block per row of logits (rows, V): row loss (double) and, with want_grad, the row turned
// into d(loss·grad_scale)/dlogits in place (the probabilities never get their own buffer).
__global__ void ce_rows_kernel(double *row_loss, float *logits, const int32_t *targets, int V, double grad_scale,
                               int want_grad) {
    __shared__ float shf[32];
    __shared__ double shd[32];
    int r = blockIdx.x;
    float *lr = logits + (size_t)r * V;
    int t = targets[r];
    if (t < 0) {
        if (threadIdx.x == 0) row_loss[r] = 0;
        if (want_grad)
            for (int j = threadIdx.x; j < V; j += blockDim.x) lr[j] = 0;
        return;
    }
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < V; j += blockDim.x) mx = fmaxf(mx, lr[j]);
    mx = block_max(mx, shf);
    double sum = 0;
    for (int j = threadIdx.x; j < V; j += blockDim.x) sum += (double)expf(lr[j] - mx);
    sum = block_sum(sum, shd);
    double lse = mx + log(sum);
    float target_logit = lr[t];
    __syncthreads();   // every thread has read lr[t] before any thread overwrites it
    if (threadIdx.x == 0) row_loss[r] = lse - target_logit;
    if (!want_grad) return;
    float lse_f = (float)lse, gs = (float)grad_scale;
    for (int j = threadIdx.x; j < V; j += blockDim.x) lr[j] = expf(lr[j] - lse_f) * gs - (j == t ? gs : 0.0f);
}

static long g_logits_mb = 512;

void cuda_backend_set_logits_mb(long mb) {
    if (mb < 0) fail_usage("--logits-mb must not be negative (got %ld)", mb);
    g_logits_mb = mb;
}

static double lmhead_ce(real *dx, real *dw, real *losses, const real *x, const real *w, const int32_t *targets, int N,
                        int C, int V, int chunk, double grad_scale) {
    if (N <= 0) return 0;
    // The GPU wants big chunks to keep the matmuls busy: at least `chunk` rows, up to 512 MiB of logits
    // (--logits-mb changes the budget; 0 keeps `chunk` as given, for tests).
    size_t budget_mb = (size_t)g_logits_mb;
    size_t cap_rows = (budget_mb << 20) / ((size_t)V * sizeof(float));
    int rows_max = (int)(cap_rows < 1 ? 1 : cap_rows);
    if (chunk < rows_max) chunk = rows_max;
    if (chunk > N) chunk = N;
    float *logits = (float *)scratch(SCR_LOGITS, (size_t)chunk * V * sizeof(float));   // (chunk, V)
    double *row_loss = (double *)scratch(SCR_ROWLOSS, (size_t)N * sizeof(double));      // (N)
    const int32_t *tg = dev_ints(targets, N);
    for (int n0 = 0; n0 < N; n0 += chunk) {
        int rows = N - n0 < chunk ? N - n0 : chunk;
        const float *xc = x + (size_t)n0 * C;
        gemm_rm(false, true, rows, V, C, xc, C, w, C, 0.0f, logits, V);
        ce_rows_kernel<<<rows, 256, 0, G.stream>>>(row_loss + n0, logits, tg + n0, V, grad_scale, dx != NULL);
        CUDA_CHECK_LAUNCH("lmhead_ce rows");
        if (!dx) continue;
        // dlogits (rows, V) now sits in `logits`: dx = dlogits @ w, dw += dlogitsᵀ @ x
        gemm_rm(false, false, rows, C, V, logits, V, w, C, 0.0f, dx + (size_t)n0 * C, C);
        gemm_rm(true, false, V, C, rows, logits, V, xc, C, 1.0f, dw, C);
    }
    double *host = (double *)xmalloc((size_t)N * sizeof(double), "row losses");
    cuda_to_host(host, row_loss, (size_t)N * sizeof(double));
    double total = 0;
    for (int n = 0; n < N; n++) total += host[n];   // in row order, as the CPU sums: deterministic
    if (losses) {
        float *lf = (float *)xmalloc((size_t)N * sizeof(float), "row losses");
        for (int n = 0; n < N; n++) lf[n] = (float)host[n];
        if (is_device_pointer(losses)) cuda_to_device(losses, lf, (size_t)N * sizeof(float));
        else memcpy(losses, lf, (size_t)N * sizeof(float));
        free(lf);
    }
    free(host);
    return total;
}

// ---------------------------------------------------------------------------------------------
// Sum of squares (global norm), AdamW.

enum { SUMSQ_BLOCKS = 1024 };

// Stage 1: a fixed grid; each block's double partial in a fixed place.
__global__ void sumsq_partial_kernel(double *partial, const float *x, size_t n) {
    __shared__ double sh[32];
    double s = 0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        s += (double)x[i] * x[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) partial[blockIdx.x] = s;
}
// Stage 2: one block adds the partials in a fixed tree.
__global__ void sum_partials_kernel(double *out, const double *partial, int n) {
    __shared__ double sh[32];
    double s = 0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) s += partial[i];
    s = block_sum(s, sh);
    if (threadIdx.x == 0) *out = s;
}

static double sumsq(const real *x, size_t n) {
    if (!n) return 0;
    double *partial = (double *)scratch(SCR_PARTIAL, (SUMSQ_BLOCKS + 1) * sizeof(double));
    sumsq_partial_kernel<<<SUMSQ_BLOCKS, 256, 0, G.stream>>>(partial, x, n);
    CUDA_CHECK_LAUNCH("sumsq");
    sum_partials_kernel<<<1, 1024, 0, G.stream>>>(partial + SUMSQ_BLOCKS, partial, SUMSQ_BLOCKS);
    CUDA_CHECK_LAUNCH("sumsq total");
    double total = 0;
    cuda_to_host(&total, partial + SUMSQ_BLOCKS, sizeof total);
    return total;
}

// Decoupled weight decay (AdamW): w -= lr·(m̂/(√v̂+eps) + wd·w); bias corrections in double as on the CPU.
// w16 (n), when not NULL, is w's bf16 copy in the parameter shadow: written with w, in the same pass.
__global__ void adamw_kernel(float *w, __nv_bfloat16 *w16, const float *g, float *m, float *v, size_t n, float lr,
                             float beta1, float beta2, float eps, float wd, double bc1, double bc2) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float gi = g[i];
        float mi = beta1 * m[i] + (1 - beta1) * gi;
        float vi = beta2 * v[i] + (1 - beta2) * gi * gi;
        m[i] = mi, v[i] = vi;
        float mh = (float)(mi / bc1), vh = (float)(vi / bc2);
        float wi = w[i] - lr * (mh / (sqrtf(vh) + eps) + wd * w[i]);
        w[i] = wi;
        if (w16) w16[i] = __float2bfloat16_rn(wi);
    }
}

static void adamw(real *w, const real *g, real *m, real *v, size_t n, float lr, float beta1, float beta2, float eps,
                  float wd, int step, int decay) {
    if (!n) return;
    double bc1 = 1.0 - pow(beta1, step), bc2 = 1.0 - pow(beta2, step);
    // Inside the parameters with a fresh shadow: update the bf16 copy too (keeps it fresh). With no
    // shadow or a stale one there is nothing to keep: the next matmul converts the whole buffer anyway.
    __nv_bfloat16 *w16 = NULL;
    if (in_params(w)) {
        if (!in_params(w + n - 1)) fail("adamw: a tensor of %zu elements runs past the parameter buffer", n);
        if (P.shadow && P.shadow_version == P.version) w16 = P.shadow + (w - (float *)P.base);
    } else params_written(w, n * sizeof(float));
    adamw_kernel<<<blocks_for(n, 256), 256, 0, G.stream>>>(w, w16, g, m, v, n, lr, beta1, beta2, eps,
                                                          decay ? wd : 0.0f, bc1, bc2);
    CUDA_CHECK_LAUNCH("adamw");
}

// ---------------------------------------------------------------------------------------------

extern "C" const Backend BACKEND_CUDA = {
    .name = "cuda",
    .alloc = cuda_alloc,
    .release = cuda_release,
    .zero = cuda_zero,
    .copy = cuda_copy,
    .to_device = cuda_to_device,
    .to_host = cuda_to_host,
    .embedding_forward = embedding_forward,
    .embedding_backward = embedding_backward,
    .rmsnorm_forward = rmsnorm_forward,
    .rmsnorm_backward = rmsnorm_backward,
    .matmul_forward = matmul_forward,
    .matmul_backward = matmul_backward,
    .rope = rope,
    .swiglu_forward = swiglu_forward,
    .swiglu_backward = swiglu_backward,
    .add_inplace = add_inplace,
    .lmhead_ce = lmhead_ce,
    .attn_state_reset = attn_cuda_state_reset,
    .attn_forward_block = attn_cuda_forward_block,
    .attn_finalize = attn_cuda_finalize,
    .attn_backward_prep = attn_cuda_backward_prep,
    .attn_backward_block = attn_cuda_backward_block,
    .sumsq = sumsq,
    .scale = scale,
    .adamw = adamw,
    .mem_peak = cuda_backend_bytes_peak,
    .mem_free = cuda_mem_free,
};
