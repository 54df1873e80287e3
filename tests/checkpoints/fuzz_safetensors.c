// tests/checkpoints/fuzz_safetensors.c — libFuzzer target: any bytes given to the safetensors reader load or are refused with a message, never a crash.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    unsigned char *bytes = malloc(size + 1);   // st_parse owns the file's bytes, as st_open's read gives them
    memcpy(bytes, data, size);
    bytes[size] = 0;
    StFile f;
    CkErr e = {{0}};
    if (st_parse(&f, bytes, size, "fuzz.safetensors", &e) != 0) {
        if (!e.msg[0]) abort();   // a refusal always says why
        return 0;
    }
    for (int i = 0; i < f.n; i++) {   // every tensor the header accepted converts (its bytes lie inside the file)
        const StEntry *t = &f.entries[i];
        if (t->numel > (1u << 20) || st_find(&f, t->name) != t) continue;
        real *x = malloc((t->numel ? t->numel : 1) * sizeof(real));
        st_read(&f, t, 0, t->numel, x, &e);
        free(x);
    }
    st_close(&f);
    return 0;
}
