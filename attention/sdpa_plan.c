// attention/sdpa_plan.c — which ring block calls cuDNN's fused attention runs, the (b, h, s, d) views of their tensors, and the graph cache.
#include "attention/sdpa_plan.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const char *sdpa_unsupported(const AttnShape *s, int nq, int nk, AttnMask mask, bool docs) {
    if (docs) return "document ids (--doc-mask) are not one of cuDNN's masks";
    if (s->head_dim != 64 && s->head_dim != 128) return "cuDNN runs head dims 64 and 128 here";
    if (s->n_kv_head <= 0 || s->n_head % s->n_kv_head != 0) return "n_head is not a multiple of n_kv_head";
    if (nq <= 0 || nk <= 0) return "an empty block";
    if (mask == ATTN_CAUSAL && nq != nk) return "a causal block has as many query rows as keys";
    return NULL;
}

// A token-major tensor of `rows` rows of `heads` heads of hd as (b = 1, h, s, d).
static SdpaTensor bshd(int rows, int heads, int hd) {
    return (SdpaTensor){.dim = {1, heads, rows, hd}, .stride = {(int64_t)rows * heads * hd, hd, (int64_t)heads * hd, 1}};
}

SdpaPlan sdpa_plan(const AttnShape *s, int nq, int nk, AttnMask mask, SdpaDir dir) {
    SdpaPlan p = {.dir = dir};
    p.H = s->n_head, p.Hkv = s->n_kv_head, p.hd = s->head_dim, p.nq = nq, p.nk = nk;
    p.causal = mask == ATTN_CAUSAL;
    p.scale = (float)(1.0 / sqrt((double)s->head_dim));
    p.q = bshd(nq, s->n_head, s->head_dim);
    p.kv = bshd(nk, s->n_kv_head, s->head_dim);
    p.stats = (SdpaTensor){.dim = {1, s->n_head, nq, 1}, .stride = {(int64_t)s->n_head * nq, nq, 1, 1}};
    return p;
}

static double bwd_workspace_bytes(const AttnShape *s, int nq, int nk) {
    return (double)nq * s->n_head * s->head_dim * 4.0 * ceil(nk / 128.0);
}

int sdpa_backward_tile(const AttnShape *s, int nq, int nk, int forced) {
    int whole = nq > nk ? nq : nk;
    if (forced > 0) return forced < whole ? forced : whole;
    double budget = SDPA_BWD_WORKSPACE_MIB * 1048576.0;
    if (bwd_workspace_bytes(s, nq, nk) <= budget) return whole;
    int tile = 256;
    while (tile * 2 < whole && bwd_workspace_bytes(s, tile * 2, tile * 2) <= budget) tile *= 2;
    return tile;
}

static bool tensor_equal(const SdpaTensor *a, const SdpaTensor *b) {
    return !memcmp(a->dim, b->dim, sizeof a->dim) && !memcmp(a->stride, b->stride, sizeof a->stride);
}

// Field by field (a struct's padding is not part of its value).
bool sdpa_plan_equal(const SdpaPlan *a, const SdpaPlan *b) {
    return a->dir == b->dir && a->H == b->H && a->Hkv == b->Hkv && a->hd == b->hd && a->nq == b->nq && a->nk == b->nk &&
           a->causal == b->causal && a->scale == b->scale && tensor_equal(&a->q, &b->q) && tensor_equal(&a->kv, &b->kv) &&
           tensor_equal(&a->stats, &b->stats);
}

void sdpa_plan_describe(const SdpaPlan *p, char *buf, size_t n) {
    snprintf(buf, n, "%s %d×%d %s, H %d/%d, hd %d", p->dir == SDPA_FORWARD ? "forward" : "backward", p->nq, p->nk,
             p->causal ? "causal" : "full", p->H, p->Hkv, p->hd);
}

SdpaCacheEntry *sdpa_cache_find(SdpaCache *c, const SdpaPlan *p) {
    for (int i = 0; i < c->n; i++)
        if (sdpa_plan_equal(&c->e[i].plan, p)) {
            c->e[i].used = ++c->clock;
            c->stats.hits++;
            return &c->e[i];
        }
    return NULL;
}

SdpaCacheEntry *sdpa_cache_add(SdpaCache *c, const SdpaPlan *p, void *graph, void **evicted) {
    SdpaCacheEntry *slot = &c->e[c->n < SDPA_CACHE_CAP ? c->n : 0];
    *evicted = NULL;
    if (c->n < SDPA_CACHE_CAP) c->n++;
    else {   // full: the least recently used makes room
        for (int i = 1; i < c->n; i++)
            if (c->e[i].used < slot->used) slot = &c->e[i];
        *evicted = slot->graph;
        c->stats.evicted++;
    }
    slot->plan = *p;
    slot->graph = graph;
    slot->used = ++c->clock;
    if (graph) c->stats.built++;
    else c->stats.rejected++;
    return slot;
}
