// model/rope.h — RoPE in one place: the scaling (types, --rope-scaling text, checks, HF's rope_scaling record), the inverse frequencies and the θ ramp.
#pragma once
#include <stdbool.h>
#include <stddef.h>

struct ModelConfig;   // model/config.h: the base (rope_theta), the scaling and ramp below, the head dim
struct cJSON;

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

// train --rope-theta-ramp: the base rises geometrically from `from` to `to` (--rope-theta) over the first `steps`
// optimizer steps; steps 0: no ramp (the model's rope_theta stays).
typedef struct {
    float from, to;
    int steps;
} RopeRamp;

// A model's rotation, made once per base and (dynamic only) length (rope_table).
typedef struct {
    double *inv_freq;   // (hd/2) the angle per position of pair i; NULL: none made yet
    double scale;       // the factor on cos and sin (yarn's attention factor, else 1)
    float theta;        // the base and the length the table was made for
    int len;
} RopeTable;

// The rotation c's RoPE applies to sequences of rope_len tokens (HF: max position + 1; only dynamic reads it):
// inv_freq (hd/2) the angle per position of pair i, *scale the factor on cos and sin (yarn's attention factor, else 1),
// as transformers' modeling_rope_utils computes them, in double.
void rope_frequencies(const struct ModelConfig *c, int rope_len, double *inv_freq, double *scale);
// t's table for c at rope_len, remade only when the base or (dynamic) the length changed since; free with rope_table_free.
const RopeTable *rope_table(RopeTable *t, const struct ModelConfig *c, int rope_len);
void rope_table_free(RopeTable *t);
// Sets c->rope_theta to the base its ramp (c->rope_ramp) gives after `done` steps: from·(to/from)^(done/steps), `to`
// from step `steps` on; without a ramp c is unchanged.
void rope_ramp_step(struct ModelConfig *c, long done);

// Checks a scaling record (hd > 0: also against the head dim): true, or false with the problem in why (n bytes).
bool rope_scaling_check(const RopeScaling *s, int hd, char *why, size_t n);
// The text form (flag --rope-scaling and its kin): none | TYPE:FACTOR[:ORIG][:KEY=VALUE,...] (KEY an HF field:
// low_freq_factor, high_freq_factor, beta_fast, beta_slow, attention_factor, mscale, mscale_all_dim, truncate). Fields
// not given come from *inherit when its type is the same, else HF's defaults. Fails with exit code 2 naming `flag`.
void rope_scaling_parse(const char *text, const RopeScaling *inherit, const char *flag, RopeScaling *out);
// A scaling given as `flag`'s text applied to a model's config (a loaded checkpoint's): what the text leaves out
// stays c's (its original context, a same type's fields); checked against c's head dim. Fails with exit code 2.
void rope_scaling_apply(struct ModelConfig *c, const char *text, const char *flag);
// The record as text that parses back to it exactly.
void rope_scaling_format(const RopeScaling *s, char *buf, size_t n);
// HF's rope_scaling dict (also state.json's model.rope_scaling): o absent, null or without a type: none. hf_max_pos
// > 0: a config.json's max_position_embeddings (HF's default original context; dynamic's always); 0: the dict's
// original_max_position_embeddings. Unknown keys and types are refused: false with why naming `where`.
bool rope_scaling_from_json(const struct cJSON *o, const char *where, int hf_max_pos, RopeScaling *s, char *why, size_t n);
// Adds the record's fields (those its type reads) to the object o.
void rope_scaling_to_json(struct cJSON *o, const RopeScaling *s);
