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

// Where the largest difference is, as (rank, local row, head, column): a layout bug shows as a pattern
// (one head, every 8th column, rows past a tile boundary, ...), so a failing run says where.
static void locate_worst(const char *what, const float *g, const float *ref, size_t n, int L, int heads, int cols) {
    size_t worst = 0;
    double dmax = -1;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)g[i] - ref[i]);
        if (!(d <= dmax)) dmax = d, worst = i;
    }
    size_t row = worst / ((size_t)heads * cols);
    printf("    %s: worst at rank %zu, row %zu, head %zu, col %zu: got %g, want %g\n", what, row / L, row % L,
           worst / cols % heads, worst % cols, g[worst], ref[worst]);
}

static void compare_pair(const char *vs, const Case *c, Result g, Result ref) {
    size_t L = 2 * (size_t)c->c, nq = c->sp * L * c->H * c->hd, nkv = c->sp * L * c->Hkv * c->hd;
    char what[64];
    const char *names[] = {"out", "lse", "dq", "dk", "dv"};
    const float *gs[] = {g.out, g.lse, g.dq, g.dk, g.dv}, *rs[] = {ref.out, ref.lse, ref.dq, ref.dk, ref.dv};
    const size_t ns[] = {nq, c->sp * L * c->H, nq, nkv, nkv};
    const int heads[] = {c->H, c->H, c->H, c->Hkv, c->Hkv}, cols[] = {c->hd, 1, c->hd, c->hd, c->hd};
    const double tols[] = {2e-2, 5e-3, 3e-2, 3e-2, 3e-2};
    for (int i = 0; i < 5; i++) {
        snprintf(what, sizeof what, "%s vs %s", names[i], vs);
        int failed = check_failed;
        host_compare(what, c, gs[i], rs[i], ns[i], tols[i]);
        if (check_failed != failed) locate_worst(what, gs[i], rs[i], ns[i], (int)L, heads[i], cols[i]);
    }
}

static void test_case(Case c, uint64_t seed) {
    int T = 2 * c.sp * c.c, QW = c.H * c.hd, KW = c.Hkv * c.hd;
    float *q = host_randn((size_t)T * QW, seed, 1), *k = host_randn((size_t)T * KW, seed + 1, 1);
    float *v = host_randn((size_t)T * KW, seed + 2, 1), *dout = host_randn((size_t)T * QW, seed + 3, 1);
    Result rc = run_ring(&BACKEND_CPU, &c, q, k, v, dout);
    use("flash");
    Result r80 = run_ring(&BACKEND_CUDA, &c, q, k, v, dout);
    use("sm90");
    Result r90 = run_ring(&BACKEND_CUDA, &c, q, k, v, dout);
    compare_pair("cpu", &c, r90, rc);
    compare_pair("sm80", &c, r90, r80);
    // Deterministic: a second run gives the same bits (dK/dV and dQ are each owned by one CTA).
    Result again = run_ring(&BACKEND_CUDA, &c, q, k, v, dout);
    size_t L = 2 * (size_t)c.c, nq = c.sp * L * QW, nkv = c.sp * L * KW;
    CHECK(!memcmp(again.out, r90.out, nq * 4) && !memcmp(again.dq, r90.dq, nq * 4) &&
              !memcmp(again.dk, r90.dk, nkv * 4) && !memcmp(again.dv, r90.dv, nkv * 4),
          "H=%d hd=%d sp=%d chunk=%d: a second sm90 run differs (not deterministic)", c.H, c.hd, c.sp, c.c);
    free_result(rc), free_result(r80), free_result(r90), free_result(again);
    free(q), free(k), free(v), free(dout);
}

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
