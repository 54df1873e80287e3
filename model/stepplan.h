// model/stepplan.h — a training step's predicted time on a described device: matmuls, attention blocks, the ring's transfers and
// what the blocks hide of them (attention/ring.h's timing model), the gradient all-reduce; device presets with their sources.
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
    double link_bytes_per_s;    // the ring's (and the all-reduce's) link, each direction
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
    double allreduce_s;       // the gradient all-reduce over dp·sp ranks
    double step_s;            // one optimizer step: matmul + attention (compute and exposed wait) + all-reduce
    double tokens_per_s;      // global tokens per second
    double block_s;           // one forward ring block: half the rows × all keys of a block (L/2 × L pairs)
    double hop_s;             // one block's K and V on the link (both pieces)
} StepPlan;

// B sequences of T tokens per micro-step and ring, accum micro-steps per optimizer step, dp rings of sp ranks.
StepPlan stepplan(const ModelConfig *c, int B, int accum, int T, int dp, int sp, Recompute r, const DeviceSpec *d);
// The fewest tokens per rank (even) whose ring of sp ranks leaves at most 5 % of its transfer time exposed; 0 when
// sp = 1 (no transfer) or when no block up to 2^24 tokens does.
long stepplan_min_hiding_tokens(const ModelConfig *c, int sp, const DeviceSpec *d);
