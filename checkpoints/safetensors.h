// checkpoints/safetensors.h — the safetensors format: a checked reader (F32/F64/BF16/F16 into real) and an fsync'ing writer.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/real.h"

// Errors of library-style code: the message starts with the file and names the field.
typedef struct {
    char msg[1024];
} CkErr;
void ck_err(CkErr *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef enum { ST_F32, ST_F64, ST_BF16, ST_F16, ST_OTHER } StDtype;
enum { ST_MAX_DIMS = 8, ST_MAX_HEADER = 100000000 };

// One tensor record of a file's header.
typedef struct {
    char *name;
    char dtype_name[16];     // as written: "F32", "BF16", ...
    StDtype dtype;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    uint64_t numel;
    uint64_t begin, end;     // [begin, end) bytes into the data buffer
} StEntry;

// A file's header checked against the format: 8-byte little-endian header length, a JSON object of
// {dtype, shape, data_offsets} records plus an optional string map __metadata__, data offsets contiguous
// from 0 to the end of the file. st_open keeps the file open and reads a tensor when st_read asks for it.
typedef struct {
    char *path;
    int fd;                  // the open file (st_open), or -1 when bytes hold all of it (st_parse)
    unsigned char *bytes;    // st_parse: (size) the file; st_open: its first data_start bytes (the header)
    size_t size;
    size_t data_start;       // 8 + header length
    StEntry *entries;        // (n) in header order
    int n;
    char *format;            // __metadata__["format"], NULL if absent
} StFile;

// Opens path and checks its header (the tensors are read by st_read). Returns 0, or -1 with e.
int st_open(StFile *f, const char *path, CkErr *e);
// Checks a whole file already in memory (bytes: malloc'ed, size bytes; f owns it from here, st_close frees it,
// also on failure); path names it in messages. Returns 0, or -1 with e.
int st_parse(StFile *f, unsigned char *bytes, size_t size, const char *path, CkErr *e);
void st_close(StFile *f);
const StEntry *st_find(const StFile *f, const char *name);
// Converts values [first, first + count) of a tensor (flat, row-major) of a supported dtype (F32, F64, BF16, F16)
// into dst (count values); only those bytes are read (a rank reads its slice of a checkpoint, not the file).
int st_read(const StFile *f, const StEntry *t, uint64_t first, uint64_t count, real *dst, CkErr *e);

// Produces tensor `index`'s values on demand (numel of them into dst): 0, or -1 with e.
typedef int (*StFill)(const void *ctx, int index, real *dst, CkErr *e);

// A tensor to write: data holds numel values of type `real`, converted to dtype on the way out; data NULL:
// fill(ctx, index, buffer) produces them when the tensor is written (one tensor in memory at a time).
typedef struct {
    const char *name;
    int ndim;
    int64_t shape[ST_MAX_DIMS];
    const real *data;
    StFill fill;
    const void *ctx;
    int index;
} StOut;

// Writes a safetensors file: header padded with spaces so that data starts 8-byte aligned,
// __metadata__ {"format": "pt"} plus the (key, value) pairs in meta (n_meta of them), tensors in
// the given order, then fsync. Returns 0, or -1 with e (errno text included).
int st_write(const char *path, const StOut *t, int n, StDtype dtype, const char *const *meta, int n_meta, CkErr *e);

// Bytes per element of a dtype (0 for ST_OTHER).
size_t st_dtype_size(StDtype d);
const char *st_dtype_name(StDtype d);
// bf16 / f16 <-> f32 conversions (round to nearest even on the way down).
float st_bf16_to_f32(uint16_t h);
uint16_t st_f32_to_bf16(float f);
float st_f16_to_f32(uint16_t h);
