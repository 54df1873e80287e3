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

#include "checkpoints/ckpt_shard.h"
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

// Every rank learns whether any failed (rc != 0 on it); the lowest failing rank's message becomes every rank's e.
// Returns 0 when none failed. Two small all-reduces: the failing rank, then its message as 64-bit words.
static int agree(Comm *world, int rc, CkErr *e, const char *what) {
    int64_t who = rc != 0 ? comm_rank(world) : INT64_MAX;
    comm_allreduce(world, &who, 1, COMM_I64, COMM_MIN, what);
    if (who == INT64_MAX) return 0;
    enum { WORDS = sizeof e->msg / sizeof(int64_t) };
    int64_t words[WORDS] = {0};   // (WORDS) the message's bytes, from the failing rank alone (the others add zeros)
    if (comm_rank(world) == who) memcpy(words, e->msg, sizeof words);
    comm_allreduce(world, words, WORDS, COMM_I64, COMM_SUM, what);
    memcpy(e->msg, words, sizeof e->msg);
    e->msg[sizeof e->msg - 1] = 0;
    return -1;
}

int ckpt_verify(const char *dir, Comm *world, CkErr *e) {
    char mpath[4200];
    fs_join(mpath, sizeof mpath, dir, "MANIFEST.json");
    size_t len;
    unsigned char *text = fs_read_file(mpath, &len, e);
    int rc = -1, part = world ? comm_rank(world) : 0, parts = world ? comm_size(world) : 1;
    if (!text && strstr(e->msg, "No such file")) ck_err(e, "%s: missing (the checkpoint is incomplete)", mpath);
    if (text) rc = ckpt_verify_manifest_text(dir, (const char *)text, len, part, parts, e);
    free(text);
    return parts > 1 ? agree(world, rc, e, "checkpoint verification") : rc;
}

// A damaged step_N that a resume skipped is moved aside (never deleted) before the new step_N lands; a step_N
// that passes its checks is never replaced (the resume that would reach it again is refused before it starts).
static int move_aside(const char *final, CkErr *e) {
    CkErr why;
    if (ckpt_verify(final, NULL, &why) == 0) {
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

// The files a save wrote into its step directory, in the order written: the manifest lists them.
typedef struct {
    const char *name[5];
    int n;
} Written;

// state.json, tokenizer.json and hf_meta.json (the writing rank's; the last two where s has them), added to w.
static int write_text_files(const char *tmp, const CkptState *s, Written *w, CkErr *e) {
    char *json = ckpt_state_json(s), path[4200];
    const char *name[] = {"state.json", "tokenizer.json", "hf_meta.json"};
    const void *text[] = {json, s->tok.json, s->meta.json};
    size_t len[] = {json ? strlen(json) : 0, s->tok.json_len, s->meta.json_len};
    int rc = json ? 0 : -1;
    for (int i = 0; i < 3 && rc == 0; i++) {
        fs_join(path, sizeof path, tmp, name[i]);
        if (text[i]) rc = fs_write_file(path, text[i], len[i], e);
        if (text[i] && rc == 0) w->name[w->n++] = name[i];
    }
    free(json);
    if (rc == 0) fs_kill_point(6);
    return rc;
}

static int write_files(const char *tmp, const CkptState *s, const GPT *m, const AdamW *opt, CkErr *e) {
    Written w = {{"model.safetensors"}, 1};
    if (write_model(tmp, m, s, e) != 0) return -1;
    fs_kill_point(3);
    if (opt && write_optim(tmp, m, opt, e) != 0) return -1;
    if (opt) w.name[w.n++] = "optim.safetensors";
    fs_kill_point(5);
    if (write_text_files(tmp, s, &w, e) != 0) return -1;
    if (ckpt_write_manifest(tmp, w.name, w.n, NULL, 0, e) != 0) return -1;   // last: it marks the files complete
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

// Creates OUT (when needed) and OUT/step_N.tmp/ after removing what failed saves left; name and tmp get their names.
static int begin_save(const char *out, const CkptState *s, char *name, size_t name_n, char *tmp, size_t tmp_n, CkErr *e) {
    snprintf(name, name_n, "step_%08" PRId64, s->step);
    snprintf(tmp, tmp_n, "%s/%s.tmp", out, name);
    if (mkdir(out, 0755) != 0 && errno != EEXIST) {
        ck_err(e, "%s: cannot create directory (%s)", out, strerror(errno));
        return -1;
    }
    if (ckpt_remove_stale_tmp(out, e) != 0) return -1;
    if (mkdir(tmp, 0755) != 0) {
        ck_err(e, "%s: cannot create directory (%s)", tmp, strerror(errno));
        return -1;
    }
    fs_kill_point(1);
    return 0;
}

// A failed save leaves nothing behind (a full disk stays as full as before it).
static void abandon_save(const char *out, const char *tmp) {
    CkErr ignored;
    if (fs_is_dir(tmp, &ignored) == 1) fs_remove_flat_dir(tmp, &ignored);
    char latest_tmp[4200];
    fs_join(latest_tmp, sizeof latest_tmp, out, "LATEST.tmp");
    unlink(latest_tmp);
}

static int save_unsharded(const char *out, const CkptState *s, const GPT *m, const AdamW *opt, int keep, CkErr *e) {
    char name[64], tmp[4200];
    if (begin_save(out, s, name, sizeof name, tmp, sizeof tmp, e) != 0) return -1;
    if (write_files(tmp, s, m, opt, e) != 0 || commit(out, tmp, name, e) != 0) {
        abandon_save(out, tmp);
        return -1;
    }
    fs_kill_point(12);
    return keep > 0 ? purge(out, keep, e) : 0;
}

// This rank's shard file, and its size and CRC32 read back from disk into *sum.
static int write_own_shard(const char *tmp, const CkptState *s, const GPT *m, const AdamW *opt, CkptFileSum *sum, CkErr *e) {
    ckpt_shard_name(sum->name, sizeof sum->name, opt->shard->rank, opt->shard->ranks);
    char path[4200];
    fs_join(path, sizeof path, tmp, sum->name);
    if (ckpt_shard_write(tmp, m, opt, s->step, e) != 0) return -1;
    return fs_crc32_file(path, &sum->crc32, &sum->size, e);
}

// Every rank's (size, crc32) of its shard file, on every rank: one all-reduce of 2·ranks words, each rank's own slot.
static void gather_sums(Comm *world, const ShardLayout *L, const CkptFileSum *own, CkptFileSum *all) {
    uint64_t *words = xcalloc((size_t)L->ranks * 2, sizeof(uint64_t), "shard file sums");   // (ranks, 2)
    words[2 * L->rank] = own->size, words[2 * L->rank + 1] = own->crc32;
    comm_allreduce(world, words, (size_t)L->ranks * 2, COMM_U64, COMM_SUM, "checkpoint shard sums");
    for (int r = 0; r < L->ranks; r++) {
        ckpt_shard_name(all[r].name, sizeof all[r].name, r, L->ranks);
        all[r].size = words[2 * r], all[r].crc32 = (uint32_t)words[2 * r + 1];
    }
    free(words);
}

// Rank 0's part once every shard file is written: the manifest (every rank's sums), then the commit and --keep.
static int finish_sharded(const char *out, const char *tmp, const char *name, const Written *w, const CkptFileSum *sums,
                          int ranks, int keep, CkErr *e) {
    fs_kill_point(5);
    if (ckpt_write_manifest(tmp, w->name, w->n, sums, ranks, e) != 0) return -1;
    fs_kill_point(7);
    if (fs_fsync_dir(tmp, e) != 0 || commit(out, tmp, name, e) != 0) return -1;
    fs_kill_point(12);
    return keep > 0 ? purge(out, keep, e) : 0;
}

// Every rank writes its shard file into rank 0's step_N.tmp/ (all ranks see one file system); no rank gathers the
// model. Rank 0 writes the other files, the manifest with every rank's sums, and commits after all are written.
static int save_sharded(const char *out, const CkptState *given, const GPT *m, const AdamW *opt, int keep, Comm *world,
                        CkErr *e) {
    const ShardLayout *L = opt->shard;
    if (!world || comm_size(world) != L->ranks || comm_rank(world) != L->rank)
        fail("internal: a sharded save over %d ranks needs the world of those ranks (rank %d)", L->ranks, L->rank);
    CkptState s = *given;
    s.shard_level = m->shard_level, s.shard_ranks = L->ranks;
    bool writer = L->rank == 0;
    char name[64], tmp[4200];
    int rc = writer ? begin_save(out, &s, name, sizeof name, tmp, sizeof tmp, e) : 0;
    if (agree(world, rc, e, "checkpoint save") != 0) return -1;   // (rank 0 made nothing it must remove)
    snprintf(name, sizeof name, "step_%08" PRId64, s.step);
    snprintf(tmp, sizeof tmp, "%s/%s.tmp", out, name);
    CkptFileSum own = {{0}}, *sums = xcalloc((size_t)L->ranks, sizeof *sums, "shard file sums");
    Written w = {{"model.safetensors"}, writer && s.shard_level != SHARD_PARAMS};   // where whole on every rank
    if (w.n) rc = write_model(tmp, m, &s, e);
    if (rc == 0) fs_kill_point(3);
    if (rc == 0) rc = write_own_shard(tmp, &s, m, opt, &own, e);
    if (rc == 0 && writer) rc = write_text_files(tmp, &s, &w, e);
    if (agree(world, rc, e, "checkpoint save") == 0) {
        gather_sums(world, L, &own, sums);
        rc = writer ? finish_sharded(out, tmp, name, &w, sums, L->ranks, keep, e) : 0;
        rc = agree(world, rc, e, "checkpoint commit");   // the others wait for rank 0's commit
    } else rc = -1;
    if (rc != 0 && writer) abandon_save(out, tmp);   // (a failure after the rename leaves no tmp: nothing to remove)
    free(sums);
    return rc;
}

int ckpt_save(const char *out, const CkptState *s, const GPT *m, const AdamW *opt, int keep, Comm *world, CkErr *e) {
    fs_kill_begin_save();
    if (opt && opt->shard) return save_sharded(out, s, m, opt, keep, world, e);
    CkptState st = *s;
    st.shard_level = SHARD_NONE, st.shard_ranks = 0;
    return save_unsharded(out, &st, m, opt, keep, e);
}

// ---- finding and loading -----------------------------------------------------------------------

int ckpt_find_latest(const char *out, char *dir, size_t n, Comm *world, CkErr *e) {
    if (fs_is_dir(out, e) != 1) return fs_is_dir(out, e) == 0 ? 0 : -1;
    int64_t *steps;
    int count = list_steps(out, &steps, e);
    if (count <= 0) return count;
    char path[4200], (*why)[sizeof e->msg] = xcalloc((size_t)count, sizeof *why, "checkpoint problems");   // (count)
    int found = -1;
    for (int i = count - 1; i >= 0 && found < 0; i--) {   // (a collective with world: every rank the same steps)
        snprintf(path, sizeof path, "%s/step_%08" PRId64, out, steps[i]);
        CkErr bad;
        if (ckpt_verify(path, world, &bad) == 0) {
            snprintf(dir, n, "%s", path);
            found = i;
        } else {
            memcpy(why[i], bad.msg, sizeof bad.msg);
        }
    }
    // One line per damaged newer checkpoint, each naming the one used instead (never silently an older step).
    for (int i = count - 1; found >= 0 && i > found && log_rank() == 0; i--)
        fprintf(stderr, "ringgpt: warning: skipping checkpoint %s/step_%08" PRId64 ": %s; using %s (step %" PRId64 ") instead\n",
                out, steps[i], why[i], dir, steps[found]);
    if (found < 0) ck_err(e, "%s: none of the %d checkpoints is valid (last problem: %s)", out, count, why[0]);
    free(why);
    free(steps);
    return found >= 0 ? 1 : -1;
}

int ckpt_newer_valid(const char *out, int64_t step, char *dir, size_t n, Comm *world) {
    CkErr e;
    int64_t *steps;
    int count = list_steps(out, &steps, &e), found = 0;
    for (int i = count - 1; i >= 0 && !found; i--) {
        if (steps[i] <= step) break;
        snprintf(dir, n, "%s/step_%08" PRId64, out, steps[i]);
        found = ckpt_verify(dir, world, &e) == 0;
    }
    free(steps);
    return found;
}

void ckpt_resolve(const char *path, char *dir, size_t n, Comm *world) {
    char manifest[4200], state[4200], model[4200];
    fs_join(manifest, sizeof manifest, path, "MANIFEST.json");
    fs_join(state, sizeof state, path, "state.json");
    fs_join(model, sizeof model, path, "model.safetensors");
    CkErr e;
    struct stat st;
    if (stat(manifest, &st) == 0 || stat(state, &st) == 0 || stat(model, &st) == 0) {   // a step directory
        if (ckpt_verify(path, world, &e) != 0) fail_usage("%s", e.msg);
        snprintf(dir, n, "%s", path);
        return;
    }
    int rc = ckpt_find_latest(path, dir, n, world, &e);
    if (rc < 0) fail_usage("%s", e.msg);
    if (rc == 0)
        fail_usage("%s: not a checkpoint (no MANIFEST.json) and holds no step_* checkpoints; give a step directory or "
                   "a training --out directory", path);
}

// Buffer b of the checkpoint into dst (a backend buffer): the whole parameter buffer, or (layout set) this rank's slices,
// unit by unit at local_off, each read from whichever files hold it.
static int load_buffer(CkptReader *r, CkptBuffer b, const GPT *m, const ShardLayout *layout, real *dst, CkErr *e) {
    size_t n = layout ? layout->local_total : m->table.total;
    real *host = xmalloc(n * sizeof(real) + 1, "checkpoint tensors");   // (n) host staging
    int rc = layout ? 0 : ckpt_reader_read(r, b, 0, n, host, e);
    for (int u = 0; layout && u < layout->n_units && rc == 0; u++) {
        size_t len, first = shard_slice(layout, u, layout->rank, &len);
        rc = ckpt_reader_read(r, b, first, len, host + layout->local_off[u], e);
    }
    if (rc == 0) m->be->to_device(dst, host, n * sizeof(real));
    free(host);
    return rc;
}

int ckpt_load_model(const char *dir, const CkptState *s, GPT *m, CkErr *e) {
    CkptReader *r = ckpt_reader_open(dir, s, m);
    int rc = load_buffer(r, CKPT_WEIGHTS, m, m->shard_level == SHARD_PARAMS ? m->shard : NULL, m->params, e);
    ckpt_reader_close(r);
    return rc;
}

int ckpt_load_optim(const char *dir, const CkptState *s, const GPT *m, AdamW *opt, CkErr *e) {
    if (strcmp(s->kind, "train") != 0) {
        ck_err(e, "%s/state.json: field kind is '%s': it holds weights only, no optimizer state to resume; use "
               "--init-from to start a run from it", dir, s->kind);
        return -1;
    }
    CkptReader *r = ckpt_reader_open(dir, s, m);
    int rc = load_buffer(r, CKPT_MOMENT1, m, opt->shard, opt->m, e);
    if (rc == 0) rc = load_buffer(r, CKPT_MOMENT2, m, opt->shard, opt->v, e);
    ckpt_reader_close(r);
    if (rc != 0) return -1;
    opt->step = s->adamw_step;
    return 0;
}
