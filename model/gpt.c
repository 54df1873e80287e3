// model/gpt.c — the model orchestration, written once: forward and hand-written backward through the backend table.
#include "model/gpt.h"

#include <stdlib.h>
#include <string.h>

#include "attention/cp.h"
#include "core/common.h"

// Where the initial weights go: dst (backend) holds every element (s NULL), or this rank's slices of s in local order.
typedef struct {
    const Backend *be;
    real *dst;
    const ShardLayout *s;
} InitSink;

// Copies the part of a run of initial weights (elements first .. first + n - 1) that the sink keeps.
static void keep_run(void *ctx, size_t first, const real *vals, size_t n) {
    InitSink *k = ctx;
    if (!k->s) {
        k->be->to_device(k->dst + first, vals, n * sizeof(real));
        return;
    }
    for (int u = shard_unit_of(k->s, first); u < k->s->n_units && k->s->unit_off[u] < first + n; u++) {
        size_t len, start = shard_slice(k->s, u, k->s->rank, &len);
        size_t lo = start > first ? start : first, hi = start + len < first + n ? start + len : first + n;
        if (lo < hi) k->be->to_device(k->dst + k->s->local_off[u] + (lo - start), vals + (lo - first), (hi - lo) * sizeof(real));
    }
}

// Named views whose pointers the unit hook sets when a unit runs (model/shard.h); until then they point nowhere.
static ModelTensors unbound(const ModelConfig *c) {
    return (ModelTensors){.n_layer = c->n_layer, .layers = xcalloc((size_t)c->n_layer, sizeof(LayerTensors), "layer pointers")};
}

// The weights (initialised from m->seed) and zeroed gradients that m->sizes names: whole, or this rank's slices.
static void state_alloc(GPT *m) {
    const Backend *be = m->be;
    size_t w = m->sizes.weights * sizeof(real), g = m->sizes.grads * sizeof(real);
    bool own_w = m->shard_level >= SHARD_PARAMS, own_g = m->shard_level >= SHARD_GRADS;   // this rank's slices only
    m->params = be->alloc(w, own_w ? "parameter shard" : "parameters");
    if (own_w) be->zero(m->params, w);   // the padding past the slices stays zero
    params_init(&m->table, m->seed, keep_run, &(InitSink){be, m->params, own_w ? m->shard : NULL});
    m->grads = be->alloc(g, own_g ? "gradient shard" : "gradients");
    be->zero(m->grads, g);
    m->w = own_w ? unbound(&m->cfg) : tensors_bind(&m->table, &m->cfg, m->params);
    m->g = own_g ? unbound(&m->cfg) : tensors_bind(&m->table, &m->cfg, m->grads);
}

void gpt_init(GPT *m, const ModelConfig *c, const Backend *be, uint64_t seed, GptUse use) {
    memset(m, 0, sizeof *m);
    config_validate(c);
    m->cfg = *c;
    m->be = be;
    m->table = params_build(c);
    m->seed = seed;
    m->loss_chunk = 256;
    m->sizes = shard_sizes(c, SHARD_NONE, NULL);
    if (use == GPT_TRAIN) state_alloc(m);
    if (use != GPT_INFER) return;   // GPT_SHARDED: gpt_shard allocates, initialises and binds
    size_t bytes = m->sizes.weights * sizeof(real);
    m->params = be->alloc(bytes, "parameters");
    be->zero(m->params, bytes);   // a load fills them; never garbage
    m->recompute = RECOMPUTE_FULL;   // no backward: the forward keeps the least (x, O, LSE a layer)
    m->w = tensors_bind(&m->table, c, m->params);
}

static void acts_free(GPT *m) {
    Activations *a = &m->act;
    for (int i = 0; i < a->n_owned; i++) m->be->release(a->owned[i]);
    free(a->owned);
    free(a->owned_bytes);
    free(a->layers);
    memset(a, 0, sizeof *a);
}

void gpt_free(GPT *m) {
    acts_free(m);
    attn_cp_free(m->cp);
    if (m->doc_ids) m->be->release(m->doc_ids);
    free(m->doc_ids_host);
    if (m->params) m->be->release(m->params);
    if (m->grads) m->be->release(m->grads);
    tensors_free(&m->w);
    tensors_free(&m->g);
    params_free(&m->table);
    rope_table_free(&m->rope);
    if (m->shard) shard_layout_free(m->shard);
    free(m->shard);
}

void gpt_shard(GPT *m, ShardLevel level, int ranks, int rank) {
    if (m->params || level == SHARD_NONE) fail("internal: gpt_shard builds the state of a model from gpt_init(GPT_SHARDED)");
    m->shard_level = level;
    m->shard = xmalloc(sizeof *m->shard, "shard layout");
    *m->shard = shard_layout(&m->table, &m->cfg, ranks, rank);
    m->sizes = shard_sizes(&m->cfg, level, m->shard);
    state_alloc(m);
}

void gpt_set_cp(GPT *m, struct Comm *ring, const CpConfig *c) {
    attn_cp_free(m->cp);
    m->cp = ring ? attn_cp_create(ring, m->be, c) : NULL;
}

// The ranks a sequence spans (1: this one alone).
static int cp_sp(const GPT *m) { return attn_cp_config(m->cp).sp; }

void gpt_zero_grad(GPT *m) {
    if (!m->grads) fail("internal: gradients of a model built for inference (GPT_INFER)");
    m->be->zero(m->grads, m->sizes.grads * sizeof(real));
}

static void unit_enter(GPT *m, int unit, UnitPhase phase) {
    if (m->unit_hook) m->unit_hook->enter(m->unit_hook, m, unit, phase);
}
static void unit_leave(GPT *m, int unit, UnitPhase phase) {
    if (m->unit_hook) m->unit_hook->leave(m->unit_hook, m, unit, phase);
}

// Allocates `b` bytes on the backend for the activations, counted in *bytes, released by acts_free. While acts_ensure
// lays a smaller shape over the buffers it has (a->relaid < a->n_owned), hands out the next of them instead: the
// layout visits its buffers in the same order at every shape, and each is at least as large at the larger one.
static real *act_alloc(GPT *m, size_t b, size_t *bytes, const char *what) {
    Activations *a = &m->act;
    *bytes += b;
    if (a->relaid < a->n_owned) {
        if (b > a->owned_bytes[a->relaid]) fail("internal: %s (%zu bytes) outgrew its buffer (%zu)", what, b, a->owned_bytes[a->relaid]);
        return a->owned[a->relaid++];
    }
    real *p = m->be->alloc(b, what);
    a->owned = xrealloc(a->owned, (a->n_owned + 1) * sizeof *a->owned, "activation list");
    a->owned_bytes = xrealloc(a->owned_bytes, (a->n_owned + 1) * sizeof *a->owned_bytes, "activation list");
    a->owned[a->n_owned] = p, a->owned_bytes[a->n_owned++] = b;
    a->relaid = a->n_owned;
    return p;
}

// Points one table row's tensor where the layout places it: its own buffer (each layer's, or one for all
// layers), or into the arena; NULL where the CP keeps its own buffers or there is none.
static void act_bind(void *ctx, const ActSpec *s, ActPlace p) {
    GPT *m = ctx;
    Activations *a = &m->act;
    for (int l = 0; l < (s->per_layer ? m->cfg.n_layer : 1); l++) {
        real **t = act_field(a, &a->layers[l], s);
        if (p.home == ACT_ARENA) *t = (real *)((char *)a->arena + p.offset);
        else if (p.home == ACT_OWN && s->per_layer) *t = act_alloc(m, p.bytes, &a->kept_bytes, "activations");
        else if (p.home == ACT_OWN) *t = act_alloc(m, p.bytes, &a->shared_bytes, "activation scratch");
        else *t = NULL;
    }
}

static AttnShape attn_shape(const GPT *m) {
    const ModelConfig *c = &m->cfg;
    return (AttnShape){.n_head = c->n_head, .n_kv_head = c->n_kv_head, .head_dim = cfg_head_dim(c), .qkv = m->act_store};
}

// Activation memory is linear in N = B·T: nothing here is (T × T) or (T × V). The table (model/acts.c)
// says what the mode keeps per layer, what is scratch and what lives in the arena; the memory plan
// (model/memplan.c) sums the same table.
static void acts_ensure(GPT *m, int B, int T) {
    Activations *a = &m->act;
    CpConfig cp = attn_cp_config(m->cp);
    bool same_cp = a->cp.mode == cp.mode && a->cp.sp == cp.sp && a->cp.degree == cp.degree &&
                   a->cp.any_layout == cp.any_layout;
    bool kind = a->layers && a->mode == m->recompute && a->store == m->act_store && same_cp;
    if (kind && a->B == B && a->T == T) return;
    // A shape no larger than the one the buffers were made for (every size is linear in B·T or in T) is laid over
    // them: a prompt of each length, as eval and decoding run them, does not allocate and fault in gigabytes again.
    bool fits = kind && (size_t)B * T <= (size_t)a->cap_B * a->cap_T && T <= a->cap_T;
    if (fits) {
        a->relaid = 0;
        a->kept_bytes = a->work_bytes = a->shared_bytes = 0;
    } else {
        acts_free(m);
        a->layers = xcalloc(m->cfg.n_layer, sizeof(LayerActs), "layer activations");
        a->mode = m->recompute, a->store = m->act_store, a->cp = cp;
        a->cap_B = B, a->cap_T = T;
    }
    ActDims d = act_dims(&m->cfg, a->mode, a->store, B, T, &cp);
    size_t arena = acts_layout(&d, NULL, NULL);
    a->arena = arena ? act_alloc(m, arena, &a->work_bytes, "recompute working set") : NULL;
    acts_layout(&d, act_bind, m);
    if (a->relaid != a->n_owned) fail("internal: the activation layout changed its buffers between two shapes");
    AttnShape s = attn_shape(m);
    attn_cp_set_workspace(m->cp, a->cp_ws, a->cp_ws ? attn_cp_workspace_bytes(&cp, &s, T) : 0);
    a->B = B;
    a->T = T;
}

void gpt_prepare(GPT *m, int B, int T) { acts_ensure(m, B, T); }

// --doc-mask: every sample's document ids in its layout's order (the batch's docs), once per forward, on the
// backend for the kernels; the backward of the same batch reuses them.
static void docs_prepare(GPT *m, const Batch *b) {
    size_t n = (size_t)b->B * b->T * cp_sp(m);
    if (n > m->doc_ids_cap) {
        if (m->doc_ids) m->be->release(m->doc_ids);
        free(m->doc_ids_host);
        m->doc_ids = m->be->alloc(n * sizeof(int32_t), "document ids");
        m->doc_ids_host = xmalloc(n * sizeof(int32_t), "document ids");
        m->doc_ids_cap = n;
    }
    if (!b->docs) fail("internal: --doc-mask with a batch that no source filled (no document ids)");
    for (int row = 0; row < b->B; row++)
        memcpy(m->doc_ids_host + (size_t)row * b->T * cp_sp(m), b->docs + (size_t)row * b->doc_cap,
               (size_t)b->T * cp_sp(m) * sizeof(int32_t));
    m->be->to_device(m->doc_ids, m->doc_ids_host, n * sizeof(int32_t));
}

// Sequence b's layout over the sp ranks: its positions (r.layout's row) and, under --doc-mask, its document ids in the
// same order, backend and host copies.
static AttnLayout sample_layout(const GPT *m, Rows r, int b) {
    size_t off = (size_t)b * r.T * cp_sp(m);
    AttnLayout lay = {.pos = r.layout ? r.layout + (size_t)b * r.layout_stride : NULL};
    if (m->doc_mask) lay.docs = m->doc_ids + off, lay.docs_host = m->doc_ids_host + off;
    return lay;
}

// Sequence b's tensors of one attention call: q, k, v, O and LSE of L; the backward's gradients (datt non-NULL).
static AttnRows sample_rows(GPT *m, const LayerActs *L, const real *datt, int b, int T) {
    ActStore st = m->act_store;
    Activations *a = &m->act;
    size_t qs = (size_t)T * m->cfg.dim, kvs = (size_t)T * cfg_kv_dim(&m->cfg), hs = (size_t)T * m->cfg.n_head;
    AttnRows t = {.L = T, .q = act_at(L->q, st, b * qs), .k = act_at(L->k, st, b * kvs), .v = act_at(L->v, st, b * kvs),
                  .out = L->att + b * qs, .lse = L->lse + b * hs, .tmp = a->attn_tmp + b * hs};
    if (datt) t.dout = datt + b * qs, t.dq = a->d_q + b * qs, t.dk = a->d_k + b * kvs, t.dv = a->d_v + b * kvs;
    return t;
}

// The training forward's attention step: every sequence of the batch whole, on this rank alone or over the sp
// ranks of its context parallelism (with document ids under --doc-mask).
static void whole_sequence_attention(AttnStep *self, GPT *m, int layer, LayerActs *L, Rows r) {
    (void)self, (void)layer;
    AttnShape s = attn_shape(m);
    for (int b = 0; b < r.B; b++) {
        AttnRows t = sample_rows(m, L, NULL, b, r.T);
        AttnLayout lay = sample_layout(m, r, b);
        attn_cp_forward(m->cp, m->be, &s, &t, &lay);
    }
}

static AttnStep WHOLE_SEQUENCE = {whole_sequence_attention};

// d_q, d_k, d_v of every sequence from datt = dL/d(att).
static void attention_backward(GPT *m, LayerActs *L, const real *datt, Rows r) {
    AttnShape s = attn_shape(m);
    for (int b = 0; b < r.B; b++) {
        AttnRows t = sample_rows(m, L, datt, b, r.T);
        AttnLayout lay = sample_layout(m, r, b);
        attn_cp_backward(m->cp, m->be, &s, &t, &lay);
    }
}

// Attention norm, Q/K/V projections and RoPE of layer l: x -> rstd1, xn1, q, k, v (local: no ring).
static void qkv_forward(GPT *m, int l, LayerActs *L, Rows r) {
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    const LayerTensors *w = &m->w.layers[l];
    const ActStore lo = m->act_store;
    int N = r.B * r.T, C = c->dim, KV = cfg_kv_dim(c);
    be->rmsnorm_forward(L->xn1, L->rstd1, L->x, NULL, w->attn_norm, N, C, c->norm_eps, lo);
    be->matmul_forward(L->q, L->xn1, w->wq, N, C, C, lo, lo);
    be->matmul_forward(L->k, L->xn1, w->wk, N, C, KV, lo, lo);
    be->matmul_forward(L->v, L->xn1, w->wv, N, C, KV, lo, lo);
    gpt_rope(m, L->q, L->k, r.pos, N, r.rope_len, 0, lo);
}

void gpt_rope(GPT *m, real *q, real *k, const int32_t *pos, int N, int rope_len, int inverse, ActStore s) {
    const ModelConfig *c = &m->cfg;
    const RopeTable *t = rope_table(&m->rope, c, rope_len);
    m->be->rope(q, k, pos, N, c->n_head, c->n_kv_head, cfg_head_dim(c), t->inv_freq, t->scale, inverse, s);
}

// Output projection, residual and the MLP norm: xm = x + att @ woᵀ, then rstd2, xn2 = RMSNorm(xm) (the add
// and the norm in one pass).
static void attn_out_forward(GPT *m, int l, LayerActs *L, Rows r) {
    const ModelConfig *c = &m->cfg;
    int N = r.B * r.T, C = c->dim;
    m->be->matmul_forward(L->xm, L->att, m->w.layers[l].wo, N, C, C, ACT_F32, ACT_F32);
    m->be->rmsnorm_forward(L->xn2, L->rstd2, L->xm, L->x, m->w.layers[l].mlp_norm, N, C, c->norm_eps, m->act_store);
}

// The gate/up projections: xn2 -> gate, up; with `norm`, first rstd2, xn2 from a kept xm (the same norm as
// attn_out_forward's, bit for bit).
static void mlp_in_forward(GPT *m, int l, LayerActs *L, Rows r, bool norm) {
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    const LayerTensors *w = &m->w.layers[l];
    const ActStore lo = m->act_store;
    int N = r.B * r.T, C = c->dim, F = c->ffn_dim;
    if (norm) be->rmsnorm_forward(L->xn2, L->rstd2, L->xm, NULL, w->mlp_norm, N, C, c->norm_eps, lo);
    be->matmul_forward(L->gate, L->xn2, w->w_gate, N, C, F, lo, lo);
    be->matmul_forward(L->up, L->xn2, w->w_up, N, C, F, lo, lo);
}

void gpt_layer_forward(GPT *m, int l, LayerActs *L, real *h, Rows r, AttnStep *attn, real *out) {
    const Backend *be = m->be;
    int N = r.B * r.T, C = m->cfg.dim, F = m->cfg.ffn_dim;
    qkv_forward(m, l, L, r);
    attn->forward(attn, m, l, L, r);
    attn_out_forward(m, l, L, r);
    mlp_in_forward(m, l, L, r, false);
    be->swiglu_forward(h, L->gate, L->up, N, F, m->act_store);
    be->matmul_forward(out, h, m->w.layers[l].w_down, N, F, C, ACT_F32, m->act_store);   // out = h @ w_downᵀ ...
    be->add_inplace(out, L->xm, (size_t)N * C);                                            // ... + xm
}

void gpt_embed(GPT *m, real *x, const int32_t *tokens, int N) {
    m->be->embedding_forward(x, tokens, m->w.tok_embeddings, N, m->cfg.dim);
}

void gpt_final_norm(GPT *m, real *xn, real *rstd, real *x, int N) {
    m->be->rmsnorm_forward(xn, rstd, x, NULL, m->w.norm, N, m->cfg.dim, m->cfg.norm_eps, m->act_store);
}

// A batch's rows: whole sequences of T·sp tokens (the sp ranks hold T each, as each row's layout says), the length
// RoPE scaling sees.
static Rows batch_rows(const GPT *m, const Batch *b) {
    int sp = cp_sp(m);
    if (b->layout && b->doc_cap < b->T * sp)
        fail("internal: a batch of rows of %d tokens on %d ranks laid out for sequences of %d", b->T, sp, b->doc_cap);
    return (Rows){.B = b->B, .T = b->T, .pos = b->pos, .rope_len = b->T * sp, .layout = b->layout,
                  .layout_stride = b->doc_cap};
}

// Embeds the batch and runs its first n_full blocks whole; layer n_full's input is then in
// act.layers[n_full].x (act.x_final when n_full is the last layer's count).
static void blocks_forward(GPT *m, const Batch *b, int n_full, Rows r) {
    const ModelConfig *c = &m->cfg;
    acts_ensure(m, b->B, b->T);
    if (m->doc_mask) docs_prepare(m, b);
    Activations *a = &m->act;
    unit_enter(m, 0, UNIT_FORWARD);
    gpt_embed(m, a->layers[0].x, b->tokens, b->B * b->T);
    unit_leave(m, 0, UNIT_FORWARD);
    for (int l = 0; l < n_full; l++) {
        unit_enter(m, 1 + l, UNIT_FORWARD);
        gpt_layer_forward(m, l, &a->layers[l], a->h, r, &WHOLE_SEQUENCE,
                          l + 1 < c->n_layer ? a->layers[l + 1].x : a->x_final);
        unit_leave(m, 1 + l, UNIT_FORWARD);
    }
}

// Runs the blocks and the final norm; leaves xn_f (N, C) ready for the LM head, whose unit is then entered.
static void trunk_forward(GPT *m, const Batch *b) {
    blocks_forward(m, b, m->cfg.n_layer, batch_rows(m, b));
    unit_enter(m, m->cfg.n_layer + 1, UNIT_FORWARD);
    gpt_final_norm(m, m->act.xn_f, m->act.rstd_f, m->act.x_final, b->B * b->T);
}

void gpt_prefill(GPT *m, const Batch *b, int rope_len) {
    int last = m->cfg.n_layer - 1;
    Rows r = batch_rows(m, b);
    r.rope_len = rope_len;
    blocks_forward(m, b, last, r);
    unit_enter(m, 1 + last, UNIT_FORWARD);
    qkv_forward(m, last, &m->act.layers[last], r);
    unit_leave(m, 1 + last, UNIT_FORWARD);
}

double gpt_forward(GPT *m, const Batch *b, double grad_scale, bool want_grad, real *losses) {
    if (want_grad && !m->grads) fail("internal: gradients of a model built for inference (GPT_INFER)");
    trunk_forward(m, b);
    const ModelConfig *c = &m->cfg;
    Activations *a = &m->act;
    int head = c->n_layer + 1;
    if (want_grad) unit_enter(m, head, UNIT_BACKWARD);   // the fused head writes its gradient now
    double loss = m->be->lmhead_ce(want_grad ? a->dx_f : NULL, want_grad ? m->g.lm_head : NULL, losses, a->xn_f,
                                   m->w.lm_head, b->targets, b->B * b->T, c->dim, c->vocab_size, m->loss_chunk,
                                   grad_scale, m->act_store);
    if (!want_grad) unit_leave(m, head, UNIT_FORWARD);
    return loss;
}

// Backward of one block: res holds dL/d(out) on entry and dL/d(x) on exit.
static void layer_backward(GPT *m, int l, const Batch *b) {
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    const LayerTensors *w = &m->w.layers[l];
    LayerTensors *g = &m->g.layers[l];
    LayerActs *L = &m->act.layers[l];
    Activations *a = &m->act;
    int N = b->B * b->T, C = c->dim, KV = cfg_kv_dim(c), F = c->ffn_dim;
    const ActStore lo = a->store, f32 = ACT_F32;
    // Recompute what the forward did not keep, with the forward's own ops and inputs, so the
    // gradients are bit-identical to none's. Attention is never run again: O and LSE are kept.
    if (a->mode == RECOMPUTE_FULL) attn_out_forward(m, l, L, batch_rows(m, b));       // xm, rstd2, xn2
    if (a->mode != RECOMPUTE_NONE)
        mlp_in_forward(m, l, L, batch_rows(m, b), a->mode == RECOMPUTE_MLP);        // (rstd2, xn2,) gate, up
    // MLP branch: out = xm + h @ w_downᵀ, h = swiglu(xn2 @ w_gateᵀ, xn2 @ w_upᵀ)
    be->swiglu_forward(a->h, L->gate, L->up, N, F, lo);                   // recompute h (N, F)
    be->matmul_backward(NULL, g->w_down, a->res, a->h, w->w_down, N, F, C, 0, lo, f32, lo);
    be->matmul_backward(a->h, NULL, a->res, NULL, w->w_down, N, F, C, 0, lo, f32, lo);  // h now holds dh
    be->swiglu_backward(a->d_gate, a->d_up, a->h, L->gate, L->up, N, F, lo);
    be->matmul_backward(a->d_c, g->w_gate, a->d_gate, L->xn2, w->w_gate, N, C, F, 0, f32, lo, lo);
    be->matmul_backward(a->d_c, g->w_up, a->d_up, L->xn2, w->w_up, N, C, F, 1, f32, lo, lo);
    be->rmsnorm_backward(a->res, g->mlp_norm, a->d_c, L->xm, w->mlp_norm, L->rstd2, N, C);   // res = dL/dxm
    // attention branch: xm = x + att @ woᵀ
    be->matmul_backward(a->d_c, g->wo, a->res, L->att, w->wo, N, C, C, 0, f32, f32, f32);  // d_c = d(att)
    if (a->mode == RECOMPUTE_FULL) qkv_forward(m, l, L, batch_rows(m, b));    // rstd1, xn1, q, k, v from x
    attention_backward(m, L, a->d_c, batch_rows(m, b));                    // d_q, d_k, d_v
    gpt_rope(m, a->d_q, a->d_k, b->pos, N, batch_rows(m, b).rope_len, 1, f32);
    be->matmul_backward(a->d_c, g->wq, a->d_q, L->xn1, w->wq, N, C, C, 0, f32, f32, lo);
    be->matmul_backward(a->d_c, g->wk, a->d_k, L->xn1, w->wk, N, C, KV, 1, f32, f32, lo);
    be->matmul_backward(a->d_c, g->wv, a->d_v, L->xn1, w->wv, N, C, KV, 1, f32, f32, lo);
    be->rmsnorm_backward(a->res, g->attn_norm, a->d_c, L->x, w->attn_norm, L->rstd1, N, C);  // res = dL/dx
}

void gpt_backward(GPT *m, const Batch *b) {
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    Activations *a = &m->act;
    if (a->mode == RECOMPUTE_DECODE) fail("internal: a backward after a decoder's forward (it keeps no more than the KV cache)");
    int N = b->B * b->T, C = c->dim;
    be->zero(a->res, (size_t)N * C * sizeof(real));
    be->rmsnorm_backward(a->res, m->g.norm, a->dx_f, a->x_final, m->w.norm, a->rstd_f, N, C);
    unit_leave(m, c->n_layer + 1, UNIT_BACKWARD);   // entered by gpt_forward
    for (int l = c->n_layer - 1; l >= 0; l--) {
        unit_enter(m, 1 + l, UNIT_BACKWARD);
        layer_backward(m, l, b);
        unit_leave(m, 1 + l, UNIT_BACKWARD);
    }
    unit_enter(m, 0, UNIT_BACKWARD);
    be->embedding_backward(m->g.tok_embeddings, a->res, b->tokens, N, C);
    unit_leave(m, 0, UNIT_BACKWARD);
}

void gpt_logits(GPT *m, const Batch *b, float *out) {
    trunk_forward(m, b);
    const ModelConfig *c = &m->cfg;
    int N = b->B * b->T, V = c->vocab_size;
    real *logits = m->be->alloc((size_t)N * V * sizeof(real), "logits");
    m->be->matmul_forward(logits, m->act.xn_f, m->w.lm_head, N, c->dim, V, ACT_F32, m->act.store);
    unit_leave(m, c->n_layer + 1, UNIT_FORWARD);
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

