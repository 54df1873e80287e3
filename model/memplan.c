// model/memplan.c — the memory plan: what one rank holds for a step, from the config, T, sp and the recompute mode.
#include "model/memplan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/ring.h"
#include "core/common.h"

static const char *const NAMES[] = {[RECOMPUTE_NONE] = "none", [RECOMPUTE_MLP] = "mlp", [RECOMPUTE_FULL] = "full"};

bool recompute_parse(const char *s, Recompute *r) {
    for (int i = 0; i < 3; i++)
        if (!strcmp(s, NAMES[i])) {
            *r = (Recompute)i;
            return true;
        }
    return false;
}

const char *recompute_name(Recompute r) { return NAMES[r]; }

// An arena piece of `bytes`, rounded as model/gpt.c's arena_layout rounds it.
static size_t piece(size_t bytes) { return (bytes + ACT_ALIGN_BYTES - 1) / ACT_ALIGN_BYTES * ACT_ALIGN_BYTES; }
static size_t max3(size_t a, size_t b, size_t c) { return a > b ? (a > c ? a : c) : (b > c ? b : c); }

// Mirrors acts_ensure and arena_layout in model/gpt.c (tests/model/test_recompute.c checks that the two
// agree to the byte for every mode). f: bytes of an fp32 tensor's element, a: of an [act] tensor's.
ActSizes act_sizes(const ModelConfig *c, Recompute r, ActStore store, int B, int T_local, int sp) {
    size_t N = (size_t)B * T_local, C = c->dim, Q = c->dim, KV = cfg_kv_dim(c), F = c->ffn_dim, H = c->n_head;
    size_t f = sizeof(real), a = act_elem_bytes(store);
    size_t attn_side = f + a * (C + Q + 2 * KV);        // rstd1 | xn1, q, k, v
    size_t mlp_side = f + a * (C + 2 * F);              // rstd2 | xn2, gate, up
    size_t always = f * (C + Q + H);                    // x, att (O), lse
    size_t head = f * (2 * C + 1) + a * C;              // x_final, rstd_f, dx_f | xn_f
    size_t grads = f * (2 * C + Q + 2 * KV + H) + a * F;   // res, d_c, d_q, d_k, d_v, attn_tmp | h
    ActSizes s = {0};
    switch (r) {
    case RECOMPUTE_NONE:
        s.kept_per_layer = N * (always + attn_side + f * C + mlp_side);   // + xm
        s.shared = N * (head + grads + 2 * a * F);                       // + d_gate, d_up
        break;
    case RECOMPUTE_MLP:
        s.kept_per_layer = N * (always + attn_side + f * C);
        s.work = piece(N * f) + piece(N * C * a) + 2 * piece(N * F * a);
        s.shared = N * (head + grads);            // d_gate, d_up overwrite gate, up in the arena
        break;
    case RECOMPUTE_FULL: {
        s.kept_per_layer = N * always;
        size_t before_gate = piece(N * C * f) + piece(N * f) + piece(N * C * a);   // xm, rstd2, xn2
        size_t mlp = before_gate + 2 * piece(N * F * a);
        size_t attn = piece(N * f) + piece(N * C * a) + piece(N * Q * a) + 2 * piece(N * KV * a) + piece(N * Q * f) +
                      2 * piece(N * KV * f) + piece(N * H * f);
        if (sp > 1) attn += piece(ring_workspace_bytes((size_t)T_local * KV, store));   // the ring's packets
        size_t fin = before_gate + 2 * piece(N * C * f) + piece(N * f) + piece(N * C * a);
        size_t hd = N * F * a > N * C * f ? N * F * a : N * C * f;   // h, then d_c over it
        s.work = piece(hd) + max3(mlp, attn, fin);
        s.shared = N * C * f;                     // res; everything else lives in the arena
        break;
    }
    }
    return s;
}

MemPlan memplan(const ModelConfig *c, int B, int T_local, int sp, Recompute r, ActStore store, int loss_chunk,
                double runtime_bytes) {
    size_t N = (size_t)B * T_local;
    ActSizes a = act_sizes(c, r, store, B, T_local, sp);
    double params = (double)config_num_params(c) * sizeof(real);
    size_t chunk = loss_chunk > 0 && (size_t)loss_chunk < N ? (size_t)loss_chunk : N;
    MemPlan p = {
        // fp32 master weights; bf16 activations run the bf16 GEMMs, which read a bf16 copy of them
        .weights = params + (store == ACT_BF16 ? params / 2 : 0),
        .grads = params,
        .optimizer = 2 * params,
        .kept = (double)a.kept_per_layer * c->n_layer,
        .work = (double)a.work,
        .shared = (double)a.shared,
        // two packets of K | V | dK | dV and one dK | dV step buffer, each block (T_local, Hkv, hd)
        .ring = sp > 1 && r != RECOMPUTE_FULL ? (double)ring_workspace_bytes((size_t)T_local * cfg_kv_dim(c), store) : 0,
        .head_chunk = (double)chunk * c->vocab_size * sizeof(real) + chunk * sizeof(double),
        .batch = 4.0 * N * sizeof(int32_t),   // tokens, targets, positions, document numbers
        .runtime = runtime_bytes,
    };
    p.total = p.weights + p.grads + p.optimizer + p.kept + p.work + p.shared + p.ring + p.head_chunk + p.batch +
              p.runtime;
    p.kept_per_token_layer = N ? p.kept / c->n_layer / N : 0;
    p.work_per_token = N ? p.work / N : 0;
    return p;
}

static double mib(double b) { return b / 1048576.0; }

void memplan_print(const MemPlan *p, const ModelConfig *c, Recompute r, int B, int T, int sp) {
    log_info("memory plan per rank (--recompute %s, T=%d, B=%d, sp=%d: %d tokens here):\n", recompute_name(r), T, B, sp,
             T / sp);
    log_info("  kept for the backward   %9.1f MiB  (%.0f bytes/token/layer x %d layers)\n", mib(p->kept),
             p->kept_per_token_layer, c->n_layer);
    log_info("  one layer's working set %9.1f MiB  (%.0f bytes/token)\n", mib(p->work), p->work_per_token);
    log_info("  backward scratch, head  %9.1f MiB\n", mib(p->shared + p->head_chunk + p->batch));
    log_info("  weights / grads / AdamW %9.1f / %.1f / %.1f MiB\n", mib(p->weights), mib(p->grads), mib(p->optimizer));
    if (sp > 1 && r == RECOMPUTE_FULL) log_info("  ring packets            in the working set (dead MLP half)\n");
    else if (sp > 1) log_info("  ring packets            %9.1f MiB\n", mib(p->ring));
    log_info("  runtime before the model %8.1f MiB  (measured)\n", mib(p->runtime));
    log_info("  predicted peak          %9.1f MiB\n", mib(p->total));
}

long memplan_max_seq_len(const ModelConfig *c, int B, int sp, Recompute r, ActStore store, int loss_chunk,
                         double runtime_bytes, double budget) {
    long step = sp > 1 ? 2L * sp : 1, lo = 0, hi = step;
    // Doubling then bisection over multiples of step: the plan grows with T.
    while (memplan(c, B, (int)(hi / sp), sp, r, store, loss_chunk, runtime_bytes).total <= budget) {
        lo = hi;
        if (hi > (1L << 30) / 2) return lo;
        hi *= 2;
    }
    while (hi - lo > step) {
        long mid = (lo + (hi - lo) / 2) / step * step;
        if (mid <= lo) mid = lo + step;
        if (memplan(c, B, (int)(mid / sp), sp, r, store, loss_chunk, runtime_bytes).total <= budget) lo = mid;
        else hi = mid;
    }
    return lo;
}

// The kB figure of the line starting with key in a /proc file.
static double proc_kb(const char *path, const char *key) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256];
    double kb = 0;
    size_t n = strlen(key);
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, key, n)) kb = atof(line + n);
    fclose(f);
    return kb;
}

double mem_rss_now_bytes(void) { return proc_kb("/proc/self/status", "VmRSS:") * 1024; }
double mem_host_available_bytes(void) { return proc_kb("/proc/meminfo", "MemAvailable:") * 1024; }
