// attention/cp.h — context parallelism: one handle for the ways a sequence's attention spans the sp ranks of a ring (the ring, Ulysses, the hybrid), with its workspace and statistics.
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "attention/ring.h"
#include "attention/ulysses.h"

// How K/V move between the sp ranks that share a sequence: CP_RING the ring (attention/ring.h: the zigzag's ring, any
// other layout's pairwise exchange); CP_ULYSSES all-to-all over all sp ranks (attention/ulysses.h); CP_HYBRID Ulysses
// inside groups of `degree` consecutive ranks × the ring across the sp/degree groups.
typedef enum { CP_RING, CP_ULYSSES, CP_HYBRID } CpMode;

// A context-parallel setup, as the handle, the model's activation table and the memory plan read it.
typedef struct {
    CpMode mode;
    int sp;            // ranks of the ring (≤ 1: none; attn_cp_create takes its communicator's size)
    int degree;        // CP_HYBRID: the Ulysses group size N, a divisor of sp; CP_ULYSSES: sp (0 is taken as sp)
    bool any_layout;   // rows may come in layouts other than the zigzag (a placement by cost): the ring's exchange,
                       // one more K|V slot of workspace
    bool overlap;      // the ring's transfers run under its compute (false: the serial baseline, --ring-overlap=false)
} CpConfig;

// The data side's placement for a mode (data/source.h DataOptions.place_groups): the sp ranks (the ring, pure Ulysses),
// or the hybrid's sp/degree groups, each group's positions cut into `degree` consecutive slices, one a member.
int cp_place_groups(const CpConfig *c);

typedef struct AttnCP AttnCP;

// The handle over `ring` (the sp ranks that share one sequence, ordered: CommGrid.ring; every rank of it calls). On the
// CUDA backend its communicators are wrapped for device buffers (comm_cuda_wrap). NULL where the ring has one rank.
// A hybrid degree that does not divide sp is a usage error; heads that do not divide over the degree one at the first
// call (ulysses_check_shape).
AttnCP *attn_cp_create(struct Comm *ring, const Backend *be, const CpConfig *c);
void attn_cp_free(AttnCP *cp);
CpConfig attn_cp_config(const AttnCP *cp);   // sp and degree filled in; cp NULL: one rank (sp = 1)

// Causal attention of this rank's rows against the whole sequence (attention_causal_forward's contract: t->out, t->lse),
// by the handle's mode; cp NULL: the sequence is on this rank alone (attention_causal_forward). lay: the row's layout
// and documents (attention/attention.h), NULL: the zigzag without documents. be runs the ops (the ring's; Ulysses runs
// on the handle's backend).
void attn_cp_forward(AttnCP *cp, const Backend *be, const AttnShape *s, const AttnRows *t, const AttnLayout *lay);
// The backward (attention_causal_backward's contract): t->dq, dk, dv.
void attn_cp_backward(AttnCP *cp, const Backend *be, const AttnShape *s, const AttnRows *t, const AttnLayout *lay);

// This rank's figures since the last reset, whatever the mode: wait_s blocked on transfers (the ring's pieces, the
// all-to-alls, both for the hybrid), lag_s the serial baseline's meetings, compute_s the attention kernels, bytes sent
// to other ranks, exchanges started, blocks_skipped (the ring's). cp NULL: zeros.
RingStats attn_cp_stats(const AttnCP *cp);
void attn_cp_stats_reset(AttnCP *cp);

// One layer's attention of one sequence (forward, or backward) under c on the ring's cost model (attention/ring.h
// RingCosts): the slowest rank's time, the most compute and waiting of a rank, the most bytes a rank sends. lay: the
// row's layout with its host document ids (docs_host), NULL: the zigzag without documents. The ring: ring_layout_model;
// Ulysses: ulysses_model; the hybrid: Ulysses' all-to-alls over its groups, then the ring across the groups
// (sp/degree ranks of degree·L rows, ulysses_member_shape's heads) over the same layout.
RingTiming attn_cp_model(const CpConfig *c, const AttnShape *s, int L, const AttnLayout *lay, const RingCosts *k,
                         bool backward);

// Backend bytes the handle holds for rows of L tokens: the ring's packets (ring_workspace_bytes; the exchange's slot
// with any_layout), or Ulysses' tensors (ulysses_workspace_bytes, the hybrid's ring included). 0 for sp ≤ 1.
size_t attn_cp_workspace_bytes(const CpConfig *c, const AttnShape *s, int L);
// True where a lent workspace (attn_cp_set_workspace) holds all of them: the ring. Ulysses keeps its own.
bool attn_cp_lends(const CpConfig *c);
// Lends the ring `bytes` of backend memory dead while attention runs (ring_set_workspace); NULL: its own buffers.
void attn_cp_set_workspace(AttnCP *cp, void *buf, size_t bytes);
