// attention/ulysses.h — Ulysses attention (all-to-all from sequence-sharded to head-sharded q, k, v and back) and the hybrid with the ring across groups; its cost.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attention/ring.h"

// A sequence of T tokens is spread over the sp ranks of a ring, L = T/sp each, as a layout says (design D1). Ulysses
// over a group of N ranks: an all-to-all gives every member all the group's tokens for H/N query heads (and its KV
// heads), it attends over them, and an all-to-all brings the output rows home. Pure Ulysses (N = sp) attends over the
// whole sequence in position order, whatever the layout: every rank does the same work. The hybrid (USP, N < sp):
// groups of N consecutive ranks, the ring (attention/ring.h) across the R = sp/N groups over the group's N·L tokens.
// KV heads: Hkv/N per rank when N divides Hkv; when Hkv < N (N a multiple of Hkv) each rank gets the one KV head its
// query heads read — replicated on N/Hkv ranks — and the replicas' dK, dV are summed at the owner, replica by replica
// in group order (deterministic).

// One row's tensors and layout: attention/attention.h's AttnRows and AttnLayout (pure Ulysses needs only distinct ids
// per document; t->tmp is not read).

typedef struct AttnUlysses AttnUlysses;   // defined in attention/ulysses.c

// Ulysses over `group` (its N ranks, this rank's index in it); `across` (R ranks, this rank's group index) runs the
// ring between the groups: NULL or one rank for pure Ulysses (core/comm.h comm_groups splits a ring into both;
// attention/cp.h does it for the model). overlap as ring_create's. Buffers are allocated on the backend at first use
// (ulysses_workspace_bytes).
AttnUlysses *ulysses_create(struct Comm *group, struct Comm *across, const Backend *be, bool overlap);
void ulysses_free(AttnUlysses *u);
// A usage error (exit 2, a line naming what to set) unless N query heads and KV heads divide over `degree` ranks:
// N divides H, and N divides Hkv or Hkv divides N.
void ulysses_check_shape(const AttnShape *s, int degree);
// The heads each member attends over: H/degree query heads and the KV heads they read (Hkv/degree, or the one
// replicated head when Hkv < degree).
AttnShape ulysses_member_shape(const AttnShape *s, int degree);
// Causal attention of this rank's rows against the whole sequence (same results as attention_causal_forward over
// the sequence in position order, at this rank's positions): t->out, t->lse. lay NULL or lay->pos NULL: the zigzag
// (pure Ulysses: of the sp ranks; the hybrid: of its R groups, as the ring takes it), no documents. The hybrid hands
// the layout to the ring across its groups: group g's members hold consecutive slices of the group's N·L positions
// (ascending), so the (sp, L) array is the groups' (R, N·L) layout — the zigzag's ring, or any other's exchange.
void ulysses_attention_forward(AttnUlysses *u, const AttnShape *s, const AttnRows *t, const AttnLayout *lay);
// The backward from t->q, k, v, out, lse, dout: t->dq, dk, dv.
void ulysses_attention_backward(AttnUlysses *u, const AttnShape *s, const AttnRows *t, const AttnLayout *lay);
// Backend bytes a Ulysses object holds for `degree` ranks of L tokens each on a ring of sp ranks, kept between calls and
// shared by the layers (the memory plan counts them once): the head-sharded tensors over the group's N·L tokens,
// O(N·L·(H/N)·hd) — q, k, v in `store` (as large as the rank's own; k and v N/Hkv times theirs when Hkv < N), out,
// dout, dq and the all-to-all landing buffer in fp32 (4 × the rank's q), dk, dv in fp32 (2 × its k, as above), lse and
// the softmax sum or D (2 × (L, H)) — and the layout's index arrays (6·N·L int32); pure Ulysses (degree = sp) a (T)
// copy of the document ids in position order, the hybrid its ring's ring_workspace_bytes for blocks of N·L·(Hkv per
// rank)·hd elements (exchange: layouts other than the zigzag of the groups may come).
size_t ulysses_workspace_bytes(const AttnShape *s, int degree, int sp, int L, bool exchange);
// Time and bytes of this rank's calls since the last reset, in RingStats' fields: wait_s blocked on the all-to-alls,
// compute_s the attention step between them (the hybrid's ring included), bytes sent to other ranks, exchanges the
// all-to-alls started. The hybrid's ring keeps its own (ulysses_ring: NULL for pure Ulysses).
RingStats ulysses_stats(const AttnUlysses *u);
void ulysses_stats_reset(AttnUlysses *u);
AttnRing *ulysses_ring(const AttnUlysses *u);

// ---- the cost (for `ringgpt plan`) ----
// One layer's attention of one sequence on one rank of a Ulysses group of `degree` ranks, pure Ulysses (degree = sp,
// L = T/sp): the bytes it sends on each link to another member (every link carries as much each way; a rank sends
// degree − 1 times that per call) and the attention FLOPs it computes (4·hd per visible (query, key) pair and query
// head forward, 10·hd backward, as ring_model counts). The layout does not change either: every rank attends over the
// whole sequence for its heads. docs_host: the (T) document ids of the sequence in any order (AttnLayout's), NULL for
// one document. The hybrid's ring across the groups is ring_model's (W = sp/degree ranks of degree·L tokens, H/degree
// heads).
typedef struct {
    double link_bytes;   // bytes to each other member, the all-to-alls of the call together
    double flops;        // attention FLOPs of this rank
    int exchanges;       // all-to-alls of the call
} UlyssesCost;
UlyssesCost ulysses_cost(const AttnShape *s, int degree, int L, const int32_t *docs_host, bool backward);
// The call's time on the ring's cost model (attention/ring.h RingCosts): the all-to-alls in turn (a rank's degree − 1
// messages share its link and its host's network stack), then the compute, then the way back; nothing overlaps.
RingTiming ulysses_model(const AttnShape *s, int degree, int L, const int32_t *docs_host, const RingCosts *c, bool backward);
