// attention/attention_cuda.cu — flash attention block kernels on tensor cores (mma.sync bf16, fp32 accumulate), CPU block API.
// Same contract as attention/attention_cpu.c (see attention/attention.h): token-major q (nq, H, hd),
// k, v (nk, Hkv, hd), fp32 state {acc, m, l} carried across blocks, causal-diagonal or full mask,
// GQA by indexing (KV never repeated). Storage is fp32; tiles are converted to bf16 in shared
// memory and multiplied with mma.sync.m16n8k16 (fp32 accumulators); bf16 q, k, v (--activations bf16) are
// loaded as they are. The backward is two kernels
// (dK/dV owned per KV tile, dQ owned per Q tile), so no element is written by two blocks: no atomics,
// deterministic results.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention/attention_warp.cuh"
#include "core/cuda_check.h"

RINGGPT_EXTERN_C_BEGIN
#include "attention/attention_cuda.h"
#include "core/backend_cuda.h"
RINGGPT_EXTERN_C_END

#define WARPS 4
#define THREADS (WARPS * 32)
#define BQ 64   // forward / dQ: query rows per block (16 per warp)
#define PAD 8   // bf16 elements of padding per shared row: rows start on different banks

// ---------------------------------------------------------------------------------------------
// Tensor-core primitives. Fragment layout of mma.m16n8k16 (lane = 4·g + t):
//   A (16×16, row-major): a0 = A[g][2t..2t+1], a1 = A[g+8][2t..], a2 = A[g][2t+8..], a3 = A[g+8][2t+8..]
//   B (16×8, "col"):      b0 = B[2t..2t+1][g], b1 = B[2t+8..2t+9][g]   (i.e. row g of Bᵀ)
//   C (16×8, fp32):       c0,c1 = C[g][2t..2t+1], c2,c3 = C[g+8][2t..2t+1]
// Two neighbouring C tiles (16×16) are exactly one A fragment: P never leaves the registers.

__device__ __forceinline__ void mma_bf16(float d[4], const uint32_t a[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}


// Two bf16 at (row, col) of a shared tile with `ld` elements per row (col even).
__device__ __forceinline__ uint32_t ld2(const __nv_bfloat16 *s, int ld, int row, int col) {
    return *reinterpret_cast<const uint32_t *>(s + row * ld + col);
}

// A fragment of rows r0..r0+15, columns c0..c0+15 of a row-major shared tile.
__device__ __forceinline__ void load_a(uint32_t a[4], const __nv_bfloat16 *s, int ld, int r0, int c0) {
    int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    a[0] = ld2(s, ld, r0 + g, c0 + 2 * t);
    a[1] = ld2(s, ld, r0 + g + 8, c0 + 2 * t);
    a[2] = ld2(s, ld, r0 + g, c0 + 2 * t + 8);
    a[3] = ld2(s, ld, r0 + g + 8, c0 + 2 * t + 8);
}
// The B fragment whose transpose is rows n0..n0+7, columns k0..k0+15 of a row-major shared tile.
__device__ __forceinline__ void load_bt(uint32_t &b0, uint32_t &b1, const __nv_bfloat16 *s, int ld, int n0, int k0) {
    int g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    b0 = ld2(s, ld, n0 + g, k0 + 2 * t);
    b1 = ld2(s, ld, n0 + g, k0 + 2 * t + 8);
}
// The A fragment for k-step kk made of the fp32 C tiles c[2kk] and c[2kk+1] (scaled by f).
__device__ __forceinline__ void c_to_a(uint32_t a[4], const float c0[4], const float c1[4]) {
    a[0] = pack_bf16(c0[0], c0[1]);
    a[1] = pack_bf16(c0[2], c0[3]);
    a[2] = pack_bf16(c1[0], c1[1]);
    a[3] = pack_bf16(c1[2], c1[3]);
}

// Loads rows [r0, r0+rows) of a token-major tensor of TS (float or bf16; row stride `stride` elements, head
// offset already applied) as bf16 into a shared tile: row-major (rows, HD) and/or transposed (HD, rows).
// Rows at or past `limit` are zero. fp32 rows are converted here; bf16 rows (--activations bf16) are copied as
// they are.
template <int HD, typename TS>
__device__ void load_tile(__nv_bfloat16 *dst, int ld, __nv_bfloat16 *dst_t, int ld_t, const TS *src, size_t stride,
                          int r0, int rows, int limit) {
    for (int idx = threadIdx.x; idx < rows * (HD / 4); idx += blockDim.x) {
        int r = idx / (HD / 4), c = (idx % (HD / 4)) * 4;
        if constexpr (sizeof(TS) == 4) {
            float4 x = make_float4(0.f, 0.f, 0.f, 0.f);
            if (r0 + r < limit) x = *reinterpret_cast<const float4 *>(src + (size_t)(r0 + r) * stride + c);
            if (dst) {
                uint2 packed = make_uint2(pack_bf16(x.x, x.y), pack_bf16(x.z, x.w));
                *reinterpret_cast<uint2 *>(dst + r * ld + c) = packed;
            }
            if (dst_t) {
                dst_t[(c + 0) * ld_t + r] = __float2bfloat16_rn(x.x);
                dst_t[(c + 1) * ld_t + r] = __float2bfloat16_rn(x.y);
                dst_t[(c + 2) * ld_t + r] = __float2bfloat16_rn(x.z);
                dst_t[(c + 3) * ld_t + r] = __float2bfloat16_rn(x.w);
            }
        } else {
            uint2 packed = make_uint2(0u, 0u);
            if (r0 + r < limit) packed = *reinterpret_cast<const uint2 *>(src + (size_t)(r0 + r) * stride + c);
            if (dst) *reinterpret_cast<uint2 *>(dst + r * ld + c) = packed;
            if (dst_t) {
                const __nv_bfloat16 *e = reinterpret_cast<const __nv_bfloat16 *>(&packed);
                dst_t[(c + 0) * ld_t + r] = e[0];
                dst_t[(c + 1) * ld_t + r] = e[1];
                dst_t[(c + 2) * ld_t + r] = e[2];
                dst_t[(c + 3) * ld_t + r] = e[3];
            }
        }
    }
}


// Document masking: [lo, hi] of n ids. Every thread of a block reads the same ids, so decisions made
// from these ranges are block-uniform and may skip a tile before its barriers.
__device__ __forceinline__ void id_range(const int *ids, int n, int *lo, int *hi) {
    int a = ids[0], b = ids[0];
    for (int i = 1; i < n; i++) a = min(a, ids[i]), b = max(b, ids[i]);
    *lo = a, *hi = b;
}

// True when none of the n ids can equal an id in [lo, hi]: the tile is hidden for every row.
__device__ __forceinline__ bool tile_hidden(const int *ids, int n, int lo, int hi) {
    int a, b;
    id_range(ids, n, &a, &b);
    return b < lo || hi < a;
}

// ---------------------------------------------------------------------------------------------
// Forward: grid (ceil(nq/BQ), H); warp w owns query rows w·16.. of the tile; the state of those
// rows is read at the start and written at the end, so a block folds every KV tile of the block in.

template <int HD, typename TI>
__global__ void __launch_bounds__(THREADS) attn_fwd_kernel(float *acc, float *m_state, float *l_state, const TI *q,
                                                           const TI *k, const TI *v, int nq, int nk, int H,
                                                           int Hkv, int causal, const int *qdoc, const int *kdoc,
                                                           float scale) {
    constexpr int BK = 64, LD = HD + PAD, LDT = BK + PAD, NT = HD / 8;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __nv_bfloat16 *Qs = reinterpret_cast<__nv_bfloat16 *>(smem_raw);   // (BQ, HD)
    __nv_bfloat16 *Ks = Qs + BQ * LD;                                   // (BK, HD)
    __nv_bfloat16 *Vt = Ks + BK * LD;                                   // (HD, BK) transposed
    const int h = blockIdx.y, hk = h / (H / Hkv), i0 = blockIdx.x * BQ;
    const int w = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    const size_t qs = (size_t)H * HD, ks = (size_t)Hkv * HD;

    load_tile<HD>(Qs, LD, nullptr, 0, q + (size_t)h * HD, qs, i0, BQ, nq);
    __syncthreads();
    uint32_t qf[HD / 16][4];   // this warp's 16 query rows as A fragments, kept for every KV tile
#pragma unroll
    for (int kk = 0; kk < HD / 16; kk++) load_a(qf[kk], Qs, LD, w * 16, kk * 16);

    const int rows[2] = {i0 + w * 16 + g, i0 + w * 16 + g + 8};
    float m_i[2], l_i[2], o[NT][4];
#pragma unroll
    for (int e = 0; e < 2; e++) {
        bool in = rows[e] < nq;
        m_i[e] = in ? m_state[(size_t)rows[e] * H + h] : -INFINITY;
        l_i[e] = in ? l_state[(size_t)rows[e] * H + h] : 0.f;
    }
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 2; e++) {
            float2 a = make_float2(0.f, 0.f);
            if (rows[e] < nq) a = *reinterpret_cast<const float2 *>(acc + (size_t)rows[e] * qs + h * HD + nt * 8 + 2 * t);
            o[nt][2 * e] = a.x, o[nt][2 * e + 1] = a.y;
        }

    const int jmax = causal ? min(nk, i0 + BQ) : nk;   // causal: no key beyond the tile's last row
    int qlo = 0, qhi = 0;
    if (qdoc) id_range(qdoc + i0, min(BQ, nq - i0), &qlo, &qhi);
    for (int j0 = 0; j0 < jmax; j0 += BK) {
        if (qdoc && tile_hidden(kdoc + j0, min(BK, nk - j0), qlo, qhi)) continue;   // another document: nothing to add
        __syncthreads();   // the previous tile is no longer read
        load_tile<HD>(Ks, LD, nullptr, 0, k + (size_t)hk * HD, ks, j0, BK, nk);
        load_tile<HD>(nullptr, 0, Vt, LDT, v + (size_t)hk * HD, ks, j0, BK, nk);
        __syncthreads();
        float s[BK / 8][4];   // scores of 16 rows × BK keys
#pragma unroll
        for (int nt = 0; nt < BK / 8; nt++) {
            s[nt][0] = s[nt][1] = s[nt][2] = s[nt][3] = 0.f;
#pragma unroll
            for (int kk = 0; kk < HD / 16; kk++) {
                uint32_t b0, b1;
                load_bt(b0, b1, Ks, LD, nt * 8, kk * 16);
                mma_bf16(s[nt], qf[kk], b0, b1);
            }
        }
        float mx[2] = {-INFINITY, -INFINITY};
#pragma unroll
        for (int nt = 0; nt < BK / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int j = j0 + nt * 8 + 2 * t + (e & 1), i = rows[e >> 1];
                bool ok = j < nk && (!causal || j <= i) && (!qdoc || (i < nq && qdoc[i] == kdoc[j]));
                s[nt][e] = ok ? s[nt][e] * scale : -INFINITY;
                mx[e >> 1] = fmaxf(mx[e >> 1], s[nt][e]);
            }
        float corr[2], sum[2] = {0.f, 0.f}, m_use[2];
#pragma unroll
        for (int e = 0; e < 2; e++) {
            float m_new = fmaxf(m_i[e], quad_max(mx[e]));
            // A row with no key so far keeps m = -inf; exponentiate against 0 then: exp(-inf) = 0, never inf - inf.
            m_use[e] = m_new == -INFINITY ? 0.f : m_new;
            corr[e] = __expf(m_i[e] - m_use[e]);
            m_i[e] = m_new;
        }
#pragma unroll
        for (int nt = 0; nt < BK / 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                s[nt][e] = __expf(s[nt][e] - m_use[e >> 1]);
                sum[e >> 1] += s[nt][e];
            }
#pragma unroll
        for (int e = 0; e < 2; e++) l_i[e] = l_i[e] * corr[e] + quad_sum(sum[e]);
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            o[nt][0] *= corr[0], o[nt][1] *= corr[0];
            o[nt][2] *= corr[1], o[nt][3] *= corr[1];
        }
#pragma unroll
        for (int kk = 0; kk < BK / 16; kk++) {   // o += P V
            uint32_t a[4];
            c_to_a(a, s[2 * kk], s[2 * kk + 1]);
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                uint32_t b0, b1;
                load_bt(b0, b1, Vt, LDT, nt * 8, kk * 16);
                mma_bf16(o[nt], a, b0, b1);
            }
        }
    }
#pragma unroll
    for (int e = 0; e < 2; e++) {
        if (rows[e] >= nq) continue;
        if (t == 0) {
            m_state[(size_t)rows[e] * H + h] = m_i[e];
            l_state[(size_t)rows[e] * H + h] = l_i[e];
        }
#pragma unroll
        for (int nt = 0; nt < NT; nt++)
            *reinterpret_cast<float2 *>(acc + (size_t)rows[e] * qs + h * HD + nt * 8 + 2 * t) =
                make_float2(o[nt][2 * e], o[nt][2 * e + 1]);
    }
}

// ---------------------------------------------------------------------------------------------
// Backward, dK and dV: grid (ceil(nk/BKV), Hkv). Warp w owns keys w·16.. of the tile and loops over
// every query head of its group and every Q tile that can see the keys, transposed: Sᵀ = K Qᵀ.

template <int HD, typename TI>
__global__ void __launch_bounds__(THREADS) attn_bwd_dkdv_kernel(float *dk, float *dv, const TI *q, const TI *k,
                                                                const TI *v, const float *dout, const float *lse,
                                                                const float *D, int nq, int nk, int H, int Hkv,
                                                                int causal, const int *qdoc, const int *kdoc, float scale) {
    constexpr int BKV = 64, BQB = HD >= 128 ? 32 : 64, LD = HD + PAD, LDT = BQB + PAD, NT = HD / 8, MT = BQB / 8;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __nv_bfloat16 *Ks = reinterpret_cast<__nv_bfloat16 *>(smem_raw);   // (BKV, HD)
    __nv_bfloat16 *Vs = Ks + BKV * LD;                                  // (BKV, HD)
    __nv_bfloat16 *Qs = Vs + BKV * LD;                                  // (BQB, HD)
    __nv_bfloat16 *Qt = Qs + BQB * LD;                                  // (HD, BQB)
    __nv_bfloat16 *dOs = Qt + HD * LDT;                                 // (BQB, HD)
    __nv_bfloat16 *dOt = dOs + BQB * LD;                                // (HD, BQB)
    float *lse_s = reinterpret_cast<float *>(dOt + HD * LDT);           // (BQB)
    float *D_s = lse_s + BQB;                                           // (BQB)
    const int hk = blockIdx.y, group = H / Hkv, j0 = blockIdx.x * BKV;
    const int w = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    const size_t qs = (size_t)H * HD, ks = (size_t)Hkv * HD;

    load_tile<HD>(Ks, LD, nullptr, 0, k + (size_t)hk * HD, ks, j0, BKV, nk);
    load_tile<HD>(Vs, LD, nullptr, 0, v + (size_t)hk * HD, ks, j0, BKV, nk);
    const int keys[2] = {j0 + w * 16 + g, j0 + w * 16 + g + 8};
    float dkacc[NT][4], dvacc[NT][4];
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) dkacc[nt][e] = dvacc[nt][e] = 0.f;

    const int i_start = causal ? (j0 / BQB) * BQB : 0;   // causal: rows before the first key see none of it
    int klo = 0, khi = 0;
    if (qdoc) id_range(kdoc + j0, min(BKV, nk - j0), &klo, &khi);
    for (int h = hk * group; h < (hk + 1) * group; h++) {
        for (int i0 = i_start; i0 < nq; i0 += BQB) {
            if (qdoc && tile_hidden(qdoc + i0, min(BQB, nq - i0), klo, khi)) continue;
            __syncthreads();
            load_tile<HD>(Qs, LD, Qt, LDT, q + (size_t)h * HD, qs, i0, BQB, nq);
            load_tile<HD>(dOs, LD, dOt, LDT, dout + (size_t)h * HD, qs, i0, BQB, nq);
            for (int r = threadIdx.x; r < BQB; r += blockDim.x) {
                bool in = i0 + r < nq;
                lse_s[r] = in ? lse[(size_t)(i0 + r) * H + h] : -INFINITY;
                D_s[r] = in ? D[(size_t)(i0 + r) * H + h] : 0.f;
            }
            __syncthreads();
            float st[MT][4], dpt[MT][4];   // Sᵀ and dPᵀ: 16 keys × BQB queries
#pragma unroll
            for (int nt = 0; nt < MT; nt++) {
#pragma unroll
                for (int e = 0; e < 4; e++) st[nt][e] = dpt[nt][e] = 0.f;
#pragma unroll
                for (int kk = 0; kk < HD / 16; kk++) {
                    uint32_t a[4], b0, b1;
                    load_a(a, Ks, LD, w * 16, kk * 16);
                    load_bt(b0, b1, Qs, LD, nt * 8, kk * 16);
                    mma_bf16(st[nt], a, b0, b1);
                    load_a(a, Vs, LD, w * 16, kk * 16);
                    load_bt(b0, b1, dOs, LD, nt * 8, kk * 16);
                    mma_bf16(dpt[nt], a, b0, b1);
                }
            }
            // Pᵀ = exp(S·scale − lse) (0 where masked or the row has no key); dSᵀ = Pᵀ ∘ (dPᵀ − D) · scale.
#pragma unroll
            for (int nt = 0; nt < MT; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    int col = nt * 8 + 2 * t + (e & 1), i = i0 + col, j = keys[e >> 1];
                    float L = lse_s[col];
                    bool ok = i < nq && j < nk && (!causal || j <= i) && L != -INFINITY && (!qdoc || qdoc[i] == kdoc[j]);
                    float p = ok ? __expf(st[nt][e] * scale - L) : 0.f;
                    st[nt][e] = p;
                    dpt[nt][e] = p * (dpt[nt][e] - D_s[col]) * scale;
                }
#pragma unroll
            for (int kk = 0; kk < BQB / 16; kk++) {
                uint32_t ap[4], ads[4];
                c_to_a(ap, st[2 * kk], st[2 * kk + 1]);
                c_to_a(ads, dpt[2 * kk], dpt[2 * kk + 1]);
#pragma unroll
                for (int nt = 0; nt < NT; nt++) {
                    uint32_t b0, b1;
                    load_bt(b0, b1, dOt, LDT, nt * 8, kk * 16);   // dV += Pᵀ dO
                    mma_bf16(dvacc[nt], ap, b0, b1);
                    load_bt(b0, b1, Qt, LDT, nt * 8, kk * 16);    // dK += dSᵀ Q
                    mma_bf16(dkacc[nt], ads, b0, b1);
                }
            }
        }
    }
#pragma unroll
    for (int e = 0; e < 2; e++) {
        if (keys[e] >= nk) continue;
        size_t base = (size_t)keys[e] * ks + (size_t)hk * HD;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            float2 *pk = reinterpret_cast<float2 *>(dk + base + nt * 8 + 2 * t);
            float2 *pv = reinterpret_cast<float2 *>(dv + base + nt * 8 + 2 * t);
            float2 a = *pk, b = *pv;
            *pk = make_float2(a.x + dkacc[nt][2 * e], a.y + dkacc[nt][2 * e + 1]);
            *pv = make_float2(b.x + dvacc[nt][2 * e], b.y + dvacc[nt][2 * e + 1]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Backward, dQ: grid (ceil(nq/BQ), H). Warp w owns query rows w·16..; recomputes P and dS per KV tile.

template <int HD, typename TI>
__global__ void __launch_bounds__(THREADS) attn_bwd_dq_kernel(float *dq, const TI *q, const TI *k, const TI *v,
                                                              const float *dout, const float *lse, const float *D,
                                                              int nq, int nk, int H, int Hkv, int causal, const int *qdoc,
                                                              const int *kdoc, float scale) {
    constexpr int BKQ = HD >= 128 ? 32 : 64, LD = HD + PAD, LDT = BKQ + PAD, NT = HD / 8, MT = BKQ / 8;
    extern __shared__ __align__(16) unsigned char smem_raw[];
    __nv_bfloat16 *Qs = reinterpret_cast<__nv_bfloat16 *>(smem_raw);   // (BQ, HD)
    __nv_bfloat16 *dOs = Qs + BQ * LD;                                  // (BQ, HD)
    __nv_bfloat16 *Ks = dOs + BQ * LD;                                  // (BKQ, HD)
    __nv_bfloat16 *Kt = Ks + BKQ * LD;                                  // (HD, BKQ)
    __nv_bfloat16 *Vs = Kt + HD * LDT;                                  // (BKQ, HD)
    const int h = blockIdx.y, hk = h / (H / Hkv), i0 = blockIdx.x * BQ;
    const int w = threadIdx.x >> 5, g = (threadIdx.x & 31) >> 2, t = threadIdx.x & 3;
    const size_t qs = (size_t)H * HD, ks = (size_t)Hkv * HD;

    load_tile<HD>(Qs, LD, nullptr, 0, q + (size_t)h * HD, qs, i0, BQ, nq);
    load_tile<HD>(dOs, LD, nullptr, 0, dout + (size_t)h * HD, qs, i0, BQ, nq);
    const int rows[2] = {i0 + w * 16 + g, i0 + w * 16 + g + 8};
    float L[2], Dr[2], dqacc[NT][4];
#pragma unroll
    for (int e = 0; e < 2; e++) {
        bool in = rows[e] < nq;
        L[e] = in ? lse[(size_t)rows[e] * H + h] : -INFINITY;
        Dr[e] = in ? D[(size_t)rows[e] * H + h] : 0.f;
    }
#pragma unroll
    for (int nt = 0; nt < NT; nt++) dqacc[nt][0] = dqacc[nt][1] = dqacc[nt][2] = dqacc[nt][3] = 0.f;

    const int jmax = causal ? min(nk, i0 + BQ) : nk;
    int qlo = 0, qhi = 0;
    if (qdoc) id_range(qdoc + i0, min(BQ, nq - i0), &qlo, &qhi);
    for (int j0 = 0; j0 < jmax; j0 += BKQ) {
        if (qdoc && tile_hidden(kdoc + j0, min(BKQ, nk - j0), qlo, qhi)) continue;
        __syncthreads();
        load_tile<HD>(Ks, LD, Kt, LDT, k + (size_t)hk * HD, ks, j0, BKQ, nk);
        load_tile<HD>(Vs, LD, nullptr, 0, v + (size_t)hk * HD, ks, j0, BKQ, nk);
        __syncthreads();
        float s[MT][4], dp[MT][4];   // S and dP: 16 rows × BKQ keys
#pragma unroll
        for (int nt = 0; nt < MT; nt++) {
#pragma unroll
            for (int e = 0; e < 4; e++) s[nt][e] = dp[nt][e] = 0.f;
#pragma unroll
            for (int kk = 0; kk < HD / 16; kk++) {
                uint32_t a[4], b0, b1;
                load_a(a, Qs, LD, w * 16, kk * 16);
                load_bt(b0, b1, Ks, LD, nt * 8, kk * 16);
                mma_bf16(s[nt], a, b0, b1);
                load_a(a, dOs, LD, w * 16, kk * 16);
                load_bt(b0, b1, Vs, LD, nt * 8, kk * 16);
                mma_bf16(dp[nt], a, b0, b1);
            }
        }
#pragma unroll
        for (int nt = 0; nt < MT; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                int j = j0 + nt * 8 + 2 * t + (e & 1), i = rows[e >> 1];
                float Li = L[e >> 1];
                bool ok = i < nq && j < nk && (!causal || j <= i) && Li != -INFINITY && (!qdoc || qdoc[i] == kdoc[j]);
                float p = ok ? __expf(s[nt][e] * scale - Li) : 0.f;
                dp[nt][e] = p * (dp[nt][e] - Dr[e >> 1]) * scale;   // dS
            }
#pragma unroll
        for (int kk = 0; kk < BKQ / 16; kk++) {   // dQ += dS K
            uint32_t a[4];
            c_to_a(a, dp[2 * kk], dp[2 * kk + 1]);
#pragma unroll
            for (int nt = 0; nt < NT; nt++) {
                uint32_t b0, b1;
                load_bt(b0, b1, Kt, LDT, nt * 8, kk * 16);
                mma_bf16(dqacc[nt], a, b0, b1);
            }
        }
    }
#pragma unroll
    for (int e = 0; e < 2; e++) {
        if (rows[e] >= nq) continue;
#pragma unroll
        for (int nt = 0; nt < NT; nt++) {
            float2 *p = reinterpret_cast<float2 *>(dq + (size_t)rows[e] * qs + h * HD + nt * 8 + 2 * t);
            float2 a = *p;
            *p = make_float2(a.x + dqacc[nt][2 * e], a.y + dqacc[nt][2 * e + 1]);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Small kernels: state reset, finalize, D.

__global__ void state_reset_kernel(float *m, float *l, size_t rows) {
    size_t r = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) m[r] = -INFINITY, l[r] = 0.f;
}

// out = acc / l, lse = m + log(l); rows that saw no key: out = 0, lse = -inf. out may alias acc and
// lse may alias m: each element is read and written by the same thread.
__global__ void finalize_kernel(float *out, float *lse, const float *acc, const float *m, const float *l, size_t rows,
                                int hd) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * hd) return;
    size_t r = idx / hd;
    float lr = l[r];
    out[idx] = lr > 0 ? acc[idx] / lr : 0.f;
    if (idx % hd == 0) lse[r] = lr > 0 ? m[r] + logf(lr) : -INFINITY;
}

// D (rows) = rowsum(dout ∘ out) over hd; one warp per (row, head), fixed shuffle tree.
__global__ void backward_prep_kernel(float *D, const float *dout, const float *out, size_t rows, int hd) {
    size_t r = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / 32;
    int lane = threadIdx.x & 31;
    if (r >= rows) return;
    float s = 0.f;
    for (int d = lane; d < hd; d += 32) s += dout[r * hd + d] * out[r * hd + d];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) D[r] = s;
}

// ---------------------------------------------------------------------------------------------
// Host side: the block API.

static cudaStream_t stream(void) { return (cudaStream_t)cuda_backend_stream(); }

static void check_shape(const AttnShape *s, const char *what) {
    int hd = s->head_dim;
    if (hd != 16 && hd != 32 && hd != 64 && hd != 128)
        fail("CUDA attention (%s): head_dim %d is not supported (16, 32, 64, 128); choose --dim / --heads so that "
             "dim/heads is one of them, or use --device cpu",
             what, hd);
    if (s->n_head % s->n_kv_head != 0) fail("CUDA attention: n_kv_head %d does not divide n_head %d", s->n_kv_head, s->n_head);
}

template <int HD>
static size_t fwd_smem(void) { return (size_t)(BQ * (HD + PAD) + 64 * (HD + PAD) + HD * (64 + PAD)) * 2; }
template <int HD>
static size_t dkdv_smem(void) {
    constexpr int BQB = HD >= 128 ? 32 : 64;
    return (size_t)(2 * 64 * (HD + PAD) + 2 * BQB * (HD + PAD) + 2 * HD * (BQB + PAD)) * 2 + 2 * BQB * sizeof(float);
}
template <int HD>
static size_t dq_smem(void) {
    constexpr int BKQ = HD >= 128 ? 32 : 64;
    return (size_t)(2 * BQ * (HD + PAD) + 2 * BKQ * (HD + PAD) + HD * (BKQ + PAD)) * 2;
}

// Above 48 KiB a kernel's dynamic shared memory must be allowed explicitly (once per kernel).
static void allow_smem(const void *kernel, size_t bytes, bool *done) {
    if (*done) return;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    *done = true;
}

template <int HD, typename TI>
static void launch_forward(const AttnShape *s, AttnState st, const TI *q, int nq, const TI *k, const TI *v, int nk,
                           int causal, AttnDocs docs) {
    static bool ready;
    size_t smem = fwd_smem<HD>();
    allow_smem((const void *)attn_fwd_kernel<HD, TI>, smem, &ready);
    dim3 grid((nq + BQ - 1) / BQ, s->n_head);
    attn_fwd_kernel<HD, TI><<<grid, THREADS, smem, stream()>>>(st.acc, st.m, st.l, q, k, v, nq, nk, s->n_head,
                                                               s->n_kv_head, causal, docs.q, docs.k,
                                                               (float)(1.0 / sqrt((double)HD)));
    CUDA_CHECK_LAUNCH("attention forward");
}

template <int HD, typename TI>
static void launch_backward(const AttnShape *s, float *dq, float *dk, float *dv, const TI *q, const TI *k, const TI *v,
                            const float *dout, const float *lse, const float *D, int nq, int nk, int causal,
                            AttnDocs docs) {
    static bool ready_kv, ready_q;
    float scale = (float)(1.0 / sqrt((double)HD));
    size_t smem_kv = dkdv_smem<HD>(), smem_q = dq_smem<HD>();
    allow_smem((const void *)attn_bwd_dkdv_kernel<HD, TI>, smem_kv, &ready_kv);
    allow_smem((const void *)attn_bwd_dq_kernel<HD, TI>, smem_q, &ready_q);
    dim3 grid_kv((nk + 63) / 64, s->n_kv_head), grid_q((nq + BQ - 1) / BQ, s->n_head);
    attn_bwd_dkdv_kernel<HD, TI><<<grid_kv, THREADS, smem_kv, stream()>>>(dk, dv, q, k, v, dout, lse, D, nq, nk,
                                                                          s->n_head, s->n_kv_head, causal, docs.q,
                                                                          docs.k, scale);
    CUDA_CHECK_LAUNCH("attention backward dK dV");
    attn_bwd_dq_kernel<HD, TI><<<grid_q, THREADS, smem_q, stream()>>>(dq, q, k, v, dout, lse, D, nq, nk, s->n_head,
                                                                      s->n_kv_head, causal, docs.q, docs.k, scale);
    CUDA_CHECK_LAUNCH("attention backward dQ");
}

// The flash kernels for q, k, v of element type TI, by head dim.
template <typename TI>
static void flash_forward(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v, int nk,
                          int causal, AttnDocs docs) {
    const TI *qt = (const TI *)q, *kt = (const TI *)k, *vt = (const TI *)v;
    switch (s->head_dim) {
    case 16: launch_forward<16>(s, st, qt, nq, kt, vt, nk, causal, docs); break;
    case 32: launch_forward<32>(s, st, qt, nq, kt, vt, nk, causal, docs); break;
    case 64: launch_forward<64>(s, st, qt, nq, kt, vt, nk, causal, docs); break;
    case 128: launch_forward<128>(s, st, qt, nq, kt, vt, nk, causal, docs); break;
    }
}
template <typename TI>
static void flash_backward(const AttnShape *s, float *dq, float *dk, float *dv, const real *q, const real *k,
                           const real *v, const float *dout, const float *lse, const float *D, int nq, int nk,
                           int causal, AttnDocs docs) {
    const TI *qt = (const TI *)q, *kt = (const TI *)k, *vt = (const TI *)v;
    switch (s->head_dim) {
    case 16: launch_backward<16>(s, dq, dk, dv, qt, kt, vt, dout, lse, D, nq, nk, causal, docs); break;
    case 32: launch_backward<32>(s, dq, dk, dv, qt, kt, vt, dout, lse, D, nq, nk, causal, docs); break;
    case 64: launch_backward<64>(s, dq, dk, dv, qt, kt, vt, dout, lse, D, nq, nk, causal, docs); break;
    case 128: launch_backward<128>(s, dq, dk, dv, qt, kt, vt, dout, lse, D, nq, nk, causal, docs); break;
    }
}

// ---------------------------------------------------------------------------------------------
// --attn: which kernels the block calls run.

typedef enum { IMPL_FLASH, IMPL_CUDNN, IMPL_SM90 } AttnImpl;
static AttnImpl g_impl;   // tests and benchmarks switch it between calls
static const char *const IMPL_NAMES[] = {"flash", "cudnn", "sm90"};

extern "C" void attn_cuda_set_impl(const char *name) {
    if (!name || !*name || !strcmp(name, "flash")) g_impl = IMPL_FLASH;
    else if (!strcmp(name, "sm90")) {
#ifdef RINGGPT_HAVE_SM90
        g_impl = IMPL_SM90;
#else
        fail_usage("--attn sm90: this ringgpt was built without the Hopper kernels (cmake -DRINGGPT_SM90_KERNELS=ON "
                   "builds them); use --attn cudnn or flash");
#endif
    } else if (!strcmp(name, "cudnn")) {
#ifdef RINGGPT_HAVE_CUDNN
        cudnn_sdpa_load();   // a machine without cuDNN fails here, before the first step
        g_impl = IMPL_CUDNN;
#else
        fail_usage("--attn cudnn: this ringgpt was built without cuDNN (cudnn.h or the cuDNN frontend headers were not "
                   "found when it was configured: scripts/deps.sh installs the frontend); rebuild, or use --attn flash");
#endif
    } else fail_usage("--attn %s: use flash (the sm_80 kernels) or cudnn (the default where libcudnn loads)", name);
}

extern "C" const char *attn_cuda_impl(void) { return IMPL_NAMES[g_impl]; }

#ifndef RINGGPT_HAVE_CUDNN
extern "C" bool attn_cuda_cudnn_available(void) { return false; }   // attention/cudnn_sdpa.cpp's otherwise
#endif

#ifdef RINGGPT_HAVE_SM90
// The Hopper kernels (-DRINGGPT_SM90_KERNELS=ON) run a call when chosen, on an sm_90 device, for hd 64/128
// without document ids.
static bool sm90_runs(const AttnShape *s, const AttnDocs *docs) {
    return g_impl == IMPL_SM90 && !docs && (s->head_dim == 64 || s->head_dim == 128) && attn_sm90_device();
}
#endif

#ifdef RINGGPT_HAVE_CUDNN
// cuDNN runs a call when chosen and sdpa_unsupported accepts it.
static bool cudnn_runs(const AttnShape *s, int nq, int nk, AttnMask mask, const AttnDocs *docs) {
    return g_impl == IMPL_CUDNN && !sdpa_unsupported(s, nq, nk, mask, docs != NULL);
}
#endif

extern "C" void attn_cuda_state_reset(const AttnShape *s, AttnState st, int nq) {
#ifdef RINGGPT_HAVE_CUDNN
    attn_cudnn_new_pass();
#endif
    size_t rows = (size_t)nq * s->n_head;
    if (!rows) return;
    CUDA_CHECK(cudaMemsetAsync(st.acc, 0, rows * s->head_dim * sizeof(float), stream()));
    state_reset_kernel<<<(unsigned)((rows + 255) / 256), 256, 0, stream()>>>(st.m, st.l, rows);
    CUDA_CHECK_LAUNCH("attention state reset");
}

// Document ids (device memory) join the causal/full predicate in every kernel: a key of another
// document gets score -inf (P = dS = 0), and (query tile, key tile) pairs whose id ranges are
// disjoint are skipped. Whole masked ring steps are skipped by attention/ring.c.
extern "C" void attn_cuda_forward_block(const AttnShape *s, AttnState st, const real *q, int nq, const real *k,
                                        const real *v, int nk, AttnMask mask, const AttnDocs *doc_ids) {
    const AttnDocs docs = doc_ids ? *doc_ids : AttnDocs{nullptr, nullptr};   // docs.q == nullptr: no document mask
    const AttnDocs *dp = docs.q ? &docs : nullptr;
    check_shape(s, "forward");
    if (nq <= 0 || nk <= 0) return;
    int causal = mask == ATTN_CAUSAL;
#ifdef RINGGPT_HAVE_SM90
    if (sm90_runs(s, dp)) return attn_sm90_forward_block(s, st, q, nq, k, v, nk, causal);
#endif
#ifdef RINGGPT_HAVE_CUDNN
    if (cudnn_runs(s, nq, nk, mask, dp) && attn_cudnn_forward_block(s, st, q, nq, k, v, nk, mask)) return;
#endif
    if (s->qkv == ACT_BF16) flash_forward<__nv_bfloat16>(s, st, q, nq, k, v, nk, causal, docs);
    else flash_forward<float>(s, st, q, nq, k, v, nk, causal, docs);
}

extern "C" void attn_cuda_finalize(const AttnShape *s, AttnState st, real *out, real *lse, int nq) {
    size_t rows = (size_t)nq * s->n_head, n = rows * s->head_dim;
    if (!rows) return;
    finalize_kernel<<<(unsigned)((n + 255) / 256), 256, 0, stream()>>>(out, lse, st.acc, st.m, st.l, rows,
                                                                       s->head_dim);
    CUDA_CHECK_LAUNCH("attention finalize");
}

extern "C" void attn_cuda_backward_prep(const AttnShape *s, real *D, const real *dout, const real *out, int nq) {
#ifdef RINGGPT_HAVE_CUDNN
    attn_cudnn_new_pass();
#endif
    size_t rows = (size_t)nq * s->n_head;
    if (!rows) return;
    backward_prep_kernel<<<(unsigned)((rows * 32 + 255) / 256), 256, 0, stream()>>>(D, dout, out, rows, s->head_dim);
    CUDA_CHECK_LAUNCH("attention backward prep");
}

extern "C" void attn_cuda_backward_block(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                                         const real *v, const real *out, const real *dout, const real *lse,
                                         const real *D, int nq, int nk, AttnMask mask, const AttnDocs *doc_ids) {
    const AttnDocs docs = doc_ids ? *doc_ids : AttnDocs{nullptr, nullptr};
    const AttnDocs *dp = docs.q ? &docs : nullptr;
    check_shape(s, "backward");
    if (nq <= 0 || nk <= 0) return;
    int causal = mask == ATTN_CAUSAL;
#ifdef RINGGPT_HAVE_SM90
    if (sm90_runs(s, dp)) return attn_sm90_backward_block(s, dq, dk, dv, q, k, v, dout, lse, D, nq, nk, causal);
#endif
#ifdef RINGGPT_HAVE_CUDNN
    if (cudnn_runs(s, nq, nk, mask, dp) && attn_cudnn_backward_block(s, dq, dk, dv, q, k, v, out, dout, lse, nq, nk, mask))
        return;
#else
    (void)out;   // the flash kernels take D = rowsum(dout ∘ out) instead
#endif
    if (s->qkv == ACT_BF16) flash_backward<__nv_bfloat16>(s, dq, dk, dv, q, k, v, dout, lse, D, nq, nk, causal, docs);
    else flash_backward<float>(s, dq, dk, dv, q, k, v, dout, lse, D, nq, nk, causal, docs);
}
