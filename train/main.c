// train/main.c — the ringgpt binary: dispatches to a subcommand (train, prepare, inspect, ...).
#include <stdio.h>
#include <string.h>

#include "core/common.h"
#include "train/commands.h"

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} Command;

static const Command COMMANDS[] = {
    {"train", cmd_train, "train a model (CPU; `mpirun -np N ringgpt train --sp S` for the ring)"},
    {"prepare", cmd_prepare, "text, token files, llm.c shards or a synthetic task -> compressed, checksummed shards"},
    {"inspect", cmd_inspect, "summary of a dataset or shard; --verify checks every CRC and index"},
    {"eval", cmd_eval, "loss and perplexity of a checkpoint on data; --dump-logits for export checks"},
    {"sample", cmd_sample, "generate text from a checkpoint (KV cache; temperature, top-k, seed)"},
    {"passkey", cmd_passkey, "passkey retrieval by length x depth: greedy exact match, JSON + CSV (ring with --sp)"},
    {"export", cmd_export, "checkpoint -> Hugging Face Llama directory (config.json + model.safetensors)"},
    {"import", cmd_import, "Hugging Face Llama directory (safetensors, sharded or not) -> ringgpt checkpoint"},
    {"tokenizer", cmd_tokenizer, "byte-level BPE: train a tokenizer.json, encode text to ids, decode ids to text"},
};
enum { N_COMMANDS = sizeof COMMANDS / sizeof COMMANDS[0] };

static void usage(FILE *f) {
    fprintf(f, "usage: ringgpt COMMAND [flags]   (ringgpt COMMAND --help for its flags)\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], COMMANDS[i].name) == 0) return COMMANDS[i].run(argc - 1, argv + 1);
    fail_usage("unknown command '%s'; run `ringgpt --help` for the list", argv[1]);
}
