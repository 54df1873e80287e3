// data/placement.c — where each token of a packed window goes among the sp ranks: the zigzag, or documents placed by their attention cost.
//
// Cost. Under document masks the query at position t of a document starting at s reads t − s + 1 keys, so a
// rank's attention work is the sum of that over its positions, and a document of n tokens costs n(n+1)/2.
// PLACE_COST: a document longer than a rank's share L, or dearer than a limit, is split zigzag into pairs of
// pieces (pair i = pieces i and 2k−1−i: every pair costs the same); the others stay whole (their keys never
// travel). The pairs go dearest first to the rank whose projected final cost (its cost + its room × the cost
// per token still to place) is lowest among those with room for them. Then the whole documents fill the rooms
// rank by rank, longest or shortest first so that each rank ends near its share; only the document at a
// rank's edge is cut. The limit is tried from coarse to fine and the first placement within 1/32 of the fair
// share is kept (else the best). Then a short document cut at a rank's edge is made whole on one of its two
// ranks where that rank can give the other as many positions of a document split anyway, chosen so that the
// pairs match (mend_cuts). Integer arithmetic only, so every rank computes the same layout.
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "core/common.h"
#include "data/placement.h"

// The split thresholds tried, coarsest first: {long documents, short ones} as fair >> x (−1: never).
static const int TRIALS[][2] = {{-1, -1}, {0, 0}, {1, 0}, {2, 0}, {3, 0}, {4, 0}, {1, 1}, {2, 2}, {3, 3}, {4, 4}};
// A trial whose largest rank is within 1/GOOD_ENOUGH of the fair share ends the search (fewer documents travel).
enum { SPLIT_TRIALS = sizeof TRIALS / sizeof TRIALS[0], GOOD_ENOUGH = 32 };

static void zigzag(int T, int sp, int32_t *layout) {
    int L = T / sp, c = L / 2;
    for (int j = 0; j < sp; j++)
        for (int i = 0; i < L; i++)
            layout[(size_t)j * L + i] = sp == 1 ? i : i < c ? j * c + i : (2 * sp - 1 - j) * c + i - c;
}

// Attention pairs of positions [a, b) of a document that starts at s.
static int64_t run_cost(int64_t s, int64_t a, int64_t b) {
    a -= s, b -= s;
    return (b * (b + 1) - a * (a + 1)) / 2;
}

typedef struct {
    int32_t a[2], b[2];   // positions [a, b) of one document: the whole document (piece 1 empty) or zigzag pieces
    int32_t start;        // the document's first position
    int32_t tokens;
    int64_t cost;         // attention pairs of those positions
} Item;

typedef struct {
    int32_t rank, a, b;   // positions [a, b) go to rank
} Run;

typedef struct {
    int sp;
    int64_t *cost;        // (sp) pairs placed on each rank
    int32_t *room;        // (sp) positions each rank still takes
    int64_t left_cost, left_tokens;   // not placed yet
    Run *runs;            // where the positions went; NULL while a trial only measures
    int n_runs;
} Fill;

// The rank with room for `need` positions whose projected final cost is lowest (the lower rank on a tie); -1: none.
static int best_rank(const Fill *f, int32_t need) {
    int64_t per_token = f->left_cost / f->left_tokens, best_p = 0;
    int best = -1;
    for (int r = 0; r < f->sp; r++) {
        int64_t p = f->cost[r] + f->room[r] * per_token;
        if (f->room[r] >= need && (best < 0 || p < best_p)) best = r, best_p = p;
    }
    return best;
}

// Places the first n positions of item it on rank r (n = it->tokens: all of it) and leaves the rest in it.
static void give(Fill *f, int r, Item *it, int32_t n) {
    f->room[r] -= n, f->left_tokens -= n, it->tokens -= n;
    for (int k = 0; k < 2 && n > 0; k++) {
        int32_t take = it->b[k] - it->a[k] < n ? it->b[k] - it->a[k] : n;
        int64_t c = run_cost(it->start, it->a[k], it->a[k] + take);
        f->cost[r] += c, f->left_cost -= c, it->cost -= c;
        if (f->runs && take > 0) f->runs[f->n_runs++] = (Run){r, it->a[k], it->a[k] + take};
        it->a[k] += take, n -= take;
    }
}

static int by_place(const void *x, const void *y) {
    const Run *a = x, *b = y;
    if (a->rank != b->rank) return a->rank - b->rank;
    return (a->a > b->a) - (a->a < b->a);
}

static int by_cost(const void *x, const void *y) {
    const Item *a = x, *b = y;
    if (a->cost != b->cost) return a->cost > b->cost ? -1 : 1;
    return (a->a[0] > b->a[0]) - (a->a[0] < b->a[0]);
}

// Document [s, e) split zigzag into k items (k = 1: the whole document). `full`: pieces of L/2 from both ends
// make pairs of exactly L positions and the middle rest one more item, so that ranks fill up whole (a
// one-document sample is the zigzag); else 2k equal pieces.
static int split_doc(int32_t s, int32_t e, int k, bool full, int L, Item *out) {
    int64_t n = e - s, c = L / 2;
    int made = 0, pairs = full ? (int)(n / L) : k;
    for (int i = 0; i < k; i++) {
        int j = 2 * k - 1 - i;
        Item *it = out + made;
        *it = (Item){.start = s};
        if (full && i < pairs)
            it->a[0] = s + (int32_t)(i * c), it->b[0] = s + (int32_t)((i + 1) * c),
            it->a[1] = e - (int32_t)((i + 1) * c), it->b[1] = e - (int32_t)(i * c);
        else if (full)   // the middle rest
            it->a[0] = s + (int32_t)(pairs * c), it->b[0] = e - (int32_t)(pairs * c), it->a[1] = it->b[1] = it->b[0];
        else
            it->a[0] = s + (int32_t)(n * i / (2 * k)), it->b[0] = s + (int32_t)(n * (i + 1) / (2 * k)),
            it->a[1] = s + (int32_t)(n * j / (2 * k)), it->b[1] = s + (int32_t)(n * (j + 1) / (2 * k));
        it->tokens = it->b[0] - it->a[0] + it->b[1] - it->a[1];
        it->cost = run_cost(s, it->a[0], it->b[0]) + run_cost(s, it->a[1], it->b[1]);
        made += it->tokens > 0;
    }
    return made;
}

// How many ranks document [s, e) is split over when no item may cost more than `limit` pairs, and whether
// in pairs of L positions (when such a pair is within the limit) or in 2k equal pieces.
static int split_ranks(int32_t s, int32_t e, int L, int sp, int64_t limit, bool *full) {
    int64_t n = e - s, cost = run_cost(s, s, e), k = (n + L - 1) / L;
    *full = n > L && (int64_t)L * (n + 1) / 2 <= limit;
    if (*full) return (int)k;   // ⌊n/L⌋ pairs and the middle rest
    if (cost > limit && (cost + limit - 1) / limit > k) k = (cost + limit - 1) / limit;
    if (k > sp) k = sp;
    if (k > n / 2) k = n / 2 > 0 ? n / 2 : 1;   // every piece at least one position
    return (int)k;
}

typedef struct {
    const int32_t *ds;
    int nd, T, sp;
    int64_t total;        // attention pairs of the whole sample
    Item *items;          // (as many as the finest split makes)
    int64_t *cost;        // (sp)
    int32_t *room;        // (sp)
} Work;

// The rank with room left that needs the densest filling to reach `target` pairs (the lower rank on a tie); -1: none.
static int neediest(const Fill *f, int64_t target) {
    int best = -1;
    int64_t best_need = 0;
    for (int r = 0; r < f->sp; r++) {
        int64_t need = f->room[r] > 0 ? (target - f->cost[r]) / f->room[r] : 0;
        if (f->room[r] > 0 && (best < 0 || need > best_need)) best = r, best_need = need;
    }
    return best;
}

// Whole documents it[0..n), densest (longest) first, fill the ranks' rooms one rank at a time (the one that
// needs the densest filling first): the densest left while the rank can still end at its share with the
// sparsest after it, else the sparsest. Only the document at a rank's edge is cut.
static void fill(Fill *f, Item *it, int n) {
    int lo = 0, hi = n - 1;
    for (;;) {
        int64_t placed = 0;
        int open = 0;
        for (int r = 0; r < f->sp; r++)
            if (f->room[r] > 0) open++, placed += f->cost[r];
        if (!open) return;
        int64_t target = (placed + f->left_cost) / open;
        int r = neediest(f, target);
        while (f->room[r] > 0) {
            while (it[lo].tokens == 0) lo++;
            while (it[hi].tokens == 0) hi--;
            Item *d = it + lo, *s = it + hi;
            int32_t take = d->tokens < f->room[r] ? d->tokens : f->room[r];
            int64_t after = f->cost[r] + run_cost(d->start, d->a[0], d->a[0] + take) + (f->room[r] - take) * (s->cost / s->tokens);
            if (after <= target) give(f, r, d, take);
            else give(f, r, s, s->tokens < f->room[r] ? s->tokens : f->room[r]);
        }
    }
}

// One placement with the documents dearer than `limit` pairs split; returns the largest rank's pairs.
// runs: where the positions went (NULL: only measure), *n_runs of them.
static int64_t trial(Work *w, const int64_t limit[2], Run *runs, int *n_runs) {
    int L = w->T / w->sp, n = 0, whole;
    for (int d = 0; d < w->nd; d++) {   // the split documents' pairs, then the whole documents
        int32_t s = w->ds[d], e = d + 1 < w->nd ? w->ds[d + 1] : w->T;
        bool full;
        int k = split_ranks(s, e, L, w->sp, e - s > L ? limit[0] : limit[1], &full);
        if (k > 1) n += split_doc(s, e, k, full, L, w->items + n);
    }
    whole = n;
    for (int d = 0; d < w->nd; d++) {
        int32_t s = w->ds[d], e = d + 1 < w->nd ? w->ds[d + 1] : w->T;
        bool full;
        if (split_ranks(s, e, L, w->sp, e - s > L ? limit[0] : limit[1], &full) == 1) n += split_doc(s, e, 1, false, L, w->items + n);
    }
    qsort(w->items, (size_t)whole, sizeof(Item), by_cost);
    qsort(w->items + whole, (size_t)(n - whole), sizeof(Item), by_cost);
    Fill f = {.sp = w->sp, .cost = w->cost, .room = w->room, .left_cost = w->total, .left_tokens = w->T, .runs = runs};
    for (int r = 0; r < w->sp; r++) f.cost[r] = 0, f.room[r] = L;
    for (Item *it = w->items; it < w->items + whole; it++)
        while (it->tokens > 0) {
            int r = best_rank(&f, it->tokens);
            if (r >= 0) give(&f, r, it, it->tokens);
            else r = best_rank(&f, 1), give(&f, r, it, f.room[r]);   // no room for all of it: cut
        }
    fill(&f, w->items + whole, n - whole);
    if (n_runs) *n_runs = f.n_runs;
    int64_t max = 0;
    for (int r = 0; r < w->sp; r++) max = f.cost[r] > max ? f.cost[r] : max;
    return max;
}

// ---- short documents made whole again ----

// The document holding position t.
static int doc_at(const int32_t *ds, int nd, int32_t t) {
    int lo = 0, hi = nd - 1;
    while (lo < hi) {
        int mid = (lo + hi + 1) / 2;
        if (ds[mid] <= t) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

// The runs of one placement with their documents and the ranks' pairs.
typedef struct {
    const Work *w;
    Run *runs;
    int n_runs;
    int *doc;          // (runs) each run's document
    bool *split;       // (nd) split over ranks by design: longer than L, or dearer than the limit
    int64_t *cost;     // (sp)
} Mend;

// The m positions of run g (a document split by design) whose pairs come nearest `want`: [*p, *p + m); returns their pairs.
static int64_t matching_part(const Mend *x, const Run *g, int32_t m, int64_t want, int32_t *p) {
    int32_t s = x->w->ds[x->doc[g - x->runs]];
    int64_t at = s + (want - (int64_t)m * (m + 1) / 2) / m;   // run_cost(s, at, at + m) = m·(at − s) + m(m+1)/2
    *p = (int32_t)(at < g->a ? g->a : at > g->b - m ? g->b - m : at);
    return run_cost(s, *p, *p + m);
}

// Moves run `move` (part of a cut short document) onto rank x, whose run g gives as many positions back to move's
// rank, those whose pairs match: kept when neither rank then passes `cap` pairs.
static bool swap_parts(Mend *x, int move, int g, int64_t cap) {
    Run *mv = &x->runs[move], *gv = &x->runs[g];
    int32_t m = mv->b - mv->a, p;
    int from = mv->rank, to = gv->rank;
    int64_t moved = run_cost(x->w->ds[x->doc[move]], mv->a, mv->b), back = matching_part(x, gv, m, moved, &p);
    if (x->cost[to] + moved - back > cap || x->cost[from] - moved + back > cap) return false;
    x->cost[to] += moved - back, x->cost[from] += back - moved;
    mv->rank = to;
    x->doc[x->n_runs] = x->doc[g], x->runs[x->n_runs++] = (Run){from, p, p + m};
    x->doc[x->n_runs] = x->doc[g], x->runs[x->n_runs++] = (Run){to, p + m, gv->b};
    gv->b = p;
    return true;
}

// A short document cut at a rank's edge (two runs, two ranks) is made whole where a rank holds a long enough run of a
// document split by design to trade for the smaller part (costs kept within the largest rank's): fewer documents
// travel, and the split ones only a little more.
static void mend_cuts(Mend *x) {
    int64_t cap = 0;
    for (int r = 0; r < x->w->sp; r++) cap = x->cost[r] > cap ? x->cost[r] : cap;
    int n = x->n_runs;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n && !x->split[x->doc[i]]; j++) {
            if (x->doc[j] != x->doc[i] || x->runs[j].rank == x->runs[i].rank) continue;
            bool i_small = x->runs[i].b - x->runs[i].a <= x->runs[j].b - x->runs[j].a, done = false;
            for (int t = 0; t < 2 && !done; t++) {   // the smaller part moves, else the larger
                int move = i_small == (t == 0) ? i : j, stay = move == i ? j : i, m = x->runs[move].b - x->runs[move].a;
                for (int g = 0; g < x->n_runs && !done; g++)
                    done = x->split[x->doc[g]] && x->runs[g].rank == x->runs[stay].rank && x->runs[g].b - x->runs[g].a >= m &&
                           swap_parts(x, move, g, cap);
            }
        }
}

static void place_cost(const int32_t *ds, int nd, int T, int sp, int32_t *layout) {
    Work w = {.ds = ds, .nd = nd, .T = T, .sp = sp};
    for (int d = 0; d < nd; d++) w.total += run_cost(ds[d], ds[d], d + 1 < nd ? ds[d + 1] : T);
    int64_t fair = w.total / sp, limit[SPLIT_TRIALS][2];
    for (int s = 0; s < SPLIT_TRIALS; s++)
        for (int i = 0; i < 2; i++) limit[s][i] = TRIALS[s][i] < 0 ? INT64_MAX : fair >> TRIALS[s][i] > 0 ? fair >> TRIALS[s][i] : 1;
    size_t n_items = 0;
    for (int d = 0; d < nd; d++) {   // a document makes at most sp items, none empty
        int n = (d + 1 < nd ? ds[d + 1] : T) - ds[d];
        n_items += (size_t)(n < sp ? n : sp);
    }
    w.items = xmalloc(n_items * sizeof(Item), "placement items");
    w.cost = xmalloc((size_t)sp * sizeof(int64_t), "placement costs");
    w.room = xmalloc((size_t)sp * sizeof(int32_t), "placement rooms");
    int best = 0, n_runs = 0;
    int64_t best_max = 0, good = fair + fair / GOOD_ENOUGH;
    for (int s = 0; s < SPLIT_TRIALS; s++) {
        int64_t m = trial(&w, limit[s], NULL, NULL);
        if (s == 0 || m < best_max) best = s, best_max = m;
        if (m <= good) break;
    }
    // Each give places at most two runs; it either uses up an item or fills a rank (at most sp per phase). Mending a
    // cut adds two.
    size_t cap = 2 * n_items + 4 * (size_t)sp;
    Run *runs = xmalloc(3 * cap * sizeof(Run), "placement runs");
    trial(&w, limit[best], runs, &n_runs);
    Mend x = {.w = &w, .runs = runs, .n_runs = n_runs, .doc = xmalloc(3 * cap * sizeof(int), "placement runs"),
              .split = xcalloc((size_t)nd, sizeof(bool), "placement documents"), .cost = w.cost};
    for (int d = 0; d < nd; d++) {
        bool full;
        int32_t s = ds[d], e = d + 1 < nd ? ds[d + 1] : T;
        x.split[d] = split_ranks(s, e, T / sp, sp, e - s > T / sp ? limit[best][0] : limit[best][1], &full) > 1;
    }
    for (int i = 0; i < n_runs; i++) x.doc[i] = doc_at(ds, nd, runs[i].a);
    mend_cuts(&x);
    n_runs = x.n_runs;
    free(x.doc), free(x.split);
    qsort(runs, (size_t)n_runs, sizeof(Run), by_place);
    for (Run *r = runs; r < runs + n_runs; r++)
        for (int32_t t = r->a; t < r->b; t++) *layout++ = t;
    free(runs);
    free(w.room);
    free(w.cost);
    free(w.items);
}

void place_sample(Placement p, const int32_t *ds, int nd, int T, int sp, int32_t *layout) {
    if (p == PLACE_COST && sp > 1) place_cost(ds, nd, T, sp, layout);
    else zigzag(T, sp, layout);
}

void place_pairs(const int32_t *layout, const int32_t *ds, int nd, int T, int sp, int64_t *pairs) {
    int L = T / sp;
    for (int j = 0; j < sp; j++) {
        const int32_t *pos = layout + (size_t)j * L;
        int64_t sum = 0;
        for (int i = 0, d = 0; i < L; i++) {   // positions ascend, so the document only moves forward
            while (d + 1 < nd && ds[d + 1] <= pos[i]) d++;
            sum += pos[i] - ds[d] + 1;
        }
        pairs[j] = sum;
    }
}
