// data/prepare_docs.c — prepare's documents: each one's split, into the writer or the spool, and the readers of raw token and llm.c inputs.
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/common.h"
#include "data/prepare_impl.h"


void prep_progress(Prep *p) {
    double t = now_seconds();
    if (!p->progress || t - p->last_report < 2.0) return;
    p->last_report = t;
    p->progress(p->ctx, &(PrepareProgress){.in_bytes = p->in_bytes, .docs = p->doc_index, .tokens = p->tokens, .seconds = t - p->t0});
}

// Documents go to the val split at an even spacing: document i when floor((i+1)·f) > floor(i·f).
static void doc_begin(Prep *p) {
    uint64_t i = p->doc_index++;
    p->in_doc = true;
    if (p->spool) return;   // spooled: the split follows the order the documents are written in at the end
    bool val = floor((double)(i + 1) * p->val_fraction) > floor((double)i * p->val_fraction);
    dataset_doc_begin(p->w, val ? SPLIT_VAL : SPLIT_TRAIN);
}

void prep_doc_tokens(Prep *p, const uint32_t *t, const uint8_t *weight, size_t n) {
    if (!n) return;
    if (!p->in_doc) doc_begin(p);
    if (p->spool) spool_tokens(p->spool, t, weight, n);
    else dataset_doc_tokens_weighted(p->w, t, weight, n);
    p->tokens += n;
}

void prep_doc_end(Prep *p, uint8_t eos_weight) {
    if (!p->in_doc) doc_begin(p);
    if (p->spool) spool_doc_end(p->spool, p->eos, eos_weight);
    else dataset_doc_end_weighted(p->w, eos_weight);
    p->tokens++;
    p->in_doc = false;
}

// Tokens of a raw or llm.c stream, documents delimited by EOS: after each (raw) or before each (llm.c).
static void delimited_tokens(Prep *p, const uint32_t *t, size_t n, bool eos_first) {
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] != p->eos) continue;
        prep_doc_tokens(p, t + run, NULL, i - run);
        if (eos_first) {
            if (p->in_doc) prep_doc_end(p, 1);
            doc_begin(p);
        } else {
            prep_doc_end(p, 1);
        }
        run = i + 1;
    }
    prep_doc_tokens(p, t + run, NULL, n - run);
}

// Raw little-endian tokens of width w from byte `from` to the end; each id checked against vocab.
static void read_tokens(Prep *p, const char *path, int w, uint64_t from, uint32_t vocab, bool eos_first) {
    FILE *f = xfopen(path, "rb");
    if (fseek(f, (long)from, SEEK_SET) != 0) fail_io(path, errno, "seek failed");
    unsigned char *chunk = xmalloc(PREP_CHUNK_BYTES, "a read buffer");
    uint64_t at = from;
    size_t n;
    while ((n = fread(chunk, 1, PREP_CHUNK_BYTES, f)) > 0) {
        if (n % w) fail_data(path, "size is not a multiple of %d bytes: truncated at byte %" PRIu64 "? (a token file holds %d-byte ids)", w,
                             at + n, w);
        size_t k = n / w;
        for (size_t i = 0; i < k; i++) {
            p->buf[i] = w == 2 ? (uint32_t)chunk[2 * i] | (uint32_t)chunk[2 * i + 1] << 8 : rd32(chunk + 4 * i);
            if (p->buf[i] >= vocab)
                fail_data(path, "token at byte %" PRIu64 " has id %u, not below --vocab %u; give the tokenizer's vocab size with --vocab",
                          at + (uint64_t)i * w, p->buf[i], vocab);
        }
        delimited_tokens(p, p->buf, k, eos_first);
        at += n;
        p->in_bytes += n;
        prep_progress(p);
    }
    if (ferror(f)) fail_io(path, errno, "read failed");
    if (p->in_doc) prep_doc_end(p, 1);
    fclose(f);
    free(chunk);
}

// An llm.c .bin shard: int32[256] header (magic, version, ntok), then ntok tokens of 2 or 4 bytes.
static void read_llmc(Prep *p, const char *path, uint32_t vocab) {
    FILE *f = xfopen(path, "rb");
    unsigned char h[LLMC_HEADER_BYTES];
    if (fread(h, 1, sizeof h, f) != sizeof h) fail_data(path, "shorter than the 1024-byte llm.c header: truncated");
    if (fseek(f, 0, SEEK_END) != 0) fail_io(path, errno, "seek failed");
    long end = ftell(f);
    if (end < 0) fail_io(path, errno, "cannot tell the file's size");
    fclose(f);
    uint64_t len = (uint64_t)end;
    uint32_t magic = rd32(h), version = rd32(h + 4), ntok = rd32(h + 8);
    int w = magic == LLMC_GPT2 ? 2 : 4;
    if ((magic == LLMC_GPT2 && version != 1) || (magic == LLMC_LLAMA3 && version != 7) || (magic != LLMC_GPT2 && magic != LLMC_LLAMA3))
        fail_data(path, "header at byte 0: llm.c magic %u version %u is not supported (20240520/1 uint16 or 20240801/7 uint32)", magic, version);
    if (len != LLMC_HEADER_BYTES + (uint64_t)ntok * w)
        fail_data(path, "header at byte 8 says %u tokens (%" PRIu64 " bytes) but the file has %" PRIu64 " bytes: truncated or damaged", ntok,
                  LLMC_HEADER_BYTES + (uint64_t)ntok * w, len);
    read_tokens(p, path, w, LLMC_HEADER_BYTES, vocab, true);
    p->in_bytes += LLMC_HEADER_BYTES;
}

void prep_read_inputs(Prep *p, const PreparePlan *plan) {
    PrepareKind kind = plan->kind;
    if (kind == PREPARE_TEXT || kind == PREPARE_JSONL_TEXT) prep_read_text(p, plan);
    else if (kind == PREPARE_JSONL) prep_read_jsonl(p, plan);
    else
        for (size_t i = 0; i < plan->n_files; i++) {
            const char *path = plan->files[i];
            if (kind == PREPARE_LLMC) read_llmc(p, path, plan->shard.vocab_size);
            else read_tokens(p, path, kind == PREPARE_U16 ? 2 : 4, 0, plan->shard.vocab_size, false);
        }
}
