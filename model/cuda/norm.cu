// model/cuda/norm.cu — RMSNorm forward (with the residual add fused in) and backward: one warp per row, fixed-order reductions.
#include "model/cuda/ops_cuda.cuh"

enum { NORM_WARPS = 8 };   // rows per block of the forward

// y (N, C) [T] = x / rms(x) * w, rstd (N); with add != NULL first x += add (written back), all in one pass over the
// row. One warp per row; lane l owns the V-element groups l, l + 32, ... (V = 4 with 16-byte aligned rows, else 1),
// so the sum of squares has the same order whether the add is fused or not: the forward's xn2 and the one
// recompute --recompute mlp makes from the kept xm are the same bits.
template <typename T, int V>
__global__ void __launch_bounds__(NORM_WARPS * 32) rmsnorm_forward_kernel(T *y, float *rstd, float *x, const float *add,
                                                                          const float *w, int N, int C, float eps) {
    int n = blockIdx.x * NORM_WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (n >= N) return;
    float *xr = x + (size_t)n * C;
    const float *ar = add ? add + (size_t)n * C : nullptr;
    float ss = 0;
    for (int c = lane * V; c < C; c += 32 * V) {
        float v[V];
        ldv<V>(v, xr + c);
        if (ar) {
            float a[V];
            ldv<V>(a, ar + c);
#pragma unroll
            for (int i = 0; i < V; i++) v[i] = v[i] + a[i];
            stv<V>(xr + c, v);
        }
#pragma unroll
        for (int i = 0; i < V; i++) ss += v[i] * v[i];
    }
    ss = warp_sum(ss);
    float r = 1.0f / sqrtf(ss / C + eps);
    if (lane == 0) rstd[n] = r;
    T *yr = y + (size_t)n * C;
    for (int c = lane * V; c < C; c += 32 * V) {
        float v[V], wv[V], o[V];
        ldv<V>(v, xr + c);   // this lane's own writes above (or the input): program order, no barrier needed
        ldv<V>(wv, w + c);
#pragma unroll
        for (int i = 0; i < V; i++) o[i] = v[i] * r * wv[i];
        if constexpr (V == 4 && sizeof(T) == 2) {   // 4 bf16: one 8-byte store
            __nv_bfloat162 h[2] = {__floats2bfloat162_rn(o[0], o[1]), __floats2bfloat162_rn(o[2], o[3])};
            *reinterpret_cast<uint2 *>(yr + c) = *reinterpret_cast<uint2 *>(h);
        } else if constexpr (V == 4) {
            stv<4>(reinterpret_cast<float *>(yr + c), o);
        } else {
            stf(yr + c, o[0]);
        }
    }
}

void cuda_rmsnorm_forward(real *y, real *rstd, real *x, const real *add, const real *w, int N, int C, float eps,
                          ActStore ys) {
    if (N <= 0) return;
    if (add) cb_params_written(x, (size_t)N * C * sizeof(float));
    // Vector groups of 4 need every row start 16-byte aligned in x, add, w and 8-byte aligned in y.
    bool vec = C % 4 == 0 && aligned16(x) && (!add || aligned16(add)) && aligned16(w) && ((uintptr_t)y & 7) == 0;
    dim3 grid((N + NORM_WARPS - 1) / NORM_WARPS);
    by_store(ys, [&](auto tag) {
        using T = decltype(tag);
        if (vec) rmsnorm_forward_kernel<T, 4><<<grid, NORM_WARPS * 32, 0, CB.stream>>>((T *)y, rstd, x, add, w, N, C, eps);
        else rmsnorm_forward_kernel<T, 1><<<grid, NORM_WARPS * 32, 0, CB.stream>>>((T *)y, rstd, x, add, w, N, C, eps);
    });
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

void cuda_rmsnorm_backward(real *dx, real *dw, const real *dy, const real *x, const real *w, const real *rstd, int N,
                           int C) {
    if (N <= 0) return;
    rmsnorm_backward_dx_kernel<<<N, 256, 0, CB.stream>>>(dx, dy, x, w, rstd, C);
    CUDA_CHECK_LAUNCH("rmsnorm_backward dx");
    int rows_per_chunk = 256, chunks = (N + rows_per_chunk - 1) / rows_per_chunk;
    if (chunks > 1024) chunks = 1024, rows_per_chunk = (N + chunks - 1) / chunks;
    float *partial = (float *)cb_scratch(SCR_PARTIAL, (size_t)chunks * C * sizeof(float));
    dim3 grid((C + 31) / 32, chunks), block(32, 8);
    rmsnorm_dw_partial_kernel<<<grid, block, 0, CB.stream>>>(partial, dy, x, rstd, N, C, rows_per_chunk);
    CUDA_CHECK_LAUNCH("rmsnorm_backward dw");
    column_sum_add_kernel<<<(C + 255) / 256, 256, 0, CB.stream>>>(dw, partial, chunks, C);
    CUDA_CHECK_LAUNCH("rmsnorm_backward dw sum");
}
