// cli/main.c — the ringgpt binary: dispatches to a subcommand (train, prepare, inspect, ...).
#include <stdio.h>
#include <string.h>

#include "core/common.h"
#include "cli/commands.h"
#include "version.h"   // generated at build time: RINGGPT_VERSION, RINGGPT_COMMIT

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} Command;

static const Command COMMANDS[] = {
    {"train", cmd_train, "train a model (CPU or CUDA; `mpirun -np N ringgpt train --sp S` for the ring)"},
    {"prepare", cmd_prepare, "text, token files, llm.c shards or a synthetic task -> compressed, checksummed shards"},
    {"inspect", cmd_inspect, "summary of a dataset or shard; --verify checks every CRC and index"},
    {"eval", cmd_eval, "loss and perplexity of a checkpoint on data; --dump-logits for export checks"},
    {"sample", cmd_sample, "generate text from a checkpoint (KV cache; temperature, top-k, seed)"},
    {"passkey", cmd_passkey, "passkey retrieval by length x depth: greedy exact match, JSON + CSV (ring with --sp)"},
    {"ruler", cmd_ruler, "RULER's long-context tasks by length: scores, the effective length, JSON (ring with --sp)"},
    {"export", cmd_export, "checkpoint -> Hugging Face Llama directory (config.json + model.safetensors)"},
    {"import", cmd_import, "Hugging Face Llama directory (safetensors, sharded or not) -> ringgpt checkpoint"},
    {"tokenizer", cmd_tokenizer, "BPE tokenizers (byte-level, SentencePiece-style): train one, encode text to ids, decode ids to text"},
    {"plan", cmd_plan, "before a run: memory per rank, predicted step time, longest context per device count"},
};
enum { N_COMMANDS = sizeof COMMANDS / sizeof COMMANDS[0] };

// Every switch is a flag; these variables are test hooks only (docs/usage.md, "Environment").
static const char ENVIRONMENT[] =
    "environment (test hooks, not settings; docs/usage.md):\n"
    "  RINGGPT_DEVICE=cpu|cuda|auto    the default of --device where it is not given (ctest sets cpu)\n"
    "  RINGGPT_DEBUG_CKPT_KILL=S:P     (testing) SIGKILL at kill point P of the S-th checkpoint save\n"
    "  RINGGPT_DEBUG_EXIT=R:S[:stall|kill]  (testing) train: rank R leaves the job at step S (or hangs, or SIGKILLs itself)\n"
    "  RINGGPT_DEBUG_SLOW=R:MS         (testing) train: rank R sleeps MS ms in every step's compute\n"
    "  RINGGPT_DEBUG_WEIGHTS=FILE      (testing) train: the final weights, whole, as raw fp32 into FILE (--shard too)\n"
    "  RINGGPT_THREADS_IGNORE_LOAD=1   (testing) the load is not looked at: every core, no note (ctest sets it)\n"
    "  RINGGPT_ATTN_BACKWARD=heads|tiles  (testing) force one of the two CPU attention backward schedules\n"
    "  RINGGPT_CUDNN_BWD_TILE=N           (testing) cut every cuDNN attention backward block into N x N sub-blocks\n"
    "  RINGGPT_BLAS_OWN_PICK              (internal) set by ringgpt when it runs itself again with faster BLAS kernels\n";

static void usage(FILE *f) {
    fprintf(f, "usage: ringgpt COMMAND [flags]   (ringgpt COMMAND --help for its flags)\n"
               "       ringgpt --version\n\ncommands:\n");
    for (int i = 0; i < N_COMMANDS; i++) fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
    fprintf(f, "\n%s", ENVIRONMENT);
}

int main(int argc, char **argv) {
    cpu_exec_setup(argv);
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "--version") == 0) {
        char blas[256];
        cpu_blas_describe(blas, sizeof blas);
        printf("ringgpt %s (commit %s)\nBLAS: %s\n", RINGGPT_VERSION, RINGGPT_COMMIT, blas);
        return 0;
    }
    for (int i = 0; i < N_COMMANDS; i++)
        if (strcmp(argv[1], COMMANDS[i].name) == 0) return COMMANDS[i].run(argc - 1, argv + 1);
    fail_usage("unknown command '%s'; run `ringgpt --help` for the list", argv[1]);
}
