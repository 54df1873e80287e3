// model/adamw.h — AdamW over the named parameter table, global-norm clipping.
#pragma once
#include <stddef.h>

#include "core/comm.h"
#include "model/gpt.h"

typedef struct {
    float beta1, beta2, eps, weight_decay;
} AdamWConfig;

typedef struct {
    AdamWConfig cfg;
    real *m, *v;     // (model->sizes.moment) first and second moments, same layout as the parameters;
                     // with shard set: this rank's slices, unit by unit (model/shard.h)
    const ShardLayout *shard;   // NULL: every rank keeps all of the moments (SHARD_NONE)
    int step;        // updates taken so far (bias correction)
    AdamwSpan *spans;   // (n_spans) every tensor of the parameter table: offset, size, weight decay; with shard: the
                        // tensors' parts inside this rank's slice of each unit, offsets from the slice's start
    int n_spans;
    int *unit_spans;    // with shard: (n_units + 1) unit u's spans are spans[unit_spans[u] .. unit_spans[u + 1])
} AdamW;

// From SHARD_OPTIM on (model->shard set, gpt_shard called first) the moments are this rank's slices.
void adamw_init(AdamW *o, const GPT *model, AdamWConfig cfg);
void adamw_free(AdamW *o, const GPT *model);
// One update of every tensor; weight decay only where the table says decay (2-D weights). Sharded: of this rank's
// slices only (a slice may cut a tensor: each part keeps its tensor's decay); the other ranks' slices of the weights
// are then stale until gathered (model/shard_comm.h).
void adamw_update(AdamW *o, GPT *model, float lr);
// Global L2 norm of all gradients. Sharded gradients (SHARD_GRADS, SHARD_PARAMS): the squares of this rank's slices,
// summed over `world` (every rank calls it); world is not used otherwise.
double grad_global_norm(const GPT *model, Comm *world);
// Scales gradients so their global norm is at most max_norm (no-op when max_norm <= 0).
// Returns the norm before clipping.
double clip_grad_norm(GPT *model, float max_norm, Comm *world);
