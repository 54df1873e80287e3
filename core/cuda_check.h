// core/cuda_check.h — checked CUDA, cuBLAS and NCCL calls: a failure names the call, the error, the GPU and the rank.
#pragma once
// The project's C headers use C11 keywords; nvcc compiles .cu files as C++, which spells them differently.
#ifdef __cplusplus
#ifndef _Noreturn
#define _Noreturn [[noreturn]]
#endif
#ifndef _Alignas
#define _Alignas(x) alignas(x)
#endif
#define RINGGPT_EXTERN_C_BEGIN extern "C" {
#define RINGGPT_EXTERN_C_END }
#else
#define RINGGPT_EXTERN_C_BEGIN
#define RINGGPT_EXTERN_C_END
#endif

#include <cuda_runtime.h>

RINGGPT_EXTERN_C_BEGIN
#include "core/common.h"

// Prints "ringgpt: rank R, GPU D (name): <call> failed: <error> (file:line)" and ends the job (exit 1).
// Kernels never print; host code checks every call through these macros.
_Noreturn void cuda_fail_call(const char *call, const char *error, const char *file, int line);
// The GPU this process uses (-1 before cuda_backend_init), for messages.
int cuda_current_device(void);
RINGGPT_EXTERN_C_END

#define CUDA_CHECK(call)                                                                  \
    do {                                                                                  \
        cudaError_t err_ = (call);                                                        \
        if (err_ != cudaSuccess) cuda_fail_call(#call, cudaGetErrorString(err_), __FILE__, __LINE__); \
    } while (0)

// After a kernel launch: catches bad launch configurations at once (execution errors surface at the next sync).
#define CUDA_CHECK_LAUNCH(name) CUDA_CHECK(cudaPeekAtLastError())

#define CUBLAS_CHECK(call)                                                                \
    do {                                                                                  \
        int st_ = (int)(call);                                                            \
        if (st_ != 0) {                                                                   \
            char msg_[64];                                                                \
            snprintf(msg_, sizeof msg_, "cuBLAS status %d", st_);                         \
            cuda_fail_call(#call, msg_, __FILE__, __LINE__);                              \
        }                                                                                 \
    } while (0)

#ifdef RINGGPT_HAVE_NCCL
#include <nccl.h>
#define NCCL_CHECK(call)                                                                  \
    do {                                                                                  \
        ncclResult_t st_ = (call);                                                        \
        if (st_ != ncclSuccess) cuda_fail_call(#call, ncclGetErrorString(st_), __FILE__, __LINE__); \
    } while (0)
#endif
