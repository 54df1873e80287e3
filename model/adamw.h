// model/adamw.h — AdamW over the named parameter table, global-norm clipping.
#pragma once
#include <stddef.h>

#include "model/gpt.h"

typedef struct {
    float beta1, beta2, eps, weight_decay;
} AdamWConfig;

typedef struct {
    AdamWConfig cfg;
    real *m, *v;     // (table.total) first and second moments, same layout as the parameters;
                     // with shard set: (shard->local_total) this rank's slices, unit by unit (model/shard.h)
    const ShardLayout *shard;   // NULL: every rank keeps all of the moments (SHARD_NONE)
    int step;        // updates taken so far (bias correction)
    AdamwSpan *spans;   // (n_spans) every tensor of the parameter table: offset, size, weight decay
    int n_spans;
} AdamW;

void adamw_init(AdamW *o, const GPT *model, AdamWConfig cfg);
void adamw_free(AdamW *o, const GPT *model);
// One update of every tensor; weight decay only where the table says decay (2-D weights).
void adamw_update(AdamW *o, GPT *model, float lr);
// Global L2 norm of all gradients.
double grad_global_norm(const GPT *model);
// Scales gradients so their global norm is at most max_norm (no-op when max_norm <= 0).
// Returns the norm before clipping.
double clip_grad_norm(GPT *model, float max_norm);
