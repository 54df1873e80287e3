// core/common.c — one-line fatal errors, checked allocation and file I/O, clocks and peak memory.
#include "core/common.h"

#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

static void (*g_fail_hook)(int code, const char *line);
static bool (*g_fail_quiet)(int code);
static int g_log_rank;
static bool g_fail_local;   // the failure being reported is this process's alone (fail_data, fail_io)
static volatile bool g_failing;   // the process is ending on an error
static const char *g_usage_context;   // what fail_usage's line starts with while set

#ifdef __SANITIZE_ADDRESS__
// LeakSanitizer asks this before its check at exit. A process that ends on a fatal error leaves what its
// callers held (nothing unwinds them); a normal exit, a stop on a signal included, must have freed everything.
int __lsan_is_turned_off(void);
int __lsan_is_turned_off(void) { return g_failing; }
#endif

void fail_exiting(void) { g_failing = true; }
void fail_usage_context(const char *context) { g_usage_context = context; }
const char *plural(long long n) { return n == 1 ? "" : "s"; }

void set_fail_hook(void (*hook)(int code, const char *line)) { g_fail_hook = hook; }
void set_fail_quiet(bool (*quiet)(int code)) { g_fail_quiet = quiet; }
void set_log_rank(int rank) { g_log_rank = rank; }
int log_rank(void) { return g_log_rank; }
bool fail_is_local(void) { return g_fail_local; }

void one_line(char *s) {
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) *s = '?';
}

void print_error_line(const char *fmt, va_list ap) {
    fflush(stdout);
    char line[8192];
    vsnprintf(line, sizeof line, fmt, ap);
    one_line(line);
    fprintf(stderr, "ringgpt: %s\n", line);
    fflush(stderr);
}

static _Noreturn void vfail(int code, const char *path, const char *fmt, va_list ap) {
    g_failing = true;
    fflush(stdout);
    char line[8192];
    int n = path ? snprintf(line, sizeof line, "ringgpt: %s: ", path) : snprintf(line, sizeof line, "ringgpt: ");
    if (n < 0 || n >= (int)sizeof line) n = 0;
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    one_line(line);
    if (!g_fail_quiet || !g_fail_quiet(code)) {
        fprintf(stderr, "%s\n", line);
        fflush(stderr);
    }
    if (g_fail_hook) g_fail_hook(code, line);
    exit(code);
}

void fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(EXIT_RUNTIME, NULL, fmt, ap);
}

void fail_usage(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(EXIT_USAGE, g_usage_context, fmt, ap);
}

void fail_data(const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    g_fail_local = true;
    vfail(EXIT_USAGE, path, fmt, ap);
}

int exit_code_for_errno(int err) {
    switch (err) {   // the path the user gave is the problem: bad input
    case ENOENT: case ENOTDIR: case EISDIR: case EACCES: case EPERM: case EEXIST: case ENAMETOOLONG: case ELOOP:
    case EROFS: case ENOTEMPTY: case EINVAL: case ENXIO: case ENODEV: case ETXTBSY:
        return EXIT_USAGE;
    default:         // ENOSPC, EDQUOT, EFBIG, EIO, ENOMEM, ...: the machine is
        return EXIT_RUNTIME;
    }
}

void fail_io(const char *path, int err, const char *fmt, ...) {
    char msg[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    g_fail_local = true;
    int code = exit_code_for_errno(err);
    if (code == EXIT_USAGE) fail_data(path, "%s (%s)", msg, strerror(err));
    char line[4600];
    snprintf(line, sizeof line, "%s: %s (%s)", path, msg, strerror(err));
    fail("%s", line);
}

void *xmalloc(size_t bytes, const char *what) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) fail("rank %d: out of memory allocating %.1f MiB for %s; use --recompute full, a shorter --seq-len, smaller "
                 "--batch or more ranks (--sp)", g_log_rank, bytes / 1048576.0, what);
    return p;
}

void *xcalloc(size_t count, size_t size, const char *what) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) fail("rank %d: out of memory allocating %.1f MiB for %s; use --recompute full, a shorter --seq-len, smaller "
                 "--batch or more ranks (--sp)", g_log_rank, (double)count * size / 1048576.0, what);
    return p;
}

void *xrealloc(void *p, size_t bytes, const char *what) {
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) fail("out of memory growing %s to %.1f MiB", what, bytes / 1048576.0);
    return q;
}

char *xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n, "a string");
    memcpy(d, s, n);
    return d;
}

FILE *xfopen(const char *path, const char *mode) {
    FILE *f = fopen(path, mode);
    if (!f) fail_io(path, errno, "cannot open");
    return f;
}

void xfread(void *dst, size_t bytes, FILE *f, const char *path) {
    if (bytes && fread(dst, 1, bytes, f) != bytes) {
        if (ferror(f)) fail_io(path, errno, "read of %zu bytes failed", bytes);
        fail_data(path, "unexpected end of file while reading %zu bytes (truncated?)", bytes);
    }
}

// A failed write is the machine's problem (a full disk, an I/O error): exit 1 whatever errno says.
void xfwrite(const void *src, size_t bytes, FILE *f, const char *path) {
    if (bytes && fwrite(src, 1, bytes, f) != bytes) fail("%s: write failed (%s)", path, strerror(errno));
}

void xfclose(FILE *f, const char *path) {
    if (fclose(f) != 0) fail("%s: close failed (%s)", path, strerror(errno));
}

unsigned char *read_whole_file(const char *path, size_t *len) {
    FILE *f = xfopen(path, "rb");
    struct stat st;
    if (fstat(fileno(f), &st) != 0) fail_io(path, errno, "cannot stat");
    if (!S_ISREG(st.st_mode)) fail_data(path, "not a regular file");
    unsigned char *buf = xmalloc((size_t)st.st_size + 1, path);
    xfread(buf, (size_t)st.st_size, f, path);
    xfclose(f, path);
    buf[st.st_size] = 0;
    *len = (size_t)st.st_size;
    return buf;
}

int mkdir_parents(const char *path) {
    char *p = xstrdup(path);
    int rc = 0;
    for (char *s = p + 1; *s && rc == 0; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) rc = -1;
        *s = '/';
    }
    if (rc == 0 && mkdir(p, 0755) != 0 && errno != EEXIST) rc = -1;
    struct stat st;
    if (rc == 0 && stat(p, &st) != 0) rc = -1;
    if (rc == 0 && !S_ISDIR(st.st_mode)) errno = ENOTDIR, rc = -1;
    int e = errno;
    free(p);
    errno = e;
    return rc;
}

void make_dirs(const char *path) {
    if (mkdir_parents(path) != 0) {
        if (errno == ENOTDIR) fail_data(path, "is a file, not a directory (or under one); give a directory path");
        fail_io(path, errno, "cannot create directory");
    }
}

void path_dirname(const char *path, char *out, size_t n) {
    snprintf(out, n, "%s", path);
    size_t len = strlen(out);
    while (len > 1 && out[len - 1] == '/') out[--len] = 0;
    char *slash = strrchr(out, '/');
    if (!slash) snprintf(out, n, ".");
    else if (slash == out) out[1] = 0;
    else *slash = 0;
}

double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double peak_rss_mb(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0.0;
    return ru.ru_maxrss / 1024.0;  // Linux reports KiB
}

void log_info(const char *fmt, ...) {
    if (g_log_rank != 0) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}
