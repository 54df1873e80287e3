// eval/ruler_suite.h — RULER's suite through a model, a task of the needle harness (eval/needle.h): a document measured and prompted in the model's tokens and its answer taken until complete; the documents of every length, task and sample answered over the ring (dp groups in turn); results.json.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "eval/needle.h"
#include "tokenizer/tokenizer.h"
#include "eval/ruler.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"

// ruler_generate's measure in a model's tokens: ctx is a RulerTokMeasure over the model's tokenizer
// (tokenizer_can_encode); the start token is not counted.
typedef struct {
    TokEncoder enc;
    uint32_t *ids;   // (cap) scratch
    size_t cap;
} RulerTokMeasure;
size_t ruler_measure_tokens(void *ctx, const char *text, size_t n);

// d's prompt: the token start (-1: none; model_start_token) and its text's ids (p->ids, malloc'd), max_tokens
// answer tokens. With context (a document asked several questions, each a sample of its own), n_ctx is its
// context's ids (its text before the question) where they begin the prompt's: the harness prefills them once for
// every question; 0 where a token crosses the seam.
void ruler_prompt(const Tokenizer *tok, int64_t start, const RulerDoc *d, int max_tokens, bool context, NeedlePrompt *p);

// An answer as it is decoded: its tokens' bytes (NUL as a space), NUL-ended.
typedef struct {
    const RulerDoc *d;
    const Tokenizer *tok;
    char *text;          // (cap) NULL until the first token
    size_t n, cap;
} RulerAnswer;
// The harness's take (answer: a RulerAnswer): the end-of-document token ends the answer; an answer that holds every
// expected item is complete (more text cannot change a string-match score, so the score is the one max_tokens would
// give; the same text on every rank, so every rank stops there).
NeedleTake ruler_take(void *answer, int id);

enum { RULER_MAX_LENGTHS = 32, RULER_MAX_TASKS = 32 };

// What `ringgpt ruler` runs: tasks by name, lengths, samples.
typedef struct {
    int n_task, n_len, samples, tokens;   // tokens: 0 = each task's default
    const char *names[RULER_MAX_TASKS];
    RulerSpec specs[RULER_MAX_TASKS];
    int64_t lengths[RULER_MAX_LENGTHS];
    uint64_t seed;
    const Tokenizer *tok;                 // the model's: documents are measured (tm) and answered in its tokens
    RulerTokMeasure *tm;
    int64_t start;                        // the token prefilled before each document (-1: none; model_start_token)
    char *prose;                          // --haystack's text, or NULL (the prose tasks read noise)
    size_t prose_n;
} RulerSuite;

// The answer tokens decoded for task t: --tokens, or RULER's budget for its kind (tokens_to_generate).
int ruler_task_tokens(const RulerSuite *s, int t);
// Every (length, task) makes a document before anything is decoded: 0, or -1 with one line in why (a length too
// short for a task).
int ruler_suite_check(const RulerSuite *s, char *why, size_t n);

// Every document of the suite (needle_run's job index: cell (length, task) · samples + sample), the dp groups of cg
// taking them in turn (a document's asks in one group): generated, prefilled over the group's ring, its answer decoded
// greedily and scored; the records on every rank: values each sample's ruler_score and its prompt's ids, its
// text the answer, a NUL, the expected items joined by newlines, a NUL. Logs a line per cell and per length.
NeedleResults ruler_suite_run(GPT *m, const CommGrid *cg, const RulerSuite *s);

typedef struct {
    const char *ckpt, *label, *haystack, *tokenizer;
    double threshold;
    char command[4096];   // the command line, words joined by spaces
} RulerRunInfo;

// DIR/results.json (one rank): the provenance, the table, the effective length, speed, every sample's answer.
void ruler_write_json(const char *dir, const RulerRunInfo *ri, const RulerSuite *s, const NeedleResults *r);
