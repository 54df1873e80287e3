// model/acts.c — the activation table and its layout: every tensor, its shape, and where each recompute mode puts it.
#include "model/acts.h"

#include <stdint.h>
#include <string.h>

#include "core/common.h"

static const char *const NAMES[] = {[RECOMPUTE_NONE] = "none", [RECOMPUTE_MLP] = "mlp", [RECOMPUTE_FULL] = "full",
                                    [RECOMPUTE_DECODE] = "decode"};

bool recompute_parse(const char *s, Recompute *r) {
    for (Recompute m = RECOMPUTE_NONE; m <= RECOMPUTE_FULL; m++)
        if (!strcmp(s, NAMES[m])) {
            *r = m;
            return true;
        }
    return false;
}

const char *recompute_name(Recompute r) { return NAMES[r]; }

#define LAYER(f) #f, true, offsetof(LayerActs, f)
#define SCRATCH(f) #f, false, offsetof(Activations, f)
#define OWN {ACT_OWN, 0, NULL}
#define ARENA(overlays) {ACT_ARENA, (overlays), NULL}
#define OVER(name) {ACT_OVER, 0, (name)}
#define RING {ACT_RING, 0, NULL}
#define MODES(none, mlp, full) {[RECOMPUTE_NONE] = none, [RECOMPUTE_MLP] = mlp, [RECOMPUTE_FULL] = full}
enum { MLP = ACT_OVERLAY_MLP, ATTN = ACT_OVERLAY_ATTN, FINAL = ACT_OVERLAY_FINAL };

// Every activation the forward and backward use, in the arena's order (model/acts.h: overlays that share
// tensors share them as a prefix): what every mode keeps, the scratch all overlays hold, the MLP side, the
// attention side, the final norm, then the backward's scratch. An overlay is a set alive at once, so the
// arena costs the largest overlay, not their sum; docs/DESIGN.md ("Memory linear in T, and recompute...")
// says why each mode keeps what it does.
static const ActSpec TABLE[] = {
    // tensor           shape             [act]  where: none, mlp, full
    {LAYER(x),          ACT_ROWS_C,       false, MODES(OWN, OWN, OWN)},                  // (N, C) layer input
    {LAYER(att),        ACT_ROWS_Q,       false, MODES(OWN, OWN, OWN)},                  // (N, H·hd) attention output
    {LAYER(lse),        ACT_ROWS_H,       false, MODES(OWN, OWN, OWN)},                  // (N, H) its log-sum-exp
    // h, then (full) dh, then d_c over it: alive through every overlay
    {SCRATCH(h),        ACT_ROWS_F,       true,  MODES(OWN, OWN, ARENA(MLP | ATTN | FINAL))}, // (N, F) swiglu out, then dh
    // the MLP side (forward MLP; the backward's MLP half); xm, rstd2, xn2 stay alive under the final norm,
    // which the last layer's out = h·w_down + xm writes while it reads xm
    {LAYER(xm),         ACT_ROWS_C,       false, MODES(OWN, OWN, ARENA(MLP | FINAL))},   // (N, C) x + attention
    {LAYER(rstd2),      ACT_ROWS,         false, MODES(OWN, ARENA(MLP), ARENA(MLP | FINAL))}, // (N) 1/rms of xm
    {LAYER(xn2),        ACT_ROWS_C,       true,  MODES(OWN, ARENA(MLP), ARENA(MLP | FINAL))}, // (N, C) mlp-norm output
    {LAYER(gate),       ACT_ROWS_F,       true,  MODES(OWN, ARENA(MLP), ARENA(MLP))},    // (N, F)
    {LAYER(up),         ACT_ROWS_F,       true,  MODES(OWN, ARENA(MLP), ARENA(MLP))},    // (N, F)
    // the attention side (forward attention; the backward's attention half, once d_c = d(att) is in place),
    // and on a ring its packets: only attention uses them, while the MLP side and the final norm are dead
    {LAYER(rstd1),      ACT_ROWS,         false, MODES(OWN, OWN, ARENA(ATTN))},          // (N) 1/rms of x
    {LAYER(xn1),        ACT_ROWS_C,       true,  MODES(OWN, OWN, ARENA(ATTN))},          // (N, C) attention-norm output
    {LAYER(q),          ACT_ROWS_Q,       true,  MODES(OWN, OWN, ARENA(ATTN))},          // (N, H·hd) after RoPE
    {LAYER(k),          ACT_ROWS_KV,      true,  MODES(OWN, OWN, ARENA(ATTN))},          // (N, Hkv·hd) after RoPE
    {LAYER(v),          ACT_ROWS_KV,      true,  MODES(OWN, OWN, ARENA(ATTN))},          // (N, Hkv·hd)
    {SCRATCH(d_q),      ACT_ROWS_Q,       false, MODES(OWN, OWN, ARENA(ATTN))},          // (N, H·hd)
    {SCRATCH(d_k),      ACT_ROWS_KV,      false, MODES(OWN, OWN, ARENA(ATTN))},          // (N, Hkv·hd)
    {SCRATCH(d_v),      ACT_ROWS_KV,      false, MODES(OWN, OWN, ARENA(ATTN))},          // (N, Hkv·hd)
    {SCRATCH(attn_tmp), ACT_ROWS_H,       false, MODES(OWN, OWN, ARENA(ATTN))},          // (N, H) running sum, D
    {SCRATCH(cp_ws),    ACT_CP_WORKSPACE, false, MODES(RING, RING, ARENA(ATTN))},        // attn_cp_workspace_bytes
    // the final norm, over gate and up: written after the last layer's MLP has read them, read by the
    // backward before any recompute
    {SCRATCH(x_final),  ACT_ROWS_C,       false, MODES(OWN, OWN, ARENA(FINAL))},         // (N, C) last residual
    {SCRATCH(rstd_f),   ACT_ROWS,         false, MODES(OWN, OWN, ARENA(FINAL))},         // (N)
    {SCRATCH(xn_f),     ACT_ROWS_C,       true,  MODES(OWN, OWN, ARENA(FINAL))},         // (N, C) LM-head input
    {SCRATCH(dx_f),     ACT_ROWS_C,       false, MODES(OWN, OWN, ARENA(FINAL))},         // (N, C) d(loss)/d(xn_f)
    // the backward's scratch: dgate and dup overwrite gate and up in place, d_c = d(att) overwrites dh
    {SCRATCH(res),      ACT_ROWS_C,       false, MODES(OWN, OWN, OWN)},                  // (N, C) residual gradient
    {SCRATCH(d_c),      ACT_ROWS_C,       false, MODES(OWN, OWN, OVER("h"))},            // (N, C)
    {SCRATCH(d_gate),   ACT_ROWS_F,       true,  MODES(OWN, OVER("gate"), OVER("gate"))}, // (N, F)
    {SCRATCH(d_up),     ACT_ROWS_F,       true,  MODES(OWN, OVER("up"), OVER("up"))},    // (N, F)
};
enum { TABLE_LEN = sizeof TABLE / sizeof TABLE[0] };
#undef LAYER
#undef SCRATCH
#undef OWN
#undef ARENA
#undef OVER
#undef RING
#undef MODES

ActDims act_dims(const ModelConfig *c, Recompute r, ActStore store, int B, int T_local, const CpConfig *cp) {
    return (ActDims){.N = (size_t)B * T_local, .T_local = (size_t)T_local, .C = c->dim, .Q = c->dim,
                     .KV = cfg_kv_dim(c), .F = c->ffn_dim, .H = c->n_head, .hd = cfg_head_dim(c), .mode = r,
                     .store = store, .cp = cp ? *cp : (CpConfig){.sp = 1}};
}

// The unrounded bytes of s's tensor.
static size_t spec_bytes(const ActSpec *s, const ActDims *d) {
    size_t elem = s->act ? act_elem_bytes(d->store) : sizeof(real);
    switch (s->shape) {
    case ACT_ROWS: return d->N * elem;
    case ACT_ROWS_C: return d->N * d->C * elem;
    case ACT_ROWS_Q: return d->N * d->Q * elem;
    case ACT_ROWS_KV: return d->N * d->KV * elem;
    case ACT_ROWS_F: return d->N * d->F * elem;
    case ACT_ROWS_H: return d->N * d->H * elem;
    case ACT_CP_WORKSPACE: {
        AttnShape s = {.n_head = (int)d->H, .n_kv_head = (int)(d->KV / d->hd), .head_dim = (int)d->hd, .qkv = d->store};
        return attn_cp_workspace_bytes(&d->cp, &s, (int)d->T_local);
    }
    }
    return 0;
}

// decode lays out as full does, but for the keys and values, which the decoder reads from every layer as its cache.
// A CP workspace that cannot be lent (Ulysses') stays the CP's own in every mode.
static const ActWhere *where(const ActSpec *s, const ActDims *d) {
    static const ActWhere KEPT = {ACT_OWN, 0, NULL}, CP_OWN = {ACT_RING, 0, NULL};
    bool cache = s->per_layer && (s->field == offsetof(LayerActs, k) || s->field == offsetof(LayerActs, v));
    if (s->shape == ACT_CP_WORKSPACE && !attn_cp_lends(&d->cp)) return &CP_OWN;
    if (d->mode == RECOMPUTE_DECODE) return cache ? &KEPT : &s->where[RECOMPUTE_FULL];
    return &s->where[d->mode];
}
static bool present(const ActSpec *s, const ActDims *d) { return s->shape != ACT_CP_WORKSPACE || d->cp.sp > 1; }
static size_t round_up(size_t bytes) { return (bytes + ACT_ALIGN_BYTES - 1) / ACT_ALIGN_BYTES * ACT_ALIGN_BYTES; }

// s's arena piece: large enough for s and every tensor laid over it, rounded up to ACT_ALIGN_BYTES.
static size_t piece(const ActSpec *s, const ActDims *d) {
    size_t bytes = spec_bytes(s, d);
    for (const ActSpec *o = TABLE; o < TABLE + TABLE_LEN; o++) {
        const ActWhere *w = where(o, d);
        if (w->home == ACT_OVER && !strcmp(w->over, s->name) && spec_bytes(o, d) > bytes) bytes = spec_bytes(o, d);
    }
    return round_up(bytes);
}

static const ActSpec *spec_named(const char *name) {
    for (const ActSpec *s = TABLE; s < TABLE + TABLE_LEN; s++)
        if (!strcmp(s->name, name)) return s;
    fail("activation table: no tensor named '%s'", name);
}

static const size_t UNPLACED = SIZE_MAX;   // an arena offset not yet given

// Lays each overlay from offset 0, its tensors in table order, into at (per row, UNPLACED until placed).
// A tensor an earlier overlay placed keeps its place, which must be where this overlay has reached.
static size_t arena_place(const ActDims *d, size_t at[TABLE_LEN]) {
    size_t end = 0;
    for (const ActSpec *s = TABLE; s < TABLE + TABLE_LEN; s++) at[s - TABLE] = UNPLACED;
    for (unsigned overlay = ACT_OVERLAY_MLP; overlay <= ACT_OVERLAY_FINAL; overlay <<= 1) {
        size_t off = 0;
        for (const ActSpec *s = TABLE; s < TABLE + TABLE_LEN; s++) {
            const ActWhere *w = where(s, d);
            if (w->home != ACT_ARENA || !(w->overlays & overlay) || !present(s, d)) continue;
            size_t *placed = &at[s - TABLE];
            if (*placed == UNPLACED) *placed = off;
            else if (*placed != off)
                fail("activation table, --recompute %s: '%s' is shared by two overlays but not as their common prefix",
                     recompute_name(d->mode), s->name);
            off += piece(s, d);
            end = off > end ? off : end;
        }
    }
    return end;
}

// Where s is for d, given the arena's offsets at.
static ActPlace place(const ActSpec *s, const ActDims *d, const size_t at[TABLE_LEN]) {
    if (!present(s, d)) return (ActPlace){.home = ACT_ABSENT};
    const ActWhere *w = where(s, d);
    ActPlace p = {.home = w->home, .bytes = spec_bytes(s, d)};
    if (w->home == ACT_ARENA) p.offset = at[s - TABLE];
    if (w->home == ACT_OVER) {
        const ActSpec *t = spec_named(w->over);
        if (where(t, d)->home != ACT_ARENA)
            fail("activation table, --recompute %s: '%s' is laid over '%s', which is not in the arena",
                 recompute_name(d->mode), s->name, t->name);
        p.home = ACT_ARENA;
        p.offset = at[t - TABLE];
    }
    return p;
}

size_t acts_layout(const ActDims *d, ActVisit visit, void *ctx) {
    size_t at[TABLE_LEN];
    size_t arena = arena_place(d, at);
    if (visit)
        for (const ActSpec *s = TABLE; s < TABLE + TABLE_LEN; s++) visit(ctx, s, place(s, d, at));
    return arena;
}

real **act_field(Activations *a, LayerActs *L, const ActSpec *s) {
    return (real **)((char *)(s->per_layer ? (void *)L : (void *)a) + s->field);
}

// Adds one row's bytes to the sizes by where it lives (the arena is counted whole by acts_layout).
static void count(void *ctx, const ActSpec *s, ActPlace p) {
    ActSizes *z = ctx;
    if (p.home == ACT_OWN) *(s->per_layer ? &z->kept_per_layer : &z->shared) += p.bytes;
    if (p.home == ACT_RING) z->ring += p.bytes;
}

ActSizes act_sizes(const ModelConfig *c, Recompute r, ActStore store, int B, int T_local, const CpConfig *cp) {
    ActDims d = act_dims(c, r, store, B, T_local, cp);
    ActSizes z = {0};
    z.work = acts_layout(&d, count, &z);
    return z;
}
