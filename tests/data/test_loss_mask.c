// tests/data/test_loss_mask.c — loss masks end to end: JSONL -> weighted shards -> masked targets -> the training loss is the mean over selected targets.
#include <inttypes.h>
#include <math.h>

#include "data/dataset.h"
#include "data/source.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "testutil.h"
#include "cli/commands.h"

enum { T = 64, B = 2, RECORDS = 40 };

// Records "prompt": 20..59 letters, "completion": 3..12 digits; returns the expected token stream and weights.
static size_t write_jsonl(const char *path, uint32_t *tok, uint8_t *w) {
    FILE *f = fopen(path, "w");
    size_t n = 0;
    for (int r = 0; r < RECORDS; r++) {
        char prompt[64], comp[16];
        int np = 20 + (r * 7) % 40, nc = 3 + (r * 5) % 10;
        for (int i = 0; i < np; i++) prompt[i] = (char)('a' + (r + i * 3) % 26);
        for (int i = 0; i < nc; i++) comp[i] = (char)('0' + (r + i) % 10);
        prompt[np] = comp[nc] = 0;
        fprintf(f, "{\"prompt\": \"%s\", \"completion\": \"%s\"}\n", prompt, comp);
        for (int i = 0; i < np; i++) tok[n] = (unsigned char)prompt[i], w[n++] = 0;
        for (int i = 0; i < nc; i++) tok[n] = (unsigned char)comp[i], w[n++] = 1;
        tok[n] = 256, w[n++] = 1;   // EOS ends the completion and counts
    }
    fclose(f);
    return n;
}

// The stored stream and weights equal what the records say.
static void test_jsonl_roundtrip(const char *ds, const uint32_t *want, const uint8_t *want_w, size_t n) {
    Dataset d;
    DataErr e;
    CHECK(dataset_open(ds, SPLIT_TRAIN, &d, &e) == 0, "open: %s", e.msg);
    CHECK(d.weights && d.tokens == n && d.docs == RECORDS, "JSONL dataset: %" PRIu64 " tokens, %" PRIu64 " docs, weights", d.tokens, d.docs);
    const Shard *s = d.shards[0];
    void *raw = malloc(shard_raw_bytes(&s->h, s->h.block_tokens)), *comp = malloc(shard_max_comp_bytes(s));
    int32_t *tok = malloc(s->h.block_tokens * sizeof(int32_t));
    uint8_t *w = malloc(s->h.block_tokens);
    int bad = 0;
    for (uint64_t b = 0; b < s->h.num_blocks; b++) {
        shard_read_block(s, b, raw, comp, &e);
        shard_decode_tokens(&s->h, raw, s->blocks[b].n_tokens, 260, tok);
        shard_decode_weights(&s->h, raw, s->blocks[b].n_tokens, w);
        for (uint32_t i = 0; i < s->blocks[b].n_tokens; i++) {
            uint64_t t = s->blocks[b].first_token + i;
            bad += (uint32_t)tok[i] != want[t] || w[i] != want_w[t];
        }
    }
    CHECK(bad == 0, "JSONL tokens and weights round trip (%d wrong): prompt 0, completion and EOS 1", bad);
    free(raw);
    free(comp);
    free(tok);
    free(w);
    dataset_close(&d);
}

// The first step's loss as metrics.jsonl records it.
static double first_loss(const char *out) {
    char *m = path_join(out, "metrics.jsonl");
    size_t n;
    char *text = (char *)read_bytes(m, &n);
    double loss = NAN;
    const char *at = text ? strstr(text, "\"loss\": ") : NULL;
    if (at) loss = strtod(at + 8, NULL);
    free(text);
    free(m);
    return loss;
}

// Hand computation: per-token losses of the initial model on the unmasked batch, averaged over the
// targets the weights select; `ringgpt train` must report the same first-step loss.
static void test_masked_loss(const char *dir, const char *ds) {
    ModelConfig c;
    config_preset(&c, "tiny");
    c.vocab_size = 260;
    GPT m;
    gpt_init(&m, &c, &BACKEND_CPU, 1337, GPT_TRAIN);
    DataOptions o = {.seq_len = T, .batch = B, .seed = 1337, .dp = 1, .sp = 1, .loss_on_all = true};
    DataSource *all = data_open(ds, &o, false);
    o.loss_on_all = false;
    DataSource *masked = data_open(ds, &o, false);
    Batch ba = batch_alloc(B, T), bm = batch_alloc(B, T);
    data_next(all, &ba);
    data_next(masked, &bm);
    float losses[B * T];
    gpt_forward(&m, &ba, 0, false, losses);
    double sum_m = 0, sum_a = 0;
    int n_m = 0, bad = 0;
    for (int i = 0; i < B * T; i++) {
        sum_a += losses[i];
        bad += bm.targets[i] >= 0 && bm.targets[i] != ba.targets[i];
        if (bm.targets[i] >= 0) sum_m += losses[i], n_m++;
    }
    CHECK(bad == 0 && n_m > 0 && n_m < B * T, "the masked batch keeps %d of %d targets unchanged", n_m, B * T);
    double want_m = sum_m / n_m, want_a = sum_a / (B * T);
    char *out_m = path_join(dir, "run_masked"), *out_a = path_join(dir, "run_all");
    CHECK(run_cmd(cmd_train, "train", "--data", ds, "--model", "tiny", "--seq-len", "64", "--batch", "2", "--steps", "1",
                  "--val-fraction", "0", "--threads", "1", "--device", "cpu", "--out", out_m, NULL) == 0, "train --loss-on masked");
    CHECK(run_cmd(cmd_train, "train", "--data", ds, "--model", "tiny", "--seq-len", "64", "--batch", "2", "--steps", "1",
                  "--val-fraction", "0", "--threads", "1", "--device", "cpu", "--loss-on", "all", "--out", out_a, NULL) == 0,
          "train --loss-on all");
    double got_m = first_loss(out_m), got_a = first_loss(out_a);
    CHECK(fabs(got_m - want_m) < 2e-5, "masked loss %.6f = hand-computed mean over %d selected targets %.6f", got_m, n_m, want_m);
    CHECK(fabs(got_a - want_a) < 2e-5, "--loss-on all loss %.6f = mean over all %d targets %.6f", got_a, B * T, want_a);
    CHECK(fabs(want_m - want_a) > 1e-3, "the two losses differ (%.4f vs %.4f), so the test can tell them apart", want_m, want_a);
    batch_free(&ba);
    batch_free(&bm);
    data_close(all);
    data_close(masked);
    gpt_free(&m);
    free(out_m);
    free(out_a);
}

int main(void) {
    char *dir = temp_dir("lossmask"), *js = path_join(dir, "qa.jsonl"), *ds = path_join(dir, "ds");
    uint32_t *tok = malloc(RECORDS * 80 * sizeof *tok);
    uint8_t *w = malloc(RECORDS * 80);
    size_t n = write_jsonl(js, tok, w);
    CHECK(run_cmd(cmd_prepare, "prepare", "--out", ds, "--val-fraction", "0", "--quiet", js, NULL) == 0, "prepare a JSONL file (kind from the extension)");
    test_jsonl_roundtrip(ds, tok, w, n);
    test_masked_loss(dir, ds);
    rm_rf(dir);
    free(tok);
    free(w);
    free(js);
    free(ds);
    free(dir);
    return test_finish();
}
