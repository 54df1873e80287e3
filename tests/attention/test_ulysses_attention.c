// tests/attention/test_ulysses_attention.c — per rank, Ulysses and the hybrid (O, LSE, dQ, dK, dV) equal one rank's attention over the whole sequence, for any layout and document mix.
// Run under mpiexec with W ranks: one ring of sp = W, cut into Ulysses groups of every degree that divides W (degree W:
// pure Ulysses over zigzag, contiguous and random layouts; less: the hybrid, the zigzag ring across the groups). Every
// rank generates the same global input, computes the one-rank reference in position order and compares its rows; the
// cost and the timing model against the counts.
// `test_ulysses_attention --heads-error` checks the usage error for heads that do not divide (exit 2).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "attention/ulysses.h"
#include "core/backend.h"
#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "model/ops.h"

// Tolerance on max |Ulysses − reference| / max |reference| per tensor: double build vs float build.
static const double TOL = sizeof(real) == sizeof(double) ? 1e-12 : 2e-5;

typedef enum { LAY_ZIGZAG, LAY_CONTIGUOUS, LAY_RANDOM, LAY_COUNT } LayoutKind;
static const char *const LAYOUT_NAMES[] = {"zigzag", "contiguous", "random"};
typedef enum { DOCS_NONE, DOCS_ONE_TOKEN, DOCS_CROSSING, DOCS_SHORT, DOCS_COUNT } DocsKind;
static const char *const DOCS_NAMES[] = {"no-mask", "one-token-doc", "doc-crossing-all", "all-short"};

static real *randn(Rng *g, size_t n) {
    real *x = xmalloc(n * sizeof(real), "test tensor");
    for (size_t i = 0; i < n; i++) x[i] = (real)rng_normal(g);
    return x;
}

static int cmp_int32(const void *a, const void *b) { return *(const int32_t *)a - *(const int32_t *)b; }

// pos (T): the positions of W ranks of L tokens each (D1). The hybrid's layout is the zigzag over its R groups of
// N·L tokens, each group's block cut into its members' slices: the same array.
static void make_layout(LayoutKind kind, int W, int L, Rng *g, int32_t *pos) {
    int T = W * L, c = T / (2 * W);
    for (int j = 0; j < W; j++)
        for (int i = 0; i < L; i++) {
            int32_t *p = pos + (size_t)j * L + i;
            if (kind == LAY_ZIGZAG) *p = i < c ? j * c + i : (2 * W - 1 - j) * c + i - c;
            else *p = j * L + i;
        }
    if (kind != LAY_RANDOM) return;
    for (int i = T - 1; i > 0; i--) {   // a random permutation, then each rank's positions ascending
        int k = (int)rng_below(g, (uint64_t)i + 1);
        int32_t t = pos[i];
        pos[i] = pos[k], pos[k] = t;
    }
    for (int j = 0; j < W; j++) qsort(pos + (size_t)j * L, L, sizeof(int32_t), cmp_int32);
}

// doc (T), position order: a document of one token among others; one document over every rank but the first and
// last token; documents shorter than half a rank's share.
static void make_docs(DocsKind kind, int T, int L, Rng *g, int32_t *doc) {
    int id = 0, left = 0;
    for (int p = 0; p < T; p++) {
        bool start = false;
        if (kind == DOCS_ONE_TOKEN) start = p == 3 || p == 4 || p == T / 2 + 1;
        if (kind == DOCS_CROSSING) start = p == 1 || p == T - 1;
        if (kind == DOCS_SHORT && left-- <= 0) start = true, left = (int)rng_below(g, (uint64_t)(L / 2 > 1 ? L / 2 : 1));
        id += start && p > 0;
        doc[p] = id;
    }
}

// The rows of a (T, width) tensor at positions pos[0..n) (a rank's rows).
static real *rows_at(const real *x, size_t width, const int32_t *pos, int n) {
    real *y = xmalloc((size_t)n * width * sizeof(real), "rows");
    for (int i = 0; i < n; i++) memcpy(y + i * width, x + (size_t)pos[i] * width, width * sizeof(real));
    return y;
}

// max |x| over the whole sequence's tensor, at least 1 (inputs are N(0, 1)): the scale of its errors. A rank's rows, or
// every row, may be ~0: one-token documents have dQ = dK = 0 up to rounding noise.
static double scale_of(const real *x, size_t n) {
    double m = 1;
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]) && fabs((double)x[i]) > m) m = fabs((double)x[i]);
    return m;
}

// max |a − b| over the rank's rows vs the tensor's scale; -inf == -inf counts as equal (LSE of empty rows).
static double rel_err(const real *a, const real *b, size_t n, double scale) {
    double d = 0;
    for (size_t i = 0; i < n; i++) {
        if (isinf(a[i]) && isinf(b[i]) && a[i] == b[i]) continue;
        double e = fabs((double)a[i] - (double)b[i]);
        if (!(e <= d)) d = e;   // NaN propagates as a failure
    }
    return d / scale;
}

// A (T, ·) tensor set and the one-rank reference: q, k, v, dout in, out, lse, dq, dk, dv.
typedef struct {
    real *q, *k, *v, *dout, *out, *lse, *dq, *dk, *dv;
} Tensors;

static Tensors reference(const AttnShape *s, int T, const int32_t *doc, Rng *g) {
    const Backend *be = &BACKEND_CPU;
    size_t qn = (size_t)T * s->n_head * s->head_dim, kn = (size_t)T * s->n_kv_head * s->head_dim, hn = (size_t)T * s->n_head;
    Tensors t = {.q = randn(g, qn), .k = randn(g, kn), .v = randn(g, kn), .dout = randn(g, qn)};
    t.out = xmalloc(qn * sizeof(real), "out"), t.lse = xmalloc(hn * sizeof(real), "lse");
    t.dq = xmalloc(qn * sizeof(real), "dq"), t.dk = xmalloc(kn * sizeof(real), "dk"), t.dv = xmalloc(kn * sizeof(real), "dv");
    real *tmp = xmalloc(hn * sizeof(real), "tmp");
    attention_causal_forward(be, s, t.out, t.lse, tmp, t.q, t.k, t.v, T, doc);
    attention_causal_backward(be, s, t.dq, t.dk, t.dv, tmp, t.q, t.k, t.v, t.out, t.lse, t.dout, T, doc);
    free(tmp);
    return t;
}

// The rank's rows of every tensor (the reference's outputs too: the expected values).
static Tensors slice(const Tensors *t, const AttnShape *s, const int32_t *pos, int L) {
    size_t qw = (size_t)s->n_head * s->head_dim, kw = (size_t)s->n_kv_head * s->head_dim, hw = s->n_head;
    return (Tensors){rows_at(t->q, qw, pos, L),  rows_at(t->k, kw, pos, L),  rows_at(t->v, kw, pos, L),
                     rows_at(t->dout, qw, pos, L), rows_at(t->out, qw, pos, L), rows_at(t->lse, hw, pos, L),
                     rows_at(t->dq, qw, pos, L), rows_at(t->dk, kw, pos, L),  rows_at(t->dv, kw, pos, L)};
}

static void tensors_free(Tensors *t) {
    real *all[] = {t->q, t->k, t->v, t->dout, t->out, t->lse, t->dq, t->dk, t->dv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

// One case on this rank: the worst relative error over O, LSE, dQ, dK, dV.
static double run_case(AttnUlysses *u, int W, int r, const AttnShape *s, int L, const int32_t *pos, const int32_t *doc,
                       uint64_t seed) {
    int T = W * L;
    size_t qn = (size_t)L * s->n_head * s->head_dim, kn = (size_t)L * s->n_kv_head * s->head_dim, hn = (size_t)L * s->n_head;
    Rng g;
    rng_seed(&g, seed);
    Tensors ref = reference(s, T, doc, &g), mine = slice(&ref, s, pos + (size_t)r * L, L);
    real *out = xmalloc(qn * sizeof(real), "out"), *lse = xmalloc(hn * sizeof(real), "lse");
    real *dq = xmalloc(qn * sizeof(real), "dq"), *dk = xmalloc(kn * sizeof(real), "dk"), *dv = xmalloc(kn * sizeof(real), "dv");
    AttnRows rows = {.q = mine.q, .k = mine.k, .v = mine.v, .out = out, .lse = lse, .dout = mine.dout, .dq = dq, .dk = dk,
                     .dv = dv};
    AttnLayout lay = {.pos = pos, .doc = doc, .doc_host = doc, .L = L};
    ulysses_attention_forward(u, s, &rows, &lay);
    ulysses_attention_backward(u, s, &rows, &lay);
    size_t Tq = qn * W, Tk = kn * W, Th = hn * W;
    double errs[5] = {rel_err(out, mine.out, qn, scale_of(ref.out, Tq)), rel_err(lse, mine.lse, hn, scale_of(ref.lse, Th)),
                      rel_err(dq, mine.dq, qn, scale_of(ref.dq, Tq)), rel_err(dk, mine.dk, kn, scale_of(ref.dk, Tk)),
                      rel_err(dv, mine.dv, kn, scale_of(ref.dv, Tk))};
    double worst = 0;
    for (int i = 0; i < 5; i++)
        if (!(errs[i] <= worst)) worst = errs[i];
    if (!(worst < TOL))
        fprintf(stderr, "rank %d: H %d Hkv %d hd %d T %d: err O %.2e LSE %.2e dQ %.2e dK %.2e dV %.2e\n", r, s->n_head,
                s->n_kv_head, s->head_dim, T, errs[0], errs[1], errs[2], errs[3], errs[4]);
    tensors_free(&ref), tensors_free(&mine);
    free(out), free(lse), free(dq), free(dk), free(dv);
    return worst;
}

// The call's bytes (counted by the all-to-alls) and, for pure Ulysses (N·L = T), FLOPs (visible pairs counted one by
// one) are what ulysses_cost says.
static bool cost_agrees(AttnUlysses *u, const AttnShape *s, int N, int L, const int32_t *doc, int T) {
    RingStats st = ulysses_stats(u);
    UlyssesCost f = ulysses_cost(s, N, L, doc, false), b = ulysses_cost(s, N, L, doc, true);
    double pairs = 0;
    for (int i = 0; i < T; i++)
        for (int j = 0; j <= i; j++) pairs += !doc || doc[i] == doc[j];
    double want_flops = pairs * (s->n_head / N) * s->head_dim * 4;
    bool ok = st.bytes == (f.link_bytes + b.link_bytes) * (N - 1) && st.exchanges == f.exchanges + b.exchanges &&
              (N * L < T || (f.flops == want_flops && b.flops == want_flops * 2.5));
    if (!ok)
        fprintf(stderr, "cost: sent %.0f bytes in %ld all-to-alls, cost says %.0f in %d; flops %.0f, counted %.0f\n", st.bytes,
                st.exchanges, (f.link_bytes + b.link_bytes) * (N - 1), f.exchanges + b.exchanges, f.flops, want_flops);
    return ok;
}

// The timing model: no transfer on one rank; the messages to degree − 1 peers at the link's rate, or the host's where
// that is slower, after a latency per all-to-all; the compute at the attention rate; nothing hidden.
static int check_model(void) {
    AttnShape s = {.n_head = 8, .n_kv_head = 2, .head_dim = 64};
    RingCosts c = {.attn_flops = 1e10, .link_bytes_per_s = 1e8, .latency_s = 1e-4};
    int bad = 0;
    for (int N = 1; N <= 4; N *= 2)
        for (int back = 0; back < 2; back++) {
            UlyssesCost k = ulysses_cost(&s, N, 1024 / N, NULL, back);
            RingTiming t = ulysses_model(&s, N, 1024 / N, NULL, &c, back);
            double wire = N > 1 ? k.exchanges * c.latency_s + k.link_bytes * (N - 1) / c.link_bytes_per_s : 0;
            RingCosts slow_host = c;
            slow_host.host_bytes_per_s = c.link_bytes_per_s / 2;
            RingTiming h = ulysses_model(&s, N, 1024 / N, NULL, &slow_host, back);
            bool ok = t.compute_s == k.flops / c.attn_flops && fabs(t.wait_s - wire) <= 1e-12 * (1 + wire) &&
                      t.seconds == t.compute_s + t.wait_s && t.bytes == k.link_bytes * (N - 1) &&
                      (N == 1 ? h.wait_s == 0 : fabs(h.wait_s - (wire + t.bytes / c.link_bytes_per_s)) <= 1e-9);
            if (!ok) fprintf(stderr, "FAIL model N=%d backward=%d: wire %.6g (want %.6g), with a slow host %.6g\n", N, back,
                             t.wait_s, wire, h.wait_s);
            bad += !ok;
        }
    return bad;
}

// Every case of one degree: pure Ulysses (degree W) over every layout, the hybrid over the zigzag of its groups.
static int run_degree(int W, int degree, int *cases) {
    CommGrid g = comm_grid(W);
    comm_grid_groups(&g, degree);
    AttnUlysses *u = ulysses_create(g.group, g.across, &BACKEND_CPU, true);
    // (heads, kv heads, head dim): MHA, GQA with Hkv = 2 (replicated on 4 ranks), 8/2, MQA (replicated on every rank)
    const int shapes[][3] = {{4, 4, 16}, {4, 2, 16}, {8, 2, 32}, {4, 1, 32}};
    const int lens[] = {2, 70};   // T from 2·W to past a kernel tile (128)
    int failures = 0;
    for (int lk = 0; lk < (degree == W ? LAY_COUNT : 1); lk++)
        for (int dk = 0; dk < DOCS_COUNT; dk++)
            for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
                for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
                    int L = lens[li], T = W * L;
                    AttnShape s = {.n_head = shapes[sh][0], .n_kv_head = shapes[sh][1], .head_dim = shapes[sh][2]};
                    Rng rg;
                    rng_seed(&rg, 77 + *cases);
                    int32_t *pos = xmalloc((size_t)T * sizeof(int32_t), "layout"), *doc = xmalloc((size_t)T * sizeof(int32_t), "docs");
                    make_layout((LayoutKind)lk, W / degree, degree * L, &rg, pos);
                    make_docs((DocsKind)dk, T, L, &rg, doc);
                    ulysses_stats_reset(u);
                    const int32_t *docs = dk == DOCS_NONE ? NULL : doc;
                    double e = run_case(u, W, g.sp_index, &s, L, pos, docs, 1000 + 17 * (uint64_t)*cases);
                    if (!cost_agrees(u, &s, degree, L, docs, T)) e = INFINITY;
                    comm_allreduce(g.world, &e, 1, COMM_F64, COMM_MAX, "test error max");
                    bool ok = e < TOL;
                    failures += !ok;
                    log_info("%s sp=%d ulysses=%d %s %s H=%d Hkv=%d hd=%d T=%d max rel err %.2e\n", ok ? "ok  " : "FAIL", W,
                             degree, LAYOUT_NAMES[lk], DOCS_NAMES[dk], s.n_head, s.n_kv_head, s.head_dim, T, e);
                    free(pos), free(doc);
                    (*cases)++;
                }
    ulysses_free(u);
    comm_grid_free(&g);
    return failures;
}

int main(int argc, char **argv) {
    comm_init(&argc, &argv);
    comm_set_timeout(60);
    if (argc > 1 && !strcmp(argv[1], "--heads-error")) {   // 6 heads over 4 ranks: a usage error naming the fix
        ulysses_check_shape(&(AttnShape){.n_head = 6, .n_kv_head = 2, .head_dim = 16}, 4);
        return 0;
    }
    int W = comm_size(comm_world()), failures = check_model(), cases = 0;
    for (int degree = 1; degree <= W; degree++)
        if (W % degree == 0) failures += run_degree(W, degree, &cases);
    log_info("%d cases, %d failed (%s)\n", cases, failures, REAL_NAME);
    comm_finalize();
    return failures ? 1 : 0;
}
