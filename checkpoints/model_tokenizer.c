// checkpoints/model_tokenizer.c — the tokenizer a model carries: from state.json + tokenizer.json or an HF directory, and into an HF export.
#include "checkpoints/model_tokenizer.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoints/fsio.h"
#include "checkpoints/hf.h"
#include "core/common.h"
#include "tokenizer/bpe.h"

static void id_only(Tokenizer *t, const char *id, uint32_t vocab, int64_t eos) {
    *t = (Tokenizer){.vocab_size = vocab, .eos = eos, .bos = -1, .pad = -1};
    snprintf(t->id, sizeof t->id, "%s", id);
}

static void load_json(const char *path, Tokenizer *t) {
    char err[600];
    if (tokenizer_load(path, t, err, sizeof err) != 0) fail("%s", err);
}

// An integer field of dir/name, or `otherwise`.
static int64_t json_id(const char *dir, const char *name, const char *key, int64_t otherwise) {
    char path[4200];
    fs_join(path, sizeof path, dir, name);
    if (access(path, R_OK) != 0) return otherwise;
    size_t len;
    unsigned char *text = read_whole_file(path, &len);
    cJSON *root = cJSON_ParseWithLength((const char *)text, len);
    free(text);
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    int64_t id = cJSON_IsNumber(v) ? (int64_t)v->valuedouble : cJSON_IsBool(v) ? cJSON_IsTrue(v) : otherwise;
    cJSON_Delete(root);
    return id;
}

// The "ringgpt_tokenizer" a tokenizer_config.json text names (ringgpt's export of its own model; "" for any other).
static void ringgpt_tokenizer_of(const char *text, char *id, size_t n) {
    cJSON *root = text ? cJSON_Parse(text) : NULL;
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(root, "ringgpt_tokenizer"));
    snprintf(id, n, "%s", v ? v : "");
    cJSON_Delete(root);
}

// The same for dir/tokenizer_config.json.
static void dir_ringgpt_tokenizer(const char *dir, char *id, size_t n) {
    char path[4200];
    fs_join(path, sizeof path, dir, "tokenizer_config.json");
    id[0] = 0;
    if (access(path, R_OK) != 0) return;
    size_t len;
    char *text = (char *)read_whole_file(path, &len);
    ringgpt_tokenizer_of(text, id, n);
    free(text);
}

// True when dir/tokenizer_config.json says the export came from a byte260 model.
static bool exported_byte260(const char *dir) {
    char id[64];
    dir_ringgpt_tokenizer(dir, id, sizeof id);
    return strcmp(id, TOKENIZER_ID) == 0;
}

// A tokenizer.json ringgpt cannot use (a pre-tokenizer or model field it does not support, more tokens than the model,
// none at all) never refuses the model: it is known by its vocab only, with the ids config.json names, and one line
// on stderr (sample's stdout is the text) says why.
static void hf_tokenizer(const char *dir, const ModelConfig *c, Tokenizer *t) {
    char path[4200], err[600];
    fs_join(path, sizeof path, dir, TOKENIZER_FILE);
    bool present = access(path, R_OK) == 0;
    if (c->vocab_size == TOK_VOCAB_SIZE && (exported_byte260(dir) || !present)) {   // ringgpt's byte-level model
        tokenizer_bytes(t);
        return;
    }
    int64_t eos = json_id(dir, "config.json", "eos_token_id", -1), bos = json_id(dir, "config.json", "bos_token_id", -1);
    int rc = present ? tokenizer_load(path, t, err, sizeof err) : -1;
    if (!present) snprintf(err, sizeof err, "%.400s: no such file", path);
    if (rc == 0 && t->vocab_size > (uint32_t)c->vocab_size) {
        snprintf(err, sizeof err, "%.400s: has %u tokens but config.json's vocab_size is %d", path, t->vocab_size, c->vocab_size);
        tokenizer_free(t);
        rc = -1;
    }
    if (rc != 0) {
        if (log_rank() == 0)
            fprintf(stderr, "note: the tokenizer is not used (%s); the model keeps its weights and is known by its vocab of %d "
                    "only (tokenizer \"unknown\"): eval takes data of token ids, sample takes --prompt-ids\n", err, c->vocab_size);
        id_only(t, "unknown", (uint32_t)c->vocab_size, eos);
        t->bos = bos;
        return;
    }
    if (eos >= 0) t->eos = eos;
    if (bos >= 0) t->bos = bos;
    t->pad = json_id(dir, "generation_config.json", "pad_token_id", t->pad);
    t->add_bos = json_id(dir, "tokenizer_config.json", "add_bos_token", t->add_bos) == 1 && t->bos >= 0;
}

static void ckpt_tokenizer(const char *dir, const ModelConfig *c, const CkptTokenizer *r, Tokenizer *t) {
    char path[4200];
    if (!r->id[0]) {   // saved before checkpoints recorded their tokenizer
        if (c->vocab_size == TOK_VOCAB_SIZE) tokenizer_bytes(t);
        else id_only(t, "unknown", (uint32_t)c->vocab_size, -1);
        return;
    }
    if (r->has_file) {
        fs_join(path, sizeof path, dir, TOKENIZER_FILE);
        load_json(path, t);
        if (strcmp(t->id, r->id) != 0)
            fail("%s: is tokenizer %s but state.json records %s (the file was changed or damaged)", path, t->id, r->id);
    } else if (strcmp(r->id, TOKENIZER_ID) == 0) {
        tokenizer_bytes(t);
    } else {
        id_only(t, r->id, (uint32_t)c->vocab_size, r->eos);
    }
    t->eos = r->eos;
    t->bos = r->bos;
    t->pad = r->pad;
    t->add_bos = r->add_bos;
}

// The step directory of a checkpoint path: the path itself when it is one (load_model's `used`, a resume's or
// --init-from's directory: verified there, not read again), else the newest valid step of a run directory.
static void step_dir(const char *path, char *dir, size_t n) {
    char manifest[4200];
    fs_join(manifest, sizeof manifest, path, "MANIFEST.json");
    if (access(manifest, F_OK) == 0) snprintf(dir, n, "%s", path);
    else ckpt_resolve(path, dir, n, NULL);
}

void model_tokenizer(const char *path, const ModelConfig *c, const CkptState *s, Tokenizer *t) {
    char dir[4200];
    if (hf_is_dir(path)) hf_tokenizer(path, c, t);
    else {
        step_dir(path, dir, sizeof dir);
        ckpt_tokenizer(dir, c, &s->tok, t);
    }
    if (t->vocab_size > (uint32_t)c->vocab_size)
        fail("%s: its tokenizer %s has %u tokens but the model only %d (the tokenizer does not belong to this model)", path, t->id,
             t->vocab_size, c->vocab_size);
}

CkptTokenizer model_tokenizer_record(const Tokenizer *t) {
    CkptTokenizer r = {.eos = t->eos, .bos = t->bos, .pad = t->pad, .add_bos = t->add_bos, .json = t->json, .json_len = t->json_len};
    snprintf(r.id, sizeof r.id, "%s", t->id);
    return r;
}

void model_check_record(const char *state_path, const CkptTokenizer *saved, const Tokenizer *data) {
    if (tokenizer_ids_differ(saved->id, data->id))
        fail_usage("%s: the checkpoint was trained with tokenizer %s but --data uses %s; continue on data made with the same tokenizer",
                   state_path, saved->id, data->id);
}

bool model_hf_prefill(const char *path, const CkptState *s) {
    char id[64];
    if (hf_is_dir(path)) dir_ringgpt_tokenizer(path, id, sizeof id);
    else {
        if (!s->meta.has_file) return false;
        CkptMeta m;
        Tokenizer none = {.bpe = NULL};
        char *json = model_meta(path, s, &none, &m), *cfg = hf_meta_file(json, "tokenizer_config.json");
        ringgpt_tokenizer_of(cfg, id, sizeof id);
        free(cfg);
        free(json);
    }
    return !id[0];
}

char *model_meta(const char *path, const CkptState *s, const Tokenizer *t, CkptMeta *m) {
    CkErr e;
    if (hf_is_dir(path)) {
        if (hf_read_meta(path, !tokenizer_can_encode(t), m, &e) != 0) fail("%s", e.msg);
        return (char *)m->json;
    }
    *m = s->meta;
    m->json = NULL, m->json_len = 0;
    if (!m->has_file) return NULL;
    char dir[4200], file[4200];
    step_dir(path, dir, sizeof dir);
    fs_join(file, sizeof file, dir, "hf_meta.json");
    size_t len;
    char *text = (char *)fs_read_file(file, &len, &e);
    if (!text) fail("%s (the checkpoint's state.json names it)", e.msg);
    m->json = text, m->json_len = len;
    return text;
}

// ---- HF export -------------------------------------------------------------------------------------
// A special token's text for tokenizer_config.json, or JSON null.
static cJSON *token_text(const Tokenizer *t, int64_t id) {
    size_t n;
    const unsigned char *b = id >= 0 ? tokenizer_token(t, (uint32_t)id, &n) : NULL;
    if (!b) return cJSON_CreateNull();
    char *s = xmalloc(n + 1, "a token");
    memcpy(s, b, n);
    s[n] = 0;
    cJSON *j = cJSON_CreateString(s);
    free(s);
    return j;
}

static int write_json(const char *dir, const char *name, cJSON *root, CkErr *e) {
    char path[4200], *text = cJSON_Print(root);
    cJSON_Delete(root);
    fs_join(path, sizeof path, dir, name);
    int rc = text ? fs_write_file(path, text, strlen(text), e) : -1;
    if (!text) ck_err(e, "%s: out of memory", path);
    free(text);
    return rc;
}

static void add_id(cJSON *o, const char *key, int64_t id) {
    if (id >= 0) cJSON_AddNumberToObject(o, key, (double)id);
    else cJSON_AddNullToObject(o, key);
}

// dir/name as the imported text, with tokenizer_config.json's model_max_length raised to max_pos where it was below.
static int write_kept(const char *dir, const char *name, const char *text, int max_pos, CkErr *e) {
    char path[4200];
    fs_join(path, sizeof path, dir, name);
    cJSON *root = strcmp(name, "tokenizer_config.json") == 0 ? cJSON_Parse(text) : NULL;
    const cJSON *len = cJSON_GetObjectItemCaseSensitive(root, "model_max_length");
    if (cJSON_IsNumber(len) && len->valuedouble < max_pos) {
        cJSON_ReplaceItemInObjectCaseSensitive(root, "model_max_length", cJSON_CreateNumber(max_pos));
        return write_json(dir, name, root, e);
    }
    cJSON_Delete(root);
    return fs_write_file(path, text, strlen(text), e);
}

// tokenizer.json: the model's, byte260's equivalent, or the one an import could not use (given back as it was);
// *have says whether there is one.
static int export_tokenizer_json(const char *dir, const Tokenizer *t, const char *meta_json, bool *have, CkErr *e) {
    char path[4200], *kept = hf_meta_file(meta_json, TOKENIZER_FILE);
    fs_join(path, sizeof path, dir, TOKENIZER_FILE);
    int rc = 0;
    *have = true;
    if (t->json) rc = fs_write_file(path, t->json, t->json_len, e);
    else if (strcmp(t->id, TOKENIZER_ID) == 0) {
        char *json = bpe_byte260_json();
        rc = fs_write_file(path, json, strlen(json), e);
        free(json);
    } else if (kept) rc = fs_write_file(path, kept, strlen(kept), e);
    else {
        *have = false;
        log_info("note: the model's tokenizer %s came without a tokenizer.json; the export has none (AutoTokenizer cannot load it)\n", t->id);
    }
    free(kept);
    return rc;
}

// ringgpt's own tokenizer_config.json, special_tokens_map.json or generation_config.json (name) for t.
static cJSON *own_file(const Tokenizer *t, const char *name, int max_pos) {
    cJSON *o = cJSON_CreateObject();
    if (strcmp(name, "generation_config.json") == 0) {
        add_id(o, "bos_token_id", t->bos);
        add_id(o, "eos_token_id", t->eos);
        add_id(o, "pad_token_id", t->pad);
        return o;
    }
    bool cfg = strcmp(name, "tokenizer_config.json") == 0;
    if (cfg) cJSON_AddStringToObject(o, "tokenizer_class", "PreTrainedTokenizerFast");
    cJSON_AddItemToObject(o, "bos_token", token_text(t, t->bos));
    cJSON_AddItemToObject(o, "eos_token", token_text(t, t->eos));
    cJSON_AddItemToObject(o, "pad_token", token_text(t, t->pad));
    if (!cfg) return o;
    cJSON_AddBoolToObject(o, "add_bos_token", t->add_bos);
    cJSON_AddBoolToObject(o, "add_eos_token", false);
    cJSON_AddNumberToObject(o, "model_max_length", max_pos);
    cJSON_AddBoolToObject(o, "clean_up_tokenization_spaces", false);
    cJSON_AddStringToObject(o, "ringgpt_tokenizer", t->id);
    return o;
}

int model_export_tokenizer(const char *dir, const Tokenizer *t, int max_pos, const CkptMeta *meta, CkErr *e) {
    const char *meta_json = meta ? meta->json : NULL;
    bool have;
    if (export_tokenizer_json(dir, t, meta_json, &have, e) != 0) return -1;
    static const char *const NAMES[] = {"tokenizer_config.json", "special_tokens_map.json", "generation_config.json"};
    int rc = 0;
    for (int i = 0; i < 3 && rc == 0; i++) {   // what the import read stays as it was (the chat template, the special tokens)
        char *kept = hf_meta_file(meta_json, NAMES[i]);
        if (kept) rc = write_kept(dir, NAMES[i], kept, max_pos, e);
        else if (have || i == 2) rc = write_json(dir, NAMES[i], own_file(t, NAMES[i], max_pos), e);
        free(kept);
    }
    return rc;
}
