// attention/ring.h — ring attention across the sp ranks of a sequence: zigzag blocks, KV passed around the ring.
#pragma once
#include "attention/attention.h"

struct Backend;
typedef struct AttnRing AttnRing;   // defined in attention/ring.c

// Causal attention of this rank's zigzag slice (T_local = T/sp tokens: chunk r then chunk
// 2·sp−1−r) against the whole sequence, same contract as attention_causal_forward:
// out (T_local, H, hd), lse (T_local, H), scratch_l (T_local, H).
void ring_attention_forward(AttnRing *ring, const struct Backend *be, const AttnShape *s, real *out, real *lse,
                            real *scratch_l, const real *q, const real *k, const real *v, int T_local);
// Same contract as attention_causal_backward: dq, dk, dv overwritten with this rank's gradients.
void ring_attention_backward(AttnRing *ring, const struct Backend *be, const AttnShape *s, real *dq, real *dk,
                             real *dv, real *scratch_D, const real *q, const real *k, const real *v, const real *out,
                             const real *lse, const real *dout, int T_local);
