// train/rank_times.c — every rank's step times on rank 0 (one all-reduce) and the straggler check over a window of steps.
#include "train/rank_times.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

void rank_times_open(RankTimesLog *log, int world, double threshold, int every) {
    *log = (RankTimesLog){.world = world, .threshold = threshold, .every = every > 0 ? every : 1, .first_step = 0};
    log->all = xcalloc((size_t)world * RANK_TIMES_FIELDS, sizeof(double), "per-rank step times");
    log->window = xcalloc((size_t)world, sizeof(double), "per-rank compute window");
}

void rank_times_close(RankTimesLog *log) {
    free(log->all);
    free(log->window);
    *log = (RankTimesLog){0};
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(const double *x, int n) {
    double *s = xmalloc((size_t)n * sizeof(double), "median");
    memcpy(s, x, (size_t)n * sizeof(double));
    qsort(s, (size_t)n, sizeof(double), cmp_double);
    double m = n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
    free(s);
    return m;
}

// The slowest rank of the window, when its compute exceeds the median by more than the threshold.
static bool check_window(const RankTimesLog *log, long step, char *note, int n) {
    double med = median(log->window, log->world);
    int worst = 0;
    for (int r = 1; r < log->world; r++)
        if (log->window[r] > log->window[worst]) worst = r;
    if (!(med > 0) || log->window[worst] <= med * (1 + log->threshold)) return false;
    snprintf(note, (size_t)n, "straggler: rank %d +%.0f%% compute (%.2f s vs median %.2f s, steps %ld-%ld)", worst,
             100 * (log->window[worst] / med - 1), log->window[worst], med, log->first_step, step);
    return true;
}

bool rank_times_step(RankTimesLog *log, const RankTimes *mine, Comm *world, long step, char *straggler, int n) {
    const int me = comm_rank(world), F = RANK_TIMES_FIELDS;
    memset(log->all, 0, (size_t)log->world * F * sizeof(double));
    double *row = log->all + (size_t)me * F;
    row[0] = mine->compute_s, row[1] = mine->ring_wait_s, row[2] = mine->allreduce_s, row[3] = mine->data_s;
    comm_allreduce(world, log->all, (size_t)log->world * F, COMM_F64, COMM_SUM, "per-rank step times");
    if (log->window_steps == 0) log->first_step = step;
    for (int r = 0; r < log->world; r++) log->window[r] += log->all[(size_t)r * F];
    straggler[0] = 0;
    if (++log->window_steps < log->every) return false;
    bool named = log->threshold > 0 && log->world > 1 && check_window(log, step, straggler, n);
    memset(log->window, 0, (size_t)log->world * sizeof(double));
    log->window_steps = 0;
    return named;
}
