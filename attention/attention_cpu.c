// attention/attention_cpu.c — CPU flash-style attention blocks: online softmax forward, LSE-based backward.
#include <math.h>
#include <omp.h>
#include <string.h>

#include "attention/attention.h"

// KV rows are visited in tiles of this many keys, so one tile of K and V stays in cache while
// every row of the Q block passes over it; a row never holds more than TILE scores.
enum { TILE = 64 };

static inline real dot(const real *a, const real *b, int n) {
    real s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

static inline void axpy(real *y, real a, const real *x, int n) {
#pragma omp simd
    for (int i = 0; i < n; i++) y[i] += a * x[i];
}

void attn_cpu_state_reset(const AttnShape *s, AttnState st, int nq) {
    size_t rows = (size_t)nq * s->n_head;
    memset(st.acc, 0, rows * s->head_dim * sizeof(real));
    for (size_t i = 0; i < rows; i++) {
        st.m[i] = -INFINITY;
        st.l[i] = 0;
    }
}

// The number of keys row i of the Q block may see in a KV block of nk keys.
static inline int visible_keys(AttnMask mask, int i, int nk) { return mask == ATTN_CAUSAL ? i + 1 : nk; }

// Folds keys [j0, j0+n) into one row's state: m, l, acc (hd).
static void forward_row_tile(const real *qi, const real *k, const real *v, int j0, int n, int kv_stride, int hd,
                             real scale, real *m, real *l, real *acc) {
    real sc[TILE];
    real mx = *m;
    for (int j = 0; j < n; j++) {
        sc[j] = dot(qi, k + (size_t)(j0 + j) * kv_stride, hd) * scale;
        mx = sc[j] > mx ? sc[j] : mx;
    }
    // mx is finite here (n >= 1), so exp(*m - mx) is exp(-inf) = 0 on the first tile, never inf - inf.
    real corr = rexp(*m - mx), sum = 0;
    if (corr != 1) for (int d = 0; d < hd; d++) acc[d] *= corr;
    for (int j = 0; j < n; j++) {
        real p = rexp(sc[j] - mx);
        sum += p;
        axpy(acc, p, v + (size_t)(j0 + j) * kv_stride, hd);
    }
    *l = *l * corr + sum;
    *m = mx;
}

void attn_cpu_forward_block(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                            int nk, AttnMask mask) {
    const int H = s->n_head, hd = s->head_dim, group = H / s->n_kv_head;
    const int q_stride = H * hd, kv_stride = s->n_kv_head * hd;
    const real scale = (real)(1.0 / sqrt((double)hd));
    const int q_tiles = (nq + TILE - 1) / TILE;
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (int h = 0; h < H; h++) {
        for (int qt = 0; qt < q_tiles; qt++) {
            const real *kh = k + (size_t)(h / group) * hd, *vh = v + (size_t)(h / group) * hd;
            int i0 = qt * TILE, i1 = i0 + TILE < nq ? i0 + TILE : nq;
            int jmax = visible_keys(mask, i1 - 1, nk);
            for (int j0 = 0; j0 < jmax; j0 += TILE) {
                for (int i = i0; i < i1; i++) {
                    int n = visible_keys(mask, i, nk) - j0;
                    if (n <= 0) continue;
                    if (n > TILE) n = TILE;
                    size_t row = (size_t)i * H + h;
                    forward_row_tile(q + (size_t)i * q_stride + h * hd, kh, vh, j0, n, kv_stride, hd, scale,
                                     &st.m[row], &st.l[row], st.acc + row * hd);
                }
            }
        }
    }
}

void attn_cpu_finalize(const AttnShape *s, AttnState st, real *out, real *lse, int nq) {
    const int hd = s->head_dim;
    const size_t rows = (size_t)nq * s->n_head;
#pragma omp parallel for schedule(static)
    for (size_t r = 0; r < rows; r++) {
        real l = st.l[r];
        real inv = l > 0 ? 1 / l : 0;
        real m = st.m[r];
        for (int d = 0; d < hd; d++) out[r * hd + d] = st.acc[r * hd + d] * inv;
        lse[r] = l > 0 ? m + rlog(l) : -INFINITY;
    }
}

void attn_cpu_backward_prep(const AttnShape *s, real *D, const real *dout, const real *out, int nq) {
    const int hd = s->head_dim;
    const size_t rows = (size_t)nq * s->n_head;
#pragma omp parallel for schedule(static)
    for (size_t r = 0; r < rows; r++) D[r] = dot(dout + r * hd, out + r * hd, hd);
}

// One row of the backward against keys [j0, j0+n):  p = exp(s − lse), dp = dO·v, ds = p (dp − D);
// dq += ds k·scale, dk += ds q·scale, dv += p dO.
static void backward_row_tile(const real *qi, const real *doi, real lse, real Di, real *dqi, const real *k,
                              const real *v, real *dk, real *dv, int j0, int n, int kv_stride, int hd, real scale) {
    for (int j = j0; j < j0 + n; j++) {
        const real *kj = k + (size_t)j * kv_stride, *vj = v + (size_t)j * kv_stride;
        real p = rexp(dot(qi, kj, hd) * scale - lse);
        real ds = p * (dot(doi, vj, hd) - Di) * scale;
        axpy(dqi, ds, kj, hd);
        axpy(dk + (size_t)j * kv_stride, ds, qi, hd);
        axpy(dv + (size_t)j * kv_stride, p, doi, hd);
    }
}

// Parallel over kv heads: each thread owns its kv head's dK/dV and the dQ of the query heads
// that read it, so no two threads write the same element (deterministic, no atomics).
void attn_cpu_backward_block(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                             const real *v, const real *dout, const real *lse, const real *D, int nq, int nk,
                             AttnMask mask) {
    const int H = s->n_head, Hkv = s->n_kv_head, hd = s->head_dim, group = H / Hkv;
    const int q_stride = H * hd, kv_stride = Hkv * hd;
    const real scale = (real)(1.0 / sqrt((double)hd));
#pragma omp parallel for schedule(dynamic, 1)
    for (int g = 0; g < Hkv; g++) {
        const real *kg = k + (size_t)g * hd, *vg = v + (size_t)g * hd;
        real *dkg = dk + (size_t)g * hd, *dvg = dv + (size_t)g * hd;
        for (int h = g * group; h < (g + 1) * group; h++) {
            for (int i0 = 0; i0 < nq; i0 += TILE) {
                int i1 = i0 + TILE < nq ? i0 + TILE : nq;
                int jmax = visible_keys(mask, i1 - 1, nk);
                for (int j0 = 0; j0 < jmax; j0 += TILE) {
                    for (int i = i0; i < i1; i++) {
                        size_t row = (size_t)i * H + h;
                        int n = visible_keys(mask, i, nk) - j0;
                        if (n <= 0 || lse[row] == -INFINITY) continue;
                        if (n > TILE) n = TILE;
                        backward_row_tile(q + (size_t)i * q_stride + h * hd, dout + (size_t)i * q_stride + h * hd,
                                          lse[row], D[row], dq + (size_t)i * q_stride + h * hd, kg, vg, dkg, dvg, j0, n,
                                          kv_stride, hd, scale);
                    }
                }
            }
        }
    }
}
