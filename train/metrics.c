// train/metrics.c — a console progress line per logged step and one JSON object per step in metrics.jsonl.
#include "train/metrics.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

// A resumed run repeats the steps after its checkpoint: drop the lines the crashed run wrote for
// them (step > resume_step), so that every step appears once. Rewritten under a temporary name
// and renamed, so a failure leaves the old file as it was.
static void drop_steps_after(const char *path, long resume_step, double *elapsed) {
    FILE *in = fopen(path, "r");
    if (!in) return;   // nothing logged yet
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *out = xfopen(tmp, "w");
    char *line = NULL;   // a line of a many-rank run is long (per-rank times): read whole lines
    size_t cap = 0;
    while (getline(&line, &cap, in) > 0) {
        long step = 0;
        if (sscanf(line, "{\"step\": %ld", &step) == 1 && step > resume_step) continue;
        const char *e = strstr(line, "\"elapsed_s\": ");
        if (e) *elapsed = strtod(e + strlen("\"elapsed_s\": "), NULL);   // the time the resumed run continues from
        xfwrite(line, strlen(line), out, tmp);
    }
    free(line);
    if (ferror(in)) fail_io(path, errno, "read failed");
    fclose(in);
    xfclose(out, tmp);
    if (rename(tmp, path) != 0) fail_io(path, errno, "cannot replace with %s", tmp);
}

void metrics_open(MetricsLog *log, const char *out_dir, long resume_step) {
    snprintf(log->path, sizeof log->path, "%s/metrics.jsonl", out_dir);
    log->elapsed_before = 0;
    if (resume_step > 0) drop_steps_after(log->path, resume_step, &log->elapsed_before);
    log->jsonl = xfopen(log->path, resume_step > 0 ? "a" : "w");
}

double metrics_flops_per_token(const ModelConfig *c, int seq_len) {
    double C = c->dim, F = c->ffn_dim, V = c->vocab_size, KV = cfg_kv_dim(c), L = c->n_layer;
    double matmul = L * (C * C + 2 * KV * C + C * C + 3 * F * C) + V * C;   // q, k, v, o, SwiGLU; the LM head
    return 6 * matmul + 6.0 * seq_len * C * L;
}

void metrics_close(MetricsLog *log) {
    if (log->jsonl) xfclose(log->jsonl, log->path);
    log->jsonl = NULL;
}

static void format_eta(double s, char *buf, size_t n) {
    long t = (long)(s + 0.5);
    if (t >= 3600) snprintf(buf, n, "%ldh%02ldm", t / 3600, (t / 60) % 60);
    else snprintf(buf, n, "%ldm%02lds", t / 60, t % 60);
}

// Every rank's step times, one array per kind, indexed by world rank.
static void write_rank_times(FILE *f, const StepMetrics *m) {
    static const char *const names[4] = {"rank_compute_s", "rank_ring_wait_s", "rank_allreduce_s", "rank_data_s"};
    for (int k = 0; k < 4; k++) {
        fprintf(f, ", \"%s\": [", names[k]);
        for (int r = 0; r < m->ranks; r++) fprintf(f, "%s%.4f", r ? ", " : "", m->rank_times[(size_t)r * 4 + k]);
        fprintf(f, "]");
    }
}

void metrics_log(MetricsLog *log, const StepMetrics *m, int print) {
    if (log->jsonl) {
        fprintf(log->jsonl,
                "{\"step\": %ld, \"loss\": %.7g, \"lr\": %.6e, \"grad_norm\": %.6f, \"step_ms\": %.3f, "
                "\"tokens_per_s\": %.1f, \"tokens_seen\": %.0f, \"elapsed_s\": %.3f, \"peak_rss_mb\": %.1f, \"dp\": %d, "
                "\"sp\": %d",
                m->step, m->loss, m->lr, m->grad_norm, m->step_ms, m->tokens_per_s, m->tokens_seen, m->elapsed_s,
                m->peak_rss_mb, m->dp, m->sp);
        if (m->mfu >= 0) fprintf(log->jsonl, ", \"mfu\": %.5f", m->mfu);
        if (m->device_mb >= 0)
            fprintf(log->jsonl, ", \"device_mb\": %.1f, \"device_peak_mb\": %.1f", m->device_mb, m->device_peak_mb);
        if (m->val_loss >= 0) fprintf(log->jsonl, ", \"val_loss\": %.7g", m->val_loss);
        if (m->shard_comm_s >= 0)   // the share of the transfers hidden behind compute: what the ranks did not wait for
            fprintf(log->jsonl, ", \"shard_comm_s\": %.4f, \"shard_wait_s\": %.4f, \"shard_hidden\": %.3f", m->shard_comm_s,
                    m->shard_wait_s, m->shard_comm_s > 0 ? 1 - m->shard_wait_s / m->shard_comm_s : 0);
        if (m->ranks > 1) write_rank_times(log->jsonl, m);
        if (m->straggler && m->straggler[0]) fprintf(log->jsonl, ", \"straggler\": \"%s\"", m->straggler);
        fprintf(log->jsonl, "}\n");
        if (fflush(log->jsonl) != 0) fail("%s: write failed (%s)", log->path, strerror(errno));
    }
    if (!print || log_rank() != 0) return;
    char eta[32];
    format_eta(m->eta_s, eta, sizeof eta);
    printf("step %5ld/%ld | loss %.4f", m->step, m->total_steps, m->loss);
    if (m->val_loss >= 0) printf(" | val %.4f", m->val_loss);
    printf(" | lr %.2e | gnorm %.3f | %.1f ms | %.0f tok/s | %dx%d | rss %.0f MB", m->lr, m->grad_norm, m->step_ms,
           m->tokens_per_s, m->dp, m->sp, m->peak_rss_mb);
    if (m->device_peak_mb >= 0) printf(" | dev %.0f MB", m->device_peak_mb);
    printf(" | eta %s", eta);
    if (m->straggler && m->straggler[0]) printf(" | %s", m->straggler);
    printf("\n");
    fflush(stdout);
}
