// attention/ring_exchange.c — the pairwise exchange's plan (which rows of whom each rank reads) and its schedule.
#include "attention/ring_exchange.h"

#include <stdlib.h>

#include "core/common.h"

// The plan's arrays, grown to W ranks of L rows: at most L rows and L runs or tasks per step.
static void plan_reserve(ExPlan *p, int W, int L) {
    if (W <= p->cap_W && L <= p->cap_L) return;
    p->cap_W = W > p->cap_W ? W : p->cap_W;
    p->cap_L = L > p->cap_L ? L : p->cap_L;
    size_t per = (size_t)p->cap_W * p->cap_L;
    p->steps = xrealloc(p->steps, (size_t)p->cap_W * sizeof(ExStep), "ring exchange plan");
    p->runs = xrealloc(p->runs, per * sizeof(ExRows), "ring exchange plan");
    p->tasks = xrealloc(p->tasks, per * sizeof(ExTask), "ring exchange plan");
    p->rows = xrealloc(p->rows, (size_t)p->cap_L * sizeof(int), "ring exchange plan");
    p->seen = xrealloc(p->seen, per * sizeof(int32_t), "ring exchange plan");
}

void ex_plan_free(ExPlan *p) {
    free(p->steps), free(p->runs), free(p->tasks), free(p->rows), free(p->seen);
    *p = (ExPlan){0};
}

// The contract the read lists rely on: every position once, ascending per rank, document ids never falling with position.
static void check_layout(ExPlan *p, const int32_t *pos, const int32_t *docs, int W, int L) {
    int T = W * L;
    for (int x = 0; x < T; x++) p->seen[x] = -1;
    for (int j = 0; j < W; j++)
        for (int i = 0; i < L; i++) {
            int32_t x = pos[(size_t)j * L + i];
            if (x < 0 || x >= T || p->seen[x] >= 0 || (i > 0 && x <= pos[(size_t)j * L + i - 1]))
                fail("ring attention: rank %d's row %d holds position %d; a layout holds each of 0..%d once, ascending "
                     "per rank",
                     j, i, (int)x, T - 1);
            p->seen[x] = j;
        }
    for (int j = 0; j < W && docs; j++)
        for (int i = 0; i < L; i++) p->seen[pos[(size_t)j * L + i]] = docs[(size_t)j * L + i];
    for (int x = 1; x < T && docs; x++)
        if (p->seen[x] < p->seen[x - 1])
            fail("ring attention: document id %d at position %d follows %d; ids must not fall with position (ids of "
                 "document starts)",
                 (int)p->seen[x], x, (int)p->seen[x - 1]);
}

// The rows of rank j that rank q reads, into p->rows (ascending); returns their count. Both lists ascend in position
// and so in document: t walks q's rows to its last one of the key's document, the latest position q holds in it.
static int read_rows(ExPlan *p, const int32_t *pos, const int32_t *docs, int j, int q) {
    int L = p->L, n = 0, t = 0;
    const int32_t *pj = pos + (size_t)j * L, *pq = pos + (size_t)q * L;
    for (int i = 0; i < L; i++) {
        if (!docs) {   // one document: every key before q's last row
            if (pj[i] < pq[L - 1]) p->rows[n++] = i;
            continue;
        }
        const int32_t *dj = docs + (size_t)j * L, *dq = docs + (size_t)q * L;
        while (t + 1 < L && dq[t + 1] <= dj[i]) t++;
        if (dq[t] == dj[i] && pq[t] > pj[i]) p->rows[n++] = i;
    }
    return n;
}

// The received rows (p->rows) as block calls: a task grows while its keys are consecutive rows of the sender and no row
// of ours lies between them; its queries are our rows after it up to our last of its last key's document.
static void plan_tasks(ExPlan *p, const int32_t *pos, const int32_t *docs, const ExStep *st) {
    int L = p->L, before = 0, upto = 0;   // our rows before the current key; ours of documents up to the task's last
    const int32_t *pf = pos + (size_t)st->from * L, *pr = pos + (size_t)p->r * L;
    ExTask *t = NULL;
    for (int i = 0; i <= st->n_recv; i++) {
        int ks = i < st->n_recv ? p->rows[i] : -1;
        if (ks >= 0)
            while (before < L && pr[before] < pf[ks]) before++;
        if (t && ks == t->ks + t->nk && before == t->q0) {
            t->nk++;
            continue;
        }
        if (t) {   // close the task before this key
            int32_t d = docs ? docs[(size_t)st->from * L + t->ks + t->nk - 1] : 0;
            while (upto < L && (!docs || docs[(size_t)p->r * L + upto] <= d)) upto++;
            t->nq = upto - t->q0;
            if (t->nq <= 0) fail("internal: ring exchange task of rank %d's rows %d.. reads no row", st->from, t->ks);
        }
        if (ks >= 0) t = &p->tasks[p->n_tasks++], *t = (ExTask){.k0 = i, .ks = ks, .nk = 1, .q0 = before};
    }
}

static void plan_step(ExPlan *p, const int32_t *pos, const int32_t *docs, int s) {
    int W = p->W, r = p->r;
    ExStep *st = &p->steps[s];
    *st = (ExStep){.to = (r + s) % W, .from = (r - s + W) % W, .run0 = p->n_runs, .task0 = p->n_tasks};
    st->n_send = read_rows(p, pos, docs, r, st->to);
    for (int i = 0; i < st->n_send; i++) {
        int a = p->rows[i];
        if (i > 0 && a == p->rows[i - 1] + 1) p->runs[p->n_runs - 1].n++;
        else p->runs[p->n_runs++] = (ExRows){a, 1};
    }
    st->n_runs = p->n_runs - st->run0;
    st->n_recv = read_rows(p, pos, docs, st->from, r);
    plan_tasks(p, pos, docs, st);
    st->n_tasks = p->n_tasks - st->task0;
}

bool ex_is_zigzag(const int32_t *pos, int W, int L) {
    if (!pos) return true;
    if (W > 1 && L % 2) return false;
    int c = L / 2;
    for (int j = 0; j < W; j++)
        for (int i = 0; i < L; i++)
            if (pos[(size_t)j * L + i] != (i < c ? j * c + i : (2 * W - 1 - j) * c + i - c)) return false;
    return true;
}

void ex_plan(ExPlan *p, const int32_t *pos, const int32_t *docs, int W, int r, int L) {
    plan_reserve(p, W, L);
    p->W = W, p->r = r, p->L = L, p->n_runs = p->n_tasks = 0;
    check_layout(p, pos, docs, W, L);
    for (int s = 1; s < W; s++) plan_step(p, pos, docs, s);
}

// ---- the schedule ----

static void exchange(ExSched *x, PieceKind kind, int s) {
    x->start(x, kind, s);
    if (!x->overlap) x->wait(x, kind, s);
}

static void own_block(ExSched *x, bool backward) {
    int L = x->plan->L;
    x->task(x, 0, &(ExTask){.nk = L, .nq = L}, backward);
}

static void step_tasks(ExSched *x, int s, bool backward) {
    const ExStep *st = &x->plan->steps[s];
    for (int i = 0; i < st->n_tasks; i++) x->task(x, s, &x->plan->tasks[st->task0 + i], backward);
}

void ex_schedule(ExSched *x, bool backward) {
    int W = x->plan->W;
    if (W > 1) exchange(x, PIECE_KV, 1);
    own_block(x, backward);
    for (int s = 1; s < W; s++) {
        if (x->overlap) x->wait(x, PIECE_KV, s);
        if (s + 1 < W) exchange(x, PIECE_KV, s + 1);
        step_tasks(x, s, backward);
        if (backward && s > 1 && x->overlap) x->wait(x, PIECE_ACC, s - 1);
        if (backward) exchange(x, PIECE_ACC, s);
    }
    if (backward && W > 1 && x->overlap) x->wait(x, PIECE_ACC, W - 1);
}
