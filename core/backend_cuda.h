// core/backend_cuda.h — the CUDA backend's entry points: device choice, the backend table, its stream, NCCL comms.
#pragma once
#include <stdbool.h>
#include <stddef.h>

#include "core/backend.h"
#include "core/comm.h"

// The CUDA backend keeps the table's contract exactly (model/gpt.c runs unchanged), with this storage
// convention: every buffer the table sees is fp32 in device memory (parameters are therefore the
// fp32 master weights, and the AdamW moments are fp32). The math is mixed precision inside the ops:
// matmuls run on bf16 tensor cores with fp32 accumulation (cuBLASLt bf16 A/B, fp32 C/D, COMPUTE_32F;
// weights come from a bf16 shadow of the parameter buffer that AdamW refreshes in its own kernel,
// activations are converted per matmul; RINGGPT_CUDA_MATMUL=tf32 or fp32 keeps fp32 operands),
// attention loads Q, K, V as bf16 into shared memory and runs mma.sync with fp32 accumulation and
// an fp32 softmax state; norms, softmax statistics,
// losses and reductions are fp32 or fp64. Token ids, targets and positions may be host pointers
// (model/gpt.c passes the Batch's): the ops copy them to the device themselves.
extern const Backend BACKEND_CUDA;

// Number of usable CUDA devices (0 when there is no driver or no GPU; never fails).
int cuda_device_count(void);
// Picks the device of this rank (local_rank % devices), creates the stream and the cuBLASLt handle.
// Fails with a clear line when there is no device. Idempotent. world_rank is used in messages.
void cuda_backend_init(int local_rank, int world_rank);
// "NVIDIA H200 (GPU 0, 139.8 GiB, sm_90), driver 13.0, runtime 13.0" — for logs and reports.
void cuda_device_describe(char *buf, size_t n);
// The stream every op runs on (a cudaStream_t), for the comm layer's event ordering.
void *cuda_backend_stream(void);
// Matmul precision: "bf16" (default), "tf32" or "fp32" (tests compare fp32 paths at 1e-5).
void cuda_backend_set_matmul(const char *mode);
// Names the fp32 parameter buffer (bytes) whose bf16 shadow the bf16 matmuls read for weights inside it
// (ops_cuda.cu says why the shadow cannot be stale). cuda_alloc calls it for the allocation named
// "parameters" (model/gpt.c's); one buffer at a time, a new one replaces the old.
void cuda_backend_register_params(void *p, size_t bytes);
// How many times the shadow was converted in full so far (tests).
unsigned long cuda_backend_shadow_refreshes(void);
// Waits for every op queued so far (timers, benchmarks).
void cuda_backend_sync(void);
// Dense bf16 peak of this GPU in TFLOP/s for MFU: $RINGGPT_PEAK_TFLOPS, else a table of known GPUs
// (H100/H200 SXM 989, H100 PCIe 756, H100 NVL 835, A100 312); 0 when unknown (MFU is then not reported).
double cuda_device_peak_tflops(void);
// Device bytes allocated through the table now and at most.
size_t cuda_backend_bytes_in_use(void);
size_t cuda_backend_bytes_peak(void);

// This rank's index among the ranks of its node (from the launcher's environment; 0 without one).
int cuda_local_rank(void);

// A communicator for device buffers over the same ranks as `parent` (an MPI comm): NCCL when the
// build has it and every rank of the node has its own GPU, else host staging through `parent`
// (ranks sharing one GPU, or RINGGPT_COMM=mpi). Host buffers always go through `parent`. All ranks
// of parent call it; it ends with a warm-up exchange. A size-1 parent is returned as is.
// Free with comm_cuda_free (parent stays owned by its creator).
Comm *comm_cuda_wrap(Comm *parent, const char *what);
void comm_cuda_free(Comm *c);
// "nccl", "mpi-staged" or the parent's backend name.
const char *comm_cuda_kind(const Comm *c);
