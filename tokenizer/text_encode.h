// tokenizer/text_encode.h — text files -> token ids on several threads, handed over in input order (prepare --tokenizer).
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tokenizer.h"

// Receives the ids of consecutive pieces of the input files, in order, on the calling thread:
// `first` / `last` mark the piece that begins / ends file `file`; `bytes` is the piece's text size.
typedef struct {
    void (*emit)(void *ctx, size_t file, const uint32_t *ids, size_t n, uint64_t bytes, bool first, bool last);
    void *ctx;
} TextSink;

// Reads the files in ~1 MB pieces cut at line cuts (tokenizer_line_cut; a tokenizer that does not
// allow them gets whole files), encodes a batch of pieces on `threads` threads while the calling
// thread hands the previous batch to the sink and reads the next. Ids equal encoding each file whole.
void encode_files(const char *const *paths, size_t n_paths, const Tokenizer *t, int threads, TextSink sink);
