// eval/infer.h — what the inference commands (eval, sample, passkey, ruler) open and close: the dp × sp grid and its threads, the model from a checkpoint, its tokenizer.
#pragma once
#include <stdbool.h>
#include <stdio.h>

#include "checkpoints/checkpoint.h"
#include "core/comm.h"
#include "tokenizer/tokenizer.h"
#include "model/gpt.h"

// The flags every inference command has: one more (a device, a RoPE scaling) is a field here that infer_open reads.
typedef struct {
    const char *command;   // names the load report
    const char *ckpt;      // a step or training run directory, or an HF Llama directory
    int sp;                // ranks that share each sequence (the ring); the world is dp × sp
    int threads;           // per rank, when threads_given; else the node's free cores
    bool threads_given;
    float rope_theta;      // > 0: overrides the stored RoPE base
    FILE *report;          // the load report's stream (sample's stdout is its text)
} InferOptions;

typedef struct {
    const char *ckpt;      // the path given
    CommGrid grid;
    int threads;           // per rank, as resolved
    GPT model;
    CkptState state;       // the checkpoint's (zeroed for an HF import)
    Tokenizer tok;         // the model's (checkpoints/model_tokenizer.h)
    char used[4200];       // the directory read: a run directory's newest valid step, else the path given
} InferModel;

// Collective over the world: the grid (sp >= 1 dividing the world), the threads (a given count bounded, else the
// free cores, with a note on a busy machine), the model, its load report, its tokenizer. A bad flag or a missing or
// damaged model ends every rank with one line (exit 2).
void infer_open(const InferOptions *o, InferModel *im);
void infer_close(InferModel *im);
