// attention/attention_cpu.c — CPU flash-style attention blocks: online softmax forward, LSE-based backward.
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "core/comm.h"
#include "core/common.h"

// Q and KV blocks are visited in (TILE × TILE) tiles: the scores of one tile are the most that
// ever exist at once, and each tile is a handful of small GEMMs. After each tile, comm_poke() lets a
// ring hop in flight move (core/comm.h: COMM_PROGRESS_COMPUTE).
enum { TILE = ATTN_CPU_TILE };

static long g_doc_tiles_skipped;   // forward tiles skipped by the document mask (all threads)

long attn_cpu_doc_tiles_skipped(void) {
    long n;
#pragma omp atomic read
    n = g_doc_tiles_skipped;
    return n;
}

// True when no Q row i0.. (rows) can share a document with a K row j0.. (cols): their id ranges are disjoint.
static bool docs_disjoint(AttnDocs d, int i0, int rows, int j0, int cols) {
    int32_t qlo = d.q[i0], qhi = d.q[i0], klo = d.k[j0], khi = d.k[j0];
    for (int i = 1; i < rows; i++) {
        qlo = d.q[i0 + i] < qlo ? d.q[i0 + i] : qlo;
        qhi = d.q[i0 + i] > qhi ? d.q[i0 + i] : qhi;
    }
    for (int j = 1; j < cols; j++) {
        klo = d.k[j0 + j] < klo ? d.k[j0 + j] : klo;
        khi = d.k[j0 + j] > khi ? d.k[j0 + j] : khi;
    }
    return qhi < klo || khi < qlo;
}

static inline real dot(const real *a, const real *b, int n) {
    real s = 0;
#pragma omp simd reduction(+ : s)
    for (int i = 0; i < n; i++) s += a[i] * b[i];
    return s;
}

void attn_cpu_state_reset(const AttnShape *s, AttnState st, int nq) {
    size_t rows = (size_t)nq * s->n_head;
    memset(st.acc, 0, rows * s->head_dim * sizeof(real));
    for (size_t i = 0; i < rows; i++) {
        st.m[i] = -INFINITY;
        st.l[i] = 0;
    }
}

// Two (TILE × TILE) tiles per thread, allocated once and kept for the process's life: too big for a thread's
// stack. Every tile is also listed in g_tiles, so that it stays reachable (not a leak) when its thread ends.
enum { MAX_TILES = 4096 };
static real *g_tiles[MAX_TILES];
static int g_n_tiles;

static real *tile_scratch(int which) {
    static _Thread_local real *tiles[2];
    if (!tiles[which]) {
        tiles[which] = xmalloc((size_t)TILE * TILE * sizeof(real), "attention tiles");
        int k;
#pragma omp atomic capture
        k = g_n_tiles++;
        if (k < MAX_TILES) g_tiles[k] = tiles[which];
    }
    return tiles[which];
}

// The number of keys row i of the Q block may see in a KV block of nk keys.
static inline int visible_keys(AttnMask mask, int i, int nk) { return mask == ATTN_CAUSAL ? i + 1 : nk; }

// Row-major C (m, n) = alpha · A (m, k) · B (n, k)ᵀ + beta · C. Inside a parallel region OpenBLAS
// (OpenMP build) runs single-threaded, so each thread multiplies its own tiles.
static inline void gemm_nt(int m, int n, int k, real alpha, const real *A, int lda, const real *B, int ldb, real beta,
                           real *C, int ldc) {
    cblas_xgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, alpha, A, lda, B, ldb, beta, C, ldc);
}
// C (m, n) += A (m, k) · B (k, n)
static inline void gemm_nn_acc(int m, int n, int k, const real *A, int lda, const real *B, int ldb, real *C, int ldc) {
    cblas_xgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1, A, lda, B, ldb, 1, C, ldc);
}
// C (m, n) += A (k, m)ᵀ · B (k, n)
static inline void gemm_tn_acc(int m, int n, int k, const real *A, int lda, const real *B, int ldb, real *C, int ldc) {
    cblas_xgemm(CblasRowMajor, CblasTrans, CblasNoTrans, m, n, k, 1, A, lda, B, ldb, 1, C, ldc);
}

// Whether keys j0.. (cols) all belong to one document, *doc: then that document's query rows need no
// masking in the tile (most tiles), and only the other rows are compared key by key.
static bool keys_one_doc(AttnDocs d, int j0, int cols, int32_t *doc) {
    *doc = d.k[j0];
    for (int j = 1; j < cols; j++)
        if (d.k[j0 + j] != *doc) return false;
    return true;
}

// Sets a[j] to `value` for the keys j < n of tile j0.. outside query row i's document.
static inline void mask_other_docs(real *a, int n, AttnDocs d, int i, int j0, real value) {
    const int32_t doc = d.q[i], *kd = d.k + j0;
#pragma omp simd
    for (int j = 0; j < n; j++) a[j] = kd[j] != doc ? value : a[j];
}

// Online softmax over one (rows × cols) tile of scores S (ld TILE) of query rows i0.. against
// keys j0..: turns S into P = exp(S - m_new), updates m and l and rescales the rows of acc.
// With document ids, keys of another document get score -inf first.
static void softmax_tile(real *S, int rows, int cols, int i0, int j0, AttnMask mask, int nk, AttnDocs docs, real *m,
                         real *l, real *acc, int H, int hd) {
    int32_t doc = 0;
    bool one = docs.q && keys_one_doc(docs, j0, cols, &doc);
    for (int r = 0; r < rows; r++) {
        real *sr = S + (size_t)r * TILE;
        int n = visible_keys(mask, i0 + r, nk) - j0;
        n = n < 0 ? 0 : n > cols ? cols : n;
        size_t row = (size_t)(i0 + r) * H;
        if (docs.q && !(one && docs.q[i0 + r] == doc)) mask_other_docs(sr, n, docs, i0 + r, j0, -INFINITY);
        real mx = m[row];
#pragma omp simd reduction(max : mx)
        for (int j = 0; j < n; j++) mx = sr[j] > mx ? sr[j] : mx;
        if (n == 0 || mx == -INFINITY) {   // nothing visible in this tile: the row's state is unchanged
            memset(sr, 0, cols * sizeof(real));
            continue;
        }
        // mx is finite (n >= 1), so exp(m_old - mx) is exp(-inf) = 0 on a row's first keys, never inf - inf.
        real corr = rexp(m[row] - mx), sum = 0;
#pragma omp simd reduction(+ : sum)
        for (int j = 0; j < n; j++) {
            sr[j] = rexp(sr[j] - mx);
            sum += sr[j];
        }
        for (int j = n; j < cols; j++) sr[j] = 0;
        l[row] = l[row] * corr + sum;
        m[row] = mx;
        if (corr != 1) {
            real *a = acc + row * hd;
            for (int d = 0; d < hd; d++) a[d] *= corr;
        }
    }
}

void attn_cpu_forward_block(const AttnShape *s, AttnState st, const real *q, int nq, const real *k, const real *v,
                            int nk, AttnMask mask, const AttnDocs *doc_ids) {
    const AttnDocs docs = doc_ids ? *doc_ids : (AttnDocs){0};   // docs.q == NULL: no document mask
    if (s->qkv != ACT_F32) fail("CPU attention: q, k, v must be fp32 (--activations bf16 is a CUDA setting)");
    const int H = s->n_head, hd = s->head_dim, group = H / s->n_kv_head;
    const int q_stride = H * hd, kv_stride = s->n_kv_head * hd;
    const real scale = (real)(1.0 / sqrt((double)hd));
    const int q_tiles = (nq + TILE - 1) / TILE;
    long skipped = 0;
#pragma omp parallel for collapse(2) schedule(dynamic, 1) reduction(+ : skipped)
    for (int h = 0; h < H; h++) {
        for (int qt = 0; qt < q_tiles; qt++) {
            real *S = tile_scratch(0);   // (TILE, TILE): one tile of scores, then of probabilities
            const real *kh = k + (size_t)(h / group) * hd, *vh = v + (size_t)(h / group) * hd;
            int i0 = qt * TILE, rows = nq - i0 < TILE ? nq - i0 : TILE;
            int jmax = visible_keys(mask, i0 + rows - 1, nk);
            const real *qh = q + (size_t)i0 * q_stride + h * hd;
            real *acc = st.acc + (size_t)i0 * q_stride + h * hd;
            for (int j0 = 0; j0 < jmax; j0 += TILE) {
                int cols = jmax - j0 < TILE ? jmax - j0 : TILE;
                if (docs.q && docs_disjoint(docs, i0, rows, j0, cols)) {
                    skipped++;
                    continue;
                }
                gemm_nt(rows, cols, hd, scale, qh, q_stride, kh + (size_t)j0 * kv_stride, kv_stride, 0, S, TILE);
                softmax_tile(S, rows, cols, i0, j0, mask, nk, docs, st.m + h, st.l + h, st.acc + h * hd, H, hd);
                gemm_nn_acc(rows, hd, cols, S, TILE, vh + (size_t)j0 * kv_stride, kv_stride, acc, q_stride);
                comm_poke();
            }
        }
    }
    if (skipped) {
#pragma omp atomic
        g_doc_tiles_skipped += skipped;
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

// P and dS of one (rows × cols) tile from the global lse and D: P = exp(S − lse) (0 where masked
// or for rows with no key), dS = P ∘ (dP − D) · scale. S holds the scaled scores, dP = dO Vᵀ.
static void backward_tile(real *S, real *dP, int rows, int cols, int i0, int j0, AttnMask mask, int nk, AttnDocs docs,
                          const real *lse, const real *D, int H, real scale) {
    int32_t doc = 0;
    bool one = docs.q && keys_one_doc(docs, j0, cols, &doc);
    for (int r = 0; r < rows; r++) {
        real *sr = S + (size_t)r * TILE, *dr = dP + (size_t)r * TILE;
        size_t row = (size_t)(i0 + r) * H;
        int n = visible_keys(mask, i0 + r, nk) - j0;
        n = n < 0 ? 0 : n > cols ? cols : n;
        if (lse[row] == -INFINITY) n = 0;
        real L = lse[row], Di = D[row];
#pragma omp simd
        for (int j = 0; j < n; j++) {
            real p = rexp(sr[j] - L);
            sr[j] = p;
            dr[j] = p * (dr[j] - Di) * scale;
        }
        for (int j = n; j < cols; j++) sr[j] = dr[j] = 0;
        if (docs.q && !(one && docs.q[i0 + r] == doc)) {   // another document's keys: P = dS = 0
            mask_other_docs(sr, n, docs, i0 + r, j0, 0);
            mask_other_docs(dr, n, docs, i0 + r, j0, 0);
        }
    }
}

// What one backward block needs, for the tile helpers below.
typedef struct {
    const AttnShape *s;
    const real *q, *k, *v, *dout, *lse, *D;
    int nq, nk;
    AttnMask mask;
    AttnDocs docs;
    real scale;
} BwdArgs;

// P (into S) and dS (into dP) of query tile (head h, rows i0..) against key tile (j0.., cols keys).
static void p_ds_tile(const BwdArgs *a, int h, int i0, int rows, int j0, int cols, real *S, real *dP) {
    const int H = a->s->n_head, hd = a->s->head_dim, g = h / (H / a->s->n_kv_head);
    const int qs = H * hd, ks = a->s->n_kv_head * hd;
    const size_t qo = (size_t)i0 * qs + h * hd, ko = (size_t)j0 * ks + g * hd;
    gemm_nt(rows, cols, hd, a->scale, a->q + qo, qs, a->k + ko, ks, 0, S, TILE);
    gemm_nt(rows, cols, hd, 1, a->dout + qo, qs, a->v + ko, ks, 0, dP, TILE);
    backward_tile(S, dP, rows, cols, i0, j0, a->mask, a->nk, a->docs, a->lse + h, a->D + h, H, a->scale);
    comm_poke();
}

// The keys of tile j0 that query tile (i0, rows) sees: 0 when none.
static int tile_cols(const BwdArgs *a, int i0, int rows, int j0) {
    int jmax = visible_keys(a->mask, i0 + rows - 1, a->nk);
    return j0 >= jmax ? 0 : jmax - j0 < TILE ? jmax - j0 : TILE;
}

// A tile the document mask hides entirely: nothing to add.
static bool doc_skip(const BwdArgs *a, int i0, int rows, int j0, int cols) {
    return a->docs.q && docs_disjoint(a->docs, i0, rows, j0, cols);
}

// One pass, parallel over kv heads: each thread owns its kv head's dK/dV and the dQ of the query
// heads that read it, so no two threads write the same element (deterministic, no atomics).
static void backward_by_kv_head(const BwdArgs *a, real *dq, real *dk, real *dv) {
    const int H = a->s->n_head, Hkv = a->s->n_kv_head, hd = a->s->head_dim, group = H / Hkv;
    const int qs = H * hd, ks = Hkv * hd;
#pragma omp parallel for schedule(dynamic, 1)
    for (int g = 0; g < Hkv; g++) {
        real *S = tile_scratch(0), *dP = tile_scratch(1);   // (TILE, TILE): scores then P; dP then dS
        for (int h = g * group; h < (g + 1) * group; h++)
            for (int i0 = 0; i0 < a->nq; i0 += TILE) {
                int rows = a->nq - i0 < TILE ? a->nq - i0 : TILE, cols;
                const size_t qo = (size_t)i0 * qs + h * hd;
                for (int j0 = 0; (cols = tile_cols(a, i0, rows, j0)) > 0; j0 += TILE) {
                    if (doc_skip(a, i0, rows, j0, cols)) continue;
                    const size_t ko = (size_t)j0 * ks + g * hd;
                    p_ds_tile(a, h, i0, rows, j0, cols, S, dP);
                    gemm_nn_acc(rows, hd, cols, dP, TILE, a->k + ko, ks, dq + qo, qs);       // dQ += dS K
                    gemm_tn_acc(cols, hd, rows, dP, TILE, a->q + qo, qs, dk + ko, ks);       // dK += dSᵀ Q
                    gemm_tn_acc(cols, hd, rows, S, TILE, a->dout + qo, qs, dv + ko, ks);     // dV += Pᵀ dO
                }
            }
    }
}

// Two passes for when there are fewer kv heads than threads (GQA/MQA on many cores): dK/dV
// parallel over (kv head, key tile), then dQ parallel over (head, query tile). P and dS are
// computed twice, but every thread has work; each output element is summed in the same order as
// in the one-pass version, so the results are bit-identical to it.
static void backward_by_tiles(const BwdArgs *a, real *dq, real *dk, real *dv) {
    const int H = a->s->n_head, Hkv = a->s->n_kv_head, hd = a->s->head_dim, group = H / Hkv;
    const int qs = H * hd, ks = Hkv * hd, q_tiles = (a->nq + TILE - 1) / TILE, k_tiles = (a->nk + TILE - 1) / TILE;
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (int g = 0; g < Hkv; g++)
        for (int kt = 0; kt < k_tiles; kt++) {
            real *S = tile_scratch(0), *dP = tile_scratch(1);
            const int j0 = kt * TILE;
            const size_t ko = (size_t)j0 * ks + g * hd;
            for (int h = g * group; h < (g + 1) * group; h++)
                for (int i0 = 0; i0 < a->nq; i0 += TILE) {
                    int rows = a->nq - i0 < TILE ? a->nq - i0 : TILE, cols = tile_cols(a, i0, rows, j0);
                    if (cols == 0 || doc_skip(a, i0, rows, j0, cols)) continue;
                    const size_t qo = (size_t)i0 * qs + h * hd;
                    p_ds_tile(a, h, i0, rows, j0, cols, S, dP);
                    gemm_tn_acc(cols, hd, rows, dP, TILE, a->q + qo, qs, dk + ko, ks);       // dK += dSᵀ Q
                    gemm_tn_acc(cols, hd, rows, S, TILE, a->dout + qo, qs, dv + ko, ks);     // dV += Pᵀ dO
                }
        }
#pragma omp parallel for collapse(2) schedule(dynamic, 1)
    for (int h = 0; h < H; h++)
        for (int qt = 0; qt < q_tiles; qt++) {
            real *S = tile_scratch(0), *dP = tile_scratch(1);
            const int i0 = qt * TILE, rows = a->nq - i0 < TILE ? a->nq - i0 : TILE, g = h / group;
            const size_t qo = (size_t)i0 * qs + h * hd;
            int cols;
            for (int j0 = 0; (cols = tile_cols(a, i0, rows, j0)) > 0; j0 += TILE) {
                if (doc_skip(a, i0, rows, j0, cols)) continue;
                p_ds_tile(a, h, i0, rows, j0, cols, S, dP);
                gemm_nn_acc(rows, hd, cols, dP, TILE, a->k + (size_t)j0 * ks + g * hd, ks, dq + qo, qs);   // dQ += dS K
            }
        }
}

// RINGGPT_ATTN_BACKWARD=heads|tiles forces a variant (tests compare them); by default the
// one-pass version unless there are fewer kv heads than threads.
void attn_cpu_backward_block(const AttnShape *s, real *dq, real *dk, real *dv, const real *q, const real *k,
                             const real *v, const real *out, const real *dout, const real *lse, const real *D, int nq,
                             int nk, AttnMask mask, const AttnDocs *docs) {
    (void)out;   // D = rowsum(dout ∘ out) is given
    if (s->qkv != ACT_F32) fail("CPU attention: q, k, v must be fp32 (--activations bf16 is a CUDA setting)");
    BwdArgs a = {.s = s, .q = q, .k = k, .v = v, .dout = dout, .lse = lse, .D = D, .nq = nq, .nk = nk, .mask = mask,
                 .docs = docs ? *docs : (AttnDocs){0},
                 .scale = (real)(1.0 / sqrt((double)s->head_dim))};
    const char *force = getenv("RINGGPT_ATTN_BACKWARD");   // a few ns next to a tile's GEMMs; read per call so tests can switch
    bool tiles = force ? strcmp(force, "tiles") == 0 : s->n_kv_head < omp_get_max_threads();
    if (tiles) backward_by_tiles(&a, dq, dk, dv);
    else backward_by_kv_head(&a, dq, dk, dv);
}
