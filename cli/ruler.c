// cli/ruler.c — `ringgpt ruler`: RULER's tasks on a checkpoint in its own tokenizer, answers decoded greedily over the ring; the length x task table, the effective length and DIR/results.json. Documents and scores are eval/ruler.c's.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "checkpoints/load.h"
#include "checkpoints/model_tokenizer.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/common.h"
#include "data/haystack.h"
#include "eval/ruler.h"
#include "eval/ruler_run.h"

enum { RULER_MAX_LENGTHS = 32, RULER_MAX_TASKS = 32, RULER_MAX_SAMPLES = 4096, RULER_MAX_TOKENS = 4096 };

// RULER's answer budget per task (tokens_to_generate).
static int default_tokens(RulerTask t) {
    switch (t) {
    case RULER_NIAH: return 128;
    case RULER_VT: return 30;
    case RULER_CWE: return 120;
    case RULER_FWE: return 50;
    default: return 32;
    }
}

// What the command runs: tasks by name, lengths, samples.
typedef struct {
    int n_task, n_len, samples, tokens;   // tokens: 0 = each task's default
    const char *names[RULER_MAX_TASKS];
    RulerSpec specs[RULER_MAX_TASKS];
    int64_t lengths[RULER_MAX_LENGTHS];
    uint64_t seed;
    int64_t start;                        // the token prefilled before each document (-1: none; model_start_token)
    char *prose;                          // --haystack's text, or NULL (the prose tasks read noise)
    size_t prose_n;
} Suite;

// --tasks all, or a comma list of preset names; one line and exit 2 for an unknown name.
static void parse_tasks(Suite *s, const char *spec) {
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
static int resolve_specs(Suite *s, const char *haystack) {
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
static void load_prose(Suite *s, const char *path) {
    Haystack h;
    haystack_load(path, &h);
    s->prose = xmalloc(h.n + 1, "the haystack's text");
    for (uint64_t i = 0; i < h.n; i++) s->prose[i] = h.tok[i] && h.tok[i] < 256 ? (char)h.tok[i] : ' ';
    s->prose[h.n] = 0;
    s->prose_n = h.n;
    haystack_free(&h);
}

static int task_tokens(const Suite *s, int t) { return s->tokens ? s->tokens : default_tokens(s->specs[t].task); }

// A document's seed: the run's, apart for every task by its name (two presets of one kind must not share their keys,
// and a task gives the same documents whatever other tasks run with it).
static uint64_t task_seed(const Suite *s, int t) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *p = s->names[t]; *p; p++) h = (h ^ (unsigned char)*p) * 0x100000001b3ull;
    return s->seed ^ h;
}

// Every (length, task) makes a document before anything is decoded: a length too short for a task is one line.
static void check_lengths(const Suite *s, RulerTokMeasure *tm) {
    for (int li = 0; li < s->n_len; li++)
        for (int t = 0; t < s->n_task; t++) {
            int64_t target = s->lengths[li] - (s->start >= 0) - task_tokens(s, t);   // the start token and the answer
            RulerDoc d;
            char why[512];
            if (target < 1 || ruler_generate(&s->specs[t], task_seed(s, t), 0, (size_t)target, ruler_measure_tokens, tm, &d, why,
                                             sizeof why) != 0)
                comm_fail_usage_all("--lengths %" PRId64 ", task %s: %s%s (a length holds the prompt, the start token and %d "
                                    "answer tokens)", s->lengths[li], s->names[t], target < 1 ? "no room for a prompt; use a longer length"
                                    : why, s->tokens ? " or fewer --tokens" : "", task_tokens(s, t));
            ruler_doc_free(&d);
        }
}

// The suite's results, the same on every rank after share_results.
typedef struct {
    double *scores;        // (n_len, n_task, samples) each document's ruler_score
    double *prompt;        // (n_len, n_task, samples) ids prefilled
    char **text;           // (n_len, n_task, samples) the answer, a NUL, the expected items joined by newlines, a NUL
    uint64_t *text_n;      // (n_len, n_task, samples) bytes of each text, both NULs included
    double sums[4];        // prefill tokens, prefill seconds, decoded tokens, decode seconds (over all rings)
    double seconds;
} RunOut;

// Document c's results (the reporting rank of its ring only: the others' stay 0 for the sums of share_results).
static void record(RunOut *o, size_t c, const RulerAnswer *a, const RulerDoc *d) {
    o->scores[c] = a->score, o->prompt[c] = (double)a->prompt_tokens;
    size_t n = a->n + 2;
    for (int i = 0; i < d->n_items; i++) n += strlen(d->items[i]) + 1;
    char *t = xmalloc(n, "a sample's text"), *p = t;
    memcpy(p, a->text, a->n + 1), p += a->n + 1;
    for (int i = 0; i < d->n_items; i++) p += sprintf(p, "%s%s", i ? "\n" : "", d->items[i]);
    *p = 0;
    o->text[c] = t, o->text_n[c] = (uint64_t)(p + 1 - t);
    double add[4] = {(double)a->prompt_tokens, a->prefill_s, a->made, a->decode_s};
    for (int i = 0; i < 4; i++) o->sums[i] += add[i];
}

// Every rank gets every document's results: numbers by sums (each document's come from one rank, zeros from the
// rest), texts packed at their offsets in one buffer of 64-bit words summed the same way (bytes of different
// documents never overlap, so the sum is a copy).
static void share_results(RunOut *o, size_t cells, Comm *world) {
    comm_allreduce(world, o->scores, cells, COMM_F64, COMM_SUM, "ruler scores");
    comm_allreduce(world, o->prompt, cells, COMM_F64, COMM_SUM, "ruler prompt tokens");
    comm_allreduce(world, o->sums, 4, COMM_F64, COMM_SUM, "ruler timings");
    comm_allreduce(world, o->text_n, cells, COMM_U64, COMM_SUM, "ruler answer lengths");
    uint64_t total = 0;
    for (size_t c = 0; c < cells; c++) total += o->text_n[c];
    uint64_t *w = xcalloc((size_t)(total + 7) / 8 + 1, sizeof(uint64_t), "the answers");   // (total bytes) packed
    uint64_t at = 0;
    for (size_t c = 0; c < cells; at += o->text_n[c], c++)
        if (o->text[c]) memcpy((char *)w + at, o->text[c], (size_t)o->text_n[c]), free(o->text[c]);
    comm_allreduce(world, w, (size_t)(total + 7) / 8, COMM_U64, COMM_SUM, "ruler answers");
    at = 0;
    for (size_t c = 0; c < cells; at += o->text_n[c], c++) {
        o->text[c] = xmalloc((size_t)o->text_n[c], "a sample's text");
        memcpy(o->text[c], (char *)w + at, (size_t)o->text_n[c]);
    }
    free(w);
}

// Every document of the suite, the dp groups taking them in turn: generated, prefilled over the group's ring, its
// answer decoded greedily and scored; then shared with every rank.
static RunOut run_suite(GPT *m, const Tokenizer *tok, const CommGrid *cg, const Suite *s, RulerTokMeasure *tm) {
    size_t cells = (size_t)s->n_len * s->n_task * s->samples;
    RunOut o = {xcalloc(cells, sizeof(double), "the scores"), xcalloc(cells, sizeof(double), "the prompt lengths"),
                xcalloc(cells, sizeof(char *), "the answers"), xcalloc(cells, sizeof(uint64_t), "the answer lengths")};
    double t_run = now_seconds();
    for (int li = 0; li < s->n_len; li++) {
        double t_len = now_seconds();
        for (int t = 0; t < s->n_task; t++)
            for (int k = 0; k < s->samples; k++) {
                size_t c = ((size_t)li * s->n_task + t) * s->samples + k;
                if ((int)(c % (size_t)cg->dp) != cg->dp_index) continue;
                RulerDoc d;
                char why[512];
                int64_t target = s->lengths[li] - (s->start >= 0) - task_tokens(s, t);
                if (ruler_generate(&s->specs[t], task_seed(s, t), (uint64_t)k, (size_t)target, ruler_measure_tokens, tm, &d, why, sizeof why))
                    fail_data(NULL, "ruler: --lengths %" PRId64 ", task %s, sample %d: %s", s->lengths[li], s->names[t], k, why);
                RulerAnswer a;
                ruler_answer(m, cg->ring, tok, s->start, &d, task_tokens(s, t), &a);
                if (cg->sp_index == 0) record(&o, c, &a, &d);
                ruler_answer_free(&a);
                ruler_doc_free(&d);
            }
        log_info("ruler: length %" PRId64 ": %d task%s x %d sample%s in %.1f s\n", s->lengths[li], s->n_task, plural(s->n_task),
                 s->samples, plural(s->samples), now_seconds() - t_len);
    }
    share_results(&o, cells, cg->world);
    o.seconds = now_seconds() - t_run;
    return o;
}

// Rows: tasks; columns: lengths; the average row and the effective length under it.
static void print_table(const Suite *s, const RulerTable *tb, double threshold) {
    log_info("ruler: score %% (%d sample%s per cell; rows: task, columns: length in tokens)\n%-16s", s->samples,
             plural(s->samples), "");
    for (int li = 0; li < s->n_len; li++) log_info(" %8" PRId64, s->lengths[li]);
    log_info("\n");
    for (int t = 0; t < s->n_task; t++) {
        log_info("%-16s", s->names[t]);
        for (int li = 0; li < s->n_len; li++) log_info(" %8.1f", 100 * ruler_cell_mean(tb, li, t));
        log_info("\n");
    }
    log_info("%-16s", "average");
    for (int li = 0; li < s->n_len; li++) log_info(" %8.1f", 100 * ruler_length_mean(tb, li));
    int64_t eff = ruler_effective_length(tb, threshold / 100);
    if (eff) log_info("\nruler: effective length %" PRId64 " (the longest length up to which the average stays >= %.1f %%)\n", eff, threshold);
    else log_info("\nruler: effective length none (the average at %" PRId64 " is below %.1f %%)\n", s->lengths[0], threshold);
}

// s with every byte that is not part of valid UTF-8 replaced by '?' (results.json is UTF-8).
static void utf8_clean(char *s) {
    for (unsigned char *p = (unsigned char *)s; *p;) {
        int len = *p < 0x80 ? 1 : (*p >> 5) == 6 ? 2 : (*p >> 4) == 14 ? 3 : (*p >> 3) == 30 ? 4 : 0;
        bool ok = len > 0;
        for (int i = 1; i < len && ok; i++) ok = (p[i] & 0xC0) == 0x80;
        if (!ok) *p++ = '?';
        else p += len;
    }
}

static cJSON *cell_json(const Suite *s, const RunOut *o, const RulerTable *tb, int li, int t) {
    cJSON *cell = cJSON_CreateObject(), *samples = cJSON_CreateArray();
    cJSON_AddNumberToObject(cell, "length", (double)s->lengths[li]);
    cJSON_AddStringToObject(cell, "task", s->names[t]);
    cJSON_AddNumberToObject(cell, "score", 100 * ruler_cell_mean(tb, li, t));
    for (int k = 0; k < s->samples; k++) {
        size_t c = ((size_t)li * s->n_task + t) * s->samples + k;
        char *answer = o->text[c], *items = answer + strlen(answer) + 1;
        cJSON *j = cJSON_CreateObject(), *exp = cJSON_CreateArray();
        cJSON_AddNumberToObject(j, "score", 100 * o->scores[c]);
        cJSON_AddNumberToObject(j, "prompt_tokens", o->prompt[c]);
        utf8_clean(answer);
        cJSON_AddStringToObject(j, "answer", answer);
        for (char *p = items; *p;) {
            size_t len = strcspn(p, "\n");
            char item[RULER_ITEM_CHARS];
            snprintf(item, sizeof item, "%.*s", (int)len, p);
            cJSON_AddItemToArray(exp, cJSON_CreateString(item));
            p += len + (p[len] == '\n');
        }
        cJSON_AddItemToObject(j, "expected", exp);
        cJSON_AddItemToArray(samples, j);
    }
    cJSON_AddItemToObject(cell, "samples", samples);
    return cell;
}

typedef struct {
    const char *ckpt, *label, *haystack, *tokenizer;
    double threshold;
    char command[4096];   // the command line, words joined by spaces
} RunInfo;

// How and when the table was made: the command line and the date (UTC).
static void add_provenance(cJSON *root, const RunInfo *ri) {
    char date[64] = "";
    time_t now = time(NULL);
    struct tm utc;
    if (gmtime_r(&now, &utc)) strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &utc);
    cJSON_AddStringToObject(root, "command", ri->command);
    cJSON_AddStringToObject(root, "date", date);
}

// DIR/results.json (rank 0).
static void write_json(const char *dir, const RunInfo *ri, const Suite *s, const RunOut *o, const RulerTable *tb) {
    cJSON *root = cJSON_CreateObject(), *lengths = cJSON_CreateArray(), *tasks = cJSON_CreateArray(), *tokens = cJSON_CreateObject(),
          *scores = cJSON_CreateObject(), *avg = cJSON_CreateArray(), *cells = cJSON_CreateArray();
    add_provenance(root, ri);
    cJSON_AddStringToObject(root, "ckpt", ri->ckpt);
    cJSON_AddStringToObject(root, "label", ri->label);
    cJSON_AddStringToObject(root, "tokenizer", ri->tokenizer);
    if (ri->haystack) cJSON_AddStringToObject(root, "haystack", ri->haystack);
    else cJSON_AddNullToObject(root, "haystack");
    cJSON_AddNumberToObject(root, "seed", (double)s->seed);
    cJSON_AddNumberToObject(root, "samples", s->samples);
    cJSON_AddNumberToObject(root, "threshold", ri->threshold);
    for (int li = 0; li < s->n_len; li++) {
        cJSON_AddItemToArray(lengths, cJSON_CreateNumber((double)s->lengths[li]));
        cJSON_AddItemToArray(avg, cJSON_CreateNumber(100 * ruler_length_mean(tb, li)));
    }
    for (int t = 0; t < s->n_task; t++) {
        cJSON *row = cJSON_CreateArray();
        cJSON_AddItemToArray(tasks, cJSON_CreateString(s->names[t]));
        cJSON_AddNumberToObject(tokens, s->names[t], task_tokens(s, t));
        for (int li = 0; li < s->n_len; li++) cJSON_AddItemToArray(row, cJSON_CreateNumber(100 * ruler_cell_mean(tb, li, t)));
        cJSON_AddItemToObject(scores, s->names[t], row);
    }
    cJSON_AddItemToObject(root, "lengths", lengths);
    cJSON_AddItemToObject(root, "tasks", tasks);
    cJSON_AddItemToObject(root, "answer_tokens", tokens);
    cJSON_AddItemToObject(root, "scores", scores);
    cJSON_AddItemToObject(root, "average", avg);
    cJSON_AddNumberToObject(root, "effective_length", (double)ruler_effective_length(tb, ri->threshold / 100));
    cJSON_AddNumberToObject(root, "seconds", o->seconds);
    double prefill = o->sums[1] > 0 ? o->sums[0] / o->sums[1] : 0, decode = o->sums[3] > 0 ? o->sums[2] / o->sums[3] : 0;
    cJSON_AddNumberToObject(root, "prefill_tokens_per_s", prefill);   // per ring: tokens over the rings' summed seconds
    cJSON_AddNumberToObject(root, "decode_tokens_per_s", decode);
    for (int li = 0; li < s->n_len; li++)
        for (int t = 0; t < s->n_task; t++) cJSON_AddItemToArray(cells, cell_json(s, o, tb, li, t));
    cJSON_AddItemToObject(root, "cells", cells);
    char *text = cJSON_Print(root), path[4200];
    if (!text) fail("ruler: out of memory printing results.json");
    snprintf(path, sizeof path, "%s/results.json", dir);
    FILE *f = xfopen(path, "wb");
    xfwrite(text, strlen(text), f, path);
    xfwrite("\n", 1, f, path);
    xfclose(f, path);
    free(text);
    cJSON_Delete(root);
    log_info("ruler: %.1f s (per ring: prefill %.0f tokens/s, decode %.1f tokens/s); results in %s\n", o->seconds, prefill, decode,
             path);
}

// DIR exists (made by rank 0) and takes files, or every rank ends with one line.
static void check_out(const char *dir, Comm *world) {
    char why[4400] = "";
    if (comm_rank(world) == 0) {
        struct stat st;
        if (stat(dir, &st) != 0 && mkdir_parents(dir) != 0) snprintf(why, sizeof why, "cannot create it (%s)", strerror(errno));
        else if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) snprintf(why, sizeof why, "not a directory");
        else if (access(dir, W_OK) != 0) snprintf(why, sizeof why, "cannot write into it (%s)", strerror(errno));
    }
    double bad = why[0] != 0;
    comm_allreduce(world, &bad, 1, COMM_F64, COMM_MAX, "ruler --out check");
    if (bad) comm_fail_usage_all("--out %s: %s; give a writable directory (results.json is written there)", dir, why);
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
    const char *lengths = "1K,4K", *tasks = "all", *out = "ruler", *haystack = NULL, *label = NULL, *pos[1] = {NULL};
    Suite s = {.samples = 16};
    int64_t seed = 1;
    double threshold = 100 * RULER_THRESHOLD_DEFAULT;
    int sp = 1, threads = 0;   // threads: cli_infer_grid resolves it when not given
    float rope_theta = 0;
    ArgSpec specs[] = {
        ARG_GROUP("the suite"),
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
    if (args_parse(&RULER_CMD, specs, n, argc, argv, pos, 1) != 1)
        comm_fail_usage_all("ruler needs a checkpoint: ringgpt ruler CKPT --lengths 1K,4K --tasks all --samples 16");
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
    CommGrid g = cli_infer_grid(sp, args_seen(specs, n, "--threads"), &threads);
    if (haystack) load_prose(&s, haystack);
    int swapped = resolve_specs(&s, haystack);
    check_out(out, g.world);
    GPT m;
    CkptState st;
    char used[4200];
    load_model(pos[0], &m, rope_theta, &st, used, sizeof used);
    load_report("ruler", pos[0], used, &st, stdout);
    Tokenizer tok;
    model_tokenizer(used, &m.cfg, &st, &tok);
    if (!tokenizer_can_encode(&tok))
        comm_fail_usage_all("%s: its tokenizer '%s' is known by id only (no tokenizer.json, or one ringgpt cannot encode with: the "
                            "note above says), so ruler cannot write documents in it; give a model with a tokenizer ringgpt reads",
                            pos[0], tok.id);
    s.start = model_start_token(&tok, model_hf_prefill(used, &st), "auto");   // an imported model: its tokenizer config's
    RulerTokMeasure tm = {tokenizer_encoder(&tok), NULL, 0};
    check_lengths(&s, &tm);
    log_info("ruler: %s (%.2fM parameters, tokenizer %s), %d task%s x %d length%s x %d sample%s, seed %" PRId64 ", ring of %d, %d thread%s\n",
             pos[0], config_num_params(&m.cfg) / 1e6, tok.id, s.n_task, plural(s.n_task), s.n_len, plural(s.n_len), s.samples,
             plural(s.samples), seed, sp, threads, plural(threads));
    if (swapped) log_info("ruler: no --haystack: %d task%s RULER runs on essays read the noise sentences\n", swapped, plural(swapped));
    RunOut o = run_suite(&m, &tok, &g, &s, &tm);
    RulerTable tb = {.n_len = s.n_len, .n_task = s.n_task, .samples = s.samples, .lengths = s.lengths, .scores = o.scores};
    print_table(&s, &tb, threshold);
    RunInfo ri = {pos[0], label ? label : pos[0], haystack, tok.id, threshold, "ringgpt"};
    for (int i = 0; i < argc; i++)
        snprintf(ri.command + strlen(ri.command), sizeof ri.command - strlen(ri.command), " %s", argv[i]);
    if (g.rank == 0) write_json(out, &ri, &s, &o, &tb);
    for (size_t c = 0; c < (size_t)s.n_len * s.n_task * s.samples; c++) free(o.text[c]);
    free(o.scores), free(o.prompt), free(o.text), free(o.text_n), free(tm.ids), free(s.prose);
    tokenizer_encoder_free(&tm.enc);
    tokenizer_free(&tok);
    gpt_free(&m);
    comm_grid_free(&g);
    comm_finalize();
    return 0;
}
