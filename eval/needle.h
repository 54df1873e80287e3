// eval/needle.h — the needle harness of passkey and RULER: a grid of lengths × columns (passkey's depths, RULER's tasks) × samples, each sample a document prefilled over the ring and its answer decoded greedily, the dp groups taking the documents in turn; the records shared with every rank, the cells' scores, the results JSON and its directory.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "core/comm.h"
#include "model/decode.h"
#include "model/gpt.h"

enum { NEEDLE_MAX_VALUES = 15 };   // the numbers a job records (passkey's: 5 scores, the keys of 2 + 8 needles)

typedef struct {
    uint32_t *ids;      // (n) the prompt, every id below the model's vocab (the task's buffer)
    size_t n;
    size_t n_ctx;       // ids[0..n_ctx): a context the next documents may share (a document asked several questions)
    int max_new;        // the most tokens the answer is decoded in (at least 1)
} NeedlePrompt;

// What a decoded token does to the answer: ends it without joining it, completes it, or joins it.
typedef enum { NEEDLE_END, NEEDLE_DONE, NEEDLE_MORE } NeedleTake;
typedef NeedleTake (*NeedleTakeFn)(void *answer, int id);

typedef struct {   // one answer's work: ids run through the model before decoding, tokens the answer took
    size_t prefilled;
    int made;
    double prefill_s, decode_s;
} NeedleStats;

// The decoder the answers share (one at a time: a prefill's keys and values live in the model's activations) with
// the context it holds prefilled; zeroed: none yet.
typedef struct {
    Decoder dec;
    int max_new;        // what dec was made for (0: none made)
    uint32_t *ctx;      // (n_ctx) the kept context's ids
    size_t n_ctx;
    DecodeMark mark;    // the kept context's end
} NeedleDecoder;
void needle_decoder_free(NeedleDecoder *k);

// p's prompt through m over ring (NULL or one rank: local), then greedy decoding with the KV cache sharded over the
// ring, each token (the same on every rank) given to take(answer, id), until it ends or completes the answer or
// max_new tokens. A prompt with a context runs it from k's prefill (made first unless k holds it), then the rest
// token by token — the first document too, so an answer does not depend on which one prefilled the context.
void needle_answer(NeedleDecoder *k, GPT *m, Comm *ring, const NeedlePrompt *p, NeedleTakeFn take, void *answer,
                   NeedleStats *st);

// A document of the grid: length li, column col, sample; index = (li·n_col + col)·samples + sample.
typedef struct {
    int li, col, sample;
    size_t index;
} NeedleJob;

typedef struct {   // what a job leaves in the results
    double values[NEEDLE_MAX_VALUES];   // its scores first (values[0]: the log's, a share of 1), then the task's numbers
    char *text;                         // malloc'd NUL-ended strings back to back (the results take it)
    size_t text_n;                      // its bytes, every NUL included
} NeedleRecord;

// A task of the harness: its grid, its words in the log, its documents and answers.
typedef struct {
    const char *name, *col_word, *sample_word;   // "passkey: length 512: 3 depths x 2 trials in 0.1 s"
    const char *const *col_names;                // (n_col) and a log line per cell as it ends; NULL: none
    int n_len, n_col, samples, n_values;
    const int64_t *lengths;                      // (n_len)
    const int *asks;                             // (n_col) samples per document, run by one dp group; NULL: one
    const void *ctx;
    // Job j's document, the same on every rank: its prompt into p; returns the answer's state (take's, finish's).
    void *(*make)(const void *ctx, const NeedleJob *j, NeedlePrompt *p);
    NeedleTakeFn take;
    // The answered document's record into rec (zeroed); frees the answer's state.
    void (*finish)(const void *ctx, void *answer, NeedleRecord *rec);
} NeedleTask;

typedef struct {   // a run's records, the same on every rank
    int n_len, n_col, samples, n_values;
    const int64_t *lengths;   // (n_len) the task's
    double *values;           // (jobs, n_values)
    char **text;              // (jobs)
    uint64_t *text_n;         // (jobs)
    double *seconds;          // (cells) wall time of each cell's documents, summed over the rings
    double sums[4];           // ids prefilled, prefill seconds, tokens decoded, decode seconds, over every ring
    double total_s;
} NeedleResults;

// Every job of t, the dp groups of cg taking the documents in turn (a document's asks in one group); a log line per
// length (and per cell with col_names); the records then shared with every rank. Collective over cg's world.
NeedleResults needle_run(GPT *m, const CommGrid *cg, const NeedleTask *t);
void needle_results_free(NeedleResults *r);

// Cell c's value v summed over its samples, and its mean; a length's mean of its cells' means of value 0 (RULER's
// average); the longest length up to which every length's mean stays at or above threshold (0: the shortest is below).
double needle_cell_sum(const NeedleResults *r, int c, int v);
double needle_cell_mean(const NeedleResults *r, int c, int v);
double needle_length_mean(const NeedleResults *r, int li);
int64_t needle_effective_length(const NeedleResults *r, double threshold);

// The results JSON: root (the task's members), then "cells", each cell's "length" and what cell adds; written to
// path (a file that cannot be written ends the process with one line); root freed.
typedef void (*NeedleCellJson)(const void *ctx, const NeedleResults *r, int c, cJSON *o);
void needle_write_json(const char *path, cJSON *root, const NeedleResults *r, NeedleCellJson cell, const void *ctx);
// The results' directory dir (of --out out) exists (created by the world's rank 0) and takes files before the model
// is read, or every rank ends with one line: "--out OUT: why; give a writable <what>" (exit 2).
void needle_check_out(const char *dir, const char *out, const char *what, Comm *world);
