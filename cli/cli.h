// cli/cli.h — what the commands share: the dp × sp grid of the inference commands, the default thread count.
#pragma once
#include <stdbool.h>

#include "core/comm.h"

// The dp × sp grid of an inference command (eval, sample, passkey): sp must be at least 1 and divide
// the world (one line from rank 0 otherwise). With auto_threads (--threads not given), *threads becomes cli_node_threads();
// a given value is left to cpu_threads, which refuses one below 1.
CommGrid cli_infer_grid(int sp, bool auto_threads, int *threads);
// --threads when not given: every core of this node, shared among this job's ranks on it (at least 1).
int cli_node_threads(void);
