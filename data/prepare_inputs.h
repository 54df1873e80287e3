// data/prepare_inputs.h — input files as `prepare` and `tokenizer train` read them: found in name order, --include applied, binary and empty ones left out.
#pragma once
#include <stdbool.h>
#include <stddef.h>

// The input files found so far, in the order they are read.
typedef struct {
    char **paths;
    size_t *root;       // (n) the length of the path given to input_files_add that each was found under
    size_t n, cap;
} InputFiles;

// Adds the regular files under path: path itself, or a directory's files recursively in name order (so what is
// made from them is reproducible), dotfiles skipped. Files found in a directory must match one of include's
// comma-separated globs (NULL: every file); a file named as path is always read. A path that cannot be read is
// a usage error naming it.
void input_files_add(InputFiles *l, const char *path, const char *include);

// What was left out of text input: files with a NUL byte in their first 8 KiB (a .pyc, an image) and files
// of 0 bytes, with the first of each (NULL when none).
typedef struct {
    size_t binary, empty;
    char *binary_example, *empty_example;
} InputSkips;

// What the files hold: tokens (binary: none is left out as binary), text read as it is (tokenizer train), or text
// that may be compressed (prepare: gzip and zstd files are looked at decompressed).
typedef enum { INPUT_TOKENS, INPUT_TEXT, INPUT_TEXT_COMPRESSED } InputContent;
// Leaves out the binary files of l (text only) and then the empty ones, counted in *skips (free its examples with
// input_skips_free). Whatever is left may be nothing.
void input_files_drop_unreadable(InputFiles *l, InputContent content, InputSkips *skips);
void input_skips_free(InputSkips *skips);
void input_files_free(InputFiles *l);
