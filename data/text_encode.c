// data/text_encode.c — parallel text encoding for prepare: documents cut in pieces at line cuts, a batch encoded while the last is written.
#include "data/text_encode.h"

#include <omp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

enum { PIECE_BYTES = 1 << 20, BATCH_PIECES = 16 };

typedef struct {
    unsigned char *text;
    size_t len, cap;
    uint32_t *ids;
    size_t n_ids, ids_cap;
    bool first, last;
} Piece;

typedef struct {
    Piece p[BATCH_PIECES];
    int n;
} Batch;

typedef struct {
    TextSource src;
    bool open;                  // a document is being read
    bool cuts, first;
    unsigned char *carry;       // bytes after the last cut, for the next piece
    size_t carry_len, carry_cap;
} Reader;

static void reserve(unsigned char **buf, size_t *cap, size_t n) {
    if (n <= *cap) return;
    *cap = n + n / 2;
    *buf = xrealloc(*buf, *cap, "a text piece");
}

// Reads up to `want` more bytes of the open document into p; returns true at its end.
static bool read_more(Reader *r, Piece *p, size_t want) {
    reserve(&p->text, &p->cap, p->len + want);
    size_t k = r->src.read(r->src.ctx, p->text + p->len, want);
    p->len += k;
    return k < want;
}

// The next piece of input, false when all documents are read.
static bool next_piece(Reader *r, Piece *p) {
    if (!r->open) {
        if (!r->src.next(r->src.ctx)) return false;
        r->open = true;
        r->first = true;
    }
    p->len = 0;
    reserve(&p->text, &p->cap, r->carry_len + PIECE_BYTES);
    if (r->carry_len) memcpy(p->text, r->carry, r->carry_len);   // carry is NULL before the first cut
    p->len = r->carry_len;
    r->carry_len = 0;
    bool eof = false;
    size_t cut = 0;
    while (!eof) {
        eof = read_more(r, p, PIECE_BYTES);
        if (r->cuts && !eof && p->len >= PIECE_BYTES && (cut = tokenizer_line_cut(p->text, p->len)) > 0) break;
    }
    if (!eof) {   // keep what follows the cut for the next piece
        reserve(&r->carry, &r->carry_cap, p->len - cut);
        memcpy(r->carry, p->text + cut, p->len - cut);
        r->carry_len = p->len - cut;
        p->len = cut;
    }
    p->first = r->first;
    p->last = eof;
    r->first = false;
    r->open = !eof;
    return true;
}

static void fill(Reader *r, Batch *b) {
    b->n = 0;
    while (b->n < BATCH_PIECES && next_piece(r, &b->p[b->n])) b->n++;
}

static void emit_batch(const Batch *b, TextSink s) {
    for (int i = 0; i < b->n; i++) {
        const Piece *p = &b->p[i];
        s.emit(s.ctx, p->ids, p->n_ids, p->first, p->last);
    }
}

static void encode_piece(TokEncoder *e, Piece *p) {
    p->n_ids = 0;
    tokenizer_encode(e, p->text, p->len, &p->ids, &p->n_ids, &p->ids_cap);
}

void encode_text(TextSource src, const Tokenizer *t, int threads, TextSink sink) {
    if (threads < 1) threads = 1;
    Reader r = {.src = src, .cuts = tokenizer_cuts_at_lines(t)};
    Batch *b = xcalloc(3, sizeof *b, "text batches");
    TokEncoder *enc = xmalloc((size_t)threads * sizeof *enc, "encoders");
    for (int i = 0; i < threads; i++) enc[i] = tokenizer_encoder(t);
    Batch *prev = NULL, *cur = &b[0], *next = &b[1], *spare = &b[2];
    fill(&r, cur);
    while (cur->n) {
        if (threads == 1) {   // the baseline: encode, then write, one after the other
            for (int i = 0; i < cur->n; i++) encode_piece(&enc[0], &cur->p[i]);
            emit_batch(cur, sink);
            fill(&r, cur);
            continue;
        }
        // Thread 0 writes the previous batch and reads the next one, then joins the others encoding this one.
        atomic_int take = 0;
#pragma omp parallel num_threads(threads)
        {
            int tid = omp_get_thread_num();
            if (tid == 0) {
                if (prev) emit_batch(prev, sink);
                fill(&r, next);
            }
            for (int i; (i = atomic_fetch_add(&take, 1)) < cur->n;) encode_piece(&enc[tid], &cur->p[i]);
        }
        Batch *done = cur;
        cur = next;
        next = prev ? prev : spare;
        prev = done;
    }
    if (prev) emit_batch(prev, sink);
    for (int i = 0; i < threads; i++) tokenizer_encoder_free(&enc[i]);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < BATCH_PIECES; i++) {
            free(b[k].p[i].text);
            free(b[k].p[i].ids);
        }
    free(enc);
    free(b);
    free(r.carry);
}
