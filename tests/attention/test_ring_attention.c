// tests/attention/test_ring_attention.c — per rank, ring attention (O, LSE, dQ, dK, dV) equals single-rank attention, under the zigzag and any layout.
// Run under mpiexec with N ranks: one ring of sp = N. Every rank generates the same global input and layout, computes
// the single-rank reference on it in position order, runs the ring on its rows of the layout and compares them. Layouts
// other than the zigzag run the pairwise exchange: it must send exactly the rows their receivers read.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "attention/ring.h"
#include "core/backend.h"
#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "model/ops.h"

// Tolerance on max |ring − reference| / max |reference| per tensor: double build vs float build.
static const double TOL = sizeof(real) == sizeof(double) ? 1e-11 : 2e-5;

static real *randn(Rng *g, size_t n) {
    real *x = xmalloc(n * sizeof(real), "test tensor");
    for (size_t i = 0; i < n; i++) x[i] = (real)rng_normal(g);
    return x;
}

// The rows of a (T, width) tensor at this rank's positions pos (L).
static real *rows_at(const real *x, int width, const int32_t *pos, int L) {
    real *y = xmalloc((size_t)L * width * sizeof(real), "slice");
    for (int i = 0; i < L; i++) memcpy(y + (size_t)i * width, x + (size_t)pos[i] * width, (size_t)width * sizeof(real));
    return y;
}

// max |a − b| over the rows vs max |b|; -inf == -inf counts as equal (LSE of empty rows).
static double rel_err(const real *a, const real *b, size_t n) {
    double d = 0, m = 1e-30;
    for (size_t i = 0; i < n; i++) {
        if (isinf(a[i]) && isinf(b[i]) && a[i] == b[i]) continue;
        double e = fabs((double)a[i] - (double)b[i]);
        if (!(e <= d)) d = e;   // NaN propagates as a failure
        if (fabs((double)b[i]) > m) m = fabs((double)b[i]);
    }
    return d / m;
}

// One ring's forward and backward on this rank's rows: o, lse (L rows), dq, dk, dv.
typedef struct {
    real *o, *lse, *dq, *dk, *dv;
} Grads;

static Grads ring_run(AttnRing *ring, const AttnShape *s, int L, const real *lq, const real *lk, const real *lv,
                      const real *ldo, const AttnLayout *lay) {
    const Backend *be = &BACKEND_CPU;
    size_t qn = (size_t)L * s->n_head * s->head_dim, kn = (size_t)L * s->n_kv_head * s->head_dim, ln = (size_t)L * s->n_head;
    Grads g = {xmalloc(qn * sizeof(real), "o"), xmalloc(ln * sizeof(real), "lse"), xmalloc(qn * sizeof(real), "dq"),
               xmalloc(kn * sizeof(real), "dk"), xmalloc(kn * sizeof(real), "dv")};
    real *tmp = xmalloc(ln * sizeof(real), "tmp");
    AttnRows t = {.L = L, .q = lq, .k = lk, .v = lv, .out = g.o, .lse = g.lse, .tmp = tmp, .dout = ldo, .dq = g.dq, .dk = g.dk,
                  .dv = g.dv};
    ring_attention_forward(ring, be, s, &t, lay);
    ring_attention_backward(ring, be, s, &t, lay);
    free(tmp);
    return g;
}

static bool same_bits(const AttnShape *s, int L, Grads a, Grads b) {
    size_t qn = (size_t)L * s->n_head * s->head_dim, kn = (size_t)L * s->n_kv_head * s->head_dim, ln = (size_t)L * s->n_head;
    return !memcmp(a.o, b.o, qn * sizeof(real)) && !memcmp(a.lse, b.lse, ln * sizeof(real)) &&
           !memcmp(a.dq, b.dq, qn * sizeof(real)) && !memcmp(a.dk, b.dk, kn * sizeof(real)) &&
           !memcmp(a.dv, b.dv, kn * sizeof(real));
}

static void grads_free(Grads g) { free(g.o), free(g.lse), free(g.dq), free(g.dk), free(g.dv); }

// One sequence of W·L tokens on the ring: rank j holds positions pos + j·L; doc (T) each position's document, or NULL.
typedef struct {
    int W, L;
    const int32_t *pos;
    const int32_t *doc;
    const char *name;   // the layout and documents, for the failure line
} Case;

// Rows of rank `owner` that rank `reader` reads, counted the slow way: a key is read by a rank that holds a position
// after it in the same document.
static long rows_read(const Case *c, int owner, int reader) {
    long n = 0;
    for (int i = 0; i < c->L; i++) {
        int p = c->pos[(size_t)owner * c->L + i];
        bool read = false;
        for (int t = 0; t < c->L && !read; t++) {
            int x = c->pos[(size_t)reader * c->L + t];
            read = x > p && (!c->doc || c->doc[x] == c->doc[p]);
        }
        n += read;
    }
    return n;
}

// True when the layout is the zigzag (the ring's own path).
static bool zigzag_layout(const Case *c) {
    int h = c->L / 2;
    for (int j = 0; j < c->W; j++)
        for (int i = 0; i < c->L; i++)
            if (c->pos[(size_t)j * c->L + i] != (i < h ? j * h + i : (2 * c->W - 1 - j) * h + i - h)) return false;
    return c->W == 1 || c->L % 2 == 0;
}

// What one forward + backward of the ring sent, against the serial baseline's run of the same rows: the same pieces and
// bytes (its meetings before hops are neither), lag only in the baseline. The zigzag's ring sends every block on
// (sp − 1 hops of K|V forward, of K|V and dK|dV backward); the exchange sends the bytes the layout's reads need, no
// more: a K|V row to each rank that reads it twice (forward, backward), and the dK|dV of every row read from another
// rank back (rows of 2·Hkv·hd reals either way on the CPU).
static bool stats_right(RingStats st, RingStats ss, const Case *c, int r, const AttnShape *s, bool zigzag) {
    bool ok = ss.exchanges == st.exchanges && ss.bytes == st.bytes && st.lag_s == 0 && ss.lag_s >= 0;
    if (!ok)
        fprintf(stderr, "rank %d: %s: serial %ld pieces %.0f bytes lag %.3g s, overlapped %ld pieces %.0f bytes lag %.3g s\n",
                r, c->name, ss.exchanges, ss.bytes, ss.lag_s, st.exchanges, st.bytes, st.lag_s);
    long out = 0, in = 0;
    for (int q = 0; q < c->W; q++) out += q == r ? 0 : rows_read(c, r, q), in += q == r ? 0 : rows_read(c, q, r);
    if (zigzag) out = in = (long)(c->W - 1) * c->L;
    double want = (2.0 * out + in) * 2.0 * s->n_kv_head * s->head_dim * sizeof(real);
    if (st.bytes != want)
        fprintf(stderr, "rank %d: %s: %.0f bytes sent, %s %.0f\n", r, c->name, st.bytes,
                zigzag ? "the ring sends" : "the rows read need", want);
    return ok && st.bytes == want;
}

// One case: returns the worst relative error over O, LSE, dQ, dK, dV on this rank (infinite when the serial baseline
// differs from the overlapped run in any bit or in what it sent, the exchange's bytes differ from what is read, or the
// zigzag given as positions differs in any bit from the zigzag given as NULL).
static double run_case(AttnRing *ring, AttnRing *serial, const Case *c, int r, int H, int Hkv, int hd, uint64_t seed) {
    const Backend *be = &BACKEND_CPU;
    AttnShape s = {.n_head = H, .n_kv_head = Hkv, .head_dim = hd};
    int W = c->W, L = c->L, T = W * L, qw = H * hd, kw = Hkv * hd;
    Rng g;
    rng_seed(&g, seed);
    real *q = randn(&g, (size_t)T * qw), *k = randn(&g, (size_t)T * kw), *v = randn(&g, (size_t)T * kw);
    real *dout = randn(&g, (size_t)T * qw);
    // reference on the whole sequence, in position order
    real *o = xmalloc((size_t)T * qw * sizeof(real), "o"), *lse = xmalloc((size_t)T * H * sizeof(real), "lse");
    real *tmp = xmalloc((size_t)T * H * sizeof(real), "tmp");
    real *dq = xmalloc((size_t)T * qw * sizeof(real), "dq"), *dk = xmalloc((size_t)T * kw * sizeof(real), "dk");
    real *dv = xmalloc((size_t)T * kw * sizeof(real), "dv");
    AttnRows whole = {.L = T, .q = q, .k = k, .v = v, .out = o, .lse = lse, .tmp = tmp, .dout = dout, .dq = dq, .dk = dk, .dv = dv};
    attention_causal_forward(be, &s, &whole, &(AttnLayout){.docs = c->doc});
    attention_causal_backward(be, &s, &whole, &(AttnLayout){.docs = c->doc});
    // the ring on this rank's rows of the layout
    const int32_t *mine = c->pos + (size_t)r * L;
    int32_t *ldocs = xmalloc((size_t)T * sizeof(int32_t), "layout docs");   // every rank's ids, in layout order
    for (int i = 0; i < T && c->doc; i++) ldocs[i] = c->doc[c->pos[i]];
    AttnLayout lay = {.pos = c->pos, .docs = c->doc ? ldocs : NULL, .docs_host = c->doc ? ldocs : NULL};
    real *lq = rows_at(q, qw, mine, L), *lk = rows_at(k, kw, mine, L), *lv = rows_at(v, kw, mine, L);
    real *ldo = rows_at(dout, qw, mine, L);
    ring_stats_reset(ring);
    ring_stats_reset(serial);
    Grads got = ring_run(ring, &s, L, lq, lk, lv, ldo, &lay), base = ring_run(serial, &s, L, lq, lk, lv, ldo, &lay);
    bool zz = zigzag_layout(c), stats_ok = stats_right(ring_stats(ring), ring_stats(serial), c, r, &s, zz);
    real *eo = rows_at(o, qw, mine, L), *else_ = rows_at(lse, H, mine, L);
    real *edq = rows_at(dq, qw, mine, L), *edk = rows_at(dk, kw, mine, L), *edv = rows_at(dv, kw, mine, L);
    double errs[5] = {rel_err(got.o, eo, (size_t)L * qw), rel_err(got.lse, else_, (size_t)L * H),
                      rel_err(got.dq, edq, (size_t)L * qw), rel_err(got.dk, edk, (size_t)L * kw),
                      rel_err(got.dv, edv, (size_t)L * kw)};
    double worst = stats_ok ? 0 : INFINITY;
    for (int i = 0; i < 5; i++)
        if (!(errs[i] <= worst)) worst = errs[i];
    if (!same_bits(&s, L, got, base)) {
        fprintf(stderr, "rank %d: %s H %d hd %d T %d: the serial baseline (--ring-overlap=false) differs\n", r, c->name, H, hd, T);
        worst = INFINITY;
    }
    grads_free(base);
    if (zz) {   // the zigzag as positions runs today's ring: the same bits as with no positions
        AttnLayout none = {.docs = lay.docs, .docs_host = lay.docs_host};
        Grads ring_path = ring_run(ring, &s, L, lq, lk, lv, ldo, &none);
        if (!same_bits(&s, L, got, ring_path)) {
            fprintf(stderr, "rank %d: %s: the zigzag's positions did not run the ring\n", r, c->name);
            worst = INFINITY;
        }
        grads_free(ring_path);
    }
    if (!(worst < TOL))
        fprintf(stderr, "rank %d: %s H %d Hkv %d hd %d T %d: err O %.2e LSE %.2e dQ %.2e dK %.2e dV %.2e\n", r, c->name, H,
                Hkv, hd, T, errs[0], errs[1], errs[2], errs[3], errs[4]);
    grads_free(got);
    real *all[] = {q, k, v, dout, o, lse, tmp, dq, dk, dv, lq, lk, lv, ldo, eo, else_, edq, edk, edv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    free(ldocs);
    return worst;
}

// ---- the cases' layouts and documents (the same on every rank: seeded) ----

typedef enum { LAY_ZIGZAG, LAY_CONTIGUOUS, LAY_ROUND_ROBIN, LAY_RANDOM, LAY_WHOLE_DOCS, N_LAYOUTS } LayoutKind;
static const char *const LAYOUT_NAMES[] = {"zigzag", "contiguous", "round-robin", "random", "whole-docs"};
typedef enum { DOCS_NONE, DOCS_ACROSS, DOCS_MIXED, DOCS_SHORT, N_MIXES } DocMix;
static const char *const MIX_NAMES[] = {"one document", "a document across every rank", "mixed documents",
                                        "documents shorter than L/2"};

// Each position's document (T), or NULL for one document. ACROSS: a one-token document, then one over every rank's
// share in every layout, then two short ones; MIXED: lengths 1..2L (one-token documents among them); SHORT: 1..L/2−1.
static int32_t *make_docs(DocMix mix, int T, int L, Rng *g) {
    if (mix == DOCS_NONE) return NULL;
    int32_t *doc = xmalloc((size_t)T * sizeof(int32_t), "documents");
    int d = 0, left = 0;
    for (int p = 0; p < T; p++, left--) {
        if (mix == DOCS_ACROSS) left = 1, d = p == 0 ? 0 : p < T - 2 ? 1 : p - T + 4;
        else if (left == 0) {
            int most = mix == DOCS_MIXED ? 2 * L : (L / 2 > 1 ? L / 2 - 1 : 1);
            left = 1 + (int)rng_below(g, (uint64_t)most), d += p > 0;
        }
        doc[p] = d;
    }
    return doc;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

// The positions each rank holds (W, L), ascending per rank. WHOLE_DOCS keeps documents together as a placement by cost
// would: documents in a random order, filling the ranks one after the other (one spans two ranks where it meets the end
// of a rank's share).
static int32_t *make_layout(LayoutKind kind, int W, int L, const int32_t *doc, Rng *g) {
    int T = W * L, h = L / 2;
    int32_t *pos = xmalloc((size_t)T * sizeof(int32_t), "layout"), *order = xmalloc((size_t)T * sizeof(int32_t), "order");
    for (int i = 0; i < T; i++) order[i] = i;
    if (kind == LAY_RANDOM)
        for (int i = T - 1; i > 0; i--) {
            int j = (int)rng_below(g, (uint64_t)i + 1);
            int32_t t = order[i];
            order[i] = order[j], order[j] = t;
        }
    if (kind == LAY_WHOLE_DOCS) {   // shuffle whole documents: the start of each, swapped, then written out in turn
        int n = 0, *starts = xmalloc(((size_t)T + 1) * sizeof(int), "starts");
        for (int p = 0; p < T; p++)
            if (p == 0 || (doc && doc[p] != doc[p - 1])) starts[n++] = p;
        starts[n] = T;
        int *perm = xmalloc((size_t)n * sizeof(int), "perm");
        for (int i = 0; i < n; i++) perm[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = (int)rng_below(g, (uint64_t)i + 1), t = perm[i];
            perm[i] = perm[j], perm[j] = t;
        }
        for (int i = 0, at = 0; i < n; i++)
            for (int p = starts[perm[i]]; p < starts[perm[i] + 1]; p++) order[at++] = p;
        free(starts), free(perm);
    }
    for (int j = 0; j < W; j++)
        for (int i = 0; i < L; i++) {
            int32_t *x = &pos[(size_t)j * L + i];
            if (kind == LAY_ZIGZAG) *x = i < h ? j * h + i : (2 * W - 1 - j) * h + i - h;
            else if (kind == LAY_ROUND_ROBIN) *x = i * W + j;
            else *x = order[(size_t)j * L + i];
        }
    for (int j = 0; j < W; j++) qsort(pos + (size_t)j * L, (size_t)L, sizeof(int32_t), cmp_i32);
    free(order);
    return pos;
}

// Every layout with every document mix (whole documents of one document are the contiguous layout), on two shapes: GQA
// 4/2 with an odd L (even for the zigzag), and up to 4 ranks MQA 3/1 with an L past a kernel tile (128) on 1 or 2 ranks.
static int layout_cases(AttnRing *ring, AttnRing *serial, Comm *world, int W, int r, int *cases) {
    int failures = 0;
    for (int lk = 0; lk < N_LAYOUTS; lk++)
        for (int mix = 0; mix < N_MIXES; mix++)
            for (int shape = 0; shape < (W > 4 ? 1 : 2) && !(lk == LAY_WHOLE_DOCS && mix == DOCS_NONE); shape++) {
                int L = shape == 0 ? 9 : W > 2 ? 21 : 135, H = shape == 0 ? 4 : 3, Hkv = shape == 0 ? 2 : 1;
                L += lk == LAY_ZIGZAG;
                Rng g;
                rng_seed(&g, 500 + 31 * (uint64_t)*cases);
                int32_t *doc = make_docs((DocMix)mix, W * L, L, &g), *pos = make_layout((LayoutKind)lk, W, L, doc, &g);
                char name[96];
                snprintf(name, sizeof name, "%s layout, %s", LAYOUT_NAMES[lk], MIX_NAMES[mix]);
                Case c = {W, L, pos, doc, name};
                double e = run_case(ring, serial, &c, r, H, Hkv, 16, 2000 + 17 * (uint64_t)*cases);
                comm_allreduce(world, &e, 1, COMM_F64, COMM_MAX, "test error max");
                bool ok = e < TOL;
                failures += !ok;
                log_info("%s sp=%d %s L=%d H=%d Hkv=%d max rel err %.2e\n", ok ? "ok  " : "FAIL", W, name, L, H, Hkv, e);
                free(doc), free(pos);
                (*cases)++;
            }
    return failures;
}

int main(int argc, char **argv) {
    comm_init(&argc, &argv);
    comm_set_timeout(60);
    CommGrid grid = comm_grid(comm_size(comm_world()));   // one ring over all ranks
    int W = grid.sp, r = grid.sp_index;
    AttnRing *ring = ring_create(grid.ring, &BACKEND_CPU, true), *serial = ring_create(grid.ring, &BACKEND_CPU, false);
    // The zigzag ring: (heads, kv heads) × head dim × chunk length: GQA 6/2, MQA-like 4/1, MHA 2/2; chunks of 1 token,
    // odd lengths, and longer than a kernel tile (64) so multi-tile blocks cross the ring.
    const int heads[][2] = {{6, 2}, {4, 1}, {2, 2}};
    const int hds[] = {32, 64};
    const int chunks[] = {1, 3, 7, 37};
    int failures = 0, cases = 0;
    for (size_t h = 0; h < 3; h++)
        for (size_t d = 0; d < 2; d++)
            for (size_t c = 0; c < 4; c++) {
                if (heads[h][0] == 2 && chunks[c] == 37) continue;   // keep the run short
                int32_t *pos = make_layout(LAY_ZIGZAG, W, 2 * chunks[c], NULL, NULL);
                Case zc = {W, 2 * chunks[c], pos, NULL, "zigzag"};
                double e = run_case(ring, serial, &zc, r, heads[h][0], heads[h][1], hds[d], 1000 + 17 * cases);
                comm_allreduce(grid.world, &e, 1, COMM_F64, COMM_MAX, "test error max");
                bool ok = e < TOL;
                failures += !ok;
                log_info("%s sp=%d H=%d Hkv=%d hd=%d T=%d max rel err %.2e\n", ok ? "ok  " : "FAIL", W, heads[h][0],
                         heads[h][1], hds[d], 2 * W * chunks[c], e);
                free(pos);
                cases++;
            }
    failures += layout_cases(ring, serial, grid.world, W, r, &cases);
    log_info("%d cases, %d failed (%s; the serial baseline bit-identical)\n", cases, failures, REAL_NAME);
    ring_free(ring);
    ring_free(serial);
    comm_grid_free(&grid);
    comm_finalize();
    return failures ? 1 : 0;
}
