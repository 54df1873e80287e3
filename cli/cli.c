// cli/cli.c — what the commands share: the dp × sp grid of the inference commands, the default thread count.
#include "cli/cli.h"

#include "core/args.h"
#include "core/common.h"

CommGrid cli_infer_grid(int sp, bool threads_given, int *threads) {
    if (sp < 1) comm_fail_usage_all("--sp must be at least 1 (got %d)", sp);
    if (threads_given) args_check_threads(*threads);
    CommGrid g = comm_grid(sp);   // a world that sp does not divide is a usage error
    *threads = cli_node_threads(threads_given ? *threads : 0);
    cpu_threads(*threads);
    return g;
}

int cli_node_threads(int given) {
    int node_ranks = comm_node_size(), others;   // a collective: every rank calls this
    int64_t n = cpu_default_threads(node_ranks, &others), fewest = given > 0 ? given : n;
    char note[512];
    if (given > 0) {   // the user's count: a note where it oversubscribes the busy machine
        if (cpu_shared_note(given, node_ranks, others, note, sizeof note)) log_info("note: %s\n", note);
        return given;
    }
    comm_allreduce(comm_world(), &fewest, 1, COMM_I64, COMM_MIN, "thread count");   // every rank computes alike
    if (fewest < cpu_cores() / node_ranks)
        log_info("note: this machine is shared: %d other process%s ran on its %d core%s as this command started: "
                 "--threads %d%s (--threads sets it)\n", others, others == 1 ? "" : "es", cpu_cores(), plural(cpu_cores()),
                 (int)fewest, node_ranks > 1 ? " per rank" : "");
    return fewest < ARGS_MAX_THREADS ? (int)fewest : ARGS_MAX_THREADS;
}
