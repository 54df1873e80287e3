// core/cuda_device.c — the GPU of this process: device choice, the stream every op runs on, checked failures, counted device memory.
#include <stdlib.h>
#include <string.h>

#include "core/backend_cuda.h"
#include "core/cuda_check.h"

typedef struct {
    void *p;
    size_t bytes;
} Allocation;

static struct {
    int device, rank;
    bool ready;
    cudaStream_t stream;
    struct cudaDeviceProp prop;
    size_t in_use, peak;
    Allocation *allocs;   // live allocations (few: tens per layer), for the byte counts
    int n_allocs, cap_allocs;
} D = {.device = -1};

int cuda_current_device(void) { return D.device; }

void cuda_fail_call(const char *call, const char *error, const char *file, int line) {
    const char *name = D.device >= 0 ? D.prop.name : "none selected";
    fail("rank %d, GPU %d (%s): %s failed: %s (%s:%d)", D.rank, D.device, name, call, error, file, line);
}

int cuda_device_count(void) {
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError();   // no driver / no device: clear the sticky error, report none
        return 0;
    }
    return n;
}

int cuda_local_rank(void) {
    const char *vars[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "PMI_LOCAL_RANK",
                          "LOCAL_RANK"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return atoi(v);
    }
    return 0;
}

void cuda_device_init(int local_rank, int world_rank) {
    if (D.ready) return;
    D.rank = world_rank;
    int n = cuda_device_count();
    if (n == 0)
        fail_usage("rank %d: --device cuda: no CUDA device is visible to this process (check nvidia-smi and "
                   "CUDA_VISIBLE_DEVICES); use --device cpu",
                   world_rank);
    D.device = local_rank % n;
    CUDA_CHECK(cudaSetDevice(D.device));
    CUDA_CHECK(cudaGetDeviceProperties(&D.prop, D.device));
    CUDA_CHECK(cudaStreamCreateWithFlags(&D.stream, cudaStreamNonBlocking));
    D.ready = true;
}

static void ensure_device(void) {
    if (!D.ready) cuda_device_init(cuda_local_rank(), 0);
}

void *cuda_backend_stream(void) {
    ensure_device();
    return (void *)D.stream;
}
void cuda_backend_sync(void) { CUDA_CHECK(cudaStreamSynchronize(D.stream)); }
size_t cuda_backend_bytes_in_use(void) { return D.in_use; }
size_t cuda_backend_bytes_peak(void) { return D.peak; }

void *cuda_mem_alloc(size_t bytes, const char *what) {
    ensure_device();
    void *p = NULL;
    if (bytes == 0) bytes = 1;
    cudaError_t err = cudaMalloc(&p, bytes);
    if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        size_t free_b = 0, total_b = 0;
        cudaMemGetInfo(&free_b, &total_b);
        fail("rank %d, GPU %d (%s): out of device memory allocating %.1f MiB for %s: %.1f MiB free of %.1f MiB, "
             "%.1f MiB already held by ringgpt; lower --batch or --seq-len, or spread the sequence over more GPUs "
             "(--sp)",
             D.rank, D.device, D.prop.name, bytes / 1048576.0, what, free_b / 1048576.0, total_b / 1048576.0,
             D.in_use / 1048576.0);
    }
    CUDA_CHECK(err);
    if (D.n_allocs == D.cap_allocs) {
        D.cap_allocs = D.cap_allocs ? 2 * D.cap_allocs : 256;
        D.allocs = (Allocation *)xrealloc(D.allocs, D.cap_allocs * sizeof(Allocation), "device allocation list");
    }
    D.allocs[D.n_allocs++] = (Allocation){p, bytes};
    D.in_use += bytes;
    if (D.in_use > D.peak) D.peak = D.in_use;
    return p;
}

void cuda_mem_release(void *p) {
    if (!p) return;
    for (int i = D.n_allocs - 1; i >= 0; i--)
        if (D.allocs[i].p == p) {
            D.in_use -= D.allocs[i].bytes;
            D.allocs[i] = D.allocs[--D.n_allocs];
            break;
        }
    CUDA_CHECK(cudaFree(p));   // cudaFree waits for the device: no kernel still reads p
}

size_t cuda_mem_free_bytes(void) {
    ensure_device();
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    return free_b;
}

void cuda_mem_zero(void *p, size_t bytes) { CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, D.stream)); }
void cuda_mem_copy(void *dst, const void *src, size_t bytes) {
    if (dst != src) CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, D.stream));
}
// Synchronous on purpose: the caller may free or reuse its host buffer as soon as this returns.
void cuda_mem_to_device(void *dst, const void *host, size_t bytes) {
    ensure_device();
    CUDA_CHECK(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, D.stream));
    CUDA_CHECK(cudaStreamSynchronize(D.stream));
}
void cuda_mem_to_host(void *host, const void *src, size_t bytes) {
    CUDA_CHECK(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, D.stream));
    CUDA_CHECK(cudaStreamSynchronize(D.stream));
}
