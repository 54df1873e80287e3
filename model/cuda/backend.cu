// model/cuda/backend.cu — the CUDA backend table: its state and settings, memory, scratch, device token ids, the bf16 parameter shadow.
// Storage is fp32 (model/ops.h says why) except the [act] activations under --activations bf16 (core/backend.h);
// the ops live by family in model/cuda/*.cu. Reductions that decide the loss or the gradients use fixed-order
// trees, never atomics: reruns are bit-equal.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/cuda/ops_cuda.cuh"

RINGGPT_EXTERN_C_BEGIN
#include "attention/attention_cuda.h"
RINGGPT_EXTERN_C_END

CudaBackend CB;

void cuda_backend_set_matmul(const char *mode) {
    // tf32 (this call's default; train picks bf16 with bf16 activations, train/train.c): fp32 operands on TF32
    // tensor cores. bf16: bf16 A/B, fp32 C/D, COMPUTE_32F — true bf16 GEMMs (COMPUTE_32F_FAST_16BF with fp32
    // operands, an old default, ran TF32 kernels on an H100: issue 9). fp32: fp32 operands and math. All three
    // passed against the CPU on an H100 (2026-11-24) and an H200 (2026-11-27): docs/gpu.md.
    if (!mode || !*mode || !strcmp(mode, "tf32"))
        CB.compute = CUBLAS_COMPUTE_32F_FAST_TF32, CB.bf16_operands = false, CB.compute_name = "tf32 (fp32 operands)";
    else if (!strcmp(mode, "bf16"))
        CB.compute = CUBLAS_COMPUTE_32F, CB.bf16_operands = true,
        CB.compute_name = "bf16 (bf16 operands, fp32 accumulate)";
    else if (!strcmp(mode, "fp32"))
        CB.compute = CUBLAS_COMPUTE_32F, CB.bf16_operands = false, CB.compute_name = "fp32 (fp32 operands)";
    else fail_usage("--matmul %s: use tf32, bf16 or fp32", mode);
}

void cuda_backend_init(int local_rank, int world_rank) {
    if (CB.ready) return;
    cuda_device_init(local_rank, world_rank);
    CB.rank = world_rank;
    CB.stream = (cudaStream_t)cuda_backend_stream();
    CUDA_CHECK(cudaGetDeviceProperties(&CB.prop, cuda_current_device()));
    CUBLAS_CHECK(cublasLtCreate(&CB.lt));
    CB.workspace = cuda_mem_alloc(WORKSPACE_BYTES, "cuBLASLt workspace");
    if (!CB.compute_name) cuda_backend_set_matmul(NULL);   // the default, unless --matmul came first
    CB.ready = true;
}

void cb_ensure_init(void) {
    if (!CB.ready) cuda_backend_init(cuda_local_rank(), 0);
}

void cuda_device_describe(char *buf, size_t n) {
    cb_ensure_init();
    int drv = 0, rt = 0;
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    snprintf(buf, n, "%s (GPU %d, %.1f GiB, sm_%d%d, %d SMs), driver %d.%d, runtime %d.%d, matmul %s, attention %s",
             CB.prop.name, cuda_current_device(), CB.prop.totalGlobalMem / 1073741824.0, CB.prop.major, CB.prop.minor,
             CB.prop.multiProcessorCount, drv / 1000, drv % 1000 / 10, rt / 1000, rt % 1000 / 10, CB.compute_name,
             attn_cuda_impl());
}

double cuda_device_peak_tflops(void) {
    cb_ensure_init();
    static const struct {
        const char *name;   // a part of cudaDeviceProp.name; the first match wins
        double tflops;
    } PEAKS[] = {{"H100 PCIe", 756}, {"H100 NVL", 835}, {"H100", 989}, {"H200", 989}, {"A100", 312}};
    for (size_t i = 0; i < sizeof PEAKS / sizeof PEAKS[0]; i++)
        if (strstr(CB.prop.name, PEAKS[i].name)) return PEAKS[i].tflops;
    return 0;
}

// ---------------------------------------------------------------------------------------------
// Memory: the table's entries are core's counted device memory plus the bookkeeping of the bf16
// parameter shadow (below), which must see every write into the parameters.

static void params_registered(void *p, size_t bytes);
static void params_released(void *p);

void *cb_alloc(size_t bytes, const char *what) {
    cb_ensure_init();
    void *p = cuda_mem_alloc(bytes, what);
    // model/gpt.c allocates its parameter buffer under this name; the backend keeps a bf16 shadow of it.
    if (what && !strcmp(what, "parameters")) params_registered(p, bytes);
    return p;
}

void cb_release(void *p) {
    if (!p) return;
    params_released(p);
    cuda_mem_release(p);
}

static size_t cb_mem_free(void) { return cuda_mem_free_bytes(); }

void cb_zero(void *p, size_t bytes) {
    cb_params_written(p, bytes);
    cuda_mem_zero(p, bytes);
}
void cb_copy(void *dst, const void *src, size_t bytes) {
    cb_params_written(dst, bytes);
    cuda_mem_copy(dst, src, bytes);
}
void cb_to_device(void *dst, const void *host, size_t bytes) {
    cb_ensure_init();
    cb_params_written(dst, bytes);
    cuda_mem_to_device(dst, host, bytes);
}
void cb_to_host(void *host, const void *src, size_t bytes) { cuda_mem_to_host(host, src, bytes); }

bool cb_is_device_pointer(const void *p) {
    cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

void *cb_scratch(int slot, size_t bytes) {
    static void *buf[SCR_COUNT];
    static size_t cap[SCR_COUNT];
    if (bytes > cap[slot]) {
        if (buf[slot]) cb_release(buf[slot]);
        buf[slot] = cb_alloc(bytes, "CUDA backend scratch");
        cap[slot] = bytes;
    }
    return buf[slot];
}

int cb_blocks(size_t n, int threads) {
    size_t b = (n + threads - 1) / threads;
    return (int)(b > 65535 * 16 ? 65535 * 16 : b < 1 ? 1 : b);
}

// Token ids, targets and positions arrive as host pointers (the Batch). A few device copies are
// kept and reused while the host contents are unchanged: RoPE reads the same positions 2× a layer.
enum { INT_SLOTS = 6 };
typedef struct {
    int32_t *host, *dev;
    size_t n, cap;
    long used;
} IntSlot;

const int32_t *cb_dev_ints(const int32_t *p, size_t n) {
    if (cb_is_device_pointer(p)) return p;
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
        if (victim->dev) cb_release(victim->dev);
        victim->host = (int32_t *)xmalloc(n * sizeof(int32_t), "token id cache");
        victim->dev = (int32_t *)cb_alloc(n * sizeof(int32_t), "token ids on the device");
        victim->cap = n;
    }
    memcpy(victim->host, p, n * sizeof(int32_t));
    victim->n = n;
    victim->used = clock_;
    // Stream-ordered after every kernel that read this slot before; synchronous for the host copy.
    CUDA_CHECK(cudaMemcpyAsync(victim->dev, victim->host, n * sizeof(int32_t), cudaMemcpyHostToDevice, CB.stream));
    CUDA_CHECK(cudaStreamSynchronize(CB.stream));
    return victim->dev;
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
// cb_alloc does so itself for model/gpt.c's allocation called "parameters".

static struct {
    char *base;                 // the fp32 parameter buffer (numel floats)
    size_t numel;
    __nv_bfloat16 *shadow;      // (numel) bf16, allocated on the first bf16 matmul that reads a weight
    unsigned long version;      // bumped by every write into the range that does not update the shadow
    unsigned long shadow_version;   // the version the shadow was converted from
    unsigned long refreshes;        // full conversions so far (for the tests)
} P;

static __global__ void to_bf16_kernel(__nv_bfloat16 *dst, const float *src, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        dst[i] = __float2bfloat16_rn(src[i]);
}

void cb_to_bf16(__nv_bfloat16 *dst, const float *src, size_t n) {
    if (!n) return;
    to_bf16_kernel<<<cb_blocks(n, 256), 256, 0, CB.stream>>>(dst, src, n);
    CUDA_CHECK_LAUNCH("fp32 to bf16");
}

void cuda_backend_register_params(void *p, size_t bytes) { params_registered(p, bytes); }

static void params_registered(void *p, size_t bytes) {
    if (P.shadow) cb_release(P.shadow);
    P.base = (char *)p, P.numel = bytes / sizeof(float), P.shadow = NULL;
    P.version++;
}
static void params_released(void *p) {
    if (!P.base || p != (void *)P.base) return;
    P.base = NULL, P.numel = 0;
    __nv_bfloat16 *s = P.shadow;
    P.shadow = NULL;
    if (s) cb_release(s);
}
bool cb_in_params(const void *p) {
    return P.base && (const char *)p >= P.base && (const char *)p < P.base + P.numel * sizeof(float);
}
void cb_params_written(const void *dst, size_t bytes) {
    if (!P.base || !bytes) return;
    const char *d = (const char *)dst;
    if (d < P.base + P.numel * sizeof(float) && d + bytes > P.base) P.version++;
}
unsigned long cuda_backend_shadow_refreshes(void) { return P.refreshes; }

const __nv_bfloat16 *cb_bf16_operand(const float *p, size_t n, int slot) {
    if (cb_in_params(p)) {
        if (!P.shadow) {
            P.shadow = (__nv_bfloat16 *)cb_alloc(P.numel * sizeof(__nv_bfloat16), "bf16 weight copies");
            P.shadow_version = P.version - 1;
        }
        if (P.shadow_version != P.version) {
            cb_to_bf16(P.shadow, (const float *)P.base, P.numel);
            P.shadow_version = P.version;
            P.refreshes++;
        }
        return P.shadow + (p - (const float *)P.base);
    }
    __nv_bfloat16 *b = (__nv_bfloat16 *)cb_scratch(slot, n * sizeof(__nv_bfloat16));
    cb_to_bf16(b, p, n);
    return b;
}

__nv_bfloat16 *cb_fresh_shadow(const float *w, size_t n) {
    if (!cb_in_params(w)) return NULL;
    if (!cb_in_params(w + n - 1)) fail("adamw: a tensor of %zu elements runs past the parameter buffer", n);
    // With no shadow or a stale one there is nothing to keep: the next matmul converts the whole buffer anyway.
    if (!P.shadow || P.shadow_version != P.version) return NULL;
    return P.shadow + (w - (const float *)P.base);
}

// ---------------------------------------------------------------------------------------------

extern "C" const Backend BACKEND_CUDA = {
    .name = "cuda",
    .device = true,
    .alloc = cb_alloc,
    .release = cb_release,
    .zero = cb_zero,
    .copy = cb_copy,
    .to_device = cb_to_device,
    .to_host = cb_to_host,
    .embedding_forward = cuda_embedding_forward,
    .embedding_backward = cuda_embedding_backward,
    .rmsnorm_forward = cuda_rmsnorm_forward,
    .rmsnorm_backward = cuda_rmsnorm_backward,
    .matmul_forward = cuda_matmul_forward,
    .matmul_backward = cuda_matmul_backward,
    .rope = cuda_rope,
    .swiglu_forward = cuda_swiglu_forward,
    .swiglu_backward = cuda_swiglu_backward,
    .add_inplace = cuda_add_inplace,
    .lmhead_ce = cuda_lmhead_ce,
    .attn_state_reset = attn_cuda_state_reset,
    .attn_forward_block = attn_cuda_forward_block,
    .attn_finalize = attn_cuda_finalize,
    .attn_backward_prep = attn_cuda_backward_prep,
    .attn_backward_block = attn_cuda_backward_block,
    .sumsq = cuda_sumsq,
    .scale = cuda_scale,
    .adamw = cuda_adamw,
    .mem_peak = cuda_backend_bytes_peak,
    .mem_free = cb_mem_free,
};
