// data/prepare_stream.c — prepare's input streams: plain files, gzip and zstd decompressed as they are read, every error naming the file and the byte.
#include "data/prepare_stream.h"

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <zstd.h>

#include "core/common.h"

// The first read of a file is RAW_BYTES: small, because the plan opens every text input to look at its start.
enum { RAW_BYTES = 1 << 16, OUT_BYTES = 1 << 18 };
typedef enum { CODEC_PLAIN, CODEC_GZIP, CODEC_ZSTD } Codec;
static const char *const CODEC_NAMES[] = {"plain", "gzip", "zstd"};
static const char *const FRAME_NAMES[] = {"", "member", "frame"};

struct InStream {
    char *path;
    FILE *f;
    Codec codec;
    unsigned char *raw;        // (RAW_BYTES) bytes of the file; [raw_pos, raw_len) not decoded yet
    size_t raw_pos, raw_len;
    uint64_t raw_at;           // the file's bytes before raw (messages give offsets into the file)
    bool raw_eof;
    unsigned char *out;        // (OUT_BYTES) decoded bytes; [out_pos, out_len) not handed out yet
    size_t out_pos, out_len;
    bool in_frame;             // inside a gzip member or a zstd frame: the file must not end here
    z_stream z;
    ZSTD_DStream *zd;
};

static void fill_raw(InStream *s) {
    if (s->raw_pos < s->raw_len || s->raw_eof) return;
    s->raw_at += s->raw_len;
    s->raw_pos = 0;
    s->raw_len = fread(s->raw, 1, RAW_BYTES, s->f);
    if (s->raw_len < RAW_BYTES && ferror(s->f)) fail_io(s->path, errno, "read failed");
    s->raw_eof = s->raw_len < RAW_BYTES;
}

_Noreturn static void truncated(const InStream *s) {
    fail_data(s->path, "%s data ends inside a %s at byte %" PRIu64 ", the end of the file: the file is truncated; download or compress it again",
              CODEC_NAMES[s->codec], FRAME_NAMES[s->codec], s->raw_at + s->raw_len);
}

_Noreturn static void damaged(const InStream *s, const char *why) {
    fail_data(s->path, "%s data damaged at or after byte %" PRIu64 " (%s): not a valid %s file; download or compress it again", CODEC_NAMES[s->codec],
              s->raw_at + s->raw_pos, why, CODEC_NAMES[s->codec]);
}

static bool refill_plain(InStream *s) {
    if (s->raw_pos < s->raw_len) {   // the bytes read at open, looking for a magic
        s->out_len = s->raw_len - s->raw_pos;
        memcpy(s->out, s->raw + s->raw_pos, s->out_len);
        s->raw_pos = s->raw_len;
    } else {
        s->out_len = fread(s->out, 1, OUT_BYTES, s->f);
        if (s->out_len < OUT_BYTES && ferror(s->f)) fail_io(s->path, errno, "read failed");
    }
    return s->out_len > 0;
}

// Members one after another (what `cat a.gz b.gz` makes) read as one stream.
static bool refill_gzip(InStream *s) {
    while (!s->out_len) {
        fill_raw(s);
        bool more = s->raw_pos < s->raw_len;
        if (!more && !s->in_frame) return false;
        if (!s->in_frame && inflateReset(&s->z) != Z_OK) damaged(s, "cannot restart the decoder");
        s->in_frame = true;
        s->z.next_in = s->raw + s->raw_pos;
        s->z.avail_in = (uInt)(s->raw_len - s->raw_pos);
        s->z.next_out = s->out;
        s->z.avail_out = OUT_BYTES;
        int rc = inflate(&s->z, Z_NO_FLUSH);
        s->raw_pos = s->raw_len - s->z.avail_in;
        s->out_len = OUT_BYTES - s->z.avail_out;
        if (rc == Z_STREAM_END) s->in_frame = false;
        else if (rc == Z_BUF_ERROR && !more) truncated(s);   // no input left and the member not ended
        else if (rc != Z_OK && rc != Z_BUF_ERROR) damaged(s, s->z.msg ? s->z.msg : "zlib error");
    }
    return true;
}

static bool refill_zstd(InStream *s) {
    while (!s->out_len) {
        fill_raw(s);
        if (s->raw_pos == s->raw_len && !s->in_frame) return false;
        ZSTD_inBuffer in = {s->raw, s->raw_len, s->raw_pos};
        ZSTD_outBuffer o = {s->out, OUT_BYTES, 0};
        size_t r = ZSTD_decompressStream(s->zd, &o, &in);
        bool stuck = in.pos == s->raw_pos && o.pos == 0;   // only when no input is left: fill_raw read all there was
        s->raw_pos = in.pos;
        if (ZSTD_isError(r)) damaged(s, ZSTD_getErrorName(r));
        s->out_len = o.pos;
        s->in_frame = r != 0;   // 0: a frame decoded and flushed whole
        if (stuck) truncated(s);
    }
    return true;
}

static bool refill(InStream *s) {
    s->out_pos = s->out_len = 0;
    return s->codec == CODEC_GZIP ? refill_gzip(s) : s->codec == CODEC_ZSTD ? refill_zstd(s) : refill_plain(s);
}

InStream *in_open(const char *path) {
    InStream *s = xcalloc(1, sizeof *s, "an input stream");
    s->path = xstrdup(path);
    s->f = xfopen(path, "rb");
    s->raw = xmalloc(RAW_BYTES, "a read buffer");
    s->out = xmalloc(OUT_BYTES, "a read buffer");
    fill_raw(s);
    const unsigned char *m = s->raw;
    if (s->raw_len >= 2 && m[0] == 0x1f && m[1] == 0x8b) {
        s->codec = CODEC_GZIP;
        if (inflateInit2(&s->z, 16 + MAX_WBITS) != Z_OK) fail("out of memory starting a gzip decoder for %s", path);
    } else if (s->raw_len >= 4 && m[0] == 0x28 && m[1] == 0xb5 && m[2] == 0x2f && m[3] == 0xfd) {
        s->codec = CODEC_ZSTD;
        s->zd = ZSTD_createDStream();
        if (!s->zd || ZSTD_isError(ZSTD_initDStream(s->zd))) fail("out of memory starting a zstd decoder for %s", path);
    }
    return s;
}

size_t in_read(InStream *s, void *buf, size_t n) {
    size_t got = 0;
    while (got < n && (s->out_pos < s->out_len || refill(s))) {
        size_t k = s->out_len - s->out_pos < n - got ? s->out_len - s->out_pos : n - got;
        memcpy((unsigned char *)buf + got, s->out + s->out_pos, k);
        s->out_pos += k;
        got += k;
    }
    return got;
}

size_t in_line(InStream *s, char **line, size_t *cap) {
    size_t n = 0;
    bool nl = false;
    while (!nl && (s->out_pos < s->out_len || refill(s))) {
        const unsigned char *b = s->out + s->out_pos, *end = memchr(b, '\n', s->out_len - s->out_pos);
        size_t k = end ? (size_t)(end - b) + 1 : s->out_len - s->out_pos;
        if (n + k + 1 > *cap) *line = xrealloc(*line, *cap = 2 * (n + k + 1), "a line of input");
        memcpy(*line + n, b, k);
        s->out_pos += k;
        n += k;
        nl = end != NULL;
    }
    if (!*cap) *line = xrealloc(*line, *cap = 1, "a line of input");
    (*line)[n] = 0;
    return n;
}

void in_close(InStream *s) {
    if (s->codec == CODEC_GZIP) inflateEnd(&s->z);
    ZSTD_freeDStream(s->zd);
    fclose(s->f);
    free(s->raw);
    free(s->out);
    free(s->path);
    free(s);
}
