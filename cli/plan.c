// cli/plan.c — `ringgpt plan`: before a run, memory per rank at each shard level, predicted step time and MFU and the longest
// context per device count, for a model, a sequence length, a dp × sp layout on nodes and a device (a preset with its sources,
// or numbers given as flags); the least shard level that fits.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "core/args.h"
#include "core/common.h"
#include "model/config.h"
#include "model/memplan.h"
#include "model/shard.h"
#include "model/stepplan.h"

static const ArgCommand PLAN_CMD = {
    "plan", "ringgpt plan [--model PRESET | --config FILE] --seq-len T [--ranks N --sp S] [--device PRESET] [flags]",
    "Predicts a training run before it runs: memory per rank (the memory plan of `ringgpt train`, every recompute\n"
    "mode and shard level; --shard auto takes the least sharding that fits), the step time (matmuls and attention\n"
    "blocks at the device's FLOP/s, the ring's transfers hop by hop and how much of them the blocks hide, by replaying\n"
    "the ring's schedule at its slowest hop's link; the gradient all-reduce in and between nodes, or the shard level's\n"
    "gathers and reduce-scatters beside the units' compute) and MFU, the smallest block that still hides the transfer,\n"
    "and the longest context that fits per device count. Ranks sit on nodes of --gpus-per-node in order (rank = dp\n"
    "index x sp + sp index): a hop between nodes takes --node-link-gbps, one inside a node --link-gbps; a ring that\n"
    "crosses nodes it need not is warned about. --device names a preset (its numbers' sources are printed); --mem-gib,\n"
    "--matmul-tflops, --attn-tflops, --link-gbps, --node-link-gbps, --gpus-per-node, --latency-us, --busy-share,\n"
    "--host-gbps replace its numbers. --config reads the model and layout of a run's config.json (or a train --config\n"
    "file)."};

typedef struct {
    const char *model, *config, *device, *recompute, *shard, *devices;
    int layers, dim, heads, kv_heads, ffn, vocab, seq_len, batch, grad_accum, ranks, sp, loss_chunk, per_node;
    bool tie, json;
    double mem_gib, matmul_tflops, attn_tflops, link_gbps, node_link_gbps, latency_us, busy_share, host_gbps;
} PlanFlags;

// A rate flag replaces the preset's number; given, it must be positive.
static void override(ArgSpec *specs, int n, const char *flag, double value, double scale, double *dst, const char *why) {
    if (!args_seen(specs, n, flag)) return;
    if (!(value > 0)) fail_usage("%s must be positive (got %g): %s", flag, value, why);
    *dst = value * scale;
}

// The device: the preset, with the numbers the flags replace.
static DeviceSpec device_of(const PlanFlags *f, ArgSpec *specs, int n) {
    const DeviceSpec *p = device_preset(f->device);
    if (!p) fail_usage("unknown --device '%s'; choose one of %s", f->device, device_preset_names());
    DeviceSpec d = *p;
    override(specs, n, "--mem-gib", f->mem_gib, 1073741824.0, &d.mem_bytes, "the memory of one device");
    override(specs, n, "--matmul-tflops", f->matmul_tflops, 1e12, &d.matmul_flops, "the device must compute");
    override(specs, n, "--attn-tflops", f->attn_tflops, 1e12, &d.attn_flops, "the device must compute");
    override(specs, n, "--link-gbps", f->link_gbps, 1e9 / 8, &d.link_bytes_per_s,
             "the ring needs a link in the node (Gbit/s per direction)");
    override(specs, n, "--node-link-gbps", f->node_link_gbps, 1e9 / 8, &d.node_link_bytes_per_s,
             "nodes need a link between them (Gbit/s per direction and device)");
    if (args_seen(specs, n, "--gpus-per-node") && f->per_node < 1)
        fail_usage("--gpus-per-node must be at least 1 (got %d): the devices (ranks) of one node", f->per_node);
    if (args_seen(specs, n, "--gpus-per-node")) d.per_node = f->per_node;
    if (args_seen(specs, n, "--latency-us") && !(f->latency_us >= 0))
        fail_usage("--latency-us must not be negative (got %g)", f->latency_us);
    if (args_seen(specs, n, "--latency-us")) d.latency_s = f->latency_us * 1e-6;
    if (args_seen(specs, n, "--busy-share") && !(f->busy_share > 0 && f->busy_share <= 1))
        fail_usage("--busy-share must be in (0, 1] (got %g): the share of the link's rate a transfer gets while its rank "
                   "computes", f->busy_share);
    if (args_seen(specs, n, "--busy-share")) d.busy_share = f->busy_share;
    if (args_seen(specs, n, "--host-gbps") && !(f->host_gbps >= 0))
        fail_usage("--host-gbps must not be negative (got %g): what a rank's core moves through the network stack, 0 for "
                   "free", f->host_gbps);
    if (args_seen(specs, n, "--host-gbps")) d.host_bytes_per_s = f->host_gbps * 1e9 / 8;
    return d;
}

static ModelConfig model_of(const PlanFlags *f, ArgSpec *specs, int n) {
    ModelConfig c;
    if (!config_preset(&c, f->model)) fail_usage("unknown --model '%s'; choose one of %s", f->model, config_preset_names());
    if (args_seen(specs, n, "--layers")) c.n_layer = f->layers;
    if (args_seen(specs, n, "--dim")) c.dim = f->dim;
    if (args_seen(specs, n, "--heads")) c.n_head = f->heads;
    if (args_seen(specs, n, "--kv-heads")) c.n_kv_head = f->kv_heads;
    else if (args_seen(specs, n, "--heads")) c.n_kv_head = f->heads;
    if (args_seen(specs, n, "--ffn-dim")) c.ffn_dim = f->ffn;
    if (args_seen(specs, n, "--vocab")) c.vocab_size = f->vocab;
    if (args_seen(specs, n, "--tie-embeddings")) c.tie_embeddings = f->tie;   // else the preset's
    config_validate(&c);
    return c;
}

static void check_layout(const PlanFlags *f) {
    if (f->sp < 1) fail_usage("--sp must be at least 1 (got %d)", f->sp);
    if (f->ranks < 1) fail_usage("--ranks must be at least 1 (got %d)", f->ranks);
    if (f->ranks % f->sp != 0)
        fail_usage("--ranks %d is not divisible by --sp %d: the layout is dp × sp ranks; use --ranks %d or another --sp",
                   f->ranks, f->sp, (f->ranks / f->sp + 1) * f->sp);
    if (f->seq_len < 1) fail_usage("--seq-len must be at least 1 (got %d)", f->seq_len);
    if (f->sp > 1 && f->seq_len % (2 * f->sp) != 0)
        fail_usage("--seq-len %d is not divisible by 2·sp = %d (the zigzag layout cuts each sequence into 2·sp equal "
                   "chunks); use e.g. --seq-len %d", f->seq_len, 2 * f->sp, (f->seq_len / (2 * f->sp) + 1) * 2 * f->sp);
    if (f->batch < 1) fail_usage("--batch must be at least 1 (got %d)", f->batch);
    if (f->grad_accum < 1) fail_usage("--grad-accum must be at least 1 (got %d)", f->grad_accum);
    if (f->loss_chunk < 1) fail_usage("--loss-chunk must be at least 1 (got %d)", f->loss_chunk);
}

// Whole nodes: the plan puts per_node consecutive ranks on a node, so a job larger than a node fills each one.
static void check_nodes(const PlanFlags *f, const DeviceSpec *d) {
    if (f->ranks <= d->per_node || f->ranks % d->per_node == 0) return;
    fail_usage("--ranks %d does not fill nodes of %d (--gpus-per-node): the plan places %d consecutive ranks on each node; use "
               "--ranks %d, or the --gpus-per-node each node of the job runs",
               f->ranks, d->per_node, d->per_node, (f->ranks / d->per_node + 1) * d->per_node);
}

static double gib(double b) { return b / 1073741824.0; }
static double mib(double b) { return b / 1048576.0; }

// Whether the device's collectives are MPI's in the memory planned: a host whose core moves the bytes (the cpu preset).
static bool host_collectives(const PlanFlags *f) {
    const DeviceSpec *p = device_preset(f->device);
    return p && p->host_bytes_per_s > 0;
}

// The plan's input for a ring of sp in a job of `ranks` ranks (the shard level splits the model state over all of them).
static MemPlanInput mem_in(const ModelConfig *c, const PlanFlags *f, ShardLevel shard, Recompute r, int sp, int ranks, int T) {
    return (MemPlanInput){.model = c, .batch = f->batch, .T_local = T / sp, .sp = sp, .shard = shard, .ranks = ranks,
                          .recompute = r, .store = ACT_F32, .loss_chunk = f->loss_chunk, .host_collectives = host_collectives(f)};
}

static bool fits(const ModelConfig *c, const PlanFlags *f, ShardLevel shard, Recompute r, const DeviceSpec *d) {
    return memplan(mem_in(c, f, shard, r, f->sp, f->ranks, f->seq_len)).total <= d->mem_bytes;
}

// --shard auto: the least sharding that fits (every level moves more than the one before it); params where none does,
// which check_fits then refuses.
static ShardLevel least_shard(const ModelConfig *c, const PlanFlags *f, Recompute r, const DeviceSpec *d) {
    for (int s = SHARD_NONE; s < SHARD_PARAMS; s++)
        if (fits(c, f, s, r, d)) return s;
    return SHARD_PARAMS;
}

// More rings (sharded, their ranks share the model state), a longer ring and a shorter T that would fit at this shard
// level and recompute mode, appended to buf.
static void other_layouts(char *buf, size_t size, int len, const ModelConfig *c, const PlanFlags *f, ShardLevel shard,
                          Recompute r, const DeviceSpec *d) {
    int dp = f->ranks / f->sp;
    for (int n = 2 * f->ranks; shard != SHARD_NONE && n <= 65536 && len < (int)size - 96; n *= 2)
        if (memplan(mem_in(c, f, shard, r, f->sp, n, f->seq_len)).total <= d->mem_bytes) {
            len += snprintf(buf + len, size - len, "--ranks %d (dp %d), ", n, n / f->sp);
            break;
        }
    for (int sp = 2 * f->sp; sp <= 4096 && 2 * sp <= f->seq_len && len < (int)size - 96; sp *= 2)
        if (f->seq_len % (2 * sp) == 0 && memplan(mem_in(c, f, shard, r, sp, dp * sp, f->seq_len)).total <= d->mem_bytes) {
            len += snprintf(buf + len, size - len, "--sp %d --ranks %d, ", sp, dp * sp);
            break;
        }
    long T = memplan_max_seq_len(mem_in(c, f, shard, r, f->sp, f->ranks, f->seq_len), d->mem_bytes);
    if (T > 0) snprintf(buf + len, size - len, "--seq-len %ld or shorter", T);
    else snprintf(buf + len, size - len, "more ranks or a device with more memory (on %d rank%s the model alone does not fit)",
                  f->ranks, plural(f->ranks));
}

// Where no shard level and recompute mode fits, what is missing: the model state, at --shard params over these ranks,
// needs more ranks; or the activations --recompute full keeps (x, O and LSE of every layer) need host memory.
static void refuse_missing(const ModelConfig *c, const PlanFlags *f, const DeviceSpec *d) {
    MemPlan p = memplan(mem_in(c, f, SHARD_PARAMS, RECOMPUTE_FULL, f->sp, f->ranks, f->seq_len));
    char fixes[512];
    other_layouts(fixes, sizeof fixes, 0, c, f, SHARD_PARAMS, RECOMPUTE_FULL, d);
    double left = d->mem_bytes - p.model_state - p.work;
    if (p.model_state > d->mem_bytes)
        fail_usage("--seq-len %d does not fit on %s: the model state alone is %.1f GiB per rank even at --shard params over "
                   "%d rank%s, the device has %.1f GiB; would fit: --shard params --recompute full with %s", f->seq_len,
                   d->name, gib(p.model_state), f->ranks, plural(f->ranks), gib(d->mem_bytes), fixes);
    if (p.kept > left && left > 0)
        fail_usage("--seq-len %d on %d ranks of %s (--sp %d) needs activation offload to host memory, which ringgpt does not "
                   "have: even at --shard params --recompute full the kept activations (x, O and LSE of each layer) are %.1f "
                   "GiB per rank, and %.1f GiB is left beside the model state and a layer's working set; would fit: "
                   "--shard params --recompute full with %s", f->seq_len, f->ranks, d->name, f->sp, gib(p.kept), gib(left),
                   fixes);
    fail_usage("--seq-len %d does not fit on %s: even at --shard params over %d rank%s with --recompute full the memory plan "
               "needs %.1f GiB per rank (model state %.1f, activations %.1f) and the device has %.1f GiB; would fit: "
               "--shard params --recompute full with %s", f->seq_len, d->name, f->ranks, plural(f->ranks), gib(p.total),
               gib(p.model_state), gib(p.kept + p.work + p.shared), gib(d->mem_bytes), fixes);
}

// A plan that does not fit the device is refused with the layouts that would: more sharding, more recompute, a longer
// ring, a shorter T; where no shard level and recompute mode fits, with what is missing.
static void check_fits(const ModelConfig *c, const PlanFlags *f, ShardLevel shard, Recompute r, const DeviceSpec *d) {
    MemPlan p = memplan(mem_in(c, f, shard, r, f->sp, f->ranks, f->seq_len));
    if (p.total <= d->mem_bytes) return;
    char fixes[768] = "";
    int len = 0;
    for (int s = shard + 1; s <= SHARD_PARAMS; s++)
        if (fits(c, f, s, r, d)) len += snprintf(fixes + len, sizeof fixes - len, "--shard %s, ", shard_level_name(s));
    for (int m = r + 1; m <= RECOMPUTE_FULL; m++)
        for (int s = shard; s <= SHARD_PARAMS; s++)
            if (fits(c, f, s, m, d)) {
                len += snprintf(fixes + len, sizeof fixes - len, "--recompute %s%s%s, ", recompute_name(m),
                                s > shard ? " --shard " : "", s > shard ? shard_level_name(s) : "");
                break;
            }
    if (len == 0 && !fits(c, f, SHARD_PARAMS, RECOMPUTE_FULL, d)) refuse_missing(c, f, d);
    other_layouts(fixes, sizeof fixes, len, c, f, shard, r, d);
    fail_usage("--seq-len %d does not fit on %s: the memory plan needs %.1f GiB per rank (--shard %s over %d rank%s, "
               "--recompute %s, --sp %d, --batch %d) and the device has %.1f GiB; would fit: %s",
               f->seq_len, d->name, gib(p.total), shard_level_name(shard), f->ranks, plural(f->ranks), recompute_name(r),
               f->sp, f->batch, gib(d->mem_bytes), fixes);
}

static double gbps(double bytes_per_s) { return bytes_per_s * 8 / 1e9; }

// Seconds as %.4f, or in exponent form where that would print a nonzero time as 0.0000.
static const char *secs(char buf[24], double s) {
    snprintf(buf, 24, s > 0 && s < 5e-5 ? "%.2e" : "%.4f", s > 0 ? s : 0);
    return buf;
}

static void print_device(const DeviceSpec *d) {
    char host[64] = "the network stack's work off the compute";
    if (d->host_bytes_per_s > 0) snprintf(host, sizeof host, "the core's network stack %.3g Gbit/s", gbps(d->host_bytes_per_s));
    printf("device %s (%s): %.4g GiB, matmul %.3g TFLOP/s, attention %.3g TFLOP/s, %d per node, link %.4g Gbit/s each way in "
           "a node and %.4g Gbit/s between nodes (per device), latency %.0f us%s, %.0f %% of the link while computing, %s\n"
           "  source: %s\n",
           d->name, d->what, gib(d->mem_bytes), d->matmul_flops / 1e12, d->attn_flops / 1e12, d->per_node,
           gbps(d->link_bytes_per_s), gbps(d->node_link_bytes_per_s), d->latency_s * 1e6,
           d->latency_s > 0 ? "" : " (none: --latency-us 0)", d->busy_share * 100, host, d->source);
}

// Why a rank's ring buffers are 0 bytes, or "" where they are not: no ring, or the activation table placed its packets
// in the working set (model/acts.c: over the MLP half, which is dead while attention runs).
static const char *ring_zero_why(const MemPlan *p, int sp) {
    if (p->ring > 0) return "";
    return sp < 2 ? ": none, --sp 1 has no ring"
                  : ": its packets lie in the working set (activations), over the MLP half, which is dead while attention runs";
}

static void print_memory(const ModelConfig *c, const PlanFlags *f, ShardLevel shard, Recompute chosen, const DeviceSpec *d) {
    printf("memory per rank (model/memplan.c; T/sp = %d tokens per rank, --shard %s over %d rank%s):\n", f->seq_len / f->sp,
           shard_level_name(shard), f->ranks, plural(f->ranks));
    for (int m = RECOMPUTE_NONE; m <= RECOMPUTE_FULL; m++) {
        MemPlan p = memplan(mem_in(c, f, shard, m, f->sp, f->ranks, f->seq_len));
        printf("  --recompute %-4s %10.1f MiB  (model state %.1f, activations %.1f, ring %.1f%s)%s%s\n",
               recompute_name(m), mib(p.total), mib(p.model_state), mib(p.kept + p.work + p.shared),
               mib(p.ring), ring_zero_why(&p, f->sp), p.total > d->mem_bytes ? "  does not fit" : "",
               m == (int)chosen ? "  <- this plan" : "");
    }
}

// The model state of each shard level (weights, gradients, moments, the units' buffers for gathers and reduce-scatters)
// and the peak with it, then the least level that fits.
static void print_shards(const ModelConfig *c, const PlanFlags *f, ShardLevel shard, Recompute r, const DeviceSpec *d) {
    printf("model state per rank by shard level (split over the %d rank%s, --recompute %s):\n", f->ranks, plural(f->ranks),
           recompute_name(r));
    for (int s = SHARD_NONE; s <= SHARD_PARAMS; s++) {
        MemPlan p = memplan(mem_in(c, f, s, r, f->sp, f->ranks, f->seq_len));
        char units[64] = "no unit buffers";
        if (p.gathered > 0) snprintf(units, sizeof units, "unit buffers %.1f", mib(p.gathered));
        printf("  --shard %-6s %10.1f MiB  (weights %.1f, grads %.1f, AdamW %.1f, %s), peak %.1f MiB%s%s\n",
               shard_level_name(s), mib(p.model_state), mib(p.weights), mib(p.grads), mib(p.optimizer), units, mib(p.total),
               p.total > d->mem_bytes ? "  does not fit" : "", s == (int)shard ? "  <- this plan" : "");
    }
    ShardLevel least = least_shard(c, f, r, d);
    if (least == shard) printf("recommended: --shard %s, the least sharding that fits\n", shard_level_name(least));
    else if (least < shard)
        printf("recommended: --shard %s, the least sharding that fits (--shard %s moves more)\n", shard_level_name(least),
               shard_level_name(shard));
}

static void print_ring_transfers(const StepPlan *p, const PlanFlags *f) {
    char a[24], b[24];
    if (f->sp < 2) {
        printf("  ring transfers        %10s s  (none: --sp 1, one rank holds each sequence, no K and V travel)\n", secs(a, 0));
        return;
    }
    // The replay's sums leave rounding residue (1e-18 s) where the blocks hide everything: that is 0.
    double wait = p->ring_wait_s > 1e-9 * p->ring_transfer_s ? p->ring_wait_s : 0;
    double hidden = p->ring_transfer_s > 0 ? 1 - (wait + p->ring_stack_s) / p->ring_transfer_s : 1;
    printf("  ring transfers        %10s s alone, %s s exposed", secs(a, p->ring_transfer_s), secs(b, wait));
    if (p->ring_stack_s > 0) printf(" + %.4f s of the network stack in the blocks", p->ring_stack_s);
    if (hidden < 0.005) printf(" (0 %% hidden: each block computes in less time than a hop's latency and bytes take)\n");
    else printf(" (%.0f %% hidden behind the blocks)\n", 100 * hidden);
}

static void print_allreduce(const StepPlan *p, const PlanFlags *f, ShardLevel shard) {
    char a[24], b[24];
    printf("  gradient all-reduce   %10s s", secs(a, p->allreduce_s));
    if (f->ranks == 1) printf("  (none: one rank, nothing to sum)\n");
    else if (shard >= SHARD_GRADS) printf("  (none: --shard %s reduce-scatters each unit's gradients)\n", shard_level_name(shard));
    else if (p->nodes == 1) printf("\n");
    else printf("  (of it %s s between the %d nodes; in each node, then between them)\n", secs(b, p->allreduce_node_s), p->nodes);
}

// The shard level's gathers and reduce-scatters: alone, and what the units' compute leaves exposed.
static void print_shard_traffic(const StepPlan *p, const PlanFlags *f, ShardLevel shard) {
    char a[24], b[24];
    if (shard == SHARD_NONE) return;
    printf("  --shard %-6s        %10s s alone, %s s exposed", shard_level_name(shard), secs(a, p->shard_transfer_s),
           secs(b, p->shard_wait_s));
    if (p->shard_stack_s > 0) printf(" + %.4f s of the network stack", p->shard_stack_s);
    if (f->ranks == 1) printf("  (none: one rank, nothing to gather)\n");
    else if (shard == SHARD_OPTIM) printf(" (the updated weights' all-gather, after the update)\n");
    else
        printf(" (%.0f %% hidden behind the units' compute; %s)\n",
               p->shard_transfer_s > 0 ? 100 * (1 - p->shard_wait_s / p->shard_transfer_s) : 100,
               shard == SHARD_PARAMS ? "gathers before each unit's forward and backward, reduce-scatters after its backward"
                                     : "reduce-scatters after each unit's backward, the weights' all-gather after the update");
}

static void print_step(const StepPlan *p, const PlanFlags *f, int dp, ShardLevel shard) {
    char a[24];
    printf("step time (predicted, one optimizer step of %d x %d x %d tokens on %d rank%s):\n", f->grad_accum, f->batch * dp,
           f->seq_len, f->ranks, f->ranks == 1 ? "" : "s");
    printf("  matmuls               %10s s\n", secs(a, p->matmul_s));
    printf("  attention blocks      %10s s\n", secs(a, p->attn_compute_s));
    print_ring_transfers(p, f);
    print_allreduce(p, f, shard);
    print_shard_traffic(p, f, shard);
    printf("  step                  %10s s  (%.0f tokens/s, MFU %.1f %%: the model's FLOPs over the devices' matmul peak)\n",
           secs(a, p->step_s), p->tokens_per_s, 100 * p->mfu);
}

// Up to four of ring g's hops that cross nodes (or stay in one), global ranks "a->b", then "... (n)" for the rest.
static void hop_list(char *buf, size_t size, int g, int sp, int per_node, bool crossing) {
    int len = 0, shown = 0, n = 0;
    buf[0] = 0;
    for (int i = 0; i < sp; i++) {
        if (ring_hop_crosses(g, i, sp, per_node) != crossing) continue;
        if (n++ < 4) len += snprintf(buf + len, size - len, "%s%d->%d", shown++ ? ", " : "", g * sp + i, g * sp + (i + 1) % sp);
    }
    if (n > 4) snprintf(buf + len, size - len, ", ... %d more", n - 4);
}

// One row of the hop table: the hops of one kind, their link and one block's K and V on it.
static void print_hops(const char *kind, int count, const char *list, double bytes_per_s, double s, bool pace) {
    if (count == 0) return;
    printf("  %-13s %4d hop%s  link %7.4g Gbit/s  K and V %.3g s  (%s)%s\n", kind, count, count == 1 ? " " : "s",
           gbps(bytes_per_s), s, list, pace ? "  <- the ring's pace" : "");
}

static void print_ring(const ModelConfig *c, const PlanFlags *f, const StepPlan *p, const DeviceSpec *d) {
    if (f->sp < 2) return;
    int L = f->seq_len / f->sp, dp = f->ranks / f->sp;
    RingPlace place = ring_place(dp, f->sp, d->per_node);
    printf("ring: a forward block (%d x %d pairs) computes in %.3g s; ring %d's hops (ranks %d..%d on %d node%s; a step waits "
           "for its slowest hop):\n", L / 2, L, p->block_s, place.ring, place.ring * f->sp, place.ring * f->sp + f->sp - 1,
           place.nodes, plural(place.nodes));
    char in[96], across[96];
    hop_list(in, sizeof in, place.ring, f->sp, d->per_node, false);
    hop_list(across, sizeof across, place.ring, f->sp, d->per_node, true);
    bool slow = place.cross_hops > 0 && p->ring_bytes_per_s == d->node_link_bytes_per_s;
    print_hops("in a node", f->sp - place.cross_hops, in, d->link_bytes_per_s, p->hop_s, !slow);
    print_hops("between nodes", place.cross_hops, across, d->node_link_bytes_per_s, p->hop_node_s, slow);
    long min = stepplan_min_hiding_tokens(c, dp, f->sp, d);
    if (min > 0)
        printf("  smallest block that hides the transfer (<= 5 %% exposed): %ld tokens per rank (--seq-len %ld on %d ranks)\n",
               min, (min + 1) / 2 * 2 * f->sp, f->sp);
    else printf("  no block up to 2^24 tokens per rank hides the transfer on this link\n");
}

// A ring placed across more nodes than its size needs, on stderr: its slow hops are the layout's, not the ring's.
static void warn_placement(const PlanFlags *f, const DeviceSpec *d) {
    RingPlace place = ring_place(f->ranks / f->sp, f->sp, d->per_node);
    if (place.nodes <= place.min_nodes) return;
    fprintf(stderr, "ringgpt: warning: ring %d (ranks %d..%d) spans %d nodes where %d would hold it: %d ranks per node "
            "(--gpus-per-node) and rings of --sp %d put %d of its hops on the inter-node link; use an --sp that divides %d "
            "or is a multiple of it, or the --gpus-per-node each node runs\n",
            place.ring, place.ring * f->sp, place.ring * f->sp + f->sp - 1, place.nodes, place.min_nodes, d->per_node, f->sp,
            place.cross_hops, d->per_node);
}

// Why no T of a ring of sp fits: the model's fixed state alone, or the smallest T's activations on top.
static void print_no_fit_why(const ModelConfig *c, const PlanFlags *f, int sp, ShardLevel shard, Recompute r,
                             const DeviceSpec *d) {
    int T = sp > 1 ? 2 * sp : 1;
    MemPlan p = memplan(mem_in(c, f, shard, r, sp, sp, T));
    if (p.model_state > d->mem_bytes)
        printf("  (0: the model state alone (--shard %s) needs %.4g GiB of %.4g)", shard_level_name(shard), gib(p.model_state),
               gib(d->mem_bytes));
    else printf("  (0: even T = %d needs %.4g GiB of %.4g)", T, gib(p.total), gib(d->mem_bytes));
}

// The Ring Attention paper's Table 3 shape: the longest T per device count (one ring, dp = 1, the model state sharded at
// the plan's level over its n devices) for every recompute mode, and the step time and throughput at the longest T of the
// chosen mode.
static void print_table(const ModelConfig *c, const PlanFlags *f, ShardLevel shard, Recompute chosen, const DeviceSpec *d) {
    int64_t counts[32];
    int n = args_parse_lengths("--devices", f->devices, counts, 32);
    printf("longest context that fits, one ring of n devices (sp = n, B=%d, %d per node, --shard %s over the n):\n", f->batch,
           d->per_node, shard_level_name(shard));
    printf("  %8s %14s %14s %14s %12s %12s\n", "devices", "none", "mlp", "full", "step (s)", "tokens/s");
    for (int i = 0; i < n; i++) {
        int sp = (int)counts[i];
        long T[3];
        for (int m = 0; m < 3; m++)
            T[m] = memplan_max_seq_len(mem_in(c, f, shard, m, sp, sp, f->seq_len), d->mem_bytes);
        printf("  %8d %14ld %14ld %14ld", sp, T[0], T[1], T[2]);
        if (T[chosen] > 0 && T[chosen] <= (1L << 30)) {
            StepPlan p = stepplan(c, f->batch, f->grad_accum, (int)T[chosen], 1, sp, shard, chosen, d);
            printf(" %12.4g %12.4g", p.step_s, p.tokens_per_s);
        } else {
            printf(" %12s %12s", "-", "-");
        }
        for (int m = 0; m < 3; m++)
            if (T[m] == 0) {
                print_no_fit_why(c, f, sp, shard, m, d);
                break;
            }
        printf("\n");
    }
    printf("  (the step and tokens/s columns: --recompute %s at its longest T)\n", recompute_name(chosen));
}

static void print_json(const StepPlan *p, const MemPlan *m, const DeviceSpec *d, const RingPlace *place, long min_tokens,
                       ShardLevel shard, ShardLevel least) {
    printf("{\"device\": \"%s\", \"step_s\": %.6f, \"matmul_s\": %.6f, \"attn_compute_s\": %.6f, \"ring_wait_s\": %.6f, "
           "\"ring_transfer_s\": %.6f, \"allreduce_s\": %.6f, \"tokens_per_s\": %.2f, \"block_s\": %.6f, \"hop_s\": %.6f, "
           "\"ring_stack_s\": %.6f, \"mem_bytes\": %.0f, \"min_hiding_tokens\": %ld, \"matmul_flops\": %.4g, \"attn_flops\": %.4g, "
           "\"link_bytes_per_s\": %.4g, \"latency_s\": %.4g, \"busy_share\": %.4g, \"host_bytes_per_s\": %.4g, ",
           d->name, p->step_s, p->matmul_s, p->attn_compute_s, p->ring_wait_s, p->ring_transfer_s, p->allreduce_s,
           p->tokens_per_s, p->block_s, p->hop_s, p->ring_stack_s, m->total, min_tokens, d->matmul_flops, d->attn_flops, d->link_bytes_per_s,
           d->latency_s, d->busy_share, d->host_bytes_per_s);
    printf("\"gpus_per_node\": %d, \"node_link_bytes_per_s\": %.4g, \"nodes\": %d, \"ring_nodes\": %d, \"ring_min_nodes\": %d, "
           "\"ring_cross_hops\": %d, \"ring_spans_needlessly\": %s, \"ring_bytes_per_s\": %.4g, \"hop_node_s\": %.6f, "
           "\"allreduce_node_s\": %.6f, ",
           d->per_node, d->node_link_bytes_per_s, p->nodes, p->ring_nodes, place->min_nodes, p->cross_hops,
           place->nodes > place->min_nodes ? "true" : "false", p->ring_bytes_per_s, p->hop_node_s, p->allreduce_node_s);
    printf("\"shard\": \"%s\", \"shard_least\": \"%s\", \"shard_transfer_s\": %.6f, \"shard_wait_s\": %.6f, "
           "\"shard_stack_s\": %.6f, \"flops_per_token\": %.6g, \"mfu\": %.5f, \"model_state_bytes\": %.0f, "
           "\"weights_bytes\": %.0f, \"grads_bytes\": %.0f, \"optimizer_bytes\": %.0f, \"gathered_bytes\": %.0f, "
           "\"kept_bytes\": %.0f}\n",
           shard_level_name(shard), shard_level_name(least), p->shard_transfer_s, p->shard_wait_s, p->shard_stack_s,
           p->flops_per_token, p->mfu, m->model_state, m->weights, m->grads, m->optimizer, m->gathered, m->kept);
}

int cmd_plan(int argc, char **argv) {
    PlanFlags f = {.model = "small", .device = "h100-sxm", .recompute = "none", .shard = "auto", .devices = "1,2,4,8,16,32",
                   .seq_len = 8192, .batch = 1, .grad_accum = 1, .ranks = 0, .sp = 1, .loss_chunk = 256};
    ArgSpec specs[] = {
        ARG_GROUP("model"),
        {"--model", ARG_STRING, &f.model, "preset (its tied head and vocab too): " CONFIG_PRESET_NAMES},
        {"--config", ARG_STRING, &f.config, "a run's config.json or a train --config file: its model and layout flags"},
        {"--layers", ARG_INT, &f.layers, "layer count", .dflt = "preset"},
        {"--dim", ARG_INT, &f.dim, "model width", .dflt = "preset"},
        {"--heads", ARG_INT, &f.heads, "query head count", .dflt = "preset"},
        {"--kv-heads", ARG_INT, &f.kv_heads, "key/value head count", .dflt = "preset"},
        {"--ffn-dim", ARG_INT, &f.ffn, "SwiGLU hidden width", .dflt = "preset"},
        {"--vocab", ARG_INT, &f.vocab, "vocabulary size", .dflt = "preset"},
        {"--tie-embeddings", ARG_BOOL, &f.tie, "share the token embedding with the LM head (=false: untie)",
         .dflt = "preset"},
        ARG_GROUP("the run"),
        {"--seq-len", ARG_INT, &f.seq_len, "tokens per sequence T"},
        {"--batch", ARG_INT, &f.batch, "sequences per micro-step per ring"},
        {"--grad-accum", ARG_INT, &f.grad_accum, "micro-steps per optimizer step"},
        {"--ranks", ARG_INT, &f.ranks, "devices in all (dp × sp)", .dflt = "--sp"},
        {"--sp", ARG_INT, &f.sp, "ring size: devices that split one sequence"},
        {"--recompute", ARG_STRING, &f.recompute, "none, mlp or full (train's --recompute)"},
        {"--shard", ARG_STRING, &f.shard, "none, optim, grads or params (train's --shard, over all ranks), or auto: the least "
         "that fits"},
        {"--loss-chunk", ARG_INT, &f.loss_chunk, "rows per chunk of the fused LM head"},
        ARG_GROUP("the device (a preset, each figure overridable)"),
        {"--device", ARG_STRING, &f.device, "preset: cpu (this project's machine, measured), h100-sxm, a100-sxm"},
        {"--mem-gib", ARG_DOUBLE, &f.mem_gib, "memory per device (GiB)", .dflt = "the preset's"},
        {"--matmul-tflops", ARG_DOUBLE, &f.matmul_tflops, "matmul TFLOP/s per device", .dflt = "the preset's"},
        {"--attn-tflops", ARG_DOUBLE, &f.attn_tflops, "attention TFLOP/s per device", .dflt = "the preset's"},
        {"--link-gbps", ARG_DOUBLE, &f.link_gbps, "link in a node (NVLink), Gbit/s per direction", .dflt = "the preset's"},
        {"--node-link-gbps", ARG_DOUBLE, &f.node_link_gbps, "link between nodes per device (its NIC), Gbit/s per direction",
         .dflt = "the preset's"},
        {"--gpus-per-node", ARG_INT, &f.per_node, "devices (ranks) per node; consecutive ranks share a node",
         .dflt = "the preset's"},
        {"--latency-us", ARG_DOUBLE, &f.latency_us, "link latency per message (us)", .dflt = "the preset's"},
        {"--busy-share", ARG_DOUBLE, &f.busy_share, "share of the link's rate a ring transfer gets while its rank computes",
         .dflt = "the preset's"},
        {"--host-gbps", ARG_DOUBLE, &f.host_gbps, "Gbit/s a rank's own core moves through the network stack (0: free)",
         .dflt = "the preset's"},
        ARG_GROUP("output"),
        {"--devices", ARG_STRING, &f.devices, "device counts of the longest-context table"},
        {"--json", ARG_BOOL, &f.json, "print one JSON object (step time parts, memory) instead of the report"},
    };
    int n = sizeof specs / sizeof specs[0];
    args_parse(&PLAN_CMD, specs, n, argc, argv, NULL, 0);
    if (f.config) {
        const char *const only[] = {"--model", "--layers", "--dim", "--heads", "--kv-heads", "--ffn-dim", "--tie-embeddings",
                                    "--seq-len", "--batch", "--grad-accum", "--sp", "--recompute", "--shard", "--loss-chunk",
                                    NULL};
        args_apply_json_only(&PLAN_CMD, specs, n, f.config, only);
    }
    if (!args_seen(specs, n, "--ranks")) f.ranks = f.sp;
    check_layout(&f);
    Recompute r;
    if (!recompute_parse(f.recompute, &r)) fail_usage("unknown --recompute '%s'; use none, mlp or full", f.recompute);
    ModelConfig c = model_of(&f, specs, n);
    DeviceSpec d = device_of(&f, specs, n);
    check_nodes(&f, &d);
    ShardLevel shard, least = least_shard(&c, &f, r, &d);
    if (!strcmp(f.shard, "auto")) shard = least;
    else if (!shard_level_parse(f.shard, &shard))
        fail_usage("unknown --shard '%s'; use none, optim, grads, params or auto (the least that fits)", f.shard);
    check_fits(&c, &f, shard, r, &d);
    int dp = f.ranks / f.sp;
    StepPlan p = stepplan(&c, f.batch, f.grad_accum, f.seq_len, dp, f.sp, shard, r, &d);
    warn_placement(&f, &d);
    if (f.json) {
        MemPlan m = memplan(mem_in(&c, &f, shard, r, f.sp, f.ranks, f.seq_len));
        RingPlace place = ring_place(dp, f.sp, d.per_node);
        print_json(&p, &m, &d, &place, stepplan_min_hiding_tokens(&c, dp, f.sp, &d), shard, least);
        return 0;
    }
    printf("ringgpt plan: %s model (%d layers, dim %d, %d/%d heads, vocab %d, %s, %.2fM parameters), T=%d, B=%d x %d accum, "
           "%dx%d ranks (dp x sp) on %d node%s of %d, --recompute %s, --shard %s\n",
           f.model, c.n_layer, c.dim, c.n_head, c.n_kv_head, c.vocab_size, c.tie_embeddings ? "tied head" : "untied head",
           config_num_params(&c) / 1e6, f.seq_len, f.batch, f.grad_accum, dp, f.sp, p.nodes, plural(p.nodes), d.per_node,
           recompute_name(r), shard_level_name(shard));
    print_device(&d);
    print_memory(&c, &f, shard, r, &d);
    print_shards(&c, &f, shard, r, &d);
    print_step(&p, &f, dp, shard);
    print_ring(&c, &f, &p, &d);
    print_table(&c, &f, shard, r, &d);
    return 0;
}
