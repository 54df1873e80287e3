// bench/memory_plan.c — from the memory plan: the longest T per preset and recompute mode for a budget per rank, and per sp.
// Usage: memory_plan [--budget-mib M] [--batch B] [--ring-preset NAME] [--shard LEVEL --ranks N]. Prints one JSON object
// per line ({"preset", "recompute", "sp", "max_seq_len", "budget_mib", "shard", "ranks", "model_state_mib"}) for
// bench/memory.sh, which tabulates them.
// The runtime part of the plan is this process's own resident set (its libraries), as `ringgpt train` measures it.
#include <stdio.h>
#include <string.h>

#include "core/args.h"
#include "core/common.h"
#include "core/real.h"
#include "model/memplan.h"

int main(int argc, char **argv) {
    double budget_mib = 16384;
    int batch = 1, loss_chunk = 256;
    const char *ring_preset = "small", *shard_name = "none";
    int ranks = 1;
    ArgSpec specs[] = {
        {"--budget-mib", ARG_DOUBLE, &budget_mib, "memory per rank (MiB)"},
        {"--batch", ARG_INT, &batch, "sequences per micro-step"},
        {"--ring-preset", ARG_STRING, &ring_preset, "preset of the per-sp table"},
        {"--shard", ARG_STRING, &shard_name, "none, optim, grads or params: the model state split over --ranks"},
        {"--ranks", ARG_INT, &ranks, "ranks of the job (dp x sp) the state is split over"},
    };
    ArgCommand cmd = {"memory_plan", "memory_plan [flags]", "Longest T that fits a budget, per preset and mode."};
    args_parse(&cmd, specs, sizeof specs / sizeof specs[0], argc, argv, NULL, 0);
    if (!(budget_mib > 0)) fail_usage("--budget-mib must be positive (got %g)", budget_mib);
    ShardLevel shard;
    if (!shard_level_parse(shard_name, &shard)) fail_usage("unknown --shard '%s'; use none, optim, grads or params", shard_name);
    if (ranks < 1 || ranks > 65536) fail_usage("--ranks must be in 1..65536 (got %d)", ranks);
    double runtime = mem_rss_now_bytes(), budget = budget_mib * 1048576;
    const char *presets[] = {"tiny", "small", "base", "125m"};
    for (int p = 0; p < 4; p++) {
        ModelConfig c;
        config_preset(&c, presets[p]);
        int sps[] = {1, 2, 4, 8};
        for (int s = 0; s < 4; s++) {
            if (s > 0 && strcmp(presets[p], ring_preset) != 0) continue;
            for (int r = RECOMPUTE_NONE; r <= RECOMPUTE_FULL; r++) {
                MemPlanInput in = {.model = &c, .batch = batch, .sp = sps[s], .shard = shard, .ranks = ranks, .recompute = r,
                                   .store = ACT_F32, .loss_chunk = loss_chunk, .runtime_bytes = runtime, .host_collectives = true};
                long T = memplan_max_seq_len(in, budget);
                in.T_local = (int)(T / sps[s]);
                MemPlan at = memplan(in);
                printf("{\"preset\": \"%s\", \"recompute\": \"%s\", \"sp\": %d, \"batch\": %d, \"budget_mib\": %.0f, "
                       "\"max_seq_len\": %ld, \"kept_bytes_per_token_layer\": %.0f, \"work_bytes_per_token\": %.0f, "
                       "\"runtime_mib\": %.1f, \"shard\": \"%s\", \"ranks\": %d, \"model_state_mib\": %.1f}\n",
                       presets[p], recompute_name(r), sps[s], batch, budget_mib, T, at.kept_per_token_layer,
                       at.work_per_token, runtime / 1048576, shard_level_name(shard), ranks, at.model_state / 1048576);
            }
        }
    }
    return 0;
}
