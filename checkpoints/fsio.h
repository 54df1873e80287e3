// checkpoints/fsio.h — durable file-system steps with error returns: whole writes, fsync, renames, CRC32, tree removal.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "checkpoints/safetensors.h"

// out = dir + "/" + name; a path that does not fit is a fatal error naming it.
void fs_join(char *out, size_t n, const char *dir, const char *name);
// Writes all bytes (retrying short writes and EINTR). Returns 0, or -1 with e naming path.
int fs_write_all(int fd, const void *buf, size_t n, const char *path, CkErr *e);
// Creates path with contents, fsyncs and closes it.
int fs_write_file(const char *path, const void *buf, size_t n, CkErr *e);
// fsync of a directory (makes renames and creations inside it durable).
int fs_fsync_dir(const char *dir, CkErr *e);
int fs_rename(const char *from, const char *to, CkErr *e);
// Reads a whole file into a malloc'ed buffer (+1 NUL byte). Returns NULL with e on failure.
unsigned char *fs_read_file(const char *path, size_t *len, CkErr *e);
// CRC32 (zlib) and size of a file, streamed. Returns 0, or -1 with e.
int fs_crc32_file(const char *path, uint32_t *crc, uint64_t *size, CkErr *e);
// Removes a directory that holds only plain files (a checkpoint). Returns 0, or -1 with e.
int fs_remove_flat_dir(const char *dir, CkErr *e);
// 1 if path is a directory, 0 if it does not exist, -1 (with e) if it is something else or unreadable.
int fs_is_dir(const char *path, CkErr *e);
// Testing: the environment variable RINGGPT_DEBUG_CKPT_KILL="S:P" sends SIGKILL to this process at
// kill point P (1, 2, ...) of its S-th checkpoint save (1-based). A save calls fs_kill_begin_save once,
// then fs_kill_point at each point; st_write reports fs_kill_mid_write_point halfway through a file.
void fs_kill_begin_save(void);
void fs_kill_point(int point);
extern int fs_kill_mid_write_point;   // 0: none
