// bench/attention_bench.c — CPU blockwise causal attention forward+backward: time and GFLOP/s per sequence length.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "core/backend.h"
#include "core/common.h"
#include "core/rng.h"
#include "model/ops.h"

// usage: attention_bench [--doc-len D] [T ...]   (heads 4, head dim 64: the `small` model's attention)
// --doc-len D: documents of D tokens (--doc-mask); FLOP/s are still counted for the whole causal square.
int main(int argc, char **argv) {
    cpu_exec_setup(argv);
    const Backend *be = &BACKEND_CPU;
    AttnShape s = {.n_head = 4, .n_kv_head = 4, .head_dim = 64};
    int lens[16] = {1024, 4096, 16384}, n = 3, doc_len = 0;
    if (argc > 2 && !strcmp(argv[1], "--doc-len")) {
        doc_len = atoi(argv[2]);
        argc -= 2, argv += 2;
    }
    if (argc > 1) {
        n = argc - 1 < 16 ? argc - 1 : 16;
        for (int i = 0; i < n; i++) lens[i] = atoi(argv[i + 1]);
    }
    Rng r;
    rng_seed(&r, 1);
    printf("%8s %12s %12s %14s\n", "T", "fwd ms", "bwd ms", "fwd+bwd GFLOP/s");
    for (int c = 0; c < n; c++) {
        int T = lens[c];
        size_t qn = (size_t)T * s.n_head * s.head_dim, kvn = (size_t)T * s.n_kv_head * s.head_dim, rows = (size_t)T * s.n_head;
        real *q = xmalloc(qn * sizeof(real), "q"), *k = xmalloc(kvn * sizeof(real), "k"), *v = xmalloc(kvn * sizeof(real), "v");
        real *o = xmalloc(qn * sizeof(real), "o"), *dout = xmalloc(qn * sizeof(real), "do"), *dq = xmalloc(qn * sizeof(real), "dq");
        real *dk = xmalloc(kvn * sizeof(real), "dk"), *dv = xmalloc(kvn * sizeof(real), "dv");
        real *lse = xmalloc(rows * sizeof(real), "lse"), *tmp = xmalloc(rows * sizeof(real), "tmp");
        for (size_t i = 0; i < qn; i++) q[i] = (real)rng_normal(&r), dout[i] = (real)rng_normal(&r);
        for (size_t i = 0; i < kvn; i++) k[i] = (real)rng_normal(&r), v[i] = (real)rng_normal(&r);
        int32_t *doc = doc_len > 0 ? xmalloc((size_t)T * sizeof(int32_t), "doc ids") : NULL;
        for (int t = 0; doc && t < T; t++) doc[t] = t / doc_len;
        AttnRows t = {.L = T, .q = q, .k = k, .v = v, .out = o, .lse = lse, .tmp = tmp, .dout = dout, .dq = dq, .dk = dk, .dv = dv};
        AttnLayout lay = {.docs = doc};
        double t0 = now_seconds();
        attention_causal_forward(be, &s, &t, &lay);
        double t1 = now_seconds();
        attention_causal_backward(be, &s, &t, &lay);
        double t2 = now_seconds();
        // causal: half of the 4·T²·hd·H forward FLOPs; the backward does 2.5× the forward.
        double fwd_flops = 2.0 * T * (double)T * s.head_dim * s.n_head;
        printf("%8d %12.1f %12.1f %14.1f\n", T, (t1 - t0) * 1e3, (t2 - t1) * 1e3, 3.5 * fwd_flops / (t2 - t0) / 1e9);
        free(q), free(k), free(v), free(o), free(dout), free(dq), free(dk), free(dv), free(lse), free(tmp), free(doc);
    }
    return 0;
}
