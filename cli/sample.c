// cli/sample.c — `ringgpt sample`: its flags, the text on stdout and the timings on stderr; generation is eval/sample.c's.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoints/model_tokenizer.h"
#include "cli/commands.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/common.h"
#include "eval/infer.h"
#include "eval/sample.h"

// Each drawn token as text on stdout (rank 0: ctx is the tokenizer; the other ranks pass no sink).
static void print_token(void *ctx, uint32_t token) { model_write_token(ctx, token, stdout); }

enum { SAMPLE_MAX_TOKENS = 1 << 20 };   // --tokens: what one call draws at most

static const ArgCommand SAMPLE_CMD = {
    "sample", "ringgpt sample CKPT [--prompt TEXT] [--prompt-file FILE|-] [--prompt-ids 1,2,3] [flags]   (mpiexec -np S ... --sp S for the ring)",
    "Generates text from a checkpoint (or an HF Llama directory): the prompt is encoded with the model's\n"
    "tokenizer after the start token (--bos auto: for an imported model what its tokenizer config says, BOS with\n"
    "add_bos_token and else none, as transformers' generate; for ringgpt's own, BOS where its data has one, else\n"
    "EOS), prefilled in one blockwise forward (the ring's with --sp), then --tokens new tokens are drawn with a KV\n"
    "cache sharded over the ring's ranks (temperature 0 = greedy) and decoded with the same tokenizer. --prompt is\n"
    "echoed before the continuation; --prompt-file is not. --prompt-ids prefills the ids as given (no start token\n"
    "unless --bos on|ID): for a model without a usable tokenizer, whose output is then ids (<id>). Timings and\n"
    "memory go to stderr."};

// --prompt-ids "1,2,3": ids below vocab, appended after start (-1: none). Returns the count; *ids is malloc'd.
static size_t parse_prompt_ids(const char *text, int64_t start, int vocab, uint32_t **ids) {
    size_t n = 0, cap = 16;
    *ids = xmalloc(cap * sizeof **ids, "the prompt ids");
    if (start >= 0) (*ids)[n++] = (uint32_t)start;
    for (const char *p = text; *p;) {
        char *end;
        long long id = strtoll(p, &end, 10);
        if (end == p || id < 0 || id >= vocab || (*end && *end != ','))
            fail_usage("--prompt-ids '%s': give token ids below the vocab of %d, separated by commas (1,2,3)", text, vocab);
        if (n == cap) *ids = xrealloc(*ids, (cap *= 2) * sizeof **ids, "the prompt ids");
        (*ids)[n++] = (uint32_t)id;
        p = *end ? end + 1 : end;
    }
    if (!n) fail_usage("--prompt-ids is empty: give at least one token id (1,2,3)");
    return n;
}

int cmd_sample(int argc, char **argv) {
    comm_init(&argc, &argv);
    const char *prompt = "", *prompt_file = NULL, *prompt_ids = NULL, *bos = "auto", *pos[1];
    int tokens = 200, top_k = 40, threads = 0, sp = 1;   // threads: infer_open resolves it when not given
    float temperature = 0.8f, rope_theta = 0;
    int64_t seed = 1337;
    bool stop_eos = true;
    ArgSpec specs[] = {
        ARG_GROUP("prompt"),
        {"--prompt", ARG_STRING, &prompt, "the text to continue"},
        {"--prompt-file", ARG_STRING, &prompt_file, "read the text to continue from a file (- = stdin)"},
        {"--prompt-ids", ARG_STRING, &prompt_ids, "the prompt as token ids, comma-separated (1,2,3), prefilled as given"},
        {"--bos", ARG_STRING, &bos, "the start token: auto (the tokenizer config's), on (BOS), off (none) or a token id"},
        ARG_GROUP("decoding"),
        {"--tokens", ARG_INT, &tokens, "tokens to generate (at most 1M)"},
        {"--temperature", ARG_FLOAT, &temperature, "softmax temperature (0 = greedy)"},
        {"--top-k", ARG_INT, &top_k, "sample among the k most likely tokens (0 = all)"},
        {"--seed", ARG_I64, &seed, "sampling seed"},
        {"--stop-at-eos", ARG_BOOL, &stop_eos, "stop at the end-of-document token"},
        {"--rope-theta", ARG_FLOAT, &rope_theta, "RoPE base", .dflt = "the checkpoint's"},
        ARG_GROUP("machine and ranks"),
        {"--threads", ARG_INT, &threads, "CPU threads (OpenMP and BLAS; ranks on one node share the cores)", .dflt = "free cores"},
        {"--sp", ARG_INT, &sp, "ring size: ranks that share the prompt and the KV cache (mpiexec -np sp)"},
    };
    int n = sizeof specs / sizeof specs[0];
    if (args_parse(&SAMPLE_CMD, specs, n, argc, argv, pos, 1) != 1)
        fail_usage("sample needs a checkpoint: ringgpt sample CKPT [--prompt TEXT]");
    if (tokens < 0 || top_k < 0 || temperature < 0 || rope_theta < 0)
        fail_usage("--tokens, --top-k, --temperature and --rope-theta must not be negative");
    if (tokens > SAMPLE_MAX_TOKENS)   // the key cache holds every one: 2^31 of them would ask for petabytes
        fail_usage("--tokens %d: at most %d (1M) tokens are drawn in one call", tokens, SAMPLE_MAX_TOKENS);
    if ((prompt_file != NULL) + args_seen(specs, n, "--prompt") + (prompt_ids != NULL) > 1)
        fail_usage("give one of --prompt, --prompt-file and --prompt-ids");
    if (prompt_file && strcmp(prompt_file, "-") != 0 && access(prompt_file, R_OK) != 0)
        fail_usage("--prompt-file %s: cannot open; check the path (or - for stdin)", prompt_file);
    args_check_seed("--seed", seed);
    if (sp >= 1 && comm_size(comm_world()) != sp)
        comm_fail_usage_all("sample continues one sequence: start sp = %d rank%s (mpiexec -np %d), not %d", sp, plural(sp), sp,
                            comm_size(comm_world()));
    InferModel im;
    infer_open(&(InferOptions){"sample", pos[0], sp, threads, args_seen(specs, n, "--threads"), rope_theta, stderr}, &im);   // stdout is the text
    bool imported = model_hf_prefill(im.used, &im.state);   // an HF model follows its tokenizer config
    uint32_t *ids;
    size_t n_ids;
    if (prompt_ids) n_ids = parse_prompt_ids(prompt_ids, args_seen(specs, n, "--bos") ? model_start_token(&im.tok, imported, bos) : -1,
                                             im.model.cfg.vocab_size, &ids);
    else {
        size_t plen;
        unsigned char *text = sample_read_prompt(prompt, prompt_file, im.grid.ring, &plen);
        n_ids = model_prompt_ids(&im.tok, model_start_token(&im.tok, imported, bos), text, plen, &ids);
        free(text);
    }
    SampleOptions o = {.tokens = tokens, .temperature = temperature, .top_k = top_k, .seed = (uint64_t)seed, .stop_at_eos = stop_eos};
    bool out = im.grid.rank == 0;
    if (out && !prompt_file) fputs(prompt, stdout);
    SampleResult r;
    sample_generate(&im.model, im.grid.ring, &im.tok, ids, n_ids, &o, out ? print_token : NULL, &im.tok, &r);
    if (out) fputc('\n', stdout);
    fflush(stdout);
    double rss = peak_rss_mb();
    comm_allreduce(im.grid.world, &rss, 1, COMM_F64, COMM_MAX, "peak RSS");
    if (out)
        fprintf(stderr, "sample: prefill %zu token%s over %d rank%s in %.2f s (%.0f tokens/s), %d token%s decoded in %.2f s"
                " (%.1f ms/token), peak RSS per rank %.0f MB\n", r.prompt_tokens, plural((long long)r.prompt_tokens), sp,
                plural(sp), r.prefill_s, r.prompt_tokens / r.prefill_s, r.made, plural(r.made), r.decode_s,
                r.made ? r.decode_s * 1e3 / r.made : 0.0, rss);
    free(ids);
    infer_close(&im);
    comm_finalize();
    return 0;
}
