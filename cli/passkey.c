// cli/passkey.c — `ringgpt passkey`: greedy exact match of a hidden key for every (length, depth) cell, prefill + decode over the ring.
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoints/load.h"
#include "cli/cli.h"
#include "core/args.h"
#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "data/haystack.h"
#include "data/source.h"
#include "data/synthetic.h"
#include "data/tokenizer.h"
#include "model/decode.h"
#include "cli/commands.h"

enum { MAX_LENGTHS = 64, MAX_DEPTHS = 1001 };

typedef struct {
    int n_len, n_depth, trials;
    int64_t lengths[MAX_LENGTHS];   // document tokens, its EOS included (= the training --doc-len / --seq-len)
    double depths[MAX_DEPTHS];      // where the key sits in the filler: 0 = start, 1 = end
    uint64_t seed;
    const char *haystack;           // NULL: the generator's filler sentences
    Haystack hay;                   // its text
    int distractors;                // other named keys in every document
} Grid;

static void parse_lengths(Grid *g, const char *spec) { g->n_len = args_parse_lengths("--lengths", spec, g->lengths, MAX_LENGTHS); }

static void check_lengths(const Grid *g) {
    for (int i = 0; i < g->n_len; i++)
        if ((uint64_t)g->lengths[i] < passkey_min_len(g->distractors) + 2)
            comm_fail_usage_all("--lengths: %" PRId64 " tokens is too short for a passkey document%s (at least %" PRIu64
                                " with its EOS); use longer lengths%s", g->lengths[i], g->distractors ? " with its distractors" : "",
                                passkey_min_len(g->distractors) + 2, g->distractors ? " or fewer --distractors" : "");
}

// "0:1:0.1" (start:stop:step, stop included) or "0,0.5,1".
static void parse_depths(Grid *g, const char *spec) {
    double a, b, step;
    int used = 0;
    g->n_depth = 0;
    if (sscanf(spec, "%lf:%lf:%lf%n", &a, &b, &step, &used) == 3 && spec[used] == 0) {
        if (!(step > 0) || !(b >= a)) comm_fail_usage_all("--depths %s: need start <= stop and step > 0, e.g. 0:1:0.1", spec);
        double n = floor((b - a) / step + 1e-9) + 1;
        if (n > MAX_DEPTHS) comm_fail_usage_all("--depths %s: %.0f depths, at most %d; use a larger step", spec, n, MAX_DEPTHS);
        for (int i = 0; i < (int)n; i++) g->depths[g->n_depth++] = a + i * step;
    } else {
        const char *p = spec;
        while (*p) {
            char *end;
            double v = strtod(p, &end);
            if (end == p || (*end != ',' && *end))
                comm_fail_usage_all("--depths %s: write start:stop:step (0:1:0.1) or a list (0,0.5,1)", spec);
            if (g->n_depth == MAX_DEPTHS) comm_fail_usage_all("--depths: at most %d depths", MAX_DEPTHS);
            g->depths[g->n_depth++] = v;
            p = *end ? end + 1 : end;
        }
    }
    if (g->n_depth == 0) comm_fail_usage_all("--depths is empty; write e.g. --depths 0:1:0.1");
    for (int i = 0; i < g->n_depth; i++) {
        if (fabs(g->depths[i] - 1) < 1e-9) g->depths[i] = 1;   // 0:1:0.1 lands on 1 up to rounding
        if (!(g->depths[i] >= 0 && g->depths[i] <= 1))
            comm_fail_usage_all("--depths %s: depth %g is outside 0..1 (0 = the key right after the intro, 1 = just before the"
                                " question)", spec, g->depths[i]);
    }
}

// The haystack window of a trial: len tokens of the text starting where (seed, len, trial) says, wrapping
// around at its end; the same window for the same trial whatever the ranks. Returns where it starts.
static uint64_t hay_window(const Haystack *h, uint64_t seed, uint64_t len, int trial, uint32_t *out) {
    Rng r;
    rng_seed(&r, seed * 0xA0761D6478BD642Full ^ (len * 0xE7037ED1A0B428DBull + (uint64_t)trial));
    uint64_t at = rng_below(&r, h->n);
    for (uint64_t i = 0; i < len; i++) out[i] = h->tok[(at + i) % h->n];
    return at;
}

// --haystack: its text, at least as long as the longest document (a window must not repeat itself).
static void load_haystack(Grid *g) {
    haystack_load(g->haystack, &g->hay);
    for (int i = 0; i < g->n_len; i++)
        if (g->hay.n < (uint64_t)g->lengths[i])
            comm_fail_usage_all("--haystack %s holds %" PRIu64 " bytes of text, fewer than a document of --lengths %" PRId64 "; give "
                                "more text or shorter --lengths", g->haystack, g->hay.n, g->lengths[i]);
}

static int argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

// The document of one trial, the same on every rank: doc gets its len - 1 tokens (the training document's
// before its EOS), hay (len) its haystack window with --haystack. Returns where that window starts in the text.
static uint64_t trial_doc(const Grid *g, int64_t len, double depth, int trial, uint32_t *hay, uint32_t *doc, PasskeyInfo *info) {
    uint64_t content = (uint64_t)len - 1, at = 0;
    if (g->haystack) at = hay_window(&g->hay, g->seed, content, trial, hay);
    synth_passkey(g->seed, (uint64_t)trial, content, depth, g->distractors, g->haystack ? hay : NULL, doc, info);
    return at;
}

// One trial: the prompt up to the answer, prefilled; then the key's digits decoded greedily. answer
// gets PASSKEY_KEY_DIGITS tokens; returns the document's keys (the asked one and the distractors').
static PasskeyInfo run_trial(Decoder *s, const Grid *g, int64_t len, double depth, int trial, uint32_t *hay, uint32_t *doc,
                             int32_t *prompt, int32_t *answer) {
    PasskeyInfo info;
    trial_doc(g, len, depth, trial, hay, doc, &info);
    for (uint64_t i = 0; i < info.answer_pos; i++) prompt[i] = (int32_t)doc[i];
    int V = s->m->cfg.vocab_size;
    const float *logits = decode_prefill(s, prompt, (int)info.answer_pos);
    for (int d = 0; d < PASSKEY_KEY_DIGITS; d++) {
        answer[d] = decode_agree(s, argmax(logits, V));
        if (d + 1 < PASSKEY_KEY_DIGITS) logits = decode_step(s, answer[d]);
    }
    return info;
}

typedef struct {
    int64_t *answers;   // (cells, trials, digits) decoded tokens
    int64_t *keys;      // (cells, trials) the true keys
    int64_t *others;    // (cells, trials, distractors) the distractors' keys
    int64_t *firsts;    // (cells, trials) the key of each document's first needle
    double *seconds;    // (cells) prefill + decode time, summed over trials
} Results;

// Every (length, depth, trial) job; the dp groups take them in turn, each over its ring.
static Results run_grid(GPT *m, const Grid *g, const CommGrid *cg) {
    int cells = g->n_len * g->n_depth, D = PASSKEY_KEY_DIGITS;
    size_t jobs = (size_t)cells * g->trials;
    size_t K = (size_t)g->distractors;
    Results r = {xcalloc(jobs * D, sizeof(int64_t), "passkey answers"), xcalloc(jobs, sizeof(int64_t), "passkey keys"),
                 xcalloc(jobs * K + 1, sizeof(int64_t), "distractor keys"), xcalloc(jobs, sizeof(int64_t), "first needles' keys"),
                 xcalloc((size_t)cells, sizeof(double), "timings")};
    Decoder s;
    decoder_init(&s, m, cg->ring, D);
    bool reporter = cg->sp_index == 0;   // one rank per ring writes a job's numbers; the sums below share them
    size_t job = 0;
    for (int li = 0; li < g->n_len; li++) {
        int64_t len = g->lengths[li];
        uint32_t *hay = g->haystack ? xmalloc((size_t)len * sizeof(uint32_t), "a haystack window") : NULL;
        uint32_t *doc = xmalloc((size_t)len * sizeof(uint32_t), "a passkey document");
        int32_t *prompt = xmalloc((size_t)len * sizeof(int32_t), "a passkey prompt");
        double t_len = now_seconds();
        for (int di = 0; di < g->n_depth; di++) {
            int c = li * g->n_depth + di;
            for (int t = 0; t < g->trials; t++, job++) {
                if ((int)(job % cg->dp) != cg->dp_index) continue;
                double t0 = now_seconds();
                int32_t ans[PASSKEY_KEY_DIGITS];
                PasskeyInfo info = run_trial(&s, g, len, g->depths[di], t, hay, doc, prompt, ans);
                if (!reporter) continue;
                r.keys[job] = info.key;
                for (size_t k = 0; k < K; k++) r.others[job * K + k] = info.others[k];
                r.firsts[job] = info.first_key;
                for (int d = 0; d < D; d++) r.answers[job * D + d] = ans[d];
                r.seconds[c] += now_seconds() - t0;
            }
        }
        log_info("passkey: length %" PRId64 ": %d depths x %d trials in %.1f s\n", len, g->n_depth, g->trials, now_seconds() - t_len);
        free(hay);
        free(doc);
        free(prompt);
    }
    decoder_free(&s);
    comm_allreduce(cg->world, r.answers, jobs * D, COMM_I64, COMM_SUM, "passkey answers");
    comm_allreduce(cg->world, r.keys, jobs, COMM_I64, COMM_SUM, "passkey keys");
    if (K) comm_allreduce(cg->world, r.others, jobs * K, COMM_I64, COMM_SUM, "distractor keys");
    if (K) comm_allreduce(cg->world, r.firsts, jobs, COMM_I64, COMM_SUM, "first needles' keys");
    comm_allreduce(cg->world, r.seconds, (size_t)cells, COMM_F64, COMM_SUM, "passkey timings");
    return r;
}

// The decoded answer as text ("12345"; a token that is not a printable byte shows as '?').
static void answer_text(const Results *r, size_t job, char *out) {
    for (int d = 0; d < PASSKEY_KEY_DIGITS; d++) {
        int64_t t = r->answers[job * PASSKEY_KEY_DIGITS + d];
        out[d] = t >= 32 && t < 127 ? (char)t : '?';
    }
    out[PASSKEY_KEY_DIGITS] = 0;
}

// One cell's trials: exact matches, right digits, answers that are a distractor's key (first: of them, the key
// of the document's first needle), answers that begin on the asked key and leave it (passkey_answer_kind).
typedef struct {
    int exact, digits, other, first, drifted;
} CellScore;

static CellScore cell_score(const Grid *g, const Results *r, int c) {
    CellScore sc = {0, 0, 0, 0, 0};
    for (int t = 0; t < g->trials; t++) {
        size_t job = (size_t)c * g->trials + t;
        char key[8], first[8], ans[PASSKEY_KEY_DIGITS + 1];
        snprintf(key, sizeof key, "%05d", (int)r->keys[job]);
        snprintf(first, sizeof first, "%05d", (int)r->firsts[job]);
        answer_text(r, job, ans);
        for (int d = 0; d < PASSKEY_KEY_DIGITS; d++) sc.digits += ans[d] == key[d];
        uint32_t others[PASSKEY_MAX_DISTRACTORS];   // (distractors)
        for (int k = 0; k < g->distractors; k++) others[k] = (uint32_t)r->others[job * (size_t)g->distractors + k];
        PasskeyAnswer kind = passkey_answer_kind(ans, (uint32_t)r->keys[job], others, g->distractors);
        sc.exact += kind == PASSKEY_ANSWER_EXACT;
        sc.other += kind == PASSKEY_ANSWER_OTHER_KEY;
        sc.first += kind == PASSKEY_ANSWER_OTHER_KEY && memcmp(ans, first, PASSKEY_KEY_DIGITS) == 0;
        sc.drifted += kind == PASSKEY_ANSWER_DRIFTED;
    }
    return sc;
}

typedef struct {
    const char *ckpt, *label, *out;
    const ModelConfig *model;
    int64_t trained_len;
    int sp, dp;
    double seconds;
} RunInfo;

// A cell's "other_keys": per trial, the distractors' keys; "first_keys": per trial, the key of the first needle.
static void add_other_keys(cJSON *cell, const Grid *g, const Results *r, int c) {
    cJSON *firsts = cJSON_AddArrayToObject(cell, "first_keys");
    for (int t = 0; t < g->trials; t++) {
        char key[8];
        snprintf(key, sizeof key, "%05d", (int)r->firsts[(size_t)c * g->trials + t]);
        cJSON_AddItemToArray(firsts, cJSON_CreateString(key));
    }
    cJSON *all = cJSON_AddArrayToObject(cell, "other_keys");
    for (int t = 0; t < g->trials; t++) {
        cJSON *these = cJSON_CreateArray();
        for (int k = 0; k < g->distractors; k++) {
            char key[8];
            snprintf(key, sizeof key, "%05d", (int)r->others[((size_t)c * g->trials + t) * (size_t)g->distractors + k]);
            cJSON_AddItemToArray(these, cJSON_CreateString(key));
        }
        cJSON_AddItemToArray(all, these);
    }
}

static void write_json(const char *path, const Grid *g, const Results *r, const RunInfo *ri) {
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "checkpoint", ri->ckpt);
    cJSON_AddStringToObject(root, "label", ri->label);
    cJSON_AddNumberToObject(root, "trained_seq_len", (double)ri->trained_len);
    cJSON_AddNumberToObject(root, "rope_theta", ri->model->rope_theta);
    cJSON_AddNumberToObject(root, "params", (double)config_num_params(ri->model));
    cJSON_AddStringToObject(root, "haystack", g->haystack ? g->haystack : "generator filler");
    if (g->haystack) {
        cJSON_AddNumberToObject(root, "haystack_bytes", (double)g->hay.n);
        cJSON_AddNumberToObject(root, "haystack_files", g->hay.files);
        char crc[16];
        snprintf(crc, sizeof crc, "%08x", g->hay.crc);
        cJSON_AddStringToObject(root, "haystack_crc32", crc);
    }
    cJSON_AddNumberToObject(root, "distractors", g->distractors);
    cJSON_AddNumberToObject(root, "seed", (double)g->seed);
    cJSON_AddNumberToObject(root, "trials", g->trials);
    cJSON_AddNumberToObject(root, "sp", ri->sp);
    cJSON_AddNumberToObject(root, "dp", ri->dp);
    cJSON_AddNumberToObject(root, "seconds", ri->seconds);
    cJSON *lens = cJSON_AddArrayToObject(root, "lengths"), *deps = cJSON_AddArrayToObject(root, "depths");
    for (int i = 0; i < g->n_len; i++) cJSON_AddItemToArray(lens, cJSON_CreateNumber((double)g->lengths[i]));
    for (int i = 0; i < g->n_depth; i++) cJSON_AddItemToArray(deps, cJSON_CreateNumber(g->depths[i]));
    cJSON *cells = cJSON_AddArrayToObject(root, "cells");
    for (int c = 0; c < g->n_len * g->n_depth; c++) {
        CellScore sc = cell_score(g, r, c);
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "length", (double)g->lengths[c / g->n_depth]);
        cJSON_AddNumberToObject(o, "depth", g->depths[c % g->n_depth]);
        cJSON_AddNumberToObject(o, "exact_match", (double)sc.exact / g->trials);
        cJSON_AddNumberToObject(o, "digit_accuracy", (double)sc.digits / (g->trials * PASSKEY_KEY_DIGITS));
        cJSON_AddNumberToObject(o, "other_key_match", (double)sc.other / g->trials);
        cJSON_AddNumberToObject(o, "first_key_match", (double)sc.first / g->trials);
        cJSON_AddNumberToObject(o, "drifted", (double)sc.drifted / g->trials);
        cJSON_AddNumberToObject(o, "seconds", r->seconds[c]);
        cJSON *ks = cJSON_AddArrayToObject(o, "keys"), *as = cJSON_AddArrayToObject(o, "answers");
        for (int t = 0; t < g->trials; t++) {
            char key[8], ans[8];
            snprintf(key, sizeof key, "%05d", (int)r->keys[(size_t)c * g->trials + t]);
            answer_text(r, (size_t)c * g->trials + t, ans);
            cJSON_AddItemToArray(ks, cJSON_CreateString(key));
            cJSON_AddItemToArray(as, cJSON_CreateString(ans));
        }
        if (g->distractors) add_other_keys(o, g, r, c);
        cJSON_AddItemToArray(cells, o);
    }
    char *text = cJSON_Print(root);
    if (!text) fail("%s: out of memory while writing the results", path);
    FILE *f = xfopen(path, "w");
    xfwrite(text, strlen(text), f, path);
    xfwrite("\n", 1, f, path);
    xfclose(f, path);
    free(text);
    cJSON_Delete(root);
}

static void write_csv(const char *path, const Grid *g, const Results *r) {
    FILE *f = xfopen(path, "w");
    if (fprintf(f, "length,depth,trials,exact_match,digit_accuracy,seconds,other_key_match,drifted,first_key_match\n") < 0)
        fail("%s: write failed", path);
    for (int c = 0; c < g->n_len * g->n_depth; c++) {
        CellScore sc = cell_score(g, r, c);
        if (fprintf(f, "%" PRId64 ",%.4g,%d,%.4f,%.4f,%.3f,%.4f,%.4f,%.4f\n", g->lengths[c / g->n_depth], g->depths[c % g->n_depth],
                    g->trials, (double)sc.exact / g->trials, (double)sc.digits / (g->trials * PASSKEY_KEY_DIGITS), r->seconds[c],
                    (double)sc.other / g->trials, (double)sc.drifted / g->trials, (double)sc.first / g->trials) < 0)
            fail("%s: write failed", path);
    }
    xfclose(f, path);
}

// A prompt's byte tokens (n) as a JSON string's text: bytes 1..127 as themselves, 128..255 as U+0080..U+00FF
// (Latin-1: .encode("latin-1") gives the bytes back, and a window cut inside a UTF-8 character stays valid
// JSON), a NUL byte as U+2400.
static char *prompt_text(const uint32_t *doc, uint64_t n) {
    char *s = xmalloc((size_t)n * 3 + 1, "a passkey prompt's text");
    size_t k = 0;
    for (uint64_t i = 0; i < n; i++) {
        unsigned b = doc[i] & 0xFF;   // byte tokens
        if (b == 0) s[k++] = (char)0xE2, s[k++] = (char)0x90, s[k++] = (char)0x80;
        else if (b < 0x80) s[k++] = (char)b;
        else s[k++] = (char)(0xC0 | b >> 6), s[k++] = (char)(0x80 | (b & 0x3F));
    }
    s[k] = 0;
    return s;
}

// One line of OUT.docs.jsonl: a trial's cell, keys, decoded answer, where its needle, key and answer sit, the
// start of its haystack window in the text (the files in name order) and the prompt the model read.
static void write_doc_line(FILE *f, const char *path, const Grid *g, const Results *r, size_t job, int64_t len, double depth,
                           int trial, uint64_t at, const uint32_t *doc, const PasskeyInfo *info) {
    cJSON *o = cJSON_CreateObject();
    char key[8], ans[PASSKEY_KEY_DIGITS + 1];
    snprintf(key, sizeof key, "%05u", info->key);
    answer_text(r, job, ans);
    cJSON_AddNumberToObject(o, "length", (double)len);
    cJSON_AddNumberToObject(o, "depth", depth);
    cJSON_AddNumberToObject(o, "trial", trial);
    cJSON_AddStringToObject(o, "key", key);
    cJSON_AddStringToObject(o, "answer", ans);
    if (g->haystack) cJSON_AddNumberToObject(o, "haystack_offset", (double)at);
    cJSON_AddNumberToObject(o, "needle_pos", (double)info->needle_pos);
    cJSON_AddNumberToObject(o, "key_pos", (double)info->key_pos);
    cJSON_AddNumberToObject(o, "answer_pos", (double)info->answer_pos);
    char *text = prompt_text(doc, info->answer_pos);
    cJSON_AddStringToObject(o, "prompt", text);
    free(text);
    char *line = cJSON_PrintUnformatted(o);
    if (!line) fail("%s: out of memory while writing the documents", path);
    xfwrite(line, strlen(line), f, path);
    xfwrite("\n", 1, f, path);
    free(line);
    cJSON_Delete(o);
}

// --docs: every trial's document, rebuilt from the seed (a document depends on nothing the model did), beside
// its answer; the distractors' keys are in OUT.json.
static void write_docs(const char *path, const Grid *g, const Results *r) {
    FILE *f = xfopen(path, "w");
    size_t job = 0;
    for (int li = 0; li < g->n_len; li++) {
        int64_t len = g->lengths[li];
        uint32_t *hay = g->haystack ? xmalloc((size_t)len * sizeof(uint32_t), "a haystack window") : NULL;   // (len)
        uint32_t *doc = xmalloc((size_t)len * sizeof(uint32_t), "a passkey document");                        // (len)
        for (int di = 0; di < g->n_depth; di++)
            for (int t = 0; t < g->trials; t++, job++) {
                PasskeyInfo info;
                uint64_t at = trial_doc(g, len, g->depths[di], t, hay, doc, &info);
                write_doc_line(f, path, g, r, job, len, g->depths[di], t, at, doc, &info);
            }
        free(hay);
        free(doc);
    }
    xfclose(f, path);
}

// The table on the console: one row per length, one column per depth, exact match in percent.
static void print_table(const Grid *g, const Results *r) {
    log_info("exact match %% (%d trials per cell; rows: length, columns: depth)\n%8s", g->trials, "");
    for (int d = 0; d < g->n_depth; d++) log_info(" %5.2f", g->depths[d]);
    log_info("   mean\n");
    int other = 0, first = 0, drifted = 0;
    for (int l = 0; l < g->n_len; l++) {
        int sum = 0;
        log_info("%8" PRId64, g->lengths[l]);
        for (int d = 0; d < g->n_depth; d++) {
            CellScore sc = cell_score(g, r, l * g->n_depth + d);
            sum += sc.exact, other += sc.other, first += sc.first, drifted += sc.drifted;
            log_info(" %5.0f", 100.0 * sc.exact / g->trials);
        }
        log_info(" %6.1f\n", 100.0 * sum / (g->trials * g->n_depth));
    }
    if (g->distractors)
        log_info("of %d answers: %d a distractor's key (the name picked another needle; %d of them the document's first needle's), "
                 "%d the asked key's first digit and then off it (the copy drifted)\n", g->trials * g->n_depth * g->n_len, other, first,
                 drifted);
}

static const ArgCommand PASSKEY_CMD = {
    "passkey", "ringgpt passkey CKPT --lengths 1K,4K,16K --depths 0:1:0.1 --trials N [flags]   (mpiexec -np dp·sp ... --sp S)",
    "Passkey retrieval by length x depth: for every cell, --trials documents from the synthetic generator (the format\n"
    "`prepare --synthetic passkey` trains on; a length counts the document's EOS, like --doc-len) are cut before the\n"
    "answer, prefilled through the model (the ring's forward with --sp) and the key's 5 digits decoded greedily with\n"
    "the KV cache sharded over the ring. A cell scores exact match (all 5 digits) and digit accuracy. --haystack hides\n"
    "the key in real text from a dataset instead of the generator's filler. Writes OUT.json and OUT.csv; the heatmap:\n"
    "python3 scripts/plot_passkey.py OUT.json (several JSON files: one panel per stage); --docs adds every trial's\n"
    "document (OUT.docs.jsonl) to read a miss. Training documents of the same task come from\n"
    "`ringgpt prepare --synthetic passkey`."};

// OUT.json and OUT.csv can be written: their directory is created (by rank 0) or refused before the evaluation.
static void check_out(const char *out, Comm *world) {
    char dir[4200], why[4400] = "";
    if (comm_rank(world) == 0) {
        path_dirname(out, dir, sizeof dir);
        struct stat st;
        if (stat(dir, &st) != 0 && mkdir_parents(dir) != 0) snprintf(why, sizeof why, "cannot create %s (%s)", dir, strerror(errno));
        else if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) snprintf(why, sizeof why, "%s is not a directory", dir);
        else if (access(dir, W_OK) != 0) snprintf(why, sizeof why, "cannot write into %s (%s)", dir, strerror(errno));
    }
    double bad = why[0] != 0;
    comm_allreduce(world, &bad, 1, COMM_F64, COMM_MAX, "passkey --out check");
    if (bad) comm_fail_usage_all("--out %s: %s; give a writable path (OUT.json and OUT.csv are written there)", out, why);
}

int cmd_passkey(int argc, char **argv) {
    comm_init(&argc, &argv);
    const char *lengths = "1K", *depths = "0:1:0.25", *out = "passkey", *label = NULL, *config = NULL, *pos[1] = {NULL};
    Grid g = {.trials = 5, .seed = 7};
    int64_t seed = 7;
    bool docs = false;
    int sp = 1, threads = 0;   // threads: cli_infer_grid resolves it when not given
    float rope_theta = 0;
    ArgSpec specs[] = {
        {"--config", ARG_STRING, &config, "flags as a JSON object {\"lengths\": \"1K,4K\", ...}; the command line overrides it"},
        {"--lengths", ARG_STRING, &lengths, "document lengths in tokens, EOS included (K = 1024, M = 1024²), comma-separated"},
        {"--depths", ARG_STRING, &depths, "key depths in 0..1: start:stop:step (stop included) or a comma list"},
        {"--trials", ARG_INT, &g.trials, "documents (keys) per cell"},
        {"--seed", ARG_I64, &seed, "seed of the documents (keys); keep it apart from the training data's"},
        {"--haystack", ARG_STRING, &g.haystack, "hide the key in real text: a text file, a directory of them or a byte-level dataset"},
        {"--distractors", ARG_INT, &g.distractors, "other named keys in every document; the question names one (RULER's multi-key needle)"},
        {"--out", ARG_STRING, &out, "results: OUT.json and OUT.csv"},
        {"--docs", ARG_BOOL, &docs, "also write OUT.docs.jsonl: every trial's prompt, haystack offset, key and answer"},
        {"--label", ARG_STRING, &label, "name of this run in the JSON and the heatmap (default: the checkpoint path)"},
        {"--rope-theta", ARG_FLOAT, &rope_theta, "override the RoPE base"},
        {"--sp", ARG_INT, &sp, "ring size: ranks that split each document (mpiexec -np dp·sp; dp groups split the trials)"},
        {"--threads", ARG_INT, &threads, "CPU threads (OpenMP and BLAS; ranks on one node share the cores)", .dflt = "all cores"},
    };
    int n = sizeof specs / sizeof specs[0];
    int n_pos = args_parse(&PASSKEY_CMD, specs, n, argc, argv, pos, 1);
    args_apply_config(&PASSKEY_CMD, specs, n);
    if (n_pos != 1) comm_fail_usage_all("passkey needs a checkpoint: ringgpt passkey CKPT --lengths 1K,4K --depths 0:1:0.1");
    CommGrid cg = cli_infer_grid(sp, !args_seen(specs, n, "--threads"), &threads);
    cpu_threads(threads);
    g.seed = (uint64_t)seed;
    if (g.trials < 1) comm_fail_usage_all("--trials must be at least 1 (got %d)", g.trials);
    parse_lengths(&g, lengths);
    parse_depths(&g, depths);
    if (g.distractors < 0 || g.distractors > PASSKEY_MAX_DISTRACTORS)
        comm_fail_usage_all("--distractors %d: give 0..%d", g.distractors, PASSKEY_MAX_DISTRACTORS);
    check_lengths(&g);
    if (g.haystack) load_haystack(&g);
    check_out(out, cg.world);
    GPT m;
    CkptState st;
    char used[4200];
    load_model(pos[0], &m, rope_theta, &st, used, sizeof used);
    load_report("passkey", pos[0], used, &st, stdout);
    if (m.cfg.vocab_size != TOK_VOCAB_SIZE)
        comm_fail_usage_all("%s: vocab %d is not the byte-level tokenizer's %d; passkey documents are byte tokens", pos[0],
                            m.cfg.vocab_size, TOK_VOCAB_SIZE);
    log_info("passkey: %s (%.2fM parameters, trained at %d tokens, rope theta %g), %d lengths x %d depths x %d trials, "
             "%dx%d ranks (dp x sp), %d threads\n", pos[0], config_num_params(&m.cfg) / 1e6, st.run.seq_len, m.cfg.rope_theta,
             g.n_len, g.n_depth, g.trials, cg.dp, sp, threads);
    double t0 = now_seconds();
    Results r = run_grid(&m, &g, &cg);
    RunInfo ri = {.ckpt = pos[0], .label = label ? label : pos[0], .model = &m.cfg, .trained_len = st.run.seq_len,
                  .sp = sp, .dp = cg.dp, .seconds = now_seconds() - t0};
    print_table(&g, &r);
    double rss = peak_rss_mb();
    comm_allreduce(cg.world, &rss, 1, COMM_F64, COMM_MAX, "peak RSS");
    log_info("passkey: peak RSS per rank %.0f MB (the largest rank's)\n", rss);
    if (cg.rank == 0) {
        char path[4200];
        snprintf(path, sizeof path, "%s.json", out);
        write_json(path, &g, &r, &ri);
        snprintf(path, sizeof path, "%s.csv", out);
        write_csv(path, &g, &r);
        if (docs) {
            snprintf(path, sizeof path, "%s.docs.jsonl", out);
            write_docs(path, &g, &r);
            log_info("passkey: every trial's document in %s\n", path);
        }
        log_info("passkey: %.1f s; results in %s.json and %s.csv; heatmap: python3 scripts/plot_passkey.py %s.json\n",
                 ri.seconds, out, out, out);
    }
    haystack_free(&g.hay);
    free(r.answers);
    free(r.keys);
    free(r.others);
    free(r.firsts);
    free(r.seconds);
    gpt_free(&m);
    comm_grid_free(&cg);
    comm_finalize();
    return 0;
}
