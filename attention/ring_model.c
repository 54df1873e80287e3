// attention/ring_model.c — the ring's predicted time: attention/ring.c's schedule replayed on every rank with modelled
// compute and link times (for `ringgpt plan` and the overlap benchmark's prediction).
#include <stdlib.h>

#include "attention/ring.h"
#include "attention/ring_schedule.h"
#include "core/common.h"

// One recorded operation of a rank's schedule.
typedef enum { OP_MEET, OP_START, OP_WAIT, OP_TASK } OpKind;
typedef struct {
    OpKind kind;
    PieceKind piece_kind;
    int piece;
    double seconds;   // OP_TASK: the block call's modelled time
} Op;

typedef struct {
    RingSched x;   // first: the schedule calls back with &rec->x
    const AttnShape *s;
    RingCosts costs;
    Op *ops;
    int n, cap;
} Recorder;

static void push(Recorder *rec, Op op) {
    if (rec->n == rec->cap) {
        rec->cap = rec->cap ? 2 * rec->cap : 64;
        rec->ops = realloc(rec->ops, (size_t)rec->cap * sizeof(Op));
        if (!rec->ops) fail("out of memory for the ring timing model");
    }
    rec->ops[rec->n++] = op;
}

static void rec_meet(RingSched *x, PieceKind kind, int piece) { push((Recorder *)x, (Op){OP_MEET, kind, piece, 0}); }
static void rec_start(RingSched *x, PieceKind kind, int piece) { push((Recorder *)x, (Op){OP_START, kind, piece, 0}); }
static void rec_wait(RingSched *x, PieceKind kind, int piece) { push((Recorder *)x, (Op){OP_WAIT, kind, piece, 0}); }

// Visible (query, key) pairs of a block call times the FLOPs per pair and head: 4·hd forward (QKᵀ, PV),
// 10·hd backward (S again, dV, dP, dQ, dK) — the convention of the FlashAttention papers.
static void rec_task(RingSched *x, const RingTask *t, bool backward) {
    Recorder *rec = (Recorder *)x;
    double pairs = t->mask == ATTN_CAUSAL ? (double)t->nq * (t->nq + 1) / 2 : (double)t->nq * t->nk;
    double flops = pairs * rec->s->n_head * rec->s->head_dim * (backward ? 10.0 : 4.0);
    push(rec, (Op){OP_TASK, PIECE_KV, 0, flops / rec->costs.attn_flops});
}

static void rec_noop(RingSched *x, int piece) {}

// Rank r's operations for one call (forward or backward), each task with its modelled time.
static Recorder record(int W, int r, int L, const AttnShape *s, const RingCosts *c, bool overlap, bool backward) {
    Recorder rec = {.x = {.W = W, .r = r, .L = L, .overlap = overlap, .meet = rec_meet, .start = rec_start, .wait = rec_wait,
                          .task = rec_task, .join = rec_noop, .home = rec_noop},
                    .s = s, .costs = *c};
    if (backward) ring_backward_schedule(&rec.x);
    else ring_forward_schedule(&rec.x);
    return rec;
}

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

// Every rank runs the same sequence of operations (only task times differ), so the ranks are replayed
// in lockstep, operation by operation. A meeting (the serial baseline's, before each hop) ends when rank
// r − 1 has reached it too (lag). A hop's message from r to r + 1 starts when both have posted
// it and the link's direction is free (one message at a time, in posting order: a full-duplex link),
// and takes latency + bytes at the link's rate (busy_share of it while r computes); a wait ends when
// the rank's outgoing and incoming messages of that hop have arrived, and with overlap then charges the rank its
// host's work on the piece (host_bytes_per_s). A message's end is resolved at
// its wait, when its sender's compute before it is known and the sender waits for it too.
static RingTiming replay(Recorder *recs, int W, const double piece_bytes[2], const RingCosts *c, bool overlap) {
    double *clock = xcalloc((size_t)W, sizeof(double), "ring model"), *wait = xcalloc((size_t)W, sizeof(double), "ring model");
    double *compute = xcalloc((size_t)W, sizeof(double), "ring model"), *lag = xcalloc((size_t)W, sizeof(double), "ring model");
    double *met = xcalloc((size_t)W, sizeof(double), "ring model");
    Dir *dir = xcalloc((size_t)W, sizeof(Dir), "ring model");
    for (int r = 0; r < W; r++) {
        dir[r].msg = xcalloc((size_t)recs[0].n + 1, sizeof(Msg), "ring model");
        dir[r].busy = xcalloc((size_t)recs[0].n + 1, sizeof *dir[r].busy, "ring model");
    }
    int (*sent)[2][2] = xcalloc((size_t)W, sizeof *sent, "ring model");   // [rank][kind][piece]: message index r -> r+1
    bool (*pending)[2][2] = xcalloc((size_t)W, sizeof *pending, "ring model");
    RingTiming t = {0};
    for (int i = 0; i < recs[0].n; i++) {
        const Op *op0 = &recs[0].ops[i];
        for (int r = 0; r < W; r++)
            if (recs[r].n != recs[0].n || recs[r].ops[i].kind != op0->kind)
                fail("ring timing model: rank %d's schedule differs from rank 0's at operation %d", r, i);
        if (op0->kind == OP_MEET) {   // the serial baseline: each rank waits for r − 1 to reach the hop
            for (int r = 0; r < W; r++) met[r] = clock[r] > clock[(r - 1 + W) % W] ? clock[r] : clock[(r - 1 + W) % W];
            for (int r = 0; r < W; r++) lag[r] += met[r] - clock[r], clock[r] = met[r];
        }
        if (op0->kind == OP_START) {
            for (int r = 0; r < W; r++) {
                double begin = clock[r] > clock[(r + 1) % W] ? clock[r] : clock[(r + 1) % W];
                sent[r][op0->piece_kind][op0->piece] = dir[r].n;
                dir[r].msg[dir[r].n++] = (Msg){.begin = begin, .bytes = piece_bytes[op0->piece_kind]};
                pending[r][op0->piece_kind][op0->piece] = true;
            }
            t.bytes += piece_bytes[op0->piece_kind];
        }
        for (int r = 0; r < W && op0->kind == OP_WAIT; r++) {
            bool *p = &pending[r][op0->piece_kind][op0->piece];
            if (!*p) continue;   // already finished (the serial baseline waits right after starting)
            *p = false;
            int from = (r - 1 + W) % W;
            double done = resolve(&dir[r], sent[r][op0->piece_kind][op0->piece], c);
            double in = resolve(&dir[from], sent[from][op0->piece_kind][op0->piece], c);
            if (in > done) done = in;
            if (done > clock[r]) wait[r] += done - clock[r], clock[r] = done;
            if (overlap && c->host_bytes_per_s > 0) {   // the stack's work on the piece, between the blocks' tiles
                double stack = piece_bytes[op0->piece_kind] / c->host_bytes_per_s;
                clock[r] += stack, compute[r] += stack;
            }
        }
        for (int r = 0; r < W && op0->kind == OP_TASK; r++) {
            double d = recs[r].ops[i].seconds;
            if (d > 0) dir[r].busy[dir[r].nbusy][0] = clock[r], dir[r].busy[dir[r].nbusy++][1] = clock[r] + d;
            clock[r] += d;
            compute[r] += d;
        }
    }
    for (int r = 0; r < W; r++) {
        if (clock[r] > t.seconds) t.seconds = clock[r];
        if (compute[r] > t.compute_s) t.compute_s = compute[r];
        if (wait[r] > t.wait_s) t.wait_s = wait[r];
        if (lag[r] > t.lag_s) t.lag_s = lag[r];
        free(dir[r].msg), free(dir[r].busy);
    }
    free(clock), free(wait), free(compute), free(lag), free(met), free(dir), free(sent), free(pending);
    return t;
}

RingTiming ring_model(int W, int L, const AttnShape *s, const RingCosts *c, bool overlap, bool backward) {
    if (W < 1 || L < 1 || (W > 1 && L % 2 != 0) || !(c->attn_flops > 0) || (W > 1 && !(c->link_bytes_per_s > 0)))
        fail("ring timing model: W=%d, L=%d, %g FLOP/s, %g B/s cannot be modelled", W, L, c->attn_flops, c->link_bytes_per_s);
    Recorder *recs = xcalloc((size_t)W, sizeof(Recorder), "ring model");
    for (int r = 0; r < W; r++) recs[r] = record(W, r, L, s, c, overlap, backward);
    double kvn = (double)L * s->n_kv_head * s->head_dim;   // one piece: kvn elements
    const double piece_bytes[2] = {[PIECE_KV] = kvn * act_elem_bytes(s->qkv), [PIECE_ACC] = kvn * sizeof(real)};
    RingTiming t = replay(recs, W, piece_bytes, c, overlap);
    for (int r = 0; r < W; r++) free(recs[r].ops);
    free(recs);
    return t;
}
