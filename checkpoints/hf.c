// checkpoints/hf.c — Hugging Face Llama directories: tensor names, RoPE row permutation, loading and saving (config.json is read in hf_config.c).
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
#include "model/ops.h"

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

struct HfWeights {
    StFile *files;           // (n) the open safetensors files (headers read, tensors on demand)
    int n;
    ModelConfig cfg;
    const ParamTable *table;
    const StEntry **entry;   // (table->count) each table tensor's record
    int *file;               // (table->count) and the file that holds it
};

// p's tensor: present, with the table's shape and a dtype ringgpt reads.
static int find_checked(HfWeights *w, const char *dir, int i, CkErr *e) {
    const ParamSpec *p = &w->table->specs[i];
    char hname[128];
    hf_name(p->name, hname, sizeof hname);
    const StEntry *t = find_any(w->files, w->n, hname, &w->file[i]);
    if (!t) {
        ck_err(e, "%s: tensor '%s' is missing%s", dir, hname,
               strcmp(p->name, "lm_head") == 0 ? " (the HF model ties its embeddings: use --tie-embeddings)" : "");
        return -1;
    }
    if (t->ndim != p->ndim || t->shape[0] != p->shape[0] || (p->ndim == 2 && t->shape[1] != p->shape[1])) {
        ck_err(e, "%s: tensor '%s' has shape (%" PRId64 ", %" PRId64 ") but the model expects (%" PRId64 ", %" PRId64
               ")", w->files[w->file[i]].path, hname, t->shape[0], t->ndim > 1 ? t->shape[1] : 0, p->shape[0],
               p->ndim > 1 ? p->shape[1] : 0);
        return -1;
    }
    if (t->dtype == ST_OTHER) {
        ck_err(e, "%s: tensor '%s': dtype %s is not supported (use F32, BF16, F16 or F64)", w->files[w->file[i]].path, t->name,
               t->dtype_name);
        return -1;
    }
    w->entry[i] = t;
    return 0;
}

int hf_weights_open(const char *dir, const ModelConfig *c, const ParamTable *t, HfWeights **out, CkErr *e) {
    HfWeights *w = xcalloc(1, sizeof *w, "HF weights");
    w->cfg = *c, w->table = t;
    w->entry = xcalloc((size_t)t->count, sizeof *w->entry, "tensor records");
    w->file = xcalloc((size_t)t->count, sizeof *w->file, "tensor files");
    int rc = open_shards(dir, &w->files, &w->n, e);
    for (int i = 0; rc == 0 && i < t->count; i++) rc = find_checked(w, dir, i, e);
    if (rc != 0) {
        hf_weights_close(w);
        w = NULL;
    }
    *out = w;
    return rc;
}

int hf_weights_fill(const void *ctx, int i, real *dst, CkErr *e) {
    const HfWeights *w = ctx;
    const ParamSpec *p = &w->table->specs[i];
    if (st_read(&w->files[w->file[i]], w->entry[i], 0, w->entry[i]->numel, dst, e) != 0) return -1;
    int heads = rope_heads(&w->cfg, p->name);
    if (heads) hf_permute_rope_rows(dst, heads, cfg_head_dim(&w->cfg), w->cfg.dim, false);
    return 0;
}

void hf_weights_close(HfWeights *w) {
    if (!w) return;
    for (int i = 0; i < w->n; i++) st_close(&w->files[i]);
    free(w->files);
    free(w->entry);
    free(w->file);
    free(w);
}

// Table tensor i (its values in t) into this rank's slices of the weights (host, layout L's local buffer): the parts
// of each unit's slice that the tensor overlaps.
static void scatter_slices(const ShardLayout *L, const ParamSpec *p, const real *t, real *local) {
    for (int u = 0; u < L->n_units; u++) {
        size_t len, first = shard_slice(L, u, L->rank, &len);
        size_t a = first > p->offset ? first : p->offset, z = first + len < p->offset + p->numel ? first + len : p->offset + p->numel;
        if (a < z) memcpy(local + L->local_off[u] + (a - first), t + (a - p->offset), (z - a) * sizeof(real));
    }
}

// Tensor by tensor: on the CPU backend straight into the parameters, else through one tensor's staging buffer;
// st_open reads only what is asked for, so the model is held once. At SHARD_PARAMS each tensor passes through the
// staging buffer into this rank's slices (the q/k row permutation needs the whole tensor).
int hf_load_weights(const char *dir, GPT *m, CkErr *e) {
    HfWeights *w;
    if (hf_weights_open(dir, &m->cfg, &m->table, &w, e) != 0) return -1;
    const ShardLayout *L = m->shard_level == SHARD_PARAMS ? m->shard : NULL;
    bool host = m->be == &BACKEND_CPU && !L;
    real *local = L ? xcalloc(L->local_total + 1, sizeof(real), "this rank's imported slices") : NULL;   // (local_total)
    int rc = 0;
    for (int i = 0; rc == 0 && i < m->table.count; i++) {
        const ParamSpec *p = &m->table.specs[i];
        size_t bytes = p->numel * sizeof(real);
        real *dst = host ? m->params + p->offset : xmalloc(bytes, "one imported tensor");   // (numel)
        rc = hf_weights_fill(w, i, dst, e);
        if (rc == 0 && L) scatter_slices(L, p, dst, local);
        else if (rc == 0 && !host) m->be->to_device(m->params + p->offset, dst, bytes);
        if (!host) free(dst);
    }
    if (rc == 0 && L) m->be->to_device(m->params, local, L->local_total * sizeof(real));
    free(local);
    hf_weights_close(w);
    return rc;
}

// ---- metadata --------------------------------------------------------------------------------------

static const char *const META_FILES[] = {"config.json", "generation_config.json", "tokenizer_config.json",
                                         "special_tokens_map.json", "tokenizer.json"};

int hf_read_meta(const char *dir, bool keep_tokenizer, CkptMeta *m, CkErr *e) {
    *m = (CkptMeta){0};
    cJSON *root = cJSON_CreateObject();
    char path[4200];
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < sizeof META_FILES / sizeof META_FILES[0]; i++) {
        bool tokenizer = strcmp(META_FILES[i], "tokenizer.json") == 0;
        fs_join(path, sizeof path, dir, META_FILES[i]);
        if ((tokenizer && !keep_tokenizer) || access(path, R_OK) != 0) continue;
        size_t len;
        unsigned char *text = fs_read_file(path, &len, e);
        if (!text) rc = -1;
        else cJSON_AddStringToObject(root, META_FILES[i], (const char *)text);   // NUL-terminated by fs_read_file
        free(text);
    }
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, "config.json");
    cJSON *config = cJSON_IsString(c) ? cJSON_Parse(c->valuestring) : NULL;
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(config, "_name_or_path"));
    const cJSON *mp = cJSON_GetObjectItemCaseSensitive(config, "max_position_embeddings");
    if (name && name[0]) snprintf(m->name, sizeof m->name, "%s", name);
    else {   // the directory's own name, without trailing slashes
        char d[4200];
        snprintf(d, sizeof d, "%s", dir);
        for (size_t k = strlen(d); k > 1 && d[k - 1] == '/'; k--) d[k - 1] = 0;
        const char *slash = strrchr(d, '/');
        snprintf(m->name, sizeof m->name, "%s", slash && slash[1] ? slash + 1 : d);
    }
    if (cJSON_IsNumber(mp) && mp->valuedouble >= 1 && mp->valuedouble <= (double)(1 << 30)) m->max_pos = (int)mp->valuedouble;
    cJSON_Delete(config);
    if (rc == 0) {
        char *json = cJSON_Print(root);
        if (!json) fail("out of memory writing hf_meta.json");
        m->json = json;
        m->json_len = strlen(json);
    }
    cJSON_Delete(root);
    return rc;
}

char *hf_meta_file(const char *meta_json, const char *name) {
    if (!meta_json) return NULL;
    cJSON *root = cJSON_Parse(meta_json);
    const char *text = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, name));
    char *copy = text ? xstrdup(text) : NULL;
    cJSON_Delete(root);
    return copy;
}

void hf_float_text(float v, char *out, size_t n) {
    if (v == floorf(v) && fabsf(v) < 1e15f) {   // a whole number as its digits: 10000, not 1e+04
        snprintf(out, n, "%.0f", (double)v);
        return;
    }
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(out, n, "%.*g", digits, (double)v);
        if (strtof(out, NULL) == v) return;
    }
}

static void add_float(cJSON *o, const char *key, float v) {
    char text[40];
    hf_float_text(v, text, sizeof text);
    cJSON_AddRawToObject(o, key, text);
}

// A JSON number, also one added as raw text (add_float).
static bool number_of(const cJSON *j, double *v) {
    if (cJSON_IsNumber(j)) *v = j->valuedouble;
    else if (cJSON_IsRaw(j)) *v = strtod(j->valuestring, NULL);
    else return false;
    return true;
}

// The next number literal of JSON text s (outside strings), [start, *end); NULL when there is none.
static const char *next_number(const char *s, const char **end) {
    for (; *s; s++) {
        if (*s == '"') {   // a key or string: skip it, escapes included
            for (s++; *s && *s != '"'; s++)
                if (*s == '\\' && s[1]) s++;
            if (!*s) return NULL;
        } else if (*s == '-' || (*s >= '0' && *s <= '9')) {
            *end = s + strspn(s, "+-0123456789.eE");
            return s;
        }
    }
    return NULL;
}

// cJSON prints the numbers it parsed its own way (0.0 as 0, 100000.0 as 100000): every number of j, parsed from *text,
// becomes raw text of its literal there (document order, which cJSON keeps), so the original's floats stay floats.
static void keep_literals(cJSON *j, const char **text) {
    for (cJSON *c = j->child; c && *text; c = c->next) {
        if (cJSON_IsNumber(c)) {
            const char *end, *at = next_number(*text, &end);
            if (!at) {
                *text = NULL;
                return;
            }
            char *lit = xmalloc((size_t)(end - at) + 1, "config.json number");
            memcpy(lit, at, (size_t)(end - at));
            lit[end - at] = 0;
            c->type = (c->type & cJSON_StringIsConst) | cJSON_Raw;
            c->valuestring = lit;
            *text = end;
        } else if (cJSON_IsArray(c) || cJSON_IsObject(c)) keep_literals(c, text);
    }
}

// The special ids of the original (which may be lists, as Llama 3's eos) stay as they were.
static bool keeps_original(const char *key) {
    return !strcmp(key, "bos_token_id") || !strcmp(key, "eos_token_id") || !strcmp(key, "pad_token_id");
}

// fresh's keys over orig: objects key by key; a number that reads as the same float as the original's stays as
// the original wrote it; keys only orig has stay. fresh is emptied.
static void merge_into(cJSON *orig, cJSON *fresh) {
    cJSON *f = fresh->child;
    while (f) {
        cJSON *next = f->next, *o = cJSON_GetObjectItemCaseSensitive(orig, f->string);
        double a, b;
        bool same = o && number_of(o, &a) && number_of(f, &b) && (float)a == (float)b;
        if (o && cJSON_IsObject(o) && cJSON_IsObject(f)) merge_into(o, f);
        else if (!same && !(o && keeps_original(f->string))) {
            cJSON *item = cJSON_DetachItemViaPointer(fresh, f);
            if (o) cJSON_ReplaceItemViaPointer(orig, o, item);
            else cJSON_AddItemToObject(orig, item->string, item);   // cJSON copies the key before it frees the old one
        }
        f = next;
    }
}

// The RoPE type a rope_scaling / rope_parameters dict names ("rope_type", or v4's older "type"), or "".
static const char *rope_type_of(const cJSON *o) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(o, "rope_type");
    if (!cJSON_IsString(t)) t = cJSON_GetObjectItemCaseSensitive(o, "type");
    return cJSON_IsString(t) ? t->valuestring : "";
}

// r[key] = fresh, where an original dict of the same type keeps its literals (32.0 stays 32.0) and its other keys.
static void put_rope_dict(cJSON *r, const char *key, cJSON *fresh) {
    cJSON *old = cJSON_GetObjectItemCaseSensitive(r, key);
    if (cJSON_IsObject(old) && !strcmp(rope_type_of(old), rope_type_of(fresh))) {
        merge_into(old, fresh);
        cJSON_Delete(fresh);
    } else if (old) cJSON_ReplaceItemInObjectCaseSensitive(r, key, fresh);   // gives fresh the key
    else cJSON_AddItemToObject(r, key, fresh);
}

// The RoPE fields of config.json r, after the merge with an imported original: transformers v5's rope_parameters (where
// the original has it: rope_theta and the scaling's fields in it, no top-level copies), else v4's rope_theta and
// rope_scaling (only with a scaling; an original's "rope_scaling": null stays). A scaling the run changed or removed
// replaces the original's.
static void write_rope(cJSON *r, const ModelConfig *c) {
    bool scaled = c->rope_scaling.type != ROPE_DEFAULT, v5 = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(r, "rope_parameters"));
    cJSON *fresh = cJSON_CreateObject();
    if (scaled) rope_scaling_to_json(fresh, &c->rope_scaling);
    else cJSON_AddStringToObject(fresh, "rope_type", "default");
    if (v5) add_float(fresh, "rope_theta", c->rope_theta), cJSON_DeleteItemFromObjectCaseSensitive(r, "rope_theta");
    if (v5 || scaled) put_rope_dict(r, v5 ? "rope_parameters" : "rope_scaling", fresh);
    else cJSON_Delete(fresh);
    cJSON *old = cJSON_GetObjectItemCaseSensitive(r, "rope_scaling");
    if ((v5 || !scaled) && old && !cJSON_IsNull(old)) cJSON_ReplaceItemInObjectCaseSensitive(r, "rope_scaling", cJSON_CreateNull());
    if (c->rope_scaling.type == ROPE_DYNAMIC)   // HF's dynamic scales against max_position_embeddings itself
        cJSON_ReplaceItemInObjectCaseSensitive(r, "max_position_embeddings", cJSON_CreateNumber(c->rope_scaling.original_max_pos));
}

// ---- saving ----------------------------------------------------------------------------------------

static char *config_json(const ModelConfig *c, StDtype dtype, int max_pos, int64_t bos, int64_t eos, const CkptMeta *meta) {
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
    add_float(r, "rms_norm_eps", c->norm_eps);
    add_float(r, "rope_theta", c->rope_theta);
    cJSON_AddBoolToObject(r, "attention_bias", false);
    cJSON_AddBoolToObject(r, "mlp_bias", false);
    cJSON_AddBoolToObject(r, "tie_word_embeddings", c->tie_embeddings);
    if (bos >= 0) cJSON_AddNumberToObject(r, "bos_token_id", (double)bos);   // the model's tokenizer's
    else cJSON_AddNullToObject(r, "bos_token_id");
    if (eos >= 0) cJSON_AddNumberToObject(r, "eos_token_id", (double)eos);
    else cJSON_AddNullToObject(r, "eos_token_id");
    cJSON_AddStringToObject(r, "torch_dtype", dtype == ST_BF16 ? "bfloat16" : "float32");
    char *orig_text = hf_meta_file(meta ? meta->json : NULL, "config.json");
    cJSON *orig = orig_text ? cJSON_Parse(orig_text) : NULL;
    const char *at = orig_text;
    if (cJSON_IsObject(orig)) keep_literals(orig, &at);
    free(orig_text);
    if (cJSON_IsObject(orig)) {
        merge_into(orig, r);
        cJSON_Delete(r);
        r = orig;
        if (meta->name[0] && !cJSON_GetObjectItemCaseSensitive(r, "_name_or_path"))
            cJSON_AddStringToObject(r, "_name_or_path", meta->name);
    } else cJSON_Delete(orig);
    write_rope(r, c);
    char *text = cJSON_Print(r);
    cJSON_Delete(r);
    return text;
}

int hf_save(const char *dir, const GPT *m, StDtype dtype, int max_pos, int64_t bos, int64_t eos, const CkptMeta *meta,
            CkErr *e) {
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
    char *cfg = config_json(&m->cfg, dtype, max_pos, bos, eos, meta);
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
