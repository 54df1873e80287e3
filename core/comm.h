// core/comm.h — talking between ranks: send/receive pairs, all-reduce, all-gather, reduce-scatter, all-to-all, barrier, abort; MPI or a single process.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// One interface, several backends: MPI now (launched by mpirun/srun), a single-process one (plain
// `ringgpt train`), NCCL with the CUDA backend. Every wait polls with a deadline (comm_set_timeout):
// a dead or stuck peer ends the whole job with a message naming both ranks, never a hang.

typedef enum { COMM_REAL, COMM_F32, COMM_F64, COMM_I64, COMM_U64 } CommType;   // COMM_REAL follows core/real.h
typedef enum { COMM_SUM, COMM_MIN, COMM_MAX } CommOp;

typedef struct Comm Comm;   // a group of ranks (the world, one ring, ...); backend-defined

// A started operation (send/receive pair or collective), finished by comm_wait.
typedef struct {
    Comm *comm;
    const char *what;      // "ring KV", "gradient all-reduce": named in the timeout message
    int to, from;          // peers of a send/receive pair (ranks in comm), -1 for a collective
    bool active;
    double done_at;        // now_seconds() when the operation was first seen complete: for MPI's all-gathers and
                           // reduce-scatters by the progress thread or a poke while the caller computed, else by
                           // comm_test/comm_wait; 0 while in flight
    _Alignas(16) unsigned char handle[64];   // the backend's request objects
} CommRequest;

// Starts MPI when the process was launched by an MPI launcher (OMPI_COMM_WORLD_SIZE, PMI_SIZE,
// PMIX_RANK in the environment), else a one-rank world. Sets the fail hook (a failure on one rank
// aborts the job) and the log rank (only world rank 0 logs). Idempotent.
void comm_init(int *argc, char ***argv);
// Finishes MPI (all ranks must call it); a no-op for a single process.
void comm_finalize(void);
Comm *comm_world(void);
int comm_rank(const Comm *c);
int comm_size(const Comm *c);
// Rank in the world of rank r of c (for messages).
int comm_world_rank_of(const Comm *c, int r);
// Ranks of this job on this machine (they share its cores), 1 without MPI. A collective: every rank calls it.
int comm_node_size(void);

// How a started transfer moves while the caller computes. Open MPI moves TCP and large shared-memory
// messages only inside MPI calls, so a ring hop posted before a block's compute would sit still until
// comm_wait without one of these:
//   COMM_PROGRESS_COMPUTE  the compute loops call comm_poke() between tiles; while an operation is in
//                          flight it enters MPI at most every 0.2 ms. No thread competes for the cores.
//   COMM_PROGRESS_THREAD   a thread enters MPI every 0.2 ms while an operation is in flight (for a caller
//                          that leaves its cores idle while it waits: a GPU run).
//   COMM_PROGRESS_OFF      transfers move only inside the caller's MPI calls (comm_wait).
// COMPUTE and THREAD need MPI_THREAD_SERIALIZED (threads other than the main one enter MPI); where MPI
// provides less, OFF with a note. No effect without MPI. Set it before starting operations.
typedef enum { COMM_PROGRESS_OFF, COMM_PROGRESS_COMPUTE, COMM_PROGRESS_THREAD } CommProgress;
void comm_set_progress(CommProgress mode);
// "off", "compute" or "thread" into *mode; false for any other name.
bool comm_progress_parse(const char *name, CommProgress *mode);
// True once the progress thread has started (it starts with the first operation in flight).
bool comm_progress_running(void);
// Drives MPI's progress once when COMM_PROGRESS_COMPUTE is set, an operation is in flight and 0.2 ms
// have passed since the last time; never waits for another thread's MPI call. Callable from any
// thread (OpenMP workers too); otherwise an atomic load and a clock read.
void comm_poke(void);

// Seconds any single wait may block before the job is aborted (default 600).
void comm_set_timeout(double seconds);
double comm_timeout(void);

// Starts sending `send_bytes` from send to rank `to` while receiving `recv_bytes` into recv from `from` (each
// pair of peers agrees on the sizes: the ring's pieces are equal, the layout exchange's differ per direction).
// Buffers must stay untouched until comm_wait returns. A side of 0 bytes posts nothing; both 0 starts nothing.
void comm_sendrecv_start(Comm *c, CommRequest *r, const void *send, size_t send_bytes, int to, void *recv,
                         size_t recv_bytes, int from, const char *what);
// Starts gathering: every rank's `count` elements of send land at recv + rank·count on every rank (recv holds
// size·count elements). Equal slices: a caller whose pieces differ pads them to the longest. Buffers stay
// untouched until comm_wait returns; count == 0 starts nothing.
void comm_allgather_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t count, CommType t,
                          const char *what);
// Starts reducing send (size·count elements) over the ranks with op; slice `rank` of the result (count elements)
// lands in recv. The caller pads the pieces to equal slices (zeros for a sum). Same rules as comm_allgather_start.
void comm_reduce_scatter_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t count, CommType t, CommOp op,
                               const char *what);
// Starts an all-to-all: the `bytes` at send + j·bytes go to rank j, and what rank j sent to this rank lands at
// recv + j·bytes (send and recv hold size·bytes each and do not overlap). Equal slices: every rank sends as many
// bytes to every rank (Ulysses attention: its rows of each peer's heads). Same rules as comm_allgather_start.
void comm_alltoall_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t bytes, const char *what);
// Blocks until the request is done (or the deadline: abort). Returns the seconds it blocked.
double comm_wait(CommRequest *r);
// True when the request is done (it is then finished, as by comm_wait); never blocks.
bool comm_test(CommRequest *r);
// In place: buf (count elements of type t) = op over all ranks of c. Blocking with the deadline.
void comm_allreduce(Comm *c, void *buf, size_t count, CommType t, CommOp op, const char *what);
void comm_barrier(Comm *c, const char *what);
// Prints "ringgpt: <message>" and ends every rank of the job with `code`.
_Noreturn void comm_abort(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
// A usage error that every rank detects alike (bad --sp for the world size, seq-len, mismatched
// flags): rank 0 prints the one line, every rank finishes MPI and exits 2.
_Noreturn void comm_fail_usage_all(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// A run-time failure that every rank detects alike (a non-finite loss after the all-reduce): rank 0
// prints the one line, every rank leaves MPI cleanly and exits 1.
_Noreturn void comm_fail_all(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

// Fails (usage, from rank 0) unless every rank of the world has the same configuration text, e.g.
// the command line: ranks started with different flags would silently train different models.
void comm_check_same_config(const char *config_text);

// The dp × sp process grid: rank = dp_index·sp + sp_index, the sp ranks of a ring adjacent.
typedef struct {
    int rank, world_size;
    int dp, dp_index;
    int sp, sp_index;
    Comm *world;   // all ranks: gradient sums, loss sums, config checks
    Comm *ring;    // this rank's ring: the sp ranks that share one sequence, ordered by sp_index
} CommGrid;

// Splits the world into world/sp rings. A world size that sp does not divide is a usage error.
CommGrid comm_grid(int sp);
// Splits a ring for Ulysses attention and the hybrid (attention/ulysses.h), all its ranks calling: *group = this rank's
// group of `degree` consecutive ranks (rank / degree), *across = the ring across the groups, the ranks with this rank's
// index in its group (rank % degree), ordered by group. A degree that does not divide the ring's size is a usage error.
// Free both with comm_free; a CUDA run wraps them (comm_cuda_wrap) as it wraps the ring.
void comm_groups(Comm *ring, int degree, Comm **group, Comm **across);
void comm_free(Comm *c);
void comm_grid_free(CommGrid *g);
