// cli/train_config.c — train's flags from files: --config, the saved OUT/config.json of --resume and --init-from, and the architecture of an --init-from source.
#include "cli/train_config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoints/train_ckpt.h"
#include "core/common.h"

const char *const TRAIN_NOT_SAVED[] = {"--config", "--resume", "--out-exists", NULL};
// Keys an older ringgpt wrote into OUT/config.json for flags it has since dropped (the tests' fault injection is
// environment variables now; the CUDA reference kernels are gone): a saved config that holds them is still read.
#define RETIRED_KEYS "--debug-exit-rank", "--debug-exit-step", "--debug-stall", "--debug-slow-rank", "--debug-slow-ms", \
                     "--debug-kill", "--fused"
// What a continued or derived run does not take from the saved config: actions and this machine's settings (a resume
// takes the run's --threads, note_rounding).
static const char *const NOT_INHERITED_ON_RESUME[] = {"--config", "--resume", "--out-exists", "--threads", "--device",
                                                      RETIRED_KEYS, NULL};
// The base ramp and the loss rule belong to the source's run: a derived run starts at the source's base and its own loss.
static const char *const NOT_INHERITED_ON_INIT[] = {"--config", "--resume", "--out-exists", "--init-from", "--out", "--threads",
                                                    "--device", RETIRED_KEYS, "--rope-theta-ramp", "--rope-theta-from", "--stop-loss", "--stop-window",
                                                    NULL};

static void check_readable(const char *flag, const char *path) {
    if (access(path, R_OK) != 0) fail_usage("%s %s: cannot open (%s); check the path", flag, path, strerror(errno));
}

// The value of a string flag of the table (NULL when unset).
static const char *str_flag(ArgSpec *specs, int n, const char *name) { return *(const char **)args_find(specs, n, name)->dst; }

// --resume names the real problem when there is no run to continue, before any other flag is missed.
static void check_resumable(const char *resume, const char *out, bool path) {
    struct stat st;
    if (path && stat(resume, &st) != 0)
        fail_usage("--resume %s: no such checkpoint or run directory (%s); check the path", resume, strerror(errno));
    if (path || strcmp(resume, "auto") == 0) return;
    if (stat(out, &st) != 0)
        fail_usage("--resume: %s holds no checkpoint (there is no such directory, so no run to continue); give the run's "
                   "--out, or start a new run without --resume", out);
    if (!S_ISDIR(st.st_mode)) fail_usage("--out %s is a file, not a run directory; give the run's --out", out);
    char dir[4200], config[4200];
    CkErr e;
    if (!ckpt_run_config(out, config, sizeof config) && ckpt_find_latest(out, dir, sizeof dir, NULL, &e) == 0)
        fail_usage("--resume: %s holds no checkpoint and no run (no config.json, no step_*/); give the run's --out, or use "
                   "--resume auto to start fresh when there is none", out);
}

// The flags whose value sets how a step's sums round, not what they compute (measured: --threads with OpenBLAS's AVX2
// kernels, the --batch x --grad-accum split, --loss-chunk, --sp; --shard on more than 2 ranks; on a GPU the CUDA
// flags). A resume takes the saved run's values, --threads too; --recompute, --ring-overlap and --comm-progress keep
// every bit and are not listed.
static const char *const ROUNDING[] = {"--threads", "--batch", "--grad-accum", "--loss-chunk", "--sp", "--shard",
                                       "--matmul", "--attn", "--activations", "--comm", "--logits-mb", NULL};
enum { N_ROUNDING = sizeof ROUNDING / sizeof ROUNDING[0] - 1 };

// A value of a config for a note: a string as it is, a number as %g, an absent key "unset".
static const char *value_text(const cJSON *v, char *buf, size_t n) {
    if (cJSON_IsString(v)) return v->valuestring;
    if (cJSON_IsNumber(v)) snprintf(buf, n, "%g", v->valuedouble);
    else snprintf(buf, n, "unset");
    return buf;
}

// One note for each ROUNDING flag given (given[i]) with another value than the run's saved config at path has, and one
// where that config does not record the run's --threads (an older ringgpt wrote 0) and none is given. Returns the saved
// --threads (0: not recorded).
static int note_rounding(const ArgSpec *specs, int n, const bool *given, const char *path) {
    size_t len;
    char *text = (char *)read_whole_file(path, &len), *now_text = args_to_json(specs, n, NULL);
    cJSON *saved = cJSON_Parse(text), *now = cJSON_Parse(now_text);
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(saved, "threads");
    int threads = cJSON_IsNumber(t) && t->valuedouble >= 1 && t->valuedouble <= ARGS_MAX_THREADS ? t->valueint : 0;
    for (int i = 0; i < N_ROUNDING; i++) {
        const cJSON *was = cJSON_GetObjectItemCaseSensitive(saved, ROUNDING[i] + 2);
        const cJSON *is = cJSON_GetObjectItemCaseSensitive(now, ROUNDING[i] + 2);
        if (!given[i] || cJSON_Compare(was, is, true) || (i == 0 && threads == 0)) continue;   // 0: --threads
        char a[32], b[32];
        log_info("note: %s %s is not the saved run's (%s): a step's sums round otherwise, so its losses may differ from an "
                 "uninterrupted run's in the last digits; leave %s out to continue it bit for bit\n", ROUNDING[i],
                 value_text(is, a, sizeof a), value_text(was, b, sizeof b), ROUNDING[i]);
    }
    if (!given[0] && threads == 0)
        log_info("note: %s does not record the run's --threads (an older ringgpt); this run takes the free cores, so its "
                 "losses may differ from an uninterrupted run's in the last digits; the first run's --threads continues it "
                 "bit for bit\n", path);
    cJSON_Delete(saved), cJSON_Delete(now);
    free(text), free(now_text);
    return threads;
}

ShapeGiven train_apply_config_files(const ArgCommand *cmd, ArgSpec *specs, int n, int *saved_threads) {
    args_apply_config(cmd, specs, n);
    ShapeGiven g = {args_seen(specs, n, "--model"), args_seen(specs, n, "--layers"), args_seen(specs, n, "--dim"),
                    args_seen(specs, n, "--heads"), args_seen(specs, n, "--kv-heads"), args_seen(specs, n, "--ffn-dim"),
                    args_seen(specs, n, "--tie-embeddings"), args_seen(specs, n, "--rope-theta"),
                    args_seen(specs, n, "--sp"), args_seen(specs, n, "--rope-scaling")};
    const char *resume = str_flag(specs, n, "--resume"), *init_from = str_flag(specs, n, "--init-from");
    const char *out = str_flag(specs, n, "--out");
    char saved[4200];
    *saved_threads = 0;
    if (resume) {
        bool path = strcmp(resume, "latest") != 0 && strcmp(resume, "auto") != 0;
        check_resumable(resume, out, path);
        if (ckpt_run_config(path ? resume : out, saved, sizeof saved)) {
            bool given[N_ROUNDING];
            for (int i = 0; i < N_ROUNDING; i++) given[i] = args_seen(specs, n, ROUNDING[i]);
            args_apply_json(cmd, specs, n, saved, NOT_INHERITED_ON_RESUME);
            *saved_threads = note_rounding(specs, n, given, saved);
        }
    } else if (init_from) {
        check_readable("--init-from", init_from);
        if (ckpt_run_config(init_from, saved, sizeof saved)) args_apply_json(cmd, specs, n, saved, NOT_INHERITED_ON_INIT);
    }
    return g;
}

int train_adopt_source_shape(const char *init_from, const char *preset_name, ModelConfig *mc, ShapeGiven g,
                             ModelConfig *src_out) {
    ModelConfig src, preset;
    ckpt_source_model(init_from, &src);
    *src_out = src;
    config_preset(&preset, preset_name);
    struct {
        const char *flag;
        bool given;
        int *mine, theirs, preset;
    } f[] = {{"--layers", g.layers, &mc->n_layer, src.n_layer, preset.n_layer},
             {"--dim", g.dim, &mc->dim, src.dim, preset.dim},
             {"--heads", g.heads, &mc->n_head, src.n_head, preset.n_head},
             {"--kv-heads", g.kv_heads, &mc->n_kv_head, src.n_kv_head, preset.n_kv_head},
             {"--ffn-dim", g.ffn, &mc->ffn_dim, src.ffn_dim, preset.ffn_dim}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (f[i].given && *f[i].mine != f[i].theirs)
            fail_usage("--init-from %s: its %s is %d but %s gives %d; leave the shape flags out (the architecture comes "
                       "from the checkpoint)", init_from, f[i].flag + 2, f[i].theirs, f[i].flag, *f[i].mine);
        if (g.model && !f[i].given && f[i].preset != f[i].theirs)
            fail_usage("--init-from %s: its %s is %d but --model %s has %d; leave --model out (the architecture comes "
                       "from the checkpoint)", init_from, f[i].flag + 2, f[i].theirs, preset_name, f[i].preset);
        *f[i].mine = f[i].theirs;
    }
    if (g.tie && mc->tie_embeddings != src.tie_embeddings)
        fail_usage("--init-from %s: its embeddings are %s but --tie-embeddings says %s; leave the flag out", init_from,
                   src.tie_embeddings ? "tied" : "untied", mc->tie_embeddings ? "tied" : "untied");
    if (!g.rope) mc->rope_theta = src.rope_theta;
    mc->rope_scaling = src.rope_scaling;   // a --rope-scaling given keeps what its text leaves out from it
    mc->tie_embeddings = src.tie_embeddings;
    mc->norm_eps = src.norm_eps;
    return src.vocab_size;
}
