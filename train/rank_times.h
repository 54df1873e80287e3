// train/rank_times.h — where each rank's step goes (compute, ring wait, gradient all-reduce, data), gathered for
// metrics.jsonl, and the straggler check that names a rank whose compute stands out.
#pragma once
#include <stdbool.h>

#include "core/comm.h"

// One rank's seconds in one optimizer step.
typedef struct {
    double compute_s;     // forward and backward, less the ring's waiting
    double ring_wait_s;   // blocked on ring pieces, and the serial baseline on a neighbour (RingStats wait_s + lag_s)
    double allreduce_s;   // the gradient all-reduce, waiting for the slowest rank included
    double data_s;        // fetching the step's micro-batches
} RankTimes;
enum { RANK_TIMES_FIELDS = 4 };

typedef struct {
    int world;
    double *all;        // (world, RANK_TIMES_FIELDS) every rank's times of the last step
    double *window;     // (world) compute seconds summed since the last straggler check
    int window_steps;
    double threshold;   // --straggler: a rank whose windowed compute exceeds the median by this fraction is named
    int every;          // --straggler-every: steps per check
    long first_step;    // the first step of the current window (1-based)
} RankTimesLog;

void rank_times_open(RankTimesLog *log, int world, double threshold, int every);
void rank_times_close(RankTimesLog *log);
// Gathers this step's times of every rank into log->all (every rank calls it: one all-reduce over the
// world) and, at the end of each window of `every` steps, writes into `straggler` the note the
// progress line carries ("rank 2 +85% compute (median 0.41 s, steps 11-20)"), or "" when no rank stands out.
// Returns whether a note was written.
bool rank_times_step(RankTimesLog *log, const RankTimes *mine, Comm *world, long step, char *straggler, int n);
