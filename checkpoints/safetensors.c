// checkpoints/safetensors.c — the safetensors format: a checked reader (F32/F64/BF16/F16 into real) and an fsync'ing writer.
#include "checkpoints/safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "checkpoints/fsio.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors is little-endian; this code assumes a little-endian host"
#endif

static const struct {
    const char *name;
    StDtype dtype;
    size_t size;
} DTYPES[] = {{"F32", ST_F32, 4}, {"F64", ST_F64, 8}, {"BF16", ST_BF16, 2}, {"F16", ST_F16, 2},
              {"BOOL", ST_OTHER, 1}, {"U8", ST_OTHER, 1}, {"I8", ST_OTHER, 1}, {"I16", ST_OTHER, 2},
              {"U16", ST_OTHER, 2}, {"I32", ST_OTHER, 4}, {"U32", ST_OTHER, 4}, {"I64", ST_OTHER, 8},
              {"U64", ST_OTHER, 8}, {"F8_E5M2", ST_OTHER, 1}, {"F8_E4M3", ST_OTHER, 1}};
enum { N_DTYPES = sizeof DTYPES / sizeof DTYPES[0] };

size_t st_dtype_size(StDtype d) {
    for (int i = 0; i < N_DTYPES; i++)
        if (DTYPES[i].dtype == d) return DTYPES[i].size;
    return 0;
}

const char *st_dtype_name(StDtype d) {
    for (int i = 0; i < N_DTYPES; i++)
        if (DTYPES[i].dtype == d) return DTYPES[i].name;
    return "?";
}

float st_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t st_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40);   // NaN stays NaN
    u += 0x7fffu + ((u >> 16) & 1);                                                 // round to nearest even
    return (uint16_t)(u >> 16);
}

float st_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    float f;
    if (exp == 0) {
        f = ldexpf((float)man, -24);   // zero and subnormals
        if (sign) f = -f;
        return f;
    }
    uint32_t u = exp == 31 ? sign | 0x7f800000u | (man << 13) : sign | ((exp + 112) << 23) | (man << 13);
    memcpy(&f, &u, 4);
    return f;
}

// ---- reading ---------------------------------------------------------------------------------

// A JSON number that is a non-negative integer below 2^53 (exact in a double).
static int json_u64(const cJSON *j, uint64_t *out) {
    if (!cJSON_IsNumber(j)) return -1;
    double d = j->valuedouble;
    if (!(d >= 0 && d <= 9007199254740992.0) || floor(d) != d) return -1;
    *out = (uint64_t)d;
    return 0;
}

static int parse_metadata(StFile *f, const cJSON *m, CkErr *e) {
    if (!cJSON_IsObject(m)) {
        ck_err(e, "%s: header field __metadata__ is not an object of strings", f->path);
        return -1;
    }
    for (const cJSON *c = m->child; c; c = c->next)
        if (!cJSON_IsString(c)) {
            ck_err(e, "%s: header field __metadata__.%s is not a string (safetensors allows strings only)", f->path,
                   c->string);
            return -1;
        }
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(m, "format");
    if (fmt) f->format = strdup(fmt->valuestring);
    return 0;
}

static int parse_entry(StFile *f, const cJSON *j, StEntry *t, CkErr *e) {
    const char *name = j->string;
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(j, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(j, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(j, "data_offsets");
    if (!cJSON_IsObject(j) || !cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(off)) {
        ck_err(e, "%s: tensor '%s': needs the fields dtype (string), shape (array) and data_offsets (array)", f->path, name);
        return -1;
    }
    t->name = strdup(name);
    snprintf(t->dtype_name, sizeof t->dtype_name, "%s", dt->valuestring);
    size_t esize = 0;
    t->dtype = ST_OTHER;
    for (int i = 0; i < N_DTYPES; i++)
        if (strcmp(DTYPES[i].name, dt->valuestring) == 0) t->dtype = DTYPES[i].dtype, esize = DTYPES[i].size;
    if (!esize) {
        ck_err(e, "%s: tensor '%s': unknown dtype '%s'", f->path, name, dt->valuestring);
        return -1;
    }
    t->ndim = cJSON_GetArraySize(sh);
    if (t->ndim > ST_MAX_DIMS) {
        ck_err(e, "%s: tensor '%s': %d dimensions (at most %d supported)", f->path, name, t->ndim, ST_MAX_DIMS);
        return -1;
    }
    t->numel = 1;
    int d = 0;
    for (const cJSON *c = sh->child; c; c = c->next, d++) {
        uint64_t v;
        if (json_u64(c, &v) != 0) {
            ck_err(e, "%s: tensor '%s': shape[%d] is not a non-negative integer", f->path, name, d);
            return -1;
        }
        t->shape[d] = (int64_t)v;
        t->numel *= v;
    }
    if (cJSON_GetArraySize(off) != 2 || json_u64(off->child, &t->begin) != 0 || json_u64(off->child->next, &t->end) != 0 ||
        t->end < t->begin) {
        ck_err(e, "%s: tensor '%s': data_offsets must be two integers [begin, end] with begin <= end", f->path, name);
        return -1;
    }
    if (t->end - t->begin != t->numel * esize) {
        ck_err(e, "%s: tensor '%s': data_offsets span %" PRIu64 " bytes but shape and dtype %s need %" PRIu64, f->path,
               name, t->end - t->begin, t->dtype_name, t->numel * esize);
        return -1;
    }
    return 0;
}

static int cmp_begin(const void *a, const void *b) {
    const StEntry *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

// Offsets must tile the data buffer exactly: sorted, from 0, no holes or overlaps, to the end of the file.
static int check_coverage(const StFile *f, CkErr *e) {
    StEntry *s = malloc(sizeof(StEntry) * (f->n ? f->n : 1));
    if (!s) {
        ck_err(e, "%s: out of memory", f->path);
        return -1;
    }
    memcpy(s, f->entries, sizeof(StEntry) * f->n);
    qsort(s, f->n, sizeof *s, cmp_begin);
    uint64_t at = 0, data_len = f->size - f->data_start;
    int rc = 0;
    for (int i = 0; i < f->n && rc == 0; i++) {
        if (s[i].begin != at) {
            ck_err(e, "%s: tensor '%s': data starts at byte %" PRIu64 " of the data buffer, expected %" PRIu64
                   " (hole or overlap)", f->path, s[i].name, s[i].begin, at);
            rc = -1;
        }
        at = s[i].end;
    }
    if (rc == 0 && at != data_len) {
        ck_err(e, "%s: the tensors cover %" PRIu64 " bytes but the file holds %" PRIu64 " data bytes (%s)", f->path, at,
               data_len, at > data_len ? "truncated file" : "trailing bytes");
        rc = -1;
    }
    free(s);
    return rc;
}

static int parse_header(StFile *f, const char *json, size_t len, CkErr *e) {
    cJSON *root = cJSON_ParseWithLength(json, len);
    if (!root || !cJSON_IsObject(root)) {
        ck_err(e, "%s: the JSON header is not a valid JSON object (damaged or not a safetensors file)", f->path);
        cJSON_Delete(root);
        return -1;
    }
    int count = cJSON_GetArraySize(root);
    f->entries = calloc((size_t)(count ? count : 1), sizeof(StEntry));
    int rc = f->entries ? 0 : -1;
    if (rc) ck_err(e, "%s: out of memory", f->path);
    bool metadata = false;
    for (const cJSON *c = root->child; c && rc == 0; c = c->next) {
        if (strcmp(c->string, "__metadata__") == 0) {
            if (metadata) ck_err(e, "%s: header field __metadata__ appears twice (damaged header)", f->path);
            rc = metadata ? -1 : parse_metadata(f, c, e);
            metadata = true;
            continue;
        }
        for (int i = 0; i < f->n && rc == 0; i++)
            if (strcmp(f->entries[i].name, c->string) == 0) {
                ck_err(e, "%s: tensor '%s' appears twice in the header", f->path, c->string);
                rc = -1;
            }
        if (rc == 0) rc = parse_entry(f, c, &f->entries[f->n++], e);
    }
    cJSON_Delete(root);
    return rc == 0 ? check_coverage(f, e) : -1;
}

// n bytes at offset off of fd into buf; 0, or -1 with e naming path.
static int pread_full(int fd, void *buf, size_t n, uint64_t off, const char *path, CkErr *e) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (unsigned char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            ck_err(e, "%s: read failed at byte %" PRIu64 " (%s)", path, off + got, r < 0 ? strerror(errno) : "file shrank");
            return -1;
        }
        got += (size_t)r;
    }
    return 0;
}

// Only the header is read here; st_read reads each tensor when asked, so a model is never held twice.
int st_open(StFile *f, const char *path, CkErr *e) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        if (fd < 0) ck_err(e, "%s: cannot open (%s)", path, strerror(errno));
        else ck_err(e, "%s: not a readable regular file", path);
        if (fd >= 0) close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size, prefix = size < 8 ? size : 8;
    uint64_t hlen = 0;
    unsigned char head[8];
    if (pread_full(fd, head, prefix, 0, path, e) != 0) {
        close(fd);
        return -1;
    }
    if (prefix == 8) memcpy(&hlen, head, 8);
    if (prefix == 8 && hlen <= ST_MAX_HEADER && hlen <= size - 8) prefix = 8 + (size_t)hlen;   // else st_parse refuses it
    unsigned char *bytes = malloc(prefix + 1);
    if (!bytes || pread_full(fd, bytes, prefix, 0, path, e) != 0) {
        if (!bytes) ck_err(e, "%s: out of memory reading the header", path);
        free(bytes);
        close(fd);
        return -1;
    }
    if (st_parse(f, bytes, size, path, e) != 0) {   // reads bytes[0 .. 8 + header length) only
        close(fd);
        return -1;
    }
    f->fd = fd;
    return 0;
}

int st_parse(StFile *f, unsigned char *bytes, size_t size, const char *path, CkErr *e) {
    memset(f, 0, sizeof *f);
    f->fd = -1;
    f->path = strdup(path);
    f->bytes = bytes;
    f->size = size;
    if (!f->path) {
        ck_err(e, "%s: out of memory", path);
        goto fail;
    }
    uint64_t hlen = 0;
    if (f->size < 8) {
        ck_err(e, "%s: %zu bytes, too short for the 8-byte header length (truncated?)", path, f->size);
        goto fail;
    }
    memcpy(&hlen, f->bytes, 8);
    if (hlen > ST_MAX_HEADER || hlen > f->size - 8) {
        ck_err(e, "%s: header length %" PRIu64 " exceeds the file (%zu bytes) or the 100 MB limit (truncated or not a "
               "safetensors file, e.g. a git-lfs pointer)", path, hlen, f->size);
        goto fail;
    }
    if (hlen < 2 || f->bytes[8] != '{') {
        ck_err(e, "%s: the header does not start with '{'", path);
        goto fail;
    }
    f->data_start = 8 + (size_t)hlen;
    if (parse_header(f, (const char *)f->bytes + 8, (size_t)hlen, e) != 0) goto fail;
    return 0;
fail:
    st_close(f);
    return -1;
}

void st_close(StFile *f) {
    for (int i = 0; i < f->n; i++) free(f->entries[i].name);
    free(f->entries);
    free(f->bytes);
    free(f->path);
    free(f->format);
    if (f->fd >= 0) close(f->fd);
    memset(f, 0, sizeof *f);
    f->fd = -1;
}

const StEntry *st_find(const StFile *f, const char *name) {
    for (int i = 0; i < f->n; i++)
        if (strcmp(f->entries[i].name, name) == 0) return &f->entries[i];
    return NULL;
}

// n values of dtype at src into dst.
static void convert(StDtype dtype, const unsigned char *src, size_t n, real *dst) {
    switch (dtype) {
    case ST_F32:
        if (sizeof(real) == 4) memcpy(dst, src, n * 4);
        else for (size_t i = 0; i < n; i++) { float v; memcpy(&v, src + 4 * i, 4); dst[i] = (real)v; }
        break;
    case ST_F64:
        for (size_t i = 0; i < n; i++) { double v; memcpy(&v, src + 8 * i, 8); dst[i] = (real)v; }
        break;
    case ST_BF16:
        for (size_t i = 0; i < n; i++) { uint16_t h; memcpy(&h, src + 2 * i, 2); dst[i] = (real)st_bf16_to_f32(h); }
        break;
    default:   // ST_F16
        for (size_t i = 0; i < n; i++) { uint16_t h; memcpy(&h, src + 2 * i, 2); dst[i] = (real)st_f16_to_f32(h); }
        break;
    }
}

int st_read(const StFile *f, const StEntry *t, uint64_t first, uint64_t count, real *dst, CkErr *e) {
    size_t n = (size_t)count, es = st_dtype_size(t->dtype);
    if (t->dtype == ST_OTHER) {
        ck_err(e, "%s: tensor '%s': dtype %s is not supported (use F32, BF16, F16 or F64)", f->path, t->name,
               t->dtype_name);
        return -1;
    }
    if (first > t->numel || count > t->numel - first) {
        ck_err(e, "%s: tensor '%s': values [%" PRIu64 ", +%" PRIu64 ") are past its %" PRIu64 " (internal)", f->path, t->name,
               first, count, t->numel);
        return -1;
    }
    uint64_t at = f->data_start + t->begin + first * es;   // the range's first byte in the file
    if (f->fd < 0) {   // the whole file is in memory (st_parse)
        convert(t->dtype, f->bytes + at, n, dst);
        return 0;
    }
    enum { READ_CHUNK = 1 << 20 };   // values per read: the staging buffer stays small (at most 8 MB)
    unsigned char *buf = malloc((n < READ_CHUNK ? n : READ_CHUNK) * es + 1);
    if (!buf) {
        ck_err(e, "%s: out of memory reading tensor '%s'", f->path, t->name);
        return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i += READ_CHUNK) {
        size_t k = n - i < READ_CHUNK ? n - i : READ_CHUNK;
        rc = pread_full(f->fd, buf, k * es, at + i * es, f->path, e);
        if (rc == 0) convert(t->dtype, buf, k, dst + i);
    }
    free(buf);
    return rc;
}

// ---- writing ---------------------------------------------------------------------------------

static uint64_t out_numel(const StOut *t) {
    uint64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= (uint64_t)t->shape[d];
    return n;
}

static cJSON *raw_u64(uint64_t v) {
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, v);   // exact integers (cJSON numbers are doubles)
    return cJSON_CreateRaw(buf);
}

// The header text, padded with spaces to a multiple of 8 bytes.
static char *build_header(const StOut *t, int n, StDtype dtype, const char *const *meta, int n_meta, size_t *len) {
    cJSON *root = cJSON_CreateObject(), *md = cJSON_CreateObject();
    if (!root || !md) return NULL;
    cJSON_AddItemToObject(root, "__metadata__", md);
    cJSON_AddStringToObject(md, "format", "pt");
    for (int i = 0; i < n_meta; i++) cJSON_AddStringToObject(md, meta[2 * i], meta[2 * i + 1]);
    uint64_t at = 0, es = st_dtype_size(dtype);
    for (int i = 0; i < n; i++) {
        cJSON *o = cJSON_CreateObject(), *shape = cJSON_CreateArray(), *off = cJSON_CreateArray();
        cJSON_AddStringToObject(o, "dtype", st_dtype_name(dtype));
        for (int d = 0; d < t[i].ndim; d++) cJSON_AddItemToArray(shape, raw_u64((uint64_t)t[i].shape[d]));
        cJSON_AddItemToObject(o, "shape", shape);
        uint64_t bytes = out_numel(&t[i]) * es;
        cJSON_AddItemToArray(off, raw_u64(at));
        cJSON_AddItemToArray(off, raw_u64(at + bytes));
        cJSON_AddItemToObject(o, "data_offsets", off);
        cJSON_AddItemToObject(root, t[i].name, o);
        at += bytes;
    }
    char *text = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!text) return NULL;
    size_t l = strlen(text), padded = (l + 7) / 8 * 8;
    char *out = realloc(text, padded + 1);
    if (!out) {
        free(text);
        return NULL;
    }
    memset(out + l, ' ', padded - l);
    out[padded] = 0;
    *len = padded;
    return out;
}

// Writes numel values of `real` as dtype, converting through a bounded buffer.
static int write_tensor(int fd, const real *x, uint64_t numel, StDtype dtype, const char *path, CkErr *e) {
    if (dtype == ST_F32 && sizeof(real) == 4) return fs_write_all(fd, x, numel * 4, path, e);
    if (dtype == ST_F64 && sizeof(real) == 8) return fs_write_all(fd, x, numel * 8, path, e);
    enum { CHUNK = 1 << 20 };
    size_t es = st_dtype_size(dtype);
    unsigned char *buf = malloc(CHUNK * es);
    if (!buf) {
        ck_err(e, "%s: out of memory", path);
        return -1;
    }
    int rc = 0;
    for (uint64_t i = 0; i < numel && rc == 0; i += CHUNK) {
        size_t m = numel - i < CHUNK ? (size_t)(numel - i) : CHUNK;
        for (size_t k = 0; k < m; k++) {
            float f = (float)x[i + k];
            double dd = (double)x[i + k];
            uint16_t h = st_f32_to_bf16(f);
            if (dtype == ST_F32) memcpy(buf + 4 * k, &f, 4);
            else if (dtype == ST_F64) memcpy(buf + 8 * k, &dd, 8);
            else memcpy(buf + 2 * k, &h, 2);
        }
        rc = fs_write_all(fd, buf, m * es, path, e);
    }
    free(buf);
    return rc;
}

int st_write(const char *path, const StOut *t, int n, StDtype dtype, const char *const *meta, int n_meta, CkErr *e) {
    if (dtype != ST_F32 && dtype != ST_F64 && dtype != ST_BF16) {
        ck_err(e, "%s: writing dtype %s is not supported (F32, F64 or BF16)", path, st_dtype_name(dtype));
        return -1;
    }
    size_t hlen = 0;
    char *header = build_header(t, n, dtype, meta, n_meta, &hlen);
    if (!header) {
        ck_err(e, "%s: cannot build the JSON header (out of memory)", path);
        return -1;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        ck_err(e, "%s: cannot create (%s)", path, strerror(errno));
        free(header);
        return -1;
    }
    uint64_t len64 = hlen;
    int rc = fs_write_all(fd, &len64, 8, path, e);
    if (rc == 0) rc = fs_write_all(fd, header, hlen, path, e);
    free(header);
    for (int i = 0; i < n && rc == 0; i++) {
        if (i == n / 2) fs_kill_point(fs_kill_mid_write_point);   // (testing: a save killed mid-file)
        uint64_t numel = out_numel(&t[i]);
        real *made = t[i].data ? NULL : malloc(numel * sizeof(real) + 1);   // (numel) t[i].fill's values
        if (!t[i].data && !made) ck_err(e, "%s: out of memory for tensor '%s'", path, t[i].name);
        if (!t[i].data) rc = made ? t[i].fill(t[i].ctx, t[i].index, made, e) : -1;
        if (rc == 0) rc = write_tensor(fd, t[i].data ? t[i].data : made, numel, dtype, path, e);
        free(made);
    }
    if (rc == 0 && fsync(fd) != 0) {
        ck_err(e, "%s: fsync failed (%s)", path, strerror(errno));
        rc = -1;
    }
    if (close(fd) != 0 && rc == 0) {
        ck_err(e, "%s: close failed (%s)", path, strerror(errno));
        rc = -1;
    }
    return rc;
}
