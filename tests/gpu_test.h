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

// Every GPU test starts here: without a device it prints SKIP and exits GPU_TEST_SKIP.
// `--probe` only answers whether a GPU is there (exit 0 yes, 1 no), for the shell tests;
// `--attn NAME` runs the whole test on those attention kernels (flash or sm90: train --attn).
static inline void gpu_test_start(int argc, char **argv, const char *name) {
    int n = cuda_device_count();
    if (argc > 1 && !strcmp(argv[1], "--probe")) exit(n > 0 ? 0 : 1);
    if (n == 0) {
        printf("SKIP: no CUDA device (%s)\n", name);
        exit(GPU_TEST_SKIP);
    }
    cuda_backend_init(0, 0);
    if (argc > 2 && !strcmp(argv[1], "--attn")) attn_cuda_set_impl(argv[2]);
    char desc[256];
    cuda_device_describe(desc, sizeof desc);
    printf("%s on %s\n", name, desc);
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
