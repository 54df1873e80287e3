// core/common.h — errors that name the problem and the fix, checked allocation and I/O, timers, memory.
#pragma once
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

// Exit codes (docs/usage.md, "Exit codes"): 2 for bad input — flags, layouts, files that are missing, damaged or not
// what the command needs, output paths that cannot be used — found before or during the work; 1 for failures at run
// time (I/O errors, full disks, out of memory, a dead rank); 75 (EX_TEMPFAIL) for a training run that a signal
// stopped after it saved a checkpoint (resume it with --resume).
enum { EXIT_USAGE = 2, EXIT_RUNTIME = 1, EXIT_STOPPED = 75 };

// Print one line "ringgpt: <message>" to stderr and exit. fail_usage exits 2, fail exits 1.
// A hook (set by the comm layer) runs after the line so that a multi-rank job ends on all ranks; the
// quiet filter (also the comm layer's) keeps the line off ranks other than 0 when every rank fails alike.
_Noreturn void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
_Noreturn void fail_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// While context is not NULL, fail_usage's line reads "ringgpt: <context>: <message>" (a check run on the values of
// a file names the file); NULL ends it.
void fail_usage_context(const char *context);
// "s" unless n is 1: "%d step%s", n, plural(n).
const char *plural(long long n);
// Bad input data, found by this process alone (a damaged block, a missing file): "ringgpt: <path>: <message>",
// exit 2 (path NULL: the message names the file itself). Under MPI it ends the job at once (the other ranks did
// not see it), with exit 2.
_Noreturn void fail_data(const char *path, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// A failed system call on path with errno err: exit 2 when the path is the problem (missing, not a directory,
// no permission, a read-only file system), 1 when the machine is (a full disk, an I/O error, no memory).
// Like fail_data it is this process's own failure. "ringgpt: <path>: <message> (<strerror>)".
_Noreturn void fail_io(const char *path, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
// The exit code fail_io uses for errno err.
int exit_code_for_errno(int err);
// True while a failure of this process alone (fail_data, fail_io) is being reported: the comm layer's hook then
// aborts the job instead of waiting for the other ranks to fail alike.
bool fail_is_local(void);
// Marks the process as ending on an error (fail* do it; comm_abort too): the sanitized build's leak check,
// which holds every normal exit to freeing everything, is skipped then.
void fail_exiting(void);
void set_fail_hook(void (*hook)(int code, const char *line));
void set_fail_quiet(bool (*quiet)(int code));
// Makes s one line: every control byte (a newline from a file's key, a tab) becomes '?'. Every error message
// passes through it (fail, and the error records of the data and checkpoint readers).
void one_line(char *s);
// Prints "ringgpt: <message>\n" to stderr and flushes (the line fail() prints, without exiting).
void print_error_line(const char *fmt, va_list ap);

// Checked allocation: names the size and what it was for when the machine says no.
void *xmalloc(size_t bytes, const char *what);
void *xcalloc(size_t count, size_t size, const char *what);
void *xrealloc(void *p, size_t bytes, const char *what);
char *xstrdup(const char *s);

// Checked stdio: every failure names the path and the system's reason.
FILE *xfopen(const char *path, const char *mode);
void xfread(void *dst, size_t bytes, FILE *f, const char *path);
void xfwrite(const void *src, size_t bytes, FILE *f, const char *path);
void xfclose(FILE *f, const char *path);
// Reads a whole file; *len gets its size. Fails with a clear message on any error.
unsigned char *read_whole_file(const char *path, size_t *len);
// mkdir -p; fails with the path and reason (fail_io).
void make_dirs(const char *path);
// mkdir -p without failing: 0, or -1 with errno (ENOTDIR when path or a parent is a file).
int mkdir_parents(const char *path);
// The directory part of path ("a/b/c" -> "a/b", "c" -> ".", "/c" -> "/") into out (size n).
void path_dirname(const char *path, char *out, size_t n);

// Wall-clock seconds (monotonic) and peak resident set size of this process in MiB.
double now_seconds(void);
double peak_rss_mb(void);

// Logging from rank 0 only (the comm layer sets the rank); printf-like, to stdout.
void set_log_rank(int rank);
int log_rank(void);
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
// CPU threads for OpenMP and OpenBLAS (n >= 1, else a usage error); subnormal floats flushed to zero on each.
void cpu_threads(int n);
// The cores this process may use: its affinity mask (taskset, a Slurm or container cpuset), capped by a cgroup v2
// CPU quota (docker --cpus) where one is set.
int cpu_cores(void);
// --threads when not given, per rank of this job's node_ranks ranks on this machine: its cores (cpu_cores) less those
// that other processes hold now, shared among the ranks, at least 1. *others: the processes seen running beside this
// job (the fewest of a few looks 10 ms apart). The test hook RINGGPT_THREADS_IGNORE_LOAD=1: no look (*others = 0).
int cpu_default_threads(int node_ranks, int *others);
// True, with one line in note (size n), when `others` processes (cpu_default_threads) run beside this job and its
// node_ranks ranks x threads threads oversubscribe the cores (the caller prints it where it fits).
bool cpu_shared_note(int threads, int node_ranks, int others, char *note, size_t n);
// --threads per rank: `given` (> 0: the user's; one note where it oversubscribes a busy machine), else the cores of
// this node that other processes leave free, shared among this job's ranks on it (cpu_default_threads), the fewest
// any rank found, with one note when other processes took cores from it. A collective: every rank calls it.
int cpu_node_threads(int given);
// The BLAS the binary runs on, as OpenBLAS names it: its build and the kernels it chose for this CPU
// (per CPU model unless OPENBLAS_CORETYPE forces them), e.g. "OpenBLAS 0.3.21 ... DYNAMIC_ARCH ... Cooperlake
// MAX_THREADS=64 (kernels: Cooperlake)" on a Zen 4; where cpu_exec_setup replaced OpenBLAS's pick, it says so.
void cpu_blas_describe(char *out, size_t n);
// First thing in the main of every program that trains or times CPU work (ringgpt, the CPU benchmarks): runs this
// program again (same argv, same pid) with what the libraries read once, as they load, set where it is unset:
// GOMP_SPINCOUNT=2000 (idle OpenMP workers spin briefly, then sleep, instead of holding cores another process needs
// for 300,000 iterations), and
// OPENBLAS_CORETYPE where OpenBLAS chose kernels without AVX2 on a CPU that has it (OpenBLAS 0.3.21 gives a Xeon of
// family 6 model 207 its Prescott kernels: steps 3.6-5.1x slower, docs/usage.md), set to the kernels for its widest
// unit (Cooperlake, SkylakeX or Haswell). A policy, spin count or OPENBLAS_CORETYPE the user set is always kept.
void cpu_exec_setup(char **argv);
