// cli/train.c — `ringgpt train`: the flags (command line, --config, a saved run's config.json), then the run (train/train.c).
#include <stdlib.h>
#include <string.h>

#include "checkpoints/train_ckpt.h"
#include "cli/commands.h"
#include "cli/train_config.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/common.h"
#include "train/train.h"

// --attn sm90 exists only in a -DRINGGPT_SM90_KERNELS=ON build (docs/gpu.md): --help offers what the build has.
#ifdef RINGGPT_HAVE_SM90
#define ATTN_SM90_HELP "; or sm90 (the opt-in Hopper kernels, hd 64/128)"
#else
#define ATTN_SM90_HELP ""
#endif

static const ArgCommand TRAIN_CMD = {
    "train", "ringgpt train --data FILE.txt|DIR [flags]",
    "Trains a Llama-style model (CPU or GPU, one rank or a ring under mpirun/srun). A text file is read\n"
    "with the byte-level tokenizer (the last --val-fraction is held out for validation unless --val-data\n"
    "is given). --config FILE gives flags as JSON; every run writes the resolved flags to OUT/config.json,\n"
    "which --resume and --init-from read back, so neither needs the flags again. Writes OUT/metrics.jsonl\n"
    "(one JSON object per step); scripts/plot_metrics.py plots it. A run directory belongs to one run: a new run\n"
    "into an --out that holds another exits 2 (--out-exists move moves the old one aside), and two processes\n"
    "never write one --out at once. SIGINT, SIGTERM or SIGUSR1 (on any rank) stop the run after the current step\n"
    "with a checkpoint and exit 75; `--resume` continues it with the same losses, bit for bit. A second SIGINT stops at once."};

// The model-shape flags, apart from the preset they override (0: not given).
typedef struct {
    int layers, dim, heads, kv_heads, ffn;
    float rope_theta;
    int rope_ramp;              // --rope-theta-ramp and --rope-theta-from (the model's RopeRamp)
    float rope_from;
    const char *rope_scaling;   // --rope-scaling text (model/rope.h rope_scaling_parse)
} ShapeFlags;

enum { TRAIN_MAX_FLAGS = 80 };

// train's flag table, its values written into t and sh; returns the count (at most TRAIN_MAX_FLAGS).
static int train_flags(TrainConfig *t, ShapeFlags *sh, ArgSpec *out) {
    ArgSpec specs[] = {
        ARG_GROUP("the run"),
        {"--config", ARG_STRING, &t->config, "flags as a JSON object {\"seq-len\": 1024, ...}; the command line overrides it"},
        {"--out", ARG_STRING, &t->out, "run directory (config.json, metrics.jsonl, step_*/); a new run needs one that holds no other run"},
        {"--out-exists", ARG_STRING, &t->out_exists, "a new run into an --out that holds another run: refuse (exit 2), or move "
                                                     "the old run aside to OUT.old1, OUT.old2, ... (never deleted)"},
        {"--resume", ARG_STRING, &t->resume, "continue from the newest valid checkpoint in --out (bare), `auto` (if any), or PATH "
                                             "(an older step of --out is refused while a newer valid one exists: give a new --out)"},
        {"--init-from", ARG_STRING, &t->init_from, "start a new run from the weights (and architecture) of a checkpoint or HF Llama directory"},
        {"--ckpt-every", ARG_INT, &t->ckpt_every, "checkpoint every N steps and at the end (0 = only at the end, -1 = never)"},
        {"--keep", ARG_INT, &t->keep, "keep the newest K checkpoints (0 = all)"},
        ARG_GROUP("data"),
        {"--data", ARG_STRING, &t->data, "training data: a text file or a dataset directory (ringgpt prepare)"},
        {"--val-data", ARG_STRING, &t->val_data, "validation data", .dflt = "the held-out tail of --data"},
        {"--val-fraction", ARG_FLOAT, &t->val_fraction, "fraction of a text file held out for validation"},
        {"--seq-len", ARG_INT, &t->seq_len, "tokens per sequence T"},
        {"--batch", ARG_INT, &t->batch, "sequences per micro-step B (per data-parallel group)"},
        {"--grad-accum", ARG_INT, &t->grad_accum, "micro-steps per optimizer step"},
        {"--no-shuffle", ARG_BOOL, &t->no_shuffle, "read samples in stream order every epoch (no shuffle)"},
        {"--loss-on", ARG_STRING, &t->loss_on, "masked: only targets the data's loss weights select count (data without weights: all); all: every target"},
        {"--doc-mask", ARG_BOOL, &t->doc_mask, "attention stays inside each document of a packed window (documents end at EOS)"},
        ARG_GROUP("model (a preset, each figure overridable)"),
        {"--model", ARG_STRING, &t->model, "preset (its tied head too; the vocab is the data's): " CONFIG_PRESET_NAMES},
        {"--layers", ARG_INT, &sh->layers, "layer count", .dflt = "preset"},
        {"--dim", ARG_INT, &sh->dim, "model width", .dflt = "preset"},
        {"--heads", ARG_INT, &sh->heads, "query head count", .dflt = "preset"},
        {"--kv-heads", ARG_INT, &sh->kv_heads, "key/value head count (GQA; divides --heads)", .dflt = "preset"},
        {"--ffn-dim", ARG_INT, &sh->ffn, "SwiGLU hidden width", .dflt = "preset"},
        {"--tie-embeddings", ARG_BOOL, &t->tie_embeddings, "share the token embedding with the LM head (=false: untie)",
         .dflt = "preset"},
        {"--rope-theta", ARG_FLOAT, &sh->rope_theta, "RoPE base", .dflt = "preset"},
        {"--rope-theta-ramp", ARG_INT, &sh->rope_ramp, "raise the RoPE base geometrically from --rope-theta-from to "
                                                         "--rope-theta over the first N steps (a gentle base step; 0 = off)"},
        {"--rope-theta-from", ARG_FLOAT, &sh->rope_from, "the base --rope-theta-ramp starts from",
         .dflt = "the --init-from source's base"},
        {"--rope-scaling", ARG_STRING, &sh->rope_scaling, "RoPE scaling (HF's rope_scaling) for a context extension: none, or "
                                                          "TYPE:FACTOR[:ORIG][:KEY=VALUE,...], TYPE linear, dynamic, yarn or "
                                                          "llama3, ORIG the context the model was trained at, KEY an HF field "
                                                          "(e.g. yarn:4:2048, llama3:32:8192:low_freq_factor=1,high_freq_factor=4)",
         .dflt = "the --init-from source's, else none"},
        ARG_GROUP("optimisation"),
        {"--steps", ARG_INT, &t->steps, "optimizer steps"},
        {"--lr", ARG_FLOAT, &t->lr, "peak learning rate"},
        {"--min-lr", ARG_FLOAT, &t->min_lr, "final learning rate of the cosine schedule (--lr / 10 where --lr is below "
                                            "it and it is not on the command line)"},
        {"--warmup", ARG_INT, &t->warmup, "linear warmup steps"},
        {"--schedule", ARG_STRING, &t->schedule, "cosine or constant (after warmup)"},
        {"--weight-decay", ARG_FLOAT, &t->weight_decay, "AdamW decoupled weight decay (2-D weights only)"},
        {"--beta1", ARG_FLOAT, &t->beta1, "AdamW beta1"},
        {"--beta2", ARG_FLOAT, &t->beta2, "AdamW beta2"},
        {"--clip", ARG_FLOAT, &t->clip, "global gradient-norm clip (0 = off)"},
        {"--seed", ARG_I64, &t->seed, "seed of the initial weights and of the data order"},
        {"--stop-loss", ARG_FLOAT, &t->stop_loss, "end the run after the step where the mean training loss of the last "
                                                  "--stop-window steps is at most this, with a checkpoint there (--steps "
                                                  "stays the cap and the schedule's length; 0 = off)"},
        {"--stop-window", ARG_INT, &t->stop_window, "steps in the --stop-loss mean (a resumed run fills it again)"},
        ARG_GROUP("logging"),
        {"--log-every", ARG_INT, &t->log_every, "print a progress line every N steps"},
        {"--eval-every", ARG_INT, &t->eval_every, "validation loss every N steps (0 = only at the end)"},
        {"--eval-batches", ARG_INT, &t->eval_batches, "batches per validation"},
        ARG_GROUP("machine and memory"),
        {"--device", ARG_STRING, &t->device, "cpu, cuda, or auto (cuda when this build has CUDA and a GPU is visible)",
         .dflt = "$RINGGPT_DEVICE, else auto"},
        {"--threads", ARG_INT, &t->threads, "CPU threads (OpenMP and BLAS; ranks on one node share the cores; --resume "
                                            "takes the run's)", .dflt = "free cores"},
        {"--recompute", ARG_STRING, &t->recompute, "activations kept for the backward: none, mlp (recompute the MLP's) or "
                                                   "full (keep x, O, LSE per layer; attention never re-runs)"},
        {"--shard", ARG_STRING, &t->shard, "model state split over every rank of the job (dp x sp): none; optim (AdamW "
                                           "moments, ZeRO-1); grads (and gradients, reduce-scattered, ZeRO-2); params (and "
                                           "weights, each unit gathered around its forward and backward, ZeRO-3/FSDP)"},
        {"--mem-budget", ARG_FLOAT, &t->mem_budget, "memory per rank in MiB the plan must fit", .dflt = "the available memory"},
        {"--loss-chunk", ARG_INT, &t->loss_chunk, "rows per chunk of the fused LM head + loss"},
        {"--peak-tflops", ARG_FLOAT, &t->peak_tflops, "dense bf16 peak per GPU for MFU", .dflt = "a table of known GPUs"},
        ARG_GROUP("ranks and the ring"),
        {"--sp", ARG_INT, &t->sp, "ring size: ranks that split one sequence (mpirun -np dp·sp)"},
        {"--ring-overlap", ARG_BOOL, &t->ring_overlap, "start each KV hop before computing the block (=false: wait for it first,"
                                                        " the serial baseline of the overlap measurement)"},
        {"--comm-timeout", ARG_FLOAT, &t->comm_timeout, "seconds a rank may wait for another before the job aborts"},
        {"--comm-progress", ARG_STRING, &t->comm_progress, "what moves MPI transfers while the ranks compute, so ring hops "
                                                           "overlap the blocks: compute (the attention loops, between tiles), "
                                                           "thread (a progress thread), off (only MPI calls), auto (compute "
                                                           "with --device cpu, thread with --device cuda or --shard grads|params)"},
        {"--straggler", ARG_FLOAT, &t->straggler, "the progress line names a rank whose compute exceeds the median by this fraction"
                                                   " (0 = off)"},
        {"--straggler-every", ARG_INT, &t->straggler_every, "steps per straggler check (compute summed over them)"},
        ARG_GROUP("CUDA (docs/gpu.md)"),
        {"--matmul", ARG_STRING, &t->matmul, "CUDA matmul operands: tf32, bf16 or fp32",
         .dflt = "bf16 with bf16 activations (the GPU default), else tf32"},
        {"--attn", ARG_STRING, &t->attn, "CUDA attention per ring block: flash (sm_80 mma.sync) or cudnn (cuDNN fused SDPA, "
                                         "hd 64/128)" ATTN_SM90_HELP, .dflt = "cudnn where libcudnn loads, else flash"},
        {"--activations", ARG_STRING, &t->activations, "CUDA storage of the activations and ring K/V packets: fp32 or "
                                                       "bf16 (statistics, residual stream and gradients stay fp32)",
         .dflt = "bf16 with --device cuda; fp32 with --matmul tf32 or fp32, and with --device cpu"},
        {"--comm", ARG_STRING, &t->comm, "CUDA ring and gradient exchange: auto, nccl or mpi (host staging)", .dflt = "auto"},
        {"--logits-mb", ARG_INT, &t->logits_mb, "CUDA: MiB of logits per chunk of the fused LM head (0: --loss-chunk rows)"},
    };
    int n = sizeof specs / sizeof specs[0];
    _Static_assert(sizeof specs / sizeof specs[0] <= TRAIN_MAX_FLAGS, "train's flag table outgrew TRAIN_MAX_FLAGS");
    memcpy(out, specs, sizeof specs);
    return n;
}

// The shape flags that were given, over the preset in mc (--heads alone sets --kv-heads too).
static void apply_shape(ModelConfig *mc, const ShapeFlags *sh, const ArgSpec *specs, int n) {
    if (args_seen(specs, n, "--layers")) mc->n_layer = sh->layers;
    if (args_seen(specs, n, "--dim")) mc->dim = sh->dim;
    if (args_seen(specs, n, "--heads")) mc->n_head = sh->heads;
    if (args_seen(specs, n, "--kv-heads")) mc->n_kv_head = sh->kv_heads;
    else if (args_seen(specs, n, "--heads")) mc->n_kv_head = sh->heads;
    if (args_seen(specs, n, "--ffn-dim")) mc->ffn_dim = sh->ffn;
    if (args_seen(specs, n, "--rope-theta")) mc->rope_theta = sh->rope_theta;
    if (args_seen(specs, n, "--rope-theta-ramp")) mc->rope_ramp.steps = sh->rope_ramp;
    if (args_seen(specs, n, "--rope-theta-from")) mc->rope_ramp.from = sh->rope_from;
}

// The defaults of every flag.
static TrainConfig train_defaults(void) {
    return (TrainConfig){.out = "out", .model = "small", .schedule = "cosine", .seq_len = 256, .batch = 4,
                         .grad_accum = 1, .steps = 100, .warmup = 10, .log_every = 1,
                         .eval_every = 0, .eval_batches = 4, .loss_chunk = 256, .lr = 1e-3f, .min_lr = 1e-4f,
                         .weight_decay = 0.1f, .beta1 = 0.9f, .beta2 = 0.95f, .clip = 1.0f, .val_fraction = 0.1f,
                         .seed = 1337, .dp = 1, .sp = 1, .comm_timeout = 600,
                         .loss_on = "masked", .recompute = "none", .shard = "none",
                         .device = getenv("RINGGPT_DEVICE") ? getenv("RINGGPT_DEVICE") : "auto", .ring_overlap = true,
                         .logits_mb = 512, .comm_progress = "auto", .straggler = 0.25f, .straggler_every = 10,
                         .stop_window = 100, .out_exists = "refuse"};
}

// A --config file's every value passes the checks the flags get, also where the command line overrides it: the
// resolved flags with all of the file's values in place go through train_check_config, whose errors then name the
// file. (The resolved flags themselves passed first, so what fails here is the file's.)
static void check_config_file(const TrainConfig *t) {
    TrainConfig file = *t;
    ShapeFlags sh = {0};
    ArgSpec specs[TRAIN_MAX_FLAGS];
    int n = train_flags(&file, &sh, specs);
    args_apply_json(&TRAIN_CMD, specs, n, t->config, (const char *const[]){"--config", NULL});
    apply_shape(&file.model_cfg, &sh, specs, n);
    if (args_seen(specs, n, "--rope-scaling"))   // what the text leaves out as the run has it
        rope_scaling_apply(&file.model_cfg, sh.rope_scaling, "--rope-scaling");
    char context[4300];
    snprintf(context, sizeof context, "--config %s (a value the command line overrides)", t->config);
    fail_usage_context(context);
    ModelConfig preset;
    if (!config_preset(&preset, file.model))
        fail_usage("unknown --model '%s'; choose one of %s", file.model, config_preset_names());
    if (!recompute_parse(file.recompute, &file.recompute_mode))
        fail_usage("unknown --recompute '%s'; use none, mlp or full", file.recompute);
    train_check_config(&file);
    fail_usage_context(NULL);
}

// Fills *t from argv. Model-shape flags override the preset named by --model.
static void parse_train_flags(TrainConfig *t, int argc, char **argv) {
    *t = train_defaults();
    ModelConfig *mc = &t->model_cfg;
    ShapeFlags sh = {0};
    ArgSpec specs[TRAIN_MAX_FLAGS];
    int n = train_flags(t, &sh, specs);
    const char *pos[1];
    args_parse(&TRAIN_CMD, specs, n, argc, argv, pos, 0);
    bool min_lr_given = args_seen(specs, n, "--min-lr");   // on the command line
    int saved_threads;
    ShapeGiven given = train_apply_config_files(&TRAIN_CMD, specs, n, &saved_threads);
    // --threads given, else the count a resumed run used (config.json records it), else the free cores
    bool threads_given = args_seen(specs, n, "--threads");
    if (threads_given) args_check_threads(t->threads);
    t->threads = cpu_node_threads(threads_given ? t->threads : saved_threads);
    if (!min_lr_given && t->min_lr > t->lr) {   // a low --lr (a fine-tune's 1e-5) needs no --min-lr beside it
        if (args_seen(specs, n, "--min-lr"))      // from --config or the --init-from source's run
            log_info("note: --min-lr %g (from a config file) is above --lr %g: the schedule ends at --lr / 10 = %g\n",
                     t->min_lr, t->lr, t->lr / 10);
        t->min_lr = t->lr / 10;
    }
    t->sp_inherited = !given.sp && args_seen(specs, n, "--sp");
    if (!config_preset(mc, t->model))
        fail_usage("unknown --model '%s'; choose one of %s", t->model, config_preset_names());
    apply_shape(mc, &sh, specs, n);
    if (args_seen(specs, n, "--tie-embeddings")) mc->tie_embeddings = t->tie_embeddings;   // else the preset's
    if (t->init_from && (!t->resume || strcmp(t->resume, "auto") == 0)) {
        ModelConfig src;
        t->init_vocab = train_adopt_source_shape(t->init_from, t->model, mc, given, &src);
        if (mc->rope_ramp.steps > 0 && !args_seen(specs, n, "--rope-theta-from")) mc->rope_ramp.from = src.rope_theta;
        // A changed scaling keeps what its text leaves out from the source's (its original context, a same type's fields)
        if (given.rope_scaling) rope_scaling_apply(mc, sh.rope_scaling, "--rope-scaling");
    } else if (args_seen(specs, n, "--rope-scaling")) {   // a new run, or --resume's saved config (the whole record)
        rope_scaling_parse(sh.rope_scaling, NULL, "--rope-scaling", &mc->rope_scaling);
    }
    mc->rope_ramp.to = mc->rope_theta;
    if (!recompute_parse(t->recompute, &t->recompute_mode))
        fail_usage("unknown --recompute '%s'; use none, mlp or full", t->recompute);
    if (!shard_level_parse(t->shard, &t->shard_level)) fail_usage("--shard %s: use none, optim, grads or params", t->shard);
    // The resolved flags: the shape as the model has it, so the file alone rebuilds this run.
    char scaling[256];
    rope_scaling_format(&mc->rope_scaling, scaling, sizeof scaling);
    sh = (ShapeFlags){mc->n_layer, mc->dim, mc->n_head, mc->n_kv_head, mc->ffn_dim, mc->rope_theta, mc->rope_ramp.steps,
                      mc->rope_ramp.from, scaling};
    t->tie_embeddings = mc->tie_embeddings;
    if (t->config) {
        train_check_config(t);
        check_config_file(t);
    }
    t->config_json = args_to_json(specs, n, TRAIN_NOT_SAVED);
    const char *const per_node[] = {"--threads", "--device", NULL};
    t->same_json = args_to_json(specs, n, per_node);
}

int cmd_train(int argc, char **argv) {
    comm_init(&argc, &argv);   // MPI when launched by mpirun/srun, else a one-rank world
    TrainConfig t;
    ckpt_normalize_resume_flag(argc, argv);   // a bare --resume means the newest checkpoint
    parse_train_flags(&t, argc, argv);
    int code = train_run(&t);
    free(t.config_json);
    free(t.same_json);
    comm_finalize();
    return code;
}
