// data/batch.c — batch buffers and the slicing that gives every ring rank its positions of a sample under a layout (and their documents).
#include <stdlib.h>

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
    free(b->layout);
    *b = (Batch){0};
}

// Document starts of the full sample (positions 0..T-1): 0 and every position right after an EOS.
static void find_docs(Batch *b, int row, const int32_t *sample, int T, int32_t eos) {
    if (b->doc_cap < T) {
        free(b->doc_start);
        free(b->docs);
        free(b->layout);
        b->doc_start = xmalloc((size_t)b->B * T * sizeof(int32_t), "batch document starts");
        b->docs = xmalloc((size_t)b->B * T * sizeof(int32_t), "batch document numbers");
        b->layout = xmalloc((size_t)b->B * T * sizeof(int32_t), "batch layouts");
        b->doc_cap = T;
    }
    int32_t *ds = b->doc_start + (size_t)row * b->doc_cap, n = 0;
    ds[n++] = 0;
    if (eos >= 0)
        for (int t = 1; t < T; t++)
            if (sample[t - 1] == eos) ds[n++] = t;
    b->n_docs[row] = n;
}

// Row `row`'s docs: the document of every position of its layout (rank by rank; each rank's positions ascend, so
// the document only moves forward within a rank).
static void layout_docs(Batch *b, int row, int sp) {
    const int32_t *ds = b->doc_start + (size_t)row * b->doc_cap, *layout = b->layout + (size_t)row * b->doc_cap;
    int32_t *out = b->docs + (size_t)row * b->doc_cap;
    int nd = b->n_docs[row];
    for (int j = 0; j < sp; j++)
        for (int i = 0, d = 0; i < b->T; i++) {
            size_t k = (size_t)j * b->T + i;
            while (d + 1 < nd && ds[d + 1] <= layout[k]) d++;
            out[k] = d;
        }
}

void batch_put_sample(Batch *b, int row, const int32_t *sample, int T, int32_t eos, RankSlice s) {
    int groups = s.groups > 0 ? s.groups : s.sp;
    if (s.sp % groups != 0) fail("internal: a placement over %d groups of %d ranks", groups, s.sp);
    find_docs(b, row, sample, T, eos);
    int32_t *layout = b->layout + (size_t)row * b->doc_cap;
    place_sample(s.placement, b->doc_start + (size_t)row * b->doc_cap, b->n_docs[row], T, groups, layout);
    layout_docs(b, row, s.sp);
    const int32_t *mine = layout + (size_t)s.sp_index * b->T;
    size_t base = (size_t)row * b->T;
    int32_t *tok = b->tokens + base, *tgt = b->targets + base, *pos = b->pos + base;
    for (int i = 0; i < b->T; i++) {
        int32_t t = mine[i];
        tok[i] = sample[t], tgt[i] = sample[t + 1], pos[i] = t;
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
