// data/shard_writer.c — writes one shard: zlib blocks with CRCs, block and document indexes, trailer, header; atomic.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/common.h"
#include "data/shard.h"

struct ShardWriter {
    char *path, *tmp;
    FILE *f;
    ShardParams p;
    char tokenizer[32];
    bool continues;
    uint32_t *pending;          // (block_tokens) tokens of the block being filled
    uint8_t *pending_w;         // (block_tokens) their loss weights (p.weights only)
    size_t n_pending;
    unsigned char *raw, *comp;  // encode / compress scratch
    size_t comp_cap;
    ShardBlock *blocks;
    size_t n_blocks, cap_blocks;
    uint64_t *docs;
    size_t n_docs, cap_docs;
    uint64_t tokens;            // tokens accepted so far
    uint64_t offset;            // bytes written so far
    uint32_t body_crc;          // CRC32 of everything after the header
    uint32_t index_crc;         // CRC32 of the block and document indexes (the trailer's first word)
    z_stream z;                 // one deflater, reset per block
};

static void put(ShardWriter *w, const void *p, size_t n) {
    xfwrite(p, n, w->f, w->tmp);
    w->body_crc = (uint32_t)crc32(w->body_crc, p, (uInt)n);
    w->offset += n;
}

ShardWriter *shard_writer_open(const char *path, const ShardParams *p, bool continues_doc) {
    if (p->token_bytes != 2 && p->token_bytes != 4) fail("shard token width must be 2 or 4 bytes, not %u", p->token_bytes);
    if (p->token_bytes == 2 && p->vocab_size > 65536) fail("vocab %u does not fit 2-byte tokens", p->vocab_size);
    if (p->block_tokens == 0 || p->block_tokens > (1u << 28)) fail("--block-tokens must be in 1..2^28, not %u", p->block_tokens);
    ShardWriter *w = xcalloc(1, sizeof *w, "a shard writer");
    w->p = *p;
    snprintf(w->tokenizer, sizeof w->tokenizer, "%s", p->tokenizer ? p->tokenizer : "");
    w->continues = continues_doc;
    w->path = xstrdup(path);
    size_t n = strlen(path) + 5;
    w->tmp = xmalloc(n, "a path");
    snprintf(w->tmp, n, "%s.tmp", path);
    w->f = xfopen(w->tmp, "wb");
    w->pending = xmalloc((size_t)p->block_tokens * sizeof(uint32_t), "a shard block");
    size_t raw_max = (size_t)p->block_tokens * (p->token_bytes + (p->weights ? 1 : 0));
    if (p->weights) w->pending_w = xmalloc(p->block_tokens, "a shard block");
    w->raw = xmalloc(raw_max, "a shard block");
    w->comp_cap = deflateBound(NULL, (uLong)raw_max) + 64;
    if (p->level < 0 || p->level > 9 || deflateInit2(&w->z, p->level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        fail("zlib cannot start deflating at level %d (levels are 0..9)", p->level);
    w->comp = xmalloc(w->comp_cap, "a compressed block");
    unsigned char zero[SHARD_HEADER_BYTES] = {0};
    xfwrite(zero, sizeof zero, w->f, w->tmp);   // the header is written last, once the offsets are known
    w->offset = SHARD_HEADER_BYTES;
    return w;
}

static void flush_block(ShardWriter *w) {
    if (!w->n_pending) return;
    size_t tb = w->p.token_bytes, raw_n = w->n_pending * tb;
    size_t n = w->n_pending;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < tb; k++) {
            unsigned char byte = (unsigned char)(w->pending[i] >> (8 * k));
            if (w->p.byte_planes) w->raw[k * n + i] = byte;
            else w->raw[tb * i + k] = byte;
        }
    if (w->p.weights) {   // the weight plane follows the token bytes
        memcpy(w->raw + raw_n, w->pending_w, n);
        raw_n += n;
    }
    // Raw deflate (RFC 1951, no zlib header or Adler-32): the block's own CRCs already cover it.
    z_stream *z = &w->z;
    z->next_in = w->raw;
    z->avail_in = (uInt)raw_n;
    z->next_out = w->comp;
    z->avail_out = (uInt)w->comp_cap;
    int zr = deflate(z, Z_FINISH);
    if (zr != Z_STREAM_END) fail_data(w->tmp, "zlib deflate failed (%s) at block %zu", zError(zr), w->n_blocks);
    uLong comp_n = z->total_out;
    if (deflateReset(z) != Z_OK) fail_data(w->tmp, "zlib deflateReset failed at block %zu", w->n_blocks);
    if (w->n_blocks == w->cap_blocks) {
        w->cap_blocks = w->cap_blocks ? 2 * w->cap_blocks : 64;
        w->blocks = xrealloc(w->blocks, w->cap_blocks * sizeof *w->blocks, "the block index");
    }
    w->blocks[w->n_blocks++] = (ShardBlock){.offset = w->offset, .first_token = w->tokens - w->n_pending,
                                            .comp_bytes = (uint32_t)comp_n, .n_tokens = (uint32_t)w->n_pending,
                                            .crc_comp = (uint32_t)crc32(0, w->comp, comp_n),
                                            .crc_raw = (uint32_t)crc32(0, w->raw, raw_n)};
    put(w, w->comp, comp_n);
    w->n_pending = 0;
}

void shard_writer_doc_start(ShardWriter *w) {
    if (w->n_docs == w->cap_docs) {
        w->cap_docs = w->cap_docs ? 2 * w->cap_docs : 1024;
        w->docs = xrealloc(w->docs, w->cap_docs * sizeof *w->docs, "the document index");
    }
    w->docs[w->n_docs++] = w->tokens;
}

void shard_writer_tokens(ShardWriter *w, const uint32_t *tok, size_t n) { shard_writer_tokens_weighted(w, tok, NULL, n); }

void shard_writer_tokens_weighted(ShardWriter *w, const uint32_t *tok, const uint8_t *weight, size_t n) {
    if (weight && !w->p.weights) fail("internal: loss weights given to a shard opened without weights");
    while (n) {
        size_t k = w->p.block_tokens - w->n_pending;
        if (k > n) k = n;
        for (size_t i = 0; i < k; i++)
            if (tok[i] >= w->p.vocab_size)
                fail_data(w->path, "token %" PRIu64 " has id %u, not below the vocab size %u; pass the right --vocab",
                          w->tokens + i, tok[i], w->p.vocab_size);
        memcpy(w->pending + w->n_pending, tok, k * sizeof *tok);
        if (w->p.weights)
            for (size_t i = 0; i < k; i++) {
                uint8_t x = weight ? weight[i] : 1;
                if (x > 1) fail_data(w->path, "token %" PRIu64 " has loss weight %u; weights are 0 or 1", w->tokens + i, x);
                w->pending_w[w->n_pending + i] = x;
            }
        if (weight) weight += k;
        w->n_pending += k;
        w->tokens += k;
        tok += k;
        n -= k;
        if (w->n_pending == w->p.block_tokens) flush_block(w);
    }
}

uint64_t shard_writer_count(const ShardWriter *w) { return w->tokens; }

static void write_indexes(ShardWriter *w, ShardHeader *h) {
    unsigned char e[SHARD_BLOCK_ENTRY_BYTES], d[8], tr[SHARD_TRAILER_BYTES] = {0};
    uint32_t icrc = 0;
    h->block_index_offset = w->offset;
    for (size_t i = 0; i < w->n_blocks; i++) {
        const ShardBlock *b = &w->blocks[i];
        wr64(e, b->offset);
        wr64(e + 8, b->first_token);
        wr32(e + 16, b->comp_bytes);
        wr32(e + 20, b->n_tokens);
        wr32(e + 24, b->crc_comp);
        wr32(e + 28, b->crc_raw);
        icrc = (uint32_t)crc32(icrc, e, sizeof e);
        put(w, e, sizeof e);
    }
    h->doc_index_offset = w->offset;
    for (size_t i = 0; i < w->n_docs; i++) {
        wr64(d, w->docs[i]);
        icrc = (uint32_t)crc32(icrc, d, sizeof d);
        put(w, d, sizeof d);
    }
    h->trailer_offset = w->offset;
    w->index_crc = icrc;
    wr32(tr, icrc);
    memcpy(tr + 8, SHARD_END_MAGIC, 8);
    put(w, tr, sizeof tr);
    h->file_bytes = w->offset;
}

static void encode_header(const ShardHeader *h, unsigned char *b) {
    memset(b, 0, SHARD_HEADER_BYTES);
    memcpy(b, SHARD_MAGIC, 8);
    wr32(b + 8, SHARD_VERSION);
    wr32(b + 12, SHARD_HEADER_BYTES);
    wr32(b + 16, h->token_bytes);
    wr32(b + 20, h->codec);
    wr32(b + 24, h->block_tokens);
    wr32(b + 28, h->vocab_size);
    wr32(b + 32, h->eos_id);
    wr32(b + 36, h->flags);
    wr64(b + 40, h->num_tokens);
    wr64(b + 48, h->num_docs);
    wr64(b + 56, h->num_blocks);
    wr64(b + 64, h->block_index_offset);
    wr64(b + 72, h->doc_index_offset);
    wr64(b + 80, h->trailer_offset);
    wr64(b + 88, h->file_bytes);
    memcpy(b + 96, h->tokenizer, 32);
    wr32(b + SHARD_HEADER_BYTES - 4, (uint32_t)crc32(0, b, SHARD_HEADER_BYTES - 4));
}

ShardSummary shard_writer_close(ShardWriter *w) {
    flush_block(w);
    ShardHeader h = {.token_bytes = w->p.token_bytes, .codec = w->p.byte_planes ? SHARD_CODEC_ZLIB_PLANES : SHARD_CODEC_ZLIB,
                     .block_tokens = w->p.block_tokens, .vocab_size = w->p.vocab_size,
                     .eos_id = w->p.eos_id, .num_tokens = w->tokens,
                     .flags = (w->continues ? SHARD_FLAG_CONTINUES : 0) | (w->p.weights ? SHARD_FLAG_WEIGHTS : 0),
                     .num_docs = w->n_docs, .num_blocks = w->n_blocks};
    memcpy(h.tokenizer, w->tokenizer, 32);
    write_indexes(w, &h);
    uint64_t body = w->offset - SHARD_HEADER_BYTES;
    unsigned char hb[SHARD_HEADER_BYTES];
    encode_header(&h, hb);
    if (fseek(w->f, 0, SEEK_SET) != 0) fail_data(w->tmp, "seek failed (%s)", strerror(errno));
    xfwrite(hb, sizeof hb, w->f, w->tmp);
    if (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0) fail_data(w->tmp, "flush to disk failed (%s)", strerror(errno));
    xfclose(w->f, w->tmp);
    if (rename(w->tmp, w->path) != 0) fail_data(w->path, "cannot rename %s into place (%s)", w->tmp, strerror(errno));
    ShardSummary s = {.num_tokens = w->tokens, .num_docs = w->n_docs, .file_bytes = h.file_bytes,
                      .file_crc = (uint32_t)crc32_combine(crc32(0, hb, sizeof hb), w->body_crc, (z_off_t)body),
                      .index_crc = w->index_crc, .raw_bytes = w->tokens * w->p.token_bytes};
    deflateEnd(&w->z);
    free(w->path);
    free(w->tmp);
    free(w->pending);
    free(w->pending_w);
    free(w->raw);
    free(w->comp);
    free(w->blocks);
    free(w->docs);
    free(w);
    return s;
}
