// data/tokenizer.h — the built-in byte-level tokenizer: 256 byte tokens plus a few special tokens.
#pragma once
#include <stddef.h>
#include <stdint.h>

enum {
    TOK_EOS = 256,     // end of a document; separates packed documents
    TOK_BOS = 257,     // start of a document (used by prompts)
    TOK_PAD = 258,     // padding, never a target
    TOK_SEP = 259,     // separator for synthetic tasks (e.g. question / answer)
    TOK_VOCAB_SIZE = 260,
};
#define TOKENIZER_ID "byte260"

// bytes -> tokens: one token per byte; returns the count written (== n).
size_t tok_encode(const unsigned char *text, size_t n, int32_t *out);
// Appends the printable form of a token to buf (bytes as themselves, specials as "<eos>" etc.).
// Returns the number of chars written (at most 8), not counting the terminating NUL.
int tok_decode(int32_t token, char *buf);
