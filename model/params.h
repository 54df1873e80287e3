// model/params.h — the named parameter table: every weight's name, shape and place in one buffer.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/real.h"
#include "model/config.h"

typedef struct {
    char name[64];        // "layers.3.attn.wq" — also the checkpoint and export key
    int ndim;             // 1 or 2
    int64_t shape[2];     // (out, in) for matrices, (C) for norms
    size_t offset;        // elements into the parameter buffer
    size_t numel;
    bool decay;           // AdamW weight decay (2-D weights only)
    float init_std;       // normal(0, init_std); 0 means "ones" (norm gains)
} ParamSpec;

typedef struct {
    ParamSpec *specs;
    int count;
    size_t total;         // elements in the whole buffer
} ParamTable;

// Builds the table for a config (untied: has "lm_head"; tied: the head reuses "tok_embeddings").
ParamTable params_build(const ModelConfig *c);
void params_free(ParamTable *t);
// The spec of a name, or NULL.
const ParamSpec *params_find(const ParamTable *t, const char *name);
// Receives a run of the initial weights: vals (n) are the parameter-buffer elements first .. first + n - 1.
typedef void (*ParamSink)(void *ctx, size_t first, const real *vals, size_t n);
enum { PARAMS_INIT_RUN = 1 << 20 };   // the most elements in one run
// The initial weights from the specs, normal(0, init_std) for weights and ones for norm gains, walking the table in
// order with one RNG seeded from `seed` (deterministic, backend independent), handed to put run by run: the same
// values whatever part of them a sink keeps (a rank its slices, without the whole model in memory).
void params_init(const ParamTable *t, uint64_t seed, ParamSink put, void *ctx);

// Pointers into a parameter-shaped buffer (weights or their gradients), bound by name.
typedef struct {
    real *attn_norm;   // (C)
    real *wq;          // (H*hd, C)
    real *wk;          // (Hkv*hd, C)
    real *wv;          // (Hkv*hd, C)
    real *wo;          // (C, H*hd)
    real *mlp_norm;    // (C)
    real *w_gate;      // (F, C)
    real *w_up;        // (F, C)
    real *w_down;      // (C, F)
} LayerTensors;

typedef struct {
    real *tok_embeddings;   // (V, C)
    LayerTensors *layers;   // n_layer of them
    real *norm;             // (C)
    real *lm_head;          // (V, C); == tok_embeddings when tied
    int n_layer;
} ModelTensors;

// Binds every pointer by looking its name up in the table; fails if a name is missing.
ModelTensors tensors_bind(const ParamTable *t, const ModelConfig *c, real *buffer);
void tensors_free(ModelTensors *m);
// Rebinds the tensors of one unit of the model (model/shard.h: 0 the embeddings, 1 + l layer l, n_layer + 1 the final
// norm and LM head) into buf, which holds the parameter-buffer elements from `first` on (a gathered unit);
// the other units' pointers are left as they are.
void tensors_bind_unit(ModelTensors *m, const ParamTable *t, const ModelConfig *c, int unit, real *buf, size_t first);
