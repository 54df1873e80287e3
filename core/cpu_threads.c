// core/cpu_threads.c — the CPU thread count (OpenMP and OpenBLAS), denormal flushing on every worker thread, the BLAS in use.
#include "core/common.h"

#include <cblas.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__x86_64__) || defined(__i386__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

// Subnormal floats (|x| < 1.2e-38) take a slow microcode path on x86. Training makes them: sharp softmaxes
// give exp() of large negative scores, AdamW moments and gradients of unused rows decay toward 0.
// Flushing them to zero (FTZ for results, DAZ for inputs) made a 20-step run from a trained passkey
// checkpoint (3 layers, dim 128, T=256, B=32, one thread) ~15 % faster on a loaded 2-core Xeon with the
// same losses to 4 decimals; the test suite passes unchanged.
static void flush_denormals_here(void) {
#if defined(__x86_64__) || defined(__i386__)
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr | (1ull << 24)));   // FZ
#endif
}

void cpu_threads(int n) {
    if (n < 1) fail_usage("--threads must be at least 1 (got %d)", n);
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
    flush_denormals_here();
#pragma omp parallel num_threads(n)
    flush_denormals_here();   // MXCSR is per thread: set it in every OpenMP worker (OpenBLAS runs on them)
}

void cpu_blas_describe(char *out, size_t n) {
    // Results differ in their last bits between kernels (Haswell's vs Zen's), so a recorded table names them.
    snprintf(out, n, "%s (kernels: %s)", openblas_get_config(), openblas_get_corename());
}
