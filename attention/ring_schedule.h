// attention/ring_schedule.h — the ring's schedule written once: which piece travels when and which block call runs
// between, for attention/ring.c (which runs it) and attention/ring_model.c (which times it); internal to attention/.
#pragma once
#include <stdbool.h>

#include "core/backend.h"

// A block's packet holds its K and V and, in the backward, its travelling dK/dV accumulator as four
// pieces of kvn = L·Hkv·hd elements each (hn = kvn/2 is one zigzag chunk's K):
//   [ kv 0: k c0 (L/2, Hkv, hd) | v c0 ] [ kv 1: k c1 | v c1 ] [ acc 0: dk c0 | dv c0 ] [ acc 1: dk c1 | dv c1 ]
// The kv pieces are stored as AttnShape.qkv says (bf16 under --activations bf16), the accumulators as real.
// Every piece travels as its own message, chunk 0 first, so a rank computes with the first chunk of a
// block while its second chunk is still on the wire.
typedef enum { PIECE_KV, PIECE_ACC } PieceKind;

// One block call: this rank's Q rows [q0, q0 + nq) against keys [k0, k0 + nk) of block j (rows of
// j's local order). Keys of this rank's own block (j == r) are its own k, v; those of another block
// lie in one packet piece (k0 = chunk · L/2, nk ≤ L/2). nk == 0: nothing to compute.
typedef struct {
    int j, q0, nq, k0, nk;
    AttnMask mask;
} RingTask;

// What a schedule does, in order. A hop of (kind, piece) at step s sends that piece of packet s % 2
// to rank r + 1 and receives the same piece of the next block into packet (s + 1) % 2 from rank r − 1;
// at most one hop per (kind, piece) is in flight, and `wait` finishes it. The serial baseline `meet`s r − 1
// before each hop, so that its wait is the transfer alone and a late neighbour's compute is lag.
typedef struct RingSched RingSched;
struct RingSched {
    int W, r, L;   // ring size, this rank, local tokens
    bool overlap;  // false: every hop is waited for right after it starts (the serial baseline)
    int step;      // the step whose block the next tasks read (its packet is step % 2)
    void (*meet)(RingSched *x, PieceKind kind, int piece);   // serial baseline: wait for r − 1 to reach this hop
    void (*start)(RingSched *x, PieceKind kind, int piece);
    void (*wait)(RingSched *x, PieceKind kind, int piece);
    void (*task)(RingSched *x, const RingTask *t, bool backward);
    void (*join)(RingSched *x, int piece);   // backward: this step's dK/dV piece joins the travelling accumulator
    void (*home)(RingSched *x, int piece);   // backward: the own block's accumulator piece, back home, joins dK/dV
};

void ring_forward_schedule(RingSched *x);
void ring_backward_schedule(RingSched *x);
