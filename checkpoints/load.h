// checkpoints/load.h — a model for evaluation and decoding, from a checkpoint (step or run directory) or an HF Llama directory.
#pragma once
#include "checkpoints/checkpoint.h"
#include "model/gpt.h"

// Loads the model at path onto the CPU backend. rope_theta > 0 overrides the stored base. *state
// (optional) gets the checkpoint's state (zeroed for HF, whose max_position_embeddings becomes
// run.seq_len). A missing or damaged model is a usage error (exit 2) naming the file.
void load_model(const char *path, GPT *m, float rope_theta, CkptState *state);
