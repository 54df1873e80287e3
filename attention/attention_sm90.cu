// attention/attention_sm90.cu — Hopper (sm_90a) flash attention block kernels: TMA into an mbarrier pipeline, warp-specialised wgmma.
// Same contract as attention/attention_cuda.cu (see attention/attention.h): a Q block × KV block, causal
// diagonal or full, fp32 running state {acc, m, l} read and written in global memory, GQA by indexing.
// Only head dims 64 and 128; chosen by attention_cuda.cu's entry points with --attn sm90 on an sm_90 device.
// An experiment outside the default build (cmake -DRINGGPT_SM90_KERNELS=ON): they passed
// tests/attention/test_gpu_attention_sm90.c on an H100 (2026-11-24) and an H200 (2026-11-27) and lose to cuDNN
// from 16K (docs/gpu.md). Operands are bf16: fp32 inputs are converted once per call into a scratch buffer, bf16
// ones (--activations bf16) are read as they are.
//
// Every CTA: warpgroup 0 is the producer (one thread issues TMA loads of 64-column, 128-byte-swizzled
// boxes into a multi-stage ring of shared buffers, each stage with a "full" mbarrier that counts the
// bytes in and an "empty" mbarrier the consumers arrive on); warpgroups 1 and 2 are consumers, each
// owning 64 rows of the CTA's tile, running wgmma with both GEMM operands in shared memory
// (descriptors) or with the probabilities in registers. The forward overlaps the softmax of KV tile j
// with the P·V GEMM of tile j−1 in the same warpgroup (FlashAttention-3's intra-warpgroup pipelining).
// The backward is two kernels as on sm_80 (dK/dV owned per KV tile, dQ owned per Q tile): no atomics,
// deterministic.
//
// Layout facts relied on (PTX ISA 8.x/9.x, "Asynchronous Warpgroup Level Matrix Multiply-Accumulate",
// sections "Register Fragments and Shared Memory Matrix Layouts" and "Matrix Descriptor Format"):
// * Accumulator D of m64nNk16 (fp32): warp w of the warpgroup holds rows 16w..16w+15; lane = 4g + t;
//   register i holds row 16w + g + 8·((i%4)/2), column 8·(i/4) + 2t + (i%2). That is the mma.sync
//   m16n8 C fragment repeated for every 8 columns.
// * A from registers (bf16, m64k16): per warp the mma.sync m16n8k16 A fragment: a0 = (g, 2t..2t+1),
//   a1 = (g+8, 2t..), a2 = (g, 2t+8..), a3 = (g+8, 2t+8..). So the accumulator chunks 2kk and 2kk+1
//   of S, packed in pairs, are the A fragment of k-step kk of P·V: P never leaves the registers.
// * Shared matrix descriptor (64 bits): start address >> 4 in bits 0–13, leading byte offset >> 4 in
//   16–29, stride byte offset >> 4 in 32–45, base offset 49–51 (0: every tile here is 1024-byte
//   aligned), swizzle mode in 62–63 (1 = 128-byte swizzle).
// * 128-byte swizzle (what TMA's CU_TENSOR_MAP_SWIZZLE_128B writes): rows of 128 bytes (64 bf16);
//   16-byte chunk c of row r is stored at chunk c ^ (r % 8); an atom is 8 rows = 1024 bytes and must
//   be 1024-byte aligned. Head dim 128 is stored as two such 64-column sub-tiles, one after the other.
// * K-major operand (the reduction dimension contiguous: Q, K, V and dO as A or B of S = Q Kᵀ-type
//   GEMMs): canonical Swizzle<3,4,3> ∘ ((8,m),(8,2)):((64,SBO),(1,8)) in elements; SBO = 1024 bytes
//   between 8-row groups, LBO unused (1). K-step kk advances the start address by 32 bytes inside
//   the 128-byte row (the hardware applies the XOR on the final address, so this matches TMA's
//   layout), and by one sub-tile every 4 steps.
// * MN-major operand (B = V for P·V, dO and Q for the dV/dK GEMMs, K for dQ: N = head dim contiguous,
//   imm-trans-b = 1): canonical Swizzle<3,4,3> ∘ ((64,m),(8,k)):((1,LBO),(64,SBO)) in elements: LBO =
//   bytes between the 64-column sub-tiles (only used at head dim 128), SBO = 1024 bytes between
//   8-row (K) groups; k-step kk (16 rows) advances the start address by 16·128 = 2048 bytes.
// * These layouts, every descriptor value the kernels build and the two fragment maps above were
//   compared on the host with CuTe's canonical GMMA layouts, make_gmma_desc and the
//   SM90 64xNx16 TV layouts (a scratch program, not part of the build): all equal.
// * TMA (PTX ISA "cp.async.bulk.tensor"; driver API cuTensorMapEncodeTiled): a box's bytes all
//   count toward the mbarrier's complete_tx, also its out-of-bounds elements, which are zero-filled.
//   No box here starts past its tensor's end (tile starts are < nq or < nk), only runs over it.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention_warp.cuh"
#include "core/cuda_check.h"

RINGGPT_EXTERN_C_BEGIN
#include "attention/attention_cuda.h"
#include "core/backend_cuda.h"
RINGGPT_EXTERN_C_END

// Kernel bodies exist only in the sm_90a device pass (and the host pass, which needs them to parse).
#if !defined(__CUDA_ARCH__) || defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define SM90_BODY 1
#else
#define SM90_BODY 0
#endif

#define LOG2E 1.4426950408889634f
#define CONSUMERS 256          // two consumer warpgroups
#define THREADS_SM90 384       // + one producer warpgroup
#define ROW_BYTES 128          // one swizzled row: 64 bf16

// ---------------------------------------------------------------------------------------------
// Primitives: shared addresses, mbarriers (PTX ISA "mbarrier"), TMA (cp.async.bulk.tensor), wgmma.

__device__ __forceinline__ uint32_t smem_u32(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// One arrival that also announces `bytes` of TMA transactions for the current phase.
__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Waits until the phase with the given parity has completed. A fresh barrier is in phase 0, so
// waiting on parity 1 returns at once: producers start their "empty" waits at parity 1.
// A wait that never ends (a pipeline bug) traps after 20 s by %globaltimer: the launch then fails
// with an error the host reports, instead of hanging the job. (Counting polls would not bound the
// time: try_wait may suspend the thread for a system-dependent while at each poll.) The loop is one
// asm block (labels are local to its braces), which keeps it out of the register allocator's way.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
    asm volatile(
        "{\n.reg .pred p;\n.reg .u64 t0, t;\nmov.u64 t0, %%globaltimer;\n"
        "WAIT:\nmbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n@p bra DONE;\n"
        "mov.u64 t, %%globaltimer;\nsub.u64 t, t, t0;\nsetp.lt.u64 p, t, 20000000000;\n@p bra WAIT;\ntrap;\nDONE:\n}\n" ::"r"(bar),
        "r"(parity)
        : "memory");
}

// One TMA box {64 columns, 1 head, rows} of a 3-D bf16 tensor map {hd, heads, tokens} into shared
// memory at dst, completing `box bytes` of transactions on bar. Rows past the tensor's end are zero.
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, uint32_t bar, int col, int head,
                                         int row) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], "
        "[%5];\n" ::"r"(dst),
        "l"((uint64_t)map), "r"(col), "r"(head), "r"(row), "r"(bar)
        : "memory");
}
// rows × HD of one head as HD/64 swizzled sub-tiles of rows × 128 bytes each.
template <int HD>
__device__ __forceinline__ void tma_tile(uint32_t dst, const CUtensorMap *map, uint32_t bar, int head, int row,
                                         int rows) {
#pragma unroll
    for (int sub = 0; sub < HD / 64; sub++) tma_load(dst + sub * rows * ROW_BYTES, map, bar, sub * 64, head, row);
}

template <uint32_t N>
__device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}
template <uint32_t N>
__device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
}

__device__ __forceinline__ void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wg_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Registers an asynchronous wgmma reads or writes: the compiler must not move their uses across
// the wgmma issue or the wait (the same role as CUTLASS's warpgroup_fence_operand).
template <int R>
__device__ __forceinline__ void fence_regs(float (&r)[R]) {
#pragma unroll
    for (int i = 0; i < R; i++) asm volatile("" : "+f"(r[i])::"memory");
}
template <int R>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[R][4]) {
#pragma unroll
    for (int i = 0; i < R; i++)
#pragma unroll
        for (int e = 0; e < 4; e++) asm volatile("" : "+r"(r[i][e])::"memory");
}

// Descriptors (see the layout facts at the top). addr is a shared-window byte address.
__device__ __forceinline__ uint64_t desc_kmajor(uint32_t addr) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)1 << 16) | ((uint64_t)(1024 >> 4) << 32) |
           ((uint64_t)1 << 62);
}
__device__ __forceinline__ uint64_t desc_mnmajor(uint32_t addr, uint32_t lbo) {
    return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)((lbo >> 4) & 0x3FFF) << 16) |
           ((uint64_t)(1024 >> 4) << 32) | ((uint64_t)1 << 62);
}
// K-step kk (16 elements of the reduction dim) of a K-major tile of `rows` rows starting at `base`.
__device__ __forceinline__ uint32_t kmajor_step(uint32_t base, int rows, int kk) {
    return base + (kk >> 2) * rows * ROW_BYTES + (kk & 3) * 32;
}

// wgmma.mma_async m64nNk16, fp32 += bf16·bf16. ss: A and B from shared descriptors, both K-major;
// rs: A from registers, B from a descriptor with imm-trans-b = 1 (MN-major). accumulate = 0 zeroes D.
__device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], uint64_t da, uint64_t db, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "l"(da), "l"(db), "r"(accumulate));
}
__device__ __forceinline__ void wgmma_rs_n64_tb(float (&d)[32], const uint32_t (&a)[4], uint64_t db, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, {%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}
__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], uint64_t da, uint64_t db, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "l"(da), "l"(db), "r"(accumulate));
}
__device__ __forceinline__ void wgmma_rs_n128_tb(float (&d)[64], const uint32_t (&a)[4], uint64_t db, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 {%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, {%64, %65, %66, %67}, %68, p, 1, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

// 2^x with one MUFU.EX2 (flush-to-zero; 2^-inf = 0), as exp2f without the denormal fix-ups.
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}
// Accumulator (64 × 16·KS) → the KS A fragments of the next GEMM (bf16), as described at the top.
template <int KS>
__device__ __forceinline__ void acc_to_a(uint32_t (&a)[KS][4], const float (&c)[KS * 8]) {
#pragma unroll
    for (int kk = 0; kk < KS; kk++) {
        a[kk][0] = pack_bf16(c[8 * kk + 0], c[8 * kk + 1]);
        a[kk][1] = pack_bf16(c[8 * kk + 2], c[8 * kk + 3]);
        a[kk][2] = pack_bf16(c[8 * kk + 4], c[8 * kk + 5]);
        a[kk][3] = pack_bf16(c[8 * kk + 6], c[8 * kk + 7]);
    }
}
template <int N>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int accumulate) {
    if constexpr (N == 64) wgmma_ss_n64(d, da, db, accumulate);
    else wgmma_ss_n128(d, da, db, accumulate);
}
template <int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db) {
    if constexpr (N == 64) wgmma_rs_n64_tb(d, a, db, 1);
    else wgmma_rs_n128_tb(d, a, db, 1);
}

// Reads (rows < nq) or writes back a (64 × HD) fp32 accumulator fragment of rows `rows[0..1]` of a
// token-major (n, H, HD) tensor at head h: element (row, col) at row·stride + h·HD + col.
template <int HD>
__device__ __forceinline__ void frag_load(float (&o)[HD / 2], const float *src, const int rows[2], int n,
                                          size_t stride, int h, int t) {
#pragma unroll
    for (int nt = 0; nt < HD / 8; nt++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            float2 a = make_float2(0.f, 0.f);
            if (rows[e] < n) a = *reinterpret_cast<const float2 *>(src + (size_t)rows[e] * stride + h * HD + nt * 8 + 2 * t);
            o[4 * nt + 2 * e] = a.x, o[4 * nt + 2 * e + 1] = a.y;
        }
}
// dst += fragment (rows < n), or dst = fragment when add is false.
template <int HD>
__device__ __forceinline__ void frag_store(float *dst, const float (&o)[HD / 2], const int rows[2], int n,
                                           size_t stride, int h, int t, bool add) {
#pragma unroll
    for (int e = 0; e < 2; e++) {
        if (rows[e] >= n) continue;
#pragma unroll
        for (int nt = 0; nt < HD / 8; nt++) {
            float2 *p = reinterpret_cast<float2 *>(dst + (size_t)rows[e] * stride + h * HD + nt * 8 + 2 * t);
            float2 a = add ? *p : make_float2(0.f, 0.f);
            *p = make_float2(a.x + o[4 * nt + 2 * e], a.y + o[4 * nt + 2 * e + 1]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Forward. Grid (ceil(nq/128), H), 384 threads. Consumer warpgroup c owns query rows i0+64c..+63;
// KV tiles of 128 keys stream through STAGES buffers. Shared memory (1024-byte aligned):
//   Q (HD/64 sub-tiles of 128 rows × 128 B) | K stages | V stages | mbarriers
// mbarriers: q_full (1 arrival + tx), k_full[s], v_full[s] (1 + tx), empty[s] (256: every consumer thread).

template <int HD>
struct FwdCfg {
    static constexpr int BQ = 128, BK = 128, STAGES = HD == 64 ? 3 : 2;
    static constexpr int Q_BYTES = BQ * HD * 2, KV_BYTES = BK * HD * 2;
    static constexpr int Q_OFF = 0, K_OFF = Q_BYTES, V_OFF = K_OFF + STAGES * KV_BYTES;
    static constexpr int BAR_OFF = V_OFF + STAGES * KV_BYTES;
    static constexpr int SMEM = BAR_OFF + 128 + 1024;   // barriers, and slack to align the base to 1024
};

template <int HD>
__global__ void __launch_bounds__(THREADS_SM90, 1)
    fwd_kernel(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
               const __grid_constant__ CUtensorMap tv, float *acc, float *m_state, float *l_state, int nq, int nk,
               int H, int Hkv, int causal, float scale) {
#if SM90_BODY
    using C = FwdCfg<HD>;
    constexpr int S = C::STAGES, BK = C::BK;
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u, bars = base + C::BAR_OFF;
    const uint32_t q_full = bars;
    auto k_full = [&](int s) { return bars + 8 * (1 + s); };
    auto v_full = [&](int s) { return bars + 8 * (1 + S + s); };
    auto empty = [&](int s) { return bars + 8 * (1 + 2 * S + s); };
    const int h = blockIdx.y, hk = h / (H / Hkv), i0 = blockIdx.x * C::BQ;
    const int n_tiles = ((causal ? min(nk, i0 + C::BQ) : nk) + BK - 1) / BK;   // causal: no key past the last row

    if (threadIdx.x == 0) {
        mbar_init(q_full, 1);
        for (int s = 0; s < S; s++) mbar_init(k_full(s), 1), mbar_init(v_full(s), 1), mbar_init(empty(s), CONSUMERS);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");   // visible to the async (TMA) proxy
    }
    __syncthreads();

    if (threadIdx.x < 128) {   // producer warpgroup: one thread issues every load
        setmaxnreg_dec<24>();
        if (threadIdx.x == 0) {
            mbar_expect_tx(q_full, C::Q_BYTES);
            tma_tile<HD>(base + C::Q_OFF, &tq, q_full, h, i0, C::BQ);
            for (int j = 0; j < n_tiles; j++) {
                const int s = j % S;
                mbar_wait(empty(s), ((j / S) & 1) ^ 1);   // the consumers are done with tile j − S
                mbar_expect_tx(k_full(s), C::KV_BYTES);
                tma_tile<HD>(base + C::K_OFF + s * C::KV_BYTES, &tk, k_full(s), hk, j * BK, BK);
                mbar_expect_tx(v_full(s), C::KV_BYTES);
                tma_tile<HD>(base + C::V_OFF + s * C::KV_BYTES, &tv, v_full(s), hk, j * BK, BK);
            }
        }
        return;
    }
    setmaxnreg_inc<240>();   // 128·24 + 256·240 = 64512 ≤ 65536 registers (FA3 uses the same split)

    const int c = threadIdx.x / 128 - 1, tid = threadIdx.x % 128, w = tid / 32, g = (tid & 31) >> 2, t = tid & 3;
    const int r0 = i0 + 64 * c, rows[2] = {r0 + 16 * w + g, r0 + 16 * w + g + 8};
    const size_t qs = (size_t)H * HD;
    const float sl2 = scale * LOG2E;
    float o[HD / 2], m_i[2], l_i[2], s[BK / 2], corr[2];
    uint32_t p[BK / 16][4];
    frag_load<HD>(o, acc, rows, nq, qs, h, t);
#pragma unroll
    for (int e = 0; e < 2; e++) {
        bool in = rows[e] < nq;
        m_i[e] = in ? m_state[(size_t)rows[e] * H + h] : -INFINITY;
        l_i[e] = in ? l_state[(size_t)rows[e] * H + h] : 0.f;
    }
    const uint32_t qa = base + C::Q_OFF + c * 64 * ROW_BYTES;   // this warpgroup's 64 rows in each sub-tile

    auto issue_qk = [&](int st) {   // s = Q Kᵀ (64 × BK), both K-major
        const uint32_t kb = base + C::K_OFF + st * C::KV_BYTES;
        fence_regs(s);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)
            wgmma_ss<BK>(s, desc_kmajor(kmajor_step(qa, C::BQ, kk)), desc_kmajor(kmajor_step(kb, BK, kk)), kk > 0);
        wg_commit();
        fence_regs(s);
    };
    auto issue_pv = [&](int st) {   // o += P V: P (64 × BK) in registers, V (BK × HD) MN-major
        const uint32_t vb = base + C::V_OFF + st * C::KV_BYTES;
        fence_regs(o);
        fence_regs(p);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) wgmma_rs<HD>(o, p[kk], desc_mnmajor(vb + kk * 16 * ROW_BYTES, BK * ROW_BYTES));
        wg_commit();
        fence_regs(o);
        fence_regs(p);
    };
    // Online softmax of tile j (keys j0..): masks, new row max, corr = exp(m_old − m_new), s ← exp(s·scale − m_new), l.
    auto softmax = [&](int j0) {
        if (j0 + BK > nk || (causal && j0 + BK - 1 > r0)) {
#pragma unroll
            for (int i = 0; i < BK / 2; i++) {
                int j = j0 + (i / 4) * 8 + 2 * t + (i & 1), row = rows[(i % 4) / 2];
                if (j >= nk || (causal && j > row)) s[i] = -INFINITY;
            }
        }
        float mx[2] = {-INFINITY, -INFINITY}, sum[2] = {0.f, 0.f}, ms[2];
#pragma unroll
        for (int i = 0; i < BK / 2; i++) mx[(i % 4) / 2] = fmaxf(mx[(i % 4) / 2], s[i]);
#pragma unroll
        for (int e = 0; e < 2; e++) {
            float m_new = fmaxf(m_i[e], quad_max(mx[e]) * scale);
            // A row with no key so far keeps m = -inf; exponentiate against 0 then: exp(-inf) = 0, never inf - inf.
            float m_use = m_new == -INFINITY ? 0.f : m_new;
            corr[e] = fast_exp2((m_i[e] - m_use) * LOG2E);
            ms[e] = m_use * LOG2E;
            m_i[e] = m_new;
        }
#pragma unroll
        for (int i = 0; i < BK / 2; i++) {
            s[i] = fast_exp2(fmaf(s[i], sl2, -ms[(i % 4) / 2]));
            sum[(i % 4) / 2] += s[i];
        }
#pragma unroll
        for (int e = 0; e < 2; e++) l_i[e] = l_i[e] * corr[e] + quad_sum(sum[e]);
    };
    auto rescale_o = [&]() {
#pragma unroll
        for (int i = 0; i < HD / 2; i++) o[i] *= corr[(i % 4) / 2];
    };

    mbar_wait(q_full, 0);
    mbar_wait(k_full(0), 0);
    issue_qk(0);
    wg_wait<0>();
    fence_regs(s);
    softmax(0);
    acc_to_a<BK / 16>(p, s);
    rescale_o();
    for (int j = 1; j < n_tiles; j++) {
        const int st = j % S, sp = (j - 1) % S;
        mbar_wait(k_full(st), (j / S) & 1);
        issue_qk(st);                               // S_j = Q K_jᵀ ...
        mbar_wait(v_full(sp), ((j - 1) / S) & 1);
        issue_pv(sp);                               // ... while O += P_{j-1} V_{j-1} queues behind it
        wg_wait<1>();                               // S_j is ready (groups complete in order)
        fence_regs(s);
        softmax(j * BK);                            // overlaps the P·V GEMM
        fence_regs(s);                              // (before the wait in PTX; ptxas may still sink the exps)
        wg_wait<0>();
        fence_regs(o);
        fence_regs(p);
        mbar_arrive(empty(sp));                     // K_{j-1} and V_{j-1} are no longer read
        acc_to_a<BK / 16>(p, s);
        rescale_o();
    }
    const int sl = (n_tiles - 1) % S;
    mbar_wait(v_full(sl), ((n_tiles - 1) / S) & 1);
    issue_pv(sl);
    wg_wait<0>();
    fence_regs(o);

#pragma unroll
    for (int e = 0; e < 2; e++)
        if (rows[e] < nq && t == 0) {
            m_state[(size_t)rows[e] * H + h] = m_i[e];
            l_state[(size_t)rows[e] * H + h] = l_i[e];
        }
    frag_store<HD>(acc, o, rows, nq, qs, h, t, false);
#else
    __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
// Backward, dK and dV. Grid (ceil(nk/128), Hkv), 384 threads. Consumer warpgroup c owns keys
// j0+64c..+63 and computes transposed scores: Sᵀ = K Qᵀ, dPᵀ = V dOᵀ (64 keys × 64 queries), then
// dV += Pᵀ dO, dK += dSᵀ Q with Pᵀ and dSᵀ in registers. The producer warp streams (Q, dO) tiles of
// 64 rows for every query head of the group and every Q tile that can see the keys, and with each
// tile the rows' LSE (log2 units) and D into shared memory.
// Shared: K (BN rows) | V | Q stages | dO stages | lse/D stages (2·64 floats each) | mbarriers
// mbarriers: kv_full (1 + tx), tile_full[s] (32: every producer lane, lane 0 with the tx), empty[s] (256).

template <int HD>
struct DkdvCfg {
    static constexpr int BN = 128, BM = 64, STAGES = 2;
    static constexpr int KV_BYTES = BN * HD * 2, T_BYTES = BM * HD * 2;
    static constexpr int K_OFF = 0, V_OFF = KV_BYTES, Q_OFF = 2 * KV_BYTES, DO_OFF = Q_OFF + STAGES * T_BYTES;
    static constexpr int STAT_OFF = DO_OFF + STAGES * T_BYTES, BAR_OFF = STAT_OFF + STAGES * 2 * BM * 4;
    static constexpr int SMEM = BAR_OFF + 128 + 1024;
};

template <int HD>
__global__ void __launch_bounds__(THREADS_SM90, 1)
    dkdv_kernel(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
                const __grid_constant__ CUtensorMap tv, const __grid_constant__ CUtensorMap tdo, float *dk,
                float *dv, const float *lse, const float *D, int nq, int nk, int H, int Hkv, int causal,
                float scale) {
#if SM90_BODY
    using C = DkdvCfg<HD>;
    constexpr int S = C::STAGES, BM = C::BM, BN = C::BN;
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u, bars = base + C::BAR_OFF;
    float *stats = reinterpret_cast<float *>(smem_raw + (base - smem_u32(smem_raw)) + C::STAT_OFF);   // [S][2][BM]
    const uint32_t kv_full = bars;
    auto tile_full = [&](int s) { return bars + 8 * (1 + s); };
    auto empty = [&](int s) { return bars + 8 * (1 + S + s); };
    const int hk = blockIdx.y, group = H / Hkv, j0 = blockIdx.x * BN;
    const int i_start = causal ? (j0 / BM) * BM : 0;   // causal: rows before the first key see none of it
    const int per_head = (nq - i_start + BM - 1) / BM, n_tiles = group * per_head;

    if (threadIdx.x == 0) {
        mbar_init(kv_full, 1);
        for (int s = 0; s < S; s++) mbar_init(tile_full(s), 32), mbar_init(empty(s), CONSUMERS);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (threadIdx.x < 128) {   // producer warpgroup: warp 0 loads, the other three leave
        setmaxnreg_dec<24>();
        if (threadIdx.x >= 32) return;
        const int lane = threadIdx.x;
        if (lane == 0) {
            mbar_expect_tx(kv_full, 2 * C::KV_BYTES);
            tma_tile<HD>(base + C::K_OFF, &tk, kv_full, hk, j0, BN);
            tma_tile<HD>(base + C::V_OFF, &tv, kv_full, hk, j0, BN);
        }
        for (int idx = 0; idx < n_tiles; idx++) {
            const int s = idx % S, h = hk * group + idx / per_head, i0 = i_start + (idx % per_head) * BM;
            mbar_wait(empty(s), ((idx / S) & 1) ^ 1);
            float *ls = stats + s * 2 * BM, *ds = ls + BM;
            for (int r = lane; r < BM; r += 32) {
                bool in = i0 + r < nq;
                float L = in ? lse[(size_t)(i0 + r) * H + h] : -INFINITY;
                ls[r] = L == -INFINITY ? -INFINITY : L * LOG2E;   // rows that saw no key, and rows past nq, add nothing
                ds[r] = in ? D[(size_t)(i0 + r) * H + h] : 0.f;
            }
            if (lane == 0) {   // the arrival releases this lane's stores; every lane arrives for its own
                mbar_expect_tx(tile_full(s), 2 * C::T_BYTES);
                tma_tile<HD>(base + C::Q_OFF + s * C::T_BYTES, &tq, tile_full(s), h, i0, BM);
                tma_tile<HD>(base + C::DO_OFF + s * C::T_BYTES, &tdo, tile_full(s), h, i0, BM);
            } else {
                mbar_arrive(tile_full(s));
            }
        }
        return;
    }
    setmaxnreg_inc<240>();

    const int c = threadIdx.x / 128 - 1, tid = threadIdx.x % 128, w = tid / 32, g = (tid & 31) >> 2, t = tid & 3;
    const int keys[2] = {j0 + 64 * c + 16 * w + g, j0 + 64 * c + 16 * w + g + 8};
    const float sl2 = scale * LOG2E;
    const uint32_t ka = base + C::K_OFF + c * 64 * ROW_BYTES, va = base + C::V_OFF + c * 64 * ROW_BYTES;
    float dka[HD / 2], dva[HD / 2], st[BM / 2], dpt[BM / 2];
    uint32_t pa[BM / 16][4], dsa[BM / 16][4];
#pragma unroll
    for (int i = 0; i < HD / 2; i++) dka[i] = dva[i] = 0.f;

    mbar_wait(kv_full, 0);
    for (int idx = 0; idx < n_tiles; idx++) {
        const int s = idx % S, i0 = i_start + (idx % per_head) * BM;
        const uint32_t qb = base + C::Q_OFF + s * C::T_BYTES, dob = base + C::DO_OFF + s * C::T_BYTES;
        const float *ls = stats + s * 2 * BM, *ds = ls + BM;
        mbar_wait(tile_full(s), (idx / S) & 1);
        fence_regs(st);
        fence_regs(dpt);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)   // Sᵀ = K Qᵀ
            wgmma_ss<BM>(st, desc_kmajor(kmajor_step(ka, BN, kk)), desc_kmajor(kmajor_step(qb, BM, kk)), kk > 0);
        wg_commit();
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)   // dPᵀ = V dOᵀ
            wgmma_ss<BM>(dpt, desc_kmajor(kmajor_step(va, BN, kk)), desc_kmajor(kmajor_step(dob, BM, kk)), kk > 0);
        wg_commit();
        wg_wait<1>();
        fence_regs(st);
        // Pᵀ = exp(S·scale − lse), 0 where masked or the row has no key (overlaps the dPᵀ GEMM).
#pragma unroll
        for (int i = 0; i < BM / 2; i++) {
            int col = (i / 4) * 8 + 2 * t + (i & 1), q_row = i0 + col, key = keys[(i % 4) / 2];
            float L = ls[col];
            bool ok = L != -INFINITY && key < nk && (!causal || key <= q_row);
            st[i] = ok ? fast_exp2(fmaf(st[i], sl2, -L)) : 0.f;
        }
        wg_wait<0>();
        fence_regs(dpt);
#pragma unroll
        for (int i = 0; i < BM / 2; i++) dpt[i] = st[i] * (dpt[i] - ds[(i / 4) * 8 + 2 * t + (i & 1)]) * scale;   // dSᵀ
        acc_to_a<BM / 16>(pa, st);
        acc_to_a<BM / 16>(dsa, dpt);
        fence_regs(dva);
        fence_regs(dka);
        fence_regs(pa);
        fence_regs(dsa);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < BM / 16; kk++)   // dV += Pᵀ dO (dO MN-major: head dim contiguous)
            wgmma_rs<HD>(dva, pa[kk], desc_mnmajor(dob + kk * 16 * ROW_BYTES, BM * ROW_BYTES));
#pragma unroll
        for (int kk = 0; kk < BM / 16; kk++)   // dK += dSᵀ Q
            wgmma_rs<HD>(dka, dsa[kk], desc_mnmajor(qb + kk * 16 * ROW_BYTES, BM * ROW_BYTES));
        wg_commit();
        wg_wait<0>();
        fence_regs(dva);
        fence_regs(dka);
        fence_regs(pa);
        fence_regs(dsa);
        mbar_arrive(empty(s));
    }
    const size_t ks = (size_t)Hkv * HD;
    frag_store<HD>(dk, dka, keys, nk, ks, hk, t, true);
    frag_store<HD>(dv, dva, keys, nk, ks, hk, t, true);
#else
    __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
// Backward, dQ. Grid (ceil(nq/128), H), 384 threads. Consumer warpgroup c owns query rows i0+64c..;
// per KV tile of 64 keys: S = Q Kᵀ, dP = dO Vᵀ, dS = P ∘ (dP − D)·scale, dQ += dS K (K MN-major).
// Shared: Q (128 rows) | dO | K stages | V stages | mbarriers: qdo_full (1 + tx), kv_full[s], empty[s] (256).

template <int HD>
struct DqCfg {
    static constexpr int BM = 128, BN = 64, STAGES = 2;
    static constexpr int T_BYTES = BM * HD * 2, KV_BYTES = BN * HD * 2;
    static constexpr int Q_OFF = 0, DO_OFF = T_BYTES, K_OFF = 2 * T_BYTES, V_OFF = K_OFF + STAGES * KV_BYTES;
    static constexpr int BAR_OFF = V_OFF + STAGES * KV_BYTES;
    static constexpr int SMEM = BAR_OFF + 128 + 1024;
};

template <int HD>
__global__ void __launch_bounds__(THREADS_SM90, 1)
    dq_kernel(const __grid_constant__ CUtensorMap tq, const __grid_constant__ CUtensorMap tk,
              const __grid_constant__ CUtensorMap tv, const __grid_constant__ CUtensorMap tdo, float *dq,
              const float *lse, const float *D, int nq, int nk, int H, int Hkv, int causal, float scale) {
#if SM90_BODY
    using C = DqCfg<HD>;
    constexpr int S = C::STAGES, BM = C::BM, BN = C::BN;
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u, bars = base + C::BAR_OFF;
    const uint32_t qdo_full = bars;
    auto kv_full = [&](int s) { return bars + 8 * (1 + s); };
    auto empty = [&](int s) { return bars + 8 * (1 + S + s); };
    const int h = blockIdx.y, hk = h / (H / Hkv), i0 = blockIdx.x * BM;
    const int n_tiles = ((causal ? min(nk, i0 + BM) : nk) + BN - 1) / BN;

    if (threadIdx.x == 0) {
        mbar_init(qdo_full, 1);
        for (int s = 0; s < S; s++) mbar_init(kv_full(s), 1), mbar_init(empty(s), CONSUMERS);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    if (threadIdx.x < 128) {
        setmaxnreg_dec<24>();
        if (threadIdx.x == 0) {
            mbar_expect_tx(qdo_full, 2 * C::T_BYTES);
            tma_tile<HD>(base + C::Q_OFF, &tq, qdo_full, h, i0, BM);
            tma_tile<HD>(base + C::DO_OFF, &tdo, qdo_full, h, i0, BM);
            for (int j = 0; j < n_tiles; j++) {
                const int s = j % S;
                mbar_wait(empty(s), ((j / S) & 1) ^ 1);
                mbar_expect_tx(kv_full(s), 2 * C::KV_BYTES);
                tma_tile<HD>(base + C::K_OFF + s * C::KV_BYTES, &tk, kv_full(s), hk, j * BN, BN);
                tma_tile<HD>(base + C::V_OFF + s * C::KV_BYTES, &tv, kv_full(s), hk, j * BN, BN);
            }
        }
        return;
    }
    setmaxnreg_inc<240>();

    const int c = threadIdx.x / 128 - 1, tid = threadIdx.x % 128, w = tid / 32, g = (tid & 31) >> 2, t = tid & 3;
    const int r0 = i0 + 64 * c, rows[2] = {r0 + 16 * w + g, r0 + 16 * w + g + 8};
    const float sl2 = scale * LOG2E;
    float L[2], Dr[2], dqa[HD / 2], sc[BN / 2], dp[BN / 2];
    uint32_t dsa[BN / 16][4];
#pragma unroll
    for (int e = 0; e < 2; e++) {
        bool in = rows[e] < nq;
        float l = in ? lse[(size_t)rows[e] * H + h] : -INFINITY;
        L[e] = l == -INFINITY ? -INFINITY : l * LOG2E;
        Dr[e] = in ? D[(size_t)rows[e] * H + h] : 0.f;
    }
#pragma unroll
    for (int i = 0; i < HD / 2; i++) dqa[i] = 0.f;
    const uint32_t qa = base + C::Q_OFF + c * 64 * ROW_BYTES, doa = base + C::DO_OFF + c * 64 * ROW_BYTES;

    mbar_wait(qdo_full, 0);
    for (int j = 0; j < n_tiles; j++) {
        const int s = j % S, j0 = j * BN;
        const uint32_t kb = base + C::K_OFF + s * C::KV_BYTES, vb = base + C::V_OFF + s * C::KV_BYTES;
        mbar_wait(kv_full(s), (j / S) & 1);
        fence_regs(sc);
        fence_regs(dp);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)   // S = Q Kᵀ
            wgmma_ss<BN>(sc, desc_kmajor(kmajor_step(qa, BM, kk)), desc_kmajor(kmajor_step(kb, BN, kk)), kk > 0);
        wg_commit();
#pragma unroll
        for (int kk = 0; kk < HD / 16; kk++)   // dP = dO Vᵀ
            wgmma_ss<BN>(dp, desc_kmajor(kmajor_step(doa, BM, kk)), desc_kmajor(kmajor_step(vb, BN, kk)), kk > 0);
        wg_commit();
        wg_wait<1>();
        fence_regs(sc);
#pragma unroll
        for (int i = 0; i < BN / 2; i++) {   // P (overlaps the dP GEMM)
            int key = j0 + (i / 4) * 8 + 2 * t + (i & 1), e = (i % 4) / 2;
            bool ok = L[e] != -INFINITY && key < nk && (!causal || key <= rows[e]);
            sc[i] = ok ? fast_exp2(fmaf(sc[i], sl2, -L[e])) : 0.f;
        }
        wg_wait<0>();
        fence_regs(dp);
#pragma unroll
        for (int i = 0; i < BN / 2; i++) dp[i] = sc[i] * (dp[i] - Dr[(i % 4) / 2]) * scale;   // dS
        acc_to_a<BN / 16>(dsa, dp);
        fence_regs(dqa);
        fence_regs(dsa);
        wg_fence();
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++)   // dQ += dS K (K MN-major: head dim contiguous)
            wgmma_rs<HD>(dqa, dsa[kk], desc_mnmajor(kb + kk * 16 * ROW_BYTES, BN * ROW_BYTES));
        wg_commit();
        wg_wait<0>();
        fence_regs(dqa);
        fence_regs(dsa);
        mbar_arrive(empty(s));
    }
    frag_store<HD>(dq, dqa, rows, nq, (size_t)H * HD, h, t, true);
#else
    __trap();
#endif
}

// ---------------------------------------------------------------------------------------------
// Host side.

static cudaStream_t stream(void) { return (cudaStream_t)cuda_backend_stream(); }

// fp32 → bf16, four at a time (n4 groups of 4; every tensor here has hd ∈ {64, 128} columns).
__global__ void to_bf16_kernel(__nv_bfloat16 *dst, const float *src, size_t n4) {
    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n4) return;
    float4 x = reinterpret_cast<const float4 *>(src)[i];
    uint2 packed;
    __nv_bfloat162 lo = __floats2bfloat162_rn(x.x, x.y), hi = __floats2bfloat162_rn(x.z, x.w);
    packed.x = *reinterpret_cast<uint32_t *>(&lo);
    packed.y = *reinterpret_cast<uint32_t *>(&hi);
    reinterpret_cast<uint2 *>(dst)[i] = packed;
}

// The bf16 operand scratch: grows to the largest call's need and is kept (it counts in the backend's
// peak memory). Growing frees the old buffer with cudaFree, which waits for the kernels reading it.
static __nv_bfloat16 *scratch_bf16(size_t elems) {
    static __nv_bfloat16 *buf;
    static size_t cap;
    if (elems > cap) {
        if (buf) cuda_mem_release(buf);
        cap = elems + elems / 4;
        buf = (__nv_bfloat16 *)cuda_mem_alloc(cap * sizeof(__nv_bfloat16), "sm90 attention bf16 operands");
    }
    return buf;
}

static void to_bf16(__nv_bfloat16 *dst, const float *src, size_t n) {
    size_t n4 = n / 4;
    if (!n4) return;
    to_bf16_kernel<<<(unsigned)((n4 + 255) / 256), 256, 0, stream()>>>(dst, src, n4);
    CUDA_CHECK_LAUNCH("sm90 attention fp32 -> bf16");
}

// cuTensorMapEncodeTiled from the driver, reached through the runtime (no link against libcuda).
static PFN_cuTensorMapEncodeTiled_v12000 encode_tiled(void) {
    static PFN_cuTensorMapEncodeTiled_v12000 fn;
    if (!fn) {
        void *p = NULL;
        cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
        CUDA_CHECK(cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault, &q));
        if (q != cudaDriverEntryPointSuccess || !p)
            fail("--attn sm90: the CUDA driver has no cuTensorMapEncodeTiled (needs a driver for CUDA >= 12.0); "
                 "update the driver or use --attn flash");
        fn = (PFN_cuTensorMapEncodeTiled_v12000)p;
    }
    return fn;
}

// A token-major bf16 tensor (rows, heads, hd) as TMA sees it: 3-D {hd, heads, rows} (innermost
// first), boxes of {64 columns, 1 head, box_rows rows}, 128-byte swizzle, zero fill past the ends.
static CUtensorMap tensor_map(const __nv_bfloat16 *base, int rows, int heads, int hd, int box_rows) {
    CUtensorMap map;
    cuuint64_t dims[3] = {(cuuint64_t)hd, (cuuint64_t)heads, (cuuint64_t)rows};
    cuuint64_t strides[2] = {(cuuint64_t)hd * 2, (cuuint64_t)heads * hd * 2};   // bytes, dims 1 and 2
    cuuint32_t box[3] = {64, 1, (cuuint32_t)box_rows}, elem_strides[3] = {1, 1, 1};
    CUresult r = encode_tiled()(&map, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 3, (void *)base, dims, strides, box,
                                elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        fail("sm90 attention: cuTensorMapEncodeTiled failed (error %d) for a (%d, %d, %d) tensor; use --attn flash "
             "for the sm_80 kernels",
             (int)r, rows, heads, hd);
    return map;
}

// Above 48 KiB a kernel's dynamic shared memory must be allowed explicitly (once per kernel).
static void allow_smem(const void *kernel, int bytes, bool *done) {
    if (*done) return;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    *done = true;
}

extern "C" bool attn_sm90_device(void) {
    static int sm90 = -1;   // the device is compute capability 9.0 exactly (sm_90a code runs nowhere else)
    if (sm90 < 0) {
        int dev = 0, major = 0, minor = 0;
        cuda_backend_stream();   // initialises the backend's device
        CUDA_CHECK(cudaGetDevice(&dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
        CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
        sm90 = major == 9 && minor == 0;
        if (!sm90)
            fprintf(stderr, "ringgpt: --attn sm90 but the GPU is sm_%d%d; attention runs the sm_80 kernels\n",
                    major, minor);
    }
    return sm90;
}

// The bf16 operands of a call: q, k, v as they are under --activations bf16 (s->qkv), else converted into the
// scratch (at `at`, advancing it).
static const __nv_bfloat16 *bf16_of(const AttnShape *s, const real *p, size_t n, __nv_bfloat16 **at) {
    if (s->qkv == ACT_BF16) return (const __nv_bfloat16 *)p;
    __nv_bfloat16 *b = *at;
    to_bf16(b, p, n);
    *at += n;
    return b;
}

template <int HD>
static void forward(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v, int nk,
                    int causal) {
    using C = FwdCfg<HD>;
    static bool ready;
    const int H = s->n_head, Hkv = s->n_kv_head;
    size_t qn = (size_t)nq * H * HD, kn = (size_t)nk * Hkv * HD;
    __nv_bfloat16 *at = s->qkv == ACT_BF16 ? NULL : scratch_bf16(qn + 2 * kn);
    const __nv_bfloat16 *qb = bf16_of(s, q, qn, &at), *kb = bf16_of(s, k, kn, &at), *vb = bf16_of(s, v, kn, &at);
    CUtensorMap tq = tensor_map(qb, nq, H, HD, C::BQ), tk = tensor_map(kb, nk, Hkv, HD, C::BK);
    CUtensorMap tv = tensor_map(vb, nk, Hkv, HD, C::BK);
    allow_smem((const void *)fwd_kernel<HD>, C::SMEM, &ready);
    dim3 grid((nq + C::BQ - 1) / C::BQ, H);
    fwd_kernel<HD><<<grid, THREADS_SM90, C::SMEM, stream()>>>(tq, tk, tv, st.acc, st.m, st.l, nq, nk, H, Hkv, causal,
                                                               (float)(1.0 / sqrt((double)HD)));
    CUDA_CHECK_LAUNCH("sm90 attention forward");
}

template <int HD>
static void backward(const AttnShape *s, float *dq, float *dk, float *dv, const real *q, const real *k, const real *v,
                     const float *dout, const float *lse, const float *D, int nq, int nk, int causal) {
    using KV = DkdvCfg<HD>;
    using Q = DqCfg<HD>;
    static bool ready_kv, ready_q;
    const int H = s->n_head, Hkv = s->n_kv_head;
    const float scale = (float)(1.0 / sqrt((double)HD));
    size_t qn = (size_t)nq * H * HD, kn = (size_t)nk * Hkv * HD;
    __nv_bfloat16 *at = scratch_bf16(s->qkv == ACT_BF16 ? qn : 2 * qn + 2 * kn), *dob = at;
    to_bf16(dob, dout, qn);   // dO is a gradient: fp32 whatever the activations' storage
    at += qn;
    const __nv_bfloat16 *qb = bf16_of(s, q, qn, &at), *kb = bf16_of(s, k, kn, &at), *vb = bf16_of(s, v, kn, &at);

    CUtensorMap tq = tensor_map(qb, nq, H, HD, KV::BM), tdo = tensor_map(dob, nq, H, HD, KV::BM);
    CUtensorMap tk = tensor_map(kb, nk, Hkv, HD, KV::BN), tv = tensor_map(vb, nk, Hkv, HD, KV::BN);
    allow_smem((const void *)dkdv_kernel<HD>, KV::SMEM, &ready_kv);
    dim3 grid_kv((nk + KV::BN - 1) / KV::BN, Hkv);
    dkdv_kernel<HD><<<grid_kv, THREADS_SM90, KV::SMEM, stream()>>>(tq, tk, tv, tdo, dk, dv, lse, D, nq, nk, H, Hkv,
                                                                    causal, scale);
    CUDA_CHECK_LAUNCH("sm90 attention backward dK dV");

    tq = tensor_map(qb, nq, H, HD, Q::BM), tdo = tensor_map(dob, nq, H, HD, Q::BM);
    tk = tensor_map(kb, nk, Hkv, HD, Q::BN), tv = tensor_map(vb, nk, Hkv, HD, Q::BN);
    allow_smem((const void *)dq_kernel<HD>, Q::SMEM, &ready_q);
    dim3 grid_q((nq + Q::BM - 1) / Q::BM, H);
    dq_kernel<HD><<<grid_q, THREADS_SM90, Q::SMEM, stream()>>>(tq, tk, tv, tdo, dq, lse, D, nq, nk, H, Hkv, causal,
                                                                scale);
    CUDA_CHECK_LAUNCH("sm90 attention backward dQ");
}

extern "C" void attn_sm90_forward_block(const AttnShape *s, AttnState st, const real *q, int nq, const real *k,
                                        const real *v, int nk, int causal) {
    if (s->head_dim == 64) forward<64>(s, st, q, nq, k, v, nk, causal);
    else forward<128>(s, st, q, nq, k, v, nk, causal);
}

extern "C" void attn_sm90_backward_block(const AttnShape *s, float *dq, float *dk, float *dv, const real *q,
                                         const real *k, const real *v, const float *dout, const float *lse,
                                         const float *D, int nq, int nk, int causal) {
    if (s->head_dim == 64) backward<64>(s, dq, dk, dv, q, k, v, dout, lse, D, nq, nk, causal);
    else backward<128>(s, dq, dk, dv, q, k, v, dout, lse, D, nq, nk, causal);
}
