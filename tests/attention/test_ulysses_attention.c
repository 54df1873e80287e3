// tests/attention/test_ulysses_attention.c — per rank, Ulysses and the hybrid (O, LSE, dQ, dK, dV) equal one rank's attention over the whole sequence, for any layout and document mix.
// Run under mpiexec with W ranks: one ring of sp = W, cut into Ulysses groups of every degree that divides W (degree W:
// pure Ulysses, less: the hybrid, the ring across the groups), over zigzag, contiguous and random layouts (the hybrid's
// of its groups: the zigzag's ring, or the exchange across them). Every
// rank generates the same global input, computes the one-rank reference in position order and compares its rows; the
// cost and the timing model against the counts.
// `--gpu` runs every case on the CUDA backend against its own one-rank attention (comms wrapped: NCCL with a GPU per
// rank, host staging when ranks share one; SKIP, exit 77, without a GPU or CUDA build), `--gpu --activations bf16` with
// q, k, v stored as bf16. `--heads-error` checks the usage error for heads that do not divide (exit 2).
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
#ifdef RINGGPT_HAVE_CUDA
#include "core/backend_cuda.h"
#endif

// Where the cases run and how close they must come to the reference (max |Ulysses − reference| / max |reference| per
// tensor): the CPU, double build vs float build; the GPU, whose kernels round q, k, v and P to bf16 (the hybrid's
// ring cuts the keys into other blocks than one rank does: ~1e-2, as the ring's GPU test allows).
typedef struct {
    const Backend *be;
    ActStore store;   // q, k, v in backend memory
    double tol;
} Mode;

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

// Position x of the zigzag of W ranks of L tokens (rank j: chunk j then chunk 2W−1−j).
static int32_t zigzag_at(int W, int L, int x) {
    int j = x / L, i = x % L, c = L / 2;
    return i < c ? j * c + i : (2 * W - 1 - j) * c + i - c;
}

// pos (T): the positions of W ranks of L tokens each (D1). The hybrid's layout is the zigzag over its R groups of
// N·L tokens, each group's block cut into its members' slices: the same array.
static void make_layout(LayoutKind kind, int W, int L, Rng *g, int32_t *pos) {
    int T = W * L;
    for (int x = 0; x < T; x++) pos[x] = kind == LAY_ZIGZAG ? zigzag_at(W, L, x) : x;
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

// Where a case runs: the mode, the Ulysses object and this rank.
typedef struct {
    const Mode *m;
    AttnUlysses *u;
    int W, r;
} Ctx;

// A backend copy of `bytes` of host memory; release with be->release.
static void *on_backend(const Backend *be, const void *host, size_t bytes) {
    void *d = be->alloc(bytes, "test buffer");
    be->to_device(d, host, bytes);
    return d;
}

// q, k or v (n reals of host memory) in backend memory stored as `store` (bf16: rounded to nearest even).
static void *act_on_backend(const Backend *be, const real *host, size_t n, ActStore store) {
    if (store != ACT_BF16) return on_backend(be, host, n * sizeof(real));
    uint16_t *h = xmalloc(n * sizeof(uint16_t), "bf16");
    for (size_t i = 0; i < n; i++) {
        float f = (float)host[i];
        uint32_t b;
        memcpy(&b, &f, sizeof b);
        h[i] = (uint16_t)((b + 0x7fff + ((b >> 16) & 1)) >> 16);
    }
    void *d = on_backend(be, h, n * sizeof(uint16_t));
    free(h);
    return d;
}

// n reals of backend memory into a new host array; the backend copy is released.
static real *to_host(const Backend *be, real *d, size_t n) {
    real *h = xmalloc(n * sizeof(real), "test result");
    be->to_host(h, d, n * sizeof(real));
    be->release(d);
    return h;
}

// A (T, ·) tensor set in host memory: q, k, v, dout in, out, lse, dq, dk, dv.
typedef struct {
    real *q, *k, *v, *dout, *out, *lse, *dq, *dk, *dv;
} Tensors;

// Attention of the whole sequence in position order on one rank of the case's backend: from t's q, k, v, dout (n
// rows), t's out, lse, dq, dk, dv.
static void reference(const Backend *be, const AttnShape *s, Tensors *t, int T, const int32_t *doc) {
    size_t qn = (size_t)T * s->n_head * s->head_dim, kn = (size_t)T * s->n_kv_head * s->head_dim, hn = (size_t)T * s->n_head;
    real *q = act_on_backend(be, t->q, qn, s->qkv), *k = act_on_backend(be, t->k, kn, s->qkv);
    real *v = act_on_backend(be, t->v, kn, s->qkv), *dout = on_backend(be, t->dout, qn * sizeof(real));
    int32_t *d = doc ? on_backend(be, doc, (size_t)T * sizeof(int32_t)) : NULL;
    real *out = be->alloc(qn * sizeof(real), "out"), *lse = be->alloc(hn * sizeof(real), "lse");
    real *tmp = be->alloc(hn * sizeof(real), "tmp"), *dq = be->alloc(qn * sizeof(real), "dq");
    real *dk = be->alloc(kn * sizeof(real), "dk"), *dv = be->alloc(kn * sizeof(real), "dv");
    AttnRows rows = {.L = T, .q = q, .k = k, .v = v, .out = out, .lse = lse, .tmp = tmp, .dout = dout, .dq = dq, .dk = dk, .dv = dv};
    attention_causal_forward(be, s, &rows, &(AttnLayout){.docs = d});
    attention_causal_backward(be, s, &rows, &(AttnLayout){.docs = d});
    t->out = to_host(be, out, qn), t->lse = to_host(be, lse, hn);
    t->dq = to_host(be, dq, qn), t->dk = to_host(be, dk, kn), t->dv = to_host(be, dv, kn);
    void *all[] = {q, k, v, dout, tmp, d};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) be->release(all[i]);
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

// Ulysses on this rank's rows (host in, host out: the case's backend in between). pos NULL: the zigzag; doc (T) the
// document ids in position order, NULL for none (passed in the layout's order).
static Tensors ulysses_rows(const Ctx *c, const AttnShape *s, const Tensors *mine, int L, const int32_t *pos,
                            const int32_t *doc) {
    const Backend *be = c->m->be;
    size_t qn = (size_t)L * s->n_head * s->head_dim, kn = (size_t)L * s->n_kv_head * s->head_dim, hn = (size_t)L * s->n_head;
    real *q = act_on_backend(be, mine->q, qn, s->qkv), *k = act_on_backend(be, mine->k, kn, s->qkv);
    real *v = act_on_backend(be, mine->v, kn, s->qkv), *dout = on_backend(be, mine->dout, qn * sizeof(real));
    int T = c->W * L;
    int32_t *lay_docs = doc ? xmalloc((size_t)T * sizeof(int32_t), "docs") : NULL, *d = NULL;
    for (int x = 0; doc && x < T; x++) lay_docs[x] = doc[pos ? pos[x] : zigzag_at(c->W, L, x)];
    if (doc) d = on_backend(be, lay_docs, (size_t)T * sizeof(int32_t));
    AttnRows rows = {.L = L, .q = q, .k = k, .v = v, .dout = dout};
    rows.out = be->alloc(qn * sizeof(real), "out"), rows.lse = be->alloc(hn * sizeof(real), "lse");
    rows.dq = be->alloc(qn * sizeof(real), "dq"), rows.dk = be->alloc(kn * sizeof(real), "dk");
    rows.dv = be->alloc(kn * sizeof(real), "dv");
    AttnLayout lay = {.pos = pos, .docs = d, .docs_host = lay_docs};
    ulysses_attention_forward(c->u, s, &rows, &lay);
    ulysses_attention_backward(c->u, s, &rows, &lay);
    Tensors got = {.out = to_host(be, rows.out, qn), .lse = to_host(be, rows.lse, hn), .dq = to_host(be, rows.dq, qn),
                   .dk = to_host(be, rows.dk, kn), .dv = to_host(be, rows.dv, kn)};
    void *all[] = {q, k, v, dout, d};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (all[i]) be->release(all[i]);
    free(lay_docs);
    return got;
}

// One case on this rank: the worst relative error over O, LSE, dQ, dK, dV.
static double run_case(const Ctx *c, const AttnShape *s, int L, const int32_t *pos, const int32_t *doc, uint64_t seed) {
    int W = c->W, r = c->r, T = W * L;
    size_t qn = (size_t)L * s->n_head * s->head_dim, kn = (size_t)L * s->n_kv_head * s->head_dim, hn = (size_t)L * s->n_head;
    Rng g;
    rng_seed(&g, seed);
    Tensors ref = {.q = randn(&g, qn * W), .k = randn(&g, kn * W), .v = randn(&g, kn * W), .dout = randn(&g, qn * W)};
    reference(c->m->be, s, &ref, T, doc);
    // The zigzag of all W ranks is also the layout the caller may leave NULL (pure Ulysses, or groups of one rank)
    bool zigzag_all = true;
    for (int x = 0; x < T && zigzag_all; x++) zigzag_all = pos[x] == zigzag_at(W, L, x);
    Tensors mine = slice(&ref, s, pos + (size_t)r * L, L), got = ulysses_rows(c, s, &mine, L, zigzag_all ? NULL : pos, doc);
    double errs[5] = {rel_err(got.out, mine.out, qn, scale_of(ref.out, qn * W)),
                      rel_err(got.lse, mine.lse, hn, scale_of(ref.lse, hn * W)),
                      rel_err(got.dq, mine.dq, qn, scale_of(ref.dq, qn * W)),
                      rel_err(got.dk, mine.dk, kn, scale_of(ref.dk, kn * W)),
                      rel_err(got.dv, mine.dv, kn, scale_of(ref.dv, kn * W))};
    double worst = 0;
    for (int i = 0; i < 5; i++)
        if (!(errs[i] <= worst)) worst = errs[i];
    if (!(worst < c->m->tol))
        fprintf(stderr, "rank %d: H %d Hkv %d hd %d T %d: err O %.2e LSE %.2e dQ %.2e dK %.2e dV %.2e\n", r, s->n_head,
                s->n_kv_head, s->head_dim, T, errs[0], errs[1], errs[2], errs[3], errs[4]);
    tensors_free(&ref), tensors_free(&mine), tensors_free(&got);
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

// The mode from the command line: the CPU; `--gpu [--activations bf16]` the CUDA backend (SKIP without one).
static Mode test_mode(int argc, char **argv) {
    Mode m = {.be = &BACKEND_CPU, .store = ACT_F32, .tol = sizeof(real) == sizeof(double) ? 1e-12 : 2e-5};
    if (argc < 2 || strcmp(argv[1], "--gpu")) return m;
#ifdef RINGGPT_HAVE_CUDA
    if (cuda_device_count() > 0) {
        cuda_backend_init(cuda_local_rank(), comm_rank(comm_world()));
        bool bf16 = argc > 3 && !strcmp(argv[2], "--activations") && !strcmp(argv[3], "bf16");
        return (Mode){.be = &BACKEND_CUDA, .store = bf16 ? ACT_BF16 : ACT_F32, .tol = 3e-2};
    }
#endif
    log_info("SKIP: no CUDA device or no CUDA build (test_ulysses_attention --gpu)\n");
    comm_finalize();
    exit(77);
}

// The communicator a mode's buffers travel on: CUDA buffers need a device communicator (NCCL, or MPI with host
// staging), as train wraps its ring.
static Comm *device_comm(const Mode *m, Comm *c, const char *what) {
#ifdef RINGGPT_HAVE_CUDA
    if (m->be != &BACKEND_CPU) return comm_cuda_wrap(c, what);
#endif
    return c;
}

static void device_comm_free(Comm *c) {
#ifdef RINGGPT_HAVE_CUDA
    comm_cuda_free(c);   // a plain communicator is left to its owner
#endif
}

// Every case of one degree: pure Ulysses (degree W) over every layout of the W ranks, the hybrid over every layout of its
// groups.
static int run_degree(const Mode *m, int W, int degree, int *cases) {
    CommGrid g = comm_grid(W);
    Comm *split[2];
    comm_groups(g.ring, degree, &split[0], &split[1]);
    Comm *group = device_comm(m, split[0], "test Ulysses group"), *across = device_comm(m, split[1], "test ring across");
    AttnUlysses *u = ulysses_create(group, across, m->be, true);
    Ctx c = {.m = m, .u = u, .W = W, .r = g.sp_index};
    // (heads, kv heads, head dim): MHA, GQA with Hkv = 2 (replicated on 4 ranks), 8/2, MQA (replicated on every rank)
    const int shapes[][3] = {{4, 4, 16}, {4, 2, 16}, {8, 2, 32}, {4, 1, 32}};
    const int lens[] = {2, 70};   // T from 2·W to past a kernel tile (128)
    int failures = 0;
    for (int lk = 0; lk < LAY_COUNT; lk++)
        for (int dk = 0; dk < DOCS_COUNT; dk++)
            for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
                for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
                    int L = lens[li], T = W * L;
                    AttnShape s = {.n_head = shapes[sh][0], .n_kv_head = shapes[sh][1], .head_dim = shapes[sh][2],
                                   .qkv = m->store};
                    Rng rg;
                    rng_seed(&rg, 77 + *cases);
                    int32_t *pos = xmalloc((size_t)T * sizeof(int32_t), "layout");
                    int32_t *doc = xmalloc((size_t)T * sizeof(int32_t), "docs");
                    if (degree == W) make_layout((LayoutKind)lk, W, L, &rg, pos);
                    else make_layout((LayoutKind)lk, W / degree, degree * L, &rg, pos);   // the groups' layout
                    make_docs((DocsKind)dk, T, L, &rg, doc);
                    ulysses_stats_reset(u);
                    const int32_t *docs = dk == DOCS_NONE ? NULL : doc;
                    double e = run_case(&c, &s, L, pos, docs, 1000 + 17 * (uint64_t)*cases);
                    if (!cost_agrees(u, &s, degree, L, docs, T)) e = INFINITY;
                    comm_allreduce(g.world, &e, 1, COMM_F64, COMM_MAX, "test error max");
                    bool ok = e < m->tol;
                    failures += !ok;
                    log_info("%s sp=%d ulysses=%d %s %s H=%d Hkv=%d hd=%d T=%d max rel err %.2e\n", ok ? "ok  " : "FAIL", W,
                             degree, LAYOUT_NAMES[lk], DOCS_NAMES[dk], s.n_head, s.n_kv_head, s.head_dim, T, e);
                    free(pos), free(doc);
                    (*cases)++;
                }
    ulysses_free(u);
    device_comm_free(group), device_comm_free(across);
    comm_free(split[0]), comm_free(split[1]);
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
    Mode m = test_mode(argc, argv);
    int W = comm_size(comm_world()), failures = check_model(), cases = 0;
    for (int degree = 1; degree <= W; degree++)
        if (W % degree == 0) failures += run_degree(&m, W, degree, &cases);
    log_info("%d cases, %d failed (%s on %s, q, k, v %s)\n", cases, failures, REAL_NAME, m.be->name,
             m.store == ACT_BF16 ? "bf16" : "real");
    comm_finalize();
    return failures ? 1 : 0;
}
