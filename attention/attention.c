// attention/attention.c — whole-sequence causal attention on one rank, driven through the block API.
#include "attention/attention.h"

void attention_causal_forward(const Backend *be, const AttnShape *s, const AttnRows *t, const AttnLayout *lay) {
    // The output buffer doubles as the accumulator and lse as the running max: no extra (T, H, hd).
    AttnState st = {.acc = t->out, .m = t->lse, .l = t->tmp};
    const int32_t *doc = lay ? lay->docs : NULL;
    AttnDocs docs = {doc, doc};
    be->attn_state_reset(s, st, t->L);
    be->attn_forward_block(s, st, t->q, t->L, t->k, t->v, t->L, ATTN_CAUSAL, doc ? &docs : NULL);
    be->attn_finalize(s, st, t->out, t->lse, t->L);
}

void attention_causal_backward(const Backend *be, const AttnShape *s, const AttnRows *t, const AttnLayout *lay) {
    int T = t->L;
    size_t qn = (size_t)T * s->n_head * s->head_dim, kvn = (size_t)T * s->n_kv_head * s->head_dim;
    const int32_t *doc = lay ? lay->docs : NULL;
    AttnDocs docs = {doc, doc};
    be->zero(t->dq, qn * sizeof(real));
    be->zero(t->dk, kvn * sizeof(real));
    be->zero(t->dv, kvn * sizeof(real));
    be->attn_backward_prep(s, t->tmp, t->dout, t->out, T);
    be->attn_backward_block(s, t->dq, t->dk, t->dv, t->q, t->k, t->v, t->out, t->dout, t->lse, t->tmp, T, T, ATTN_CAUSAL,
                            doc ? &docs : NULL);
}
