// model/shard_comm.c — the sharded step's collectives: gathers and reduce-scatters around the units (the GPT unit hook) and after the update.
#include "model/shard_comm.h"

#include <string.h>

#include "core/common.h"

// A collective was started in q: the time with any in flight counts from the first.
static void started(ShardComm *sc, const CommRequest *q) {
    if (q->active && sc->in_flight++ == 0) sc->busy_since = now_seconds(), sc->busy_until = sc->busy_since;
}

// Finishes request q if it is done, or, with wait, once it is; counts its time: until the last of the collectives
// in flight together ended (CommRequest.done_at: on MPI when the progress thread or a poke saw it end, which may be
// well before this look).
static bool finish(ShardComm *sc, CommRequest *q, bool wait) {
    if (!q->active) return true;
    if (wait) sc->times.wait_s += comm_wait(q);
    else if (!comm_test(q)) return false;
    if (q->done_at > sc->busy_until) sc->busy_until = q->done_at;
    if (--sc->in_flight == 0) sc->times.comm_s += sc->busy_until - sc->busy_since;
    return true;
}

// A finished reduce-scatter: the rank's slice of unit u's summed gradients added into its gradient shard.
static void grads_done(ShardComm *sc, int k) {
    const ShardLayout *s = sc->s;
    int u = sc->gunit[k];
    if (u >= 0 && s->own[u]) sc->m->be->add_inplace(sc->m->grads + s->local_off[u], sc->slice[k], s->own[u]);
    sc->gunit[k] = -1;
}

static bool tied(const ShardComm *sc) { return sc->m->cfg.tie_embeddings; }

// Notes what finished since the last look (and drives MPI there).
static void poll(ShardComm *sc) {
    for (int k = 0; k < 3; k++) finish(sc, &sc->wreq[k], false);
    for (int k = 0; k < 2; k++)
        if (sc->gunit[k] >= 0 && finish(sc, &sc->greq[k], false)) grads_done(sc, k);
}

static void gather_start(ShardComm *sc, int k, int u) {
    const ShardLayout *s = sc->s;
    sc->wunit[k] = u;
    comm_allgather_start(sc->comm, &sc->wreq[k], sc->m->params + s->local_off[u], sc->wbuf[k], s->per[u], COMM_REAL,
                         "weight all-gather");
    started(sc, &sc->wreq[k]);
}

// The slot unit u's weights belong in: tied, unit 0 has its own; else one of the two not gathering another unit (at
// most one gather, the next unit's, is in flight), never `cur` (the running unit's).
static int slot_for(const ShardComm *sc, int u, int cur) {
    if (tied(sc) && u == 0) return 2;
    if (cur == 0 || cur == 1) return cur ^ 1;
    return sc->wreq[0].active ? 1 : 0;
}

static int slot_holding(const ShardComm *sc, int u) {
    for (int k = 0; k < 3; k++)
        if (sc->wunit[k] == u) return k;
    return -1;
}

// The slot holding unit u's gathered weights, gathered now if no slot holds or is gathering them.
static int weights_of(ShardComm *sc, int u) {
    int k = slot_holding(sc, u);
    if (k < 0) {
        k = slot_for(sc, u, -1);
        finish(sc, &sc->wreq[k], true);
        gather_start(sc, k, u);
    }
    finish(sc, &sc->wreq[k], true);
    return k;
}

// Starts gathering unit `next` into a slot that the running unit (in slot cur) does not use, unless one holds it.
static void prefetch(ShardComm *sc, int next, int cur) {
    if (next < 0 || next >= sc->s->n_units || slot_holding(sc, next) >= 0) return;
    int k = slot_for(sc, next, cur);
    finish(sc, &sc->wreq[k], true);
    gather_start(sc, k, next);
}

// Tied: the head's backward starts unit 0's gradients in their own buffer (the last micro-batch's reduce-scatter of
// it finished first).
static void tied_grads(ShardComm *sc) {
    for (int k = 0; k < 2; k++)
        if (sc->gunit[k] == 0) {
            finish(sc, &sc->greq[k], true);
            grads_done(sc, k);
        }
    sc->m->be->zero(sc->gbuf[2], sc->m->sizes.unit_grads[2] * sizeof(real));
    tensors_bind_unit(&sc->m->g, &sc->m->table, &sc->m->cfg, 0, sc->gbuf[2], sc->s->unit_off[0]);
}

// Unit u's gradients go to a zeroed buffer; the buffer's reduce-scatter of two units ago is finished first.
static void take_grad_buffer(ShardComm *sc, int u) {
    const ShardLayout *s = sc->s;
    int k = sc->gnext;
    if (sc->gunit[k] >= 0) {
        finish(sc, &sc->greq[k], true);
        grads_done(sc, k);
    }
    if (tied(sc) && u == 0) return;   // bound since the head's backward
    sc->m->be->zero(sc->gbuf[k], s->per[u] * (size_t)s->ranks * sizeof(real));
    tensors_bind_unit(&sc->m->g, &sc->m->table, &sc->m->cfg, u, sc->gbuf[k], s->unit_off[u]);
    if (tied(sc) && u == s->n_units - 1) tied_grads(sc);
}

static void unit_enter(GptUnitHook *h, GPT *m, int u, UnitPhase phase) {
    ShardComm *sc = (ShardComm *)h;
    poll(sc);
    if (m->shard_level >= SHARD_PARAMS) {
        int k = weights_of(sc, u);
        tensors_bind_unit(&m->w, &m->table, &m->cfg, u, sc->wbuf[k], sc->s->unit_off[u]);
        if (tied(sc) && u == sc->s->n_units - 1)   // the head is the embeddings (held in slot 2 since unit 0 ran)
            tensors_bind_unit(&m->w, &m->table, &m->cfg, 0, sc->wbuf[weights_of(sc, 0)], sc->s->unit_off[0]);
        prefetch(sc, phase == UNIT_FORWARD ? u + 1 : u - 1, k);
    }
    if (phase == UNIT_BACKWARD) take_grad_buffer(sc, u);
}

// After a unit's backward its gradients are complete: their reduce-scatter runs while the next unit's backward does.
static void unit_leave(GptUnitHook *h, GPT *m, int u, UnitPhase phase) {
    ShardComm *sc = (ShardComm *)h;
    poll(sc);
    if (phase != UNIT_BACKWARD) return;
    int k = sc->gnext;
    sc->gunit[k] = u;
    const real *grads = tied(sc) && u == 0 ? sc->gbuf[2] : sc->gbuf[k];
    comm_reduce_scatter_start(sc->comm, &sc->greq[k], grads, sc->slice[k], sc->s->per[u], COMM_REAL, COMM_SUM,
                              "gradient reduce-scatter");
    started(sc, &sc->greq[k]);
    sc->gnext = k ^ 1;
}

// n elements on the backend, or NULL for none.
static real *buffer(const Backend *be, size_t n, const char *what) { return n ? be->alloc(n * sizeof(real), what) : NULL; }

// The unit buffers m->sizes names: two slots, each with its slice and gradient buffer, then unit 0's own when tied.
static void buffers_init(ShardComm *sc, GPT *m, Comm *world) {
    memset(sc, 0, sizeof *sc);
    if (!m->shard) return;
    sc->m = m, sc->comm = world, sc->s = m->shard;
    const ShardSizes *z = &m->sizes;
    for (int k = 0; k < 3; k++) {
        sc->wbuf[k] = buffer(m->be, z->unit_weights[k], k < 2 ? "gathered unit weights" : "gathered embeddings");
        if (k < 2) sc->slice[k] = buffer(m->be, z->pad, "reduce-scattered slice");
        sc->gbuf[k] = buffer(m->be, z->unit_grads[k], k < 2 ? "unit gradients" : "embedding gradients");
    }
    memset(sc->wunit, -1, sizeof sc->wunit), memset(sc->gunit, -1, sizeof sc->gunit);   // -1: no unit
    sc->hook = (GptUnitHook){unit_enter, unit_leave};
    if (m->shard_level >= SHARD_GRADS) m->unit_hook = &sc->hook;
}

void shard_model(ShardComm *sc, GPT *m, AdamW *opt, AdamWConfig cfg, ShardLevel level, Comm *world) {
    if (level != SHARD_NONE) gpt_shard(m, level, comm_size(world), comm_rank(world));
    adamw_init(opt, m, cfg);
    buffers_init(sc, m, world);
}

void shard_comm_free(ShardComm *sc) {
    if (!sc->m) return;
    for (int k = 0; k < 3; k++) {
        if (sc->wbuf[k]) sc->m->be->release(sc->wbuf[k]);
        if (sc->gbuf[k]) sc->m->be->release(sc->gbuf[k]);
    }
    for (int k = 0; k < 2; k++) sc->m->be->release(sc->slice[k]);
    if (sc->m->unit_hook == &sc->hook) sc->m->unit_hook = NULL;
    memset(sc, 0, sizeof *sc);
}

void shard_comm_finish_grads(ShardComm *sc) {
    for (int i = 0; i < 2; i++) {
        int k = sc->gnext ^ (i == 0);   // the older one first: the same order on every rank and every step
        if (sc->gunit[k] < 0) continue;
        finish(sc, &sc->greq[k], true);
        grads_done(sc, k);
    }
}

// A gathered unit u in slot k copied over the whole model's weights.
static void weights_done(ShardComm *sc, int k) {
    const ShardLayout *s = sc->s;
    int u = sc->wunit[k];
    finish(sc, &sc->wreq[k], true);
    sc->m->be->copy(sc->m->params + s->unit_off[u], sc->wbuf[k], s->unit_len[u] * sizeof(real));
    sc->wunit[k] = -1;
}

// SHARD_OPTIM, SHARD_GRADS: each unit's updated slices, padded, gathered into a slot and copied over the weights; the
// next unit's gather is in flight while the last one is copied.
static void gather_weights(ShardComm *sc) {
    const ShardLayout *s = sc->s;
    const Backend *be = sc->m->be;
    for (int u = 0; u < s->n_units; u++) {
        int k = u & 1;
        if (sc->wunit[k] >= 0) weights_done(sc, k);
        size_t len, start = shard_slice(s, u, s->rank, &len);
        be->zero(sc->slice[k], s->per[u] * sizeof(real));
        if (len) be->copy(sc->slice[k], sc->m->params + start, len * sizeof(real));
        sc->wunit[k] = u;
        comm_allgather_start(sc->comm, &sc->wreq[k], sc->slice[k], sc->wbuf[k], s->per[u], COMM_REAL,
                             "weight all-gather");
        started(sc, &sc->wreq[k]);
    }
    for (int i = 0; i < 2; i++) {
        int k = (s->n_units + i) & 1;   // the older first
        if (sc->wunit[k] >= 0) weights_done(sc, k);
    }
}

void shard_comm_after_update(ShardComm *sc) {
    if (!sc->m) return;
    if (sc->m->shard_level < SHARD_PARAMS) {
        gather_weights(sc);
        return;
    }
    for (int k = 0; k < 3; k++) {   // the updated slices make every gathered copy stale
        finish(sc, &sc->wreq[k], true);
        sc->wunit[k] = -1;
    }
}

ShardTimes shard_comm_take_times(ShardComm *sc) {
    ShardTimes t = sc->times;
    sc->times = (ShardTimes){0};
    return t;
}

double shard_comm_waited(const ShardComm *sc) { return sc->times.wait_s; }
