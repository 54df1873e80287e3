// tests/attention/test_gpu_attention.c — the CUDA attention blocks against the CPU blocks for every ring case (sp 1..4, GQA, hd 16..128).
// The ring's schedule is replayed in one process through the block API, for every rank r and every
// step's KV owner j (the three cases of attention/ring.c: j == r causal, j < r full, j > r second
// half of the rows), forward and backward, on both backends; outputs, LSE, dQ and the dK/dV each
// block collects around the ring are compared (bf16 tensor cores: ~1e-2). Cases with `docs` pass
// document ids (--doc-mask) to both backends' kernels: the CUDA predicate must match the CPU's; cases with `bf16`
// store q, k, v as bf16 on the GPU (--activations bf16). `--attn NAME` runs every case on those kernels (the
// calls they cannot run fall back to flash).
#include <math.h>

#include "tests/attention/attn_ring_replay.h"
#include "model/ops.h"

static void test_case(Case c, uint64_t seed) {
    int T = 2 * c.sp * c.c, QW = c.H * c.hd, KW = c.Hkv * c.hd, L = 2 * c.c;
    float *q = host_randn((size_t)T * QW, seed, 1), *k = host_randn((size_t)T * KW, seed + 1, 1);
    float *v = host_randn((size_t)T * KW, seed + 2, 1), *dout = host_randn((size_t)T * QW, seed + 3, 1);
    Result rc = run_ring(&BACKEND_CPU, &c, q, k, v, dout), rg = run_ring(&BACKEND_CUDA, &c, q, k, v, dout);
    size_t nq = (size_t)c.sp * L * QW, nkv = (size_t)c.sp * L * KW;
    host_compare("out", &c, rg.out, rc.out, nq, 2e-2);
    host_compare("lse", &c, rg.lse, rc.lse, (size_t)c.sp * L * c.H, 5e-3);
    host_compare("dq", &c, rg.dq, rc.dq, nq, 3e-2);
    host_compare("dk", &c, rg.dk, rc.dk, nkv, 3e-2);
    host_compare("dv", &c, rg.dv, rc.dv, nkv, 3e-2);
    free_result(rc), free_result(rg);
    free(q), free(k), free(v), free(dout);
}

// A Q block that saw no key: out = 0 and lse = -inf (never NaN).
static void test_empty_rows(void) {
    AttnShape s = {.n_head = 2, .n_kv_head = 1, .head_dim = 64};
    int nq = 70;
    const Backend *be = &BACKEND_CUDA;
    float *acc = be->alloc((size_t)nq * 128 * 4, "acc"), *m = be->alloc(nq * 2 * 4, "m"), *l = be->alloc(nq * 2 * 4, "l");
    AttnState st = {.acc = acc, .m = m, .l = l};
    be->attn_state_reset(&s, st, nq);
    be->attn_finalize(&s, st, acc, m, nq);
    float *o = back(be, acc, (size_t)nq * 128), *lse = back(be, m, (size_t)nq * 2);
    int bad = 0;
    for (int i = 0; i < nq * 128; i++) bad += o[i] != 0;
    for (int i = 0; i < nq * 2; i++) bad += !(isinf(lse[i]) && lse[i] < 0);
    CHECK(bad == 0, "rows with no key: %d values are not out = 0 / lse = -inf", bad);
    free(o), free(lse);
    be->release(acc), be->release(m), be->release(l);
}

int main(int argc, char **argv) {
    gpu_test_start(argc, argv, "test_gpu_attention");
    const Case cases[] = {
        {4, 4, 64, 1, 150},   // one causal block, partial tiles
        {4, 2, 32, 2, 37},    // GQA 2:1, odd chunk
        {4, 4, 64, 2, 100},   // several KV tiles per block
        {8, 2, 128, 3, 70},   // hd 128, GQA 4:1
        {2, 1, 16, 4, 64},    // hd 16 (the tiny preset), MQA, tile-aligned chunks
        {4, 4, 128, 2, 96},
        {4, 4, 64, 1, 150, 1},   // --doc-mask: one causal block with documents
        {4, 2, 32, 2, 37, 1},    // ... around a ring of 2, GQA, odd chunk
        {8, 2, 128, 3, 70, 1},
        {2, 1, 16, 4, 64, 1},
        {4, 2, 64, 2, 100, 0, 1},   // --activations bf16: q, k, v stored as bf16
        {8, 2, 128, 3, 70, 0, 1},
        {4, 2, 32, 2, 37, 1, 1},    // ... with documents, hd 32
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_case(cases[i], 100 + 10 * i);
    test_empty_rows();
    return check_summary();
}
