// attention/attention.c — whole-sequence causal attention on one rank, driven through the block API.
#include "attention/attention.h"

void attention_causal_forward(const Backend *be, const AttnShape *s, real *out, real *lse, real *scratch_l,
                              const real *q, const real *k, const real *v, int T, const int32_t *doc) {
    // The output buffer doubles as the accumulator and lse as the running max: no extra (T, H, hd).
    AttnState st = {.acc = out, .m = lse, .l = scratch_l};
    AttnDocs docs = {doc, doc};
    be->attn_state_reset(s, st, T);
    be->attn_forward_block(s, st, q, T, k, v, T, ATTN_CAUSAL, doc ? &docs : NULL);
    be->attn_finalize(s, st, out, lse, T);
}

void attention_causal_backward(const Backend *be, const AttnShape *s, real *dq, real *dk, real *dv, real *scratch_D,
                               const real *q, const real *k, const real *v, const real *out, const real *lse,
                               const real *dout, int T, const int32_t *doc) {
    size_t qn = (size_t)T * s->n_head * s->head_dim, kvn = (size_t)T * s->n_kv_head * s->head_dim;
    AttnDocs docs = {doc, doc};
    be->zero(dq, qn * sizeof(real));
    be->zero(dk, kvn * sizeof(real));
    be->zero(dv, kvn * sizeof(real));
    be->attn_backward_prep(s, scratch_D, dout, out, T);
    be->attn_backward_block(s, dq, dk, dv, q, k, v, out, dout, lse, scratch_D, T, T, ATTN_CAUSAL, doc ? &docs : NULL);
}
