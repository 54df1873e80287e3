// data/prepare_stream.h — an input file of prepare read as it is or decompressed (gzip, zstd: told by their magic bytes, not the name).
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct InStream InStream;

// Opens path; gzip (1f 8b, concatenated members too) and zstd (28 b5 2f fd, any number of frames) are
// decompressed as they are read, anything else is read as it is. Damaged or truncated compressed data stops
// the reader with one line naming the file, the compressed byte and the fix (exit 2).
InStream *in_open(const char *path);
// Up to n bytes into buf; fewer only at the end of the data (0 once it is reached).
size_t in_read(InStream *s, void *buf, size_t n);
// The next line, its '\n' kept and a NUL after it, into *line (grown as needed); its length, 0 at the end.
size_t in_line(InStream *s, char **line, size_t *cap);
void in_close(InStream *s);
