// checkpoints/load.h — a model for evaluation and decoding, from a checkpoint (step or run directory) or an HF Llama directory.
#pragma once
#include <stdio.h>

#include "checkpoints/checkpoint.h"
#include "model/gpt.h"

// Loads the model at path onto the CPU backend. rope_theta > 0 overrides the stored base. *state
// (optional) gets the checkpoint's state (zeroed for HF, whose max_position_embeddings becomes
// run.seq_len). used (size n) gets the directory actually read: the step directory a run directory
// resolved to (its newest valid checkpoint; a damaged newer one is reported once), else path itself —
// pass it on (model_tokenizer) so that nothing resolves the run directory twice, and name it in the
// command's report. A missing or damaged model is a usage error (exit 2) naming the file.
void load_model(const char *path, GPT *m, float rope_theta, CkptState *state, char *used, size_t n);
// When path was a run directory: one line on f (rank 0) naming the checkpoint load_model used,
// "<command>: checkpoint <used> (step N of <path>)". Nothing for a step or HF directory (the user named it).
void load_report(const char *command, const char *path, const char *used, const CkptState *s, FILE *f);
