// checkpoints/hf.c — Hugging Face Llama directories: config.json <-> ModelConfig, tensor names, RoPE row permutation.
#include "checkpoints/hf.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "checkpoints/fsio.h"
#include "core/common.h"
#include "core/json_strict.h"

// config.json beside weights: a ringgpt run directory also holds a config.json (its flags), never weights.
bool hf_is_dir(const char *dir) {
    char path[4200];
    struct stat st;
    fs_join(path, sizeof path, dir, "config.json");
    if (stat(path, &st) != 0) return false;
    fs_join(path, sizeof path, dir, "model.safetensors");
    if (stat(path, &st) == 0) return true;
    fs_join(path, sizeof path, dir, "model.safetensors.index.json");
    return stat(path, &st) == 0;
}

// ---- names and RoPE rows ---------------------------------------------------------------------------

static const char *const NAME_MAP[][2] = {
    {"attn_norm", "input_layernorm.weight"},      {"attn.wq", "self_attn.q_proj.weight"},
    {"attn.wk", "self_attn.k_proj.weight"},       {"attn.wv", "self_attn.v_proj.weight"},
    {"attn.wo", "self_attn.o_proj.weight"},       {"mlp_norm", "post_attention_layernorm.weight"},
    {"mlp.w_gate", "mlp.gate_proj.weight"},       {"mlp.w_up", "mlp.up_proj.weight"},
    {"mlp.w_down", "mlp.down_proj.weight"}};

void hf_name(const char *name, char *out, size_t n) {
    int layer, used = 0;
    if (strcmp(name, "tok_embeddings") == 0) snprintf(out, n, "model.embed_tokens.weight");
    else if (strcmp(name, "norm") == 0) snprintf(out, n, "model.norm.weight");
    else if (strcmp(name, "lm_head") == 0) snprintf(out, n, "lm_head.weight");
    else if (sscanf(name, "layers.%d.%n", &layer, &used) == 1 && used > 0) {
        snprintf(out, n, "?%s", name);
        for (size_t i = 0; i < sizeof NAME_MAP / sizeof NAME_MAP[0]; i++)
            if (strcmp(name + used, NAME_MAP[i][0]) == 0) snprintf(out, n, "model.layers.%d.%s", layer, NAME_MAP[i][1]);
    } else snprintf(out, n, "?%s", name);
}

// (n_heads, hd/2, 2, C) <-> (n_heads, 2, hd/2, C): HF's convert_llama_weights_to_hf `permute`.
void hf_permute_rope_rows(real *w, int n_heads, int hd, int C, bool to_hf) {
    int half = hd / 2;
    real *tmp = xmalloc((size_t)hd * C * sizeof(real), "rope permutation");
    for (int h = 0; h < n_heads; h++) {
        real *head = w + (size_t)h * hd * C;
        for (int i = 0; i < half; i++)
            for (int p = 0; p < 2; p++) {
                size_t inter = (size_t)(2 * i + p), rot = (size_t)(p * half + i);   // row in each convention
                size_t dst = to_hf ? rot : inter, src = to_hf ? inter : rot;
                memcpy(tmp + dst * C, head + src * C, (size_t)C * sizeof(real));
            }
        memcpy(head, tmp, (size_t)hd * C * sizeof(real));
    }
    free(tmp);
}

// Heads of a q or k tensor (0 for every other name): those need the RoPE row permutation.
static int rope_heads(const ModelConfig *c, const char *name) {
    size_t n = strlen(name);
    if (n > 8 && strcmp(name + n - 8, ".attn.wq") == 0) return c->n_head;
    if (n > 8 && strcmp(name + n - 8, ".attn.wk") == 0) return c->n_kv_head;
    return 0;
}

// ---- config.json -----------------------------------------------------------------------------------

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
                ck_err(e, "%s: field \"%s\" is not a Llama config key; did you mean \"%s\"? (fix the name: a missing %s "
                       "would build another model)", path, c->string, known, known);
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
    const cJSON *scaling = cJSON_GetObjectItemCaseSensitive(root, "rope_scaling");
    if (scaling && !cJSON_IsNull(scaling)) {
        ck_err(e, "%s: field rope_scaling is set; only the default RoPE is supported (extend the context by "
               "fine-tuning with a larger --rope-theta instead)", path);
        return -1;
    }
    return 0;
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
    if (!(v[6] > 0 && v[6] < 1)) {
        ck_err(e, "%s: field rms_norm_eps is %g; it must be in (0, 1)", path, v[6]);
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

// ---- loading ---------------------------------------------------------------------------------------

// The safetensors files of dir: model.safetensors, or the shards named by model.safetensors.index.json.
static int open_shards(const char *dir, StFile **files, int *n, CkErr *e) {
    char path[4200];
    fs_join(path, sizeof path, dir, "model.safetensors.index.json");
    struct stat st;
    *n = 0;
    if (stat(path, &st) != 0) {
        *files = xcalloc(1, sizeof(StFile), "safetensors file");
        fs_join(path, sizeof path, dir, "model.safetensors");
        if (st_open(&(*files)[0], path, e) != 0) return -1;
        *n = 1;
        return 0;
    }
    size_t len;
    unsigned char *text = fs_read_file(path, &len, e);
    if (!text) return -1;
    cJSON *root = cJSON_Parse((const char *)text);
    free(text);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    if (!cJSON_IsObject(map)) {
        ck_err(e, "%s: field weight_map is missing or not an object", path);
        cJSON_Delete(root);
        return -1;
    }
    int cap = cJSON_GetArraySize(map), rc = 0;
    *files = xcalloc((size_t)(cap ? cap : 1), sizeof(StFile), "safetensors files");
    char **names = xcalloc((size_t)(cap ? cap : 1), sizeof(char *), "shard names");
    const cJSON *w;
    cJSON_ArrayForEach(w, map) {
        if (rc) break;
        if (!cJSON_IsString(w) || strchr(w->valuestring, '/')) {
            ck_err(e, "%s: weight_map.%s is not a file name", path, w->string);
            rc = -1;
            break;
        }
        bool seen = false;
        for (int i = 0; i < *n; i++) seen |= strcmp(names[i], w->valuestring) == 0;
        if (seen) continue;
        names[*n] = w->valuestring;
        char spath[4200];
        fs_join(spath, sizeof spath, dir, w->valuestring);
        rc = st_open(&(*files)[*n], spath, e);
        if (rc == 0) (*n)++;
    }
    free(names);
    cJSON_Delete(root);
    return rc;
}

static const StEntry *find_any(StFile *files, int n, const char *name, int *which) {
    for (int i = 0; i < n; i++) {
        const StEntry *t = st_find(&files[i], name);
        if (t) {
            *which = i;
            return t;
        }
    }
    return NULL;
}

static int load_one(StFile *files, int n, const char *dir, const ModelConfig *c, const ParamSpec *p, real *dst, CkErr *e) {
    char hname[128];
    int which = 0;
    hf_name(p->name, hname, sizeof hname);
    const StEntry *t = find_any(files, n, hname, &which);
    if (!t) {
        ck_err(e, "%s: tensor '%s' is missing%s", dir, hname,
               strcmp(p->name, "lm_head") == 0 ? " (the HF model ties its embeddings: use --tie-embeddings)" : "");
        return -1;
    }
    if (t->ndim != p->ndim || t->shape[0] != p->shape[0] || (p->ndim == 2 && t->shape[1] != p->shape[1])) {
        ck_err(e, "%s: tensor '%s' has shape (%" PRId64 ", %" PRId64 ") but the model expects (%" PRId64 ", %" PRId64
               ")", files[which].path, hname, t->shape[0], t->ndim > 1 ? t->shape[1] : 0, p->shape[0],
               p->ndim > 1 ? p->shape[1] : 0);
        return -1;
    }
    if (st_read(&files[which], t, dst, e) != 0) return -1;
    int heads = rope_heads(c, p->name);
    if (heads) hf_permute_rope_rows(dst, heads, cfg_head_dim(c), c->dim, false);
    return 0;
}

int hf_load_weights(const char *dir, GPT *m, CkErr *e) {
    StFile *files = NULL;
    int n = 0;
    int rc = open_shards(dir, &files, &n, e);
    size_t bytes = m->table.total * sizeof(real);
    real *host = xmalloc(bytes, "imported weights");
    for (const ParamSpec *p = m->table.specs; rc == 0 && p < m->table.specs + m->table.count; p++)
        rc = load_one(files, n, dir, &m->cfg, p, host + p->offset, e);
    if (rc == 0) m->be->to_device(m->params, host, bytes);
    free(host);
    for (int i = 0; i < n; i++) st_close(&files[i]);
    free(files);
    return rc;
}

// ---- saving ----------------------------------------------------------------------------------------

static char *config_json(const ModelConfig *c, StDtype dtype, int max_pos, int64_t bos, int64_t eos) {
    cJSON *r = cJSON_CreateObject();
    cJSON *arch = cJSON_AddArrayToObject(r, "architectures");
    cJSON_AddItemToArray(arch, cJSON_CreateString("LlamaForCausalLM"));
    cJSON_AddStringToObject(r, "model_type", "llama");
    cJSON_AddNumberToObject(r, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(r, "hidden_size", c->dim);
    cJSON_AddNumberToObject(r, "intermediate_size", c->ffn_dim);
    cJSON_AddNumberToObject(r, "num_hidden_layers", c->n_layer);
    cJSON_AddNumberToObject(r, "num_attention_heads", c->n_head);
    cJSON_AddNumberToObject(r, "num_key_value_heads", c->n_kv_head);
    cJSON_AddNumberToObject(r, "head_dim", cfg_head_dim(c));
    cJSON_AddStringToObject(r, "hidden_act", "silu");
    cJSON_AddNumberToObject(r, "max_position_embeddings", max_pos);
    cJSON_AddNumberToObject(r, "rms_norm_eps", c->norm_eps);
    cJSON_AddNumberToObject(r, "rope_theta", c->rope_theta);
    cJSON_AddBoolToObject(r, "attention_bias", false);
    cJSON_AddBoolToObject(r, "mlp_bias", false);
    cJSON_AddBoolToObject(r, "tie_word_embeddings", c->tie_embeddings);
    if (bos >= 0) cJSON_AddNumberToObject(r, "bos_token_id", (double)bos);   // the model's tokenizer's
    else cJSON_AddNullToObject(r, "bos_token_id");
    if (eos >= 0) cJSON_AddNumberToObject(r, "eos_token_id", (double)eos);
    else cJSON_AddNullToObject(r, "eos_token_id");
    cJSON_AddStringToObject(r, "torch_dtype", dtype == ST_BF16 ? "bfloat16" : "float32");
    char *text = cJSON_Print(r);
    cJSON_Delete(r);
    return text;
}

int hf_save(const char *dir, const GPT *m, StDtype dtype, int max_pos, int64_t bos, int64_t eos, CkErr *e) {
    const ParamTable *t = &m->table;
    size_t bytes = t->total * sizeof(real);
    real *host = xmalloc(bytes, "exported weights");
    m->be->to_host(host, m->params, bytes);
    StOut *outs = xcalloc((size_t)t->count, sizeof *outs, "tensor list");
    char (*names)[128] = xcalloc((size_t)t->count, 128, "tensor names");
    for (int i = 0; i < t->count; i++) {
        const ParamSpec *p = &t->specs[i];
        hf_name(p->name, names[i], 128);
        int heads = rope_heads(&m->cfg, p->name);
        if (heads) hf_permute_rope_rows(host + p->offset, heads, cfg_head_dim(&m->cfg), m->cfg.dim, true);
        outs[i] = (StOut){.name = names[i], .ndim = p->ndim, .shape = {p->shape[0], p->shape[1]}, .data = host + p->offset};
    }
    // Each file under .tmp, renamed when complete (weights first): a full disk never leaves a truncated file
    // under its final name, and config.json only appears beside complete weights.
    char path[4200], tmp[4300], cpath[4200], ctmp[4300];
    fs_join(path, sizeof path, dir, "model.safetensors");
    fs_join(cpath, sizeof cpath, dir, "config.json");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    snprintf(ctmp, sizeof ctmp, "%s.tmp", cpath);
    int rc = st_write(tmp, outs, t->count, dtype, NULL, 0, e);
    char *cfg = config_json(&m->cfg, dtype, max_pos, bos, eos);
    if (rc == 0) rc = fs_write_file(ctmp, cfg, strlen(cfg), e);
    if (rc == 0) rc = fs_rename(tmp, path, e);
    if (rc == 0) rc = fs_rename(ctmp, cpath, e);
    if (rc == 0) rc = fs_fsync_dir(dir, e);
    if (rc != 0) {   // leave no partial file behind
        unlink(tmp);
        unlink(ctmp);
    }
    free(cfg);
    free(names);
    free(outs);
    free(host);
    return rc;
}
