// attention/ring.h — attention across the sp ranks of a sequence: the zigzag's KV passed around the ring, any other layout's
// read rows exchanged pairwise; their timing model.
#pragma once
#include <stddef.h>

#include "attention/attention.h"

typedef struct AttnRing AttnRing;   // defined in attention/ring.c

// Causal attention of this rank's rows (t->L tokens at the positions the layout gives it) against the whole sequence,
// same contract as attention_causal_forward: t->out, t->lse; t->tmp (L, H) scratch. lay NULL or lay->pos NULL: the
// zigzag. The zigzag runs the ring: every rank's K/V block passes every rank. Any other layout runs the pairwise
// exchange: at step s = 1..sp−1 rank r sends r + s the K/V rows of its own that r + s reads (a key of document d at
// position p is read by a rank holding a row of d after p) and receives those of r − s it reads; nothing unread moves,
// and a step with nothing either way posts nothing.
void ring_attention_forward(AttnRing *ring, const Backend *be, const AttnShape *s, const AttnRows *t, const AttnLayout *lay);
// Same contract as attention_causal_backward: t->dq, dk, dv overwritten with this rank's gradients. Under the exchange
// the received rows' dK/dV go back to their owner, which adds them in step order.
void ring_attention_backward(AttnRing *ring, const Backend *be, const AttnShape *s, const AttnRows *t, const AttnLayout *lay);

// ---- the ring object (attention/ring.c) ----
struct Comm;
// Time spent by this rank's ring since the last reset: exposed waiting (blocked on a piece after the
// compute before it was done) and block compute. The serial baseline (overlap off) first meets its
// neighbours before every hop, so that its wait_s is the transfer alone and the time a neighbour arrives
// late (its own compute: the pieces' work differs between ranks) is lag_s; on the same work the hidden
// fraction of the transfer is (serial − lag − overlapped) / min(compute, transfer) (bench/ring_overlap.sh).
typedef struct {
    double wait_s;       // blocked waiting for K/V and dK/dV pieces
    double lag_s;        // serial baseline only: waiting for a neighbour to reach the hop (with 2 ranks exact)
    double compute_s;    // attention block kernels
    double bytes;        // bytes sent
    long exchanges;      // pieces sent (the ring: two per hop, each zigzag chunk's K and V, or its dK and dV; the
                         // exchange: one per step with rows to send, their K|V, or their dK|dV back)
    long blocks_skipped; // block calls (forward and backward) skipped because the document mask hides the whole block;
                         // the exchange: steps that receive nothing
} RingStats;

// The ring of `ring_comm` (its size is sp, its rank this rank's sp_index). Buffers (two packets
// of K, V and their dK, dV accumulators; the exchange's six K|V and dK|dV slots) are allocated on the
// backend at first use, O(T_local).
// overlap false waits for each exchange right after starting it (train --ring-overlap=false: the serial
// baseline of the overlap measurement).
AttnRing *ring_create(struct Comm *ring_comm, const Backend *be, bool overlap);
// Lends the ring `bytes` of backend memory for its packets instead of its own, memory the caller knows
// is dead while attention runs (model/gpt.c's recompute arena); NULL returns to its own buffers. Used
// when it holds ring_workspace_bytes(kvn, store, exchange) for blocks of kvn = T_local·Hkv·hd with k, v stored as
// `store` (AttnShape.qkv), exchange true where a layout other than the zigzag may come (its exchange needs
// 2·kvn·act_elem_bytes(store) bytes more: one more K|V slot); it uses its own buffers when the workspace is smaller.
void ring_set_workspace(AttnRing *ring, void *buf, size_t bytes);
size_t ring_workspace_bytes(size_t kvn, ActStore store, bool exchange);
void ring_free(AttnRing *ring);
RingStats ring_stats(const AttnRing *ring);
int ring_size(const AttnRing *ring);   // sp
int ring_rank(const AttnRing *ring);   // this rank's sp_index
void ring_stats_reset(AttnRing *ring);

// ---- the timing model (attention/ring_model.c) ----
// The ring's schedule (the one ring_attention_forward/_backward run) replayed on all W ranks with
// modelled times: a block call takes its FLOPs / attn_flops (4·hd per visible pair and head forward,
// 10·hd backward), a piece (L/2 rows of K and V stored as s->qkv says, or of dK and dV as real) takes
// latency + bytes / bandwidth on its link, one message at a time per direction, and starts once both ends have posted it. Transfers
// move while the ranks compute, at busy_share of the link's rate while the sending rank computes (a CPU rank's
// core also runs the network stack; 0 is taken as 1); overlap false: the serial baseline. Where the rank's own core
// moves the bytes (host_bytes_per_s > 0: TCP on a CPU host), no message is faster than that, and a piece that moves
// under the blocks costs them its bytes / host_bytes_per_s: the network stack's work, done between the tiles.
typedef struct {
    double attn_flops;         // attention FLOP/s of one rank's block calls
    double link_bytes_per_s;   // each direction of a ring link
    double latency_s;          // per message
    double busy_share;         // (0, 1]: the share of link_bytes_per_s a message gets while its sender computes
    double host_bytes_per_s;   // what one core sends and receives at once through the network stack; 0: free (a GPU)
} RingCosts;
typedef struct {
    double seconds;     // the slowest rank's time for the call
    double compute_s;   // the most block compute of a rank
    double wait_s;      // the most exposed waiting of a rank (the serial baseline: the transfers alone)
    double lag_s;       // the serial baseline: the most waiting of a rank for its neighbours before the hops
    double bytes;       // bytes each rank sends (under a layout: the most a rank sends)
} RingTiming;
// One ring forward (backward = false) or backward of one sequence and one layer: W ranks of L tokens.
RingTiming ring_model(int W, int L, const AttnShape *s, const RingCosts *c, bool overlap, bool backward);
// The same under a layout (ring_attention_forward's choice: the zigzag's ring, or any other layout's pairwise exchange,
// whose messages are the rows each step reads: their bytes differ per rank and step, and an empty one costs nothing).
// With document ids (layout->docs_host) a block call costs its visible pairs, counted exactly (keys of the query's
// document, at or before it; the kernels skip the rest by tiles). The figures are the most of any rank; bytes the most
// a rank sends. layout NULL: ring_model.
RingTiming ring_layout_model(int W, int L, const AttnShape *s, const RingCosts *c, bool overlap, bool backward,
                             const AttnLayout *layout);
