// tests/attention/test_cudnn_load.c — no GPU needed: the cuDNN this build was configured with loads at run time (dlopen, as --attn cudnn does) and is the headers' major version.
// SKIPs (77) when libcudnn cannot be loaded on this machine: a CUDA build without the library still runs
// everything but --attn cudnn.
#include <cudnn_version.h>
#include <stdio.h>

#include "attention/attention_cuda.h"
#include "tests/check.h"

int main(void) {
    size_t v = cudnn_sdpa_version();
    if (v == 0) {
        printf("SKIP: libcudnn.so.%d cannot be loaded here (test_cudnn_load)\n", CUDNN_MAJOR);
        return 77;
    }
    printf("cuDNN %zu loaded (headers %d.%d.%d)\n", v, CUDNN_MAJOR, CUDNN_MINOR, CUDNN_PATCHLEVEL);
    CHECK(v / 10000 == CUDNN_MAJOR, "the loaded cuDNN %zu is not major version %d", v, CUDNN_MAJOR);
    CHECK(v >= 90000, "cuDNN %zu: the fused attention graphs need cuDNN 9", v);
    return check_summary();
}
