// tests/attention/test_gpu_attention_sm90.c — the Hopper kernels (--attn sm90) against the sm_80 kernels and the CPU for every ring case, hd 64 and 128.
// SKIPs without a device and on a device that is not compute capability 9.0. The ring's schedule is
// replayed through the block API (tests/attention/attn_ring_replay.h): causal diagonal blocks, full blocks,
// second-half row subsets, the state folded over sp calls, GQA and MQA, chunk lengths that are not
// multiples of the tiles (128-row forward tiles, 64/128-row backward tiles) and ones that run the
// pipelines through several rounds of their stages. Tolerances: against the CPU (fp32) the bounds of
// the sm_80 test (out 2e-2, lse 5e-3, dq/dk/dv 3e-2 of the largest magnitude): both kernels round
// Q, K, V, dO, P and dS to bf16 and accumulate in fp32. Against the sm_80 kernels the same bounds
// (the two differ by accumulation order and where P is rounded). The backward must also be bitwise
// repeatable (no atomics), and rows whose LSE is -inf must add nothing. With document ids
// (--doc-mask) the sm_80 kernels run: those cases check the fallback.
#include <math.h>

#include "attention/attention_cuda.h"
#include "tests/attention/attn_ring_replay.h"
#include "model/ops.h"

static void use(const char *impl) { attn_cuda_set_impl(impl); }

static void test_case(Case c, uint64_t seed) { replay_against_flash("sm90", c, seed); }

// One backward block in which every other row has lse = -inf (a row that saw no key): those rows get
// dq = 0 and add nothing to dk, dv; the others match the CPU.
static void test_empty_rows(int hd) {
    AttnShape s = {.n_head = 4, .n_kv_head = 2, .head_dim = hd};
    int nq = 150, nk = 150, QW = 4 * hd, KW = 2 * hd;
    float *q = host_randn((size_t)nq * QW, 7, 1), *k = host_randn((size_t)nk * KW, 8, 1);
    float *v = host_randn((size_t)nk * KW, 9, 1), *dout = host_randn((size_t)nq * QW, 10, 1);
    float *lse = host_randn((size_t)nq * 4, 11, 1), *D = host_randn((size_t)nq * 4, 12, 0.1);
    for (int i = 0; i < nq * 4; i++) lse[i] = i % 2 ? -INFINITY : lse[i] + 6.f;   // ~log(150): P of order 1/150
    float *res[2][3];
    const Backend *bes[2] = {&BACKEND_CPU, &BACKEND_CUDA};
    use("sm90");
    for (int b = 0; b < 2; b++) {
        const Backend *be = bes[b];
        float *dq = be->alloc((size_t)nq * QW * 4, "dq"), *dk = be->alloc((size_t)nk * KW * 4, "dk");
        float *dv = be->alloc((size_t)nk * KW * 4, "dv"), *qd = on(be, q, (size_t)nq * QW);
        float *kd = on(be, k, (size_t)nk * KW), *vd = on(be, v, (size_t)nk * KW), *dod = on(be, dout, (size_t)nq * QW);
        float *ld = on(be, lse, (size_t)nq * 4), *Dd = on(be, D, (size_t)nq * 4);
        be->zero(dq, (size_t)nq * QW * 4), be->zero(dk, (size_t)nk * KW * 4), be->zero(dv, (size_t)nk * KW * 4);
        // out: the hand-written kernels read D instead (random here), so any rows do
        be->attn_backward_block(&s, dq, dk, dv, qd, kd, vd, dod, dod, ld, Dd, nq, nk, ATTN_CAUSAL, NULL);
        res[b][0] = back(be, dq, (size_t)nq * QW), res[b][1] = back(be, dk, (size_t)nk * KW);
        res[b][2] = back(be, dv, (size_t)nk * KW);
        float *all[] = {dq, dk, dv, qd, kd, vd, dod, ld, Dd};
        for (int i = 0; i < 9; i++) be->release(all[i]);
    }
    int nonzero = 0;
    for (int i = 0; i < nq; i++)
        for (int h = 1; h < 4; h += 2)
            for (int d = 0; d < hd; d++) nonzero += res[1][0][(size_t)i * QW + h * hd + d] != 0.f;
    CHECK(nonzero == 0, "hd=%d: %d dq values of rows with lse = -inf are not 0", hd, nonzero);
    Case c = {4, 2, hd, 1, nq / 2};
    host_compare("dq, rows with lse=-inf", &c, res[1][0], res[0][0], (size_t)nq * QW, 3e-2);
    host_compare("dk, rows with lse=-inf", &c, res[1][1], res[0][1], (size_t)nk * KW, 3e-2);
    host_compare("dv, rows with lse=-inf", &c, res[1][2], res[0][2], (size_t)nk * KW, 3e-2);
    for (int b = 0; b < 2; b++) free(res[b][0]), free(res[b][1]), free(res[b][2]);
    free(q), free(k), free(v), free(dout), free(lse), free(D);
}

int main(int argc, char **argv) {
    gpu_test_start(argc, argv, "test_gpu_attention_sm90");
    use("sm90");
    if (!attn_sm90_device()) {
        printf("SKIP: the device is not compute capability 9.0 (test_gpu_attention_sm90)\n");
        return GPU_TEST_SKIP;
    }
    const Case cases[] = {
        {4, 4, 64, 1, 150},    // one causal block (L = 300: 3 forward tiles, the last partial)
        {2, 1, 64, 4, 64},     // MQA, L = 128: exactly one tile; sp 4: the state folds 4 blocks
        {4, 2, 64, 2, 100},    // GQA 2:1, partial tiles everywhere
        {2, 2, 64, 2, 333},    // L = 666: 6 KV tiles through 3 stages, 11 Q tiles of 64 through 2
        {8, 2, 128, 3, 70},    // hd 128, GQA 4:1
        {4, 4, 128, 2, 96},    // hd 128, L = 192
        {2, 1, 128, 2, 300},   // hd 128, L = 600: 5 KV tiles through 2 stages, MQA
        {4, 4, 64, 1, 150, 1},    // document ids: --attn sm90 must fall back to the sm_80 kernels
        {8, 2, 128, 3, 70, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_case(cases[i], 500 + 10 * i);
    test_empty_rows(64);
    test_empty_rows(128);
    return check_summary();
}
