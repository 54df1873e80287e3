// data/shard.c — reads and checks compressed token shards: header, indexes, trailer, blocks; never trusts a byte.
#include "data/shard.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/common.h"

#define REDO "; the shard is damaged, re-run `ringgpt prepare`"
// The fuzzer build ignores CRC mismatches so that mutated inputs reach the layout, index and inflate
// checks behind them (CRC detection itself is covered by tests/data/test_shard.c).
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
#define CRC_BAD(stored, computed) ((void)(stored), (void)(computed), 0)
#else
#define CRC_BAD(stored, computed) ((stored) != (computed))
#endif

void data_err(DataErr *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    one_line(e->msg);
}

// pread all n bytes at off, or explain why not.
static int pread_all(int fd, void *dst, size_t n, uint64_t off, DataErr *e) {
    unsigned char *p = dst;
    while (n) {
        ssize_t r = pread(fd, p, n, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            data_err(e, "read of %zu bytes at byte %" PRIu64 " failed (%s)", n, off, strerror(errno));
            return -1;
        }
        if (r == 0) {
            data_err(e, "unexpected end of file at byte %" PRIu64 "; the file is truncated, re-run `ringgpt prepare`", off);
            return -1;
        }
        p += r;
        n -= (size_t)r;
        off += (uint64_t)r;
    }
    return 0;
}

static void parse_header(const unsigned char *b, ShardHeader *h) {
    h->version = rd32(b + 8);
    h->token_bytes = rd32(b + 16);
    h->codec = rd32(b + 20);
    h->block_tokens = rd32(b + 24);
    h->vocab_size = rd32(b + 28);
    h->eos_id = rd32(b + 32);
    h->flags = rd32(b + 36);
    h->num_tokens = rd64(b + 40);
    h->num_docs = rd64(b + 48);
    h->num_blocks = rd64(b + 56);
    h->block_index_offset = rd64(b + 64);
    h->doc_index_offset = rd64(b + 72);
    h->trailer_offset = rd64(b + 80);
    h->file_bytes = rd64(b + 88);
    memcpy(h->tokenizer, b + 96, 32);
    h->tokenizer[31] = 0;
}

// Magic, version, CRC, then each field's range: the order makes the first message the most useful.
static int check_header(const unsigned char *b, uint64_t size, ShardHeader *h, DataErr *e) {
    if (memcmp(b, SHARD_MAGIC, 8) != 0) {
        data_err(e, "header at byte 0: not a ringgpt shard (magic %02x%02x%02x%02x%02x%02x%02x%02x, expected \"%s\");"
                 " give a directory made by `ringgpt prepare` or one of its .rgs files",
                 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], SHARD_MAGIC);
        return -1;
    }
    if (rd32(b + 8) < SHARD_MIN_VERSION || rd32(b + 8) > SHARD_VERSION) {
        data_err(e, "header at byte 8: unsupported shard version %u (this ringgpt reads versions %d to %d); re-run `ringgpt prepare`",
                 rd32(b + 8), SHARD_MIN_VERSION, SHARD_VERSION);
        return -1;
    }
    uint32_t crc = (uint32_t)crc32(0, b, SHARD_HEADER_BYTES - 4), stored = rd32(b + SHARD_HEADER_BYTES - 4);
    if (CRC_BAD(stored, crc)) {
        data_err(e, "header at byte 0: CRC mismatch (stored %08x, computed %08x)" REDO, stored, crc);
        return -1;
    }
    parse_header(b, h);
    const char *bad = NULL;
    uint64_t at = 0;
    if (rd32(b + 12) != SHARD_HEADER_BYTES) bad = "header size is not 256", at = 12;
    else if (h->token_bytes != 2 && h->token_bytes != 4) bad = "token width is not 2 or 4 bytes", at = 16;
    else if (h->codec != SHARD_CODEC_ZLIB && h->codec != SHARD_CODEC_ZLIB_PLANES) bad = "unknown codec (1 zlib, 2 zlib over byte planes)", at = 20;
    else if (h->block_tokens == 0 || h->block_tokens > (1u << 28)) bad = "block size is 0 or above 2^28 tokens", at = 24;
    else if (h->vocab_size == 0 || (h->token_bytes == 2 && h->vocab_size > 65536)) bad = "vocab size does not fit the token width", at = 28;
    else if (h->eos_id >= h->vocab_size) bad = "EOS id is not below the vocab size", at = 32;
    else if (h->flags & ~(uint32_t)(h->version >= 2 ? SHARD_FLAG_CONTINUES | SHARD_FLAG_WEIGHTS : SHARD_FLAG_CONTINUES))
        bad = "unknown flags", at = 36;
    if (bad) {
        data_err(e, "header at byte %" PRIu64 ": %s" REDO, at, bad);
        return -1;
    }
    if (h->file_bytes != size) {
        data_err(e, "file is %" PRIu64 " bytes but its header says %" PRIu64 " (at byte 88): the file is %s; re-run `ringgpt prepare`",
                 size, h->file_bytes, size < h->file_bytes ? "truncated" : "longer than written");
        return -1;
    }
    return 0;
}

// The three index regions must tile [block_index_offset, file_bytes) exactly; all arithmetic overflow-safe.
static int check_layout(const ShardHeader *h, DataErr *e) {
    uint64_t fb = h->file_bytes;
    bool ok = h->num_blocks <= fb / SHARD_BLOCK_ENTRY_BYTES && h->num_docs <= fb / 8 &&
              h->block_index_offset >= SHARD_HEADER_BYTES && h->block_index_offset <= fb &&
              h->doc_index_offset == h->block_index_offset + h->num_blocks * SHARD_BLOCK_ENTRY_BYTES &&
              h->doc_index_offset <= fb && h->trailer_offset == h->doc_index_offset + h->num_docs * 8 &&
              h->trailer_offset <= fb && fb - h->trailer_offset == SHARD_TRAILER_BYTES &&
              h->num_tokens <= (uint64_t)h->num_blocks * h->block_tokens && h->num_docs <= h->num_tokens;
    if (!ok) data_err(e, "header at byte 40: counts and offsets disagree (tokens %" PRIu64 ", docs %" PRIu64 ", blocks %" PRIu64
                      ", indexes at %" PRIu64 "/%" PRIu64 ", trailer at %" PRIu64 ")" REDO,
                      h->num_tokens, h->num_docs, h->num_blocks, h->block_index_offset, h->doc_index_offset, h->trailer_offset);
    return ok ? 0 : -1;
}

static int check_blocks(Shard *s, const unsigned char *idx, DataErr *e) {
    const ShardHeader *h = &s->h;
    uint64_t off = SHARD_HEADER_BYTES, tok = 0;
    for (uint64_t i = 0; i < h->num_blocks; i++) {
        const unsigned char *p = idx + i * SHARD_BLOCK_ENTRY_BYTES;
        ShardBlock *b = &s->blocks[i];
        *b = (ShardBlock){rd64(p), rd64(p + 8), rd32(p + 16), rd32(p + 20), rd32(p + 24), rd32(p + 28)};
        uint64_t entry = h->block_index_offset + i * SHARD_BLOCK_ENTRY_BYTES;
        const char *bad = NULL;
        if (b->offset != off) bad = "does not start where the previous block ends";
        else if (b->first_token != tok) bad = "first token does not follow the previous block";
        else if (b->n_tokens == 0 || b->n_tokens > h->block_tokens) bad = "token count is 0 or above the block size";
        else if (b->comp_bytes == 0 || b->comp_bytes > h->block_index_offset - off ||
                 b->comp_bytes > compressBound((uLong)shard_raw_bytes(h, b->n_tokens)) + 1024) bad = "compressed size is impossible";
        if (bad) {
            data_err(e, "block %" PRIu64 " (index entry at byte %" PRIu64 "): %s" REDO, i, entry, bad);
            return -1;
        }
        off += b->comp_bytes;
        tok += b->n_tokens;
    }
    if (off != h->block_index_offset || tok != h->num_tokens) {
        data_err(e, "block index at byte %" PRIu64 ": blocks cover %" PRIu64 " bytes and %" PRIu64 " tokens, the header says %" PRIu64
                 " and %" PRIu64 REDO, h->block_index_offset, off, tok, h->block_index_offset, h->num_tokens);
        return -1;
    }
    return 0;
}

static int check_docs(Shard *s, const unsigned char *idx, DataErr *e) {
    const ShardHeader *h = &s->h;
    for (uint64_t i = 0; i < h->num_docs; i++) {
        s->doc_start[i] = rd64(idx + i * 8);
        uint64_t v = s->doc_start[i];
        bool first_ok = i > 0 || (h->flags & SHARD_FLAG_CONTINUES) ? true : v == 0;
        if (v >= h->num_tokens || (i > 0 && v <= s->doc_start[i - 1]) || !first_ok) {
            data_err(e, "document index entry %" PRIu64 " at byte %" PRIu64 ": start %" PRIu64 " is out of order or past %" PRIu64
                     " tokens" REDO, i, h->doc_index_offset + i * 8, v, h->num_tokens);
            return -1;
        }
    }
    if (h->num_docs == 0 && h->num_tokens > 0 && !(h->flags & SHARD_FLAG_CONTINUES)) {
        data_err(e, "document index at byte %" PRIu64 ": empty, yet the shard does not continue a document" REDO, h->doc_index_offset);
        return -1;
    }
    return 0;
}

static int load_indexes(Shard *s, DataErr *e) {
    const ShardHeader *h = &s->h;
    size_t n = (size_t)(h->file_bytes - h->block_index_offset);
    unsigned char *idx = malloc(n ? n : 1);
    if (!idx) {
        data_err(e, "out of memory reading %zu index bytes", n);
        return -1;
    }
    int rc = -1;
    const unsigned char *tr = idx + (h->trailer_offset - h->block_index_offset);
    if (pread_all(s->fd, idx, n, h->block_index_offset, e)) goto done;
    if (memcmp(tr + 8, SHARD_END_MAGIC, 8) != 0 || rd32(tr + 4) != 0) {
        data_err(e, "trailer at byte %" PRIu64 ": bad end marker" REDO, h->trailer_offset);
        goto done;
    }
    s->index_crc = (uint32_t)crc32(0, idx, (uInt)(n - SHARD_TRAILER_BYTES));
    if (CRC_BAD(rd32(tr), s->index_crc)) {
        data_err(e, "indexes at bytes %" PRIu64 "-%" PRIu64 ": CRC mismatch (trailer at byte %" PRIu64 " stores %08x, computed %08x)" REDO,
                 h->block_index_offset, h->trailer_offset, h->trailer_offset, rd32(tr), s->index_crc);
        goto done;
    }
    s->blocks = calloc(h->num_blocks ? h->num_blocks : 1, sizeof *s->blocks);
    s->doc_start = calloc(h->num_docs ? h->num_docs : 1, sizeof *s->doc_start);
    if (!s->blocks || !s->doc_start) {
        data_err(e, "out of memory for the indexes of %" PRIu64 " blocks and %" PRIu64 " documents", h->num_blocks, h->num_docs);
        goto done;
    }
    if (check_blocks(s, idx, e) || check_docs(s, idx + (h->doc_index_offset - h->block_index_offset), e)) goto done;
    rc = 0;
done:
    free(idx);
    return rc;
}

Shard *shard_open_fd(int fd, const char *name, DataErr *e) {
    struct stat st;
    if (fstat(fd, &st) != 0) {
        data_err(e, "cannot stat (%s)", strerror(errno));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        data_err(e, "not a regular file");
        return NULL;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size < SHARD_HEADER_BYTES) {
        data_err(e, "file is %" PRIu64 " bytes, smaller than the %d-byte header: truncated or not a shard; re-run `ringgpt prepare`",
                 size, SHARD_HEADER_BYTES);
        return NULL;
    }
    Shard *s = calloc(1, sizeof *s);
    unsigned char hb[SHARD_HEADER_BYTES];
    if (!s) return data_err(e, "out of memory"), NULL;
    s->fd = fd;
    s->path = strdup(name);
    if (!s->path || pread_all(fd, hb, sizeof hb, 0, e) || check_header(hb, size, &s->h, e) || check_layout(&s->h, e) ||
        load_indexes(s, e)) {
        shard_close(s);
        return NULL;
    }
    return s;
}

Shard *shard_open(const char *path, DataErr *e) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        data_err(e, "cannot open (%s); check the path", strerror(errno));
        return NULL;
    }
    Shard *s = shard_open_fd(fd, path, e);
    if (!s) {
        close(fd);
        return NULL;
    }
    s->own_fd = true;
    return s;
}

void shard_close(Shard *s) {
    if (!s) return;
    if (s->own_fd) close(s->fd);
    free(s->path);
    free(s->blocks);
    free(s->doc_start);
    free(s);
}

size_t shard_max_comp_bytes(const Shard *s) {
    size_t m = 1;
    for (uint64_t i = 0; i < s->h.num_blocks; i++)
        if (s->blocks[i].comp_bytes > m) m = s->blocks[i].comp_bytes;
    return m;
}

int shard_read_block(const Shard *s, uint64_t i, void *raw, void *comp, DataErr *e) {
    const ShardBlock *b = &s->blocks[i];
    if (pread_all(s->fd, comp, b->comp_bytes, b->offset, e)) return -1;
    uint32_t crc = (uint32_t)crc32(0, comp, b->comp_bytes);
    if (CRC_BAD(b->crc_comp, crc)) {
        data_err(e, "block %" PRIu64 " at byte %" PRIu64 ": compressed CRC mismatch (stored %08x, computed %08x)" REDO, i, b->offset,
                 b->crc_comp, crc);
        return -1;
    }
    uLong want = (uLong)shard_raw_bytes(&s->h, b->n_tokens);
    z_stream z = {.next_in = comp, .avail_in = b->comp_bytes, .next_out = raw, .avail_out = (uInt)want};
    if (inflateInit2(&z, -15) != Z_OK) {
        data_err(e, "block %" PRIu64 ": zlib cannot start inflating (out of memory?)", i);
        return -1;
    }
    int zr = inflate(&z, Z_FINISH);
    uLong raw_n = z.total_out, comp_n = z.total_in;
    inflateEnd(&z);
    if (zr != Z_STREAM_END || raw_n != want || comp_n != b->comp_bytes) {
        data_err(e, "block %" PRIu64 " at byte %" PRIu64 ": zlib cannot inflate it (%s, %lu of %lu bytes)" REDO, i, b->offset,
                 zr == Z_STREAM_END ? "wrong size" : zr == Z_BUF_ERROR ? "ends early or too long" : zError(zr), (unsigned long)raw_n,
                 (unsigned long)want);
        return -1;
    }
    crc = (uint32_t)crc32(0, raw, (uInt)want);
    if (CRC_BAD(b->crc_raw, crc)) {
        data_err(e, "block %" PRIu64 " at byte %" PRIu64 ": raw CRC mismatch (stored %08x, computed %08x)" REDO, i, b->offset,
                 b->crc_raw, crc);
        return -1;
    }
    return 0;
}

int64_t shard_decode_tokens(const ShardHeader *h, const void *raw, size_t n, uint32_t vocab, int32_t *out) {
    uint32_t bad = 0, tb = h->token_bytes;   // OR of "token >= vocab": one branch at the end keeps the loops vectorisable
    const unsigned char *c = raw;
    if (h->codec == SHARD_CODEC_ZLIB_PLANES && tb == 2) {
        for (size_t i = 0; i < n; i++) {
            uint32_t t = (uint32_t)c[i] | (uint32_t)c[n + i] << 8;
            out[i] = (int32_t)t;
            bad |= t >= vocab;
        }
    } else if (h->codec == SHARD_CODEC_ZLIB_PLANES) {
        for (size_t i = 0; i < n; i++) {
            uint32_t t = (uint32_t)c[i] | (uint32_t)c[n + i] << 8 | (uint32_t)c[2 * n + i] << 16 | (uint32_t)c[3 * n + i] << 24;
            out[i] = (int32_t)t;
            bad |= t >= vocab;
        }
    } else if (tb == 2) {
        const uint16_t *p = raw;
        for (size_t i = 0; i < n; i++) {
            out[i] = p[i];
            bad |= p[i] >= vocab;
        }
    } else {
        const uint32_t *p = raw;
        for (size_t i = 0; i < n; i++) {
            out[i] = (int32_t)p[i];
            bad |= p[i] >= vocab;
        }
    }
    if (!bad) return -1;
    for (size_t i = 0; i < n; i++)
        if ((uint32_t)out[i] >= vocab) return (int64_t)i;
    return -1;
}

int64_t shard_decode_weights(const ShardHeader *h, const void *raw, size_t n, uint8_t *out) {
    if (!shard_has_weights(h)) {
        memset(out, 1, n);
        return -1;
    }
    const uint8_t *w = (const uint8_t *)raw + n * h->token_bytes;   // the plane after the token bytes
    uint8_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        out[i] = w[i];
        bad |= w[i] > 1;
    }
    if (!bad) return -1;
    for (size_t i = 0; i < n; i++)
        if (out[i] > 1) return (int64_t)i;
    return -1;
}

// EOS positions must be exactly the ends of documents: a document starts right after each EOS.
static int check_eos(const Shard *s, uint64_t bi, const int32_t *tok, uint64_t *next_doc, DataErr *e) {
    const ShardBlock *b = &s->blocks[bi];
    for (uint32_t j = 0; j < b->n_tokens; j++) {
        if ((uint32_t)tok[j] != s->h.eos_id) continue;
        uint64_t t = b->first_token + j + 1;
        if (t == s->h.num_tokens) break;
        if (*next_doc >= s->h.num_docs || s->doc_start[*next_doc] != t) {
            data_err(e, "block %" PRIu64 " at byte %" PRIu64 ": EOS at token %" PRIu64 " but the document index (at byte %" PRIu64
                     ") does not start a document at %" PRIu64 REDO, bi, b->offset, t - 1, s->h.doc_index_offset, t);
            return -1;
        }
        (*next_doc)++;
    }
    return 0;
}

int shard_verify(const Shard *s, int32_t *last_token, DataErr *e) {
    size_t raw_bytes = shard_raw_bytes(&s->h, s->h.block_tokens);
    void *raw = malloc(raw_bytes), *comp = malloc(shard_max_comp_bytes(s));
    int32_t *tok = malloc((size_t)s->h.block_tokens * sizeof(int32_t));
    uint8_t *weight = malloc(s->h.block_tokens);
    int rc = -1;
    if (!raw || !comp || !tok || !weight) {
        data_err(e, "out of memory for one block");
        goto done;
    }
    uint64_t next_doc = (s->h.flags & SHARD_FLAG_CONTINUES) ? 0 : 1;
    *last_token = -1;
    for (uint64_t i = 0; i < s->h.num_blocks; i++) {
        const ShardBlock *b = &s->blocks[i];
        if (shard_read_block(s, i, raw, comp, e)) goto done;
        int64_t bad = shard_decode_tokens(&s->h, raw, b->n_tokens, s->h.vocab_size, tok);
        if (bad >= 0) {
            data_err(e, "block %" PRIu64 " at byte %" PRIu64 ": token %" PRIu64 " has id %u, not below the vocab size %u" REDO, i,
                     b->offset, b->first_token + (uint64_t)bad, (uint32_t)tok[bad], s->h.vocab_size);
            goto done;
        }
        bad = shard_decode_weights(&s->h, raw, b->n_tokens, weight);
        if (bad >= 0) {
            data_err(e, "block %" PRIu64 " at byte %" PRIu64 ": token %" PRIu64 " has loss weight %u, not 0 or 1" REDO, i, b->offset,
                     b->first_token + (uint64_t)bad, weight[bad]);
            goto done;
        }
        if (check_eos(s, i, tok, &next_doc, e)) goto done;
        *last_token = tok[b->n_tokens - 1];
    }
    if (next_doc != s->h.num_docs && s->h.num_tokens > 0) {
        data_err(e, "document index at byte %" PRIu64 ": %" PRIu64 " entries but the tokens hold %" PRIu64 " document starts" REDO,
                 s->h.doc_index_offset, s->h.num_docs, next_doc);
        goto done;
    }
    rc = 0;
done:
    free(raw);
    free(comp);
    free(tok);
    free(weight);
    return rc;
}
