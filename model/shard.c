// model/shard.c — the shard layout: the model's units (embeddings, each layer, norm + head) and every rank's slice of each.
#include "model/shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

static const char *const level_names[] = {"none", "optim", "grads", "params"};

bool shard_level_parse(const char *name, ShardLevel *level) {
    for (int i = 0; i < 4; i++)
        if (strcmp(name, level_names[i]) == 0) {
            *level = (ShardLevel)i;
            return true;
        }
    return false;
}

const char *shard_level_name(ShardLevel level) { return level >= SHARD_NONE && level <= SHARD_PARAMS ? level_names[level] : "?"; }

// Unit boundaries: the embeddings end where layer 0 starts, each layer where the next starts, the rest is the last unit.
static void unit_bounds(const ParamTable *t, const ModelConfig *c, size_t *off, size_t *len) {
    const ParamSpec *emb = params_find(t, "tok_embeddings");
    if (!emb) fail("internal: the parameter table has no tok_embeddings");
    off[0] = emb->offset;
    for (int l = 0; l <= c->n_layer; l++) {
        char name[64];
        snprintf(name, sizeof name, "layers.%d.attn_norm", l);
        const ParamSpec *p = l < c->n_layer ? params_find(t, name) : params_find(t, "norm");
        if (!p) fail("internal: the parameter table has no %s", l < c->n_layer ? name : "norm");
        off[l + 1] = p->offset;
    }
    for (int u = 0; u <= c->n_layer; u++) len[u] = off[u + 1] - off[u];
    len[c->n_layer + 1] = t->total - off[c->n_layer + 1];
}

ShardLayout shard_layout(const ParamTable *t, const ModelConfig *c, int ranks, int rank) {
    if (ranks < 1 || rank < 0 || rank >= ranks) fail("internal: shard layout of rank %d of %d", rank, ranks);
    ShardLayout s = {.ranks = ranks, .rank = rank, .n_units = c->n_layer + 2};
    size_t n = (size_t)s.n_units;
    s.unit_off = xcalloc(n, sizeof(size_t), "shard layout");
    s.unit_len = xcalloc(n, sizeof(size_t), "shard layout");
    s.per = xcalloc(n, sizeof(size_t), "shard layout");
    s.own = xcalloc(n, sizeof(size_t), "shard layout");
    s.local_off = xcalloc(n, sizeof(size_t), "shard layout");
    unit_bounds(t, c, s.unit_off, s.unit_len);
    for (int u = 0; u < s.n_units; u++) {
        s.per[u] = (s.unit_len[u] + (size_t)ranks - 1) / (size_t)ranks;
        s.local_off[u] = s.local_total;
        shard_slice(&s, u, rank, &s.own[u]);
        s.local_total += s.own[u];
        if (s.unit_len[u] > s.max_unit) s.max_unit = s.unit_len[u];
    }
    return s;
}

ShardSizes shard_sizes(const ModelConfig *c, ShardLevel level, const ShardLayout *s) {
    size_t all = (size_t)config_num_params(c);
    ShardSizes z = {.weights = all, .grads = all, .moment = all, .state = 4 * all, .shadow = all};
    if (level == SHARD_NONE) return z;
    z.pad = (s->max_unit + (size_t)s->ranks - 1) / (size_t)s->ranks;   // the longest unit's per
    size_t span = z.pad * (size_t)s->ranks, local = s->local_total + z.pad;
    size_t own0 = c->tie_embeddings ? s->per[0] * (size_t)s->ranks : 0;   // unit 0's own, held from the head on
    z.slices = z.moment = s->local_total;
    z.unit_weights[0] = z.unit_weights[1] = span;
    if (level >= SHARD_GRADS) z.grads = local, z.unit_grads[0] = z.unit_grads[1] = span, z.unit_grads[2] = own0;
    if (level >= SHARD_PARAMS) z.weights = local, z.unit_weights[2] = own0, z.shadow = 0, z.unit_shadow = 2 * span;
    z.units = 2 * (span + z.pad) + z.unit_weights[2] + z.unit_grads[0] + z.unit_grads[1] + z.unit_grads[2];
    z.state = z.weights + z.grads + 2 * z.moment;
    return z;
}

void shard_layout_free(ShardLayout *s) {
    free(s->unit_off), free(s->unit_len), free(s->per), free(s->own), free(s->local_off);
    *s = (ShardLayout){0};
}

size_t shard_slice(const ShardLayout *s, int u, int r, size_t *len) {
    size_t start = (size_t)r * s->per[u], end = start + s->per[u];
    if (start > s->unit_len[u]) start = s->unit_len[u];
    if (end > s->unit_len[u]) end = s->unit_len[u];
    *len = end - start;
    return s->unit_off[u] + start;
}

int shard_unit_of(const ShardLayout *s, size_t offset) {
    for (int u = 0; u < s->n_units; u++)
        if (offset < s->unit_off[u] + s->unit_len[u]) return u;
    fail("internal: element %zu is past the parameter buffer", offset);
}
