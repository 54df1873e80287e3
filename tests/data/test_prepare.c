// tests/data/test_prepare.c — `ringgpt prepare` round trips for text, raw u16/u32 and llm.c inputs (long documents, many shards) and its errors.
#include <inttypes.h>
#include <sys/stat.h>

#include "data/dataset.h"
#include "cli/commands.h"
#include "testutil.h"

typedef struct {
    uint32_t *t;
    size_t n, cap;
} Vec;

static void push(Vec *v, uint32_t x) {
    if (v->n == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 1024;
        v->t = realloc(v->t, v->cap * sizeof *v->t);
    }
    v->t[v->n++] = x;
}

// The whole token stream of one split, read back through the checked reader.
static Vec read_split(const char *ds, int split, Dataset *info) {
    Vec v = {0};
    DataErr e;
    if (dataset_open(ds, split, info, &e) != 0) {
        fprintf(stderr, "open %s: %s\n", ds, e.msg);
        return v;
    }
    for (size_t i = 0; i < info->n; i++) {
        const Shard *s = info->shards[i];
        void *raw = malloc((size_t)s->h.block_tokens * 4), *comp = malloc(shard_max_comp_bytes(s));
        int32_t *tok = malloc((size_t)s->h.block_tokens * 4);
        for (uint64_t b = 0; b < s->h.num_blocks; b++) {
            if (shard_read_block(s, b, raw, comp, &e)) fprintf(stderr, "%s\n", e.msg);
            shard_decode_tokens(&s->h, raw, s->blocks[b].n_tokens, UINT32_MAX, tok);
            for (uint32_t j = 0; j < s->blocks[b].n_tokens; j++) push(&v, (uint32_t)tok[j]);
        }
        free(raw);
        free(comp);
        free(tok);
    }
    CHECK(dataset_verify(info, false, &e) == 0, "%s verifies: %s", ds, e.msg);
    return v;
}

static bool same(const Vec *a, const Vec *b) { return a->n == b->n && memcmp(a->t, b->t, a->n * sizeof *a->t) == 0; }

static void add_text(Vec *want, const char *path, const char *text, size_t n) {
    write_bytes(path, text, n);
    for (size_t i = 0; i < n; i++) push(want, (unsigned char)text[i]);
    push(want, 256);
}

static void test_text(const char *dir) {
    char *in = path_join(dir, "texts"), *sub = path_join(in, "sub"), *ds = path_join(dir, "ds_text"), p[4096];
    mkdir(in, 0755);
    mkdir(sub, 0755);
    Vec want = {0};
    char *long_text = malloc(7000);
    for (int i = 0; i < 7000; i++) long_text[i] = (char)(1 + i * 31 % 251);   // every byte but NUL, longer than a block and a shard
    snprintf(p, sizeof p, "%s/a.txt", in), add_text(&want, p, "hello world", 11);
    snprintf(p, sizeof p, "%s/c.txt", in), write_bytes(p, "", 0);   // empty: no document, skipped
    snprintf(p, sizeof p, "%s/.hidden", in), write_bytes(p, "skip me", 7);
    snprintf(p, sizeof p, "%s/x.pyc", in), write_bytes(p, "\x03\xf3\r\n\0\0\0\0binary", 14);   // a NUL: binary, skipped
    snprintf(p, sizeof p, "%s/notes.md", sub), write_bytes(p, "markdown", 8);
    snprintf(p, sizeof p, "%s/b.txt", sub), add_text(&want, p, long_text, 7000);
    snprintf(p, sizeof p, "%s/single.txt", dir), add_text(&want, p, "one more document\n", 18);
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", ds, "--val-fraction", "0", "--block-tokens", "1000", "--shard-tokens", "3000", "--quiet",
                  "--include", "*.txt,*.pyc", in, p, NULL) == 0,
          "prepare text (--include *.txt,*.pyc: notes.md left out; x.pyc is binary: skipped)");
    Dataset d;
    Vec got = read_split(ds, SPLIT_TRAIN, &d);
    CHECK(same(&got, &want), "text round trip (%zu vs %zu tokens)", got.n, want.n);
    CHECK(d.docs == 3 && d.n == 3 && d.vocab_size == 260 && d.eos_id == 256 && d.token_bytes == 2 && strcmp(d.tokenizer, "byte260") == 0,
          "text dataset: %" PRIu64 " docs in %zu shards", d.docs, d.n);
    dataset_close(&d);
    free(got.t);
    free(want.t);
    free(long_text);
    free(in);
    free(sub);
    free(ds);
}

static void test_val_split(const char *dir) {
    char *in = path_join(dir, "ten"), *ds = path_join(dir, "ds_val"), p[4096];
    mkdir(in, 0755);
    for (int i = 0; i < 10; i++) {
        snprintf(p, sizeof p, "%s/%02d.txt", in, i);
        write_bytes(p, "abcdefgh", 8);
    }
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", ds, "--val-fraction", "0.2", "--quiet", in, NULL) == 0, "prepare with a val split");
    Dataset d;
    Vec tr = read_split(ds, SPLIT_TRAIN, &d);
    CHECK(d.docs == 8 && tr.n == 72, "train: 8 docs");
    dataset_close(&d);
    Vec va = read_split(ds, SPLIT_VAL, &d);
    CHECK(d.docs == 2 && va.n == 18, "val: 2 docs");
    dataset_close(&d);
    free(tr.t);
    free(va.t);
    free(in);
    free(ds);
}

// A raw token file of width w; documents end at eos (the last one without it). Returns the expected stream.
static Vec write_raw(const char *path, int w, uint32_t eos, uint32_t vocab, size_t long_len) {
    Vec in = {0}, want = {0};
    uint32_t pattern[] = {1, 2, eos, 3, 4, 5, eos, eos, 9};
    for (size_t i = 0; i < sizeof pattern / 4; i++) push(&in, pattern[i]);
    for (size_t i = 0; i < long_len; i++) push(&in, (uint32_t)(i * 7919 % (vocab - 1)) == eos ? 0 : (uint32_t)(i * 7919 % (vocab - 1)));
    unsigned char *b = malloc(in.n * w);
    for (size_t i = 0; i < in.n; i++) {
        for (int k = 0; k < w; k++) b[i * w + k] = (unsigned char)(in.t[i] >> (8 * k));
        push(&want, in.t[i]);
    }
    push(&want, eos);
    write_bytes(path, b, in.n * w);
    free(b);
    free(in.t);
    return want;
}

static void test_raw(const char *dir) {
    char *f16 = path_join(dir, "tok.u16"), *f32 = path_join(dir, "tok.u32"), *d16 = path_join(dir, "ds16"), *d32 = path_join(dir, "ds32");
    Vec w16 = write_raw(f16, 2, 7, 1000, 5000), w32 = write_raw(f32, 4, 70000, 100000, 5000);
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", d16, "--input-kind", "u16", "--eos", "7", "--vocab", "1000", "--block-tokens", "512",
                  "--shard-tokens", "2048", "--quiet", f16, NULL) == 0, "prepare u16");
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", d32, "--input-kind", "u32", "--eos", "70000", "--vocab", "100000", "--block-tokens", "512",
                  "--shard-tokens", "2048", "--quiet", f32, NULL) == 0, "prepare u32");
    Dataset d;
    Vec g16 = read_split(d16, SPLIT_TRAIN, &d);
    CHECK(same(&g16, &w16) && d.docs == 4 && d.token_bytes == 2 && d.n == 3, "u16 round trip (%" PRIu64 " docs)", d.docs);
    dataset_close(&d);
    Vec g32 = read_split(d32, SPLIT_TRAIN, &d);
    CHECK(same(&g32, &w32) && d.docs == 4 && d.token_bytes == 4 && d.vocab_size == 100000, "u32 round trip");
    dataset_close(&d);
    // Errors (bad input, exit 2), each into a new directory that the failed prepare leaves not even created:
    // an id >= vocab, no --eos, an odd-sized file. Into the existing d16: refused, d16 untouched.
    char *fresh = path_join(dir, "ds16_failed");
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", fresh, "--input-kind", "u16", "--eos", "2", "--vocab", "8", "--quiet", f16, NULL) == 2,
          "token >= --vocab is bad input (exit 2)");
    CHECK(access(fresh, F_OK) != 0, "a prepare that failed midway left no directory, no shard, no .tmp");
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", fresh, "--input-kind", "u16", "--quiet", f16, NULL) == 2, "u16 without --eos is a usage error");
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", d16, "--input-kind", "u16", "--eos", "7", "--quiet", f16, NULL) == 2,
          "prepare into a dataset directory that is not empty is refused");
    Vec again = read_split(d16, SPLIT_TRAIN, &d);
    CHECK(same(&again, &w16), "the refused prepare left the dataset as it was");
    dataset_close(&d);
    free(again.t);
    write_bytes(f16, "abc", 3);
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", fresh, "--input-kind", "u16", "--eos", "7", "--quiet", f16, NULL) == 2, "odd-sized u16 file");
    CHECK(access(fresh, F_OK) != 0, "nor did this one");
    free(fresh);
    free(g16.t), free(g32.t), free(w16.t), free(w32.t);
    free(f16), free(f32), free(d16), free(d32);
}

// An llm.c shard: int32[256] header, tokens; each document is prefixed with the EOT token.
static Vec write_llmc(const char *path, uint32_t magic, uint32_t version, int w, uint32_t eot, size_t long_len, bool truncate) {
    Vec in = {0}, want = {0};
    push(&in, eot);
    for (uint32_t i = 0; i < 5; i++) push(&in, 100 + i);
    push(&in, eot);
    for (size_t i = 0; i < long_len; i++) push(&in, (uint32_t)(i % 50000));
    push(&in, eot);   // an empty document
    push(&in, eot);
    push(&in, 42);
    unsigned char *b = calloc(1, 1024 + in.n * w);
    wr32(b, magic);
    wr32(b + 4, version);
    wr32(b + 8, (uint32_t)in.n);
    for (size_t i = 0; i < in.n; i++)
        for (int k = 0; k < w; k++) b[1024 + i * w + k] = (unsigned char)(in.t[i] >> (8 * k));
    write_bytes(path, b, 1024 + in.n * w - (truncate ? 1 : 0));
    for (size_t i = 1; i < in.n; i++) push(&want, in.t[i]);   // EOT moves from before each document to after it
    push(&want, eot);
    free(b);
    free(in.t);
    return want;
}

static void test_llmc(const char *dir) {
    char *in = path_join(dir, "llmc"), *g = path_join(in, "fineweb_train_000001.bin"), *l = path_join(dir, "llama.bin"),
         *bad = path_join(dir, "bad.bin"), *dg = path_join(dir, "ds_gpt2"), *dl = path_join(dir, "ds_llama");
    mkdir(in, 0755);
    Vec wg = write_llmc(g, 20240520, 1, 2, 50256, 6000, false), wl = write_llmc(l, 20240801, 7, 4, 128000, 6000, false);
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", dg, "--block-tokens", "1000", "--shard-tokens", "2500", "--quiet", in, NULL) == 0, "prepare llm.c gpt2");
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", dl, "--block-tokens", "1000", "--shard-tokens", "2500", "--quiet", l, NULL) == 0, "prepare llm.c llama3");
    Dataset d;
    Vec gg = read_split(dg, SPLIT_TRAIN, &d);
    CHECK(same(&gg, &wg) && d.docs == 4 && d.vocab_size == 50257 && d.eos_id == 50256 && d.token_bytes == 2 && strcmp(d.tokenizer, "gpt2") == 0,
          "llm.c gpt2 round trip (%zu vs %zu tokens, %" PRIu64 " docs)", gg.n, wg.n, d.docs);
    dataset_close(&d);
    Vec gl = read_split(dl, SPLIT_TRAIN, &d);
    CHECK(same(&gl, &wl) && d.docs == 4 && d.vocab_size == 128256 && d.token_bytes == 4, "llm.c llama3 round trip");
    dataset_close(&d);
    Vec wb = write_llmc(bad, 20240520, 1, 2, 50256, 10, true);
    char *fresh = path_join(dir, "ds_llmc_failed");
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", fresh, "--quiet", bad, NULL) == 2, "truncated llm.c shard is bad input (exit 2)");
    free(write_llmc(bad, 20240520, 3, 2, 50256, 10, false).t);
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", fresh, "--input-kind", "llmc", "--quiet", bad, NULL) == 2, "unsupported llm.c version");
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", fresh, "--quiet", "/nonexistent/input", NULL) == 2, "missing input is a usage error");
    CHECK(access(fresh, F_OK) != 0, "the failed prepares left no directory");
    free(fresh);
    free(wb.t), free(gg.t), free(gl.t), free(wg.t), free(wl.t);
    free(in), free(g), free(l), free(bad), free(dg), free(dl);
}

int main(void) {
    char *dir = temp_dir("prepare");
    test_text(dir);
    test_val_split(dir);
    test_raw(dir);
    test_llmc(dir);
    rm_rf(dir);
    free(dir);
    return test_finish();
}
