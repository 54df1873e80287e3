// core/args.h — typed command-line flags for every subcommand: parsing, --help, one-line errors.
#pragma once
#include <stdbool.h>
#include <stdint.h>

typedef enum { ARG_INT, ARG_I64, ARG_FLOAT, ARG_DOUBLE, ARG_STRING, ARG_BOOL } ArgKind;

typedef struct {
    const char *name;   // "--seq-len"
    ArgKind kind;
    void *dst;          // int*, int64_t*, float*, double*, const char**, bool*
    const char *help;   // one line; the default is printed from *dst
    bool seen;          // set by args_parse when the flag was given
} ArgSpec;

typedef struct {
    const char *command;   // "train"
    const char *usage;     // "ringgpt train --data FILE [flags]"
    const char *summary;   // one paragraph printed by --help
} ArgCommand;

// Parses argv[1..argc) against specs. Non-flag words go to positional (at most max_positional,
// more is a usage error). `--help`/`-h` prints usage and exits 0. Unknown flags, missing or
// non-numeric values exit 2 with one line naming the flag and the fix. Returns the positional count.
int args_parse(const ArgCommand *cmd, ArgSpec *specs, int n_specs, int argc, char **argv, const char **positional,
               int max_positional);
// True if the flag was given on the command line.
bool args_seen(const ArgSpec *specs, int n_specs, const char *name);
