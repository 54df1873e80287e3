// core/outdir.c — an output directory belongs to one writer: an flock held for the process's life, earlier work refused or moved aside.
#include "core/outdir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/common.h"

// The locks this process holds; released (file removed, a directory it created and left empty removed) at exit.
typedef struct {
    int fd;
    char dir[4096];
    bool created;   // outdir_lock made the directory
} Held;
enum { MAX_HELD = 8 };
static Held g_held[MAX_HELD];
static int g_n_held;

bool outdir_mode_parse(const char *s, OutdirMode *m) {
    if (strcmp(s, "refuse") == 0) *m = OUTDIR_REFUSE;
    else if (strcmp(s, "move") == 0) *m = OUTDIR_MOVE;
    else return false;
    return true;
}

static void lock_path(const char *dir, char *out, size_t n) { snprintf(out, n, "%s/%s", dir, OUTDIR_LOCK_NAME); }

static void release(Held *h) {
    char path[4200];
    lock_path(h->dir, path, sizeof path);
    unlink(path);   // while still holding the lock: a process that opened the old file re-checks and retries
    close(h->fd);
    if (h->created) rmdir(h->dir);   // only when empty: a refused run leaves no directory behind
    h->fd = -1;
}

static void release_all(void) {
    for (int i = 0; i < g_n_held; i++)
        if (g_held[i].fd >= 0) release(&g_held[i]);
    g_n_held = 0;
}

static Held *held(const char *dir) {
    for (int i = 0; i < g_n_held; i++)
        if (g_held[i].fd >= 0 && strcmp(g_held[i].dir, dir) == 0) return &g_held[i];
    return NULL;
}

static int failed(int *errno_out, char *err, size_t n, const char *what, const char *path) {
    *errno_out = errno;
    snprintf(err, n, "%s: %s (%s)", path, what, strerror(errno));
    return OUTDIR_FAILED;
}

// Who holds the lock, from what it wrote into the file ("pid 123 on host").
static void holder(int fd, char *err, size_t n) {
    char buf[200] = "";
    ssize_t k = pread(fd, buf, sizeof buf - 1, 0);
    buf[k > 0 ? k : 0] = 0;
    buf[strcspn(buf, "\n")] = 0;
    snprintf(err, n, "%s", buf[0] ? buf : "another process");
}

int outdir_lock(const char *dir, char *err, size_t n, int *errno_out) {
    if (held(dir)) return 0;
    if (g_n_held == MAX_HELD) {
        errno = EMFILE;
        return failed(errno_out, err, n, "too many locked directories", dir);
    }
    struct stat st;
    bool created = stat(dir, &st) != 0;
    if (created) make_dirs(dir);
    else if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return failed(errno_out, err, n, "is not a directory", dir);
    }
    char path[4200];
    lock_path(dir, path, sizeof path);
    for (int attempt = 0; attempt < 100; attempt++) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        if (fd < 0) return failed(errno_out, err, n, "cannot create the lock file", path);
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int e = errno;
            if (e == EWOULDBLOCK) holder(fd, err, n);
            close(fd);
            errno = e;
            if (e == EWOULDBLOCK) return OUTDIR_BUSY;
            return failed(errno_out, err, n, "cannot lock", path);
        }
        // The file may have been removed by the holder that just finished: lock the file the path names now.
        struct stat a, b;
        if (fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
            char host[128] = "?", line[256];
            gethostname(host, sizeof host - 1);
            int len = snprintf(line, sizeof line, "pid %ld on %s\n", (long)getpid(), host);
            if (ftruncate(fd, 0) != 0 || pwrite(fd, line, (size_t)len, 0) != len) {
                close(fd);
                return failed(errno_out, err, n, "cannot write the lock file", path);
            }
            if (g_n_held == 0) atexit(release_all);
            Held *h = &g_held[g_n_held++];
            *h = (Held){.fd = fd, .created = created};
            snprintf(h->dir, sizeof h->dir, "%s", dir);
            return 0;
        }
        close(fd);
    }
    errno = EAGAIN;
    return failed(errno_out, err, n, "the lock file keeps changing", path);
}

static bool ends_with(const char *s, const char *tail) {
    size_t a = strlen(s), b = strlen(tail);
    return a >= b && strcmp(s + a - b, tail) == 0;
}

// The first entry of dir that counts as earlier work, and how many there are.
static int count_entries(const char *dir, bool (*counts)(const char *name), char *first, size_t n, int *errno_out) {
    DIR *d = opendir(dir);
    if (!d) {
        *errno_out = errno;
        return -1;
    }
    int count = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        const char *name = de->d_name;
        if (!strcmp(name, ".") || !strcmp(name, "..") || !strcmp(name, OUTDIR_LOCK_NAME) || ends_with(name, ".tmp")) continue;
        if (!counts(name)) continue;
        if (count++ == 0) snprintf(first, n, "%s", name);
    }
    closedir(d);
    return count;
}

// dir without trailing slashes, plus ".oldK" for the first K that names nothing.
static int aside_name(const char *dir, char *out, size_t n) {
    char base[4096];
    snprintf(base, sizeof base, "%s", dir);
    size_t len = strlen(base);
    while (len > 1 && base[len - 1] == '/') base[--len] = 0;
    struct stat st;
    for (int k = 1; k < 10000; k++) {
        if (snprintf(out, n, "%s.old%d", base, k) >= (int)n) return -1;
        if (lstat(out, &st) != 0 && errno == ENOENT) return 0;
    }
    return -1;
}

int outdir_claim(const char *dir, OutdirMode mode, bool (*counts)(const char *name), char *err, size_t n,
                 char *moved, size_t mn, int *errno_out) {
    int rc = outdir_lock(dir, err, n, errno_out);
    if (rc != 0) return rc;
    char first[256] = "";
    int count = count_entries(dir, counts, first, sizeof first, errno_out);
    if (count < 0) {
        errno = *errno_out;
        return failed(errno_out, err, n, "cannot list the directory", dir);
    }
    if (count == 0) return 0;
    if (mode == OUTDIR_REFUSE) {
        snprintf(err, n, "%s%s", first, count > 1 ? " and more" : "");
        return OUTDIR_TAKEN;
    }
    if (aside_name(dir, moved, mn) != 0) {
        errno = EEXIST;
        return failed(errno_out, err, n, "no free name to move it aside to", dir);
    }
    if (rename(dir, moved) != 0) return failed(errno_out, err, n, "cannot move it aside", dir);
    Held *old = held(dir);
    snprintf(old->dir, sizeof old->dir, "%s", moved);   // still locked under its new name until the new one is
    old->created = false;
    rc = outdir_lock(dir, err, n, errno_out);
    release(old);
    return rc;
}
