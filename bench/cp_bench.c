// bench/cp_bench.c — one layer's attention forward and backward across sp = world ranks: the ring, Ulysses and the hybrid side by side (time, wait, bytes per rank).
// Usage: mpirun -np SP cp_bench [--seq-len T] [--heads H] [--kv-heads K] [--head-dim D] [--reps N] [--doc-len N]
//        [--ulysses N]
// Rank 0 prints one line of key=value figures per mode (max over ranks, best of --reps calls): the zigzag ring, pure
// Ulysses (degree sp) and, with --ulysses N < sp, the hybrid of groups of N ranks. Every mode runs the same zigzag rows.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/ring.h"
#include "attention/ulysses.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "model/ops.h"

typedef struct {
    int T, H, Hkv, hd, reps, doc_len, degree;
} BenchArgs;

// One rank's rows and what the modes need of the layout: the zigzag positions, document ids by position and in
// zigzag rank order (the ring's).
typedef struct {
    int W, r, L;
    AttnShape s;
    real *q, *k, *v, *dout, *out, *lse, *tmp, *dq, *dk, *dv;
    int32_t *pos, *doc, *doc_zigzag;   // (T) each; doc NULL without --doc-len
} Rows;

static real *randn(Rng *g, size_t n) {
    real *x = xmalloc(n * sizeof(real), "bench tensor");
    for (size_t i = 0; i < n; i++) x[i] = (real)rng_normal(g);
    return x;
}

static Rows rows_make(const BenchArgs *a, int W, int r) {
    Rows x = {.W = W, .r = r, .L = a->T / W, .s = {.n_head = a->H, .n_kv_head = a->Hkv, .head_dim = a->hd}};
    size_t qn = (size_t)x.L * a->H * a->hd, kn = (size_t)x.L * a->Hkv * a->hd, hn = (size_t)x.L * a->H;
    Rng g;
    rng_seed(&g, 11 + r);
    x.q = randn(&g, qn), x.k = randn(&g, kn), x.v = randn(&g, kn), x.dout = randn(&g, qn);
    x.out = xmalloc(qn * sizeof(real), "out"), x.dq = xmalloc(qn * sizeof(real), "dq");
    x.lse = xmalloc(hn * sizeof(real), "lse"), x.tmp = xmalloc(hn * sizeof(real), "tmp");
    x.dk = xmalloc(kn * sizeof(real), "dk"), x.dv = xmalloc(kn * sizeof(real), "dv");
    x.pos = xmalloc((size_t)a->T * sizeof(int32_t), "layout");
    int c = a->T / (2 * W);
    for (int j = 0; j < W; j++)
        for (int i = 0; i < x.L; i++) x.pos[j * x.L + i] = i < c ? j * c + i : (2 * W - 1 - j) * c + i - c;
    if (a->doc_len > 0) {
        x.doc = xmalloc((size_t)a->T * sizeof(int32_t), "docs"), x.doc_zigzag = xmalloc((size_t)a->T * sizeof(int32_t), "docs");
        for (int p = 0; p < a->T; p++) x.doc[p] = p / a->doc_len;
        for (int i = 0; i < a->T; i++) x.doc_zigzag[i] = x.doc[x.pos[i]];
    }
    return x;
}

static void rows_free(Rows *x) {
    void *all[] = {x->q, x->k, x->v, x->dout, x->out, x->lse, x->tmp, x->dq, x->dk, x->dv, x->pos, x->doc, x->doc_zigzag};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

// One mode's figures: the best forward + backward over the reps (slowest rank), its waiting and compute, bytes sent.
typedef struct {
    double s, wait_s, compute_s, bytes;
} Figures;

static void report(const char *mode, const BenchArgs *a, int W, Figures f, Comm *world) {
    double v[4] = {f.s, f.wait_s, f.compute_s, f.bytes};
    comm_allreduce(world, v, 4, COMM_F64, COMM_MAX, "bench figures");
    log_info("mode=%s sp=%d T=%d heads=%d/%d hd=%d doc_len=%d fwd_bwd_s=%.4f wait_s=%.4f compute_s=%.4f sent_mib=%.2f\n",
             mode, W, a->T, a->H, a->Hkv, a->hd, a->doc_len, v[0], v[1], v[2], v[3] / 1048576);
}

static Figures time_ring(const BenchArgs *a, Rows *x, Comm *ring_comm, Comm *world) {
    AttnRing *ring = ring_create(ring_comm, &BACKEND_CPU, true);
    Figures best = {1e30, 0, 0, 0};
    for (int i = 0; i < a->reps; i++) {
        ring_stats_reset(ring);
        comm_barrier(world, "bench start");
        double t0 = now_seconds();
        ring_attention_forward(ring, &BACKEND_CPU, &x->s, x->out, x->lse, x->tmp, x->q, x->k, x->v, x->L, x->doc_zigzag,
                               x->doc_zigzag);
        ring_attention_backward(ring, &BACKEND_CPU, &x->s, x->dq, x->dk, x->dv, x->tmp, x->q, x->k, x->v, x->out, x->lse,
                                x->dout, x->L, x->doc_zigzag, x->doc_zigzag);
        double t = now_seconds() - t0;
        RingStats st = ring_stats(ring);
        if (t < best.s) best = (Figures){t, st.wait_s, st.compute_s, st.bytes};
    }
    ring_free(ring);
    return best;
}

static Figures time_ulysses(const BenchArgs *a, Rows *x, int degree, Comm *world) {
    CommGrid g = comm_grid(x->W);
    comm_grid_groups(&g, degree);
    AttnUlysses *u = ulysses_create(g.group, g.across, &BACKEND_CPU, true);
    AttnRows t = {.q = x->q, .k = x->k, .v = x->v, .out = x->out, .lse = x->lse, .dout = x->dout, .dq = x->dq, .dk = x->dk,
                  .dv = x->dv};
    AttnLayout lay = {.pos = x->pos, .doc = x->doc, .doc_host = x->doc, .L = x->L};
    Figures best = {1e30, 0, 0, 0};
    for (int i = 0; i < a->reps; i++) {
        ulysses_stats_reset(u);
        if (ulysses_ring(u)) ring_stats_reset(ulysses_ring(u));
        comm_barrier(world, "bench start");
        double t0 = now_seconds();
        ulysses_attention_forward(u, &x->s, &t, &lay);
        ulysses_attention_backward(u, &x->s, &t, &lay);
        double t1 = now_seconds() - t0;
        RingStats st = ulysses_stats(u), rs = ulysses_ring(u) ? ring_stats(ulysses_ring(u)) : (RingStats){0};
        // the hybrid's ring waits inside Ulysses' compute step: counted as waiting, not compute
        if (t1 < best.s) best = (Figures){t1, st.wait_s + rs.wait_s, st.compute_s - rs.wait_s, st.bytes + rs.bytes};
    }
    ulysses_free(u);
    comm_grid_free(&g);
    return best;
}

int main(int argc, char **argv) {
    cpu_exec_setup(argv);
    comm_init(&argc, &argv);
    BenchArgs a = {.T = 16384, .H = 8, .Hkv = 8, .hd = 64, .reps = 3, .doc_len = 0, .degree = 0};
    ArgSpec specs[] = {
        {"--seq-len", ARG_INT, &a.T, "global tokens per sequence"},
        {"--heads", ARG_INT, &a.H, "query heads"},
        {"--kv-heads", ARG_INT, &a.Hkv, "key/value heads"},
        {"--head-dim", ARG_INT, &a.hd, "head dimension"},
        {"--reps", ARG_INT, &a.reps, "calls per mode (the best is reported)"},
        {"--doc-len", ARG_INT, &a.doc_len, "documents of this many tokens under a document mask (0: none)"},
        {"--ulysses", ARG_INT, &a.degree, "also the hybrid with Ulysses groups of this many ranks (< sp)"},
    };
    ArgCommand cmd = {"cp_bench", "mpirun -np SP cp_bench [flags]", "Ring, Ulysses and hybrid attention, time per rank."};
    args_parse(&cmd, specs, sizeof specs / sizeof specs[0], argc, argv, NULL, 0);
    comm_set_timeout(3600);
    CommGrid g = comm_grid(comm_size(comm_world()));
    if (a.T % (2 * g.sp) != 0) comm_fail_usage_all("--seq-len %d is not divisible by 2·sp = %d", a.T, 2 * g.sp);
    if (a.reps < 1) comm_fail_usage_all("--reps %d: at least 1", a.reps);
    Rows x = rows_make(&a, g.sp, g.sp_index);
    report("ring", &a, g.sp, time_ring(&a, &x, g.ring, g.world), g.world);
    report("ulysses", &a, g.sp, time_ulysses(&a, &x, g.sp, g.world), g.world);
    if (a.degree > 0 && a.degree < g.sp) {
        char mode[32];
        snprintf(mode, sizeof mode, "hybrid%dx%d", a.degree, g.sp / a.degree);
        report(mode, &a, g.sp, time_ulysses(&a, &x, a.degree, g.world), g.world);
    }
    rows_free(&x);
    comm_grid_free(&g);
    comm_finalize();
    return 0;
}
