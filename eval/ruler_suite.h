// eval/ruler_suite.h — RULER's suite through a model: the documents of every length, task and sample answered over the ring (dp groups in turn), the results on every rank, results.json.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "eval/ruler.h"
#include "eval/ruler_run.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"

enum { RULER_MAX_LENGTHS = 32, RULER_MAX_TASKS = 32 };

// What `ringgpt ruler` runs: tasks by name, lengths, samples.
typedef struct {
    int n_task, n_len, samples, tokens;   // tokens: 0 = each task's default
    const char *names[RULER_MAX_TASKS];
    RulerSpec specs[RULER_MAX_TASKS];
    int64_t lengths[RULER_MAX_LENGTHS];
    uint64_t seed;
    int64_t start;                        // the token prefilled before each document (-1: none; model_start_token)
    char *prose;                          // --haystack's text, or NULL (the prose tasks read noise)
    size_t prose_n;
} RulerSuite;

// The answer tokens decoded for task t: --tokens, or RULER's budget for its kind (tokens_to_generate).
int ruler_task_tokens(const RulerSuite *s, int t);
// Every (length, task) makes a document (in tm's tokens) before anything is decoded: 0, or -1 with one line in why
// (a length too short for a task).
int ruler_suite_check(const RulerSuite *s, RulerTokMeasure *tm, char *why, size_t n);

// The suite's results, the same on every rank after share_results.
typedef struct {
    double *scores;        // (n_len, n_task, samples) each document's ruler_score
    double *prompt;        // (n_len, n_task, samples) ids prefilled
    char **text;           // (n_len, n_task, samples) the answer, a NUL, the expected items joined by newlines, a NUL
    uint64_t *text_n;      // (n_len, n_task, samples) bytes of each text, both NULs included
    double sums[4];        // prefill tokens, prefill seconds, decoded tokens, decode seconds (over all rings)
    double seconds;
} RulerResults;

// Every document of the suite, the dp groups of cg taking them in turn: generated, prefilled over the group's ring, its
// answer decoded greedily and scored; then shared with every rank. Logs a line per length.
RulerResults ruler_suite_run(GPT *m, const Tokenizer *tok, const CommGrid *cg, const RulerSuite *s, RulerTokMeasure *tm);
void ruler_results_free(RulerResults *o, const RulerSuite *s);

typedef struct {
    const char *ckpt, *label, *haystack, *tokenizer;
    double threshold;
    char command[4096];   // the command line, words joined by spaces
} RulerRunInfo;

// DIR/results.json (one rank): the provenance, the table, the effective length, speed, every sample's answer.
void ruler_write_json(const char *dir, const RulerRunInfo *ri, const RulerSuite *s, const RulerResults *o, const RulerTable *tb);
