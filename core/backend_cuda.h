// core/backend_cuda.h — the GPU underneath the CUDA backend: the device, its stream and memory, device communicators (NCCL).
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "core/comm.h"

// ---- the device and its memory (core/cuda_device.c) ----
// Number of usable CUDA devices (0 when there is no driver or no GPU; never fails).
int cuda_device_count(void);
// Picks the device of this rank (local_rank % devices) and creates the stream every op runs on. Fails with a
// clear line when there is no device. Idempotent (the first call wins). world_rank is used in messages.
void cuda_device_init(int local_rank, int world_rank);
// Device memory, counted (cuda_backend_bytes_in_use/peak): an allocation that does not fit fails with one line
// naming the rank, the GPU, the buffer and the memory left. zero and copy are ordered on the stream; to_device
// and to_host are synchronous (the host buffer may be reused at once).
void *cuda_mem_alloc(size_t bytes, const char *what);
void cuda_mem_release(void *p);
void cuda_mem_zero(void *p, size_t bytes);
void cuda_mem_copy(void *dst, const void *src, size_t bytes);
void cuda_mem_to_device(void *dst, const void *host, size_t bytes);
void cuda_mem_to_host(void *host, const void *src, size_t bytes);
size_t cuda_mem_free_bytes(void);
// The stream every op runs on (a cudaStream_t), for the comm layer's event ordering.
void *cuda_backend_stream(void);
// Waits for every op queued so far (timers, benchmarks).
void cuda_backend_sync(void);
// Device bytes allocated through cuda_mem_alloc now and at most.
size_t cuda_backend_bytes_in_use(void);
size_t cuda_backend_bytes_peak(void);
// This rank's index among the ranks of its node (from the launcher's environment; 0 without one).
int cuda_local_rank(void);

// ---- device communicators (core/comm_nccl.c) ----
// A communicator for device buffers over the same ranks as `parent` (an MPI comm): NCCL when the
// build has it and every rank of the node has its own GPU, else host staging through `parent`
// (ranks sharing one GPU, or --comm mpi). Host buffers always go through `parent`. All ranks
// of parent call it; it ends with a warm-up exchange. A size-1 parent is returned as is.
// Free with comm_cuda_free (parent stays owned by its creator).
Comm *comm_cuda_wrap(Comm *parent, const char *what);
// --comm: "auto" (NCCL when every rank of the node has its own GPU; the default), "nccl" (an error when it
// cannot be used) or "mpi" (host staging); call before comm_cuda_wrap. Anything else is a usage error.
void comm_cuda_set_kind(const char *kind);
void comm_cuda_free(Comm *c);
// "nccl", "mpi-staged" or the parent's backend name.
const char *comm_cuda_kind(const Comm *c);
