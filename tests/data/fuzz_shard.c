// tests/data/fuzz_shard.c — libFuzzer target: any bytes given to the shard reader end in a clean error or a clean read, never a crash.
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "data/shard.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    int fd = memfd_create("shard", MFD_CLOEXEC);
    if (fd < 0) return 0;
    if (size && write(fd, data, size) != (ssize_t)size) {
        close(fd);
        return 0;
    }
    DataErr e;
    Shard *s = shard_open_fd(fd, "fuzz.rgs", &e);
    if (s) {
        // Only modest blocks: the reader allows up to 2^28 tokens per block, more than a fuzz run should allocate.
        if ((uint64_t)s->h.block_tokens * s->h.token_bytes <= (16u << 20)) {
            int32_t last;
            shard_verify(s, &last, &e);
        }
        shard_close(s);
    }
    close(fd);
    return 0;
}
