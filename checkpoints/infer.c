// checkpoints/infer.c — token-by-token inference with a KV cache (for `ringgpt sample`), over the model's named weights.
#include "checkpoints/infer.h"

#include <stdlib.h>
#include <string.h>

#include "checkpoints/hf.h"
#include "core/common.h"

void infer_init(Infer *s, GPT *m, int max_t) {
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    size_t C = c->dim, KV = cfg_kv_dim(c), F = c->ffn_dim, r = sizeof(real);
    memset(s, 0, sizeof *s);
    s->m = m;
    s->max_t = max_t;
    s->kc = be->alloc((size_t)c->n_layer * max_t * KV * r, "key cache");
    s->vc = be->alloc((size_t)c->n_layer * max_t * KV * r, "value cache");
    s->x = be->alloc(C * r, "x");
    s->xn = be->alloc(C * r, "xn");
    s->q = be->alloc(C * r, "q");
    s->att = be->alloc(C * r, "att");
    s->tmp = be->alloc(C * r, "tmp");
    s->k = be->alloc(KV * r, "k");
    s->v = be->alloc(KV * r, "v");
    s->gate = be->alloc(F * r, "gate");
    s->up = be->alloc(F * r, "up");
    s->h = be->alloc(F * r, "h");
    s->rstd = be->alloc(r, "rstd");
    s->m_row = be->alloc((size_t)c->n_head * r, "attention row max");
    s->l_row = be->alloc((size_t)c->n_head * r, "attention row sum");
    s->lg = be->alloc((size_t)c->vocab_size * r, "logits");
    s->lg_host = xmalloc((size_t)c->vocab_size * r, "logits");
    s->logits = xmalloc((size_t)c->vocab_size * sizeof(float), "logits");
}

void infer_free(Infer *s) {
    const Backend *be = s->m->be;
    real *bufs[] = {s->kc, s->vc, s->x,   s->xn, s->q,     s->att,   s->tmp, s->k,
                    s->v,  s->gate, s->up, s->h,  s->rstd, s->m_row, s->l_row, s->lg};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) be->release(bufs[i]);
    free(s->lg_host);
    free(s->logits);
}

// att (H·hd) = softmax(q·Kᵀ/√hd) V over the cached positions 0..t of layer l: the new token's one
// query row against one KV block of t+1 keys, all in its past, through the backend's block kernel.
static void attend(Infer *s, int l, int t) {
    const ModelConfig *c = &s->m->cfg;
    const Backend *be = s->m->be;
    AttnShape shape = {.n_head = c->n_head, .n_kv_head = c->n_kv_head, .head_dim = cfg_head_dim(c)};
    size_t layer = (size_t)l * s->max_t * cfg_kv_dim(c);
    AttnState st = {.acc = s->att, .m = s->m_row, .l = s->l_row};
    be->attn_state_reset(&shape, st, 1);
    be->attn_forward_block(&shape, st, s->q, 1, s->kc + layer, s->vc + layer, t + 1, ATTN_FULL);
    be->attn_finalize(&shape, st, s->att, s->m_row, 1);
}

static void layer_step(Infer *s, int l, int t) {
    GPT *m = s->m;
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    const LayerTensors *w = &m->w.layers[l];
    int C = c->dim, KV = cfg_kv_dim(c), F = c->ffn_dim, hd = cfg_head_dim(c);
    int32_t pos = t;
    be->rmsnorm_forward(s->xn, s->rstd, s->x, w->attn_norm, 1, C, c->norm_eps);
    be->matmul_forward(s->q, s->xn, w->wq, 1, C, C);
    be->matmul_forward(s->k, s->xn, w->wk, 1, C, KV);
    be->matmul_forward(s->v, s->xn, w->wv, 1, C, KV);
    be->rope(s->q, &pos, 1, c->n_head, hd, c->rope_theta, 0);
    be->rope(s->k, &pos, 1, c->n_kv_head, hd, c->rope_theta, 0);
    be->copy(s->kc + ((size_t)l * s->max_t + t) * KV, s->k, (size_t)KV * sizeof(real));
    be->copy(s->vc + ((size_t)l * s->max_t + t) * KV, s->v, (size_t)KV * sizeof(real));
    attend(s, l, t);
    be->matmul_forward(s->tmp, s->att, w->wo, 1, C, C);
    be->add_inplace(s->x, s->tmp, (size_t)C);
    be->rmsnorm_forward(s->xn, s->rstd, s->x, w->mlp_norm, 1, C, c->norm_eps);
    be->matmul_forward(s->gate, s->xn, w->w_gate, 1, C, F);
    be->matmul_forward(s->up, s->xn, w->w_up, 1, C, F);
    be->swiglu_forward(s->h, s->gate, s->up, 1, F);
    be->matmul_forward(s->tmp, s->h, w->w_down, 1, F, C);
    be->add_inplace(s->x, s->tmp, (size_t)C);
}

const float *infer_step(Infer *s, int token) {
    GPT *m = s->m;
    const ModelConfig *c = &m->cfg;
    if (s->len >= s->max_t) fail("internal: KV cache full (%d tokens)", s->max_t);
    if (token < 0 || token >= c->vocab_size) fail("token %d is outside the vocabulary (%d)", token, c->vocab_size);
    int t = s->len++;
    int32_t tok = token;
    m->be->embedding_forward(s->x, &tok, m->w.tok_embeddings, 1, c->dim);
    for (int l = 0; l < c->n_layer; l++) layer_step(s, l, t);
    m->be->rmsnorm_forward(s->xn, s->rstd, s->x, m->w.norm, 1, c->dim, c->norm_eps);
    m->be->matmul_forward(s->lg, s->xn, m->w.lm_head, 1, c->dim, c->vocab_size);
    m->be->to_host(s->lg_host, s->lg, (size_t)c->vocab_size * sizeof(real));
    for (int i = 0; i < c->vocab_size; i++) s->logits[i] = (float)s->lg_host[i];
    return s->logits;
}

void infer_load(const char *path, GPT *m, float rope_theta, CkptState *state) {
    CkErr e;
    ModelConfig c;
    CkptState s = {0};
    char dir[4200];
    bool hf = hf_is_dir(path);
    if (hf) {
        int max_pos;
        if (hf_read_config(path, &c, &max_pos, &e) != 0) fail_usage("%s", e.msg);
        s.run.seq_len = max_pos;
    } else {
        ckpt_resolve(path, dir, sizeof dir);
        if (ckpt_read_state(dir, &s, &e) != 0) fail_usage("%s", e.msg);
        c = s.model;
    }
    if (rope_theta > 0) c.rope_theta = rope_theta;
    gpt_init(m, &c, &BACKEND_CPU, 0);
    if ((hf ? hf_load_weights(path, m, &e) : ckpt_load_model(dir, m, &e)) != 0) fail_usage("%s", e.msg);
    if (state) *state = s;
}
