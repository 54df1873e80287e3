// attention/attention_cudnn.cu — the block API on cuDNN's fused attention: bf16 operands once per pass, the block's O and LSE merged into the fp32 state, bf16 gradients added into fp32.
// The ring keeps its running state {acc, m, l} in fp32 across hops (core/backend.h); cuDNN computes one
// block at a time (attention/cudnn_sdpa.cpp runs the graph) and returns that block's normalised O (bf16) and
// its softmax statistics (LSE, fp32). merge_kernel folds them in: with M = max(m, lse_b),
// acc = acc·e^(m−M) + O_b·e^(lse_b−M), l = l·e^(m−M) + e^(lse_b−M), m = M — a side that saw no key (−inf)
// gets weight 0, never exp(inf − inf). The backward hands cuDNN the global O and LSE of the rows (it computes
// D = rowsum(dO∘O) itself) and adds the block's bf16 dQ, dK, dV into the fp32 accumulators.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/cuda_check.h"

RINGGPT_EXTERN_C_BEGIN
#include "attention/attention_cuda.h"
#include "core/backend_cuda.h"
RINGGPT_EXTERN_C_END

static cudaStream_t stream(void) { return (cudaStream_t)cuda_backend_stream(); }

// A grow-only device buffer.
typedef struct {
    void *p;
    size_t cap;
} Scratch;

static void *grow(Scratch *s, size_t bytes, const char *what) {
    if (bytes > s->cap) {
        if (s->p) cuda_mem_release(s->p);
        s->p = cuda_mem_alloc(bytes, what);
        s->cap = bytes;
    }
    return s->p;
}

// ---------------------------------------------------------------------------------------------
// Kernels.

// dst (n) bf16 = src (n) fp32, 4 at a time where aligned.
static __global__ void cudnn_to_bf16_kernel(__nv_bfloat16 *dst, const float *src, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    bool vec = ((uintptr_t)dst % 8 == 0) && ((uintptr_t)src % 16 == 0);
    size_t groups = vec ? n / 4 : 0;
    for (size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += stride) {
        float4 x = reinterpret_cast<const float4 *>(src)[g];
        __nv_bfloat162 h[2] = {__floats2bfloat162_rn(x.x, x.y), __floats2bfloat162_rn(x.z, x.w)};
        reinterpret_cast<uint2 *>(dst)[g] = *reinterpret_cast<uint2 *>(h);
    }
    for (size_t i = groups * 4 + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = __float2bfloat16_rn(src[i]);
}

// dst (n) fp32 += src (n) bf16: a block's gradient into its fp32 accumulator.
static __global__ void add_bf16_kernel(float *dst, const __nv_bfloat16 *src, size_t n) {
    size_t stride = (size_t)gridDim.x * blockDim.x;
    bool vec = ((uintptr_t)dst % 16 == 0) && ((uintptr_t)src % 8 == 0);
    size_t groups = vec ? n / 4 : 0;
    for (size_t g = (size_t)blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += stride) {
        uint2 raw = reinterpret_cast<const uint2 *>(src)[g];
        const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&raw);
        float2 a = __bfloat1622float2(h[0]), b = __bfloat1622float2(h[1]);
        float4 d = reinterpret_cast<float4 *>(dst)[g];
        reinterpret_cast<float4 *>(dst)[g] = make_float4(d.x + a.x, d.y + a.y, d.z + b.x, d.w + b.y);
    }
    for (size_t i = groups * 4 + (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] += __bfloat162float(src[i]);
}

// stats (H, nq) = lse (nq, H) transposed; a row that saw no key (lse = −inf) gets +1e30 instead, so that
// cuDNN's P = exp(S − stats) is 0 for it (the row adds nothing, as the block API says) without inf − inf.
static __global__ void lse_to_stats_kernel(float *stats, const float *lse, int nq, int H) {
    size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= (size_t)nq * H) return;
    int i = (int)(idx / H), h = (int)(idx % H);
    float v = lse[idx];
    stats[(size_t)h * nq + i] = v == -INFINITY ? 1e30f : v;
}

// Folds a block's (o_b (nq, H, hd) bf16, stats (H, nq) fp32) into the state {acc (nq, H, hd), m, l (nq, H)}.
// G = hd/8 threads per (row, head), 8 columns each; the G threads of a pair are lanes of one warp, which
// read m and l before the pair's first thread writes them (__syncwarp).
template <int HD>
static __global__ void merge_kernel(float *acc, float *m, float *l, const __nv_bfloat16 *ob, const float *stats, int nq, int H) {
    constexpr int G = HD / 8;
    size_t t = (size_t)blockIdx.x * blockDim.x + threadIdx.x, pair = t / G;
    int g = (int)(t % G);
    bool in = pair < (size_t)nq * H;
    float mo = -INFINITY, lo = 0, lb = -INFINITY;
    if (in) {
        int i = (int)(pair / H), h = (int)(pair % H);
        mo = m[pair], lo = l[pair], lb = stats[(size_t)h * nq + i];
    }
    float mn = fmaxf(mo, lb);
    float a = mo == -INFINITY ? 0.f : __expf(mo - mn), b = lb == -INFINITY ? 0.f : __expf(lb - mn);
    __syncwarp();
    if (!in || mn == -INFINITY) return;   // neither side saw a key: the state stays as reset
    size_t e = pair * HD + (size_t)g * 8;
    uint4 raw = *reinterpret_cast<const uint4 *>(ob + e);
    const __nv_bfloat162 *hb = reinterpret_cast<const __nv_bfloat162 *>(&raw);
    float4 *ap = reinterpret_cast<float4 *>(acc + e);
#pragma unroll
    for (int k = 0; k < 2; k++) {
        float2 o0 = __bfloat1622float2(hb[2 * k]), o1 = __bfloat1622float2(hb[2 * k + 1]);
        float4 x = ap[k];
        ap[k] = make_float4(x.x * a + o0.x * b, x.y * a + o0.y * b, x.z * a + o1.x * b, x.w * a + o1.y * b);
    }
    if (g == 0) m[pair] = mn, l[pair] = lo * a + b;
}

static unsigned grid_for(size_t n, int threads) {
    size_t b = (n + threads - 1) / threads;
    return (unsigned)(b > 65535 * 16 ? 65535 * 16 : b < 1 ? 1 : b);
}

static void to_bf16(__nv_bfloat16 *dst, const float *src, size_t n) {
    if (!n) return;
    cudnn_to_bf16_kernel<<<grid_for(n / 4 + 1, 256), 256, 0, stream()>>>(dst, src, n);
    CUDA_CHECK_LAUNCH("cudnn attention: fp32 to bf16");
}

static void add_bf16(float *dst, const __nv_bfloat16 *src, size_t n) {
    add_bf16_kernel<<<grid_for(n / 4 + 1, 256), 256, 0, stream()>>>(dst, src, n);
    CUDA_CHECK_LAUNCH("cudnn attention: add gradient");
}

// ---------------------------------------------------------------------------------------------
// bf16 operands. q, out and dout rows are converted once per pass (the ring's later blocks use the same rows or
// their second half); k and v change every block (they are the ring's packets) and are converted per call, or
// read as they are under --activations bf16.

typedef struct {
    Scratch buf;
    const float *src;   // the fp32 rows the copy was made from
    size_t n;
    unsigned long pass;
} PassCopy;

static unsigned long g_pass = 1;

void attn_cudnn_new_pass(void) { g_pass++; }

// The bf16 copy of the n fp32 elements at src: made earlier in this pass when src lies inside that copy.
static const __nv_bfloat16 *pass_bf16(PassCopy *c, const float *src, size_t n, const char *what) {
    if (c->pass == g_pass && src >= c->src && src + n <= c->src + c->n) return (const __nv_bfloat16 *)c->buf.p + (src - c->src);
    __nv_bfloat16 *b = (__nv_bfloat16 *)grow(&c->buf, n * sizeof(__nv_bfloat16), what);
    to_bf16(b, src, n);
    c->src = src, c->n = n, c->pass = g_pass;
    return b;
}

// An operand of n elements in the storage s->qkv as bf16: itself, or a conversion into `into`.
static const void *operand(const AttnShape *s, const real *p, size_t n, Scratch *into, const char *what) {
    if (s->qkv == ACT_BF16) return p;
    __nv_bfloat16 *b = (__nv_bfloat16 *)grow(into, n * sizeof(__nv_bfloat16), what);
    to_bf16(b, p, n);
    return b;
}

static PassCopy g_q, g_out, g_dout;
static Scratch g_k, g_v, g_o, g_stats, g_dq, g_dk, g_dv;

static const void *q_operand(const AttnShape *s, const real *q, size_t n) {
    return s->qkv == ACT_BF16 ? (const void *)q : (const void *)pass_bf16(&g_q, q, n, "cuDNN attention bf16 Q");
}

// ---------------------------------------------------------------------------------------------
// The block API.

bool attn_cudnn_forward_block(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                              int nk, AttnMask mask) {
    SdpaPlan p = sdpa_plan(s, nq, nk, mask, SDPA_FORWARD);
    size_t qn = (size_t)nq * s->n_head * s->head_dim, kn = (size_t)nk * s->n_kv_head * s->head_dim;
    const void *qb = q_operand(s, q, qn);
    const void *kb = operand(s, k, kn, &g_k, "cuDNN attention bf16 K"), *vb = operand(s, v, kn, &g_v, "cuDNN attention bf16 V");
    __nv_bfloat16 *ob = (__nv_bfloat16 *)grow(&g_o, qn * sizeof(__nv_bfloat16), "cuDNN attention block O");
    float *stats = (float *)grow(&g_stats, (size_t)nq * s->n_head * sizeof(float), "cuDNN attention statistics");
    if (!cudnn_sdpa_forward(&p, qb, kb, vb, ob, stats)) return false;
    size_t threads = (size_t)nq * s->n_head * (s->head_dim / 8);
    if (s->head_dim == 64) merge_kernel<64><<<grid_for(threads, 256), 256, 0, stream()>>>(st.acc, st.m, st.l, ob, stats, nq, s->n_head);
    else merge_kernel<128><<<grid_for(threads, 256), 256, 0, stream()>>>(st.acc, st.m, st.l, ob, stats, nq, s->n_head);
    CUDA_CHECK_LAUNCH("cudnn attention: merge");
    return true;
}

// One cuDNN backward call on a sub-block: q rows [q0, q0 + bq) against keys [k0, k0 + bk), its bf16 gradients
// added into dq, dk, dv (fp32, accumulated in a fixed order). stats (H, bq) are the rows' statistics.
static bool backward_sub(const AttnShape *s, real *dq, real *dk, real *dv, const __nv_bfloat16 *qb,
                         const __nv_bfloat16 *kb, const __nv_bfloat16 *vb, const __nv_bfloat16 *ob,
                         const __nv_bfloat16 *dob, const float *stats, int q0, int bq, int k0, int bk, AttnMask mask) {
    SdpaPlan p = sdpa_plan(s, bq, bk, mask, SDPA_BACKWARD);
    size_t qw = (size_t)s->n_head * s->head_dim, kw = (size_t)s->n_kv_head * s->head_dim;
    size_t qn = (size_t)bq * qw, kn = (size_t)bk * kw;
    __nv_bfloat16 *dqb = (__nv_bfloat16 *)grow(&g_dq, qn * sizeof(__nv_bfloat16), "cuDNN attention block dQ");
    __nv_bfloat16 *dkb = (__nv_bfloat16 *)grow(&g_dk, kn * sizeof(__nv_bfloat16), "cuDNN attention block dK");
    __nv_bfloat16 *dvb = (__nv_bfloat16 *)grow(&g_dv, kn * sizeof(__nv_bfloat16), "cuDNN attention block dV");
    if (!cudnn_sdpa_backward(&p, qb + q0 * qw, kb + k0 * kw, vb + k0 * kw, ob + q0 * qw, dob + q0 * qw, stats, dqb,
                             dkb, dvb))
        return false;
    add_bf16(dq + q0 * qw, dqb, qn);
    add_bf16(dk + k0 * kw, dkb, kn);
    add_bf16(dv + k0 * kw, dvb, kn);
    return true;
}

// A block too large for one deterministic call (sdpa_backward_tile) runs as tile × tile sub-blocks: under a
// causal mask the diagonal ones causal, those below it full, those above skipped. Only the first sub-block may
// find cuDNN unwilling (nothing is added yet, the caller runs the flash kernels); a later refusal is fatal.
bool attn_cudnn_backward_block(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                               const real *v, const real *out, const real *dout, const real *lse, int nq, int nk,
                               AttnMask mask) {
    size_t qn = (size_t)nq * s->n_head * s->head_dim, kn = (size_t)nk * s->n_kv_head * s->head_dim;
    const __nv_bfloat16 *qb = (const __nv_bfloat16 *)q_operand(s, q, qn);
    const __nv_bfloat16 *kb = (const __nv_bfloat16 *)operand(s, k, kn, &g_k, "cuDNN attention bf16 K");
    const __nv_bfloat16 *vb = (const __nv_bfloat16 *)operand(s, v, kn, &g_v, "cuDNN attention bf16 V");
    const __nv_bfloat16 *ob = pass_bf16(&g_out, out, qn, "cuDNN attention bf16 O");
    const __nv_bfloat16 *dob = pass_bf16(&g_dout, dout, qn, "cuDNN attention bf16 dO");
    const char *hook = getenv("RINGGPT_CUDNN_BWD_TILE");
    int tile = sdpa_backward_tile(s, nq, nk, hook ? atoi(hook) : 0), calls = 0;
    for (int q0 = 0; q0 < nq; q0 += tile) {
        int bq = min(tile, nq - q0);
        float *stats = (float *)grow(&g_stats, (size_t)bq * s->n_head * sizeof(float), "cuDNN attention statistics");
        lse_to_stats_kernel<<<grid_for((size_t)bq * s->n_head, 256), 256, 0, stream()>>>(stats, lse + (size_t)q0 * s->n_head,
                                                                                         bq, s->n_head);
        CUDA_CHECK_LAUNCH("cudnn attention: statistics");
        for (int k0 = 0; k0 < nk && !(mask == ATTN_CAUSAL && k0 > q0); k0 += tile) {
            int bk = min(tile, nk - k0);
            AttnMask m = mask == ATTN_CAUSAL && k0 == q0 ? ATTN_CAUSAL : ATTN_FULL;
            if (backward_sub(s, dq, dk, dv, qb, kb, vb, ob, dob, stats, q0, bq, k0, bk, m)) calls++;
            else if (calls == 0) return false;
            else fail("cuDNN attention: a %d x %d sub-block of a %d x %d backward block was refused after others ran; "
                      "use --attn flash", bq, bk, nq, nk);
        }
    }
    return true;
}
