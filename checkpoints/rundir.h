// checkpoints/rundir.h — a run directory belongs to one run: claimed (locked; another run's refused or moved aside) before anything is written.
#pragma once
#include <stdbool.h>

#include "core/comm.h"
#include "core/outdir.h"

// The entries that make a directory a training run's: config.json, metrics.jsonl, LATEST, step_* (damaged ones too).
bool rundir_is_run_entry(const char *name);
// True when the checkpoint or run directory at path belongs to the run directory out (path is out, or a step
// directory inside it); false when either does not exist.
bool rundir_contains(const char *out, const char *path);
// Claims --out for `ringgpt train`, on every rank alike (rank 0 touches the file system, every rank gets its
// verdict): a run that continues out (--resume, --resume auto, --resume out/step_N) locks it; a new run — one
// that starts, fine-tunes, or resumes a checkpoint of another directory into out — claims it: locked, and when
// it holds another run, refused (exit 2, naming --resume, a fresh --out and --out-exists move) or, with
// OUTDIR_MOVE, moved aside to out.oldN first. Another process writing out, an --out that is a file, or an
// --init-from inside out is refused (exit 2). Writes nothing but the lock file (and out itself when missing).
void rundir_claim_train(const char *out, const char *resume, const char *init_from, OutdirMode mode, Comm *world);
// Claims out for a command of one process that writes a checkpoint into it (`ringgpt import`), as above.
void rundir_claim_new(const char *out, OutdirMode mode, const char *flag);
