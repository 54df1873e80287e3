// checkpoints/train_ckpt.h — what the training loop calls: --resume / --init-from before the loop, saves after a step.
#pragma once
#include <stdbool.h>

#include "checkpoints/checkpoint.h"
#include "core/comm.h"
#include "data/source.h"
#include "model/adamw.h"
#include "model/gpt.h"

typedef struct {
    const char *out;        // --out: where step_NNNNNNNN/ and LATEST live
    const char *resume;     // NULL, "latest" (bare --resume), "auto", or a checkpoint path
    const char *init_from;  // --init-from: a checkpoint or HF directory (weights only)
    int every;              // --ckpt-every: N > 0 every N steps and at the end; 0 only at the end; < 0 never
    int keep;               // --keep: newest K step directories (0 = all)
    CkptState base;         // the run as the flags describe it (model (with its --rope-theta-ramp), run flags, seed, layout)
    Comm *world;
    int rank;
    long saved_step;        // the step of the last checkpoint this run saved (0: none yet)
} CkptHook;

// The run's flags (config.json) that belong to a checkpoint or run directory: path/config.json for a
// run directory, the parent's for a step directory. False (buf "") when there is none or path is an
// HF directory (whose config.json is HF's).
bool ckpt_run_config(const char *path, char *buf, size_t n);
// The architecture of an --init-from source: a ringgpt checkpoint's state.json or an HF config.json.
void ckpt_source_model(const char *src, ModelConfig *c);
// Writes OUT/config.json (tmp + rename) with its checksum (args_json_sign), after removing what failed saves left
// (step_*.tmp); fails with the path on an error, leaving no config.json.tmp.
void ckpt_write_run_config(const char *out, const char *json);
// A bare `--resume` (last argument, or followed by another flag) becomes `--resume=latest`, so the
// flag parser sees a value. Call before parsing.
void ckpt_normalize_resume_flag(int argc, char **argv);
// Before the loop: resumes (model, AdamW moments and step, data position) from the newest valid
// checkpoint when asked, or loads --init-from weights; returns the first step index to run. m and opt are loaded as
// they are: sharded ones (train --shard: shard_model before this call) get this rank's slices, from a
// checkpoint of any rank count, layout and shard level (checkpoints/FORMAT.md). Refused (exit 2,
// nothing written): --steps at or below the checkpoint's step; an explicit older step of --out while a newer
// valid one exists there (it would be replaced).
long ckpt_train_begin(CkptHook *h, GPT *m, AdamW *opt, DataSource *train);
// Releases what ckpt_train_begin kept for the saves (the source model's metadata).
void ckpt_train_end(CkptHook *h);
// After `done` optimizer steps (1-based count) of `total`: saves when due; every rank calls it. Unsharded, rank 0
// writes and the others wait at a barrier; sharded (opt->shard set), every rank writes its shard file and rank 0
// commits (ckpt_save). next_lr is the schedule's lr of step index `done`.
void ckpt_train_step_done(CkptHook *h, long done, long total, const GPT *m, const AdamW *opt, DataSource *train,
                          double next_lr);
// Saves after `done` steps now, whatever --ckpt-every says (a stop on a signal), unless that step is saved already.
void ckpt_train_save(CkptHook *h, long done, const GPT *m, const AdamW *opt, DataSource *train, double next_lr);
