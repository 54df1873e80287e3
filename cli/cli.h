// cli/cli.h — what the commands share: the dp × sp grid of the inference commands, the default thread count.
#pragma once
#include <stdbool.h>

#include "core/comm.h"

// The dp × sp grid of an inference command (eval, sample, passkey, ruler) and its CPU threads: sp must be at least 1
// and divide the world (one line from rank 0 otherwise); a given --threads is bounded (args_check_threads); either way
// cli_node_threads resolves it (and notes a busy machine); then cpu_threads sets it.
CommGrid cli_infer_grid(int sp, bool threads_given, int *threads);
// --threads per rank: `given` (> 0: the user's; one note where it oversubscribes a busy machine), else the cores of
// this node that other processes leave free, shared among this job's ranks on it (cpu_default_threads), the fewest
// any rank found, with one note when other processes took cores from it. A collective: every rank calls it.
int cli_node_threads(int given);
