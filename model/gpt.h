// model/gpt.h — the model: parameters by name, activations (model/acts.h), and the forward/backward orchestration written once.
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "attention/cp.h"
#include "core/backend.h"
#include "data/batch.h"
#include "model/acts.h"
#include "model/config.h"
#include "model/params.h"
#include "model/shard.h"

struct GptUnitHook;   // below: what runs around each unit (train --shard gathers and reduce-scatters there)

typedef struct {
    ModelConfig cfg;
    const Backend *be;
    ParamTable table;
    real *params;        // (table.total) every weight, in table order; SHARD_PARAMS: (shard->local_total) this rank's slices
    real *grads;         // (table.total) their gradients, same layout
    ModelTensors w, g;   // named views of params and grads
    uint64_t seed;       // gpt_init's: the initial weights (gpt_shard initialises from it)
    Activations act;
    AttnCP *cp;          // context parallelism over the sp ranks of a ring (gpt_set_cp); NULL: the sequence is on this rank
    int loss_chunk;      // rows per chunk of the fused LM head + loss
    bool doc_mask;       // attention stays inside each document of a packed window (--doc-mask; Batch docs)
    int32_t *doc_ids, *doc_ids_host;   // (B, T·sp) each sample's document ids in its layout's order (backend, host)
    size_t doc_ids_cap;  // elements the two buffers hold
    Recompute recompute; // what the forward keeps for the backward (default none; may change between steps)
    ActStore act_store;  // storage of the [act] activations (train --activations; ACT_F32 by default, always on the CPU)
    RopeTable rope;                   // the rotation gpt_rope applies (model/rope.h rope_table)
    ShardLevel shard_level;           // train --shard (SHARD_NONE elsewhere)
    ShardLayout *shard;               // NULL for SHARD_NONE: the units and this rank's slices (model/shard.h), owned
    ShardSizes sizes;                 // every buffer of the state at shard_level: params (sizes.weights), grads, ...
    struct GptUnitHook *unit_hook;    // NULL: every unit's weights and gradients are in place (unsharded)
} GPT;

// Around every unit of the model (model/shard.h: 0 the embeddings, 1 + l layer l, n_layer + 1 the final norm and LM
// head), in the order they run: forward 0 .. n_layer + 1, backward n_layer + 1 .. 0. enter binds the unit's weights
// in m->w (and for the backward its zeroed gradients in m->g); leave says the unit is done (its gradients complete
// after the backward). The last unit's backward starts inside gpt_forward(want_grad): the fused head + loss writes
// the head's gradient there, so that unit is entered for the backward without leaving its forward.
typedef enum { UNIT_FORWARD, UNIT_BACKWARD } UnitPhase;
typedef struct GptUnitHook {
    void (*enter)(struct GptUnitHook *self, GPT *m, int unit, UnitPhase phase);
    void (*leave)(struct GptUnitHook *self, GPT *m, int unit, UnitPhase phase);
} GptUnitHook;

// What a model is built for. GPT_TRAIN: weights initialised from seed, gradients. GPT_INFER (eval, decoding, export:
// a checkpoint is loaded over it): zeroed weights, no gradients (grads NULL), no random initialisation, and the
// forward's activations in the layout that keeps the least (RECOMPUTE_FULL: there is no backward). GPT_SHARDED
// (train --shard): nothing allocated until gpt_shard builds this rank's part of the state, so that no rank ever holds
// the whole model.
typedef enum { GPT_TRAIN, GPT_INFER, GPT_SHARDED } GptUse;
// Builds the table and allocates the parameters (and gradients) on the backend.
void gpt_init(GPT *m, const ModelConfig *c, const Backend *be, uint64_t seed, GptUse use);
void gpt_free(GPT *m);
// Builds the state of a model from gpt_init(GPT_SHARDED) as rank `rank` of `ranks` (through shard_model): the layout,
// the weights from gpt_init's seed (GPT_TRAIN's values) and the gradients, sliced as m->sizes says (from SHARD_GRADS on
// the gradients, at SHARD_PARAMS the weights too). A unit's weights and gradients are bound by m->unit_hook.
void gpt_shard(GPT *m, ShardLevel level, int ranks, int rank);
void gpt_zero_grad(GPT *m);
// Attention over the ranks of `ring` (the sp ranks that share each sequence; every one of them calls) as c says, the
// handle created here and owned by the model (freed by gpt_free or the next call); ring NULL or of one rank: the
// sequence on this rank alone. The batches' rows then come in the layouts c implies (cp_place_groups: the data side's
// placement), each row's in Batch.layout.
void gpt_set_cp(GPT *m, struct Comm *ring, const CpConfig *c);
// Forward over the batch. Returns the sum of per-token losses over rows with a target.
// With want_grad, the fused head also leaves d(loss_sum·grad_scale)/d(xn_f) for gpt_backward
// and accumulates the LM-head gradient. losses (B·T), optional, receives each row's loss.
double gpt_forward(GPT *m, const Batch *b, double grad_scale, bool want_grad, real *losses);
// The decoder's prefill: every layer's keys and values (act.layers[l].k, .v (B·T, Hkv·hd), after RoPE) for
// the batch's rows, and no more: the blocks below the last run whole, the last one only to its Q/K/V. The
// rows' own outputs are never needed (decoding feeds the prompt's last token as its first step), so the
// last layer's attention, out-projection and MLP (a 1/n_layer share of a long prompt's cost) are skipped.
// rope_len: the prompt's length (RoPE scaling "dynamic" reads it; the ring pads the batch beyond it).
void gpt_prefill(GPT *m, const Batch *b, int rope_len);
// Backward of the last gpt_forward(want_grad) on the same batch: accumulates into m->grads.
void gpt_backward(GPT *m, const Batch *b);
// Allocates the activations of B sequences of T tokens now, as the first forward would (for the recompute
// mode and activation storage set); no op runs.
void gpt_prepare(GPT *m, int B, int T);
// Logits of every row (B·T, V) into out (host memory), for evaluation and export checks.
void gpt_logits(GPT *m, const Batch *b, float *out);

// ---- the transformer block, written once: training, evaluation, sampling and the ring call it ----

// The rows one block call runs on: B sequences of T tokens on this rank (N = B·T rows).
typedef struct {
    int B, T;
    const int32_t *pos;      // (N) global positions (RoPE)
    int rope_len;            // the sequence length RoPE scaling sees (HF: max position + 1; only "dynamic" reads it)
    const int32_t *layout;   // host: sequence b's layout over the sp ranks, (sp, T) at layout + b·layout_stride
    int layout_stride;       // (AttnLayout.pos: Batch.layout, its doc_cap); layout NULL: the zigzag
} Rows;

// How a layer attends: reads L->q, L->k, L->v (after RoPE) and writes L->att and L->lse (N rows).
// Training and evaluation attend over whole sequences (one rank, or the ring); decoding attends one
// new row to a KV cache (model/decode.c). The step embeds its own state (first member).
typedef struct AttnStep {
    void (*forward)(struct AttnStep *self, GPT *m, int layer, LayerActs *L, Rows r);
} AttnStep;

// One transformer block of layer l: L->x (N, C) -> out (N, C), leaving in L what the backward needs:
// x -> RMSNorm -> Q, K, V -> RoPE -> attn -> out-proj -> +x = xm -> RMSNorm -> SwiGLU(gate, up) -> down -> +xm.
// h (N, F) is scratch. out may be L->x (decoding updates its one row in place).
void gpt_layer_forward(GPT *m, int l, LayerActs *L, real *h, Rows r, AttnStep *attn, real *out);
// Rotates q (N, H, hd) and k (N, Hkv, hd) [act s] by RoPE at positions pos (N) for sequences of rope_len tokens
// (the model's scaling, model/rope.h rope_frequencies); inverse: the backward's transpose.
void gpt_rope(GPT *m, real *q, real *k, const int32_t *pos, int N, int rope_len, int inverse, ActStore s);
// x (N, C) = the token embeddings of tokens (N).
void gpt_embed(GPT *m, real *x, const int32_t *tokens, int N);
// xn (N, C), rstd (N) = the final RMSNorm of x, the LM head's input.
void gpt_final_norm(GPT *m, real *xn, real *rstd, real *x, int N);
