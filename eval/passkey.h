// eval/passkey.h — the passkey grid: lengths × depths × trials of documents in the model's tokenizer (generator filler or a haystack, distractors), a task of the needle harness (eval/needle.h), their scores and result files.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "data/haystack.h"
#include "data/synthetic.h"
#include "eval/infer.h"
#include "eval/needle.h"
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

// One trial's scores, or a cell's summed over its trials: exact matches, right digits, answers that are a
// distractor's key (first: of them, the key of the document's first needle), answers that begin on the asked key and
// leave it (passkey_answer_kind).
typedef struct {
    int exact, digits, other, first, drifted;   // digits out of trials · PASSKEY_KEY_DIGITS
} PasskeyScore;

// A trial's values in the harness's results (eval/needle.h): its scores (PasskeyScore's, in order), the asked key,
// the first needle's, the distractors'; its text: the answer (PASSKEY_KEY_DIGITS characters, a NUL).
enum { PASSKEY_EXACT, PASSKEY_DIGITS, PASSKEY_OTHER, PASSKEY_FIRST, PASSKEY_DRIFTED, PASSKEY_KEY, PASSKEY_FIRST_KEY, PASSKEY_OTHER_KEYS };

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

// Every (length, depth, trial) job (needle_run's job index: cell (length, depth) · trials + trial): the prompt up
// to the answer prefilled, the key's characters decoded greedily with the KV cache sharded over cg's ring; the dp
// groups take the jobs in turn. Collective over cg's world.
NeedleResults passkey_grid_run(GPT *m, const PasskeyGrid *g, const CommGrid *cg);
// An answer's characters (PASSKEY_KEY_DIGITS) as text and a NUL: a character that is not printable ASCII is '?'.
void passkey_answer_text(const int32_t *answer, char *out);
// A trial's scores: its answer's text against its document's keys (info, with its distractors').
PasskeyScore passkey_score(const PasskeyInfo *info, int distractors, const char *answer);
// Cell c's scores: its trials' summed.
PasskeyScore passkey_cell_score(const NeedleResults *r, int c);

// The result files, each written whole (a file that cannot be written ends the process with one line naming it).
// OUT.json, read by scripts/plot_passkey.py: the model (im: the checkpoint given, its training length, RoPE base and
// size, the ranks), the run's name (label), the grid and every cell. OUT.csv: one row per cell.
void passkey_write_json(const char *path, const PasskeyGrid *g, const NeedleResults *r, const InferModel *im, const char *label);
void passkey_write_csv(const char *path, const PasskeyGrid *g, const NeedleResults *r);
// Every trial's document rebuilt from the seed (a document depends on nothing the model did) beside its answer:
// its cell, keys, where its needle, key and answer sit, its haystack window's start and the prompt the model read.
void passkey_write_docs(const char *path, const PasskeyGrid *g, const NeedleResults *r);
