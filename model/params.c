// model/params.c — builds the named parameter table from a config, initialises it, binds pointers by name.
#include "model/params.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"

static void add(ParamTable *t, int *cap, const char *name, int64_t d0, int64_t d1, float std) {
    if (t->count == *cap) {
        *cap = *cap ? 2 * *cap : 32;
        t->specs = xrealloc(t->specs, (size_t)*cap * sizeof(ParamSpec), "the parameter table");
    }
    ParamSpec *p = &t->specs[t->count++];
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = d1 ? 2 : 1;
    p->shape[0] = d0;
    p->shape[1] = d1;
    p->numel = (size_t)d0 * (size_t)(d1 ? d1 : 1);
    p->offset = t->total;
    p->decay = p->ndim == 2;
    p->init_std = std;
    t->total += p->numel;
}

ParamTable params_build(const ModelConfig *c) {
    ParamTable t = {0};
    int cap = 0;
    int64_t C = c->dim, F = c->ffn_dim, V = c->vocab_size, Q = c->dim, KV = cfg_kv_dim(c);
    const float std = 0.02f;
    // Residual output projections are scaled by 1/sqrt(2·layers) (GPT-2 / Llama practice).
    const float std_res = std / sqrtf(2.0f * c->n_layer);
    char name[64];
    add(&t, &cap, "tok_embeddings", V, C, std);
    for (int l = 0; l < c->n_layer; l++) {
#define LAYER(suffix, d0, d1, s) (snprintf(name, sizeof name, "layers.%d.%s", l, suffix), add(&t, &cap, name, d0, d1, s))
        LAYER("attn_norm", C, 0, 0.0f);
        LAYER("attn.wq", Q, C, std);
        LAYER("attn.wk", KV, C, std);
        LAYER("attn.wv", KV, C, std);
        LAYER("attn.wo", C, Q, std_res);
        LAYER("mlp_norm", C, 0, 0.0f);
        LAYER("mlp.w_gate", F, C, std);
        LAYER("mlp.w_up", F, C, std);
        LAYER("mlp.w_down", C, F, std_res);
#undef LAYER
    }
    add(&t, &cap, "norm", C, 0, 0.0f);
    if (!c->tie_embeddings) add(&t, &cap, "lm_head", V, C, std);
    return t;
}

void params_free(ParamTable *t) {
    free(t->specs);
    *t = (ParamTable){0};
}

const ParamSpec *params_find(const ParamTable *t, const char *name) {
    for (const ParamSpec *p = t->specs; p < t->specs + t->count; p++)
        if (strcmp(p->name, name) == 0) return p;
    return NULL;
}

void params_init(const ParamTable *t, uint64_t seed, ParamSink put, void *ctx) {
    Rng rng;
    rng_seed(&rng, seed);
    real *run = xmalloc(PARAMS_INIT_RUN * sizeof(real), "initial weights");   // (PARAMS_INIT_RUN)
    for (const ParamSpec *p = t->specs; p < t->specs + t->count; p++)
        for (size_t at = 0; at < p->numel; at += PARAMS_INIT_RUN) {
            size_t n = p->numel - at < PARAMS_INIT_RUN ? p->numel - at : PARAMS_INIT_RUN;
            for (size_t i = 0; i < n; i++) run[i] = p->init_std > 0 ? (real)(p->init_std * rng_normal(&rng)) : (real)1;
            put(ctx, p->offset + at, run, n);
        }
    free(run);
}

// Where `name` sits in buffer, which holds the parameter-buffer elements from `first` on.
static real *bind_from(const ParamTable *t, real *buffer, size_t first, const char *name) {
    const ParamSpec *p = params_find(t, name);
    if (!p) fail("internal: parameter '%s' missing from the table", name);
    if (p->offset < first) fail("internal: parameter '%s' lies before the bound unit", name);
    return buffer + (p->offset - first);
}

static real *bind(const ParamTable *t, real *buffer, const char *name) { return bind_from(t, buffer, 0, name); }

static void bind_layer(LayerTensors *L, const ParamTable *t, int l, real *buffer, size_t first) {
    char name[64];
#define BIND(field, suffix) (snprintf(name, sizeof name, "layers.%d.%s", l, suffix), L->field = bind_from(t, buffer, first, name))
    BIND(attn_norm, "attn_norm");
    BIND(wq, "attn.wq");
    BIND(wk, "attn.wk");
    BIND(wv, "attn.wv");
    BIND(wo, "attn.wo");
    BIND(mlp_norm, "mlp_norm");
    BIND(w_gate, "mlp.w_gate");
    BIND(w_up, "mlp.w_up");
    BIND(w_down, "mlp.w_down");
#undef BIND
}

ModelTensors tensors_bind(const ParamTable *t, const ModelConfig *c, real *buffer) {
    ModelTensors m = {.n_layer = c->n_layer};
    m.layers = xcalloc((size_t)c->n_layer, sizeof(LayerTensors), "layer pointers");
    m.tok_embeddings = bind(t, buffer, "tok_embeddings");
    for (int l = 0; l < c->n_layer; l++) bind_layer(&m.layers[l], t, l, buffer, 0);
    m.norm = bind(t, buffer, "norm");
    m.lm_head = c->tie_embeddings ? m.tok_embeddings : bind(t, buffer, "lm_head");
    return m;
}

void tensors_bind_unit(ModelTensors *m, const ParamTable *t, const ModelConfig *c, int unit, real *buf, size_t first) {
    if (unit == 0) {
        m->tok_embeddings = bind_from(t, buf, first, "tok_embeddings");
        if (c->tie_embeddings) m->lm_head = m->tok_embeddings;
    } else if (unit <= c->n_layer) {
        bind_layer(&m->layers[unit - 1], t, unit - 1, buf, first);
    } else {
        m->norm = bind_from(t, buf, first, "norm");
        if (!c->tie_embeddings) m->lm_head = bind_from(t, buf, first, "lm_head");
    }
}

void tensors_free(ModelTensors *m) {
    free(m->layers);
    m->layers = NULL;
}
