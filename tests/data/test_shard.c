// tests/data/test_shard.c — shard and dataset round trips (both token widths, documents longer than a block and a shard) and every corruption kind.
#include <inttypes.h>
#include <zlib.h>

#include "core/json_strict.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "testutil.h"

// Reads every token of an open shard through the checked block reader.
static uint32_t *shard_tokens(const Shard *s) {
    uint32_t *all = malloc((s->h.num_tokens + 1) * sizeof(uint32_t));
    void *raw = malloc(shard_raw_bytes(&s->h, s->h.block_tokens) + 4), *comp = malloc(shard_max_comp_bytes(s));
    int32_t *tok = malloc((size_t)s->h.block_tokens * 4);
    DataErr e;
    for (uint64_t i = 0; i < s->h.num_blocks; i++) {
        if (shard_read_block(s, i, raw, comp, &e)) {
            fprintf(stderr, "%s\n", e.msg);
            exit(1);
        }
        shard_decode_tokens(&s->h, raw, s->blocks[i].n_tokens, UINT32_MAX, tok);
        for (uint32_t j = 0; j < s->blocks[i].n_tokens; j++) all[s->blocks[i].first_token + j] = (uint32_t)tok[j];
    }
    free(raw);
    free(comp);
    free(tok);
    return all;
}

// Documents of random lengths (some longer than a block); returns the expected stream with EOS after each.
static uint32_t *make_docs(Rng *r, int n_docs, uint32_t vocab, uint32_t eos, uint64_t *n_out, uint64_t **starts, int long_len) {
    uint64_t cap = 1 << 20, n = 0;
    uint32_t *s = malloc(cap * sizeof *s);
    *starts = malloc((size_t)n_docs * sizeof **starts);
    for (int d = 0; d < n_docs; d++) {
        uint64_t len = d % 7 == 3 ? (uint64_t)long_len : rng_below(r, 300);
        (*starts)[d] = n;
        for (uint64_t i = 0; i < len; i++) {
            uint32_t t = (uint32_t)rng_below(r, vocab);
            s[n++] = t == eos ? 0 : t;
        }
        s[n++] = eos;
    }
    *n_out = n;
    return s;
}

static void test_shard_roundtrip(const char *dir, uint32_t tb, uint32_t vocab, bool planes) {
    Rng r;
    rng_seed(&r, tb);
    uint64_t n, *starts;
    int n_docs = 40;
    uint32_t eos = vocab - 1;
    uint32_t *want = make_docs(&r, n_docs, vocab, eos, &n, &starts, 3500);
    char name[32];
    snprintf(name, sizeof name, "w%u%s.rgs", tb, planes ? "p" : "");
    char *path = path_join(dir, name);
    ShardParams p = {.token_bytes = tb, .block_tokens = 1000, .vocab_size = vocab, .eos_id = eos, .level = 6, .byte_planes = planes, .tokenizer = "test"};
    ShardWriter *w = shard_writer_open(path, &p, false);
    for (int d = 0; d < n_docs; d++) {
        uint64_t end = d + 1 < n_docs ? starts[d + 1] : n;
        shard_writer_doc_start(w);
        shard_writer_tokens(w, want + starts[d], (size_t)(end - starts[d]));
    }
    ShardSummary sum = shard_writer_close(w);
    CHECK(sum.num_tokens == n && sum.num_docs == (uint64_t)n_docs, "summary %" PRIu64 " tokens %" PRIu64 " docs", sum.num_tokens, sum.num_docs);
    DataErr e;
    Shard *s = shard_open(path, &e);
    CHECK(s != NULL, "open: %s", e.msg);
    if (!s) return;
    CHECK(s->h.codec == (planes ? SHARD_CODEC_ZLIB_PLANES : SHARD_CODEC_ZLIB), "codec");
    CHECK(s->h.token_bytes == tb && s->h.vocab_size == vocab && s->h.eos_id == eos && strcmp(s->h.tokenizer, "test") == 0, "header fields");
    CHECK(s->h.num_blocks == (n + 999) / 1000, "blocks %" PRIu64, s->h.num_blocks);
    uint32_t *got = shard_tokens(s);
    CHECK(memcmp(got, want, n * 4) == 0, "tokens round trip (width %u)", tb);
    CHECK(memcmp(s->doc_start, starts, (size_t)n_docs * 8) == 0, "document index round trip");
    int32_t last;
    CHECK(shard_verify(s, &last, &e) == 0, "verify: %s", e.msg);
    CHECK(last == (int32_t)eos, "last token is EOS");
    size_t fb;
    unsigned char *bytes = read_bytes(path, &fb);
    CHECK(fb == sum.file_bytes && (uint32_t)crc32(0, bytes, (uInt)fb) == sum.file_crc, "file size and CRC in the summary");
    free(bytes);
    shard_close(s);
    free(got);
    free(want);
    free(starts);
    free(path);
}

// Through the dataset writer: documents longer than a shard, a val split, the manifest.
static void test_dataset_roundtrip(const char *dir) {
    Rng r;
    rng_seed(&r, 7);
    uint64_t n, *starts;
    int n_docs = 30;
    uint32_t *want = make_docs(&r, n_docs, 260, 256, &n, &starts, 9000);
    char *ds = path_join(dir, "ds");
    ShardParams p = {.token_bytes = 2, .block_tokens = 1000, .vocab_size = 260, .eos_id = 256, .level = 1, .tokenizer = "byte260"};
    DatasetWriter *w = dataset_writer_open(ds, &p, 2500);
    for (int d = 0; d < n_docs; d++) {
        uint64_t end = d + 1 < n_docs ? starts[d + 1] : n;
        dataset_doc(w, SPLIT_TRAIN, want + starts[d], (size_t)(end - starts[d] - 1));   // the writer adds EOS
    }
    uint32_t v[3] = {1, 2, 3};
    dataset_doc(w, SPLIT_VAL, v, 3);
    SplitSummary sums[N_SPLITS];
    dataset_writer_close(w, sums);
    CHECK(sums[SPLIT_TRAIN].tokens == n && sums[SPLIT_TRAIN].docs == (uint64_t)n_docs, "train summary");
    CHECK(sums[SPLIT_TRAIN].shards == (n + 2499) / 2500, "train shards %" PRIu64, sums[SPLIT_TRAIN].shards);
    CHECK(sums[SPLIT_VAL].tokens == 4 && sums[SPLIT_VAL].docs == 1, "val summary");
    Dataset d;
    DataErr e;
    CHECK(dataset_open(ds, SPLIT_TRAIN, &d, &e) == 0, "dataset open: %s", e.msg);
    uint64_t at = 0, docs = 0;
    bool same = true;
    for (size_t i = 0; i < d.n; i++) {
        uint32_t *got = shard_tokens(d.shards[i]);
        same = same && memcmp(got, want + at, d.shards[i]->h.num_tokens * 4) == 0;
        for (uint64_t k = 0; k < d.shards[i]->h.num_docs; k++) same = same && d.shards[i]->doc_start[k] + at == starts[docs + k];
        at += d.shards[i]->h.num_tokens;
        docs += d.shards[i]->h.num_docs;
        free(got);
    }
    CHECK(same && at == n && docs == (uint64_t)n_docs, "dataset stream and document starts round trip across shards");
    CHECK(dataset_verify(&d, false, &e) == 0, "dataset verify: %s", e.msg);
    dataset_close(&d);
    CHECK(dataset_open(ds, SPLIT_VAL, &d, &e) == 0 && d.tokens == 4, "val split opens");
    dataset_close(&d);
    free(want);
    free(starts);
    free(ds);
}

// Writes bytes to path, opens it and verifies; returns 0 if everything passed, else -1 with e.
static int open_verify(const char *path, const unsigned char *b, size_t n, DataErr *e) {
    write_bytes(path, b, n);
    Shard *s = shard_open(path, e);
    if (!s) return -1;
    int32_t last;
    int rc = shard_verify(s, &last, e);
    shard_close(s);
    return rc;
}

static void recompute_index_crc(unsigned char *b, size_t n) {
    uint64_t bi = rd64(b + 64), tr = rd64(b + 80);
    wr32(b + tr, (uint32_t)crc32(0, b + bi, (uInt)(tr - bi)));
    (void)n;
}

static void test_corruption(const char *dir, const char *name) {
    char *path = path_join(dir, name), *bad = path_join(dir, "bad.rgs");
    size_t n;
    unsigned char *orig = read_bytes(path, &n), *b = malloc(n);
    DataErr e;
    Shard *s = shard_open(path, &e);
    ShardHeader h = s->h;
    int missed = 0;
    // Every header byte.
    for (size_t i = 0; i < SHARD_HEADER_BYTES; i++) {
        memcpy(b, orig, n);
        b[i] ^= 0x5a;
        if (open_verify(bad, b, n, &e) == 0 || !strstr(e.msg, "byte")) missed++;
    }
    CHECK(missed == 0, "%d header byte flips not detected", missed);
    // A byte in the middle of every block: the message names that block and its offset.
    missed = 0;
    for (uint64_t i = 0; i < h.num_blocks; i++) {
        memcpy(b, orig, n);
        b[s->blocks[i].offset + s->blocks[i].comp_bytes / 2] ^= 0x01;
        char want[96];
        snprintf(want, sizeof want, "block %" PRIu64 " at byte %" PRIu64 ":", i, s->blocks[i].offset);
        if (open_verify(bad, b, n, &e) == 0 || !strstr(e.msg, want)) missed++, fprintf(stderr, "block %" PRIu64 ": %s\n", i, e.msg);
    }
    CHECK(missed == 0, "%d block flips not detected or misreported", missed);
    // Every byte of both indexes and the trailer.
    missed = 0;
    for (uint64_t i = h.block_index_offset; i < h.file_bytes; i++) {
        memcpy(b, orig, n);
        b[i] ^= 0x10;
        if (open_verify(bad, b, n, &e) == 0 || !strstr(e.msg, "byte")) missed++;
    }
    CHECK(missed == 0, "%d index/trailer byte flips not detected", missed);
    // An index entry that is wrong but carries a valid CRC: the per-entry checks must still catch it.
    memcpy(b, orig, n);
    wr64(b + h.block_index_offset + 32 + 8, rd64(b + h.block_index_offset + 32 + 8) + 1);   // block 1 first_token
    recompute_index_crc(b, n);
    CHECK(open_verify(bad, b, n, &e) != 0 && strstr(e.msg, "block 1 (index entry at byte"), "consistent-CRC block entry: %s", e.msg);
    memcpy(b, orig, n);
    wr64(b + h.doc_index_offset + 3 * 8, rd64(b + h.doc_index_offset + 3 * 8) + 1);
    recompute_index_crc(b, n);
    CHECK(open_verify(bad, b, n, &e) != 0 && strstr(e.msg, "EOS at token"), "doc index vs EOS: %s", e.msg);
    // A token id >= vocab: shrink the header's vocab (with a valid header CRC).
    memcpy(b, orig, n);
    wr32(b + 28, 200);
    wr32(b + 32, 0);
    wr32(b + 252, (uint32_t)crc32(0, b, 252));
    CHECK(open_verify(bad, b, n, &e) != 0 && strstr(e.msg, "not below the vocab size 200") && strstr(e.msg, "block 0 at byte 256"),
          "token >= vocab: %s", e.msg);
    // Truncation at many offsets, and a byte appended.
    missed = 0;
    for (size_t cut = 0; cut < n; cut += cut < 300 ? 1 : 97) {
        if (open_verify(bad, orig, cut, &e) == 0 || !(strstr(e.msg, "truncated") || strstr(e.msg, "smaller"))) missed++;
    }
    CHECK(missed == 0, "%d truncations not detected", missed);
    memcpy(b, orig, n);
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, orig, n);
    longer[n] = 0;
    CHECK(open_verify(bad, longer, n + 1, &e) != 0 && strstr(e.msg, "longer than written"), "appended byte: %s", e.msg);
    // Wrong magic and unsupported version get their own messages.
    memcpy(b, orig, n);
    b[0] = 'X';
    CHECK(open_verify(bad, b, n, &e) != 0 && strstr(e.msg, "not a ringgpt shard"), "magic: %s", e.msg);
    memcpy(b, orig, n);
    b[8] = 9;
    CHECK(open_verify(bad, b, n, &e) != 0 && strstr(e.msg, "unsupported shard version 9"), "version: %s", e.msg);
    char *missing = path_join(dir, "missing.rgs");
    CHECK(shard_open(missing, &e) == NULL && strstr(e.msg, "cannot open"), "missing file: %s", e.msg);
    free(missing);
    shard_close(s);
    free(longer);
    free(orig);
    free(b);
    free(path);
    free(bad);
}

// Version 2 loss weights: a round trip through writer and reader (tokens and weights, both codecs),
// a version-1 shard still reads (weight 1 everywhere), a weight other than 0/1 is caught by the verifier.
static void test_weights(const char *dir) {
    Rng r;
    rng_seed(&r, 11);
    uint64_t n, *starts;
    int n_docs = 30;
    uint32_t *want = make_docs(&r, n_docs, 300, 299, &n, &starts, 2500);
    uint8_t *wt = malloc(n);
    for (uint64_t i = 0; i < n; i++) wt[i] = rng_below(&r, 5) == 0;   // runs and singletons
    for (int level = 0; level <= 6; level += 6) {
        char *path = path_join(dir, level ? "w2w.rgs" : "w2w0.rgs");
        ShardParams p = {.token_bytes = 2, .block_tokens = 1000, .vocab_size = 300, .eos_id = 299, .level = level, .byte_planes = level > 0,
                         .weights = true, .tokenizer = "test"};
        ShardWriter *w = shard_writer_open(path, &p, false);
        for (int d = 0; d < n_docs; d++) {
            uint64_t end = d + 1 < n_docs ? starts[d + 1] : n;
            shard_writer_doc_start(w);
            shard_writer_tokens_weighted(w, want + starts[d], wt + starts[d], (size_t)(end - starts[d]));
        }
        shard_writer_close(w);
        DataErr e;
        Shard *s = shard_open(path, &e);
        CHECK(s && s->h.version == 2 && shard_has_weights(&s->h), "weighted shard opens as version 2 with weights: %s", s ? "" : e.msg);
        if (!s) return;
        uint32_t *got = shard_tokens(s);
        CHECK(memcmp(got, want, n * 4) == 0, "tokens round trip with weights (level %d)", level);
        void *raw = malloc(shard_raw_bytes(&s->h, 1000)), *comp = malloc(shard_max_comp_bytes(s));
        uint8_t wb[1000];
        int bad = 0;
        for (uint64_t i = 0; i < s->h.num_blocks; i++) {
            shard_read_block(s, i, raw, comp, &e);
            bad += shard_decode_weights(&s->h, raw, s->blocks[i].n_tokens, wb) >= 0;
            bad += memcmp(wb, wt + s->blocks[i].first_token, s->blocks[i].n_tokens) != 0;
        }
        CHECK(bad == 0, "weights round trip (level %d)", level);
        int32_t last;
        CHECK(shard_verify(s, &last, &e) == 0, "verify a weighted shard: %s", e.msg);
        if (level == 0) {
            // Stored (level 0) deflate keeps raw bytes verbatim after a 5-byte block header: set one weight to 2
            // and make every CRC agree, so only the weight check can object.
            size_t fn;
            unsigned char *b = read_bytes(path, &fn);
            const ShardBlock *blk = &s->blocks[1];
            unsigned char *c = b + blk->offset, *rawb = c + 5;
            rawb[2 * blk->n_tokens + 7] = 2;
            unsigned char *entry = b + s->h.block_index_offset + 32;
            wr32(entry + 24, (uint32_t)crc32(0, c, blk->comp_bytes));
            wr32(entry + 28, (uint32_t)crc32(0, rawb, (uInt)shard_raw_bytes(&s->h, blk->n_tokens)));
            recompute_index_crc(b, fn);
            char *badp = path_join(dir, "badw.rgs");
            CHECK(open_verify(badp, b, fn, &e) != 0 && strstr(e.msg, "block 1 at byte") && strstr(e.msg, "loss weight 2, not 0 or 1"),
                  "a weight of 2 under valid CRCs: %s", e.msg);
            free(badp);
            free(b);
        }
        free(raw);
        free(comp);
        free(got);
        shard_close(s);
        free(path);
    }
    // Version 1: a shard without weights, its header saying version 1, reads with weight 1 everywhere.
    char *path = path_join(dir, "w2.rgs"), *v1 = path_join(dir, "v1.rgs");
    size_t fn;
    unsigned char *b = read_bytes(path, &fn);
    wr32(b + 8, 1);
    wr32(b + 252, (uint32_t)crc32(0, b, 252));
    DataErr e;
    CHECK(open_verify(v1, b, fn, &e) == 0, "a version-1 shard opens and verifies: %s", e.msg);
    Shard *s = shard_open(v1, &e);
    if (s) {
        void *raw = malloc(shard_raw_bytes(&s->h, s->h.block_tokens)), *comp = malloc(shard_max_comp_bytes(s));
        uint8_t *wb = malloc(s->h.block_tokens);
        shard_read_block(s, 0, raw, comp, &e);
        shard_decode_weights(&s->h, raw, s->blocks[0].n_tokens, wb);
        CHECK(s->h.version == 1 && !shard_has_weights(&s->h) && wb[0] == 1 && wb[s->blocks[0].n_tokens - 1] == 1,
              "version 1 reads with weight 1 everywhere");
        free(raw);
        free(comp);
        free(wb);
        shard_close(s);
    }
    wr32(b + 36, rd32(b + 36) | SHARD_FLAG_WEIGHTS);   // the weights flag does not exist in version 1
    wr32(b + 252, (uint32_t)crc32(0, b, 252));
    CHECK(open_verify(v1, b, fn, &e) != 0 && strstr(e.msg, "unknown flags"), "version 1 with the weights flag: %s", e.msg);
    free(b);
    free(path);
    free(v1);
    free(want);
    free(wt);
    free(starts);
}

// An edited manifest gets a new manifest_crc32, so that the shard check (not the manifest's own CRC) fires.
static void reseal(char *text) {
    cJSON *r = cJSON_Parse(text);
    char hex[16], *at = strstr(text, "\"" MANIFEST_CRC_KEY "\":\t\"");
    snprintf(hex, sizeof hex, "%08x", json_crc_without(r, MANIFEST_CRC_KEY));
    memcpy(at + strlen("\"" MANIFEST_CRC_KEY "\":\t\""), hex, 8);
    cJSON_Delete(r);
}

// The manifest must agree with its shards.
static void test_manifest(const char *dir) {
    char *ds = path_join(dir, "ds"), *m = path_join(ds, MANIFEST_NAME), *shard = path_join(ds, "train_000001.rgs");
    size_t n;
    char *orig = (char *)read_bytes(m, &n);
    orig[n] = 0;
    Dataset d;
    DataErr e;
    char *edited = malloc(n + 16), *at = strstr(orig, "\"tokens\":");
    // The first "tokens" is the train split total; change the first shard's instead.
    at = strstr(strstr(orig, "\"shards\""), "\"tokens\":");
    size_t off = (size_t)(at - orig) + strlen("\"tokens\":");
    memcpy(edited, orig, off);
    size_t k = off;
    while (orig[k] == ' ' || orig[k] == '\t' || (orig[k] >= '0' && orig[k] <= '9')) k++;
    sprintf(edited + off, "\t1%s", orig + k);
    reseal(edited);
    write_bytes(m, edited, strlen(edited));
    CHECK(dataset_open(ds, SPLIT_TRAIN, &d, &e) != 0 && strstr(e.msg, "disagree") && strstr(e.msg, "train_000000.rgs"),
          "manifest vs shard: %s", e.msg);
    write_bytes(m, "{not json", 9);
    CHECK(dataset_open(ds, SPLIT_TRAIN, &d, &e) != 0 && strstr(e.msg, "not a valid JSON"), "bad JSON: %s", e.msg);
    write_bytes(m, orig, n);
    size_t sn;
    unsigned char *sb = read_bytes(shard, &sn);
    write_bytes(shard, sb, sn / 2);
    CHECK(dataset_open(ds, SPLIT_TRAIN, &d, &e) != 0 && strstr(e.msg, "train_000001.rgs") && strstr(e.msg, "truncated"),
          "truncated shard in a dataset: %s", e.msg);
    unlink(shard);
    CHECK(dataset_open(ds, SPLIT_TRAIN, &d, &e) != 0 && strstr(e.msg, "train_000001.rgs: cannot open"), "missing shard: %s", e.msg);
    write_bytes(shard, sb, sn);
    CHECK(dataset_open(ds, SPLIT_TRAIN, &d, &e) == 0, "restored dataset opens: %s", e.msg);
    dataset_close(&d);
    free(sb);
    free(orig);
    free(edited);
    free(m);
    free(ds);
    free(shard);
}

int main(void) {
    char *dir = temp_dir("shard");
    test_shard_roundtrip(dir, 2, 300, false);
    test_shard_roundtrip(dir, 4, 100000, false);
    test_shard_roundtrip(dir, 2, 300, true);
    test_shard_roundtrip(dir, 4, 100000, true);
    test_dataset_roundtrip(dir);
    test_corruption(dir, "w2.rgs");
    test_weights(dir);
    test_corruption(dir, "w2w.rgs");
    test_manifest(dir);
    rm_rf(dir);
    free(dir);
    return test_finish();
}
