// checkpoints/fsio.c — durable file-system steps with error returns: whole writes, fsync, renames, CRC32, tree removal.
#include "checkpoints/fsio.h"

#include "core/common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

void ck_err(CkErr *e, const char *fmt, ...) {
    if (!e) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    one_line(e->msg);
}

void fs_join(char *out, size_t n, const char *dir, const char *name) {
    int len = snprintf(out, n, "%s/%s", dir, name);
    if (len < 0 || (size_t)len >= n) fail_data(dir, "path too long (with %s); use a shorter --out", name);
}

int fs_write_all(int fd, const void *buf, size_t n, const char *path, CkErr *e) {
    const unsigned char *p = buf;
    while (n > 0) {
        size_t chunk = n < (1u << 30) ? n : (1u << 30);
        ssize_t w = write(fd, p, chunk);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            ck_err(e, "%s: write failed (%s)", path, w < 0 ? strerror(errno) : "no progress");
            return -1;
        }
        p += w, n -= (size_t)w;
    }
    return 0;
}

int fs_write_file(const char *path, const void *buf, size_t n, CkErr *e) {
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        ck_err(e, "%s: cannot create (%s)", path, strerror(errno));
        return -1;
    }
    if (fs_write_all(fd, buf, n, path, e) != 0) {
        close(fd);
        return -1;
    }
    if (fsync(fd) != 0) {
        ck_err(e, "%s: fsync failed (%s)", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (close(fd) != 0) {
        ck_err(e, "%s: close failed (%s)", path, strerror(errno));
        return -1;
    }
    return 0;
}

int fs_fsync_dir(const char *dir, CkErr *e) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        ck_err(e, "%s: cannot open directory (%s)", dir, strerror(errno));
        return -1;
    }
    int rc = fsync(fd);
    int err = errno;
    close(fd);
    if (rc != 0 && err != EINVAL) {   // EINVAL: the file system cannot sync directories (nothing to do)
        ck_err(e, "%s: fsync of the directory failed (%s)", dir, strerror(err));
        return -1;
    }
    return 0;
}

int fs_rename(const char *from, const char *to, CkErr *e) {
    if (rename(from, to) != 0) {
        ck_err(e, "%s: cannot rename to %s (%s)", from, to, strerror(errno));
        return -1;
    }
    return 0;
}

unsigned char *fs_read_file(const char *path, size_t *len, CkErr *e) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        ck_err(e, "%s: cannot open (%s)", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        ck_err(e, "%s: not a readable regular file", path);
        close(fd);
        return NULL;
    }
    size_t n = (size_t)st.st_size, got = 0;
    unsigned char *buf = malloc(n + 1);
    if (!buf) {
        ck_err(e, "%s: out of memory reading %.1f MiB", path, n / 1048576.0);
        close(fd);
        return NULL;
    }
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            ck_err(e, "%s: read failed at byte %zu of %zu (%s)", path, got, n, r < 0 ? strerror(errno) : "file shrank");
            free(buf);
            close(fd);
            return NULL;
        }
        got += (size_t)r;
    }
    close(fd);
    buf[n] = 0;
    *len = n;
    return buf;
}

int fs_crc32_file(const char *path, uint32_t *crc, uint64_t *size, CkErr *e) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        ck_err(e, "%s: cannot open (%s)", path, strerror(errno));
        return -1;
    }
    enum { CHUNK = 8 << 20 };
    unsigned char *buf = malloc(CHUNK);
    if (!buf) {
        ck_err(e, "%s: out of memory", path);
        close(fd);
        return -1;
    }
    uLong c = crc32(0L, Z_NULL, 0);
    uint64_t total = 0;
    for (;;) {
        ssize_t r = read(fd, buf, CHUNK);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) {
            ck_err(e, "%s: read failed (%s)", path, strerror(errno));
            free(buf);
            close(fd);
            return -1;
        }
        if (r == 0) break;
        c = crc32(c, buf, (uInt)r);
        total += (uint64_t)r;
    }
    free(buf);
    close(fd);
    *crc = (uint32_t)c;
    *size = total;
    return 0;
}

int fs_remove_flat_dir(const char *dir, CkErr *e) {
    DIR *d = opendir(dir);
    if (!d) {
        ck_err(e, "%s: cannot open directory (%s)", dir, strerror(errno));
        return -1;
    }
    struct dirent *de;
    char path[4096];
    int rc = 0;
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (unlink(path) != 0) {
            ck_err(e, "%s: cannot remove (%s)", path, strerror(errno));
            rc = -1;
            break;
        }
    }
    closedir(d);
    if (rc == 0 && rmdir(dir) != 0) {
        ck_err(e, "%s: cannot remove directory (%s)", dir, strerror(errno));
        rc = -1;
    }
    return rc;
}

int fs_is_dir(const char *path, CkErr *e) {
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno == ENOENT) return 0;
        ck_err(e, "%s: cannot stat (%s)", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        ck_err(e, "%s: exists but is not a directory", path);
        return -1;
    }
    return 1;
}

int fs_kill_mid_write_point;
static int g_save_index;

void fs_kill_begin_save(void) { g_save_index++; }

void fs_kill_point(int point) {
    static int parsed, want_save, want_point;
    if (!parsed) {
        const char *s = getenv("RINGGPT_DEBUG_CKPT_KILL");
        parsed = 1;
        if (s && sscanf(s, "%d:%d", &want_save, &want_point) != 2) want_save = want_point = 0;
    }
    if (point > 0 && want_save == g_save_index && want_point == point) {
        fprintf(stderr, "ringgpt: killed at point %d of checkpoint save %d (RINGGPT_DEBUG_CKPT_KILL, testing)\n", point,
                g_save_index);
        fflush(stderr);
        raise(SIGKILL);
    }
}
