// tests/model/test_gpu_bf16.c — bf16 GEMMs against the CPU, and the bf16 weight shadow never stale (AdamW, to_device).
//
// Tolerance (compare(): largest difference over the CPU tensor's largest magnitude). bf16 keeps 8
// significant bits: unit roundoff u = 2^-8 ≈ 3.9e-3, a rounding error uniform in ±u·|x| (rms u/√3).
// A product of two rounded operands is off by δa + δb (rms √(2/3)·u ≈ 3.2e-3 relative); summed over K
// random-signed terms the error grows as √K like the result itself (fp32 accumulation adds ~1e-7), so
// the elementwise error over the result's rms is ≈ 3.2e-3 whatever K is, and the largest of ~10^5
// elements (≈4.5σ) over the largest reference (≈4.5σ) stays ≈ 3.2e-3. The bound 1e-2 is 3× that.
// Shadow checks are exact: a matmul reading a weight through the shadow must equal, bit for bit, the
// same matmul reading a plain copy of those fp32 weights (converted per call; same shapes and alignment,
// so the same cuBLASLt plan). A stale shadow (weights from before the AdamW step or the load) differs.
#include <math.h>

#include "tests/gpu_test.h"
#include "model/ops.h"

static const Backend *CPU = &BACKEND_CPU, *GPU = &BACKEND_CUDA;
enum { N = 300, C = 192, F = 520 };
enum { OFFSET = 128 };   // the weight sits inside the parameter buffer, 512 bytes in (bf16: 256-byte aligned)
static const double TOL_BF16 = 1e-2;

// out (N, F) = in @ w (F, C)ᵀ on both backends; w_g may be inside the registered parameters.
static void forward_both(float *out_g, float *out_c, const float *in_g, const float *in_c, const float *w_g,
                         const float *w_c) {
    GPU->matmul_forward(out_g, in_g, w_g, N, C, F, ACT_F32, ACT_F32);
    CPU->matmul_forward(out_c, in_c, w_c, N, C, F, ACT_F32, ACT_F32);
}

// Bit-equality of two GPU buffers (n floats).
static void same_bits(const char *what, const float *a, const float *b, size_t n) {
    float *ha = back(GPU, a, n), *hb = back(GPU, b, n);
    size_t diff = 0;
    for (size_t i = 0; i < n; i++) diff += memcmp(&ha[i], &hb[i], sizeof(float)) != 0;
    CHECK(diff == 0, "%s: %zu of %zu elements differ from the fresh conversion (stale bf16 shadow?)", what, diff, n);
    printf("  %-44s %zu of %zu differ\n", what, diff, n);
    free(ha), free(hb);
}

// Forward and backward with bf16 operands against the CPU; the weight read through the shadow.
static void test_matmul_shadow(void) {
    size_t wn = (size_t)F * C, pn = OFFSET + wn;
    float *hw = host_randn(pn, 1, 0.1), *hin = host_randn((size_t)N * C, 2, 1), *hdout = host_randn((size_t)N * F, 3, 1);
    float *params = on(GPU, hw, pn), *params_c = on(CPU, hw, pn);
    cuda_backend_register_params(params, pn * sizeof(float));
    float *in = on(GPU, hin, (size_t)N * C), *in_c = on(CPU, hin, (size_t)N * C);
    float *dout = on(GPU, hdout, (size_t)N * F), *dout_c = on(CPU, hdout, (size_t)N * F);
    float *out = on(GPU, hdout, (size_t)N * F), *out_c = on(CPU, hdout, (size_t)N * F);
    float *din = on(GPU, hin, (size_t)N * C), *din_c = on(CPU, hin, (size_t)N * C);
    float *dw = on(GPU, hw, wn), *dw_c = on(CPU, hw, wn);   // nonzero: dw accumulates (beta = 1)
    const float *w = params + OFFSET, *w_c = params_c + OFFSET;

    unsigned long r0 = cuda_backend_shadow_refreshes();
    forward_both(out, out_c, in, in_c, w, w_c);
    compare("bf16 matmul forward (weight via shadow)", out, out_c, (size_t)N * F, TOL_BF16);
    CHECK(cuda_backend_shadow_refreshes() == r0 + 1, "the first weight read converts the shadow once");
    for (int acc = 0; acc <= 1; acc++) {
        GPU->matmul_backward(din, dw, dout, in, w, N, C, F, acc, ACT_F32, ACT_F32, ACT_F32);
        CPU->matmul_backward(din_c, dw_c, dout_c, in_c, w_c, N, C, F, acc, ACT_F32, ACT_F32, ACT_F32);
        compare(acc ? "bf16 matmul backward din (accumulate)" : "bf16 matmul backward din", din, din_c, (size_t)N * C,
                TOL_BF16);
        compare("bf16 matmul backward dw (accumulates, fp32)", dw, dw_c, wn, TOL_BF16);
    }
    CHECK(cuda_backend_shadow_refreshes() == r0 + 1, "reads without writes must not convert again");

    // An AdamW step (large lr: every weight moves) keeps the shadow fresh without a full conversion.
    float *g = on(GPU, hdout, pn), *m = GPU->alloc(pn * sizeof(float), "m"), *v = GPU->alloc(pn * sizeof(float), "v");
    GPU->zero(m, pn * sizeof(float)), GPU->zero(v, pn * sizeof(float));
    const AdamwSpan all = {0, pn, 1};
    GPU->adamw(params, g, m, v, &all, 1, 0.05f, 0.9f, 0.95f, 1e-8f, 0.1f, 1);
    float *plain = GPU->alloc(wn * sizeof(float) + 16, "plain weight copy");
    float *out2 = GPU->alloc((size_t)N * F * sizeof(float), "out");
    GPU->copy(plain, w, wn * sizeof(float));
    GPU->matmul_forward(out, in, w, N, C, F, ACT_F32, ACT_F32);
    GPU->matmul_forward(out2, in, plain, N, C, F, ACT_F32, ACT_F32);
    same_bits("after AdamW: shadow == fresh conversion", out, out2, (size_t)N * F);
    CHECK(cuda_backend_shadow_refreshes() == r0 + 1, "AdamW updates the shadow in its own kernel (no conversion)");

    // A checkpoint-style load: to_device into a part of the parameters marks the shadow stale.
    float *hload = host_randn(wn, 4, 0.1);
    GPU->to_device(params + OFFSET, hload, wn * sizeof(float));
    GPU->to_device(plain, hload, wn * sizeof(float));
    GPU->matmul_forward(out, in, w, N, C, F, ACT_F32, ACT_F32);
    GPU->matmul_forward(out2, in, plain, N, C, F, ACT_F32, ACT_F32);
    same_bits("after to_device: shadow == fresh conversion", out, out2, (size_t)N * F);
    CHECK(cuda_backend_shadow_refreshes() == r0 + 2, "a load converts the shadow once before the next read");

    // scale (grad clipping's op) on the parameters also marks it stale.
    GPU->scale(params, 0.5f, pn);
    GPU->scale(plain, 0.5f, wn);
    GPU->matmul_forward(out, in, w, N, C, F, ACT_F32, ACT_F32);
    GPU->matmul_forward(out2, in, plain, N, C, F, ACT_F32, ACT_F32);
    same_bits("after scale: shadow == fresh conversion", out, out2, (size_t)N * F);

    // The tf32 and fp32 paths ignore the shadow and read the fp32 weights.
    cuda_backend_set_matmul("fp32");
    CPU->to_device(params_c + OFFSET, hload, wn * sizeof(float));
    CPU->scale(params_c, 0.5f, pn);
    forward_both(out, out_c, in, in_c, w, w_c);
    compare("fp32 matmul forward (parameters, no shadow)", out, out_c, (size_t)N * F, 1e-5);
    cuda_backend_set_matmul("bf16");

    free(hw), free(hin), free(hdout), free(hload);
    GPU->release(params);   // unregisters the buffer and frees its shadow
    float *bufs[] = {in, dout, out, din, dw, g, m, v, plain, out2};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) GPU->release(bufs[i]);
    float *cbufs[] = {params_c, in_c, dout_c, out_c, din_c, dw_c};
    for (size_t i = 0; i < sizeof cbufs / sizeof cbufs[0]; i++) CPU->release(cbufs[i]);
}

int main(int argc, char **argv) {
    gpu_test_start(argc, argv, "test_gpu_bf16");
    cuda_backend_set_matmul("bf16");
    test_matmul_shadow();
    return check_summary();
}
