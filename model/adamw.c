// model/adamw.c — AdamW walking the named parameter table (decay decided per tensor), global-norm clipping.
#include "model/adamw.h"

#include <math.h>
#include <stdlib.h>

#include "core/common.h"

// The tensors' parts inside this rank's slice of each unit, offsets from the slice's start, unit by unit.
static void shard_spans(AdamW *o, const ParamTable *t, const ShardLayout *s) {
    o->spans = xmalloc((size_t)(t->count + s->n_units) * sizeof *o->spans, "AdamW spans");   // a slice cuts <= 2 more
    o->unit_spans = xmalloc((size_t)(s->n_units + 1) * sizeof *o->unit_spans, "AdamW spans");
    o->n_spans = 0;
    for (int u = 0; u < s->n_units; u++) {
        o->unit_spans[u] = o->n_spans;
        size_t len, start = shard_slice(s, u, s->rank, &len), end = start + len;
        for (int i = 0; i < t->count && len; i++) {
            size_t a = t->specs[i].offset, b = a + t->specs[i].numel;
            if (a < start) a = start;
            if (b > end) b = end;
            if (a < b) o->spans[o->n_spans++] = (AdamwSpan){.offset = a - start, .n = b - a, .decay = t->specs[i].decay};
        }
    }
    o->unit_spans[s->n_units] = o->n_spans;
}

void adamw_init(AdamW *o, const GPT *model, AdamWConfig cfg) {
    o->shard = model->shard_level >= SHARD_OPTIM ? model->shard : NULL;
    o->unit_spans = NULL;
    size_t bytes = model->sizes.moment * sizeof(real);
    o->cfg = cfg;
    o->m = model->be->alloc(bytes, "AdamW first moments");
    o->v = model->be->alloc(bytes, "AdamW second moments");
    model->be->zero(o->m, bytes);
    model->be->zero(o->v, bytes);
    o->step = 0;
    if (o->shard) {
        shard_spans(o, &model->table, o->shard);
        return;
    }
    // One span per tensor of the table, in table order: the backend updates them all in one call.
    const ParamTable *t = &model->table;
    o->spans = xmalloc((size_t)t->count * sizeof *o->spans, "AdamW spans");
    o->n_spans = t->count;
    for (int i = 0; i < t->count; i++)
        o->spans[i] = (AdamwSpan){.offset = t->specs[i].offset, .n = t->specs[i].numel, .decay = t->specs[i].decay};
}

void adamw_free(AdamW *o, const GPT *model) {
    model->be->release(o->m);
    model->be->release(o->v);
    o->m = o->v = NULL;
    free(o->spans);
    free(o->unit_spans);
    o->spans = NULL;
    o->unit_spans = NULL;
}

// Sharded: one backend call per unit over this rank's slice. The weights and gradients are whole buffers or the
// rank's slices depending on the level (model/shard.h); the moments are always the slices.
static void update_slices(AdamW *o, GPT *model, float lr) {
    const ShardLayout *s = o->shard;
    for (int u = 0; u < s->n_units; u++) {
        size_t len, start = shard_slice(s, u, s->rank, &len), local = s->local_off[u];
        if (!len) continue;
        real *w = model->params + (model->shard_level >= SHARD_PARAMS ? local : start);
        const real *g = model->grads + (model->shard_level >= SHARD_GRADS ? local : start);
        model->be->adamw(w, g, o->m + local, o->v + local, o->spans + o->unit_spans[u], o->unit_spans[u + 1] - o->unit_spans[u],
                         lr, o->cfg.beta1, o->cfg.beta2, o->cfg.eps, o->cfg.weight_decay, o->step);
    }
}

void adamw_update(AdamW *o, GPT *model, float lr) {
    o->step++;
    if (o->shard) {
        update_slices(o, model, lr);
        return;
    }
    model->be->adamw(model->params, model->grads, o->m, o->v, o->spans, o->n_spans, lr, o->cfg.beta1, o->cfg.beta2,
                     o->cfg.eps, o->cfg.weight_decay, o->step);
}

// The gradient buffer's elements: this rank's slices once the gradients are sharded.
static size_t grad_count(const GPT *model) {
    return model->shard_level >= SHARD_GRADS ? model->shard->local_total : model->table.total;
}

double grad_global_norm(const GPT *model, Comm *world) {
    double sumsq = model->be->sumsq(model->grads, grad_count(model));
    if (model->shard_level >= SHARD_GRADS) comm_allreduce(world, &sumsq, 1, COMM_F64, COMM_SUM, "gradient norm");
    return sqrt(sumsq);
}

double clip_grad_norm(GPT *model, float max_norm, Comm *world) {
    double norm = grad_global_norm(model, world);
    if (max_norm > 0 && norm > max_norm) model->be->scale(model->grads, (float)(max_norm / (norm + 1e-6)), grad_count(model));
    return norm;
}
