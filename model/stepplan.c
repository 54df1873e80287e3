// model/stepplan.c — a training step's predicted time: FLOPs at the device's rates, the ring's schedule replayed by
// attention/ring_model.c at its slowest hop's link, a hierarchical all-reduce or the shard level's gathers and
// reduce-scatters unit by unit beside the units' compute, over the node's and the nodes' links; where the rings sit on the
// nodes; the device presets and where their numbers come from.
#include "model/stepplan.h"

#include <stdlib.h>
#include <string.h>

#include "attention/ring.h"
#include "core/common.h"
#include "core/real.h"
#include "model/shard.h"

// The CPU preset is one core of the machine the project measures on (bench/ring_overlap.sh, docs/ring.md):
// one rank, one thread; its node is that 2-core machine (2 ranks), and between nodes it has the only link the
// project has measured, the two-host veth link. GPU rates: dense BF16 matmul peaks from NVIDIA's datasheets,
// attention from the FlashAttention papers' best reported throughput (forward; the backward runs slower, so these
// are optimistic), NVLink bandwidth per direction (half the datasheet's bidirectional figure), 8 GPUs per node
// with one InfiniBand NIC each (the DGX systems' compute fabric).
static const DeviceSpec PRESETS[] = {
    {"cpu", "one core of the project's 2-core Xeon (Cascade Lake, AVX-512), fp32", 11.5 * 1073741824.0, 120.2e9, 106.2e9,
     0.452e9, 0.452e9, 2, 23.2e-6, 0.70, 0.452e9,
     "measured on that machine by bench/ring_overlap.sh, 2026-11-25 (docs/ring.md#device-presets)"},
    {"h100-sxm", "NVIDIA H100 SXM5 80 GB, BF16", 80e9, 989e12, 740e12, 450e9, 400e9 / 8, 8, 10e-6, 1.0, 0,
     "NVIDIA H100 datasheet, FlashAttention-3, DGX H100 (docs/ring.md#device-presets)"},
    {"a100-sxm", "NVIDIA A100 SXM4 80 GB, BF16", 80e9, 312e12, 228e12, 300e9, 200e9 / 8, 8, 10e-6, 1.0, 0,
     "NVIDIA A100 datasheet, FlashAttention-2, DGX A100 (docs/ring.md#device-presets)"},
};
enum { N_PRESETS = sizeof PRESETS / sizeof PRESETS[0] };

const DeviceSpec *device_preset(const char *name) {
    for (int i = 0; i < N_PRESETS; i++)
        if (!strcmp(PRESETS[i].name, name)) return &PRESETS[i];
    return NULL;
}

const char *device_preset_names(void) { return "cpu, h100-sxm, a100-sxm"; }

// Matmul FLOPs per token of one layer's forward (2 per weight: q, k, v, o, gate, up, down) and of its backward (4 per
// weight, and the recompute mode's second forward of what it does not keep, 2 per weight: mlp the gate and up
// projections, full the Q/K/V, output and gate/up projections), and of the LM head's fused forward and backward.
static void unit_flops(const ModelConfig *c, Recompute r, double *fwd, double *bwd, double *head) {
    double C = c->dim, F = c->ffn_dim, KV = cfg_kv_dim(c);
    double layer = C * C + 2 * KV * C + C * C + 3 * F * C;
    double again = r == RECOMPUTE_MLP ? 2 * F * C : r == RECOMPUTE_FULL ? C * C + 2 * KV * C + C * C + 2 * F * C : 0;
    *fwd = 2 * layer, *bwd = 4 * layer + 2 * again, *head = 6.0 * c->vocab_size * C;
}

// Every matmul FLOP of a token's forward and backward under the recompute mode.
static double matmul_flops_per_token(const ModelConfig *c, Recompute r) {
    double fwd, bwd, head;
    unit_flops(c, r, &fwd, &bwd, &head);
    return c->n_layer * (fwd + bwd) + head;
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

// One all-gather or reduce-scatter of `bytes` (the whole buffer; each rank ends with or gives its 1/P) over P ranks, at
// `share` of the links' rates: a ring among the g ranks of a node on the in-node link, then between the n nodes of each
// rank's 1/g share on its own inter-node link. Every rank moves (g−1)/g of the bytes in the node in g−1 messages and
// (n−1)/n of its share across nodes in n−1; NCCL's rings with one NIC per GPU move the same bytes across nodes.
static void collective(double bytes, int P, const DeviceSpec *d, double share, double *in, double *across) {
    int g = P < d->per_node ? P : d->per_node, n = (P + g - 1) / g;
    *in = g > 1 ? (g - 1.0) / g * bytes / (d->link_bytes_per_s * share) + (g - 1) * d->latency_s : 0;
    *across = n > 1 ? (n - 1.0) / n * bytes / g / (d->node_link_bytes_per_s * share) + (n - 1) * d->latency_s : 0;
}

// The all-reduce: a reduce-scatter and an all-gather (collective), both in the node and between the nodes. A flat ring
// over all ranks would move each node's whole share on one NIC.
static void allreduce(StepPlan *p, double grads, int P, const DeviceSpec *d) {
    double in, across;
    collective(grads, P, d, 1, &in, &across);
    p->allreduce_s = 2 * (in + across);
    p->allreduce_node_s = 2 * across;
}

static double collective_s(double bytes, int P, const DeviceSpec *d, double share) {
    double in, across;
    collective(bytes, P, d, share, &in, &across);
    return in + across;
}

// ---- the shard level's collectives, unit by unit ----

// One slot of a micro-step: a unit's compute, the gather it waits for and the reduce-scatter issued as it ends.
typedef struct {
    double compute_s, gather_s, scatter_s;
} Slot;

// The slots' timeline: slot k's gather is issued as slot k−1 starts computing (two weight buffers: the one computing
// and the next), its reduce-scatter as it ends; the link takes them one at a time in the order issued. Returns the
// micro-step's end; the units' compute alone is the sum of compute_s.
static double slots_end(const Slot *s, int n) {
    double link = 0, start_prev = 0, end_prev = 0;
    for (int k = 0; k < n; k++) {
        double begin = link > start_prev ? link : start_prev;
        link = begin + s[k].gather_s;
        double ready = link;
        if (k > 0 && s[k - 1].scatter_s > 0) link = (link > end_prev ? link : end_prev) + s[k - 1].scatter_s;
        start_prev = ready > end_prev ? ready : end_prev;
        end_prev = start_prev + s[k].compute_s;
    }
    if (n > 0 && s[n - 1].scatter_s > 0) link = (link > end_prev ? link : end_prev) + s[n - 1].scatter_s;
    return link > end_prev ? link : end_prev;
}

// A micro-step's units in the order they compute: the embeddings, each layer's forward, the final norm with the LM head
// (forward and backward fused; tied, it reads and writes the embeddings' unit too), each layer's backward from the last,
// the embeddings' backward. Gathers at params, the forward's and again the backward's (the embeddings' backward needs no
// weights); reduce-scatters at grads and params. Times per unit: layer forward and backward, the head (compute), each
// unit's collective (xfer) by the layout's units.
static int shard_slots(Slot *s, const ModelConfig *c, ShardLevel shard, const double *xfer, double fwd, double bwd,
                       double head) {
    bool gather = shard == SHARD_PARAMS, scatter = shard >= SHARD_GRADS;
    int L = c->n_layer, n = 0;
    double head_x = xfer[L + 1] + (c->tie_embeddings ? xfer[0] : 0);
    s[n++] = (Slot){0, gather ? xfer[0] : 0, 0};
    for (int l = 0; l < L; l++) s[n++] = (Slot){fwd, gather ? xfer[1 + l] : 0, 0};
    s[n++] = (Slot){head, gather ? head_x : 0, scatter ? head_x : 0};
    for (int l = L - 1; l >= 0; l--) s[n++] = (Slot){bwd, gather ? xfer[1 + l] : 0, scatter ? xfer[1 + l] : 0};
    s[n++] = (Slot){0, 0, scatter ? xfer[0] : 0};
    return n;
}

// The shard level's collectives in a step of `accum` micro-steps over P ranks, with the units' compute per micro-step.
static void shard_traffic(StepPlan *p, const ModelConfig *c, ShardLevel shard, int P, int accum, double fwd, double bwd,
                          double head, const DeviceSpec *d) {
    if (shard == SHARD_NONE || P < 2) return;
    ParamTable t = params_build(c);
    ShardLayout lay = shard_layout(&t, c, P, 0);
    double share = d->busy_share > 0 ? d->busy_share : 1, all = (double)t.total * sizeof(real), moved = 0;
    double *xfer = xcalloc((size_t)lay.n_units, sizeof(double), "step plan");   // (n_units) seconds
    double *bytes = xcalloc((size_t)lay.n_units, sizeof(double), "step plan");  // (n_units)
    for (int u = 0; u < lay.n_units; u++) {
        bytes[u] = (double)lay.unit_len[u] * sizeof(real);
        xfer[u] = collective_s(bytes[u], P, d, share);
    }
    if (shard >= SHARD_GRADS) {
        Slot *s = xcalloc((size_t)(2 * c->n_layer + 4), sizeof(Slot), "step plan");
        int n = shard_slots(s, c, shard, bytes, 0, 0, 0);   // the bytes each unit's collectives move
        for (int k = 0; k < n; k++) moved += accum * (s[k].gather_s + s[k].scatter_s);
        n = shard_slots(s, c, shard, xfer, fwd, bwd, head);
        double compute = 0;
        for (int k = 0; k < n; k++) {
            compute += s[k].compute_s;
            p->shard_transfer_s += accum * (s[k].gather_s + s[k].scatter_s);
        }
        p->shard_wait_s = accum * (slots_end(s, n) - compute);
        free(s);
    }
    if (shard <= SHARD_GRADS) {   // the updated weights' all-gather, after the optimizer step: nothing computes beside it
        double ag = collective_s(all, P, d, 1);
        p->shard_transfer_s += ag;
        p->shard_wait_s += ag;
        moved += all;
    }
    // A rank's core takes in (P − 1)/P of each collective's bytes through the network stack.
    if (d->host_bytes_per_s > 0) p->shard_stack_s = moved * (P - 1.0) / P / d->host_bytes_per_s;
    free(xfer);
    free(bytes);
    shard_layout_free(&lay);
    params_free(&t);
}

// One block's K and V (both pieces) on a link of that rate.
static double hop_seconds(const AttnShape *s, int L, double latency_s, double bytes_per_s) {
    return 2 * (latency_s + (double)(L / 2) * 2 * s->n_kv_head * s->head_dim * sizeof(real) / bytes_per_s);
}

StepPlan stepplan(const ModelConfig *c, int B, int accum, int T, int dp, int sp, ShardLevel shard, Recompute r,
                  const DeviceSpec *d) {
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
    if (shard <= SHARD_OPTIM) allreduce(&p, (double)config_num_params(c) * sizeof(real), P, d);
    double fwd, bwd, head, tokens = (double)B * L;   // a micro-step's units: a layer's forward and backward, the head
    unit_flops(c, r, &fwd, &bwd, &head);
    shard_traffic(&p, c, shard, P, accum, tokens * fwd / d->matmul_flops + B * f.seconds,
                  tokens * bwd / d->matmul_flops + B * b.seconds, tokens * head / d->matmul_flops, d);
    p.step_s = p.matmul_s + p.attn_compute_s + p.ring_wait_s + p.allreduce_s + p.shard_wait_s + p.shard_stack_s;
    p.tokens_per_s = (double)accum * B * T * dp / p.step_s;
    p.flops_per_token = matmul_flops_per_token(c, RECOMPUTE_NONE) + 6.0 * T * c->dim * c->n_layer;
    p.mfu = p.tokens_per_s * p.flops_per_token / (P * d->matmul_flops);
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
