// tests/attention/attn_ring_replay.h — replays the ring's schedule of attention blocks in one process on a backend, and compares implementations (shared by the GPU attention tests).
// For every rank r and every step's KV owner j (the three cases of attention/ring.c: j == r causal,
// j < r full, j > r second half of the rows), forward and backward through the block API, with or
// without document ids; returns every rank's out, LSE, dQ and the dK/dV each KV block collects.
#pragma once
#include <math.h>

#include "tests/gpu_test.h"

typedef struct {
    int H, Hkv, hd, sp, c;   // heads, kv heads, head dim, ring size, zigzag chunk length (T = 2·sp·c)
    int docs;                // 1: documents start at 0, T/7, T/3, T/3+1 and 5T/6 (attention stays inside them)
    int bf16;                // 1: q, k, v stored as bf16 on the CUDA backend (--activations bf16; the CPU keeps fp32)
} Case;

// Document ids of every position in zigzag rank order (rank r's L ids at + r·L), as ring.h lays them out.
static inline int32_t *zigzag_docs(const Case *c) {
    int T = 2 * c->sp * c->c, L = 2 * c->c, starts[] = {0, T / 7, T / 3, T / 3 + 1, 5 * T / 6};
    int32_t *z = xmalloc((size_t)T * sizeof(int32_t), "doc ids");
    for (int r = 0; r < c->sp; r++)
        for (int i = 0; i < L; i++) {
            int p = i < c->c ? r * c->c + i : (2 * c->sp - 1 - r) * c->c + i - c->c, d = 0;
            while (d + 1 < 5 && starts[d + 1] <= p) d++;
            z[(size_t)r * L + i] = d;
        }
    return z;
}

static inline void fwd(const Backend *be, const AttnShape *s, AttnState st, const float *q, int nq, const float *k,
                       const float *v, int nk, AttnMask mask, AttnDocs docs) {
    be->attn_forward_block(s, st, q, nq, k, v, nk, mask, docs.q ? &docs : NULL);
}

static inline void bwd(const Backend *be, const AttnShape *s, float *dq, float *dk, float *dv, const float *q,
                       const float *k, const float *v, const float *out, const float *dout, const float *lse,
                       const float *D, int nq, int nk, AttnMask mask, AttnDocs docs) {
    be->attn_backward_block(s, dq, dk, dv, q, k, v, out, dout, lse, D, nq, nk, mask, docs.q ? &docs : NULL);
}

typedef struct {
    float *out, *lse, *dq;   // (sp, L, H, hd), (sp, L, H), (sp, L, H, hd): every rank's rows, rank-major
    float *dk, *dv;          // (sp, L, Hkv, hd): each rank's KV block gradient after the full ring
} Result;

// Rank r's local rows of a token-major global tensor (T, W): chunk r then chunk 2·sp−1−r.
static inline float *local_rows(const float *g, int r, const Case *c, int W) {
    int L = 2 * c->c;
    float *out = xmalloc((size_t)L * W * sizeof(float), "local rows");
    memcpy(out, g + (size_t)r * c->c * W, (size_t)c->c * W * sizeof(float));
    memcpy(out + (size_t)c->c * W, g + (size_t)(2 * c->sp - 1 - r) * c->c * W, (size_t)c->c * W * sizeof(float));
    return out;
}

static inline Result run_ring(const Backend *be, const Case *c, const float *q, const float *k, const float *v,
                       const float *dout) {
    const int L = 2 * c->c, half = c->c, sp = c->sp;
    const int QW = c->H * c->hd, KW = c->Hkv * c->hd;
    const ActStore store = c->bf16 && be != &BACKEND_CPU ? ACT_BF16 : ACT_F32;
    AttnShape s = {.n_head = c->H, .n_kv_head = c->Hkv, .head_dim = c->hd, .qkv = store};
    Result res = {xcalloc((size_t)sp * L * QW, 4, "out"), xcalloc((size_t)sp * L * c->H, 4, "lse"),
                  xcalloc((size_t)sp * L * QW, 4, "dq"), xcalloc((size_t)sp * L * KW, 4, "dk"),
                  xcalloc((size_t)sp * L * KW, 4, "dv")};
    float **kb = xcalloc(sp, sizeof(float *), "kv"), **vb = xcalloc(sp, sizeof(float *), "kv");
    for (int j = 0; j < sp; j++) {   // every rank's KV block, resident on the backend
        float *hk = local_rows(k, j, c, KW), *hv = local_rows(v, j, c, KW);
        kb[j] = on_store(be, hk, (size_t)L * KW, store), vb[j] = on_store(be, hv, (size_t)L * KW, store);
        free(hk), free(hv);
    }
    float *acc = be->alloc((size_t)L * QW * 4, "acc"), *m = be->alloc((size_t)L * c->H * 4, "m");
    float *l = be->alloc((size_t)L * c->H * 4, "l"), *D = be->alloc((size_t)L * c->H * 4, "D");
    float *dq = be->alloc((size_t)L * QW * 4, "dq"), *dk = be->alloc((size_t)L * KW * 4, "dk");
    float *dv = be->alloc((size_t)L * KW * 4, "dv");
    size_t qo = (size_t)half * QW, so = (size_t)half * c->H;
    int32_t *zd = NULL, *hz = c->docs ? zigzag_docs(c) : NULL;   // document ids on the backend
    if (hz) {
        zd = be->alloc((size_t)sp * L * sizeof(int32_t), "doc ids");
        be->to_device(zd, hz, (size_t)sp * L * sizeof(int32_t));
    }
    for (int r = 0; r < sp; r++) {
        float *hq = local_rows(q, r, c, QW), *hdo = local_rows(dout, r, c, QW);
        float *ql = on_store(be, hq, (size_t)L * QW, store), *dol = on(be, hdo, (size_t)L * QW);
        float *ql_late = act_at(ql, store, qo);   // the second half of the rows (j > r)
        AttnState st = {.acc = acc, .m = m, .l = l};
        be->attn_state_reset(&s, st, L);
        for (int step = 0; step < sp; step++) {
            int j = (r - step + sp) % sp;
            AttnDocs dd = zd ? (AttnDocs){zd + (size_t)r * L, zd + (size_t)j * L} : (AttnDocs){0};
            AttnDocs late_d = zd ? (AttnDocs){dd.q + half, dd.k} : (AttnDocs){0};
            if (j == r) fwd(be, &s, st, ql, L, kb[j], vb[j], L, ATTN_CAUSAL, dd);
            else if (j < r) fwd(be, &s, st, ql, L, kb[j], vb[j], half, ATTN_FULL, dd);
            else {
                AttnState late = {.acc = acc + qo, .m = m + so, .l = l + so};
                fwd(be, &s, late, ql_late, half, kb[j], vb[j], L, ATTN_FULL, late_d);
            }
        }
        float *out = acc, *lse = m;   // finalize in place, as the ring does
        be->attn_finalize(&s, st, out, lse, L);
        be->to_host(res.out + (size_t)r * L * QW, out, (size_t)L * QW * 4);
        be->to_host(res.lse + (size_t)r * L * c->H, lse, (size_t)L * c->H * 4);
        // Backward with the global LSE: dq accumulates over the steps, dk/dv go to block j's owner.
        be->attn_backward_prep(&s, D, dol, out, L);
        be->zero(dq, (size_t)L * QW * 4);
        for (int step = 0; step < sp; step++) {
            int j = (r - step + sp) % sp;
            be->zero(dk, (size_t)L * KW * 4);
            be->zero(dv, (size_t)L * KW * 4);
            AttnDocs dd = zd ? (AttnDocs){zd + (size_t)r * L, zd + (size_t)j * L} : (AttnDocs){0};
            AttnDocs late_d = zd ? (AttnDocs){dd.q + half, dd.k} : (AttnDocs){0};
            if (j == r) bwd(be, &s, dq, dk, dv, ql, kb[j], vb[j], out, dol, lse, D, L, L, ATTN_CAUSAL, dd);
            else if (j < r) bwd(be, &s, dq, dk, dv, ql, kb[j], vb[j], out, dol, lse, D, L, half, ATTN_FULL, dd);
            else
                bwd(be, &s, dq + qo, dk, dv, ql_late, kb[j], vb[j], out + qo, dol + qo, lse + so, D + so, half, L,
                    ATTN_FULL, late_d);
            float *hk = back(be, dk, (size_t)L * KW), *hv = back(be, dv, (size_t)L * KW);
            for (size_t i = 0; i < (size_t)L * KW; i++) {
                res.dk[(size_t)j * L * KW + i] += hk[i];
                res.dv[(size_t)j * L * KW + i] += hv[i];
            }
            free(hk), free(hv);
        }
        be->to_host(res.dq + (size_t)r * L * QW, dq, (size_t)L * QW * 4);
        be->release(ql), be->release(dol);
        free(hq), free(hdo);
    }
    if (zd) be->release(zd);
    free(hz);
    for (int j = 0; j < sp; j++) be->release(kb[j]), be->release(vb[j]);
    free(kb), free(vb);
    be->release(acc), be->release(m), be->release(l), be->release(D), be->release(dq), be->release(dk), be->release(dv);
    return res;
}

static inline void host_compare(const char *what, const Case *c, const float *g, const float *ref, size_t n, double tol) {
    double dmax = 0, smax = 1e-20;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)g[i] - ref[i]);
        if (!(d <= dmax)) dmax = d;
        smax = fmax(smax, fabs((double)ref[i]));
    }
    double err = dmax / smax;
    CHECK(err <= tol, "H=%d Hkv=%d hd=%d sp=%d chunk=%d%s%s %s: relative error %.3e > %.0e", c->H, c->Hkv, c->hd,
          c->sp, c->c, c->docs ? " docs" : "", c->bf16 ? " bf16" : "", what, err, tol);
    printf("  H=%d Hkv=%d hd=%3d sp=%d chunk=%3d%s%s %-4s rel err %.3e (tol %.0e)\n", c->H, c->Hkv, c->hd, c->sp, c->c,
           c->docs ? " docs" : "", c->bf16 ? " bf16" : "", what, err, tol);
}

static inline void free_result(Result r) { free(r.out), free(r.lse), free(r.dq), free(r.dk), free(r.dv); }

// Where the largest difference is, as (rank, local row, head, column): a layout bug shows as a pattern
// (one head, every 8th column, rows past a tile boundary, ...), so a failing run says where.
static inline void locate_worst(const char *what, const float *g, const float *ref, size_t n, int L, int heads, int cols) {
    size_t worst = 0;
    double dmax = -1;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)g[i] - ref[i]);
        if (!(d <= dmax)) dmax = d, worst = i;
    }
    size_t row = worst / ((size_t)heads * cols);
    printf("    %s: worst at rank %zu, row %zu, head %zu, col %zu: got %g, want %g\n", what, row / L, row % L,
           worst / cols % heads, worst % cols, g[worst], ref[worst]);
}

static inline void compare_pair(const char *vs, const Case *c, Result g, Result ref) {
    size_t L = 2 * (size_t)c->c, nq = c->sp * L * c->H * c->hd, nkv = c->sp * L * c->Hkv * c->hd;
    char what[64];
    const char *names[] = {"out", "lse", "dq", "dk", "dv"};
    const float *gs[] = {g.out, g.lse, g.dq, g.dk, g.dv}, *rs[] = {ref.out, ref.lse, ref.dq, ref.dk, ref.dv};
    const size_t ns[] = {nq, c->sp * L * c->H, nq, nkv, nkv};
    const int heads[] = {c->H, c->H, c->H, c->Hkv, c->Hkv}, cols[] = {c->hd, 1, c->hd, c->hd, c->hd};
    const double tols[] = {2e-2, 5e-3, 3e-2, 3e-2, 3e-2};
    for (int i = 0; i < 5; i++) {
        snprintf(what, sizeof what, "%s vs %s", names[i], vs);
        int failed = check_failed;
        host_compare(what, c, gs[i], rs[i], ns[i], tols[i]);
        if (check_failed != failed) locate_worst(what, gs[i], rs[i], ns[i], (int)L, heads[i], cols[i]);
    }
}

// One case on the `impl` kernels (attn_cuda_set_impl) against the CPU and the flash kernels, and a second run of
// impl that must give the same bits (no atomics in the hand-written kernels; cuDNN's deterministic algorithm).
static inline void replay_against_flash(const char *impl, Case c, uint64_t seed) {
    int T = 2 * c.sp * c.c, QW = c.H * c.hd, KW = c.Hkv * c.hd;
    float *q = host_randn((size_t)T * QW, seed, 1), *k = host_randn((size_t)T * KW, seed + 1, 1);
    float *v = host_randn((size_t)T * KW, seed + 2, 1), *dout = host_randn((size_t)T * QW, seed + 3, 1);
    Result rc = run_ring(&BACKEND_CPU, &c, q, k, v, dout);
    attn_cuda_set_impl("flash");
    Result rf = run_ring(&BACKEND_CUDA, &c, q, k, v, dout);
    attn_cuda_set_impl(impl);
    Result ri = run_ring(&BACKEND_CUDA, &c, q, k, v, dout);
    compare_pair("cpu", &c, ri, rc);
    compare_pair("flash", &c, ri, rf);
    Result again = run_ring(&BACKEND_CUDA, &c, q, k, v, dout);
    size_t L = 2 * (size_t)c.c, nq = c.sp * L * QW, nkv = c.sp * L * KW;
    CHECK(!memcmp(again.out, ri.out, nq * 4) && !memcmp(again.dq, ri.dq, nq * 4) && !memcmp(again.dk, ri.dk, nkv * 4) &&
              !memcmp(again.dv, ri.dv, nkv * 4),
          "H=%d hd=%d sp=%d chunk=%d: a second %s run differs (not deterministic)", c.H, c.hd, c.sp, c.c, impl);
    free_result(rc), free_result(rf), free_result(ri), free_result(again);
    free(q), free(k), free(v), free(dout);
}


