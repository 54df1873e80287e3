// train/metrics.h — what a training step reports: the console progress line and OUT/metrics.jsonl.
#pragma once
#include <stdio.h>

#include "model/config.h"

typedef struct {
    long step, total_steps;     // step is 1-based when printed
    double loss, lr, grad_norm;
    double step_ms, tokens_per_s, mfu;   // mfu < 0: unknown (the CPU, or a GPU whose peak is not known)
    double tokens_seen;         // global tokens trained on after this step (resume included)
    double elapsed_s;           // wall time of the run so far (a resumed run continues the count)
    double peak_rss_mb;
    double device_mb, device_peak_mb;   // GPU memory of the largest rank now and at most; < 0 on the CPU
    double val_loss;            // < 0: not evaluated this step
    double shard_comm_s, shard_wait_s;   // --shard: the step's gather/reduce-scatter seconds and the part of them the
                                         // ranks waited (means over the ranks); shard_comm_s < 0: unsharded
    double eta_s;
    int dp, sp;
    int ranks;                  // > 1: rank_times holds every rank's (compute, ring wait, all-reduce, data) seconds
    const double *rank_times;   // (ranks, 4), train/rank_times.h
    const char *straggler;      // a note for the progress line ("straggler: rank 2 ..."), NULL or "" for none
} StepMetrics;

typedef struct {
    FILE *jsonl;                // OUT/metrics.jsonl (rank 0 only; NULL elsewhere)
    char path[4096];
    double elapsed_before;      // elapsed_s of the step a resumed run starts after (0 for a new run)
} MetricsLog;

// Training FLOPs per token (forward + backward): 6 per matmul weight (the LM head included) plus causal
// attention, 6·T·C per layer. The convention of bench/gpu_train.sh and the usual MFU.
double metrics_flops_per_token(const ModelConfig *c, int seq_len);

// Opens OUT/metrics.jsonl: for writing in a fresh run (resume_step 0), for appending when
// resuming after step resume_step (lines of later steps, left by the interrupted run, are
// dropped first). Rank 0 only.
void metrics_open(MetricsLog *log, const char *out_dir, long resume_step);
void metrics_close(MetricsLog *log);
// Writes one JSON object line and, when print is set, the console line.
void metrics_log(MetricsLog *log, const StepMetrics *m, int print);
