// model/memplan.c — the memory plan: what one rank holds for a step, from the config, T, sp, the shard level and the recompute mode.
#include "model/memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

// The model state one rank holds at a shard level over `ranks` ranks, in elements: its slices (rank 0's, the longest)
// in *local and the longest slice of any unit in *pad (ceil(len / ranks) of the longest unit; a gathered unit's buffer
// holds ranks of them).
static void shard_sizes(const ModelConfig *c, int ranks, double *local, double *pad) {
    ParamTable t = params_build(c);
    ShardLayout s = shard_layout(&t, c, ranks, 0);   // rank 0: per = ceil(len / N), the longest slices
    *local = (double)s.local_total;
    *pad = 0;
    for (int u = 0; u < s.n_units; u++)
        if (s.per[u] > *pad) *pad = (double)s.per[u];
    shard_layout_free(&s);
    params_free(&t);
}

// The model state of a rank at a shard level, as train allocates it (model/gpt.c, model/adamw.c, model/shard_comm.c):
// every part whole at none; from optim on the moments as the rank's slices, from grads on the gradients, at params the
// weights (the last two with one longest slice of padding); and the units' buffers (MemPlan.gathered).
static void model_state(MemPlan *p, const ModelConfig *c, ShardLevel shard, int ranks, ActStore store, bool host_collectives) {
    double all = (double)config_num_params(c) * sizeof(real), local = all, pad = 0;
    if (shard != SHARD_NONE) {
        shard_sizes(c, ranks, &local, &pad);
        local *= sizeof(real), pad *= sizeof(real);
    }
    double span = pad * ranks;       // a gathered unit's buffer
    bool bf16 = store == ACT_BF16;   // bf16 activations run the bf16 GEMMs, which read a bf16 copy of the weights
    p->weights = shard == SHARD_PARAMS ? local + pad : all + (bf16 ? all / 2 : 0);
    p->grads = shard >= SHARD_GRADS ? local + pad : all;
    p->optimizer = 2 * (shard >= SHARD_OPTIM ? local : all);
    p->gathered = shard >= SHARD_OPTIM ? 2 * span + 2 * pad : 0;
    if (shard >= SHARD_GRADS) p->gathered += 2 * span;
    if (shard == SHARD_PARAMS && bf16) p->gathered += span;
    p->coll_scratch = host_collectives && shard >= SHARD_GRADS ? 2 * 2 * span : 0;
}

MemPlan memplan(const ModelConfig *c, int B, int T_local, int sp, ShardLevel shard, int ranks, Recompute r,
                ActStore store, int loss_chunk, double runtime_bytes, bool host_collectives) {
    size_t N = (size_t)B * T_local;
    ActSizes a = act_sizes(c, r, store, B, T_local, sp);
    size_t chunk = loss_chunk > 0 && (size_t)loss_chunk < N ? (size_t)loss_chunk : N;
    MemPlan p = {
        .kept = (double)a.kept_per_layer * c->n_layer,
        .work = (double)a.work,
        .shared = (double)a.shared,
        // two packets of K | V | dK | dV and one dK | dV step buffer, each block (T_local, Hkv, hd)
        .ring = (double)a.ring,
        .head_chunk = (double)chunk * c->vocab_size * sizeof(real) + chunk * sizeof(double),
        .batch = 4.0 * N * sizeof(int32_t),   // tokens, targets, positions, document numbers
        .runtime = runtime_bytes,
    };
    model_state(&p, c, shard, ranks, store, host_collectives);
    p.model_state = p.weights + p.grads + p.optimizer + p.gathered + p.coll_scratch;
    p.total = p.model_state + p.kept + p.work + p.shared + p.ring + p.head_chunk + p.batch + p.runtime;
    p.kept_per_token_layer = N ? p.kept / c->n_layer / N : 0;
    p.work_per_token = N ? p.work / N : 0;
    return p;
}

static double mib(double b) { return b / 1048576.0; }

void memplan_print(const MemPlan *p, const ModelConfig *c, Recompute r, int B, int T, int sp, ShardLevel shard,
                   int ranks) {
    log_info("memory plan per rank (--recompute %s, T=%d, B=%d, sp=%d: %d tokens here", recompute_name(r), T, B, sp, T / sp);
    if (shard != SHARD_NONE) log_info(", --shard %s over %d ranks", shard_level_name(shard), ranks);
    log_info("):\n");
    log_info("  kept for the backward   %9.1f MiB  (%.0f bytes/token/layer x %d layers)\n", mib(p->kept),
             p->kept_per_token_layer, c->n_layer);
    log_info("  one layer's working set %9.1f MiB  (%.0f bytes/token)\n", mib(p->work), p->work_per_token);
    log_info("  backward scratch, head  %9.1f MiB\n", mib(p->shared + p->head_chunk + p->batch));
    log_info("  weights / grads / AdamW %9.1f / %.1f / %.1f MiB\n", mib(p->weights), mib(p->grads), mib(p->optimizer));
    if (p->gathered > 0)
        log_info("  unit buffers            %9.1f MiB  (gathers and reduce-scatters, the longest unit's size)\n",
                 mib(p->gathered));
    if (p->coll_scratch > 0)
        log_info("  MPI reduce-scatter      %9.1f MiB  (two in flight, each two buffers of a unit: Open MPI's scratch)\n",
                 mib(p->coll_scratch));
    // A ring with no packets of its own: the arena lends them (model/acts.c, under full).
    if (sp > 1 && p->ring == 0) log_info("  ring packets            in the working set (dead MLP half)\n");
    else if (sp > 1) log_info("  ring packets            %9.1f MiB\n", mib(p->ring));
    log_info("  runtime before the model %8.1f MiB  (measured)\n", mib(p->runtime));
    log_info("  predicted peak          %9.1f MiB\n", mib(p->total));
}

long memplan_max_seq_len(const ModelConfig *c, int B, int sp, ShardLevel shard, int ranks, Recompute r, ActStore store,
                         int loss_chunk, double runtime_bytes, bool host_collectives, double budget) {
    long step = sp > 1 ? 2L * sp : 1, lo = 0, hi = step;
    // Doubling then bisection over multiples of step: the plan grows with T.
    while (memplan(c, B, (int)(hi / sp), sp, shard, ranks, r, store, loss_chunk, runtime_bytes, host_collectives).total <= budget) {
        lo = hi;
        if (hi > (1L << 30) / 2) return lo;
        hi *= 2;
    }
    while (hi - lo > step) {
        long mid = (lo + (hi - lo) / 2) / step * step;
        if (mid <= lo) mid = lo + step;
        if (memplan(c, B, (int)(mid / sp), sp, shard, ranks, r, store, loss_chunk, runtime_bytes, host_collectives).total <= budget) lo = mid;
        else hi = mid;
    }
    return lo;
}

// The kB figure of the line starting with key in a /proc file.
static double proc_kb(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n)) kb = atof(line + n);
    fclose(f);
    return kb;
}

double mem_rss_now_bytes(void) { return proc_kb("/proc/self/status", "VmRSS:") * 1024; }
double mem_host_available_bytes(void) { return proc_kb("/proc/meminfo", "MemAvailable:") * 1024; }
