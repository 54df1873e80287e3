// eval/ruler_words.h — what RULER's documents are written with (eval/ruler.c): the word lists, keys and values drawn distinct, coded words, a growing string.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/rng.h"
#include "eval/ruler.h"

// Words for keys, values, aliases and the common-words list; people's names for nolima.
enum { RULER_N_ADJS = 122, RULER_N_NOUNS = 123, RULER_N_NAMES = 48 };
extern const char *const RULER_ADJS[RULER_N_ADJS], *const RULER_NOUNS[RULER_N_NOUNS], *const RULER_NAMES[RULER_N_NAMES];

// A growing string: p[0..n) and a NUL.
typedef struct {
    char *p;
    size_t n, cap;
} Str;
void str_put(Str *s, const char *t, size_t n);
void str_printf(Str *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void str_free(Str *s);

// A set of strings by their 64-bit hashes: keys, values and words stay distinct. Zeroed: empty; freed with free(slot).
typedef struct {
    uint64_t *slot;   // (cap) hashes, 0 = empty
    size_t cap, n;
} KeySet;
// False when s is in the set already.
bool keyset_add(KeySet *k, const char *s);
KeySet keyset_copy(const KeySet *k);

// A new item of kind (near `like` when it is not NULL: a number with one digit changed, a word pair with one word
// kept, a UUID with its first group kept — a hard distractor) that ks does not hold yet, added to it; -1 when tries
// run out.
int draw_new(Rng *r, RulerItem kind, const char *like, KeySet *ks, char *out);
// A pronounceable coded word of 3 syllables ("bakoru") into out (7 bytes).
void coded_word(Rng *r, char *out);
// "numbers", "words", "UUIDs".
const char *value_plural(RulerItem kind);
// "one".."ten", else digits.
void count_word(int k, char *out, size_t n);
