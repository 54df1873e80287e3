// data/batch.c — batch buffers and the zigzag slicing that gives every ring rank its two chunks (and their documents).
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "data/batch.h"

Batch batch_alloc(int B, int T) {
    size_t n = (size_t)B * T;
    Batch b = {.B = B, .T = T};
    b.tokens = xmalloc(n * sizeof(int32_t), "batch tokens");
    b.targets = xmalloc(n * sizeof(int32_t), "batch targets");
    b.pos = xmalloc(n * sizeof(int32_t), "batch positions");
    b.sample = xcalloc((size_t)B, sizeof(int64_t), "batch sample numbers");
    b.n_docs = xcalloc((size_t)B, sizeof(int32_t), "batch document counts");
    return b;
}

void batch_free(Batch *b) {
    free(b->tokens);
    free(b->targets);
    free(b->pos);
    free(b->sample);
    free(b->n_docs);
    free(b->doc_start);
    free(b->docs);
    *b = (Batch){0};
}

// Document starts of the full sample (positions 0..T-1): 0 and every position right after an EOS.
static void find_docs(Batch *b, int row, const int32_t *sample, int T, int32_t eos) {
    if (b->doc_cap < T) {
        free(b->doc_start);
        free(b->docs);
        b->doc_start = xmalloc((size_t)b->B * T * sizeof(int32_t), "batch document starts");
        b->docs = xmalloc((size_t)b->B * T * sizeof(int32_t), "batch document numbers");
        b->doc_cap = T;
    }
    int32_t *ds = b->doc_start + (size_t)row * b->doc_cap, n = 0;
    ds[n++] = 0;
    if (eos >= 0)
        for (int t = 1; t < T; t++)
            if (sample[t - 1] == eos) ds[n++] = t;
    b->n_docs[row] = n;
}

// Row `row`'s docs: the 2·sp chunks in zigzag rank order (rank j's chunk j, then its chunk 2·sp−1−j; sp = 1: the
// sample), each filled run by run between document starts.
static void zigzag_docs(Batch *b, int row, int T, int sp) {
    const int32_t *ds = b->doc_start + (size_t)row * b->doc_cap;
    int32_t *out = b->docs + (size_t)row * b->doc_cap;
    int nd = b->n_docs[row], n_chunks = sp == 1 ? 1 : 2 * sp, chunk = T / n_chunks;
    for (int k = 0; k < n_chunks; k++) {
        int j = k / 2, start = sp == 1 ? 0 : (k % 2 ? 2 * sp - 1 - j : j) * chunk;
        int d = 0;   // the document holding `start`: the last start <= it
        while (d + 1 < nd && ds[d + 1] <= start) d++;
        for (int t = start; t < start + chunk; d++) {
            int end = d + 1 < nd && ds[d + 1] < start + chunk ? ds[d + 1] : start + chunk;
            for (int i = t; i < end; i++) out[(size_t)k * chunk + i - start] = d;
            t = end;
        }
    }
}

void batch_put_sample(Batch *b, int row, const int32_t *sample, int T, int sp, int sp_index, int32_t eos) {
    find_docs(b, row, sample, T, eos);
    zigzag_docs(b, row, T, sp);
    int chunk = T / (2 * sp);
    int starts[2] = {sp_index * chunk, (2 * sp - 1 - sp_index) * chunk};
    size_t base = (size_t)row * b->T;
    int32_t *tok = b->tokens + base, *tgt = b->targets + base, *pos = b->pos + base;
    int o = 0;
    for (int c = 0; c < (sp == 1 ? 1 : 2); c++) {
        int start = sp == 1 ? 0 : starts[c], len = sp == 1 ? T : chunk;
        memcpy(tok + o, sample + start, (size_t)len * sizeof(int32_t));
        memcpy(tgt + o, sample + start + 1, (size_t)len * sizeof(int32_t));
        for (int i = 0; i < len; i++) pos[o + i] = start + i;
        o += len;
    }
}

void batch_mask_targets(Batch *b, int row, const uint8_t *weight) {
    size_t base = (size_t)row * b->T;
    int32_t *tgt = b->targets + base;
    const int32_t *pos = b->pos + base;
    for (int i = 0; i < b->T; i++)
        if (!weight[pos[i] + 1]) tgt[i] = -1;   // the target of position p is token p + 1
}

long batch_count_targets(const Batch *b) {
    long n = 0;
    for (size_t i = 0; i < (size_t)b->B * b->T; i++) n += b->targets[i] >= 0;
    return n;
}
