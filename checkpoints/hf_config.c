// checkpoints/hf_config.c — an HF Llama config.json read as strictly as a flag: standard JSON, a Llama and nothing else, counts in range, no typo taken for an absent key.
#include <cjson/cJSON.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/fsio.h"
#include "checkpoints/hf.h"
#include "core/common.h"
#include "core/json_strict.h"

static int get_num(const cJSON *root, const char *path, const char *key, bool required, double dflt, double *out,
                   CkErr *e) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!j || cJSON_IsNull(j)) {
        if (required) {
            ck_err(e, "%s: field %s is missing (a Llama config.json has it)", path, key);
            return -1;
        }
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble)) {
        ck_err(e, "%s: field %s is not a number", path, key);
        return -1;
    }
    *out = j->valuedouble;
    return 0;
}

// A count (layers, widths, heads, vocab, positions): a whole number in 1..2^30, as the flags allow.
static int get_count(const cJSON *root, const char *path, const char *key, bool required, double dflt, double *out,
                     CkErr *e) {
    if (get_num(root, path, key, required, dflt, out, e) != 0) return -1;
    if (*out != floor(*out) || *out < 1 || *out > (double)(1 << 30)) {
        ck_err(e, "%s: field %s is %g; it must be a whole number in 1..2^30", path, key, *out);
        return -1;
    }
    return 0;
}

// The keys ringgpt reads. A key one or two letters away from one of them, with that one absent, is a typo
// ("rms_norm_epz") that would otherwise fall back to a default and build another model: refused.
static const char *const KNOWN_KEYS[] = {"hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                                         "num_key_value_heads", "vocab_size", "rms_norm_eps", "rope_theta",
                                         "max_position_embeddings", "head_dim", "tie_word_embeddings", "hidden_act",
                                         "model_type", "architectures", "rope_scaling", "attention_bias", "mlp_bias",
                                         "rope_parameters"};

// Levenshtein distance, capped at 3 (all that matters here).
static int distance(const char *a, const char *b) {
    size_t n = strlen(a), m = strlen(b);
    if (n > 64 || m > 64 || (n > m ? n - m : m - n) > 2) return 3;
    int row[65];
    for (size_t j = 0; j <= m; j++) row[j] = (int)j;
    for (size_t i = 1; i <= n; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= m; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up, row[j] = best;
        }
    }
    return row[m] < 3 ? row[m] : 3;
}

static int check_typos(const cJSON *root, const char *path, CkErr *e) {
    for (const cJSON *c = root->child; c; c = c->next)
        for (size_t k = 0; k < sizeof KNOWN_KEYS / sizeof KNOWN_KEYS[0]; k++) {
            const char *known = KNOWN_KEYS[k];
            if (strcmp(c->string, known) == 0 || cJSON_GetObjectItemCaseSensitive(root, known)) continue;
            if (distance(c->string, known) <= 2) {
                char key[128];
                ck_err(e, "%s: field \"%s\" is not a Llama config key; did you mean \"%s\"? (fix the name: a missing %s "
                       "would build another model)", path, json_printable(c->string, key, sizeof key), known, known);
                return -1;
            }
        }
    return 0;
}

static int check_arch(const cJSON *root, const char *path, CkErr *e) {
    const cJSON *arch = cJSON_GetObjectItemCaseSensitive(root, "architectures");
    const cJSON *type = cJSON_GetObjectItemCaseSensitive(root, "model_type");
    bool arch_llama = false, arch_other = false;
    const cJSON *a;
    if (arch && !cJSON_IsArray(arch)) arch_other = true;
    cJSON_ArrayForEach(a, arch) {
        bool llama = cJSON_IsString(a) && strcmp(a->valuestring, "LlamaForCausalLM") == 0;
        arch_llama |= llama, arch_other |= !llama;
    }
    bool type_llama = cJSON_IsString(type) && strcmp(type->valuestring, "llama") == 0;
    bool type_other = type && !cJSON_IsNull(type) && !type_llama;
    // Both say Llama, or one does and the other is absent: a config that names another model anywhere is refused.
    if (!(type_llama || arch_llama) || type_other || arch_other) {
        const char *what = cJSON_IsString(type) ? type->valuestring : "(none)";
        ck_err(e, "%s: field model_type is '%s' and architectures %s; only Llama models (model_type llama, "
               "LlamaForCausalLM) can be imported", path, what, arch_other ? "names another model" : "has no LlamaForCausalLM");
        return -1;
    }
    const cJSON *act = cJSON_GetObjectItemCaseSensitive(root, "hidden_act");
    if (act && (!cJSON_IsString(act) || strcmp(act->valuestring, "silu") != 0)) {
        ck_err(e, "%s: field hidden_act is not 'silu'; ringgpt's MLP is SwiGLU", path);
        return -1;
    }
    const char *flags[] = {"attention_bias", "mlp_bias", "tie_word_embeddings"};
    for (int i = 0; i < 3; i++) {
        const cJSON *f = cJSON_GetObjectItemCaseSensitive(root, flags[i]);
        if (f && !cJSON_IsBool(f) && !cJSON_IsNull(f)) {
            ck_err(e, "%s: field %s must be true or false", path, flags[i]);
            return -1;
        }
        if (i < 2 && cJSON_IsTrue(f)) {
            ck_err(e, "%s: field %s is true; ringgpt's projections have no biases", path, flags[i]);
            return -1;
        }
    }
    return 0;
}

// config.json's scaling: rope_scaling when set, else rope_parameters (v5: also holds rope_theta).
static int read_rope_scaling(const cJSON *root, const char *path, ModelConfig *c, int max_pos, CkErr *e) {
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    char where[4300];
    snprintf(where, sizeof where, "%s: field rope_scaling", path);
    if (!o || cJSON_IsNull(o)) {
        o = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
        snprintf(where, sizeof where, "%s: field rope_parameters", path);
    }
    char why[sizeof e->msg];
    if (!rope_scaling_from_json(o, where, max_pos, &c->rope_scaling, why, sizeof why)) ck_err(e, "%s", why);
    else if (!rope_scaling_check(&c->rope_scaling, cfg_head_dim(c), why, sizeof why)) ck_err(e, "%s: %s", path, why);
    else return 0;
    return -1;
}

// rope_theta at the top level (transformers v4) or in rope_parameters (v5).
static int rope_theta_of(const cJSON *root, const char *path, double *theta, CkErr *e) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(root, "rope_parameters");
    if (cJSON_GetObjectItemCaseSensitive(root, "rope_theta") || !cJSON_IsObject(p))
        return get_num(root, path, "rope_theta", false, 10000.0, theta, e);
    return get_num(p, path, "rope_theta", false, 10000.0, theta, e);
}

static int read_dims(const cJSON *root, const char *path, ModelConfig *c, int *max_pos, CkErr *e) {
    double v[9], theta;
    if (get_count(root, path, "hidden_size", true, 0, &v[0], e) || get_count(root, path, "intermediate_size", true, 0, &v[1], e) ||
        get_count(root, path, "num_hidden_layers", true, 0, &v[2], e) ||
        get_count(root, path, "num_attention_heads", true, 0, &v[3], e) || get_count(root, path, "vocab_size", true, 0, &v[4], e))
        return -1;
    if (get_count(root, path, "num_key_value_heads", false, v[3], &v[5], e) ||
        get_num(root, path, "rms_norm_eps", true, 0, &v[6], e) ||
        get_count(root, path, "max_position_embeddings", false, 2048, &v[7], e) ||
        get_count(root, path, "head_dim", false, floor(v[0] / v[3]) > 0 ? floor(v[0] / v[3]) : 1, &v[8], e) ||
        rope_theta_of(root, path, &theta, e))
        return -1;
    if (!((float)v[6] > 0 && v[6] < 1)) {   // in float too: 1e-75 would become 0
        ck_err(e, "%s: field rms_norm_eps is %g; it must be in (0, 1) and at least %g (float)", path, v[6], (double)FLT_TRUE_MIN);
        return -1;
    }
    if (!(theta > 1 && theta < 1e30)) {
        ck_err(e, "%s: field rope_theta is %g; it must be greater than 1", path, theta);
        return -1;
    }
    *c = (ModelConfig){.dim = (int)v[0], .ffn_dim = (int)v[1], .n_layer = (int)v[2], .n_head = (int)v[3],
                       .vocab_size = (int)v[4], .n_kv_head = (int)v[5], .norm_eps = (float)v[6], .rope_theta = (float)theta};
    *max_pos = (int)v[7];
    if (v[8] * v[3] != v[0]) {
        ck_err(e, "%s: field head_dim is %g but hidden_size / num_attention_heads = %g; ringgpt needs them equal", path,
               v[8], v[0] / v[3]);
        return -1;
    }
    c->tie_embeddings = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "tie_word_embeddings"));
    return 0;
}

int hf_parse_config(const char *text, size_t len, const char *path, ModelConfig *c, int *max_pos, CkErr *e) {
    char why[512];
    cJSON *root = json_parse_strict(text, len, why, sizeof why);
    int rc = 0;
    if (!root || !cJSON_IsObject(root)) {
        ck_err(e, "%s: %s", path, root ? "not a JSON object" : why);
        rc = -1;
    }
    if (rc == 0) rc = check_typos(root, path, e);
    if (rc == 0) rc = check_arch(root, path, e);
    if (rc == 0) rc = read_dims(root, path, c, max_pos, e);
    if (rc == 0) rc = read_rope_scaling(root, path, c, *max_pos, e);
    cJSON_Delete(root);
    return rc;
}

int hf_read_config(const char *dir, ModelConfig *c, int *max_pos, CkErr *e) {
    char path[4200];
    fs_join(path, sizeof path, dir, "config.json");
    size_t len;
    unsigned char *text = fs_read_file(path, &len, e);
    if (!text) return -1;
    int rc = hf_parse_config((const char *)text, len, path, c, max_pos, e);
    free(text);
    return rc;
}
