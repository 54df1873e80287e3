// checkpoints/train_ckpt.c — what the training loop calls: --resume / --init-from before the loop, saves after a step.
#include "checkpoints/train_ckpt.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoints/fsio.h"
#include "checkpoints/hf.h"
#include "checkpoints/model_tokenizer.h"
#include "checkpoints/rundir.h"
#include "core/args.h"
#include "core/common.h"

bool ckpt_run_config(const char *path, char *buf, size_t n) {
    buf[0] = 0;
    if (hf_is_dir(path)) return false;
    char state[4200], parent[4200];
    fs_join(state, sizeof state, path, "state.json");
    if (access(state, F_OK) == 0) {   // a step directory: the run directory is its parent
        snprintf(parent, sizeof parent, "%s", path);
        size_t len = strlen(parent);
        while (len > 1 && parent[len - 1] == '/') parent[--len] = 0;
        char *slash = strrchr(parent, '/');
        if (slash == parent) parent[1] = 0;
        else if (slash) *slash = 0;
        else snprintf(parent, sizeof parent, ".");
        fs_join(buf, n, parent, "config.json");
    } else {
        fs_join(buf, n, path, "config.json");
    }
    if (access(buf, F_OK) == 0) return true;
    buf[0] = 0;
    return false;
}

void ckpt_source_model(const char *src, ModelConfig *c) {
    CkErr e;
    if (hf_is_dir(src)) {
        int max_pos;
        if (hf_read_config(src, c, &max_pos, &e) != 0) fail_usage("--init-from %s", e.msg);
        return;
    }
    char dir[4200];
    ckpt_resolve(src, dir, sizeof dir, NULL);
    CkptState s;
    if (ckpt_read_state(dir, &s, &e) != 0) fail_usage("--init-from %s", e.msg);
    *c = s.model;
}

void ckpt_write_run_config(const char *out, const char *json) {
    char path[4200], tmp[4300];
    fs_join(path, sizeof path, out, "config.json");
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CkErr e;
    if (ckpt_remove_stale_tmp(out, &e) != 0) fail("%s", e.msg);   // a save that died must not keep the disk full
    char *signed_json = args_json_sign(json);   // a damaged value is refused when the run is resumed
    size_t len = strlen(signed_json);
    char *text = xmalloc(len + 2, "config.json");
    memcpy(text, signed_json, len);
    memcpy(text + len, "\n", 2);
    int rc = fs_write_file(tmp, text, len + 1, &e);
    free(text);
    free(signed_json);
    if (rc == 0) rc = fs_rename(tmp, path, &e);
    if (rc != 0) {
        unlink(tmp);
        fail("%s", e.msg);
    }
}

void ckpt_normalize_resume_flag(int argc, char **argv) {
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--resume") == 0 && (i + 1 == argc || strncmp(argv[i + 1], "--", 2) == 0))
            argv[i] = (char *)"--resume=latest";
}

// A model-shape field of the source that the flags contradict is a usage error naming both. The source
// is a ringgpt state.json (resume: keep the flags; init-from: match the shape) or an HF config.json.
typedef enum { SRC_RESUME, SRC_INIT, SRC_HF } SourceKind;
static void check_model(const char *path, const ModelConfig *saved, const ModelConfig *flags, SourceKind kind,
                        const char *theta_flag) {
    bool eps = kind == SRC_RESUME;
    struct {
        const char *field, *hf_field, *flag;
        double a, b;
    } f[] = {{"model.n_layer", "num_hidden_layers", "--layers", saved->n_layer, flags->n_layer},
             {"model.dim", "hidden_size", "--dim", saved->dim, flags->dim},
             {"model.n_head", "num_attention_heads", "--heads", saved->n_head, flags->n_head},
             {"model.n_kv_head", "num_key_value_heads", "--kv-heads", saved->n_kv_head, flags->n_kv_head},
             {"model.ffn_dim", "intermediate_size", "--ffn-dim", saved->ffn_dim, flags->ffn_dim},
             {"model.vocab_size", "vocab_size", "--model", saved->vocab_size, flags->vocab_size},
             {"model.rope_theta", "rope_theta", theta_flag, kind != SRC_HF ? saved->rope_theta : 0,
              kind != SRC_HF ? flags->rope_theta : 0},
             {"model.tie_embeddings", "tie_word_embeddings", "--tie-embeddings", saved->tie_embeddings, flags->tie_embeddings},
             {"model.norm_eps", "rms_norm_eps", "--model", eps ? saved->norm_eps : 0, eps ? flags->norm_eps : 0}};
    const char *how = kind == SRC_RESUME ? "resume with the flags of the saved run, or start a new run from these weights "
                                           "with --init-from"
                                         : "give the source's shape (--model and --layers/--dim/--heads/--kv-heads/--ffn-dim)";
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].a != f[i].b)
            comm_fail_usage_all("%s: field %s is %g but the flags give %g (%s); %s", path,
                                kind == SRC_HF ? f[i].hf_field : f[i].field, f[i].a, f[i].b, f[i].flag, how);
}

// The run flags that decide the numbers: a resume must keep them (--steps may grow: the run is extended).
static void check_run(const char *path, const CkptState *s, const CkptState *flags) {
    const CkptRun *a = &s->run, *b = &flags->run;
    double ga = (double)a->batch * a->grad_accum * s->dp, gb = (double)b->batch * b->grad_accum * flags->dp;
    struct {
        const char *field, *flag;
        double a, b;
    } f[] = {{"run.seq_len", "--seq-len", a->seq_len, b->seq_len},
             {"run.batch x run.grad_accum x layout.dp (sequences per step)", "--batch x --grad-accum x dp", ga, gb},
             {"run.lr", "--lr", a->lr, b->lr},
             {"run.min_lr", "--min-lr", a->min_lr, b->min_lr},
             {"run.warmup", "--warmup", a->warmup, b->warmup},
             {"run.weight_decay", "--weight-decay", a->weight_decay, b->weight_decay},
             {"run.beta1", "--beta1", a->beta1, b->beta1},
             {"run.beta2", "--beta2", a->beta2, b->beta2},
             {"run.clip", "--clip", a->clip, b->clip},
             {"run.shuffle (1: shuffled, 0: --no-shuffle)", "--no-shuffle", a->shuffle, b->shuffle}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if (f[i].a != f[i].b)
            comm_fail_usage_all("%s: field %s is %g but the flags give %g (%s); resume with the flags of the saved run, "
                                "or start a new run from these weights with --init-from",
                                path, f[i].field, f[i].a, f[i].b, f[i].flag);
    if (s->seed != flags->seed)   // apart: %g would show two nearby seeds alike
        comm_fail_usage_all("%s: field seed is %" PRId64 " but the flags give %" PRId64 " (--seed); resume with the flags of "
                            "the saved run, or start a new run from these weights with --init-from", path, s->seed, flags->seed);
    if (strcmp(a->schedule, b->schedule) != 0)
        comm_fail_usage_all("%s: field run.schedule is '%s' but the flags give '%s' (--schedule)", path, a->schedule,
                            b->schedule);
    if (a->steps != b->steps)
        log_info("note: the checkpoint's run had --steps %d, this one has %d (the schedule follows the new total)\n",
                 a->steps, b->steps);
}

// Which checkpoint --resume means; "" when --resume auto finds none.
static void resume_dir(const CkptHook *h, char *dir, size_t n) {
    dir[0] = 0;
    if (strcmp(h->resume, "auto") != 0 && strcmp(h->resume, "latest") != 0) {
        ckpt_resolve(h->resume, dir, n, h->world);
        return;
    }
    CkErr e;
    int rc = ckpt_find_latest(h->out, dir, n, h->world, &e);
    if (rc < 0) fail_usage("--resume: %s; remove or repair them, or train into a new --out", e.msg);
    if (rc == 0 && strcmp(h->resume, "latest") == 0)
        comm_fail_usage_all("--resume: %s holds no checkpoint (step_*/); use --resume auto to start fresh when there is "
                            "none", h->out);
}

// A resume from an older step of this run directory would replace its newer checkpoints (and drop their
// metrics lines): refused before anything is written. Into another --out the newer ones stay where they are.
static void check_not_older(const CkptHook *h, const char *dir, int64_t step) {
    char newer[4200];
    if (strcmp(h->resume, "latest") == 0 || strcmp(h->resume, "auto") == 0 || !rundir_contains(h->out, dir)) return;
    if (ckpt_newer_valid(h->out, step, newer, sizeof newer, h->world))
        comm_fail_usage_all("--resume %s: %s holds a newer valid checkpoint (%s) that this run would replace; continue "
                            "from step %" PRId64 " into a new run directory with --out NEW (the newer steps stay), or "
                            "resume the newest with a bare --resume", h->resume, h->out, newer, step);
}

// What the source model keeps besides its weights: an imported model's metadata (name, max_position_embeddings, the
// HF files) and, where the data uses the same tokenizer, its special ids and add_bos (the data's tokenizer.json alone
// knows neither config.json's ids nor tokenizer_config.json's add_bos_token). s: the source's state (NULL for HF).
static void adopt_meta(CkptHook *h, const char *src, const CkptState *s, const ModelConfig *c) {
    Tokenizer t;
    CkptState none = {0};
    model_tokenizer(src, c, s ? s : &none, &t);
    free((char *)h->base.meta.json);
    model_meta(src, s ? s : &none, &t, &h->base.meta);   // h->base.meta.json: freed by ckpt_train_end
    CkptTokenizer *r = &h->base.tok;
    if (strcmp(t.id, r->id) == 0) r->eos = t.eos, r->bos = t.bos, r->pad = t.pad, r->add_bos = t.add_bos;
    tokenizer_free(&t);
}

static long resume(CkptHook *h, const char *dir, GPT *m, AdamW *opt, DataSource *train) {
    CkptState s;
    CkErr e;
    char spath[4200];
    fs_join(spath, sizeof spath, dir, "state.json");
    if (ckpt_read_state(dir, &s, &e) != 0) fail_usage("%s", e.msg);
    rope_ramp_step(&h->base.model, s.step);   // mid-ramp: the base of the saved step
    check_model(spath, &s.model, &h->base.model, h->init_from ? SRC_INIT : SRC_RESUME, h->base.model.rope_ramp.steps > 0
                ? "--rope-theta-ramp from --rope-theta-from to --rope-theta, at the saved step" : "--rope-theta");
    char saved_scaling[256], flag_scaling[256];
    rope_scaling_format(&s.model.rope_scaling, saved_scaling, sizeof saved_scaling);
    rope_scaling_format(&h->base.model.rope_scaling, flag_scaling, sizeof flag_scaling);
    if (strcmp(saved_scaling, flag_scaling) != 0)
        comm_fail_usage_all("%s: field model.rope_scaling is %s but the flags give %s (--rope-scaling); resume with the flags "
                            "of the saved run, or start a new run from these weights with --init-from", spath,
                            saved_scaling, flag_scaling);
    if (s.step >= h->base.run.steps)   // before check_run, whose note about a new --steps would come first
        comm_fail_usage_all("--steps %d is not beyond the checkpoint's step %" PRId64 " (%s): there is nothing to train; "
                            "give --steps larger than %" PRId64 " to extend the run", h->base.run.steps, s.step, dir, s.step);
    check_run(spath, &s, &h->base);
    check_not_older(h, dir, s.step);
    if (strcmp(s.run.data, h->base.run.data) != 0)   // allowed (more data, a moved file), but never silent
        log_info("note: the checkpoint's run trained on %s; this one reads %s from the same position (%" PRIu64
                 " samples consumed)\n", s.run.data, h->base.run.data, s.data.consumed);
    model_check_record(spath, &s.tok, data_tokenizer(train));
    m->cfg.norm_eps = s.model.norm_eps;   // from the weights' origin (an HF import may differ from the preset)
    h->base.model.norm_eps = s.model.norm_eps;
    if (s.init_from[0]) snprintf(h->base.init_from, sizeof h->base.init_from, "%s", s.init_from);
    adopt_meta(h, dir, &s, &s.model);
    if (ckpt_load_model(dir, &s, m, &e) != 0 || ckpt_load_optim(dir, &s, m, opt, &e) != 0) fail_usage("%s", e.msg);
    data_restore(train, s.data);
    log_info("resumed from %s at step %" PRId64 " (saved on dp x sp = %d x %d, now %d x %d; %" PRIu64
             " samples consumed)\n", dir, s.step, s.dp, s.sp, h->base.dp, h->base.sp, s.data.consumed);
    return (long)s.step;
}

// --init-from: weights only, from a ringgpt checkpoint or an HF directory; the flags fix the shape.
static void init_from(CkptHook *h, GPT *m, const DataSource *train) {
    CkErr e;
    const char *src = h->init_from;
    char dir[4200];
    if (hf_is_dir(src)) {
        ModelConfig hc;
        int max_pos;
        if (hf_read_config(src, &hc, &max_pos, &e) != 0) fail_usage("%s", e.msg);
        hc.rope_theta = m->cfg.rope_theta;   // context extension: the flags' theta wins
        hc.tie_embeddings = m->cfg.tie_embeddings;
        char cpath[4200];
        fs_join(cpath, sizeof cpath, src, "config.json");
        check_model(cpath, &hc, &m->cfg, SRC_HF, "--rope-theta");
        m->cfg.norm_eps = hc.norm_eps;
        adopt_meta(h, src, NULL, &hc);
        if (hf_load_weights(src, m, &e) != 0) fail_usage("%s", e.msg);
    } else {
        ckpt_resolve(src, dir, sizeof dir, h->world);
        CkptState s;
        if (ckpt_read_state(dir, &s, &e) != 0) fail_usage("%s", e.msg);
        char spath[4200];
        fs_join(spath, sizeof spath, dir, "state.json");
        model_check_record(spath, &s.tok, data_tokenizer(train));
        m->cfg.norm_eps = s.model.norm_eps;
        adopt_meta(h, dir, &s, &s.model);
        if (ckpt_load_model(dir, &s, m, &e) != 0) fail_usage("%s", e.msg);
        src = dir;
    }
    h->base.model.norm_eps = m->cfg.norm_eps;
    if (snprintf(h->base.init_from, sizeof h->base.init_from, "%s", src) >= (int)sizeof h->base.init_from)
        fail_usage("--init-from %s: path too long", src);
    log_info("initialised the weights from %s (a new run: step 0, fresh optimizer and data position)\n", src);
}

long ckpt_train_begin(CkptHook *h, GPT *m, AdamW *opt, DataSource *train) {
    char dir[4200] = "";
    if (h->resume) resume_dir(h, dir, sizeof dir);
    if (dir[0]) return resume(h, dir, m, opt, train);
    if (h->resume && strcmp(h->resume, "auto") == 0) log_info("--resume auto: no checkpoint in %s, starting fresh\n", h->out);
    if (h->init_from) init_from(h, m, train);
    return 0;
}

void ckpt_train_end(CkptHook *h) {
    free((char *)h->base.meta.json);
    h->base.meta.json = NULL;
}

void ckpt_train_step_done(CkptHook *h, long done, long total, const GPT *m, const AdamW *opt, DataSource *train,
                          double next_lr) {
    bool due = h->every >= 0 && (done == total || (h->every > 0 && done % h->every == 0));
    if (due) ckpt_train_save(h, done, m, opt, train, next_lr);
}

void ckpt_train_save(CkptHook *h, long done, const GPT *m, const AdamW *opt, DataSource *train, double next_lr) {
    if (h->saved_step == done) return;
    h->saved_step = done;
    bool sharded = opt->shard != NULL;   // every rank writes its shard; else rank 0 writes everything
    if (h->rank == 0 || sharded) {
        CkptState s = h->base;
        snprintf(s.kind, sizeof s.kind, "train");
        s.version = CKPT_VERSION;
        s.step = done;
        s.model.rope_theta = m->cfg.rope_theta;   // mid --rope-theta-ramp: the base of step `done` (the loop sets it)
        s.adamw_step = opt->step;
        s.next_lr = next_lr;
        s.data = data_state(train);
        CkErr e;
        double t0 = now_seconds();
        int rc = ckpt_save(h->out, &s, m, opt, h->keep, sharded ? h->world : NULL, &e);
        if (rc != 0 && sharded) comm_fail_all("checkpoint save failed: %s", e.msg);   // every rank knows e (ckpt_save)
        if (rc != 0) fail("checkpoint save failed: %s", e.msg);
        double dt = now_seconds() - t0, mb = 3.0 * m->table.total * sizeof(real) / 1e6;
        log_info("checkpoint %s/step_%08ld saved in %.2f s (%.0f MB/s%s)\n", h->out, done, dt, mb / fmax(dt, 1e-9),
                 sharded ? " over all ranks" : "");
    }
    if (!sharded) comm_barrier(h->world, "checkpoint save");   // the other ranks wait for rank 0's commit
}
