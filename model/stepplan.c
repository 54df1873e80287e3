// model/stepplan.c — a training step's predicted time: FLOPs at the device's rates, the ring's schedule replayed by
// attention/ring_model.c at its slowest hop's link, a hierarchical all-reduce over the node's and the nodes' links; where
// the rings sit on the nodes; the device presets and where their numbers come from.
#include "model/stepplan.h"

#include <string.h>

#include "attention/ring.h"
#include "core/real.h"

// The CPU preset is one core of the machine the project measures on (bench/ring_overlap.sh, docs/ring.md):
// one rank, one thread; its node is that 2-core machine (2 ranks), and between nodes it has the only link the
// project has measured, the two-host veth link. GPU rates: dense BF16 matmul peaks from NVIDIA's datasheets,
// attention from the FlashAttention papers' best reported throughput (forward; the backward runs slower, so these
// are optimistic), NVLink bandwidth per direction (half the datasheet's bidirectional figure), 8 GPUs per node
// with one InfiniBand NIC each (the DGX systems' compute fabric).
static const DeviceSpec PRESETS[] = {
    {"cpu", "one core of the project's 2-core Xeon (Cascade Lake, AVX-512), fp32", 11.5 * 1073741824.0, 120.2e9, 106.2e9,
     0.452e9, 0.452e9, 2, 23.2e-6, 0.70, 0.452e9,
     "measured by bench/ring_overlap.sh on 2026-11-25 at 9e77a51 (load 0.8-1.6) (docs/benchmarks.md): matmul = a one-rank "
     "training step's time outside attention over its matmul FLOPs; attention = the CPU block kernels' FLOP/s (this shared "
     "host's speed varies: 131.8 and 112.0 on 2026-11-24, 113.0 and 93.8 earlier on 2026-11-25); link = the two-host veth "
     "link without a rate limit (Open MPI over TCP, receive work on the receiving host's core), latency its small-message "
     "time; the host's network stack at that link's rate (a veth link's bytes cost nothing but the cores' work); 70 % of "
     "the link while the rank computes: the fit to the overlap sweep's 24 rate-limited rows (1, 0.5, 0.2, 0.1 Gbit/s) with "
     "that host cost (rms error 10.8 % against 13.0 % at 100 %; refit 2026-11-27); memory = MemTotal / 2 cores; a node: "
     "the machine's 2 cores, one rank each; between nodes: the same veth link (scripts/two_hosts.sh's hosts are the only "
     "nodes measured; give --node-link-gbps for another network)"},
    {"h100-sxm", "NVIDIA H100 SXM5 80 GB, BF16", 80e9, 989e12, 740e12, 450e9, 400e9 / 8, 8, 10e-6, 1.0, 0,
     "NVIDIA H100 Tensor Core GPU datasheet: 80 GB HBM3, 989 TFLOPS dense BF16 (1,979 with sparsity), NVLink 900 GB/s "
     "(bidirectional); attention: FlashAttention-3 (Shah et al. 2024, arXiv:2407.08608), up to 740 TFLOPS/s BF16; "
     "latency: an assumed 10 us per NCCL message; the link's full rate during compute (copy engines; assumed); nodes: NVIDIA "
     "DGX H100, 8 GPUs and 8 ConnectX-7 InfiniBand NDR 400 Gb/s ports (one per GPU) for the compute fabric"},
    {"a100-sxm", "NVIDIA A100 SXM4 80 GB, BF16", 80e9, 312e12, 228e12, 300e9, 200e9 / 8, 8, 10e-6, 1.0, 0,
     "NVIDIA A100 Tensor Core GPU datasheet: 80 GB HBM2e, 312 TFLOPS dense BF16 (624 with sparsity), NVLink 600 GB/s "
     "(bidirectional); attention: FlashAttention-2 (Dao 2023, arXiv:2307.08691), up to 73 % of peak; latency: an "
     "assumed 10 us per NCCL message; the link's full rate during compute (copy engines; assumed); nodes: NVIDIA DGX A100, "
     "8 GPUs and 8 ConnectX-6 InfiniBand HDR 200 Gb/s ports (one per GPU) for the compute fabric"},
};
enum { N_PRESETS = sizeof PRESETS / sizeof PRESETS[0] };

const DeviceSpec *device_preset(const char *name) {
    for (int i = 0; i < N_PRESETS; i++)
        if (!strcmp(PRESETS[i].name, name)) return &PRESETS[i];
    return NULL;
}

const char *device_preset_names(void) { return "cpu, h100-sxm, a100-sxm"; }

// Matmul FLOPs per token of one forward and backward (6 per weight: the LM head included), plus the
// recompute mode's second forward of what it does not keep (2 per weight): mlp the gate and up
// projections, full the Q/K/V, output and gate/up projections.
static double matmul_flops_per_token(const ModelConfig *c, Recompute r) {
    double C = c->dim, F = c->ffn_dim, V = c->vocab_size, KV = cfg_kv_dim(c), L = c->n_layer;
    double layer = C * C + 2 * KV * C + C * C + 3 * F * C;   // q, k, v, o, gate, up, down
    double again = r == RECOMPUTE_MLP ? 2 * F * C : r == RECOMPUTE_FULL ? C * C + 2 * KV * C + C * C + 2 * F * C : 0;
    return 6 * (L * layer + V * C) + 2 * L * again;
}

static RingCosts ring_costs(const DeviceSpec *d, double link_bytes_per_s) {
    return (RingCosts){.attn_flops = d->attn_flops, .link_bytes_per_s = link_bytes_per_s, .latency_s = d->latency_s,
                       .busy_share = d->busy_share, .host_bytes_per_s = d->host_bytes_per_s};
}

static AttnShape attn_shape(const ModelConfig *c) {
    return (AttnShape){.n_head = c->n_head, .n_kv_head = c->n_kv_head, .head_dim = cfg_head_dim(c)};
}

bool ring_hop_crosses(int ring, int i, int sp, int per_node) {
    long from = (long)ring * sp + i, to = (long)ring * sp + (i + 1) % sp;
    return from / per_node != to / per_node;
}

// A ring's ranks are consecutive: it spans the nodes from its first rank's to its last's.
static int ring_nodes(int ring, int sp, int per_node) {
    long first = (long)ring * sp, last = first + sp - 1;
    return (int)(last / per_node - first / per_node + 1);
}

RingPlace ring_place(int dp, int sp, int per_node) {
    RingPlace p = {.ring = 0, .nodes = 0, .min_nodes = (sp + per_node - 1) / per_node};
    for (int g = 0; g < dp; g++) {
        int n = ring_nodes(g, sp, per_node);
        if (n > p.nodes) p.ring = g, p.nodes = n;
    }
    for (int i = 0; i < sp && sp > 1; i++) p.cross_hops += ring_hop_crosses(p.ring, i, sp, per_node);
    return p;
}

// The link a ring of this placement is priced at: every step of the ring waits for its slowest hop.
static double ring_rate(const RingPlace *place, int sp, const DeviceSpec *d) {
    if (place->cross_hops == 0) return d->link_bytes_per_s;
    if (place->cross_hops == sp) return d->node_link_bytes_per_s;
    return d->node_link_bytes_per_s < d->link_bytes_per_s ? d->node_link_bytes_per_s : d->link_bytes_per_s;
}

// A ring reduce-scatter and all-gather among the g ranks of a node on the in-node link, and between the n nodes a
// ring all-reduce of each rank's 1/g share on its own inter-node link: every rank sends and receives 2(g−1)/g of the
// gradients in the node in 2(g−1) messages, and 2(n−1)/n of its share across nodes in 2(n−1). NCCL's rings with one
// NIC per GPU move the same bytes across nodes; a flat ring over all ranks would move each node's whole share on one.
static void allreduce(StepPlan *p, double grads, int P, const DeviceSpec *d) {
    int g = P < d->per_node ? P : d->per_node, n = (P + g - 1) / g;
    double in = g > 1 ? 2.0 * (g - 1) / g * grads / d->link_bytes_per_s + 2.0 * (g - 1) * d->latency_s : 0;
    double across = n > 1 ? 2.0 * (n - 1) / n * grads / g / d->node_link_bytes_per_s + 2.0 * (n - 1) * d->latency_s : 0;
    p->allreduce_s = in + across;
    p->allreduce_node_s = across;
}

// One block's K and V (both pieces) on a link of that rate.
static double hop_seconds(const AttnShape *s, int L, double latency_s, double bytes_per_s) {
    return 2 * (latency_s + (double)(L / 2) * 2 * s->n_kv_head * s->head_dim * sizeof(real) / bytes_per_s);
}

StepPlan stepplan(const ModelConfig *c, int B, int accum, int T, int dp, int sp, Recompute r, const DeviceSpec *d) {
    const int L = T / sp, P = dp * sp;
    const AttnShape s = attn_shape(c);
    const RingPlace place = ring_place(dp, sp, d->per_node);
    StepPlan p = {.nodes = (P + d->per_node - 1) / d->per_node, .ring_nodes = place.nodes, .cross_hops = place.cross_hops,
                  .ring_bytes_per_s = ring_rate(&place, sp, d)};
    const RingCosts rc = ring_costs(d, p.ring_bytes_per_s);
    p.matmul_s = (double)accum * B * L * matmul_flops_per_token(c, r) / d->matmul_flops;
    // One sequence, one layer: the ring's forward and backward with the overlap, and the serial baseline's waiting.
    RingTiming f = ring_model(sp, L, &s, &rc, true, false), b = ring_model(sp, L, &s, &rc, true, true);
    RingTiming f0 = ring_model(sp, L, &s, &rc, false, false), b0 = ring_model(sp, L, &s, &rc, false, true);
    double times = (double)accum * B * c->n_layer;   // ring calls of each kind per step
    p.attn_compute_s = times * (f.compute_s + b.compute_s);
    p.ring_wait_s = times * (f.seconds + b.seconds) - p.attn_compute_s;
    p.ring_transfer_s = times * (f0.wait_s + b0.wait_s);
    p.ring_stack_s = p.attn_compute_s - times * (f0.compute_s + b0.compute_s);
    allreduce(&p, (double)config_num_params(c) * sizeof(real), P, d);
    p.step_s = p.matmul_s + p.attn_compute_s + p.ring_wait_s + p.allreduce_s;
    p.tokens_per_s = (double)accum * B * T * dp / p.step_s;
    double pair_flops = 4.0 * s.n_head * s.head_dim;
    p.block_s = (double)(L / 2) * L * pair_flops / d->attn_flops;
    p.hop_s = sp > 1 ? hop_seconds(&s, L, d->latency_s, d->link_bytes_per_s) : 0;
    p.hop_node_s = sp > 1 ? hop_seconds(&s, L, d->latency_s, d->node_link_bytes_per_s) : 0;
    return p;
}

// Fraction of the ring's transfer time (forward and backward) left waiting with L tokens per rank (the host's network
// stack work, which no block size hides, apart).
static double exposed(const AttnShape *s, const RingCosts *rc, int sp, long L) {
    RingTiming f = ring_model(sp, (int)L, s, rc, true, false), b = ring_model(sp, (int)L, s, rc, true, true);
    RingTiming f0 = ring_model(sp, (int)L, s, rc, false, false), b0 = ring_model(sp, (int)L, s, rc, false, true);
    double transfer = f0.wait_s + b0.wait_s;
    return transfer > 0 ? (f.wait_s + b.wait_s) / transfer : 0;
}

long stepplan_min_hiding_tokens(const ModelConfig *c, int dp, int sp, const DeviceSpec *d) {
    if (sp < 2) return 0;
    const AttnShape s = attn_shape(c);
    const RingPlace place = ring_place(dp, sp, d->per_node);
    const RingCosts rc = ring_costs(d, ring_rate(&place, sp, d));
    long lo = 0, hi = 64;   // exposed(lo) > 5 % (or lo = 0), exposed(hi) <= 5 %
    while (exposed(&s, &rc, sp, hi) > 0.05) {
        lo = hi;
        if ((hi *= 2) > (1L << 24)) return 0;
    }
    while (hi - lo > 2) {
        long mid = (lo + hi) / 4 * 2;
        if (exposed(&s, &rc, sp, mid) > 0.05) lo = mid;
        else hi = mid;
    }
    return hi;
}
