// data/shard.h — the compressed token shard: on-disk layout, writer, checked reader and verifier (see data/FORMAT.md).
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHARD_MAGIC "RGPTSHRD"
#define SHARD_END_MAGIC "RGPTEND"
enum {
    SHARD_VERSION = 2,            // written; version 1 (no loss weights) is still read
    SHARD_MIN_VERSION = 1,
    SHARD_HEADER_BYTES = 256,
    SHARD_BLOCK_ENTRY_BYTES = 32,
    SHARD_TRAILER_BYTES = 16,
    SHARD_CODEC_ZLIB = 1,         // raw deflate (zlib, RFC 1951) over the tokens' little-endian bytes
    SHARD_CODEC_ZLIB_PLANES = 2,  // raw deflate over byte planes: every token's byte 0, then every byte 1, ... (the default:
                                  // small ids leave the high planes nearly constant, which deflates faster and smaller)
    SHARD_FLAG_CONTINUES = 1,     // token 0 continues a document that started in the previous shard
    SHARD_FLAG_WEIGHTS = 2,       // (version 2) each block's raw bytes end with a loss-weight plane: one byte per token, 0 or 1
    SHARD_DEFAULT_BLOCK_TOKENS = 1 << 18,
    SHARD_MAX_THREADS = 64,       // compression threads per shard writer (more are clamped)
};

// A library-style error: the reader fills msg ("block 3 at byte 4096: ...") and returns failure;
// the command decides whether to print it and exit.
typedef struct {
    char msg[512];
} DataErr;
void data_err(DataErr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef struct {
    uint32_t version;         // SHARD_MIN_VERSION..SHARD_VERSION
    uint32_t token_bytes;     // 2 (uint16) or 4 (uint32)
    uint32_t codec;           // SHARD_CODEC_*
    uint32_t block_tokens;    // nominal tokens per block (the last block of a shard may be shorter)
    uint32_t vocab_size;      // every token id < vocab_size
    uint32_t eos_id;          // ends every document
    uint32_t flags;           // SHARD_FLAG_*
    uint64_t num_tokens;      // tokens in this shard (EOS included)
    uint64_t num_docs;        // documents that start in this shard
    uint64_t num_blocks;
    uint64_t block_index_offset, doc_index_offset, trailer_offset, file_bytes;
    char tokenizer[32];       // NUL-padded tokenizer id, e.g. "byte260"
} ShardHeader;

typedef struct {
    uint64_t offset;          // absolute file offset of the compressed bytes
    uint64_t first_token;     // shard-local index of the block's first token
    uint32_t comp_bytes;      // compressed size
    uint32_t n_tokens;        // tokens in the block (raw size: shard_raw_bytes)
    uint32_t crc_comp;        // CRC32 of the compressed bytes
    uint32_t crc_raw;         // CRC32 of the raw bytes (token bytes, then the weight plane if any)
} ShardBlock;

// An open shard: header and both indexes in memory (checked), blocks read on demand with pread.
typedef struct {
    char *path;
    int fd;
    bool own_fd;
    ShardHeader h;
    ShardBlock *blocks;       // (num_blocks)
    uint64_t *doc_start;      // (num_docs) shard-local token index where each document starts
    uint32_t index_crc;       // CRC32 over the block index and doc index bytes (stored in the trailer)
} Shard;

// Opens and checks header, sizes, offsets, trailer and index CRC. NULL + e on any problem.
Shard *shard_open(const char *path, DataErr *e);
// Same on an already open descriptor (the fuzzer passes a memfd); `name` is used in messages.
Shard *shard_open_fd(int fd, const char *name, DataErr *e);
void shard_close(Shard *s);
// True when the shard stores a loss weight per token (SHARD_FLAG_WEIGHTS); without it every weight is 1.
static inline bool shard_has_weights(const ShardHeader *h) { return (h->flags & SHARD_FLAG_WEIGHTS) != 0; }
// Inflated bytes of a block of n tokens: n * token_bytes, plus n weight bytes when the shard has weights.
static inline size_t shard_raw_bytes(const ShardHeader *h, size_t n) { return n * (h->token_bytes + (shard_has_weights(h) ? 1 : 0)); }
// Reads block i: checks the compressed CRC, inflates, checks the size and the raw CRC.
// raw gets shard_raw_bytes(n_tokens) bytes; comp is scratch of at least max_comp_bytes(s) bytes.
int shard_read_block(const Shard *s, uint64_t i, void *raw, void *comp, DataErr *e);
size_t shard_max_comp_bytes(const Shard *s);
// A block's inflated bytes (n tokens, in the layout of h's width and codec) -> int32, checking every
// id < vocab. Returns the index of the first bad token, or -1 when all are good.
int64_t shard_decode_tokens(const ShardHeader *h, const void *raw, size_t n, uint32_t vocab, int32_t *out);
// A block's loss weights (n bytes, each 0 or 1) into out; 1 everywhere for a shard without weights.
// Returns the index of the first weight that is not 0 or 1, or -1 when all are good.
int64_t shard_decode_weights(const ShardHeader *h, const void *raw, size_t n, uint8_t *out);
// Whole-shard check: every block CRC, every token < vocab, and that EOS positions agree with the
// document index. Returns 0, or -1 with e naming block and byte offset. *last_token gets the
// shard's last token (-1 if empty), for the dataset-level document continuity check. Loss weights
// (when present) must each be 0 or 1.
int shard_verify(const Shard *s, int32_t *last_token, DataErr *e);

// ---- writing -----------------------------------------------------------------------------------
typedef struct {
    uint32_t token_bytes, block_tokens, vocab_size, eos_id;
    int level;                // zlib level 0..9
    bool byte_planes;         // SHARD_CODEC_ZLIB_PLANES (true) or SHARD_CODEC_ZLIB
    bool weights;             // store a loss weight per token (SHARD_FLAG_WEIGHTS)
    const char *tokenizer;
    int threads;              // threads deflating blocks (0 or 1: the caller, no threads; at most SHARD_MAX_THREADS).
                              // The file is byte-identical whatever the count.
} ShardParams;

typedef struct {
    uint64_t num_tokens, num_docs, file_bytes;
    uint32_t file_crc;        // CRC32 of the whole file
    uint32_t index_crc;
    uint64_t raw_bytes;       // num_tokens * token_bytes
} ShardSummary;

typedef struct ShardWriter ShardWriter;
// Writes to "<path>.tmp"; shard_writer_close renames it to path once complete and fsync'd.
ShardWriter *shard_writer_open(const char *path, const ShardParams *p, bool continues_doc);
void shard_writer_doc_start(ShardWriter *w);                          // a document starts at the next token
void shard_writer_tokens(ShardWriter *w, const uint32_t *tok, size_t n);
// The same with a loss weight (0 or 1) per token; weight NULL = all 1. Weights need p->weights.
void shard_writer_tokens_weighted(ShardWriter *w, const uint32_t *tok, const uint8_t *weight, size_t n);
uint64_t shard_writer_count(const ShardWriter *w);                    // tokens written so far
ShardSummary shard_writer_close(ShardWriter *w);

// Little-endian helpers shared by the reader, writer and tests.
static inline uint32_t rd32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }
static inline void wr32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}
static inline void wr64(unsigned char *p, uint64_t v) {
    wr32(p, (uint32_t)v);
    wr32(p + 4, (uint32_t)(v >> 32));
}
