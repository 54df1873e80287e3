// core/outdir.h — an output directory belongs to one writer: locked for the life of the process, refused or moved aside when it holds earlier work.
#pragma once
#include <stdbool.h>
#include <stddef.h>

// The lock file inside a locked directory. It is removed when the process exits normally; one that a killed
// process left behind is harmless (flock locks die with their process) and is taken over by the next writer.
#define OUTDIR_LOCK_NAME ".ringgpt.lock"

// What to do with an output directory that holds an earlier run or dataset (the --out-exists flag).
typedef enum { OUTDIR_REFUSE, OUTDIR_MOVE } OutdirMode;
// "refuse" or "move"; false for anything else.
bool outdir_mode_parse(const char *s, OutdirMode *m);

// What outdir_lock and outdir_claim report besides success (0).
enum {
    OUTDIR_BUSY = 1,     // another process holds the lock; err names it (pid and host)
    OUTDIR_TAKEN = 2,    // the directory holds earlier work; err names the first entry that counts
    OUTDIR_FAILED = -1,  // a system call failed; err says which, *errno_out holds errno
};

// Locks dir (created, with its parents, when missing) for this process: an exclusive flock on
// dir/.ringgpt.lock, held until the process ends — the kernel releases it however the process ends, so a
// crash (kill -9) never leaves a directory locked. At a normal exit the lock file is removed, and dir too when
// this call created it and nothing else was written there. Locking a directory this process holds is a no-op.
// Returns 0, OUTDIR_BUSY or OUTDIR_FAILED (err, size n, says why).
int outdir_lock(const char *dir, char *err, size_t n, int *errno_out);

// Claims dir for new work: locks it, then looks for entries of earlier work — `counts(name)` says which entry
// names count (the lock file and names ending in .tmp never do). None: 0. Some, with OUTDIR_REFUSE:
// OUTDIR_TAKEN, nothing changed. Some, with OUTDIR_MOVE: the whole directory is renamed to dir.old1 (or .old2,
// ... the first free name; nothing is ever deleted), a fresh dir is created and locked in its place, and
// `moved` (size mn) gets the new name of the old one. Partial files of a writer that died (names ending in .tmp)
// do not count; the writer that claims the directory removes them.
int outdir_claim(const char *dir, OutdirMode mode, bool (*counts)(const char *name), char *err, size_t n,
                 char *moved, size_t mn, int *errno_out);
