// model/memplan.c — the memory plan: what one rank holds for a step, from the config, T, sp, the shard level and the recompute mode.
#include "model/memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

// The model state of rank 0 (whose slices are the longest) as train allocates it (ShardSizes), its bf16 copies under
// bf16 (the bf16 GEMMs read them) and MPI's scratch (MemPlan.coll_scratch), but unit 0's own buffers of a tied head.
static void model_state(MemPlan *p, const MemPlanInput *in) {
    ParamTable t = params_build(in->model);
    ShardLayout s = shard_layout(&t, in->model, in->shard == SHARD_NONE ? 1 : in->ranks, 0);   // unread at none
    ShardSizes z = shard_sizes(in->model, in->shard, &s);
    shard_layout_free(&s);
    params_free(&t);
    double r = sizeof(real), bf16 = in->store == ACT_BF16 ? 2 : 0;   // bytes of a bf16 copy's element, if any
    p->weights = (double)z.weights * r + (double)z.shadow * bf16;
    p->grads = (double)z.grads * r;
    p->optimizer = 2 * (double)z.moment * r;
    p->gathered = (double)(z.units - z.unit_weights[2] - z.unit_grads[2]) * r + (double)z.unit_shadow * bf16;
    p->coll_scratch = in->host_collectives ? 2 * (double)(z.unit_grads[0] + z.unit_grads[1]) * r : 0;
}

MemPlan memplan(MemPlanInput in) {
    const ModelConfig *c = in.model;
    size_t N = (size_t)in.batch * in.T_local;
    CpConfig cp = {.mode = in.cp, .sp = in.sp, .degree = in.ulysses, .any_layout = in.placement != PLACE_ZIGZAG};
    ActSizes a = act_sizes(c, in.recompute, in.store, in.batch, in.T_local, &cp);
    size_t chunk = in.loss_chunk > 0 && (size_t)in.loss_chunk < N ? (size_t)in.loss_chunk : N;
    MemPlan p = {
        .kept = (double)a.kept_per_layer * c->n_layer,
        .work = (double)a.work,
        .shared = (double)a.shared,
        .ring = (double)a.ring,   // attn_cp_workspace_bytes where the arena does not lend it
        .head_chunk = (double)chunk * c->vocab_size * sizeof(real) + chunk * sizeof(double),
        .batch = 4.0 * N * sizeof(int32_t),   // tokens, targets, positions, document numbers
        .runtime = in.runtime_bytes,
    };
    model_state(&p, &in);
    p.model_state = p.weights + p.grads + p.optimizer + p.gathered + p.coll_scratch;
    p.total = p.model_state + p.kept + p.work + p.shared + p.ring + p.head_chunk + p.batch + p.runtime;
    p.kept_per_token_layer = N ? p.kept / c->n_layer / N : 0;
    p.work_per_token = N ? p.work / N : 0;
    return p;
}

static double mib(double b) { return b / 1048576.0; }

void memplan_print(const MemPlan *p, MemPlanInput in) {
    log_info("memory plan per rank (--recompute %s, T=%d, B=%d, sp=%d: %d tokens here", recompute_name(in.recompute),
             in.T_local * in.sp, in.batch, in.sp, in.T_local);
    if (in.shard != SHARD_NONE) log_info(", --shard %s over %d ranks", shard_level_name(in.shard), in.ranks);
    log_info("):\n");
    log_info("  kept for the backward   %9.1f MiB  (%.0f bytes/token/layer x %d layers)\n", mib(p->kept),
             p->kept_per_token_layer, in.model->n_layer);
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
    if (in.sp > 1 && in.cp != CP_RING) log_info("  Ulysses buffers         %9.1f MiB%s\n", mib(p->ring), in.cp == CP_HYBRID ?
                                                "  (with the ring's packets across the groups)" : "");
    else if (in.sp > 1 && p->ring == 0) log_info("  ring packets            in the working set (dead MLP half)\n");
    else if (in.sp > 1) log_info("  ring packets            %9.1f MiB\n", mib(p->ring));
    log_info("  runtime before the model %8.1f MiB  (measured)\n", mib(p->runtime));
    log_info("  predicted peak          %9.1f MiB\n", mib(p->total));
}

// The plan's total at T tokens per sequence.
static double total_at(MemPlanInput in, long T) {
    in.T_local = (int)(T / in.sp);
    return memplan(in).total;
}

long memplan_max_seq_len(MemPlanInput in, double budget) {
    long step = in.sp > 1 ? 2L * in.sp : 1, lo = 0, hi = step;
    // Doubling then bisection over multiples of step: the plan grows with T.
    while (total_at(in, hi) <= budget) {
        lo = hi;
        if (hi > (1L << 30) / 2) return lo;
        hi *= 2;
    }
    while (hi - lo > step) {
        long mid = (lo + (hi - lo) / 2) / step * step;
        if (mid <= lo) mid = lo + step;
        if (total_at(in, mid) <= budget) lo = mid;
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
