// model/cuda/optim.cu — the global gradient norm (fixed-order sum of squares) and AdamW over every parameter in one launch.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/cuda/ops_cuda.cuh"

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

double cuda_sumsq(const real *x, size_t n) {
    if (!n) return 0;
    double *partial = (double *)cb_scratch(SCR_PARTIAL, (SUMSQ_BLOCKS + 1) * sizeof(double));
    sumsq_partial_kernel<<<SUMSQ_BLOCKS, 256, 0, CB.stream>>>(partial, x, n);
    CUDA_CHECK_LAUNCH("sumsq");
    sum_partials_kernel<<<1, 1024, 0, CB.stream>>>(partial + SUMSQ_BLOCKS, partial, SUMSQ_BLOCKS);
    CUDA_CHECK_LAUNCH("sumsq total");
    double total = 0;
    cb_to_host(&total, partial + SUMSQ_BLOCKS, sizeof total);
    return total;
}

// ---------------------------------------------------------------------------------------------
// AdamW: every span (tensor) in one launch. The spans are cut into groups of up to 4 elements; group j of the
// whole update belongs to the span s with first[s] <= j < first[s + 1] (a binary search in shared memory), so a
// thread never straddles two tensors and an aligned full group is one 16-byte access per buffer.

typedef struct {
    unsigned long long offset, n, first;   // the span's elements and its first group
    int decay;
} DevSpan;

enum { ADAMW_GROUP = 4, ADAMW_MAX_SPANS = 2048 };

// Decoupled weight decay (AdamW): w -= lr·(m̂/(√v̂+eps) + wd·w); bias corrections in double as on the CPU.
// w16, when not NULL, is w's bf16 copy in the parameter shadow: written with w, in the same pass.
static __device__ __forceinline__ void adamw_one(float &w, float g, float &m, float &v, float lr, float beta1,
                                                 float beta2, float eps, float wd, double bc1, double bc2) {
    // Every rounding spelled out (no contraction left to the compiler): the update's bits do not depend on which
    // FMAs nvcc forms (two kernels it contracted differently disagreed in 328 of 100,003 weights on the H100 run
    // of 2026-11-24, docs/gpu.md), so one launch over every tensor equals one launch per tensor bit for bit.
    float mi = __fmaf_rn(beta1, m, __fmul_rn(1 - beta1, g));
    float vi = __fmaf_rn(beta2, v, __fmul_rn(__fmul_rn(1 - beta2, g), g));
    m = mi, v = vi;
    float mh = (float)(mi / bc1), vh = (float)(vi / bc2);
    float step = __fmaf_rn(wd, w, __fdiv_rn(mh, __fadd_rn(__fsqrt_rn(vh), eps)));
    w = __fmaf_rn(-lr, step, w);
}

__global__ void adamw_kernel(float *w, __nv_bfloat16 *w16, const float *g, float *m, float *v, const DevSpan *spans,
                             int n_spans, unsigned long long groups, float lr, float beta1, float beta2, float eps,
                             float wd, double bc1, double bc2) {
    __shared__ unsigned long long first[ADAMW_MAX_SPANS + 1];
    for (int s = threadIdx.x; s <= n_spans; s += blockDim.x) first[s] = s < n_spans ? spans[s].first : groups;
    __syncthreads();
    bool vec_ok = ((uintptr_t)w | (uintptr_t)g | (uintptr_t)m | (uintptr_t)v) % 16 == 0;
    for (unsigned long long j = (size_t)blockIdx.x * blockDim.x + threadIdx.x; j < groups;
         j += (size_t)gridDim.x * blockDim.x) {
        int lo = 0, hi = n_spans - 1;   // the last span whose first group is <= j
        while (lo < hi) {
            int mid = (lo + hi + 1) / 2;
            if (first[mid] <= j) lo = mid;
            else hi = mid - 1;
        }
        const DevSpan sp = spans[lo];
        unsigned long long e0 = sp.offset + (j - sp.first) * ADAMW_GROUP;
        int cnt = (int)min((unsigned long long)ADAMW_GROUP, sp.offset + sp.n - e0);
        float dwd = sp.decay ? wd : 0.0f;
        if (cnt == ADAMW_GROUP && vec_ok && e0 % 4 == 0) {
            float wv[4], gv[4], mv[4], vv[4];
            ldv<4>(wv, w + e0), ldv<4>(gv, g + e0), ldv<4>(mv, m + e0), ldv<4>(vv, v + e0);
#pragma unroll
            for (int i = 0; i < 4; i++) adamw_one(wv[i], gv[i], mv[i], vv[i], lr, beta1, beta2, eps, dwd, bc1, bc2);
            stv<4>(w + e0, wv), stv<4>(m + e0, mv), stv<4>(v + e0, vv);
            if (w16)
                for (int i = 0; i < 4; i++) w16[e0 + i] = __float2bfloat16_rn(wv[i]);
        } else {
            for (int i = 0; i < cnt; i++) {
                size_t e = e0 + i;
                float wi = w[e], mi = m[e], vi = v[e];
                adamw_one(wi, g[e], mi, vi, lr, beta1, beta2, eps, dwd, bc1, bc2);
                w[e] = wi, m[e] = mi, v[e] = vi;
                if (w16) w16[e] = __float2bfloat16_rn(wi);
            }
        }
    }
}

// The spans on the device with their first groups; uploaded again only when they change. Returns the groups.
static const DevSpan *device_spans(const AdamwSpan *spans, int n_spans, unsigned long long *groups) {
    static AdamwSpan *last;
    static int last_n;
    static unsigned long long last_groups;
    DevSpan *d = (DevSpan *)cb_scratch(SCR_ADAMW_SPANS, (size_t)n_spans * sizeof(DevSpan));
    if (last && last_n == n_spans && !memcmp(last, spans, (size_t)n_spans * sizeof *spans)) {
        *groups = last_groups;
        return d;
    }
    DevSpan *h = (DevSpan *)xmalloc((size_t)n_spans * sizeof(DevSpan), "AdamW spans");
    unsigned long long total = 0;
    for (int s = 0; s < n_spans; s++) {
        h[s] = DevSpan{spans[s].offset, spans[s].n, total, spans[s].decay};
        total += (spans[s].n + ADAMW_GROUP - 1) / ADAMW_GROUP;
    }
    cb_to_device(d, h, (size_t)n_spans * sizeof(DevSpan));
    free(h);
    free(last);
    last = (AdamwSpan *)xmalloc((size_t)n_spans * sizeof *spans, "AdamW spans");
    memcpy(last, spans, (size_t)n_spans * sizeof *spans);
    last_n = n_spans, last_groups = total;
    *groups = total;
    return d;
}

void cuda_adamw(real *w, const real *g, real *m, real *v, const AdamwSpan *spans, int n_spans, float lr, float beta1,
                float beta2, float eps, float wd, int step) {
    if (n_spans <= 0) return;
    if (n_spans > ADAMW_MAX_SPANS)
        fail("adamw: %d tensors; the CUDA update takes at most %d in one launch", n_spans, ADAMW_MAX_SPANS);
    size_t lo = spans[0].offset, hi = 0;
    for (int s = 0; s < n_spans; s++) {
        if (spans[s].offset < lo) lo = spans[s].offset;
        if (spans[s].offset + spans[s].n > hi) hi = spans[s].offset + spans[s].n;
    }
    if (hi <= lo) return;
    double bc1 = 1.0 - pow(beta1, step), bc2 = 1.0 - pow(beta2, step);
    // Inside the parameters with a fresh shadow: update the bf16 copies too (keeps the shadow fresh).
    __nv_bfloat16 *w16 = cb_fresh_shadow(w + lo, hi - lo);
    if (w16) w16 -= lo;
    else if (!cb_in_params(w + lo)) cb_params_written(w + lo, (hi - lo) * sizeof(float));
    unsigned long long groups = 0;
    const DevSpan *ds = device_spans(spans, n_spans, &groups);
    adamw_kernel<<<cb_blocks(groups, 256), 256, 0, CB.stream>>>(w, w16, g, m, v, ds, n_spans, groups, lr, beta1, beta2,
                                                               eps, wd, bc1, bc2);
    CUDA_CHECK_LAUNCH("adamw");
}
