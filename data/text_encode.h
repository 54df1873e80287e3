// data/text_encode.h — documents of text -> token ids on several threads, handed over in input order (prepare --tokenizer).
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "data/tokenizer.h"

// The text: documents one after another (files, records), read on the calling thread.
typedef struct {
    bool (*next)(void *ctx);                                   // starts the next document; false when none is left
    size_t (*read)(void *ctx, unsigned char *buf, size_t n);   // up to n bytes of it, fewer only at its end
    void *ctx;
} TextSource;

// Receives the ids of consecutive pieces of the documents, in order, on the calling thread:
// `first` / `last` mark the piece that begins / ends a document.
typedef struct {
    void (*emit)(void *ctx, const uint32_t *ids, size_t n, bool first, bool last);
    void *ctx;
} TextSink;

// Reads the documents in ~1 MB pieces cut at line cuts (tokenizer_line_cut; a tokenizer that does not
// allow them gets whole documents), encodes a batch of pieces on `threads` threads while the calling
// thread hands the previous batch to the sink and reads the next. Ids equal encoding each document whole.
void encode_text(TextSource src, const Tokenizer *t, int threads, TextSink sink);
