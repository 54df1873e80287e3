// tests/attention/test_ring_attention.c — per rank, ring attention (O, LSE, dQ, dK, dV) equals single-rank attention.
// Run under mpiexec with N ranks: one ring of sp = N. Every rank generates the same global input,
// computes the single-rank reference on it, runs the ring on its zigzag slice and compares rows.
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

// Copies this rank's zigzag rows (chunks r and 2W−1−r of c rows each) of a (T, width) tensor.
static real *zigzag_rows(const real *x, int width, int c, int W, int r) {
    real *y = xmalloc((size_t)2 * c * width * sizeof(real), "slice");
    memcpy(y, x + (size_t)r * c * width, (size_t)c * width * sizeof(real));
    memcpy(y + (size_t)c * width, x + (size_t)(2 * W - 1 - r) * c * width, (size_t)c * width * sizeof(real));
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

// The serial baseline (overlap off) must compute exactly what the overlapped ring did: same calls, same sums.
static bool serial_identical(AttnRing *serial, const AttnShape *s, int L, const real *lq, const real *lk, const real *lv,
                             const real *ldo, const real *ro, const real *rdq, const real *rdk, const real *rdv) {
    const Backend *be = &BACKEND_CPU;
    size_t qn = (size_t)L * s->n_head * s->head_dim, kn = (size_t)L * s->n_kv_head * s->head_dim, ln = (size_t)L * s->n_head;
    real *o = xmalloc(qn * sizeof(real), "o"), *lse = xmalloc(ln * sizeof(real), "lse"), *tmp = xmalloc(ln * sizeof(real), "tmp");
    real *dq = xmalloc(qn * sizeof(real), "dq"), *dk = xmalloc(kn * sizeof(real), "dk"), *dv = xmalloc(kn * sizeof(real), "dv");
    ring_attention_forward(serial, be, s, o, lse, tmp, lq, lk, lv, L, NULL);
    ring_attention_backward(serial, be, s, dq, dk, dv, tmp, lq, lk, lv, o, lse, ldo, L, NULL);
    bool same = !memcmp(o, ro, qn * sizeof(real)) && !memcmp(dq, rdq, qn * sizeof(real)) && !memcmp(dk, rdk, kn * sizeof(real)) &&
                !memcmp(dv, rdv, kn * sizeof(real));
    free(o), free(lse), free(tmp), free(dq), free(dk), free(dv);
    return same;
}

// One case: returns the worst relative error over O, LSE, dQ, dK, dV on this rank (infinite when the serial
// baseline differs from the overlapped ring in any bit).
static double run_case(AttnRing *ring, AttnRing *serial, int W, int r, int H, int Hkv, int hd, int c, uint64_t seed) {
    const Backend *be = &BACKEND_CPU;
    AttnShape s = {.n_head = H, .n_kv_head = Hkv, .head_dim = hd};
    int T = 2 * W * c, L = 2 * c, qw = H * hd, kw = Hkv * hd;
    Rng g;
    rng_seed(&g, seed);
    real *q = randn(&g, (size_t)T * qw), *k = randn(&g, (size_t)T * kw), *v = randn(&g, (size_t)T * kw);
    real *dout = randn(&g, (size_t)T * qw);
    // reference on the whole sequence
    real *o = xmalloc((size_t)T * qw * sizeof(real), "o"), *lse = xmalloc((size_t)T * H * sizeof(real), "lse");
    real *tmp = xmalloc((size_t)T * H * sizeof(real), "tmp");
    real *dq = xmalloc((size_t)T * qw * sizeof(real), "dq"), *dk = xmalloc((size_t)T * kw * sizeof(real), "dk");
    real *dv = xmalloc((size_t)T * kw * sizeof(real), "dv");
    attention_causal_forward(be, &s, o, lse, tmp, q, k, v, T, NULL);
    attention_causal_backward(be, &s, dq, dk, dv, tmp, q, k, v, o, lse, dout, T, NULL);
    // the ring on this rank's slice
    real *lq = zigzag_rows(q, qw, c, W, r), *lk = zigzag_rows(k, kw, c, W, r), *lv = zigzag_rows(v, kw, c, W, r);
    real *ldo = zigzag_rows(dout, qw, c, W, r);
    real *ro = xmalloc((size_t)L * qw * sizeof(real), "ro"), *rlse = xmalloc((size_t)L * H * sizeof(real), "rlse");
    real *rtmp = xmalloc((size_t)L * H * sizeof(real), "rtmp");
    real *rdq = xmalloc((size_t)L * qw * sizeof(real), "rdq"), *rdk = xmalloc((size_t)L * kw * sizeof(real), "rdk");
    real *rdv = xmalloc((size_t)L * kw * sizeof(real), "rdv");
    ring_attention_forward(ring, be, &s, ro, rlse, rtmp, lq, lk, lv, L, NULL);
    ring_attention_backward(ring, be, &s, rdq, rdk, rdv, rtmp, lq, lk, lv, ro, rlse, ldo, L, NULL);
    real *eo = zigzag_rows(o, qw, c, W, r), *else_ = zigzag_rows(lse, H, c, W, r);
    real *edq = zigzag_rows(dq, qw, c, W, r), *edk = zigzag_rows(dk, kw, c, W, r), *edv = zigzag_rows(dv, kw, c, W, r);
    double errs[5] = {rel_err(ro, eo, (size_t)L * qw), rel_err(rlse, else_, (size_t)L * H),
                      rel_err(rdq, edq, (size_t)L * qw), rel_err(rdk, edk, (size_t)L * kw),
                      rel_err(rdv, edv, (size_t)L * kw)};
    double worst = 0;
    for (int i = 0; i < 5; i++)
        if (!(errs[i] <= worst)) worst = errs[i];
    if (!serial_identical(serial, &s, L, lq, lk, lv, ldo, ro, rdq, rdk, rdv)) {
        fprintf(stderr, "rank %d: H %d Hkv %d hd %d T %d: the serial baseline (--ring-overlap=false) differs\n", r, H, Hkv, hd, T);
        worst = INFINITY;
    }
    if (!(worst < TOL))
        fprintf(stderr, "rank %d: H %d Hkv %d hd %d T %d: err O %.2e LSE %.2e dQ %.2e dK %.2e dV %.2e\n", r, H, Hkv, hd,
                T, errs[0], errs[1], errs[2], errs[3], errs[4]);
    real *all[] = {q, k, v, dout, o, lse, tmp, dq, dk, dv, lq, lk, lv, ldo, ro, rlse, rtmp, rdq, rdk, rdv,
                   eo, else_, edq, edk, edv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
    return worst;
}

int main(int argc, char **argv) {
    comm_init(&argc, &argv);
    comm_set_timeout(60);
    CommGrid grid = comm_grid(comm_size(comm_world()));   // one ring over all ranks
    int W = grid.sp, r = grid.sp_index;
    AttnRing *ring = ring_create(grid.ring, &BACKEND_CPU, true), *serial = ring_create(grid.ring, &BACKEND_CPU, false);
    // (heads, kv heads) × head dim × chunk length: GQA 6/2, MQA-like 4/1, MHA 2/2; chunks of 1 token,
    // odd lengths, and longer than a kernel tile (64) so multi-tile blocks cross the ring.
    const int heads[][2] = {{6, 2}, {4, 1}, {2, 2}};
    const int hds[] = {32, 64};
    const int chunks[] = {1, 3, 7, 37};
    int failures = 0, cases = 0;
    for (size_t h = 0; h < 3; h++)
        for (size_t d = 0; d < 2; d++)
            for (size_t c = 0; c < 4; c++) {
                if (heads[h][0] == 2 && chunks[c] == 37) continue;   // keep the run short
                double e = run_case(ring, serial, W, r, heads[h][0], heads[h][1], hds[d], chunks[c], 1000 + 17 * cases);
                comm_allreduce(grid.world, &e, 1, COMM_F64, COMM_MAX, "test error max");
                int T = 2 * W * chunks[c];
                bool ok = e < TOL;
                failures += !ok;
                log_info("%s sp=%d H=%d Hkv=%d hd=%d T=%d max rel err %.2e\n", ok ? "ok  " : "FAIL", W, heads[h][0],
                         heads[h][1], hds[d], T, e);
                cases++;
            }
    RingStats st = ring_stats(ring), ss = ring_stats(serial);
    // The serial baseline's meetings before hops are neither pieces nor their bytes; the overlapped ring never meets.
    if (ss.exchanges != st.exchanges || ss.bytes != st.bytes || st.lag_s != 0 || !(ss.lag_s >= 0)) {
        log_info("FAIL rank 0 stats: serial %ld pieces %.0f bytes lag %.3g s, overlapped %ld pieces %.0f bytes lag %.3g s\n",
                 ss.exchanges, ss.bytes, ss.lag_s, st.exchanges, st.bytes, st.lag_s);
        failures++;
    }
    log_info("%d cases, %d failed (%s; the serial baseline bit-identical); rank 0 sent %ld pieces, %.1f KiB\n", cases, failures,
             REAL_NAME,
             st.exchanges, st.bytes / 1024);
    ring_free(ring);
    ring_free(serial);
    comm_grid_free(&grid);
    comm_finalize();
    return failures ? 1 : 0;
}
