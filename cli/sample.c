// cli/sample.c — `ringgpt sample`: generate text from a checkpoint (prefill, then a KV cache sharded over the ring).
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoints/load.h"
#include "checkpoints/model_tokenizer.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "data/tokenizer.h"
#include "model/decode.h"

static int pick_token(const float *logits, int V, float temperature, int top_k, Rng *rng) {
    int best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    if (temperature <= 0) return best;
    double *p = xmalloc((size_t)V * sizeof(double), "probabilities");
    float kth = -INFINITY;   // the top_k-th largest logit: everything below is dropped
    if (top_k > 0 && top_k < V) {
        float *sorted = xmalloc((size_t)V * sizeof(float), "sorted logits");
        memcpy(sorted, logits, (size_t)V * sizeof(float));
        for (int k = 0; k < top_k; k++)   // partial selection: top_k passes
            for (int i = k + 1; i < V; i++)
                if (sorted[i] > sorted[k]) { float t = sorted[k]; sorted[k] = sorted[i]; sorted[i] = t; }
        kth = sorted[top_k - 1];
        free(sorted);
    }
    double sum = 0;
    for (int i = 0; i < V; i++) sum += p[i] = logits[i] >= kth ? exp((logits[i] - logits[best]) / temperature) : 0;
    double u = rng_uniform(rng) * sum;
    int pick = best;
    for (int i = 0; i < V; i++) {
        if (p[i] > 0 && (u -= p[i]) <= 0) { pick = i; break; }
    }
    free(p);
    return pick;
}

// The prompt's bytes: --prompt TEXT, or --prompt-file FILE (`-` = stdin), read by rank 0 (mpiexec gives
// stdin to rank 0 only) and shared with the other ranks of the ring.
static unsigned char *read_prompt(const char *text, const char *file, Comm *ring, size_t *len) {
    unsigned char *p = NULL;
    uint64_t n = 0;
    if (comm_rank(ring) == 0) {
        if (!file) p = (unsigned char *)xstrdup(text), n = strlen(text);
        else if (strcmp(file, "-") != 0) {
            size_t got;
            p = read_whole_file(file, &got);
            n = got;
        } else {
            size_t cap = 1 << 16, got;
            p = xmalloc(cap, "the prompt");
            while ((got = fread(p + n, 1, cap - n, stdin)) > 0)
                if ((n += got) == cap) p = xrealloc(p, cap *= 2, "the prompt");
            if (ferror(stdin)) fail("--prompt-file -: reading stdin failed");
        }
    }
    comm_allreduce(ring, &n, 1, COMM_U64, COMM_MAX, "prompt length");
    size_t words = (n + 7) / 8;
    uint64_t *w = xcalloc(words + 1, sizeof(uint64_t), "the prompt");   // packed bytes: a sum with zeros is a copy
    if (comm_rank(ring) == 0) memcpy(w, p, n);
    comm_allreduce(ring, w, words, COMM_U64, COMM_SUM, "prompt bytes");
    free(p);
    *len = n;
    return (unsigned char *)w;
}

static const ArgCommand SAMPLE_CMD = {
    "sample", "ringgpt sample CKPT [--prompt TEXT] [--prompt-file FILE|-] [flags]   (mpiexec -np S ... --sp S for the ring)",
    "Generates text from a checkpoint (or an HF Llama directory): the prompt is encoded with the model's\n"
    "tokenizer after the document-start token (BOS where its data has one, else EOS), prefilled in one\n"
    "blockwise forward (the ring's with --sp), then --tokens new tokens are drawn with a KV cache sharded over\n"
    "the ring's ranks (temperature 0 = greedy) and decoded with the same tokenizer. --prompt is echoed before\n"
    "the continuation; --prompt-file is not. Timings and memory go to stderr."};

int cmd_sample(int argc, char **argv) {
    comm_init(&argc, &argv);
    const char *prompt = "", *prompt_file = NULL, *pos[1];
    int tokens = 200, top_k = 40, threads = 0, sp = 1;   // threads: cli_infer_grid resolves it when not given
    float temperature = 0.8f, rope_theta = 0;
    int64_t seed = 1337;
    bool stop_eos = true;
    ArgSpec specs[] = {
        {"--prompt", ARG_STRING, &prompt, "the text to continue"},
        {"--prompt-file", ARG_STRING, &prompt_file, "read the text to continue from a file (- = stdin)"},
        {"--tokens", ARG_INT, &tokens, "tokens to generate"},
        {"--temperature", ARG_FLOAT, &temperature, "softmax temperature (0 = greedy)"},
        {"--top-k", ARG_INT, &top_k, "sample among the k most likely tokens (0 = all)"},
        {"--seed", ARG_I64, &seed, "sampling seed"},
        {"--rope-theta", ARG_FLOAT, &rope_theta, "RoPE base", .dflt = "the checkpoint's"},
        {"--stop-at-eos", ARG_BOOL, &stop_eos, "stop at the end-of-document token"},
        {"--threads", ARG_INT, &threads, "CPU threads (OpenMP and BLAS; ranks on one node share the cores)", .dflt = "all cores"},
        {"--sp", ARG_INT, &sp, "ring size: ranks that share the prompt and the KV cache (mpiexec -np sp)"},
    };
    int n = sizeof specs / sizeof specs[0];
    if (args_parse(&SAMPLE_CMD, specs, n, argc, argv, pos, 1) != 1)
        fail_usage("sample needs a checkpoint: ringgpt sample CKPT [--prompt TEXT]");
    if (tokens < 0 || top_k < 0 || temperature < 0 || rope_theta < 0)
        fail_usage("--tokens, --top-k, --temperature and --rope-theta must not be negative");
    if (prompt_file && args_seen(specs, n, "--prompt")) fail_usage("give --prompt or --prompt-file, not both");
    if (prompt_file && strcmp(prompt_file, "-") != 0 && access(prompt_file, R_OK) != 0)
        fail_usage("--prompt-file %s: cannot open; check the path (or - for stdin)", prompt_file);
    CommGrid g = cli_infer_grid(sp, !args_seen(specs, n, "--threads"), &threads);
    if (g.dp != 1) comm_fail_usage_all("sample continues one sequence: start sp = %d ranks (mpiexec -np %d), not %d", sp, sp, g.world_size);
    cpu_threads(threads);
    GPT m;
    CkptState state;
    char used[4200];
    load_model(pos[0], &m, rope_theta, &state, used, sizeof used);
    load_report("sample", pos[0], used, &state, stderr);   // stdout is the text
    Tokenizer tok;
    model_tokenizer(used, &m.cfg, &state, &tok);
    size_t plen;
    unsigned char *text = read_prompt(prompt, prompt_file, g.ring, &plen);
    uint32_t *ids;
    size_t n_ids = model_prompt_ids(&tok, text, plen, &ids);
    Decoder s;
    decoder_init(&s, &m, g.ring, tokens);
    Rng rng;
    rng_seed(&rng, (uint64_t)seed);
    bool out = g.rank == 0;
    if (out && !prompt_file) fputs(prompt, stdout);
    double t0 = now_seconds();
    const float *logits = decode_prefill(&s, (const int32_t *)ids, (int)n_ids);   // ids < vocab < 2^31
    double t1 = now_seconds();
    int made = 0;
    for (int i = 0; i < tokens; i++, made++) {
        int t = decode_agree(&s, pick_token(logits, m.cfg.vocab_size, temperature, top_k, &rng));
        if (t == tok.eos && stop_eos) break;
        if (out) model_write_token(&tok, (uint32_t)t, stdout);
        if (i + 1 < tokens) logits = decode_step(&s, t);
    }
    if (out) fputc('\n', stdout);
    fflush(stdout);
    double t2 = now_seconds(), rss = peak_rss_mb();
    comm_allreduce(g.world, &rss, 1, COMM_F64, COMM_MAX, "peak RSS");
    if (out)
        fprintf(stderr, "sample: prefill %zu tokens over %d rank%s in %.2f s (%.0f tokens/s), %d tokens decoded in %.2f s"
                " (%.1f ms/token), peak RSS per rank %.0f MB\n", n_ids, sp, sp == 1 ? "" : "s", t1 - t0, n_ids / (t1 - t0), made,
                t2 - t1, made ? (t2 - t1) * 1e3 / made : 0.0, rss);
    free(ids);
    free(text);
    tokenizer_free(&tok);
    decoder_free(&s);
    gpt_free(&m);
    comm_grid_free(&g);
    comm_finalize();
    return 0;
}
