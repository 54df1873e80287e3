// model/cuda/lmhead.cu — the LM head fused with cross-entropy, chunked over rows: logits of a chunk, its loss and its gradient, never the (N, V) logits.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/cuda/ops_cuda.cuh"

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

// Rows in row order into the host and the caller's losses: deterministic, as the CPU sums them.
static double sum_row_losses(const double *row_loss, real *losses, int N) {
    double *host = (double *)xmalloc((size_t)N * sizeof(double), "row losses");
    cb_to_host(host, row_loss, (size_t)N * sizeof(double));
    double total = 0;
    for (int n = 0; n < N; n++) total += host[n];
    if (losses) {
        float *lf = (float *)xmalloc((size_t)N * sizeof(float), "row losses");
        for (int n = 0; n < N; n++) lf[n] = (float)host[n];
        if (cb_is_device_pointer(losses)) cb_to_device(losses, lf, (size_t)N * sizeof(float));
        else memcpy(losses, lf, (size_t)N * sizeof(float));
        free(lf);
    }
    free(host);
    return total;
}

double cuda_lmhead_ce(real *dx, real *dw, real *losses, const real *x, const real *w, const int32_t *targets, int N,
                      int C, int V, int chunk, double grad_scale, ActStore xs) {
    if (N <= 0) return 0;
    // The GPU wants big chunks to keep the matmuls busy: at least `chunk` rows, up to 512 MiB of logits
    // (--logits-mb changes the budget; 0 keeps `chunk` as given, for tests).
    size_t budget_mb = (size_t)g_logits_mb;
    size_t cap_rows = (budget_mb << 20) / ((size_t)V * sizeof(float));
    int rows_max = (int)(cap_rows < 1 ? 1 : cap_rows);
    if (chunk < rows_max) chunk = rows_max;
    if (chunk > N) chunk = N;
    float *logits = (float *)cb_scratch(SCR_LOGITS, (size_t)chunk * V * sizeof(float));   // (chunk, V)
    double *row_loss = (double *)cb_scratch(SCR_ROWLOSS, (size_t)N * sizeof(double));      // (N)
    const int32_t *tg = cb_dev_ints(targets, N);
    for (int n0 = 0; n0 < N; n0 += chunk) {
        int rows = N - n0 < chunk ? N - n0 : chunk;
        const real *xc = act_at(x, xs, (size_t)n0 * C);   // (rows, C) [act]
        cb_gemm(false, true, rows, V, C, xc, C, xs, w, C, ACT_F32, 0.0f, logits, V, ACT_F32);
        ce_rows_kernel<<<rows, 256, 0, CB.stream>>>(row_loss + n0, logits, tg + n0, V, grad_scale, dx != NULL);
        CUDA_CHECK_LAUNCH("lmhead_ce rows");
        if (!dx) continue;
        // dlogits (rows, V) now sits in `logits`: dx = dlogits @ w, dw += dlogitsᵀ @ x
        cb_gemm(false, false, rows, C, V, logits, V, ACT_F32, w, C, ACT_F32, 0.0f, dx + (size_t)n0 * C, C, ACT_F32);
        cb_gemm(true, false, V, C, rows, logits, V, ACT_F32, xc, C, xs, 1.0f, dw, C, ACT_F32);
    }
    return sum_row_losses(row_loss, losses, N);
}
