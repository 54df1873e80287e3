// core/comm_mpi.c — the MPI comm backend: non-blocking point-to-point and collectives that core/comm.c polls.
#include <limits.h>
#include <mpi.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm_impl.h"
#include "core/common.h"
#include "core/real.h"

// Every MPI call is checked; the message names the call (the text before its '(') and MPI's reason.
#define MPI_CHECK(call) mpi_check((call), #call)
static void mpi_check(int err, const char *call) {
    if (err == MPI_SUCCESS) return;
    char reason[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(err, reason, &len) != MPI_SUCCESS) snprintf(reason, sizeof reason, "error %d", err);
    int name_len = (int)strcspn(call, "(");
    fail("MPI: %.*s failed: %s", name_len, call, reason);
}

// A request is up to four MPI requests: a message above INT_MAX bytes travels as whole chunks of
// CHUNK bytes (a derived type) plus a byte remainder, each direction.
enum { CHUNK = 1 << 16, TAG_CHUNKS = 7001, TAG_REST = 7002 };
typedef struct {
    MPI_Request req[4];
    int n;
} MpiRequest;
_Static_assert(sizeof(MpiRequest) <= sizeof(((CommRequest *)0)->handle), "CommRequest.handle too small for MPI");

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

static void mpi_sendrecv_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t bytes, int to,
                               int from) {
    MpiRequest *q = (MpiRequest *)r->handle;
    MPI_Comm comm = mpi_comm(c);
    size_t chunks = bytes / CHUNK, rest = bytes % CHUNK;
    if (chunks > INT_MAX) fail("comm: a %zu-byte message is too large for one MPI exchange", bytes);
    q->n = 0;
    // Receives first, so that an eager message from the peer finds its buffer posted.
    if (chunks) MPI_CHECK(MPI_Irecv(recv, (int)chunks, g_chunk_type, from, TAG_CHUNKS, comm, &q->req[q->n++]));
    if (rest)
        MPI_CHECK(MPI_Irecv((char *)recv + chunks * CHUNK, (int)rest, MPI_BYTE, from, TAG_REST, comm, &q->req[q->n++]));
    if (chunks) MPI_CHECK(MPI_Isend(send, (int)chunks, g_chunk_type, to, TAG_CHUNKS, comm, &q->req[q->n++]));
    if (rest)
        MPI_CHECK(MPI_Isend((const char *)send + chunks * CHUNK, (int)rest, MPI_BYTE, to, TAG_REST, comm,
                            &q->req[q->n++]));
}

static void mpi_allreduce_start(Comm *c, CommRequest *r, void *buf, size_t count, CommType t, CommOp op) {
    MpiRequest *q = (MpiRequest *)r->handle;
    if (count > INT_MAX) fail("comm: all-reduce of %zu elements in one piece (core/comm.c splits them)", count);
    q->n = 1;
    MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, buf, (int)count, mpi_type(t), mpi_op(op), mpi_comm(c), &q->req[0]));
}

static void mpi_barrier_start(Comm *c, CommRequest *r) {
    MpiRequest *q = (MpiRequest *)r->handle;
    q->n = 1;
    MPI_CHECK(MPI_Ibarrier(mpi_comm(c), &q->req[0]));
}

static bool mpi_test(Comm *c, CommRequest *r) {
    MpiRequest *q = (MpiRequest *)r->handle;
    int done = 0;
    MPI_CHECK(MPI_Testall(q->n, q->req, &done, MPI_STATUSES_IGNORE));
    return done != 0;
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
    MPI_Finalized(&finalized);
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
    .test = mpi_test,
    .split = mpi_split,
    .free = mpi_free,
};

Comm *comm_mpi_init(int *argc, char ***argv) {
    int initialized = 0, provided = 0;
    MPI_CHECK(MPI_Initialized(&initialized));
    // FUNNELED: OpenMP threads and the data loader's thread never call MPI, only the main thread.
    if (!initialized) MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
    MPI_CHECK(MPI_Type_contiguous(CHUNK, MPI_BYTE, &g_chunk_type));
    MPI_CHECK(MPI_Type_commit(&g_chunk_type));
    return mpi_wrap(MPI_COMM_WORLD);
}

void comm_mpi_finalize(void) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (g_chunk_type != MPI_DATATYPE_NULL) MPI_Type_free(&g_chunk_type);
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

_Noreturn void comm_mpi_abort(int code) {
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code);   // MPI_Abort does not return; this keeps the compiler and a broken MPI honest
}
