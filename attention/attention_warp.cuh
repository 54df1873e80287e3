// attention/attention_warp.cuh — register-level helpers both CUDA attention kernels share (sm_80 mma.sync and sm_90a wgmma).
#pragma once
#include <cuda_bf16.h>
#include <stdint.h>

// Two floats as one packed bf16x2 register (round to nearest even), the operand form of both MMAs.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
    __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t *>(&v);
}
// Max / sum over the 4 lanes of a quad (lane = 4·g + t): the threads that share one accumulator row.
__device__ __forceinline__ float quad_max(float v) {
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return fmaxf(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}
