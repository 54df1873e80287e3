// model/rope.c — RoPE in one place: the scaling (types, --rope-scaling text, checks, HF's rope_scaling record), the inverse frequencies and the θ ramp.
#include "model/rope.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/json_strict.h"
#include "model/config.h"

static const char *const ROPE_NAMES[] = {"default", "linear", "dynamic", "yarn", "llama3"};

// The type's name as HF writes it ("linear", "dynamic", "yarn", "llama3"; "default" for none).
static const char *type_name(RopeType t) { return ROPE_NAMES[t]; }

// The type of an HF rope_type name; false if ringgpt does not implement it.
static bool type_parse(const char *name, RopeType *t) {
    for (int i = 0; i < (int)(sizeof ROPE_NAMES / sizeof ROPE_NAMES[0]); i++)
        if (strcmp(name, ROPE_NAMES[i]) == 0) {
            *t = (RopeType)i;
            return true;
        }
    return false;
}

// Whether type t reads original_max_position_embeddings.
static bool uses_orig(RopeType t) { return t == ROPE_DYNAMIC || t == ROPE_YARN || t == ROPE_LLAMA3; }

// ---- the inverse frequencies ---------------------------------------------------------------------

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

const RopeTable *rope_table(RopeTable *t, const ModelConfig *c, int rope_len) {
    int len = c->rope_scaling.type == ROPE_DYNAMIC ? rope_len : 0;   // only dynamic reads it
    if (t->inv_freq && t->theta == c->rope_theta && t->len == len) return t;
    if (!t->inv_freq) t->inv_freq = xmalloc((size_t)(cfg_head_dim(c) / 2) * sizeof(double), "rope frequencies");
    rope_frequencies(c, rope_len, t->inv_freq, &t->scale);
    t->theta = c->rope_theta, t->len = len;
    return t;
}

void rope_table_free(RopeTable *t) {
    free(t->inv_freq);
    *t = (RopeTable){0};
}

void rope_ramp_step(ModelConfig *c, long done) {
    const RopeRamp *r = &c->rope_ramp;
    if (r->steps <= 0) return;
    if (done >= r->steps) c->rope_theta = r->to;
    else if (done <= 0) c->rope_theta = r->from;
    else c->rope_theta = (float)(r->from * pow((double)r->to / r->from, (double)done / r->steps));
}

// ---- checks and the text form --------------------------------------------------------------------

bool rope_scaling_check(const RopeScaling *s, int hd, char *why, size_t n) {
    const char *t = type_name(s->type);
    if (s->type == ROPE_DEFAULT) return true;
    if (!(s->factor >= 1 && s->factor < 1e9)) snprintf(why, n, "rope scaling %s factor %g must be at least 1", t, s->factor);
    else if (uses_orig(s->type) && !(s->original_max_pos >= 1))
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
    else if (s->type == ROPE_DYNAMIC && hd > 0 && hd <= 2)
        snprintf(why, n, "rope scaling dynamic needs a head dim above 2 (got %d): its base grows by a power hd/(hd-2)", hd);
    else return true;
    return false;
}

// Clears what type s->type does not read, and sets HF's defaults of what it reads and was not given.
static void tidy(RopeScaling *s) {
    RopeScaling t = {.type = s->type};
    if (s->type == ROPE_DEFAULT) {
        *s = t;
        return;
    }
    t.factor = s->factor;
    if (uses_orig(s->type)) t.original_max_pos = s->original_max_pos;
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

// The text being parsed and the flag it came with, for the errors.
typedef struct {
    const char *flag, *text;
} Spec;

// A number of the text: all of start..end must be one.
static double spec_number(Spec sp, const char *start, const char *end, const char *what) {
    char *stop;
    double v = strtod(start, &stop);
    if (stop == start || stop != end || !isfinite(v))
        fail_usage("%s %s: %s '%.*s' is not a number; give TYPE:FACTOR[:ORIG][:KEY=VALUE,...], e.g. llama3:8:8192",
                   sp.flag, sp.text, what, (int)(end - start), start);
    return v;
}

// The KEY=VALUE,... part of the text.
static void spec_extras(Spec sp, const char *p, RopeScaling *s) {
    struct {
        const char *key;
        double *dst;
    } keys[] = {{"low_freq_factor", &s->low_freq_factor}, {"high_freq_factor", &s->high_freq_factor},
                {"beta_fast", &s->beta_fast}, {"beta_slow", &s->beta_slow}, {"attention_factor", &s->attention_factor},
                {"mscale", &s->mscale}, {"mscale_all_dim", &s->mscale_all_dim}};
    while (*p) {
        const char *end = strchr(p, ','), *eq = strchr(p, '=');
        if (!end) end = p + strlen(p);
        if (!eq || eq > end) fail_usage("%s %s: '%.*s' is not KEY=VALUE", sp.flag, sp.text, (int)(end - p), p);
        size_t klen = (size_t)(eq - p);
        bool found = false;
        if (klen == 8 && strncmp(p, "truncate", 8) == 0) {
            double v = spec_number(sp, eq + 1, end, "truncate");
            if (v != 0 && v != 1) fail_usage("%s %s: truncate is 1 or 0", sp.flag, sp.text);
            s->no_truncate = v == 0, found = true;
        }
        for (size_t i = 0; i < sizeof keys / sizeof keys[0] && !found; i++)
            if (strlen(keys[i].key) == klen && strncmp(p, keys[i].key, klen) == 0)
                *keys[i].dst = spec_number(sp, eq + 1, end, keys[i].key), found = true;
        if (!found)
            fail_usage("%s %s: unknown key '%.*s'; use low_freq_factor, high_freq_factor, beta_fast, beta_slow, "
                       "attention_factor, mscale, mscale_all_dim or truncate", sp.flag, sp.text, (int)klen, p);
        p = *end ? end + 1 : end;
    }
}

void rope_scaling_parse(const char *text, const RopeScaling *inherit, const char *flag, RopeScaling *out) {
    RopeScaling s = {0};
    if (strcmp(text, "none") == 0 || strcmp(text, "default") == 0) {
        *out = s;
        return;
    }
    Spec sp = {flag, text};
    const char *colon = strchr(text, ':');
    char name[16];
    size_t len = colon ? (size_t)(colon - text) : strlen(text);
    snprintf(name, sizeof name, "%.*s", (int)(len < sizeof name ? len : sizeof name - 1), text);
    if (len >= sizeof name || !type_parse(name, &s.type) || s.type == ROPE_DEFAULT || !colon)
        fail_usage("%s %s: give none or TYPE:FACTOR[:ORIG][:KEY=VALUE,...] with TYPE linear, dynamic, yarn or llama3 "
                   "(e.g. llama3:8:8192)", flag, text);
    if (inherit && inherit->type == s.type) s = *inherit;
    else if (inherit) s.original_max_pos = inherit->original_max_pos;   // the context trained at stays
    const char *f = colon + 1, *f_end = strchr(f, ':');
    if (!f_end) f_end = f + strlen(f);
    s.factor = spec_number(sp, f, f_end, "FACTOR");
    const char *o = *f_end ? f_end + 1 : f_end, *o_end = strchr(o, ':');   // :ORIG[:KEY=VALUE,...]
    if (!o_end) o_end = o + strlen(o);
    if (o_end > o) {
        double v = spec_number(sp, o, o_end, "ORIG");
        if (v != floor(v) || v < 1 || v > (double)(1 << 30))
            fail_usage("%s %s: ORIG %g must be a whole number in 1..2^30 (the context the model was trained at)", flag, text, v);
        s.original_max_pos = (int)v;
    }
    if (*o_end) spec_extras(sp, o_end + 1, &s);
    if (uses_orig(s.type) && s.original_max_pos < 1)
        fail_usage("%s %s: %s needs the context the model was trained at: %s:%g:ORIG", flag, text, name, name, s.factor);
    tidy(&s);
    char why[256];
    if (!rope_scaling_check(&s, 0, why, sizeof why)) fail_usage("%s: %s", flag, why);
    *out = s;
}

void rope_scaling_apply(ModelConfig *c, const char *text, const char *flag) {
    rope_scaling_parse(text, &c->rope_scaling, flag, &c->rope_scaling);
    char why[256];
    if (!rope_scaling_check(&c->rope_scaling, cfg_head_dim(c), why, sizeof why)) fail_usage("%s %s: %s", flag, text, why);
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
    snprintf(buf, n, "%s", s->type == ROPE_DEFAULT ? "none" : type_name(s->type));
    if (s->type == ROPE_DEFAULT) return;
    put_number(buf, n, ":", NULL, s->factor);
    if (uses_orig(s->type)) put_number(buf, n, ":", NULL, s->original_max_pos);
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

// ---- HF's record: rope_scaling (transformers v4: "rope_type" or the older "type") or rope_parameters (v5) ----

// A number of the dict (absent or null: *out unchanged).
static bool json_number(const cJSON *o, const char *where, const char *key, double *out, char *why, size_t n) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!j || cJSON_IsNull(j)) return true;
    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble)) {
        snprintf(why, n, "%s.%s is not a number", where, key);
        return false;
    }
    *out = j->valuedouble;
    return true;
}

// Every key of the dict is one ringgpt reads: a misspelt beta_fast would otherwise fall back to its default.
static bool json_keys(const cJSON *o, const char *where, char *why, size_t n) {
    static const char *const keys[] = {"rope_type", "type", "factor", "original_max_position_embeddings", "low_freq_factor",
                                       "high_freq_factor", "beta_fast", "beta_slow", "attention_factor", "mscale",
                                       "mscale_all_dim", "truncate", "rope_theta", "partial_rotary_factor"};
    for (const cJSON *c = o->child; c; c = c->next) {
        bool known = false;
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) known |= strcmp(c->string, keys[k]) == 0;
        if (!known) {
            char key[128];
            snprintf(why, n, "%s has the key \"%s\", which ringgpt does not implement (it reads %s)", where,
                     json_printable(c->string, key, sizeof key), "factor, original_max_position_embeddings, "
                     "low/high_freq_factor, beta_fast/slow, attention_factor, mscale, mscale_all_dim, truncate");
            return false;
        }
    }
    double partial = 1;
    if (!json_number(o, where, "partial_rotary_factor", &partial, why, n)) return false;
    if (partial != 1) {
        snprintf(why, n, "%s.partial_rotary_factor is %g; ringgpt rotates the whole head (1)", where, partial);
        return false;
    }
    return true;
}

// The type of the dict: rope_type, else type; absent or "default": none.
static bool json_type(const cJSON *o, const char *where, RopeType *t, char *why, size_t n) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, "rope_type");
    if (!j || cJSON_IsNull(j)) j = cJSON_GetObjectItemCaseSensitive(o, "type");
    *t = ROPE_DEFAULT;
    if (!j || cJSON_IsNull(j)) return true;
    char name[64];
    if (cJSON_IsString(j) && type_parse(j->valuestring, t)) return true;
    snprintf(why, n, "%s.rope_type is %s; ringgpt implements default, linear, dynamic, yarn and llama3", where,
             cJSON_IsString(j) ? json_printable(j->valuestring, name, sizeof name) : "not a string");
    return false;
}

bool rope_scaling_from_json(const cJSON *o, const char *where, int hf_max_pos, RopeScaling *s, char *why, size_t n) {
    *s = (RopeScaling){0};
    if (!o || cJSON_IsNull(o)) return true;
    if (!cJSON_IsObject(o)) {
        snprintf(why, n, "%s is not an object", where);
        return false;
    }
    if (!json_keys(o, where, why, n) || !json_type(o, where, &s->type, why, n)) return false;
    if (s->type == ROPE_DEFAULT) return true;
    double orig = hf_max_pos;
    double *dst[] = {&s->factor, &orig, &s->low_freq_factor, &s->high_freq_factor, &s->beta_fast, &s->beta_slow,
                     &s->attention_factor, &s->mscale, &s->mscale_all_dim};
    const char *names[] = {"factor", "original_max_position_embeddings", "low_freq_factor", "high_freq_factor",
                           "beta_fast", "beta_slow", "attention_factor", "mscale", "mscale_all_dim"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!json_number(o, where, names[i], dst[i], why, n)) return false;
    const cJSON *trunc = cJSON_GetObjectItemCaseSensitive(o, "truncate");
    s->no_truncate = cJSON_IsFalse(trunc);
    // HF's dynamic scales against max_position_embeddings itself; the others read original_max_position_embeddings
    // (HF's default: max_position_embeddings). A ringgpt state.json (hf_max_pos 0) holds the one used.
    if (s->type == ROPE_DYNAMIC && hf_max_pos > 0) orig = hf_max_pos;
    if (s->type == ROPE_YARN && s->factor == 0 && orig > 0) s->factor = hf_max_pos / orig;   // HF: factor may be absent
    if (trunc && !cJSON_IsNull(trunc) && !cJSON_IsBool(trunc)) snprintf(why, n, "%s.truncate must be true or false", where);
    else if (orig != floor(orig) || orig < 0 || orig > (double)(1 << 30))
        snprintf(why, n, "%s.original_max_position_embeddings is %g; it must be a whole number in 1..2^30", where, orig);
    else if (!(s->factor >= 1 && s->factor < 1e9))
        snprintf(why, n, "%s.factor is %g; rope scaling %s needs a factor of at least 1", where, s->factor, type_name(s->type));
    else if (s->type == ROPE_LLAMA3 && (s->low_freq_factor == 0 || s->high_freq_factor == 0))
        snprintf(why, n, "%s: rope_type llama3 needs low_freq_factor and high_freq_factor (Llama 3.1: 1 and 4)", where);
    else {
        s->original_max_pos = (int)orig;
        tidy(s);
        char problem[256];
        if (rope_scaling_check(s, 0, problem, sizeof problem)) return true;
        snprintf(why, n, "%s: %s", where, problem);
    }
    return false;
}

void rope_scaling_to_json(cJSON *o, const RopeScaling *s) {
    cJSON_AddStringToObject(o, "rope_type", type_name(s->type));
    cJSON_AddNumberToObject(o, "factor", s->factor);
    if (s->original_max_pos > 0) cJSON_AddNumberToObject(o, "original_max_position_embeddings", s->original_max_pos);
    if (s->type == ROPE_LLAMA3) {
        cJSON_AddNumberToObject(o, "low_freq_factor", s->low_freq_factor);
        cJSON_AddNumberToObject(o, "high_freq_factor", s->high_freq_factor);
    }
    if (s->type != ROPE_YARN) return;
    cJSON_AddNumberToObject(o, "beta_fast", s->beta_fast);
    cJSON_AddNumberToObject(o, "beta_slow", s->beta_slow);
    if (s->attention_factor > 0) cJSON_AddNumberToObject(o, "attention_factor", s->attention_factor);
    if (s->mscale != 0) cJSON_AddNumberToObject(o, "mscale", s->mscale);
    if (s->mscale_all_dim != 0) cJSON_AddNumberToObject(o, "mscale_all_dim", s->mscale_all_dim);
    if (s->no_truncate) cJSON_AddBoolToObject(o, "truncate", false);
}
