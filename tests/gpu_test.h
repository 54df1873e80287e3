// tests/gpu_test.h — shared by the GPU tests: SKIP without a device, host↔device helpers, CUDA-vs-CPU comparison.
#pragma once
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention_cuda.h"
#include "core/backend_cuda.h"
#include "core/common.h"
#include "core/rng.h"
#include "tests/check.h"
#include "model/ops.h"

enum { GPU_TEST_SKIP = 77 };   // ctest's SKIP_RETURN_CODE for the gpu label: skipped, not passed

// The activations' storage a test gives its CUDA models (--activations; ACT_F32 unless asked).
static ActStore gpu_test_act_store = ACT_F32;

// Every GPU test starts here: without a device it prints SKIP and exits GPU_TEST_SKIP.
// `--probe` only answers whether a GPU is there (exit 0 yes, 1 no), for the shell tests. Then, as train's flags:
// `--attn NAME` runs the whole test on those attention kernels (flash, cudnn, or sm90 in a
// -DRINGGPT_SM90_KERNELS=ON build), `--matmul MODE` on those GEMMs, `--activations bf16` gives the test's CUDA
// models bf16 activations (with bf16 GEMMs).
static inline void gpu_test_start(int argc, char **argv, const char *name) {
    int n = cuda_device_count();
    if (argc > 1 && !strcmp(argv[1], "--probe")) exit(n > 0 ? 0 : 1);
    if (n == 0) {
        printf("SKIP: no CUDA device (%s)\n", name);
        exit(GPU_TEST_SKIP);
    }
    const char *attn = NULL, *matmul = NULL;
    for (int i = 1; i < argc; i++) {
        if (i + 1 < argc && !strcmp(argv[i], "--attn")) attn = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--matmul")) matmul = argv[++i];
        else if (i + 1 < argc && !strcmp(argv[i], "--activations"))
            gpu_test_act_store = strcmp(argv[++i], "bf16") ? ACT_F32 : ACT_BF16;
        else fail_usage("%s: unknown argument %s; use --attn, --matmul or --activations NAME", name, argv[i]);
    }
    if (!matmul && gpu_test_act_store == ACT_BF16) matmul = "bf16";
    cuda_backend_set_matmul(matmul);
    cuda_backend_init(0, 0);
    attn_cuda_set_impl(attn);
    char desc[256];
    cuda_device_describe(desc, sizeof desc);
    printf("%s on %s, activations %s\n", name, desc, gpu_test_act_store == ACT_BF16 ? "bf16" : "fp32");
}

static inline float *host_randn(size_t n, uint64_t seed, double scale) {
    Rng r;
    rng_seed(&r, seed);
    float *h = xmalloc(n * sizeof(float), "test data");
    for (size_t i = 0; i < n; i++) h[i] = (float)(rng_normal(&r) * scale);
    return h;
}

// A backend buffer holding a copy of host data (n floats).
static inline float *on(const Backend *be, const float *host, size_t n) {
    float *d = be->alloc(n * sizeof(float) + 16, "test buffer");
    be->to_device(d, host, n * sizeof(float));
    return d;
}
// Round to nearest even bf16 (the kernels' conversion), as the 16 high bits of a float.
static inline uint16_t host_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
// A backend buffer holding host data (n floats) stored as `store` (bf16: rounded here).
static inline float *on_store(const Backend *be, const float *host, size_t n, ActStore store) {
    if (store == ACT_F32) return on(be, host, n);
    uint16_t *b = xmalloc(n * sizeof(uint16_t) + 16, "test bf16 data");
    for (size_t i = 0; i < n; i++) b[i] = host_bf16(host[i]);
    float *d = be->alloc(n * sizeof(uint16_t) + 16, "test buffer");
    be->to_device(d, b, n * sizeof(uint16_t));
    free(b);
    return d;
}
static inline float *back(const Backend *be, const float *d, size_t n) {
    float *h = xmalloc(n * sizeof(float) + 16, "test result");
    be->to_host(h, d, n * sizeof(float));
    return h;
}

// Compares the CUDA buffer g with the CPU buffer c (both n floats, on their backends): the largest
// difference relative to the CPU tensor's largest magnitude must be at most tol.
static inline double compare(const char *what, const float *g, const float *c, size_t n, double tol) {
    float *hg = back(&BACKEND_CUDA, g, n), *hc = back(&BACKEND_CPU, c, n);
    double dmax = 0, smax = 1e-20;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)hg[i] - hc[i]);
        if (!(d <= dmax)) dmax = d;   // NaN counts as the worst
        smax = fmax(smax, fabs((double)hc[i]));
    }
    double err = dmax / smax;
    CHECK(err <= tol, "%s: relative error %.3e > %.1e", what, err, tol);
    printf("  %-44s rel err %.3e (tol %.0e)\n", what, err, tol);
    free(hg);
    free(hc);
    return err;
}
