// bench/gpu_kernels_bench.c — the CUDA backend's memory-bound kernels against the GPU's copy bandwidth: GB/s each and the ratio (the target is ≥ 0.8).
// Shapes of the 125m preset at T=4096, B=8 (N = 32768 rows, C = 768, F = 2048, 12 heads of 64) unless given:
//   gpu_kernels_bench [N C F H]
// Each kernel runs through the backend table (model/cuda/*.cu) as training calls it; its bytes are what it must
// read and write at least (a second read that hits in L2 is not counted), its time the best of REPS after a
// warm-up, ordered on the backend's stream. The copy is a device-to-device cudaMemcpy of the largest buffer,
// counted as bytes read + written. One line per kernel:
//   kernel name=rmsnorm_forward store=bf16 bytes=... ms=... gbps=... copy_gbps=... ratio=...
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend_cuda.h"
#include "core/common.h"
#include "core/rng.h"
#include "model/config.h"
#include "model/ops.h"

enum { REPS = 20 };

static const Backend *be = &BACKEND_CUDA;
static double g_copy_gbps;

typedef void (*KernelFn)(void *ctx);

// Best time of REPS runs of fn (after one warm-up), seconds.
static double best_time(KernelFn fn, void *ctx) {
    double best = 1e30;
    for (int r = 0; r <= REPS; r++) {
        cuda_backend_sync();
        double t0 = now_seconds();
        fn(ctx);
        cuda_backend_sync();
        double t = now_seconds() - t0;
        if (r > 0 && t < best) best = t;
    }
    return best;
}

static void report(const char *name, const char *store, double bytes, double s) {
    double gbps = bytes / s / 1e9;
    printf("kernel name=%s store=%s bytes=%.0f ms=%.4f gbps=%.1f copy_gbps=%.1f ratio=%.2f\n", name, store, bytes,
           s * 1e3, gbps, g_copy_gbps, gbps / g_copy_gbps);
    fflush(stdout);
}

static real *buffer(size_t bytes, uint64_t seed) {
    size_t n = bytes / sizeof(float);
    float *h = xmalloc(n * sizeof(float) + 16, "bench data");
    Rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) h[i] = (float)(rng_normal(&r) * 0.5);   // small values: also valid bf16 pairs
    real *d = be->alloc(bytes + 256, "bench buffer");
    be->to_device(d, h, n * sizeof(float));
    free(h);
    return d;
}

typedef struct {
    int N, C, F, H, hd;
    ActStore st;
    real *a, *b, *c, *d, *e, *w, *rstd;
    int32_t *pos;
    size_t bytes;
    AdamwSpan *spans;
    int n_spans;
} Ctx;

static void run_copy(void *p) {
    Ctx *x = p;
    be->copy(x->b, x->a, x->bytes);
}
static void run_norm(void *p) {
    Ctx *x = p;
    be->rmsnorm_forward(x->b, x->rstd, x->a, NULL, x->w, x->N, x->C, 1e-5f, x->st);
}
static void run_norm_residual(void *p) {
    Ctx *x = p;
    be->rmsnorm_forward(x->b, x->rstd, x->a, x->c, x->w, x->N, x->C, 1e-5f, x->st);
}
static void run_norm_backward(void *p) {
    Ctx *x = p;
    be->rmsnorm_backward(x->b, x->d, x->c, x->a, x->w, x->rstd, x->N, x->C);
}
static void run_swiglu(void *p) {
    Ctx *x = p;
    be->swiglu_forward(x->c, x->a, x->b, x->N, x->F, x->st);
}
static void run_swiglu_backward(void *p) {
    Ctx *x = p;
    be->swiglu_backward(x->d, x->e, x->c, x->a, x->b, x->N, x->F, x->st);
}
static void run_rope(void *p) {
    Ctx *x = p;
    double inv_freq[256], scale;   // (hd/2)
    ModelConfig mc = {.dim = x->hd, .n_head = 1, .rope_theta = 10000.0f};
    rope_frequencies(&mc, 0, inv_freq, &scale);
    be->rope(x->a, x->b, x->pos, x->N, x->H, x->H, x->hd, inv_freq, scale, 0, x->st);
}
static void run_add(void *p) {
    Ctx *x = p;
    be->add_inplace(x->a, x->b, (size_t)x->N * x->C);
}
static void run_adamw(void *p) {
    Ctx *x = p;
    be->adamw(x->a, x->b, x->c, x->d, x->spans, x->n_spans, 1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 3);
}

int main(int argc, char **argv) {
    if (cuda_device_count() == 0) {
        printf("SKIP: no CUDA device (gpu_kernels_bench)\n");
        return 0;
    }
    Ctx x = {.N = 32768, .C = 768, .F = 2048, .H = 12};
    if (argc == 5) x.N = atoi(argv[1]), x.C = atoi(argv[2]), x.F = atoi(argv[3]), x.H = atoi(argv[4]);
    else if (argc != 1) fail_usage("usage: gpu_kernels_bench [N C F H]");
    x.hd = x.C / x.H;
    cuda_backend_init(0, 0);
    char desc[256];
    cuda_device_describe(desc, sizeof desc);
    printf("# %s; N=%d C=%d F=%d H=%d hd=%d\n", desc, x.N, x.C, x.F, x.H, x.hd);
    size_t big = (size_t)x.N * x.F * sizeof(float);   // every buffer holds the largest operand
    x.a = buffer(big, 1), x.b = buffer(big, 2), x.c = buffer(big, 3), x.d = buffer(big, 4), x.e = buffer(big, 5);
    x.w = buffer((size_t)x.F * 4, 6), x.rstd = buffer((size_t)x.N * 4, 7);
    x.pos = xmalloc((size_t)x.N * sizeof(int32_t), "positions");
    for (int i = 0; i < x.N; i++) x.pos[i] = i;
    x.bytes = big;
    g_copy_gbps = 2.0 * big / best_time(run_copy, &x) / 1e9;
    report("copy", "-", 2.0 * big, 2.0 * big / g_copy_gbps / 1e9);
    double NC = (double)x.N * x.C, NF = (double)x.N * x.F, rope_n = 2.0 * x.N * x.H * x.hd;
    for (int s = 0; s < 2; s++) {
        x.st = s ? ACT_BF16 : ACT_F32;
        const char *sn = s ? "bf16" : "fp32";
        double e = s ? 2 : 4;
        report("rmsnorm_forward", sn, NC * 4 + NC * e + x.N * 4.0, best_time(run_norm, &x));
        report("rmsnorm_forward_residual", sn, 3 * NC * 4 + NC * e + x.N * 4.0, best_time(run_norm_residual, &x));
        report("swiglu_forward", sn, 3 * NF * e, best_time(run_swiglu, &x));
        report("swiglu_backward", sn, 5 * NF * e, best_time(run_swiglu_backward, &x));
        report("rope_qk", sn, 2 * rope_n * e, best_time(run_rope, &x));
    }
    x.st = ACT_F32;
    report("rmsnorm_backward", "fp32", 6 * NC * 4, best_time(run_norm_backward, &x));
    report("add_inplace", "fp32", 3 * NC * 4, best_time(run_add, &x));
    // AdamW over the 125m preset's parameter count in one launch, as ~150 tensors of its table.
    size_t P = big / sizeof(float) < 124000000 ? big / sizeof(float) : 124000000;
    x.n_spans = 150;
    x.spans = xmalloc(x.n_spans * sizeof(AdamwSpan), "spans");
    for (int i = 0; i < x.n_spans; i++)
        x.spans[i] = (AdamwSpan){.offset = P / x.n_spans * i, .n = i + 1 < x.n_spans ? P / x.n_spans : P - P / x.n_spans * i,
                                 .decay = i % 3 != 0};
    report("adamw_all_tensors", "fp32", 28.0 * P, best_time(run_adamw, &x));
    real *all[] = {x.a, x.b, x.c, x.d, x.e, x.w, x.rstd};
    for (int i = 0; i < 7; i++) be->release(all[i]);
    free(x.pos), free(x.spans);
    return 0;
}
