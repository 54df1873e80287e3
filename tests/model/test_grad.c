// tests/model/test_grad.c — finite-difference checks in double precision of every op's backward and of the whole model.
// Linked against ringgpt_core64 (real = double): the same source as the product, in double.
#include <string.h>

#include "attention/attention.h"
#include "core/backend.h"
#include "core/common.h"
#include "core/rng.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "tests/check.h"

static const Backend *be = &BACKEND_CPU;
static Rng rng;
static const double EPS = 1e-5, TOL = 1e-4;

// The test tensors: every one is listed and freed at the end (the sanitized build checks for leaks).
static real *g_tensors[256];
static int g_n_tensors;
static real *keep(real *x) {
    if (g_n_tensors == 256) abort();
    return g_tensors[g_n_tensors++] = x;
}
static void free_tensors(void) {
    while (g_n_tensors) free(g_tensors[--g_n_tensors]);
}
static real *randn(size_t n, double std) {
    real *x = keep(xmalloc(n * sizeof(real), "test"));
    for (size_t i = 0; i < n; i++) x[i] = (real)(std * rng_normal(&rng));
    return x;
}
static real *zeros(size_t n) { return keep(xcalloc(n, sizeof(real), "test")); }
static double dotp(const real *a, const real *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

// A scalar loss of the current inputs (the op's output projected on a fixed random tensor).
typedef double (*LossFn)(void *ctx);

// Central differences on `samples` elements of x against the analytic gradient; reports the max relative error.
static void fd_check(const char *what, real *x, size_t n, const real *analytic, LossFn loss, void *ctx, int samples) {
    double scale = 0, worst = 0;
    for (size_t i = 0; i < n; i++) scale = fmax(scale, fabs(analytic[i]));
    for (int s = 0; s < samples; s++) {
        size_t i = samples >= (int)n ? (size_t)s % n : rng_below(&rng, n);
        real keep = x[i];
        x[i] = keep + EPS;
        double lp = loss(ctx);
        x[i] = keep - EPS;
        double lm = loss(ctx);
        x[i] = keep;
        double num = (lp - lm) / (2 * EPS);
        worst = fmax(worst, rel_err(analytic[i], num, 1e-6 * (1 + scale)));
    }
    CHECK(worst < TOL, "%s: max relative error %.3e", what, worst);
    printf("  %-40s max rel err %.2e\n", what, worst);
}

// ---- rmsnorm ---------------------------------------------------------------------------------
typedef struct { int N, C; real *x, *w, *y, *rstd, *R; } NormCtx;
static double norm_loss(void *p) {
    NormCtx *c = p;
    be->rmsnorm_forward(c->y, c->rstd, c->x, NULL, c->w, c->N, c->C, 1e-5f, ACT_F32);
    return dotp(c->y, c->R, (size_t)c->N * c->C);
}
static void test_rmsnorm(void) {
    NormCtx c = {.N = 5, .C = 24};
    size_t n = (size_t)c.N * c.C;
    c.x = randn(n, 1), c.w = randn(c.C, 1), c.y = zeros(n), c.rstd = zeros(c.N), c.R = randn(n, 1);
    real *dx = zeros(n), *dw = zeros(c.C);
    norm_loss(&c);
    be->rmsnorm_backward(dx, dw, c.R, c.x, c.w, c.rstd, c.N, c.C);
    fd_check("rmsnorm dx", c.x, n, dx, norm_loss, &c, (int)n);
    fd_check("rmsnorm dw", c.w, c.C, dw, norm_loss, &c, c.C);
}

// The residual add fused into the norm: s = x + a (written over a copy of x), y = RMSNorm(s); the loss reads
// both, so d/dx = d/da = rmsnorm's dx + R2.
typedef struct { int N, C; real *x, *a, *s, *w, *y, *rstd, *R, *R2; } ResNormCtx;
static double res_norm_loss(void *p) {
    ResNormCtx *c = p;
    size_t n = (size_t)c->N * c->C;
    memcpy(c->s, c->x, n * sizeof(real));
    be->rmsnorm_forward(c->y, c->rstd, c->s, c->a, c->w, c->N, c->C, 1e-5f, ACT_F32);
    return dotp(c->y, c->R, n) + dotp(c->s, c->R2, n);
}
static void test_rmsnorm_residual(void) {
    ResNormCtx c = {.N = 5, .C = 24};
    size_t n = (size_t)c.N * c.C;
    c.x = randn(n, 1), c.a = randn(n, 1), c.s = zeros(n), c.w = randn(c.C, 1), c.y = zeros(n), c.rstd = zeros(c.N);
    c.R = randn(n, 1), c.R2 = randn(n, 1);
    res_norm_loss(&c);
    real *dx = zeros(n), *dw = zeros(c.C);
    memcpy(dx, c.R2, n * sizeof(real));
    be->rmsnorm_backward(dx, dw, c.R, c.s, c.w, c.rstd, c.N, c.C);
    fd_check("rmsnorm + residual dx", c.x, n, dx, res_norm_loss, &c, (int)n);
    fd_check("rmsnorm + residual dadd", c.a, n, dx, res_norm_loss, &c, (int)n);
    fd_check("rmsnorm + residual dw", c.w, c.C, dw, res_norm_loss, &c, c.C);
}

// ---- matmul ----------------------------------------------------------------------------------
typedef struct { int N, In, Out; real *in, *w, *out, *R; } MatCtx;
static double mat_loss(void *p) {
    MatCtx *c = p;
    be->matmul_forward(c->out, c->in, c->w, c->N, c->In, c->Out, ACT_F32, ACT_F32);
    return dotp(c->out, c->R, (size_t)c->N * c->Out);
}
static void test_matmul(void) {
    MatCtx c = {.N = 7, .In = 12, .Out = 9};
    c.in = randn((size_t)c.N * c.In, 1), c.w = randn((size_t)c.Out * c.In, 1), c.out = zeros((size_t)c.N * c.Out);
    c.R = randn((size_t)c.N * c.Out, 1);
    real *din = zeros((size_t)c.N * c.In), *dw = zeros((size_t)c.Out * c.In);
    be->matmul_backward(din, dw, c.R, c.in, c.w, c.N, c.In, c.Out, 0, ACT_F32, ACT_F32, ACT_F32);
    fd_check("matmul din", c.in, (size_t)c.N * c.In, din, mat_loss, &c, 40);
    fd_check("matmul dw", c.w, (size_t)c.Out * c.In, dw, mat_loss, &c, 40);
}

// ---- embedding -------------------------------------------------------------------------------
typedef struct { int N, C, V; int32_t *tok; real *table, *out, *R; } EmbCtx;
static double emb_loss(void *p) {
    EmbCtx *c = p;
    be->embedding_forward(c->out, c->tok, c->table, c->N, c->C);
    return dotp(c->out, c->R, (size_t)c->N * c->C);
}
static void test_embedding(void) {
    EmbCtx c = {.N = 9, .C = 8, .V = 5};
    int32_t tok[9] = {0, 3, 3, 1, 4, 0, 3, 2, 1};   // repeated tokens: their gradients add
    c.tok = tok, c.table = randn((size_t)c.V * c.C, 1), c.out = zeros((size_t)c.N * c.C), c.R = randn((size_t)c.N * c.C, 1);
    real *dt = zeros((size_t)c.V * c.C);
    be->embedding_backward(dt, c.R, c.tok, c.N, c.C);
    fd_check("embedding dtable", c.table, (size_t)c.V * c.C, dt, emb_loss, &c, c.V * c.C);
}

// ---- rope (q and k in one call) ----------------------------------------------------------------
typedef struct { int N, nq, nk, hd; int32_t *pos; real *xq, *xk, *yq, *yk, *Rq, *Rk; double inv_freq[4], scale; } RopeCtx;
static double rope_loss(void *p) {
    RopeCtx *c = p;
    size_t nq = (size_t)c->N * c->nq * c->hd, nk = (size_t)c->N * c->nk * c->hd;
    memcpy(c->yq, c->xq, nq * sizeof(real));
    memcpy(c->yk, c->xk, nk * sizeof(real));
    be->rope(c->yq, c->yk, c->pos, c->N, c->nq, c->nk, c->hd, c->inv_freq, c->scale, 0, ACT_F32);
    return dotp(c->yq, c->Rq, nq) + dotp(c->yk, c->Rk, nk);
}
static void test_rope(void) {
    RopeCtx c = {.N = 6, .nq = 3, .nk = 1, .hd = 8};
    // YaRN's table: scaled frequencies and cos/sin times its attention factor (1.32), so the backward must be the
    // scaled transpose
    ModelConfig mc = {.dim = 8, .n_head = 1, .rope_theta = 10000.0f,
                      .rope_scaling = {.type = ROPE_YARN, .factor = 16, .original_max_pos = 64, .beta_fast = 32, .beta_slow = 1}};
    rope_frequencies(&mc, 0, c.inv_freq, &c.scale);
    int32_t pos[6] = {0, 1, 7, 100, 5000, 1000000};   // global positions, far ones included
    size_t nq = (size_t)c.N * c.nq * c.hd, nk = (size_t)c.N * c.nk * c.hd;
    c.pos = pos, c.xq = randn(nq, 1), c.xk = randn(nk, 1), c.yq = zeros(nq), c.yk = zeros(nk);
    c.Rq = randn(nq, 1), c.Rk = randn(nk, 1);
    real *dq = zeros(nq), *dk = zeros(nk);
    memcpy(dq, c.Rq, nq * sizeof(real));
    memcpy(dk, c.Rk, nk * sizeof(real));
    be->rope(dq, dk, c.pos, c.N, c.nq, c.nk, c.hd, c.inv_freq, c.scale, 1, ACT_F32);   // the backward is the inverse rotation
    fd_check("rope dq", c.xq, nq, dq, rope_loss, &c, (int)nq);
    fd_check("rope dk", c.xk, nk, dk, rope_loss, &c, (int)nk);
}

// ---- swiglu ----------------------------------------------------------------------------------
typedef struct { int N, F; real *g, *u, *h, *R; } SwiCtx;
static double swi_loss(void *p) {
    SwiCtx *c = p;
    be->swiglu_forward(c->h, c->g, c->u, c->N, c->F, ACT_F32);
    return dotp(c->h, c->R, (size_t)c->N * c->F);
}
static void test_swiglu(void) {
    SwiCtx c = {.N = 4, .F = 10};
    size_t n = (size_t)c.N * c.F;
    c.g = randn(n, 2), c.u = randn(n, 1), c.h = zeros(n), c.R = randn(n, 1);
    real *dg = zeros(n), *du = zeros(n);
    be->swiglu_backward(dg, du, c.R, c.g, c.u, c.N, c.F, ACT_F32);
    fd_check("swiglu dgate", c.g, n, dg, swi_loss, &c, (int)n);
    fd_check("swiglu dup", c.u, n, du, swi_loss, &c, (int)n);
}

// ---- fused LM head + cross-entropy -------------------------------------------------------------
typedef struct { int N, C, V, chunk; real *x, *w; int32_t *tgt; } CeCtx;
static double ce_loss(void *p) {
    CeCtx *c = p;
    return be->lmhead_ce(NULL, NULL, NULL, c->x, c->w, c->tgt, c->N, c->C, c->V, c->chunk, 1.0, ACT_F32);
}
static void test_lmhead(void) {
    CeCtx c = {.N = 11, .C = 8, .V = 13, .chunk = 4};
    int32_t tgt[11] = {1, 12, -1, 0, 5, 5, 7, -1, 3, 2, 11};   // -1: no target
    c.x = randn((size_t)c.N * c.C, 1), c.w = randn((size_t)c.V * c.C, 1), c.tgt = tgt;
    real *dx = zeros((size_t)c.N * c.C), *dw = zeros((size_t)c.V * c.C);
    double loss = be->lmhead_ce(dx, dw, NULL, c.x, c.w, c.tgt, c.N, c.C, c.V, c.chunk, 1.0, ACT_F32);
    fd_check("lm head + CE dx", c.x, (size_t)c.N * c.C, dx, ce_loss, &c, c.N * c.C);
    fd_check("lm head + CE dw", c.w, (size_t)c.V * c.C, dw, ce_loss, &c, c.V * c.C);
    // chunked (4 rows at a time) equals unchunked (all rows at once): loss and both gradients
    real *dx1 = zeros((size_t)c.N * c.C), *dw1 = zeros((size_t)c.V * c.C);
    double loss1 = be->lmhead_ce(dx1, dw1, NULL, c.x, c.w, c.tgt, c.N, c.C, c.V, c.N, 1.0, ACT_F32);
    CHECK(rel_err(loss, loss1, 1e-12) < 1e-12, "chunked loss %.15g != unchunked %.15g", loss, loss1);
    double e = 0;
    for (int i = 0; i < c.N * c.C; i++) e = fmax(e, rel_err(dx[i], dx1[i], 1e-12));
    for (int i = 0; i < c.V * c.C; i++) e = fmax(e, rel_err(dw[i], dw1[i], 1e-12));
    CHECK(e < 1e-10, "chunked gradients differ from unchunked: %.3e", e);
}

// ---- attention (one causal block, GQA) ---------------------------------------------------------
typedef struct { AttnShape s; int T; real *q, *k, *v, *out, *lse, *tmp, *R; const int32_t *doc; } AttCtx;
static double att_loss(void *p) {
    AttCtx *c = p;
    AttnRows t = {.L = c->T, .q = c->q, .k = c->k, .v = c->v, .out = c->out, .lse = c->lse, .tmp = c->tmp};
    attention_causal_forward(be, &c->s, &t, &(AttnLayout){.docs = c->doc});
    return dotp(c->out, c->R, (size_t)c->T * c->s.n_head * c->s.head_dim);
}
// doc: document ids of the T rows (--doc-mask), or NULL.
static void test_attention(const int32_t *doc) {
    AttCtx c = {.s = {.n_head = 4, .n_kv_head = 2, .head_dim = 8}, .T = 70, .doc = doc};
    size_t qn = (size_t)c.T * 4 * 8, kvn = (size_t)c.T * 2 * 8;
    c.q = randn(qn, 1), c.k = randn(kvn, 1), c.v = randn(kvn, 1), c.out = zeros(qn), c.lse = zeros((size_t)c.T * 4);
    c.tmp = zeros((size_t)c.T * 4), c.R = randn(qn, 1);
    real *dq = zeros(qn), *dk = zeros(kvn), *dv = zeros(kvn), *D = zeros((size_t)c.T * 4);
    att_loss(&c);
    AttnRows t = {.L = c.T, .q = c.q, .k = c.k, .v = c.v, .out = c.out, .lse = c.lse, .tmp = D, .dout = c.R, .dq = dq,
                  .dk = dk, .dv = dv};
    attention_causal_backward(be, &c.s, &t, &(AttnLayout){.docs = doc});
    fd_check(doc ? "attention (doc ids) dq" : "attention dq", c.q, qn, dq, att_loss, &c, 60);
    fd_check(doc ? "attention (doc ids) dk" : "attention dk", c.k, kvn, dk, att_loss, &c, 60);
    fd_check(doc ? "attention (doc ids) dv" : "attention dv", c.v, kvn, dv, att_loss, &c, 60);
}

// ---- the whole model ---------------------------------------------------------------------------
typedef struct { GPT *m; Batch *b; double n; } ModelCtx;
static double model_loss(void *p) {
    ModelCtx *c = p;
    return gpt_forward(c->m, c->b, 0, false, NULL) / c->n;
}
// doc_mask: the model with --doc-mask over rows packing documents (starts 0, 4, 5 and 0, 7).
static void test_model(bool tied, bool doc_mask) {
    ModelConfig cfg;
    config_preset(&cfg, "tiny");
    cfg.n_layer = 2, cfg.dim = 16, cfg.n_head = 4, cfg.n_kv_head = 2, cfg.ffn_dim = 24, cfg.vocab_size = 11;
    cfg.tie_embeddings = tied;
    GPT m;
    gpt_init(&m, &cfg, be, 7, GPT_TRAIN);
    // larger weights than the 0.02 init so that every path carries a visible gradient
    for (size_t i = 0; i < m.table.total; i++) m.params[i] += (real)(0.3 * rng_normal(&rng));
    Batch b = {.B = 2, .T = 12};
    int32_t tok[24], tgt[24], pos[24];
    for (int i = 0; i < 24; i++) tok[i] = (int32_t)rng_below(&rng, 11), tgt[i] = (int32_t)rng_below(&rng, 11), pos[i] = 500 + i % 12;
    tgt[5] = -1;
    b.tokens = tok, b.targets = tgt, b.pos = pos;
    int32_t docs[2][12] = {{0, 0, 0, 0, 1, 2, 2, 2, 2, 2, 2, 2}, {0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1}};   // starts {0, 4, 5}, {0, 7}
    b.docs = &docs[0][0], b.doc_cap = 12;
    m.doc_mask = doc_mask;
    ModelCtx c = {.m = &m, .b = &b, .n = 23};
    gpt_zero_grad(&m);
    gpt_forward(&m, &b, 1.0 / c.n, true, NULL);
    gpt_backward(&m, &b);
    for (const ParamSpec *p = m.table.specs; p < m.table.specs + m.table.count; p++) {
        char what[96];
        snprintf(what, sizeof what, "model%s%s %s", tied ? " (tied)" : "", doc_mask ? " (doc mask)" : "", p->name);
        fd_check(what, m.params + p->offset, p->numel, m.grads + p->offset, model_loss, &c, 6);
    }
    gpt_free(&m);
}

int main(void) {
    rng_seed(&rng, 42);
    test_rmsnorm();
    test_rmsnorm_residual();
    test_matmul();
    test_embedding();
    test_rope();
    test_swiglu();
    test_lmhead();
    test_attention(NULL);
    int32_t doc[70];
    for (int t = 0; t < 70; t++) doc[t] = t < 20 ? 0 : t < 21 ? 1 : t < 52 ? 2 : 3;
    test_attention(doc);
    test_model(false, false);
    test_model(true, false);
    test_model(false, true);
    free_tensors();
    return check_summary();
}
