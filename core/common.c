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

void set_fail_hook(void (*hook)(int code, const char *line)) { g_fail_hook = hook; }
void set_fail_quiet(bool (*quiet)(int code)) { g_fail_quiet = quiet; }
void set_log_rank(int rank) { g_log_rank = rank; }
int log_rank(void) { return g_log_rank; }

void print_error_line(const char *fmt, va_list ap) {
    fflush(stdout);
    fprintf(stderr, "ringgpt: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    fflush(stderr);
}

static _Noreturn void vfail(int code, const char *path, const char *fmt, va_list ap) {
    fflush(stdout);
    char line[8192];
    int n = path ? snprintf(line, sizeof line, "ringgpt: %s: ", path) : snprintf(line, sizeof line, "ringgpt: ");
    if (n < 0 || n >= (int)sizeof line) n = 0;
    vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
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
    vfail(EXIT_USAGE, NULL, fmt, ap);
}

void fail_data(const char *path, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vfail(EXIT_RUNTIME, path, fmt, ap);
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
    if (!f) fail_data(path, "cannot open (%s)", strerror(errno));
    return f;
}

void xfread(void *dst, size_t bytes, FILE *f, const char *path) {
    if (bytes && fread(dst, 1, bytes, f) != bytes)
        fail_data(path, "%s while reading %zu bytes", ferror(f) ? strerror(errno) : "unexpected end of file", bytes);
}

void xfwrite(const void *src, size_t bytes, FILE *f, const char *path) {
    if (bytes && fwrite(src, 1, bytes, f) != bytes) fail_data(path, "write failed (%s)", strerror(errno));
}

void xfclose(FILE *f, const char *path) {
    if (fclose(f) != 0) fail_data(path, "close failed (%s)", strerror(errno));
}

unsigned char *read_whole_file(const char *path, size_t *len) {
    FILE *f = xfopen(path, "rb");
    struct stat st;
    if (fstat(fileno(f), &st) != 0) fail_data(path, "cannot stat (%s)", strerror(errno));
    if (!S_ISREG(st.st_mode)) fail_data(path, "not a regular file");
    unsigned char *buf = xmalloc((size_t)st.st_size + 1, path);
    xfread(buf, (size_t)st.st_size, f, path);
    xfclose(f, path);
    buf[st.st_size] = 0;
    *len = (size_t)st.st_size;
    return buf;
}

void make_dirs(const char *path) {
    char *p = xstrdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) fail_data(p, "cannot create directory (%s)", strerror(errno));
        *s = '/';
    }
    if (mkdir(p, 0755) != 0 && errno != EEXIST) fail_data(p, "cannot create directory (%s)", strerror(errno));
    free(p);
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
