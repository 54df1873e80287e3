// tests/core/fuzz_config.c — libFuzzer target: any --config / OUT/config.json text sets flags or is refused with one message, never a crash.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"

// One flag of every kind, with the names train uses, so the fuzzer meets every conversion and range check.
typedef struct {
    int steps;
    int64_t seed;
    float lr;
    double frac;
    const char *out;
    bool tie;
} Flags;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    Flags f = {.steps = 100, .seed = 1, .lr = 1e-3f, .frac = 0.1};
    ArgSpec specs[] = {
        {"--steps", ARG_INT, &f.steps, "steps"},         {"--seed", ARG_I64, &f.seed, "seed"},
        {"--lr", ARG_FLOAT, &f.lr, "lr"},                {"--val-fraction", ARG_DOUBLE, &f.frac, "fraction"},
        {"--out", ARG_STRING, &f.out, "out"},            {"--tie-embeddings", ARG_BOOL, &f.tie, "tie"},
    };
    const ArgCommand cmd = {"train", "ringgpt train", "fuzz"};
    const char *const skip[] = {"--seed", NULL}, *const only[] = {"--lr", "--out", NULL};
    char err[1024];
    int n = sizeof specs / sizeof specs[0];
    // The first byte picks the reader: every key (as --config and --resume), or some keys only (as eval).
    bool some = size > 0 && (data[0] & 1);
    int rc = args_json_load(&cmd, specs, n, (const char *)data + (size > 0), size - (size > 0), "fuzz.json", some ? NULL : skip,
                            some ? only : NULL, err, sizeof err);
    if (rc != 0 && (!err[0] || strlen(err) >= sizeof err - 1)) abort();   // a refusal always says why, in one line
    if (rc != 0 && strchr(err, '\n')) abort();
    args_free_strings();   // f.out, when a file set it
    return 0;
}
