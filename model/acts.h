// model/acts.h — the activation table: each tensor's shape, storage and place per recompute mode, read by both the forward and the memory plan.
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "attention/cp.h"
#include "core/backend.h"
#include "model/config.h"

// What the forward keeps per layer for the backward. Recompute never runs attention or the ring
// again: O and its LSE are always kept; q, k, v come back from the kept layer input.
typedef enum {
    RECOMPUTE_NONE,   // every intermediate kept (13 buffers per layer)
    RECOMPUTE_MLP,    // the attention side and xm kept; the MLP's norm, gate and up recomputed
    RECOMPUTE_FULL,   // only x, O and LSE kept; norm, QKV, RoPE, out-projection and MLP recomputed
    RECOMPUTE_DECODE, // no backward (the decoder's prefill): x, O, LSE and the keys and values (the KV cache) kept,
                      // the rest one layer's working set as under full. Not a train flag.
} Recompute;

// "none", "mlp", "full" -> *r (train's modes); false for anything else.
bool recompute_parse(const char *s, Recompute *r);
const char *recompute_name(Recompute r);

// Every arena piece starts on a multiple of this many bytes (the alignment cudaMalloc gives, which vector
// loads in the kernels rely on).
enum { ACT_ALIGN_BYTES = 256 };

// Saved for the backward, per layer, for a micro-batch of N = B·T rows (T = this rank's tokens).
// Under recompute, the buffers a mode does not keep point into the one shared arena (the same
// pointer in every layer) and are filled again from the kept x, O and LSE in the backward.
// [act]: stored as Activations.store says (core/backend.h; offsets through act_at), the rest fp32.
// Every field has its row in the table (model/acts.c).
typedef struct {
    real *x;        // (N, C) layer input (residual stream)
    real *rstd1;    // (N) 1/rms of x
    real *xn1;      // (N, C) [act] attention-norm output
    real *q;        // (N, H·hd) [act] after RoPE
    real *k, *v;    // (N, Hkv·hd) [act] k after RoPE
    real *att;      // (N, H·hd) attention output
    real *lse;      // (N, H) fp32 log-sum-exp of each row
    real *xm;       // (N, C) residual after attention
    real *rstd2;    // (N)
    real *xn2;      // (N, C) [act] mlp-norm output
    real *gate, *up;// (N, F) [act]
} LayerActs;

typedef struct {
    LayerActs *layers;  // n_layer
    // the final norm and the head's gradient; their rows in the table too
    real *x_final;      // (N, C) last residual
    real *rstd_f;       // (N)
    real *xn_f;         // (N, C) [act] final-norm output, input to the LM head
    real *dx_f;         // (N, C) gradient of the loss w.r.t. xn_f (filled by the forward's fused head)
    // scratch shared by all layers; their rows in the table too
    real *res;          // (N, C) residual gradient during the backward
    real *d_c;          // (N, C)
    real *d_q;          // (N, H·hd)
    real *d_k, *d_v;    // (N, Hkv·hd)
    real *h;            // (N, F) [act] swiglu output / its gradient
    real *d_gate, *d_up;// (N, F) [act]
    real *attn_tmp;     // (N, H) attention scratch (running sum, D)
    real *cp_ws;        // the ring's packets (attn_cp_workspace_bytes), in the arena under full (else NULL: the CP's own)
    // the allocation
    real *arena;        // one layer's working set under recompute (NULL for none)
    void **owned;       // every buffer allocated for these activations (released by acts_free), in layout order
    size_t *owned_bytes;// ... and its size
    int n_owned;
    int relaid;         // acts_ensure: how many of owned the current layout has taken (n_owned once laid)
    size_t kept_bytes, work_bytes, shared_bytes;   // what acts_ensure allocated (the memory plan's figures)
    int B, T;           // the shape the buffers are laid out for
    int cap_B, cap_T;   // ... and the shape they were allocated for (B·T and T no smaller)
    CpConfig cp;        // ... for this context parallelism (sp 1: none)
    Recompute mode;     // ... the recompute mode
    ActStore store;     // ... and the storage of the [act] buffers
} Activations;

// ---- the table ----

// A tensor's shape: N = B·T_local rows of a width, or the context parallelism's workspace.
typedef enum {
    ACT_ROWS,          // (N)
    ACT_ROWS_C,        // (N, C) the model width
    ACT_ROWS_Q,        // (N, H·hd) the query heads
    ACT_ROWS_KV,       // (N, Hkv·hd) the key/value heads
    ACT_ROWS_F,        // (N, F) the SwiGLU width
    ACT_ROWS_H,        // (N, H) one value per row and head
    ACT_CP_WORKSPACE,  // attn_cp_workspace_bytes (attention/cp.h): the ring's two K|V|dK|dV packets and a dK|dV step
                       // buffer (the exchange's slot more for any layout), or Ulysses' tensors; only with sp > 1
} ActShape;

// Where a tensor lives under one recompute mode.
typedef enum {
    ACT_OWN,      // its own buffer: each layer's for a LayerActs tensor (kept for the backward), one for scratch
    ACT_ARENA,    // in the working-set arena, in the overlays its row names
    ACT_OVER,     // in place over another tensor's arena piece (the row names it)
    ACT_RING,     // the context parallelism's own buffers (attention/ allocates them; the plan counts them apart)
    ACT_ABSENT,   // not there: the CP workspace without sp > 1 (only in an ActPlace, never in the table)
} ActHome;

// The arena's overlays: each is a set of tensors alive at the same time, laid out from the arena's start
// in table order. A tensor in several overlays has one place, so overlays that share tensors share them
// as a prefix in the same order (model/acts.c checks it). Sets of them are or-ed bits.
enum {
    ACT_OVERLAY_MLP = 1,     // the MLP half: forward MLP and the backward's MLP half
    ACT_OVERLAY_ATTN = 2,    // the attention half: forward attention and the backward's attention half
    ACT_OVERLAY_FINAL = 4,   // the final norm: written after the last layer's MLP, read before any recompute
};

typedef struct {
    ActHome home;
    unsigned overlays;   // ACT_ARENA: the overlays (ACT_OVERLAY_* bits) it belongs to
    const char *over;    // ACT_OVER: the name of the tensor whose memory it reuses
} ActWhere;

// One row of the table: a named field of LayerActs or Activations and its place per mode.
typedef struct {
    const char *name;     // the field's name
    bool per_layer;       // a LayerActs field (one per layer) or an Activations one (one for all layers)
    size_t field;         // offsetof the field in LayerActs or Activations
    ActShape shape;
    bool act;             // [act]: stored as ActStore says (bf16 halves it); otherwise fp32 (`real`)
    ActWhere where[3];    // by Recompute
} ActSpec;

// The sizes a layout is made for: N = B·T_local rows, with context parallelism over sp > 1 ranks or not.
typedef struct {
    size_t N, T_local, C, Q, KV, F, H, hd;
    Recompute mode;
    ActStore store;
    CpConfig cp;   // sp 1: one rank
} ActDims;
// cp NULL: one rank.
ActDims act_dims(const ModelConfig *c, Recompute r, ActStore store, int B, int T_local, const CpConfig *cp);

// Where one tensor is for given dims: home is ACT_OWN, ACT_ARENA (an ACT_OVER row resolves to its
// target's offset), ACT_RING or ACT_ABSENT; offset into the arena for ACT_ARENA; bytes unrounded.
typedef struct {
    ActHome home;
    size_t offset, bytes;
} ActPlace;
typedef void (*ActVisit)(void *ctx, const ActSpec *s, ActPlace p);

// Lays out the table for d: calls visit (unless NULL) with every row's place, in table order; returns the
// arena's bytes (0 under none).
size_t acts_layout(const ActDims *d, ActVisit visit, void *ctx);
// The pointer s names: a field of L (a per-layer row) or of a.
real **act_field(Activations *a, LayerActs *L, const ActSpec *s);

// Bytes of the activation buffers for B sequences of T_local tokens under context parallelism cp (NULL: one rank), by where they
// live, with the [act] tensors stored as `store` (bf16 halves them under --activations bf16). The forward
// allocates exactly these (tests/model/test_recompute.c checks it).
typedef struct {
    size_t kept_per_layer;   // kept from the forward to the backward, per layer
    size_t work;             // one layer's working set: the shared arena (0 for none; holds the ring's packets under full)
    size_t shared;           // buffers shared by all layers: backward scratch, final norm, head gradient
    size_t ring;             // the context parallelism's own buffers, where the arena does not hold them (sp > 1)
} ActSizes;
ActSizes act_sizes(const ModelConfig *c, Recompute r, ActStore store, int B, int T_local, const CpConfig *cp);
