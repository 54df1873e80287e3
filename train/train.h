// train/train.h — a training run from its resolved flags: layout, data, model, the loop, checkpoints, metrics.
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "model/config.h"
#include "model/memplan.h"
#include "model/shard.h"

// The resolved flags of `ringgpt train` (cli/train.c fills them from the command line, --config and a saved
// run's config.json; see `ringgpt train --help` for each).
typedef struct TrainConfig {
    const char *data, *val_data, *out, *model, *schedule;
    ModelConfig model_cfg;
    int seq_len, batch, grad_accum, steps, warmup, threads, log_every, eval_every, eval_batches, loss_chunk;
    float lr, min_lr, weight_decay, beta1, beta2, clip, val_fraction;
    int64_t seed;
    bool tie_embeddings;
    bool no_shuffle;     // samples in stream order
    int dp, sp;          // layout (one rank: 1×1); world = dp·sp ranks
    int dp_index, sp_index;
    float comm_timeout;  // seconds any wait for another rank may take before the job is aborted
    const char *resume, *init_from;   // checkpoints: --resume [auto|PATH], --init-from CKPT|HF_DIR
    const char *out_exists;           // --out-exists: refuse or move (a new run into a directory that holds another)
    int ckpt_every, keep;
    const char *device;  // --device: cpu, cuda or auto
    const char *loss_on; // --loss-on: masked (the data's loss weights apply) or all
    bool doc_mask;       // --doc-mask: attention does not cross document boundaries inside a window
    const char *config;  // --config FILE: flags as JSON (the command line wins)
    int init_vocab;      // the --init-from source's vocab (0 without one): the data must use the same tokenizer
    bool sp_inherited;   // --sp came from the saved config of a resumed run (another world size may not hold it)
    char *config_json;   // the resolved flags, written to OUT/config.json
    char *same_json;     // the resolved flags every rank must share (this machine's --threads and --device aside)
    const char *recompute;   // --recompute: none, mlp or full
    Recompute recompute_mode;
    const char *shard;   // --shard: none, optim, grads or params (model/shard.h)
    ShardLevel shard_level;
    float mem_budget;    // --mem-budget MiB per rank (0: the machine's available memory)
    bool ring_overlap;   // --ring-overlap: post the next KV hop before computing the block (false: the serial baseline)
    float peak_tflops;   // --peak-tflops: the device's dense bf16 peak per rank for MFU (0: the GPU table's)
    const char *matmul, *attn, *comm;   // CUDA: --matmul, --attn, --comm (NULL: the defaults)
    const char *activations;            // CUDA: --activations fp32 or bf16 (NULL: fp32)
    int logits_mb;       // CUDA: --logits-mb, the fused LM head's logits budget
    const char *comm_progress;   // --comm-progress: auto, compute, thread or off (core/comm.h: CommProgress)
    float stop_loss;     // --stop-loss: end the run once the mean loss of the last --stop-window steps is at most this (0: off)
    int stop_window;     // --stop-window: steps in that mean
    float straggler;     // --straggler: name a rank whose compute exceeds the median by this fraction (0: off)
    int straggler_every; // --straggler-every: steps per straggler check
} TrainConfig;

// The tests' fault injection, from environment variables (test hooks, not settings; docs/testing.md):
//   RINGGPT_DEBUG_EXIT=RANK:STEP[:stall|kill]  that rank leaves the job at that step (exit 3), stalls, or SIGKILLs itself;
//   RINGGPT_DEBUG_SLOW=RANK:MS                 that rank sleeps MS ms in every step's compute;
//   RINGGPT_DEBUG_WEIGHTS=FILE                 the final weights, whole (table order, raw fp32), into FILE (read by the
//                                              shard equivalence test: every rank writes its slices under --shard params).
typedef struct {
    int exit_rank, exit_step;   // -1: no rank leaves
    bool stall, kill;
    int slow_rank, slow_ms;     // -1: no rank is slowed
    const char *weights;        // NULL: no final weights written
} DebugHooks;

// The hooks the environment sets; a malformed value is a usage error naming the variable (exit 2).
DebugHooks train_debug_hooks(void);


// Checks the values every rank sees alike; a bad one is a usage error (exit 2) naming the flag.
void train_check_config(const TrainConfig *t);
// Runs the training run t describes on the world comm_init started: the dp × sp layout, the data, the
// model (fresh, --resume or --init-from), the steps, checkpoints and metrics. Returns the exit code: 0 when
// every step ran or --stop-loss ended the run, EXIT_STOPPED when a signal stopped the run after a step and its checkpoint (train/stop.h).
int train_run(TrainConfig *t);
