// data/textdata.c — a text file as a data source: byte tokens, non-overlapping windows shuffled per epoch.
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "data/source_impl.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    char *path;
    int32_t *tokens;      // (n) this split's tokens
    int64_t n;
    DataOptions opt;
    uint64_t n_samples;   // windows of T+1 tokens per epoch
    uint64_t *order;      // (n_samples) the current epoch's permutation
    uint64_t order_epoch; // which epoch `order` holds; UINT64_MAX = none yet
    DataState state;
    int32_t *sample;      // (T+1) scratch
} TextSource;

// Fisher–Yates from a seed derived from (seed, epoch): sample k is the same on every layout.
static void shuffle_epoch(TextSource *d, uint64_t epoch) {
    if (d->order_epoch == epoch) return;
    for (uint64_t i = 0; i < d->n_samples; i++) d->order[i] = i;
    d->order_epoch = epoch;
    if (d->opt.no_shuffle) return;
    Rng r;
    rng_seed(&r, d->state.seed * 0x9E3779B97F4A7C15ull + epoch + 1);
    for (uint64_t i = d->n_samples - 1; i > 0; i--) {
        uint64_t j = rng_below(&r, i + 1), t = d->order[i];
        d->order[i] = d->order[j];
        d->order[j] = t;
    }
}

// A text file is read as bytes, so a binary file or JSONL records would train silently on the wrong thing:
// both are refused with the command that reads them (prepare skips binary files and parses JSONL).
static void check_plain_text(const char *path, const unsigned char *text, size_t len) {
    size_t head = len < 8192 ? len : 8192;
    const unsigned char *nul = memchr(text, 0, head);
    if (nul)
        fail_usage("%s looks binary (a NUL byte at byte %td), not text; give a text file, or `ringgpt prepare` for token "
                   "files (--input-kind u16|u32|llmc)", path, nul - text);
    size_t at = 0;
    while (at < len && strchr(" \t\r\n", text[at])) at++;
    size_t eol = at;
    while (eol < len && text[eol] != '\n') eol++;
    cJSON *first = at < len && text[at] == '{' ? cJSON_ParseWithLength((const char *)text + at, eol - at) : NULL;
    bool jsonl = cJSON_IsObject(first);
    cJSON_Delete(first);
    size_t n = strlen(path);
    if (jsonl || (n > 6 && strcmp(path + n - 6, ".jsonl") == 0))
        fail_usage("%s looks like JSONL records (its first line is a JSON object); `ringgpt prepare --out DIR %s` makes a "
                   "document of each record, then train --data DIR (prepare --input-kind text keeps the raw text)", path, path);
}

void *text_source_open(const char *path, const DataOptions *o, bool validation) {
    size_t len;
    unsigned char *text = read_whole_file(path, &len);
    if (len == 0) fail_usage("%s is empty; give a text file with at least --seq-len + 1 bytes", path);
    check_plain_text(path, text, len);
    size_t split = len;
    if (o->val_fraction > 0) split = len - (size_t)(len * o->val_fraction);
    size_t lo = validation ? split : 0, hi = validation ? len : split;
    TextSource *d = xcalloc(1, sizeof *d, "a data source");
    d->path = xstrdup(path);
    d->opt = *o;
    d->n = (int64_t)(hi - lo);
    d->tokens = xmalloc((size_t)(d->n ? d->n : 1) * sizeof(int32_t), "text tokens");
    tok_encode(text + lo, hi - lo, d->tokens);
    free(text);
    if (d->n < (int64_t)o->seq_len + 1)
        fail_usage("%s: the %s part has %" PRId64 " tokens, fewer than --seq-len %d + 1; use a shorter --seq-len or more text",
                   path, validation ? "validation" : "training", d->n, o->seq_len);
    d->n_samples = (uint64_t)((d->n - 1) / o->seq_len);
    d->order = xmalloc(d->n_samples * sizeof(uint64_t), "sample order");
    d->order_epoch = UINT64_MAX;
    d->state.seed = o->seed;
    d->sample = xmalloc(((size_t)o->seq_len + 1) * sizeof(int32_t), "sample scratch");
    return d;
}

static void text_next(void *impl, Batch *b) {
    TextSource *d = impl;
    int T = d->opt.seq_len;
    RankSlice slice = {d->opt.sp, d->opt.sp_index, d->opt.placement, d->opt.place_groups};
    for (int row = 0; row < d->opt.batch; row++) {
        uint64_t k = d->state.consumed + (uint64_t)d->opt.dp_index * d->opt.batch + row;
        shuffle_epoch(d, k / d->n_samples);
        uint64_t w = d->order[k % d->n_samples];
        memcpy(d->sample, d->tokens + w * T, ((size_t)T + 1) * sizeof(int32_t));
        batch_put_sample(b, row, d->sample, T, -1, slice);
        b->sample[row] = (int64_t)k;
    }
    d->state.consumed += (uint64_t)d->opt.batch * d->opt.dp;
}

static uint64_t text_num_samples(const void *impl) { return ((const TextSource *)impl)->n_samples; }

static DataState text_state(const void *impl) {
    const TextSource *d = impl;
    DataState s = d->state;
    s.epoch = s.consumed / d->n_samples;
    return s;
}

static void text_restore(void *impl, DataState s) {
    TextSource *d = impl;
    if (s.seed != d->state.seed) d->order_epoch = UINT64_MAX;   // the cached permutation belongs to the old seed
    d->state = s;
}

static void text_close(void *impl) {
    TextSource *d = impl;
    free(d->path);
    free(d->tokens);
    free(d->order);
    free(d->sample);
    free(d);
}

const SourceOps TEXT_SOURCE = {text_next, text_num_samples, text_state, text_restore, text_close};
