// train/metrics.h — what a training step reports: the console progress line and OUT/metrics.jsonl.
#pragma once
#include <stdio.h>

typedef struct {
    long step, total_steps;     // step is 1-based when printed
    double loss, lr, grad_norm;
    double step_ms, tokens_per_s, mfu;   // mfu < 0: unknown
    double peak_rss_mb;
    double device_peak_mb;      // the device allocator's high-water mark; < 0: no device
    double val_loss;            // < 0: not evaluated this step
    double eta_s;
    int dp, sp;
} StepMetrics;

typedef struct {
    FILE *jsonl;                // OUT/metrics.jsonl (rank 0 only; NULL elsewhere)
    char path[4096];
} MetricsLog;

// Opens OUT/metrics.jsonl: for writing in a fresh run (resume_step 0), for appending when
// resuming after step resume_step (lines of later steps, left by the interrupted run, are
// dropped first). Rank 0 only.
void metrics_open(MetricsLog *log, const char *out_dir, long resume_step);
void metrics_close(MetricsLog *log);
// Writes one JSON object line and, when print is set, the console line.
void metrics_log(MetricsLog *log, const StepMetrics *m, int print);
