// data/prepare_docs.c — prepare's documents: each one's split, and the readers of text, JSONL, raw token and llm.c inputs.
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "core/common.h"
#include "data/prepare_impl.h"
#include "tokenizer/text_encode.h"


void prep_progress(Prep *p) {
    double t = now_seconds();
    if (!p->progress || t - p->last_report < 2.0) return;
    p->last_report = t;
    p->progress(p->ctx, &(PrepareProgress){.in_bytes = p->in_bytes, .docs = p->doc_index, .tokens = p->tokens, .seconds = t - p->t0});
}

// Documents go to the val split at an even spacing: document i when floor((i+1)·f) > floor(i·f).
static void doc_begin(Prep *p) {
    uint64_t i = p->doc_index++;
    bool val = floor((double)(i + 1) * p->val_fraction) > floor((double)i * p->val_fraction);
    dataset_doc_begin(p->w, val ? SPLIT_VAL : SPLIT_TRAIN);
    p->in_doc = true;
}

static void doc_end(Prep *p) {
    dataset_doc_end(p->w);
    p->tokens++;
    p->in_doc = false;
}

static void doc_tokens(Prep *p, const uint32_t *t, size_t n) {
    if (!n) return;
    if (!p->in_doc) doc_begin(p);
    dataset_doc_tokens(p->w, t, n);
    p->tokens += n;
}

void prep_weighted_doc(Prep *p, const uint32_t *t, const uint8_t *weight, size_t n, uint8_t eos_weight) {
    doc_begin(p);
    dataset_doc_tokens_weighted(p->w, t, weight, n);
    dataset_doc_end_weighted(p->w, eos_weight);
    p->tokens += n + 1;
    p->in_doc = false;
}

// Tokens of a raw or llm.c stream, documents delimited by EOS: after each (raw) or before each (llm.c).
static void delimited_tokens(Prep *p, const uint32_t *t, size_t n, bool eos_first) {
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i] != p->eos) continue;
        doc_tokens(p, t + run, i - run);
        if (eos_first) {
            if (p->in_doc) doc_end(p);
            doc_begin(p);
        } else {
            if (!p->in_doc) doc_begin(p);
            doc_end(p);
        }
        run = i + 1;
    }
    doc_tokens(p, t + run, n - run);
}

// A text file as one document of byte tokens.
static void read_text(Prep *p, const char *path) {
    FILE *f = xfopen(path, "rb");
    unsigned char *chunk = xmalloc(PREP_CHUNK_BYTES, "a read buffer");
    doc_begin(p);
    size_t n;
    while ((n = fread(chunk, 1, PREP_CHUNK_BYTES, f)) > 0) {
        for (size_t i = 0; i < n; i++) p->buf[i] = chunk[i];
        doc_tokens(p, p->buf, n);
        p->in_bytes += n;
        prep_progress(p);
    }
    if (ferror(f)) fail_io(path, errno, "read failed");
    doc_end(p);
    fclose(f);
    free(chunk);
}

// Text through a tokenizer.json: a file is a document unless its text holds the EOS token's text
// (<|endoftext|>), which ends one document and starts the next, as in raw token files.
static void bpe_text_piece(void *ctx, size_t file, const uint32_t *ids, size_t n, uint64_t bytes, bool first, bool last) {
    (void)file, (void)first;
    Prep *p = ctx;
    size_t run = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i < n && ids[i] != p->eos) continue;
        if (i > run && !p->in_doc && p->bos >= 0) {   // a document's first tokens: BOS first
            uint32_t bos = (uint32_t)p->bos;
            doc_tokens(p, &bos, 1);
        }
        doc_tokens(p, ids + run, i - run);
        if (i < n) {
            if (!p->in_doc) doc_begin(p);
            doc_end(p);
        }
        run = i + 1;
    }
    if (last && p->in_doc) doc_end(p);
    p->in_bytes += bytes;
    prep_progress(p);
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
    if (p->in_doc) doc_end(p);
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

static void push_id(uint32_t **ids, size_t *n, size_t *cap, uint32_t id) {
    if (*n == *cap) *ids = xrealloc(*ids, (*cap = *cap ? 2 * *cap : 256) * sizeof **ids, "a JSONL record");
    (*ids)[(*n)++] = id;
}

// Appends the ids of a NUL-terminated string: the tokenizer's (BPE), or one per byte (byte260).
static void encode_text(TokEncoder *enc, const char *text, uint32_t **ids, size_t *n, size_t *cap) {
    size_t len = strlen(text);
    if (enc->tok->bpe) tokenizer_encode(enc, (const unsigned char *)text, len, ids, n, cap);
    else
        for (size_t i = 0; i < len; i++) push_id(ids, n, cap, (unsigned char)text[i]);
}

// One prompt/completion record: prompt and completion are encoded apart (the boundary is a token
// boundary), so the mask is exact: the prompt's tokens have loss weight 0, the completion's and the EOS 1.
static void jsonl_record(Prep *p, TokEncoder *enc, const char *prompt, const char *completion) {
    size_t np = 0, nc = 0, id_cap = 0;
    uint32_t *tok = NULL;   // (np + nc) the prompt's ids (BOS first where the tokenizer adds one), then the completion's
    if (p->bos >= 0) push_id(&tok, &np, &id_cap, (uint32_t)p->bos);
    encode_text(enc, prompt, &tok, &np, &id_cap);
    nc = np;
    encode_text(enc, completion, &tok, &nc, &id_cap);
    nc -= np;
    uint8_t *weight = xmalloc(np + nc + 1, "a JSONL record");
    memset(weight, 0, np);
    memset(weight + np, 1, nc);
    prep_weighted_doc(p, tok, weight, np + nc, 1);
    free(tok);
    free(weight);
}

// JSONL prompt/completion records (the fine-tuning case), one document each. Blank lines are skipped.
static void read_jsonl(Prep *p, const char *path, const Tokenizer *t) {
    TokEncoder enc = tokenizer_encoder(t);
    FILE *f = xfopen(path, "rb");
    char *line = NULL;
    size_t cap = 0, line_no = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, f)) > 0) {
        line_no++;
        p->in_bytes += (uint64_t)n;
        if (strspn(line, " \t\r\n") == (size_t)n) continue;
        cJSON *rec = cJSON_ParseWithLength(line, (size_t)n);
        if (!rec) fail_usage("%s: line %zu: not valid JSON; each line must be one {\"prompt\": ..., \"completion\": ...} object", path, line_no);
        const cJSON *pr = cJSON_GetObjectItemCaseSensitive(rec, "prompt"), *co = cJSON_GetObjectItemCaseSensitive(rec, "completion");
        if (!cJSON_IsString(pr) || !cJSON_IsString(co))
            fail_usage("%s: line %zu: the record needs string fields \"prompt\" and \"completion\" (missing or not strings);"
                       " fix the line or remove it", path, line_no);
        jsonl_record(p, &enc, pr->valuestring, co->valuestring);
        cJSON_Delete(rec);
        prep_progress(p);
    }
    if (ferror(f)) fail_io(path, errno, "read failed");
    free(line);
    fclose(f);
    tokenizer_encoder_free(&enc);
}

void prep_read_inputs(Prep *p, const PreparePlan *plan) {
    PrepareKind kind = plan->kind;
    if (kind == PREPARE_TEXT && plan->tok.bpe) {   // on several threads, handed over in order
        encode_files((const char *const *)plan->files, plan->n_files, &plan->tok, plan->spec.threads, (TextSink){bpe_text_piece, p});
        return;
    }
    for (size_t i = 0; i < plan->n_files; i++) {
        const char *path = plan->files[i];
        if (kind == PREPARE_TEXT) read_text(p, path);
        else if (kind == PREPARE_JSONL) read_jsonl(p, path, &plan->tok);
        else if (kind == PREPARE_LLMC) read_llmc(p, path, plan->shard.vocab_size);
        else read_tokens(p, path, kind == PREPARE_U16 ? 2 : 4, 0, plan->shard.vocab_size, false);
    }
}
