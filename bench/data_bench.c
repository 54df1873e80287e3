// bench/data_bench.c — data pipeline figures: prepare throughput (MB/s of input), compression ratio, loader tokens/s on one core.
//
// usage: data_bench [MB] [DIR [loader]]   (default 64 MB of generated text and as many tokens; DIR default a temp
// dir, removed; with DIR the data stays, and `loader` reruns only the loader figures on it)
#define _GNU_SOURCE
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/common.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "data/source.h"
#include "cli/commands.h"

static const char *WORDS[] = {
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on", "not", "he", "this",
    "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they", "you", "were", "their", "one", "all", "we",
    "can", "her", "has", "there", "been", "if", "more", "when", "will", "would", "who", "so", "no", "time", "people", "long",
    "context", "attention", "model", "training", "sequence", "token", "ring", "memory", "device", "number", "between", "after",
    "language", "example", "research", "system", "because", "through", "different", "important", "information", "following",
    "government", "development", "university", "experiment", "distribution", "computation", "parallel", "gradient", "weights"};
enum { N_WORDS = sizeof WORDS / sizeof WORDS[0] };

// Word salad with a skewed word distribution and sentence punctuation: compresses roughly like English.
static size_t gen_text(Rng *r, char *out, size_t n) {
    size_t p = 0;
    while (p + 16 < n) {
        double u = rng_uniform(r);
        const char *w = WORDS[(int)(u * u * N_WORDS)];
        size_t k = strlen(w);
        memcpy(out + p, w, k);
        p += k;
        uint64_t x = rng_below(r, 20);
        out[p++] = x == 0 ? '.' : x == 1 ? ',' : ' ';
        if (x == 0) out[p++] = rng_below(r, 5) ? ' ' : '\n';
    }
    return p;
}

static void write_file(const char *path, const void *b, size_t n) {
    FILE *f = xfopen(path, "wb");
    xfwrite(b, n, f, path);
    xfclose(f, path);
}

static uint64_t dir_bytes(const char *ds) {
    Dataset d;
    DataErr e;
    uint64_t b = 0;
    for (int s = 0; s < N_SPLITS; s++)
        if (dataset_open(ds, s, &d, &e) == 0) {
            for (size_t i = 0; i < d.n; i++) b += d.shards[i]->h.file_bytes;
            dataset_close(&d);
        }
    return b;
}

static uint64_t dataset_tokens(const char *ds) {
    Dataset d;
    DataErr e;
    if (dataset_open(ds, SPLIT_TRAIN, &d, &e) != 0) fail("%s", e.msg);
    uint64_t t = d.tokens;
    dataset_close(&d);
    return t;
}

static void prepare(const char *label, const char *out, const char *level, uint64_t in_bytes, int argc_extra, const char **extra) {
    const char *argv[32] = {"prepare", "--out", out, "--level", level, "--quiet"};
    int argc = 6;
    for (int i = 0; i < argc_extra; i++) argv[argc++] = extra[i];
    FILE *keep = stdout;
    stdout = fopen("/dev/null", "w");
    double t0 = now_seconds();
    cmd_prepare(argc, (char **)argv);
    double dt = now_seconds() - t0;
    fclose(stdout);
    stdout = keep;
    uint64_t disk = dir_bytes(out), tokens = dataset_tokens(out);
    printf("prepare %-22s level %s: %7.1f MB/s of input, compression %.2fx vs raw 2-byte tokens (%.2fx vs input)\n", label, level,
           in_bytes / 1e6 / dt, 2.0 * tokens / disk, (double)in_bytes / disk);
}

// Tokens per second that data_next hands to a consumer doing nothing else.
static void loader(const char *label, const char *ds, int T, int B, int sp, int sp_index) {
    DataOptions o = {.seq_len = T, .batch = B, .seed = 1, .dp = 1, .dp_index = 0, .sp = sp, .sp_index = sp_index};
    DataSource *d = data_open(ds, &o, false);
    Batch b = batch_alloc(B, T / sp);
    data_next(d, &b);   // warm up: thread start, first blocks
    uint64_t tokens = 0;
    double t0 = now_seconds(), dt;
    do {
        data_next(d, &b);
        tokens += (uint64_t)B * T / sp;
    } while ((dt = now_seconds() - t0) < 2.0);
    printf("loader  %-22s T=%-7d B=%-2d sp=%d: %7.1f M tokens/s delivered to this rank (%.1f M/s of full samples)\n", label, T, B, sp,
           tokens / dt / 1e6, tokens * (double)sp / dt / 1e6);
    batch_free(&b);
    data_close(d);
}

static void pin_one_core(void) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0) printf("(could not pin to one core)\n");
}

int main(int argc, char **argv) {
    size_t mb = argc > 1 ? (size_t)atoi(argv[1]) : 64;
    char tmpl[] = "/tmp/ringgpt_bench_XXXXXX";
    const char *dir = argc > 2 ? argv[2] : mkdtemp(tmpl);
    if (!dir) fail("cannot create a temp dir");
    make_dirs(dir);
    char texts[512], toks[512], ds_text[512], ds_text1[512], ds_tok[512], cmd[1200];
    snprintf(texts, sizeof texts, "%s/texts", dir);
    snprintf(toks, sizeof toks, "%s/tokens.u16", dir);
    snprintf(ds_text, sizeof ds_text, "%s/ds_text", dir);
    snprintf(ds_text1, sizeof ds_text1, "%s/ds_text_l1", dir);
    snprintf(ds_tok, sizeof ds_tok, "%s/ds_tok", dir);
    make_dirs(texts);
    if (argc > 3 && strcmp(argv[3], "loader") == 0) goto loaders;
    // Text: documents of 2 KB..400 KB, plus one 8 MB document.
    Rng r;
    rng_seed(&r, 42);
    size_t total = mb << 20, done = 0;
    char *buf = xmalloc(8 << 20, "text");
    for (int i = 0; done < total; i++) {
        size_t want = i == 0 ? (size_t)8 << 20 : 2048 + rng_below(&r, 400 << 10), n = gen_text(&r, buf, want);
        char p[600];
        snprintf(p, sizeof p, "%s/doc%06d.txt", texts, i);
        write_file(p, buf, n);
        done += n;
    }
    // Tokens: Zipf-like GPT-2-sized ids, documents of ~1000 tokens ending in EOS 50256.
    size_t nt = total / 2;
    uint16_t *t = xmalloc(nt * 2, "tokens");
    for (size_t i = 0; i < nt; i++) {
        double u = rng_uniform(&r);
        t[i] = rng_below(&r, 1000) == 0 ? 50256 : (uint16_t)(u * u * u * 50256);
    }
    write_file(toks, t, nt * 2);
    free(t);
    free(buf);
    const char *tok_args[] = {"--input-kind", "u16", "--eos", "50256", "--vocab", "50257", toks};
    const char *text_args[] = {texts};
    printf("data_bench: %zu MB text, %zu MB tokens (%s)\n", mb, mb, dir);
    prepare("text (byte tokens)", ds_text1, "1", done, 1, text_args);
    prepare("text (byte tokens)", ds_text, "6", done, 1, text_args);
    prepare("u16 tokens (zipf)", ds_tok, "6", nt * 2, 7, tok_args);
loaders:
    pin_one_core();
    printf("-- one core (loader thread and consumer pinned to CPU 0) --\n");
    loader("text level 6", ds_text, 4096, 8, 1, 0);
    loader("text level 1", ds_text1, 4096, 8, 1, 0);
    loader("text level 6", ds_text, 4096, 8, 4, 1);
    loader("text level 6", ds_text, 262144, 1, 1, 0);
    loader("text level 6", ds_text, 1 << 20, 1, 1, 0);
    loader("u16 tokens", ds_tok, 4096, 8, 1, 0);
    if (argc <= 2) {
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
        if (system(cmd) != 0) printf("could not remove %s\n", dir);
    }
    return 0;
}
