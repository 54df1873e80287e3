// model/cuda/reference.cu — the kernels the H100 run of 2026-11-23 verified (docs/gpu.md): the default until the fused step's (--fused) pass their GPU tests.
// Verbatim from model/ops_cuda.cu at that run (commit fde5f6b), fp32 storage only: RMSNorm forward (one block per
// row; the residual add is add_inplace's own launch before it), RoPE (one launch per tensor, angles from pow in
// double on the device), SwiGLU, residual add and scale (grid-stride, 4-byte accesses), AdamW (one launch per
// tensor). The ops in norm.cu, pointwise.cu and optim.cu call these unless --fused or bf16 storage asks for theirs;
// once test_gpu_fused and the loss curve pass with --fused on a GPU, this file goes.
#include <math.h>

#include "model/cuda/ops_cuda.cuh"

// y (N, C) = x / rms(x) * w, rstd (N); one block per row.
__global__ void ref_rmsnorm_forward_kernel(float *y, float *rstd, const float *x, const float *w, int C, float eps) {
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

__global__ void ref_add_kernel(float *y, const float *x, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        y[i] += x[i];
}

void ref_add_inplace(float *y, const float *x, size_t n) {
    if (!n) return;
    ref_add_kernel<<<cb_blocks(n, 256), 256, 0, CB.stream>>>(y, x, n);
    CUDA_CHECK_LAUNCH("add_inplace");
}

void ref_rmsnorm_forward(float *y, float *rstd, float *x, const float *add, const float *w, int N, int C, float eps) {
    if (N <= 0) return;
    if (add) ref_add_inplace(x, add, (size_t)N * C);
    ref_rmsnorm_forward_kernel<<<N, 256, 0, CB.stream>>>(y, rstd, x, w, C, eps);
    CUDA_CHECK_LAUNCH("rmsnorm_forward");
}

// One thread per (token n, pair i): the angle in double (at a million positions a float angle is
// off by ~0.1 rad), then the same rotation for every head. x (N, nh, hd).
__global__ void ref_rope_kernel(float *x, const int32_t *pos, int N, int nh, int hd, double theta, double sign) {
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

void ref_rope(float *q, float *k, const int32_t *pos, int N, int Hq, int Hk, int hd, float theta, int inverse) {
    if (N <= 0) return;
    size_t n = (size_t)N * (hd / 2);
    const int32_t *dpos = cb_dev_ints(pos, N);
    ref_rope_kernel<<<cb_blocks(n, 256), 256, 0, CB.stream>>>(q, dpos, N, Hq, hd, (double)theta, inverse ? -1.0 : 1.0);
    CUDA_CHECK_LAUNCH("rope");
    ref_rope_kernel<<<cb_blocks(n, 256), 256, 0, CB.stream>>>(k, dpos, N, Hk, hd, (double)theta, inverse ? -1.0 : 1.0);
    CUDA_CHECK_LAUNCH("rope");
}

__global__ void ref_swiglu_forward_kernel(float *h, const float *gate, const float *up, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float g = gate[i], s = 1.0f / (1.0f + expf(-g));
        h[i] = g * s * up[i];
    }
}

// h = g·σ(g)·u:  dg = dh·u·σ(g)·(1 + g·(1−σ(g))),  du = dh·g·σ(g)
__global__ void ref_swiglu_backward_kernel(float *dgate, float *dup, const float *dh, const float *gate, const float *up,
                                           size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float g = gate[i], s = 1.0f / (1.0f + expf(-g)), d = dh[i];
        dgate[i] = d * up[i] * s * (1 + g * (1 - s));
        dup[i] = d * g * s;
    }
}

void ref_swiglu_forward(float *h, const float *gate, const float *up, size_t n) {
    if (!n) return;
    ref_swiglu_forward_kernel<<<cb_blocks(n, 256), 256, 0, CB.stream>>>(h, gate, up, n);
    CUDA_CHECK_LAUNCH("swiglu_forward");
}

void ref_swiglu_backward(float *dgate, float *dup, const float *dh, const float *gate, const float *up, size_t n) {
    if (!n) return;
    ref_swiglu_backward_kernel<<<cb_blocks(n, 256), 256, 0, CB.stream>>>(dgate, dup, dh, gate, up, n);
    CUDA_CHECK_LAUNCH("swiglu_backward");
}

__global__ void ref_scale_kernel(float *x, float a, size_t n) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        x[i] *= a;
}

void ref_scale(float *x, float a, size_t n) {
    if (!n) return;
    ref_scale_kernel<<<cb_blocks(n, 256), 256, 0, CB.stream>>>(x, a, n);
    CUDA_CHECK_LAUNCH("scale");
}

// Decoupled weight decay (AdamW): w -= lr·(m̂/(√v̂+eps) + wd·w); bias corrections in double as on the CPU.
// w16 (n), when not NULL, is w's bf16 copy in the parameter shadow: written with w, in the same pass.
__global__ void ref_adamw_kernel(float *w, __nv_bfloat16 *w16, const float *g, float *m, float *v, size_t n, float lr,
                                 float beta1, float beta2, float eps, float wd, double bc1, double bc2) {
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
        float gi = g[i];
        // every rounding spelled out, as in optim.cu: the fused update must match this one bit for bit
        float mi = __fmaf_rn(beta1, m[i], __fmul_rn(1 - beta1, gi));
        float vi = __fmaf_rn(beta2, v[i], __fmul_rn(__fmul_rn(1 - beta2, gi), gi));
        m[i] = mi, v[i] = vi;
        float mh = (float)(mi / bc1), vh = (float)(vi / bc2);
        float wi = __fmaf_rn(-lr, __fmaf_rn(wd, w[i], __fdiv_rn(mh, __fadd_rn(__fsqrt_rn(vh), eps))), w[i]);
        w[i] = wi;
        if (w16) w16[i] = __float2bfloat16_rn(wi);
    }
}

// One launch per tensor (span).
void ref_adamw(float *w, const float *g, float *m, float *v, const AdamwSpan *spans, int n_spans, float lr, float beta1,
               float beta2, float eps, float wd, int step) {
    double bc1 = 1.0 - pow(beta1, step), bc2 = 1.0 - pow(beta2, step);
    for (const AdamwSpan *s = spans; s < spans + n_spans; s++) {
        if (!s->n) continue;
        float *ws = w + s->offset;
        __nv_bfloat16 *w16 = cb_fresh_shadow(ws, s->n);
        if (!w16 && !cb_in_params(ws)) cb_params_written(ws, s->n * sizeof(float));
        ref_adamw_kernel<<<cb_blocks(s->n, 256), 256, 0, CB.stream>>>(ws, w16, g + s->offset, m + s->offset,
                                                                     v + s->offset, s->n, lr, beta1, beta2, eps,
                                                                     s->decay ? wd : 0.0f, bc1, bc2);
        CUDA_CHECK_LAUNCH("adamw");
    }
}
