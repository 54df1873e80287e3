// attention/ring.c — ring attention: zigzag blocks, K/V (and dK/dV) packets passed around the sp ranks.
#include "attention/ring.h"

#include <stdlib.h>

#include "core/backend.h"
#include "core/comm.h"
#include "core/common.h"

// A packet is one contiguous buffer so that each hop is one message:
//   [ k (L, Hkv, hd) | v (L, Hkv, hd) | dk (L, Hkv, hd) | dv (L, Hkv, hd) ]
// k and v in the activations' storage (AttnShape.qkv: bf16 under --activations bf16, half the bytes per
// hop), the dK/dV accumulators always fp32. The forward uses only the first two. Two packets (double
// buffering): the one being computed on (and sent) and the one being received, so a rank holds two KV
// blocks, never sp of them.
struct AttnRing {
    Comm *comm;
    const Backend *be;
    int rank, size;     // sp_index, sp
    char *pkt[2];       // packet_bytes(kvn, store) each
    real *dkv_step;     // (2, L, Hkv, hd) this step's dk | dv contribution, before it joins its accumulator
    size_t cap;         // elements of one (L, Hkv, hd) block the buffers hold ...
    ActStore store;     // ... with k and v stored so
    char *ws;           // lent workspace (ring_set_workspace) or NULL
    size_t ws_bytes;
    bool own;           // the buffers are the ring's own allocations
    bool overlap;
    RingStats stats;
};

// Bytes of one packet's k | v part and of a whole packet, for blocks of kvn elements.
static size_t kv_bytes(size_t kvn, ActStore store) { return 2 * kvn * act_elem_bytes(store); }
static size_t packet_bytes(size_t kvn, ActStore store) { return kv_bytes(kvn, store) + 2 * kvn * sizeof(real); }

// The parts of packet p for blocks of kvn elements (this call's; the buffers may hold more): k, v in R->store,
// then dk | dv fp32.
static real *pkt_k(const AttnRing *R, int p) { return (real *)R->pkt[p]; }
static real *pkt_v(const AttnRing *R, int p, size_t kvn) { return act_at(pkt_k(R, p), R->store, kvn); }
static real *pkt_dk(const AttnRing *R, int p, size_t kvn) { return (real *)(R->pkt[p] + kv_bytes(kvn, R->store)); }

AttnRing *ring_create(Comm *ring_comm, const Backend *be, bool overlap) {
    AttnRing *R = xcalloc(1, sizeof *R, "ring attention");
    R->comm = ring_comm;
    R->be = be;
    R->rank = comm_rank(ring_comm);
    R->size = comm_size(ring_comm);
    R->overlap = overlap;
    return R;
}

static void release_buffers(AttnRing *R) {
    for (int i = 0; i < 2 && R->own; i++)
        if (R->pkt[i]) R->be->release(R->pkt[i]);
    if (R->dkv_step && R->own) R->be->release(R->dkv_step);
    R->pkt[0] = R->pkt[1] = NULL;
    R->dkv_step = NULL;
    R->cap = 0;
}

void ring_free(AttnRing *R) {
    if (!R) return;
    release_buffers(R);
    free(R);
}

RingStats ring_stats(const AttnRing *R) { return R->stats; }
int ring_size(const AttnRing *R) { return R->size; }
int ring_rank(const AttnRing *R) { return R->rank; }
void ring_stats_reset(AttnRing *R) { R->stats = (RingStats){0}; }

// Two packets and one fp32 dK|dV step buffer (fp32: 10·kvn elements).
size_t ring_workspace_bytes(size_t kvn, ActStore store) {
    return 2 * packet_bytes(kvn, store) + 2 * kvn * sizeof(real);
}

void ring_set_workspace(AttnRing *R, void *buf, size_t bytes) {
    if (buf == R->ws && bytes == R->ws_bytes) return;
    release_buffers(R);
    R->ws = buf;
    R->ws_bytes = buf ? bytes : 0;
}

// Sizes the buffers for blocks of kvn = L·Hkv·hd elements with k, v stored as `store` (once, unless T_local
// grows or the storage changes): in the lent workspace when it is big enough, else the ring's own. The
// packets' k|v part comes first and every part's size is a multiple of 2·kvn bytes: the fp32 parts of a
// packet stay 4-byte aligned for every even kvn (hd is even), 16-byte aligned when kvn is a multiple of 8.
static void ensure_buffers(AttnRing *R, size_t kvn, ActStore store) {
    if (kvn <= R->cap && store == R->store) return;
    release_buffers(R);
    size_t pb = packet_bytes(kvn, store);
    R->own = !(R->ws && ring_workspace_bytes(kvn, store) <= R->ws_bytes);
    for (int i = 0; i < 2; i++) R->pkt[i] = R->own ? R->be->alloc(pb, "ring KV packets") : R->ws + pb * i;
    R->dkv_step = R->own ? R->be->alloc(2 * kvn * sizeof(real), "ring dKV step buffer") : (real *)(R->ws + 2 * pb);
    R->cap = kvn;
    R->store = store;
}

static void check_local_len(const AttnRing *R, int L) {
    if (R->size > 1 && (L < 2 || L % 2 != 0))
        fail("ring attention: %d local tokens cannot be cut into the two zigzag chunks; seq-len must be a multiple "
             "of 2·sp = %d",
             L, 2 * R->size);
}

// Sends `bytes` from `send` to the next rank while receiving as many into `recv` from the previous.
static void start_hop(AttnRing *R, CommRequest *req, const char *send, char *recv, size_t bytes, const char *what) {
    int W = R->size;
    comm_sendrecv_start(R->comm, req, send, recv, bytes, (R->rank + 1) % W, (R->rank - 1 + W) % W, what);
    R->stats.bytes += (double)bytes;
    R->stats.exchanges++;
}

static void finish_hop(AttnRing *R, CommRequest *req) { R->stats.wait_s += comm_wait(req); }

// Document ids of one step: this rank's Q rows and block j's K rows (NULL ids: no document mask).
typedef struct {
    const int32_t *dev, *host;   // (sp·L) zigzag rank order, see ring.h
} RingDocs;

static AttnDocs step_docs(RingDocs d, int L, int j, int r) {
    if (!d.dev) return (AttnDocs){0};
    return (AttnDocs){d.dev + (size_t)r * L, d.dev + (size_t)j * L};
}

// The block call's optional ids: NULL when the step has none.
static const AttnDocs *opt(const AttnDocs *docs) { return docs->q ? docs : NULL; }

// True when the step's rows (this rank's rows from q0, nq of them) share no document with block j's
// keys k0.. (nk): ids are ranges, so disjoint [min, max] intervals mean nothing is visible.
static bool step_hidden(RingDocs d, int L, int j, int r, int q0, int nq, int k0, int nk) {
    if (!d.host) return false;
    const int32_t *qd = d.host + (size_t)r * L + q0, *kd = d.host + (size_t)j * L + k0;
    int32_t qlo = qd[0], qhi = qd[0], klo = kd[0], khi = kd[0];
    for (int i = 1; i < nq; i++) qlo = qd[i] < qlo ? qd[i] : qlo, qhi = qd[i] > qhi ? qd[i] : qhi;
    for (int i = 1; i < nk; i++) klo = kd[i] < klo ? kd[i] : klo, khi = kd[i] > khi ? kd[i] : khi;
    return qhi < klo || khi < qlo;
}

// One forward step against the KV block of rank j (DESIGN.md, "Ring attention contract"), with
// half = L/2 and the state rows of a Q block addressed by offset:
//   j == r: both local chunks, causal (local order is increasing in global position);
//   j <  r: every Q row × j's first chunk (entirely in the past; its second chunk is entirely in
//           the future of both of ours, so it is skipped);
//   j >  r: our second Q chunk × all of j's block; our first chunk sees none of it (no kernel).
// With documents, a step whose rows share no document with the block's keys launches nothing (the
// block still travels on). Returns whether it was skipped.
static bool forward_step(const Backend *be, const AttnShape *s, AttnState st, const real *q, const real *kb,
                         const real *vb, int L, int j, int r, RingDocs d) {
    int half = L / 2;
    size_t qoff = (size_t)half * s->n_head * s->head_dim, soff = (size_t)half * s->n_head;
    AttnDocs docs = step_docs(d, L, j, r);
    if (j == r) {
        be->attn_forward_block(s, st, q, L, kb, vb, L, ATTN_CAUSAL, opt(&docs));
    } else if (j < r) {
        if (step_hidden(d, L, j, r, 0, L, 0, half)) return true;
        be->attn_forward_block(s, st, q, L, kb, vb, half, ATTN_FULL, opt(&docs));
    } else {
        if (step_hidden(d, L, j, r, half, half, 0, L)) return true;
        AttnState late = {.acc = st.acc + qoff, .m = st.m + soff, .l = st.l + soff};
        if (docs.q) docs.q += half;
        be->attn_forward_block(s, late, act_at(q, s->qkv, qoff), half, kb, vb, L, ATTN_FULL, opt(&docs));
    }
    return false;
}

void ring_attention_forward(AttnRing *R, const Backend *be, const AttnShape *s, real *out, real *lse,
                            real *scratch_l, const real *q, const real *k, const real *v, int L, const int32_t *docs,
                            const int32_t *docs_host) {
    const RingDocs d = {docs, docs ? docs_host : NULL};
    const int W = R->size, r = R->rank;
    const size_t kvn = (size_t)L * s->n_kv_head * s->head_dim;
    check_local_len(R, L);
    ensure_buffers(R, kvn, s->qkv);
    // fp32 state across all steps, normalised once at the end; out and lse double as acc and m.
    AttnState st = {.acc = out, .m = lse, .l = scratch_l};
    be->attn_state_reset(s, st, L);
    int a = 0;
    size_t kvb = kv_bytes(kvn, s->qkv);
    be->copy(pkt_k(R, a), k, kvb / 2);
    be->copy(pkt_v(R, a, kvn), v, kvb / 2);
    for (int step = 0; step < W; step++) {
        CommRequest hop;
        bool more = step + 1 < W;   // the last block need not travel further
        // Start passing this block on before computing with it: the transfer hides behind the step.
        if (more) start_hop(R, &hop, R->pkt[a], R->pkt[1 - a], kvb, "ring KV exchange (forward)");
        if (more && !R->overlap) finish_hop(R, &hop);
        double t0 = now_seconds();
        R->stats.blocks_skipped +=
            forward_step(be, s, st, q, pkt_k(R, a), pkt_v(R, a, kvn), L, (r - step + W) % W, r, d);
        R->stats.compute_s += now_seconds() - t0;
        if (more) {
            if (R->overlap) finish_hop(R, &hop);
            a = 1 - a;
        }
    }
    be->attn_finalize(s, st, out, lse, L);
}

// One backward step against block j, the same three cases as forward_step. dq accumulates over
// all steps; dk, dv (this step's contribution to block j) are fresh.
// The rows of this rank a backward step reads: q [act], the global out, dout, lse and D (fp32).
typedef struct {
    const real *q, *out, *dout, *lse, *D;
} RingRows;

static bool backward_step(const Backend *be, const AttnShape *s, real *dq, real *dk, real *dv, RingRows x,
                          const real *kb, const real *vb, int L, int j, int r, RingDocs d) {
    int half = L / 2;
    size_t qoff = (size_t)half * s->n_head * s->head_dim, soff = (size_t)half * s->n_head;
    AttnDocs docs = step_docs(d, L, j, r);
    if (j == r) {
        be->attn_backward_block(s, dq, dk, dv, x.q, kb, vb, x.out, x.dout, x.lse, x.D, L, L, ATTN_CAUSAL, opt(&docs));
    } else if (j < r) {
        if (step_hidden(d, L, j, r, 0, L, 0, half)) return true;
        be->attn_backward_block(s, dq, dk, dv, x.q, kb, vb, x.out, x.dout, x.lse, x.D, L, half, ATTN_FULL, opt(&docs));
    } else {
        if (step_hidden(d, L, j, r, half, half, 0, L)) return true;
        if (docs.q) docs.q += half;
        be->attn_backward_block(s, dq + qoff, dk, dv, act_at(x.q, s->qkv, qoff), kb, vb, x.out + qoff, x.dout + qoff,
                                x.lse + soff, x.D + soff, half, L, ATTN_FULL, opt(&docs));
    }
    return false;
}

// Backward: at step s this rank computes with block j = r − s and sends on, in one packet, that
// block's K, V (needed next door at step s+1) and the dK/dV accumulator of the block it finished at
// step s−1 (needed next door now). Its own contribution for block j goes to dkv_step meanwhile and
// joins j's accumulator when that arrives. The accumulator travels with its block: after the last
// hop (step W) every block's dK/dV is home, so no reduction is needed.
void ring_attention_backward(AttnRing *R, const Backend *be, const AttnShape *s, real *dq, real *dk, real *dv,
                             real *scratch_D, const real *q, const real *k, const real *v, const real *out,
                             const real *lse, const real *dout, int L, const int32_t *docs,
                             const int32_t *docs_host) {
    const RingDocs d = {docs, docs ? docs_host : NULL};
    const int W = R->size, r = R->rank;
    const size_t kvn = (size_t)L * s->n_kv_head * s->head_dim;
    check_local_len(R, L);
    ensure_buffers(R, kvn, s->qkv);
    be->attn_backward_prep(s, scratch_D, dout, out, L);   // D = rowsum(dO ∘ O), once, from the final O
    be->zero(dq, (size_t)L * s->n_head * s->head_dim * sizeof(real));
    const RingRows rows = {q, out, dout, lse, scratch_D};
    int a = 0;
    size_t kvb = kv_bytes(kvn, s->qkv), pb = packet_bytes(kvn, s->qkv);
    be->copy(pkt_k(R, a), k, kvb / 2);
    be->copy(pkt_v(R, a, kvn), v, kvb / 2);
    for (int step = 0; step <= W; step++) {
        // Packet part that travels at this step: K,V while a later step needs them, dK,dV from step 1 on.
        size_t lo = step + 2 <= W ? 0 : kvb, hi = step >= 1 ? pb : kvb;
        bool hop_now = W > 1 && hi > lo;
        CommRequest hop;
        if (hop_now) start_hop(R, &hop, R->pkt[a] + lo, R->pkt[1 - a] + lo, hi - lo, "ring KV+dKV exchange (backward)");
        if (step == W) {   // the last hop only brings this rank's own accumulator home
            if (hop_now) {
                finish_hop(R, &hop);
                a = 1 - a;
            }
            break;
        }
        if (hop_now && !R->overlap) finish_hop(R, &hop);
        double t0 = now_seconds();
        be->zero(R->dkv_step, 2 * kvn * sizeof(real));
        R->stats.blocks_skipped += backward_step(be, s, dq, R->dkv_step, R->dkv_step + kvn, rows, pkt_k(R, a),
                                                 pkt_v(R, a, kvn), L, (r - step + W) % W, r, d);
        R->stats.compute_s += now_seconds() - t0;
        if (hop_now && R->overlap) finish_hop(R, &hop);
        // pkt[1-a] now holds the next block's K,V and (from step 1) block j's accumulator.
        real *acc = pkt_dk(R, 1 - a, kvn);
        if (step == 0) be->copy(acc, R->dkv_step, 2 * kvn * sizeof(real));
        else be->add_inplace(acc, R->dkv_step, 2 * kvn);
        a = 1 - a;
    }
    be->copy(dk, pkt_dk(R, a, kvn), kvn * sizeof(real));
    be->copy(dv, pkt_dk(R, a, kvn) + kvn, kvn * sizeof(real));
}
