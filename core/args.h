// core/args.h — typed command-line flags for every subcommand: parsing, --help, one-line errors.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// ARG_HEADING is no flag: it starts a group of the --help text (name = the heading, "model"); ARG_GROUP() writes one.
typedef enum { ARG_INT, ARG_I64, ARG_FLOAT, ARG_DOUBLE, ARG_STRING, ARG_BOOL, ARG_HEADING } ArgKind;

typedef struct {
    const char *name;   // "--seq-len"
    ArgKind kind;
    void *dst;          // int*, int64_t*, float*, double*, const char**, bool*
    const char *help;   // one line; the default is printed from *dst
    bool seen;          // set when the flag was given (command line, --config file or a saved config)
    const char *dflt;   // the default in words when *dst is a sentinel: "preset", "the checkpoint's", ...
} ArgSpec;

// A heading in a flag table: the flags after it, up to the next one, are listed under it by --help.
#define ARG_GROUP(heading) {heading, ARG_HEADING, NULL, NULL, false, NULL}

typedef struct {
    const char *command;   // "train"
    const char *usage;     // "ringgpt train --data FILE [flags]"
    const char *summary;   // one paragraph printed by --help
    // A flag the command had and moved elsewhere: given its name without the dashes ("depth"), where it went, as the
    // error's fix ("put {\"depth\": ...} in a mix file and give --mix FILE"); NULL for a name it never had. May be NULL.
    const char *(*moved)(const char *name);
} ArgCommand;

// Parses argv[1..argc) against specs. Non-flag words go to positional (at most max_positional,
// more is a usage error). `--help`/`-h` prints usage (grouped under the table's headings, wrapped at 100
// columns) and exits 0. Unknown flags (with the nearest flag as a suggestion), missing or non-numeric
// values exit 2 with one line naming the flag and the fix. An integer flag's value may end in K (x 1024) or M
// (x 1024²): --seq-len 1M, --steps 4K. Returns the positional count.
int args_parse(const ArgCommand *cmd, ArgSpec *specs, int n_specs, int argc, char **argv, const char **positional,
               int max_positional);
// True if the flag was given (on the command line or by args_apply_json).
bool args_seen(const ArgSpec *specs, int n_specs, const char *name);
// The spec of a long flag name ("--seq-len"), or NULL.
ArgSpec *args_find(ArgSpec *specs, int n_specs, const char *name);

// Config files: a JSON object whose keys are long flag names without the dashes ({"seq-len": 1024,
// "model": "small", "tie-embeddings": true}). Sets every flag that was not given yet (the command line
// wins) from the file at path and marks it given; names in skip (NULL-terminated, "--flag" form) are
// left alone (and may name keys no flag has: those are passed over). An integer key takes a JSON number or a string
// as the command line writes it ("1M"). An unknown key, a value of the wrong type or out of its flag's range, or a
// file that is not one JSON object is a usage error naming the file and the key (exit 2) — also where the command
// line or skip keeps the flag's own value.
void args_apply_json(const ArgCommand *cmd, ArgSpec *specs, int n_specs, const char *path, const char *const *skip);
// Frees the string values config files gave (they live until then; a process never needs to call it).
void args_free_strings(void);
// What args_apply_json does, on text (len bytes; path names it in messages), without exiting: returns 0, or -1
// with the one-line message in err (size errn). only: NULL for every key, else the flags to take (see below).
int args_json_load(const ArgCommand *cmd, ArgSpec *specs, int n_specs, const char *text, size_t len, const char *path,
                   const char *const *skip, const char *const *only, char *err, size_t errn);
// The same for only the flags named in `only` (NULL-terminated); the file's other keys are passed over (another
// command's config: eval reading the training run's --doc-mask and --loss-on).
void args_apply_json_only(const ArgCommand *cmd, ArgSpec *specs, int n_specs, const char *path, const char *const *only);
// `--config FILE` of a command whose table has the string flag --config: every other flag not given on the
// command line is taken from the file (a missing or unreadable file, or a bad key or value, is a usage error).
// Nothing happens when --config was not given.
void args_apply_config(const ArgCommand *cmd, ArgSpec *specs, int n_specs);
// The resolved flags as such a JSON object (malloc'ed text), every flag but those in skip; a string
// flag without a value is left out.
char *args_to_json(const ArgSpec *specs, int n_specs, const char *const *skip);
// A run's saved flags carry their own checksum: json (an object from args_to_json) with "config_crc32", the CRC-32 of
// the document without it, as the last member (malloc'ed text). A config file with that member is read only
// when it matches (a damaged or edited value is refused); a file without it (written by hand) is read as it is.
#define ARGS_CRC_KEY "config_crc32"
char *args_json_sign(const char *json);

// An integer in lo..hi, optionally ending in K (x 1024) or M (x 1024²): "4096", "4K", "1M", "-1". False for
// anything else (a fraction, a sign without digits, trailing bytes, a value outside lo..hi).
bool args_parse_int(const char *text, int64_t lo, int64_t hi, int64_t *out);

// The most CPU threads a command takes: --threads beyond it is refused (one line, exit 2) before a thread starts.
enum { ARGS_MAX_THREADS = 1024 };
// A usage error unless 1 <= threads <= ARGS_MAX_THREADS.
void args_check_threads(int threads);
// Seeds are whole numbers in 0..2^53, the integers a JSON number (config.json, a checkpoint's state.json) holds
// exactly, so a resumed run continues on the same data order. A usage error naming flag otherwise.
#define ARGS_MAX_SEED 9007199254740992LL
void args_check_seed(const char *flag, int64_t seed);

// A comma-separated list of token counts ("1K,4K,16K", "144,177,1000"; K = 1024, M = 1024²) from flag `flag`
// into out (at most max); each a whole number in 1..INT32_MAX/2. A bad list is a usage error naming the flag.
// Returns the count (at least 1).
int args_parse_lengths(const char *flag, const char *spec, int64_t *out, int max);
