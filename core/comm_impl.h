// core/comm_impl.h — what a comm backend provides (start, test, abort); shared by core/comm*.c only.
#pragma once
#include "core/comm.h"

// A backend starts non-blocking operations and tests them; core/comm.c does the waiting, so
// every backend gets the same deadline and the same message when a peer is gone.
typedef struct CommBackend {
    const char *name;
    void (*sendrecv_start)(Comm *c, CommRequest *r, const void *send, size_t send_bytes, int to, void *recv,
                           size_t recv_bytes, int from);
    void (*allreduce_start)(Comm *c, CommRequest *r, void *buf, size_t count, CommType t, CommOp op);
    void (*barrier_start)(Comm *c, CommRequest *r);
    void (*allgather_start)(Comm *c, CommRequest *r, const void *send, void *recv, size_t count, CommType t);
    void (*reduce_scatter_start)(Comm *c, CommRequest *r, const void *send, void *recv, size_t count, CommType t, CommOp op);
    void (*alltoall_start)(Comm *c, CommRequest *r, const void *send, void *recv, size_t bytes);   // bytes per rank
    bool (*test)(Comm *c, CommRequest *r);            // true when done; the request is then released
    // Optional: which halves of an unfinished send/receive pair are still pending (for the timeout
    // message; nothing is completed or released). NULL where the backend cannot tell.
    void (*pending)(Comm *c, CommRequest *r, bool *send, bool *recv);
    Comm *(*split)(Comm *c, int color, int key);      // a sub-group (all ranks of c call it)
    void (*free)(Comm *c);
} CommBackend;

struct Comm {
    const CommBackend *be;
    int rank, size;
    int *world_ranks;   // (size) world rank of each member, for messages
    void *impl;         // backend state (the MPI_Comm)
};

extern const CommBackend COMM_LOCAL;   // core/comm_local.c
extern const CommBackend COMM_MPI;     // core/comm_mpi.c
// The MPI world (after MPI_Init), and the MPI side of comm_init/finalize/abort.
Comm *comm_mpi_init(int *argc, char ***argv);
void comm_mpi_finalize(void);
int comm_mpi_node_size(void);
_Noreturn void comm_mpi_abort(int code);
void comm_mpi_set_progress(CommProgress mode);
void comm_mpi_poke(void);
bool comm_mpi_progress_running(void);
// The single-process world.
Comm *comm_local_world(void);
size_t comm_type_size(CommType t);
