// tokenizer/normalize.h — text before a BPE sees it: UTF-8 characters, GPT-2's byte alphabet, the normalizer (Prepend, Replace).
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// Length of the UTF-8 character at s[0..n) (1 for an invalid byte, which then stands alone). Inline: the encoder
// calls it for every character of SentencePiece-style text.
static inline size_t utf8_char_len(const unsigned char *s, size_t n) {
    unsigned char c = s[0];
    size_t w = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (w <= 1 || w > n) return 1;
    for (size_t i = 1; i < w; i++)
        if ((s[i] & 0xC0) != 0x80) return 1;
    return w;
}

// GPT-2's bytes_to_unicode: the character byte b stands for in a byte-level vocab (the printable Latin-1 bytes
// themselves, the 68 others U+0100..U+0143 in byte order), and its UTF-8 at out (1 or 2 bytes; returns the length).
uint32_t byte_level_char(unsigned char b);
size_t byte_level_utf8(unsigned char b, char out[2]);
// The byte a character of that alphabet stands for, -1 for a character outside it.
int byte_level_byte(uint32_t c);

// A growable byte buffer; buf_room gives it room for n bytes (contents not kept).
typedef struct {
    unsigned char *p;
    size_t cap;
} TextBuf;
unsigned char *buf_room(TextBuf *b, size_t n);

// One normalizer step: Prepend(text) to a non-empty piece, or Replace every `from` by `to`.
typedef struct {
    bool prepend;
    char *from, *to;           // from NULL for Prepend
    size_t from_len, to_len;
} NormStep;

enum { MAX_NORM = 8 };
typedef struct {
    NormStep step[MAX_NORM];
    int n;
} Normalizer;

// Adds a step (from NULL: Prepend `to`); false when there are MAX_NORM already.
bool norm_add(Normalizer *nz, const char *from, const char *to);
void norm_free(Normalizer *nz);
// Applies the steps to s[0..n) into one of bufs (or returns s when there are none); *out_n gets the length.
const unsigned char *norm_apply(const Normalizer *nz, TextBuf bufs[2], const unsigned char *s, size_t n, size_t *out_n);
