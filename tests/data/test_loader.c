// tests/data/test_loader.c — the streaming loader: exact windows, epochs, layout independence over dp×sp and placements, resume, splits, bad input.
#include <inttypes.h>
#include <sys/stat.h>

#include "core/rng.h"
#include "data/dataset.h"
#include "data/source.h"
#include "testutil.h"

enum { VOCAB = 60000, EOS = 59999, T = 64, B = 2 };

static uint32_t *g_stream;   // the train split's token stream: non-EOS tokens are all distinct
static uint64_t g_n;
static uint64_t g_pos_of[VOCAB];   // stream position of each non-EOS token value

// The loss weight the weighted dataset gives a token: 0 for EOS and every third id.
static uint8_t weight_of(uint32_t tok) { return tok != EOS && tok % 3 != 0; }

// Documents of 0..700 tokens (longer than a block of 256 and some than a shard of 1000); val split of 3 documents.
// weighted: the shards store weight_of(token) for every token.
static void make_dataset(const char *ds, bool with_val, bool weighted) {
    Rng r;
    rng_seed(&r, 3);
    g_stream = malloc(40000 * sizeof(uint32_t));
    g_n = 0;
    uint32_t next = 0, doc[800];
    ShardParams p = {.token_bytes = 2, .block_tokens = 256, .vocab_size = VOCAB, .eos_id = EOS, .level = 1, .byte_planes = true,
                     .weights = weighted, .tokenizer = "test"};
    uint8_t wdoc[800];
    DatasetWriter *w = dataset_writer_open(ds, &p, 1000);
    while (g_n < 20000) {
        uint64_t len = rng_below(&r, 8) == 0 ? 700 : rng_below(&r, 120);
        for (uint64_t i = 0; i < len; i++, next++) {
            g_pos_of[next] = g_n;
            doc[i] = g_stream[g_n++] = next;
        }
        g_stream[g_n++] = EOS;
        if (!weighted) {
            dataset_doc(w, SPLIT_TRAIN, doc, (size_t)len);
            continue;
        }
        for (uint64_t i = 0; i < len; i++) wdoc[i] = weight_of(doc[i]);
        dataset_doc_begin(w, SPLIT_TRAIN);
        dataset_doc_tokens_weighted(w, doc, wdoc, (size_t)len);
        dataset_doc_end_weighted(w, weight_of(EOS));
    }
    for (int d = 0; with_val && d < 3; d++) {
        for (int i = 0; i < 200; i++) doc[i] = 50000 + d * 200 + i;
        dataset_doc(w, SPLIT_VAL, doc, 200);
    }
    dataset_writer_close(w, NULL);
}

// Where a (non-EOS) token value sits in the stream.
static uint64_t where(int32_t tok) { return g_pos_of[tok]; }

// The window rule by brute force over a stream (EOS ends documents; stream position 0 starts one):
// a window starts at the last document start in (s, s + T], else at s + T; windows need T+1 tokens
// before hi. Returns their count; starts[] (when not NULL) gets them.
static uint64_t ref_starts(const uint32_t *stream, uint64_t lo, uint64_t hi, uint64_t *starts) {
    uint64_t n = 0;
    for (uint64_t s = lo; s + T + 1 <= hi;) {
        if (starts) starts[n] = s;
        n++;
        uint64_t next = s + T;
        for (uint64_t p = s + T; p > s; p--)
            if (stream[p - 1] == EOS) {
                next = p;
                break;
            }
        s = next;
    }
    return n;
}

static uint64_t *g_starts;   // the train stream's window starts
static uint64_t g_n_starts;

// Index of a window start in g_starts, or UINT64_MAX when it is not one.
static uint64_t start_index(uint64_t start) {
    uint64_t lo = 0, hi = g_n_starts;
    while (lo < hi) {
        uint64_t mid = (lo + hi) / 2;
        if (g_starts[mid] < start) lo = mid + 1;
        else hi = mid;
    }
    return lo < g_n_starts && g_starts[lo] == start ? lo : UINT64_MAX;
}

typedef struct {
    int64_t k;
    int32_t pos, tok, tgt, seg;
} Tuple;

static int cmp_tuple(const void *a, const void *b) {
    const Tuple *x = a, *y = b;
    if (x->k != y->k) return x->k < y->k ? -1 : 1;
    return x->pos - y->pos;
}

static DataOptions opts(int dp, int dpi, int sp, int spi, double val_fraction) {
    return (DataOptions){.seq_len = T, .batch = B, .seed = 1234, .dp = dp, .dp_index = dpi, .sp = sp, .sp_index = spi, .val_fraction = val_fraction};
}

// Runs `steps` micro-steps on every rank of dp×sp starting at global sample `from`; appends every
// (sample, position, token, target, document) any rank saw. Checks each rank's positions: the zigzag's
// chunks, or its part of the row's layout, which is place_sample's for the row's document starts.
static bool g_loss_on_all;   // run_layout opens the data with --loss-on all
static Placement g_placement;   // and this placement

static int bad_positions(const Batch *b, int row, int sp, int r) {
    int bad = 0;
    const int32_t *layout = b->layout + (size_t)row * b->doc_cap;
    int32_t want[T];
    place_sample(g_placement, b->doc_start + (size_t)row * b->doc_cap, b->n_docs[row], T, sp, want);
    for (int t = 0; t < b->T; t++) {
        int chunk = T / (2 * sp), c = b->pos[(size_t)row * b->T + t] / chunk;
        if (g_placement == PLACE_ZIGZAG && sp > 1 && c != r && c != 2 * sp - 1 - r) bad++;
        bad += b->pos[(size_t)row * b->T + t] != layout[r * b->T + t];
    }
    return bad + (memcmp(layout, want, sizeof want) != 0);
}

static size_t run_layout(const char *ds, int dp, int sp, uint64_t from, int steps, Tuple *out, DataState *end) {
    size_t n = 0;
    int bad_pos = 0;
    for (int g = 0; g < dp; g++)
        for (int r = 0; r < sp; r++) {
            DataOptions o = opts(dp, g, sp, r, 0);
            o.loss_on_all = g_loss_on_all;
            o.placement = g_placement;
            DataSource *d = data_open(ds, &o, false);
            data_restore(d, (DataState){.seed = 1234, .consumed = from});
            Batch b = batch_alloc(B, T / sp);
            for (int s = 0; s < steps; s++) {
                data_next(d, &b);
                for (int row = 0; row < B; row++) {
                    bad_pos += bad_positions(&b, row, sp, r);
                    for (int t = 0; t < b.T; t++) {
                        size_t i = (size_t)row * b.T + t;
                        out[n++] = (Tuple){b.sample[row], b.pos[i], b.tokens[i], b.targets[i], b.docs[(size_t)row * b.doc_cap + r * b.T + t]};
                    }
                }
            }
            if (end) *end = data_state(d);
            batch_free(&b);
            data_close(d);
        }
    CHECK(bad_pos == 0, "dp %d sp %d placement %d: %d positions outside the rank's zigzag chunks or layout", dp, sp, g_placement, bad_pos);
    qsort(out, n, sizeof *out, cmp_tuple);
    return n;
}

static void test_layouts(const char *ds, uint64_t n_samples) {
    const int layouts[][2] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {1, 4}};
    const int S = 48;                        // global samples consumed, crossing an epoch boundary
    uint64_t from = n_samples - 20;
    Tuple *ref = malloc(sizeof(Tuple) * S * T), *got = malloc(sizeof(Tuple) * S * T);
    size_t n_ref = run_layout(ds, 1, 1, from, S / B, ref, NULL);
    CHECK(n_ref == (size_t)S * T, "reference size");
    // The reference itself: every sample is a window of T+1 stream tokens starting where the window rule says,
    // and `seg` counts the EOS tokens before each position.
    int bad = 0;
    for (size_t i = 0; i < n_ref; i += T) {
        uint64_t start = UINT64_MAX;
        for (int t = 0; t < T && start == UINT64_MAX; t++)
            if (ref[i + t].tok != EOS) start = where(ref[i + t].tok) - t;
        if (start_index(start) == UINT64_MAX) bad++;
        for (int t = 0, seg = 0; t < T; t++) {
            if (ref[i + t].tok != (int32_t)g_stream[start + t] || ref[i + t].tgt != (int32_t)g_stream[start + t + 1] || ref[i + t].seg != seg) bad++;
            if (ref[i + t].tok == EOS) seg++;
        }
    }
    CHECK(bad == 0, "samples are exact stream windows with document numbers (%d bad)", bad);
    for (g_placement = PLACE_ZIGZAG; g_placement <= PLACE_COST; g_placement++)
        for (size_t l = 1; l < sizeof layouts / sizeof layouts[0]; l++) {
            int dp = layouts[l][0], sp = layouts[l][1];
            size_t n = run_layout(ds, dp, sp, from, S / (B * dp), got, NULL);
            CHECK(n == n_ref && memcmp(got, ref, n * sizeof *got) == 0, "dp %d x sp %d, placement %d: the same (sample, token) multiset as 1x1", dp,
                  sp, g_placement);
        }
    g_placement = PLACE_ZIGZAG;
    free(ref);
    free(got);
}

// One epoch visits every window once; epochs differ; the order is a function of the seed only.
static void test_epochs(const char *ds) {
    DataOptions o = opts(1, 0, 1, 0, 0);
    o.batch = 1;
    DataSource *d = data_open(ds, &o, false);
    uint64_t n = data_num_samples(d);
    CHECK(n == g_n_starts && n > (g_n - 1) / T, "samples per epoch %" PRIu64 " (window rule %" PRIu64 ", more than the %" PRIu64
          " stride-T windows: short documents start windows)", n, g_n_starts, (g_n - 1) / T);
    Batch b = batch_alloc(1, T);
    unsigned char *seen = calloc(n, 1);
    uint64_t *first = malloc(n * sizeof *first), dup = 0, same = 0;
    for (uint64_t k = 0; k < 2 * n; k++) {
        data_next(d, &b);
        uint64_t start = UINT64_MAX;
        for (int t = 0; t < T && start == UINT64_MAX; t++)
            if (b.tokens[t] != EOS) start = where(b.tokens[t]) - t;
        uint64_t j = start_index(start);
        if (j == UINT64_MAX) {
            dup++;
            continue;
        }
        if (k < n) {
            dup += seen[j]++;
            first[k] = j;
        } else {
            same += first[k - n] == j;
        }
    }
    CHECK(dup == 0, "an epoch repeats %" PRIu64 " windows", dup);
    CHECK(same < n / 4, "epoch 2 repeats epoch 1's order (%" PRIu64 " of %" PRIu64 " equal)", same, n);
    DataState s = data_state(d);
    CHECK(s.consumed == 2 * n && s.epoch == 2 && s.seed == 1234, "state after two epochs");
    batch_free(&b);
    data_close(d);
    free(seen);
    free(first);
}

// --no-shuffle: global sample k is window k mod n of the stream (in stream order), every epoch.
static void test_no_shuffle(const char *ds) {
    DataOptions o = opts(1, 0, 1, 0, 0);
    o.batch = 1;
    o.no_shuffle = true;
    DataSource *d = data_open(ds, &o, false);
    uint64_t n = data_num_samples(d), wrong = 0;
    Batch b = batch_alloc(1, T);
    for (uint64_t k = 0; k < 2 * n; k++) {
        data_next(d, &b);
        for (int t = 0; t < T; t++) wrong += (uint32_t)b.tokens[t] != g_stream[g_starts[k % n] + t];
    }
    CHECK(wrong == 0, "--no-shuffle: %" PRIu64 " tokens not in stream order", wrong);
    batch_free(&b);
    data_close(d);
}

// Stopping after k steps and restarting from the saved state gives the same batches; also onto another layout.
static void test_resume(const char *ds) {
    enum { STEPS = 10, STOP = 4, DP = 2, SP = 2 };
    size_t per = (size_t)STEPS * B * T / SP;
    Tuple *full = malloc(sizeof(Tuple) * per * DP * SP), *part = malloc(sizeof(Tuple) * per * DP * SP);
    DataState st;
    size_t n_full = run_layout(ds, DP, SP, 0, STEPS, full, NULL);
    size_t n1 = run_layout(ds, DP, SP, 0, STOP, part, &st);
    CHECK(st.consumed == (uint64_t)STOP * B * DP, "state counts global samples: %" PRIu64, st.consumed);
    size_t n2 = run_layout(ds, DP, SP, st.consumed, STEPS - STOP, part + n1, NULL);
    qsort(part, n1 + n2, sizeof *part, cmp_tuple);
    CHECK(n1 + n2 == n_full && memcmp(part, full, n_full * sizeof *full) == 0, "resume at step %d = uninterrupted run", STOP);
    // Batch by batch on one rank too: the same rows in the same order.
    DataOptions o = opts(DP, 1, SP, 1, 0);
    DataSource *a = data_open(ds, &o, false), *c = data_open(ds, &o, false);
    Batch x = batch_alloc(B, T / SP), y = batch_alloc(B, T / SP);
    for (int s = 0; s < STOP; s++) data_next(a, &x);
    DataState mid = data_state(a);
    data_close(a);
    a = data_open(ds, &o, false);
    data_restore(a, mid);
    for (int s = 0; s < STOP; s++) data_next(c, &y);
    int diff = 0;
    for (int s = STOP; s < STEPS; s++) {
        data_next(a, &x);
        data_next(c, &y);
        diff += memcmp(x.tokens, y.tokens, sizeof(int32_t) * B * x.T) != 0 || memcmp(x.sample, y.sample, sizeof(int64_t) * B) != 0;
    }
    CHECK(diff == 0, "%d resumed batches differ on rank (1, 1)", diff);
    // Resume onto another layout (2x2 -> 1x1): the following global samples are the same.
    size_t n3 = run_layout(ds, 1, 1, st.consumed, (STEPS - STOP) * DP, part, NULL);
    size_t skip = (size_t)STOP * B * DP * T;   // tuples of the first STOP steps, sorted first by sample number
    CHECK(n3 == n_full - skip && memcmp(part, full + skip, n3 * sizeof *full) == 0, "resume 2x2 -> 1x1 continues the same samples");
    batch_free(&x);
    batch_free(&y);
    data_close(a);
    data_close(c);
    free(full);
    free(part);
}

// A val split is used as is; without one, the tail of train is held out and train leaves it out.
static void test_splits(const char *ds_val, const char *ds_noval) {
    DataOptions o = opts(1, 0, 1, 0, 0.1);
    DataSource *v = data_open(ds_val, &o, true);
    Batch b = batch_alloc(B, T);
    data_next(v, &b);
    int bad = 0;
    for (int i = 0; i < B * T; i++) bad += b.tokens[i] != EOS && b.tokens[i] < 50000;
    uint32_t val_stream[603];
    for (int d = 0; d < 3; d++) {
        for (int i = 0; i < 200; i++) val_stream[d * 201 + i] = 50000 + d * 200 + i;
        val_stream[d * 201 + 200] = EOS;
    }
    CHECK(bad == 0 && data_num_samples(v) == ref_starts(val_stream, 0, 603, NULL), "the val split is read (%d foreign tokens)", bad);
    data_close(v);
    DataSource *tr = data_open(ds_noval, &o, false), *va = data_open(ds_noval, &o, true);
    uint64_t cut = g_n - (uint64_t)((double)g_n * 0.1);
    CHECK(data_num_samples(tr) == ref_starts(g_stream, 0, cut, NULL) && data_num_samples(va) == ref_starts(g_stream, cut, g_n, NULL),
          "held-out tail sizes");
    int leak = 0;
    for (uint64_t s = 0; s < data_num_samples(tr); s += B) {
        data_next(tr, &b);
        for (int i = 0; i < B * T; i++) leak += b.tokens[i] != EOS && where(b.tokens[i]) >= cut;
    }
    data_next(va, &b);
    for (int i = 0; i < B * T; i++) leak += b.tokens[i] != EOS && where(b.tokens[i]) < cut;
    CHECK(leak == 0, "train and the held-out tail overlap in %d tokens", leak);
    data_close(tr);
    data_close(va);
    batch_free(&b);
}

// Bad input ends the process with a non-zero code, before any batch is handed out.
static const char *g_probe_path;
static int g_probe_seq;
static int probe(int argc, char **argv) {
    DataOptions o = opts(1, 0, 1, 0, 0);
    o.seq_len = g_probe_seq;
    DataSource *d = data_open(g_probe_path, &o, argc > 1);
    Batch b = batch_alloc(B, o.seq_len);
    for (uint64_t s = 0; s < data_num_samples(d); s += B) data_next(d, &b);
    data_close(d);
    batch_free(&b);
    return 0;
}

static void test_bad(const char *dir, const char *ds) {
    g_probe_path = ds;
    g_probe_seq = T;
    CHECK(run_cmd(probe, "probe", NULL) == 0, "probe reads a good dataset");
    g_probe_seq = 30000;
    CHECK(run_cmd(probe, "probe", NULL) == 2, "seq-len longer than the dataset is a usage error (exit 2)");
    g_probe_seq = T;
    CHECK(run_cmd(probe, "probe", "val", NULL) == 2, "validation without a val split and val_fraction 0 is a usage error (exit 2)");
    // Damage one block of a copy: the loader stops with an error instead of delivering it.
    char *copy = path_join(dir, "damaged"), cmd[1024];
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", ds, copy);
    CHECK(system(cmd) == 0, "copy dataset");
    char *shard = path_join(copy, "train_000003.rgs");
    size_t n;
    unsigned char *bytes = read_bytes(shard, &n);
    bytes[300] ^= 0xff;   // inside block 0 (blocks start at byte 256)
    write_bytes(shard, bytes, n);
    g_probe_path = copy;
    CHECK(run_cmd(probe, "probe", NULL) == 2, "a damaged block stops the loader (bad input: exit 2)");
    g_probe_path = path_join(dir, "nope");
    CHECK(run_cmd(probe, "probe", NULL) == 2, "a missing path is bad input (exit 2)");
    free(bytes);
    free(shard);
    free(copy);
}

// Loss weights: a target whose token has weight 0 is -1, on every dp×sp layout (the zigzag slices carry
// the mask like the targets); --loss-on all ignores the weights; a dataset without weights masks nothing.
static void test_masks(const char *dsw, uint64_t n_samples) {
    const int layouts[][2] = {{1, 1}, {2, 1}, {1, 2}, {2, 2}, {1, 4}};
    const int S = 16;
    uint64_t from = n_samples - 4;           // crossing an epoch boundary
    Tuple *ref = malloc(sizeof(Tuple) * S * T), *got = malloc(sizeof(Tuple) * S * T);
    size_t n_ref = run_layout(dsw, 1, 1, from, S / B, ref, NULL);
    int bad = 0, masked = 0;
    for (size_t i = 0; i < n_ref; i += T) {
        uint64_t start = UINT64_MAX;
        for (int t = 0; t < T && start == UINT64_MAX; t++)
            if (ref[i + t].tok != EOS) start = where(ref[i + t].tok) - t;
        for (int t = 0; t < T; t++) {
            uint32_t next = g_stream[start + t + 1];
            bad += ref[i + t].tgt != (weight_of(next) ? (int32_t)next : -1);
            masked += ref[i + t].tgt < 0;
        }
    }
    CHECK(bad == 0 && masked > 0 && masked < (int)n_ref, "targets of weight-0 tokens are -1 (%d of %zu masked, %d wrong)", masked, n_ref, bad);
    for (size_t l = 1; l < sizeof layouts / sizeof layouts[0]; l++) {
        int dp = layouts[l][0], sp = layouts[l][1];
        size_t n = run_layout(dsw, dp, sp, from, S / (B * dp), got, NULL);
        CHECK(n == n_ref && memcmp(got, ref, n * sizeof *got) == 0, "masked targets: dp %d x sp %d = 1x1", dp, sp);
    }
    g_loss_on_all = true;
    run_layout(dsw, 1, 2, from, S / B, got, NULL);
    g_loss_on_all = false;
    masked = 0;
    for (size_t i = 0; i < n_ref; i++) masked += got[i].tgt < 0;
    CHECK(masked == 0, "--loss-on all: no target masked (%d)", masked);
    DataOptions o = opts(1, 0, 1, 0, 0);
    DataSource *d = data_open(dsw, &o, false);
    CHECK(data_masks_targets(d), "a weighted dataset masks targets");
    data_close(d);
    free(ref);
    free(got);
}

int main(void) {
    char *dir = temp_dir("loader"), *ds = path_join(dir, "ds"), *ds_val = path_join(dir, "ds_val");
    char *dsw = path_join(dir, "ds_weighted");
    make_dataset(ds_val, true, false);
    free(g_stream);
    make_dataset(dsw, false, true);
    free(g_stream);
    make_dataset(ds, false, false);
    g_starts = malloc(g_n * sizeof *g_starts);
    g_n_starts = ref_starts(g_stream, 0, g_n, g_starts);
    DataOptions o = opts(1, 0, 1, 0, 0);
    DataSource *d = data_open(ds, &o, false);
    uint64_t n_samples = data_num_samples(d);
    CHECK(data_vocab_size(d) == VOCAB, "vocab size from the manifest");
    CHECK(!data_masks_targets(d), "a dataset without weights masks nothing");
    data_close(d);
    test_layouts(ds, n_samples);
    test_epochs(ds);
    test_no_shuffle(ds);
    test_resume(ds);
    test_splits(ds_val, ds);
    test_bad(dir, ds);
    test_masks(dsw, n_samples);
    rm_rf(dir);
    free(g_stream);
    free(g_starts);
    free(dir), free(ds), free(ds_val), free(dsw);
    return test_finish();
}
