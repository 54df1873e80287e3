// tests/model/test_doc_mask.c — --doc-mask: a packed window's loss and every gradient equal training each document alone, on
// one rank or around a ring of sp ranks, and the ring skips exactly the block calls the document layout predicts.
// Usage (under mpiexec -np SP, or alone for SP = 1): test_doc_mask SP.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "data/source.h"
#include "model/gpt.h"
#include "model/ops.h"

#ifdef RINGGPT_F64
static const double TOL = 1e-9;
#else
static const double TOL = 2e-5;
#endif
enum { CHUNK = 12, SEED = 5, V = 64, EOS = 63 };

// The window: T+1 random tokens with EOS closing documents of very different lengths: the first is
// exactly chunk 0 and the last exactly the last chunk (so ring steps against them are skipped), one
// spans several zigzag chunks, two are a single token.
static void make_window(int32_t *s, int T) {
    Rng r;
    rng_seed(&r, 99);
    for (int t = 0; t <= T; t++) s[t] = (int32_t)rng_below(&r, V - 1);
    int ends[] = {CHUNK - 1, T / 2, T / 2 + 1, T / 2 + 2, T - CHUNK - 1};
    for (size_t i = 0; i < sizeof ends / sizeof ends[0]; i++) s[ends[i]] = EOS;
}

static double rel_err(const real *a, const real *b, size_t n) {
    double d = 0, r = 0;
    for (size_t i = 0; i < n; i++) d += ((double)a[i] - b[i]) * ((double)a[i] - b[i]), r += (double)b[i] * b[i];
    return sqrt(d) / (sqrt(r) + 1e-30);
}

// The documents alone: each is its own sequence (positions from 0), with the window's targets.
static double train_alone(GPT *ref, const int32_t *s, int T, const Batch *full) {
    const int32_t *ds = full->doc_start;
    int nd = full->n_docs[0];
    double loss = 0;
    for (int d = 0; d < nd; d++) {
        int a = ds[d], e = d + 1 < nd ? ds[d + 1] : T, n = e - a;
        Batch b = batch_alloc(1, n);
        for (int i = 0; i < n; i++) b.tokens[i] = s[a + i], b.targets[i] = s[a + i + 1], b.pos[i] = i;
        loss += gpt_forward(ref, &b, 1.0, true, NULL);
        gpt_backward(ref, &b);
        batch_free(&b);
    }
    return loss;
}

// True when some position of the query chunks shares a document with some position of the key chunks.
static bool chunks_share(const int *doc, int c, const int *qc, int nq, const int *kc, int nk) {
    for (int a = 0; a < nq; a++)
        for (int b = 0; b < nk; b++)
            for (int i = 0; i < c; i++)
                for (int k = 0; k < c; k++)
                    if (doc[qc[a] * c + i] == doc[kc[b] * c + k]) return true;
    return false;
}

// Block calls a rank of the ring must skip: the schedule's tasks (attention/ring.c) whose rows and keys
// share no document, by brute force over global positions. Per layer, forward and backward each: against
// a block j < r, all our rows × j's early chunk; against j > r, our late chunk × each of j's chunks; the
// backward also has our late chunk × our early chunk on its own.
static long predicted_skips(const Batch *full, int sp, int r, int T, int layers) {
    int c = T / (2 * sp), nd = full->n_docs[0];
    const int32_t *ds = full->doc_start;
    int doc[4096];
    for (int p = 0, d = 0; p < T; p++) {
        while (d + 1 < nd && ds[d + 1] <= p) d++;
        doc[p] = d;
    }
    int mine[2] = {r, 2 * sp - 1 - r};
    long n = 0;
    for (int j = 0; j < sp; j++) {
        int kc[2] = {j, 2 * sp - 1 - j};
        if (j < r) n += 2 * !chunks_share(doc, c, mine, 2, kc, 1);
        for (int b = 0; b < 2 && j > r; b++) n += 2 * !chunks_share(doc, c, mine + 1, 1, kc + b, 1);
    }
    if (sp > 1) n += !chunks_share(doc, c, mine + 1, 1, mine, 1);
    return n * layers;
}

int main(int argc, char **argv) {
    comm_init(&argc, &argv);
    comm_set_timeout(120);
    int sp = argc > 1 ? atoi(argv[1]) : comm_size(comm_world());
    CommGrid grid = comm_grid(sp);
    ModelConfig cfg = {.n_layer = 2, .dim = 64, .n_head = 4, .n_kv_head = 2, .ffn_dim = 96, .vocab_size = V,
                       .rope_theta = 10000, .norm_eps = 1e-5f, .tie_embeddings = false};
    int T = 2 * sp * CHUNK;
    int32_t *s = xmalloc((size_t)(T + 1) * sizeof(int32_t), "window");
    make_window(s, T);

    GPT m, ref;
    gpt_init(&m, &cfg, &BACKEND_CPU, SEED, GPT_TRAIN);
    gpt_init(&ref, &cfg, &BACKEND_CPU, SEED, GPT_TRAIN);
    m.doc_mask = true;
    gpt_set_cp(&m, grid.ring, &(CpConfig){.mode = CP_RING, .overlap = true});
    Batch mine = batch_alloc(1, T / sp), full = batch_alloc(1, T);
    batch_put_sample(&mine, 0, s, T, EOS, (RankSlice){sp, grid.sp_index, PLACE_ZIGZAG});
    batch_put_sample(&full, 0, s, T, EOS, (RankSlice){1, 0, PLACE_ZIGZAG});
    double loss = gpt_forward(&m, &mine, 1.0, true, NULL);
    gpt_backward(&m, &mine);
    comm_allreduce(grid.world, m.grads, m.table.total, COMM_REAL, COMM_SUM, "gradients");
    comm_allreduce(grid.world, &loss, 1, COMM_F64, COMM_SUM, "loss");
    double ref_loss = train_alone(&ref, s, T, &full);

    double worst = fabs(loss - ref_loss) / fabs(ref_loss);
    const char *worst_name = "loss";
    for (int i = 0; i < ref.table.count; i++) {
        const ParamSpec *p = &ref.table.specs[i];
        double e = rel_err(m.grads + p->offset, ref.grads + p->offset, p->numel);
        if (!(e <= worst)) worst = e, worst_name = p->name;
    }
    // Without the mask the window's loss differs: the test can tell the two apart.
    GPT plain;
    gpt_init(&plain, &cfg, &BACKEND_CPU, SEED, GPT_TRAIN);
    gpt_set_cp(&plain, grid.ring, &(CpConfig){.mode = CP_RING, .overlap = true});
    double plain_loss = gpt_forward(&plain, &mine, 1.0, false, NULL);
    comm_allreduce(grid.world, &plain_loss, 1, COMM_F64, COMM_SUM, "loss");
    long skipped = attn_cp_stats(m.cp).blocks_skipped, want = predicted_skips(&full, sp, grid.sp_index, T, cfg.n_layer);
    double w = worst, bad_skips = skipped != want;
    if (skipped != want) fprintf(stderr, "rank %d: skipped %ld ring block calls, the layout predicts %ld\n", grid.rank, skipped, want);
    comm_allreduce(grid.world, &w, 1, COMM_F64, COMM_MAX, "error max");
    comm_allreduce(grid.world, &bad_skips, 1, COMM_F64, COMM_SUM, "skip check");
    bool ok = w < TOL && fabs(plain_loss - ref_loss) > 1e-2 && bad_skips == 0;
    log_info("%s sp=%d, T=%d, %d documents, %s: doc-masked loss %.9f vs documents alone %.9f (unmasked %.6f); worst rel err %.2e "
             "(%s on rank 0); rank 0 skipped %ld ring block calls, layout predicts %ld\n",
             ok ? "ok" : "FAIL", sp, T, full.n_docs[0], REAL_NAME, loss, ref_loss, plain_loss, w, worst_name, skipped, want);
    gpt_free(&plain);
    batch_free(&mine);
    batch_free(&full);
    gpt_free(&m);
    gpt_free(&ref);
    free(s);
    comm_grid_free(&grid);
    comm_finalize();
    return ok ? 0 : 1;
}
