// bench/ring_bench.c — one ring of sp = world ranks: per-rank peak memory beyond the model, step time, ring wait vs compute.
// Usage: mpirun -np SP ring_bench [--seq-len T] [--steps N] [--layers L] [--dim C] [--heads H] [--kv-heads K]
//        [--recompute none|mlp|full] [--ring-overlap=false]
// Each rank prints nothing; rank 0 prints one line of key=value figures (max over ranks) for bench/ring_bench.sh.
// --ring-overlap=false waits for each exchange right after starting it (the serial baseline).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/cp.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "data/source.h"
#include "model/adamw.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "model/memplan.h"

// Current resident set of this process in MiB (/proc/self/status VmRSS).
static double rss_now_mb(void) {
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) kb = atof(line + 6);
    fclose(f);
    return kb / 1024;
}

int main(int argc, char **argv) {
    cpu_exec_setup(argv);
    comm_init(&argc, &argv);
    int T = 32768, steps = 2, layers = 2, dim = 64, heads = 4, kv_heads = 2;
    const char *recompute = "none";
    bool overlap = true;
    ArgSpec specs[] = {
        {"--seq-len", ARG_INT, &T, "global tokens per sequence"},
        {"--steps", ARG_INT, &steps, "training steps (the last one is timed)"},
        {"--layers", ARG_INT, &layers, "layers"},
        {"--dim", ARG_INT, &dim, "model width"},
        {"--heads", ARG_INT, &heads, "query heads"},
        {"--kv-heads", ARG_INT, &kv_heads, "key/value heads"},
        {"--recompute", ARG_STRING, &recompute, "none, mlp or full"},
        {"--ring-overlap", ARG_BOOL, &overlap, "start each KV hop before computing the block (=false: the serial baseline)"},
    };
    ArgCommand cmd = {"ring_bench", "mpirun -np SP ring_bench [flags]", "Ring attention memory and time per rank."};
    args_parse(&cmd, specs, sizeof specs / sizeof specs[0], argc, argv, NULL, 0);
    comm_set_timeout(3600);
    CommGrid g = comm_grid(comm_size(comm_world()));
    if (T % (2 * g.sp) != 0) comm_fail_usage_all("--seq-len %d is not divisible by 2·sp = %d", T, 2 * g.sp);
    ModelConfig cfg = {.n_layer = layers, .dim = dim, .n_head = heads, .n_kv_head = kv_heads, .ffn_dim = 3 * dim,
                       .vocab_size = 256, .rope_theta = 10000, .norm_eps = 1e-5f};
    Recompute mode;
    if (!recompute_parse(recompute, &mode)) comm_fail_usage_all("unknown --recompute '%s'; use none, mlp or full", recompute);
    // The plan's figure beyond the model (weights, grads, AdamW and the runtime are in the base below).
    MemPlan plan = memplan((MemPlanInput){.model = &cfg, .batch = 1, .T_local = T / g.sp, .sp = g.sp, .shard = SHARD_NONE,
                                          .ranks = 1, .recompute = mode, .store = ACT_F32, .loss_chunk = 256,
                                          .host_collectives = true});
    double plan_beyond = (plan.total - plan.weights - plan.grads - plan.optimizer) / 1048576;
    GPT m;
    gpt_init(&m, &cfg, &BACKEND_CPU, 1, GPT_TRAIN);
    m.recompute = mode;
    gpt_set_cp(&m, g.ring, &(CpConfig){.mode = CP_RING, .overlap = overlap});
    AdamW opt;
    adamw_init(&opt, &m, (AdamWConfig){0.9f, 0.95f, 1e-8f, 0.1f});
    Batch b = batch_alloc(1, T / g.sp);
    int32_t *sample = xmalloc(((size_t)T + 1) * sizeof(int32_t), "sample");
    Rng r;
    rng_seed(&r, 3);
    for (int t = 0; t <= T; t++) sample[t] = (int32_t)rng_below(&r, 256);
    batch_put_sample(&b, 0, sample, T, -1, (RankSlice){g.sp, g.sp_index, PLACE_ZIGZAG});
    // The model's own memory (weights, gradients, optimizer state, libraries) before any step: one
    // optimizer update makes the lazily allocated moments resident, then the figure is taken.
    adamw_update(&opt, &m, 0.0f);
    double base = rss_now_mb(), step_s = 0;
    for (int s = 0; s < steps; s++) {
        attn_cp_stats_reset(m.cp);
        comm_barrier(g.world, "bench step start");
        double t0 = now_seconds();
        gpt_zero_grad(&m);
        gpt_forward(&m, &b, 1.0 / T, true, NULL);
        gpt_backward(&m, &b);
        comm_allreduce(g.world, m.grads, m.table.total, COMM_REAL, COMM_SUM, "gradients");
        adamw_update(&opt, &m, 1e-4f);
        step_s = now_seconds() - t0;
    }
    RingStats st = attn_cp_stats(m.cp);
    // max over ranks: peak, base, activation peak, step time, wait, compute
    double v[6] = {peak_rss_mb(), base, peak_rss_mb() - base, step_s, st.wait_s, st.compute_s};
    comm_allreduce(g.world, v, 6, COMM_F64, COMM_MAX, "bench figures");
    log_info("sp=%d T=%d layers=%d dim=%d heads=%d/%d recompute=%s peak_rss_mb=%.1f base_rss_mb=%.1f act_peak_mb=%.1f "
             "plan_act_mb=%.1f step_s=%.3f ring_wait_s=%.3f ring_compute_s=%.3f exchanges=%ld\n",
             g.sp, T, layers, dim, heads, kv_heads, recompute, v[0], v[1], v[2], plan_beyond, v[3], v[4], v[5],
             st.exchanges);
    free(sample);
    batch_free(&b);
    adamw_free(&opt, &m);
    gpt_free(&m);
    comm_grid_free(&g);
    comm_finalize();
    return 0;
}
