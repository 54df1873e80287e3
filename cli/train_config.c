// cli/train_config.c — train's flags from files: --config, the saved OUT/config.json of --resume and --init-from, and the architecture of an --init-from source.
#include "cli/train_config.h"

#include <errno.h>
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
// What a continued or derived run does not take from the saved config: actions and this machine's settings.
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

// The "threads" of a saved config.json (0 when absent): the file's other keys passed over.
static int saved_threads_of(const ArgCommand *cmd, const char *path) {
    int threads = 0;
    ArgSpec spec[] = {{"--threads", ARG_INT, &threads, "the run's CPU threads"}};
    args_apply_json_only(cmd, spec, 1, path, (const char *const[]){"--threads", NULL});
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
            args_apply_json(cmd, specs, n, saved, NOT_INHERITED_ON_RESUME);
            *saved_threads = saved_threads_of(cmd, saved);
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
