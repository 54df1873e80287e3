// model/gpt.c — the model orchestration, written once: forward and hand-written backward through the backend table.
#include "model/gpt.h"

#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "attention/ring.h"
#include "core/common.h"

void gpt_init(GPT *m, const ModelConfig *c, const Backend *be, uint64_t seed) {
    memset(m, 0, sizeof *m);
    config_validate(c);
    m->cfg = *c;
    m->be = be;
    m->table = params_build(c);
    size_t bytes = m->table.total * sizeof(real);
    real *host = xmalloc(bytes, "initial weights");
    params_init(&m->table, host, seed);
    m->params = be->alloc(bytes, "parameters");
    m->grads = be->alloc(bytes, "gradients");
    be->to_device(m->params, host, bytes);
    be->zero(m->grads, bytes);
    free(host);
    m->w = tensors_bind(&m->table, c, m->params);
    m->g = tensors_bind(&m->table, c, m->grads);
    m->loss_chunk = 256;
}

static void acts_free(GPT *m) {
    Activations *a = &m->act;
    if (!a->layers) return;
    const Backend *be = m->be;
    for (int l = 0; l < m->cfg.n_layer; l++) {
        LayerActs *L = &a->layers[l];
        real *bufs[] = {L->x, L->rstd1, L->xn1, L->q, L->k, L->v, L->att, L->lse, L->xm, L->rstd2, L->xn2, L->gate, L->up};
        for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) be->release(bufs[i]);
    }
    free(a->layers);
    real *shared[] = {a->x_final, a->rstd_f, a->xn_f, a->dx_f, a->res, a->d_c, a->d_q, a->d_k, a->d_v, a->h,
                      a->d_gate, a->d_up, a->attn_tmp};
    for (size_t i = 0; i < sizeof shared / sizeof shared[0]; i++) be->release(shared[i]);
    memset(a, 0, sizeof *a);
}

void gpt_free(GPT *m) {
    acts_free(m);
    if (m->doc_ids) m->be->release(m->doc_ids);
    free(m->doc_ids_host);
    m->be->release(m->params);
    m->be->release(m->grads);
    tensors_free(&m->w);
    tensors_free(&m->g);
    params_free(&m->table);
}

void gpt_zero_grad(GPT *m) { m->be->zero(m->grads, m->table.total * sizeof(real)); }

// Activation memory is linear in N = B·T: nothing here is (T × T) or (T × V).
static void acts_ensure(GPT *m, int B, int T) {
    Activations *a = &m->act;
    if (a->layers && a->B == B && a->T == T) return;
    acts_free(m);
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    size_t N = (size_t)B * T, C = c->dim, Q = c->dim, KV = cfg_kv_dim(c), F = c->ffn_dim, H = c->n_head;
#define ALLOC(n, what) ((real *)be->alloc((n) * sizeof(real), what))
    a->layers = xcalloc(c->n_layer, sizeof(LayerActs), "layer activations");
    for (int l = 0; l < c->n_layer; l++) {
        LayerActs *L = &a->layers[l];
        L->x = ALLOC(N * C, "activations");
        L->rstd1 = ALLOC(N, "activations");
        L->xn1 = ALLOC(N * C, "activations");
        L->q = ALLOC(N * Q, "activations");
        L->k = ALLOC(N * KV, "activations");
        L->v = ALLOC(N * KV, "activations");
        L->att = ALLOC(N * Q, "activations");
        L->lse = ALLOC(N * H, "activations");
        L->xm = ALLOC(N * C, "activations");
        L->rstd2 = ALLOC(N, "activations");
        L->xn2 = ALLOC(N * C, "activations");
        L->gate = ALLOC(N * F, "activations");
        L->up = ALLOC(N * F, "activations");
    }
    a->x_final = ALLOC(N * C, "activations");
    a->rstd_f = ALLOC(N, "activations");
    a->xn_f = ALLOC(N * C, "activations");
    a->dx_f = ALLOC(N * C, "activation gradients");
    a->res = ALLOC(N * C, "activation gradients");
    a->d_c = ALLOC(N * C, "activation gradients");
    a->d_q = ALLOC(N * Q, "activation gradients");
    a->d_k = ALLOC(N * KV, "activation gradients");
    a->d_v = ALLOC(N * KV, "activation gradients");
    a->h = ALLOC(N * F, "activation gradients");
    a->d_gate = ALLOC(N * F, "activation gradients");
    a->d_up = ALLOC(N * F, "activation gradients");
    a->attn_tmp = ALLOC(N * H, "attention scratch");
#undef ALLOC
    a->B = B;
    a->T = T;
}

static AttnShape attn_shape(const ModelConfig *c) {
    return (AttnShape){.n_head = c->n_head, .n_kv_head = c->n_kv_head, .head_dim = cfg_head_dim(c)};
}

// --doc-mask: every sample's document ids (from the batch's document starts), once per forward, in
// the layout ring_attention_forward_docs reads; the backward of the same batch reuses them.
static void docs_prepare(GPT *m, const Batch *b) {
    int sp = m->ring ? ring_size(m->ring) : 1;
    size_t n = (size_t)b->B * b->T * sp;
    if (n > m->doc_ids_cap) {
        if (m->doc_ids) m->be->release(m->doc_ids);
        free(m->doc_ids_host);
        m->doc_ids = m->be->alloc(n * sizeof(int32_t), "document ids");
        m->doc_ids_host = xmalloc(n * sizeof(int32_t), "document ids");
        m->doc_ids_cap = n;
    }
    for (int row = 0; row < b->B; row++) batch_zigzag_docs(b, row, sp, m->doc_ids_host + (size_t)row * b->T * sp);
    m->be->to_device(m->doc_ids, m->doc_ids_host, n * sizeof(int32_t));
}

// Sample b's document ids (NULL without --doc-mask), backend and host copies.
static const int32_t *sample_docs(const GPT *m, int b, int T, bool host) {
    if (!m->doc_mask) return NULL;
    size_t off = (size_t)b * T * (m->ring ? ring_size(m->ring) : 1);
    return (host ? m->doc_ids_host : m->doc_ids) + off;
}

// Attention of every sequence of the batch: on this rank alone, or around the ring.
static void attention_forward(GPT *m, LayerActs *L, int B, int T) {
    AttnShape s = attn_shape(&m->cfg);
    size_t qs = (size_t)T * m->cfg.dim, kvs = (size_t)T * cfg_kv_dim(&m->cfg), hs = (size_t)T * m->cfg.n_head;
    for (int b = 0; b < B; b++) {
        real *att = L->att + b * qs, *lse = L->lse + b * hs, *tmp = m->act.attn_tmp + b * hs;
        const real *q = L->q + b * qs, *k = L->k + b * kvs, *v = L->v + b * kvs;
        const int32_t *docs = sample_docs(m, b, T, false), *docs_host = sample_docs(m, b, T, true);
        if (m->ring) ring_attention_forward_docs(m->ring, m->be, &s, att, lse, tmp, q, k, v, T, docs, docs_host);
        else attention_causal_forward_docs(m->be, &s, att, lse, tmp, q, k, v, T, docs);
    }
}

static void attention_backward(GPT *m, LayerActs *L, const real *datt, int B, int T) {
    AttnShape s = attn_shape(&m->cfg);
    Activations *a = &m->act;
    size_t qs = (size_t)T * m->cfg.dim, kvs = (size_t)T * cfg_kv_dim(&m->cfg), hs = (size_t)T * m->cfg.n_head;
    for (int b = 0; b < B; b++) {
        real *dq = a->d_q + b * qs, *dk = a->d_k + b * kvs, *dv = a->d_v + b * kvs, *tmp = a->attn_tmp + b * hs;
        const real *q = L->q + b * qs, *k = L->k + b * kvs, *v = L->v + b * kvs;
        const real *o = L->att + b * qs, *lse = L->lse + b * hs, *dout = datt + b * qs;
        const int32_t *docs = sample_docs(m, b, T, false), *docs_host = sample_docs(m, b, T, true);
        if (m->ring) ring_attention_backward_docs(m->ring, m->be, &s, dq, dk, dv, tmp, q, k, v, o, lse, dout, T, docs, docs_host);
        else attention_causal_backward_docs(m->be, &s, dq, dk, dv, tmp, q, k, v, o, lse, dout, T, docs);
    }
}

// One transformer block: x -> out, keeping what the backward needs in L.
static void layer_forward(GPT *m, int l, const Batch *b, real *out) {
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    const LayerTensors *w = &m->w.layers[l];
    LayerActs *L = &m->act.layers[l];
    int N = b->B * b->T, C = c->dim, KV = cfg_kv_dim(c), F = c->ffn_dim, hd = cfg_head_dim(c);
    be->rmsnorm_forward(L->xn1, L->rstd1, L->x, w->attn_norm, N, C, c->norm_eps);
    be->matmul_forward(L->q, L->xn1, w->wq, N, C, C);
    be->matmul_forward(L->k, L->xn1, w->wk, N, C, KV);
    be->matmul_forward(L->v, L->xn1, w->wv, N, C, KV);
    be->rope(L->q, b->pos, N, c->n_head, hd, c->rope_theta, 0);
    be->rope(L->k, b->pos, N, c->n_kv_head, hd, c->rope_theta, 0);
    attention_forward(m, L, b->B, b->T);
    be->matmul_forward(L->xm, L->att, w->wo, N, C, C);          // xm = att @ woᵀ ...
    be->add_inplace(L->xm, L->x, (size_t)N * C);                 // ... + x
    be->rmsnorm_forward(L->xn2, L->rstd2, L->xm, w->mlp_norm, N, C, c->norm_eps);
    be->matmul_forward(L->gate, L->xn2, w->w_gate, N, C, F);
    be->matmul_forward(L->up, L->xn2, w->w_up, N, C, F);
    be->swiglu_forward(m->act.h, L->gate, L->up, N, F);
    be->matmul_forward(out, m->act.h, w->w_down, N, F, C);      // out = h @ w_downᵀ ...
    be->add_inplace(out, L->xm, (size_t)N * C);                  // ... + xm
}

// Runs the blocks and the final norm; leaves xn_f (N, C) ready for the LM head.
static void trunk_forward(GPT *m, const Batch *b) {
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    int N = b->B * b->T, C = c->dim;
    acts_ensure(m, b->B, b->T);
    if (m->doc_mask) docs_prepare(m, b);
    Activations *a = &m->act;
    be->embedding_forward(a->layers[0].x, b->tokens, m->w.tok_embeddings, N, C);
    for (int l = 0; l < c->n_layer; l++)
        layer_forward(m, l, b, l + 1 < c->n_layer ? a->layers[l + 1].x : a->x_final);
    be->rmsnorm_forward(a->xn_f, a->rstd_f, a->x_final, m->w.norm, N, C, c->norm_eps);
}

double gpt_forward(GPT *m, const Batch *b, double grad_scale, bool want_grad, real *losses) {
    trunk_forward(m, b);
    const ModelConfig *c = &m->cfg;
    Activations *a = &m->act;
    return m->be->lmhead_ce(want_grad ? a->dx_f : NULL, want_grad ? m->g.lm_head : NULL, losses, a->xn_f, m->w.lm_head,
                            b->targets, b->B * b->T, c->dim, c->vocab_size, m->loss_chunk, grad_scale);
}

// Backward of one block: res holds dL/d(out) on entry and dL/d(x) on exit.
static void layer_backward(GPT *m, int l, const Batch *b) {
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    const LayerTensors *w = &m->w.layers[l];
    LayerTensors *g = &m->g.layers[l];
    LayerActs *L = &m->act.layers[l];
    Activations *a = &m->act;
    int N = b->B * b->T, C = c->dim, KV = cfg_kv_dim(c), F = c->ffn_dim, hd = cfg_head_dim(c);
    // MLP branch: out = xm + h @ w_downᵀ, h = swiglu(xn2 @ w_gateᵀ, xn2 @ w_upᵀ)
    be->swiglu_forward(a->h, L->gate, L->up, N, F);                       // recompute h (N, F)
    be->matmul_backward(NULL, g->w_down, a->res, a->h, w->w_down, N, F, C, 0);
    be->matmul_backward(a->h, NULL, a->res, NULL, w->w_down, N, F, C, 0);  // h now holds dh
    be->swiglu_backward(a->d_gate, a->d_up, a->h, L->gate, L->up, N, F);
    be->matmul_backward(a->d_c, g->w_gate, a->d_gate, L->xn2, w->w_gate, N, C, F, 0);
    be->matmul_backward(a->d_c, g->w_up, a->d_up, L->xn2, w->w_up, N, C, F, 1);
    be->rmsnorm_backward(a->res, g->mlp_norm, a->d_c, L->xm, w->mlp_norm, L->rstd2, N, C);   // res = dL/dxm
    // attention branch: xm = x + att @ woᵀ
    be->matmul_backward(a->d_c, g->wo, a->res, L->att, w->wo, N, C, C, 0);  // d_c = d(att)
    attention_backward(m, L, a->d_c, b->B, b->T);                          // d_q, d_k, d_v
    be->rope(a->d_q, b->pos, N, c->n_head, hd, c->rope_theta, 1);
    be->rope(a->d_k, b->pos, N, c->n_kv_head, hd, c->rope_theta, 1);
    be->matmul_backward(a->d_c, g->wq, a->d_q, L->xn1, w->wq, N, C, C, 0);
    be->matmul_backward(a->d_c, g->wk, a->d_k, L->xn1, w->wk, N, C, KV, 1);
    be->matmul_backward(a->d_c, g->wv, a->d_v, L->xn1, w->wv, N, C, KV, 1);
    be->rmsnorm_backward(a->res, g->attn_norm, a->d_c, L->x, w->attn_norm, L->rstd1, N, C);  // res = dL/dx
}

void gpt_backward(GPT *m, const Batch *b) {
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    Activations *a = &m->act;
    int N = b->B * b->T, C = c->dim;
    be->zero(a->res, (size_t)N * C * sizeof(real));
    be->rmsnorm_backward(a->res, m->g.norm, a->dx_f, a->x_final, m->w.norm, a->rstd_f, N, C);
    for (int l = c->n_layer - 1; l >= 0; l--) layer_backward(m, l, b);
    be->embedding_backward(m->g.tok_embeddings, a->res, b->tokens, N, C);
}

void gpt_logits(GPT *m, const Batch *b, float *out) {
    trunk_forward(m, b);
    const ModelConfig *c = &m->cfg;
    int N = b->B * b->T, V = c->vocab_size;
    real *logits = m->be->alloc((size_t)N * V * sizeof(real), "logits");
    m->be->matmul_forward(logits, m->act.xn_f, m->w.lm_head, N, c->dim, V);
    if (sizeof(real) == sizeof(float)) {
        m->be->to_host(out, logits, (size_t)N * V * sizeof(real));
    } else {
        real *host = xmalloc((size_t)N * V * sizeof(real), "logits");
        m->be->to_host(host, logits, (size_t)N * V * sizeof(real));
        for (size_t i = 0; i < (size_t)N * V; i++) out[i] = (float)host[i];
        free(host);
    }
    m->be->release(logits);
}

