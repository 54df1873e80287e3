// data/batch.c — batch buffers and the zigzag slicing that gives every ring rank its two chunks.
#include <stdlib.h>

#include "core/common.h"
#include "data/source.h"

Batch batch_alloc(int B, int T) {
    size_t n = (size_t)B * T;
    Batch b = {.B = B, .T = T};
    b.tokens = xmalloc(n * sizeof(int32_t), "batch tokens");
    b.targets = xmalloc(n * sizeof(int32_t), "batch targets");
    b.pos = xmalloc(n * sizeof(int32_t), "batch positions");
    return b;
}

void batch_free(Batch *b) {
    free(b->tokens);
    free(b->targets);
    free(b->pos);
    *b = (Batch){0};
}

void batch_put_sample(Batch *b, int row, const int32_t *sample, int T, int sp, int sp_index) {
    int chunk = T / (2 * sp);
    int starts[2] = {sp_index * chunk, (2 * sp - 1 - sp_index) * chunk};
    int32_t *tok = b->tokens + (size_t)row * b->T, *tgt = b->targets + (size_t)row * b->T, *pos = b->pos + (size_t)row * b->T;
    int o = 0;
    for (int c = 0; c < (sp == 1 ? 1 : 2); c++) {
        int start = sp == 1 ? 0 : starts[c], len = sp == 1 ? T : chunk;
        for (int t = start; t < start + len; t++, o++) {
            tok[o] = sample[t];
            tgt[o] = sample[t + 1];
            pos[o] = t;
        }
    }
}
