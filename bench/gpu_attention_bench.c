// bench/gpu_attention_bench.c — CUDA attention forward+backward through the block API (merges included): ms and TFLOP/s per causal T and head dim.
// Prints one line per shape in the same format as bench/gpu_attention_torch.py, so the two can be set side
// by side (bench/gpu_side_by_side.sh does). FLOPs are counted as FlashAttention does: causal forward =
// 2·T²·hd·H (half of 4·T²·hd·H), backward = 2.5 × forward.
//   --attn flash|cudnn|sm90   which kernels (train --attn; impl=ringgpt-<name>; sm90 only in a
//                             -DRINGGPT_SM90_KERNELS=ON build, else exit 2 with one line)
//   --activations bf16        q, k, v stored as bf16 (train --activations bf16; impl gets -bf16)
//   --ring SP                 the ring's schedule of SP ranks replayed on this one GPU (impl gets -ringSP): every
//                             rank's causal diagonal, full and second-half blocks, each folded into the fp32
//                             state, then the backward's blocks — the same FLOPs as one causal T, in 3·SP+…
//                             block calls with their merges. Without it: one causal block (SP = 1).
// A path that cannot run here (sm90 off Hopper) prints a comment line and nothing to time.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "attention/attention_cuda.h"
#include "core/backend_cuda.h"
#include "core/common.h"
#include "core/rng.h"
#include "model/ops.h"

typedef struct {
    const char *attn;
    ActStore store;
    int sp;
} Opts;

// n random elements stored as `store` on the GPU (bf16: rounded on the host, round to nearest even).
static real *device_randn(size_t n, ActStore store, uint64_t seed) {
    Rng r;
    rng_seed(&r, seed);
    float *h = xmalloc(n * sizeof(float), "bench data");
    for (size_t i = 0; i < n; i++) h[i] = (float)rng_normal(&r);
    size_t e = act_elem_bytes(store);
    void *src = h;
    uint16_t *b = NULL;
    if (store == ACT_BF16) {
        src = b = xmalloc(n * sizeof(uint16_t), "bench data");
        for (size_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, &h[i], 4);
            b[i] = (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
        }
    }
    real *d = BACKEND_CUDA.alloc(n * e, "bench tensor");
    BACKEND_CUDA.to_device(d, src, n * e);
    free(h), free(b);
    return d;
}

// The ring's blocks for sp ranks of L = T/sp rows (attention/ring.c's schedule), forward then backward; sp = 1
// is the single causal block of attention_causal_forward/backward.
typedef struct {
    real **q, **k, **v;   // (sp) per rank: (L, H, hd) and (L, Hkv, hd) in the bench's storage
    float *out, *lse, *l, *D, *dout, *dq, *dk, *dv;
} Ring;

static void ring_forward(const AttnShape *s, Ring *R, int sp, int L) {
    const Backend *be = &BACKEND_CUDA;
    int half = L / 2;
    size_t qo = (size_t)half * s->n_head * s->head_dim, so = (size_t)half * s->n_head;
    for (int r = 0; r < sp; r++) {
        AttnState st = {.acc = R->out, .m = R->lse, .l = R->l};
        be->attn_state_reset(s, st, L);
        for (int step = 0; step < sp; step++) {
            int j = (r - step + sp) % sp;
            if (j == r) be->attn_forward_block(s, st, R->q[r], L, R->k[j], R->v[j], L, ATTN_CAUSAL, NULL);
            else if (j < r) be->attn_forward_block(s, st, R->q[r], L, R->k[j], R->v[j], half, ATTN_FULL, NULL);
            else {
                AttnState late = {.acc = st.acc + qo, .m = st.m + so, .l = st.l + so};
                be->attn_forward_block(s, late, act_at(R->q[r], s->qkv, qo), half, R->k[j], R->v[j], L, ATTN_FULL, NULL);
            }
        }
        be->attn_finalize(s, st, R->out, R->lse, L);
    }
}

static void ring_backward(const AttnShape *s, Ring *R, int sp, int L) {
    const Backend *be = &BACKEND_CUDA;
    int half = L / 2;
    size_t qo = (size_t)half * s->n_head * s->head_dim, so = (size_t)half * s->n_head;
    for (int r = 0; r < sp; r++) {
        be->attn_backward_prep(s, R->D, R->dout, R->out, L);
        for (int step = 0; step < sp; step++) {
            int j = (r - step + sp) % sp;
            if (j == r)
                be->attn_backward_block(s, R->dq, R->dk, R->dv, R->q[r], R->k[j], R->v[j], R->out, R->dout, R->lse,
                                        R->D, L, L, ATTN_CAUSAL, NULL);
            else if (j < r)
                be->attn_backward_block(s, R->dq, R->dk, R->dv, R->q[r], R->k[j], R->v[j], R->out, R->dout, R->lse,
                                        R->D, L, half, ATTN_FULL, NULL);
            else
                be->attn_backward_block(s, R->dq + qo, R->dk, R->dv, act_at(R->q[r], s->qkv, qo), R->k[j], R->v[j],
                                        R->out + qo, R->dout + qo, R->lse + so, R->D + so, half, L, ATTN_FULL, NULL);
        }
    }
}

// One shape: B=1, H heads of head dim hd (H·hd = 2048, a ~1B-model's width), H = Hkv.
static void bench(const Opts *o, int T, int hd, int reps) {
    const Backend *be = &BACKEND_CUDA;
    AttnShape s = {.n_head = 2048 / hd, .n_kv_head = 2048 / hd, .head_dim = hd, .qkv = o->store};
    int sp = o->sp, L = T / sp;
    size_t qn = (size_t)L * s.n_head * hd, rows = (size_t)L * s.n_head;
    Ring R = {xcalloc(sp, sizeof(real *), "q"), xcalloc(sp, sizeof(real *), "k"), xcalloc(sp, sizeof(real *), "v")};
    for (int r = 0; r < sp; r++)
        R.q[r] = device_randn(qn, o->store, 1 + 3 * r), R.k[r] = device_randn(qn, o->store, 2 + 3 * r),
        R.v[r] = device_randn(qn, o->store, 3 + 3 * r);
    R.dout = device_randn(qn, ACT_F32, 99);
    float **fp[] = {&R.out, &R.dq, &R.dk, &R.dv};
    for (int i = 0; i < 4; i++) *fp[i] = be->alloc(qn * 4, "bench buffer");
    R.lse = be->alloc(rows * 4, "lse"), R.l = be->alloc(rows * 4, "l"), R.D = be->alloc(rows * 4, "D");
    double fwd = 1e30, bwd = 1e30;
    for (int rep = 0; rep < reps + 1; rep++) {   // the first run warms up (and builds cuDNN's graphs): not counted
        cuda_backend_sync();
        double t0 = now_seconds();
        ring_forward(&s, &R, sp, L);
        cuda_backend_sync();
        double t1 = now_seconds();
        ring_backward(&s, &R, sp, L);
        cuda_backend_sync();
        double t2 = now_seconds();
        if (rep > 0 && t1 - t0 < fwd) fwd = t1 - t0;
        if (rep > 0 && t2 - t1 < bwd) bwd = t2 - t1;
    }
    double f = 2.0 * T * (double)T * hd * s.n_head;
    char impl[64];
    snprintf(impl, sizeof impl, "ringgpt-%s%s", o->attn, o->store == ACT_BF16 ? "-bf16" : "");
    if (sp > 1) snprintf(impl + strlen(impl), sizeof impl - strlen(impl), "-ring%d", sp);
    printf("attention impl=%s T=%d hd=%d H=%d fwd_ms=%.3f bwd_ms=%.3f fwd_tflops=%.1f bwd_tflops=%.1f "
           "fwdbwd_tflops=%.1f\n",
           impl, T, hd, s.n_head, fwd * 1e3, bwd * 1e3, f / fwd / 1e12, 2.5 * f / bwd / 1e12,
           3.5 * f / (fwd + bwd) / 1e12);
    fflush(stdout);
    for (int r = 0; r < sp; r++) be->release(R.q[r]), be->release(R.k[r]), be->release(R.v[r]);
    float *all[] = {R.out, R.dq, R.dk, R.dv, R.dout, R.lse, R.l, R.D};
    for (int i = 0; i < 8; i++) be->release(all[i]);
    free(R.q), free(R.k), free(R.v);
}

// usage: gpu_attention_bench [--attn flash|cudnn|sm90] [--activations bf16] [--ring SP] [T ...]
//        (default flash, fp32, one causal block; T 4096 16384 65536; head dims 64 and 128)
int main(int argc, char **argv) {
    Opts o = {.attn = "flash", .store = ACT_F32, .sp = 1};
    int lens[16] = {4096, 16384, 65536}, n = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--attn") && i + 1 < argc) o.attn = argv[++i];
        else if (!strcmp(argv[i], "--activations") && i + 1 < argc) o.store = !strcmp(argv[++i], "bf16") ? ACT_BF16 : ACT_F32;
        else if (!strcmp(argv[i], "--ring") && i + 1 < argc) o.sp = atoi(argv[++i]);
        else if (n < 16) lens[n++] = atoi(argv[i]);
    }
    if (!n) n = 3;
    if (o.sp < 1) fail_usage("--ring %d: use a ring size of at least 1", o.sp);
    if (cuda_device_count() == 0) {
        printf("SKIP: no CUDA device (gpu_attention_bench)\n");
        return 0;
    }
    cuda_backend_init(0, 0);
    attn_cuda_set_impl(o.attn);
    char desc[256];
    cuda_device_describe(desc, sizeof desc);
    printf("# %s, attention %s\n", desc, attn_cuda_impl());
#ifdef RINGGPT_HAVE_SM90
    if (!strcmp(o.attn, "sm90") && !attn_sm90_device()) {
        printf("# --attn sm90: not a compute capability 9.0 device; nothing to time\n");
        return 0;
    }
#endif
    for (int i = 0; i < n; i++) {
        if (lens[i] % (2 * o.sp)) fail_usage("T=%d is not a multiple of 2·SP = %d", lens[i], 2 * o.sp);
        for (int hd = 64; hd <= 128; hd *= 2) bench(&o, lens[i], hd, lens[i] >= 65536 ? 2 : 5);
    }
    return 0;
}
