// core/comm.c — the comm front end: backend choice, deadline-polled waits, config checks and the dp × sp grid (and its Ulysses groups).
#include "core/comm.h"

#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/comm_impl.h"
#include "core/common.h"
#include "core/real.h"

static Comm *g_world;
static bool g_mpi;
static double g_timeout = 600.0;

size_t comm_type_size(CommType t) {
    switch (t) {
    case COMM_REAL: return sizeof(real);
    case COMM_F32: return sizeof(float);
    case COMM_F64: return sizeof(double);
    case COMM_I64: return sizeof(int64_t);
    case COMM_U64: return sizeof(uint64_t);
    }
    return 0;
}

static bool multi_rank(void) { return g_mpi && g_world && g_world->size > 1; }
static bool g_collective;   // the failure in progress is one every rank detects alike (comm_fail_all)

// A failure every rank detects alike: a usage error (flags, files every rank reads alike) or a collective
// failure; a failure of one rank alone (fail_data, fail_io) is not, whatever its code.
static bool every_rank_alike(int code) { return (code == EXIT_USAGE && !fail_is_local()) || g_collective; }

// A failure every rank detects alike is printed by rank 0 only.
static bool quiet_usage_error(int code) { return every_rank_alike(code) && multi_rank() && g_world->rank != 0; }

// Every rank meets the others at a barrier and leaves MPI cleanly, so the job ends with exit 2 and no abort
// banner. A rank whose partners do not come within the deadline (the error was its own) prints its line
// and aborts the job.
static _Noreturn void leave_together(int code, const char *line) {
    CommRequest r = {.comm = g_world, .what = "usage-error exit", .to = -1, .from = -1, .active = true};
    g_world->be->barrier_start(g_world, &r);
    double deadline = now_seconds() + (g_timeout < 30 ? g_timeout : 30);
    while (!g_world->be->test(g_world, &r)) {
        if (now_seconds() > deadline) {
            if (g_world->rank != 0) fprintf(stderr, "%s\n", line);
            comm_mpi_abort(code);
        }
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    comm_finalize();
    exit(code);
}

// A failure on one rank must end the whole job: the other ranks would otherwise wait for it.
static void abort_job_hook(int code, const char *line) {
    if (!multi_rank()) return;
    if (every_rank_alike(code)) leave_together(code, line);
    comm_mpi_abort(code);
}

static bool launched_by_mpi(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (getenv(vars[i])) return true;
    return false;
}

static long env_long(const char *name) {
    const char *v = getenv(name);
    return v ? strtol(v, NULL, 10) : 0;
}

// `srun -n N` without a PMI plugin would start N separate one-rank worlds that each train alone.
// Task 0 prints the fix; every task exits 2.
static void check_slurm_step(void) {
    long tasks = env_long("SLURM_STEP_NUM_TASKS");
    if (tasks <= 1 || (g_mpi && comm_size(g_world) == tasks)) return;
    if (env_long("SLURM_PROCID") != 0) exit(EXIT_USAGE);
    if (g_mpi)
        fail_usage("srun started %ld tasks but MPI sees a world of %d; launch with `srun --mpi=pmix` (or pmi2; see "
                   "`srun --mpi=list`)", tasks, comm_size(g_world));
    fail_usage("srun started %ld tasks without a PMI plugin, so they cannot find each other; launch with `srun --mpi=pmix` "
               "(or pmi2; see `srun --mpi=list`), or run mpirun inside the allocation", tasks);
}

void comm_init(int *argc, char ***argv) {
    if (g_world) return;
    g_mpi = launched_by_mpi();
    g_world = g_mpi ? comm_mpi_init(argc, argv) : comm_local_world();
    check_slurm_step();
    set_log_rank(g_world->rank);
    set_fail_hook(abort_job_hook);
    set_fail_quiet(quiet_usage_error);
}

void comm_finalize(void) {
    if (!g_world) return;
    g_world->be->free(g_world);
    g_world = NULL;
    set_fail_hook(NULL);
    set_fail_quiet(NULL);
    if (g_mpi) comm_mpi_finalize();
}

Comm *comm_world(void) {
    if (!g_world) fail("comm: comm_init was not called before using the world communicator");
    return g_world;
}

int comm_rank(const Comm *c) { return c->rank; }
int comm_size(const Comm *c) { return c->size; }
int comm_world_rank_of(const Comm *c, int r) { return c->world_ranks[r]; }
int comm_node_size(void) { return g_mpi ? comm_mpi_node_size() : 1; }
void comm_set_progress(CommProgress mode) {
    if (g_mpi) comm_mpi_set_progress(mode);
}
bool comm_progress_parse(const char *name, CommProgress *mode) {
    static const char *const names[] = {[COMM_PROGRESS_OFF] = "off", [COMM_PROGRESS_COMPUTE] = "compute",
                                        [COMM_PROGRESS_THREAD] = "thread"};
    for (int m = 0; m < (int)(sizeof names / sizeof names[0]); m++)
        if (name && strcmp(name, names[m]) == 0) return *mode = (CommProgress)m, true;
    return false;
}
void comm_poke(void) {
    if (g_mpi) comm_mpi_poke();
}
bool comm_progress_running(void) { return g_mpi && comm_mpi_progress_running(); }
void comm_set_timeout(double seconds) { g_timeout = seconds > 0 ? seconds : 600.0; }
double comm_timeout(void) { return g_timeout; }

void comm_sendrecv_start(Comm *c, CommRequest *r, const void *send, size_t send_bytes, int to, void *recv,
                         size_t recv_bytes, int from, const char *what) {
    *r = (CommRequest){.comm = c, .what = what, .to = to, .from = from, .active = send_bytes || recv_bytes};
    if (r->active) c->be->sendrecv_start(c, r, send, send_bytes, to, recv, recv_bytes, from);
}

// MPI counts are int: a slice of more elements is refused (a unit of a model is far below 2^31 elements per rank).
static void check_count(size_t count, const char *what) {
    if (count > (size_t)1 << 30) fail("comm: %s of %zu elements per rank in one piece; at most 2^30", what, count);
}

void comm_allgather_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t count, CommType t,
                          const char *what) {
    *r = (CommRequest){.comm = c, .what = what, .to = -1, .from = -1, .active = count > 0};
    check_count(count, what);
    if (count) c->be->allgather_start(c, r, send, recv, count, t);
}

void comm_reduce_scatter_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t count, CommType t, CommOp op,
                               const char *what) {
    *r = (CommRequest){.comm = c, .what = what, .to = -1, .from = -1, .active = count > 0};
    check_count(count, what);
    if (count) c->be->reduce_scatter_start(c, r, send, recv, count, t, op);
}

void comm_alltoall_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t bytes, const char *what) {
    *r = (CommRequest){.comm = c, .what = what, .to = -1, .from = -1, .active = bytes > 0};
    if (bytes > INT32_MAX) fail("comm: %s of %zu bytes per rank in one piece; at most 2^31 - 1", what, bytes);
    if (bytes) c->be->alltoall_start(c, r, send, recv, bytes);
}

// Which peer of a send/receive pair did not answer, when the backend can tell: that rank died or is stuck.
static void pair_detail(CommRequest *r, char *buf, size_t n) {
    const Comm *c = r->comm;
    int to = c->world_ranks[r->to], from = c->world_ranks[r->from];
    bool send = true, recv = true;
    if (c->be->pending) c->be->pending(r->comm, r, &send, &recv);
    if (recv && !send) snprintf(buf, n, "nothing arrived from rank %d; the send to rank %d went through", from, to);
    else if (send && !recv) snprintf(buf, n, "rank %d took nothing of what was sent to it; the receive from rank %d went through", to, from);
    else snprintf(buf, n, "sending to rank %d, receiving from rank %d", to, from);
}

_Noreturn static void timed_out(CommRequest *r) {
    const Comm *c = r->comm;
    int me = g_world ? g_world->rank : 0;
    char detail[256];
    if (r->to >= 0) pair_detail(r, detail, sizeof detail);
    if (r->to >= 0)
        comm_abort(EXIT_RUNTIME,
                   "rank %d: %s got no answer within %.0f s (%s); a rank died or is stuck, so the job is aborted (raise "
                   "--comm-timeout if ranks are only slow)",
                   me, r->what, g_timeout, detail);
    comm_abort(EXIT_RUNTIME,
               "rank %d: %s over %d ranks did not complete within %.0f s; a rank died or is stuck, so the job is "
               "aborted (raise --comm-timeout if ranks are only slow)",
               me, r->what, c->size, g_timeout);
}

// Polls instead of blocking in MPI_Wait so that a dead peer becomes a message after the deadline.
// For the first SPIN_US it yields between polls: a core with nothing else to run comes straight back, so
// a hop costs the link's latency and not a sleep's, and a rank that shares its core with one still
// computing (ranks often do in tests) hands it the core. Then it sleeps with a growing pause (≤ 1 ms).
enum { SPIN_US = 5000 };
double comm_wait(CommRequest *r) {
    if (!r->active) return 0.0;
    double start = now_seconds(), deadline = start + g_timeout, spin_end = start + SPIN_US * 1e-6;
    long pause_ns = 50000;
    for (;;) {
        if (r->comm->be->test(r->comm, r)) break;
        double now = now_seconds();
        if (now > deadline) timed_out(r);
        if (now < spin_end) {
            sched_yield();
        } else {
            struct timespec ts = {0, pause_ns};
            nanosleep(&ts, NULL);
            if (pause_ns < 1000000) pause_ns *= 2;
        }
    }
    r->active = false;
    if (!r->done_at) r->done_at = now_seconds();
    return now_seconds() - start;
}

bool comm_test(CommRequest *r) {
    if (!r->active) return true;
    if (!r->comm->be->test(r->comm, r)) return false;
    r->active = false;
    if (!r->done_at) r->done_at = now_seconds();
    return true;
}

void comm_allreduce(Comm *c, void *buf, size_t count, CommType t, CommOp op, const char *what) {
    if (c->size == 1) return;
    const size_t piece = (size_t)1 << 30;   // MPI counts are int
    for (size_t off = 0; off < count; off += piece) {
        size_t n = count - off < piece ? count - off : piece;
        CommRequest r = {.comm = c, .what = what, .to = -1, .from = -1, .active = true};
        c->be->allreduce_start(c, &r, (char *)buf + off * comm_type_size(t), n, t, op);
        comm_wait(&r);
    }
}

void comm_barrier(Comm *c, const char *what) {
    if (c->size == 1) return;
    CommRequest r = {.comm = c, .what = what, .to = -1, .from = -1, .active = true};
    c->be->barrier_start(c, &r);
    comm_wait(&r);
}

void comm_abort(int code, const char *fmt, ...) {
    fail_exiting();
    va_list ap;
    va_start(ap, fmt);
    print_error_line(fmt, ap);
    va_end(ap);
    if (g_mpi) comm_mpi_abort(code);
    exit(code);
}

void comm_fail_usage_all(const char *fmt, ...) {
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fail_usage("%s", line);   // rank 0 prints; every rank meets the others and leaves MPI (leave_together)
}

void comm_fail_all(const char *fmt, ...) {
    char line[8192];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    g_collective = true;
    fail("%s", line);   // exit 1, printed by rank 0, every rank leaves MPI together
}

// FNV-1a: a stable 64-bit fingerprint of the configuration text.
static uint64_t fnv1a(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

void comm_check_same_config(const char *config_text) {
    Comm *w = comm_world();
    if (w->size == 1) return;
    uint64_t mine = fnv1a(config_text), first = w->rank == 0 ? mine : 0;
    comm_allreduce(w, &first, 1, COMM_U64, COMM_SUM, "config check");   // rank 0's hash on every rank
    int64_t odd = mine == first ? INT64_MAX : w->rank;
    comm_allreduce(w, &odd, 1, COMM_I64, COMM_MIN, "config check");
    if (odd != INT64_MAX)
        comm_fail_usage_all("rank %" PRId64 " was started with different flags than rank 0 (config hash differs); "
                            "every rank must get the same flags (command line and --config file)",
                            odd);
}

CommGrid comm_grid(int sp) {
    Comm *w = comm_world();
    if (sp < 1) comm_fail_usage_all("--sp %d: the ring size must be at least 1", sp);
    if (w->size % sp != 0 && !g_mpi)
        comm_fail_usage_all("--sp %d needs %d ranks or a multiple: launch with `mpirun -np N ringgpt ... --sp %d` "
                            "(this process was not started by an MPI launcher)",
                            sp, sp, sp);
    if (w->size % sp != 0)
        comm_fail_usage_all("world size %d is not divisible by --sp %d; launch a multiple of %d ranks "
                            "(mpirun -np N with N = dp·sp)",
                            w->size, sp, sp);
    CommGrid g = {.rank = w->rank, .world_size = w->size, .sp = sp, .dp = w->size / sp, .world = w};
    g.dp_index = w->rank / sp;
    g.sp_index = w->rank % sp;
    g.ring = w->be->split(w, g.dp_index, g.sp_index);
    return g;
}

void comm_groups(Comm *ring, int degree, Comm **group, Comm **across) {
    int r = ring->rank;
    if (degree < 1 || ring->size % degree != 0)
        comm_fail_usage_all("--ulysses %d does not divide --sp %d; use a divisor of %d (the ranks of a ring form groups "
                            "of --ulysses ranks)", degree, ring->size, ring->size);
    *group = ring->be->split(ring, r / degree, r % degree);
    *across = ring->be->split(ring, r % degree, r / degree);
}

void comm_free(Comm *c) {
    if (c) c->be->free(c);
}

void comm_grid_free(CommGrid *g) {
    comm_free(g->ring);
    g->ring = NULL;
}
