// checkpoints/ckpt_format.c — a checkpoint's text files: state.json (written, read field by field) and MANIFEST.json (written last, verified strictly).
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/checkpoint.h"
#include "checkpoints/fsio.h"
#include "core/common.h"
#include "core/json_strict.h"

// The files a checkpoint may hold, and MANIFEST.json's keys: one table each (a new file or key adds a row).
static const char *const CKPT_FILES[] = {"model.safetensors", "optim.safetensors", "state.json", "tokenizer.json",
                                         "hf_meta.json"};
static const JsonKey MANIFEST_KEYS[] = {{"format", true}, {"version", true}, {"files", true}};
static const JsonKey MANIFEST_FILE_KEYS[] = {{"name", true}, {"size", true}, {"crc32", true}};

// ---- state.json --------------------------------------------------------------------------------

static void add_model(cJSON *o, const ModelConfig *c) {
    cJSON_AddNumberToObject(o, "n_layer", c->n_layer);
    cJSON_AddNumberToObject(o, "dim", c->dim);
    cJSON_AddNumberToObject(o, "n_head", c->n_head);
    cJSON_AddNumberToObject(o, "n_kv_head", c->n_kv_head);
    cJSON_AddNumberToObject(o, "ffn_dim", c->ffn_dim);
    cJSON_AddNumberToObject(o, "vocab_size", c->vocab_size);
    cJSON_AddNumberToObject(o, "rope_theta", c->rope_theta);
    cJSON_AddNumberToObject(o, "norm_eps", c->norm_eps);
    cJSON_AddBoolToObject(o, "tie_embeddings", c->tie_embeddings);
    if (c->rope_scaling.type != ROPE_DEFAULT) rope_scaling_to_json(cJSON_AddObjectToObject(o, "rope_scaling"), &c->rope_scaling);
}

static void add_run(cJSON *o, const CkptRun *r) {
    cJSON_AddNumberToObject(o, "seq_len", r->seq_len);
    cJSON_AddNumberToObject(o, "batch", r->batch);
    cJSON_AddNumberToObject(o, "grad_accum", r->grad_accum);
    cJSON_AddNumberToObject(o, "steps", r->steps);
    cJSON_AddNumberToObject(o, "warmup", r->warmup);
    cJSON_AddNumberToObject(o, "loss_chunk", r->loss_chunk);
    cJSON_AddNumberToObject(o, "lr", r->lr);
    cJSON_AddNumberToObject(o, "min_lr", r->min_lr);
    cJSON_AddNumberToObject(o, "weight_decay", r->weight_decay);
    cJSON_AddNumberToObject(o, "beta1", r->beta1);
    cJSON_AddNumberToObject(o, "beta2", r->beta2);
    cJSON_AddNumberToObject(o, "clip", r->clip);
    cJSON_AddBoolToObject(o, "shuffle", r->shuffle);
    cJSON_AddStringToObject(o, "schedule", r->schedule);
    cJSON_AddStringToObject(o, "data", r->data);
}

static void add_tokenizer(cJSON *o, const CkptTokenizer *t) {
    cJSON_AddStringToObject(o, "id", t->id);
    cJSON_AddNumberToObject(o, "eos_id", (double)t->eos);
    cJSON_AddNumberToObject(o, "bos_id", (double)t->bos);
    cJSON_AddNumberToObject(o, "pad_id", (double)t->pad);
    cJSON_AddBoolToObject(o, "add_bos", t->add_bos);
    if (t->json) cJSON_AddStringToObject(o, "file", "tokenizer.json");
    else cJSON_AddNullToObject(o, "file");
}

static void add_meta(cJSON *o, const CkptMeta *m) {
    cJSON_AddStringToObject(o, "name", m->name);
    cJSON_AddNumberToObject(o, "max_position_embeddings", m->max_pos);
    if (m->json) cJSON_AddStringToObject(o, "file", "hf_meta.json");
    else cJSON_AddNullToObject(o, "file");
}

// A whole number as its digits: cJSON_AddNumberToObject prints 2^53 as 9.00719925474099e+15, which reads back 2 less,
// so a seed would resume on another data order.
static void add_whole(cJSON *o, const char *name, uint64_t v) {
    char digits[24];
    snprintf(digits, sizeof digits, "%" PRIu64, v);
    cJSON_AddRawToObject(o, name, digits);
}

// A signed whole number (train --seed may be negative), exactly.
static void add_signed(cJSON *o, const char *name, int64_t v) {
    char digits[24];
    snprintf(digits, sizeof digits, "%" PRId64, v);
    cJSON_AddRawToObject(o, name, digits);
}

// "shard": the level and the rank count (with the model they fix every unit and slice: model/shard.h).
static void add_shard(cJSON *o, const CkptState *s) {
    cJSON_AddStringToObject(o, "level", shard_level_name(s->shard_level));
    cJSON_AddNumberToObject(o, "ranks", s->shard_ranks);
}

// Shard file names: "shard_00003_of_00008.safetensors" (5 digits each).
void ckpt_shard_name(char *out, size_t n, int rank, int ranks) {
    snprintf(out, n, "shard_%05d_of_%05d.safetensors", rank, ranks);
}

static bool digits5(const char *s, int *v) {
    *v = 0;
    for (int i = 0; i < 5; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        *v = *v * 10 + (s[i] - '0');
    }
    return true;
}

bool ckpt_shard_parse_name(const char *name, int *rank, int *ranks) {
    return strlen(name) == 32 && strncmp(name, "shard_", 6) == 0 && digits5(name + 6, rank) &&
           strncmp(name + 11, "_of_", 4) == 0 && digits5(name + 15, ranks) && strcmp(name + 20, ".safetensors") == 0 &&
           *rank < *ranks;
}

char *ckpt_state_json(const CkptState *s) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", CKPT_FORMAT);
    cJSON_AddNumberToObject(root, "version", s->shard_ranks > 0 ? CKPT_VERSION : CKPT_VERSION_UNSHARDED);
    cJSON_AddStringToObject(root, "kind", s->kind);
    cJSON_AddNumberToObject(root, "step", (double)s->step);
    cJSON_AddNumberToObject(root, "adamw_step", s->adamw_step);
    cJSON *sched = cJSON_AddObjectToObject(root, "schedule");
    cJSON_AddNumberToObject(sched, "position", (double)s->step);
    cJSON_AddNumberToObject(sched, "next_lr", s->next_lr);
    cJSON *data = cJSON_AddObjectToObject(root, "data");
    add_whole(data, "seed", s->data.seed);
    cJSON_AddNumberToObject(data, "consumed", (double)s->data.consumed);
    cJSON_AddNumberToObject(data, "epoch", (double)s->data.epoch);
    add_signed(root, "seed", s->seed);
    cJSON *rng = cJSON_AddObjectToObject(root, "rng");
    add_signed(rng, "init_seed", s->seed);
    cJSON_AddNumberToObject(rng, "draws_after_init", 0);   // training is deterministic: no dropout, no sampling
    add_model(cJSON_AddObjectToObject(root, "model"), &s->model);
    add_run(cJSON_AddObjectToObject(root, "run"), &s->run);
    if (s->tok.id[0]) add_tokenizer(cJSON_AddObjectToObject(root, "tokenizer"), &s->tok);
    if (s->meta.name[0] || s->meta.max_pos || s->meta.json) add_meta(cJSON_AddObjectToObject(root, "meta"), &s->meta);
    cJSON *layout = cJSON_AddObjectToObject(root, "layout");
    cJSON_AddNumberToObject(layout, "dp", s->dp);
    cJSON_AddNumberToObject(layout, "sp", s->sp);
    if (s->shard_ranks > 0) add_shard(cJSON_AddObjectToObject(root, "shard"), s);
    cJSON_AddStringToObject(root, "init_from", s->init_from);
    cJSON_AddStringToObject(root, "dtype", st_dtype_name(CKPT_REAL_DTYPE));
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    return text;
}

// Field readers: a missing or mistyped field is an error naming it.
typedef struct {
    const char *path;
    CkErr *e;
    int bad;
} Reader;

static const cJSON *field(Reader *r, const cJSON *o, const char *section, const char *name, bool number) {
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, name);
    if (r->bad) return NULL;
    if (!j || (number ? !cJSON_IsNumber(j) : !(cJSON_IsString(j) || cJSON_IsBool(j) || cJSON_IsObject(j)))) {
        ck_err(r->e, "%s: field %s%s%s is missing or not a %s", r->path, section, *section ? "." : "", name,
               number ? "number" : "string/object");
        r->bad = 1;
        return NULL;
    }
    return j;
}
// A finite number that fits a float (every real-valued field is one): 1e999 parses as inf and is refused.
static double num(Reader *r, const cJSON *o, const char *section, const char *name) {
    const cJSON *j = field(r, o, section, name, true);
    if (j && !(fabs(j->valuedouble) <= 3.4e38)) {
        ck_err(r->e, "%s: field %s%s%s is %g, not a finite number", r->path, section, *section ? "." : "", name, j->valuedouble);
        r->bad = 1;
        return 0;
    }
    return j ? j->valuedouble : 0;
}
// A whole number in lo..hi (a count, a step, a seed): anything else is an error naming the field, never a cast
// of an out-of-range double.
static double whole(Reader *r, const cJSON *o, const char *section, const char *name, double lo, double hi) {
    double x = num(r, o, section, name);
    if (!r->bad && !(x == floor(x) && x >= lo && x <= hi)) {
        ck_err(r->e, "%s: field %s%s%s is %g; it must be a whole number in %.0f..%.0f", r->path, section, *section ? "." : "",
               name, x, lo, hi);
        r->bad = 1;
        return 0;
    }
    return r->bad ? 0 : x;
}
#define INT_FIELD(r, o, sec, name) (int)whole(r, o, sec, name, -2147483647.0, 2147483647.0)
#define I64_FIELD(r, o, sec, name) whole(r, o, sec, name, -9.0e18, 9.0e18)
#define U64_FIELD(r, o, sec, name) whole(r, o, sec, name, 0, 18446744073709549568.0)   // the largest double below 2^64

// data.seed: an older ringgpt took --seed -1 and wrote it as 2^64 - 1, which a JSON number (a double) holds as 2^64;
// read back as 2^64 - 1, so that such a run's weights still load (its --resume is refused by the seed's range).
static uint64_t data_seed(Reader *r, const cJSON *data) {
    double x = whole(r, data, "data", "seed", 0, 18446744073709551616.0);
    return x >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)x;
}

static void str(Reader *r, const cJSON *o, const char *section, const char *name, char *dst, size_t n) {
    const cJSON *j = field(r, o, section, name, false);
    if (j && cJSON_IsString(j)) snprintf(dst, n, "%s", j->valuestring);
}
static const cJSON *obj(Reader *r, const cJSON *o, const char *name) {
    const cJSON *j = field(r, o, "", name, false);
    if (j && !cJSON_IsObject(j) && !r->bad) {
        ck_err(r->e, "%s: field %s is not an object", r->path, name);
        r->bad = 1;
    }
    return j;
}

static void parse_model(Reader *r, const cJSON *o, ModelConfig *c) {
    c->n_layer = INT_FIELD(r, o, "model", "n_layer");
    c->dim = INT_FIELD(r, o, "model", "dim");
    c->n_head = INT_FIELD(r, o, "model", "n_head");
    c->n_kv_head = INT_FIELD(r, o, "model", "n_kv_head");
    c->ffn_dim = INT_FIELD(r, o, "model", "ffn_dim");
    c->vocab_size = INT_FIELD(r, o, "model", "vocab_size");
    c->rope_theta = (float)num(r, o, "model", "rope_theta");
    c->norm_eps = (float)num(r, o, "model", "norm_eps");
    const cJSON *t = field(r, o, "model", "tie_embeddings", false);
    c->tie_embeddings = t && cJSON_IsTrue(t);
    // Optional: older checkpoints have no rope_scaling (the default RoPE). HF's dict, original context included.
    char where[4300];
    snprintf(where, sizeof where, "%s: field model.rope_scaling", r->path);
    char why[sizeof r->e->msg];
    if (!r->bad && !rope_scaling_from_json(cJSON_GetObjectItemCaseSensitive(o, "rope_scaling"), where, 0, &c->rope_scaling,
                                           why, sizeof why)) {
        ck_err(r->e, "%s", why);
        r->bad = 1;
    }
}

// Optional: older checkpoints have no "tokenizer" (id stays "").
static void parse_tokenizer(Reader *r, const cJSON *o, CkptTokenizer *t) {
    t->eos = t->bos = t->pad = -1;
    if (!o) return;
    if (!cJSON_IsObject(o)) {
        ck_err(r->e, "%s: field tokenizer is not an object", r->path);
        r->bad = 1;
        return;
    }
    str(r, o, "tokenizer", "id", t->id, sizeof t->id);
    t->eos = (int64_t)I64_FIELD(r, o, "tokenizer", "eos_id");
    t->bos = (int64_t)I64_FIELD(r, o, "tokenizer", "bos_id");
    t->pad = (int64_t)I64_FIELD(r, o, "tokenizer", "pad_id");
    const cJSON *add = field(r, o, "tokenizer", "add_bos", false), *file = cJSON_GetObjectItemCaseSensitive(o, "file");
    t->add_bos = add && cJSON_IsTrue(add);
    t->has_file = cJSON_IsString(file) && strcmp(file->valuestring, "tokenizer.json") == 0;
}

// Optional: older checkpoints and models trained from scratch have no "meta".
static void parse_meta(Reader *r, const cJSON *o, CkptMeta *m) {
    if (!o) return;
    if (!cJSON_IsObject(o)) {
        ck_err(r->e, "%s: field meta is not an object", r->path);
        r->bad = 1;
        return;
    }
    str(r, o, "meta", "name", m->name, sizeof m->name);
    m->max_pos = (int)whole(r, o, "meta", "max_position_embeddings", 0, 1 << 30);
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(o, "file");
    m->has_file = cJSON_IsString(file) && strcmp(file->valuestring, "hf_meta.json") == 0;
}

static void parse_run(Reader *r, const cJSON *o, CkptRun *x) {
    x->seq_len = INT_FIELD(r, o, "run", "seq_len");
    x->batch = INT_FIELD(r, o, "run", "batch");
    x->grad_accum = INT_FIELD(r, o, "run", "grad_accum");
    x->steps = INT_FIELD(r, o, "run", "steps");
    x->warmup = INT_FIELD(r, o, "run", "warmup");
    x->loss_chunk = INT_FIELD(r, o, "run", "loss_chunk");
    x->lr = (float)num(r, o, "run", "lr");
    x->min_lr = (float)num(r, o, "run", "min_lr");
    x->weight_decay = (float)num(r, o, "run", "weight_decay");
    x->beta1 = (float)num(r, o, "run", "beta1");
    x->beta2 = (float)num(r, o, "run", "beta2");
    x->clip = (float)num(r, o, "run", "clip");
    const cJSON *shuffle = field(r, o, "run", "shuffle", false);
    x->shuffle = shuffle && cJSON_IsTrue(shuffle);
    str(r, o, "run", "schedule", x->schedule, sizeof x->schedule);
    str(r, o, "run", "data", x->data, sizeof x->data);
}

// Version 2 has "shard" (its level and rank count), version 1 none.
static void parse_shard(Reader *r, const cJSON *o, CkptState *s) {
    if (r->bad || (!o && s->version == CKPT_VERSION_UNSHARDED)) return;
    if (!cJSON_IsObject(o) || s->version != CKPT_VERSION) {
        ck_err(r->e, "%s: field shard is %s in a version %d checkpoint (damaged?)", r->path,
               !o ? "missing" : cJSON_IsObject(o) ? "present" : "not an object", s->version);
        r->bad = 1;
        return;
    }
    char level[16] = "";
    str(r, o, "shard", "level", level, sizeof level);
    s->shard_ranks = (int)whole(r, o, "shard", "ranks", 1, 99999);
    if (!r->bad && (!shard_level_parse(level, &s->shard_level) || s->shard_level == SHARD_NONE)) {
        ck_err(r->e, "%s: field shard.level is '%s', expected optim, grads or params", r->path, level);
        r->bad = 1;
    }
}

int ckpt_state_parse(const char *text, const char *path, CkptState *s, CkErr *e) {
    memset(s, 0, sizeof *s);
    cJSON *root = cJSON_Parse(text);
    if (!cJSON_IsObject(root)) {
        ck_err(e, "%s: not a valid JSON object", path);
        cJSON_Delete(root);
        return -1;
    }
    Reader r = {path, e, 0};
    char format[64] = "";
    str(&r, root, "", "format", format, sizeof format);
    s->version = INT_FIELD(&r, root, "", "version");
    if (!r.bad && strcmp(format, CKPT_FORMAT) != 0) {
        ck_err(e, "%s: field format is '%s', expected '%s'", path, format, CKPT_FORMAT);
        r.bad = 1;
    }
    if (!r.bad && (s->version < CKPT_VERSION_UNSHARDED || s->version > CKPT_VERSION)) {
        ck_err(e, "%s: field version is %d; this ringgpt reads checkpoint versions %d and %d (use a matching ringgpt)",
               path, s->version, CKPT_VERSION_UNSHARDED, CKPT_VERSION);
        r.bad = 1;
    }
    str(&r, root, "", "kind", s->kind, sizeof s->kind);
    s->step = (int64_t)I64_FIELD(&r, root, "", "step");
    s->adamw_step = INT_FIELD(&r, root, "", "adamw_step");
    s->seed = (int64_t)I64_FIELD(&r, root, "", "seed");
    const cJSON *sched = obj(&r, root, "schedule"), *data = obj(&r, root, "data"), *model = obj(&r, root, "model");
    const cJSON *run = obj(&r, root, "run"), *layout = obj(&r, root, "layout");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, "tokenizer"), *meta = cJSON_GetObjectItemCaseSensitive(root, "meta");
    if (!r.bad) {
        s->next_lr = num(&r, sched, "schedule", "next_lr");
        s->data.seed = data_seed(&r, data);
        s->data.consumed = (uint64_t)U64_FIELD(&r, data, "data", "consumed");
        s->data.epoch = (uint64_t)U64_FIELD(&r, data, "data", "epoch");
        parse_model(&r, model, &s->model);
        parse_run(&r, run, &s->run);
        s->dp = INT_FIELD(&r, layout, "layout", "dp");
        s->sp = INT_FIELD(&r, layout, "layout", "sp");
        str(&r, root, "", "init_from", s->init_from, sizeof s->init_from);
        parse_tokenizer(&r, tok, &s->tok);
        parse_meta(&r, meta, &s->meta);
        parse_shard(&r, cJSON_GetObjectItemCaseSensitive(root, "shard"), s);
    }
    if (!r.bad && strcmp(s->kind, "train") != 0 && strcmp(s->kind, "weights") != 0) {
        ck_err(e, "%s: field kind is '%s', expected 'train' or 'weights'", path, s->kind);
        r.bad = 1;
    }
    cJSON_Delete(root);
    return r.bad ? -1 : 0;
}

int ckpt_read_state(const char *dir, CkptState *s, CkErr *e) {
    char path[4200];
    fs_join(path, sizeof path, dir, "state.json");
    size_t len;
    unsigned char *text = fs_read_file(path, &len, e);
    if (!text) return -1;
    int rc = ckpt_state_parse((const char *)text, path, s, e);
    free(text);
    return rc;
}

// ---- manifest ----------------------------------------------------------------------------------

static void add_file(cJSON *files, const char *name, uint64_t size, uint32_t crc) {
    char hex[16];
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "name", name);
    cJSON_AddNumberToObject(f, "size", (double)size);
    snprintf(hex, sizeof hex, "%08x", crc);
    cJSON_AddStringToObject(f, "crc32", hex);
    cJSON_AddItemToArray(files, f);
}

int ckpt_write_manifest(const char *tmp, const char *const *files_in, int n_files, const CkptFileSum *shards, int n_shards,
                        CkErr *e) {
    cJSON *root = cJSON_CreateObject(), *files = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "format", CKPT_FORMAT);
    cJSON_AddNumberToObject(root, "version", n_shards > 0 ? CKPT_VERSION : CKPT_VERSION_UNSHARDED);
    cJSON_AddItemToObject(root, "files", files);
    char path[4200];
    for (int i = 0; i < n_files; i++) {
        fs_join(path, sizeof path, tmp, files_in[i]);
        uint32_t crc;
        uint64_t size;
        if (fs_crc32_file(path, &crc, &size, e) != 0) {
            cJSON_Delete(root);
            return -1;
        }
        add_file(files, files_in[i], size, crc);
    }
    for (int i = 0; i < n_shards; i++) add_file(files, shards[i].name, shards[i].size, shards[i].crc32);
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    fs_join(path, sizeof path, tmp, "MANIFEST.json");
    int rc = text ? fs_write_file(path, text, strlen(text), e) : -1;
    if (!text) ck_err(e, "%s: out of memory", path);
    free(text);
    return rc;
}

static bool is_ckpt_file(const char *name) {
    int rank, ranks;
    for (size_t i = 0; i < sizeof CKPT_FILES / sizeof CKPT_FILES[0]; i++)
        if (strcmp(CKPT_FILES[i], name) == 0) return true;
    return ckpt_shard_parse_name(name, &rank, &ranks);
}

// Exactly 8 lowercase hex digits, as the writer prints them (a case flip must not pass).
static bool is_crc_text(const char *s) {
    for (int i = 0; i < 8; i++)
        if (!s[i] || !strchr("0123456789abcdef", s[i])) return false;
    return s[8] == 0;
}

// Files[i]'s record; with bytes, also the file's size and CRC32 against it.
static int verify_entry(const char *dir, const char *mpath, const cJSON *f, int i, bool bytes_too, CkErr *e) {
    char where[32], why[256];
    snprintf(where, sizeof where, "files[%d]", i);
    if (json_check_keys(f, MANIFEST_FILE_KEYS, sizeof MANIFEST_FILE_KEYS / sizeof MANIFEST_FILE_KEYS[0], where, why,
                        sizeof why) != 0) {
        ck_err(e, "%s: %s (the manifest is damaged)", mpath, why);
        return -1;
    }
    const cJSON *name = cJSON_GetObjectItemCaseSensitive(f, "name"), *size = cJSON_GetObjectItemCaseSensitive(f, "size");
    const cJSON *crc = cJSON_GetObjectItemCaseSensitive(f, "crc32");
    if (!cJSON_IsString(name) || !is_ckpt_file(name->valuestring) || !cJSON_IsNumber(size) || size->valuedouble < 0 ||
        size->valuedouble > 1e18 || size->valuedouble != floor(size->valuedouble) || !cJSON_IsString(crc) || !is_crc_text(crc->valuestring)) {
        ck_err(e, "%s: files[%d] needs name (one of the checkpoint's files), size (bytes) and crc32 (8 hex digits); the "
               "manifest is damaged", mpath, i);
        return -1;
    }
    if (!bytes_too) return 0;
    char path[4200];
    fs_join(path, sizeof path, dir, name->valuestring);
    uint32_t got;
    uint64_t bytes;
    if (fs_crc32_file(path, &got, &bytes, e) != 0) return -1;
    if (bytes != (uint64_t)size->valuedouble) {
        ck_err(e, "%s: size is %" PRIu64 " bytes, the manifest says %.0f (truncated or incomplete)", path, bytes,
               size->valuedouble);
        return -1;
    }
    unsigned long want = strtoul(crc->valuestring, NULL, 16);
    if (got != (uint32_t)want) {
        ck_err(e, "%s: CRC32 is %08x, the manifest says %s (the file is damaged)", path, got, crc->valuestring);
        return -1;
    }
    return 0;
}

// The manifest's own text: exactly what ckpt_write_manifest printed, known keys, the format and version.
static cJSON *parse_manifest(const char *mpath, const char *text, size_t len, CkErr *e) {
    char why[256];
    cJSON *root = json_parse_exact(text, len, 0, why, sizeof why);
    if (!root || json_check_keys(root, MANIFEST_KEYS, sizeof MANIFEST_KEYS / sizeof MANIFEST_KEYS[0], "the manifest", why,
                                 sizeof why) != 0) {
        ck_err(e, "%s: %s; the checkpoint is damaged", mpath, why);
        cJSON_Delete(root);
        return NULL;
    }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format"), *ver = cJSON_GetObjectItemCaseSensitive(root, "version");
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, CKPT_FORMAT) != 0) {
        ck_err(e, "%s: field format is not \"%s\" (damaged, or not a ringgpt checkpoint)", mpath, CKPT_FORMAT);
    } else if (!cJSON_IsNumber(ver) || (ver->valuedouble != CKPT_VERSION && ver->valuedouble != CKPT_VERSION_UNSHARDED)) {
        ck_err(e, "%s: field version is %g; this ringgpt reads versions %d and %d", mpath,
               cJSON_IsNumber(ver) ? ver->valuedouble : -1.0, CKPT_VERSION_UNSHARDED, CKPT_VERSION);
    } else if (!cJSON_IsArray(files)) {
        ck_err(e, "%s: field files is not a list (the manifest is damaged)", mpath);
    } else {
        return root;
    }
    cJSON_Delete(root);
    return NULL;
}

int ckpt_verify_manifest_text(const char *dir, const char *text, size_t len, int part, int parts, CkErr *e) {
    char mpath[4200];
    fs_join(mpath, sizeof mpath, dir, "MANIFEST.json");
    cJSON *root = parse_manifest(mpath, text, len, e);
    if (!root) return -1;
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
    bool have_model = false, have_state = false;
    int i = 0, rc = 0, shards = 0, ranks = 0, rank, n;
    bool mixed = false;   // shard files of two rank counts
    for (const cJSON *f = files->child; f && rc == 0; f = f->next, i++) {
        rc = verify_entry(dir, mpath, f, i, i % parts == part, e);
        const char *name = rc == 0 ? cJSON_GetObjectItemCaseSensitive(f, "name")->valuestring : "";
        for (const cJSON *g = files->child; rc == 0 && g != f; g = g->next)
            if (strcmp(cJSON_GetObjectItemCaseSensitive(g, "name")->valuestring, name) == 0) {
                ck_err(e, "%s: lists %s twice (the manifest is damaged)", mpath, name);
                rc = -1;
            }
        if (rc == 0 && strcmp(name, "model.safetensors") == 0) have_model = true;
        if (rc == 0 && strcmp(name, "state.json") == 0) have_state = true;
        if (rc == 0 && ckpt_shard_parse_name(name, &rank, &n)) {
            mixed |= shards++ > 0 && n != ranks;
            ranks = n;
        }
    }
    // A sharded checkpoint (version 2) lists the files of ranks 0 .. N-1 of one N (each once: no name twice); the
    // weights are in model.safetensors unless they were sharded too (state.json's shard.level: the loader checks).
    double version = cJSON_GetObjectItemCaseSensitive(root, "version")->valuedouble;
    if (rc == 0 && mixed) {
        ck_err(e, "%s: lists shard files of two rank counts (the manifest is damaged)", mpath);
        rc = -1;
    } else if (rc == 0 && (shards != ranks || (shards > 0) != (version == CKPT_VERSION))) {
        ck_err(e, "%s: lists %d shard files of %d ranks in a version %g manifest (the checkpoint is damaged or incomplete)",
               mpath, shards, ranks, version);
        rc = -1;
    } else if (rc == 0 && ((!have_model && !shards) || !have_state)) {
        ck_err(e, "%s: does not list %s", mpath, have_state ? "model.safetensors" : "state.json");
        rc = -1;
    }
    cJSON_Delete(root);
    return rc;
}

