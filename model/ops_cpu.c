// model/ops_cpu.c — the CPU backend: every model op forward and backward in C + OpenMP, matmuls through BLAS.
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "core/backend.h"
#include "core/common.h"
#include "model/ops.h"

static void *cpu_alloc(size_t bytes, const char *what) { return xmalloc(bytes, what); }
static void cpu_release(void *p) { free(p); }
static void cpu_zero(void *p, size_t bytes) { memset(p, 0, bytes); }
static void cpu_copy(void *dst, const void *src, size_t bytes) { memmove(dst, src, bytes); }

// The CPU is the fp32 reference: an [act] tensor in any other storage is a caller's bug.
static void f32_only(ActStore s, const char *op) {
    if (s != ACT_F32) fail("%s: the CPU backend stores activations as fp32 only (--activations bf16 is a CUDA setting)", op);
}

static void embedding_forward(real *out, const int32_t *tokens, const real *table, int N, int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) memcpy(out + (size_t)n * C, table + (size_t)tokens[n] * C, C * sizeof(real));
}

// Serial on purpose: rows that share a token add into the same table row.
static void embedding_backward(real *dtable, const real *dout, const int32_t *tokens, int N, int C) {
    for (int n = 0; n < N; n++) {
        real *d = dtable + (size_t)tokens[n] * C;
        const real *g = dout + (size_t)n * C;
        for (int c = 0; c < C; c++) d[c] += g[c];
    }
}

static void add_inplace(real *y, const real *x, size_t n);

static void rmsnorm_forward(real *y, real *rstd, real *x, const real *add, const real *w, int N, int C, float eps,
                            ActStore ys) {
    f32_only(ys, "rmsnorm_forward");
    if (add) add_inplace(x, add, (size_t)N * C);   // the residual add, then the norm of its result
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const real *xr = x + (size_t)n * C;
        real *yr = y + (size_t)n * C;
        real ss = 0;
        for (int c = 0; c < C; c++) ss += xr[c] * xr[c];
        real r = (real)1 / sqrt_r(ss / C + eps);
        rstd[n] = r;
        for (int c = 0; c < C; c++) yr[c] = xr[c] * r * w[c];
    }
}

// y = x·r·w with r = (mean(x²)+eps)^-1/2:  dx = r·(dy∘w) − r³/C · x · Σ(dy∘w∘x);  dw += Σ_n dy∘x·r.
static void rmsnorm_backward(real *dx, real *dw, const real *dy, const real *x, const real *w, const real *rstd, int N,
                             int C) {
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        const real *xr = x + (size_t)n * C, *dyr = dy + (size_t)n * C;
        real *dxr = dx + (size_t)n * C;
        real r = rstd[n], dot = 0;
        for (int c = 0; c < C; c++) dot += dyr[c] * w[c] * xr[c];
        real k = r * r * r * dot / C;
        for (int c = 0; c < C; c++) dxr[c] += r * dyr[c] * w[c] - k * xr[c];
    }
    for (int n = 0; n < N; n++) {   // serial over rows: a fixed summation order, deterministic
        const real *xr = x + (size_t)n * C, *dyr = dy + (size_t)n * C;
        real r = rstd[n];
        for (int c = 0; c < C; c++) dw[c] += dyr[c] * xr[c] * r;
    }
}

static void matmul_forward(real *out, const real *in, const real *w, int N, int In, int Out, ActStore outs,
                           ActStore ins) {
    f32_only(outs, "matmul_forward"), f32_only(ins, "matmul_forward");
    // One row (a decoded token): gemv reads w once; gemm would first copy all of it into its packed panels.
    if (N == 1)
        cblas_xgemv(CblasRowMajor, CblasNoTrans, Out, In, 1, w, In, in, 1, 0, out, 1);
    else
        cblas_xgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, Out, In, 1, in, In, w, In, 0, out, Out);
}

static void matmul_backward(real *din, real *dw, const real *dout, const real *in, const real *w, int N, int In, int Out,
                            int accumulate_din, ActStore dins, ActStore douts, ActStore ins) {
    f32_only(dins, "matmul_backward"), f32_only(douts, "matmul_backward"), f32_only(ins, "matmul_backward");
    if (din) cblas_xgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, In, Out, 1, dout, Out, w, In, accumulate_din ? 1 : 0, din, In);
    if (dw) cblas_xgemm(CblasRowMajor, CblasTrans, CblasNoTrans, Out, In, N, 1, dout, Out, in, In, 1, dw, In);
}

// Rotates the nh heads of row n of x (N, nh, hd) by angle pair i: cos c, sin s.
static inline void rotate_pair(real *x, int n, int nh, int hd, int i, real c, real s) {
    for (int h = 0; h < nh; h++) {
        real *p = x + ((size_t)n * nh + h) * hd + 2 * i;
        real x0 = p[0], x1 = p[1];
        p[0] = x0 * c - x1 * s;
        p[1] = x0 * s + x1 * c;
    }
}

// Angles in double: at a million positions a float angle would be off by ~0.1 rad.
static void rope(real *q, real *k, const int32_t *pos, int N, int Hq, int Hk, int hd, const double *inv_freq,
                 double scale, int inverse, ActStore st) {
    f32_only(st, "rope");
    int half = hd / 2;
    double sign = inverse ? -1.0 : 1.0;
#pragma omp parallel for schedule(static)
    for (int n = 0; n < N; n++) {
        for (int i = 0; i < half; i++) {
            double a = pos[n] * inv_freq[i];
            real c = (real)(scale * cos(a)), s = (real)(sign * scale * sin(a));
            rotate_pair(q, n, Hq, hd, i, c, s);
            rotate_pair(k, n, Hk, hd, i, c, s);
        }
    }
}

static void swiglu_forward(real *h, const real *gate, const real *up, int N, int F, ActStore st) {
    f32_only(st, "swiglu_forward");
    size_t n = (size_t)N * F;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        real g = gate[i], s = 1 / (1 + rexp(-g));
        h[i] = g * s * up[i];
    }
}

// h = g·σ(g)·u:  dg = dh·u·σ(g)·(1 + g·(1−σ(g))),  du = dh·g·σ(g)
static void swiglu_backward(real *dgate, real *dup, const real *dh, const real *gate, const real *up, int N, int F,
                            ActStore st) {
    f32_only(st, "swiglu_backward");
    size_t n = (size_t)N * F;
#pragma omp parallel for simd schedule(static)
    for (size_t i = 0; i < n; i++) {
        real g = gate[i], s = 1 / (1 + rexp(-g)), d = dh[i];
        dgate[i] = d * up[i] * s * (1 + g * (1 - s));
        dup[i] = d * g * s;
    }
}

static void add_inplace(real *y, const real *x, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) y[i] += x[i];
}

// Softmax cross-entropy of one row of logits; turns the row into its gradient when want_grad.
static double ce_row(real *logits, int V, int target, double grad_scale, int want_grad) {
    real mx = logits[0];
    for (int j = 1; j < V; j++) mx = logits[j] > mx ? logits[j] : mx;
    double sum = 0;
    for (int j = 0; j < V; j++) sum += exp((double)(logits[j] - mx));
    double lse = mx + log(sum);
    double loss = lse - logits[target];
    if (want_grad) {
        for (int j = 0; j < V; j++) logits[j] = (real)(exp(logits[j] - lse) * grad_scale);
        logits[target] -= (real)grad_scale;
    }
    return loss;
}

static double lmhead_ce(real *dx, real *dw, real *losses, const real *x, const real *w, const int32_t *targets, int N,
                        int C, int V, int chunk, double grad_scale, ActStore xs) {
    f32_only(xs, "lmhead_ce");
    if (chunk <= 0 || chunk > N) chunk = N;
    real *logits = xmalloc((size_t)chunk * V * sizeof(real), "a chunk of logits");   // (chunk, V)
    double *row_loss = xmalloc((size_t)chunk * sizeof(double), "chunk losses");       // (chunk)
    double total = 0;
    for (int n0 = 0; n0 < N; n0 += chunk) {
        int rows = N - n0 < chunk ? N - n0 : chunk;
        const real *xc = x + (size_t)n0 * C;
        cblas_xgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, V, C, 1, xc, C, w, C, 0, logits, V);
#pragma omp parallel for schedule(static)
        for (int r = 0; r < rows; r++) {
            real *lr = logits + (size_t)r * V;
            int t = targets[n0 + r];
            row_loss[r] = 0;
            if (t >= 0) row_loss[r] = ce_row(lr, V, t, grad_scale, dx != NULL);
            else if (dx) memset(lr, 0, V * sizeof(real));
        }
        for (int r = 0; r < rows; r++) {   // summed in row order: deterministic
            total += row_loss[r];
            if (losses) losses[n0 + r] = (real)row_loss[r];
        }
        if (!dx) continue;
        // dlogits (rows, V) now sits in `logits`: dx = dlogits @ w, dw += dlogitsᵀ @ x
        cblas_xgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, C, V, 1, logits, V, w, C, 0, dx + (size_t)n0 * C, C);
        cblas_xgemm(CblasRowMajor, CblasTrans, CblasNoTrans, V, C, rows, 1, logits, V, xc, C, 1, dw, C);
    }
    free(row_loss);
    free(logits);
    return total;
}

// Per-thread partial sums added in thread order: the same result on every run with the same thread count.
static double sumsq(const real *x, size_t n) {
    double partial[256] = {0};
    int nt = 1;
#pragma omp parallel
    {
        int t = omp_get_thread_num();
#pragma omp single
        nt = omp_get_num_threads();
        double s = 0;
#pragma omp for schedule(static)
        for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
        if (t < 256) partial[t] = s;
    }
    double total = 0;
    for (int t = 0; t < nt && t < 256; t++) total += partial[t];
    return total;
}

static void scale(real *x, float a, size_t n) {
#pragma omp parallel for schedule(static)
    for (size_t i = 0; i < n; i++) x[i] *= a;
}

// Decoupled weight decay (AdamW): w -= lr·(m̂/(√v̂+eps) + wd·w), one tensor (span) after another.
static void adamw(real *w, const real *g, real *m, real *v, const AdamwSpan *spans, int n_spans, float lr, float beta1,
                  float beta2, float eps, float wd, int step) {
    double bc1 = 1.0 - pow(beta1, step), bc2 = 1.0 - pow(beta2, step);
    for (const AdamwSpan *sp = spans; sp < spans + n_spans; sp++) {
        real decay_wd = sp->decay ? wd : 0;
#pragma omp parallel for schedule(static)
        for (size_t i = sp->offset; i < sp->offset + sp->n; i++) {
            real gi = g[i];
            m[i] = beta1 * m[i] + (1 - beta1) * gi;
            v[i] = beta2 * v[i] + (1 - beta2) * gi * gi;
            real mh = (real)(m[i] / bc1), vh = (real)(v[i] / bc2);
            w[i] -= lr * (mh / (sqrt_r(vh) + eps) + decay_wd * w[i]);
        }
    }
}

const Backend BACKEND_CPU = {
    .name = "cpu",
    .alloc = cpu_alloc,
    .release = cpu_release,
    .zero = cpu_zero,
    .copy = cpu_copy,
    .to_device = cpu_copy,
    .to_host = cpu_copy,
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
    .attn_state_reset = attn_cpu_state_reset,
    .attn_forward_block = attn_cpu_forward_block,
    .attn_finalize = attn_cpu_finalize,
    .attn_backward_prep = attn_cpu_backward_prep,
    .attn_backward_block = attn_cpu_backward_block,
    .sumsq = sumsq,
    .scale = scale,
    .adamw = adamw,
};
