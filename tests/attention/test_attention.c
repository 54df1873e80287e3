// tests/attention/test_attention.c — blockwise attention equals naive attention (forward and backward), every mask and shape.
#include <string.h>

#include "attention/attention.h"
#include "core/backend.h"
#include "core/common.h"
#include "core/rng.h"
#include "tests/check.h"
#include "model/ops.h"

static Rng rng;

// Naive reference in double: materialises the (nq × nk) scores of one head; causal: j <= i; with
// document ids (doc != NULL) row i also needs doc[j] == doc[i].
static void naive(const AttnShape *s, int T, int causal, const int32_t *doc, const real *q, const real *k, const real *v,
                  const real *dout, double *out, double *lse, double *dq, double *dk, double *dv) {
    int H = s->n_head, hd = s->head_dim, group = H / s->n_kv_head, qs = H * hd, ks = s->n_kv_head * hd;
    double scale = 1.0 / sqrt(hd);
    double *p = xmalloc((size_t)T * sizeof(double), "test"), *dp = xmalloc((size_t)T * sizeof(double), "test");
    for (int h = 0; h < H; h++) {
        int g = h / group;
        for (int i = 0; i < T; i++) {
            int n = causal ? i + 1 : T;
            double mx = -INFINITY, sum = 0;
            for (int j = 0; j < n; j++) {
                double sc = 0;
                for (int d = 0; d < hd; d++) sc += (double)q[i * qs + h * hd + d] * k[j * ks + g * hd + d];
                p[j] = doc && doc[j] != doc[i] ? -INFINITY : sc * scale;
                mx = fmax(mx, p[j]);
            }
            for (int j = 0; j < n; j++) sum += (p[j] = exp(p[j] - mx));   // exp(-inf) = 0: another document
            lse[i * H + h] = mx + log(sum);
            double *o = out + (size_t)i * qs + h * hd, Di = 0;
            for (int d = 0; d < hd; d++) o[d] = 0;
            for (int j = 0; j < n; j++) {
                p[j] /= sum;
                for (int d = 0; d < hd; d++) o[d] += p[j] * v[j * ks + g * hd + d];
            }
            const real *doi = dout + (size_t)i * qs + h * hd;
            for (int d = 0; d < hd; d++) Di += doi[d] * o[d];
            for (int j = 0; j < n; j++) {
                dp[j] = 0;
                for (int d = 0; d < hd; d++) dp[j] += doi[d] * v[j * ks + g * hd + d];
                double ds = p[j] * (dp[j] - Di) * scale;
                for (int d = 0; d < hd; d++) {
                    dq[(size_t)i * qs + h * hd + d] += ds * k[j * ks + g * hd + d];
                    dk[(size_t)j * ks + g * hd + d] += ds * q[i * qs + h * hd + d];
                    dv[(size_t)j * ks + g * hd + d] += p[j] * doi[d];
                }
            }
        }
    }
    free(p);
    free(dp);
}

static double cmp(const real *a, const double *ref, size_t n) {
    double *ad = xmalloc(n * sizeof(double), "test");
    for (size_t i = 0; i < n; i++) ad[i] = a[i];
    double e = tensor_rel_err(ad, ref, n, 1e-6);
    free(ad);
    return e;
}

// KV split into `splits` blocks folded one after another into the same state: what the ring does.
// doc: document ids of the T rows (NULL: none), given to the kernels as the Q and K ids.
static void run_case_docs(int H, int Hkv, int hd, int T, int causal, int splits, const int32_t *doc) {
    const Backend *be = &BACKEND_CPU;
    AttnShape s = {.n_head = H, .n_kv_head = Hkv, .head_dim = hd};
    size_t qn = (size_t)T * H * hd, kvn = (size_t)T * Hkv * hd, rows = (size_t)T * H;
    real *q = xmalloc(qn * sizeof(real), "q"), *k = xmalloc(kvn * sizeof(real), "k"), *v = xmalloc(kvn * sizeof(real), "v");
    real *dout = xmalloc(qn * sizeof(real), "dout");
    for (size_t i = 0; i < qn; i++) q[i] = (real)rng_normal(&rng), dout[i] = (real)rng_normal(&rng);
    for (size_t i = 0; i < kvn; i++) k[i] = (real)rng_normal(&rng), v[i] = (real)rng_normal(&rng);
    double *ro = xcalloc(qn, sizeof(double), "ref"), *rl = xcalloc(rows, sizeof(double), "ref");
    double *rdq = xcalloc(qn, sizeof(double), "ref"), *rdk = xcalloc(kvn, sizeof(double), "ref"), *rdv = xcalloc(kvn, sizeof(double), "ref");
    naive(&s, T, causal, doc, q, k, v, dout, ro, rl, rdq, rdk, rdv);

    real *out = xmalloc(qn * sizeof(real), "out"), *lse = xmalloc(rows * sizeof(real), "lse"), *l = xmalloc(rows * sizeof(real), "l");
    real *dq = xcalloc(qn, sizeof(real), "dq"), *dk = xcalloc(kvn, sizeof(real), "dk"), *dv = xcalloc(kvn, sizeof(real), "dv");
    real *D = xmalloc(rows * sizeof(real), "D");
    if (causal && splits == 1) {
        AttnRows t = {.L = T, .q = q, .k = k, .v = v, .out = out, .lse = lse, .tmp = l, .dout = dout, .dq = dq, .dk = dk, .dv = dv};
        attention_causal_forward(be, &s, &t, &(AttnLayout){.docs = doc});
        t.tmp = D;
        attention_causal_backward(be, &s, &t, &(AttnLayout){.docs = doc});
    } else {   // full mask, KV in `splits` blocks
        AttnState st = {.acc = out, .m = lse, .l = l};
        be->attn_state_reset(&s, st, T);
        int per = (T + splits - 1) / splits;
        for (int j0 = 0; j0 < T; j0 += per) {
            int nk = T - j0 < per ? T - j0 : per;
            const real *kb = k + (size_t)j0 * Hkv * hd, *vb = v + (size_t)j0 * Hkv * hd;
            AttnDocs docs = {doc, doc + j0};
            be->attn_forward_block(&s, st, q, T, kb, vb, nk, ATTN_FULL, doc ? &docs : NULL);
        }
        be->attn_finalize(&s, st, out, lse, T);
        be->attn_backward_prep(&s, D, dout, out, T);
        for (int j0 = 0; j0 < T; j0 += per) {
            int nk = T - j0 < per ? T - j0 : per;
            size_t off = (size_t)j0 * Hkv * hd;
            AttnDocs docs = {doc, doc + j0};
            be->attn_backward_block(&s, dq, dk + off, dv + off, q, k + off, v + off, out, dout, lse, D, T, nk, ATTN_FULL,
                                    doc ? &docs : NULL);
        }
    }
    double tol = sizeof(real) == 4 ? 2e-5 : 1e-12;
    double e[5] = {cmp(out, ro, qn), cmp(lse, rl, rows), cmp(dq, rdq, qn), cmp(dk, rdk, kvn), cmp(dv, rdv, kvn)};
    const char *names[5] = {"O", "LSE", "dQ", "dK", "dV"};
    for (int i = 0; i < 5; i++)
        CHECK(e[i] < tol, "%s H=%d Hkv=%d hd=%d T=%d %s splits=%d%s: %s rel err %.3e", causal ? "causal" : "full", H, Hkv,
              hd, T, causal ? "causal" : "full", splits, doc ? " docs" : "", names[i], e[i]);
    printf("  %-6s H=%d Hkv=%d hd=%3d T=%3d kv-blocks=%d%s  max rel err O %.1e LSE %.1e dQ %.1e dK %.1e dV %.1e\n",
           causal ? "causal" : "full", H, Hkv, hd, T, splits, doc ? " docs" : "", e[0], e[1], e[2], e[3], e[4]);
    free(q), free(k), free(v), free(dout), free(ro), free(rl), free(rdq), free(rdk), free(rdv);
    free(out), free(lse), free(l), free(dq), free(dk), free(dv), free(D);
}

static void run_case(int H, int Hkv, int hd, int T, int causal, int splits) { run_case_docs(H, Hkv, hd, T, causal, splits, NULL); }

// Document ids from document starts (ascending, the first 0) over T rows.
static void doc_ids(int32_t *doc, int T, const int *starts, int n_starts) {
    for (int t = 0, d = 0; t < T; t++) {
        while (d + 1 < n_starts && starts[d + 1] <= t) d++;
        doc[t] = d;
    }
}

// Document ids with starts at 0, 40, 41, 150, 260 (one single-token document): T = 300 spans three
// CPU tiles; each (query tile, key tile) pair the causal mask allows and that shares no document is
// skipped by the forward, H times (once per head) — counted by attn_cpu_doc_tiles_skipped. Every key
// tile there mixes documents; starts 0, 10, 300 over T = 420 give key tiles of one document (rows
// 128..255 and 384..419) seen by query tiles that mix it with another, the kernels' unmasked rows.
static void test_docs(void) {
    enum { T = 300, T2 = 420 };
    int32_t doc[T], doc2[T2];
    doc_ids(doc, T, (const int[]){0, 40, 41, 150, 260}, 5);
    doc_ids(doc2, T2, (const int[]){0, 10, 300}, 3);
    long want = 0, tile = ATTN_CPU_TILE;
    for (int qt = 0; qt * tile < T; qt++)
        for (int kt = 0; kt <= qt; kt++) {   // causal: key tiles up to the diagonal
            bool shared = false;
            for (int i = qt * tile; i < (qt + 1) * tile && i < T; i++)
                for (int j = kt * tile; j < (kt + 1) * tile && j <= i; j++) shared |= doc[i] == doc[j];
            want += !shared;
        }
    long before = attn_cpu_doc_tiles_skipped();
    run_case_docs(4, 2, 32, T, 1, 1, doc);   // causal, one call
    long skipped = attn_cpu_doc_tiles_skipped() - before;
    CHECK(want > 0 && skipped == 4 * want, "forward skipped %ld tiles, the layout predicts %ld x 4 heads", skipped, want);
    printf("  doc mask: forward skipped %ld (query tile, key tile, head) triples, layout predicts %ld\n", skipped, 4 * want);
    run_case_docs(6, 2, 64, T, 0, 3, doc);   // full mask, KV in 3 blocks (the ring's non-diagonal steps)
    run_case_docs(6, 6, 16, 131, 1, 1, doc); // T inside one tile
    run_case_docs(4, 2, 32, T2, 1, 1, doc2);   // key tiles of one document
    run_case_docs(4, 4, 32, T2, 0, 3, doc2);
    setenv("RINGGPT_ATTN_BACKWARD", "tiles", 1);   // the two-pass backward skips the same tiles
    run_case_docs(4, 2, 32, T, 1, 1, doc);
    run_case_docs(6, 2, 64, T, 0, 3, doc);
    run_case_docs(4, 2, 32, T2, 1, 1, doc2);
    unsetenv("RINGGPT_ATTN_BACKWARD");
}

// A row that sees no key (an empty state) finalises to out = 0, lse = -inf, and its backward adds nothing.
static void test_empty_rows(void) {
    const Backend *be = &BACKEND_CPU;
    AttnShape s = {.n_head = 2, .n_kv_head = 1, .head_dim = 4};
    real acc[3 * 2 * 4], m[6], l[6], out[24], lse[6];
    AttnState st = {.acc = acc, .m = m, .l = l};
    be->attn_state_reset(&s, st, 3);
    be->attn_finalize(&s, st, out, lse, 3);
    int ok = 1;
    for (int i = 0; i < 24; i++) ok &= out[i] == 0;
    for (int i = 0; i < 6; i++) ok &= isinf(lse[i]) && lse[i] < 0;
    CHECK(ok, "empty rows must give out = 0 and lse = -inf");
}

// The two CPU backward variants (one pass over kv heads; two passes over tiles) give the same bits.
static void test_backward_variants(void) {
    const Backend *be = &BACKEND_CPU;
    AttnShape s = {.n_head = 6, .n_kv_head = 2, .head_dim = 64};
    const int T = 300;
    size_t qn = (size_t)T * 6 * 64, kvn = (size_t)T * 2 * 64, rows = (size_t)T * 6;
    real *q = xmalloc(qn * sizeof(real), "q"), *k = xmalloc(kvn * sizeof(real), "k"), *v = xmalloc(kvn * sizeof(real), "v");
    real *dout = xmalloc(qn * sizeof(real), "dout"), *out = xmalloc(qn * sizeof(real), "out");
    real *lse = xmalloc(rows * sizeof(real), "lse"), *tmp = xmalloc(rows * sizeof(real), "tmp");
    for (size_t i = 0; i < qn; i++) q[i] = (real)rng_normal(&rng), dout[i] = (real)rng_normal(&rng);
    for (size_t i = 0; i < kvn; i++) k[i] = (real)rng_normal(&rng), v[i] = (real)rng_normal(&rng);
    AttnRows t = {.L = T, .q = q, .k = k, .v = v, .out = out, .lse = lse, .tmp = tmp, .dout = dout};
    attention_causal_forward(be, &s, &t, NULL);
    real *g[2][3];
    const char *variant[2] = {"heads", "tiles"};
    for (int i = 0; i < 2; i++) {
        g[i][0] = xmalloc(qn * sizeof(real), "dq"), g[i][1] = xmalloc(kvn * sizeof(real), "dk");
        g[i][2] = xmalloc(kvn * sizeof(real), "dv");
        setenv("RINGGPT_ATTN_BACKWARD", variant[i], 1);
        t.dq = g[i][0], t.dk = g[i][1], t.dv = g[i][2];
        attention_causal_backward(be, &s, &t, NULL);
    }
    unsetenv("RINGGPT_ATTN_BACKWARD");
    CHECK(memcmp(g[0][0], g[1][0], qn * sizeof(real)) == 0, "dQ differs between backward variants");
    CHECK(memcmp(g[0][1], g[1][1], kvn * sizeof(real)) == 0, "dK differs between backward variants");
    CHECK(memcmp(g[0][2], g[1][2], kvn * sizeof(real)) == 0, "dV differs between backward variants");
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) free(g[i][j]);
    free(q), free(k), free(v), free(dout), free(out), free(lse), free(tmp);
}

int main(void) {
    rng_seed(&rng, 3);
    int dims[3] = {32, 64, 128};
    for (int d = 0; d < 3; d++) {
        run_case(4, 4, dims[d], 100, 1, 1);    // T not a multiple of the 64-key tile
        run_case(6, 2, dims[d], 131, 1, 1);    // GQA 6/2
        run_case(6, 2, dims[d], 77, 0, 1);     // full mask
        run_case(4, 1, dims[d], 90, 0, 3);     // full mask, KV folded in 3 blocks (MQA)
    }
    test_docs();
    test_empty_rows();
    test_backward_variants();
    return check_summary();
}
