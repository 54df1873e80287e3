// model/memplan.h — the memory plan: bytes per rank from the config, T, sp and the recompute mode (activations: the table of model/acts.h).
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "core/backend.h"
#include "model/acts.h"
#include "model/config.h"

// One rank's memory for a step, in bytes: parameters, gradients and AdamW state are `real` (fp32), the
// activations as act_sizes (model/acts.h) sums the activation table for `store`.
typedef struct {
    double weights, grads, optimizer;   // parameters (+ their bf16 copies under bf16), their gradients, AdamW's moments
    double kept;                        // activations kept for the backward, all layers
    double work;                        // one layer's recompute working set
    double shared;                      // backward scratch, final norm, LM-head gradient
    double ring;                        // the ring's two K/V/dK/dV packets and its dK/dV step buffer (sp > 1;
                                        // 0 where the activation table puts them in the working set: full)
    double head_chunk;                  // the fused LM head's chunk of logits
    double batch;                       // tokens, targets, positions, document numbers
    double runtime;                     // the process before the model (libraries, data): measured, not predicted
    double total;                       // the predicted peak: the sum of the above
    double kept_per_token_layer;        // bytes per token per layer kept
    double work_per_token;              // bytes per token of the working set
} MemPlan;

MemPlan memplan(const ModelConfig *c, int B, int T_local, int sp, Recompute r, ActStore store, int loss_chunk,
                double runtime_bytes);
// Prints the plan (rank 0): one line per part, then the predicted peak.
void memplan_print(const MemPlan *p, const ModelConfig *c, Recompute r, int B, int T, int sp);
// The longest T (a multiple of 2·sp, or any T ≥ 1 for sp = 1) whose plan fits in budget bytes; 0 if none.
long memplan_max_seq_len(const ModelConfig *c, int B, int sp, Recompute r, ActStore store, int loss_chunk,
                         double runtime_bytes, double budget);

// This process's resident set now (/proc/self/status VmRSS) and the machine's available memory
// (/proc/meminfo MemAvailable), in bytes; 0 when the file cannot be read.
double mem_rss_now_bytes(void);
double mem_host_available_bytes(void);
