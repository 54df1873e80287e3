// attention/cp.c — the context-parallel handle: the ring or Ulysses (the hybrid's ring inside) behind one call, its communicators, workspace and figures.
#include "attention/cp.h"

#include <stdlib.h>

#include "core/comm.h"
#include "core/common.h"
#ifdef RINGGPT_HAVE_CUDA
#include "core/backend_cuda.h"
#endif

struct AttnCP {
    CpConfig c;
    AttnRing *ring;       // CP_RING
    AttnUlysses *u;       // CP_ULYSSES, CP_HYBRID
    Comm *split[2];       // Ulysses: the group and the ring across the groups, split from the ring (comm_groups)
    Comm *dev[3];         // the communicators the attention runs on: the ring, or the group and across, wrapped for
                          // device buffers on a device backend (else the same as the ring's or split's)
};

static int degree_of(const CpConfig *c) {
    if (c->mode == CP_RING) return 1;
    return c->mode == CP_ULYSSES || c->degree <= 0 ? c->sp : c->degree;
}

int cp_place_groups(const CpConfig *c) { return c->mode == CP_HYBRID ? c->sp / degree_of(c) : c->sp; }

// The communicator for the backend's buffers: device memory travels through comm_cuda_wrap's (NCCL or host staging).
static Comm *for_backend(const Backend *be, Comm *c, const char *what) {
#ifdef RINGGPT_HAVE_CUDA
    if (be->device) return comm_cuda_wrap(c, what);
#endif
    (void)be, (void)what;
    return c;
}

AttnCP *attn_cp_create(Comm *ring, const Backend *be, const CpConfig *c) {
    if (!ring || comm_size(ring) <= 1) return NULL;
    AttnCP *cp = xcalloc(1, sizeof *cp, "context parallelism");
    cp->c = *c;
    cp->c.sp = comm_size(ring);
    cp->c.degree = degree_of(&cp->c);
    if (c->mode == CP_RING) {
        cp->dev[0] = for_backend(be, ring, "ring communicator");
        cp->ring = ring_create(cp->dev[0], be, c->overlap);
        return cp;
    }
    comm_groups(ring, cp->c.degree, &cp->split[0], &cp->split[1]);
    cp->dev[1] = for_backend(be, cp->split[0], "Ulysses group communicator");
    cp->dev[2] = for_backend(be, cp->split[1], "ring across the Ulysses groups");
    cp->u = ulysses_create(cp->dev[1], cp->dev[2], be, c->overlap);
    return cp;
}

void attn_cp_free(AttnCP *cp) {
    if (!cp) return;
    ring_free(cp->ring);
    ulysses_free(cp->u);
#ifdef RINGGPT_HAVE_CUDA
    for (int i = 0; i < 3; i++) comm_cuda_free(cp->dev[i]);   // a plain communicator is left alone
#endif
    for (int i = 0; i < 2; i++) comm_free(cp->split[i]);
    free(cp);
}

CpConfig attn_cp_config(const AttnCP *cp) { return cp ? cp->c : (CpConfig){.sp = 1, .degree = 1}; }

void attn_cp_forward(AttnCP *cp, const Backend *be, const AttnShape *s, const AttnRows *t, const AttnLayout *lay) {
    if (!cp) attention_causal_forward(be, s, t, lay);
    else if (cp->ring) ring_attention_forward(cp->ring, be, s, t, lay);
    else ulysses_attention_forward(cp->u, s, t, lay);
}

void attn_cp_backward(AttnCP *cp, const Backend *be, const AttnShape *s, const AttnRows *t, const AttnLayout *lay) {
    if (!cp) attention_causal_backward(be, s, t, lay);
    else if (cp->ring) ring_attention_backward(cp->ring, be, s, t, lay);
    else ulysses_attention_backward(cp->u, s, t, lay);
}

RingStats attn_cp_stats(const AttnCP *cp) {
    if (!cp) return (RingStats){0};
    if (cp->ring) return ring_stats(cp->ring);
    RingStats st = ulysses_stats(cp->u);
    const AttnRing *across = ulysses_ring(cp->u);
    if (!across) return st;
    // The hybrid: Ulysses times the whole step between its all-to-alls, the ring's waiting in it.
    RingStats rs = ring_stats(across);
    st.compute_s = rs.compute_s;
    st.wait_s += rs.wait_s, st.lag_s = rs.lag_s;
    st.bytes += rs.bytes, st.exchanges += rs.exchanges, st.blocks_skipped = rs.blocks_skipped;
    return st;
}

void attn_cp_stats_reset(AttnCP *cp) {
    if (!cp) return;
    if (cp->ring) ring_stats_reset(cp->ring);
    if (cp->u) ulysses_stats_reset(cp->u);
    if (cp->u && ulysses_ring(cp->u)) ring_stats_reset(ulysses_ring(cp->u));
}

RingTiming attn_cp_model(const CpConfig *c, const AttnShape *s, int L, const AttnLayout *lay, const RingCosts *k,
                         bool backward) {
    int N = degree_of(c), R = c->sp / N;
    if (c->mode == CP_RING) return ring_layout_model(c->sp, L, s, k, c->overlap, backward, lay);
    if (R == 1) return ulysses_model(s, N, L, lay ? lay->docs_host : NULL, k, backward);
    RingTiming a = ulysses_model(s, N, L, NULL, k, backward);   // its wait_s: the all-to-alls alone
    AttnShape ms = ulysses_member_shape(s, N);
    RingTiming r = ring_layout_model(R, N * L, &ms, k, c->overlap, backward, lay);
    return (RingTiming){.seconds = a.wait_s + r.seconds, .compute_s = r.compute_s, .wait_s = a.wait_s + r.wait_s,
                        .lag_s = r.lag_s, .bytes = a.bytes + r.bytes};
}

size_t attn_cp_workspace_bytes(const CpConfig *c, const AttnShape *s, int L) {
    if (c->sp <= 1) return 0;
    if (c->mode == CP_RING) return ring_workspace_bytes((size_t)L * s->n_kv_head * s->head_dim, s->qkv, c->any_layout);
    return ulysses_workspace_bytes(s, degree_of(c), c->sp, L, c->any_layout);
}

bool attn_cp_lends(const CpConfig *c) { return c->mode == CP_RING; }

void attn_cp_set_workspace(AttnCP *cp, void *buf, size_t bytes) {
    if (cp && cp->ring) ring_set_workspace(cp->ring, buf, bytes);
}
