// checkpoints/summary.c — a checkpoint summarised for `ringgpt inspect`: which step, verified, its state, size and run flags.
#include "checkpoints/summary.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoints/fsio.h"
#include "checkpoints/hf.h"
#include "checkpoints/train_ckpt.h"
#include "core/args.h"
#include "model/config.h"

static bool has_entry(const char *dir, const char *name) {
    char path[4200];
    struct stat st;
    fs_join(path, sizeof path, dir, name);
    return stat(path, &st) == 0;
}

static bool is_step_dir_name(const char *name) {
    if (strncmp(name, "step_", 5) != 0 || !name[5]) return false;
    return strspn(name + 5, "0123456789") == strlen(name + 5);
}

static bool is_step_dir(const char *path) {
    return has_entry(path, "MANIFEST.json") || has_entry(path, "state.json") || has_entry(path, "model.safetensors");
}

// Committed step_* directories in run (valid or not), or -1 with e.
static int count_steps(const char *run, CkErr *e) {
    DIR *d = opendir(run);
    if (!d) return ck_err(e, "%s: cannot open directory (%s)", run, strerror(errno)), -1;
    int n = 0;
    for (struct dirent *de; (de = readdir(d)) != NULL;) n += is_step_dir_name(de->d_name);
    closedir(d);
    return n;
}

bool ckpt_summary_applies(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return false;
    CkErr e;
    return is_step_dir(path) || has_entry(path, "LATEST") || count_steps(path, &e) > 0;
}

// The step directory run's LATEST names (a step_<digits> name of an existing entry). Returns 1, 0 without LATEST,
// -1 with e when LATEST holds something else.
static int latest_dir(const char *run, char *dir, size_t n, CkErr *e) {
    char path[4200];
    fs_join(path, sizeof path, run, "LATEST");
    if (!has_entry(run, "LATEST")) return 0;
    size_t len;
    char *text = (char *)fs_read_file(path, &len, e);
    if (!text) return -1;
    text[strcspn(text, "\n")] = 0;
    for (char *c = text; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';   // a damaged file's bytes stay off the terminal
    bool good = is_step_dir_name(text) && strlen(text) < 64 && has_entry(run, text);
    if (good) fs_join(dir, n, run, text);
    else ck_err(e, "%s: names no step directory of the run (holds \"%.40s\"); give a step directory instead", path, text);
    free(text);
    return good ? 1 : -1;
}

// s->dir: path itself for a step directory, else the run's LATEST (or, without one, its newest valid step).
static int resolve(const char *path, CkptSummary *s, CkErr *e) {
    snprintf(s->dir, sizeof s->dir, "%s", path);
    if (hf_is_dir(path) && !has_entry(path, "MANIFEST.json"))
        return ck_err(e, "%s: a Hugging Face model directory, not a ringgpt checkpoint; `ringgpt import %s --out DIR` "
                      "makes one", path, path), -1;
    if (is_step_dir(path)) return 0;
    s->from_run = true;
    if ((s->run_checkpoints = count_steps(path, e)) < 0) return -1;
    int rc = latest_dir(path, s->dir, sizeof s->dir, e);
    if (rc != 0) return rc < 0 ? -1 : 0;
    s->latest_missing = true;
    if (ckpt_newer_valid(path, -1, s->dir, sizeof s->dir, NULL)) return 0;
    ck_err(e, "%s: no LATEST and none of its %d step directories verifies; the run has no usable checkpoint", path,
           s->run_checkpoints);
    return -1;
}

// A step directory that fails its checks: the problem, and for a run directory the checkpoint that does verify.
static void damaged(const char *path, const CkptSummary *s, CkErr *e) {
    char valid[4200];
    if (!s->from_run || !ckpt_newer_valid(path, -1, valid, sizeof valid, NULL)) return;
    size_t len = strlen(e->msg);
    snprintf(e->msg + len, sizeof e->msg - len, "; it is LATEST of %s, whose newest valid checkpoint is %s", path, valid);
}

// The files of the step directory and their bytes.
static int disk_size(CkptSummary *s, CkErr *e) {
    DIR *d = opendir(s->dir);
    if (!d) return ck_err(e, "%s: cannot open directory (%s)", s->dir, strerror(errno)), -1;
    char path[4200];
    struct stat st;
    for (struct dirent *de; (de = readdir(d)) != NULL;) {
        fs_join(path, sizeof path, s->dir, de->d_name);
        if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) continue;
        s->bytes += (uint64_t)st.st_size;
        s->files++;
    }
    closedir(d);
    return 0;
}

// What the run's config.json adds to state.json's run flags: the preset, the loss and the document mask. Its checksum
// is checked as --resume checks it; other keys are passed over.
static int run_flags(const char *path, CkptSummary *s, CkErr *e) {
    char config[4200];
    s->doc_mask = -1;
    if (!(s->has_config = ckpt_run_config(path, config, sizeof config))) return 0;
    const char *preset = NULL, *loss_on = NULL;
    bool doc_mask = false;
    ArgSpec specs[] = {
        {"--model", ARG_STRING, &preset, "", false, NULL},
        {"--loss-on", ARG_STRING, &loss_on, "", false, NULL},
        {"--doc-mask", ARG_BOOL, &doc_mask, "", false, NULL},
    };
    static const char *const only[] = {"--model", "--loss-on", "--doc-mask", NULL};
    static const ArgCommand train = {"train", "", ""};
    size_t len;
    char *text = (char *)fs_read_file(config, &len, e);
    if (!text) return -1;
    int rc = args_json_load(&train, specs, 3, text, len, config, NULL, only, e->msg, sizeof e->msg);
    free(text);
    if (rc != 0) return -1;
    snprintf(s->preset, sizeof s->preset, "%s", preset ? preset : "");
    snprintf(s->loss_on, sizeof s->loss_on, "%s", loss_on ? loss_on : "");
    if (specs[2].seen) s->doc_mask = doc_mask;
    return 0;
}

int ckpt_summary(const char *path, CkptSummary *s, CkErr *e) {
    memset(s, 0, sizeof *s);
    if (resolve(path, s, e) != 0) return -1;
    if (ckpt_verify(s->dir, NULL, e) != 0 || ckpt_read_state(s->dir, &s->state, e) != 0) {
        damaged(path, s, e);
        return -1;
    }
    const ModelConfig *c = &s->state.model;
    if (c->n_layer <= 0 || c->dim <= 0 || c->n_head <= 0 || c->n_kv_head <= 0 || c->ffn_dim <= 0 || c->vocab_size <= 0 ||
        c->dim % c->n_head != 0)
        return ck_err(e, "%s/state.json: model is no valid shape (%d layers, dim %d, %d heads, %d kv heads, ffn %d, vocab %d)",
                      s->dir, c->n_layer, c->dim, c->n_head, c->n_kv_head, c->ffn_dim, c->vocab_size), -1;
    s->params = config_num_params(c);
    if (disk_size(s, e) != 0) return -1;
    return run_flags(s->dir, s, e);
}
