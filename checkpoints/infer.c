// checkpoints/infer.c — inference over the ring: block prefill, then decoding with a KV cache sharded over the sp ranks, merged by LSE.
#include "checkpoints/infer.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention/ring.h"
#include "checkpoints/hf.h"
#include "core/comm.h"
#include "core/common.h"
#include "data/source.h"

void infer_init(Infer *s, GPT *m, Comm *ring, int max_new) {
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    size_t C = c->dim, KV = cfg_kv_dim(c), F = c->ffn_dim, H = c->n_head, r = sizeof(real);
    memset(s, 0, sizeof *s);
    s->m = m;
    s->ring = ring && comm_size(ring) > 1 ? ring : NULL;
    s->rank = s->ring ? comm_rank(ring) : 0;
    s->size = s->ring ? comm_size(ring) : 1;
    if (s->ring && !m->ring) m->ring = ring_create(ring, be);
    s->cap = (max_new + s->size - 1) / s->size + 1;   // this rank's share of the decoded tokens
    s->kc = be->alloc((size_t)c->n_layer * s->cap * KV * r, "key cache");
    s->vc = be->alloc((size_t)c->n_layer * s->cap * KV * r, "value cache");
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
    s->m_row = be->alloc(H * r, "attention row max");
    s->l_row = be->alloc(H * r, "attention row sum");
    s->merge = xmalloc((C + H) * r, "attention merge");
    s->lse_max = xmalloc(H * r, "attention merge");
    s->lg = be->alloc((size_t)c->vocab_size * r, "logits");
    s->lg_host = xmalloc((size_t)c->vocab_size * r, "logits");
    s->logits = xmalloc((size_t)c->vocab_size * sizeof(float), "logits");
}

void infer_free(Infer *s) {
    const Backend *be = s->m->be;
    real *bufs[] = {s->kc, s->vc, s->x,    s->xn,   s->q,     s->att,   s->tmp, s->k,
                    s->v,  s->gate, s->up, s->h,    s->rstd,  s->m_row, s->l_row, s->lg};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) be->release(bufs[i]);
    free(s->merge);
    free(s->lse_max);
    free(s->lg_host);
    free(s->logits);
    if (s->batch.tokens) batch_free(&s->batch);
    if (s->ring) {
        ring_free(s->m->ring);
        s->m->ring = NULL;
    }
}

// logits (V, host floats) of the final-norm row xn (C, on the backend).
static void head_logits(Infer *s, const real *xn) {
    const ModelConfig *c = &s->m->cfg;
    s->m->be->matmul_forward(s->lg, xn, s->m->w.lm_head, 1, c->dim, c->vocab_size);
    s->m->be->to_host(s->lg_host, s->lg, (size_t)c->vocab_size * sizeof(real));
    for (int i = 0; i < c->vocab_size; i++) s->logits[i] = (float)s->lg_host[i];
}

const float *infer_prefill(Infer *s, const int32_t *tokens, int n) {
    GPT *m = s->m;
    const ModelConfig *c = &m->cfg;
    int W = s->size, r = s->rank;
    if (n < 1) fail("internal: an empty prompt");
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size)
            fail("prompt token %d at position %d is outside the model's vocabulary (%d)", tokens[i], i, c->vocab_size);
    // The zigzag layout cuts the sequence into 2·sp equal chunks: pad the end (any valid token: it is
    // in the future of every prompt token, so causal attention never lets it change them).
    int T = W == 1 ? n : (n + 2 * W - 1) / (2 * W) * (2 * W), chunk = T / (2 * W);
    int32_t *sample = xcalloc((size_t)T + 1, sizeof(int32_t), "the prompt");
    memcpy(sample, tokens, (size_t)n * sizeof(int32_t));
    if (s->batch.tokens) batch_free(&s->batch);
    s->batch = batch_alloc(1, T / W);
    batch_put_sample(&s->batch, 0, sample, T, W, r);
    free(sample);
    for (int i = 0; i < T / W; i++) s->batch.targets[i] = -1;   // no loss: only the activations matter
    gpt_forward(m, &s->batch, 0, false, NULL);
    // This rank's cache rows: its chunks' positions below n.
    int starts[2] = {W == 1 ? 0 : r * chunk, (2 * W - 1 - r) * chunk}, lens[2] = {W == 1 ? n : chunk, W == 1 ? 0 : chunk};
    for (int i = 0; i < 2; i++) {
        int valid = n - starts[i];
        s->seg_off[i] = i * chunk;
        s->seg_len[i] = valid < 0 ? 0 : valid < lens[i] ? valid : lens[i];
    }
    // The next token's logits come from the row of position n-1; its rank shares them.
    memset(s->logits, 0, (size_t)c->vocab_size * sizeof(float));
    for (int i = 0; i < T / W; i++)
        if (s->batch.pos[i] == n - 1) head_logits(s, m->act.xn_f + (size_t)i * c->dim);
    if (s->ring) comm_allreduce(s->ring, s->logits, (size_t)c->vocab_size, COMM_F32, COMM_SUM, "prefill logits");
    s->len = s->prompt_len = n;
    s->n_dec = 0;
    return s->logits;
}

// Merges this rank's partial attention of the one query row (out (H·hd) normalised, lse (H)) with the
// other ranks': O = Σ_r exp(lse_r − M) O_r / Σ_r exp(lse_r − M), M = max_r lse_r. A rank whose shard
// had no key has lse −inf and weight 0.
static void merge_ring(Infer *s, real *out, const real *lse) {
    const ModelConfig *c = &s->m->cfg;
    const Backend *be = s->m->be;
    int H = c->n_head, hd = cfg_head_dim(c);
    real *o = s->merge, *w = s->merge + (size_t)H * hd;
    be->to_host(o, out, (size_t)H * hd * sizeof(real));
    be->to_host(s->lse_max, lse, (size_t)H * sizeof(real));
    memcpy(w, s->lse_max, (size_t)H * sizeof(real));   // keep this rank's lse in w until the max is known
    comm_allreduce(s->ring, s->lse_max, (size_t)H, COMM_REAL, COMM_MAX, "decode attention max");
    for (int h = 0; h < H; h++) {
        w[h] = isinf(w[h]) ? 0 : exp(w[h] - s->lse_max[h]);
        for (int d = 0; d < hd; d++) o[h * hd + d] *= w[h];
    }
    comm_allreduce(s->ring, s->merge, (size_t)H * hd + H, COMM_REAL, COMM_SUM, "decode attention merge");
    for (int h = 0; h < H; h++)
        for (int d = 0; d < hd; d++) o[h * hd + d] /= w[h];
    be->to_device(out, o, (size_t)H * hd * sizeof(real));
}

// att (H·hd) = softmax(q·Kᵀ/√hd) V over every cached key of layer l, all in the new token's past: the
// prefill shard and the decoded tokens this rank holds, through the backend's block kernel, then merged
// over the ring.
static void attend(Infer *s, int l, int n_dec) {
    const ModelConfig *c = &s->m->cfg;
    const Backend *be = s->m->be;
    const LayerActs *L = &s->m->act.layers[l];
    size_t KV = cfg_kv_dim(c), layer = (size_t)l * s->cap * KV;
    AttnShape shape = {.n_head = c->n_head, .n_kv_head = c->n_kv_head, .head_dim = cfg_head_dim(c)};
    AttnState st = {.acc = s->att, .m = s->m_row, .l = s->l_row};
    be->attn_state_reset(&shape, st, 1);
    for (int i = 0; i < 2; i++)
        if (s->seg_len[i] > 0)
            be->attn_forward_block(&shape, st, s->q, 1, L->k + s->seg_off[i] * KV, L->v + s->seg_off[i] * KV, s->seg_len[i],
                                   ATTN_FULL);
    if (n_dec > 0) be->attn_forward_block(&shape, st, s->q, 1, s->kc + layer, s->vc + layer, n_dec, ATTN_FULL);
    be->attn_finalize(&shape, st, s->att, s->m_row, 1);
    if (s->ring) merge_ring(s, s->att, s->m_row);
}

static void layer_step(Infer *s, int l, int32_t pos, bool owner) {
    GPT *m = s->m;
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    const LayerTensors *w = &m->w.layers[l];
    int C = c->dim, KV = cfg_kv_dim(c), F = c->ffn_dim, hd = cfg_head_dim(c);
    be->rmsnorm_forward(s->xn, s->rstd, s->x, w->attn_norm, 1, C, c->norm_eps);
    be->matmul_forward(s->q, s->xn, w->wq, 1, C, C);
    be->matmul_forward(s->k, s->xn, w->wk, 1, C, KV);
    be->matmul_forward(s->v, s->xn, w->wv, 1, C, KV);
    be->rope(s->q, &pos, 1, c->n_head, hd, c->rope_theta, 0);
    be->rope(s->k, &pos, 1, c->n_kv_head, hd, c->rope_theta, 0);
    if (owner) {   // the new token's keys join this rank's shard
        size_t row = ((size_t)l * s->cap + s->n_dec) * KV;
        be->copy(s->kc + row, s->k, (size_t)KV * sizeof(real));
        be->copy(s->vc + row, s->v, (size_t)KV * sizeof(real));
    }
    attend(s, l, s->n_dec + owner);
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
    if (s->prompt_len == 0) fail("internal: infer_step before infer_prefill");
    if (token < 0 || token >= c->vocab_size) fail("token %d is outside the vocabulary (%d)", token, c->vocab_size);
    int32_t pos = s->len, tok = token;
    bool owner = (pos - s->prompt_len) % s->size == s->rank;   // round-robin: the shards stay balanced
    if (owner && s->n_dec >= s->cap) fail("internal: KV cache full (%d decoded tokens on this rank)", s->cap);
    m->be->embedding_forward(s->x, &tok, m->w.tok_embeddings, 1, c->dim);
    for (int l = 0; l < c->n_layer; l++) layer_step(s, l, pos, owner);
    s->n_dec += owner;
    s->len++;
    m->be->rmsnorm_forward(s->xn, s->rstd, s->x, m->w.norm, 1, c->dim, c->norm_eps);
    head_logits(s, s->xn);
    return s->logits;
}

int infer_agree(Infer *s, int token) {
    if (!s->ring) return token;
    int64_t t = s->rank == 0 ? token : 0;
    comm_allreduce(s->ring, &t, 1, COMM_I64, COMM_SUM, "sampled token");
    return (int)t;
}

CommGrid infer_grid(int sp, bool auto_threads, int *threads) {
    if (sp < 1) comm_fail_usage_all("--sp must be at least 1 (got %d)", sp);
    if (*threads < 1) comm_fail_usage_all("--threads must be at least 1 (got %d)", *threads);
    CommGrid g = comm_grid(sp);   // a world that sp does not divide is a usage error
    if (auto_threads) *threads = *threads / comm_node_size() > 0 ? *threads / comm_node_size() : 1;
    return g;
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
