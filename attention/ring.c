// attention/ring.c — ring attention: zigzag blocks, K/V (and dK/dV) pieces passed around the sp ranks while the blocks compute.
#include "attention/ring.h"

#include <stdlib.h>

#include "attention/ring_schedule.h"
#include "core/backend.h"
#include "core/comm.h"
#include "core/common.h"

// Two packets (attention/ring_schedule.h has their layout) and one step's dK/dV: a rank holds two KV
// blocks, never sp of them. K and V travel in the activations' storage (AttnShape.qkv: bf16 under
// --activations bf16, half the bytes per hop), the dK/dV accumulators always as real.
struct AttnRing {
    Comm *comm;
    const Backend *be;
    int rank, size;     // sp_index, sp
    char *pkt[2];       // packet_bytes(cap, store) each: kv 0, kv 1 [act store], acc 0, acc 1 (real)
    real *dkv_step;     // (2, L, Hkv, hd) this step's [dk c0 | dv c0 | dk c1 | dv c1], before it joins the accumulator
    size_t cap;         // elements of one (L, Hkv, hd) block the buffers hold ...
    ActStore store;     // ... with k and v stored so
    char *ws;           // lent workspace (ring_set_workspace) or NULL
    size_t ws_bytes;
    bool own;           // the buffers are the ring's own allocations
    bool overlap;
    RingStats stats;
};

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

// Bytes of one piece (attention/ring_schedule.h): a kv piece holds kvn elements in `store`, an
// accumulator piece kvn reals. A packet is two of each.
static size_t piece_bytes(size_t kvn, ActStore store, PieceKind kind) {
    return kvn * (kind == PIECE_KV ? act_elem_bytes(store) : sizeof(real));
}
static size_t packet_bytes(size_t kvn, ActStore store) {
    return 2 * piece_bytes(kvn, store, PIECE_KV) + 2 * piece_bytes(kvn, store, PIECE_ACC);
}

// Two packets and one dK|dV step buffer (fp32: 10·kvn elements).
size_t ring_workspace_bytes(size_t kvn, ActStore store) {
    return 2 * packet_bytes(kvn, store) + 2 * kvn * sizeof(real);
}

void ring_set_workspace(AttnRing *R, void *buf, size_t bytes) {
    if (buf == R->ws && bytes == R->ws_bytes) return;
    release_buffers(R);
    R->ws = buf;
    R->ws_bytes = buf ? bytes : 0;
}

// Sizes the buffers for blocks of kvn = L·Hkv·hd elements with k, v stored as `store` (once, unless
// T_local grows or the storage changes): in the lent workspace when it is big enough, else the ring's
// own. The kv pieces come first and every piece is a multiple of 2·kvn bytes: the real parts stay
// 4-byte aligned for every even kvn (hd is even), 16-byte aligned when kvn is a multiple of 8.
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

// Document ids of the whole sequence in zigzag rank order, on the backend and on the host (ring.h).
typedef struct {
    const int32_t *dev, *host;   // (sp·L)
} RingDocs;

// True when the task's rows share no document with its keys: ids are ranges, so disjoint [min, max]
// intervals mean nothing is visible.
static bool task_hidden(RingDocs d, int L, int r, const RingTask *t) {
    if (!d.host) return false;
    const int32_t *qd = d.host + (size_t)r * L + t->q0, *kd = d.host + (size_t)t->j * L + t->k0;
    int32_t qlo = qd[0], qhi = qd[0], klo = kd[0], khi = kd[0];
    for (int i = 1; i < t->nq; i++) qlo = qd[i] < qlo ? qd[i] : qlo, qhi = qd[i] > qhi ? qd[i] : qhi;
    for (int i = 1; i < t->nk; i++) klo = kd[i] < klo ? kd[i] : klo, khi = kd[i] > khi ? kd[i] : khi;
    return qhi < klo || khi < qlo;
}

// One call of ring_attention_forward or _backward: the schedule's operations on the comm and the kernels.
typedef struct {
    RingSched x;             // first: the schedule calls back with &run->x
    AttnRing *R;
    const Backend *be;
    const AttnShape *s;
    RingDocs docs;
    size_t kvn, hn;          // elements of one block's K and of one chunk's
    const real *q, *k, *v;   // this rank's q (L, H, hd), k, v (L, Hkv, hd) [act s->qkv]
    AttnState st;            // forward: the running state of all L rows
    real *dq, *dk, *dv;      // backward outputs: dq (L, H, hd), dk, dv (L, Hkv, hd)
    const real *out, *dout, *lse, *D;   // backward: the global out, dout (L, H, hd), lse, D (L, H)
    CommRequest hop[2][2];   // [kind][piece]: the last hop started
} RingRun;

// Piece `piece` of `kind` in packet `packet`: kv pieces first, then the accumulators.
static char *piece_of(const RingRun *u, int packet, PieceKind kind, int piece) {
    ActStore st = u->s->qkv;
    size_t kv = piece_bytes(u->kvn, st, PIECE_KV), acc = piece_bytes(u->kvn, st, PIECE_ACC);
    return u->R->pkt[packet] + (kind == PIECE_KV ? piece * kv : 2 * kv + piece * acc);
}
static real *acc_of(const RingRun *u, int packet, int piece) { return (real *)piece_of(u, packet, PIECE_ACC, piece); }

// The serial baseline's meeting before a hop: the first byte of the piece about to be sent, into the first
// byte of the piece the hop then receives whole (backend memory, so any transport takes it). Rank r waits
// for r − 1 (with two ranks, each for the other).
static void run_meet(RingSched *x, PieceKind kind, int piece) {
    RingRun *u = (RingRun *)x;
    AttnRing *R = u->R;
    int W = R->size, a = x->step % 2;
    CommRequest q;
    comm_sendrecv_start(R->comm, &q, piece_of(u, a, kind, piece), piece_of(u, 1 - a, kind, piece), 1, (R->rank + 1) % W,
                        (R->rank - 1 + W) % W, "ring serial handshake");
    R->stats.lag_s += comm_wait(&q);
}

static void run_start(RingSched *x, PieceKind kind, int piece) {
    RingRun *u = (RingRun *)x;
    AttnRing *R = u->R;
    int W = R->size, a = x->step % 2;
    size_t bytes = piece_bytes(u->kvn, u->s->qkv, kind);
    comm_sendrecv_start(R->comm, &u->hop[kind][piece], piece_of(u, a, kind, piece), piece_of(u, 1 - a, kind, piece),
                        bytes, (R->rank + 1) % W, (R->rank - 1 + W) % W,
                        kind == PIECE_KV ? "ring KV exchange" : "ring dKV exchange");
    R->stats.bytes += (double)bytes;
    R->stats.exchanges++;
}

static void run_wait(RingSched *x, PieceKind kind, int piece) {
    RingRun *u = (RingRun *)x;
    u->R->stats.wait_s += comm_wait(&u->hop[kind][piece]);
}

// The keys of a task [act s->qkv]: this rank's own k, v, or the piece of the current packet that holds them.
static void task_keys(const RingRun *u, const RingTask *t, const real **k, const real **v) {
    ActStore st = u->s->qkv;
    size_t kw = (size_t)u->s->n_kv_head * u->s->head_dim;
    if (t->j == u->x.r) {
        *k = act_at(u->k, st, (size_t)t->k0 * kw), *v = act_at(u->v, st, (size_t)t->k0 * kw);
        return;
    }
    const real *p = (const real *)piece_of(u, u->x.step % 2, PIECE_KV, t->k0 / (u->x.L / 2));
    *k = p, *v = act_at(p, st, u->hn);
}

static void run_task(RingSched *x, const RingTask *t, bool backward) {
    RingRun *u = (RingRun *)x;
    const AttnShape *s = u->s;
    size_t qo = (size_t)t->q0 * s->n_head * s->head_dim, so = (size_t)t->q0 * s->n_head, kw = (size_t)s->n_kv_head * s->head_dim;
    bool own = t->j == x->r;
    real *dk = NULL, *dv = NULL;   // backward: own block's rows of the outputs, or this step's piece
    if (backward && own) dk = u->dk + t->k0 * kw, dv = u->dv + t->k0 * kw;
    if (backward && !own) {
        dk = u->R->dkv_step + (size_t)(t->k0 / (x->L / 2)) * u->kvn, dv = dk + u->hn;
        u->be->zero(dk, u->kvn * sizeof(real));
    }
    if (t->nk == 0) return;
    if (task_hidden(u->docs, x->L, x->r, t)) {
        u->R->stats.blocks_skipped++;
        return;
    }
    const real *kb, *vb;
    task_keys(u, t, &kb, &vb);
    AttnDocs docs = {0};
    if (u->docs.dev) docs = (AttnDocs){u->docs.dev + (size_t)x->r * x->L + t->q0, u->docs.dev + (size_t)t->j * x->L + t->k0};
    const AttnDocs *dp = docs.q ? &docs : NULL;
    double t0 = now_seconds();
    const real *q = act_at(u->q, s->qkv, qo);
    if (backward)
        u->be->attn_backward_block(s, u->dq + qo, dk, dv, q, kb, vb, u->out + qo, u->dout + qo, u->lse + so, u->D + so,
                                   t->nq, t->nk, t->mask, dp);
    else
        u->be->attn_forward_block(s, (AttnState){u->st.acc + qo, u->st.m + so, u->st.l + so}, q, t->nq, kb, vb, t->nk,
                                  t->mask, dp);
    u->R->stats.compute_s += now_seconds() - t0;
}

// This step's dK/dV piece joins the accumulator that arrived with the block (at step 1 it starts it).
static void run_join(RingSched *x, int piece) {
    RingRun *u = (RingRun *)x;
    real *acc = acc_of(u, x->step % 2, piece), *mine = u->R->dkv_step + (size_t)piece * u->kvn;
    if (x->step == 1) u->be->copy(acc, mine, u->kvn * sizeof(real));
    else u->be->add_inplace(acc, mine, u->kvn);
}

// The own block's accumulator piece, home after the full ring, joins this rank's own part in dk, dv.
static void run_home(RingSched *x, int piece) {
    RingRun *u = (RingRun *)x;
    const real *acc = acc_of(u, x->W % 2, piece);
    u->be->add_inplace(u->dk + (size_t)piece * u->hn, acc, u->hn);
    u->be->add_inplace(u->dv + (size_t)piece * u->hn, acc + u->hn, u->hn);
}

// Sets up one call: buffers, and this rank's K, V copied into packet 0 as its two kv pieces.
static void run_open(RingRun *u, AttnRing *R, const Backend *be, const AttnShape *s, int L, const real *q, const real *k,
                     const real *v, const int32_t *docs, const int32_t *docs_host) {
    *u = (RingRun){.x = {.W = R->size, .r = R->rank, .L = L, .overlap = R->overlap, .meet = run_meet,
                         .start = run_start, .wait = run_wait, .task = run_task, .join = run_join, .home = run_home},
                   .R = R, .be = be, .s = s, .docs = {docs, docs ? docs_host : NULL}, .q = q, .k = k, .v = v};
    u->kvn = (size_t)L * s->n_kv_head * s->head_dim;
    u->hn = u->kvn / 2;
    check_local_len(R, L);
    ensure_buffers(R, u->kvn, s->qkv);
    size_t eb = act_elem_bytes(s->qkv);
    for (int c = 0; c < 2 && R->size > 1; c++) {
        real *p = (real *)piece_of(u, 0, PIECE_KV, c);
        be->copy(p, act_at(k, s->qkv, c * u->hn), u->hn * eb);
        be->copy(act_at(p, s->qkv, u->hn), act_at(v, s->qkv, c * u->hn), u->hn * eb);
    }
}

void ring_attention_forward(AttnRing *R, const Backend *be, const AttnShape *s, real *out, real *lse,
                            real *scratch_l, const real *q, const real *k, const real *v, int L, const int32_t *docs,
                            const int32_t *docs_host) {
    RingRun u;
    run_open(&u, R, be, s, L, q, k, v, docs, docs_host);
    // fp32 state across all steps, normalised once at the end; out and lse double as acc and m.
    u.st = (AttnState){.acc = out, .m = lse, .l = scratch_l};
    be->attn_state_reset(s, u.st, L);
    ring_forward_schedule(&u.x);
    be->attn_finalize(s, u.st, out, lse, L);
}

void ring_attention_backward(AttnRing *R, const Backend *be, const AttnShape *s, real *dq, real *dk, real *dv,
                             real *scratch_D, const real *q, const real *k, const real *v, const real *out,
                             const real *lse, const real *dout, int L, const int32_t *docs,
                             const int32_t *docs_host) {
    RingRun u;
    run_open(&u, R, be, s, L, q, k, v, docs, docs_host);
    u.dq = dq, u.dk = dk, u.dv = dv, u.out = out, u.dout = dout, u.lse = lse, u.D = scratch_D;
    be->attn_backward_prep(s, scratch_D, dout, out, L);   // D = rowsum(dO ∘ O), once, from the final O
    be->zero(dq, (size_t)L * s->n_head * s->head_dim * sizeof(real));
    be->zero(dk, u.kvn * sizeof(real));
    be->zero(dv, u.kvn * sizeof(real));
    ring_backward_schedule(&u.x);
}

// ---- the schedule (attention/ring_schedule.h), written once for the run above and the timing model ----

// Starts a hop; the serial baseline meets r − 1 first and finishes the hop at once.
static void hop(RingSched *x, PieceKind kind, int piece) {
    if (!x->overlap) x->meet(x, kind, piece);
    x->start(x, kind, piece);
    if (!x->overlap) x->wait(x, kind, piece);
}

// The keys of chunk c of block j (j != r, DESIGN.md "Ring attention contract"): a block from an
// earlier rank is seen by all our rows through its first chunk only (its second is in the future of
// both of ours); a block from a later rank by our second chunk only, through both of its chunks.
static RingTask off_block(const RingSched *x, int j, int c) {
    int L = x->L, half = L / 2;
    if (j < x->r) return (RingTask){j, 0, L, c * half, c == 0 ? half : 0, ATTN_FULL};   // chunk 1: nothing
    return (RingTask){j, half, half, c * half, half, ATTN_FULL};
}

static void task(RingSched *x, RingTask t, bool backward) { x->task(x, &t, backward); }

// Forward: this rank's own block, causal, while its K, V leave for r + 1; then at step s the block of
// j = r − s, piece by piece: wait for the piece, pass it on (unless r + 1 has seen it), compute with it.
void ring_forward_schedule(RingSched *x) {
    const int W = x->W, r = x->r, L = x->L;
    x->step = 0;
    for (int c = 0; c < 2 && W > 1; c++) hop(x, PIECE_KV, c);
    task(x, (RingTask){r, 0, L, 0, L, ATTN_CAUSAL}, false);
    for (int s = 1; s < W; s++) {
        for (int c = 0; c < 2; c++) {
            x->wait(x, PIECE_KV, c);
            x->step = s;
            if (s + 1 < W) hop(x, PIECE_KV, c);
            task(x, off_block(x, (r - s + W) % W, c), false);
        }
    }
}

// Backward. A block's dK/dV accumulator starts at its first visitor (r + 1) and travels one hop behind
// its K, V; the owner's own part stays in dk, dv, so after sp − 1 hops the accumulator is home. The
// own block's work is split around the ring so that a transfer runs under every compute: each chunk
// with itself while the K, V pieces leave, our second chunk × our first while the last accumulators
// travel home.
void ring_backward_schedule(RingSched *x) {
    const int W = x->W, r = x->r, L = x->L, half = L / 2;
    x->step = 0;
    if (W == 1) {
        task(x, (RingTask){r, 0, L, 0, L, ATTN_CAUSAL}, true);
        return;
    }
    for (int c = 0; c < 2; c++) hop(x, PIECE_KV, c);
    task(x, (RingTask){r, 0, half, 0, half, ATTN_CAUSAL}, true);
    task(x, (RingTask){r, half, half, half, half, ATTN_CAUSAL}, true);
    for (int s = 1; s < W; s++) {
        for (int c = 0; c < 2; c++) {
            x->wait(x, PIECE_KV, c);
            x->step = s;
            if (s + 1 < W) hop(x, PIECE_KV, c);
            task(x, off_block(x, (r - s + W) % W, c), true);   // into this step's dK/dV piece c
            if (s > 1) x->wait(x, PIECE_ACC, c);               // block j's accumulator piece, from r − 1
            x->join(x, c);
            hop(x, PIECE_ACC, c);                              // on to r + 1; at s = W − 1 that is its owner
        }
    }
    task(x, (RingTask){r, half, half, 0, half, ATTN_FULL}, true);
    for (int c = 0; c < 2; c++) {
        x->wait(x, PIECE_ACC, c);
        x->home(x, c);
    }
}
