// data/prepare_shuffle.c — prepare --shuffle-docs: documents spooled to unlinked temporary files as they are read, then written in a seeded random order.
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/common.h"
#include "core/rng.h"
#include "data/prepare_impl.h"

// One temporary file: created in the dataset directory and unlinked at once, so that nothing is left behind
// however prepare ends; read back through a mapping.
typedef struct {
    FILE *f;
    const unsigned char *map;
    size_t bytes;
} SpoolFile;

struct Spool {
    char *dir;                 // for messages
    uint32_t width;            // bytes per token id in the token file
    SpoolFile tok, weight;     // the ids of every document, EOS included; their loss weights (weight.f NULL: none)
    uint64_t *end;             // (n_docs) the token just past each document
    size_t n_docs, cap;
    uint64_t n_tokens;
    unsigned char *scratch;    // (PREP_CHUNK_BYTES * 4) ids at their width, weights of 1
};

static FILE *temp_file(const char *dir) {
    size_t n = strlen(dir) + 32;
    char *path = xmalloc(n, "a path");
    snprintf(path, n, "%s/.shuffle-XXXXXX", dir);
    int fd = mkstemp(path);
    if (fd < 0) fail_io(dir, errno, "cannot create a temporary file for --shuffle-docs");
    if (unlink(path) != 0) fail_io(path, errno, "cannot unlink a temporary file");
    FILE *f = fdopen(fd, "w+b");
    if (!f) fail_io(dir, errno, "cannot open a temporary file for --shuffle-docs");
    free(path);
    return f;
}

Spool *spool_open(const char *dir, uint32_t token_bytes, bool weights) {
    Spool *s = xcalloc(1, sizeof *s, "the document spool");
    s->dir = xstrdup(dir);
    s->width = token_bytes;
    s->tok.f = temp_file(dir);
    if (weights) s->weight.f = temp_file(dir);
    s->scratch = xmalloc((size_t)PREP_CHUNK_BYTES * 4, "the document spool");
    return s;
}

static void spool_put(Spool *s, FILE *f, const void *data, size_t bytes) {
    if (fwrite(data, 1, bytes, f) != bytes) fail_io(s->dir, errno, "writing the --shuffle-docs temporary file failed");
}

void spool_tokens(Spool *s, const uint32_t *t, const uint8_t *weight, size_t n) {
    for (size_t at = 0; at < n; at += PREP_CHUNK_BYTES) {
        size_t k = n - at < PREP_CHUNK_BYTES ? n - at : PREP_CHUNK_BYTES;
        for (size_t i = 0; i < k; i++)
            if (s->width == 2) {
                s->scratch[2 * i] = (unsigned char)t[at + i];
                s->scratch[2 * i + 1] = (unsigned char)(t[at + i] >> 8);
            } else {
                wr32(s->scratch + 4 * i, t[at + i]);
            }
        spool_put(s, s->tok.f, s->scratch, k * s->width);
        if (!s->weight.f) continue;
        if (weight) spool_put(s, s->weight.f, weight + at, k);
        else {
            memset(s->scratch, 1, k);
            spool_put(s, s->weight.f, s->scratch, k);
        }
    }
    s->n_tokens += n;
}

void spool_doc_end(Spool *s, uint32_t eos, uint8_t eos_weight) {
    spool_tokens(s, &eos, &eos_weight, 1);
    if (s->n_docs == s->cap) s->end = xrealloc(s->end, (s->cap = s->cap ? 2 * s->cap : 1024) * sizeof *s->end, "the document spool");
    s->end[s->n_docs++] = s->n_tokens;
}

static void map_file(Spool *s, SpoolFile *sf, size_t bytes) {
    if (!sf->f) return;
    if (fflush(sf->f) != 0) fail_io(s->dir, errno, "writing the --shuffle-docs temporary file failed");
    sf->bytes = bytes;
    void *m = mmap(NULL, bytes, PROT_READ, MAP_PRIVATE, fileno(sf->f), 0);
    if (m == MAP_FAILED) fail_io(s->dir, errno, "cannot map the --shuffle-docs temporary file (%zu bytes)", bytes);
    sf->map = m;
}

static void unmap_file(SpoolFile *sf) {
    if (sf->map) munmap((void *)sf->map, sf->bytes);
    if (sf->f) fclose(sf->f);
}

// Document d's tokens [a, b) (its EOS the last) back through the writer, in chunks.
static void write_doc(Prep *p, const Spool *s, uint64_t a, uint64_t b) {
    const unsigned char *w = s->weight.map;
    for (uint64_t at = a; at + 1 < b; at += PREP_CHUNK_BYTES) {
        size_t k = b - 1 - at < PREP_CHUNK_BYTES ? (size_t)(b - 1 - at) : PREP_CHUNK_BYTES;
        const unsigned char *src = s->tok.map + at * s->width;
        for (size_t i = 0; i < k; i++)
            p->buf[i] = s->width == 2 ? (uint32_t)src[2 * i] | (uint32_t)src[2 * i + 1] << 8 : rd32(src + 4 * i);
        prep_doc_tokens(p, p->buf, w ? w + at : NULL, k);
        prep_progress(p);
    }
    prep_doc_end(p, w ? w[b - 1] : 1);
}

void spool_write(Prep *p, uint64_t seed) {
    Spool *s = p->spool;
    p->spool = NULL;   // from here on the documents go to the writer
    p->doc_index = p->tokens = 0;
    if (s->n_docs) {
        map_file(s, &s->tok, s->n_tokens * s->width);
        map_file(s, &s->weight, s->n_tokens);
    }
    uint64_t *order = xmalloc((s->n_docs + 1) * sizeof *order, "the document order");
    for (size_t i = 0; i < s->n_docs; i++) order[i] = i;
    Rng r;
    rng_seed(&r, seed);
    for (size_t i = s->n_docs; i > 1; i--) {   // Fisher-Yates
        size_t j = (size_t)rng_below(&r, i);
        uint64_t t = order[i - 1];
        order[i - 1] = order[j], order[j] = t;
    }
    for (size_t i = 0; i < s->n_docs; i++) {
        uint64_t d = order[i];
        write_doc(p, s, d ? s->end[d - 1] : 0, s->end[d]);
    }
    unmap_file(&s->tok);
    unmap_file(&s->weight);
    free(order);
    free(s->end);
    free(s->scratch);
    free(s->dir);
    free(s);
}
