// tests/model/test_gpu_model.c — a whole training step (loss, every named gradient) and a 200-step loss curve, CUDA vs CPU.
// Both backends start from the same weights (same seed) and see the same batches of a copy task
// (the second half of each sequence repeats the first, so the loss only falls through attention).
// Tolerances are for tensor cores against the fp32 CPU reference. With bf16 operands (--matmul bf16) and bf16
// activations (--activations bf16: this program's CUDA model then stores them so) gradient errors are ~3e-3
// relative per matmul, compounding over layers to ~1e-2: inside the 5e-2 grad and 1e-2 loss bounds. Every
// variant (tests/model/tests.cmake) passed on an H100 (2026-11-24) and an H200 (2026-11-27): docs/gpu.md.
#include <math.h>

#include "data/source.h"
#include "model/adamw.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "tests/gpu_test.h"

enum { B = 2, T = 128, STEPS = 200, STABLE = 60, TAIL = 10 };

static ModelConfig config(void) {
    return (ModelConfig){.n_layer = 2, .dim = 128, .n_head = 4, .n_kv_head = 2, .ffn_dim = 352, .vocab_size = 260,
                         .rope_theta = 10000.0f, .norm_eps = 1e-5f};
}

// Global sample g: T+1 tokens, 16 random letters ... then the same again.
static Batch make_batch(int first) {
    Batch b = batch_alloc(B, T);
    int32_t s[T + 1];
    for (int i = 0; i < B; i++) {
        Rng r;
        rng_seed(&r, 5000 + first + i);
        for (int t = 0; t <= T; t++) s[t] = t < T / 2 ? 'a' + (int32_t)rng_below(&r, 16) : s[t - T / 2];
        batch_put_sample(&b, i, s, T, -1, (RankSlice){1, 0, PLACE_ZIGZAG});
    }
    return b;
}

static void test_one_step(void) {
    ModelConfig c = config();
    GPT mc, mg;
    gpt_init(&mc, &c, &BACKEND_CPU, 42, GPT_TRAIN);
    gpt_init(&mg, &c, &BACKEND_CUDA, 42, GPT_TRAIN);
    mg.act_store = gpu_test_act_store;
    Batch b = make_batch(0);
    double scale = 1.0 / (B * T);
    gpt_zero_grad(&mc), gpt_zero_grad(&mg);
    double lc = gpt_forward(&mc, &b, scale, true, NULL), lg = gpt_forward(&mg, &b, scale, true, NULL);
    gpt_backward(&mc, &b), gpt_backward(&mg, &b);
    double e = rel_err(lg, lc, 1e-12);
    CHECK(e <= 1e-2, "one step: loss %.6f vs CPU %.6f (rel %.2e)", lg * scale, lc * scale, e);
    printf("  %-40s %.6f vs CPU %.6f, rel err %.3e (tol 1e-02)\n", "loss", lg * scale, lc * scale, e);
    const ParamTable *t = &mc.table;
    float *gc = back(&BACKEND_CPU, mc.grads, t->total), *gg = back(&BACKEND_CUDA, mg.grads, t->total);
    for (const ParamSpec *p = t->specs; p < t->specs + t->count; p++) {
        double d = 0, r = 0;   // norm-wise relative error of each named gradient
        for (size_t i = 0; i < p->numel; i++) {
            double x = gg[p->offset + i], y = gc[p->offset + i];
            d += (x - y) * (x - y), r += y * y;
        }
        double err = sqrt(d) / fmax(sqrt(r), 1e-30);
        CHECK(err <= 5e-2, "one step: gradient %s differs by %.3e (norm-wise)", p->name, err);
        printf("  grad %-35s rel err %.3e (tol 5e-02)\n", p->name, err);
    }
    free(gc), free(gg);
    batch_free(&b);
    gpt_free(&mc), gpt_free(&mg);
}

// Trains both for STEPS steps on the same batches. The copy task has a sharp phase transition (the
// loss drops from ~2.8 to ~1.4 within a few steps, around step 120 on an H100) whose exact step moves
// with bf16 rounding, so step-by-step agreement is checked only where the curve is stable: the first
// STABLE steps tightly, the final window by its mean. (Measured on an H100 before this split: step 124
// CPU 1.7275 vs CUDA 1.5606 mid-transition, yet last-10 means 1.4126 vs 1.4136.)
static void test_loss_curve(void) {
    ModelConfig c = config();
    GPT m[2];
    AdamW opt[2];
    const Backend *be[2] = {&BACKEND_CPU, &BACKEND_CUDA};
    for (int i = 0; i < 2; i++) {
        gpt_init(&m[i], &c, be[i], 42, GPT_TRAIN);
        if (be[i] == &BACKEND_CUDA) m[i].act_store = gpu_test_act_store;
        adamw_init(&opt[i], &m[i], (AdamWConfig){0.9f, 0.95f, 1e-8f, 0.1f});
    }
    double first = 0, worst = 0, tail[2] = {0, 0};
    int first_apart = 0;   // the first step (anywhere) where the curves leave the per-step tolerance
    for (int step = 0; step < STEPS; step++) {
        Batch b = make_batch(B * step);
        double loss[2];
        for (int i = 0; i < 2; i++) {
            gpt_zero_grad(&m[i]);
            loss[i] = gpt_forward(&m[i], &b, 1.0 / (B * T), true, NULL) / (B * T);
            gpt_backward(&m[i], &b);
            clip_grad_norm(&m[i], 1.0f, NULL);
            adamw_update(&opt[i], &m[i], 3e-3f);
            if (step >= STEPS - TAIL) tail[i] += loss[i] / TAIL;
        }
        if (step == 0) first = loss[0];
        double d = fabs(loss[1] - loss[0]);
        bool apart = !(d <= 0.05 + 0.05 * loss[0]);
        if (apart && !first_apart) first_apart = step + 1;
        if (step < STABLE) worst = fmax(worst, d);
        CHECK(isfinite(loss[1]), "step %d: CUDA loss is %g", step + 1, loss[1]);
        CHECK(step >= STABLE || !apart, "step %d (stable phase): CUDA loss %.4f vs CPU %.4f", step + 1, loss[1], loss[0]);
        if ((step + 1) % 25 == 0) printf("  step %3d: loss CPU %.4f  CUDA %.4f\n", step + 1, loss[0], loss[1]);
        batch_free(&b);
    }
    printf("  largest difference in the first %d steps %.4f; last-%d mean CPU %.4f CUDA %.4f (first %.4f)\n", STABLE,
           worst, TAIL, tail[0], tail[1], first);
    if (first_apart) printf("  (curves first apart by more than 0.05 + 5%% at step %d: the transition)\n", first_apart);
    CHECK(tail[0] < 0.8 * first, "the CPU model did not learn the copy task (%.4f -> %.4f)", first, tail[0]);
    CHECK(fabs(tail[1] - tail[0]) <= 0.05 * tail[0] + 0.02, "final losses differ: CUDA %.4f vs CPU %.4f", tail[1],
          tail[0]);
    for (int i = 0; i < 2; i++) adamw_free(&opt[i], &m[i]), gpt_free(&m[i]);
}

int main(int argc, char **argv) {
    gpu_test_start(argc, argv, "test_gpu_model");
    test_one_step();
    test_loss_curve();
    return check_summary();
}
