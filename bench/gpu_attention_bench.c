// bench/gpu_attention_bench.c — CUDA flash attention forward+backward (block API): ms and TFLOP/s per causal T and head dim.
// Prints one line per shape in the same format as bench/gpu_attention_torch.py, so the two can be
// set side by side (scripts/gpu_check.sh does). FLOPs are counted as FlashAttention does: causal
// forward = 2·T²·hd·H (half of 4·T²·hd·H), backward = 2.5 × forward. --sm90 times the Hopper kernels
// instead (--attn sm90, attention/attention_sm90.cu; impl=ringgpt-sm90): a separate run, so a
// failure there never costs the sm_80 figures.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "attention/attention_sm90.h"
#include "core/backend_cuda.h"
#include "core/common.h"
#include "core/rng.h"
#include "model/ops.h"

// One shape: B=1, H heads of head dim hd (H·hd = 2048, a ~1B-model's width), H = Hkv.
static void bench(const char *impl, int T, int hd, int reps) {
    const Backend *be = &BACKEND_CUDA;
    AttnShape s = {.n_head = 2048 / hd, .n_kv_head = 2048 / hd, .head_dim = hd};
    size_t qn = (size_t)T * s.n_head * hd, rows = (size_t)T * s.n_head;
    float *h = xmalloc(qn * sizeof(float), "bench data");
    Rng r;
    rng_seed(&r, 1);
    for (size_t i = 0; i < qn; i++) h[i] = (float)rng_normal(&r);
    float *q = be->alloc(qn * 4, "q"), *k = be->alloc(qn * 4, "k"), *v = be->alloc(qn * 4, "v");
    float *o = be->alloc(qn * 4, "o"), *dout = be->alloc(qn * 4, "dout"), *dq = be->alloc(qn * 4, "dq");
    float *dk = be->alloc(qn * 4, "dk"), *dv = be->alloc(qn * 4, "dv");
    float *lse = be->alloc(rows * 4, "lse"), *tmp = be->alloc(rows * 4, "tmp");
    float *bufs[] = {q, k, v, dout};
    for (int i = 0; i < 4; i++) be->to_device(bufs[i], h, qn * 4);   // same data: fine for timing
    double fwd = 1e30, bwd = 1e30;
    for (int rep = 0; rep < reps + 1; rep++) {   // the first run warms up and is not counted
        cuda_backend_sync();
        double t0 = now_seconds();
        attention_causal_forward(be, &s, o, lse, tmp, q, k, v, T, NULL);
        cuda_backend_sync();
        double t1 = now_seconds();
        attention_causal_backward(be, &s, dq, dk, dv, tmp, q, k, v, o, lse, dout, T, NULL);
        cuda_backend_sync();
        double t2 = now_seconds();
        if (rep > 0 && t1 - t0 < fwd) fwd = t1 - t0;
        if (rep > 0 && t2 - t1 < bwd) bwd = t2 - t1;
    }
    double f = 2.0 * T * (double)T * hd * s.n_head;
    printf("attention impl=%s T=%d hd=%d H=%d fwd_ms=%.3f bwd_ms=%.3f fwd_tflops=%.1f bwd_tflops=%.1f "
           "fwdbwd_tflops=%.1f\n",
           impl, T, hd, s.n_head, fwd * 1e3, bwd * 1e3, f / fwd / 1e12, 2.5 * f / bwd / 1e12,
           3.5 * f / (fwd + bwd) / 1e12);
    fflush(stdout);
    float *all[] = {q, k, v, o, dout, dq, dk, dv, lse, tmp};
    for (int i = 0; i < 10; i++) be->release(all[i]);
    free(h);
}

// usage: gpu_attention_bench [--sm90] [T ...]   (default 4096 16384 65536; head dims 64 and 128)
int main(int argc, char **argv) {
    int sm90 = argc > 1 && !strcmp(argv[1], "--sm90");
    if (sm90) argc--, argv++;
    if (cuda_device_count() == 0) {
        printf("SKIP: no CUDA device (gpu_attention_bench)\n");
        return 0;
    }
    cuda_backend_init(0, 0);
    char desc[256];
    cuda_device_describe(desc, sizeof desc);
    printf("# %s\n", desc);
    int lens[16] = {4096, 16384, 65536}, n = 3;
    if (argc > 1) {
        n = argc - 1 < 16 ? argc - 1 : 16;
        for (int i = 0; i < n; i++) lens[i] = atoi(argv[i + 1]);
    }
    attn_cuda_set_impl(sm90 ? "sm90" : "flash");
    if (sm90 && !attn_sm90_selected(64)) {
        printf("# --sm90: not a compute capability 9.0 device; nothing to time\n");
        return 0;
    }
    for (int i = 0; i < n; i++)
        for (int hd = 64; hd <= 128; hd *= 2) bench(sm90 ? "ringgpt-sm90" : "ringgpt", lens[i], hd, lens[i] >= 65536 ? 2 : 5);
    return 0;
}
