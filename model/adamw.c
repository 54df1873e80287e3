// model/adamw.c — AdamW walking the named parameter table (decay decided per tensor), global-norm clipping.
#include "model/adamw.h"

#include <math.h>
#include <stdlib.h>

#include "core/common.h"

void adamw_init(AdamW *o, const GPT *model, AdamWConfig cfg) {
    size_t bytes = model->table.total * sizeof(real);
    o->cfg = cfg;
    o->m = model->be->alloc(bytes, "AdamW first moments");
    o->v = model->be->alloc(bytes, "AdamW second moments");
    model->be->zero(o->m, bytes);
    model->be->zero(o->v, bytes);
    o->step = 0;
    o->shard = NULL;   // unsharded (model/shard.h); the checkpoints read it to tell a sharded optimizer
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
    o->spans = NULL;
}

void adamw_update(AdamW *o, GPT *model, float lr) {
    o->step++;
    model->be->adamw(model->params, model->grads, o->m, o->v, o->spans, o->n_spans, lr, o->cfg.beta1, o->cfg.beta2,
                     o->cfg.eps, o->cfg.weight_decay, o->step);
}

double grad_global_norm(const GPT *model) { return sqrt(model->be->sumsq(model->grads, model->table.total)); }

double clip_grad_norm(GPT *model, float max_norm) {
    double norm = grad_global_norm(model);
    if (max_norm > 0 && norm > max_norm) model->be->scale(model->grads, (float)(max_norm / (norm + 1e-6)), model->table.total);
    return norm;
}
