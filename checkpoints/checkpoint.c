// checkpoints/checkpoint.c — checkpoint directories: atomic save, manifest verification, newest-valid lookup, load by name.
#include "checkpoints/checkpoint.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoints/fsio.h"
#include "core/common.h"
#include "core/json_strict.h"
#include "model/ops.h"

// The files a checkpoint may hold, and MANIFEST.json's keys: one table each (a new file or key adds a row).
static const char *const CKPT_FILES[] = {"model.safetensors", "optim.safetensors", "state.json", "tokenizer.json"};
static const JsonKey MANIFEST_KEYS[] = {{"format", true}, {"version", true}, {"files", true}};
static const JsonKey MANIFEST_FILE_KEYS[] = {{"name", true}, {"size", true}, {"crc32", true}};
static const StDtype REAL_DTYPE = sizeof(real) == 4 ? ST_F32 : ST_F64;

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

char *ckpt_state_json(const CkptState *s) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", CKPT_FORMAT);
    cJSON_AddNumberToObject(root, "version", CKPT_VERSION);
    cJSON_AddStringToObject(root, "kind", s->kind);
    cJSON_AddNumberToObject(root, "step", (double)s->step);
    cJSON_AddNumberToObject(root, "adamw_step", s->adamw_step);
    cJSON *sched = cJSON_AddObjectToObject(root, "schedule");
    cJSON_AddNumberToObject(sched, "position", (double)s->step);
    cJSON_AddNumberToObject(sched, "next_lr", s->next_lr);
    cJSON *data = cJSON_AddObjectToObject(root, "data");
    cJSON_AddNumberToObject(data, "seed", (double)s->data.seed);
    cJSON_AddNumberToObject(data, "consumed", (double)s->data.consumed);
    cJSON_AddNumberToObject(data, "epoch", (double)s->data.epoch);
    cJSON_AddNumberToObject(root, "seed", (double)s->seed);
    cJSON *rng = cJSON_AddObjectToObject(root, "rng");
    cJSON_AddNumberToObject(rng, "init_seed", (double)s->seed);
    cJSON_AddNumberToObject(rng, "draws_after_init", 0);   // training is deterministic: no dropout, no sampling
    add_model(cJSON_AddObjectToObject(root, "model"), &s->model);
    add_run(cJSON_AddObjectToObject(root, "run"), &s->run);
    if (s->tok.id[0]) add_tokenizer(cJSON_AddObjectToObject(root, "tokenizer"), &s->tok);
    cJSON *layout = cJSON_AddObjectToObject(root, "layout");
    cJSON_AddNumberToObject(layout, "dp", s->dp);
    cJSON_AddNumberToObject(layout, "sp", s->sp);
    cJSON_AddStringToObject(root, "init_from", s->init_from);
    cJSON_AddStringToObject(root, "dtype", st_dtype_name(REAL_DTYPE));
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
static double num(Reader *r, const cJSON *o, const char *section, const char *name) {
    const cJSON *j = field(r, o, section, name, true);
    return j ? j->valuedouble : 0;
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
    c->n_layer = (int)num(r, o, "model", "n_layer");
    c->dim = (int)num(r, o, "model", "dim");
    c->n_head = (int)num(r, o, "model", "n_head");
    c->n_kv_head = (int)num(r, o, "model", "n_kv_head");
    c->ffn_dim = (int)num(r, o, "model", "ffn_dim");
    c->vocab_size = (int)num(r, o, "model", "vocab_size");
    c->rope_theta = (float)num(r, o, "model", "rope_theta");
    c->norm_eps = (float)num(r, o, "model", "norm_eps");
    const cJSON *t = field(r, o, "model", "tie_embeddings", false);
    c->tie_embeddings = t && cJSON_IsTrue(t);
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
    t->eos = (int64_t)num(r, o, "tokenizer", "eos_id");
    t->bos = (int64_t)num(r, o, "tokenizer", "bos_id");
    t->pad = (int64_t)num(r, o, "tokenizer", "pad_id");
    const cJSON *add = field(r, o, "tokenizer", "add_bos", false), *file = cJSON_GetObjectItemCaseSensitive(o, "file");
    t->add_bos = add && cJSON_IsTrue(add);
    t->has_file = cJSON_IsString(file) && strcmp(file->valuestring, "tokenizer.json") == 0;
}

static void parse_run(Reader *r, const cJSON *o, CkptRun *x) {
    x->seq_len = (int)num(r, o, "run", "seq_len");
    x->batch = (int)num(r, o, "run", "batch");
    x->grad_accum = (int)num(r, o, "run", "grad_accum");
    x->steps = (int)num(r, o, "run", "steps");
    x->warmup = (int)num(r, o, "run", "warmup");
    x->loss_chunk = (int)num(r, o, "run", "loss_chunk");
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
    s->version = (int)num(&r, root, "", "version");
    if (!r.bad && strcmp(format, CKPT_FORMAT) != 0) {
        ck_err(e, "%s: field format is '%s', expected '%s'", path, format, CKPT_FORMAT);
        r.bad = 1;
    }
    if (!r.bad && s->version != CKPT_VERSION) {
        ck_err(e, "%s: field version is %d; this ringgpt reads checkpoint version %d (convert it or use a matching ringgpt)",
               path, s->version, CKPT_VERSION);
        r.bad = 1;
    }
    str(&r, root, "", "kind", s->kind, sizeof s->kind);
    s->step = (int64_t)num(&r, root, "", "step");
    s->adamw_step = (int)num(&r, root, "", "adamw_step");
    s->seed = (int64_t)num(&r, root, "", "seed");
    const cJSON *sched = obj(&r, root, "schedule"), *data = obj(&r, root, "data"), *model = obj(&r, root, "model");
    const cJSON *run = obj(&r, root, "run"), *layout = obj(&r, root, "layout");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, "tokenizer");
    if (!r.bad) {
        s->next_lr = num(&r, sched, "schedule", "next_lr");
        s->data.seed = (uint64_t)num(&r, data, "data", "seed");
        s->data.consumed = (uint64_t)num(&r, data, "data", "consumed");
        s->data.epoch = (uint64_t)num(&r, data, "data", "epoch");
        parse_model(&r, model, &s->model);
        parse_run(&r, run, &s->run);
        s->dp = (int)num(&r, layout, "layout", "dp");
        s->sp = (int)num(&r, layout, "layout", "sp");
        str(&r, root, "", "init_from", s->init_from, sizeof s->init_from);
        parse_tokenizer(&r, tok, &s->tok);
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

static int write_manifest(const char *tmp, bool with_optim, bool with_tokenizer, CkErr *e) {
    cJSON *root = cJSON_CreateObject(), *files = cJSON_CreateArray();
    cJSON_AddStringToObject(root, "format", CKPT_FORMAT);
    cJSON_AddNumberToObject(root, "version", CKPT_VERSION);
    cJSON_AddItemToObject(root, "files", files);
    char path[4200], hex[16];
    for (size_t i = 0; i < sizeof CKPT_FILES / sizeof CKPT_FILES[0]; i++) {
        if (!with_optim && strcmp(CKPT_FILES[i], "optim.safetensors") == 0) continue;
        if (!with_tokenizer && strcmp(CKPT_FILES[i], "tokenizer.json") == 0) continue;
        fs_join(path, sizeof path, tmp, CKPT_FILES[i]);
        uint32_t crc;
        uint64_t size;
        if (fs_crc32_file(path, &crc, &size, e) != 0) {
            cJSON_Delete(root);
            return -1;
        }
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "name", CKPT_FILES[i]);
        cJSON_AddNumberToObject(f, "size", (double)size);
        snprintf(hex, sizeof hex, "%08x", crc);
        cJSON_AddStringToObject(f, "crc32", hex);
        cJSON_AddItemToArray(files, f);
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    fs_join(path, sizeof path, tmp, "MANIFEST.json");
    int rc = text ? fs_write_file(path, text, strlen(text), e) : -1;
    if (!text) ck_err(e, "%s: out of memory", path);
    free(text);
    return rc;
}

static bool is_ckpt_file(const char *name) {
    for (size_t i = 0; i < sizeof CKPT_FILES / sizeof CKPT_FILES[0]; i++)
        if (strcmp(CKPT_FILES[i], name) == 0) return true;
    return false;
}

// Exactly 8 lowercase hex digits, as the writer prints them (a case flip must not pass).
static bool is_crc_text(const char *s) {
    for (int i = 0; i < 8; i++)
        if (!s[i] || !strchr("0123456789abcdef", s[i])) return false;
    return s[8] == 0;
}

static int verify_entry(const char *dir, const char *mpath, const cJSON *f, int i, CkErr *e) {
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
        size->valuedouble != (double)(uint64_t)size->valuedouble || !cJSON_IsString(crc) || !is_crc_text(crc->valuestring)) {
        ck_err(e, "%s: files[%d] needs name (one of the checkpoint's files), size (bytes) and crc32 (8 hex digits); the "
               "manifest is damaged", mpath, i);
        return -1;
    }
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

// The manifest's own text: exactly what write_manifest printed, known keys, the format and version.
static cJSON *read_manifest(const char *mpath, CkErr *e) {
    size_t len;
    unsigned char *text = fs_read_file(mpath, &len, e);
    if (!text) {
        if (strstr(e->msg, "No such file")) ck_err(e, "%s: missing (the checkpoint is incomplete)", mpath);
        return NULL;
    }
    char why[256];
    cJSON *root = json_parse_exact((const char *)text, len, 0, why, sizeof why);
    free(text);
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
    } else if (!cJSON_IsNumber(ver) || ver->valuedouble != CKPT_VERSION) {
        ck_err(e, "%s: field version is %g; this ringgpt reads version %d", mpath, cJSON_IsNumber(ver) ? ver->valuedouble : -1.0,
               CKPT_VERSION);
    } else if (!cJSON_IsArray(files)) {
        ck_err(e, "%s: field files is not a list (the manifest is damaged)", mpath);
    } else {
        return root;
    }
    cJSON_Delete(root);
    return NULL;
}

int ckpt_verify(const char *dir, CkErr *e) {
    char mpath[4200];
    fs_join(mpath, sizeof mpath, dir, "MANIFEST.json");
    cJSON *root = read_manifest(mpath, e);
    if (!root) return -1;
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(root, "files");
    bool have_model = false, have_state = false;
    int i = 0, rc = 0;
    for (const cJSON *f = files->child; f && rc == 0; f = f->next, i++) {
        rc = verify_entry(dir, mpath, f, i, e);
        const char *name = rc == 0 ? cJSON_GetObjectItemCaseSensitive(f, "name")->valuestring : "";
        for (const cJSON *g = files->child; rc == 0 && g != f; g = g->next)
            if (strcmp(cJSON_GetObjectItemCaseSensitive(g, "name")->valuestring, name) == 0) {
                ck_err(e, "%s: lists %s twice (the manifest is damaged)", mpath, name);
                rc = -1;
            }
        if (rc == 0 && strcmp(name, "model.safetensors") == 0) have_model = true;
        if (rc == 0 && strcmp(name, "state.json") == 0) have_state = true;
    }
    if (rc == 0 && (!have_model || !have_state)) {
        ck_err(e, "%s: does not list %s", mpath, have_model ? "state.json" : "model.safetensors");
        rc = -1;
    }
    cJSON_Delete(root);
    return rc;
}

// ---- saving ------------------------------------------------------------------------------------

// A host copy of a parameter-shaped backend buffer (the buffer itself on the CPU backend). Free with host_done.
static const real *host_copy(const GPT *m, const real *buf, real **owned) {
    *owned = NULL;
    if (m->be == &BACKEND_CPU) return buf;
    size_t bytes = m->table.total * sizeof(real);
    *owned = xmalloc(bytes, "checkpoint staging buffer");
    m->be->to_host(*owned, buf, bytes);
    return *owned;
}

static int write_model(const char *dir, const GPT *m, const CkptState *s, CkErr *e) {
    const ParamTable *t = &m->table;
    real *owned;
    const real *params = host_copy(m, m->params, &owned);
    StOut *outs = xcalloc((size_t)t->count, sizeof *outs, "tensor list");
    for (int i = 0; i < t->count; i++) {
        const ParamSpec *p = &t->specs[i];
        outs[i] = (StOut){.name = p->name, .ndim = p->ndim, .shape = {p->shape[0], p->shape[1]}, .data = params + p->offset};
    }
    char path[4200], step[32];
    fs_join(path, sizeof path, dir, "model.safetensors");
    snprintf(step, sizeof step, "%" PRId64, s->step);
    const char *meta[] = {"ringgpt", "model", "step", step};
    fs_kill_mid_write_point = 2;
    int rc = st_write(path, outs, t->count, REAL_DTYPE, meta, 2, e);
    free(outs);
    free(owned);
    return rc;
}

// m.<name> and v.<name> for every table tensor (fp32 here; a lower-precision model adds master.<name>).
static int write_optim(const char *dir, const GPT *m, const AdamW *opt, CkErr *e) {
    const ParamTable *t = &m->table;
    real *owned_m, *owned_v;
    const real *mom[2] = {host_copy(m, opt->m, &owned_m), host_copy(m, opt->v, &owned_v)};
    StOut *outs = xcalloc((size_t)t->count * 2, sizeof *outs, "tensor list");
    char (*names)[80] = xcalloc((size_t)t->count * 2, 80, "tensor names");
    for (int i = 0; i < 2 * t->count; i++) {
        const ParamSpec *p = &t->specs[i % t->count];
        bool first = i < t->count;
        snprintf(names[i], 80, "%s.%s", first ? "m" : "v", p->name);
        outs[i] = (StOut){.name = names[i], .ndim = p->ndim, .shape = {p->shape[0], p->shape[1]},
                          .data = mom[first ? 0 : 1] + p->offset};
    }
    char path[4200], step[32];
    fs_join(path, sizeof path, dir, "optim.safetensors");
    snprintf(step, sizeof step, "%d", opt->step);
    const char *meta[] = {"ringgpt", "adamw", "adamw_step", step};
    fs_kill_mid_write_point = 4;
    int rc = st_write(path, outs, 2 * t->count, REAL_DTYPE, meta, 2, e);
    free(outs);
    free(names);
    free(owned_m);
    free(owned_v);
    return rc;
}

// True for "step_" followed by digits only (a committed checkpoint); *step gets the number.
static bool is_step_name(const char *name, int64_t *step) {
    if (strncmp(name, "step_", 5) != 0 || !name[5]) return false;
    for (const char *p = name + 5; *p; p++)
        if (*p < '0' || *p > '9') return false;
    *step = strtoll(name + 5, NULL, 10);
    return true;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

// Removes OUT/*.tmp directories left by saves that crashed.
static int remove_stale_tmp(const char *out, CkErr *e) {
    DIR *d = opendir(out);
    if (!d) {
        ck_err(e, "%s: cannot open directory (%s)", out, strerror(errno));
        return -1;
    }
    struct dirent *de;
    char path[4200];
    int rc = 0;
    while (rc == 0 && (de = readdir(d)) != NULL) {
        if (strncmp(de->d_name, "step_", 5) != 0 || !ends_with(de->d_name, ".tmp")) continue;
        fs_join(path, sizeof path, out, de->d_name);
        if (fs_is_dir(path, NULL) == 1) rc = fs_remove_flat_dir(path, e);
    }
    closedir(d);
    return rc;
}

// Committed step numbers in out, ascending. Returns the count (array in *steps, malloc'ed).
static int list_steps(const char *out, int64_t **steps, CkErr *e) {
    DIR *d = opendir(out);
    *steps = NULL;
    if (!d) {
        ck_err(e, "%s: cannot open directory (%s)", out, strerror(errno));
        return -1;
    }
    int n = 0, cap = 0;
    struct dirent *de;
    int64_t s;
    while ((de = readdir(d)) != NULL) {
        if (!is_step_name(de->d_name, &s)) continue;
        if (n == cap) *steps = xrealloc(*steps, sizeof(int64_t) * (cap = cap ? 2 * cap : 16), "step list");
        (*steps)[n++] = s;
    }
    closedir(d);
    for (int i = 1; i < n; i++)   // insertion sort: a handful of entries
        for (int j = i; j > 0 && (*steps)[j - 1] > (*steps)[j]; j--) {
            int64_t t = (*steps)[j];
            (*steps)[j] = (*steps)[j - 1];
            (*steps)[j - 1] = t;
        }
    return n;
}

// The step LATEST names, or -1.
static int64_t latest_step(const char *out) {
    char path[4200], buf[64] = "";
    fs_join(path, sizeof path, out, "LATEST");
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
    fclose(f);
    buf[strcspn(buf, "\r\n")] = 0;
    int64_t s;
    return is_step_name(buf, &s) ? s : -1;
}

static int purge(const char *out, int keep, CkErr *e) {
    int64_t *steps;
    int n = list_steps(out, &steps, e);
    if (n < 0) return -1;
    int64_t latest = latest_step(out);
    int excess = n - keep, rc = 0;
    char path[4200];
    for (int i = 0; i < n && excess > 0 && rc == 0; i++) {
        if (steps[i] == latest) continue;
        snprintf(path, sizeof path, "%s/step_%08" PRId64, out, steps[i]);
        rc = fs_remove_flat_dir(path, e);
        excess--;
        fs_kill_point(13);
    }
    free(steps);
    return rc;
}

// A damaged step_N that a resume skipped is moved aside (never deleted) before the new step_N lands.
static int move_aside(const char *final, CkErr *e) {
    char aside[4300];
    for (int k = 1; k < 1000; k++) {
        if (snprintf(aside, sizeof aside, "%s.damaged%d", final, k) >= (int)sizeof aside) break;
        struct stat st;
        if (stat(aside, &st) != 0) {
            fprintf(stderr, "ringgpt: warning: %s already exists (a damaged checkpoint?); moving it to %s\n", final, aside);
            return fs_rename(final, aside, e);
        }
    }
    ck_err(e, "%s: exists and cannot be moved aside", final);
    return -1;
}

static int write_files(const char *tmp, const CkptState *s, const GPT *m, const AdamW *opt, CkErr *e) {
    if (write_model(tmp, m, s, e) != 0) return -1;
    fs_kill_point(3);
    if (opt && write_optim(tmp, m, opt, e) != 0) return -1;
    fs_kill_point(5);
    char path[4200];
    fs_join(path, sizeof path, tmp, "state.json");
    char *json = ckpt_state_json(s);
    int rc = json ? fs_write_file(path, json, strlen(json), e) : -1;
    free(json);
    if (rc) return -1;
    fs_join(path, sizeof path, tmp, "tokenizer.json");
    if (s->tok.json && fs_write_file(path, s->tok.json, s->tok.json_len, e) != 0) return -1;
    fs_kill_point(6);
    if (write_manifest(tmp, opt != NULL, s->tok.json != NULL, e) != 0) return -1;   // last: it marks the files complete
    fs_kill_point(7);
    return fs_fsync_dir(tmp, e);
}

static int commit(const char *out, const char *tmp, const char *name, CkErr *e) {
    char final[4200], latest[4200], latest_tmp[4200], line[80];
    fs_join(final, sizeof final, out, name);
    if (fs_is_dir(final, NULL) == 1 && move_aside(final, e) != 0) return -1;
    fs_kill_point(8);
    if (fs_rename(tmp, final, e) != 0 || fs_fsync_dir(out, e) != 0) return -1;
    fs_kill_point(9);
    fs_join(latest_tmp, sizeof latest_tmp, out, "LATEST.tmp");
    fs_join(latest, sizeof latest, out, "LATEST");
    snprintf(line, sizeof line, "%s\n", name);
    if (fs_write_file(latest_tmp, line, strlen(line), e) != 0) return -1;
    fs_kill_point(10);
    if (fs_rename(latest_tmp, latest, e) != 0 || fs_fsync_dir(out, e) != 0) return -1;
    fs_kill_point(11);
    return 0;
}

int ckpt_save(const char *out, const CkptState *s, const GPT *m, const AdamW *opt, int keep, CkErr *e) {
    fs_kill_begin_save();
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        ck_err(e, "%s: cannot create directory (%s)", out, strerror(errno));
        return -1;
    }
    if (remove_stale_tmp(out, e) != 0) return -1;
    char name[64], tmp[4200];
    snprintf(name, sizeof name, "step_%08" PRId64, s->step);
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", out, name);
    if (mkdir(tmp, 0755) != 0) {
        ck_err(e, "%s: cannot create directory (%s)", tmp, strerror(errno));
        return -1;
    }
    fs_kill_point(1);
    if (write_files(tmp, s, m, opt, e) != 0 || commit(out, tmp, name, e) != 0) return -1;
    fs_kill_point(12);
    return keep > 0 ? purge(out, keep, e) : 0;
}

// ---- finding and loading -----------------------------------------------------------------------

int ckpt_find_latest(const char *out, char *dir, size_t n, CkErr *e) {
    if (fs_is_dir(out, e) != 1) return fs_is_dir(out, e) == 0 ? 0 : -1;
    int64_t *steps;
    int count = list_steps(out, &steps, e);
    if (count <= 0) return count;
    char path[4200], reasons[1024] = "";
    int found = 0;
    for (int i = count - 1; i >= 0 && !found; i--) {
        snprintf(path, sizeof path, "%s/step_%08" PRId64, out, steps[i]);
        CkErr why;
        if (ckpt_verify(path, &why) == 0) {
            snprintf(dir, n, "%s", path);
            found = 1;
        } else {
            if (log_rank() == 0) fprintf(stderr, "ringgpt: warning: skipping checkpoint %s: %s\n", path, why.msg);
            snprintf(reasons, sizeof reasons, "%s", why.msg);
        }
    }
    free(steps);
    if (!found) ck_err(e, "%s: none of the %d checkpoints is valid (last problem: %s)", out, count, reasons);
    return found ? 1 : -1;
}

void ckpt_resolve(const char *path, char *dir, size_t n) {
    char manifest[4200], state[4200], model[4200];
    fs_join(manifest, sizeof manifest, path, "MANIFEST.json");
    fs_join(state, sizeof state, path, "state.json");
    fs_join(model, sizeof model, path, "model.safetensors");
    CkErr e;
    struct stat st;
    if (stat(manifest, &st) == 0 || stat(state, &st) == 0 || stat(model, &st) == 0) {   // a step directory
        if (ckpt_verify(path, &e) != 0) fail_usage("%s", e.msg);
        snprintf(dir, n, "%s", path);
        return;
    }
    int rc = ckpt_find_latest(path, dir, n, &e);
    if (rc < 0) fail_usage("%s", e.msg);
    if (rc == 0)
        fail_usage("%s: not a checkpoint (no MANIFEST.json) and holds no step_* checkpoints; give a step directory or "
                   "a training --out directory", path);
}

int ckpt_load_tensors(const StFile *f, const ParamTable *t, const char *prefix, real *buffer, CkErr *e) {
    char name[128];
    for (const ParamSpec *p = t->specs; p < t->specs + t->count; p++) {
        snprintf(name, sizeof name, "%s%s", prefix, p->name);
        const StEntry *x = st_find(f, name);
        if (!x) {
            ck_err(e, "%s: tensor '%s' is missing (the checkpoint was made for a different model shape?)", f->path, name);
            return -1;
        }
        bool same = x->ndim == p->ndim && x->shape[0] == p->shape[0] && (p->ndim == 1 || x->shape[1] == p->shape[1]);
        if (!same) {
            ck_err(e, "%s: tensor '%s' has shape (%" PRId64 "%s%" PRId64 ") but the model expects (%" PRId64 "%s%" PRId64
                   "); check --model/--dim/--layers/--heads/--kv-heads/--ffn-dim", f->path, name, x->shape[0],
                   x->ndim > 1 ? ", " : "", x->ndim > 1 ? x->shape[1] : (int64_t)0, p->shape[0], p->ndim > 1 ? ", " : "",
                   p->ndim > 1 ? p->shape[1] : (int64_t)0);
            return -1;
        }
        if (st_read(f, x, buffer + p->offset, e) != 0) return -1;
    }
    return 0;
}

// Every tensor of f whose name starts with prefix must belong to the table (e.g. no lm_head for a tied model).
static int check_no_extra(const StFile *f, const ParamTable *t, const char *prefix, CkErr *e) {
    size_t pl = strlen(prefix);
    for (int i = 0; i < f->n; i++) {
        const char *name = f->entries[i].name;
        if (strncmp(name, prefix, pl) != 0 || params_find(t, name + pl)) continue;
        ck_err(e, "%s: tensor '%s' has no place in this model (tied vs untied embeddings, or another layer count?)",
               f->path, name);
        return -1;
    }
    return 0;
}

// Reads parameter-shaped buffers (one per prefix) from dir/file and copies them to the backend buffers dst.
static int load_buffers(const char *dir, const char *file, const GPT *m, int n, const char *const *prefix, real **dst,
                        CkErr *e) {
    char path[4200];
    fs_join(path, sizeof path, dir, file);
    StFile f;
    if (st_open(&f, path, e) != 0) return -1;
    size_t bytes = m->table.total * sizeof(real);
    real *host = xmalloc(bytes, "checkpoint tensors");
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        rc = ckpt_load_tensors(&f, &m->table, prefix[i], host, e);
        if (rc == 0) rc = check_no_extra(&f, &m->table, prefix[i], e);
        if (rc == 0) m->be->to_device(dst[i], host, bytes);
    }
    free(host);
    st_close(&f);
    return rc;
}

int ckpt_load_model(const char *dir, GPT *m, CkErr *e) {
    const char *prefix[] = {""};
    real *dst[] = {m->params};
    return load_buffers(dir, "model.safetensors", m, 1, prefix, dst, e);
}

int ckpt_load_optim(const char *dir, const CkptState *s, const GPT *m, AdamW *opt, CkErr *e) {
    if (strcmp(s->kind, "train") != 0) {
        ck_err(e, "%s/state.json: field kind is '%s': it holds weights only, no optimizer state to resume; use "
               "--init-from to start a run from it", dir, s->kind);
        return -1;
    }
    const char *prefix[] = {"m.", "v."};
    real *dst[] = {opt->m, opt->v};
    if (load_buffers(dir, "optim.safetensors", m, 2, prefix, dst, e) != 0) return -1;
    opt->step = s->adamw_step;
    return 0;
}
