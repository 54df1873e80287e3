// model/decode.c — decoding over the ring: block prefill, then the model's own block on one new row against a KV cache sharded over the sp ranks, merged by LSE.
#include "model/decode.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "data/source.h"

static void cache_attention(AttnStep *self, GPT *m, int layer, LayerActs *L, Rows r);
static const float *feed(Decoder *s, int token);

// One row of each activation the block writes (LayerActs, N = 1), on the backend.
static void row_alloc(LayerActs *L, const ModelConfig *c, const Backend *be) {
    size_t C = c->dim, KV = cfg_kv_dim(c), F = c->ffn_dim, H = c->n_head, r = sizeof(real);
    *L = (LayerActs){.x = be->alloc(C * r, "decode x"), .rstd1 = be->alloc(r, "decode rstd"), .xn1 = be->alloc(C * r, "decode xn"),
                     .q = be->alloc(C * r, "decode q"), .k = be->alloc(KV * r, "decode k"), .v = be->alloc(KV * r, "decode v"),
                     .att = be->alloc(C * r, "decode att"), .lse = be->alloc(H * r, "decode lse"), .xm = be->alloc(C * r, "decode xm"),
                     .rstd2 = be->alloc(r, "decode rstd"), .xn2 = be->alloc(C * r, "decode xn"), .gate = be->alloc(F * r, "decode gate"),
                     .up = be->alloc(F * r, "decode up")};
}

static void row_free(LayerActs *L, const Backend *be) {
    real *bufs[] = {L->x, L->rstd1, L->xn1, L->q, L->k, L->v, L->att, L->lse, L->xm, L->rstd2, L->xn2, L->gate, L->up};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) be->release(bufs[i]);
}

void decoder_init(Decoder *s, GPT *m, Comm *ring, int max_new) {
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    size_t C = c->dim, KV = cfg_kv_dim(c), F = c->ffn_dim, H = c->n_head, r = sizeof(real);
    memset(s, 0, sizeof *s);
    // The cache and the row buffers below are fp32, as the decoding commands run the model.
    if (m->act_store != ACT_F32) fail("internal: decoding runs a model with fp32 activations (--activations is a train flag)");
    s->m = m;
    s->model_mode = m->recompute;
    m->recompute = RECOMPUTE_DECODE;   // the prefill keeps every layer's keys and values, and no more than one layer's rest
    s->ring = ring && comm_size(ring) > 1 ? ring : NULL;
    s->rank = s->ring ? comm_rank(ring) : 0;
    s->size = s->ring ? comm_size(ring) : 1;
    if (s->ring && !m->cp) gpt_set_cp(m, ring, &(CpConfig){.mode = CP_RING, .overlap = true});
    s->cap = (max_new + s->size) / s->size + 1;   // this rank's share of the decoded tokens and the prompt's last
    s->kc = be->alloc((size_t)c->n_layer * s->cap * KV * r, "key cache");
    s->vc = be->alloc((size_t)c->n_layer * s->cap * KV * r, "value cache");
    row_alloc(&s->row, c, be);
    s->h = be->alloc(F * r, "decode h");
    s->xn_f = be->alloc(C * r, "decode final norm");
    s->rstd_f = be->alloc(r, "decode final norm");
    s->l_row = be->alloc(H * r, "attention row sum");
    s->merge = xmalloc((C + H) * r, "attention merge");
    s->lse_max = xmalloc(H * r, "attention merge");
    s->lg = be->alloc((size_t)c->vocab_size * r, "logits");
    s->lg_host = xmalloc((size_t)c->vocab_size * r, "logits");
    s->logits = xmalloc((size_t)c->vocab_size * sizeof(float), "logits");
    s->attn = (CacheAttention){.step = {cache_attention}, .dec = s};
}

void decoder_free(Decoder *s) {
    const Backend *be = s->m->be;
    real *bufs[] = {s->kc, s->vc, s->h, s->xn_f, s->rstd_f, s->l_row, s->lg};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) be->release(bufs[i]);
    row_free(&s->row, be);
    free(s->merge);
    free(s->lse_max);
    free(s->lg_host);
    free(s->logits);
    if (s->batch.tokens) batch_free(&s->batch);
    s->m->recompute = s->model_mode;
    if (s->ring) gpt_set_cp(s->m, NULL, NULL);
}

// logits (V, host floats) of the final-norm row xn (C, on the backend).
static void head_logits(Decoder *s, const real *xn) {
    const ModelConfig *c = &s->m->cfg;
    s->m->be->matmul_forward(s->lg, xn, s->m->w.lm_head, 1, c->dim, c->vocab_size, ACT_F32, ACT_F32);
    s->m->be->to_host(s->lg_host, s->lg, (size_t)c->vocab_size * sizeof(real));
    for (int i = 0; i < c->vocab_size; i++) s->logits[i] = (float)s->lg_host[i];
}

// Prefills the cache with tokens[0..n) (n >= 1): the model's prefill forward over the prompt, padded for the
// ring, leaves every layer's keys and values of this rank's slice in m->act.layers[l].k, .v; this rank's
// rows below n are its shard.
static void prefill_cache(Decoder *s, const int32_t *tokens, int n) {
    int W = s->size, r = s->rank;
    // The zigzag layout cuts the sequence into 2·sp equal chunks: pad the end (any valid token: it is
    // in the future of every prompt token, so causal attention never lets it change them).
    int T = W == 1 ? n : (n + 2 * W - 1) / (2 * W) * (2 * W), chunk = T / (2 * W);
    int32_t *sample = xcalloc((size_t)T + 1, sizeof(int32_t), "the prompt");
    memcpy(sample, tokens, (size_t)n * sizeof(int32_t));
    if (s->batch.tokens) batch_free(&s->batch);
    s->batch = batch_alloc(1, T / W);
    batch_put_sample(&s->batch, 0, sample, T, -1, (RankSlice){W, r, PLACE_ZIGZAG});
    free(sample);
    gpt_prefill(s->m, &s->batch, n + 1);   // HF's prefill runs the whole prompt: the last token's too
    int starts[2] = {W == 1 ? 0 : r * chunk, (2 * W - 1 - r) * chunk}, lens[2] = {W == 1 ? n : chunk, W == 1 ? 0 : chunk};
    for (int i = 0; i < 2; i++) {
        int valid = n - starts[i];
        s->seg_off[i] = i * chunk;
        s->seg_len[i] = valid < 0 ? 0 : valid < lens[i] ? valid : lens[i];
    }
}

const float *decode_prefill(Decoder *s, const int32_t *tokens, int n) {
    const ModelConfig *c = &s->m->cfg;
    if (n < 1) fail("internal: an empty prompt");
    for (int i = 0; i < n; i++)
        if (tokens[i] < 0 || tokens[i] >= c->vocab_size)
            fail("prompt token %d at position %d is outside the model's vocabulary (%d)", tokens[i], i, c->vocab_size);
    // The cache takes the prompt but its last token, which then runs as the first decoding step: its row
    // is the only one whose output (the next token's logits) is wanted.
    s->seg_len[0] = s->seg_len[1] = 0;
    if (n > 1) prefill_cache(s, tokens, n - 1);
    s->len = s->prefilled = n - 1;
    s->n_dec = 0;
    return feed(s, tokens[n - 1]);
}

// Merges this rank's partial attention of the one query row (out (H·hd) normalised, lse (H)) with the
// other ranks': O = Σ_r exp(lse_r − M) O_r / Σ_r exp(lse_r − M), M = max_r lse_r. A rank whose shard
// had no key has lse −inf and weight 0.
static void merge_ring(Decoder *s, real *out, const real *lse) {
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

// The decoding attention step: L->att (H·hd) = softmax(q·Kᵀ/√hd) V over every cached key of the layer,
// all in the new token's past — the prefill shard and the decoded tokens this rank holds (the new
// token's own joins them first when this rank owns it) — through the backend's block kernel, then
// merged over the ring; L->lse gets the row's LSE.
static void cache_attention(AttnStep *self, GPT *m, int l, LayerActs *L, Rows r) {
    (void)r;
    CacheAttention *a = (CacheAttention *)self;
    Decoder *s = a->dec;
    const ModelConfig *c = &m->cfg;
    const Backend *be = m->be;
    const LayerActs *P = &m->act.layers[l];   // the prefill's keys and values
    size_t KV = cfg_kv_dim(c), layer = (size_t)l * s->cap * KV;
    if (a->owner) {
        be->copy(s->kc + layer + (size_t)s->n_dec * KV, L->k, KV * sizeof(real));
        be->copy(s->vc + layer + (size_t)s->n_dec * KV, L->v, KV * sizeof(real));
    }
    int n_dec = s->n_dec + a->owner;
    AttnShape shape = {.n_head = c->n_head, .n_kv_head = c->n_kv_head, .head_dim = cfg_head_dim(c)};
    AttnState st = {.acc = L->att, .m = L->lse, .l = s->l_row};
    be->attn_state_reset(&shape, st, 1);
    for (int i = 0; i < 2; i++)
        if (s->seg_len[i] > 0)
            be->attn_forward_block(&shape, st, L->q, 1, P->k + s->seg_off[i] * KV, P->v + s->seg_off[i] * KV, s->seg_len[i],
                                   ATTN_FULL, NULL);
    if (n_dec > 0) be->attn_forward_block(&shape, st, L->q, 1, s->kc + layer, s->vc + layer, n_dec, ATTN_FULL, NULL);
    be->attn_finalize(&shape, st, L->att, L->lse, 1);
    if (s->ring) merge_ring(s, L->att, L->lse);
}

// Feeds token at position s->len: one row through every block against the cache; the next token's logits.
static const float *feed(Decoder *s, int token) {
    GPT *m = s->m;
    const ModelConfig *c = &m->cfg;
    if (token < 0 || token >= c->vocab_size) fail("token %d is outside the vocabulary (%d)", token, c->vocab_size);
    int32_t pos = s->len, tok = token;
    s->attn.owner = (pos - s->prefilled) % s->size == s->rank;   // round-robin: the shards stay balanced
    if (s->attn.owner && s->n_dec >= s->cap) fail("internal: KV cache full (%d decoded tokens on this rank)", s->cap);
    Rows row = {.B = 1, .T = 1, .pos = &pos, .rope_len = pos + 1};   // HF's step: max position + 1
    gpt_embed(m, s->row.x, &tok, 1);
    for (int l = 0; l < c->n_layer; l++) gpt_layer_forward(m, l, &s->row, s->h, row, &s->attn.step, s->row.x);
    s->n_dec += s->attn.owner;
    s->len++;
    gpt_final_norm(m, s->xn_f, s->rstd_f, s->row.x, 1);
    head_logits(s, s->xn_f);
    return s->logits;
}

const float *decode_step(Decoder *s, int token) {
    if (s->len == 0) fail("internal: decode_step before decode_prefill");
    return feed(s, token);
}

DecodeMark decode_mark(const Decoder *s) { return (DecodeMark){s->len, s->n_dec}; }

void decode_rewind(Decoder *s, DecodeMark at) {
    if (at.len < s->prefilled || at.len > s->len || at.n_dec > s->n_dec) fail("internal: rewind to a mark of another sequence");
    s->len = at.len, s->n_dec = at.n_dec;
}

int decode_agree(Decoder *s, int token) {
    if (!s->ring) return token;
    int64_t t = s->rank == 0 ? token : 0;
    comm_allreduce(s->ring, &t, 1, COMM_I64, COMM_SUM, "sampled token");
    return (int)t;
}
