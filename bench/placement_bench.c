// bench/placement_bench.c — per placement, over a dataset's windows: each rank's attention pairs and the K/V it receives but never reads.
//
// usage: placement_bench DATASET [T ...]   (default T = 32K 64K; sp = 2, 4, 8, 16)
// The windows are the loader's samples in stream order (packed back to back; docs/data.md#the-loader), all of
// one epoch. Per window and sp: place_sample, then place_pairs gives each rank's pairs (max/mean over ranks);
// the ring sends every rank's block to every other rank, and a block is unread by a receiver when none of its
// rows reads any of the block's keys (same document, earlier position); the pairwise exchange sends a receiver
// only the rows it reads (their count relative to the ring's (sp−1)·T rows).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "data/placement.h"
#include "data/source.h"

typedef struct {
    int n;                  // windows
    int32_t *first;         // (n + 1) each window's first document in `starts`
    int32_t *starts;        // the windows' document starts, one window after another
} Windows;

typedef struct {
    double ratio;           // attention pairs, max/mean over ranks
    double unread_blocks;   // ring: blocks received that no row reads, share of the (sp−1)·sp received
    double sent;            // exchange rows sent / ring rows sent
    int short_docs, short_split;   // documents of at most L tokens; those on more than one rank
} Counts;

static Windows read_windows(const char *path, int T) {
    DataOptions o = {.seq_len = T, .batch = 1, .seed = 1, .dp = 1, .sp = 1, .no_shuffle = true};
    DataSource *d = data_open(path, &o, false);
    Batch b = batch_alloc(1, T);
    Windows w = {.n = (int)data_num_samples(d)};
    w.first = xmalloc(((size_t)w.n + 1) * sizeof(int32_t), "window index");
    size_t cap = 1024, used = 0;
    w.starts = xmalloc(cap * sizeof(int32_t), "document starts");
    for (int i = 0; i < w.n; i++) {
        data_next(d, &b);
        if (used + (size_t)b.n_docs[0] > cap)
            cap = 2 * (used + (size_t)b.n_docs[0]), w.starts = xrealloc(w.starts, cap * sizeof(int32_t), "document starts");
        memcpy(w.starts + used, b.doc_start, (size_t)b.n_docs[0] * sizeof(int32_t));
        w.first[i] = (int32_t)used;
        used += (size_t)b.n_docs[0];
    }
    w.first[w.n] = (int32_t)used;
    batch_free(&b);
    data_close(d);
    return w;
}

// The first index of sorted pos[0..n) that is >= v.
static int lower_bound(const int32_t *pos, int n, int32_t v) {
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (pos[mid] < v) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

// Ring and exchange traffic of one layout. last (sp, nd): each rank's last position in each document (−1: none).
static void traffic(const int32_t *layout, const int32_t *ds, int nd, int T, int sp, int32_t *last, Counts *c) {
    int L = T / sp;
    for (int i = 0; i < sp * nd; i++) last[i] = -1;
    for (int j = 0; j < sp; j++)
        for (int i = 0, d = 0; i < L; i++) {
            int32_t p = layout[(size_t)j * L + i];
            while (d + 1 < nd && ds[d + 1] <= p) d++;
            last[(size_t)j * nd + d] = p;
        }
    c->short_docs = c->short_split = 0;
    for (int d = 0; d < nd; d++) {
        int holders = 0;
        for (int j = 0; j < sp; j++) holders += last[(size_t)j * nd + d] >= 0;
        if ((d + 1 < nd ? ds[d + 1] : T) - ds[d] <= L) c->short_docs++, c->short_split += holders > 1;
    }
    long unread = 0, rows = 0;
    for (int j = 0; j < sp; j++) {   // the sender
        const int32_t *pos = layout + (size_t)j * L;
        for (int q = 0; q < sp; q++) {
            if (q == j) continue;
            long read = 0;
            for (int lo = 0, d = 0; lo < L;) {   // runs of one document in j's rows
                while (d + 1 < nd && ds[d + 1] <= pos[lo]) d++;
                int hi = d + 1 < nd ? lower_bound(pos, L, ds[d + 1]) : L;
                int32_t until = last[(size_t)q * nd + d];   // q reads j's rows of d before this position
                if (until > pos[lo]) read += lower_bound(pos + lo, hi - lo, until);
                lo = hi;
            }
            unread += read == 0;
            rows += read;
        }
    }
    c->unread_blocks = (double)unread / ((double)sp * (sp - 1));
    c->sent = (double)rows / ((double)(sp - 1) * T);
}

static int by_value(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

// One table row: placement p of every window at (T, sp).
static void row(const Windows *w, int T, int sp, Placement p) {
    int32_t *layout = xmalloc((size_t)T * sizeof(int32_t), "layout");
    int64_t *pairs = xmalloc((size_t)sp * sizeof(int64_t), "pairs");
    double *ratio = xmalloc((size_t)w->n * sizeof(double), "ratios"), mean = 0, unread = 0, sent = 0, place_s = 0;
    int max_nd = 1;
    long short_docs = 0, short_split = 0;
    for (int i = 0; i < w->n; i++) max_nd = w->first[i + 1] - w->first[i] > max_nd ? w->first[i + 1] - w->first[i] : max_nd;
    int32_t *last = xmalloc((size_t)sp * max_nd * sizeof(int32_t), "last positions");
    for (int i = 0; i < w->n; i++) {
        const int32_t *ds = w->starts + w->first[i];
        int nd = w->first[i + 1] - w->first[i];
        double t0 = now_seconds();
        place_sample(p, ds, nd, T, sp, layout);
        place_s += now_seconds() - t0;
        place_pairs(layout, ds, nd, T, sp, pairs);
        int64_t max = 0, sum = 0;
        for (int j = 0; j < sp; j++) max = pairs[j] > max ? pairs[j] : max, sum += pairs[j];
        ratio[i] = (double)max * sp / (double)sum;
        Counts c;
        traffic(layout, ds, nd, T, sp, last, &c);
        mean += ratio[i], unread += c.unread_blocks, sent += c.sent;
        short_docs += c.short_docs, short_split += c.short_split;
    }
    qsort(ratio, (size_t)w->n, sizeof(double), by_value);
    int p90 = (int)((w->n * 9 + 9) / 10) - 1;
    printf("| %dK | %d | %s | %.3f | %.3f | %.3f | %.0f %% | %.0f %% | %.0f %% | %.0f |\n", T / 1024, sp, p == PLACE_COST ? "cost" : "zigzag",
           mean / w->n, ratio[p90], ratio[w->n - 1], 100 * unread / w->n, 100 * sent / w->n, 100.0 * short_split / (short_docs ? short_docs : 1),
           1e6 * place_s / w->n);
    fflush(stdout);
    free(last);
    free(ratio);
    free(pairs);
    free(layout);
}

int main(int argc, char **argv) {
    if (argc < 2) fail_usage("usage: placement_bench DATASET [T ...]   (T default 32K 64K)");
    int Ts[8] = {32768, 65536}, nT = 2;
    if (argc > 2) nT = 0;
    for (int a = 2; a < argc && nT < 8; a++) Ts[nT++] = atoi(argv[a]);
    printf("| window T | sp | placement | pairs per rank max/mean: mean over windows | p90 | worst "
           "| ring: K/V blocks received that no row reads | exchange bytes / ring bytes | documents of ≤ L tokens split | placement µs per window |\n"
           "|---|---|---|---|---|---|---|---|---|---|\n");
    for (int t = 0; t < nT; t++) {
        Windows w = read_windows(argv[1], Ts[t]);
        if (w.n < 1) fail_usage("%s: no window of %d tokens; use a smaller T or more data", argv[1], Ts[t]);
        for (int sp = 2; sp <= 16; sp *= 2)
            for (int p = PLACE_ZIGZAG; p <= PLACE_COST; p++) row(&w, Ts[t], sp, (Placement)p);
        fprintf(stderr, "T = %d: %d windows\n", Ts[t], w.n);
        free(w.first);
        free(w.starts);
    }
    return 0;
}
