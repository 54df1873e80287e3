// model/config.h — the model's shape (layers, widths, heads, vocab, RoPE) and its named presets.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/rope.h"

typedef struct ModelConfig {
    int n_layer;
    int dim;            // model width C
    int n_head;         // query heads H
    int n_kv_head;      // key/value heads Hkv (GQA: divides H)
    int ffn_dim;        // SwiGLU hidden width F
    int vocab_size;     // V
    float rope_theta;   // the RoPE base (mid --rope-theta-ramp: the ramp's at the current step)
    RopeScaling rope_scaling;
    RopeRamp rope_ramp; // train --rope-theta-ramp (model/rope.h rope_ramp_step); steps 0 elsewhere
    float norm_eps;     // RMSNorm epsilon
    bool tie_embeddings;
} ModelConfig;

static inline int cfg_head_dim(const ModelConfig *c) { return c->dim / c->n_head; }
static inline int cfg_kv_dim(const ModelConfig *c) { return c->n_kv_head * cfg_head_dim(c); }

// Fills *c from a preset name (config_preset_names: ringgpt's own and released models' shapes); false if unknown.
bool config_preset(ModelConfig *c, const char *name);
// The preset names, comma separated, for help and error text (the macro for help strings built at compile time).
#define CONFIG_PRESET_NAMES \
    "tiny, small, base, 125m, smollm2-135m, smollm2-360m, llama3.2-1b, llama3.2-3b, llama3-8b, llama2-7b"
const char *config_preset_names(void);
// Checks the shape; on a problem fails with exit code 2 and a line that names it and the fix.
void config_validate(const ModelConfig *c);
// Parameter count of the shape (matches the parameter table).
int64_t config_num_params(const ModelConfig *c);
