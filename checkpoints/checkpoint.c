// checkpoints/checkpoint.c — checkpoint directories: atomic save, newest-valid lookup, load by name (the text files: ckpt_format.c).
#include "checkpoints/checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoints/fsio.h"
#include "core/common.h"
#include "model/ops.h"

static const StDtype REAL_DTYPE = CKPT_REAL_DTYPE;

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
    real *owned = NULL;
    const real *params = s->weights ? NULL : host_copy(m, m->params, &owned);
    StOut *outs = xcalloc((size_t)t->count, sizeof *outs, "tensor list");
    for (int i = 0; i < t->count; i++) {
        const ParamSpec *p = &t->specs[i];
        outs[i] = (StOut){.name = p->name, .ndim = p->ndim, .shape = {p->shape[0], p->shape[1]},
                          .data = params ? params + p->offset : NULL, .fill = s->weights, .ctx = s->weights_ctx, .index = i};
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

int ckpt_remove_stale_tmp(const char *out, CkErr *e) {
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
        if (rc == 0) log_info("removed checkpoint %s (--keep %d keeps the newest %d)\n", path, keep, keep);
        excess--;
        fs_kill_point(13);
    }
    free(steps);
    return rc;
}

// A damaged step_N that a resume skipped is moved aside (never deleted) before the new step_N lands; a step_N
// that passes its checks is never replaced (the resume that would reach it again is refused before it starts).
static int move_aside(const char *final, CkErr *e) {
    CkErr why;
    if (ckpt_verify(final, &why) == 0) {
        ck_err(e, "%s: exists and is a valid checkpoint; refusing to replace it (resume from it, or train into a new "
               "--out)", final);
        return -1;
    }
    char aside[4300];
    for (int k = 1; k < 1000; k++) {
        if (snprintf(aside, sizeof aside, "%s.damaged%d", final, k) >= (int)sizeof aside) break;
        struct stat st;
        if (stat(aside, &st) != 0) {
            fprintf(stderr, "ringgpt: warning: %s is damaged (%s); moving it to %s\n", final, why.msg, aside);
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
    fs_join(path, sizeof path, tmp, "hf_meta.json");
    if (s->meta.json && fs_write_file(path, s->meta.json, s->meta.json_len, e) != 0) return -1;
    fs_kill_point(6);
    if (ckpt_write_manifest(tmp, opt != NULL, s->tok.json != NULL, s->meta.json != NULL, e) != 0) return -1;   // last: it marks the files complete
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
    if (ckpt_remove_stale_tmp(out, e) != 0) return -1;
    char name[64], tmp[4200];
    snprintf(name, sizeof name, "step_%08" PRId64, s->step);
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", out, name);
    if (mkdir(tmp, 0755) != 0) {
        ck_err(e, "%s: cannot create directory (%s)", tmp, strerror(errno));
        return -1;
    }
    fs_kill_point(1);
    if (write_files(tmp, s, m, opt, e) != 0 || commit(out, tmp, name, e) != 0) {
        CkErr ignored;   // a failed save leaves nothing behind (a full disk stays as full as before it)
        if (fs_is_dir(tmp, &ignored) == 1) fs_remove_flat_dir(tmp, &ignored);
        char latest_tmp[4200];
        fs_join(latest_tmp, sizeof latest_tmp, out, "LATEST.tmp");
        unlink(latest_tmp);
        return -1;
    }
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
    int found = -1;
    for (int i = count - 1; i >= 0 && found < 0; i--) {
        snprintf(path, sizeof path, "%s/step_%08" PRId64, out, steps[i]);
        CkErr why;
        if (ckpt_verify(path, &why) == 0) {
            snprintf(dir, n, "%s", path);
            found = i;
        } else {
            snprintf(reasons, sizeof reasons, "%s", why.msg);
        }
    }
    // One line per damaged newer checkpoint, each naming the one used instead (never silently an older step).
    for (int i = count - 1; found >= 0 && i > found && log_rank() == 0; i--) {
        snprintf(path, sizeof path, "%s/step_%08" PRId64, out, steps[i]);
        CkErr why;
        ckpt_verify(path, &why);
        fprintf(stderr, "ringgpt: warning: skipping checkpoint %s: %s; using %s (step %" PRId64 ") instead\n", path, why.msg,
                dir, steps[found]);
    }
    free(steps);
    if (found < 0) ck_err(e, "%s: none of the %d checkpoints is valid (last problem: %s)", out, count, reasons);
    return found >= 0 ? 1 : -1;
}

int ckpt_newer_valid(const char *out, int64_t step, char *dir, size_t n) {
    CkErr e;
    int64_t *steps;
    int count = list_steps(out, &steps, &e), found = 0;
    for (int i = count - 1; i >= 0 && !found; i--) {
        if (steps[i] <= step) break;
        snprintf(dir, n, "%s/step_%08" PRId64, out, steps[i]);
        found = ckpt_verify(dir, &e) == 0;
    }
    free(steps);
    return found;
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
