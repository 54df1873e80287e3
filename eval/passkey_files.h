// eval/passkey_files.h — the passkey result files: OUT.json (the run and every cell), OUT.csv (one row per cell), OUT.docs.jsonl (every trial's document).
#pragma once
#include <stdint.h>

#include "eval/passkey.h"
#include "model/config.h"

// What the JSON records beside the grid: the model, the run's layout and time.
typedef struct {
    const char *ckpt, *label;      // the checkpoint path given, the run's name in the JSON and the heatmap
    const ModelConfig *model;
    int64_t trained_len;           // the checkpoint's training sequence length
    int sp, dp;
    double seconds;                // the grid's wall time
} PasskeyRunInfo;

// Each writes path whole (scripts/plot_passkey.py reads the JSON); a file that cannot be written ends the process
// with one line naming it (core/common.h's checked I/O).
void passkey_write_json(const char *path, const PasskeyGrid *g, const PasskeyResults *r, const PasskeyRunInfo *ri);
void passkey_write_csv(const char *path, const PasskeyGrid *g, const PasskeyResults *r);
// Every trial's document rebuilt from the seed (a document depends on nothing the model did) beside its answer:
// its cell, keys, where its needle, key and answer sit, its haystack window's start and the prompt the model read.
void passkey_write_docs(const char *path, const PasskeyGrid *g, const PasskeyResults *r);
