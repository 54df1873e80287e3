// tests/model/test_ring_model.c — one training step of the whole model on a dp × sp grid equals the single-rank step.
// Usage (under mpiexec): test_ring_model SP. Every rank also computes the single-rank reference on the
// whole global batch, then compares the all-reduced loss and every named parameter gradient.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "data/source.h"
#include "model/gpt.h"
#include "model/ops.h"

static const double TOL = 1e-5;   // relative (norm-wise) error per tensor, and of the loss
enum { B = 2, CHUNK = 5, SEED = 7 };

// Global sample g of the run: T+1 tokens from a fixed seed, the same on every rank.
static void make_sample(int32_t *s, int T, int V, int g) {
    Rng r;
    rng_seed(&r, 1000 + g);
    for (int t = 0; t <= T; t++) s[t] = (int32_t)rng_below(&r, V);
}

// Fills the batch with samples first..first+rows-1, sliced for (sp, sp_index).
static Batch make_batch(int rows, int first, int T, int V, int sp, int sp_index) {
    Batch b = batch_alloc(rows, T / sp);
    int32_t *s = xmalloc((size_t)(T + 1) * sizeof(int32_t), "sample");
    for (int i = 0; i < rows; i++) {
        make_sample(s, T, V, first + i);
        batch_put_sample(&b, i, s, T, -1, (RankSlice){sp, sp_index, PLACE_ZIGZAG});
    }
    free(s);
    return b;
}

static double norm_diff(const real *a, const real *b, size_t n, double *ref_norm) {
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) {
        d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        r += (double)b[i] * b[i];
    }
    *ref_norm = sqrt(r);
    return sqrt(d);
}

int main(int argc, char **argv) {
    comm_init(&argc, &argv);
    comm_set_timeout(120);
    int sp = argc > 1 ? atoi(argv[1]) : comm_size(comm_world());
    CommGrid grid = comm_grid(sp);
    // GQA (6 query heads, 2 kv heads), head dim 16, two layers; T = 2·sp·5 is never a power of two.
    ModelConfig cfg = {.n_layer = 2, .dim = 96, .n_head = 6, .n_kv_head = 2, .ffn_dim = 128, .vocab_size = 64,
                       .rope_theta = 10000, .norm_eps = 1e-5f, .tie_embeddings = false};
    int T = 2 * sp * CHUNK, V = cfg.vocab_size;
    double grad_scale = 1.0 / ((double)B * grid.dp * T);   // global number of target tokens

    GPT ring_model, ref;
    gpt_init(&ring_model, &cfg, &BACKEND_CPU, SEED, GPT_TRAIN);
    gpt_init(&ref, &cfg, &BACKEND_CPU, SEED, GPT_TRAIN);
    gpt_set_cp(&ring_model, grid.ring, &(CpConfig){.mode = CP_RING, .overlap = true});

    Batch mine = make_batch(B, grid.dp_index * B, T, V, sp, grid.sp_index);   // this rank's slices
    double loss = gpt_forward(&ring_model, &mine, grad_scale, true, NULL);
    gpt_backward(&ring_model, &mine);
    comm_allreduce(grid.world, ring_model.grads, ring_model.table.total, COMM_REAL, COMM_SUM, "gradients");
    comm_allreduce(grid.world, &loss, 1, COMM_F64, COMM_SUM, "loss");

    Batch all = make_batch(B * grid.dp, 0, T, V, 1, 0);   // the whole global batch on one rank
    double ref_loss = gpt_forward(&ref, &all, grad_scale, true, NULL);
    gpt_backward(&ref, &all);

    double worst = fabs(loss - ref_loss) / fabs(ref_loss);
    const char *worst_name = "loss";
    for (int i = 0; i < ref.table.count; i++) {
        const ParamSpec *p = &ref.table.specs[i];
        double rn, e = norm_diff(ring_model.grads + p->offset, ref.grads + p->offset, p->numel, &rn) / (rn + 1e-30);
        if (!(e <= worst)) worst = e, worst_name = p->name;
    }
    double w = worst;
    comm_allreduce(grid.world, &w, 1, COMM_F64, COMM_MAX, "error max");
    bool ok = w < TOL;
    log_info("%s %dx%d (dp x sp), T=%d, %s: loss %.9f vs %.9f single-rank; worst rel err %.2e (%s on rank 0) over "
             "%d gradients\n",
             ok ? "ok" : "FAIL", grid.dp, sp, T, REAL_NAME, loss * grad_scale, ref_loss * grad_scale, w, worst_name,
             ref.table.count);
    batch_free(&mine);
    batch_free(&all);
    gpt_free(&ring_model);
    gpt_free(&ref);
    comm_grid_free(&grid);
    comm_finalize();
    return ok ? 0 : 1;
}
