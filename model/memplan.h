// model/memplan.h — the memory plan: bytes per rank from the config, T, sp, the shard level and the recompute mode (activations: the table of model/acts.h).
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "attention/cp.h"
#include "core/backend.h"
#include "data/placement.h"
#include "model/acts.h"
#include "model/config.h"
#include "model/shard.h"

// One rank's memory for a step, in bytes: parameters, gradients and AdamW state are `real` (fp32), the
// activations as act_sizes (model/acts.h) sums the activation table for `store`. The model state is the shard level's
// (model/shard.h) over `ranks` ranks, counted for rank 0, whose slices are the longest: at none every rank holds all
// of it; optim keeps 1/N of the moments, grads also 1/N of the gradients, params also 1/N of the weights.
typedef struct {
    double weights, grads, optimizer;   // this rank's parameters (+ their bf16 copies under bf16), their gradients,
                                        // AdamW's moments
    double gathered;                    // the units' buffers (ShardSizes, model/shard.h), but unit 0's own of a tied
                                        // head; params under bf16 also the units' bf16 copies
    double coll_scratch;                // host collectives (a CPU run), from grads on: Open MPI's non-blocking
                                        // reduce-scatter (coll/libnbc: a binomial reduce, then a scatter) allocates
                                        // two buffers of the whole unit for each call, and two are in flight
    double kept;                        // activations kept for the backward, all layers
    double work;                        // one layer's recompute working set
    double shared;                      // backward scratch, final norm, LM-head gradient
    double ring;                        // the context parallelism's buffers (sp > 1): the ring's two K/V/dK/dV packets
                                        // and its dK/dV step buffer (the exchange's K|V slot more under a placement
                                        // other than the zigzag; 0 where the activation table puts them in the working
                                        // set: full), or Ulysses' head-sharded tensors (the hybrid's ring's packets too)
    double head_chunk;                  // the fused LM head's chunk of logits
    double batch;                       // tokens, targets, positions, document numbers
    double runtime;                     // the process before the model (libraries, data): measured, not predicted
    double total;                       // the predicted peak: the sum of the above
    double model_state;                 // weights + grads + optimizer + gathered + coll_scratch
    double kept_per_token_layer;        // bytes per token per layer kept
    double work_per_token;              // bytes per token of the working set
} MemPlan;

// What a plan is of: B sequences of T_local tokens on each of a job's `ranks` ranks (dp × sp), rings of sp, the model
// state sharded at `shard` over all of them (SHARD_NONE: ranks is not read).
typedef struct {
    const ModelConfig *model;
    int batch, T_local, sp, ranks;
    ShardLevel shard;
    CpMode cp;                // how attention spans the sp ranks (CP_RING by default)
    int ulysses;              // CP_HYBRID: the Ulysses group size (CP_ULYSSES: sp; 0 is taken as sp)
    Placement placement;      // the rows' layouts (PLACE_ZIGZAG by default; another one: the ring's exchange)
    Recompute recompute;
    ActStore store;
    int loss_chunk;           // rows per chunk of the fused LM head
    double runtime_bytes;     // the process before the model (MemPlan.runtime)
    bool host_collectives;    // the collectives are MPI's in the memory planned (a CPU run); a GPU's NCCL ones work in place
} MemPlanInput;

MemPlan memplan(MemPlanInput in);
// Prints the plan (rank 0): one line per part, then the predicted peak.
void memplan_print(const MemPlan *p, MemPlanInput in);
// The longest T (a multiple of 2·sp, any T ≥ 1 at sp = 1) whose plan fits in budget bytes; 0 if none (in.T_local unread).
long memplan_max_seq_len(MemPlanInput in, double budget);

// This process's resident set now (/proc/self/status VmRSS) and the machine's available memory
// (/proc/meminfo MemAvailable), in bytes; 0 when the file cannot be read.
double mem_rss_now_bytes(void);
double mem_host_available_bytes(void);
