// eval/passkey.h — the passkey grid: lengths × depths × trials of documents in the model's tokenizer (generator filler or a haystack, distractors), decoded over the ring and scored.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "data/haystack.h"
#include "data/synthetic.h"
#include "model/gpt.h"

// PASSKEY_MAX_DOCS: documents (lengths x depths x trials) in one call; each keeps its answers until the end.
// PASSKEY_ANSWER_TOKENS: the most tokens a BPE model's answer is decoded in (its space, then the digits).
enum { PASSKEY_MAX_LENGTHS = 64, PASSKEY_MAX_DEPTHS = 1001, PASSKEY_MAX_DOCS = 1 << 20, PASSKEY_ANSWER_TOKENS = 12 };

// What to evaluate. Cell c is (length c / n_depth, depth c % n_depth); job j = c·trials + trial.
typedef struct {
    int n_len, n_depth, trials;
    int64_t lengths[PASSKEY_MAX_LENGTHS];   // document tokens, its EOS included (= the training --doc-len / --seq-len)
    double depths[PASSKEY_MAX_DEPTHS];      // where the key sits in the filler: 0 = start, 1 = end
    uint64_t seed;                          // of the documents (keys)
    const char *haystack;                   // NULL: the generator's filler sentences; else the text's path
    Haystack hay;                           // its text, in the model's tokens (passkey_grid_load_haystack)
    int distractors;                        // other named keys in every document
    const Tokenizer *tok;                   // the model's (passkey_grid_tokenizer); NULL: byte260
    SynthText *text;                        // documents in its tokens; NULL: bytes
} PasskeyGrid;

// One cell's trials: exact matches, right digits, answers that are a distractor's key (first: of them, the key
// of the document's first needle), answers that begin on the asked key and leave it (passkey_answer_kind).
typedef struct {
    int exact, digits, other, first, drifted;   // counts; digits out of trials · PASSKEY_KEY_DIGITS
} PasskeyScore;

// The grid's results, the same on every rank.
typedef struct {
    int64_t *answers;      // (cells, trials, PASSKEY_KEY_DIGITS) the answer's characters: byte260's decoded tokens
                           // (a special is its id), a BPE's decoded text after its leading space (-1: none)
    int64_t *keys;         // (cells, trials) the true keys
    int64_t *others;       // (cells, trials, distractors) the distractors' keys
    int64_t *firsts;       // (cells, trials) the key of each document's first needle
    double *seconds;       // (cells) prefill + decode time, summed over trials
    PasskeyScore *scores;  // (cells) the table: passkey_score_cell of every cell
} PasskeyResults;

// The errors below return -1 with one line in why (size n) naming the flag and the way out, else 0; they are
// usage errors that every rank meets alike (the command ends every rank with comm_fail_usage_all).

// "0:1:0.1" (start:stop:step, stop included) or "0,0.5,1" into g->depths, each in 0..1.
int passkey_grid_depths(PasskeyGrid *g, const char *spec, char *why, size_t n);
// The model's tokenizer t (checkpoints/model_tokenizer.h; it must outlive the grid): documents are written in
// its tokens. Refused: a tokenizer known by id only (no tokenizer.json to encode text with) or one with ids the
// model (vocab model_vocab, path) has no row for.
int passkey_grid_tokenizer(PasskeyGrid *g, const Tokenizer *t, int model_vocab, const char *path, char *why, size_t n);
// trials >= 1, 0..PASSKEY_MAX_DISTRACTORS distractors, every length long enough for a document with them (in
// the tokenizer's tokens: after passkey_grid_tokenizer).
int passkey_grid_check(const PasskeyGrid *g, char *why, size_t n);
// Loads g->haystack (a path it cannot read is a usage error of data/haystack.h) in the tokenizer's ids and checks
// it is at least as long as the longest document (a window must not repeat itself).
int passkey_grid_load_haystack(PasskeyGrid *g, char *why, size_t n);
void passkey_grid_free(PasskeyGrid *g);

// The document of one trial, the same on every rank: doc (len) gets its len - 1 tokens (the training document's
// before its EOS), hay (len) its haystack window with a haystack (else unused, may be NULL). Returns where that
// window starts in the text (0 without one).
uint64_t passkey_trial_doc(const PasskeyGrid *g, int64_t len, double depth, int trial, uint32_t *hay, uint32_t *doc,
                           PasskeyInfo *info);

// A BPE answer's characters (PASSKEY_KEY_DIGITS): adds the text of token id to answer[got..], its leading white space
// skipped while the answer is empty; returns the new count, or -1 when id ends the answer (EOS, BOS, PAD, an id
// without text). The grid decodes greedily with it until 5 characters.
int passkey_answer_add(const Tokenizer *t, int id, int32_t *answer, int got);

// Every (length, depth, trial) job: the prompt up to the answer prefilled, the key's digits decoded greedily
// with the KV cache sharded over cg's ring; the dp groups take the jobs in turn. Collective over cg's world.
PasskeyResults passkey_grid_run(GPT *m, const PasskeyGrid *g, const CommGrid *cg);
void passkey_results_free(PasskeyResults *r);
// Cell c's scores from its trials' keys, distractors' keys, first needles' keys and answers (r->scores[c] after a run).
PasskeyScore passkey_score_cell(const PasskeyGrid *g, const PasskeyResults *r, int c);
// Job j's decoded answer as text (PASSKEY_KEY_DIGITS characters and a NUL; a character that is not printable ASCII is '?').
void passkey_answer_text(const PasskeyResults *r, size_t job, char *out);
