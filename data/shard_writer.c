// data/shard_writer.c — writes one shard: zlib blocks (deflated on compression threads) with CRCs, indexes, trailer, header; atomic.
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "core/common.h"
#include "data/shard.h"

// One block on its way to the file: filled by the caller, packed, deflated and CRC'd by a compression
// thread (or the caller when there is none), then written in block order by the caller.
enum { JOB_FREE, JOB_QUEUED, JOB_DONE };
typedef struct {
    uint32_t *tok;              // (block_tokens) the block's tokens
    uint8_t *weight;            // (block_tokens) their loss weights (p.weights only)
    size_t n;                   // tokens in the block
    uint64_t first_token;       // shard-local index of its first token
    unsigned char *raw, *comp;  // packed raw bytes / deflated bytes
    size_t raw_n;
    uLong comp_n;
    uint32_t crc_comp, crc_raw;
    int zr;                     // Z_OK when deflated; else the zlib error
    const char *zcall;          // the zlib call that failed
    z_stream z;                 // this job's deflater, reset per block
    int state;                  // JOB_*; guarded by the writer's mutex while compression threads run
} BlockJob;

struct ShardWriter {
    char *path, *tmp;
    FILE *f;
    ShardParams p;
    char tokenizer[32];
    bool continues;
    BlockJob *jobs;             // (n_jobs) a ring: block b uses jobs[b % n_jobs]
    size_t n_jobs, comp_cap;
    uint64_t filled;            // blocks handed to compression (the block being filled is jobs[filled % n_jobs])
    uint64_t taken;             // blocks a compression thread has picked up
    size_t n_pending;           // tokens in the block being filled
    ShardBlock *blocks;         // (n_blocks) index entries of the blocks written
    size_t n_blocks, cap_blocks;
    uint64_t *docs;
    size_t n_docs, cap_docs;
    uint64_t tokens;            // tokens accepted so far
    uint64_t offset;            // bytes written so far
    uint32_t body_crc;          // CRC32 of everything after the header
    uint32_t index_crc;         // CRC32 of the block and document indexes (the trailer's first word)
    int n_threads;              // compression threads (0: the caller compresses)
    pthread_t *threads;
    pthread_mutex_t mu;
    pthread_cond_t work, done;  // a block was queued / a block was deflated
    bool stop;
};

static void put(ShardWriter *w, const void *p, size_t n) {
    xfwrite(p, n, w->f, w->tmp);
    w->body_crc = (uint32_t)crc32(w->body_crc, p, (uInt)n);
    w->offset += n;
}

static void check_pthread(int rc, const char *what) {
    if (rc != 0) fail("shard writer: %s failed (%s)", what, strerror(rc));
}

// Packs a block's tokens (byte planes or little-endian), appends the weight plane, deflates, CRCs.
static void compress_job(const ShardParams *p, BlockJob *j, size_t comp_cap) {
    size_t tb = p->token_bytes, n = j->n, raw_n = n * tb;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < tb; k++) {
            unsigned char byte = (unsigned char)(j->tok[i] >> (8 * k));
            if (p->byte_planes) j->raw[k * n + i] = byte;
            else j->raw[tb * i + k] = byte;
        }
    if (p->weights) {   // the weight plane follows the token bytes
        memcpy(j->raw + raw_n, j->weight, n);
        raw_n += n;
    }
    // Raw deflate (RFC 1951, no zlib header or Adler-32): the block's own CRCs already cover it.
    z_stream *z = &j->z;
    z->next_in = j->raw;
    z->avail_in = (uInt)raw_n;
    z->next_out = j->comp;
    z->avail_out = (uInt)comp_cap;
    int zr = deflate(z, Z_FINISH);
    j->raw_n = raw_n;
    j->comp_n = z->total_out;
    j->zr = zr == Z_STREAM_END ? Z_OK : zr;
    j->zcall = "deflate";
    if (j->zr == Z_OK && (zr = deflateReset(z)) != Z_OK) j->zr = zr, j->zcall = "deflateReset";
    if (j->zr != Z_OK) return;
    j->crc_comp = (uint32_t)crc32(0, j->comp, (uInt)j->comp_n);
    j->crc_raw = (uint32_t)crc32(0, j->raw, (uInt)raw_n);
}

// A compression thread: deflates queued blocks in block order of pickup until the writer stops.
// Takes the oldest queued block and deflates it. Call with the lock held (it is released meanwhile).
static void compress_next(ShardWriter *w) {
    BlockJob *j = &w->jobs[w->taken++ % w->n_jobs];
    check_pthread(pthread_mutex_unlock(&w->mu), "pthread_mutex_unlock");
    compress_job(&w->p, j, w->comp_cap);
    check_pthread(pthread_mutex_lock(&w->mu), "pthread_mutex_lock");
    j->state = JOB_DONE;
    check_pthread(pthread_cond_broadcast(&w->done), "pthread_cond_broadcast");
}

static void *compress_thread(void *arg) {
    ShardWriter *w = arg;
    check_pthread(pthread_mutex_lock(&w->mu), "pthread_mutex_lock");
    for (;;) {
        while (!w->stop && w->taken == w->filled) check_pthread(pthread_cond_wait(&w->work, &w->mu), "pthread_cond_wait");
        if (w->taken == w->filled) break;   // stopping, nothing left
        compress_next(w);
    }
    check_pthread(pthread_mutex_unlock(&w->mu), "pthread_mutex_unlock");
    return NULL;
}

static void start_threads(ShardWriter *w) {
    check_pthread(pthread_mutex_init(&w->mu, NULL), "pthread_mutex_init");
    check_pthread(pthread_cond_init(&w->work, NULL), "pthread_cond_init");
    check_pthread(pthread_cond_init(&w->done, NULL), "pthread_cond_init");
    w->threads = xmalloc((size_t)w->n_threads * sizeof *w->threads, "compression threads");
    for (int i = 0; i < w->n_threads; i++) check_pthread(pthread_create(&w->threads[i], NULL, compress_thread, w), "starting a compression thread");
}

static void stop_threads(ShardWriter *w) {
    check_pthread(pthread_mutex_lock(&w->mu), "pthread_mutex_lock");
    w->stop = true;
    check_pthread(pthread_cond_broadcast(&w->work), "pthread_cond_broadcast");
    check_pthread(pthread_mutex_unlock(&w->mu), "pthread_mutex_unlock");
    for (int i = 0; i < w->n_threads; i++) check_pthread(pthread_join(w->threads[i], NULL), "pthread_join");
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->work);
    pthread_cond_destroy(&w->done);
    free(w->threads);
}

ShardWriter *shard_writer_open(const char *path, const ShardParams *p, bool continues_doc) {
    if (p->token_bytes != 2 && p->token_bytes != 4) fail("shard token width must be 2 or 4 bytes, not %u", p->token_bytes);
    if (p->token_bytes == 2 && p->vocab_size > 65536) fail("vocab %u does not fit 2-byte tokens", p->vocab_size);
    if (p->block_tokens == 0 || p->block_tokens > (1u << 28)) fail("--block-tokens must be in 1..2^28, not %u", p->block_tokens);
    if (p->level < 0 || p->level > 9) fail("zlib cannot start deflating at level %d (levels are 0..9)", p->level);
    ShardWriter *w = xcalloc(1, sizeof *w, "a shard writer");
    w->p = *p;
    snprintf(w->tokenizer, sizeof w->tokenizer, "%s", p->tokenizer ? p->tokenizer : "");
    w->continues = continues_doc;
    w->path = xstrdup(path);
    size_t n = strlen(path) + 5;
    w->tmp = xmalloc(n, "a path");
    snprintf(w->tmp, n, "%s.tmp", path);
    w->f = xfopen(w->tmp, "wb");
    // threads <= 1: one job, compressed by the caller. Else that many threads and two blocks each in flight.
    int threads = p->threads < SHARD_MAX_THREADS ? p->threads : SHARD_MAX_THREADS;
    w->n_threads = threads > 1 ? threads : 0;
    w->n_jobs = w->n_threads ? 2 * (size_t)w->n_threads + 1 : 1;
    size_t raw_max = (size_t)p->block_tokens * (p->token_bytes + (p->weights ? 1 : 0));
    w->comp_cap = deflateBound(NULL, (uLong)raw_max) + 64;
    w->jobs = xcalloc(w->n_jobs, sizeof *w->jobs, "shard blocks");
    for (size_t i = 0; i < w->n_jobs; i++) {
        BlockJob *j = &w->jobs[i];
        j->tok = xmalloc((size_t)p->block_tokens * sizeof(uint32_t), "a shard block");
        if (p->weights) j->weight = xmalloc(p->block_tokens, "a shard block");
        j->raw = xmalloc(raw_max, "a shard block");
        j->comp = xmalloc(w->comp_cap, "a compressed block");
        if (deflateInit2(&j->z, p->level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK)
            fail("zlib cannot start deflating at level %d (out of memory?)", p->level);
    }
    unsigned char zero[SHARD_HEADER_BYTES] = {0};
    xfwrite(zero, sizeof zero, w->f, w->tmp);   // the header is written last, once the offsets are known
    w->offset = SHARD_HEADER_BYTES;
    if (w->n_threads) start_threads(w);
    return w;
}

static void lock(ShardWriter *w) {
    if (w->n_threads) check_pthread(pthread_mutex_lock(&w->mu), "pthread_mutex_lock");
}

static void unlock(ShardWriter *w) {
    if (w->n_threads) check_pthread(pthread_mutex_unlock(&w->mu), "pthread_mutex_unlock");
}

// Writes the oldest unwritten block (waiting for its compression) and frees its job. Call with the lock held.
static void write_next(ShardWriter *w) {
    BlockJob *j = &w->jobs[w->n_blocks % w->n_jobs];
    while (j->state != JOB_DONE) {   // rather than wait idle, the caller deflates queued blocks too
        if (w->taken < w->filled) compress_next(w);
        else check_pthread(pthread_cond_wait(&w->done, &w->mu), "pthread_cond_wait");
    }
    if (j->zr != Z_OK) fail("%s: zlib %s failed (%s) at block %zu", w->tmp, j->zcall, zError(j->zr), w->n_blocks);
    if (w->n_blocks == w->cap_blocks) {
        w->cap_blocks = w->cap_blocks ? 2 * w->cap_blocks : 64;
        w->blocks = xrealloc(w->blocks, w->cap_blocks * sizeof *w->blocks, "the block index");
    }
    w->blocks[w->n_blocks++] = (ShardBlock){.offset = w->offset, .first_token = j->first_token, .comp_bytes = (uint32_t)j->comp_n,
                                            .n_tokens = (uint32_t)j->n, .crc_comp = j->crc_comp, .crc_raw = j->crc_raw};
    put(w, j->comp, j->comp_n);
    j->state = JOB_FREE;
}

// Hands the block being filled to compression (or compresses and writes it here without threads).
static void flush_block(ShardWriter *w) {
    if (!w->n_pending) return;
    BlockJob *j = &w->jobs[w->filled % w->n_jobs];
    j->n = w->n_pending;
    j->first_token = w->tokens - w->n_pending;
    w->n_pending = 0;
    if (!w->n_threads) {
        compress_job(&w->p, j, w->comp_cap);
        j->state = JOB_DONE;
        w->filled++;
        write_next(w);
        return;
    }
    lock(w);
    j->state = JOB_QUEUED;
    w->filled++;
    check_pthread(pthread_cond_signal(&w->work), "pthread_cond_signal");
    // The next block's job must be free before it is filled; write every block already deflated meanwhile.
    while (w->n_blocks < w->filled && (w->jobs[w->n_blocks % w->n_jobs].state == JOB_DONE || w->filled - w->n_blocks >= w->n_jobs))
        write_next(w);
    unlock(w);
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
        BlockJob *j = &w->jobs[w->filled % w->n_jobs];   // free: flush_block waited for it
        size_t k = w->p.block_tokens - w->n_pending;
        if (k > n) k = n;
        for (size_t i = 0; i < k; i++)
            if (tok[i] >= w->p.vocab_size)
                fail_data(w->path, "token %" PRIu64 " has id %u, not below the vocab size %u; pass the right --vocab",
                          w->tokens + i, tok[i], w->p.vocab_size);
        memcpy(j->tok + w->n_pending, tok, k * sizeof *tok);
        if (w->p.weights)
            for (size_t i = 0; i < k; i++) {
                uint8_t x = weight ? weight[i] : 1;
                if (x > 1) fail_data(w->path, "token %" PRIu64 " has loss weight %u; weights are 0 or 1", w->tokens + i, x);
                j->weight[w->n_pending + i] = x;
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
    lock(w);
    while (w->n_blocks < w->filled) write_next(w);
    unlock(w);
    if (w->n_threads) stop_threads(w);
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
    if (fseek(w->f, 0, SEEK_SET) != 0) fail_io(w->tmp, errno, "seek failed");
    xfwrite(hb, sizeof hb, w->f, w->tmp);
    if (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0) fail_io(w->tmp, errno, "flush to disk failed");
    xfclose(w->f, w->tmp);
    if (rename(w->tmp, w->path) != 0) fail_io(w->path, errno, "cannot rename %s into place", w->tmp);
    ShardSummary s = {.num_tokens = w->tokens, .num_docs = w->n_docs, .file_bytes = h.file_bytes,
                      .file_crc = (uint32_t)crc32_combine(crc32(0, hb, sizeof hb), w->body_crc, (z_off_t)body),
                      .index_crc = w->index_crc, .raw_bytes = w->tokens * w->p.token_bytes};
    for (size_t i = 0; i < w->n_jobs; i++) {
        BlockJob *j = &w->jobs[i];
        deflateEnd(&j->z);
        free(j->tok);
        free(j->weight);
        free(j->raw);
        free(j->comp);
    }
    free(w->jobs);
    free(w->path);
    free(w->tmp);
    free(w->blocks);
    free(w->docs);
    free(w);
    return s;
}
