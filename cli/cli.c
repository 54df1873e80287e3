// cli/cli.c — what the commands share: the dp × sp grid of the inference commands, the default thread count.
#include "cli/cli.h"

#include "core/common.h"

CommGrid cli_infer_grid(int sp, bool auto_threads, int *threads) {
    if (sp < 1) comm_fail_usage_all("--sp must be at least 1 (got %d)", sp);
    CommGrid g = comm_grid(sp);   // a world that sp does not divide is a usage error
    if (auto_threads) *threads = cli_node_threads();   // a given value is checked by cpu_threads
    return g;
}

int cli_node_threads(void) {
    int n = cpu_cores() / comm_node_size();
    return n > 0 ? n : 1;
}
