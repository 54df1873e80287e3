// cli/eval.c — `ringgpt eval`: loss and perplexity of a checkpoint on data, over the ring with --sp; --dump-logits for export checks.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attention/ring.h"
#include "checkpoints/fsio.h"
#include "checkpoints/load.h"
#include "checkpoints/model_tokenizer.h"
#include "checkpoints/train_ckpt.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/common.h"
#include "data/tokenizer.h"

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

static void dump_logits(GPT *m, const Batch *b, const char *dir) {
    make_dirs(dir);
    size_t N = (size_t)b->B * b->T, V = (size_t)m->cfg.vocab_size;
    float *logits = xmalloc(N * V * sizeof(float), "logits");
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

static const ArgCommand EVAL_CMD = {
    "eval", "ringgpt eval CKPT --data FILE|DIR [flags]   (mpiexec -np dp·sp ringgpt eval ... --sp S for the ring)",
    "Loss and perplexity of a checkpoint (a step directory, a training --out directory or an HF Llama\n"
    "directory) on the first --batches batches of a split (or all of it), in the order training would see them.\n"
    "Over MPI, --sp ranks split each sequence (ring attention) and the dp = ranks / sp groups split the\n"
    "batches: the same samples and the same loss as one rank.\n"
    "--dump-logits DIR also writes the first batch's tokens and logits as .npy files (one rank only)."};

// --batches N|all against the split's size: a request beyond it is refused (it would wrap around into
// samples already counted). Returns the full batches to run; *rest gets the samples of a last, partial one.
static int eval_batches(const char *arg, uint64_t samples, int batch, const char *split, const char *data, uint64_t *rest) {
    uint64_t full = samples / (uint64_t)batch;
    *rest = 0;
    if (strcmp(arg, "all") == 0) {
        *rest = samples % (uint64_t)batch;
        return (int)full;
    }
    char *end;
    long n = strtol(arg, &end, 10);
    if (*end || end == arg || n < 1) fail_usage("--batches must be a positive count or all (got '%s')", arg);
    if ((uint64_t)n > full)
        fail_usage("--batches %ld needs %ld samples but the %s split of %s holds %" PRIu64 " (%" PRIu64 " batches of %d); use "
                   "--batches all or at most %" PRIu64, n, n * batch, split, data, samples, full, batch, full);
    return (int)n;
}

// What eval takes from the run that trained a checkpoint (its OUT/config.json) unless given: attention masked per
// document and the loss on every target or on the data's weighted ones. Without a config (an HF import): the defaults.
static const char *const RUN_FLAGS[] = {"--doc-mask", "--loss-on", NULL};

// Adds the loss sum and target count of one batch.
static void eval_batch(GPT *m, DataSource *d, Batch *b, double *sum, double *count) {
    data_next(d, b);
    *sum += gpt_forward(m, b, 0, false, NULL);
    for (int k = 0; k < b->B * b->T; k++) *count += b->targets[k] >= 0;
}

int cmd_eval(int argc, char **argv) {
    comm_init(&argc, &argv);   // MPI when launched by mpiexec, else a one-rank world
    const char *data = NULL, *split = "val", *dump = NULL, *batches_arg = "4", *loss_on = "masked", *pos[1];
    int seq_len = 0, batch = 4, threads = 0, loss_chunk = 256, sp = 1;   // threads: resolved by cli_infer_grid when not given
    bool doc_mask = false;
    int64_t seed = -1;
    float rope_theta = 0, val_fraction = 0.1f;
    ArgSpec specs[] = {
        {"--data", ARG_STRING, &data, "evaluation data: a text file or a dataset directory"},
        {"--split", ARG_STRING, &split, "train or val (a text file's val part is its last --val-fraction)"},
        {"--val-fraction", ARG_FLOAT, &val_fraction, "held-out tail of a text file (as in train)"},
        {"--seq-len", ARG_INT, &seq_len, "tokens per sequence", .dflt = "the checkpoint's"},
        {"--batch", ARG_INT, &batch, "sequences per batch"},
        {"--batches", ARG_STRING, &batches_arg, "batches to evaluate (a multiple of dp: the dp groups take turns), or all: the whole split"},
        {"--seed", ARG_I64, &seed, "data order seed", .dflt = "the checkpoint's"},
        {"--rope-theta", ARG_FLOAT, &rope_theta, "RoPE base (context extension)", .dflt = "the checkpoint's"},
        {"--loss-chunk", ARG_INT, &loss_chunk, "rows per chunk of the fused LM head + loss"},
        {"--threads", ARG_INT, &threads, "CPU threads (OpenMP and BLAS; ranks on one node share the cores)", .dflt = "all cores"},
        {"--sp", ARG_INT, &sp, "ring size: ranks that split one sequence (mpiexec -np dp·sp)"},
        {"--doc-mask", ARG_BOOL, &doc_mask, "attention stays inside each document of a window, as train --doc-mask", .dflt = "the training run's"},
        {"--loss-on", ARG_STRING, &loss_on, "masked: the targets the data's loss weights select; all: every target (as train --loss-on)",
         .dflt = "the training run's"},
        {"--dump-logits", ARG_STRING, &dump, "write tokens.npy, targets.npy, logits.npy of the first batch to DIR"},
    };
    int n = sizeof specs / sizeof specs[0];
    if (args_parse(&EVAL_CMD, specs, n, argc, argv, pos, 1) != 1) fail_usage("eval needs a checkpoint: ringgpt eval CKPT --data FILE");
    if (!data) fail_usage("--data is required (see `ringgpt eval --help`)");
    if (access(data, R_OK) != 0) fail_usage("--data %s: cannot open; check the path", data);
    if (strcmp(split, "train") != 0 && strcmp(split, "val") != 0) fail_usage("--split must be train or val (got '%s')", split);
    if (batch < 1 || loss_chunk < 1) fail_usage("--batch and --loss-chunk must be positive (got %d and %d)", batch, loss_chunk);
    if (seq_len < 0) fail_usage("--seq-len must be positive (got %d)", seq_len);
    char run_config[4200];
    if (ckpt_run_config(pos[0], run_config, sizeof run_config)) args_apply_json_only(&EVAL_CMD, specs, n, run_config, RUN_FLAGS);
    if (strcmp(loss_on, "masked") && strcmp(loss_on, "all")) fail_usage("--loss-on must be masked or all, not '%s'", loss_on);
    CommGrid g = cli_infer_grid(sp, !args_seen(specs, n, "--threads"), &threads);
    if (dump && g.world_size > 1) comm_fail_usage_all("--dump-logits runs on one rank; drop mpiexec or --dump-logits");
    if (dump) make_dirs(dump);   // an output that cannot be written is refused before the model is read
    cpu_threads(threads);
    GPT m;
    CkptState s;
    char used[4200];
    load_model(pos[0], &m, rope_theta, &s, used, sizeof used);
    load_report("eval", pos[0], used, &s, stdout);
    m.loss_chunk = loss_chunk;
    m.doc_mask = doc_mask;
    bool loss_on_all = !strcmp(loss_on, "all");
    if (seq_len <= 0) seq_len = s.run.seq_len > 0 ? s.run.seq_len : 256;
    if (seed < 0) seed = s.seed ? s.seed : 1337;
    if (sp > 1 && seq_len % (2 * sp) != 0)
        comm_fail_usage_all("--seq-len %d is not divisible by 2·sp = %d (the zigzag layout cuts each sequence into 2·sp equal"
                            " chunks); use e.g. --seq-len %d", seq_len, 2 * sp, seq_len < 2 * sp ? 2 * sp : seq_len / (2 * sp) * (2 * sp));
    if (sp > 1) m.ring = ring_create(g.ring, m.be, true);   // attention spans the sp ranks
    DataOptions o = {.seq_len = seq_len, .batch = batch, .seed = (uint64_t)seed, .dp = g.dp, .dp_index = g.dp_index,
                     .sp = sp, .sp_index = g.sp_index, .val_fraction = val_fraction, .loss_on_all = loss_on_all};
    DataSource *d = data_open(data, &o, strcmp(split, "val") == 0);
    Tokenizer tok;
    model_tokenizer(used, &m.cfg, &s, &tok);
    model_check_data(pos[0], &tok, m.cfg.vocab_size, data, data_tokenizer(d));   // ids past the model's rows would read out of bounds
    tokenizer_free(&tok);
    uint64_t rest;   // --batches all: samples past the last round of full batches, evaluated one by one
    int batches = eval_batches(batches_arg, data_num_samples(d), batch, split, data, &rest);
    if (strcmp(batches_arg, "all") == 0) rest += (uint64_t)(batches % g.dp) * batch, batches -= batches % g.dp;
    else if (batches % g.dp != 0)
        comm_fail_usage_all("--batches %d is not a multiple of dp = %d (ranks / sp): the dp groups take the batches in turn;"
                            " use e.g. --batches %d", batches, g.dp, (batches / g.dp + 1) * g.dp);
    Batch b = batch_alloc(batch, seq_len / sp);   // this rank's slices of its group's batch
    double sums[2] = {0, 0};                      // loss sum, target count: this rank's part
    if (dump) {
        data_next(d, &b);
        dump_logits(&m, &b, dump);
        data_restore(d, (DataState){.seed = data_state(d).seed, .consumed = 0});
    }
    for (int i = 0; i < batches / g.dp; i++) eval_batch(&m, d, &b, &sums[0], &sums[1]);   // batch × dp global samples a call
    if (rest && g.dp_index == 0) {   // the last samples, one at a time, by the first dp group
        DataOptions one = o;
        one.batch = 1, one.dp = 1, one.dp_index = 0;
        DataSource *tail = data_open(data, &one, strcmp(split, "val") == 0);
        data_restore(tail, (DataState){.seed = data_state(d).seed, .consumed = (uint64_t)batches * batch});
        Batch b1 = batch_alloc(1, seq_len / sp);
        for (uint64_t i = 0; i < rest; i++) eval_batch(&m, tail, &b1, &sums[0], &sums[1]);
        batch_free(&b1);
        data_close(tail);
    }
    comm_allreduce(g.world, sums, 2, COMM_F64, COMM_SUM, "eval loss sum");
    if (sums[1] == 0)
        comm_fail_usage_all("--data %s: the data's loss weights select no target in the %d evaluated batches; use --loss-on all or "
                            "more --batches", data, batches);
    double loss = sums[0] / sums[1], count = sums[1];
    log_info("eval: loss %.6f  perplexity %.4f  over %.0f tokens (%d batches of %d x %d%s, %s split%s, seed %" PRId64 ", %dx%d ranks)\n",
             loss, exp(loss), count, batches, batch, seq_len, rest ? " + the last samples one by one" : "", split,
             strcmp(batches_arg, "all") == 0 ? ", all of it" : "", seed, g.dp, sp);
    batch_free(&b);
    data_close(d);
    ring_free(m.ring);
    m.ring = NULL;
    gpt_free(&m);
    comm_grid_free(&g);
    comm_finalize();
    return 0;
}
