// model/adamw.c — AdamW walking the named parameter table (decay decided per tensor), global-norm clipping.
#include "model/adamw.h"

#include <math.h>

void adamw_init(AdamW *o, const GPT *model, AdamWConfig cfg) {
    size_t bytes = model->table.total * sizeof(real);
    o->cfg = cfg;
    o->m = model->be->alloc(bytes, "AdamW first moments");
    o->v = model->be->alloc(bytes, "AdamW second moments");
    model->be->zero(o->m, bytes);
    model->be->zero(o->v, bytes);
    o->step = 0;
}

void adamw_free(AdamW *o, const GPT *model) {
    model->be->release(o->m);
    model->be->release(o->v);
    o->m = o->v = NULL;
}

void adamw_update(AdamW *o, GPT *model, float lr) {
    o->step++;
    const ParamTable *t = &model->table;
    for (const ParamSpec *p = t->specs; p < t->specs + t->count; p++)
        model->be->adamw(model->params + p->offset, model->grads + p->offset, o->m + p->offset, o->v + p->offset,
                         p->numel, lr, o->cfg.beta1, o->cfg.beta2, o->cfg.eps, o->cfg.weight_decay, o->step, p->decay);
}

double grad_global_norm(const GPT *model) { return sqrt(model->be->sumsq(model->grads, model->table.total)); }

double clip_grad_norm(GPT *model, float max_norm) {
    double norm = grad_global_norm(model);
    if (max_norm > 0 && norm > max_norm) model->be->scale(model->grads, (float)(max_norm / (norm + 1e-6)), model->table.total);
    return norm;
}
