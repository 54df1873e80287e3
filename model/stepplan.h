// model/stepplan.h — a training step's predicted time on a described device and its nodes: matmuls, attention blocks, the ring's
// transfers hop by hop and what the blocks hide of them (attention/ring.h's timing model), the gradient all-reduce or the shard
// level's gathers and reduce-scatters over the in-node and inter-node links; where the rings sit on the nodes; device presets
// with their sources.
#pragma once
#include "model/config.h"
#include "model/memplan.h"

// One device (one rank). Rates are what a rank achieves, not a marketing peak, where a source gives one.
typedef struct {
    const char *name;           // "h100-sxm"
    const char *what;           // "NVIDIA H100 SXM5 80 GB"
    double mem_bytes;           // memory per device
    double matmul_flops;        // dense matmul FLOP/s
    double attn_flops;          // attention block FLOP/s (4·hd per visible pair forward, 10·hd backward)
    double link_bytes_per_s;    // the link inside a node (NVLink), each direction: in-node ring hops and all-reduce
    double node_link_bytes_per_s;   // between nodes, per device (its NIC), each direction: hops that cross a node
    int per_node;               // devices (ranks) per node
    double latency_s;           // per message
    double busy_share;          // the share of the link's rate a ring transfer gets while its rank computes
    double host_bytes_per_s;    // what the rank's own core moves through the network stack (0: free, as on a GPU)
    const char *source;         // where the numbers come from
} DeviceSpec;

// The preset of that name, or NULL; the names, comma separated.
const DeviceSpec *device_preset(const char *name);
const char *device_preset_names(void);

typedef struct {
    double matmul_s;          // every matmul of the step (with the recompute mode's extra ones)
    double attn_compute_s;    // attention block calls (with the host's network stack work done between their tiles)
    double ring_stack_s;      // of that, the host's network stack moving the ring's pieces (0 on a GPU)
    double ring_wait_s;       // exposed ring waiting: the transfers the blocks do not hide
    double ring_transfer_s;   // the ring's transfers alone (the serial baseline's waiting)
    double allreduce_s;       // the gradient all-reduce over dp·sp ranks (none, optim; 0 at grads, params)
    double shard_transfer_s;  // the shard level's collectives alone: optim the weights' all-gather after the update; grads
                              // the units' gradient reduce-scatters in the backward and that all-gather; params the units'
                              // all-gathers before their forward and backward and the reduce-scatters (no all-reduce)
    double shard_wait_s;      // of those, the time the units' compute does not hide
    double shard_stack_s;     // the host's network stack moving them (0 on a GPU)
    double step_s;            // one optimizer step: matmul + attention (compute and exposed wait) + all-reduce
                              // + exposed shard wait + its network stack
    double tokens_per_s;      // global tokens per second
    double flops_per_token;   // the model's training FLOPs per token (train's MFU convention: 6 per matmul weight, the
                              // LM head's included, and 6·T·C per layer for attention; no recompute)
    double mfu;               // tokens_per_s · flops_per_token over every rank's matmul FLOP/s
    double block_s;           // one forward ring block: half the rows × all keys of a block (L/2 × L pairs)
    double hop_s;             // one block's K and V on the in-node link (both pieces)
    double hop_node_s;        // the same on the inter-node link
    double ring_bytes_per_s;  // the rate the ring is priced at: its slowest hop's link
    double allreduce_node_s;  // of allreduce_s, the part between nodes
    int nodes;                // nodes the job takes: ceil(dp·sp / per_node)
    int ring_nodes;           // nodes the widest ring spans
    int cross_hops;           // hops of that ring that cross a node boundary (0: every ring inside one node)
} StepPlan;

// Where the rings sit: rank = dp_index·sp + sp_index (docs/DESIGN.md), nodes of per_node consecutive ranks.
typedef struct {
    int ring;         // the dp index of the ring that spans the most nodes (the first such)
    int nodes;        // nodes it spans
    int min_nodes;    // the fewest nodes a ring of sp ranks can span: ceil(sp / per_node)
    int cross_hops;   // its hops (sp index i -> i + 1, sp − 1 -> 0) that cross a node boundary
} RingPlace;

RingPlace ring_place(int dp, int sp, int per_node);
// Whether ring `ring`'s hop from sp index i to the next crosses a node boundary.
bool ring_hop_crosses(int ring, int i, int sp, int per_node);

// B sequences of T tokens per micro-step and ring, accum micro-steps per optimizer step, dp rings of sp ranks laid out
// on nodes of d->per_node (ring_place), the model state sharded at `shard` over all dp·sp ranks. The ring is priced at
// its slowest hop's link: every step of the ring waits for its slowest hop. Collectives are hierarchical: in the node,
// then of each rank's 1/g share between the nodes. A unit's gather (params) is issued as the unit before it starts
// computing and its gradients' reduce-scatter (grads, params) as its backward ends, one after the other on the link,
// each micro-step, at the share of the link's rate the ring's transfers get while computing; what the units' compute
// does not cover is the exposed shard wait. The ring's own transfers are not counted against that link.
StepPlan stepplan(const ModelConfig *c, int B, int accum, int T, int dp, int sp, ShardLevel shard, Recompute r,
                  const DeviceSpec *d);
// The fewest tokens per rank (even) whose ring of sp ranks (laid out as in stepplan, at its slowest hop's link) leaves at
// most 5 % of its transfer time exposed; 0 when sp = 1 (no transfer) or when no block up to 2^24 tokens does.
long stepplan_min_hiding_tokens(const ModelConfig *c, int dp, int sp, const DeviceSpec *d);
