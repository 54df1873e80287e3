// core/comm_mpi.c — the MPI comm backend: non-blocking point-to-point and collectives that core/comm.c polls.
#include <errno.h>
#include <limits.h>
#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/comm_impl.h"
#include "core/common.h"
#include "core/real.h"

// MPI progress while the caller computes (core/comm.h: CommProgress). Open MPI moves a nonblocking
// message over TCP (and a large shared-memory one) only inside MPI calls, so a ring hop started before a
// block's compute would sit still until the rank waits for it. Either the compute loops poke MPI between
// tiles (comm_poke: at most every PROGRESS_NS, a trylock, so a poke never waits), or the progress thread
// enters MPI every PROGRESS_NS while any operation is in flight. Both call MPI_Iprobe on a private
// duplicate of the world: it matches nothing and runs the progress engine. One mutex serialises every
// MPI call of the process, so MPI_THREAD_SERIALIZED is enough; where MPI provides less, neither runs and
// transfers move only inside MPI calls.
enum { PROGRESS_NS = 200000, WATCH_MAX = 16 };
static struct {
    pthread_mutex_t lock;   // held around every MPI call
    pthread_cond_t wake;    // signalled when an operation starts or the thread must stop
    pthread_t thread;
    MPI_Comm probe;         // the private duplicate: nothing is ever sent on it
    atomic_long in_flight;  // operations started and not yet seen complete (changed under the lock)
    atomic_int mode;        // CommProgress (comm_set_progress)
    atomic_llong last_poke; // now_seconds() in ns of the last poke that entered MPI
    CommRequest *watch[WATCH_MAX];   // all-gathers and reduce-scatters in flight, whose completion time is noted
    int n_watch;
    bool serialized;        // MPI provided MPI_THREAD_SERIALIZED or more
    bool running, stop, noted;   // noted: the note on an MPI without MPI_THREAD_SERIALIZED was printed
} g_prog = {.lock = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER, .probe = MPI_COMM_NULL,
            .mode = COMM_PROGRESS_COMPUTE};

static void mpi_lock(void) { pthread_mutex_lock(&g_prog.lock); }
static void mpi_unlock(void) { pthread_mutex_unlock(&g_prog.lock); }

// Every MPI call is checked; the message names the call (the text before its '(') and MPI's reason.
// The call runs under the lock; the check (which may end the job) after it is released.
#define MPI_CHECK(call)                 \
    do {                                \
        mpi_lock();                     \
        int mpi_err_ = (call);          \
        mpi_unlock();                   \
        mpi_check(mpi_err_, #call);     \
    } while (0)
static void mpi_check(int err, const char *call) {
    if (err == MPI_SUCCESS) return;
    char reason[MPI_MAX_ERROR_STRING];
    int len = 0;
    mpi_lock();
    if (MPI_Error_string(err, reason, &len) != MPI_SUCCESS) snprintf(reason, sizeof reason, "error %d", err);
    mpi_unlock();
    int name_len = (int)strcspn(call, "(");
    fail("MPI: %.*s failed: %s", name_len, call, reason);
}

// A request is up to four MPI requests: a message above INT_MAX bytes travels as whole chunks of
// CHUNK bytes (a derived type) plus a byte remainder, each direction.
enum { CHUNK = 1 << 16, TAG_CHUNKS = 7001, TAG_REST = 7002 };
typedef struct {
    MPI_Request req[4];
    int n;
    int n_recv;   // a send/receive pair: its first n_recv requests are the receives
} MpiRequest;
_Static_assert(sizeof(MpiRequest) <= sizeof(((CommRequest *)0)->handle), "CommRequest.handle too small for MPI");

static void watch_drop_locked(int i) { g_prog.watch[i] = g_prog.watch[--g_prog.n_watch]; }

// Notes, the lock held, the watched collectives that completed since the last look (their MPI requests become
// MPI_REQUEST_NULL, so the caller's test then finds them done): CommRequest.done_at is when the transfer ended, not
// when the caller next looked. Returns MPI's error, if any.
static int watch_sweep_locked(void) {
    for (int i = 0; i < g_prog.n_watch;) {
        MpiRequest *q = (MpiRequest *)g_prog.watch[i]->handle;
        int done = 0, err = MPI_Testall(q->n, q->req, &done, MPI_STATUSES_IGNORE);
        if (err != MPI_SUCCESS) return err;
        if (!done) {
            i++;
            continue;
        }
        g_prog.watch[i]->done_at = now_seconds();
        watch_drop_locked(i);
    }
    return MPI_SUCCESS;
}

// A collective just started (the lock held): watched when there is room (else its caller's test dates it).
static void watch_locked(CommRequest *r) {
    r->done_at = 0;
    if (g_prog.n_watch < WATCH_MAX) g_prog.watch[g_prog.n_watch++] = r;
}

static void unwatch_locked(const CommRequest *r) {
    for (int i = 0; i < g_prog.n_watch; i++)
        if (g_prog.watch[i] == r) {
            watch_drop_locked(i);
            return;
        }
}

static void *progress_main(void *unused) {
    (void)unused;
    mpi_lock();
    while (!g_prog.stop) {
        if (g_prog.in_flight <= 0) {
            pthread_cond_wait(&g_prog.wake, &g_prog.lock);
            continue;
        }
        int found = 0, err = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, g_prog.probe, &found, MPI_STATUS_IGNORE);
        int swept = err == MPI_SUCCESS ? watch_sweep_locked() : MPI_SUCCESS;
        mpi_unlock();
        mpi_check(err, "MPI_Iprobe(progress thread)");
        mpi_check(swept, "MPI_Testall(progress thread)");
        struct timespec pause = {0, PROGRESS_NS};
        nanosleep(&pause, NULL);
        mpi_lock();
    }
    mpi_unlock();
    return NULL;
}

// Counts an operation in (the lock held): the first one starts the thread when it is wanted and MPI allows it.
static void progress_started_locked(void) {
    g_prog.in_flight++;
    if (g_prog.running) {
        if (g_prog.in_flight == 1) pthread_cond_signal(&g_prog.wake);
        return;
    }
    if (g_prog.mode != COMM_PROGRESS_THREAD) return;
    int err = pthread_create(&g_prog.thread, NULL, progress_main, NULL);
    g_prog.running = err == 0;
    if (err) {   // no second try: the compute loops drive the transfers instead
        log_info("note: no MPI progress thread (%s); the compute loops drive transfers instead\n", strerror(err));
        g_prog.mode = COMM_PROGRESS_COMPUTE;
    }
}

static void progress_started(void) {
    mpi_lock();
    progress_started_locked();
    mpi_unlock();
}

static void progress_stop(void) {
    mpi_lock();
    bool running = g_prog.running;
    g_prog.stop = true;
    pthread_cond_signal(&g_prog.wake);
    mpi_unlock();
    if (running) pthread_join(g_prog.thread, NULL);
    g_prog.running = false;
    g_prog.stop = false;
}

static MPI_Comm mpi_comm(const Comm *c) { return *(const MPI_Comm *)c->impl; }
static MPI_Datatype g_chunk_type = MPI_DATATYPE_NULL;

static MPI_Datatype mpi_type(CommType t) {
    switch (t) {
    case COMM_REAL: return sizeof(real) == sizeof(double) ? MPI_DOUBLE : MPI_FLOAT;
    case COMM_F32: return MPI_FLOAT;
    case COMM_F64: return MPI_DOUBLE;
    case COMM_I64: return MPI_INT64_T;
    case COMM_U64: return MPI_UINT64_T;
    }
    fail("comm: unknown element type %d", (int)t);
}

static MPI_Op mpi_op(CommOp op) { return op == COMM_SUM ? MPI_SUM : op == COMM_MIN ? MPI_MIN : MPI_MAX; }

// Posts one direction of a pair: `bytes` as whole chunks and a remainder (the peer, knowing the size, posts the same).
static void mpi_post(MpiRequest *q, MPI_Comm comm, bool recv, void *buf, size_t bytes, int peer) {
    size_t chunks = bytes / CHUNK, rest = bytes % CHUNK;
    if (chunks > INT_MAX) fail("comm: a %zu-byte message is too large for one MPI exchange", bytes);
    if (chunks && recv) MPI_CHECK(MPI_Irecv(buf, (int)chunks, g_chunk_type, peer, TAG_CHUNKS, comm, &q->req[q->n++]));
    if (chunks && !recv) MPI_CHECK(MPI_Isend(buf, (int)chunks, g_chunk_type, peer, TAG_CHUNKS, comm, &q->req[q->n++]));
    char *tail = (char *)buf + chunks * CHUNK;
    if (rest && recv) MPI_CHECK(MPI_Irecv(tail, (int)rest, MPI_BYTE, peer, TAG_REST, comm, &q->req[q->n++]));
    if (rest && !recv) MPI_CHECK(MPI_Isend(tail, (int)rest, MPI_BYTE, peer, TAG_REST, comm, &q->req[q->n++]));
}

static void mpi_sendrecv_start(Comm *c, CommRequest *r, const void *send, size_t send_bytes, int to, void *recv,
                               size_t recv_bytes, int from) {
    MpiRequest *q = (MpiRequest *)r->handle;
    MPI_Comm comm = mpi_comm(c);
    q->n = 0;
    // Receives first, so that an eager message from the peer finds its buffer posted.
    mpi_post(q, comm, true, recv, recv_bytes, from);
    q->n_recv = q->n;
    mpi_post(q, comm, false, (void *)send, send_bytes, to);
    progress_started();
}

static void mpi_allreduce_start(Comm *c, CommRequest *r, void *buf, size_t count, CommType t, CommOp op) {
    MpiRequest *q = (MpiRequest *)r->handle;
    if (count > INT_MAX) fail("comm: all-reduce of %zu elements in one piece (core/comm.c splits them)", count);
    q->n = 1;
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, mpi_type(t), mpi_op(op), mpi_comm(c), &q->req[0]));
    progress_started();
}

// Equal slices (the caller pads), so the fixed-size collectives: one MPI request, moved by the same progress.
static void mpi_allgather_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t count, CommType t) {
    MpiRequest *q = (MpiRequest *)r->handle;
    q->n = 1;
    MPI_Datatype dt = mpi_type(t);
    MPI_CHECK(MPI_Iallgather(send, (int)count, dt, recv, (int)count, dt, mpi_comm(c), &q->req[0]));
    mpi_lock();
    watch_locked(r);
    progress_started_locked();
    mpi_unlock();
}

static void mpi_reduce_scatter_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t count, CommType t,
                                     CommOp op) {
    MpiRequest *q = (MpiRequest *)r->handle;
    q->n = 1;
    MPI_CHECK(MPI_Ireduce_scatter_block(send, recv, (int)count, mpi_type(t), mpi_op(op), mpi_comm(c), &q->req[0]));
    mpi_lock();
    watch_locked(r);
    progress_started_locked();
    mpi_unlock();
}

// Bytes per rank (the caller's count is at most INT_MAX): one MPI request, watched and moved like the two above.
static void mpi_alltoall_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t bytes) {
    MpiRequest *q = (MpiRequest *)r->handle;
    q->n = 1;
    MPI_CHECK(MPI_Ialltoall(send, (int)bytes, MPI_BYTE, recv, (int)bytes, MPI_BYTE, mpi_comm(c), &q->req[0]));
    mpi_lock();
    watch_locked(r);
    progress_started_locked();
    mpi_unlock();
}

static void mpi_barrier_start(Comm *c, CommRequest *r) {
    MpiRequest *q = (MpiRequest *)r->handle;
    q->n = 1;
    MPI_CHECK(MPI_Ibarrier(mpi_comm(c), &q->req[0]));
    progress_started();
}

static bool mpi_test(Comm *c, CommRequest *r) {
    MpiRequest *q = (MpiRequest *)r->handle;
    int done = 0;
    MPI_CHECK(MPI_Testall(q->n, q->req, &done, MPI_STATUSES_IGNORE));
    if (done) {
        mpi_lock();
        g_prog.in_flight--;
        unwatch_locked(r);
        mpi_unlock();
    }
    return done != 0;
}

// A pair's receives come first in its requests, then its sends (mpi_sendrecv_start).
static void mpi_pending(Comm *c, CommRequest *r, bool *send, bool *recv) {
    MpiRequest *q = (MpiRequest *)r->handle;
    *send = *recv = false;
    for (int i = 0; i < q->n; i++) {
        int done = 0;
        MPI_CHECK(MPI_Request_get_status(q->req[i], &done, MPI_STATUS_IGNORE));
        if (!done) *(i < q->n_recv ? recv : send) = true;
    }
}

// Wraps an MPI communicator; world_ranks come from translating this group into the world's.
static Comm *mpi_wrap(MPI_Comm comm) {
    Comm *c = xcalloc(1, sizeof *c, "communicator");
    c->be = &COMM_MPI;
    MPI_CHECK(MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_rank(comm, &c->rank));
    MPI_CHECK(MPI_Comm_size(comm, &c->size));
    c->impl = xmalloc(sizeof(MPI_Comm), "communicator");
    *(MPI_Comm *)c->impl = comm;
    c->world_ranks = xcalloc(c->size, sizeof(int), "communicator ranks");
    int *mine = xcalloc(c->size, sizeof(int), "communicator ranks");
    for (int i = 0; i < c->size; i++) mine[i] = i;
    MPI_Group group, world;
    MPI_CHECK(MPI_Comm_group(comm, &group));
    MPI_CHECK(MPI_Comm_group(MPI_COMM_WORLD, &world));
    MPI_CHECK(MPI_Group_translate_ranks(group, c->size, mine, world, c->world_ranks));
    MPI_CHECK(MPI_Group_free(&group));
    MPI_CHECK(MPI_Group_free(&world));
    free(mine);
    return c;
}

static Comm *mpi_split(Comm *c, int color, int key) {
    MPI_Comm sub;
    MPI_CHECK(MPI_Comm_split(mpi_comm(c), color, key, &sub));
    return mpi_wrap(sub);
}

static void mpi_free(Comm *c) {
    MPI_Comm comm = mpi_comm(c);
    int finalized = 0;
    mpi_lock();
    MPI_Finalized(&finalized);
    mpi_unlock();
    if (!finalized && comm != MPI_COMM_WORLD) MPI_CHECK(MPI_Comm_free(&comm));
    free(c->impl);
    free(c->world_ranks);
    free(c);
}

const CommBackend COMM_MPI = {
    .name = "mpi",
    .sendrecv_start = mpi_sendrecv_start,
    .allreduce_start = mpi_allreduce_start,
    .barrier_start = mpi_barrier_start,
    .allgather_start = mpi_allgather_start,
    .reduce_scatter_start = mpi_reduce_scatter_start,
    .alltoall_start = mpi_alltoall_start,
    .test = mpi_test,
    .pending = mpi_pending,
    .split = mpi_split,
    .free = mpi_free,
};

Comm *comm_mpi_init(int *argc, char ***argv) {
    int initialized = 0, provided = 0;
    MPI_CHECK(MPI_Initialized(&initialized));
    // SERIALIZED: the main thread, the progress thread and OpenMP threads (comm_poke) call MPI, one at a
    // time (g_prog.lock); the data loader's thread never does.
    // Open MPI's nonblocking all-reduce (libnbc) reduces to one rank and broadcasts back whenever the
    // buffer is in place or there are fewer than 4 ranks: the gradients cross each link twice, one way at
    // a time (measured: 1.1 s instead of 0.56 s for `small`'s 13 MB at 190 Mbit/s). The ring sends each
    // byte once each way. A value the user gave (mpiexec --mca, the environment) wins.
    if (!initialized && setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1", 0) != 0)
        fail("setenv(OMPI_MCA_coll_libnbc_iallreduce_algorithm): %s", strerror(errno));
    if (!initialized) MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided));
    else MPI_CHECK(MPI_Query_thread(&provided));
    g_prog.serialized = provided >= MPI_THREAD_SERIALIZED;
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &g_prog.probe));
    MPI_CHECK(MPI_Type_contiguous(CHUNK, MPI_BYTE, &g_chunk_type));
    MPI_CHECK(MPI_Type_commit(&g_chunk_type));
    return mpi_wrap(MPI_COMM_WORLD);
}

void comm_mpi_finalize(void) {
    int finalized = 0;
    progress_stop();
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (g_chunk_type != MPI_DATATYPE_NULL) MPI_CHECK(MPI_Type_free(&g_chunk_type));
    if (g_prog.probe != MPI_COMM_NULL) MPI_CHECK(MPI_Comm_free(&g_prog.probe));
    MPI_CHECK(MPI_Finalize());
}

int comm_mpi_node_size(void) {
    MPI_Comm node;
    int size = 1;
    MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
    MPI_CHECK(MPI_Comm_size(node, &size));
    MPI_CHECK(MPI_Comm_free(&node));
    return size;
}

void comm_mpi_set_progress(CommProgress mode) {
    mpi_lock();
    if (mode != COMM_PROGRESS_OFF && !g_prog.serialized) {
        if (!g_prog.noted)
            log_info("note: MPI provides less than MPI_THREAD_SERIALIZED, so nothing drives transfers while the ranks "
                     "compute; they move only inside MPI calls (a ring hop does not overlap the compute on TCP)\n");
        g_prog.noted = true;
        mode = COMM_PROGRESS_OFF;
    }
    g_prog.mode = mode;
    mpi_unlock();
    if (mode != COMM_PROGRESS_THREAD) progress_stop();
}

void comm_mpi_poke(void) {
    if (atomic_load_explicit(&g_prog.mode, memory_order_relaxed) != COMM_PROGRESS_COMPUTE ||
        atomic_load_explicit(&g_prog.in_flight, memory_order_relaxed) <= 0)
        return;
    long long now = (long long)(now_seconds() * 1e9);
    if (now - atomic_load_explicit(&g_prog.last_poke, memory_order_relaxed) < PROGRESS_NS) return;
    if (pthread_mutex_trylock(&g_prog.lock) != 0) return;   // another thread is inside MPI: it makes the progress
    g_prog.last_poke = now;
    int found = 0, err = MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, g_prog.probe, &found, MPI_STATUS_IGNORE);
    int swept = err == MPI_SUCCESS ? watch_sweep_locked() : MPI_SUCCESS;
    mpi_unlock();
    mpi_check(err, "MPI_Iprobe(comm_poke)");
    mpi_check(swept, "MPI_Testall(comm_poke)");
}

bool comm_mpi_progress_running(void) {
    mpi_lock();
    bool running = g_prog.running;
    mpi_unlock();
    return running;
}

// Without the lock: a failure inside an MPI call (which holds it) must still end the job.
_Noreturn void comm_mpi_abort(int code) {
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);   // MPI_Abort does not return; this keeps the compiler and a broken MPI honest
}
