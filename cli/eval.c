// cli/eval.c — `ringgpt eval`: its flags and defaults (the training run's), the loss line; the evaluation is eval/loss.c's.
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "checkpoints/train_ckpt.h"
#include "cli/commands.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/common.h"
#include "eval/infer.h"
#include "eval/loss.h"

static const ArgCommand EVAL_CMD = {
    "eval", "ringgpt eval CKPT --data FILE|DIR [flags]   (mpiexec -np dp·sp ringgpt eval ... --sp S for the ring)",
    "Loss and perplexity of a checkpoint (a step directory, a training --out directory or an HF Llama\n"
    "directory) on the first --batches batches of a split (or all of it), in the order training would see them.\n"
    "Over MPI, --sp ranks split each sequence (ring attention) and the dp = ranks / sp groups split the\n"
    "batches: the same samples and the same loss as one rank.\n"
    "--dump-logits DIR also writes the first batch's tokens and logits as .npy files (one rank only)."};

// What eval takes from the run that trained a checkpoint (its OUT/config.json) unless given: attention masked per
// document and the loss on every target or on the data's weighted ones. Without a config (an HF import): the defaults.
static const char *const RUN_FLAGS[] = {"--doc-mask", "--loss-on", NULL};

int cmd_eval(int argc, char **argv) {
    comm_init(&argc, &argv);   // MPI when launched by mpiexec, else a one-rank world
    const char *data = NULL, *split = "val", *dump = NULL, *batches_arg = "4", *loss_on = "masked", *pos[1];
    int seq_len = 0, batch = 4, threads = 0, loss_chunk = 256, sp = 1;   // threads: resolved by infer_open when not given
    bool doc_mask = false;
    int64_t seed = -1;
    float rope_theta = 0, val_fraction = 0.1f;
    ArgSpec specs[] = {
        ARG_GROUP("data"),
        {"--data", ARG_STRING, &data, "evaluation data: a text file or a dataset directory"},
        {"--split", ARG_STRING, &split, "train or val (data without a val split: val is its last --val-fraction, train all of it)"},
        {"--val-fraction", ARG_FLOAT, &val_fraction, "held-out tail of data without a val split, as in train (--split train: none unless given)"},
        {"--seq-len", ARG_INT, &seq_len, "tokens per sequence", .dflt = "the checkpoint's"},
        {"--batch", ARG_INT, &batch, "sequences per batch"},
        {"--batches", ARG_STRING, &batches_arg, "batches to evaluate (a multiple of dp: the dp groups take turns), or all: the whole split"},
        {"--seed", ARG_I64, &seed, "data order seed", .dflt = "the checkpoint's"},
        {"--doc-mask", ARG_BOOL, &doc_mask, "attention stays inside each document of a window, as train --doc-mask", .dflt = "the training run's"},
        {"--loss-on", ARG_STRING, &loss_on, "masked: the targets the data's loss weights select; all: every target (as train --loss-on)",
         .dflt = "the training run's"},
        ARG_GROUP("model"),
        {"--rope-theta", ARG_FLOAT, &rope_theta, "RoPE base (context extension)", .dflt = "the checkpoint's"},
        {"--loss-chunk", ARG_INT, &loss_chunk, "rows per chunk of the fused LM head + loss"},
        ARG_GROUP("machine and ranks"),
        {"--threads", ARG_INT, &threads, "CPU threads (OpenMP and BLAS; ranks on one node share the cores)", .dflt = "free cores"},
        {"--sp", ARG_INT, &sp, "ring size: ranks that split one sequence (mpiexec -np dp·sp)"},
        ARG_GROUP("output"),
        {"--dump-logits", ARG_STRING, &dump, "write tokens.npy, targets.npy, logits.npy of the first batch to DIR"},
    };
    int n = sizeof specs / sizeof specs[0];
    if (args_parse(&EVAL_CMD, specs, n, argc, argv, pos, 1) != 1) fail_usage("eval needs a checkpoint: ringgpt eval CKPT --data FILE");
    if (!data) fail_usage("--data is required (see `ringgpt eval --help`)");
    if (access(data, R_OK) != 0) fail_usage("--data %s: cannot open; check the path", data);
    if (strcmp(split, "train") != 0 && strcmp(split, "val") != 0) fail_usage("--split must be train or val (got '%s')", split);
    if (strcmp(split, "train") == 0 && !args_seen(specs, n, "--val-fraction")) val_fraction = 0;   // nothing held out: all of it
    if (batch < 1 || loss_chunk < 1) fail_usage("--batch and --loss-chunk must be positive (got %d and %d)", batch, loss_chunk);
    if (seq_len < 0) fail_usage("--seq-len must be positive (got %d)", seq_len);
    char run_config[4200];
    if (ckpt_run_config(pos[0], run_config, sizeof run_config)) args_apply_json_only(&EVAL_CMD, specs, n, run_config, RUN_FLAGS);
    if (strcmp(loss_on, "masked") && strcmp(loss_on, "all")) fail_usage("--loss-on must be masked or all, not '%s'", loss_on);
    if (args_seen(specs, n, "--seed")) args_check_seed("--seed", seed);
    if (dump && comm_size(comm_world()) > 1) comm_fail_usage_all("--dump-logits runs on one rank; drop mpiexec or --dump-logits");
    if (dump) make_dirs(dump);   // an output that cannot be written is refused before the model is read
    InferModel im;
    infer_open(&(InferOptions){"eval", pos[0], sp, threads, args_seen(specs, n, "--threads"), rope_theta, stdout}, &im);
    im.model.loss_chunk = loss_chunk;
    im.model.doc_mask = doc_mask;
    if (seq_len <= 0) seq_len = im.state.run.seq_len > 0 ? im.state.run.seq_len : 256;
    if (seed < 0) seed = im.state.seed ? im.state.seed : 1337;
    LossEval e = {.ckpt = pos[0], .tok = &im.tok, .data = data, .val = strcmp(split, "val") == 0, .val_fraction = val_fraction,
                  .seq_len = seq_len, .batch = batch, .batches = batches_arg, .seed = (uint64_t)seed,
                  .loss_on_all = strcmp(loss_on, "all") == 0, .dump_logits = dump};
    LossResult r;
    char why[4400];
    if (loss_eval(&im.model, &e, &im.grid, &r, why, sizeof why) != 0) comm_fail_usage_all("%s", why);
    log_info("eval: loss %.6f  perplexity %.4f  over %.0f token%s (%d batch%s of %d x %d%s, %s split%s, seed %" PRId64 ", %dx%d "
             "ranks)\n", r.loss, exp(r.loss), r.tokens, plural((long long)r.tokens), r.batches, r.batches == 1 ? "" : "es", batch,
             seq_len, r.rest ? " + the last samples one by one" : "", split, strcmp(batches_arg, "all") == 0 ? ", all of it" : "",
             seed, im.grid.dp, sp);
    infer_close(&im);
    comm_finalize();
    return 0;
}
