// tests/model/test_cp_model.c — one training step under every context-parallel mode and placement, with document masks and every --recompute mode, equals the one-rank step.
// Usage (under mpiexec -np dp·SP): test_cp_model SP. Modes: the ring, Ulysses over all SP ranks and (SP ≥ 4) the hybrid of
// Ulysses groups of 2 × the ring across them; placements zigzag and by cost (data/placement.h); windows packing a
// one-token document, a document crossing every rank, documents all shorter than a rank's share, and one document.
// Every rank also runs the one-rank step on the whole global batch; the all-reduced loss and every named gradient must
// match (double build ~1e-10, fp32 as the ring's test). The backend memory the step holds must stay within the memory
// plan's figures (attn_cp_workspace_bytes: the exchange's slot, Ulysses' tensors).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "data/source.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "tests/check.h"

#ifdef RINGGPT_F64
static const double TOL = 1e-10;
#else
static const double TOL = 2e-5;
#endif
enum { CHUNK = 6, SEED = 13, V = 64, EOS = 63 };

typedef enum { WIN_ONE_TOKEN, WIN_CROSSING, WIN_SHORT, WIN_ONE_DOC, WIN_COUNT } Window;
static const char *const WINDOW_NAMES[] = {"one-token doc", "doc crossing every rank", "all docs short", "one doc"};

// Global sample g's T+1 tokens: random, with EOS closing the documents the window kind says (L = a rank's share).
static void make_window(Window w, int g, int T, int L, int32_t *s) {
    Rng r;
    rng_seed(&r, 400 + (uint64_t)g);
    for (int t = 0; t <= T; t++) s[t] = (int32_t)rng_below(&r, V - 1);
    if (w == WIN_ONE_TOKEN) {   // documents of L/2 + 1, 1, then longer ones
        int ends[] = {L / 2, L / 2 + 1, T / 2 + 3, T - 5};
        for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) s[ends[i]] = EOS;
    }
    if (w == WIN_CROSSING) s[0] = EOS, s[T - 2] = EOS;   // one token, T − 2 tokens over every rank, one token
    for (int t = 0; w == WIN_SHORT && t < T;) {          // 1 .. L − 1 tokens each
        t += 1 + (int)rng_below(&r, (uint64_t)L - 1);
        if (t <= T) s[t - 1] = EOS;
    }
}

// ---- the backend, counting the memory it holds ----
typedef struct {
    void *p;
    size_t bytes;
} Held;
static Held g_held[4096];
static size_t g_live, g_peak;
static void *counted_alloc(size_t bytes, const char *what) {
    void *p = BACKEND_CPU.alloc(bytes, what);
    for (int i = 0; i < 4096; i++)
        if (!g_held[i].p) {
            g_held[i] = (Held){p, bytes};
            g_live += bytes, g_peak = g_live > g_peak ? g_live : g_peak;
            return p;
        }
    fail("test: too many buffers");
}
static void counted_release(void *p) {
    for (int i = 0; i < 4096 && p; i++)
        if (g_held[i].p == p) g_live -= g_held[i].bytes, g_held[i] = (Held){0};
    BACKEND_CPU.release(p);
}
static Backend g_counting;

// One step's result: the all-reduced loss and gradients.
typedef struct {
    double loss;
    real *grads;
} Step;

static Step run_step(GPT *m, const Batch *b, const CommGrid *g) {
    gpt_zero_grad(m);
    Step r = {.loss = gpt_forward(m, b, 1.0, true, NULL)};
    gpt_backward(m, b);
    r.grads = xmalloc(m->table.total * sizeof(real), "gradients");
    memcpy(r.grads, m->grads, m->table.total * sizeof(real));
    if (g) {
        comm_allreduce(g->world, r.grads, m->table.total, COMM_REAL, COMM_SUM, "gradients");
        comm_allreduce(g->world, &r.loss, 1, COMM_F64, COMM_SUM, "loss");
    }
    return r;
}

// Worst norm-wise relative error of the loss and every named gradient against the reference.
static double step_error(const GPT *m, Step got, Step ref, const char **worst_name) {
    double worst = fabs(got.loss - ref.loss) / fabs(ref.loss);
    *worst_name = "loss";
    for (int i = 0; i < m->table.count; i++) {
        const ParamSpec *p = &m->table.specs[i];
        double d = 0, n = 0;
        for (size_t k = 0; k < p->numel; k++) {
            double a = got.grads[p->offset + k], b = ref.grads[p->offset + k];
            d += (a - b) * (a - b), n += b * b;
        }
        double e = sqrt(d) / (sqrt(n) + 1e-30);
        if (!(e <= worst)) worst = e, *worst_name = p->name;
    }
    return worst;
}

static const ModelConfig CFG = {.n_layer = 2, .dim = 64, .n_head = 4, .n_kv_head = 2, .ffn_dim = 96, .vocab_size = V,
                                .rope_theta = 10000, .norm_eps = 1e-5f};

// The one-rank steps over every window's global batch (dp rows).
static void reference_steps(const CommGrid *g, int T, Step ref[WIN_COUNT]) {
    GPT m;
    gpt_init(&m, &CFG, &BACKEND_CPU, SEED, GPT_TRAIN);
    m.doc_mask = true;
    int32_t *s = xmalloc((size_t)(T + 1) * sizeof(int32_t), "window");
    for (int w = 0; w < WIN_COUNT; w++) {
        Batch all = batch_alloc(g->dp, T);
        for (int d = 0; d < g->dp; d++) {
            make_window((Window)w, d, T, T / g->sp, s);
            batch_put_sample(&all, d, s, T, EOS, (RankSlice){1, 0, PLACE_ZIGZAG});
        }
        ref[w] = run_step(&m, &all, NULL);
        batch_free(&all);
    }
    free(s);
    gpt_free(&m);
}

// The memory a model's step holds on the backend beyond its weights and gradients, as the memory plan counts it:
// activations, the context parallelism's buffers and the document ids.
static size_t planned_bytes(const GPT *m, int T_local) {
    CpConfig cp = attn_cp_config(m->cp);
    ActSizes a = act_sizes(&m->cfg, m->recompute, m->act_store, 1, T_local, &cp);
    return a.kept_per_layer * m->cfg.n_layer + a.work + a.shared + a.ring + (size_t)T_local * cp.sp * sizeof(int32_t);
}

// True when row 0's layout is the zigzag of `groups` ranks (what the ring runs without the exchange).
static bool zigzag_row(const Batch *b, int T, int groups) {
    int L = T / groups, c = L / 2;
    for (int x = 0; x < T; x++) {
        int j = x / L, i = x % L;
        if (b->layout[x] != (i < c ? j * c + i : (2 * groups - 1 - j) * c + i - c)) return false;
    }
    return true;
}

// This rank's bytes sent in a step against the cost model's (attn_cp_model, per layer forward and backward: the most a rank
// sends): equal where every rank sends alike (the zigzag of the ring or of the groups, Ulysses), else no more.
static bool bytes_as_modelled(const GPT *m, const Batch *b, bool zigzag) {
    CpConfig cp = attn_cp_config(m->cp);
    AttnShape s = {.n_head = CFG.n_head, .n_kv_head = CFG.n_kv_head, .head_dim = CFG.dim / CFG.n_head};
    RingCosts k = {.attn_flops = 1e10, .link_bytes_per_s = 1e9};
    AttnLayout lay = {.pos = b->layout, .docs_host = b->docs};
    double per_layer = attn_cp_model(&cp, &s, b->T, &lay, &k, false).bytes + attn_cp_model(&cp, &s, b->T, &lay, &k, true).bytes;
    double sent = attn_cp_stats(m->cp).bytes, want = per_layer * CFG.n_layer;
    if (zigzag ? sent != want : sent > want) fprintf(stderr, "sent %.0f bytes, the model says %.0f\n", sent, want);
    return zigzag ? sent == want : sent <= want;
}

// Every window under one mode, placement and recompute mode, on a fresh model (its first step allocates all it holds):
// returns the failures. *laid_out counts the windows whose rows are not the zigzag (the exchange ran).
static int run_config(const CommGrid *g, CpConfig cp, Placement pl, Recompute rc, int T, Step ref[WIN_COUNT], int *laid_out) {
    static const char *const MODES[] = {"ring", "ulysses", "hybrid"};
    GPT m;
    gpt_init(&m, &CFG, &BACKEND_CPU, SEED, GPT_TRAIN);
    m.doc_mask = true;
    m.recompute = rc;
    m.be = &g_counting;
    g_peak = g_live;
    gpt_set_cp(&m, g->ring, &cp);
    int failures = 0, L = T / g->sp;
    int32_t *s = xmalloc((size_t)(T + 1) * sizeof(int32_t), "window");
    for (int w = 0; w < WIN_COUNT; w++) {
        Batch b = batch_alloc(1, L);
        make_window((Window)w, g->dp_index, T, L, s);
        batch_put_sample(&b, 0, s, T, EOS, (RankSlice){g->sp, g->sp_index, pl, cp_place_groups(&cp)});
        bool zigzag = zigzag_row(&b, T, cp_place_groups(&cp));
        *laid_out += !zigzag;
        attn_cp_stats_reset(m.cp);
        Step got = run_step(&m, &b, g);
        double bad_bytes = !bytes_as_modelled(&m, &b, zigzag || cp.mode == CP_ULYSSES);
        comm_allreduce(g->world, &bad_bytes, 1, COMM_F64, COMM_MAX, "bytes check");
        double held = (double)g_peak, plan = (double)planned_bytes(&m, L);
        comm_allreduce(g->world, &held, 1, COMM_F64, COMM_MAX, "memory");
        const char *name;
        double e = step_error(&m, got, ref[w], &name);
        comm_allreduce(g->world, &e, 1, COMM_F64, COMM_MAX, "error max");
        bool ok = e < TOL && held <= plan && bad_bytes == 0;
        failures += !ok;
        log_info("%s %dx%d %s ulysses=%d --placement %s --recompute %s, %s: worst rel err %.2e (%s on rank 0); "
                 "%.0f bytes held, plan %.0f\n", ok ? "ok  " : "FAIL", g->dp, g->sp, MODES[cp.mode], attn_cp_config(m.cp).degree,
                 pl == PLACE_COST ? "cost" : "zigzag", recompute_name(rc), WINDOW_NAMES[w], e, name, held, plan);
        free(got.grads);
        batch_free(&b);
    }
    free(s);
    gpt_free(&m);
    return failures;
}

int main(int argc, char **argv) {
    comm_init(&argc, &argv);
    comm_set_timeout(120);
    int sp = argc > 1 ? atoi(argv[1]) : comm_size(comm_world());
    CommGrid g = comm_grid(sp);
    g_counting = BACKEND_CPU;
    g_counting.alloc = counted_alloc, g_counting.release = counted_release;
    int T = 2 * sp * CHUNK, failures = 0;
    Step ref[WIN_COUNT];
    reference_steps(&g, T, ref);
    CpConfig modes[] = {{.mode = CP_RING, .overlap = true}, {.mode = CP_ULYSSES, .overlap = true},
                        {.mode = CP_HYBRID, .degree = 2, .overlap = true}};
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
        for (int pl = PLACE_ZIGZAG; pl <= PLACE_COST; pl++) {
            if (modes[i].mode == CP_HYBRID && sp < 4) continue;   // groups of 2 and more than one of them
            modes[i].any_layout = pl != PLACE_ZIGZAG, modes[i].sp = sp;
            int laid_out = 0;
            for (Recompute rc = RECOMPUTE_NONE; rc <= RECOMPUTE_FULL; rc++)
                failures += run_config(&g, modes[i], (Placement)pl, rc, T, ref, &laid_out);
            if (pl == PLACE_COST && laid_out == 0) failures++, log_info("FAIL: no window placed by cost left the zigzag\n");
        }
    for (int w = 0; w < WIN_COUNT; w++) free(ref[w].grads);
    log_info("%s: %d failure%s\n", failures ? "FAIL" : "ok", failures, failures == 1 ? "" : "s");
    comm_grid_free(&g);
    comm_finalize();
    return failures ? 1 : 0;
}
