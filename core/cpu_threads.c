// core/cpu_threads.c — the CPU thread count (OpenMP and OpenBLAS; by default the cores a node's ranks find free), denormal flushing on every worker thread, the BLAS kernels.
#include "core/common.h"

#include <cblas.h>
#include <omp.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "core/args.h"
#include "core/comm.h"

// Set across the exec of cpu_exec_setup: OpenBLAS's own pick, for --version (not a setting).
#define BLAS_OWN_PICK "RINGGPT_BLAS_OWN_PICK"

#if defined(__x86_64__) || defined(__i386__)
#include <pmmintrin.h>
#include <xmmintrin.h>
#endif

// Subnormal floats (|x| < 1.2e-38) take a slow microcode path on x86. Training makes them: sharp softmaxes
// give exp() of large negative scores, AdamW moments and gradients of unused rows decay toward 0.
// Flushing them to zero (FTZ for results, DAZ for inputs) made a 20-step run from a trained passkey
// checkpoint (3 layers, dim 128, T=256, B=32, one thread) ~15 % faster on a loaded 2-core Xeon with the
// same losses to 4 decimals; the test suite passes unchanged.
static void flush_denormals_here(void) {
#if defined(__x86_64__) || defined(__i386__)
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
#elif defined(__aarch64__)
    uint64_t fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr | (1ull << 24)));   // FZ
#endif
}

void cpu_threads(int n) {
    if (n < 1) fail_usage("--threads must be at least 1 (got %d)", n);
    omp_set_num_threads(n);
    openblas_set_num_threads(n);
    flush_denormals_here();
#pragma omp parallel num_threads(n)
    flush_denormals_here();   // MXCSR is per thread: set it in every OpenMP worker (OpenBLAS runs on them)
}

// A cgroup v2 CPU quota ("200000 100000" in cpu.max: 2 cores' worth; "max": none) as whole cores, or 0.
static int cgroup_quota_cores(void) {
    FILE *f = fopen("/sys/fs/cgroup/cpu.max", "r");
    if (!f) return 0;   // no cgroup v2 here: nothing limits the cores beyond the affinity mask
    char quota[32] = "";
    long period = 0;
    int got = fscanf(f, "%31s %ld", quota, &period);
    fclose(f);
    if (got != 2 || period <= 0 || strcmp(quota, "max") == 0) return 0;
    long q = strtol(quota, NULL, 10);
    return q > 0 ? (int)((q + period - 1) / period) : 0;
}

int cpu_cores(void) {
    int n = omp_get_num_procs(), quota = cgroup_quota_cores();   // the affinity mask: taskset, a Slurm or container cpuset
    return quota > 0 && quota < n ? quota : n;
}

// Runnable tasks on the machine now (the 4th field of /proc/loadavg, "2/345": running or ready to run), or -1.
static int runnable_now(void) {
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return -1;
    double l1, l5, l15;
    int running = -1, total;
    if (fscanf(f, "%lf %lf %lf %d/%d", &l1, &l5, &l15, &running, &total) != 5) running = -1;
    fclose(f);
    return running;
}

// Tasks other than this job's node_ranks ranks that run on this machine now: the fewest of up to five looks 10 ms apart
// (more only while it sees some), so that a kernel thread or a short command that ran at one look does not count as a
// process that holds a core. -1 where /proc/loadavg cannot be read.
static int others_running(int node_ranks) {
    int running = runnable_now();
    for (int i = 0; i < 4 && running - node_ranks > 0; i++) {
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
        int r = runnable_now();
        if (r >= 0 && r < running) running = r;
    }
    if (running < 0) return -1;
    return running > node_ranks ? running - node_ranks : 0;   // this job's ranks count themselves (workers sleep)
}

// The test hook that makes --threads' default blind to other processes (tests compare runs bit for bit while other
// tests run beside them).
static bool load_blind(void) {
    const char *v = getenv("RINGGPT_THREADS_IGNORE_LOAD");
    return v && *v && strcmp(v, "0") != 0;
}

// The threads per rank that leave `others` busy cores alone (at least 1).
static int threads_beside(int cores, int others, int node_ranks) {
    int n = (cores - others) / node_ranks;
    return n > 0 ? n : 1;
}

int cpu_default_threads(int node_ranks, int *others) {
    int busy = load_blind() ? 0 : others_running(node_ranks);
    *others = busy > 0 ? busy : 0;
    return threads_beside(cpu_cores(), *others, node_ranks);
}

bool cpu_shared_note(int threads, int node_ranks, int others, char *note, size_t n) {
    int cores = cpu_cores();
    if (others <= 0 || others + threads * node_ranks <= cores) return false;
    snprintf(note, n, "this machine is shared: %d other process%s ran on its %d core%s as this command started, and %d "
             "rank%s x %d thread%s here make%s it oversubscribed: steps can be several times slower; --threads %d would "
             "leave the busy cores alone",
             others, others == 1 ? "" : "es", cores, plural(cores), node_ranks, plural(node_ranks), threads, plural(threads),
             node_ranks * threads == 1 ? "s" : "", threads_beside(cores, others, node_ranks));
    return true;
}

int cpu_node_threads(int given) {
    int node_ranks = comm_node_size(), others;   // a collective: every rank calls this
    int64_t n = cpu_default_threads(node_ranks, &others), fewest = given > 0 ? given : n;
    char note[512];
    if (given > 0) {   // the user's count: a note where it oversubscribes the busy machine
        if (cpu_shared_note(given, node_ranks, others, note, sizeof note)) log_info("note: %s\n", note);
        return given;
    }
    comm_allreduce(comm_world(), &fewest, 1, COMM_I64, COMM_MIN, "thread count");   // every rank computes alike
    if (fewest < cpu_cores() / node_ranks)
        log_info("note: this machine is shared: %d other process%s ran on its %d core%s as this command started: "
                 "--threads %d%s (--threads sets it)\n", others, others == 1 ? "" : "es", cpu_cores(), plural(cpu_cores()),
                 (int)fewest, node_ranks > 1 ? " per rank" : "");
    return fewest < ARGS_MAX_THREADS ? (int)fewest : ARGS_MAX_THREADS;
}

void cpu_blas_describe(char *out, size_t n) {
    // Results differ in their last bits between kernels (Haswell's vs Zen's), so a recorded table names them.
    const char *own = getenv(BLAS_OWN_PICK), *config = openblas_get_config(), *core = openblas_get_corename();
    if (own) snprintf(out, n, "%s (kernels: %s; OpenBLAS's own pick, %s, lacks this CPU's AVX2)", config, core, own);
    else snprintf(out, n, "%s (kernels: %s)", config, core);
}

// The kernels OpenBLAS has for the widest vector unit of this CPU, or NULL (no AVX2, or not x86).
static const char *blas_kernels_for_cpu(void) {
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512bf16")) return "Cooperlake";
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
    return NULL;
}

// OpenBLAS's kernels that use AVX2 or wider (its names, as openblas_get_corename() gives them).
static int blas_kernels_use_avx2(const char *core) {
    static const char *const AVX2[] = {"Haswell", "Zen", "Excavator", "SkylakeX", "Cooperlake", "SapphireRapids"};
    for (size_t i = 0; i < sizeof AVX2 / sizeof AVX2[0]; i++)
        if (strcasecmp(core, AVX2[i]) == 0) return 1;
    return 0;
}

// The kernels to force, or NULL: none where OPENBLAS_CORETYPE is set, the CPU has no AVX2, or OpenBLAS chose well.
static const char *blas_kernels_to_force(void) {
    const char *want = blas_kernels_for_cpu();
    if (getenv("OPENBLAS_CORETYPE") || !want || blas_kernels_use_avx2(openblas_get_corename())) return NULL;
    return want;   // OpenBLAS chooses once, as it loads, by CPU model: a model newer than its release gets old kernels
}

// libgomp's idle workers spin for 300,000 iterations before they sleep when OMP_WAIT_POLICY and GOMP_SPINCOUNT are
// unset: on a machine shared with another busy process the spinning takes the cores that process needs, and 100 tiny
// steps beside one took 2.2-4.9x as long as with --threads 1. A spin of 2,000 iterations halves that cost and, unlike
// none at all (PASSIVE), loses nothing on an idle machine (bench/threads.sh, docs/benchmarks.md). A policy or spin
// count the user set is kept.
#define SPIN_COUNT "2000"
static bool wait_policy_unset(void) { return !getenv("OMP_WAIT_POLICY") && !getenv("GOMP_SPINCOUNT"); }

void cpu_exec_setup(char **argv) {
    const char *kernels = blas_kernels_to_force(), *core = openblas_get_corename();
    bool spin = wait_policy_unset();
    if (!kernels && !spin) return;
    // Both are read once, as the libraries load: this process runs itself again with them set (same argv, same pid).
    if ((!spin || setenv("GOMP_SPINCOUNT", SPIN_COUNT, 1) == 0) &&
        (!kernels || (setenv(BLAS_OWN_PICK, core, 1) == 0 && setenv("OPENBLAS_CORETYPE", kernels, 1) == 0)))
        execv("/proc/self/exe", argv);
    int err = errno;
    if (kernels)
        fprintf(stderr, "ringgpt: note: OpenBLAS chose its %s kernels for this CPU and running again with %s failed (%s); "
                "set OPENBLAS_CORETYPE=%s for matrix products several times faster\n", core, kernels, strerror(err), kernels);
    if (spin)
        fprintf(stderr, "ringgpt: note: running again with GOMP_SPINCOUNT=" SPIN_COUNT " failed (%s); set it yourself on a "
                "shared machine\n", strerror(err));
    if (spin) unsetenv("GOMP_SPINCOUNT");   // this process keeps what it loaded with
    if (kernels) unsetenv("OPENBLAS_CORETYPE"), unsetenv(BLAS_OWN_PICK);
}
