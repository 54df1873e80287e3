// checkpoints/summary.h — what `ringgpt inspect CKPT` reports: a checkpoint's step, model, tokenizer, layout, run flags, size.
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "checkpoints/checkpoint.h"

typedef struct {
    char dir[4200];         // the step directory summarised: the path given, or what its run directory's LATEST names
    bool from_run;          // the path given was a run directory
    bool latest_missing;    //   ... without LATEST: dir is its newest valid step directory
    int run_checkpoints;    //   ... its committed step_* directories (valid or not); 0 for a step directory
    CkptState state;        // state.json (kind, step, model, run flags, layout, tokenizer, init_from)
    int64_t params;         // parameters of the model's shape (the parameter table's count)
    uint64_t bytes;         // the step directory's files on disk
    int files;              //   ... how many
    bool has_config;        // the run's config.json was found (an import has none)
    char preset[32];        // from config.json: --model ("" when not recorded)
    char loss_on[16];       //   --loss-on ("" when not recorded)
    int doc_mask;           //   --doc-mask: 1 on, 0 off, -1 not recorded
} CkptSummary;

// True when path is a directory that holds a checkpoint (MANIFEST.json, state.json, model.safetensors) or a run's
// checkpoints (LATEST, step_*): what `inspect` summarises as a checkpoint rather than a dataset.
bool ckpt_summary_applies(const char *path);
// Summarises the checkpoint at path: a step directory, or a run directory (the step its LATEST names; without LATEST
// the newest valid one). The step directory must verify (MANIFEST.json: every file's size and CRC32), its state.json
// parse, and the run's config.json (when there is one) pass its checksum. Returns 0, or -1 with e naming the
// problem (for a damaged LATEST step, also the newest valid checkpoint of the run).
int ckpt_summary(const char *path, CkptSummary *s, CkErr *e);
