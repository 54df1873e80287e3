// model/config.h — the model's shape (layers, widths, heads, vocab, RoPE) and its named presets.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// RoPE scaling (HF's rope_scaling / rope_parameters): how the per-pair frequencies theta^(-2i/hd) are
// changed to reach beyond the context a model was trained at. Fields as HF names them; a type reads only its own.
typedef enum { ROPE_DEFAULT, ROPE_LINEAR, ROPE_DYNAMIC, ROPE_YARN, ROPE_LLAMA3 } RopeType;
typedef struct {
    RopeType type;              // ROPE_DEFAULT: no scaling (every other field unused)
    double factor;              // context multiple (> 0; linear divides every frequency by it)
    int original_max_pos;       // original_max_position_embeddings: the context trained at (dynamic, yarn, llama3)
    double low_freq_factor;     // llama3 (1)
    double high_freq_factor;    // llama3 (4)
    double beta_fast, beta_slow;  // yarn (32, 1)
    double attention_factor;    // yarn: cos/sin scale; 0 = from factor (0.1·ln(factor) + 1, or mscale/mscale_all_dim)
    double mscale, mscale_all_dim;  // yarn (0 = absent)
    bool no_truncate;           // yarn: HF's truncate = false (the correction range is not rounded)
} RopeScaling;

typedef struct {
    int n_layer;
    int dim;            // model width C
    int n_head;         // query heads H
    int n_kv_head;      // key/value heads Hkv (GQA: divides H)
    int ffn_dim;        // SwiGLU hidden width F
    int vocab_size;     // V
    float rope_theta;
    RopeScaling rope_scaling;
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
// The RoPE base after `done` steps of a geometric ramp from `from` to `to` over `ramp` steps (train
// --rope-theta-ramp): from·(to/from)^(done/ramp), `to` from step `ramp` on and whenever ramp <= 0.
float config_rope_theta_at(float from, float to, int ramp, long done);

// The type's name as HF writes it ("linear", "dynamic", "yarn", "llama3"; "default" for none).
const char *rope_type_name(RopeType t);
// The type of an HF rope_type name; false if ringgpt does not implement it.
bool rope_type_parse(const char *name, RopeType *t);
// The rotation the model's RoPE applies to sequences of rope_len tokens (HF: max position + 1; only dynamic reads
// it): inv_freq (hd/2) the angle per position of pair i, *scale the factor on cos and sin (yarn's attention factor,
// else 1), as transformers' modeling_rope_utils computes them, in double.
void rope_frequencies(const ModelConfig *c, int rope_len, double *inv_freq, double *scale);
// Checks a scaling record: true, or false with the problem in why (n bytes).
bool rope_scaling_check(const RopeScaling *s, char *why, size_t n);
// The same; on a problem fails with exit code 2 naming `what` (the flag or file) and the fix.
void rope_scaling_validate(const RopeScaling *s, const char *what);
// Clears the fields s->type does not read and sets HF's defaults (llama3 1/4, yarn 32/1) of those left 0.
void rope_scaling_tidy(RopeScaling *s);
// --rope-scaling's text: none | TYPE:FACTOR[:ORIG][:KEY=VALUE,...] (KEY an HF field: low_freq_factor, high_freq_factor,
// beta_fast, beta_slow, attention_factor, mscale, mscale_all_dim, truncate). Fields not given come from *inherit when
// its type is the same, else HF's defaults. Fails with exit code 2 on bad text.
void rope_scaling_parse(const char *text, const RopeScaling *inherit, RopeScaling *out);
// The record as --rope-scaling text that parses back to it exactly (every double in %.17g).
void rope_scaling_format(const RopeScaling *s, char *buf, size_t n);
