// core/comm_nccl.c — the comm backend for device buffers: NCCL (bootstrapped over MPI) or MPI with host staging.
// A wrapper Comm over an MPI comm (same ranks): device buffers go through NCCL on a communication
// stream ordered after the compute stream by an event, or, when ranks share a GPU (NCCL refuses two
// ranks on one device) or --comm mpi, through pinned host buffers and the MPI parent. Host
// buffers (losses, config checks) always take the parent's path. core/comm.c polls `test` with the
// deadline, so a dead peer ends the job with a message instead of a hang, whichever path is used.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/backend_cuda.h"
#include "core/comm_impl.h"
#include "core/cuda_check.h"
#include "core/real.h"

typedef enum { PATH_PARENT, PATH_NCCL, PATH_STAGED } Path;

// Pinned host buffers for staged transfers; the ring keeps several pieces in flight, so each
// transfer takes a free slot (grow-only, never more than STAGING_SLOTS at once).
enum { STAGING_SLOTS = 8 };
typedef struct {
    void *send, *recv;
    size_t cap;
    bool busy;
} Staging;

typedef struct {
    Comm *parent;
    bool nccl;
#ifdef RINGGPT_HAVE_NCCL
    ncclComm_t nc;
#endif
    cudaStream_t comm_stream;
    cudaEvent_t compute_ready;    // the compute stream's position when a transfer is started
    Staging staging[STAGING_SLOTS];
} CudaComm;

// One started operation; the CommRequest's handle holds a pointer to it.
typedef struct {
    Path path;
    CommRequest inner;   // PATH_PARENT / PATH_STAGED: the parent's request
    cudaEvent_t done;    // PATH_NCCL: recorded on the comm stream after the operation
    void *dev_dst;       // PATH_STAGED: where the received (or reduced) bytes go on the device
    size_t bytes;
    Staging *slot;       // PATH_STAGED: the host buffers it uses
} CudaReq;

_Static_assert(sizeof(CudaReq *) <= sizeof(((CommRequest *)0)->handle), "CommRequest.handle too small");

static CudaComm *impl_of(const Comm *c) { return (CudaComm *)c->impl; }
static CudaReq **req_slot(CommRequest *r) { return (CudaReq **)r->handle; }
static cudaStream_t compute_stream(void) { return (cudaStream_t)cuda_backend_stream(); }

static bool on_device(const void *p) {
    if (!p) return false;
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError();
        return false;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

static CudaReq *new_req(CommRequest *r, Path path) {
    CudaReq *q = xcalloc(1, sizeof *q, "comm request");
    q->path = path;
    *req_slot(r) = q;
    return q;
}

static CommRequest inner_of(const CudaComm *cc, const CommRequest *r) {
    return (CommRequest){.comm = cc->parent, .what = r->what, .to = r->to, .from = r->from, .active = true};
}

// A free staging slot of at least `bytes`, marked busy until the transfer completes (cc_test).
static Staging *take_staging(CudaComm *cc, size_t bytes) {
    Staging *g = NULL;
    for (int i = 0; i < STAGING_SLOTS && !g; i++)
        if (!cc->staging[i].busy) g = &cc->staging[i];
    if (!g)
        fail("comm: more than %d staged transfers at once on one communicator; this is a bug in the caller", STAGING_SLOTS);
    if (bytes > g->cap) {
        if (g->send) CUDA_CHECK(cudaFreeHost(g->send));
        if (g->recv) CUDA_CHECK(cudaFreeHost(g->recv));
        CUDA_CHECK(cudaMallocHost(&g->send, bytes));
        CUDA_CHECK(cudaMallocHost(&g->recv, bytes));
        g->cap = bytes;
    }
    g->busy = true;
    return g;
}

#ifdef RINGGPT_HAVE_NCCL
static ncclDataType_t nccl_type(CommType t) {
    switch (t) {
    case COMM_REAL: return sizeof(real) == sizeof(double) ? ncclDouble : ncclFloat;
    case COMM_F32: return ncclFloat;
    case COMM_F64: return ncclDouble;
    case COMM_I64: return ncclInt64;
    case COMM_U64: return ncclUint64;
    }
    fail("comm: unknown element type %d", (int)t);
}
static ncclRedOp_t nccl_op(CommOp op) { return op == COMM_SUM ? ncclSum : op == COMM_MIN ? ncclMin : ncclMax; }

// The comm stream waits for everything the compute stream queued so far (the send buffer is ready).
static void order_after_compute(CudaComm *cc) {
    CUDA_CHECK(cudaEventRecord(cc->compute_ready, compute_stream()));
    CUDA_CHECK(cudaStreamWaitEvent(cc->comm_stream, cc->compute_ready, 0));
}
static void record_done(CudaComm *cc, CudaReq *q) {
    CUDA_CHECK(cudaEventCreateWithFlags(&q->done, cudaEventDisableTiming));
    CUDA_CHECK(cudaEventRecord(q->done, cc->comm_stream));
}
#endif

// Staged: the device's send bytes to a pinned slot, the parent's collective between slots, and (cc_test) the result's
// `recv_bytes` back to the device.
static CudaReq *staged_start(CudaComm *cc, CommRequest *r, const void *send, size_t send_bytes, void *recv,
                             size_t recv_bytes) {
    CudaReq *q = new_req(r, PATH_STAGED);
    q->slot = take_staging(cc, send_bytes > recv_bytes ? send_bytes : recv_bytes);
    CUDA_CHECK(cudaMemcpyAsync(q->slot->send, send, send_bytes, cudaMemcpyDeviceToHost, compute_stream()));
    CUDA_CHECK(cudaStreamSynchronize(compute_stream()));
    q->dev_dst = recv;
    q->bytes = recv_bytes;
    q->inner = inner_of(cc, r);
    return q;
}

static void cc_sendrecv_start(Comm *c, CommRequest *r, const void *send, size_t send_bytes, int to, void *recv,
                              size_t recv_bytes, int from) {
    CudaComm *cc = impl_of(c);
    if (!on_device(send) && !on_device(recv)) {
        CudaReq *q = new_req(r, PATH_PARENT);
        q->inner = inner_of(cc, r);
        cc->parent->be->sendrecv_start(cc->parent, &q->inner, send, send_bytes, to, recv, recv_bytes, from);
        return;
    }
#ifdef RINGGPT_HAVE_NCCL
    if (cc->nccl) {
        CudaReq *q = new_req(r, PATH_NCCL);
        order_after_compute(cc);
        // One group: send and receive progress together, so a ring of blocking sends cannot deadlock.
        NCCL_CHECK(ncclGroupStart());
        if (send_bytes) NCCL_CHECK(ncclSend(send, send_bytes, ncclUint8, to, cc->nc, cc->comm_stream));
        if (recv_bytes) NCCL_CHECK(ncclRecv(recv, recv_bytes, ncclUint8, from, cc->nc, cc->comm_stream));
        NCCL_CHECK(ncclGroupEnd());
        record_done(cc, q);
        return;
    }
#endif
    CudaReq *q = staged_start(cc, r, send, send_bytes, recv, recv_bytes);
    cc->parent->be->sendrecv_start(cc->parent, &q->inner, q->slot->send, send_bytes, to, q->slot->recv, recv_bytes, from);
}

static void cc_allreduce_start(Comm *c, CommRequest *r, void *buf, size_t count, CommType t, CommOp op) {
    CudaComm *cc = impl_of(c);
    if (!on_device(buf)) {
        CudaReq *q = new_req(r, PATH_PARENT);
        q->inner = inner_of(cc, r);
        cc->parent->be->allreduce_start(cc->parent, &q->inner, buf, count, t, op);
        return;
    }
#ifdef RINGGPT_HAVE_NCCL
    if (cc->nccl) {
        CudaReq *q = new_req(r, PATH_NCCL);
        order_after_compute(cc);
        NCCL_CHECK(ncclAllReduce(buf, buf, count, nccl_type(t), nccl_op(op), cc->nc, cc->comm_stream));
        record_done(cc, q);
        return;
    }
#endif
    size_t bytes = count * comm_type_size(t);
    CudaReq *q = new_req(r, PATH_STAGED);
    q->slot = take_staging(cc, bytes);
    CUDA_CHECK(cudaMemcpyAsync(q->slot->recv, buf, bytes, cudaMemcpyDeviceToHost, compute_stream()));
    CUDA_CHECK(cudaStreamSynchronize(compute_stream()));
    q->dev_dst = buf;
    q->bytes = bytes;
    q->inner = inner_of(cc, r);
    cc->parent->be->allreduce_start(cc->parent, &q->inner, q->slot->recv, count, t, op);
}

static void cc_allgather_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t count, CommType t) {
    CudaComm *cc = impl_of(c);
    if (!on_device(send) && !on_device(recv)) {
        CudaReq *q = new_req(r, PATH_PARENT);
        q->inner = inner_of(cc, r);
        cc->parent->be->allgather_start(cc->parent, &q->inner, send, recv, count, t);
        return;
    }
#ifdef RINGGPT_HAVE_NCCL
    if (cc->nccl) {
        CudaReq *q = new_req(r, PATH_NCCL);
        order_after_compute(cc);
        NCCL_CHECK(ncclAllGather(send, recv, count, nccl_type(t), cc->nc, cc->comm_stream));
        record_done(cc, q);
        return;
    }
#endif
    size_t bytes = count * comm_type_size(t);
    CudaReq *q = staged_start(cc, r, send, bytes, recv, bytes * (size_t)c->size);
    cc->parent->be->allgather_start(cc->parent, &q->inner, q->slot->send, q->slot->recv, count, t);
}

static void cc_reduce_scatter_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t count, CommType t,
                                    CommOp op) {
    CudaComm *cc = impl_of(c);
    if (!on_device(send) && !on_device(recv)) {
        CudaReq *q = new_req(r, PATH_PARENT);
        q->inner = inner_of(cc, r);
        cc->parent->be->reduce_scatter_start(cc->parent, &q->inner, send, recv, count, t, op);
        return;
    }
#ifdef RINGGPT_HAVE_NCCL
    if (cc->nccl) {
        CudaReq *q = new_req(r, PATH_NCCL);
        order_after_compute(cc);
        NCCL_CHECK(ncclReduceScatter(send, recv, count, nccl_type(t), nccl_op(op), cc->nc, cc->comm_stream));
        record_done(cc, q);
        return;
    }
#endif
    size_t bytes = count * comm_type_size(t);
    CudaReq *q = staged_start(cc, r, send, bytes * (size_t)c->size, recv, bytes);
    cc->parent->be->reduce_scatter_start(cc->parent, &q->inner, q->slot->send, q->slot->recv, count, t, op);
}

// NCCL has no all-to-all: one group of a send and a receive per peer (they progress together, so no order of the
// ranks can deadlock); the rank's own slice is a copy on the comm stream.
static void cc_alltoall_start(Comm *c, CommRequest *r, const void *send, void *recv, size_t bytes) {
    CudaComm *cc = impl_of(c);
    if (!on_device(send) && !on_device(recv)) {
        CudaReq *q = new_req(r, PATH_PARENT);
        q->inner = inner_of(cc, r);
        cc->parent->be->alltoall_start(cc->parent, &q->inner, send, recv, bytes);
        return;
    }
#ifdef RINGGPT_HAVE_NCCL
    if (cc->nccl) {
        CudaReq *q = new_req(r, PATH_NCCL);
        order_after_compute(cc);
        const char *from = send;
        char *to = recv;
        CUDA_CHECK(cudaMemcpyAsync(to + (size_t)c->rank * bytes, from + (size_t)c->rank * bytes, bytes,
                                   cudaMemcpyDeviceToDevice, cc->comm_stream));
        NCCL_CHECK(ncclGroupStart());
        for (int j = 0; j < c->size; j++) {
            if (j == c->rank) continue;
            NCCL_CHECK(ncclSend(from + (size_t)j * bytes, bytes, ncclUint8, j, cc->nc, cc->comm_stream));
            NCCL_CHECK(ncclRecv(to + (size_t)j * bytes, bytes, ncclUint8, j, cc->nc, cc->comm_stream));
        }
        NCCL_CHECK(ncclGroupEnd());
        record_done(cc, q);
        return;
    }
#endif
    size_t all = bytes * (size_t)c->size;
    CudaReq *q = staged_start(cc, r, send, all, recv, all);
    cc->parent->be->alltoall_start(cc->parent, &q->inner, q->slot->send, q->slot->recv, bytes);
}

static void cc_barrier_start(Comm *c, CommRequest *r) {
    CudaComm *cc = impl_of(c);
    CudaReq *q = new_req(r, PATH_PARENT);
    q->inner = inner_of(cc, r);
    cc->parent->be->barrier_start(cc->parent, &q->inner);
}

static bool cc_test(Comm *c, CommRequest *r) {
    CudaComm *cc = impl_of(c);
    CudaReq *q = *req_slot(r);
    bool done = false;
    switch (q->path) {
    case PATH_PARENT: done = cc->parent->be->test(cc->parent, &q->inner); break;
    case PATH_STAGED:
        done = cc->parent->be->test(cc->parent, &q->inner);
        if (done) {   // the received bytes land on the device before anyone reads them
            CUDA_CHECK(cudaMemcpyAsync(q->dev_dst, q->slot->recv, q->bytes, cudaMemcpyHostToDevice, compute_stream()));
            CUDA_CHECK(cudaStreamSynchronize(compute_stream()));
            q->slot->busy = false;
        }
        break;
    case PATH_NCCL: {
        cudaError_t e = cudaEventQuery(q->done);
        if (e == cudaSuccess) {
            CUDA_CHECK(cudaEventDestroy(q->done));
            done = true;
        } else if (e == cudaErrorNotReady) {
#ifdef RINGGPT_HAVE_NCCL
            ncclResult_t st = ncclSuccess;
            NCCL_CHECK(ncclCommGetAsyncError(cc->nc, &st));
            if (st != ncclSuccess && st != ncclInProgress)
                fail("rank %d, GPU %d: NCCL failed during %s: %s", comm_world_rank_of(c, c->rank), cuda_current_device(),
                     r->what, ncclGetErrorString(st));
#endif
        } else {
            CUDA_CHECK(e);
        }
        break;
    }
    }
    if (done) {
        free(q);
        *req_slot(r) = NULL;
    }
    return done;
}

static Comm *cc_split(Comm *c, int color, int key) {
    fail("comm: split a CUDA communicator's MPI parent first, then wrap the result (comm_cuda_wrap)");
}

static void cc_free(Comm *c) { comm_cuda_free(c); }

static const CommBackend COMM_CUDA = {
    .name = "cuda",
    .sendrecv_start = cc_sendrecv_start,
    .allreduce_start = cc_allreduce_start,
    .barrier_start = cc_barrier_start,
    .allgather_start = cc_allgather_start,
    .reduce_scatter_start = cc_reduce_scatter_start,
    .alltoall_start = cc_alltoall_start,
    .test = cc_test,
    .split = cc_split,
    .free = cc_free,
};

// Every rank of parent must make the same choice: take the most cautious one over the ranks.
static const char *g_comm_kind;   // --comm: NULL or "auto", "nccl", "mpi"

void comm_cuda_set_kind(const char *kind) {
    if (kind && strcmp(kind, "auto") && strcmp(kind, "nccl") && strcmp(kind, "mpi"))
        fail_usage("--comm %s: use auto, nccl or mpi", kind);
    g_comm_kind = kind;
}

static bool choose_nccl(Comm *parent) {
    const char *env = g_comm_kind;
    int64_t want = 0;
#ifdef RINGGPT_HAVE_NCCL
    int devices = cuda_device_count();
    want = comm_node_size() <= devices;   // NCCL needs one GPU per rank
    if (env && !strcmp(env, "mpi")) want = 0;
#endif
    if (env && !strcmp(env, "nccl") && !want)
        fail("--comm nccl, but %s", comm_node_size() > cuda_device_count()
                                              ? "ranks share a GPU on this node (NCCL needs one GPU per rank)"
                                              : "this binary was built without NCCL");
    comm_allreduce(parent, &want, 1, COMM_I64, COMM_MIN, "NCCL choice");
    return want != 0;
}

#ifdef RINGGPT_HAVE_NCCL
// ncclUniqueId from rank 0 to every rank: an all-reduce sum where only rank 0 contributes.
static void nccl_bootstrap(CudaComm *cc, Comm *parent) {
    ncclUniqueId id;
    _Static_assert(sizeof id % sizeof(uint64_t) == 0, "ncclUniqueId size");
    uint64_t words[sizeof id / sizeof(uint64_t)];
    memset(words, 0, sizeof words);
    if (parent->rank == 0) {
        NCCL_CHECK(ncclGetUniqueId(&id));
        memcpy(words, &id, sizeof id);
    }
    comm_allreduce(parent, words, sizeof words / sizeof words[0], COMM_U64, COMM_SUM, "NCCL id broadcast");
    memcpy(&id, words, sizeof id);
    NCCL_CHECK(ncclCommInitRank(&cc->nc, parent->size, id, parent->rank));
}
#endif

// One exchange around the ring and one all-reduce, so that NCCL's lazy connection setup (or a
// peer that is missing) shows up now, under the deadline, not in the middle of the first step.
static void warm_up(Comm *c, const char *what) {
    float *buf = cuda_mem_alloc(2 * sizeof(float), "comm warm-up");
    cuda_mem_zero(buf, 2 * sizeof(float));
    CommRequest r;
    comm_sendrecv_start(c, &r, buf, sizeof(float), (c->rank + 1) % c->size, buf + 1, sizeof(float),
                        (c->rank - 1 + c->size) % c->size, what);
    comm_wait(&r);
    comm_allreduce(c, buf, 1, COMM_F32, COMM_SUM, what);
    cuda_mem_release(buf);
}

Comm *comm_cuda_wrap(Comm *parent, const char *what) {
    if (parent->size == 1) return parent;
    CudaComm *cc = xcalloc(1, sizeof *cc, "CUDA communicator");
    cc->parent = parent;
    cc->nccl = choose_nccl(parent);
    CUDA_CHECK(cudaStreamCreateWithFlags(&cc->comm_stream, cudaStreamNonBlocking));
    CUDA_CHECK(cudaEventCreateWithFlags(&cc->compute_ready, cudaEventDisableTiming));
#ifdef RINGGPT_HAVE_NCCL
    if (cc->nccl) nccl_bootstrap(cc, parent);
#endif
    Comm *c = xcalloc(1, sizeof *c, "communicator");
    c->be = &COMM_CUDA;
    c->rank = parent->rank;
    c->size = parent->size;
    c->world_ranks = xcalloc(c->size, sizeof(int), "communicator ranks");
    memcpy(c->world_ranks, parent->world_ranks, c->size * sizeof(int));
    c->impl = cc;
    warm_up(c, what);
    return c;
}

void comm_cuda_free(Comm *c) {
    if (!c || c->be != &COMM_CUDA) return;   // a size-1 parent was returned as is: its owner frees it
    CudaComm *cc = impl_of(c);
#ifdef RINGGPT_HAVE_NCCL
    if (cc->nccl) ncclCommDestroy(cc->nc);
#endif
    for (int i = 0; i < STAGING_SLOTS; i++) {
        if (cc->staging[i].send) cudaFreeHost(cc->staging[i].send);
        if (cc->staging[i].recv) cudaFreeHost(cc->staging[i].recv);
    }
    cudaEventDestroy(cc->compute_ready);
    cudaStreamDestroy(cc->comm_stream);
    free(cc);
    free(c->world_ranks);
    free(c);
}

const char *comm_cuda_kind(const Comm *c) {
    if (c->be != &COMM_CUDA) return c->be->name;
    return impl_of(c)->nccl ? "nccl" : "mpi-staged";
}
