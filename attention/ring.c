// attention/ring.c — attention across the sp ranks: the zigzag's K/V (and dK/dV) pieces passed around the ring, any other
// layout's read rows exchanged pairwise, while the blocks compute.
#include "attention/ring.h"

#include <stdlib.h>

#include "attention/ring_exchange.h"
#include "attention/ring_schedule.h"
#include "core/backend.h"
#include "core/comm.h"
#include "core/common.h"

// The ring's buffers, one region: for the zigzag two packets (attention/ring_schedule.h has their layout) and one step's
// dK/dV, so a rank holds two KV blocks, never sp of them; for another layout the exchange's six slots (ExRun). K and V
// travel in the activations' storage (AttnShape.qkv: bf16 under --activations bf16, half the bytes per hop), dK/dV as real.
struct AttnRing {
    Comm *comm;
    const Backend *be;
    int rank, size;     // sp_index, sp
    char *buf;          // the region: the lent workspace or the ring's own
    size_t buf_bytes;
    char *ws;           // lent workspace (ring_set_workspace) or NULL
    size_t ws_bytes;
    bool own;           // buf is the ring's own allocation
    bool overlap;
    ExPlan plan;        // the last layout's exchange (host)
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
    if (R->buf && R->own) R->be->release(R->buf);
    R->buf = NULL;
    R->buf_bytes = 0;
}

void ring_free(AttnRing *R) {
    if (!R) return;
    release_buffers(R);
    ex_plan_free(&R->plan);
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

// Two packets and one dK|dV step buffer (fp32: 10·kvn elements); the exchange's six slots (ExRun) need one K|V slot of
// L rows more (fp32: 12·kvn elements).
size_t ring_workspace_bytes(size_t kvn, ActStore store, bool exchange) {
    return 2 * packet_bytes(kvn, store) + 2 * kvn * sizeof(real) + (exchange ? 2 * kvn * act_elem_bytes(store) : 0);
}

void ring_set_workspace(AttnRing *R, void *buf, size_t bytes) {
    if (buf == R->ws && bytes == R->ws_bytes) return;
    release_buffers(R);
    R->ws = buf;
    R->ws_bytes = buf ? bytes : 0;
}

// A region of at least `bytes` (kept until a call needs more): the lent workspace when it is big enough, else the ring's
// own. Every part laid in it is a multiple of 2·kvn bytes: the real parts stay 4-byte aligned for every even kvn (hd is
// even), 16-byte aligned when kvn is a multiple of 8.
static void ensure_buffers(AttnRing *R, size_t bytes) {
    if (bytes <= R->buf_bytes) return;
    release_buffers(R);
    R->own = !(R->ws && bytes <= R->ws_bytes);
    R->buf = R->own ? R->be->alloc(bytes, "ring attention buffers") : R->ws;
    R->buf_bytes = bytes;
}

static void check_local_len(const AttnRing *R, int L) {
    if (R->size > 1 && (L < 2 || L % 2 != 0))
        fail("ring attention: %d local tokens cannot be cut into the two zigzag chunks; seq-len must be a multiple "
             "of 2·sp = %d",
             L, 2 * R->size);
}

// Document ids of the whole sequence in layout order, on the backend and on the host (ring.h's AttnLayout).
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

// This rank's tensors in one call (the ring's and the exchange's), and the backend that runs its ops.
typedef struct {
    const Backend *be;
    const real *q, *k, *v;   // this rank's q (L, H, hd), k, v (L, Hkv, hd) [act s->qkv]
    AttnState st;            // forward: the running state of all L rows
    real *dq, *dk, *dv;      // backward outputs: dq (L, H, hd), dk, dv (L, Hkv, hd)
    const real *out, *dout, *lse, *D;   // backward: the global out, dout (L, H, hd), lse, D (L, H)
} RunIO;

// One block call: this rank's rows [q0, q0 + nq) against nk keys k, v [act s->qkv] (their gradients dk, dv in the
// backward, accumulated).
typedef struct {
    int q0, nq, nk;
    const real *k, *v;
    real *dk, *dv;
    AttnMask mask;
    AttnDocs docs;   // .q NULL: no document mask
} Block;

static void run_block(AttnRing *R, const AttnShape *s, const RunIO *io, const Block *b, bool backward) {
    const Backend *be = io->be;
    size_t qo = (size_t)b->q0 * s->n_head * s->head_dim, so = (size_t)b->q0 * s->n_head;
    const AttnDocs *dp = b->docs.q ? &b->docs : NULL;
    double t0 = now_seconds();
    const real *q = act_at(io->q, s->qkv, qo);
    if (backward)
        be->attn_backward_block(s, io->dq + qo, b->dk, b->dv, q, b->k, b->v, io->out + qo, io->dout + qo, io->lse + so,
                                io->D + so, b->nq, b->nk, b->mask, dp);
    else
        be->attn_forward_block(s, (AttnState){io->st.acc + qo, io->st.m + so, io->st.l + so}, q, b->nq, b->k, b->v, b->nk,
                               b->mask, dp);
    R->stats.compute_s += now_seconds() - t0;
}

// One call of ring_attention_forward or _backward: the schedule's operations on the comm and the kernels.
typedef struct {
    RingSched x;             // first: the schedule calls back with &run->x
    AttnRing *R;
    const AttnShape *s;
    RingDocs docs;
    size_t kvn, hn;          // elements of one block's K and of one chunk's
    RunIO io;
    char *pkt[2];            // the two packets, in R->buf
    real *dkv_step;          // (2, L, Hkv, hd) this step's [dk c0 | dv c0 | dk c1 | dv c1], before it joins the accumulator
    CommRequest hop[2][2];   // [kind][piece]: the last hop started
} RingRun;

// Piece `piece` of `kind` in packet `packet`: kv pieces first, then the accumulators.
static char *piece_of(const RingRun *u, int packet, PieceKind kind, int piece) {
    ActStore st = u->s->qkv;
    size_t kv = piece_bytes(u->kvn, st, PIECE_KV), acc = piece_bytes(u->kvn, st, PIECE_ACC);
    return u->pkt[packet] + (kind == PIECE_KV ? piece * kv : 2 * kv + piece * acc);
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
    comm_sendrecv_start(R->comm, &q, piece_of(u, a, kind, piece), 1, (R->rank + 1) % W, piece_of(u, 1 - a, kind, piece), 1,
                        (R->rank - 1 + W) % W, "ring serial handshake");
    R->stats.lag_s += comm_wait(&q);
}

static void run_start(RingSched *x, PieceKind kind, int piece) {
    RingRun *u = (RingRun *)x;
    AttnRing *R = u->R;
    int W = R->size, a = x->step % 2;
    size_t bytes = piece_bytes(u->kvn, u->s->qkv, kind);
    comm_sendrecv_start(R->comm, &u->hop[kind][piece], piece_of(u, a, kind, piece), bytes, (R->rank + 1) % W,
                        piece_of(u, 1 - a, kind, piece), bytes, (R->rank - 1 + W) % W,
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
        *k = act_at(u->io.k, st, (size_t)t->k0 * kw), *v = act_at(u->io.v, st, (size_t)t->k0 * kw);
        return;
    }
    const real *p = (const real *)piece_of(u, u->x.step % 2, PIECE_KV, t->k0 / (u->x.L / 2));
    *k = p, *v = act_at(p, st, u->hn);
}

static void run_task(RingSched *x, const RingTask *t, bool backward) {
    RingRun *u = (RingRun *)x;
    size_t kw = (size_t)u->s->n_kv_head * u->s->head_dim;
    bool own = t->j == x->r;
    Block b = {.q0 = t->q0, .nq = t->nq, .nk = t->nk, .mask = t->mask};
    // backward: the own block's rows of the outputs, or this step's piece
    if (backward && own) b.dk = u->io.dk + t->k0 * kw, b.dv = u->io.dv + t->k0 * kw;
    if (backward && !own) {
        b.dk = u->dkv_step + (size_t)(t->k0 / (x->L / 2)) * u->kvn, b.dv = b.dk + u->hn;
        u->io.be->zero(b.dk, u->kvn * sizeof(real));
    }
    if (t->nk == 0) return;
    if (task_hidden(u->docs, x->L, x->r, t)) {
        u->R->stats.blocks_skipped++;
        return;
    }
    task_keys(u, t, &b.k, &b.v);
    if (u->docs.dev) b.docs = (AttnDocs){u->docs.dev + (size_t)x->r * x->L + t->q0, u->docs.dev + (size_t)t->j * x->L + t->k0};
    run_block(u->R, u->s, &u->io, &b, backward);
}

// This step's dK/dV piece joins the accumulator that arrived with the block (at step 1 it starts it).
static void run_join(RingSched *x, int piece) {
    RingRun *u = (RingRun *)x;
    real *acc = acc_of(u, x->step % 2, piece), *mine = u->dkv_step + (size_t)piece * u->kvn;
    if (x->step == 1) u->io.be->copy(acc, mine, u->kvn * sizeof(real));
    else u->io.be->add_inplace(acc, mine, u->kvn);
}

// The own block's accumulator piece, home after the full ring, joins this rank's own part in dk, dv.
static void run_home(RingSched *x, int piece) {
    RingRun *u = (RingRun *)x;
    const real *acc = acc_of(u, x->W % 2, piece);
    u->io.be->add_inplace(u->io.dk + (size_t)piece * u->hn, acc, u->hn);
    u->io.be->add_inplace(u->io.dv + (size_t)piece * u->hn, acc + u->hn, u->hn);
}

// Sets up one call: buffers, and this rank's K, V copied into packet 0 as its two kv pieces.
static void run_open(RingRun *u, AttnRing *R, const AttnShape *s, int L, RunIO io, RingDocs docs) {
    *u = (RingRun){.x = {.W = R->size, .r = R->rank, .L = L, .overlap = R->overlap, .meet = run_meet,
                         .start = run_start, .wait = run_wait, .task = run_task, .join = run_join, .home = run_home},
                   .R = R, .s = s, .docs = docs, .io = io};
    u->kvn = (size_t)L * s->n_kv_head * s->head_dim;
    u->hn = u->kvn / 2;
    check_local_len(R, L);
    ensure_buffers(R, ring_workspace_bytes(u->kvn, s->qkv, false));
    size_t pb = packet_bytes(u->kvn, s->qkv), eb = act_elem_bytes(s->qkv);
    u->pkt[0] = R->buf, u->pkt[1] = R->buf + pb, u->dkv_step = (real *)(R->buf + 2 * pb);
    for (int c = 0; c < 2 && R->size > 1; c++) {
        real *p = (real *)piece_of(u, 0, PIECE_KV, c);
        io.be->copy(p, act_at(io.k, s->qkv, c * u->hn), u->hn * eb);
        io.be->copy(act_at(p, s->qkv, u->hn), act_at(io.v, s->qkv, c * u->hn), u->hn * eb);
    }
}

// ---- the pairwise exchange of any other layout (attention/ring_exchange.h) ----

// One call's exchange on the comm and the kernels. Its six slots in R->buf, each up to L rows, K rows then V rows:
// dkv[0], dkv[1] the received rows' dK|dV by step parity and dkv[2] ours coming back [real]; kv[0], kv[1] the received
// rows' K|V by step parity and kv[2] ours on the way out [act store]. Live at once: a step's keys and its dK|dV, the
// next step's keys both ways, the previous step's dK|dV both ways.
typedef struct {
    ExSched x;   // first: the schedule calls back with &run->x
    AttnRing *R;
    const AttnShape *s;
    RingDocs docs;
    size_t kw;   // elements of one K row: Hkv·hd
    RunIO io;
    char *kv[3];
    real *dkv[3];
    bool backward;
    CommRequest ex[2];   // [kind]: the exchange in flight
} ExRun;

// Our rows of step st's runs between a slot (a K half, then a V half, of n_send rows of eb-byte elements) and t, t2:
// gathered from k, v into the slot (gather), or the slot's dK|dV added onto dk, dv.
static void ex_pack(ExRun *u, const ExStep *st, bool gather, char *slot, size_t eb, const real *t, const real *t2) {
    const Backend *be = u->io.be;
    int off = 0;
    for (const ExRows *g = u->x.plan->runs + st->run0; g < u->x.plan->runs + st->run0 + st->n_runs; off += g->n, g++) {
        size_t at = (size_t)off * u->kw * eb, from = (size_t)g->a * u->kw * eb, n = (size_t)g->n * u->kw;
        if (gather) {   // our rows of k, v into the slot
            be->copy(slot + at, (const char *)t + from, n * eb);
            be->copy(slot + at + (size_t)st->n_send * u->kw * eb, (const char *)t2 + from, n * eb);
        } else {   // the slot's dK|dV (real) onto our rows of dk, dv
            be->add_inplace((real *)((char *)t + from), (const real *)(slot + at), n);
            be->add_inplace((real *)((char *)t2 + from), (const real *)(slot + at + (size_t)st->n_send * u->kw * eb), n);
        }
    }
}

static void ex_start(ExSched *x, PieceKind kind, int s) {
    ExRun *u = (ExRun *)x;
    AttnRing *R = u->R;
    const ExStep *st = &x->plan->steps[s];
    size_t eb = act_elem_bytes(u->s->qkv), rb = 2 * u->kw * (kind == PIECE_KV ? eb : sizeof(real));
    size_t out = rb * (kind == PIECE_KV ? st->n_send : st->n_recv), in = rb * (kind == PIECE_KV ? st->n_recv : st->n_send);
    if (kind == PIECE_KV) {
        ex_pack(u, st, true, u->kv[2], eb, u->io.k, u->io.v);
        comm_sendrecv_start(R->comm, &u->ex[kind], u->kv[2], out, st->to, u->kv[s % 2], in, st->from, "ring KV exchange");
    } else {
        comm_sendrecv_start(R->comm, &u->ex[kind], u->dkv[s % 2], out, st->from, u->dkv[2], in, st->to, "ring dKV exchange");
    }
    R->stats.bytes += (double)out;
    R->stats.exchanges += out > 0;
}

// A step's keys in: in the backward their dK|dV starts at zero. Our rows' dK|dV back: they join dk, dv.
static void ex_wait(ExSched *x, PieceKind kind, int s) {
    ExRun *u = (ExRun *)x;
    const ExStep *st = &x->plan->steps[s];
    u->R->stats.wait_s += comm_wait(&u->ex[kind]);
    if (kind == PIECE_KV && u->backward) u->io.be->zero(u->dkv[s % 2], 2 * (size_t)st->n_recv * u->kw * sizeof(real));
    if (kind == PIECE_ACC) ex_pack(u, st, false, (char *)u->dkv[2], sizeof(real), u->io.dk, u->io.dv);
}

static void ex_task(ExSched *x, int s, const ExTask *t, bool backward) {
    ExRun *u = (ExRun *)x;
    const ExPlan *p = x->plan;
    ActStore store = u->s->qkv;
    int n = s ? p->steps[s].n_recv : p->L, j = s ? p->steps[s].from : p->r;   // the keys' rows and owner
    const real *k = s ? (const real *)u->kv[s % 2] : u->io.k, *v = s ? act_at(k, store, (size_t)n * u->kw) : u->io.v;
    real *dk = s ? u->dkv[s % 2] : u->io.dk, *dv = s ? dk + (size_t)n * u->kw : u->io.dv;
    Block b = {.q0 = t->q0, .nq = t->nq, .nk = t->nk, .k = act_at(k, store, (size_t)t->k0 * u->kw),
               .v = act_at(v, store, (size_t)t->k0 * u->kw), .mask = s ? ATTN_FULL : ATTN_CAUSAL};
    if (backward) b.dk = dk + (size_t)t->k0 * u->kw, b.dv = dv + (size_t)t->k0 * u->kw;
    if (u->docs.dev) b.docs = (AttnDocs){u->docs.dev + (size_t)p->r * p->L + t->q0, u->docs.dev + (size_t)j * p->L + t->ks};
    run_block(u->R, u->s, &u->io, &b, backward);
}

// Sets up one call: the plan of this layout and the slots.
static void ex_open(ExRun *u, AttnRing *R, const AttnShape *s, int L, RunIO io, const AttnLayout *lay, bool backward) {
    *u = (ExRun){.x = {.plan = &R->plan, .overlap = R->overlap, .start = ex_start, .wait = ex_wait, .task = ex_task},
                 .R = R, .s = s, .docs = {lay->docs, lay->docs ? lay->docs_host : NULL}, .io = io, .backward = backward};
    ex_plan(&R->plan, lay->pos, u->docs.host, R->size, R->rank, L);
    u->kw = (size_t)s->n_kv_head * s->head_dim;
    size_t kvn = (size_t)L * u->kw;
    ensure_buffers(R, ring_workspace_bytes(kvn, s->qkv, true));
    for (int i = 0; i < 3; i++) u->dkv[i] = (real *)(R->buf + i * 2 * kvn * sizeof(real));
    for (int i = 0; i < 3; i++) u->kv[i] = R->buf + 6 * kvn * sizeof(real) + i * 2 * kvn * act_elem_bytes(s->qkv);
    for (int st = 1; st < R->size; st++) R->stats.blocks_skipped += R->plan.steps[st].n_recv == 0;
}

// ---- the calls ----

// One call's schedule: the exchange under a layout other than the zigzag, else the ring.
static void run_call(AttnRing *R, const AttnShape *s, int L, RunIO io, const AttnLayout *lay, bool backward) {
    if (lay && !ex_is_zigzag(lay->pos, R->size, L)) {
        ExRun u;
        ex_open(&u, R, s, L, io, lay, backward);
        ex_schedule(&u.x, backward);
        return;
    }
    RingRun u;
    run_open(&u, R, s, L, io, lay && lay->docs ? (RingDocs){lay->docs, lay->docs_host} : (RingDocs){0});
    if (backward) ring_backward_schedule(&u.x);
    else ring_forward_schedule(&u.x);
}

void ring_attention_forward(AttnRing *R, const Backend *be, const AttnShape *s, const AttnRows *t, const AttnLayout *lay) {
    // fp32 state across all steps, normalised once at the end; out and lse double as acc and m.
    RunIO io = {.be = be, .q = t->q, .k = t->k, .v = t->v, .st = {.acc = t->out, .m = t->lse, .l = t->tmp}};
    be->attn_state_reset(s, io.st, t->L);
    run_call(R, s, t->L, io, lay, false);
    be->attn_finalize(s, io.st, t->out, t->lse, t->L);
}

void ring_attention_backward(AttnRing *R, const Backend *be, const AttnShape *s, const AttnRows *t, const AttnLayout *lay) {
    int L = t->L;
    RunIO io = {.be = be, .q = t->q, .k = t->k, .v = t->v, .dq = t->dq, .dk = t->dk, .dv = t->dv, .out = t->out,
                .dout = t->dout, .lse = t->lse, .D = t->tmp};
    be->attn_backward_prep(s, t->tmp, t->dout, t->out, L);   // D = rowsum(dO ∘ O), once, from the final O
    be->zero(t->dq, (size_t)L * s->n_head * s->head_dim * sizeof(real));
    be->zero(t->dk, (size_t)L * s->n_kv_head * s->head_dim * sizeof(real));
    be->zero(t->dv, (size_t)L * s->n_kv_head * s->head_dim * sizeof(real));
    run_call(R, s, L, io, lay, true);
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
