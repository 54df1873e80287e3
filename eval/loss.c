// eval/loss.c — loss evaluation over dp × sp: the batches a split holds, their loss sums across the ranks, the first batch's logits for export checks.
#include "eval/loss.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/fsio.h"
#include "core/args.h"
#include "core/common.h"
#include "data/source.h"
#include "tokenizer/tokenizer.h"

// A little-endian .npy file (version 1.0) of a C-order array.
static void write_npy(const char *path, const char *descr, const int64_t *shape, int ndim, const void *data, size_t bytes) {
    char header[256], dims[128] = "";
    for (int i = 0; i < ndim; i++) snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%" PRId64 ",%s", shape[i], i + 1 < ndim ? " " : "");
    int n = snprintf(header, sizeof header, "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, dims);
    int total = (10 + n + 1 + 63) / 64 * 64;   // magic(6) version(2) len(2) + header + '\n', padded to 64
    memset(header + n, ' ', (size_t)(total - 10 - n - 1));
    header[total - 10 - 1] = '\n';
    uint16_t hl = (uint16_t)(total - 10);
    FILE *f = xfopen(path, "wb");
    xfwrite("\x93NUMPY\x01\x00", 8, f, path);
    xfwrite(&hl, 2, f, path);
    xfwrite(header, hl, f, path);
    xfwrite(data, bytes, f, path);
    xfclose(f, path);
}

// The batch's tokens (B, T), targets (B, T) and logits (B, T, V) into dir.
static void dump_logits(GPT *m, const Batch *b, const char *dir) {
    make_dirs(dir);
    size_t N = (size_t)b->B * b->T, V = (size_t)m->cfg.vocab_size;
    float *logits = xmalloc(N * V * sizeof(float), "logits");   // (B, T, V)
    gpt_logits(m, b, logits);
    char path[4200];
    int64_t shape[3] = {b->B, b->T, (int64_t)V};
    fs_join(path, sizeof path, dir, "tokens.npy");
    write_npy(path, "<i4", shape, 2, b->tokens, N * sizeof(int32_t));
    fs_join(path, sizeof path, dir, "targets.npy");
    write_npy(path, "<i4", shape, 2, b->targets, N * sizeof(int32_t));
    fs_join(path, sizeof path, dir, "logits.npy");
    write_npy(path, "<f4", shape, 3, logits, N * V * sizeof(float));
    free(logits);
    log_info("logits of the first batch (%d x %d x %zu) in %s/logits.npy, tokens in %s/tokens.npy\n", b->B, b->T, V, dir, dir);
}

// e->batches against the split's size: a request beyond it is refused (it would wrap around into samples already
// counted). r gets the full batches to run (a multiple of dp) and the samples of a last, partial round; 0 or -1 with why.
static int count_batches(const LossEval *e, uint64_t samples, int dp, LossResult *r, char *why, size_t n) {
    uint64_t full = samples / (uint64_t)e->batch;
    if (strcmp(e->batches, "all") == 0) {
        r->batches = (int)full - (int)(full % (uint64_t)dp);
        r->rest = samples % (uint64_t)e->batch + (full % (uint64_t)dp) * (uint64_t)e->batch;
        return 0;
    }
    int64_t want = 0;   // a count as the integer flags take it (4K = 4096)
    const char *split = e->val ? "val" : "train";
    if (!args_parse_int(e->batches, 1, INT32_MAX, &want))
        snprintf(why, n, "--batches must be a positive count or all (got '%s'; a count may end in K or M: 4K)",
                 e->batches);
    else if ((uint64_t)want > full)
        snprintf(why, n, "--batches %" PRId64 " needs %" PRId64 " samples but the %s split of %s holds %" PRIu64 " (%" PRIu64
                 " batches of %d); use --batches all or at most %" PRIu64, want, want * e->batch, split, e->data, samples, full,
                 e->batch, full);
    else if (want % dp != 0)
        snprintf(why, n, "--batches %" PRId64 " is not a multiple of dp = %d (ranks / sp): the dp groups take the batches in "
                 "turn; use e.g. --batches %" PRId64, want, dp, (want / dp + 1) * dp);
    else {
        r->batches = (int)want, r->rest = 0;
        return 0;
    }
    return -1;
}

// Adds the loss sum and target count of one batch.
static void eval_batch(GPT *m, DataSource *d, Batch *b, double *sum, double *count) {
    data_next(d, b);
    *sum += gpt_forward(m, b, 0, false, NULL);
    *count += (double)batch_count_targets(b);
}

// The samples after r->batches full batches, one at a time, by the first dp group.
static void eval_rest(GPT *m, const LossEval *e, const DataOptions *o, uint64_t seed, const LossResult *r, double *sums) {
    DataOptions one = *o;
    one.batch = 1, one.dp = 1, one.dp_index = 0;
    DataSource *tail = data_open(e->data, &one, e->val);
    data_restore(tail, (DataState){.seed = seed, .consumed = (uint64_t)r->batches * e->batch});
    Batch b1 = batch_alloc(1, e->seq_len / o->sp);   // (1, T / sp)
    for (uint64_t i = 0; i < r->rest; i++) eval_batch(m, tail, &b1, &sums[0], &sums[1]);
    batch_free(&b1);
    data_close(tail);
}

// The loss sum and target count of this rank's part (sums[0], sums[1]) over d, whose batches r counted.
static void eval_split(GPT *m, const LossEval *e, const CommGrid *cg, const DataOptions *o, DataSource *d, const LossResult *r,
                       double *sums) {
    Batch b = batch_alloc(e->batch, e->seq_len / cg->sp);   // (B, T / sp) this rank's slices of its group's batch
    if (e->dump_logits) {
        data_next(d, &b);
        dump_logits(m, &b, e->dump_logits);
        data_restore(d, (DataState){.seed = data_state(d).seed, .consumed = 0});
    }
    for (int i = 0; i < r->batches / cg->dp; i++) eval_batch(m, d, &b, &sums[0], &sums[1]);   // batch × dp global samples a call
    if (r->rest && cg->dp_index == 0) eval_rest(m, e, o, data_state(d).seed, r, sums);
    batch_free(&b);
}

// Opens the data for cg's rank, checks it against the model's tokenizer, counts and evaluates its batches.
static int eval_data(GPT *m, const LossEval *e, const CommGrid *cg, LossResult *r, char *why, size_t n) {
    DataOptions o = {.seq_len = e->seq_len, .batch = e->batch, .seed = e->seed, .dp = cg->dp, .dp_index = cg->dp_index,
                     .sp = cg->sp, .sp_index = cg->sp_index, .val_fraction = e->val_fraction, .loss_on_all = e->loss_on_all};
    DataSource *d = data_open(e->data, &o, e->val);
    model_check_data(e->ckpt, e->tok, m->cfg.vocab_size, e->data, data_tokenizer(d));   // ids past the model's rows would read out of bounds
    int rc = count_batches(e, data_num_samples(d), cg->dp, r, why, n);
    double sums[2] = {0, 0};   // loss sum, target count: this rank's part
    if (rc == 0) eval_split(m, e, cg, &o, d, r, sums);
    data_close(d);
    if (rc != 0) return -1;
    comm_allreduce(cg->world, sums, 2, COMM_F64, COMM_SUM, "eval loss sum");
    if (sums[1] == 0) {
        snprintf(why, n, "--data %s: the data's loss weights select no target in the %d evaluated batches; use --loss-on all or "
                 "more --batches", e->data, r->batches);
        return -1;
    }
    r->loss = sums[0] / sums[1], r->tokens = sums[1];
    return 0;
}

int loss_eval(GPT *m, const LossEval *e, const CommGrid *cg, LossResult *r, char *why, size_t n) {
    int sp = cg->sp, T = e->seq_len;
    if (e->dump_logits && cg->world_size > 1) {   // one rank's whole batch: every rank writing the files would clash
        snprintf(why, n, "--dump-logits runs on one rank; drop mpiexec or --dump-logits");
        return -1;
    }
    if (sp > 1 && T % (2 * sp) != 0) {
        snprintf(why, n, "--seq-len %d is not divisible by 2·sp = %d (the zigzag layout cuts each sequence into 2·sp equal"
                 " chunks); use e.g. --seq-len %d", T, 2 * sp, T < 2 * sp ? 2 * sp : T / (2 * sp) * (2 * sp));
        return -1;
    }
    gpt_set_cp(m, cg->ring, &(CpConfig){.mode = CP_RING, .overlap = true});   // attention spans the sp ranks
    int rc = eval_data(m, e, cg, r, why, n);
    gpt_set_cp(m, NULL, NULL);
    return rc;
}
