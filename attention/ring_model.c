// attention/ring_model.c — the predicted time of attention across the ranks: attention/ring.c's schedules (the zigzag's
// ring, any other layout's exchange) replayed on every rank with modelled compute and link times (for `ringgpt plan` and
// the overlap benchmark's prediction).
#include <stdlib.h>

#include "attention/ring.h"
#include "attention/ring_exchange.h"
#include "attention/ring_schedule.h"
#include "core/common.h"

// One recorded operation of a rank's schedule.
typedef enum { OP_MEET, OP_START, OP_WAIT, OP_TASK } OpKind;
typedef struct {
    OpKind kind;
    PieceKind piece_kind;
    int piece;
    double seconds;   // OP_TASK: the block call's modelled time
    int to, from;     // OP_START: the peers it sends to and receives from
    double bytes;     // OP_START: the bytes it sends
} Op;

// A rank's operations for one call (forward or backward).
typedef struct {
    Op *ops;
    int n, cap;
} Ops;

static void push(Ops *o, Op op) {
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 64;
        o->ops = realloc(o->ops, (size_t)o->cap * sizeof(Op));
        if (!o->ops) fail("out of memory for the ring timing model");
    }
    o->ops[o->n++] = op;
}

// Visible (query, key) pairs of a block call: with document ids qd (nq), kd (nk) (each non-decreasing) keys in the
// query's document only, under ATTN_CAUSAL (the same rows) also at or before it; NULL ids: the whole block or triangle.
static double block_pairs(const int32_t *qd, int nq, const int32_t *kd, int nk, AttnMask mask) {
    if (!qd) return mask == ATTN_CAUSAL ? (double)nq * (nq + 1) / 2 : (double)nq * nk;
    double n = 0;
    for (int i = 0, j = 0; i < nq;) {   // runs of one document among the queries, matched with the keys' run of it
        int a = i;
        while (i < nq && qd[i] == qd[a]) i++;
        if (mask == ATTN_CAUSAL) {
            n += (double)(i - a) * (i - a + 1) / 2;
            continue;
        }
        while (j < nk && kd[j] < qd[a]) j++;
        int b = j;
        while (j < nk && kd[j] == qd[a]) j++;
        n += (double)(i - a) * (j - b);
    }
    return n;
}

// A block call's modelled seconds: its pairs times the FLOPs per pair and head: 4·hd forward (QKᵀ, PV), 10·hd backward
// (S again, dV, dP, dQ, dK) — the convention of the FlashAttention papers.
static double block_seconds(const AttnShape *s, const RingCosts *c, double pairs, bool backward) {
    return pairs * s->n_head * s->head_dim * (backward ? 10.0 : 4.0) / c->attn_flops;
}

// ---- the zigzag's ring ----

typedef struct {
    RingSched x;   // first: the schedule calls back with &rec->x
    const AttnShape *s;
    RingCosts costs;
    const int32_t *docs;   // (W, L) host document ids in layout order, or NULL
    double piece_bytes[2];
    Ops o;
} Recorder;

static void rec_meet(RingSched *x, PieceKind kind, int piece) { push(&((Recorder *)x)->o, (Op){OP_MEET, kind, piece}); }
static void rec_start(RingSched *x, PieceKind kind, int piece) {
    Recorder *rec = (Recorder *)x;
    push(&rec->o, (Op){OP_START, kind, piece, .to = (x->r + 1) % x->W, .from = (x->r - 1 + x->W) % x->W,
                       .bytes = rec->piece_bytes[kind]});
}
static void rec_wait(RingSched *x, PieceKind kind, int piece) { push(&((Recorder *)x)->o, (Op){OP_WAIT, kind, piece}); }

static void rec_task(RingSched *x, const RingTask *t, bool backward) {
    Recorder *rec = (Recorder *)x;
    const int32_t *qd = rec->docs ? rec->docs + (size_t)x->r * x->L + t->q0 : NULL;
    const int32_t *kd = rec->docs ? rec->docs + (size_t)t->j * x->L + t->k0 : NULL;
    double pairs = block_pairs(qd, t->nq, kd, t->nk, t->mask);
    push(&rec->o, (Op){OP_TASK, PIECE_KV, 0, block_seconds(rec->s, &rec->costs, pairs, backward)});
}

static void rec_noop(RingSched *x, int piece) {}

// Rank r's operations for one call (forward or backward), each task with its modelled time. A piece is L/2 rows of K
// and V stored as s->qkv says, or of dK and dV as real.
static Ops record(int W, int r, int L, const AttnShape *s, const RingCosts *c, bool overlap, bool backward,
                  const int32_t *docs) {
    double kvn = (double)L * s->n_kv_head * s->head_dim;
    Recorder rec = {.x = {.W = W, .r = r, .L = L, .overlap = overlap, .meet = rec_meet, .start = rec_start, .wait = rec_wait,
                          .task = rec_task, .join = rec_noop, .home = rec_noop},
                    .s = s, .costs = *c, .docs = docs,
                    .piece_bytes = {[PIECE_KV] = kvn * act_elem_bytes(s->qkv), [PIECE_ACC] = kvn * sizeof(real)}};
    if (backward) ring_backward_schedule(&rec.x);
    else ring_forward_schedule(&rec.x);
    return rec.o;
}

// ---- any other layout's exchange ----

// The exchange's tasks differ in number between ranks: each rank's run of tasks between two transfers is one operation
// (0 s where it has none), so every rank records the same sequence.
typedef struct {
    ExSched x;   // first
    const AttnShape *s;
    RingCosts costs;
    const int32_t *docs;
    double busy;   // the seconds of the tasks since the last transfer operation
    Ops o;
} ExRecorder;

static void ex_flush(ExRecorder *rec) {
    push(&rec->o, (Op){OP_TASK, PIECE_KV, 0, rec->busy});
    rec->busy = 0;
}

static void exrec_start(ExSched *x, PieceKind kind, int s) {
    ExRecorder *rec = (ExRecorder *)x;
    const ExStep *st = &x->plan->steps[s];
    double row = 2.0 * rec->s->n_kv_head * rec->s->head_dim * (kind == PIECE_KV ? act_elem_bytes(rec->s->qkv) : sizeof(real));
    ex_flush(rec);   // the KV rows go to `to`; the dK/dV go back to `from`
    push(&rec->o, (Op){OP_START, kind, 0, .to = kind == PIECE_KV ? st->to : st->from, .from = kind == PIECE_KV ? st->from : st->to,
                       .bytes = row * (kind == PIECE_KV ? st->n_send : st->n_recv)});
}

static void exrec_wait(ExSched *x, PieceKind kind, int s) {
    ExRecorder *rec = (ExRecorder *)x;
    ex_flush(rec);
    push(&rec->o, (Op){OP_WAIT, kind, 0});
}

static void exrec_task(ExSched *x, int s, const ExTask *t, bool backward) {
    ExRecorder *rec = (ExRecorder *)x;
    const ExPlan *p = x->plan;
    int j = s ? p->steps[s].from : p->r;
    const int32_t *qd = rec->docs ? rec->docs + (size_t)p->r * p->L + t->q0 : NULL;
    const int32_t *kd = rec->docs ? rec->docs + (size_t)j * p->L + t->ks : NULL;
    rec->busy += block_seconds(rec->s, &rec->costs, block_pairs(qd, t->nq, kd, t->nk, s ? ATTN_FULL : ATTN_CAUSAL), backward);
}

static Ops record_exchange(const ExPlan *p, const AttnShape *s, const RingCosts *c, bool overlap, bool backward,
                           const int32_t *docs) {
    ExRecorder rec = {.x = {.plan = p, .overlap = overlap, .start = exrec_start, .wait = exrec_wait, .task = exrec_task},
                      .s = s, .costs = *c, .docs = docs};
    ex_schedule(&rec.x, backward);
    ex_flush(&rec);
    return rec.o;
}

// ---- the replay ----

// A message on one direction of a link: posted at `begin` (both ends), `bytes` long; `end` once resolved.
typedef struct {
    double begin, bytes, end;
} Msg;

// One direction r -> r + 1: its messages in posting order (the first `resolved` have their end) and its
// sender's compute intervals [busy[i][0], busy[i][1]) in time order.
typedef struct {
    Msg *msg;
    int n, resolved;
    double (*busy)[2];
    int nbusy;
} Dir;

// The rate a message moves at: the link's, or the host's where its core moves less.
static double msg_rate(const RingCosts *c) {
    double h = c->host_bytes_per_s;
    return h > 0 && h < c->link_bytes_per_s ? h : c->link_bytes_per_s;
}

// When `bytes` sent from `t` are through: at busy_share of the rate inside the sender's compute
// intervals, the whole rate outside them and after the last (the sender waits for this message then).
static double progress(const Dir *d, double t, double bytes, const RingCosts *c) {
    double rate = msg_rate(c), busy_rate = rate * (c->busy_share > 0 ? c->busy_share : 1);
    for (int i = 0; i < d->nbusy && bytes > 0; i++) {
        double a = d->busy[i][0], b = d->busy[i][1];
        if (b <= t) continue;
        if (t < a) {   // idle until the interval
            if (bytes <= rate * (a - t)) return t + bytes / rate;
            bytes -= rate * (a - t), t = a;
        }
        if (bytes <= busy_rate * (b - t)) return t + bytes / busy_rate;
        bytes -= busy_rate * (b - t), t = b;
    }
    return t + bytes / rate;
}

// Message m's end, resolving the ones before it first (one message at a time per direction).
static double resolve(Dir *d, int m, const RingCosts *c) {
    for (; d->resolved <= m; d->resolved++) {
        Msg *x = &d->msg[d->resolved];
        double start = x->begin;
        if (d->resolved > 0 && d->msg[d->resolved - 1].end > start) start = d->msg[d->resolved - 1].end;
        x->end = progress(d, start + c->latency_s, x->bytes, c);
    }
    return d->msg[m].end;
}

// One rank in the replay: its clock and times, its outgoing direction, and per hop (kind, piece) the message it sent
// (-1: nothing to send), the peer it receives from, whether it still has to wait for the hop.
typedef struct {
    double clock, wait, compute, lag, met, bytes;
    Dir out;
    int sent[2][2], from[2][2];
    bool pending[2][2];
} Rank;

// When rank r's hop is through: its own message and the one from its peer (a hop with nothing either way is through
// at once). Returns the larger of the two messages' bytes.
static double hop_done(Rank *k, int r, const Op *op, const RingCosts *c, double *done) {
    Rank *me = &k[r], *peer = &k[me->from[op->piece_kind][op->piece]];
    int mine = me->sent[op->piece_kind][op->piece], theirs = peer->sent[op->piece_kind][op->piece];
    double bytes = 0;
    *done = me->clock;
    if (mine >= 0) {
        double end = resolve(&me->out, mine, c);
        *done = end > *done ? end : *done, bytes = me->out.msg[mine].bytes;
    }
    if (theirs >= 0) {
        double end = resolve(&peer->out, theirs, c);
        *done = end > *done ? end : *done, bytes = peer->out.msg[theirs].bytes > bytes ? peer->out.msg[theirs].bytes : bytes;
    }
    return bytes;
}

// Every rank runs the same sequence of operations (only task times and bytes differ), so the ranks are replayed
// in lockstep, operation by operation. A meeting (the serial baseline's, before each hop) ends when rank
// r − 1 has reached it too (lag). A message from r to its peer starts when both have posted
// it and r's outgoing direction is free (one message at a time, in posting order: a full-duplex link),
// and takes latency + bytes at the link's rate (busy_share of it while r computes); a wait ends when
// the rank's outgoing and incoming messages of that hop have arrived, and with overlap then charges the rank its
// host's work on the piece (host_bytes_per_s). A message's end is resolved at
// its wait, when its sender's compute before it is known and the sender waits for it too.
static RingTiming replay(Ops *ops, int W, const RingCosts *c, bool overlap) {
    Rank *k = xcalloc((size_t)W, sizeof(Rank), "ring model");
    for (int r = 0; r < W; r++) {
        k[r].out.msg = xcalloc((size_t)ops[0].n + 1, sizeof(Msg), "ring model");
        k[r].out.busy = xcalloc((size_t)ops[0].n + 1, sizeof *k[r].out.busy, "ring model");
    }
    RingTiming t = {0};
    for (int i = 0; i < ops[0].n; i++) {
        const Op *op0 = &ops[0].ops[i];
        for (int r = 0; r < W; r++)
            if (ops[r].n != ops[0].n || ops[r].ops[i].kind != op0->kind)
                fail("ring timing model: rank %d's schedule differs from rank 0's at operation %d", r, i);
        if (op0->kind == OP_MEET) {   // the serial baseline: each rank waits for r − 1 to reach the hop
            for (int r = 0; r < W; r++) k[r].met = k[r].clock > k[(r - 1 + W) % W].clock ? k[r].clock : k[(r - 1 + W) % W].clock;
            for (int r = 0; r < W; r++) k[r].lag += k[r].met - k[r].clock, k[r].clock = k[r].met;
        }
        for (int r = 0; r < W && op0->kind == OP_START; r++) {
            const Op *op = &ops[r].ops[i];
            Rank *me = &k[r];
            double begin = me->clock > k[op->to].clock ? me->clock : k[op->to].clock;
            me->sent[op->piece_kind][op->piece] = op->bytes > 0 ? me->out.n : -1;
            if (op->bytes > 0) me->out.msg[me->out.n++] = (Msg){.begin = begin, .bytes = op->bytes};
            me->from[op->piece_kind][op->piece] = op->from;
            me->pending[op->piece_kind][op->piece] = true;
            me->bytes += op->bytes;
        }
        for (int r = 0; r < W && op0->kind == OP_WAIT; r++) {
            bool *p = &k[r].pending[op0->piece_kind][op0->piece];
            if (!*p) continue;   // already finished (the serial baseline waits right after starting)
            *p = false;
            double done, bytes = hop_done(k, r, op0, c, &done);
            if (done > k[r].clock) k[r].wait += done - k[r].clock, k[r].clock = done;
            if (overlap && c->host_bytes_per_s > 0) {   // the stack's work on the piece, between the blocks' tiles
                double stack = bytes / c->host_bytes_per_s;
                k[r].clock += stack, k[r].compute += stack;
            }
        }
        for (int r = 0; r < W && op0->kind == OP_TASK; r++) {
            double d = ops[r].ops[i].seconds;
            Dir *o = &k[r].out;
            if (d > 0) o->busy[o->nbusy][0] = k[r].clock, o->busy[o->nbusy++][1] = k[r].clock + d;
            k[r].clock += d;
            k[r].compute += d;
        }
    }
    for (int r = 0; r < W; r++) {
        if (k[r].clock > t.seconds) t.seconds = k[r].clock;
        if (k[r].compute > t.compute_s) t.compute_s = k[r].compute;
        if (k[r].wait > t.wait_s) t.wait_s = k[r].wait;
        if (k[r].lag > t.lag_s) t.lag_s = k[r].lag;
        if (k[r].bytes > t.bytes) t.bytes = k[r].bytes;
        free(k[r].out.msg), free(k[r].out.busy);
    }
    free(k);
    return t;
}

RingTiming ring_layout_model(int W, int L, const AttnShape *s, const RingCosts *c, bool overlap, bool backward,
                             const AttnLayout *layout) {
    const int32_t *pos = layout ? layout->pos : NULL, *docs = layout ? layout->docs_host : NULL;
    bool ring = ex_is_zigzag(pos, W, L);
    if (W < 1 || L < 1 || (ring && W > 1 && L % 2 != 0) || !(c->attn_flops > 0) || (W > 1 && !(c->link_bytes_per_s > 0)))
        fail("ring timing model: W=%d, L=%d, %g FLOP/s, %g B/s cannot be modelled", W, L, c->attn_flops, c->link_bytes_per_s);
    Ops *ops = xcalloc((size_t)W, sizeof(Ops), "ring model");
    ExPlan plan = {0};
    for (int r = 0; r < W && ring; r++) ops[r] = record(W, r, L, s, c, overlap, backward, docs);
    for (int r = 0; r < W && !ring; r++) {
        ex_plan(&plan, pos, docs, W, r, L);
        ops[r] = record_exchange(&plan, s, c, overlap, backward, docs);
    }
    RingTiming t = replay(ops, W, c, overlap);
    for (int r = 0; r < W; r++) free(ops[r].ops);
    free(ops);
    ex_plan_free(&plan);
    return t;
}

RingTiming ring_model(int W, int L, const AttnShape *s, const RingCosts *c, bool overlap, bool backward) {
    return ring_layout_model(W, L, s, c, overlap, backward, NULL);
}
