// tests/model/test_recompute.c — every --recompute mode gives gradients bit-identical to none, without one more ring exchange.
// Usage: test_recompute [SP] (one rank when run plainly; under mpiexec -np dp·SP for the ring). For each model
// shape (GQA, tied head, an FFN narrower than the model) every rank runs one forward + backward per mode on
// its own slice, then compares its loss and every gradient to none's bit for bit, counts the ring's packets
// (RingStats.exchanges), and checks that the activations allocated are the table's (model/acts.c): every row
// bound where the table places it, every LayerActs field a row, and the bytes the memory plan's figures; a shorter
// batch after a longer one laid over its buffers, without allocating, and equal.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "data/source.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "model/memplan.h"
#include "tests/check.h"

enum { B = 2, CHUNK = 6, SEED = 11 };

typedef struct {
    const char *name;
    ModelConfig cfg;
} Shape;

static const Shape SHAPES[] = {
    {"gqa", {.n_layer = 2, .dim = 96, .n_head = 6, .n_kv_head = 2, .ffn_dim = 128, .vocab_size = 64,
             .rope_theta = 10000, .norm_eps = 1e-5f}},
    {"tied head", {.n_layer = 3, .dim = 64, .n_head = 4, .n_kv_head = 4, .ffn_dim = 160, .vocab_size = 80,
                   .rope_theta = 10000, .norm_eps = 1e-5f, .tie_embeddings = true}},
    {"narrow ffn", {.n_layer = 2, .dim = 64, .n_head = 2, .n_kv_head = 1, .ffn_dim = 24, .vocab_size = 50,
                    .rope_theta = 500, .norm_eps = 1e-5f}},
};

// This rank's slice of B random sequences of T+1 tokens (the same samples on the sp ranks of a dp group).
static Batch make_batch(int T, int V, const CommGrid *g) {
    Batch b = batch_alloc(B, T / g->sp);
    int32_t *s = xmalloc((size_t)(T + 1) * sizeof(int32_t), "sample");
    for (int i = 0; i < B; i++) {
        Rng r;
        rng_seed(&r, 500 + g->dp_index * B + i);
        for (int t = 0; t <= T; t++) s[t] = (int32_t)rng_below(&r, V);
        batch_put_sample(&b, i, s, T, -1, (RankSlice){g->sp, g->sp_index, PLACE_ZIGZAG});
    }
    free(s);
    return b;
}

typedef struct {
    double loss;
    real *grads;
    long exchanges;
} StepResult;

static StepResult run_step(GPT *m, const Batch *b, Recompute mode, double grad_scale) {
    m->recompute = mode;
    gpt_zero_grad(m);
    attn_cp_stats_reset(m->cp);
    StepResult r = {.loss = gpt_forward(m, b, grad_scale, true, NULL)};
    gpt_backward(m, b);
    r.grads = xmalloc(m->table.total * sizeof(real), "gradients");
    memcpy(r.grads, m->grads, m->table.total * sizeof(real));
    r.exchanges = attn_cp_stats(m->cp).exchanges;
    return r;
}

static void count_layer_row(void *ctx, const ActSpec *s, ActPlace p) {
    (void)p;
    *(size_t *)ctx += s->per_layer;
}

typedef struct {
    GPT *m;
    const char *shape;
} BindCheck;

// One table row after gpt_prepare: a pointer exactly where the table places it (NULL where the ring keeps its
// own packets or there is no ring), the same in every layer when it lives in the arena.
static void check_bound(void *ctx, const ActSpec *s, ActPlace p) {
    BindCheck *c = ctx;
    Activations *a = &c->m->act;
    for (int l = 0; l < (s->per_layer ? c->m->cfg.n_layer : 1); l++) {
        const real *t = *act_field(a, &a->layers[l], s);
        bool ok = p.home == ACT_ARENA ? (const char *)t == (const char *)a->arena + p.offset
                : p.home == ACT_OWN   ? t != NULL && t != a->arena
                                      : t == NULL;
        CHECK(ok, "%s, --recompute %s: '%s' (layer %d) is not where the activation table places it", c->shape,
              recompute_name(a->mode), s->name, l);
    }
}

// The table against figures it did not make: the bytes per token the memory plan printed for the tiny preset (fp32,
// one rank) before the activations became one table, from its hand-written sums (train at a8f3186: "kept for the
// backward ... (3352 bytes/token/layer x 2 layers)", "one layer's working set ... (1796 bytes/token)", ...).
static void check_recorded_sizes(void) {
    static const size_t KEPT[] = {[RECOMPUTE_NONE] = 3352, [RECOMPUTE_MLP] = 1556, [RECOMPUTE_FULL] = 528};
    static const size_t WORK[] = {[RECOMPUTE_NONE] = 0, [RECOMPUTE_MLP] = 1796, [RECOMPUTE_FULL] = 2820};
    ModelConfig tiny;
    CHECK(config_preset(&tiny, "tiny"), "no tiny preset");
    enum { T = 1024 };
    for (int mode = RECOMPUTE_NONE; mode <= RECOMPUTE_FULL; mode++) {
        ActSizes s = act_sizes(&tiny, (Recompute)mode, ACT_F32, 1, T, NULL);
        CHECK(s.kept_per_layer == KEPT[mode] * T && s.work == WORK[mode] * T,
              "tiny, --recompute %s: the table gives %zu kept and %zu working bytes per token, the recorded plan %zu and %zu",
              recompute_name((Recompute)mode), s.kept_per_layer / T, s.work / T, KEPT[mode], WORK[mode]);
    }
}

// Every LayerActs field has its row in the table (a field without one would never be allocated).
static void check_layer_rows(void) {
    ActDims d = act_dims(&SHAPES[0].cfg, RECOMPUTE_NONE, ACT_F32, 1, 1, false);
    size_t rows = 0;
    acts_layout(&d, count_layer_row, &rows);
    CHECK(rows * sizeof(real *) == sizeof(LayerActs), "the activation table has %zu per-layer rows; LayerActs has %zu "
          "fields", rows, sizeof(LayerActs) / sizeof(real *));
}

// The bytes acts_ensure allocated are the plan's: both sum the activation table (model/acts.c).
static void check_plan(GPT *m, Recompute mode, int T_local, const char *shape) {
    BindCheck c = {m, shape};
    CpConfig cp = attn_cp_config(m->cp);
    ActDims d = act_dims(&m->cfg, mode, m->act_store, B, T_local, &cp);
    acts_layout(&d, check_bound, &c);
    ActSizes s = act_sizes(&m->cfg, mode, m->act_store, B, T_local, &cp);
    const Activations *a = &m->act;
    CHECK(a->kept_bytes == s.kept_per_layer * m->cfg.n_layer && a->work_bytes == s.work && a->shared_bytes == s.shared,
          "%s, --recompute %s, %s activations: allocated kept/work/shared %zu/%zu/%zu bytes, plan says %zu/%zu/%zu",
          shape, recompute_name(mode), m->act_store == ACT_BF16 ? "bf16" : "fp32", a->kept_bytes, a->work_bytes,
          a->shared_bytes, s.kept_per_layer * m->cfg.n_layer, s.work, s.shared);
}

// --activations bf16 (a CUDA setting): the layout of bf16 [act] buffers in every mode is the plan's too. Only
// allocated here (gpt_prepare runs no op), so the CPU can check the byte counts the GPU will allocate.
static void check_bf16_plans(GPT *m, int T_local, const char *shape) {
    for (int mode = RECOMPUTE_NONE; mode <= RECOMPUTE_FULL; mode++) {
        m->recompute = (Recompute)mode;
        m->act_store = ACT_BF16;
        gpt_prepare(m, B, T_local);
        check_plan(m, (Recompute)mode, T_local, shape);
        m->act_store = ACT_F32;
    }
}

// The CPU backend, counting its allocations.
static long g_allocs;
static void *counted_alloc(size_t bytes, const char *what) {
    g_allocs++;
    return BACKEND_CPU.alloc(bytes, what);
}

// A shorter batch after a longer one is laid over the longer one's buffers (no allocation: eval and decoding run
// prompts of every length on one model), where the table places it, and its step equals the step the model took when
// its buffers were made for that shorter batch, bit for bit.
static void check_relaid(GPT *m, const Batch *half, const StepResult *first, double grad_scale, const char *shape) {
    for (int mode = RECOMPUTE_NONE; mode <= RECOMPUTE_FULL; mode++) {
        m->recompute = (Recompute)mode;
        gpt_prepare(m, B, 2 * half->T);
        const Backend *be = m->be;
        Backend counting = *be;
        counting.alloc = counted_alloc;
        m->be = &counting;
        long allocs = g_allocs;
        StepResult r = run_step(m, half, (Recompute)mode, grad_scale);
        m->be = be;
        CHECK(g_allocs == allocs, "%s, --recompute %s: a batch of T = %d after one of %d allocated %ld buffers", shape,
              recompute_name(m->recompute), half->T, 2 * half->T, g_allocs - allocs);
        check_plan(m, m->recompute, half->T, shape);
        size_t differ = 0;
        for (size_t k = 0; k < m->table.total; k++) differ += memcmp(&r.grads[k], &first->grads[k], sizeof(real)) != 0;
        CHECK(r.loss == first->loss && differ == 0, "%s, --recompute %s: T = %d laid over the buffers of T = %d: loss "
              "%.17g vs %.17g, %zu gradient elements differ", shape, recompute_name(m->recompute), half->T, 2 * half->T,
              r.loss, first->loss, differ);
        free(r.grads);
    }
}

static void test_shape(const Shape *sh, const CommGrid *g) {
    int T = 2 * g->sp * CHUNK;
    GPT m;
    gpt_init(&m, &sh->cfg, &BACKEND_CPU, SEED, GPT_TRAIN);
    gpt_set_cp(&m, g->ring, &(CpConfig){.mode = CP_RING, .overlap = true});
    Batch b = make_batch(T, sh->cfg.vocab_size, g), half = make_batch(T / 2, sh->cfg.vocab_size, g);
    double grad_scale = 1.0 / ((double)B * g->dp * T);
    StepResult first_half = run_step(&m, &half, RECOMPUTE_NONE, grad_scale);   // buffers made for T / 2
    // none first and last: switching modes on one model reallocates and must change nothing either.
    const Recompute order[] = {RECOMPUTE_NONE, RECOMPUTE_MLP, RECOMPUTE_FULL, RECOMPUTE_NONE, RECOMPUTE_FULL};
    StepResult ref = run_step(&m, &b, RECOMPUTE_NONE, grad_scale);
    // Per step, layer and sequence: sp−1 hops of K, V forward; sp−1 of K, V and sp−1 of dK, dV backward; each hop
    // is two pieces (attention/ring_schedule.h).
    long expect = (long)sh->cfg.n_layer * B * 6 * (g->sp - 1);
    CHECK(ref.exchanges == expect, "%s: %ld ring exchanges per step, expected %ld", sh->name, ref.exchanges, expect);
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        StepResult r = run_step(&m, &b, order[i], grad_scale);
        check_plan(&m, order[i], b.T, sh->name);
        size_t differ = 0;
        for (size_t k = 0; k < m.table.total; k++) differ += memcmp(&r.grads[k], &ref.grads[k], sizeof(real)) != 0;
        CHECK(r.loss == ref.loss && differ == 0, "%s, --recompute %s, rank %d: loss %.17g vs %.17g (none); %zu of %zu "
              "gradient elements differ", sh->name, recompute_name(order[i]), comm_rank(g->world), r.loss, ref.loss,
              differ, m.table.total);
        CHECK(r.exchanges == ref.exchanges, "%s, --recompute %s: %ld ring exchanges, none: %ld", sh->name,
              recompute_name(order[i]), r.exchanges, ref.exchanges);
        free(r.grads);
    }
    check_bf16_plans(&m, b.T, sh->name);
    check_relaid(&m, &half, &first_half, grad_scale, sh->name);
    m.recompute = RECOMPUTE_DECODE;   // the decoder's prefill: laid out as the table says too
    gpt_prepare(&m, B, b.T);
    check_plan(&m, RECOMPUTE_DECODE, b.T, sh->name);
    m.recompute = RECOMPUTE_NONE;
    log_info("  %-10s dp=%d sp=%d T=%d: mlp and full bit-identical to none, %ld ring exchanges per step in every mode\n",
             sh->name, g->dp, g->sp, T, ref.exchanges);
    free(ref.grads);
    free(first_half.grads);
    batch_free(&half);
    batch_free(&b);
    gpt_free(&m);
}

int main(int argc, char **argv) {
    comm_init(&argc, &argv);
    comm_set_timeout(120);
    int sp = argc > 1 ? atoi(argv[1]) : comm_size(comm_world());
    CommGrid g = comm_grid(sp);
    check_layer_rows();
    check_recorded_sizes();
    for (size_t i = 0; i < sizeof SHAPES / sizeof SHAPES[0]; i++) test_shape(&SHAPES[i], &g);
    double failed = check_failed;
    comm_allreduce(g.world, &failed, 1, COMM_F64, COMM_MAX, "failures");
    int rc = comm_rank(g.world) == 0 ? check_summary() : check_failed != 0;
    comm_grid_free(&g);
    comm_finalize();
    return rc || failed > 0;
}
