// bench/cp_bench.c — one layer's attention forward and backward across sp = world ranks: the ring, Ulysses and the hybrid side by side (time, wait, bytes per rank).
// Usage: mpirun -np SP cp_bench [--seq-len T] [--heads H] [--kv-heads K] [--head-dim D] [--reps N] [--doc-len N]
//        [--ulysses N]
// Rank 0 prints one line of key=value figures per mode (max over ranks, best of --reps calls, the modes in turns): the
// zigzag ring, pure Ulysses (degree sp) and, with --ulysses N < sp, the hybrid of groups of N ranks.
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

// pos (ranks·per): the zigzag of `ranks` ranks of `per` tokens each (rank j: chunks j and 2·ranks − 1 − j).
static void zigzag(int ranks, int per, int32_t *pos) {
    int c = per / 2;
    for (int j = 0; j < ranks; j++)
        for (int i = 0; i < per; i++) pos[j * per + i] = i < c ? j * c + i : (2 * ranks - 1 - j) * c + i - c;
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
    zigzag(W, x.L, x.pos);
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

// One mode: the ring (ring != NULL) or Ulysses over groups of `degree` ranks (the hybrid when degree < sp, its rows
// placed zigzag over its groups: the same rows, other positions), and its best figures so far (slowest rank): forward
// + backward, waiting, compute, bytes sent.
typedef struct {
    char name[32];
    AttnRing *ring;
    AttnUlysses *u;
    CommGrid g;
    Comm *split[2];        // Ulysses: the group and the ring across the groups
    int32_t *pos, *docs;   // Ulysses: the layout and its rows' document ids in that order
    double s, wait_s, compute_s, bytes;
} Mode;

static Mode mode_ulysses(const Rows *x, const BenchArgs *a, int degree) {
    Mode m = {.g = comm_grid(x->W), .s = 1e30};
    snprintf(m.name, sizeof m.name, degree == x->W ? "ulysses" : "hybrid%dx%d", degree, x->W / degree);
    comm_groups(m.g.ring, degree, &m.split[0], &m.split[1]);
    m.u = ulysses_create(m.split[0], m.split[1], &BACKEND_CPU, true);
    m.pos = xmalloc((size_t)a->T * sizeof(int32_t), "layout");
    zigzag(x->W / degree, degree * x->L, m.pos);
    if (x->doc) {
        m.docs = xmalloc((size_t)a->T * sizeof(int32_t), "docs");
        for (int i = 0; i < a->T; i++) m.docs[i] = x->doc[m.pos[i]];
    }
    return m;
}

static void mode_free(Mode *m) {
    ring_free(m->ring);
    ulysses_free(m->u);
    free(m->pos), free(m->docs);
    if (m->u) comm_free(m->split[0]), comm_free(m->split[1]), comm_grid_free(&m->g);
}

// One forward and backward of mode m on the rows; the best call so far is kept.
static void mode_call(Mode *m, Rows *x, Comm *world) {
    if (m->ring) ring_stats_reset(m->ring);
    if (m->u) ulysses_stats_reset(m->u);
    AttnRing *ring = m->ring ? m->ring : m->u ? ulysses_ring(m->u) : NULL;
    if (ring && m->u) ring_stats_reset(ring);
    comm_barrier(world, "bench start");
    double t0 = now_seconds();
    AttnRows rows = {.L = x->L, .q = x->q, .k = x->k, .v = x->v, .out = x->out, .lse = x->lse, .tmp = x->tmp, .dout = x->dout,
                  .dq = x->dq, .dk = x->dk, .dv = x->dv};
    if (m->ring) {
        AttnLayout zz = {.docs = x->doc_zigzag, .docs_host = x->doc_zigzag};
        ring_attention_forward(m->ring, &BACKEND_CPU, &x->s, &rows, &zz);
        ring_attention_backward(m->ring, &BACKEND_CPU, &x->s, &rows, &zz);
    } else {
        AttnLayout lay = {.pos = m->pos, .docs = m->docs, .docs_host = m->docs};
        ulysses_attention_forward(m->u, &x->s, &rows, &lay);
        ulysses_attention_backward(m->u, &x->s, &rows, &lay);
    }
    double t = now_seconds() - t0;
    RingStats st = m->u ? ulysses_stats(m->u) : ring_stats(m->ring), rs = ring && m->u ? ring_stats(ring) : (RingStats){0};
    // the hybrid's ring waits inside Ulysses' compute step: counted as waiting, not compute
    if (t >= m->s) return;
    m->s = t, m->wait_s = st.wait_s + rs.wait_s, m->compute_s = st.compute_s - rs.wait_s, m->bytes = st.bytes + rs.bytes;
}

static void report(const Mode *m, const BenchArgs *a, int W, Comm *world) {
    double v[4] = {m->s, m->wait_s, m->compute_s, m->bytes};
    comm_allreduce(world, v, 4, COMM_F64, COMM_MAX, "bench figures");
    log_info("mode=%s sp=%d T=%d heads=%d/%d hd=%d doc_len=%d fwd_bwd_s=%.4f wait_s=%.4f compute_s=%.4f sent_mib=%.2f\n",
             m->name, W, a->T, a->H, a->Hkv, a->hd, a->doc_len, v[0], v[1], v[2], v[3] / 1048576);
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
    Mode modes[3] = {{.name = "ring", .ring = ring_create(g.ring, &BACKEND_CPU, true), .s = 1e30}, mode_ulysses(&x, &a, g.sp)};
    int n = 2;
    if (a.degree > 0 && a.degree < g.sp) modes[n++] = mode_ulysses(&x, &a, a.degree);
    for (int rep = 0; rep < a.reps; rep++)   // the modes in turns, so that a change of the machine's load hits them alike
        for (int i = 0; i < n; i++) mode_call(&modes[i], &x, g.world);
    for (int i = 0; i < n; i++) report(&modes[i], &a, g.sp, g.world), mode_free(&modes[i]);
    rows_free(&x);
    comm_grid_free(&g);
    comm_finalize();
    return 0;
}
