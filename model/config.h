// model/config.h — the model's shape (layers, widths, heads, vocab, RoPE) and its named presets.
#pragma once
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    int n_layer;
    int dim;            // model width C
    int n_head;         // query heads H
    int n_kv_head;      // key/value heads Hkv (GQA: divides H)
    int ffn_dim;        // SwiGLU hidden width F
    int vocab_size;     // V
    float rope_theta;
    float norm_eps;     // RMSNorm epsilon
    bool tie_embeddings;
} ModelConfig;

static inline int cfg_head_dim(const ModelConfig *c) { return c->dim / c->n_head; }
static inline int cfg_kv_dim(const ModelConfig *c) { return c->n_kv_head * cfg_head_dim(c); }

// Fills *c from a preset name ("tiny", "small", "base", "125m"); returns false if unknown.
bool config_preset(ModelConfig *c, const char *name);
// The preset names, comma separated, for help and error text.
const char *config_preset_names(void);
// Checks the shape; on a problem fails with exit code 2 and a line that names it and the fix.
void config_validate(const ModelConfig *c);
// Parameter count of the shape (matches the parameter table).
int64_t config_num_params(const ModelConfig *c);
// The RoPE base after `done` steps of a geometric ramp from `from` to `to` over `ramp` steps (train
// --rope-theta-ramp): from·(to/from)^(done/ramp), `to` from step `ramp` on and whenever ramp <= 0.
float config_rope_theta_at(float from, float to, int ramp, long done);
