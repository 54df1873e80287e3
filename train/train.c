// train/train.c — a training run: layout, data, model, then the loop (micro-batches, clip, AdamW, eval, metrics, checkpoints).
#include "train/train.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attention/cp.h"
#include "checkpoints/model_tokenizer.h"
#include "checkpoints/rundir.h"
#include "checkpoints/train_ckpt.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/common.h"
#include "data/source.h"
#include "model/adamw.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "model/shard_comm.h"
#include "train/metrics.h"
#include "train/rank_times.h"
#include "train/schedule.h"
#include "train/stop.h"
#ifdef RINGGPT_HAVE_CUDA
#include "attention/attention_cuda.h"
#include "core/backend_cuda.h"
#endif

// --activations: the storage of the [act] activations (core/backend.h); bf16 only on a GPU.
static ActStore train_act_store(const TrainConfig *t) {
    return t->activations && !strcmp(t->activations, "bf16") ? ACT_BF16 : ACT_F32;
}

// A step reads its --grad-accum micro-batches at once (tokens, targets, positions, documents: 16 bytes a token): a
// count that cannot fit in this machine's memory is a usage error, not an out-of-memory failure after the start.
static void check_micro_batches(const TrainConfig *t) {
    if (t->batch < 1 || t->seq_len < 1 || t->sp < 1) return;   // refused by the checks after this one
    double bytes = (double)t->grad_accum * ((double)sizeof(Batch) + 16.0 * t->batch * ((double)t->seq_len / t->sp));
    double avail = mem_host_available_bytes();
    if (avail > 0 && bytes > avail)
        fail_usage("--grad-accum %d holds %.0f MiB of micro-batches at once (--batch %d x %d tokens each), more than this "
                   "machine's %.0f MiB available: use fewer micro-steps per step, or more ranks for a larger batch",
                   t->grad_accum, bytes / 1048576, t->batch, t->seq_len / t->sp, avail / 1048576);
}

// --rope-theta-ramp and --rope-theta-from, against each other and --steps.
static void check_rope_ramp(const TrainConfig *t) {
    const RopeRamp *r = &t->model_cfg.rope_ramp;
    if (r->steps < 0) fail_usage("--rope-theta-ramp must not be negative (got %d; 0 turns the ramp off)", r->steps);
    if (r->steps > t->steps)
        fail_usage("--rope-theta-ramp %d is beyond --steps %d: the run would end before the base reaches --rope-theta; "
                   "give a ramp of at most --steps", r->steps, t->steps);
    if (r->steps > 0 && !(r->from > 1))
        fail_usage("--rope-theta-ramp needs the base it starts from: give --rope-theta-from (greater than 1, got %g) or "
                   "--init-from a checkpoint (its base)", r->from);
    if (r->steps == 0 && r->from != 0)
        fail_usage("--rope-theta-from %g without --rope-theta-ramp does nothing; give the ramp's steps, or use --rope-theta",
                   r->from);
}

// The GPU flags: --matmul, --attn, --activations, --comm and how they combine.
static void check_device_flags(const TrainConfig *t) {
    if (t->matmul && strcmp(t->matmul, "bf16") && strcmp(t->matmul, "tf32") && strcmp(t->matmul, "fp32"))
        fail_usage("--matmul %s: use tf32, bf16 or fp32", t->matmul);
#ifdef RINGGPT_HAVE_SM90
    if (t->attn && strcmp(t->attn, "flash") && strcmp(t->attn, "cudnn") && strcmp(t->attn, "sm90"))
        fail_usage("--attn %s: use flash, cudnn or sm90", t->attn);
#else
    if (t->attn && !strcmp(t->attn, "sm90"))   // an experiment outside the default build (docs/gpu.md)
        fail_usage("--attn sm90: this ringgpt was built without the Hopper kernels (cmake -DRINGGPT_SM90_KERNELS=ON "
                   "builds them); use --attn cudnn or flash");
    if (t->attn && strcmp(t->attn, "flash") && strcmp(t->attn, "cudnn")) fail_usage("--attn %s: use flash or cudnn", t->attn);
#endif
    if (t->activations && strcmp(t->activations, "fp32") && strcmp(t->activations, "bf16"))
        fail_usage("--activations %s: use fp32 or bf16", t->activations);
    if (train_act_store(t) == ACT_BF16 && t->matmul && strcmp(t->matmul, "bf16"))
        fail_usage("--activations bf16 runs the matmuls on bf16 operands; drop --matmul %s or use --activations fp32",
                   t->matmul);
    if (train_act_store(t) == ACT_BF16 && t->device && !strcmp(t->device, "cpu"))
        fail_usage("--activations bf16 is a GPU setting (--device cuda); the CPU stores activations as fp32");
    if (t->comm && strcmp(t->comm, "auto") && strcmp(t->comm, "nccl") && strcmp(t->comm, "mpi"))
        fail_usage("--comm %s: use auto, nccl or mpi", t->comm);
}

void train_check_config(const TrainConfig *t) {
    if (!t->data) fail_usage("--data is required: a text file or a dataset directory (see `ringgpt train --help`)");
    if (t->seq_len < 1) fail_usage("--seq-len must be at least 1 (got %d)", t->seq_len);
    if (t->batch < 1) fail_usage("--batch must be at least 1 (got %d)", t->batch);
    if (t->grad_accum < 1) fail_usage("--grad-accum must be at least 1 (got %d)", t->grad_accum);
    check_micro_batches(t);
    if (t->steps < 1) fail_usage("--steps must be at least 1 (got %d)", t->steps);
    if (t->warmup < 0) fail_usage("--warmup must not be negative (got %d)", t->warmup);
    args_check_threads(t->threads);
    args_check_seed("--seed", t->seed);
    if (strcmp(t->device, "cpu") && strcmp(t->device, "cuda") && strcmp(t->device, "auto"))
        fail_usage("--device %s: use cpu, cuda or auto", t->device);
    if (t->log_every < 1) fail_usage("--log-every must be at least 1 (got %d)", t->log_every);
    if (t->eval_every < 0) fail_usage("--eval-every must not be negative (got %d)", t->eval_every);
    if (t->eval_batches < 1) fail_usage("--eval-batches must be at least 1 (got %d)", t->eval_batches);
    if (t->loss_chunk < 1) fail_usage("--loss-chunk must be at least 1 (got %d)", t->loss_chunk);
    if (t->ckpt_every < -1) fail_usage("--ckpt-every must be N > 0, 0 (only at the end) or -1 (never) (got %d)", t->ckpt_every);
    if (t->keep < 0) fail_usage("--keep must not be negative (got %d; 0 keeps all)", t->keep);
    if (t->sp < 1) fail_usage("--sp must be at least 1 (got %d)", t->sp);
    OutdirMode mode;
    if (!outdir_mode_parse(t->out_exists, &mode)) fail_usage("--out-exists must be refuse or move, not '%s'", t->out_exists);
    if (!(t->lr > 0)) fail_usage("--lr must be positive (got %g)", t->lr);
    if (t->min_lr < 0 || t->min_lr > t->lr) fail_usage("--min-lr must be between 0 and --lr (got %g)", t->min_lr);
    if (t->weight_decay < 0) fail_usage("--weight-decay must not be negative (got %g)", t->weight_decay);
    if (!(t->beta1 >= 0 && t->beta1 < 1)) fail_usage("--beta1 must be in [0, 1) (got %g)", t->beta1);
    if (!(t->beta2 >= 0 && t->beta2 < 1)) fail_usage("--beta2 must be in [0, 1) (got %g)", t->beta2);
    if (t->clip < 0) fail_usage("--clip must not be negative (got %g)", t->clip);
    if (!(t->val_fraction >= 0 && t->val_fraction < 1)) fail_usage("--val-fraction must be in [0, 1) (got %g)", t->val_fraction);
    if (strcmp(t->loss_on, "masked") && strcmp(t->loss_on, "all")) fail_usage("--loss-on must be masked or all, not '%s'", t->loss_on);
    if (t->mem_budget < 0) fail_usage("--mem-budget must not be negative (got %g MiB)", t->mem_budget);
    if (t->peak_tflops < 0) fail_usage("--peak-tflops must not be negative (got %g)", t->peak_tflops);
    if (t->logits_mb < 0) fail_usage("--logits-mb must not be negative (got %d)", t->logits_mb);
    if (!(t->straggler >= 0)) fail_usage("--straggler must not be negative (got %g; 0 turns the check off)", t->straggler);
    if (!(t->stop_loss >= 0)) fail_usage("--stop-loss must not be negative (got %g; 0 turns the rule off)", t->stop_loss);
    if (t->stop_window < 1) fail_usage("--stop-window must be at least 1 step (got %d)", t->stop_window);
    if (t->stop_loss > 0 && t->stop_window > t->steps)   // a short try of a recipe's config (--steps 1) is no error
        log_info("note: --stop-window %d is beyond --steps %d: the window never fills, so --stop-loss cannot end this run\n",
                 t->stop_window, t->steps);
    check_rope_ramp(t);
    if (t->straggler_every < 1) fail_usage("--straggler-every must be at least 1 (got %d)", t->straggler_every);
    check_device_flags(t);
    CommProgress progress;
    if (strcmp(t->comm_progress, "auto") && !comm_progress_parse(t->comm_progress, &progress))
        fail_usage("--comm-progress %s: use auto, compute, thread or off", t->comm_progress);
    ShardLevel level;
    if (!t->shard || !shard_level_parse(t->shard, &level)) fail_usage("--shard %s: use none, optim, grads or params", t->shard);
    ScheduleKind k;
    if (!schedule_parse(t->schedule, &k)) fail_usage("unknown --schedule '%s'; use cosine or constant", t->schedule);
    config_validate(&t->model_cfg);
}

// A missing or unreadable path is a usage error (exit 2), caught before any work starts.
static void check_readable(const char *flag, const char *path) {
    if (access(path, R_OK) != 0)
        fail_usage("%s %s: cannot open (%s); check the path", flag, path, strerror(errno));
}

// The dp × sp layout. Errors that every rank sees alike come once, from rank 0, and end every rank.
static CommGrid setup_layout(TrainConfig *t) {
    comm_check_same_config(t->same_json);   // ranks with different flags (or config files) would train different models
    if (!(t->comm_timeout > 0)) comm_fail_usage_all("--comm-timeout must be positive (got %g)", t->comm_timeout);
    comm_set_timeout(t->comm_timeout);
    int world = comm_size(comm_world());
    if (t->sp_inherited && world % t->sp != 0) {   // a resume on another layout: one rank per sequence
        log_info("note: the saved run had --sp %d; %d rank%s cannot hold it, so this run uses --sp 1\n", t->sp, world,
                 world == 1 ? "" : "s");
        t->sp = 1;
    }
    CommGrid g = comm_grid(t->sp);
    int parts = 2 * t->sp;
    if (t->sp > 1 && t->seq_len < parts)
        comm_fail_usage_all("--sp %d needs --seq-len of at least 2·sp = %d (every rank holds two chunks); got %d, use a "
                            "smaller --sp", t->sp, parts, t->seq_len);
    if (t->sp > 1 && t->seq_len % parts != 0)
        comm_fail_usage_all("--seq-len %d is not divisible by 2·sp = %d (the zigzag layout cuts each sequence into "
                            "2·sp equal chunks); use e.g. --seq-len %d", t->seq_len, parts, t->seq_len / parts * parts);
    t->dp = g.dp, t->dp_index = g.dp_index, t->sp_index = g.sp_index;
    return g;
}

// "A:B" or "A:B:WORD" of environment variable `name` into a, b (both >= 0) and word (NULL when absent).
static void parse_hook(const char *name, const char *v, int *a, int *b, const char **word) {
    int used = 0;
    *word = NULL;
    if (sscanf(v, "%d:%d%n", a, b, &used) != 2 || *a < 0 || *b < 0 || (v[used] && v[used] != ':') ||
        (v[used] == ':' && !v[used + 1]))
        fail_usage("%s='%s': write RANK:N with whole numbers (docs/testing.md)", name, v);
    if (v[used] == ':') *word = v + used + 1;
}

DebugHooks train_debug_hooks(void) {
    DebugHooks h = {.exit_rank = -1, .slow_rank = -1};
    const char *v = getenv("RINGGPT_DEBUG_EXIT"), *how;
    if (v && *v) {
        parse_hook("RINGGPT_DEBUG_EXIT", v, &h.exit_rank, &h.exit_step, &how);
        h.stall = how && strcmp(how, "stall") == 0, h.kill = how && strcmp(how, "kill") == 0;
        if (how && !h.stall && !h.kill) fail_usage("RINGGPT_DEBUG_EXIT='%s': the third field is stall or kill", v);
    }
    if ((v = getenv("RINGGPT_DEBUG_SLOW")) && *v) {
        parse_hook("RINGGPT_DEBUG_SLOW", v, &h.slow_rank, &h.slow_ms, &how);
        if (how) fail_usage("RINGGPT_DEBUG_SLOW='%s': write RANK:MS", v);
    }
    if ((v = getenv("RINGGPT_DEBUG_WEIGHTS")) && *v) h.weights = v;
    return h;
}

// RINGGPT_DEBUG_EXIT: this rank leaves abruptly (or stops answering), as a crashed or hung rank would.
static void debug_leave(const DebugHooks *h, int rank) {
    if (h->kill) raise(SIGKILL);   // no last word, as the kernel's OOM killer gives none
    fprintf(stderr, "ringgpt: rank %d: %s at step %d (RINGGPT_DEBUG_EXIT, testing the comm timeout)\n", rank,
            h->stall ? "stalls" : "exits", h->exit_step);
    fflush(stderr);
    if (!h->stall) _exit(3);
    for (;;) sleep(1);
}

static DataSource *open_data(const TrainConfig *t, bool validation) {
    DataOptions o = {.seq_len = t->seq_len, .batch = t->batch, .seed = (uint64_t)t->seed, .dp = t->dp,
                     .dp_index = t->dp_index, .sp = t->sp, .sp_index = t->sp_index, .val_fraction = t->val_data ? 0 : t->val_fraction,
                     .no_shuffle = t->no_shuffle, .loss_on_all = !strcmp(t->loss_on, "all")};
    if (validation && t->val_data) return data_open(t->val_data, &o, false);
    if (validation && t->val_fraction <= 0) return NULL;
    return data_open(t->data, &o, validation);
}

// Mean loss over the first eval_batches batches of the validation data (the same ones every time); -1 when a stop
// signal came first. The ranks agree on a stop before every batch, so a signal waits for one batch, not the pass.
static double evaluate(GPT *m, DataSource *val, Batch *b, int batches, Comm *world) {
    DataState start = {.seed = data_state(val).seed, .consumed = 0};
    data_restore(val, start);
    double sum = 0, count = 0;
    for (int i = 0; i < batches; i++) {
        if (stop_agree(world)) return -1;   // the step is saved right after (stop_after)
        data_next(val, b);
        sum += gpt_forward(m, b, 0, false, NULL);
        count += (double)batch_count_targets(b);
    }
    double sums[2] = {sum, count};   // every rank holds a slice of the validation tokens
    comm_allreduce(world, sums, 2, COMM_F64, COMM_SUM, "validation loss sum");
    sum = sums[0], count = sums[1];
    return count > 0 ? sum / count : 0;
}

// --eval-batches beyond one pass over the validation data would count samples again (and a huge count would run
// for ever): each validation evaluates one pass then, with a note.
static void bound_eval_batches(TrainConfig *t, const DataSource *val) {
    uint64_t per_batch = (uint64_t)t->batch * (uint64_t)t->dp, pass = data_num_samples(val) / per_batch;
    if (pass < 1) pass = 1;   // fewer samples than a batch: the one batch wraps around them, as before
    if ((uint64_t)t->eval_batches <= pass) return;
    log_info("note: the validation data holds %" PRIu64 " batch%s of %" PRIu64 " sequence%s; --eval-batches %d "
             "evaluates those %" PRIu64 "\n", pass, pass == 1 ? "" : "es", per_batch, plural((long long)per_batch),
             t->eval_batches, pass);
    t->eval_batches = (int)pass;
}

// The run as a checkpoint records it (state.json: model, run flags, seed, layout).
static CkptState ckpt_base(const TrainConfig *t) {
    CkptState s = {.seed = t->seed, .model = t->model_cfg, .dp = t->dp, .sp = t->sp};
    s.run = (CkptRun){.seq_len = t->seq_len, .batch = t->batch, .grad_accum = t->grad_accum, .steps = t->steps,
                      .warmup = t->warmup, .loss_chunk = t->loss_chunk, .lr = t->lr, .min_lr = t->min_lr,
                      .weight_decay = t->weight_decay, .beta1 = t->beta1, .beta2 = t->beta2, .clip = t->clip,
                      .shuffle = !t->no_shuffle};
    snprintf(s.run.schedule, sizeof s.run.schedule, "%s", t->schedule);
    snprintf(s.run.data, sizeof s.run.data, "%s", t->data);
    return s;
}

#ifdef RINGGPT_HAVE_CUDA
// With a GPU, the flags left unset take the paths that passed their GPU tests and run fastest (docs/gpu.md):
// bf16 activations and matmuls (fp32 activations where --matmul names tf32 or fp32), cuDNN's attention where
// libcudnn loads, else the flash kernels.
static void gpu_defaults(TrainConfig *t) {
    if (!t->activations) t->activations = t->matmul && strcmp(t->matmul, "bf16") ? "fp32" : "bf16";
    if (!t->attn) t->attn = attn_cuda_cudnn_available() ? "cudnn" : "flash";
}
#endif

// --device: cpu, cuda, or auto (cuda when this binary has the CUDA backend and a GPU is visible).
static const Backend *select_backend(TrainConfig *t, int rank) {
    const char *device = t->device;
    bool cuda = !strcmp(device, "cuda");
    if (strcmp(device, "cpu") && strcmp(device, "cuda") && strcmp(device, "auto"))
        comm_fail_usage_all("--device %s: use cpu, cuda or auto", device);
#ifdef RINGGPT_HAVE_CUDA
    if (!strcmp(device, "auto")) cuda = cuda_device_count() > 0;
    if (!cuda && train_act_store(t) == ACT_BF16)
        comm_fail_usage_all("--activations bf16 is a GPU setting (--device cuda); the CPU stores activations as fp32");
    if (!cuda) return &BACKEND_CPU;
    gpu_defaults(t);
    cuda_backend_set_matmul(t->matmul ? t->matmul : train_act_store(t) == ACT_BF16 ? "bf16" : NULL);
    cuda_backend_init(cuda_local_rank(), rank);   // fails with one clear line when no GPU is visible
    attn_cuda_set_impl(t->attn);
    comm_cuda_set_kind(t->comm);
    cuda_backend_set_logits_mb(t->logits_mb);
    char desc[256];
    cuda_device_describe(desc, sizeof desc);
    log_info("device: %s\n", desc);
    return &BACKEND_CUDA;
#else
    if (cuda)
        comm_fail_usage_all("--device cuda: this ringgpt was built without CUDA (no nvcc at build time, or "
                            "-DRINGGPT_CUDA=OFF); rebuild with the CUDA toolkit or use --device cpu");
    if (train_act_store(t) == ACT_BF16)
        comm_fail_usage_all("--activations bf16 is a GPU setting (--device cuda); the CPU stores activations as fp32");
    return &BACKEND_CPU;
#endif
}

// --comm-progress (checked by train_check_config); auto: the attention loops drive MPI on the CPU, where every
// core computes, and a thread with a GPU, whose host cores wait. --shard grads or params keep a unit's gather or
// reduce-scatter in flight through the matmuls, which do not poke: a thread there too (measured between two hosts at
// 1 Gbit/s, base: 0.86 s a step waited on them with the attention's pokes, 0.29 s with the thread; benchmarks.md).
static void set_comm_progress(const TrainConfig *t, const Backend *be) {
    bool thread = be != &BACKEND_CPU || t->shard_level >= SHARD_GRADS;
    CommProgress mode = thread ? COMM_PROGRESS_THREAD : COMM_PROGRESS_COMPUTE;
    if (strcmp(t->comm_progress, "auto") != 0) comm_progress_parse(t->comm_progress, &mode);
    comm_set_progress(mode);
}

// Device buffers (gradients, ring packets) need a device-aware communicator: NCCL, or MPI with host staging.
static Comm *device_comm(const Backend *be, Comm *c, const char *what) {
#ifdef RINGGPT_HAVE_CUDA
    if (be == &BACKEND_CUDA && c) return comm_cuda_wrap(c, what);
#endif
    return c;
}

static void device_comm_free(Comm *c) {
#ifdef RINGGPT_HAVE_CUDA
    comm_cuda_free(c);   // a plain communicator is left to its owner
#endif
}

// What would fit instead of the run's plan `in` over the budget: a higher shard level, more recompute, more ranks in
// the ring, a shorter T (in.ranks: the job's, over which the model state is sharded).
static void fitting_options(MemPlanInput in, int seq_len, double budget, char *buf, size_t n) {
    int len = 0;
    MemPlanInput at = in;
    for (at.shard = in.shard + 1; at.shard <= SHARD_PARAMS && in.ranks > 1; at.shard++) {
        double total = memplan(at).total;
        if (total > budget) continue;
        if (len < (int)n) len += snprintf(buf + len, n - len, "--shard %s (%.0f MiB), ", shard_level_name(at.shard), total / 1048576);
        break;
    }
    for (at = in, at.recompute = in.recompute + 1; at.recompute <= RECOMPUTE_FULL; at.recompute++) {
        double total = memplan(at).total;
        if (total <= budget && len < (int)n)
            len += snprintf(buf + len, n - len, "--recompute %s (%.0f MiB), ", recompute_name(at.recompute), total / 1048576);
    }
    for (at = in, at.sp = 2 * in.sp; at.sp <= 1024 && 2 * at.sp <= seq_len; at.sp *= 2) {
        at.T_local = seq_len / at.sp;
        double total = memplan(at).total;
        if (total > budget) continue;
        if (len < (int)n) len += snprintf(buf + len, n - len, "--sp %d (%.0f MiB per rank), ", at.sp, total / 1048576);
        break;
    }
    long T = memplan_max_seq_len(in, budget);
    if (len < (int)n) {
        if (T > 0) snprintf(buf + len, n - len, "--seq-len %ld or shorter", T);
        else snprintf(buf + len, n - len, "no shorter --seq-len (the model alone does not fit)");
    }
}

// The memory plan (model/memplan.c), printed before the model allocates anything. A run that
// cannot fit is refused here with the options that would; the budget is --mem-budget, else the
// device's free memory, else the host's MemAvailable shared among this node's ranks.
static MemPlan plan_memory(const TrainConfig *t, const Backend *be, Comm *world) {
    bool device = be->mem_free != NULL;   // else the plan is of host memory, where MPI's collectives work
    double runtime = device ? 0 : mem_rss_now_bytes();   // a device starts empty; the host holds libraries, data
    MemPlanInput in = {.model = &t->model_cfg, .batch = t->batch, .T_local = t->seq_len / t->sp, .sp = t->sp,
                       .shard = t->shard_level, .ranks = comm_size(world), .recompute = t->recompute_mode,
                       .store = train_act_store(t), .loss_chunk = t->loss_chunk, .runtime_bytes = runtime,
                       .host_collectives = !device};
    MemPlan p = memplan(in);
    memplan_print(&p, in);
    const char *source = "--mem-budget";
    double avail = t->mem_budget * 1048576.0, need = p.total;
    if (!(t->mem_budget > 0) && device) avail = (double)be->mem_free(), source = "free on the device";
    else if (!(t->mem_budget > 0)) {
        avail = runtime + mem_host_available_bytes() / comm_node_size();
        source = "MemAvailable shared by this node's ranks, plus this process's own";
    }
    comm_allreduce(world, &avail, 1, COMM_F64, COMM_MIN, "available memory");   // every rank decides alike
    comm_allreduce(world, &need, 1, COMM_F64, COMM_MAX, "planned memory");
    if (avail <= 0 || need <= avail) return p;   // 0: unknown (no /proc/meminfo): let the allocator decide
    char options[512];
    fitting_options(in, t->seq_len, avail, options, sizeof options);
    comm_fail_usage_all("--seq-len %d does not fit: the memory plan needs %.0f MiB per rank (--recompute %s, --sp %d, "
                        "--batch %d) and %.0f MiB is available (%s); would fit: %s",
                        t->seq_len, need / 1048576, recompute_name(t->recompute_mode), t->sp, t->batch,
                        avail / 1048576, source, options);
}

// --out belongs to this run before anything is written there (checkpoints/rundir.h).
static void claim_out(const TrainConfig *t, Comm *world) {
    OutdirMode mode;
    outdir_mode_parse(t->out_exists, &mode);
    rundir_claim_train(t->out, t->resume, t->init_from, mode, world);
}

// Everything one training run holds, set up by run_open and released by run_close.
typedef struct {
    TrainConfig t;
    CommGrid grid;
    Comm *grad_comm;   // device-aware communicator (the grid's own on the CPU)
    DataSource *train, *val;
    GPT model;
    AdamW opt;
    ShardComm shard;               // --shard: the gathers and reduce-scatters of the sharded model and AdamW
    Schedule sched;
    MetricsLog log;
    RankTimesLog rank_times;       // every rank's step times (metrics.jsonl) and the straggler check
    CkptHook ckpt;
    DebugHooks debug;              // the tests' fault injection (RINGGPT_DEBUG_EXIT, RINGGPT_DEBUG_SLOW)
    Batch batch;                   // (B, T/sp): this rank's slice of a validation batch
    Batch *micro;                  // (grad_accum) this rank's slices of the step's micro-batches
    MemPlan plan;                  // this rank's predicted memory (model/memplan.c)
    long start;                    // first step (> 0 after --resume)
    double tokens_per_step;        // global tokens per optimizer step (B·T·accum·dp)
    double flops_per_token;        // training FLOPs per token (for MFU)
} Run;

// --shard: this rank's model state (weights, gradients, AdamW moments) and unit buffers, as allocated (model/shard.h).
static void report_shard(const Run *r) {
    double mib = sizeof(real) / 1048576.0, state = mib * r->model.sizes.state;
    double full = mib * shard_sizes(&r->model.cfg, SHARD_NONE, NULL).state;   // unsharded
    log_info("shard %s over %d ranks: model state %.1f MiB per rank (weights, gradients, AdamW moments; %.3fx of "
             "unsharded %.1f MiB) + %.1f MiB of gathered-unit buffers\n", shard_level_name(r->model.shard_level),
             r->grid.world_size, state, state / full, full, mib * r->model.sizes.units);
}

static void run_open(Run *r, const TrainConfig *cfg) {
    r->t = *cfg;
    TrainConfig *t = &r->t;
    train_check_config(t);   // before the layout, which divides by --sp
    r->grid = setup_layout(t);
    cpu_threads(t->threads);
    check_readable("--data", t->data);
    if (t->val_data) check_readable("--val-data", t->val_data);
    claim_out(t, r->grid.world);
    r->train = open_data(t, false);
    r->val = open_data(t, true);
    if (r->val) bound_eval_batches(t, r->val);
    t->model_cfg.vocab_size = (int)data_vocab_size(r->train);   // the data's tokenizer decides the vocab
    if (t->init_vocab && t->init_vocab != t->model_cfg.vocab_size)
        fail_usage("--init-from %s has a vocab of %d but --data %s has %d (another tokenizer); prepare the data with the "
                   "checkpoint's tokenizer", t->init_from, t->init_vocab, t->data, t->model_cfg.vocab_size);
    if (r->val && (data_vocab_size(r->val) != data_vocab_size(r->train) ||
                   strcmp(data_tokenizer(r->val)->id, data_tokenizer(r->train)->id) != 0))
        fail_usage("--val-data has vocab %u (tokenizer %s) but --data has %u (%s); both must come from the same tokenizer",
                   data_vocab_size(r->val), data_tokenizer(r->val)->id, data_vocab_size(r->train), data_tokenizer(r->train)->id);
    const Backend *be = select_backend(t, r->grid.rank);
    set_comm_progress(t, be);
    r->grad_comm = device_comm(be, r->grid.world, "gradient communicator");
    r->plan = plan_memory(t, be, r->grid.world);
    gpt_init(&r->model, &t->model_cfg, be, (uint64_t)t->seed, t->shard_level == SHARD_NONE ? GPT_TRAIN : GPT_SHARDED);
    r->model.loss_chunk = t->loss_chunk;
    r->model.doc_mask = t->doc_mask;
    r->model.recompute = t->recompute_mode;
    r->model.act_store = train_act_store(t);
    gpt_set_cp(&r->model, r->grid.ring, &(CpConfig){.mode = CP_RING, .overlap = t->ring_overlap});   // over the sp ranks
    AdamWConfig opt_cfg = {t->beta1, t->beta2, 1e-8f, t->weight_decay};
    r->sched = (Schedule){.lr = t->lr, .min_lr = t->min_lr, .warmup = t->warmup, .total = t->steps};
    schedule_parse(t->schedule, &r->sched.kind);
    r->ckpt = (CkptHook){.out = t->out, .resume = t->resume, .init_from = t->init_from, .every = t->ckpt_every,
                         .keep = t->keep, .base = ckpt_base(t), .world = r->grid.world, .rank = r->grid.rank};
    r->ckpt.base.tok = model_tokenizer_record(data_tokenizer(r->train));   // checkpoints carry the data's tokenizer
    shard_model(&r->shard, &r->model, &r->opt, opt_cfg, t->shard_level, r->grad_comm);   // --shard: slices a resume fills
    if (t->shard_level != SHARD_NONE) report_shard(r);
    r->start = ckpt_train_begin(&r->ckpt, &r->model, &r->opt, r->train);   // resume: weights, AdamW, data position
    if (r->grid.rank == 0) ckpt_write_run_config(t->out, t->config_json);   // after the checks: a refused run leaves it
    r->log = (MetricsLog){0};
    if (r->grid.rank == 0) metrics_open(&r->log, t->out, r->start);   // one writer
    rank_times_open(&r->rank_times, r->grid.world_size, t->straggler, t->straggler_every);
    r->batch = batch_alloc(t->batch, t->seq_len / t->sp);
    r->micro = xcalloc((size_t)t->grad_accum, sizeof(Batch), "micro-batches");
    for (int i = 0; i < t->grad_accum; i++) r->micro[i] = batch_alloc(t->batch, t->seq_len / t->sp);
    if (data_masks_targets(r->train)) log_info("loss: only the targets the data's loss weights select (--loss-on all: every target)\n");
    r->tokens_per_step = (double)t->batch * t->seq_len * t->grad_accum * t->dp;
    r->flops_per_token = metrics_flops_per_token(&t->model_cfg, t->seq_len);
    log_info("ringgpt train: %s model, %.2fM parameters, %d layer%s, dim %d, %d/%d heads, T=%d, B=%d x %d accum, "
             "%d thread%s, %dx%d ranks (dp x sp), %" PRIu64 " samples/epoch\n",
             r->ckpt.base.meta.name[0] ? r->ckpt.base.meta.name : t->model, config_num_params(&t->model_cfg) / 1e6, t->model_cfg.n_layer, plural(t->model_cfg.n_layer),
             t->model_cfg.dim, t->model_cfg.n_head, t->model_cfg.n_kv_head, t->seq_len, t->batch, t->grad_accum, t->threads,
             plural(t->threads), t->dp, t->sp, data_num_samples(r->train));
    const RopeRamp *ramp = &t->model_cfg.rope_ramp;
    if (ramp->steps > 0)
        log_info("RoPE base: %g at step 0, rising geometrically to %g at step %d (--rope-theta-ramp)\n", ramp->from, ramp->to,
                 ramp->steps);
    if (t->model_cfg.rope_scaling.type != ROPE_DEFAULT) {
        char scaling[256];
        rope_scaling_format(&t->model_cfg.rope_scaling, scaling, sizeof scaling);
        log_info("RoPE scaling: %s (--rope-scaling)\n", scaling);
    }
}

static void run_close(Run *r) {
    if (r->model.cp) {
        RingStats rs = attn_cp_stats(r->model.cp);
        log_info("ring (rank 0): %.2f s blocked waiting for KV, %.2f s attention compute, %.1f MiB sent in %ld piece%s\n",
                 rs.wait_s, rs.compute_s, rs.bytes / 1048576, rs.exchanges, plural(rs.exchanges));
        if (rs.lag_s > 0) log_info("ring (rank 0, serial baseline): %.2f s waiting for the neighbours before hops\n", rs.lag_s);
        if (r->t.doc_mask) log_info("doc mask (rank 0): %ld ring block call%s skipped (no row shares a document with the "
                                    "block)\n", rs.blocks_skipped, plural(rs.blocks_skipped));
    }
    metrics_close(&r->log);
    ckpt_train_end(&r->ckpt);
    rank_times_close(&r->rank_times);
    batch_free(&r->batch);
    for (int i = 0; i < r->t.grad_accum; i++) batch_free(&r->micro[i]);
    free(r->micro);
    adamw_free(&r->opt, &r->model);
    shard_comm_free(&r->shard);
    gpt_free(&r->model);
    data_close(r->train);
    data_close(r->val);
    if (r->grad_comm != r->grid.world) device_comm_free(r->grad_comm);
    comm_grid_free(&r->grid);
}

// GPU memory of the largest rank (MiB, now and at most) and MFU over all ranks' GPUs; -1 on the CPU.
static void device_metrics(const Run *r, StepMetrics *sm) {
    sm->mfu = sm->device_mb = sm->device_peak_mb = -1;
#ifdef RINGGPT_HAVE_CUDA
    if (r->model.be != &BACKEND_CUDA) return;
    double mem[2] = {cuda_backend_bytes_in_use() / 1048576.0, cuda_backend_bytes_peak() / 1048576.0};
    comm_allreduce(r->grid.world, mem, 2, COMM_F64, COMM_MAX, "device memory");
    sm->device_mb = mem[0], sm->device_peak_mb = mem[1];
    double peak = (r->t.peak_tflops > 0 ? r->t.peak_tflops : cuda_device_peak_tflops()) * 1e12 * r->grid.world_size;
    if (peak > 0) sm->mfu = sm->tokens_per_s * r->flops_per_token / peak;
#else
    (void)r;
#endif
}

// The step's grad_accum micro-batches (this rank's tokens, targets, positions); returns the number of
// targets that count in the whole step, over all micro-batches and all dp×sp ranks. Loss weights leave
// masked targets at -1, so the ranks add up their counts; without weights it is B·T·accum·dp.
static double fetch_micro_batches(Run *r) {
    double count = 0;
    for (int micro = 0; micro < r->t.grad_accum; micro++) {
        data_next(r->train, &r->micro[micro]);
        count += (double)batch_count_targets(&r->micro[micro]);
    }
    if (!data_masks_targets(r->train)) return r->tokens_per_step;
    comm_allreduce(r->grid.world, &count, 1, COMM_F64, COMM_SUM, "target count");
    return count;
}

// Forward and backward of the fetched micro-batches; returns this rank's summed loss.
static double accumulate_gradients(Run *r, double count) {
    GPT *m = &r->model;
    double loss_sum = 0, grad_scale = 1.0 / count;   // the loss is the mean over the step's counted targets
    gpt_zero_grad(m);
    for (int micro = 0; micro < r->t.grad_accum; micro++) {
        loss_sum += gpt_forward(m, &r->micro[micro], grad_scale, true, NULL);
        gpt_backward(m, &r->micro[micro]);
    }
    return loss_sum;
}

// The ring's waiting so far: for pieces, and the serial baseline's for its neighbours.
static double ring_waited(const Run *r) {
    if (!r->model.cp) return 0;
    RingStats rs = attn_cp_stats(r->model.cp);
    return rs.wait_s + rs.lag_s;
}

// accumulate_gradients, timed: compute is its time less the ring's waiting and (--shard) the waits for gathers and
// reduce-scatters. The RINGGPT_DEBUG_SLOW rank sleeps inside it, as a rank on a slower or busier device would compute longer.
static double timed_gradients(Run *r, double count, RankTimes *times) {
    double ring0 = ring_waited(r), shard0 = shard_comm_waited(&r->shard), t0 = now_seconds();
    if (r->grid.rank == r->debug.slow_rank) {
        struct timespec pause = {r->debug.slow_ms / 1000, (long)(r->debug.slow_ms % 1000) * 1000000};
        nanosleep(&pause, NULL);
    }
    double loss_sum = accumulate_gradients(r, count);
    times->ring_wait_s = ring_waited(r) - ring0;
    times->compute_s = now_seconds() - t0 - times->ring_wait_s - (shard_comm_waited(&r->shard) - shard0);
    return loss_sum;
}

// Every rank's times of this step into the metrics (rank 0 writes them); true when the straggler check
// names a rank (the progress line then shows it).
static bool note_rank_times(Run *r, const RankTimes *times, long step, StepMetrics *sm, char *note, int n) {
    bool named = rank_times_step(&r->rank_times, times, r->grid.world, step, note, n);
    sm->ranks = r->grid.world_size, sm->rank_times = r->rank_times.all, sm->straggler = note;
    return named;
}

// --shard: the step's gather and reduce-scatter seconds, the mean over the ranks, and the share hidden behind compute.
static void shard_metrics(Run *r, StepMetrics *sm) {
    sm->shard_comm_s = -1;
    if (r->model.shard_level == SHARD_NONE) return;
    ShardTimes st = shard_comm_take_times(&r->shard);
    double sums[2] = {st.comm_s, st.wait_s};
    comm_allreduce(r->grid.world, sums, 2, COMM_F64, COMM_SUM, "shard times");
    sm->shard_comm_s = sums[0] / r->grid.world_size, sm->shard_wait_s = sums[1] / r->grid.world_size;
}

// RINGGPT_DEBUG_WEIGHTS: the final weights, whole, into one file: rank 0 sizes it, then every rank that holds weights
// no other rank has (its slices under --shard params; else rank 0 alone) writes them at their place.
static void debug_write_weights(const Run *r, const char *path) {
    const GPT *m = &r->model;
    size_t total = m->table.total;
    if (r->grid.rank == 0) {
        FILE *f = xfopen(path, "wb");
        if (ftruncate(fileno(f), (off_t)(total * sizeof(real))) != 0) fail_io(path, errno, "cannot size the weights file");
        xfclose(f, path);
    }
    comm_barrier(r->grid.world, "weights file");
    bool sliced = m->shard_level >= SHARD_PARAMS;
    if (sliced || r->grid.rank == 0) {
        FILE *f = xfopen(path, "r+b");
        real *host = xmalloc(total * sizeof(real), "final weights");
        const ShardLayout *s = m->shard;
        m->be->to_host(host, m->params, (sliced ? s->local_total : total) * sizeof(real));
        for (int u = 0; u < (sliced ? s->n_units : 1); u++) {
            size_t len = total, at = sliced ? shard_slice(s, u, s->rank, &len) : 0;
            const real *src = sliced ? host + s->local_off[u] : host;
            if (len && (fseeko(f, (off_t)(at * sizeof(real)), SEEK_SET) != 0 || fwrite(src, sizeof(real), len, f) != len))
                fail_io(path, errno, "cannot write the final weights");
        }
        free(host);
        xfclose(f, path);
    }
    comm_barrier(r->grid.world, "weights file");
}

// The device allocator's high-water mark in MiB; -1 on the CPU.
static double device_peak_mb(const Backend *be) { return be->mem_peak ? be->mem_peak() / 1048576.0 : -1; }

// The plan's predicted peak beside the measured one (rank 0's; on a device, device bytes only).
static void report_memory(const Run *r) {
    const Backend *be = r->model.be;
    double predicted = (r->plan.total - r->plan.runtime) / 1048576, measured = device_peak_mb(be);
    const char *what = "device allocator high-water mark";
    if (!be->mem_peak) predicted = r->plan.total / 1048576, measured = peak_rss_mb(), what = "peak RSS";
    log_info("memory: predicted peak %.1f MiB, measured %.1f MiB (%s, rank 0), prediction %+.1f%%\n", predicted,
             measured, what, 100 * (predicted / measured - 1));
}

// After a step all ranks agree on: when any rank got a stop signal, every rank saves this step (if it is not
// saved already) and the run ends with EXIT_STOPPED and one line saying where the checkpoint is.
static int stop_after(Run *r, long done) {
    int signo = stop_agree(r->grid.world);
    if (!signo) return 0;
    ckpt_train_save(&r->ckpt, done, &r->model, &r->opt, r->train, lr_at(&r->sched, done));
    if (r->grid.rank == 0) {
        fflush(stdout);
        fprintf(stderr, "ringgpt: stopped by %s after step %ld of %d; checkpoint %s/step_%08ld; continue with `ringgpt "
                "train --out %s --resume`\n", stop_signal_name(signo), done, r->t.steps, r->t.out, done, r->t.out);
    }
    return EXIT_STOPPED;
}

// The step's gradients summed over all dp×sp ranks (each holds the gradient of its slice of the global batch; --shard
// grads, params: reduce-scattered unit by unit during the backward, the last ones finish here), clipped and applied;
// the loss summed over the ranks. sm gets the learning rate and the gradient norm before clipping.
static void update_weights(Run *r, long step, double *loss_sum, RankTimes *times, StepMetrics *sm) {
    double t_reduce = now_seconds();
    if (r->model.shard_level < SHARD_GRADS)
        comm_allreduce(r->grad_comm, r->model.grads, r->model.table.total, COMM_REAL, COMM_SUM, "gradient all-reduce");
    else shard_comm_finish_grads(&r->shard);
    times->allreduce_s = now_seconds() - t_reduce;
    comm_allreduce(r->grid.world, loss_sum, 1, COMM_F64, COMM_SUM, "loss all-reduce");
    sm->grad_norm = clip_grad_norm(&r->model, r->t.clip, r->grid.world);
    sm->lr = lr_at(&r->sched, step);
    adamw_update(&r->opt, &r->model, sm->lr);
    shard_comm_after_update(&r->shard);   // --shard optim, grads: every rank's updated slices gathered
}

int train_run(TrainConfig *cfg) {
    Run r;
    stop_install();
    run_open(&r, cfg);
    r.debug = train_debug_hooks();
    const TrainConfig *t = &r.t;
    double run_start = now_seconds();
    int code = 0;
    long end = t->steps;   // the step the run ends after: --steps, or where --stop-loss is met
    LossStop rule;
    loss_stop_init(&rule, t->stop_window <= t->steps ? t->stop_loss : 0, t->stop_window);   // a window that never fills: off
    for (long step = r.start; step < end; step++) {
        if (step > r.start && (code = stop_after(&r, step))) break;   // a signal on any rank: save `step`, stop
        if (r.grid.rank == r.debug.exit_rank && step + 1 == r.debug.exit_step) debug_leave(&r.debug, r.grid.rank);
        double t0 = now_seconds();
        rope_ramp_step(&r.model.cfg, step + 1);   // --rope-theta-ramp: this step's base, which its checkpoint records
        double count = fetch_micro_batches(&r);
        RankTimes times = {.data_s = now_seconds() - t0};
        if (count == 0) {   // every target masked: no mean to take, nothing to learn from
            log_info("step %ld: the loss weights select no target in this step's %.0f samples; update skipped (use --loss-on all, "
                     "a longer --seq-len or a larger --batch)\n", step + 1, (double)t->batch * t->grad_accum * t->dp);
            ckpt_train_step_done(&r.ckpt, step + 1, t->steps, &r.model, &r.opt, r.train, lr_at(&r.sched, step + 1));
            continue;
        }
        double loss_sum = timed_gradients(&r, count, &times);
        StepMetrics sm = {.step = step + 1, .total_steps = t->steps, .val_loss = -1, .dp = t->dp, .sp = t->sp};
        update_weights(&r, step, &loss_sum, &times, &sm);
        double dt = now_seconds() - t0, rss = peak_rss_mb();
        comm_allreduce(r.grid.world, &rss, 1, COMM_F64, COMM_MAX, "peak RSS");   // the largest rank's memory
        sm.loss = loss_sum / count, sm.step_ms = dt * 1e3, sm.tokens_per_s = r.tokens_per_step / dt;
        sm.tokens_seen = (step + 1) * r.tokens_per_step, sm.peak_rss_mb = rss;
        sm.elapsed_s = r.log.elapsed_before + now_seconds() - run_start;
        device_metrics(&r, &sm);
        shard_metrics(&r, &sm);
        double mean = 0;
        if (loss_stop_add(&rule, sm.loss, &mean)) end = step + 1;   // the loss is all-reduced: every rank ends here
        bool last = step + 1 == end;
        if (r.val && ((t->eval_every > 0 && (step + 1) % t->eval_every == 0) || last))
            sm.val_loss = evaluate(&r.model, r.val, &r.batch, t->eval_batches, r.grid.world);
        sm.eta_s = (now_seconds() - run_start) / (step + 1 - r.start) * (t->steps - step - 1);
        if (!isfinite(sm.loss)) comm_fail_all("loss is %g at step %ld; lower --lr or raise --warmup", sm.loss, step + 1);
        char straggler[192];
        bool named = note_rank_times(&r, &times, step + 1, &sm, straggler, sizeof straggler);
        metrics_log(&r.log, &sm, (step + 1) % t->log_every == 0 || last || sm.val_loss >= 0 || named);
        ckpt_train_step_done(&r.ckpt, step + 1, end, &r.model, &r.opt, r.train, lr_at(&r.sched, step + 1));
        if (end < t->steps)
            log_info("stop-loss: the mean loss of the last %d step%s is %.3g, at most --stop-loss %g: the run ends after step "
                     "%ld of %d\n", t->stop_window, plural(t->stop_window), mean, t->stop_loss, end, t->steps);
    }
    loss_stop_free(&rule);
    if (code) {
        run_close(&r);
        return code;
    }
    log_info("done: %ld step%s in %.1f s, peak RSS %.0f MB, metrics in %s\n", end - r.start, plural(end - r.start),
             now_seconds() - run_start, peak_rss_mb(), r.log.path);
    report_memory(&r);
    if (r.debug.weights) debug_write_weights(&r, r.debug.weights);
    run_close(&r);
    return 0;
}
