// bench/tokenizer_bench.c — byte-level BPE encode and decode throughput on one core (MB/s of text, tokens/s), cold and warm word cache.
//
// usage: tokenizer_bench TOKENIZER_JSON TEXT_FILE [REPEATS]   (bench/tokenizer_bench.sh compares it with HF tokenizers)
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <time.h>

#include "core/common.h"
#include "tokenizer/tokenizer.h"

// Seconds of CPU this process used: unlike wall time, it does not grow when other work shares the core.
static double cpu_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc < 3) fail_usage("usage: tokenizer_bench TOKENIZER_JSON TEXT_FILE [REPEATS]");
    int reps = argc > 3 ? atoi(argv[3]) : 3;
    if (reps < 1) fail_usage("REPEATS must be positive");
    cpu_set_t one;   // one core, as the target asks
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    sched_setaffinity(0, sizeof one, &one);
    Tokenizer t;
    char err[600];
    double t0 = now_seconds();
    if (tokenizer_load(argv[1], &t, err, sizeof err) != 0) fail("%s", err);
    double load = now_seconds() - t0;
    size_t len, n = 0, cap = 0;
    unsigned char *text = read_whole_file(argv[2], &len);
    uint32_t *ids = NULL;
    // Cold: a fresh encoder (empty word cache); warm: the best of `reps` more runs with the cache kept.
    TokEncoder e = tokenizer_encoder(&t);
    t0 = now_seconds();
    tokenizer_encode(&e, text, len, &ids, &n, &cap);
    double cold = now_seconds() - t0, warm = 1e30, warm_cpu = 1e30;
    for (int r = 0; r < reps; r++) {
        size_t m = 0;
        t0 = now_seconds();
        double c0 = cpu_seconds();
        tokenizer_encode(&e, text, len, &ids, &m, &cap);
        double dt = now_seconds() - t0, dc = cpu_seconds() - c0;
        if (dt < warm) warm = dt;
        if (dc < warm_cpu) warm_cpu = dc;
        if (m != n) fail("encode is not deterministic: %zu then %zu tokens", n, m);
    }
    unsigned char *back = xmalloc(len + 64, "decoded text");
    t0 = now_seconds();
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k;
        const unsigned char *b = tokenizer_token(&t, ids[i], &k);
        if (at + k > len + 64) break;
        memcpy(back + at, b, k);
        at += k;
    }
    double dec = now_seconds() - t0;
    printf("ringgpt: %s (%s, vocab %u, loaded in %.3f s) on %s: %.2f MB -> %zu tokens (%.2f bytes/token)\n", argv[1], t.id, t.vocab_size,
           load, argv[2], len / 1e6, n, (double)len / n);
    printf("ringgpt encode: cold %.2f MB/s, warm %.2f MB/s wall (%.2f M tokens/s), %.2f MB per CPU second; decode %.0f MB/s; "
           "round trip %s\n", len / 1e6 / cold, len / 1e6 / warm, n / 1e6 / warm, len / 1e6 / warm_cpu, at / 1e6 / dec,
           at == len && memcmp(back, text, len) == 0 ? "exact" : "DIFFERS");
    printf("RESULT ringgpt_warm_mbs %.3f ringgpt_cpu_mbs %.3f tokens %zu\n", len / 1e6 / warm, len / 1e6 / warm_cpu, n);
    tokenizer_encoder_free(&e);
    tokenizer_free(&t);
    free(ids);
    free(text);
    free(back);
    return 0;
}
