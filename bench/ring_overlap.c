// bench/ring_overlap.c — one ring attention forward + backward (one sequence, one layer) per repetition on a ring of all ranks:
// wall time, block compute and exposed ring wait; with --calibrate, the CPU block kernels' FLOP/s and the link's message latency.
// Usage: mpirun -np W ring_overlap [--tokens L] [--reps R] [--ring-overlap=false | --paired] [--comm-progress compute|thread|off]
//        [--heads H --kv-heads K --head-dim D]                       (the `small` model's attention by default)
//        mpirun -np W ring_overlap --doc-mean N [--tokens L] ...     (documents of N tokens on average, masked: the zigzag's
//                                                                     ring against the exchange of a layout keeping them whole)
//        ring_overlap --calibrate attn --tokens T                     (one rank: causal forward + backward of T tokens)
//        mpirun -np 2 ring_overlap --calibrate link                   (sendrecv pairs between two ranks: latency, bandwidth)
//        ring_overlap --predict --ranks W --tokens L --attn-gflops F --link-gbps B --latency-us U [--host-gbps H]
//                                                                     (attention/ring.h's model of the same ring, no MPI)
// Rank 0 prints one line of key=value figures per ring (bench/ring_overlap.sh reads them), per repetition (the mean over
// --reps after one warm-up, and med_*: the median): each time as its slowest rank's, and the critical rank's (crit_*: the
// most block compute); with --paired, paired_saved_s: the median of serial - crit lag - overlap over the pairs; with
// --doc-mean, layout= and its attention pairs per rank, pairs_max_mean= (max / mean).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "attention/ring.h"
#include "core/args.h"
#include "core/backend.h"
#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "model/ops.h"

typedef struct {
    real *q, *k, *v, *dout;    // q, dout (L, H, hd); k, v (L, Hkv, hd)
    real *out, *lse, *tmp;     // out (L, H, hd); lse, tmp (L, H)
    real *dq, *dk, *dv;        // gradients, shaped as q, k, v
} Tensors;

static real *randn(Rng *g, size_t n, const char *what) {
    real *x = xmalloc(n * sizeof(real), what);
    for (size_t i = 0; i < n; i++) x[i] = (real)rng_normal(g);
    return x;
}

static Tensors tensors(const AttnShape *s, int L, uint64_t seed) {
    Rng g;
    rng_seed(&g, seed);
    size_t qn = (size_t)L * s->n_head * s->head_dim, kvn = (size_t)L * s->n_kv_head * s->head_dim, rows = (size_t)L * s->n_head;
    Tensors t = {randn(&g, qn, "q"), randn(&g, kvn, "k"), randn(&g, kvn, "v"), randn(&g, qn, "dout")};
    t.out = xmalloc(qn * sizeof(real), "out"), t.dq = xmalloc(qn * sizeof(real), "dq");
    t.lse = xmalloc(rows * sizeof(real), "lse"), t.tmp = xmalloc(rows * sizeof(real), "tmp");
    t.dk = xmalloc(kvn * sizeof(real), "dk"), t.dv = xmalloc(kvn * sizeof(real), "dv");
    return t;
}

// The tensors as one attention call's rows (L of them).
static AttnRows rows_of(const Tensors *t, int L) {
    return (AttnRows){.L = L, .q = t->q, .k = t->k, .v = t->v, .out = t->out, .lse = t->lse, .tmp = t->tmp, .dout = t->dout,
                      .dq = t->dq, .dk = t->dk, .dv = t->dv};
}

static void tensors_free(Tensors *t) {
    free(t->q), free(t->k), free(t->v), free(t->dout), free(t->out), free(t->lse), free(t->tmp), free(t->dq), free(t->dk),
        free(t->dv);
}

// Visible (query, key) pairs × FLOPs per pair and head (4·hd forward, 10·hd backward) of causal attention over T tokens.
static double causal_flops(const AttnShape *s, double T) { return T * (T + 1) / 2 * s->n_head * s->head_dim * 14.0; }

// One rank: the CPU block kernels on one causal block of T tokens, forward and backward (the ring's work at sp = 1).
// The mean over the repetitions after a warm-up (what a ring's blocks run at) and the best.
static void calibrate_attention(const AttnShape *s, int T, int reps) {
    Tensors t = tensors(s, T, 7);
    double best = 1e30, sum = 0;
    for (int i = 0; i <= reps; i++) {
        double t0 = now_seconds();
        AttnRows rows = rows_of(&t, T);
        attention_causal_forward(&BACKEND_CPU, s, &rows, NULL);
        attention_causal_backward(&BACKEND_CPU, s, &rows, NULL);
        double dt = now_seconds() - t0;
        if (i > 0) sum += dt, best = dt < best ? dt : best;   // the first is a warm-up
    }
    double mean = sum / reps;
    log_info("calibrate=attn tokens=%d heads=%d kv_heads=%d head_dim=%d attn_s=%.5f attn_gflops=%.3f best_gflops=%.3f\n", T,
             s->n_head, s->n_kv_head, s->head_dim, mean, causal_flops(s, T) / mean / 1e9, causal_flops(s, T) / best / 1e9);
    tensors_free(&t);
}

// Seconds per sendrecv pair of `bytes` each way around the ring (the slowest rank's mean over reps, after a warm-up).
static double pair_seconds(Comm *ring, size_t bytes, int reps) {
    char *buf = xcalloc(2 * bytes, 1, "link buffers");
    int W = comm_size(ring), r = comm_rank(ring);
    double dt = 0;
    for (int warm = 0; warm < 2; warm++) {
        comm_barrier(ring, "link start");
        double t0 = now_seconds();
        for (int i = 0; i < reps; i++) {
            CommRequest q;
            comm_sendrecv_start(ring, &q, buf, bytes, (r + 1) % W, buf + bytes, bytes, (r - 1 + W) % W, "link pair");
            comm_wait(&q);
        }
        dt = (now_seconds() - t0) / reps;
        comm_allreduce(ring, &dt, 1, COMM_F64, COMM_MAX, "link figures");
    }
    free(buf);
    return dt;
}

// The link as a ring hop sees it: latency (8-byte pairs) and bandwidth (8 MiB pairs, each way at once).
static void calibrate_link(Comm *ring) {
    double lat = pair_seconds(ring, 8, 2000), big = pair_seconds(ring, 8 << 20, 8);
    log_info("calibrate=link ranks=%d latency_us=%.1f bandwidth_gbps=%.3f\n", comm_size(ring), lat * 1e6,
             (8 << 20) * 8 / (big - lat) / 1e9);
}

// The timing model's figures for the same ring (attention/ring.h), overlap on and off.
static void predict(const AttnShape *s, int W, int L, double gflops, double gbps, double latency_us, double busy_share,
                    double host_gbps) {
    RingCosts c = {.attn_flops = gflops * 1e9, .link_bytes_per_s = gbps * 1e9 / 8, .latency_s = latency_us * 1e-6,
                   .busy_share = busy_share, .host_bytes_per_s = host_gbps * 1e9 / 8};
    RingTiming on_f = ring_model(W, L, s, &c, true, false), on_b = ring_model(W, L, s, &c, true, true);
    RingTiming off_f = ring_model(W, L, s, &c, false, false), off_b = ring_model(W, L, s, &c, false, true);
    log_info("predict ranks=%d tokens=%d attn_s=%.5f serial_s=%.5f compute_s=%.5f transfer_s=%.5f lag_s=%.5f wait_s=%.5f "
             "bytes=%.0f\n",
             W, L, on_f.seconds + on_b.seconds, off_f.seconds + off_b.seconds, off_f.compute_s + off_b.compute_s,
             off_f.wait_s + off_b.wait_s, off_f.lag_s + off_b.lag_s, on_f.wait_s + on_b.wait_s, on_f.bytes + on_b.bytes);
}

// --doc-mean: one sequence of W·L tokens packed with documents (lengths uniform in 1..2·mean, the last cut at the end)
// under two layouts: the zigzag (the ring) and one that keeps documents whole (the exchange; a document no rank has room
// for is cut at the roomiest rank, as a placement by cost does), largest first onto the rank with the fewest pairs.
typedef struct {
    const char *name;
    int32_t *pos;   // (W, L) ascending per rank; NULL: the zigzag
    int32_t *ids;   // (W, L) document ids in layout order
    double pairs_max_mean;
    AttnLayout lay;
} DocLayout;

// Document starts of the packed sequence (n of them, starts[n] = T) from a fixed seed.
static int *pack_docs(int T, int mean, int *n) {
    int *starts = xmalloc(((size_t)T + 1) * sizeof(int), "documents");
    Rng g;
    rng_seed(&g, 5);
    *n = 0;
    for (int p = 0; p < T; p += 1 + (int)rng_below(&g, 2 * (uint64_t)mean)) starts[(*n)++] = p;
    starts[*n] = T;
    return starts;
}

// Rank j's pairs: each row sees the keys of its document at or before it.
static void layout_figures(DocLayout *d, const int *starts, int n, int W, int L) {
    int T = W * L, *doc = xmalloc((size_t)T * sizeof(int), "documents");
    for (int i = 0; i < n; i++)
        for (int p = starts[i]; p < starts[i + 1]; p++) doc[p] = i;
    double most = 0, sum = 0;
    for (int j = 0; j < W; j++) {
        double pairs = 0;
        for (int i = 0; i < L; i++) {
            int h = L / 2, p = d->pos ? d->pos[(size_t)j * L + i] : i < h ? j * h + i : (2 * W - 1 - j) * h + i - h;
            d->ids[(size_t)j * L + i] = doc[p];
            pairs += p - starts[doc[p]] + 1;
        }
        most = pairs > most ? pairs : most, sum += pairs;
    }
    d->pairs_max_mean = most / (sum / W);
    d->lay = (AttnLayout){.pos = d->pos, .docs = d->ids, .docs_host = d->ids};
    free(doc);
}

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

// The layout keeping documents whole: longest first, each onto the rank with the fewest pairs that has room for it;
// where none has, the roomiest takes what fits and the rest goes on the next pick.
static int32_t *whole_docs(const int *starts, int n, int W, int L) {
    int32_t *pos = xmalloc((size_t)W * L * sizeof(int32_t), "layout");
    int *fill = xcalloc((size_t)W, sizeof(int), "layout"), *order = xmalloc((size_t)n * 2 * sizeof(int), "layout");
    double *cost = xcalloc((size_t)W, sizeof(double), "layout");
    for (int i = 0; i < n; i++) order[2 * i] = -(starts[i + 1] - starts[i]), order[2 * i + 1] = i;
    qsort(order, (size_t)n, 2 * sizeof(int), cmp_int);   // longest first (by the negated length)
    for (int i = 0; i < n; i++) {
        int d = order[2 * i + 1], p = starts[d];
        while (p < starts[d + 1]) {
            int best = -1, room = 0;
            for (int j = 0; j < W; j++)
                if (L - fill[j] >= starts[d + 1] - p && (best < 0 || cost[j] < cost[best])) best = j;
            for (int j = 0; j < W && best < 0; j++) room = L - fill[j] > room ? L - fill[j] : room;
            for (int j = 0; j < W && best < 0; j++) best = L - fill[j] == room ? j : best;
            int take = starts[d + 1] - p < L - fill[best] ? starts[d + 1] - p : L - fill[best];
            for (int t = 0; t < take; t++) pos[(size_t)best * L + fill[best]++] = p + t;
            cost[best] += (double)take * (take + 1) / 2, p += take;
        }
    }
    for (int j = 0; j < W; j++) qsort(pos + (size_t)j * L, (size_t)L, sizeof(int32_t), cmp_int);
    free(fill), free(order), free(cost);
    return pos;
}

// One repetition on one ring: a forward + backward pass; v = {wall, compute, wait, bytes, lag} of this rank.
static void ring_rep(AttnRing *ring, const AttnShape *s, Comm *world, Tensors *t, int L, const AttnLayout *lay, double v[5]) {
    ring_stats_reset(ring);
    comm_barrier(world, "repetition start");
    double t0 = now_seconds();
    AttnRows rows = rows_of(t, L);
    ring_attention_forward(ring, &BACKEND_CPU, s, &rows, lay);
    ring_attention_backward(ring, &BACKEND_CPU, s, &rows, lay);
    RingStats st = ring_stats(ring);
    double r[5] = {now_seconds() - t0, st.compute_s, st.wait_s, st.bytes, st.lag_s};
    memcpy(v, r, sizeof r);
}

// The figures of one ring over the timed repetitions: each figure's slowest rank (max: the slowest may be a different
// rank per figure), and the critical rank's (crit: the rank with the most block compute in the repetition; its wall is
// its compute + wait + lag, so serial - crit lag - overlap is what the overlap took off the critical path). Kept per
// repetition: this shared machine's speed drifts by 10 % within seconds, so the report takes medians.
enum { FIG_WALL, FIG_COMPUTE, FIG_WAIT, FIG_BYTES, FIG_LAG, FIG_CRIT_COMPUTE, FIG_CRIT_WAIT, FIG_CRIT_LAG, N_FIG };
typedef struct {
    double *rep;   // (reps, N_FIG)
    int n;
} RingFigures;

static void figures_add(RingFigures *f, Comm *world, const double v[5]) {
    int n = comm_size(world), me = comm_rank(world);
    double mx[5];
    memcpy(mx, v, sizeof mx);
    comm_allreduce(world, mx, 5, COMM_F64, COMM_MAX, "repetition figures");
    typedef struct {
        double compute, wait, lag;
    } RankFigures;
    RankFigures *per = xcalloc((size_t)n, sizeof *per, "per-rank figures");   // (n): zero but this rank's, then summed
    per[me] = (RankFigures){v[1], v[2], v[4]};
    comm_allreduce(world, per, (size_t)3 * n, COMM_F64, COMM_SUM, "per-rank figures");
    int crit = 0;
    for (int r = 1; r < n; r++)
        if (per[r].compute > per[crit].compute) crit = r;
    double *row = f->rep + (size_t)f->n++ * N_FIG;
    memcpy(row, mx, sizeof mx);
    row[FIG_CRIT_COMPUTE] = per[crit].compute, row[FIG_CRIT_WAIT] = per[crit].wait, row[FIG_CRIT_LAG] = per[crit].lag;
    free(per);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

// The mean (med = false) or median of figure k over the repetitions.
static double figure(const RingFigures *f, int k, bool med) {
    double *x = xmalloc((size_t)f->n * sizeof(double), "figure"), sum = 0;
    for (int i = 0; i < f->n; i++) x[i] = f->rep[(size_t)i * N_FIG + k], sum += x[i];
    double r = med ? median(x, f->n) : sum / f->n;
    free(x);
    return r;
}

// Paired runs: the median over the repetitions of what the overlap took off the critical path, serial - crit lag -
// overlap, each repetition against the serial one beside it in time.
static double paired_saved(const RingFigures *on, const RingFigures *off) {
    double *x = xmalloc((size_t)on->n * sizeof(double), "paired savings");
    for (int i = 0; i < on->n; i++)
        x[i] = off->rep[(size_t)i * N_FIG + FIG_WALL] - off->rep[(size_t)i * N_FIG + FIG_CRIT_LAG] -
               on->rep[(size_t)i * N_FIG + FIG_WALL];
    double r = median(x, on->n);
    free(x);
    return r;
}

// extra: the line's last fields (paired_saved_s=, layout=), or "".
static void figures_print(const RingFigures *f, const AttnShape *s, Comm *ring_comm, int L, bool overlap, bool paired,
                          const char *progress, const char *extra) {
    log_info("ranks=%d tokens=%d heads=%d kv_heads=%d head_dim=%d overlap=%d paired=%d progress=%s progress_thread=%d "
             "reps=%d attn_s=%.5f compute_s=%.5f wait_s=%.5f lag_s=%.5f bytes=%.0f crit_compute_s=%.5f crit_wait_s=%.5f "
             "crit_lag_s=%.5f med_attn_s=%.5f med_crit_compute_s=%.5f med_crit_wait_s=%.5f med_crit_lag_s=%.5f%s\n",
             comm_size(ring_comm), L, s->n_head, s->n_kv_head, s->head_dim, overlap, paired, progress,
             comm_progress_running(), f->n, figure(f, FIG_WALL, false), figure(f, FIG_COMPUTE, false),
             figure(f, FIG_WAIT, false), figure(f, FIG_LAG, false), figure(f, FIG_BYTES, false),
             figure(f, FIG_CRIT_COMPUTE, false), figure(f, FIG_CRIT_WAIT, false), figure(f, FIG_CRIT_LAG, false),
             figure(f, FIG_WALL, true), figure(f, FIG_CRIT_COMPUTE, true), figure(f, FIG_CRIT_WAIT, true),
             figure(f, FIG_CRIT_LAG, true), extra);
}

// The ring: --reps forward + backward passes after one warm-up. Two variants take turns (ABBA: A, B, B, A, ...) in one
// run, so that both see the same drift of a shared machine: with paired the overlapped ring and the serial baseline,
// with docs (two layouts, else NULL) the zigzag and the layout keeping documents whole.
static void run_ring(const AttnShape *s, const CommGrid *g, int L, int reps, bool overlap, bool paired, const char *progress,
                     const DocLayout *docs) {
    Comm *ring_comm = g->ring, *world = g->world;
    int n = paired || docs ? 2 : 1;
    AttnRing *ring[2] = {ring_create(ring_comm, &BACKEND_CPU, paired ? true : overlap),
                         n == 2 ? ring_create(ring_comm, &BACKEND_CPU, paired ? false : overlap) : NULL};
    Tensors t = tensors(s, L, 11 + (uint64_t)comm_rank(ring_comm));
    RingFigures f[2] = {0};
    for (int m = 0; m < n; m++) f[m].rep = xmalloc((size_t)reps * N_FIG * sizeof(double), "repetition figures");
    for (int i = 0; i <= reps; i++) {
        for (int j = 0; j < n; j++) {
            int m = (n == 2 && i % 2) ? 1 - j : j;   // the order turns every repetition
            double v[5];
            ring_rep(ring[m], s, world, &t, L, docs ? &docs[m].lay : NULL, v);
            if (i > 0) figures_add(&f[m], world, v);
        }
    }
    double saved = paired ? paired_saved(&f[0], &f[1]) : 0;
    for (int m = 0; m < n; m++) {
        char extra[96] = "";
        if (paired && m == 1) snprintf(extra, sizeof extra, " paired_saved_s=%.5f", saved);
        if (docs) snprintf(extra, sizeof extra, " layout=%s pairs_max_mean=%.3f", docs[m].name, docs[m].pairs_max_mean);
        figures_print(&f[m], s, ring_comm, L, paired ? m == 0 : overlap, paired, progress, extra);
    }
    for (int m = 0; m < n; m++) free(f[m].rep);
    tensors_free(&t);
    for (int m = 0; m < n; m++) ring_free(ring[m]);
}

// --doc-mean: the zigzag and the layout keeping documents whole, timed in turns.
static void run_documents(const AttnShape *s, const CommGrid *g, int L, int reps, bool overlap, const char *progress,
                          int doc_mean) {
    int W = g->sp, T = W * L, n;
    int *starts = pack_docs(T, doc_mean, &n);
    DocLayout d[2] = {{.name = "zigzag"}, {.name = "whole-docs", .pos = whole_docs(starts, n, W, L)}};
    for (int m = 0; m < 2; m++) {
        d[m].ids = xmalloc((size_t)T * sizeof(int32_t), "document ids");
        layout_figures(&d[m], starts, n, W, L);
    }
    log_info("documents=%d tokens=%d mean_length=%.1f\n", n, T, (double)T / n);
    run_ring(s, g, L, reps, overlap, false, progress, d);
    for (int m = 0; m < 2; m++) free(d[m].pos), free(d[m].ids);
    free(starts);
}

int main(int argc, char **argv) {
    cpu_exec_setup(argv);
    comm_init(&argc, &argv);
    int L = 1024, reps = 3, heads = 4, kv_heads = 4, head_dim = 64, ranks = 2, doc_mean = 0;
    bool overlap = true, paired = false, predict_only = false;
    const char *progress = "compute";
    double gflops = 0, gbps = 0, latency_us = 0, busy_share = 1, host_gbps = 0;
    const char *calibrate = NULL;
    ArgSpec specs[] = {
        {"--tokens", ARG_INT, &L, "tokens per rank (the ring), or of the causal block (--calibrate attn)"},
        {"--reps", ARG_INT, &reps, "timed repetitions after one warm-up"},
        {"--heads", ARG_INT, &heads, "query heads"},
        {"--kv-heads", ARG_INT, &kv_heads, "key/value heads"},
        {"--head-dim", ARG_INT, &head_dim, "head dimension"},
        {"--ring-overlap", ARG_BOOL, &overlap, "start each hop before computing (=false: the serial baseline)"},
        {"--paired", ARG_BOOL, &paired, "time the overlapped ring and the serial baseline in turns, in one run (two lines)"},
        {"--doc-mean", ARG_INT, &doc_mean, "documents of this many tokens on average, masked: the zigzag's ring and the "
                                            "exchange of a layout keeping them whole, in turns (two lines); 0: one document"},
        {"--comm-progress", ARG_STRING, &progress, "what moves a hop while the block computes: compute, thread or off "
                                                    "(core/comm.h)"},
        {"--calibrate", ARG_STRING, &calibrate, "attn (one rank) or link (two ranks) instead of the ring", .dflt = "off"},
        {"--predict", ARG_BOOL, &predict_only, "print the timing model's figures for --ranks, --tokens and the rates below"},
        {"--ranks", ARG_INT, &ranks, "ring size (--predict)"},
        {"--attn-gflops", ARG_DOUBLE, &gflops, "attention GFLOP/s of a rank (--predict)"},
        {"--link-gbps", ARG_DOUBLE, &gbps, "link Gbit/s each way (--predict)"},
        {"--latency-us", ARG_DOUBLE, &latency_us, "per message (--predict)"},
        {"--busy-share", ARG_DOUBLE, &busy_share, "share of the link's rate while the sender computes (--predict)"},
        {"--host-gbps", ARG_DOUBLE, &host_gbps, "Gbit/s a rank's core moves through the network stack, 0: free (--predict)"},
    };
    ArgCommand cmd = {"ring_overlap", "mpirun -np W ring_overlap [flags]", "Ring attention time, compute and exposed wait."};
    args_parse(&cmd, specs, sizeof specs / sizeof specs[0], argc, argv, NULL, 0);
    if (L < 2 || L % 2 || reps < 1 || heads < 1 || kv_heads < 1 || heads % kv_heads || head_dim < 1 || doc_mean < 0)
        comm_fail_usage_all("ring_overlap: --tokens must be even and >= 2, --reps >= 1, --kv-heads must divide --heads, "
                            "--doc-mean >= 0");
    if (doc_mean > 0 && paired) comm_fail_usage_all("ring_overlap: --doc-mean and --paired each take both turns; give one");
    AttnShape s = {.n_head = heads, .n_kv_head = kv_heads, .head_dim = head_dim};
    if (predict_only) {
        if (!(gflops > 0) || !(gbps > 0) || ranks < 1) fail_usage("--predict needs --attn-gflops, --link-gbps > 0 and --ranks >= 1");
        predict(&s, ranks, L, gflops, gbps, latency_us, busy_share, host_gbps);
        comm_finalize();
        return 0;
    }
    comm_set_timeout(3600);
    CommProgress mode;
    if (!comm_progress_parse(progress, &mode)) comm_fail_usage_all("--comm-progress %s: use compute, thread or off", progress);
    comm_set_progress(mode);
    cpu_threads(1);   // one core per rank: the two-host runs give each rank one
    CommGrid g = comm_grid(comm_size(comm_world()));
    if (calibrate && !strcmp(calibrate, "attn")) calibrate_attention(&s, L, reps);
    else if (calibrate && !strcmp(calibrate, "link")) calibrate_link(g.ring);
    else if (calibrate) comm_fail_usage_all("--calibrate %s: use attn or latency", calibrate);
    else if (doc_mean == 0) run_ring(&s, &g, L, reps, overlap, paired, progress, NULL);
    else run_documents(&s, &g, L, reps, overlap, progress, doc_mean);
    comm_grid_free(&g);
    comm_finalize();
    return 0;
}
