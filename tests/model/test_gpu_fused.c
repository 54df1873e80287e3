// tests/model/test_gpu_fused.c — the CUDA step's fused kernels against the unfused calls and the CPU, and bf16 activation storage against fp32 math rounded once.
// Fused against unfused, both on the GPU (bit for bit: --recompute relies on it): RMSNorm with the residual add
// against add_inplace then RMSNorm; RoPE of q and k in one launch against one launch each; AdamW over every tensor
// in one launch against one launch per tensor. Fused against the CPU backend (the reference): the residual add
// exactly, RMSNorm within the CPU's other reduction order, RoPE within fp32 rounding (angles from sincospi here,
// from cos and sin there), SwiGLU within expf's last bits, AdamW within fp32 rounding. bf16 storage (--activations bf16)
// against fp32 storage of the same (bf16-rounded) inputs: the kernels do their math in fp32 and round once on
// store, so RMSNorm, RoPE and SwiGLU must give exactly the rounded fp32 results; the GEMMs and the LM head
// (cuBLASLt may pick other algorithms for a bf16 output) within bf16 rounding. Odd sizes and misaligned pointers
// exercise the element-by-element tails next to the 16-byte paths.
#include <math.h>

#include "tests/gpu_test.h"
#include "model/config.h"
#include "model/ops.h"

static const Backend *GPU = &BACKEND_CUDA, *CPU = &BACKEND_CPU;
enum { N = 301, C = 192, F = 518, V = 1000 };

static float *dev(const float *h, size_t n) { return on(GPU, h, n); }

// Host copies of a device buffer of n elements stored as `store`, as floats.
static float *host_of(const float *d, size_t n, ActStore store) {
    if (store == ACT_F32) return back(GPU, d, n);
    uint16_t *b = xmalloc(n * 2 + 16, "bf16");
    GPU->to_host(b, d, n * 2);
    float *f = xmalloc(n * sizeof(float) + 16, "floats");
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)b[i] << 16;
        memcpy(&f[i], &u, 4);
    }
    free(b);
    return f;
}

// a (n) and b (n) equal bit for bit; with round_b, b rounded to bf16 first.
static void same(const char *what, const float *a, const float *b, size_t n, bool round_b) {
    size_t diff = 0;
    for (size_t i = 0; i < n; i++) {
        float y = b[i];
        if (round_b) {
            uint32_t u = (uint32_t)host_bf16(y) << 16;
            memcpy(&y, &u, 4);
        }
        diff += memcmp(&a[i], &y, 4) != 0;
    }
    CHECK(diff == 0, "%s: %zu of %zu elements differ", what, diff, n);
    printf("  %-52s %zu of %zu differ\n", what, diff, n);
}

// Two fp32 GPU buffers within tol of b's largest magnitude (tests/gpu_test.h's compare() reads b from the CPU).
static void near(const char *what, const float *a, const float *b, size_t n, double tol) {
    float *ha = back(GPU, a, n), *hb = back(GPU, b, n);
    double dmax = 0, smax = 1e-20;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)ha[i] - hb[i]);
        if (!(d <= dmax)) dmax = d;   // NaN counts as the worst
        smax = fmax(smax, fabs((double)hb[i]));
    }
    CHECK(dmax / smax <= tol, "%s: relative error %.3e > %.1e", what, dmax / smax, tol);
    printf("  %-52s rel err %.3e (tol %.0e)\n", what, dmax / smax, tol);
    free(ha), free(hb);
}

// Host data rounded to bf16 values (so fp32 and bf16 storage hold the same numbers).
static float *rounded_randn(size_t n, uint64_t seed, double scale) {
    float *h = host_randn(n, seed, scale);
    for (size_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)host_bf16(h[i]) << 16;
        memcpy(&h[i], &u, 4);
    }
    return h;
}

static void test_rmsnorm_residual(void) {
    size_t n = (size_t)N * C;
    float *hx = host_randn(n, 1, 2), *ha = host_randn(n, 2, 1), *hw = host_randn(C, 3, 1);
    float *x1 = dev(hx, n), *x2 = dev(hx, n), *a = dev(ha, n), *w = dev(hw, C);
    float *y1 = GPU->alloc(n * 4, "y"), *y2 = GPU->alloc(n * 4, "y"), *y3 = GPU->alloc(n * 2 + 16, "y bf16");
    float *r1 = GPU->alloc(N * 4, "rstd"), *r2 = GPU->alloc(N * 4, "rstd");
    GPU->rmsnorm_forward(y1, r1, x1, a, w, N, C, 1e-5f, ACT_F32);     // fused
    GPU->add_inplace(x2, a, n);                                      // unfused
    GPU->rmsnorm_forward(y2, r2, x2, NULL, w, N, C, 1e-5f, ACT_F32);
    float *hx1 = back(GPU, x1, n), *hx2 = back(GPU, x2, n), *hy1 = back(GPU, y1, n), *hy2 = back(GPU, y2, n);
    float *hr1 = back(GPU, r1, N), *hr2 = back(GPU, r2, N);
    same("rmsnorm + residual: x + add, fused vs add_inplace", hx1, hx2, n, false);
    same("rmsnorm + residual: y, fused vs unfused", hy1, hy2, n, false);
    same("rmsnorm + residual: rstd, fused vs unfused", hr1, hr2, N, false);
    GPU->rmsnorm_forward(y3, r2, x2, NULL, w, N, C, 1e-5f, ACT_BF16);   // bf16 output of the same norm
    float *hy3 = host_of(y3, n, ACT_BF16);
    same("rmsnorm y stored bf16 = fp32 y rounded", hy3, hy2, n, true);
    // the CPU on the same input: x1, y1, r1 still hold the fused call's results
    float *cx = on(CPU, hx, n), *ca = on(CPU, ha, n), *cw = on(CPU, hw, C);
    float *cy = CPU->alloc(n * 4, "y"), *cr = CPU->alloc(N * 4, "rstd");
    CPU->rmsnorm_forward(cy, cr, cx, ca, cw, N, C, 1e-5f, ACT_F32);
    compare("rmsnorm + residual: x + add, fused = CPU", x1, cx, n, 0);
    compare("rmsnorm + residual: y, fused vs CPU", y1, cy, n, 1e-5);
    compare("rmsnorm + residual: rstd, fused vs CPU", r1, cr, N, 1e-5);
    float *cbufs[] = {cx, ca, cw, cy, cr};
    for (int i = 0; i < 5; i++) CPU->release(cbufs[i]);
    free(hx), free(ha), free(hw), free(hx1), free(hx2), free(hy1), free(hy2), free(hy3), free(hr1), free(hr2);
    float *bufs[] = {x1, x2, a, w, y1, y2, y3, r1, r2};
    for (int i = 0; i < 9; i++) GPU->release(bufs[i]);
}

static void test_rope(ActStore store) {
    int Hq = 6, Hk = 2, hd = 64;
    size_t nq = (size_t)N * Hq * hd, nk = (size_t)N * Hk * hd;
    float *hq = rounded_randn(nq, 4, 1), *hk = rounded_randn(nk, 5, 1);
    int32_t *pos = xmalloc(N * sizeof(int32_t), "positions");
    for (int i = 0; i < N; i++) pos[i] = 1000 * i + 7;
    float *q1 = on_store(GPU, hq, nq, store), *k1 = on_store(GPU, hk, nk, store);
    float *q2 = on(GPU, hq, nq), *k2 = on(GPU, hk, nk), *none = GPU->alloc(16, "no heads");
    double inv_freq[32], scale;   // (hd/2)
    ModelConfig mc = {.dim = hd, .n_head = 1, .rope_theta = 10000.0f};
    rope_frequencies(&mc, 0, inv_freq, &scale);
    GPU->rope(q1, k1, pos, N, Hq, Hk, hd, inv_freq, scale, 0, store);   // fused, in `store`
    GPU->rope(q2, none, pos, N, Hq, 0, hd, inv_freq, scale, 0, ACT_F32);  // one launch each, fp32
    GPU->rope(k2, none, pos, N, Hk, 0, hd, inv_freq, scale, 0, ACT_F32);
    float *a = host_of(q1, nq, store), *b = back(GPU, q2, nq), *c = host_of(k1, nk, store), *d = back(GPU, k2, nk);
    same(store == ACT_BF16 ? "rope q, fused bf16 = separate fp32 rounded" : "rope q, fused = separate", a, b, nq,
         store == ACT_BF16);
    same(store == ACT_BF16 ? "rope k, fused bf16 = separate fp32 rounded" : "rope k, fused = separate", c, d, nk,
         store == ACT_BF16);
    if (store == ACT_F32) {   // against the CPU (angles from pow, cos and sin in double)
        float *cq = on(CPU, hq, nq), *ck = on(CPU, hk, nk);
        CPU->rope(cq, ck, pos, N, Hq, Hk, hd, inv_freq, scale, 0, ACT_F32);
        compare("rope q, fused vs CPU", q1, cq, nq, 1e-6);
        compare("rope k, fused vs CPU", k1, ck, nk, 1e-6);
        CPU->release(cq), CPU->release(ck);
    }
    free(hq), free(hk), free(pos), free(a), free(b), free(c), free(d);
    float *bufs[] = {q1, k1, q2, k2, none};
    for (int i = 0; i < 5; i++) GPU->release(bufs[i]);
}

// SwiGLU forward and backward in bf16 storage = fp32 on the same values, rounded; the backward also in place (as
// the recompute arena runs it: dgate, dup over gate, up).
static void test_swiglu_bf16(size_t skew) {
    size_t n = (size_t)N * F;
    float *hg = rounded_randn(n + skew, 6, 2), *hu = rounded_randn(n + skew, 7, 1), *hd = rounded_randn(n + skew, 8, 1);
    float *g16 = on_store(GPU, hg, n + skew, ACT_BF16), *u16 = on_store(GPU, hu, n + skew, ACT_BF16);
    float *d16 = on_store(GPU, hd, n + skew, ACT_BF16), *h16 = GPU->alloc((n + skew) * 2 + 16, "h");
    float *g = on(GPU, hg, n + skew), *u = on(GPU, hu, n + skew), *d = on(GPU, hd, n + skew), *h = GPU->alloc((n + skew) * 4, "h");
    // skew elements in: bf16 pointers 2·skew bytes past a 256-byte boundary (skew odd: not 16-byte aligned)
    real *g16s = act_at(g16, ACT_BF16, skew), *u16s = act_at(u16, ACT_BF16, skew), *d16s = act_at(d16, ACT_BF16, skew);
    real *h16s = act_at(h16, ACT_BF16, skew);
    GPU->swiglu_forward(h16s, g16s, u16s, N, F, ACT_BF16);
    GPU->swiglu_forward(h + skew, g + skew, u + skew, N, F, ACT_F32);
    float *a = host_of(h16s, n, ACT_BF16), *b = back(GPU, h + skew, n);
    char what[96];
    snprintf(what, sizeof what, "swiglu forward bf16 = fp32 rounded (offset %zu)", skew);
    same(what, a, b, n, true);
    free(a), free(b);
    GPU->swiglu_backward(g16s, u16s, d16s, g16s, u16s, N, F, ACT_BF16);   // in place
    GPU->swiglu_backward(g + skew, u + skew, d + skew, g + skew, u + skew, N, F, ACT_F32);
    a = host_of(g16s, n, ACT_BF16), b = back(GPU, g + skew, n);
    snprintf(what, sizeof what, "swiglu backward dgate bf16 in place (offset %zu)", skew);
    same(what, a, b, n, true);
    free(a), free(b);
    a = host_of(u16s, n, ACT_BF16), b = back(GPU, u + skew, n);
    snprintf(what, sizeof what, "swiglu backward dup bf16 in place (offset %zu)", skew);
    same(what, a, b, n, true);
    free(a), free(b), free(hg), free(hu), free(hd);
    float *bufs[] = {g16, u16, d16, h16, g, u, d, h};
    for (int i = 0; i < 8; i++) GPU->release(bufs[i]);
}

// GEMMs with bf16 inputs and outputs (--activations bf16) against bf16 operands read from fp32 copies of the same
// values, fp32 output: within bf16 rounding of the output.
static void test_matmul_bf16(void) {
    cuda_backend_set_matmul("bf16");
    float *hin = rounded_randn((size_t)N * C, 9, 1), *hw = host_randn((size_t)F * C, 10, 0.1);
    float *hdo = rounded_randn((size_t)N * F, 11, 1);
    float *in16 = on_store(GPU, hin, (size_t)N * C, ACT_BF16), *in = on(GPU, hin, (size_t)N * C), *w = on(GPU, hw, (size_t)F * C);
    float *do16 = on_store(GPU, hdo, (size_t)N * F, ACT_BF16), *dout = on(GPU, hdo, (size_t)N * F);
    float *out16 = GPU->alloc((size_t)N * F * 2 + 16, "out"), *out = GPU->alloc((size_t)N * F * 4, "out");
    GPU->matmul_forward(out16, in16, w, N, C, F, ACT_BF16, ACT_BF16);
    GPU->matmul_forward(out, in, w, N, C, F, ACT_F32, ACT_F32);
    float *a = host_of(out16, (size_t)N * F, ACT_BF16), *ref = back(GPU, out, (size_t)N * F);
    float *ad = GPU->alloc((size_t)N * F * 4, "a"), *rd = GPU->alloc((size_t)N * F * 4, "b");
    GPU->to_device(ad, a, (size_t)N * F * 4), GPU->to_device(rd, ref, (size_t)N * F * 4);
    near("matmul forward, bf16 in and out (vs fp32 out)", ad, rd, (size_t)N * F, 8e-3);
    // backward: din bf16 from dout bf16 (h's gradient), dw from bf16 dout and in
    float *din16 = GPU->alloc((size_t)N * C * 2 + 16, "din"), *din = GPU->alloc((size_t)N * C * 4, "din");
    float *dw16 = GPU->alloc((size_t)F * C * 4, "dw"), *dw = GPU->alloc((size_t)F * C * 4, "dw");
    GPU->zero(dw16, (size_t)F * C * 4), GPU->zero(dw, (size_t)F * C * 4);
    GPU->matmul_backward(din16, dw16, do16, in16, w, N, C, F, 0, ACT_BF16, ACT_BF16, ACT_BF16);
    GPU->matmul_backward(din, dw, dout, in, w, N, C, F, 0, ACT_F32, ACT_F32, ACT_F32);
    near("matmul backward dw, bf16 operands (vs fp32 copies)", dw16, dw, (size_t)F * C, 1e-5);
    free(a), free(ref);
    a = host_of(din16, (size_t)N * C, ACT_BF16), ref = back(GPU, din, (size_t)N * C);
    GPU->to_device(ad, a, (size_t)N * C * 4), GPU->to_device(rd, ref, (size_t)N * C * 4);
    near("matmul backward din, bf16 out (vs fp32 out)", ad, rd, (size_t)N * C, 8e-3);
    free(a), free(ref), free(hin), free(hw), free(hdo);
    float *bufs[] = {in16, in, w, do16, dout, out16, out, ad, rd, din16, din, dw16, dw};
    for (int i = 0; i < 13; i++) GPU->release(bufs[i]);
    cuda_backend_set_matmul(NULL);
}

static void test_lmhead_bf16(void) {
    cuda_backend_set_matmul("bf16");
    cuda_backend_set_logits_mb(0);
    float *hx = rounded_randn((size_t)N * C, 12, 1), *hw = host_randn((size_t)V * C, 13, 0.05);
    float *x16 = on_store(GPU, hx, (size_t)N * C, ACT_BF16), *x = on(GPU, hx, (size_t)N * C), *w = on(GPU, hw, (size_t)V * C);
    float *dx1 = GPU->alloc((size_t)N * C * 4, "dx"), *dx2 = GPU->alloc((size_t)N * C * 4, "dx");
    float *dw1 = GPU->alloc((size_t)V * C * 4, "dw"), *dw2 = GPU->alloc((size_t)V * C * 4, "dw");
    GPU->zero(dw1, (size_t)V * C * 4), GPU->zero(dw2, (size_t)V * C * 4);
    int32_t *tg = xmalloc(N * sizeof(int32_t), "targets");
    for (int i = 0; i < N; i++) tg[i] = i % 11 == 0 ? -1 : (i * 37) % V;
    double l1 = GPU->lmhead_ce(dx1, dw1, NULL, x16, w, tg, N, C, V, 64, 1.0 / N, ACT_BF16);
    double l2 = GPU->lmhead_ce(dx2, dw2, NULL, x, w, tg, N, C, V, 64, 1.0 / N, ACT_F32);
    CHECK(rel_err(l1, l2, 1e-12) <= 1e-6, "lmhead_ce loss with bf16 x %.9g vs fp32 x %.9g", l1, l2);
    printf("  %-52s rel err %.3e (tol 1e-06)\n", "lmhead_ce loss, bf16 x vs the same values fp32", rel_err(l1, l2, 1e-12));
    near("lmhead_ce dx, bf16 x", dx1, dx2, (size_t)N * C, 1e-5);
    near("lmhead_ce dw, bf16 x", dw1, dw2, (size_t)V * C, 1e-5);
    free(hx), free(hw), free(tg);
    float *bufs[] = {x16, x, w, dx1, dx2, dw1, dw2};
    for (int i = 0; i < 7; i++) GPU->release(bufs[i]);
    cuda_backend_set_logits_mb(512);
    cuda_backend_set_matmul(NULL);
}

// One AdamW launch over every tensor = one launch per tensor, bit for bit (odd sizes and offsets: the 16-byte path
// and the element path meet inside tensors).
static void test_adamw_one_launch(void) {
    size_t n = 100003;
    const AdamwSpan spans[] = {{0, 3, 0}, {3, 4096, 1}, {4099, 1, 0}, {4100, 50001, 1}, {54101, n - 54101, 0}};
    float *hw = host_randn(n, 14, 1), *hg = host_randn(n, 15, 1);
    float *w1 = dev(hw, n), *w2 = dev(hw, n), *g = dev(hg, n), *m1 = GPU->alloc(n * 4, "m"), *m2 = GPU->alloc(n * 4, "m");
    float *v1 = GPU->alloc(n * 4, "v"), *v2 = GPU->alloc(n * 4, "v");
    GPU->zero(m1, n * 4), GPU->zero(m2, n * 4), GPU->zero(v1, n * 4), GPU->zero(v2, n * 4);
    for (int step = 1; step <= 3; step++) {
        GPU->adamw(w1, g, m1, v1, spans, 5, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, step);
        for (int s = 0; s < 5; s++) GPU->adamw(w2, g, m2, v2, &spans[s], 1, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, step);
    }
    float *a = back(GPU, w1, n), *b = back(GPU, w2, n), *c = back(GPU, v1, n), *d = back(GPU, v2, n);
    same("adamw weights, one launch = one per tensor (3 steps)", a, b, n, false);
    same("adamw second moments, one launch = one per tensor", c, d, n, false);
    free(b), free(d);
    // the CPU from the same start
    float *cw = on(CPU, hw, n), *cg = on(CPU, hg, n), *cm = CPU->alloc(n * 4, "m"), *cv = CPU->alloc(n * 4, "v");
    CPU->zero(cm, n * 4), CPU->zero(cv, n * 4);
    for (int step = 1; step <= 3; step++) CPU->adamw(cw, cg, cm, cv, spans, 5, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, step);
    compare("adamw weights, one launch vs CPU (3 steps)", w1, cw, n, 1e-6);
    compare("adamw first moments, one launch vs CPU", m1, cm, n, 1e-6);
    compare("adamw second moments, one launch vs CPU", v1, cv, n, 1e-6);
    float *cbufs[] = {cw, cg, cm, cv};
    for (int i = 0; i < 4; i++) CPU->release(cbufs[i]);
    free(a), free(c), free(hw), free(hg);
    float *bufs[] = {w1, w2, g, m1, m2, v1, v2};
    for (int i = 0; i < 7; i++) GPU->release(bufs[i]);
}

// add_inplace and scale on misaligned pointers (the element path) against the 16-byte path's results.
static void test_misaligned_add(void) {
    size_t n = 10007;
    float *hy = host_randn(n + 1, 16, 1), *hx = host_randn(n + 1, 17, 1);
    float *y1 = dev(hy, n + 1), *y2 = dev(hy, n + 1), *x = dev(hx, n + 1);
    GPU->add_inplace(y1 + 1, x + 1, n);   // 4 bytes past 256: not 16-byte aligned
    float *hs = xmalloc((n + 1) * 4, "shifted");
    memcpy(hs, hy + 1, n * 4);
    float *ys = dev(hs, n), *xs = dev(hx + 1, n);
    GPU->add_inplace(ys, xs, n);   // aligned
    float *a = back(GPU, y1, n + 1), *b = back(GPU, ys, n);
    same("add_inplace misaligned = aligned", a + 1, b, n, false);
    free(a), free(b), free(hy), free(hx), free(hs);
    float *bufs[] = {y1, y2, x, ys, xs};
    for (int i = 0; i < 5; i++) GPU->release(bufs[i]);
}

// SwiGLU in fp32: the 16-byte groups and the tail (N·F is not a multiple of 4) against the CPU.
static void test_swiglu_fp32(void) {
    size_t n = (size_t)N * F;
    float *hg = host_randn(n, 18, 2), *hu = host_randn(n, 19, 1), *hd = host_randn(n, 20, 1);
    float *g = dev(hg, n), *u = dev(hu, n), *d = dev(hd, n), *h = GPU->alloc(n * 4, "h");
    float *dg = GPU->alloc(n * 4, "dg"), *du = GPU->alloc(n * 4, "du");
    float *cg = on(CPU, hg, n), *cu = on(CPU, hu, n), *cd = on(CPU, hd, n), *ch = CPU->alloc(n * 4, "h");
    float *cdg = CPU->alloc(n * 4, "dg"), *cdu = CPU->alloc(n * 4, "du");
    GPU->swiglu_forward(h, g, u, N, F, ACT_F32);
    GPU->swiglu_backward(dg, du, d, g, u, N, F, ACT_F32);
    CPU->swiglu_forward(ch, cg, cu, N, F, ACT_F32);
    CPU->swiglu_backward(cdg, cdu, cd, cg, cu, N, F, ACT_F32);
    compare("swiglu forward, fused vs CPU", h, ch, n, 1e-6);
    compare("swiglu backward dgate, fused vs CPU", dg, cdg, n, 1e-6);
    compare("swiglu backward dup, fused vs CPU", du, cdu, n, 1e-6);
    free(hg), free(hu), free(hd);
    float *bufs[] = {g, u, d, h, dg, du}, *cbufs[] = {cg, cu, cd, ch, cdg, cdu};
    for (int i = 0; i < 6; i++) GPU->release(bufs[i]), CPU->release(cbufs[i]);
}

int main(int argc, char **argv) {
    gpu_test_start(argc, argv, "test_gpu_fused");
    test_rmsnorm_residual();
    test_swiglu_fp32();
    test_rope(ACT_F32);
    test_rope(ACT_BF16);
    test_swiglu_bf16(0);
    test_swiglu_bf16(3);
    test_matmul_bf16();
    test_lmhead_bf16();
    test_adamw_one_launch();
    test_misaligned_add();
    return check_summary();
}
