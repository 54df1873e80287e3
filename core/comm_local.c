// core/comm_local.c — the single-process comm backend: a world of one rank, where every operation is local.
#include <stdlib.h>
#include <string.h>

#include "core/comm_impl.h"
#include "core/common.h"

// Sending to oneself is a copy: a ring of one rank passes its own block to itself.
static void local_sendrecv_start(Comm *c, CommRequest *r, const void *send, size_t send_bytes, int to, void *recv,
                                 size_t recv_bytes, int from) {
    if (to != 0 || from != 0) fail("comm: a single-process job has no rank %d to exchange with", to ? to : from);
    if (send_bytes != recv_bytes) fail("comm: a rank sends itself %zu bytes but expects %zu", send_bytes, recv_bytes);
    if (recv != send) memmove(recv, send, recv_bytes);
}

// A sum, min or max over one rank is the value itself.
static void local_allreduce_start(Comm *c, CommRequest *r, void *buf, size_t count, CommType t, CommOp op) {}
static void local_barrier_start(Comm *c, CommRequest *r) {}
// Over one rank a gather and a reduce-scatter both hand back the rank's own slice.
static void local_allgather_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t count, CommType t) {
    if (recv != send) memmove(recv, send, count * comm_type_size(t));
}
static void local_reduce_scatter_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t count, CommType t,
                                       CommOp op) {
    if (recv != send) memmove(recv, send, count * comm_type_size(t));
}
// Over one rank an all-to-all sends the rank's one slice to itself.
static void local_alltoall_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t bytes) {
    if (recv != send) memmove(recv, send, bytes);
}
static bool local_test(Comm *c, CommRequest *r) { return true; }

static Comm *local_new(void) {
    Comm *c = xcalloc(1, sizeof *c, "communicator");
    c->be = &COMM_LOCAL;
    c->rank = 0;
    c->size = 1;
    c->world_ranks = xcalloc(1, sizeof(int), "communicator ranks");
    return c;
}

static Comm *local_split(Comm *c, int color, int key) { return local_new(); }

static void local_free(Comm *c) {
    free(c->world_ranks);
    free(c);
}

const CommBackend COMM_LOCAL = {
    .name = "local",
    .sendrecv_start = local_sendrecv_start,
    .allreduce_start = local_allreduce_start,
    .barrier_start = local_barrier_start,
    .allgather_start = local_allgather_start,
    .reduce_scatter_start = local_reduce_scatter_start,
    .alltoall_start = local_alltoall_start,
    .test = local_test,
    .split = local_split,
    .free = local_free,
};

Comm *comm_local_world(void) { return local_new(); }
