// cli/passkey.c — `ringgpt passkey`: its flags, the table on the console and the result files' names; the grid is eval/passkey.c's.
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/common.h"
#include "eval/infer.h"
#include "eval/passkey.h"

// The table on the console: one row per length, one column per depth, exact match in percent.
static void print_table(const PasskeyGrid *g, const NeedleResults *r) {
    log_info("exact match %% (%d trial%s per cell; rows: length, columns: depth)\n%8s", g->trials, plural(g->trials), "");
    for (int d = 0; d < g->n_depth; d++) log_info(" %5.2f", g->depths[d]);
    log_info("   mean\n");
    int other = 0, first = 0, drifted = 0;
    for (int l = 0; l < g->n_len; l++) {
        int sum = 0;
        log_info("%8" PRId64, g->lengths[l]);
        for (int d = 0; d < g->n_depth; d++) {
            PasskeyScore sc = passkey_cell_score(r, l * g->n_depth + d);
            sum += sc.exact, other += sc.other, first += sc.first, drifted += sc.drifted;
            log_info(" %5.0f", 100.0 * sc.exact / g->trials);
        }
        log_info(" %6.1f\n", 100.0 * sum / (g->trials * g->n_depth));
    }
    int answers = g->trials * g->n_depth * g->n_len;
    if (g->distractors)
        log_info("of %d answer%s: %d a distractor's key (the name picked another needle; %d of them the document's first "
                 "needle's), %d the asked key's first digit and then off it (the copy drifted)\n", answers, plural(answers), other,
                 first, drifted);
}

static const ArgCommand PASSKEY_CMD = {
    "passkey", "ringgpt passkey CKPT --lengths 1K,4K,16K --depths 0:1:0.1 --trials N [flags]   (mpiexec -np dp·sp ... --sp S)",
    "Passkey retrieval by length x depth: for every cell, --trials documents from the synthetic generator (the format\n"
    "`prepare --synthetic passkey` trains on), written as text in the model's own tokenizer (a length counts its\n"
    "tokens and the document's EOS, like --doc-len), are cut before the answer, prefilled through the model (the\n"
    "ring's forward with --sp) and the key decoded greedily with the KV cache sharded over the ring; its first 5\n"
    "characters are compared as text. A cell scores exact match (all 5 digits) and digit accuracy. --haystack hides\n"
    "the key in real text from a dataset instead of the generator's filler. Writes OUT.json and OUT.csv; the heatmap:\n"
    "python3 scripts/plot_passkey.py OUT.json (several JSON files: one panel per stage); --docs adds every trial's\n"
    "document (OUT.docs.jsonl) to read a miss. Training documents of the same task come from\n"
    "`ringgpt prepare --synthetic passkey`."};

// The checks that count the model's tokens: its tokenizer, the lengths, the haystack (every rank, exit 2).
static void resolve_tokens(PasskeyGrid *g, const Tokenizer *tok, const ModelConfig *c, const char *path) {
    char why[4400];
    if (passkey_grid_tokenizer(g, tok, c->vocab_size, path, why, sizeof why) != 0 || passkey_grid_check(g, why, sizeof why) != 0 ||
        (g->haystack && passkey_grid_load_haystack(g, why, sizeof why) != 0))
        comm_fail_usage_all("%s", why);
}

// OUT.json, OUT.csv and with --docs OUT.docs.jsonl (rank 0).
static void write_files(const char *out, bool docs, const char *label, const PasskeyGrid *g, const NeedleResults *r,
                        const InferModel *im) {
    char path[4200];
    snprintf(path, sizeof path, "%s.json", out);
    passkey_write_json(path, g, r, im, label);
    snprintf(path, sizeof path, "%s.csv", out);
    passkey_write_csv(path, g, r);
    if (docs) {
        snprintf(path, sizeof path, "%s.docs.jsonl", out);
        passkey_write_docs(path, g, r);
        log_info("passkey: every trial's document in %s\n", path);
    }
    log_info("passkey: %.1f s; results in %s.json and %s.csv; heatmap: python3 scripts/plot_passkey.py %s.json\n",
             r->total_s, out, out, out);
}

// The flags of `passkey` (defaults in passkey_defaults).
typedef struct {
    const char *lengths, *depths, *out, *label, *config;
    PasskeyGrid g;   // trials, haystack, distractors
    int64_t seed;
    bool docs;
    int sp, threads;   // threads: infer_open resolves it when not given
    float rope_theta;
} PasskeyFlags;

static PasskeyFlags passkey_defaults(void) {
    return (PasskeyFlags){.lengths = "1K", .depths = "0:1:0.25", .out = "passkey", .g = {.trials = 5, .seed = 7}, .seed = 7,
                          .sp = 1};
}

enum { PASSKEY_FLAGS = 16 };
// The flag table over f (returns the count).
static int passkey_specs(PasskeyFlags *f, ArgSpec *specs) {
    ArgSpec table[PASSKEY_FLAGS] = {
        ARG_GROUP("the grid"),
        {"--config", ARG_STRING, &f->config, "flags as a JSON object {\"lengths\": \"1K,4K\", ...}; the command line overrides it"},
        {"--lengths", ARG_STRING, &f->lengths, "document lengths in tokens, EOS included (K = 1024, M = 1024²), comma-separated"},
        {"--depths", ARG_STRING, &f->depths, "key depths in 0..1: start:stop:step (stop included) or a comma list"},
        {"--trials", ARG_INT, &f->g.trials, "documents (keys) per cell"},
        {"--seed", ARG_I64, &f->seed, "seed of the documents (keys); keep it apart from the training data's"},
        {"--haystack", ARG_STRING, &f->g.haystack, "hide the key in real text: a text file, a directory of them or a dataset"},
        {"--distractors", ARG_INT, &f->g.distractors, "other named keys in every document; the question names one (RULER's multi-key needle)"},
        {"--rope-theta", ARG_FLOAT, &f->rope_theta, "override the RoPE base"},
        ARG_GROUP("output"),
        {"--out", ARG_STRING, &f->out, "results: OUT.json and OUT.csv"},
        {"--docs", ARG_BOOL, &f->docs, "also write OUT.docs.jsonl: every trial's prompt, haystack offset, key and answer"},
        {"--label", ARG_STRING, &f->label, "name of this run in the JSON and the heatmap (default: the checkpoint path)"},
        ARG_GROUP("machine and ranks"),
        {"--threads", ARG_INT, &f->threads, "CPU threads (OpenMP and BLAS; ranks on one node share the cores)", .dflt = "free cores"},
        {"--sp", ARG_INT, &f->sp, "ring size: ranks that split each document (mpiexec -np dp·sp; dp groups split the trials)"},
    };
    memcpy(specs, table, sizeof table);
    return PASSKEY_FLAGS;
}

// A --config file's values pass the checks that need no model also where the command line overrides them (the
// lines name the file): the seed, lengths, depths, counts and threads.
static void check_config_file(const PasskeyFlags *given) {
    PasskeyFlags f = *given;
    ArgSpec specs[PASSKEY_FLAGS];
    int n = passkey_specs(&f, specs);
    args_apply_json(&PASSKEY_CMD, specs, n, given->config, (const char *const[]){"--config", NULL});
    char context[4300], why[4400];
    snprintf(context, sizeof context, "--config %s (a value the command line overrides)", given->config);
    fail_usage_context(context);
    args_check_seed("--seed", f.seed);
    if (args_seen(specs, n, "--threads")) args_check_threads(f.threads);
    if (f.sp < 1) fail_usage("--sp must be at least 1 (got %d)", f.sp);
    if (f.g.trials < 1) fail_usage("--trials must be at least 1 (got %d)", f.g.trials);
    if (f.g.distractors < 0) fail_usage("--distractors must not be negative (got %d)", f.g.distractors);
    PasskeyGrid g = f.g;
    args_parse_lengths("--lengths", f.lengths, g.lengths, PASSKEY_MAX_LENGTHS);
    if (passkey_grid_depths(&g, f.depths, why, sizeof why) != 0) fail_usage("%s", why);
    fail_usage_context(NULL);
}

int cmd_passkey(int argc, char **argv) {
    comm_init(&argc, &argv);
    PasskeyFlags f = passkey_defaults();
    ArgSpec specs[PASSKEY_FLAGS];
    const char *pos[1] = {NULL};
    int n = passkey_specs(&f, specs);
    int n_pos = args_parse(&PASSKEY_CMD, specs, n, argc, argv, pos, 1);
    args_apply_config(&PASSKEY_CMD, specs, n);
    if (f.config) check_config_file(&f);
    if (n_pos != 1) comm_fail_usage_all("passkey needs a checkpoint: ringgpt passkey CKPT --lengths 1K,4K --depths 0:1:0.1");
    args_check_seed("--seed", f.seed);
    PasskeyGrid g = f.g;
    g.seed = (uint64_t)f.seed;
    g.n_len = args_parse_lengths("--lengths", f.lengths, g.lengths, PASSKEY_MAX_LENGTHS);
    char dir[4200], why[4400];   // dir: OUT.json's and OUT.csv's
    if (passkey_grid_depths(&g, f.depths, why, sizeof why) != 0) comm_fail_usage_all("%s", why);
    path_dirname(f.out, dir, sizeof dir);
    needle_check_out(dir, f.out, "path (OUT.json and OUT.csv are written there)", comm_world());
    InferModel im;
    infer_open(&(InferOptions){"passkey", pos[0], f.sp, f.threads, args_seen(specs, n, "--threads"), f.rope_theta, stdout}, &im);
    resolve_tokens(&g, &im.tok, &im.model.cfg, pos[0]);
    log_info("passkey: %s (%.2fM parameters, trained at %d tokens, rope theta %g), %d length%s x %d depth%s x %d trial%s, "
             "%dx%d ranks (dp x sp), %d thread%s\n", pos[0], config_num_params(&im.model.cfg) / 1e6, im.state.run.seq_len,
             im.model.cfg.rope_theta, g.n_len, plural(g.n_len), g.n_depth, plural(g.n_depth), g.trials, plural(g.trials), im.grid.dp,
             f.sp, im.threads, plural(im.threads));
    NeedleResults r = passkey_grid_run(&im.model, &g, &im.grid);
    print_table(&g, &r);
    double rss = peak_rss_mb();
    comm_allreduce(im.grid.world, &rss, 1, COMM_F64, COMM_MAX, "peak RSS");
    log_info("passkey: peak RSS per rank %.0f MB (the largest rank's)\n", rss);
    if (im.grid.rank == 0) write_files(f.out, f.docs, f.label ? f.label : pos[0], &g, &r, &im);
    passkey_grid_free(&g);
    needle_results_free(&r);
    infer_close(&im);
    comm_finalize();
    return 0;
}
