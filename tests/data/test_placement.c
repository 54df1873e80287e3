// tests/data/test_placement.c — placements of a window: zigzag, cost (the zigzag on one document), exact partitions, brute-force pairs, balance, batch slices.
#include <math.h>

#include "core/rng.h"
#include "data/placement.h"
#include "data/source.h"
#include "testutil.h"

enum { MAX_T = 32768, MAX_DOCS = MAX_T };

static int32_t g_layout[MAX_T], g_again[MAX_T];

// Today's zigzag, written out: rank j holds chunks j and 2·sp−1−j of T/(2·sp) positions.
static int32_t zigzag_pos(int T, int sp, int j, int i) {
    int c = T / (2 * sp);
    return sp == 1 ? i : i < c ? j * c + i : (2 * sp - 1 - j) * c + i - c;
}

static int doc_of(const int32_t *ds, int nd, int p) {
    int d = 0;
    while (d + 1 < nd && ds[d + 1] <= p) d++;
    return d;
}

static void test_zigzag(void) {
    int bad = 0, one_doc = 0;
    int32_t ds[1] = {0};
    for (int sp = 1; sp <= 16; sp *= 2)
        for (int T = 2 * sp; T <= MAX_T; T *= 4) {
            place_sample(PLACE_ZIGZAG, ds, 1, T, sp, g_layout);
            place_sample(PLACE_COST, ds, 1, T, sp, g_again);
            for (int j = 0; j < sp; j++)
                for (int i = 0; i < T / sp; i++) {
                    bad += g_layout[j * (T / sp) + i] != zigzag_pos(T, sp, j, i);
                    one_doc += g_again[j * (T / sp) + i] != zigzag_pos(T, sp, j, i);
                }
        }
    CHECK(bad == 0, "PLACE_ZIGZAG is chunks j and 2sp-1-j (%d positions differ)", bad);
    CHECK(one_doc == 0, "PLACE_COST on a one-document sample is the zigzag exactly (%d positions differ)", one_doc);
}

// Exact partition: every rank T/sp positions, ascending, all of 0..T-1 once; the same layout twice.
static bool partition_ok(const int32_t *layout, int T, int sp) {
    static char seen[MAX_T];
    memset(seen, 0, (size_t)T);
    int L = T / sp;
    for (int j = 0; j < sp; j++)
        for (int i = 0; i < L; i++) {
            int32_t p = layout[j * L + i];
            if (p < 0 || p >= T || seen[p]++ || (i > 0 && p <= layout[j * L + i - 1])) return false;
        }
    return true;
}

// Attention pairs of each rank by brute force: keys at or before the query, in its document.
static void brute_pairs(const int32_t *layout, const int32_t *ds, int nd, int T, int sp, int64_t *pairs) {
    int L = T / sp;
    for (int j = 0; j < sp; j++) {
        pairs[j] = 0;
        for (int i = 0; i < L; i++) {
            int q = layout[j * L + i];
            for (int k = 0; k <= q; k++) pairs[j] += doc_of(ds, nd, k) == doc_of(ds, nd, q);
        }
    }
}

// Random document starts of a window of T: kind 0 any lengths, 1 one-token documents among them, 2 one document
// longer than (sp−1)·L (it crosses every rank) between short ones, 3 all documents shorter than L = T/sp.
static int random_docs(Rng *r, int kind, int T, int sp, int32_t *ds) {
    int L = T / sp, nd = 0;
    uint64_t short_len = L / 4 > 1 ? (uint64_t)L / 4 : 1;
    for (int p = 0; p < T;) {
        ds[nd++] = p;
        int len = 1 + (int)rng_below(r, (uint64_t)T / 2);
        if (kind == 1 && rng_below(r, 2)) len = 1;
        if (kind == 2) len = nd == 1 ? 1 + (int)rng_below(r, short_len) : nd == 2 ? T - p - (int)rng_below(r, (uint64_t)L / 2) : len;
        if (kind == 3) len = 1 + (int)rng_below(r, (uint64_t)L - 1);
        p += len;
    }
    return nd;
}

static void test_properties(void) {
    Rng r;
    rng_seed(&r, 83);
    static int32_t ds[MAX_DOCS];
    int bad_part = 0, bad_pairs = 0, bad_sum = 0, crossing = 0, cases = 0;
    for (int sp = 2; sp <= 16; sp *= 2)
        for (int T = 2 * sp; T <= 1024; T *= 4)
            for (int kind = 0; kind < 4; kind++)
                for (int rep = 0; rep < 6; rep++, cases++) {
                    int nd = random_docs(&r, kind, T, sp, ds), L = T / sp;
                    int64_t pairs[16], want[16], sum = 0, total = 0;
                    place_sample(PLACE_COST, ds, nd, T, sp, g_layout);
                    place_sample(PLACE_COST, ds, nd, T, sp, g_again);
                    bad_part += !partition_ok(g_layout, T, sp) || memcmp(g_layout, g_again, (size_t)T * sizeof(int32_t)) != 0;
                    place_pairs(g_layout, ds, nd, T, sp, pairs);
                    for (int d = 0; d < nd; d++) {
                        int64_t n = (d + 1 < nd ? ds[d + 1] : T) - ds[d];
                        total += n * (n + 1) / 2;
                    }
                    for (int j = 0; j < sp; j++) sum += pairs[j];
                    bad_sum += sum != total;
                    if (T <= 256) {
                        brute_pairs(g_layout, ds, nd, T, sp, want);
                        bad_pairs += memcmp(pairs, want, (size_t)sp * sizeof(int64_t)) != 0;
                    }
                    if (kind == 2 && nd > 2) {   // the long document has positions on every rank
                        int on = 0;
                        for (int j = 0; j < sp; j++) {
                            bool has = false;
                            for (int i = 0; i < L; i++) has |= doc_of(ds, nd, g_layout[j * L + i]) == 1;
                            on += has;
                        }
                        crossing += on != sp;
                    }
                }
    CHECK(bad_part == 0, "%d of %d random windows: a rank without exactly T/sp ascending positions, a position twice or missing, or not deterministic",
          bad_part, cases);
    CHECK(bad_sum == 0, "%d windows: the ranks' pairs do not add up to the documents' n(n+1)/2", bad_sum);
    CHECK(bad_pairs == 0, "%d windows: place_pairs differs from the brute-force count", bad_pairs);
    CHECK(crossing == 0, "%d windows: a document longer than (sp-1)·L is not on every rank", crossing);
}

static int by_value(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

// Windows of T cut back to back from a stream of documents whose lengths are log-normal like real files (median
// T/12, p90 ≈ T, p99 ≈ 6T: most tokens in long documents, most documents short). Per placement: the mean and
// p90 over windows of the ranks' max/mean attention pairs.
static void balance(Placement pl, int T, int sp, int windows, double *mean, double *p90) {
    Rng r;
    rng_seed(&r, 7);
    static int32_t ds[MAX_DOCS];
    static double ratio[1024];
    int64_t left = 0;   // tokens of the current document still to come
    for (int w = 0; w < windows; w++) {
        int nd = 0;
        for (int p = 0; p < T;) {
            if (left == 0) left = 1 + (int64_t)(T / 12.0 * exp(1.87 * rng_normal(&r)));
            ds[nd++] = p;
            int64_t take = left < T - p ? left : T - p;
            p += (int)take, left -= take;
        }
        int64_t pairs[16], max = 0, sum = 0;
        place_sample(pl, ds, nd, T, sp, g_layout);
        place_pairs(g_layout, ds, nd, T, sp, pairs);
        for (int j = 0; j < sp; j++) max = pairs[j] > max ? pairs[j] : max, sum += pairs[j];
        ratio[w] = (double)max * sp / (double)sum;
    }
    *mean = 0;
    for (int w = 0; w < windows; w++) *mean += ratio[w] / windows;
    qsort(ratio, (size_t)windows, sizeof(double), by_value);
    *p90 = ratio[(9 * windows + 9) / 10 - 1];
}

static void test_balance(void) {
    for (int sp = 2; sp <= 8; sp *= 2) {
        double cm = 0, c90 = 0, zm = 0, z90 = 0;
        balance(PLACE_COST, 16384, sp, 200, &cm, &c90);
        balance(PLACE_ZIGZAG, 16384, sp, 200, &zm, &z90);
        CHECK(cm <= 1.05 && c90 <= 1.10, "sp %d: cost placement max/mean pairs %.3f mean, %.3f p90 (want <= 1.05, <= 1.10)", sp, cm, c90);
        CHECK(zm > 1.05 || z90 > 1.10, "sp %d: the zigzag on the same windows is not balanced (%.3f mean, %.3f p90): the check can fail", sp, zm,
              z90);
        printf("sp %d: max/mean pairs, mean and p90 over windows: zigzag %.3f %.3f, cost %.3f %.3f\n", sp, zm, z90, cm, c90);
    }
}

// A sample with documents through the batch: each rank's tokens, targets, positions and document numbers are the
// sample's at its layout positions; the row's layout is place_sample's; the row's docs are the documents in
// layout order.
static void test_batch(void) {
    enum { T = 256, SP = 4, EOS = 9 };
    int32_t sample[T + 1], ds[T];
    Rng r;
    rng_seed(&r, 5);
    for (int t = 0; t <= T; t++) sample[t] = rng_below(&r, 12) == 0 ? EOS : 10 + t;
    int nd = 0;
    for (int t = 0; t < T; t++)
        if (t == 0 || sample[t - 1] == EOS) ds[nd++] = t;
    for (int p = PLACE_ZIGZAG; p <= PLACE_COST; p++) {
        int bad = 0, bad_layout = 0;
        static char seen[T];
        memset(seen, 0, sizeof seen);
        place_sample((Placement)p, ds, nd, T, SP, g_layout);
        for (int rank = 0; rank < SP; rank++) {
            Batch b = batch_alloc(1, T / SP);
            batch_put_sample(&b, 0, sample, T, EOS, (RankSlice){SP, rank, (Placement)p});
            bad_layout += b.n_docs[0] != nd || memcmp(b.layout, g_layout, sizeof(int32_t) * T) != 0;
            for (int i = 0; i < b.T; i++) {
                int32_t q = b.pos[i];
                bad += q != g_layout[rank * b.T + i] || seen[q]++ || b.tokens[i] != sample[q] || b.targets[i] != sample[q + 1] ||
                       b.docs[rank * b.T + i] != doc_of(ds, nd, q);
            }
            for (int i = 0; i < T; i++) bad_layout += b.docs[i] != doc_of(ds, nd, g_layout[i]);
            batch_free(&b);
        }
        CHECK(bad == 0, "%s: %d batch positions not the sample's tokens, targets and documents at the layout", p ? "cost" : "zigzag", bad);
        CHECK(bad_layout == 0, "%s: the batch's layout or layout-order documents differ (%d)", p ? "cost" : "zigzag", bad_layout);
    }
}

int main(void) {
    test_zigzag();
    test_properties();
    test_balance();
    test_batch();
    return test_finish();
}
