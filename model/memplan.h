// model/memplan.h — activation recompute modes and the memory plan: bytes per rank from the config, T, sp and the mode.
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "core/backend.h"
#include "model/config.h"

// What the forward keeps per layer for the backward (model/gpt.c). Recompute never runs attention
// or the ring again: O and its LSE are always kept; q, k, v come back from the kept layer input.
typedef enum {
    RECOMPUTE_NONE,   // every intermediate kept (13 buffers per layer)
    RECOMPUTE_MLP,    // the attention side and xm kept; the MLP's norm, gate and up recomputed
    RECOMPUTE_FULL,   // only x, O and LSE kept; norm, QKV, RoPE, out-projection and MLP recomputed
} Recompute;

// "none", "mlp", "full" -> *r; false for anything else.
bool recompute_parse(const char *s, Recompute *r);
const char *recompute_name(Recompute r);

// Every arena piece starts on a multiple of this many bytes (the alignment cudaMalloc gives, which vector
// loads in the kernels rely on).
enum { ACT_ALIGN_BYTES = 256 };

// Bytes of the activation buffers model/gpt.c allocates for B sequences of T_local tokens on a ring of
// sp ranks (N = B·T_local rows), by where they live, with the [act] tensors stored as `store`
// (core/backend.h: bf16 halves them under --activations bf16).
typedef struct {
    size_t kept_per_layer;   // kept from the forward to the backward, per layer
    size_t work;             // one layer's working set: the shared arena (0 for none; holds the ring's packets under full)
    size_t shared;           // buffers shared by all layers: backward scratch, final norm, head gradient
} ActSizes;
ActSizes act_sizes(const ModelConfig *c, Recompute r, ActStore store, int B, int T_local, int sp);

// One rank's memory for a step, in bytes: parameters, gradients and AdamW state are `real` (fp32), the
// activations as act_sizes says for `store`.
typedef struct {
    double weights, grads, optimizer;   // parameters (+ their bf16 copies under bf16), their gradients, AdamW's moments
    double kept;                        // activations kept for the backward, all layers
    double work;                        // one layer's recompute working set
    double shared;                      // backward scratch, final norm, LM-head gradient
    double ring;                        // the ring's two K/V/dK/dV packets and its dK/dV step buffer (sp > 1;
                                        // under full they live in the working set and this is 0)
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
