// model/config.c — model presets and the checks that turn an impossible shape into a clear error.
#include "model/config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    const char *name;
    ModelConfig cfg;
} Preset;

// Byte-level vocab by default; ffn_dim is a multiple of 64 near 8/3·dim (Llama's SwiGLU sizing).
// The shapes of released models follow, as their HF config.json has them (vocab, tied head, RoPE base and scaling,
// norm epsilon): their vocab is their tokenizer's, which `ringgpt plan` counts; `ringgpt train` takes the vocab of
// the data it reads (prepared with that tokenizer, it is the same).
#define LLAMA32_ROPE {.type = ROPE_LLAMA3, .factor = 32, .original_max_pos = 8192, .low_freq_factor = 1, .high_freq_factor = 4}
static const Preset PRESETS[] = {
    {"tiny", {.n_layer = 2, .dim = 64, .n_head = 4, .n_kv_head = 2, .ffn_dim = 192, .vocab_size = TOK_VOCAB_SIZE,
              .rope_theta = 10000.0f, .norm_eps = 1e-5f}},
    {"small", {.n_layer = 4, .dim = 256, .n_head = 4, .n_kv_head = 4, .ffn_dim = 704, .vocab_size = TOK_VOCAB_SIZE,
               .rope_theta = 10000.0f, .norm_eps = 1e-5f}},
    {"base", {.n_layer = 8, .dim = 512, .n_head = 8, .n_kv_head = 4, .ffn_dim = 1408, .vocab_size = TOK_VOCAB_SIZE,
              .rope_theta = 10000.0f, .norm_eps = 1e-5f}},
    {"125m", {.n_layer = 12, .dim = 768, .n_head = 12, .n_kv_head = 12, .ffn_dim = 2048, .vocab_size = 32000,
              .rope_theta = 10000.0f, .norm_eps = 1e-5f}},
    // HuggingFaceTB/SmolLM2-135M and -360M
    {"smollm2-135m", {.n_layer = 30, .dim = 576, .n_head = 9, .n_kv_head = 3, .ffn_dim = 1536, .vocab_size = 49152,
                      .rope_theta = 100000.0f, .norm_eps = 1e-5f, .tie_embeddings = true}},
    {"smollm2-360m", {.n_layer = 32, .dim = 960, .n_head = 15, .n_kv_head = 5, .ffn_dim = 2560, .vocab_size = 49152,
                      .rope_theta = 100000.0f, .norm_eps = 1e-5f, .tie_embeddings = true}},
    // meta-llama/Llama-3.2-1B and -3B (RoPE scaled as llama3, factor 32 over 8192), Meta-Llama-3-8B, Llama-2-7b-hf
    {"llama3.2-1b", {.n_layer = 16, .dim = 2048, .n_head = 32, .n_kv_head = 8, .ffn_dim = 8192, .vocab_size = 128256,
                     .rope_theta = 500000.0f, .rope_scaling = LLAMA32_ROPE, .norm_eps = 1e-5f, .tie_embeddings = true}},
    {"llama3.2-3b", {.n_layer = 28, .dim = 3072, .n_head = 24, .n_kv_head = 8, .ffn_dim = 8192, .vocab_size = 128256,
                     .rope_theta = 500000.0f, .rope_scaling = LLAMA32_ROPE, .norm_eps = 1e-5f, .tie_embeddings = true}},
    {"llama3-8b", {.n_layer = 32, .dim = 4096, .n_head = 32, .n_kv_head = 8, .ffn_dim = 14336, .vocab_size = 128256,
                   .rope_theta = 500000.0f, .norm_eps = 1e-5f}},
    {"llama2-7b", {.n_layer = 32, .dim = 4096, .n_head = 32, .n_kv_head = 32, .ffn_dim = 11008, .vocab_size = 32000,
                   .rope_theta = 10000.0f, .norm_eps = 1e-5f}},
};
#undef LLAMA32_ROPE

bool config_preset(ModelConfig *c, const char *name) {
    for (size_t i = 0; i < sizeof PRESETS / sizeof PRESETS[0]; i++)
        if (strcmp(PRESETS[i].name, name) == 0) {
            *c = PRESETS[i].cfg;
            return true;
        }
    return false;
}

const char *config_preset_names(void) { return CONFIG_PRESET_NAMES; }

void config_validate(const ModelConfig *c) {
    if (c->n_layer < 1) fail_usage("--layers must be at least 1 (got %d)", c->n_layer);
    if (c->dim < 2) fail_usage("--dim must be at least 2 (got %d)", c->dim);
    if (c->n_head < 1) fail_usage("--heads must be at least 1 (got %d)", c->n_head);
    if (c->n_kv_head < 1) fail_usage("--kv-heads must be at least 1 (got %d)", c->n_kv_head);
    if (c->ffn_dim < 1) fail_usage("--ffn-dim must be at least 1 (got %d)", c->ffn_dim);
    if (c->vocab_size < 2) fail_usage("vocab size must be at least 2 (got %d)", c->vocab_size);
    if (c->dim % c->n_head != 0)
        fail_usage("--dim %d is not divisible by --heads %d; choose a dim that is a multiple of the head count",
                   c->dim, c->n_head);
    if (c->n_head % c->n_kv_head != 0)
        fail_usage("--heads %d is not divisible by --kv-heads %d; GQA needs kv-heads to divide heads", c->n_head,
                   c->n_kv_head);
    if (cfg_head_dim(c) % 2 != 0)
        fail_usage("head dim %d (dim %d / heads %d) is odd; RoPE rotates pairs, so choose dim/heads even",
                   cfg_head_dim(c), c->dim, c->n_head);
    if (!(c->rope_theta > 1.0f)) fail_usage("--rope-theta must be greater than 1 (got %g)", c->rope_theta);
    if (!(c->norm_eps > 0.0f)) fail_usage("norm epsilon must be positive (got %g)", c->norm_eps);
    rope_scaling_validate(&c->rope_scaling, "the model");
    if (c->rope_scaling.type == ROPE_DYNAMIC && cfg_head_dim(c) <= 2)
        fail_usage("rope scaling dynamic needs a head dim above 2 (got %d): its base grows by a power hd/(hd-2)", cfg_head_dim(c));
}

int64_t config_num_params(const ModelConfig *c) {
    int64_t C = c->dim, F = c->ffn_dim, V = c->vocab_size, KV = cfg_kv_dim(c);
    int64_t per_layer = C + C * C + 2 * KV * C + C * C + C + 3 * F * C;
    return V * C + c->n_layer * per_layer + C + (c->tie_embeddings ? 0 : V * C);
}

float config_rope_theta_at(float from, float to, int ramp, long done) {
    if (ramp <= 0 || done >= ramp) return to;
    if (done <= 0) return from;
    return (float)(from * pow((double)to / from, (double)done / ramp));
}

// ---- RoPE scaling --------------------------------------------------------------------------------

static const char *const ROPE_NAMES[] = {"default", "linear", "dynamic", "yarn", "llama3"};

const char *rope_type_name(RopeType t) { return ROPE_NAMES[t]; }

bool rope_type_parse(const char *name, RopeType *t) {
    for (int i = 0; i < (int)(sizeof ROPE_NAMES / sizeof ROPE_NAMES[0]); i++)
        if (strcmp(name, ROPE_NAMES[i]) == 0) {
            *t = (RopeType)i;
            return true;
        }
    return false;
}

// Whether type t reads original_max_position_embeddings.
static bool rope_uses_orig(RopeType t) { return t == ROPE_DYNAMIC || t == ROPE_YARN || t == ROPE_LLAMA3; }

// HF's yarn_get_mscale: 0.1·m·ln(scale) + 1 (1 for scale <= 1).
static double yarn_mscale(double scale, double m) { return scale <= 1 ? 1.0 : 0.1 * m * log(scale) + 1.0; }

// HF's find_correction_dim: the pair index whose wavelength fits `rotations` turns into the original context.
static double yarn_correction_dim(double rotations, int hd, double base, int orig) {
    return hd * log(orig / (rotations * 2 * M_PI)) / (2 * log(base));
}

// YaRN (HF _compute_yarn_parameters): interpolation (÷factor) below the correction range, extrapolation (as
// trained) above it, a linear ramp between; cos and sin scaled by the attention factor.
static void yarn_frequencies(const RopeScaling *s, double base, int hd, double *inv_freq, double *scale) {
    double fast = s->beta_fast != 0 ? s->beta_fast : 32, slow = s->beta_slow != 0 ? s->beta_slow : 1;
    double low = yarn_correction_dim(fast, hd, base, s->original_max_pos);
    double high = yarn_correction_dim(slow, hd, base, s->original_max_pos);
    if (!s->no_truncate) low = floor(low), high = ceil(high);
    low = fmax(low, 0), high = fmin(high, hd - 1);
    if (low == high) high += 0.001;   // HF: "prevent singularity"
    for (int i = 0; i < hd / 2; i++) {
        double ramp = fmin(fmax((i - low) / (high - low), 0), 1), extrapolate = 1 - ramp;
        inv_freq[i] = inv_freq[i] / s->factor * (1 - extrapolate) + inv_freq[i] * extrapolate;
    }
    if (s->attention_factor > 0) *scale = s->attention_factor;
    else if (s->mscale != 0 && s->mscale_all_dim != 0)
        *scale = yarn_mscale(s->factor, s->mscale) / yarn_mscale(s->factor, s->mscale_all_dim);
    else *scale = yarn_mscale(s->factor, 1);
}

// Llama 3.1 (HF _compute_llama3_parameters): wavelengths below orig/high_freq_factor as trained, above
// orig/low_freq_factor ÷factor, a smooth blend between.
static void llama3_frequencies(const RopeScaling *s, int hd, double *inv_freq) {
    double orig = s->original_max_pos, low_wl = orig / s->low_freq_factor, high_wl = orig / s->high_freq_factor;
    for (int i = 0; i < hd / 2; i++) {
        double f = inv_freq[i], wl = 2 * M_PI / f;
        if (wl > low_wl) inv_freq[i] = f / s->factor;
        else if (wl >= high_wl) {
            double smooth = (orig / wl - s->low_freq_factor) / (s->high_freq_factor - s->low_freq_factor);
            inv_freq[i] = (1 - smooth) * f / s->factor + smooth * f;
        }
    }
}

void rope_frequencies(const ModelConfig *c, int rope_len, double *inv_freq, double *scale) {
    const RopeScaling *s = &c->rope_scaling;
    int hd = cfg_head_dim(c);
    double base = c->rope_theta;
    *scale = 1;
    if (s->type == ROPE_DYNAMIC) {   // HF _compute_dynamic_ntk_parameters: the base grows with the length
        double len = rope_len > s->original_max_pos ? rope_len : s->original_max_pos;
        base *= pow(s->factor * len / s->original_max_pos - (s->factor - 1), (double)hd / (hd - 2));
    }
    for (int i = 0; i < hd / 2; i++) inv_freq[i] = pow(base, -2.0 * i / hd);
    if (s->type == ROPE_LINEAR)
        for (int i = 0; i < hd / 2; i++) inv_freq[i] /= s->factor;
    if (s->type == ROPE_YARN) yarn_frequencies(s, base, hd, inv_freq, scale);
    if (s->type == ROPE_LLAMA3) llama3_frequencies(s, hd, inv_freq);
}

bool rope_scaling_check(const RopeScaling *s, char *why, size_t n) {
    const char *t = rope_type_name(s->type);
    if (s->type == ROPE_DEFAULT) return true;
    if (!(s->factor >= 1 && s->factor < 1e9)) snprintf(why, n, "rope scaling %s factor %g must be at least 1", t, s->factor);
    else if (rope_uses_orig(s->type) && !(s->original_max_pos >= 1))
        snprintf(why, n, "rope scaling %s needs original_max_position_embeddings (the context the model was trained at), "
                 "a whole number of at least 1 (got %d)", t, s->original_max_pos);
    else if (s->type == ROPE_LLAMA3 &&
             !(s->low_freq_factor > 0 && s->high_freq_factor > s->low_freq_factor && isfinite(s->high_freq_factor)))
        snprintf(why, n, "rope scaling llama3 needs 0 < low_freq_factor < high_freq_factor (got %g and %g)",
                 s->low_freq_factor, s->high_freq_factor);
    else if (s->type == ROPE_YARN && !(s->beta_fast >= 0 && s->beta_slow >= 0 && s->attention_factor >= 0 &&
                                       isfinite(s->beta_fast) && isfinite(s->beta_slow) && isfinite(s->attention_factor) &&
                                       isfinite(s->mscale) && isfinite(s->mscale_all_dim)))
        snprintf(why, n, "rope scaling yarn needs finite, non-negative beta_fast, beta_slow and attention_factor");
    else return true;
    return false;
}

void rope_scaling_validate(const RopeScaling *s, const char *what) {
    char why[256];
    if (!rope_scaling_check(s, why, sizeof why)) fail_usage("%s: %s", what, why);
}

// Clears what type s->type does not read, and sets HF's defaults of what it reads and was not given.
void rope_scaling_tidy(RopeScaling *s) {
    RopeScaling t = {.type = s->type};
    if (s->type == ROPE_DEFAULT) {
        *s = t;
        return;
    }
    t.factor = s->factor;
    if (rope_uses_orig(s->type)) t.original_max_pos = s->original_max_pos;
    if (s->type == ROPE_LLAMA3) {
        t.low_freq_factor = s->low_freq_factor != 0 ? s->low_freq_factor : 1;
        t.high_freq_factor = s->high_freq_factor != 0 ? s->high_freq_factor : 4;
    }
    if (s->type == ROPE_YARN) {
        t.beta_fast = s->beta_fast != 0 ? s->beta_fast : 32;
        t.beta_slow = s->beta_slow != 0 ? s->beta_slow : 1;
        t.attention_factor = s->attention_factor, t.mscale = s->mscale, t.mscale_all_dim = s->mscale_all_dim;
        t.no_truncate = s->no_truncate;
    }
    *s = t;
}

// A number of --rope-scaling's text: all of `text` (up to `end`) must be one.
static double spec_number(const char *text, const char *start, const char *end, const char *what) {
    char *stop;
    double v = strtod(start, &stop);
    if (stop == start || stop != end || !isfinite(v))
        fail_usage("--rope-scaling %s: %s '%.*s' is not a number; give TYPE:FACTOR[:ORIG][:KEY=VALUE,...], e.g. "
                   "llama3:8:8192", text, what, (int)(end - start), start);
    return v;
}

// The KEY=VALUE,... part of --rope-scaling's text.
static void spec_extras(const char *text, const char *p, RopeScaling *s) {
    struct {
        const char *key;
        double *dst;
    } keys[] = {{"low_freq_factor", &s->low_freq_factor}, {"high_freq_factor", &s->high_freq_factor},
                {"beta_fast", &s->beta_fast}, {"beta_slow", &s->beta_slow}, {"attention_factor", &s->attention_factor},
                {"mscale", &s->mscale}, {"mscale_all_dim", &s->mscale_all_dim}};
    while (*p) {
        const char *end = strchr(p, ','), *eq = strchr(p, '=');
        if (!end) end = p + strlen(p);
        if (!eq || eq > end) fail_usage("--rope-scaling %s: '%.*s' is not KEY=VALUE", text, (int)(end - p), p);
        size_t klen = (size_t)(eq - p);
        bool found = false;
        if (klen == 8 && strncmp(p, "truncate", 8) == 0) {
            double v = spec_number(text, eq + 1, end, "truncate");
            if (v != 0 && v != 1) fail_usage("--rope-scaling %s: truncate is 1 or 0", text);
            s->no_truncate = v == 0, found = true;
        }
        for (size_t i = 0; i < sizeof keys / sizeof keys[0] && !found; i++)
            if (strlen(keys[i].key) == klen && strncmp(p, keys[i].key, klen) == 0)
                *keys[i].dst = spec_number(text, eq + 1, end, keys[i].key), found = true;
        if (!found)
            fail_usage("--rope-scaling %s: unknown key '%.*s'; use low_freq_factor, high_freq_factor, beta_fast, "
                       "beta_slow, attention_factor, mscale, mscale_all_dim or truncate", text, (int)klen, p);
        p = *end ? end + 1 : end;
    }
}

void rope_scaling_parse(const char *text, const RopeScaling *inherit, RopeScaling *out) {
    RopeScaling s = {0};
    if (strcmp(text, "none") == 0 || strcmp(text, "default") == 0) {
        *out = s;
        return;
    }
    const char *colon = strchr(text, ':');
    char name[16];
    size_t len = colon ? (size_t)(colon - text) : strlen(text);
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), text);
    if (len >= sizeof name || !rope_type_parse(name, &s.type) || s.type == ROPE_DEFAULT || !colon)
        fail_usage("--rope-scaling %s: give none or TYPE:FACTOR[:ORIG][:KEY=VALUE,...] with TYPE linear, dynamic, yarn or "
                   "llama3 (e.g. llama3:8:8192)", text);
    if (inherit && inherit->type == s.type) s = *inherit;
    else if (inherit) s.original_max_pos = inherit->original_max_pos;   // the context trained at stays
    const char *f = colon + 1, *f_end = strchr(f, ':');
    if (!f_end) f_end = f + strlen(f);
    s.factor = spec_number(text, f, f_end, "FACTOR");
    if (*f_end) {
        const char *o = f_end + 1, *o_end = strchr(o, ':');
        if (!o_end) o_end = o + strlen(o);
        if (o_end > o) {
            double v = spec_number(text, o, o_end, "ORIG");
            if (v != floor(v) || v < 1 || v > (double)(1 << 30))
                fail_usage("--rope-scaling %s: ORIG %g must be a whole number in 1..2^30 (the context the model was "
                           "trained at)", text, v);
            s.original_max_pos = (int)v;
        }
        if (*o_end) spec_extras(text, o_end + 1, &s);
    }
    if (rope_uses_orig(s.type) && s.original_max_pos < 1)
        fail_usage("--rope-scaling %s: %s needs the context the model was trained at: %s:%g:ORIG", text, name, name, s.factor);
    rope_scaling_tidy(&s);
    rope_scaling_validate(&s, "--rope-scaling");
    *out = s;
}

// Appends ":"-or-"," separated number v (the shortest %g that reads back to v) to buf.
static void put_number(char *buf, size_t n, const char *sep, const char *key, double v) {
    char num[40];
    snprintf(num, sizeof num, "%.15g", v);
    if (strtod(num, NULL) != v) snprintf(num, sizeof num, "%.17g", v);
    size_t used = strlen(buf);
    snprintf(buf + used, n > used ? n - used : 0, "%s%s%s%s", sep, key ? key : "", key ? "=" : "", num);
}

void rope_scaling_format(const RopeScaling *s, char *buf, size_t n) {
    snprintf(buf, n, "%s", s->type == ROPE_DEFAULT ? "none" : rope_type_name(s->type));
    if (s->type == ROPE_DEFAULT) return;
    put_number(buf, n, ":", NULL, s->factor);
    if (rope_uses_orig(s->type)) put_number(buf, n, ":", NULL, s->original_max_pos);
    const char *sep = ":";
    if (s->type == ROPE_LLAMA3) {
        put_number(buf, n, sep, "low_freq_factor", s->low_freq_factor);
        put_number(buf, n, ",", "high_freq_factor", s->high_freq_factor);
    }
    if (s->type == ROPE_YARN) {
        put_number(buf, n, sep, "beta_fast", s->beta_fast);
        put_number(buf, n, ",", "beta_slow", s->beta_slow);
        if (s->attention_factor > 0) put_number(buf, n, ",", "attention_factor", s->attention_factor);
        if (s->mscale != 0) put_number(buf, n, ",", "mscale", s->mscale);
        if (s->mscale_all_dim != 0) put_number(buf, n, ",", "mscale_all_dim", s->mscale_all_dim);
        if (s->no_truncate) put_number(buf, n, ",", "truncate", 0);
    }
}
