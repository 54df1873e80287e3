// tests/checkpoints/test_ckpt_shard.c — sharded checkpoints under mpiexec: every rank saves its slices (optim, params) and rank 0 an unsharded one; every layout of 1..5 ranks at every level loads them back exactly.
//
// test_ckpt_shard reshard SRC OUT LEVEL: SRC (a step directory) saved again, sharded at LEVEL over the job's ranks.
// Usage: test_ckpt_shard DIR (under mpiexec -np N). Writes DIR/<model>_<level>/step_00000007 for two models (untied;
// tied, whose last unit is shorter than some ranks' slices) at levels none (rank 0 alone), optim and params, from
// buffers whose every value names its element and buffer; then loads each checkpoint into every layout of 1..5 ranks
// (each rank of this job takes some of them) at every level and into unsharded buffers, and compares every value.
// The checkpoints stay in DIR for tests/checkpoints/shard.sh (inspect, export, damage).
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoints/checkpoint.h"
#include "checkpoints/ckpt_shard.h"
#include "checkpoints/fsio.h"
#include "core/comm.h"
#include "core/common.h"
#include "model/ops.h"
#include "model/shard.h"
#include "tests/check.h"

enum { STEP = 7, MAX_TARGET_RANKS = 5 };

// Values that name their element and their buffer, exact in float for these sizes (below 2^20 elements).
static real value_at(CkptBuffer b, size_t i) {
    return b == CKPT_WEIGHTS ? (real)i + 0.25f : b == CKPT_MOMENT1 ? -(real)i - 0.5f : (real)(2 * i) + 0.125f;
}

// (n) buffer b's values at the parameter-buffer elements a layout's rank keeps (L NULL: all n = table.total of them).
static real *fill(CkptBuffer b, const ShardLayout *L, size_t total) {
    size_t n = L ? L->local_total : total;
    real *x = xmalloc(n * sizeof(real) + 1, "test buffer");
    for (int u = 0; L && u < L->n_units; u++) {
        size_t len, first = shard_slice(L, u, L->rank, &len);
        for (size_t j = 0; j < len; j++) x[L->local_off[u] + j] = value_at(b, first + j);
    }
    for (size_t i = 0; !L && i < n; i++) x[i] = value_at(b, i);
    return x;
}

// The number of values of x (laid out as above) that differ from value_at; the first one on stderr.
static size_t count_wrong(const char *what, CkptBuffer b, const ShardLayout *L, size_t total, const real *x) {
    real *want = fill(b, L, total);
    size_t n = L ? L->local_total : total, wrong = 0;
    for (size_t i = 0; i < n; i++)
        if (memcmp(&x[i], &want[i], sizeof(real)) != 0 && wrong++ == 0)
            fprintf(stderr, "%s: buffer %d local element %zu is %.9g, expected %.9g\n", what, (int)b, i, (double)x[i],
                    (double)want[i]);
    free(want);
    return wrong;
}

static ModelConfig model_config(bool tied) {
    // tied: dim 6 makes the last unit (the final norm) 6 values, so rank 3 of 4 has an empty slice of it
    ModelConfig c = {.n_layer = tied ? 2 : 3, .dim = tied ? 6 : 8, .n_head = tied ? 1 : 2, .n_kv_head = 1,
                     .ffn_dim = tied ? 16 : 24, .vocab_size = 260, .rope_theta = 10000, .norm_eps = 1e-5f,
                     .tie_embeddings = tied};
    return c;
}

static CkptState state_for(const ModelConfig *c, int dp) {
    CkptState s = {.version = CKPT_VERSION, .step = STEP, .adamw_step = STEP, .seed = 5, .model = *c, .dp = dp, .sp = 1,
                   .run = {.seq_len = 64, .batch = 1, .grad_accum = 1, .steps = 10, .warmup = 1, .loss_chunk = 64,
                           .lr = 1e-3f, .beta1 = 0.9f, .beta2 = 0.95f, .clip = 1, .schedule = "cosine"}};
    snprintf(s.kind, sizeof s.kind, "train");
    s.tok.eos = s.tok.bos = s.tok.pad = -1;
    return s;
}

// A GPT and AdamW view of buffers for the checkpoint code (no forward ever runs on them).
static GPT gpt_view(const ModelConfig *c, const ParamTable *t, real *params, ShardLevel level, ShardLayout *L) {
    GPT m = {.cfg = *c, .be = &BACKEND_CPU, .table = *t, .params = params, .shard_level = level};
    m.shard = level == SHARD_NONE ? NULL : L;
    m.sizes = shard_sizes(c, level, m.shard);
    return m;
}

// Saves the model's known values into out at level (sharded: every rank of world calls it). Returns ckpt_save's result.
static int save_to(const char *out, const ModelConfig *c, ShardLevel level, Comm *world, CkErr *e) {
    int rank = comm_rank(world), ranks = comm_size(world);
    ParamTable t = params_build(c);
    ShardLayout L = shard_layout(&t, c, ranks, rank);
    const ShardLayout *moments = level == SHARD_NONE ? NULL : &L, *weights = level == SHARD_PARAMS ? &L : NULL;
    real *w = fill(CKPT_WEIGHTS, weights, t.total), *m1 = fill(CKPT_MOMENT1, moments, t.total);
    real *m2 = fill(CKPT_MOMENT2, moments, t.total);
    GPT m = gpt_view(c, &t, w, level, &L);
    AdamW opt = {.m = m1, .v = m2, .shard = moments, .step = STEP};
    CkptState s = state_for(c, ranks);
    int rc = ckpt_save(out, &s, &m, &opt, 0, level == SHARD_NONE ? NULL : world, e);
    free(w), free(m1), free(m2);
    shard_layout_free(&L);
    params_free(&t);
    return rc;
}

// Rank 0 alone saves the unsharded checkpoint; every rank of the world saves the sharded ones (level optim or params).
static void save(const char *root, const char *name, const ModelConfig *c, ShardLevel level, Comm *world) {
    int rank = comm_rank(world);
    char out[600];
    snprintf(out, sizeof out, "%s/%s_%s", root, name, shard_level_name(level));
    CkErr e = {{0}};
    if (level != SHARD_NONE || rank == 0) CHECK(save_to(out, c, level, world, &e) == 0, "rank %d: save %s: %s", rank, out, e.msg);
    comm_barrier(world, "test save");
}

// A rank that cannot write its shard file (here: the last rank is given a directory that does not exist): every rank's
// save fails with that rank's message, and rank 0 leaves nothing behind (no step, no .tmp, no LATEST).
static void check_failed_save(const char *root, const ModelConfig *c, Comm *world) {
    int rank = comm_rank(world), ranks = comm_size(world);
    char out[600], path[700];
    snprintf(out, sizeof out, "%s/%s", root, rank == ranks - 1 && ranks > 1 ? "nowhere" : "failed_save");
    CkErr e = {{0}};
    int rc = save_to(out, c, SHARD_PARAMS, world, &e);
    CHECK(rc != 0 && strstr(e.msg, "nowhere/step_00000007.tmp") && strstr(e.msg, "cannot create"),
          "rank %d: a save with a rank that cannot write: rc %d, '%s'", rank, rc, e.msg);
    const char *left[] = {"step_00000007", "step_00000007.tmp", "LATEST"};
    for (int i = 0; rank == 0 && i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", out, left[i]);
        CHECK(access(path, F_OK) != 0, "a failed save left %s", path);
    }
}

// The saved directory: verifies; model.safetensors only where the weights were whole; one shard file per rank.
static void check_files(const char *dir, ShardLevel level, int ranks) {
    CkErr e = {{0}};
    CHECK(ckpt_verify(dir, NULL, &e) == 0, "verify %s: %s", dir, e.msg);
    CkptState s;
    CHECK(ckpt_read_state(dir, &s, &e) == 0, "state of %s: %s", dir, e.msg);
    CHECK(s.shard_level == level && s.shard_ranks == (level == SHARD_NONE ? 0 : ranks) &&
          s.version == (level == SHARD_NONE ? CKPT_VERSION_UNSHARDED : CKPT_VERSION),
          "%s: state.json says level %s over %d ranks, version %d", dir, shard_level_name(s.shard_level), s.shard_ranks,
          s.version);
    char path[800], file[64];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    CHECK((access(path, F_OK) == 0) == (level != SHARD_PARAMS), "%s: model.safetensors %s", dir,
          level == SHARD_PARAMS ? "written at params" : "missing");
    snprintf(path, sizeof path, "%s/optim.safetensors", dir);
    CHECK((access(path, F_OK) == 0) == (level == SHARD_NONE), "%s: optim.safetensors beside shards, or missing", dir);
    for (int r = 0; level != SHARD_NONE && r < ranks; r++) {
        ckpt_shard_name(file, sizeof file, r, ranks);
        snprintf(path, sizeof path, "%s/%s", dir, file);
        CHECK(access(path, F_OK) == 0, "%s missing", path);
    }
}

// Loads dir into rank r of a layout of n ranks (n 0: unsharded) at target level, and compares every value.
static void load_into(const char *dir, const ModelConfig *c, int n, int r, ShardLevel level) {
    CkErr e = {{0}};
    CkptState s;
    if (ckpt_read_state(dir, &s, &e) != 0) {
        CHECK(0, "state of %s: %s", dir, e.msg);
        return;
    }
    ParamTable t = params_build(c);
    ShardLayout L = n ? shard_layout(&t, c, n, r) : (ShardLayout){0};
    if (!n) level = SHARD_NONE;
    const ShardLayout *moments = level == SHARD_NONE ? NULL : &L, *weights = level == SHARD_PARAMS ? &L : NULL;
    size_t nw = weights ? L.local_total : t.total, nm = moments ? L.local_total : t.total;
    real *w = xcalloc(nw + 1, sizeof(real), "w"), *m1 = xcalloc(nm + 1, sizeof(real), "m"), *m2 = xcalloc(nm + 1, sizeof(real), "v");
    GPT m = gpt_view(c, &t, w, level, &L);
    AdamW opt = {.m = m1, .v = m2, .shard = moments};
    char what[900];
    snprintf(what, sizeof what, "%s -> rank %d of %d at %s", dir, r, n, shard_level_name(level));
    int rc = ckpt_load_model(dir, &s, &m, &e);
    CHECK(rc == 0, "%s: load model: %s", what, e.msg);
    if (rc == 0) CHECK(count_wrong(what, CKPT_WEIGHTS, weights, t.total, w) == 0, "%s: weights differ", what);
    rc = ckpt_load_optim(dir, &s, &m, &opt, &e);
    CHECK(rc == 0 && opt.step == STEP, "%s: load moments: %s", what, e.msg);
    if (rc == 0) {
        CHECK(count_wrong(what, CKPT_MOMENT1, moments, t.total, m1) == 0, "%s: m differs", what);
        CHECK(count_wrong(what, CKPT_MOMENT2, moments, t.total, m2) == 0, "%s: v differs", what);
    }
    free(w), free(m1), free(m2);
    if (n) shard_layout_free(&L);
    params_free(&t);
}

// A shard file missing, or damaged in its data, is refused by name (rank 0 on a copy, so shard.sh sees the originals).
static void check_damage(const char *root, int ranks) {
    char dir[600], cmd[2000], path[800], file[64];
    snprintf(dir, sizeof dir, "%s/damaged", root);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s/untied_params/step_%08d' '%s'", dir, root, STEP, dir);
    CHECK(system(cmd) == 0, "%s failed", cmd);
    ckpt_shard_name(file, sizeof file, ranks - 1, ranks);
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r+b");
    CHECK(f && fseek(f, -3, SEEK_END) == 0 && fputc('X', f) != EOF && fclose(f) == 0, "flip a byte of %s", path);
    CkErr e = {{0}};
    CHECK(ckpt_verify(dir, NULL, &e) != 0 && strstr(e.msg, file) && strstr(e.msg, "CRC32"), "damaged shard: %s", e.msg);
    CHECK(unlink(path) == 0, "remove %s", path);
    CHECK(ckpt_verify(dir, NULL, &e) != 0 && strstr(e.msg, file) && strstr(e.msg, "cannot open"), "missing shard: %s", e.msg);
}

// A step directory's extra file (tokenizer.json, hf_meta.json) as bytes for ckpt_save, when state.json names it.
static void *extra_file(const char *dir, const char *name, bool has, size_t *len) {
    char path[4200];
    CkErr e;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    void *text = has ? fs_read_file(path, len, &e) : NULL;
    if (has && !text) fail("%s", e.msg);
    return text;
}

// reshard SRC OUT LEVEL: every rank loads its slices of checkpoint SRC (any layout) through the resume path's reader and
// saves them sharded at LEVEL over this job's ranks as OUT/step_N: a real run's checkpoint, sharded, for train --resume.
static int reshard(const char *src, const char *out, const char *level_name) {
    Comm *world = comm_world();
    ShardLevel level;
    if (!shard_level_parse(level_name, &level) || level == SHARD_NONE) fail_usage("reshard: LEVEL is optim, grads or params");
    CkptState s;
    CkErr e;
    if (ckpt_read_state(src, &s, &e) != 0) fail_usage("%s", e.msg);
    ParamTable t = params_build(&s.model);
    ShardLayout L = shard_layout(&t, &s.model, comm_size(world), comm_rank(world));
    size_t nw = level == SHARD_PARAMS ? L.local_total : t.total;
    real *w = xmalloc(nw * sizeof(real) + 1, "w"), *m1 = xmalloc(L.local_total * sizeof(real) + 1, "m");
    real *m2 = xmalloc(L.local_total * sizeof(real) + 1, "v");
    GPT m = gpt_view(&s.model, &t, w, level, &L);
    AdamW opt = {.m = m1, .v = m2, .shard = &L};
    if (ckpt_load_model(src, &s, &m, &e) != 0 || ckpt_load_optim(src, &s, &m, &opt, &e) != 0) fail_usage("%s", e.msg);
    s.tok.json = extra_file(src, "tokenizer.json", s.tok.has_file, &s.tok.json_len);
    s.meta.json = extra_file(src, "hf_meta.json", s.meta.has_file, &s.meta.json_len);
    int rc = ckpt_save(out, &s, &m, &opt, 0, world, &e);
    if (rc != 0) comm_fail_all("reshard: %s", e.msg);
    free((void *)s.tok.json), free((void *)s.meta.json);
    free(w), free(m1), free(m2);
    shard_layout_free(&L);
    params_free(&t);
    comm_finalize();
    return 0;
}

int main(int argc, char **argv) {
    comm_init(&argc, &argv);
    comm_set_timeout(60);
    if (argc == 5 && strcmp(argv[1], "reshard") == 0) return reshard(argv[2], argv[3], argv[4]);
    if (argc != 2) fail_usage("usage: test_ckpt_shard DIR, or test_ckpt_shard reshard SRC OUT LEVEL (under mpiexec)");
    Comm *world = comm_world();
    int rank = comm_rank(world), ranks = comm_size(world);
    const char *root = argv[1];
    const char *names[] = {"untied", "tied"};
    const ShardLevel levels[] = {SHARD_NONE, SHARD_OPTIM, SHARD_PARAMS};
    for (int k = 0; k < 2; k++) {
        ModelConfig c = model_config(k == 1);
        for (int l = 0; l < 3; l++) save(root, names[k], &c, levels[l], world);
        for (int l = 0; l < 3; l++) {
            char dir[700];
            snprintf(dir, sizeof dir, "%s/%s_%s/step_%08d", root, names[k], shard_level_name(levels[l]), STEP);
            if (rank == 0) check_files(dir, levels[l], ranks);
            int job = 0;   // every (layout, rank, level) once over this job's ranks
            for (int n = 0; n <= MAX_TARGET_RANKS; n++)
                for (int r = 0; r < (n ? n : 1); r++)
                    for (int tl = 0; tl < (n ? 3 : 1); tl++)   // unsharded buffers: one level
                        if (job++ % ranks == rank) load_into(dir, &c, n, r, levels[tl]);
        }
    }
    comm_barrier(world, "test loads");
    if (rank == 0) check_damage(root, ranks);
    if (ranks > 1) {
        ModelConfig c = model_config(false);
        check_failed_save(root, &c, world);
    }
    int64_t failed = check_failed;
    comm_allreduce(world, &failed, 1, COMM_I64, COMM_SUM, "test failures");
    if (rank == 0) printf("%d ranks: %d checks passed on rank 0, %" PRId64 " failed over all ranks\n", ranks, check_passed, failed);
    comm_finalize();
    return failed ? 1 : 0;
}
