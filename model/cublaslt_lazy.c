// model/cublaslt_lazy.c — loads cuBLASLt on first use, so CPU runs of a CUDA build never pay for it.
// Linking libcublasLt directly costs every process ~210 MB of resident memory at start-up (measured:
// an empty program linked against it peaks at 211 MB, against cudart 1.4 MB), CPU runs and every
// rank included. These definitions take the place of the 11 cuBLASLt entry points the CUDA backend
// uses and forward to the real ones, looked up with dlopen/dlsym the first time one is called.
#include <cublasLt.h>
#include <dlfcn.h>
#include <stdio.h>

#include "core/common.h"

#define STR_(x) #x
#define STR(x) STR_(x)

static void *lt_symbol(const char *name) {
    static void *lib;
    if (!lib) {
        const char *soname = "libcublasLt.so." STR(CUBLAS_VER_MAJOR);
        lib = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
        if (!lib) fail("cannot load %s (%s); install the CUDA toolkit's cuBLAS or run with --device cpu", soname, dlerror());
    }
    void *fn = dlsym(lib, name);
    if (!fn) fail("cuBLASLt has no %s (%s); the installed cuBLAS is older than the one ringgpt was built with", name, dlerror());
    return fn;
}

// Defines `name` with the header's signature; the first call resolves the real function.
#define LAZY(name, params, args)                                               \
    cublasStatus_t CUBLASWINAPI name params {                                  \
        static cublasStatus_t (*real_fn) params;                               \
        if (!real_fn) real_fn = (cublasStatus_t(*) params)lt_symbol(#name);    \
        return real_fn args;                                                   \
    }

LAZY(cublasLtCreate, (cublasLtHandle_t * h), (h))
LAZY(cublasLtMatmulDescCreate, (cublasLtMatmulDesc_t * d, cublasComputeType_t c, cudaDataType_t s), (d, c, s))
LAZY(cublasLtMatmulDescDestroy, (cublasLtMatmulDesc_t d), (d))
LAZY(cublasLtMatmulDescSetAttribute, (cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *b, size_t n),
     (d, a, b, n))
LAZY(cublasLtMatmulPreferenceCreate, (cublasLtMatmulPreference_t * p), (p))
LAZY(cublasLtMatmulPreferenceDestroy, (cublasLtMatmulPreference_t p), (p))
LAZY(cublasLtMatmulPreferenceSetAttribute,
     (cublasLtMatmulPreference_t p, cublasLtMatmulPreferenceAttributes_t a, const void *b, size_t n), (p, a, b, n))
LAZY(cublasLtMatrixLayoutCreate, (cublasLtMatrixLayout_t * l, cudaDataType t, uint64_t r, uint64_t c, int64_t ld),
     (l, t, r, c, ld))
LAZY(cublasLtMatrixLayoutDestroy, (cublasLtMatrixLayout_t l), (l))
LAZY(cublasLtMatmulAlgoGetHeuristic,
     (cublasLtHandle_t h, cublasLtMatmulDesc_t d, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b,
      cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t dd, cublasLtMatmulPreference_t p, int req,
      cublasLtMatmulHeuristicResult_t res[], int *ret),
     (h, d, a, b, c, dd, p, req, res, ret))
LAZY(cublasLtMatmul,
     (cublasLtHandle_t h, cublasLtMatmulDesc_t d, const void *alpha, const void *A, cublasLtMatrixLayout_t la,
      const void *B, cublasLtMatrixLayout_t lb, const void *beta, const void *C, cublasLtMatrixLayout_t lc, void *D,
      cublasLtMatrixLayout_t ld, const cublasLtMatmulAlgo_t *algo, void *ws, size_t wsn, cudaStream_t s),
     (h, d, alpha, A, la, B, lb, beta, C, lc, D, ld, algo, ws, wsn, s))
