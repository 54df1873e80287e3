// tests/attention/test_ring_model.c — the ring's timing model (attention/ring_model.c) replays the schedule faithfully: the
// bytes and block work of ring.c's schedule, compute independent of the overlap, the serial baseline = compute + transfer
// + lag (two ranks: the transfer alone, and lag in the backward),
// no waiting on an infinitely fast link, a link-bound ring no faster than its bytes, hiding once compute dominates, a
// slower share of the link while computing, and the host's network stack; under a layout (ring_layout_model), each rank's
// visible pairs and the rows it must send.
#include <math.h>
#include <stdio.h>

#include "attention/ring.h"
#include "core/common.h"
#include "tests/check.h"

static const AttnShape SHAPE = {.n_head = 4, .n_kv_head = 2, .head_dim = 64};

static RingCosts costs(double gbps, double latency_s) {
    return (RingCosts){.attn_flops = 10e9, .link_bytes_per_s = gbps * 1e9 / 8, .latency_s = latency_s};
}

// One forward + backward: a rank's visible pairs are L(L+1)/2 on its own block and L²/2 per other block, each pass.
static double expected_compute(int W, int L, const RingCosts *c) {
    double pairs = (double)L * (L + 1) / 2 + (W - 1) * (double)L * L / 2;
    return pairs * SHAPE.n_head * SHAPE.head_dim * 14.0 / c->attn_flops;
}

static void check_shape(int W, int L) {
    RingCosts slow = costs(0.1, 50e-6), fast = costs(1e9, 0);
    RingTiming on_f = ring_model(W, L, &SHAPE, &slow, true, false), on_b = ring_model(W, L, &SHAPE, &slow, true, true);
    RingTiming off_f = ring_model(W, L, &SHAPE, &slow, false, false), off_b = ring_model(W, L, &SHAPE, &slow, false, true);
    double piece = (double)L * SHAPE.n_kv_head * SHAPE.head_dim * sizeof(real);   // L/2 rows of K and of V (or dK, dV)
    double compute = on_f.compute_s + on_b.compute_s, serial = off_f.seconds + off_b.seconds;
    CHECK(on_f.bytes + on_b.bytes == 6.0 * (W - 1) * piece, "W=%d L=%d: %.0f bytes per rank, the schedule sends %.0f", W, L,
          on_f.bytes + on_b.bytes, 6.0 * (W - 1) * piece);
    CHECK(fabs(compute - expected_compute(W, L, &slow)) <= 1e-9 * compute, "W=%d L=%d: compute %.6g s, the blocks need %.6g s",
          W, L, compute, expected_compute(W, L, &slow));
    CHECK(fabs(off_f.compute_s + off_b.compute_s - compute) <= 1e-12 * compute, "W=%d L=%d: the overlap changed the compute", W, L);
    // Each rank's serial time is its compute + transfer + lag; the figures are each the most of any rank, so with
    // more than two ranks (lag and waits fall on different ranks) their sum bounds the slowest rank's time.
    double parts = off_f.compute_s + off_b.compute_s + off_f.wait_s + off_b.wait_s + off_f.lag_s + off_b.lag_s;
    CHECK(W <= 2 ? fabs(serial - parts) <= 1e-9 * serial : serial <= parts * (1 + 1e-12),
          "W=%d L=%d: the serial baseline %.6g s against compute + transfer + lag %.6g s", W, L, serial, parts);
    CHECK(on_f.lag_s == 0 && on_b.lag_s == 0, "W=%d L=%d: the overlapped ring has no lag of its own", W, L);
    // Two ranks: after the meeting each hop is alone on the link, so the serial wait is the transfer alone, 6 pieces of
    // latency + bytes / rate; the backward's pieces hold different work on the two ranks (lag).
    if (W == 2) {
        double alone = 6 * (slow.latency_s + piece / slow.link_bytes_per_s);
        CHECK(fabs(off_f.wait_s + off_b.wait_s - alone) <= 1e-9 * alone, "W=2 L=%d: serial wait %.6g s, the transfer alone %.6g s",
              L, off_f.wait_s + off_b.wait_s, alone);
        CHECK(off_b.lag_s > 0, "W=2 L=%d: the serial backward has no lag", L);
    }
    CHECK(on_f.seconds + on_b.seconds <= serial * (1 + 1e-12), "W=%d L=%d: overlap %.6g s slower than serial %.6g s", W, L,
          on_f.seconds + on_b.seconds, serial);
    // A link-bound ring is no faster than its bytes on one direction of a link.
    CHECK(on_f.seconds + on_b.seconds >= (on_f.bytes + on_b.bytes) / slow.link_bytes_per_s * (1 - 1e-12),
          "W=%d L=%d: faster than the link allows", W, L);
    // bf16 K/V pieces (--activations bf16) travel in half the bytes; the dK/dV accumulators stay real: of the
    // 6(W−1) pieces, 4(W−1) are K/V.
    AttnShape bf = SHAPE;
    bf.qkv = ACT_BF16;
    double bf_bytes = ring_model(W, L, &bf, &slow, true, false).bytes + ring_model(W, L, &bf, &slow, true, true).bytes;
    double bf_want = (W - 1) * (4.0 * piece * 2 / sizeof(real) + 2.0 * piece);
    CHECK(bf_bytes == bf_want, "W=%d L=%d: bf16 packets send %.0f bytes per rank, the schedule sends %.0f", W, L, bf_bytes,
          bf_want);
    RingTiming free_f = ring_model(W, L, &SHAPE, &fast, true, false), free_b = ring_model(W, L, &SHAPE, &fast, true, true);
    CHECK(free_f.wait_s + free_b.wait_s < 1e-9 * compute, "W=%d L=%d: %.3g s waiting on an infinitely fast link", W, L,
          free_f.wait_s + free_b.wait_s);
    printf("  W=%d L=%5d: compute %.4f s, transfer %.4f s, overlapped %.4f s, serial %.4f s\n", W, L, compute,
           off_f.wait_s + off_b.wait_s, on_f.seconds + on_b.seconds, serial);
}

// With compute twice the transfer, the pieces hide at least 90 % of it (two ranks, the hardest ring: every hop has
// only its own step's compute to hide behind).
static void check_hiding(void) {
    for (int W = 2; W <= 4; W++) {
        int L = 2048;
        RingCosts c = costs(1, 0);
        RingTiming f0 = ring_model(W, L, &SHAPE, &c, false, false), b0 = ring_model(W, L, &SHAPE, &c, false, true);
        double ratio = (f0.compute_s + b0.compute_s) / (f0.wait_s + b0.wait_s);
        c.link_bytes_per_s *= 2 / ratio;   // now compute = 2 × transfer
        f0 = ring_model(W, L, &SHAPE, &c, false, false), b0 = ring_model(W, L, &SHAPE, &c, false, true);
        RingTiming f = ring_model(W, L, &SHAPE, &c, true, false), b = ring_model(W, L, &SHAPE, &c, true, true);
        double transfer = f0.wait_s + b0.wait_s, hidden = (f0.seconds + b0.seconds - f.seconds - b.seconds) / transfer;
        CHECK(hidden >= 0.9, "W=%d: compute = 2 x transfer but only %.2f of the transfer hidden", W, hidden);
        printf("  W=%d, compute = 2 x transfer: %.3f of the transfer hidden\n", W, hidden);
    }
}

// A transfer that moves at busy_share of the rate while its sender computes: 1 and 0 (taken as 1) are the full
// rate; below 1 the overlapped time grows, never past the serial baseline, and the serial baseline (nothing
// overlaps) does not change. Where transfer dominates (here 4 × compute) a share s adds (1 − s) of the compute
// that overlapped it: between half and 1.25 × (1 − s) × compute (the first hop and the pieces' order make it inexact).
static void check_busy_share(void) {
    int W = 2, L = 2048;
    RingCosts c = costs(1, 0);
    RingTiming f0 = ring_model(W, L, &SHAPE, &c, false, false), b0 = ring_model(W, L, &SHAPE, &c, false, true);
    c.link_bytes_per_s *= (f0.wait_s + b0.wait_s) / (f0.compute_s + b0.compute_s) / 4;   // transfer = 4 × compute
    f0 = ring_model(W, L, &SHAPE, &c, false, false), b0 = ring_model(W, L, &SHAPE, &c, false, true);
    RingTiming f1 = ring_model(W, L, &SHAPE, &c, true, false), b1 = ring_model(W, L, &SHAPE, &c, true, true);
    RingCosts zero = c;
    zero.busy_share = 0;
    RingTiming fz = ring_model(W, L, &SHAPE, &zero, true, false), bz = ring_model(W, L, &SHAPE, &zero, true, true);
    CHECK(fz.seconds == f1.seconds && bz.seconds == b1.seconds, "busy_share 0 is taken as 1");
    RingCosts half = c;
    half.busy_share = 0.5;
    RingTiming fh = ring_model(W, L, &SHAPE, &half, true, false), bh = ring_model(W, L, &SHAPE, &half, true, true);
    RingTiming fs = ring_model(W, L, &SHAPE, &half, false, false), bs = ring_model(W, L, &SHAPE, &half, false, true);
    double full = f1.seconds + b1.seconds, slowed = fh.seconds + bh.seconds, serial = f0.seconds + b0.seconds;
    CHECK(fs.seconds + bs.seconds == serial, "the serial baseline does not depend on busy_share");
    CHECK(slowed > full && slowed <= serial * (1 + 1e-12), "share 0.5: %.6g s, between full-rate overlap %.6g and serial %.6g",
          slowed, full, serial);
    double bound = 0.5 * (f0.compute_s + b0.compute_s);
    CHECK(slowed - full <= bound * 1.25 && slowed - full >= bound * 0.5,
          "share 0.5 adds %.6g s; half the compute is %.6g s", slowed - full, bound);
    printf("  transfer = 4 x compute: overlap %.4f s at the full rate, %.4f s at half the rate while computing (serial %.4f)\n",
           full, slowed, serial);
}

// The host's network stack (host_bytes_per_s): 0 is free; a host slower than the link caps every message at its rate
// (the serial transfer alone is then bytes / host); and where compute dominates (4 × transfer here) each piece moved
// under the blocks adds its bytes / host to the overlapped time, so the hidden fraction tops out at 1 − link / host.
static void check_host_cost(void) {
    int W = 2, L = 2048;
    RingCosts c = costs(1, 0);
    RingTiming f0 = ring_model(W, L, &SHAPE, &c, false, false), b0 = ring_model(W, L, &SHAPE, &c, false, true);
    c.link_bytes_per_s *= 4 * (f0.wait_s + b0.wait_s) / (f0.compute_s + b0.compute_s);   // compute = 4 × transfer
    f0 = ring_model(W, L, &SHAPE, &c, false, false), b0 = ring_model(W, L, &SHAPE, &c, false, true);
    RingTiming f = ring_model(W, L, &SHAPE, &c, true, false), b = ring_model(W, L, &SHAPE, &c, true, true);
    RingCosts host = c;
    host.host_bytes_per_s = 4 * c.link_bytes_per_s;
    RingTiming fh = ring_model(W, L, &SHAPE, &host, true, false), bh = ring_model(W, L, &SHAPE, &host, true, true);
    RingTiming fs = ring_model(W, L, &SHAPE, &host, false, false), bs = ring_model(W, L, &SHAPE, &host, false, true);
    double serial = f0.seconds + b0.seconds, transfer = f0.wait_s + b0.wait_s, stack = (f.bytes + b.bytes) / host.host_bytes_per_s;
    CHECK(fs.seconds + bs.seconds == serial, "a host faster than the link leaves the serial baseline alone");
    double added = fh.seconds + bh.seconds - f.seconds - b.seconds;
    CHECK(fabs(added - stack) <= 1e-9 * stack, "the stack's work adds %.6g s to the overlap; the pieces' bytes / host are %.6g s",
          added, stack);
    double hidden = (serial - f0.lag_s - b0.lag_s - fh.seconds - bh.seconds) / transfer;
    CHECK(fabs(hidden - 0.75) <= 0.02, "host = 4 x link: %.3f of the transfer hidden, 1 - link / host = 0.75", hidden);
    RingCosts slow_host = c;
    slow_host.host_bytes_per_s = c.link_bytes_per_s / 2;
    RingTiming fq = ring_model(W, L, &SHAPE, &slow_host, false, false), bq = ring_model(W, L, &SHAPE, &slow_host, false, true);
    CHECK(fabs(fq.wait_s + bq.wait_s - 2 * transfer) <= 1e-9 * transfer,
          "a host at half the link's rate: serial transfer %.6g s, twice the link's %.6g s", fq.wait_s + bq.wait_s, transfer);
    printf("  compute = 4 x transfer, host = 4 x link: %.3f of the transfer hidden (1 - link / host = 0.75)\n", hidden);
}

// ---- layouts (ring_layout_model) ----

enum { LW = 4, LL = 64, LT = LW * LL };   // 4 ranks of 64 rows

// Documents of the layout checks: one token, one across every rank's share in every layout below, then short ones of
// 1..24 tokens (a fixed pattern).
static void make_docs(int32_t *doc) {
    int d = 0, left = 1;
    for (int p = 0; p < LT; p++, left--) {
        if (left == 0) left = p == 1 ? LT / 2 + 40 : 1 + (p * 7) % 24, d++;
        doc[p] = d;
    }
}

// Positions of rank j (ascending): 0 the zigzag, 1 contiguous, 2 round-robin, 3 the short documents' tokens kept whole
// on a rank (the positions in order of document, short ones first, filled rank after rank).
static void make_layout(int kind, const int32_t *doc, int32_t *pos) {
    int at = 0, h = LL / 2;
    for (int pass = 0; pass < 2 && kind == 3; pass++)   // short documents (not 1), then the long one (1)
        for (int p = 0; p < LT; p++)
            if ((doc[p] == 1) == (pass == 1)) pos[at++] = p;
    for (int j = 0; j < LW; j++)
        for (int i = 0; i < LL; i++) {
            int32_t *x = &pos[j * LL + i];
            if (kind == 0) *x = i < h ? j * h + i : (2 * LW - 1 - j) * h + i - h;
            if (kind == 1) *x = j * LL + i;
            if (kind == 2) *x = i * LW + j;
        }
    for (int j = 0; j < LW; j++)   // ascending per rank (insertion sort: 64 rows)
        for (int i = 1; i < LL; i++)
            for (int t = j * LL + i; t > j * LL && pos[t - 1] > pos[t]; t--) {
                int32_t y = pos[t];
                pos[t] = pos[t - 1], pos[t - 1] = y;
            }
}

// Rank r's figures counted the slow way: its visible pairs (every key of a query's document at or before it), the
// rows of its own others read (sent) and the rows of others it reads (received).
static void slow_counts(const int32_t *pos, const int32_t *doc, int r, double *pairs, double *sent, double *recv) {
    *pairs = *sent = *recv = 0;
    for (int i = 0; i < LL; i++) {
        int p = pos[r * LL + i];
        for (int x = 0; x <= p; x++) *pairs += doc[x] == doc[p];
    }
    for (int q = 0; q < LW; q++)
        for (int i = 0; i < LL && q != r; i++)
            for (int dir = 0; dir < 2; dir++) {   // dir 0: our row i read by q; 1: q's row i read by us
                int owner = dir ? q : r, reader = dir ? r : q, p = pos[owner * LL + i];
                bool read = false;
                for (int t = 0; t < LL && !read; t++) read = pos[reader * LL + t] > p && doc[pos[reader * LL + t]] == doc[p];
                *(dir ? recv : sent) += read;
            }
}

// Under every layout: the zigzag without documents is ring_model bit for bit; a block call costs its visible pairs,
// so each rank's compute is its pairs (the calls cover every visible pair once) and the most of any rank is the figure;
// the exchange sends the rows read (K|V out in each pass, their dK|dV back in the backward), the zigzag's ring every
// block; no call is faster than its busiest rank's compute, and the overlap is never slower than the serial baseline.
static void check_layouts(void) {
    int32_t doc[LT], pos[LT], ids[LT];
    make_docs(doc);
    RingCosts slow = costs(0.1, 50e-6);
    for (int kind = 0; kind < 4; kind++) {
        make_layout(kind, doc, pos);
        for (int i = 0; i < LT; i++) ids[i] = doc[pos[i]];
        AttnLayout lay = {.pos = pos, .docs_host = ids};
        double pairs = 0, fwd = 0, bwd = 0, row = 2.0 * SHAPE.n_kv_head * SHAPE.head_dim * sizeof(real);
        for (int r = 0; r < LW; r++) {
            double p, sent, recv;
            slow_counts(pos, doc, r, &p, &sent, &recv);
            if (kind == 0) sent = recv = (LW - 1) * LL;   // the ring passes every block on
            pairs = fmax(pairs, p), fwd = fmax(fwd, sent * row), bwd = fmax(bwd, (sent + recv) * row);
        }
        RingTiming f = ring_layout_model(LW, LL, &SHAPE, &slow, true, false, &lay);
        RingTiming b = ring_layout_model(LW, LL, &SHAPE, &slow, true, true, &lay);
        RingTiming f0 = ring_layout_model(LW, LL, &SHAPE, &slow, false, false, &lay);
        RingTiming b0 = ring_layout_model(LW, LL, &SHAPE, &slow, false, true, &lay);
        double want = pairs * SHAPE.n_head * SHAPE.head_dim * 4.0 / slow.attn_flops;
        CHECK(fabs(f.compute_s - want) <= 1e-12 * want && fabs(b.compute_s - 2.5 * want) <= 1e-12 * want,
              "layout %d: compute %.6g + %.6g s, the most pairs of a rank need %.6g + %.6g s", kind, f.compute_s, b.compute_s,
              want, 2.5 * want);
        CHECK(f.bytes == fwd && b.bytes == bwd, "layout %d: %.0f + %.0f bytes sent, the rows read need %.0f + %.0f", kind,
              f.bytes, b.bytes, fwd, bwd);
        CHECK(f.seconds >= f.compute_s && b.seconds >= b.compute_s, "layout %d: faster than its busiest rank's compute", kind);
        CHECK(f.seconds + b.seconds <= (f0.seconds + b0.seconds) * (1 + 1e-12), "layout %d: overlap slower than serial", kind);
        printf("  layout %d: %.0f pairs on the busiest rank, %.0f bytes sent, overlapped %.5f s, serial %.5f s\n", kind, pairs,
               f.bytes + b.bytes, f.seconds + b.seconds, f0.seconds + b0.seconds);
    }
    make_layout(0, doc, pos);
    AttnLayout zigzag = {.pos = pos};
    RingTiming a = ring_layout_model(LW, LL, &SHAPE, &slow, true, true, &zigzag), z = ring_model(LW, LL, &SHAPE, &slow, true, true);
    CHECK(a.seconds == z.seconds && a.bytes == z.bytes && a.compute_s == z.compute_s, "the zigzag's layout is not ring_model");
}

int main(void) {
    const int Ws[] = {1, 2, 3, 4, 8}, Ls[] = {64, 1024};
    for (size_t w = 0; w < 5; w++)
        for (size_t l = 0; l < 2; l++) check_shape(Ws[w], Ls[l]);
    check_hiding();
    check_busy_share();
    check_host_cost();
    check_layouts();
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}
