// train/stop.h — stopping a run on a signal: SIGINT, SIGTERM or SIGUSR1 on any rank makes every rank finish the step, save, exit 75.
#pragma once
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
