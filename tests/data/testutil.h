// tests/data/testutil.h — helpers for the data tests: temp dirs, files, running a command in-process.
#pragma once
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/check.h"

// CHECK and the closing "N passed, N failed" line come from the project's harness.
static inline int test_finish(void) { return check_summary(); }

// A fresh directory under TMPDIR (or /tmp), removed by the caller with rm_rf.
static inline char *temp_dir(const char *tag) {
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char *p = malloc(strlen(base) + strlen(tag) + 32);
    sprintf(p, "%s/ringgpt_%s_XXXXXX", base, tag);
    if (!mkdtemp(p)) {
        perror("mkdtemp");
        exit(1);
    }
    return p;
}

static inline void rm_rf(const char *dir) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", dir);
}

static inline char *path_join(const char *a, const char *b) {
    char *p = malloc(strlen(a) + strlen(b) + 2);
    sprintf(p, "%s/%s", a, b);
    return p;
}

static inline void write_bytes(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f) != 0) {
        perror(path);
        exit(1);
    }
}

static inline unsigned char *read_bytes(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(*n + 1);
    if (fread(b, 1, *n, f) != *n) *n = 0;
    b[*n] = 0;   // a text file reads as a string (strstr on it stays inside the buffer)
    fclose(f);
    return b;
}

// Runs a ringgpt subcommand function in a child process (commands exit on errors) and returns its exit code.
static inline int run_cmd(int (*cmd)(int, char **), const char *first, ...) {
    char *argv[64];
    int argc = 0;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && argc < 63; a = va_arg(ap, const char *)) argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!getenv("TEST_VERBOSE")) {
            FILE *n = freopen("/dev/null", "w", stdout);
            (void)n;
        }
        exit(cmd(argc, argv));
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}
