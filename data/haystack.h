// data/haystack.h — real text for passkey needles to hide in: loaded from files or a dataset, kept apart from the text a model is evaluated on, encoded in a model's tokens.
#pragma once
#include <stdint.h>

#include "tokenizer/tokenizer.h"

// The haystack as byte tokens. From a text file, a directory of text files (its regular files in name
// order, recursively; dotfiles and symbolic links are skipped, so a link to a file already read does not
// count twice) or a dataset (ringgpt prepare) of bytes or made with --tokenizer (its tokens read back as
// text; special tokens become spaces). Any other input,
// an empty one or one that cannot be read is a usage error naming it (exit 2).
typedef struct {
    uint32_t *tok;   // (n) byte tokens, or a tokenizer's ids after haystack_encode
    uint64_t n;
    uint64_t bytes;  // the text's bytes
    uint32_t crc;    // CRC-32 of the bytes, recorded with the results that used them
    int files;       // files read (1 for a file or a dataset)
} Haystack;

void haystack_load(const char *path, Haystack *h);
void haystack_free(Haystack *h);
// The text as t's ids (tok and n become them; bytes, crc and files stay the text's). Nothing for the byte
// tokenizer (t NULL or byte260). Compare haystacks (haystack_check_apart) before.
void haystack_encode(Haystack *h, const Tokenizer *t);

// Windows compared between two haystacks: this many bytes, with letters lowercased and every run of
// whitespace read as one space (so re-wrapped or re-indented copies still match).
enum { HAYSTACK_WINDOW = 64 };
// A usage error (exit 2) when train and held (the evaluation's text) share any window: training on a copy of
// the evaluation's text would make a prose score measure memory, not retrieval. The message names both paths
// and the first shared passage.
void haystack_check_apart(const Haystack *train, const char *train_path, const Haystack *held, const char *held_path);
