// checkpoints/rundir.c — a run directory belongs to one run: the lock, the refusal of another run's directory, moving it aside.
#include "checkpoints/rundir.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"

bool rundir_is_run_entry(const char *name) {
    return !strcmp(name, "config.json") || !strcmp(name, "metrics.jsonl") || !strcmp(name, "LATEST") ||
           !strncmp(name, "step_", 5);
}

// realpath of path into out (PATH_MAX); false when it does not exist.
static bool real(const char *path, char *out) { return realpath(path, out) != NULL; }

bool rundir_contains(const char *out, const char *path) {
    char a[PATH_MAX], b[PATH_MAX], parent[PATH_MAX + 8];
    if (!real(out, a) || !real(path, b)) return false;
    if (strcmp(a, b) == 0) return true;
    path_dirname(b, parent, sizeof parent);
    return strcmp(a, parent) == 0;
}

// A claim's verdict: 0, or the exit code with the one line in msg.
typedef struct {
    int code;
    char msg[1400];
} Verdict;

static Verdict claim(const char *out, OutdirMode mode, bool lock_only, const char *flag, const char *continue_hint) {
    Verdict v = {0};
    char err[600], moved[4200] = "";
    int errno_out = 0;
    struct stat st;
    if (stat(out, &st) == 0 && !S_ISDIR(st.st_mode)) {
        v.code = EXIT_USAGE;
        snprintf(v.msg, sizeof v.msg, "%s %s is a file, not a directory; give a directory (a new one for a new run)", flag, out);
        return v;
    }
    int rc = lock_only ? outdir_lock(out, err, sizeof err, &errno_out)
                       : outdir_claim(out, mode, rundir_is_run_entry, err, sizeof err, moved, sizeof moved, &errno_out);
    if (rc == OUTDIR_BUSY) {
        v.code = EXIT_USAGE;
        snprintf(v.msg, sizeof v.msg, "%s %s is being written by another ringgpt process (%s); wait for it to finish, or "
                 "use another %s", flag, out, err, flag);
    } else if (rc == OUTDIR_TAKEN) {
        v.code = EXIT_USAGE;
        snprintf(v.msg, sizeof v.msg, "%s %s holds another run (%s); %s, give a new %s, or add --out-exists move to move "
                 "the old run aside (nothing is deleted)", flag, out, err, continue_hint, flag);
    } else if (rc == OUTDIR_FAILED) {
        v.code = exit_code_for_errno(errno_out);
        snprintf(v.msg, sizeof v.msg, "%s %s", flag, err);
    } else if (moved[0]) {
        log_info("%s %s held an earlier run: moved it to %s (--out-exists move)\n", flag, out, moved);
    }
    return v;
}

// Every rank learns rank 0's verdict; rank 0 prints the line, every rank exits with its code.
static void agree(Verdict v, Comm *world) {
    double code = v.code;
    comm_allreduce(world, &code, 1, COMM_F64, COMM_MAX, "run directory check");
    if (code == EXIT_USAGE) comm_fail_usage_all("%s", v.msg);
    if (code != 0) comm_fail_all("%s", v.msg);
}

void rundir_claim_train(const char *out, const char *resume, const char *init_from, OutdirMode mode, Comm *world) {
    Verdict v = {0};
    bool continues = resume && (!strcmp(resume, "latest") || !strcmp(resume, "auto") || rundir_contains(out, resume));
    if (comm_rank(world) == 0) {
        if (init_from && !resume && rundir_contains(out, init_from)) {
            v.code = EXIT_USAGE;
            snprintf(v.msg, sizeof v.msg, "--init-from %s is inside --out %s: a fine-tune is a new run, and its steps would "
                     "replace the source's; give a new --out", init_from, out);
        } else {
            v = claim(out, mode, continues, "--out", "continue it with --resume");
        }
    }
    agree(v, world);
}

void rundir_claim_new(const char *out, OutdirMode mode, const char *flag) {
    Verdict v = claim(out, mode, false, flag, "choose another directory");
    if (v.code == EXIT_USAGE) fail_usage("%s", v.msg);
    if (v.code) fail("%s", v.msg);
}
