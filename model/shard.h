// model/shard.h — how the model state is split over the ranks of a job (ZeRO-1/2/3): shard levels and each unit's slice per rank.
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "model/params.h"

// What every rank keeps of the model state (fp32 weights, gradients, AdamW's two moments), over all dp × sp
// ranks of the job (the sp ranks of a ring hold replicas of the model too):
//   SHARD_NONE    everything, on every rank (gradients all-reduced)
//   SHARD_OPTIM   1/N of the moments (ZeRO-1): a rank updates its slice, then the weights are all-gathered
//   SHARD_GRADS   and 1/N of the gradients (ZeRO-2): reduce-scattered instead of all-reduced
//   SHARD_PARAMS  and 1/N of the weights (ZeRO-3, FSDP): a unit's weights are all-gathered before its forward
//                 and its backward and freed after; its gradients reduce-scattered as its backward ends
typedef enum { SHARD_NONE, SHARD_OPTIM, SHARD_GRADS, SHARD_PARAMS } ShardLevel;

// "none", "optim", "grads" or "params" into *level; false for any other name.
bool shard_level_parse(const char *name, ShardLevel *level);
const char *shard_level_name(ShardLevel level);

// The model's units, gathered and reduce-scattered whole: the token embeddings, each layer, then the final norm
// with the LM head (the norm alone when the head is tied to the embeddings). A unit is a contiguous range of the
// parameter table (params_build's order); its slice of rank r is [r·per, (r+1)·per) of the unit, clipped to its
// length, with per = ceil(len / N): the last ranks' slices may be short or empty. Unit u of a rank is
// [unit_off[u] + rank·per[u], + own[u]) in the parameter buffer, and rank-local buffers (a rank's shard of the
// weights, gradients or moments) hold the rank's slices of the units in order, at local_off[u].
typedef struct {
    int ranks, rank;     // N and this rank's index in the world
    int n_units;         // n_layer + 2
    size_t *unit_off;    // (n_units) elements into the parameter buffer
    size_t *unit_len;    // (n_units)
    size_t *per;         // (n_units) ceil(unit_len / N): a rank's slice, before the clip at the unit's end
    size_t *own;         // (n_units) this rank's slice length (per, shorter or 0 at the unit's end)
    size_t *local_off;   // (n_units) where this rank's slice of unit u sits in its local buffers
    size_t local_total;  // sum of own: the elements of this rank's shard
    size_t max_unit;     // the longest unit_len
} ShardLayout;

// Every buffer of the model state a rank holds at a shard level, in elements (`real`; the shadows bf16; 0: none), sized
// here alone: model/gpt.c, adamw.c and shard_comm.c allocate them, memplan.c plans them, the checkpoint writer stages
// them, train reports them.
typedef struct {
    size_t weights, grads;   // every weight, its gradient; sliced (this rank's slices and pad, so that its slice of any
                             // unit can be sent as `per` elements): the gradients from grads on, the weights at params
    size_t moment;           // each of AdamW's two moments: every weight's; from optim on this rank's slices
    size_t slices, pad;      // this rank's slices of every unit (local_total; 0 unsharded); the longest (max per): each
                             // of the two slice buffers from optim on (a reduce-scatter's slice, an update's padded send)
    size_t unit_weights[3];  // the units' gathered weights, pad·ranks each, two from optim on (after the update gathered
                             // into them; params: the unit computing and the next); [2] unit 0's own (params, tied head)
    size_t unit_grads[3];    // two units' gradients from grads on (one written, one reduce-scattered); [2] tied: unit 0's
    size_t units, state;     // the unit buffers' sum; weights + grads + both moments
    size_t shadow;           // the bf16 copy of the weights the bf16 matmuls read (none at params)
    size_t unit_shadow;      // params: the units' weights converted as the bf16 matmuls read them, two units' worth
} ShardSizes;

// The buffers of model c at `level` split by layout s, for s's rank (s is not read at SHARD_NONE: NULL will do).
ShardSizes shard_sizes(const ModelConfig *c, ShardLevel level, const ShardLayout *s);

// The layout of table t (built by params_build for c) over `ranks` ranks, as seen by `rank`.
ShardLayout shard_layout(const ParamTable *t, const ModelConfig *c, int ranks, int rank);
void shard_layout_free(ShardLayout *s);
// Rank r's slice of unit u: its first element in the parameter buffer and its length (0: none).
size_t shard_slice(const ShardLayout *s, int u, int r, size_t *len);
// The unit holding parameter-buffer element `offset`.
int shard_unit_of(const ShardLayout *s, size_t offset);
