// checkpoints/ckpt_shard.c — sharded checkpoints: a rank's shard file (its slices of the moments, and of the weights at params), and ranged reads of any checkpoint's buffers.
#include "checkpoints/ckpt_shard.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/fsio.h"
#include "core/common.h"
#include "model/ops.h"

// Tensor names: <prefix>.unit.<u> in shard files, <prefix><table name> in model.safetensors ("") and optim.safetensors.
static const char *const SHARD_PREFIX[] = {"w", "m", "v"};
static const char *const NAMED_PREFIX[] = {"", "m.", "v."};
static const char *const NAMED_FILE[] = {"model.safetensors", "optim.safetensors", "optim.safetensors"};

// ---- writing ---------------------------------------------------------------------------------------

// n elements of a backend buffer in host memory: the buffer itself on the CPU backend, else a copy in *owned.
static const real *host_view(const GPT *m, const real *buf, size_t n, real **owned) {
    *owned = NULL;
    if (m->be == &BACKEND_CPU) return buf;
    *owned = xmalloc(n * sizeof(real) + 1, "checkpoint shard staging buffer");
    m->be->to_host(*owned, buf, n * sizeof(real));
    return *owned;
}

int ckpt_shard_write(const char *dir, const GPT *m, const AdamW *opt, int64_t step, CkErr *e) {
    const ShardLayout *L = m->shard;   // the model's, which AdamW's moments share
    bool with_w = m->shard_level == SHARD_PARAMS;
    real *owned[3] = {NULL, NULL, NULL};
    size_t n_slices = m->sizes.slices;
    // (n_slices) each: this rank's slices of the weights (params only), m and v, unit by unit at local_off
    const real *src[3] = {with_w ? host_view(m, m->params, n_slices, &owned[0]) : NULL,
                          host_view(m, opt->m, n_slices, &owned[1]), host_view(m, opt->v, n_slices, &owned[2])};
    StOut *outs = xcalloc((size_t)L->n_units * 3, sizeof *outs, "shard tensor list");
    char (*names)[32] = xcalloc((size_t)L->n_units * 3, 32, "shard tensor names");
    int n = 0;
    for (int b = with_w ? CKPT_WEIGHTS : CKPT_MOMENT1; b <= CKPT_MOMENT2; b++)
        for (int u = 0; u < L->n_units; u++) {
            if (!L->own[u]) continue;   // an empty slice (the unit ends before this rank's): no tensor
            snprintf(names[n], 32, "%s.unit.%d", SHARD_PREFIX[b], u);
            outs[n] = (StOut){.name = names[n], .ndim = 1, .shape = {(int64_t)L->own[u]}, .data = src[b] + L->local_off[u]};
            n++;
        }
    char path[4200], file[64], step_s[32], rank_s[16], ranks_s[16];
    ckpt_shard_name(file, sizeof file, L->rank, L->ranks);
    fs_join(path, sizeof path, dir, file);
    snprintf(step_s, sizeof step_s, "%" PRId64, step);
    snprintf(rank_s, sizeof rank_s, "%d", L->rank);
    snprintf(ranks_s, sizeof ranks_s, "%d", L->ranks);
    const char *meta[] = {"ringgpt", "shard", "step", step_s, "rank", rank_s, "ranks", ranks_s,
                          "level", shard_level_name(m->shard_level)};
    fs_kill_mid_write_point = 4;
    int rc = st_write(path, outs, n, CKPT_REAL_DTYPE, meta, 5, e);
    free(outs);
    free(names);
    for (int b = 0; b < 3; b++) free(owned[b]);
    return rc;
}

// ---- reading -----------------------------------------------------------------------------------------

struct CkptReader {
    char dir[4200];
    const GPT *m;            // its table names the tensors and fixes the shapes
    ShardLevel level;        // the checkpoint's: SHARD_NONE, or which buffers its shard files hold
    ShardLayout layout;      // sharded: the layout it was saved in (state.json's rank count)
    StFile named[2];         // model.safetensors, optim.safetensors: opened on first use
    bool named_open[2];
    const StEntry **entry[3];   // (table.count) per buffer: each table tensor's record in its named file
    StFile *shards;          // (layout.ranks) shard files, opened when read from
    bool *shard_open;
};

CkptReader *ckpt_reader_open(const char *dir, const CkptState *s, const GPT *m) {
    CkptReader *r = xcalloc(1, sizeof *r, "checkpoint reader");
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    r->m = m;
    r->level = s->shard_ranks > 0 ? s->shard_level : SHARD_NONE;
    if (r->level != SHARD_NONE) {
        r->layout = shard_layout(&m->table, &m->cfg, s->shard_ranks, 0);
        r->shards = xcalloc((size_t)s->shard_ranks, sizeof(StFile), "checkpoint shard files");
        r->shard_open = xcalloc((size_t)s->shard_ranks, sizeof(bool), "checkpoint shard files");
    }
    return r;
}

void ckpt_reader_close(CkptReader *r) {
    if (!r) return;
    for (int i = 0; i < 2; i++)
        if (r->named_open[i]) st_close(&r->named[i]);
    for (int b = 0; b < 3; b++) free(r->entry[b]);
    for (int i = 0; r->shards && i < r->layout.ranks; i++)
        if (r->shard_open[i]) st_close(&r->shards[i]);
    free(r->shards);
    free(r->shard_open);
    if (r->level != SHARD_NONE) shard_layout_free(&r->layout);
    free(r);
}

static bool in_shards(const CkptReader *r, CkptBuffer b) {
    return r->level != SHARD_NONE && (b != CKPT_WEIGHTS || r->level == SHARD_PARAMS);
}

// Every table tensor under prefix is in f with the table's shape and a dtype ringgpt reads; records into entry.
static int find_named(const StFile *f, const ParamTable *t, const char *prefix, const StEntry **entry, CkErr *e) {
    char name[128];
    for (int i = 0; i < t->count; i++) {
        const ParamSpec *p = &t->specs[i];
        snprintf(name, sizeof name, "%s%s", prefix, p->name);
        const StEntry *x = entry[i] = st_find(f, name);
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
        if (x->dtype == ST_OTHER) {
            ck_err(e, "%s: tensor '%s': dtype %s is not supported (use F32, BF16, F16 or F64)", f->path, name, x->dtype_name);
            return -1;
        }
    }
    size_t pl = strlen(prefix);   // and nothing under prefix that the table lacks (e.g. lm_head for a tied model)
    for (int i = 0; i < f->n; i++) {
        const char *n = f->entries[i].name;
        if (strncmp(n, prefix, pl) != 0 || params_find(t, n + pl)) continue;
        ck_err(e, "%s: tensor '%s' has no place in this model (tied vs untied embeddings, or another layer count?)",
               f->path, n);
        return -1;
    }
    return 0;
}

// Buffer b's named file, opened and checked on first use (optim.safetensors: both moments at once).
static const StFile *named_file(CkptReader *r, CkptBuffer b, CkErr *e) {
    int k = b == CKPT_WEIGHTS ? 0 : 1;
    if (r->named_open[k]) return &r->named[k];
    char path[4200];
    fs_join(path, sizeof path, r->dir, NAMED_FILE[b]);
    if (st_open(&r->named[k], path, e) != 0) return NULL;
    r->named_open[k] = true;
    const ParamTable *t = &r->m->table;
    for (int x = k ? CKPT_MOMENT1 : CKPT_WEIGHTS; x <= (k ? CKPT_MOMENT2 : CKPT_WEIGHTS); x++) {
        r->entry[x] = xcalloc((size_t)t->count, sizeof(StEntry *), "checkpoint tensor records");
        if (find_named(&r->named[k], t, NAMED_PREFIX[x], r->entry[x], e) != 0) return NULL;
    }
    return &r->named[k];
}

static int read_named(CkptReader *r, CkptBuffer b, size_t first, size_t count, real *dst, CkErr *e) {
    const StFile *f = named_file(r, b, e);
    if (!f) return -1;
    const ParamTable *t = &r->m->table;
    size_t end = first + count;
    for (int i = 0; i < t->count; i++) {   // every tensor that overlaps [first, end)
        const ParamSpec *p = &t->specs[i];
        size_t a = first > p->offset ? first : p->offset, z = end < p->offset + p->numel ? end : p->offset + p->numel;
        if (a < z && st_read(f, r->entry[b][i], a - p->offset, z - a, dst + (a - first), e) != 0) return -1;
    }
    return 0;
}

// Rank `rank`'s shard file holds exactly its slice of every unit under the saved layout, for each buffer it holds.
static int check_shard(const CkptReader *r, const StFile *f, int rank, CkErr *e) {
    const ShardLayout *L = &r->layout;
    int expect = 0;
    char name[32];
    for (int b = r->level == SHARD_PARAMS ? CKPT_WEIGHTS : CKPT_MOMENT1; b <= CKPT_MOMENT2; b++)
        for (int u = 0; u < L->n_units; u++) {
            size_t len;
            shard_slice(L, u, rank, &len);
            if (!len) continue;
            expect++;
            snprintf(name, sizeof name, "%s.unit.%d", SHARD_PREFIX[b], u);
            const StEntry *x = st_find(f, name);
            if (!x) {
                ck_err(e, "%s: tensor '%s' is missing (not the shard of rank %d of %d at --shard %s that state.json names)",
                       f->path, name, rank, L->ranks, shard_level_name(r->level));
                return -1;
            }
            if (x->ndim != 1 || x->numel != len || x->dtype == ST_OTHER) {
                ck_err(e, "%s: tensor '%s' is %" PRIu64 " values of %s; rank %d's slice of unit %d over %d ranks is %zu values "
                       "(F32, BF16, F16 or F64)", f->path, name, x->numel, x->dtype_name, rank, u, L->ranks, len);
                return -1;
            }
        }
    if (f->n != expect) {
        ck_err(e, "%s: holds %d tensors; the shard of rank %d of %d at --shard %s holds %d", f->path, f->n, rank, L->ranks,
               shard_level_name(r->level), expect);
        return -1;
    }
    return 0;
}

// Rank `rank`'s shard file, opened and its header checked on first use: a rank reads only the headers of the files it
// reads from, so that N ranks opening N shards read N headers each at most once, not N² (a damaged file fails the
// ranks that read it, naming it).
static int open_shard(CkptReader *r, int rank, CkErr *e) {
    if (r->shard_open[rank]) return 0;
    char path[4200], file[64];
    ckpt_shard_name(file, sizeof file, rank, r->layout.ranks);
    fs_join(path, sizeof path, r->dir, file);
    if (st_open(&r->shards[rank], path, e) != 0) return -1;
    r->shard_open[rank] = true;
    return check_shard(r, &r->shards[rank], rank, e);
}

static int read_shards(CkptReader *r, CkptBuffer b, size_t first, size_t count, real *dst, CkErr *e) {
    const ShardLayout *L = &r->layout;
    size_t end = first + count;
    char name[32];
    while (first < end) {   // piece by piece: the rest of one rank's slice of one unit at a time
        int u = shard_unit_of(L, first), rank = (int)((first - L->unit_off[u]) / L->per[u]);
        size_t len, start = shard_slice(L, u, rank, &len), k = end - first < start + len - first ? end - first : start + len - first;
        snprintf(name, sizeof name, "%s.unit.%d", SHARD_PREFIX[b], u);
        if (open_shard(r, rank, e) != 0) return -1;
        const StEntry *x = st_find(&r->shards[rank], name);
        if (!x) {   // checked when opened; a file replaced since then
            ck_err(e, "%s: tensor '%s' is missing", r->shards[rank].path, name);
            return -1;
        }
        if (st_read(&r->shards[rank], x, first - start, k, dst, e) != 0) return -1;
        first += k, dst += k;
    }
    return 0;
}

int ckpt_reader_read(CkptReader *r, CkptBuffer b, size_t first, size_t count, real *dst, CkErr *e) {
    return in_shards(r, b) ? read_shards(r, b, first, count, dst, e) : read_named(r, b, first, count, dst, e);
}
