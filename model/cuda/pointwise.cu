// model/cuda/pointwise.cu — the memory-bound ops: embedding, RoPE (q and k in one pass), SwiGLU, residual add, scale; 16-byte accesses where aligned.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/cuda/ops_cuda.cuh"

// ---------------------------------------------------------------------------------------------
// Embedding.

// out (N, C) = table (V, C)[tokens (N)]; one block per row.
__global__ void embedding_forward_kernel(float *out, const int32_t *tokens, const float *table, int C) {
    int n = blockIdx.x;
    const float *src = table + (size_t)tokens[n] * C;
    for (int c = threadIdx.x; c < C; c += blockDim.x) out[(size_t)n * C + c] = src[c];
}

void cuda_embedding_forward(real *out, const int32_t *tokens, const real *table, int N, int C) {
    if (N <= 0) return;
    embedding_forward_kernel<<<N, 256, 0, CB.stream>>>(out, cb_dev_ints(tokens, N), table, C);
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
void cuda_embedding_backward(real *dtable, const real *dout, const int32_t *tokens, int N, int C) {
    if (N <= 0) return;
    int32_t *host_tok = NULL;
    if (cb_is_device_pointer(tokens)) {
        host_tok = (int32_t *)xmalloc((size_t)N * sizeof(int32_t), "token ids");
        cb_to_host(host_tok, tokens, (size_t)N * sizeof(int32_t));
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
    int32_t *d_order = (int32_t *)cb_scratch(SCR_EMB_ORDER, (size_t)N * sizeof(int32_t));
    int32_t *d_starts = (int32_t *)cb_scratch(SCR_EMB_STARTS, ((size_t)N + 1) * sizeof(int32_t));
    int32_t *d_utok = (int32_t *)cb_scratch(SCR_EMB_TOKENS, (size_t)N * sizeof(int32_t));
    cb_to_device(d_order, order, (size_t)N * sizeof(int32_t));
    cb_to_device(d_starts, starts, ((size_t)U + 1) * sizeof(int32_t));
    cb_to_device(d_utok, utok, (size_t)U * sizeof(int32_t));
    dim3 grid((C + 127) / 128, U);
    embedding_backward_kernel<<<grid, 128, 0, CB.stream>>>(dtable, dout, d_order, d_starts, d_utok, C);
    CUDA_CHECK_LAUNCH("embedding_backward");
    free(tr), free(order), free(starts), free(utok), free(host_tok);
}

// ---------------------------------------------------------------------------------------------
// RoPE: q and k in one launch (they share every angle).

// One thread per (token n, pair i): the angle in double (at a million positions a float angle is off by
// ~0.1 rad), in half-turns: pos · freq_pi[i] with freq_pi[i] = inv_freq[i] / π computed on the host, so that
// sincospi reduces it exactly (sincos would reduce a million radians through its slow path, which keeps a
// stack frame); then the same rotation (cos and sin times scale) for every head of q (N, Hq, hd) and k (N, Hk, hd).
template <typename T>
__global__ void rope_kernel(T *q, T *k, const int32_t *pos, const double *freq_pi, int N, int Hq, int Hk, int hd,
                            double sign, double scale) {
    int half = hd / 2;
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)N * half) return;
    int n = (int)(idx / half), i = (int)(idx % half);
    double s, c;
    sincospi(pos[n] * freq_pi[i], &s, &c);
    float cf = (float)(scale * c), sf = (float)(sign * scale * s);
    for (int h = 0; h < Hq + Hk; h++) {
        T *p = h < Hq ? q + ((size_t)n * Hq + h) * hd + 2 * i : k + ((size_t)n * Hk + h - Hq) * hd + 2 * i;
        float x0 = ldf(p), x1 = ldf(p + 1);
        stf(p, x0 * cf - x1 * sf);
        stf(p + 1, x0 * sf + x1 * cf);
    }
}

// The device table of inv_freq[i] / π (hd/2), uploaded when the host table changes (a theta ramp's step, a
// dynamic scaling's length); the last upload's copy is kept to compare.
static const double *rope_freqs(const double *inv_freq, int hd) {
    static double *last;
    static int last_half;
    int half = hd / 2;
    double *d = (double *)cb_scratch(SCR_ROPE_FREQ, (size_t)half * sizeof(double));
    double *h = (double *)xmalloc((size_t)half * sizeof(double), "rope frequencies");
    for (int i = 0; i < half; i++) h[i] = inv_freq[i] / M_PI;   // model/ops_cpu.c's angle, in half-turns
    if (last && half == last_half && memcmp(h, last, (size_t)half * sizeof(double)) == 0) {
        free(h);
        return d;
    }
    cb_to_device(d, h, (size_t)half * sizeof(double));
    free(last);
    last = h, last_half = half;
    return d;
}

void cuda_rope(real *q, real *k, const int32_t *pos, int N, int Hq, int Hk, int hd, const double *inv_freq, double scale,
               int inverse, ActStore s) {
    if (N <= 0) return;
    size_t n = (size_t)N * (hd / 2);
    const double *freqs = rope_freqs(inv_freq, hd);
    const int32_t *dpos = cb_dev_ints(pos, N);
    by_store(s, [&](auto tag) {
        using T = decltype(tag);
        rope_kernel<T><<<cb_blocks(n, 256), 256, 0, CB.stream>>>((T *)q, (T *)k, dpos, freqs, N, Hq, Hk, hd,
                                                                inverse ? -1.0 : 1.0, scale);
    });
    CUDA_CHECK_LAUNCH("rope");
}

// ---------------------------------------------------------------------------------------------
// SwiGLU, residual add, scale: grid-stride loops over V-element groups (16 bytes when every pointer is
// 16-byte aligned), then the tail element by element.

// h = g·σ(g)·u
template <typename T, int V>
__global__ void swiglu_forward_kernel(T *h, const T *gate, const T *up, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x, groups = n / V;
    for (size_t gi = (size_t)blockIdx.x * blockDim.x + threadIdx.x; gi < groups; gi += stride) {
        float g[V], u[V], o[V];
        ldv<V>(g, gate + gi * V);
        ldv<V>(u, up + gi * V);
#pragma unroll
        for (int i = 0; i < V; i++) o[i] = g[i] * (1.0f / (1.0f + expf(-g[i]))) * u[i];
        stv<V>(h + gi * V, o);
    }
    for (size_t i = groups * V + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float g = ldf(gate + i);
        stf(h + i, g * (1.0f / (1.0f + expf(-g))) * ldf(up + i));
    }
}

// h = g·σ(g)·u:  dg = dh·u·σ(g)·(1 + g·(1−σ(g))),  du = dh·g·σ(g). dgate, dup may be gate, up (in place): every
// element is read before it is written, by the same thread.
template <typename T, int V>
__global__ void swiglu_backward_kernel(T *dgate, T *dup, const T *dh, const T *gate, const T *up, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x, groups = n / V;
    for (size_t gi = (size_t)blockIdx.x * blockDim.x + threadIdx.x; gi < groups; gi += stride) {
        float g[V], u[V], d[V], dg[V], du[V];
        ldv<V>(g, gate + gi * V);
        ldv<V>(u, up + gi * V);
        ldv<V>(d, dh + gi * V);
#pragma unroll
        for (int i = 0; i < V; i++) {
            float s = 1.0f / (1.0f + expf(-g[i]));
            dg[i] = d[i] * u[i] * s * (1 + g[i] * (1 - s));
            du[i] = d[i] * g[i] * s;
        }
        stv<V>(dgate + gi * V, dg);
        stv<V>(dup + gi * V, du);
    }
    for (size_t i = groups * V + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        float g = ldf(gate + i), u = ldf(up + i), d = ldf(dh + i), s = 1.0f / (1.0f + expf(-g));
        stf(dgate + i, d * u * s * (1 + g * (1 - s)));
        stf(dup + i, d * g * s);
    }
}

void cuda_swiglu_forward(real *h, const real *gate, const real *up, int N, int F, ActStore s) {
    size_t n = (size_t)N * F;
    if (!n) return;
    bool vec = aligned16(h) && aligned16(gate) && aligned16(up);
    by_store(s, [&](auto tag) {
        using T = decltype(tag);
        constexpr int V = 16 / sizeof(T);
        if (vec) swiglu_forward_kernel<T, V><<<cb_blocks(n / V, 256), 256, 0, CB.stream>>>((T *)h, (const T *)gate, (const T *)up, n);
        else swiglu_forward_kernel<T, 1><<<cb_blocks(n, 256), 256, 0, CB.stream>>>((T *)h, (const T *)gate, (const T *)up, n);
    });
    CUDA_CHECK_LAUNCH("swiglu_forward");
}

void cuda_swiglu_backward(real *dgate, real *dup, const real *dh, const real *gate, const real *up, int N, int F,
                          ActStore s) {
    size_t n = (size_t)N * F;
    if (!n) return;
    bool vec = aligned16(dgate) && aligned16(dup) && aligned16(dh) && aligned16(gate) && aligned16(up);
    by_store(s, [&](auto tag) {
        using T = decltype(tag);
        constexpr int V = 16 / sizeof(T);
        if (vec)
            swiglu_backward_kernel<T, V><<<cb_blocks(n / V, 256), 256, 0, CB.stream>>>(
                (T *)dgate, (T *)dup, (const T *)dh, (const T *)gate, (const T *)up, n);
        else
            swiglu_backward_kernel<T, 1><<<cb_blocks(n, 256), 256, 0, CB.stream>>>(
                (T *)dgate, (T *)dup, (const T *)dh, (const T *)gate, (const T *)up, n);
    });
    CUDA_CHECK_LAUNCH("swiglu_backward");
}

// y (n) += x (n), fp32
template <int V>
__global__ void add_kernel(float *y, const float *x, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x, groups = n / V;
    for (size_t gi = (size_t)blockIdx.x * blockDim.x + threadIdx.x; gi < groups; gi += stride) {
        float a[V], b[V];
        ldv<V>(a, y + gi * V);
        ldv<V>(b, x + gi * V);
#pragma unroll
        for (int i = 0; i < V; i++) a[i] = a[i] + b[i];
        stv<V>(y + gi * V, a);
    }
    for (size_t i = groups * V + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) y[i] += x[i];
}

void cuda_add_inplace(real *y, const real *x, size_t n) {
    if (!n) return;
    cb_params_written(y, n * sizeof(float));
    if (aligned16(y) && aligned16(x)) add_kernel<4><<<cb_blocks(n / 4, 256), 256, 0, CB.stream>>>(y, x, n);
    else add_kernel<1><<<cb_blocks(n, 256), 256, 0, CB.stream>>>(y, x, n);
    CUDA_CHECK_LAUNCH("add_inplace");
}

// x (n) *= a, fp32
template <int V>
__global__ void scale_kernel(float *x, float a, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x, groups = n / V;
    for (size_t gi = (size_t)blockIdx.x * blockDim.x + threadIdx.x; gi < groups; gi += stride) {
        float v[V];
        ldv<V>(v, x + gi * V);
#pragma unroll
        for (int i = 0; i < V; i++) v[i] *= a;
        stv<V>(x + gi * V, v);
    }
    for (size_t i = groups * V + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) x[i] *= a;
}

void cuda_scale(real *x, float a, size_t n) {
    cb_params_written(x, n * sizeof(float));
    if (!n) return;
    if (aligned16(x)) scale_kernel<4><<<cb_blocks(n / 4, 256), 256, 0, CB.stream>>>(x, a, n);
    else scale_kernel<1><<<cb_blocks(n, 256), 256, 0, CB.stream>>>(x, a, n);
    CUDA_CHECK_LAUNCH("scale");
}
