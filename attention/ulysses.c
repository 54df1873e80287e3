// attention/ulysses.c — Ulysses attention: q, k, v to head-sharded rows by all-to-all, the attention over them (one rank's, or the ring across groups), the rows home again.
#include "attention/ulysses.h"

#include <stdlib.h>
#include <string.h>

#include "core/backend.h"
#include "core/comm.h"
#include "core/common.h"

// How one tensor's rows divide among the N members of a group: each of a rank's L rows is P pieces of w elements of eb
// bytes, and member m gets piece m / rep. q, out, dout: P = N pieces of H/N heads. lse: N pieces of H/N values. k, v:
// N pieces of Hkv/N heads, or (Hkv < N) Hkv pieces of one head, each on rep = N/Hkv members.
typedef struct {
    int P, rep;
    size_t w, eb;
} Split;

// The index arrays of one layout (backend memory, each N·L int32), for the backend's row gather.
enum { IX_PACK_Q, IX_PACK_KV, IX_UNPACK_Q, IX_UNPACK_KV, IX_INV, IX_POS, IX_COUNT };

// The head-sharded tensors of one call over the group's Tg = N·L tokens, and the all-to-all landing buffer.
typedef struct {
    real *q, *k, *v;          // q (Tg, H/N, hd), k, v (Tg, Hkv', hd) [act store]
    real *out, *dout;         // (Tg, H/N, hd)
    real *lse, *aux;          // (Tg, H/N): lse; the forward's running sum l, the backward's D
    real *dq, *dk, *dv;       // dq (Tg, H/N, hd), dk, dv (Tg, Hkv', hd)
    real *land;               // (N, L) rows of the widest piece (bytes): what an all-to-all receives
} Heads;

struct AttnUlysses {
    Comm *group;
    AttnRing *ring;           // across the groups; NULL: pure Ulysses
    const Backend *be;
    int N;                    // group size
    int R;                    // groups (the ring's size)
    char *ws;                 // the workspace (Heads), ws_bytes of backend memory
    size_t ws_bytes;
    int32_t *ix;              // (IX_COUNT, Tg) backend: the index arrays of the layout in key_pos
    int32_t *ix_host;         // the same, built on the host
    int32_t *key_pos;         // (T) the layout the index arrays were built for (the zigzag's when the caller's is NULL)
    int key_L, key_pkv;       // ... its L and the KV split's piece count
    bool key_zigzag;          // ... and whether it is the zigzag the caller left NULL
    size_t ix_cap;            // Tg the index buffers hold
    int32_t *docs, *docs_host;   // pure Ulysses: (T) the document ids in position order, backend and host (twice T:
                                 // the uploaded ids, then a call's)
    size_t docs_cap;
    int docs_T;                  // T of the uploaded ids, 0 before any
    RingStats stats;
};

AttnUlysses *ulysses_create(Comm *group, Comm *across, const Backend *be, bool overlap) {
    AttnUlysses *u = xcalloc(1, sizeof *u, "Ulysses attention");
    u->group = group;
    u->be = be;
    u->N = comm_size(group);
    u->R = across ? comm_size(across) : 1;
    if (u->R > 1) u->ring = ring_create(across, be, overlap);
    return u;
}

void ulysses_free(AttnUlysses *u) {
    if (!u) return;
    const Backend *be = u->be;
    if (u->ws) be->release(u->ws);
    if (u->ix) be->release(u->ix);
    if (u->docs) be->release(u->docs);
    free(u->ix_host), free(u->key_pos), free(u->docs_host);
    ring_free(u->ring);
    free(u);
}

RingStats ulysses_stats(const AttnUlysses *u) { return u->stats; }
void ulysses_stats_reset(AttnUlysses *u) { u->stats = (RingStats){0}; }
AttnRing *ulysses_ring(const AttnUlysses *u) { return u->ring; }

void ulysses_check_shape(const AttnShape *s, int N) {
    int H = s->n_head, Hkv = s->n_kv_head;
    if (H % N != 0)
        fail_usage("Ulysses over %d ranks: the %d query heads do not divide among them; use a degree (--ulysses, or --sp "
                   "with --cp ulysses) that divides %d",
                   N, H, H);
    if (Hkv % N != 0 && N % Hkv != 0)
        fail_usage("Ulysses over %d ranks: the %d KV heads can neither be split among them nor each be replicated on "
                   "as many; use a degree (--ulysses, or --sp with --cp ulysses) that divides %d or that %d divides",
                   N, Hkv, Hkv, Hkv);
}

AttnShape ulysses_member_shape(const AttnShape *s, int N) {
    int hkv = s->n_kv_head >= N ? s->n_kv_head / N : 1;
    return (AttnShape){.n_head = s->n_head / N, .n_kv_head = hkv, .head_dim = s->head_dim, .qkv = s->qkv};
}

static Split split_q(const AttnShape *s, int N, size_t eb) {
    return (Split){.P = N, .rep = 1, .w = (size_t)s->n_head / N * s->head_dim, .eb = eb};
}
static Split split_kv(const AttnShape *s, int N, size_t eb) {
    int P = s->n_kv_head >= N ? N : s->n_kv_head;
    return (Split){.P = P, .rep = N / P, .w = (size_t)s->n_kv_head / P * s->head_dim, .eb = eb};
}
static Split split_lse(const AttnShape *s, int N) {
    return (Split){.P = N, .rep = 1, .w = (size_t)s->n_head / N, .eb = sizeof(real)};
}

// Lays the Heads out from base (NULL: only counts); returns the bytes. Every tensor starts 256-byte aligned.
static size_t heads_layout(const AttnShape *s, int N, int L, char *base, Heads *h) {
    AttnShape ms = ulysses_member_shape(s, N);
    size_t Tg = (size_t)N * L, qn = Tg * ms.n_head * ms.head_dim, kn = Tg * ms.n_kv_head * ms.head_dim;
    size_t hn = Tg * ms.n_head, eb = act_elem_bytes(s->qkv), rs = sizeof(real), at = 0;
    real **slots[] = {&h->q, &h->k, &h->v, &h->out, &h->dout, &h->lse, &h->aux, &h->dq, &h->dk, &h->dv, &h->land};
    size_t bytes[] = {qn * eb, kn * eb, kn * eb, qn * rs, qn * rs, hn * rs, hn * rs, qn * rs, kn * rs, kn * rs, qn * rs};
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
        if (base) *slots[i] = (real *)(base + at);
        at += (bytes[i] + 255) / 256 * 256;
    }
    return at;
}

size_t ulysses_workspace_bytes(const AttnShape *s, int degree, int sp, int L, bool exchange) {
    Heads h;
    AttnShape ms = ulysses_member_shape(s, degree);
    size_t Tg = (size_t)degree * L, own = heads_layout(s, degree, L, NULL, &h) + IX_COUNT * Tg * sizeof(int32_t);
    if (degree == sp) return own + (size_t)sp * L * sizeof(int32_t);
    return own + ring_workspace_bytes(Tg * ms.n_kv_head * ms.head_dim, s->qkv, exchange);
}

// The workspace for this call's shape (grow-only), laid out.
static Heads heads_of(AttnUlysses *u, const AttnShape *s, int L) {
    Heads h;
    size_t need = heads_layout(s, u->N, L, NULL, &h);
    if (need > u->ws_bytes) {
        if (u->ws) u->be->release(u->ws);
        u->ws = u->be->alloc(need, "Ulysses head-sharded tensors");
        u->ws_bytes = need;
    }
    heads_layout(s, u->N, L, u->ws, &h);
    return h;
}

// ---- the index arrays ----

// Pure Ulysses takes any layout that holds every position once: inv is its inverse.
static void invert_layout(const int32_t *pos, int T, int32_t *inv) {
    for (int p = 0; p < T; p++) inv[p] = -1;
    for (int x = 0; x < T; x++) {
        if (pos[x] < 0 || pos[x] >= T || inv[pos[x]] >= 0)
            fail("Ulysses: layout entry %d is position %d, out of 0..%d or held twice; a layout holds every position once",
                 x, pos[x], T - 1);
        inv[pos[x]] = x;
    }
}

// Member m's pieces first, row by row: pack[m·L + i] = piece m / rep of row i. unpack (rep, L·P): replica r of row i's
// piece h is the row (h·rep + r)·L + i of what arrived.
static void split_indices(Split sp, int N, int L, int32_t *pack, int32_t *unpack) {
    for (int m = 0; m < N; m++)
        for (int i = 0; i < L; i++) pack[m * L + i] = i * sp.P + m / sp.rep;
    for (int r = 0; r < sp.rep; r++)
        for (int i = 0; i < L; i++)
            for (int h = 0; h < sp.P; h++) unpack[((size_t)r * L + i) * sp.P + h] = (h * sp.rep + r) * L + i;
}

// pos (W·L): the zigzag of W ranks of L tokens (rank j: chunk j then chunk 2W−1−j).
static void zigzag(int W, int L, int32_t *pos) {
    int c = L / 2;
    for (int j = 0; j < W; j++)
        for (int i = 0; i < L; i++) pos[j * L + i] = i < c ? j * c + i : (2 * W - 1 - j) * c + i - c;
}

// The index arrays for this layout (pos, or the zigzag) and KV split, rebuilt only when either changed (a layout is per
// row, not per layer). Only pure Ulysses reads the layout (the hybrid keeps its members' order: pos NULL).
static void ensure_indices(AttnUlysses *u, const AttnShape *s, const int32_t *pos, int L) {
    int N = u->N, T = N * u->R * L;
    size_t Tg = (size_t)N * L;
    Split kv = split_kv(s, N, 1);
    if (L == u->key_L && kv.P == u->key_pkv && (pos ? !memcmp(u->key_pos, pos, (size_t)T * sizeof(int32_t)) : u->key_zigzag))
        return;
    if (Tg > u->ix_cap) {
        if (u->ix) u->be->release(u->ix);
        free(u->ix_host);
        u->ix = u->be->alloc(IX_COUNT * Tg * sizeof(int32_t), "Ulysses row indices");
        u->ix_host = xmalloc(IX_COUNT * Tg * sizeof(int32_t), "Ulysses row indices");
        u->ix_cap = Tg;
    }
    u->key_pos = realloc(u->key_pos, (size_t)T * sizeof(int32_t));
    if (!u->key_pos) fail("out of memory for the Ulysses layout (%d positions)", T);
    if (pos) memcpy(u->key_pos, pos, (size_t)T * sizeof(int32_t));
    else zigzag(N * u->R, L, u->key_pos);
    int32_t *h = u->ix_host;
    if (u->R == 1) invert_layout(u->key_pos, T, h + IX_INV * Tg);
    split_indices(split_q(s, N, 1), N, L, h + IX_PACK_Q * Tg, h + IX_UNPACK_Q * Tg);
    split_indices(kv, N, L, h + IX_PACK_KV * Tg, h + IX_UNPACK_KV * Tg);
    if (u->R == 1) memcpy(h + IX_POS * Tg, u->key_pos, Tg * sizeof(int32_t));
    u->be->to_device(u->ix, h, IX_COUNT * Tg * sizeof(int32_t));
    u->key_L = L, u->key_pkv = kv.P, u->key_zigzag = !pos;
}

static const int32_t *ix_of(const AttnUlysses *u, int which) { return u->ix + (size_t)which * u->N * u->key_L; }

// ---- moving rows ----

// dst (n rows of row_bytes) = src rows idx[0..n): the backend's embedding lookup is exactly this row gather. Rows are
// whole reals: a bf16 row holds an even number of elements (hd is even).
static void gather(const AttnUlysses *u, void *dst, const void *src, const int32_t *idx, int n, size_t row_bytes) {
    if (row_bytes % sizeof(real)) fail("Ulysses: a row of %zu bytes is not whole reals; the head dim must be even", row_bytes);
    u->be->embedding_forward(dst, idx, src, n, (int)(row_bytes / sizeof(real)));
}

static void exchange(AttnUlysses *u, const void *send, void *recv, size_t bytes, const char *what) {
    CommRequest r;
    comm_alltoall_start(u->group, &r, send, recv, bytes, what);
    u->stats.bytes += (double)bytes * (u->N - 1);
    u->stats.exchanges++;
    u->stats.wait_s += comm_wait(&r);
}

// One tensor from this rank's rows x (L, P·w) to the group's head-sharded rows xh (Tg, w): member m's pieces packed
// at m·L, the all-to-all, then (pure Ulysses) the rows into position order. The hybrid keeps the group's order: its
// members' rows one after the other are the group's zigzag block, as the ring takes it.
static void to_heads(AttnUlysses *u, Split sp, const void *x, void *xh, void *land, const char *what) {
    int Tg = u->N * u->key_L;
    size_t rb = sp.w * sp.eb;
    bool pure = u->R == 1;
    void *send = pure ? xh : land, *recv = pure ? land : xh;
    gather(u, send, x, ix_of(u, sp.P == u->N && sp.rep == 1 ? IX_PACK_Q : IX_PACK_KV), Tg, rb);
    exchange(u, send, recv, (size_t)u->key_L * rb, what);
    if (pure) gather(u, xh, recv, ix_of(u, IX_INV), Tg, rb);
}

// The way back: head-sharded rows xh (Tg, w) to this rank's rows x (L, P·w); a replicated head's pieces are summed
// replica by replica in group order. scratch: Tg rows, neither xh nor land.
static void to_rows(AttnUlysses *u, Split sp, const void *xh, void *x, void *land, void *scratch, const char *what) {
    int Tg = u->N * u->key_L, n = u->key_L * sp.P;
    size_t rb = sp.w * sp.eb;
    const void *send = xh;
    if (u->R == 1) {   // rows in member order: member j's L rows are its layout's positions
        gather(u, scratch, xh, ix_of(u, IX_POS), Tg, rb);
        send = scratch;
    }
    exchange(u, send, land, (size_t)u->key_L * rb, what);
    const int32_t *unpack = ix_of(u, sp.P == u->N && sp.rep == 1 ? IX_UNPACK_Q : IX_UNPACK_KV);
    gather(u, x, land, unpack, n, rb);
    for (int r = 1; r < sp.rep; r++) {
        gather(u, scratch, land, unpack + (size_t)r * n, n, rb);
        u->be->add_inplace(x, scratch, (size_t)n * sp.w);
    }
}

// ---- the calls ----

// Pure Ulysses attends in position order: the layout-order document ids put there (uploaded only when they changed:
// the layers of one row share them).
static const int32_t *position_docs(AttnUlysses *u, const AttnLayout *lay, int T) {
    if (!lay->docs_host) fail("Ulysses: document ids without their host copy (AttnLayout.docs_host)");
    if ((size_t)T > u->docs_cap) {
        if (u->docs) u->be->release(u->docs);
        free(u->docs_host);
        u->docs = u->be->alloc((size_t)T * sizeof(int32_t), "Ulysses document ids");
        u->docs_host = xcalloc((size_t)T * 2, sizeof(int32_t), "Ulysses document ids");
        u->docs_cap = T;
    }
    int32_t *now = u->docs_host + T;   // the second half: this call's, compared with the uploaded first half
    for (int x = 0; x < T; x++) now[u->key_pos[x]] = lay->docs_host[x];
    if (u->docs_T != T || memcmp(now, u->docs_host, (size_t)T * sizeof(int32_t))) {
        memcpy(u->docs_host, now, (size_t)T * sizeof(int32_t));
        u->be->to_device(u->docs, u->docs_host, (size_t)T * sizeof(int32_t));
        u->docs_T = T;
    }
    return u->docs;
}

// One call: the shape checked, the index arrays and the workspace ready; the attention step's rows and layout.
typedef struct {
    Heads h;
    AttnShape ms;     // a member's heads
    AttnRows rows;    // the head-sharded tensors over the group's N·L tokens
    AttnLayout lay;   // pure Ulysses: the document ids in position order (backend only); the hybrid: the layout as given
} Call;

static Call open_call(AttnUlysses *u, const AttnShape *s, const AttnRows *t, const AttnLayout *lay) {
    ulysses_check_shape(s, u->N);
    Call c = {.ms = ulysses_member_shape(s, u->N)};
    ensure_indices(u, s, lay && !u->ring ? lay->pos : NULL, t->L);
    if (lay && u->ring) c.lay = *lay;
    if (lay && lay->docs && !u->ring) c.lay.docs = position_docs(u, lay, u->N * t->L);
    Heads h = c.h = heads_of(u, s, t->L);
    c.rows = (AttnRows){.L = u->N * t->L, .q = h.q, .k = h.k, .v = h.v, .out = h.out, .lse = h.lse, .tmp = h.aux,
                        .dout = h.dout, .dq = h.dq, .dk = h.dk, .dv = h.dv};
    return c;
}

void ulysses_attention_forward(AttnUlysses *u, const AttnShape *s, const AttnRows *t, const AttnLayout *lay) {
    Call c = open_call(u, s, t, lay);
    Heads h = c.h;
    size_t eb = act_elem_bytes(s->qkv);
    to_heads(u, split_q(s, u->N, eb), t->q, h.q, h.land, "Ulysses all-to-all q");
    to_heads(u, split_kv(s, u->N, eb), t->k, h.k, h.land, "Ulysses all-to-all k");
    to_heads(u, split_kv(s, u->N, eb), t->v, h.v, h.land, "Ulysses all-to-all v");
    double t0 = now_seconds();
    if (u->ring) ring_attention_forward(u->ring, u->be, &c.ms, &c.rows, &c.lay);
    else attention_causal_forward(u->be, &c.ms, &c.rows, &c.lay);
    u->stats.compute_s += now_seconds() - t0;
    // dout's slot is free in the forward: the scratch of the way back
    to_rows(u, split_q(s, u->N, sizeof(real)), h.out, t->out, h.land, h.dout, "Ulysses all-to-all out");
    to_rows(u, split_lse(s, u->N), h.lse, t->lse, h.land, h.dout, "Ulysses all-to-all lse");
}

void ulysses_attention_backward(AttnUlysses *u, const AttnShape *s, const AttnRows *t, const AttnLayout *lay) {
    Call c = open_call(u, s, t, lay);
    Heads h = c.h;
    size_t eb = act_elem_bytes(s->qkv), rs = sizeof(real);
    to_heads(u, split_q(s, u->N, eb), t->q, h.q, h.land, "Ulysses all-to-all q");
    to_heads(u, split_kv(s, u->N, eb), t->k, h.k, h.land, "Ulysses all-to-all k");
    to_heads(u, split_kv(s, u->N, eb), t->v, h.v, h.land, "Ulysses all-to-all v");
    to_heads(u, split_q(s, u->N, rs), t->out, h.out, h.land, "Ulysses all-to-all out");
    to_heads(u, split_q(s, u->N, rs), t->dout, h.dout, h.land, "Ulysses all-to-all dout");
    to_heads(u, split_lse(s, u->N), t->lse, h.lse, h.land, "Ulysses all-to-all lse");
    double t0 = now_seconds();
    if (u->ring) ring_attention_backward(u->ring, u->be, &c.ms, &c.rows, &c.lay);
    else attention_causal_backward(u->be, &c.ms, &c.rows, &c.lay);
    u->stats.compute_s += now_seconds() - t0;
    // out's slot is dead now: the scratch of the way back
    to_rows(u, split_q(s, u->N, rs), h.dq, t->dq, h.land, h.out, "Ulysses all-to-all dq");
    to_rows(u, split_kv(s, u->N, rs), h.dk, t->dk, h.land, h.out, "Ulysses all-to-all dk");
    to_rows(u, split_kv(s, u->N, rs), h.dv, t->dv, h.land, h.out, "Ulysses all-to-all dv");
}

// ---- the cost ----

static int cmp_int32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

// Visible (query, key) pairs of the whole sequence: n(n+1)/2 per document of n tokens (ids in any order: sorted, a
// document is a run).
static double visible_pairs(const int32_t *docs, int T) {
    int32_t *d = docs ? xmalloc((size_t)T * sizeof(int32_t), "document ids") : NULL;
    if (d) {
        memcpy(d, docs, (size_t)T * sizeof(int32_t));
        qsort(d, T, sizeof(int32_t), cmp_int32);
    }
    double pairs = 0;
    for (int a = 0, b = 1; b <= T; b++)
        if (b == T || (d && d[b] != d[a])) {
            pairs += (double)(b - a) * (b - a + 1) / 2;
            a = b;
        }
    free(d);
    return pairs;
}

UlyssesCost ulysses_cost(const AttnShape *s, int degree, int L, const int32_t *docs_host, bool backward) {
    int N = degree;
    size_t eb = act_elem_bytes(s->qkv), rs = sizeof(real);
    Split q = split_q(s, N, eb), kv = split_kv(s, N, eb), o = split_q(s, N, rs), l = split_lse(s, N), kr = split_kv(s, N, rs);
    double row = (double)(q.w * q.eb + 2 * kv.w * kv.eb);   // q, k, v: a row's bytes to one member
    int exchanges = 5;                                       // q, k, v there; out, lse back
    row += backward ? (double)(2 * o.w * o.eb + l.w * l.eb + o.w * rs + 2 * kr.w * rs) : (double)(o.w * o.eb + l.w * l.eb);
    if (backward) exchanges = 9;   // q, k, v, out, dout, lse there; dq, dk, dv back
    double pairs = visible_pairs(docs_host, N * L);
    double flops = pairs * (s->n_head / N) * s->head_dim * (backward ? 10.0 : 4.0);
    return (UlyssesCost){.link_bytes = row * L, .flops = flops, .exchanges = exchanges};
}

RingTiming ulysses_model(const AttnShape *s, int degree, int L, const int32_t *docs_host, const RingCosts *c, bool backward) {
    UlyssesCost k = ulysses_cost(s, degree, L, docs_host, backward);
    double sent = k.link_bytes * (degree - 1), h = c->host_bytes_per_s;
    // A rank's messages to its degree − 1 peers leave through its one link, at the host's rate where that is less.
    double rate = h > 0 && h < c->link_bytes_per_s ? h : c->link_bytes_per_s;
    double wire = degree > 1 ? k.exchanges * c->latency_s + sent / rate : 0;
    double compute = k.flops / c->attn_flops;
    return (RingTiming){.seconds = wire + compute, .compute_s = compute, .wait_s = wire, .bytes = sent};
}
