// train/stop.h — ending a run before --steps: a signal (every rank saves the step and exits 75) or the loss rule (--stop-loss).
#pragma once
#include <stdbool.h>

#include "core/comm.h"

// Installs the handlers: the first SIGINT, SIGTERM or SIGUSR1 (Slurm's --signal, Open MPI's mpirun forwards
// USR1 and turns its own SIGINT/SIGTERM into SIGTERM for the ranks) asks for a stop; a second SIGINT ends the
// process at once (exit 130) without a checkpoint.
void stop_install(void);
// After each step, on every rank: the signal any rank of world got (the highest number if several), 0 for none.
// One small all-reduce, so the ranks agree on the step they stop after.
int stop_agree(Comm *world);
// "SIGTERM" for SIGTERM, ...
const char *stop_signal_name(int signo);

// --stop-loss L, --stop-window N: the run ends once the mean training loss of its last N steps is at most L.
// The loss is the all-reduced one, so every rank decides alike; a resumed run fills its window again.
typedef struct {
    double limit;     // L; 0: the rule is off
    int window;       // N
    int seen;         // steps added so far (this process)
    double *losses;   // (window) the last N losses, a ring indexed by seen % window
} LossStop;

void loss_stop_init(LossStop *s, double limit, int window);
// Adds a step's loss; true when the window is full and its mean (*mean) is at most the limit.
bool loss_stop_add(LossStop *s, double loss, double *mean);
void loss_stop_free(LossStop *s);
