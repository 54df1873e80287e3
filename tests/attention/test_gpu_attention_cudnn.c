// tests/attention/test_gpu_attention_cudnn.c — cuDNN's fused attention per ring block (--attn cudnn) against the CPU and the flash kernels, every ring case.
// SKIPs without a device. The ring's schedule is replayed through the block API (tests/attention/attn_ring_replay.h):
// causal diagonal blocks, full blocks, second-half row subsets, the fp32 state folded over sp calls by the
// project's merge kernel, GQA and MQA, hd 64 and 128, chunk lengths that are not multiples of any tile, q, k, v in
// fp32 and bf16 (--activations bf16). Tolerances as the flash test's (out 2e-2, lse 5e-3, dq/dk/dv 3e-2 of the
// largest magnitude): both round Q, K, V, dO and P to bf16 and accumulate in fp32; cuDNN also rounds each block's
// O and dQ/dK/dV to bf16 before they join the fp32 state and accumulators. The backward must be bitwise
// repeatable (the graphs ask for cuDNN's deterministic algorithm), rows whose LSE is -inf must add nothing, and
// cuDNN must really have run: every plan built, none rejected (a rejected plan falls back to flash silently but
// for one line). Document ids and hd 32 fall back to the flash kernels: those cases check the fallback.
#include <math.h>

#include "attention/attention_cuda.h"
#include "tests/attention/attn_ring_replay.h"
#include "model/ops.h"

static void use(const char *impl) { attn_cuda_set_impl(impl); }

static void test_case(Case c, uint64_t seed) { replay_against_flash("cudnn", c, seed); }

// One causal backward block in which every other head's LSE is -inf (rows that saw no key): they add nothing to
// dq, dk, dv; the other rows match the CPU.
static void test_empty_rows(int hd) {
    AttnShape s = {.n_head = 4, .n_kv_head = 2, .head_dim = hd};
    int nq = 150, QW = 4 * hd, KW = 2 * hd;
    float *q = host_randn((size_t)nq * QW, 7, 1), *k = host_randn((size_t)nq * KW, 8, 1);
    float *v = host_randn((size_t)nq * KW, 9, 1), *dout = host_randn((size_t)nq * QW, 10, 1);
    // out and lse from a real forward on the CPU, then the odd heads' rows marked as having seen no key
    float *out = xcalloc((size_t)nq * QW, 4, "out"), *lse = xcalloc((size_t)nq * 4, 4, "lse");
    float *lrow = xcalloc((size_t)nq * 4, 4, "l"), *D = xcalloc((size_t)nq * 4, 4, "D");
    attention_causal_forward(&BACKEND_CPU, &s, &(AttnRows){.L = nq, .q = q, .k = k, .v = v, .out = out, .lse = lse, .tmp = lrow},
                             NULL);
    for (int i = 0; i < nq; i++)
        for (int h = 1; h < 4; h += 2) {
            lse[i * 4 + h] = -INFINITY;
            memset(out + (size_t)i * QW + h * hd, 0, hd * 4);   // out = 0 for such a row (attn_finalize's contract)
        }
    BACKEND_CPU.attn_backward_prep(&s, D, dout, out, nq);
    float *res[2][3];
    const Backend *bes[2] = {&BACKEND_CPU, &BACKEND_CUDA};
    use("cudnn");
    for (int b = 0; b < 2; b++) {
        const Backend *be = bes[b];
        float *dq = be->alloc((size_t)nq * QW * 4, "dq"), *dk = be->alloc((size_t)nq * KW * 4, "dk");
        float *dv = be->alloc((size_t)nq * KW * 4, "dv"), *qd = on(be, q, (size_t)nq * QW), *kd = on(be, k, (size_t)nq * KW);
        float *vd = on(be, v, (size_t)nq * KW), *od = on(be, out, (size_t)nq * QW), *dod = on(be, dout, (size_t)nq * QW);
        float *ld = on(be, lse, (size_t)nq * 4), *Dd = on(be, D, (size_t)nq * 4);
        be->zero(dq, (size_t)nq * QW * 4), be->zero(dk, (size_t)nq * KW * 4), be->zero(dv, (size_t)nq * KW * 4);
        be->attn_backward_prep(&s, Dd, dod, od, nq);
        be->attn_backward_block(&s, dq, dk, dv, qd, kd, vd, od, dod, ld, Dd, nq, nq, ATTN_CAUSAL, NULL);
        res[b][0] = back(be, dq, (size_t)nq * QW), res[b][1] = back(be, dk, (size_t)nq * KW);
        res[b][2] = back(be, dv, (size_t)nq * KW);
        float *all[] = {dq, dk, dv, qd, kd, vd, od, dod, ld, Dd};
        for (int i = 0; i < 10; i++) be->release(all[i]);
    }
    int nonzero = 0;
    for (int i = 0; i < nq; i++)
        for (int h = 1; h < 4; h += 2)
            for (int d = 0; d < hd; d++) nonzero += res[1][0][(size_t)i * QW + h * hd + d] != 0.f;
    CHECK(nonzero == 0, "hd=%d: %d dq values of rows with lse = -inf are not 0", hd, nonzero);
    Case c = {4, 2, hd, 1, nq / 2};
    host_compare("dq, rows with lse=-inf", &c, res[1][0], res[0][0], (size_t)nq * QW, 3e-2);
    host_compare("dk, rows with lse=-inf", &c, res[1][1], res[0][1], (size_t)nq * KW, 3e-2);
    host_compare("dv, rows with lse=-inf", &c, res[1][2], res[0][2], (size_t)nq * KW, 3e-2);
    for (int b = 0; b < 2; b++) free(res[b][0]), free(res[b][1]), free(res[b][2]);
    free(q), free(k), free(v), free(dout), free(out), free(lse), free(lrow), free(D);
}

int main(int argc, char **argv) {
    gpu_test_start(argc, argv, "test_gpu_attention_cudnn");
    printf("cuDNN %zu\n", cudnn_sdpa_version());
    const Case cases[] = {
        {4, 4, 64, 1, 150},        // one causal block (L = 300: no tile multiple)
        {2, 1, 64, 4, 64},         // MQA; sp 4: the state folds 4 blocks, all three block shapes
        {4, 2, 64, 2, 100},        // GQA 2:1
        {2, 2, 64, 2, 333},        // L = 666
        {8, 2, 128, 3, 70},        // hd 128, GQA 4:1
        {4, 4, 128, 2, 96},        // hd 128
        {2, 1, 128, 2, 300},       // hd 128, MQA, L = 600
        {4, 2, 64, 2, 100, 0, 1},  // bf16 q, k, v (--activations bf16): no conversion, the same graphs
        {8, 2, 128, 3, 70, 0, 1},
        {4, 4, 64, 1, 150, 1},     // document ids: the flash kernels run (fallback)
        {4, 2, 32, 2, 37},         // hd 32: the flash kernels run (fallback)
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) test_case(cases[i], 700 + 10 * i);
    test_empty_rows(64);
    test_empty_rows(128);
    SdpaCacheStats st = cudnn_sdpa_cache_stats();
    printf("  cuDNN graphs: %ld built, %ld cache hits, %ld evicted\n", st.built, st.hits, st.evicted);
    CHECK(st.built > 0 && st.rejected == 0, "cuDNN ran no block (%ld graphs built, %ld plans rejected: see the lines "
          "above)", st.built, st.rejected);
    return check_summary();
}
