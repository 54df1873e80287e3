// cli/ruler.c — `ringgpt ruler`: RULER's tasks on a checkpoint in its own tokenizer, answers decoded greedily over the ring; the length x task table, the effective length and DIR/results.json. Documents and scores are eval/ruler.c's, the suite's run and results.json eval/ruler_suite.c's.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/model_tokenizer.h"
#include "cli/commands.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/common.h"
#include "data/haystack.h"
#include "eval/infer.h"
#include "eval/ruler.h"
#include "eval/ruler_suite.h"

enum { RULER_MAX_SAMPLES = 4096, RULER_MAX_TOKENS = 4096 };

// --tasks all, or a comma list of preset names; one line and exit 2 for an unknown name.
static void parse_tasks(RulerSuite *s, const char *spec) {
    char list[1024] = "";
    for (int i = 0; ruler_preset_name(i); i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", ruler_preset_name(i));
    if (strcmp(spec, "all") == 0) {
        for (s->n_task = 0; ruler_preset_name(s->n_task); s->n_task++) s->names[s->n_task] = ruler_preset_name(s->n_task);
        return;
    }
    for (const char *p = spec; *p;) {
        size_t len = strcspn(p, ",");
        int found = -1;
        for (int i = 0; ruler_preset_name(i); i++)
            if (strlen(ruler_preset_name(i)) == len && strncmp(ruler_preset_name(i), p, len) == 0) found = i;
        if (found < 0) comm_fail_usage_all("--tasks: unknown task '%.*s'; give all or a comma list of: %s", (int)len, p, list);
        for (int t = 0; t < s->n_task; t++)
            if (strcmp(s->names[t], ruler_preset_name(found)) == 0) comm_fail_usage_all("--tasks: %.*s is listed twice", (int)len, p);
        s->names[s->n_task++] = ruler_preset_name(found);
        p += len + (p[len] == ',');
    }
    if (s->n_task == 0) comm_fail_usage_all("--tasks is empty; give all or a comma list of: %s", list);
}

// The tasks' specs; those RULER runs on essays read --haystack's text (refused without a sentence), or the noise
// without one.
static int resolve_specs(RulerSuite *s, const char *haystack) {
    int swapped = 0;
    for (int t = 0; t < s->n_task; t++) {
        ruler_preset(s->names[t], &s->specs[t]);
        RulerSpec *sp = &s->specs[t];
        if (sp->hay != RULER_HAY_PROSE) continue;
        if (s->prose) sp->prose = s->prose, sp->prose_n = s->prose_n;
        else sp->hay = RULER_HAY_NOISE, swapped++;
        char why[512];
        if (ruler_spec_check(sp, why, sizeof why) != 0) comm_fail_usage_all("--haystack %s: %s; give prose", haystack, why);
    }
    return swapped;
}

// --haystack's text as bytes (data/haystack.h reads a file, a directory or a byte-level dataset); NUL as a space.
static void load_prose(RulerSuite *s, const char *path) {
    Haystack h;
    haystack_load(path, &h);
    s->prose = xmalloc(h.n + 1, "the haystack's text");
    for (uint64_t i = 0; i < h.n; i++) s->prose[i] = h.tok[i] && h.tok[i] < 256 ? (char)h.tok[i] : ' ';
    s->prose[h.n] = 0;
    s->prose_n = h.n;
    haystack_free(&h);
}

// Rows: tasks; columns: lengths; the average row and the effective length under it.
static void print_table(const RulerSuite *s, const NeedleResults *r, double threshold) {
    log_info("ruler: score %% (%d sample%s per cell; rows: task, columns: length in tokens)\n%-16s", s->samples,
             plural(s->samples), "");
    for (int li = 0; li < s->n_len; li++) log_info(" %8" PRId64, s->lengths[li]);
    log_info("\n");
    for (int t = 0; t < s->n_task; t++) {
        log_info("%-16s", s->names[t]);
        for (int li = 0; li < s->n_len; li++) log_info(" %8.1f", 100 * needle_cell_mean(r, li * s->n_task + t, 0));
        log_info("\n");
    }
    log_info("%-16s", "average");
    for (int li = 0; li < s->n_len; li++) log_info(" %8.1f", 100 * needle_length_mean(r, li));
    int64_t eff = needle_effective_length(r, threshold / 100);
    if (eff) log_info("\nruler: effective length %" PRId64 " (the longest length up to which the average stays >= %.1f %%)\n", eff, threshold);
    else log_info("\nruler: effective length none (the average at %" PRId64 " is below %.1f %%)\n", s->lengths[0], threshold);
}

static const ArgCommand RULER_CMD = {
    "ruler", "ringgpt ruler CKPT --lengths 1K,4K --tasks all|LIST --samples N [flags]   (mpiexec -np dp·sp ... --sp S)",
    "RULER's synthetic long-context tasks (Hsieh et al., 2024) in the model's own tokenizer: needles (single, multi-key\n"
    "with near-miss keys, multi-value, multi-query; numbers, words, UUIDs), variable tracking, common- and frequent-word\n"
    "extraction, and nolima, a needle that shares no word with its question (an alias table links them). Each\n"
    "document fills a length (its tokens, the start token and the answer's included) from a seed; the answer is\n"
    "decoded greedily with the KV cache sharded over the ring (until it holds every expected item, the end of the\n"
    "document or --tokens) and scored by string match (recall of the expected items). Prints a task x length table of scores in percent, the average per length and the effective length\n"
    "(the longest length up to which the average stays at or above --threshold); writes DIR/results.json with every\n"
    "sample's answer. The tasks RULER runs on essays read --haystack's text, or the noise sentences without it."};

int cmd_ruler(int argc, char **argv) {
    comm_init(&argc, &argv);
    const char *lengths = "1K,4K", *tasks = "all", *out = "ruler", *haystack = NULL, *label = NULL, *config = NULL, *pos[1] = {NULL};
    RulerSuite s = {.samples = 16};
    int64_t seed = 1;
    double threshold = 100 * RULER_THRESHOLD_DEFAULT;
    int sp = 1, threads = 0;   // threads: infer_open resolves it when not given
    float rope_theta = 0;
    ArgSpec specs[] = {
        ARG_GROUP("the suite"),
        {"--config", ARG_STRING, &config, "flags as a JSON object {\"lengths\": \"1K,4K\", \"samples\": 4, ...}; the command line "
                                          "overrides it"},
        {"--lengths", ARG_STRING, &lengths, "document lengths in tokens, answer included (K = 1024, M = 1024²), comma-separated"},
        {"--tasks", ARG_STRING, &tasks, "all, or a comma list: niah_single_1..3, niah_multikey_1..3, niah_multivalue, "
                                        "niah_multiquery, vt, cwe, fwe, nolima"},
        {"--samples", ARG_INT, &s.samples, "documents per task and length"},
        {"--seed", ARG_I64, &seed, "seed of the documents"},
        {"--haystack", ARG_STRING, &haystack, "prose for the tasks RULER runs on essays: a text file, a directory of them or a "
                                              "byte-level dataset", .dflt = "the noise sentences"},
        {"--tokens", ARG_INT, &s.tokens, "answer tokens decoded per document", .dflt = "RULER's: 128 niah, 30 vt, 120 cwe, 50 fwe, 32 nolima"},
        {"--threshold", ARG_DOUBLE, &threshold, "effective length: the average score (%) a length must keep (RULER: Llama-2-7B at 4K)"},
        {"--rope-theta", ARG_FLOAT, &rope_theta, "RoPE base", .dflt = "the checkpoint's"},
        ARG_GROUP("output"),
        {"--out", ARG_STRING, &out, "directory for results.json"},
        {"--label", ARG_STRING, &label, "name of this run in the JSON", .dflt = "the checkpoint path"},
        ARG_GROUP("machine and ranks"),
        {"--threads", ARG_INT, &threads, "CPU threads (OpenMP and BLAS; ranks on one node share the cores)", .dflt = "free cores"},
        {"--sp", ARG_INT, &sp, "ring size: ranks that share each document and its KV cache (mpiexec -np dp·sp; dp groups split "
                               "the documents)"},
    };
    int n = sizeof specs / sizeof specs[0];
    int n_pos = args_parse(&RULER_CMD, specs, n, argc, argv, pos, 1);
    args_apply_config(&RULER_CMD, specs, n);
    if (n_pos != 1) comm_fail_usage_all("ruler needs a checkpoint: ringgpt ruler CKPT --lengths 1K,4K --tasks all --samples 16");
    if (s.samples < 1 || s.samples > RULER_MAX_SAMPLES) comm_fail_usage_all("--samples %d: give 1..%d", s.samples, RULER_MAX_SAMPLES);
    if (s.tokens < 0 || s.tokens > RULER_MAX_TOKENS) comm_fail_usage_all("--tokens %d: give 1..%d (0: RULER's per task)", s.tokens, RULER_MAX_TOKENS);
    if (!(threshold > 0 && threshold <= 100)) comm_fail_usage_all("--threshold %g: give a score in percent, above 0 and at most 100", threshold);
    if (rope_theta < 0) comm_fail_usage_all("--rope-theta must not be negative");
    args_check_seed("--seed", seed);
    s.seed = (uint64_t)seed;
    s.n_len = args_parse_lengths("--lengths", lengths, s.lengths, RULER_MAX_LENGTHS);
    for (int i = 1; i < s.n_len; i++)
        if (s.lengths[i] <= s.lengths[i - 1]) comm_fail_usage_all("--lengths %s: give them shortest first, each once", lengths);
    parse_tasks(&s, tasks);
    if (haystack) load_prose(&s, haystack);
    int swapped = resolve_specs(&s, haystack);
    needle_check_out(out, out, "directory (results.json is written there)", comm_world());
    InferModel im;
    infer_open(&(InferOptions){"ruler", pos[0], sp, threads, args_seen(specs, n, "--threads"), rope_theta, stdout}, &im);
    if (!tokenizer_can_encode(&im.tok))
        comm_fail_usage_all("%s: its tokenizer '%s' is known by id only (no tokenizer.json, or one ringgpt cannot encode with: the "
                            "note above says), so ruler cannot write documents in it; give a model with a tokenizer ringgpt reads",
                            pos[0], im.tok.id);
    s.start = model_start_token(&im.tok, model_hf_prefill(im.used, &im.state), "auto");   // an imported model: its tokenizer config's
    RulerTokMeasure tm = {tokenizer_encoder(&im.tok), NULL, 0};
    s.tok = &im.tok, s.tm = &tm;
    char why[1024];
    if (ruler_suite_check(&s, why, sizeof why) != 0) comm_fail_usage_all("%s", why);
    log_info("ruler: %s (%.2fM parameters, tokenizer %s), %d task%s x %d length%s x %d sample%s, seed %" PRId64 ", ring of %d, %d thread%s\n",
             pos[0], config_num_params(&im.model.cfg) / 1e6, im.tok.id, s.n_task, plural(s.n_task), s.n_len, plural(s.n_len), s.samples,
             plural(s.samples), seed, sp, im.threads, plural(im.threads));
    if (swapped) log_info("ruler: no --haystack: %d task%s RULER runs on essays read the noise sentences\n", swapped, plural(swapped));
    NeedleResults r = ruler_suite_run(&im.model, &im.grid, &s);
    print_table(&s, &r, threshold);
    RulerRunInfo ri = {pos[0], label ? label : pos[0], haystack, im.tok.id, threshold, "ringgpt"};
    for (int i = 0; i < argc; i++)
        snprintf(ri.command + strlen(ri.command), sizeof ri.command - strlen(ri.command), " %s", argv[i]);
    if (im.grid.rank == 0) ruler_write_json(out, &ri, &s, &r);
    needle_results_free(&r);
    free(tm.ids), free(s.prose);
    tokenizer_encoder_free(&tm.enc);
    infer_close(&im);
    comm_finalize();
    return 0;
}
