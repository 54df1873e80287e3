// eval/ruler_run.h — a RULER document through a model: measured in its tokenizer, its prompt prefilled over the ring, the answer decoded greedily until it holds every expected item.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "eval/ruler.h"
#include "model/decode.h"
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

typedef struct {
    char *text;              // the decoded answer's bytes (NUL as a space), NUL-ended
    size_t n;
    size_t prompt_tokens;    // the prompt's ids: the start token (if any) and the text's
    size_t prefilled;        // ids this answer ran through the model before decoding (fewer where a kept context served)
    int made;                // tokens decoded
    double score;            // ruler_score(d, text)
    double prefill_s, decode_s;
} RulerAnswer;

// A document's context (its text before the question) prefilled, kept for the samples that ask it other questions.
typedef struct {
    Decoder dec;
    bool live;               // dec holds context[0..context_n) as ids[0..n_ids), its mark taken after them
    char *context;           // (context_n) bytes
    size_t context_n;
    uint32_t *ids;           // (n_ids) the start token and the context's ids
    size_t n_ids;
    int max_new;             // what dec was made for: the question's and the answer's tokens
    DecodeMark mark;
} RulerPrefill;
void ruler_prefill_free(RulerPrefill *k);

// Prefills d's prompt after the token start (-1: none; model_start_token) through m over ring (NULL or one rank:
// local) and decodes greedily, the KV cache sharded over the ring, at most max_tokens tokens. Stops at the
// end-of-document token, and as soon as the answer holds every expected item: more text cannot change a string-match
// score, so the score is the one max_tokens would give. The same on every rank of the ring.
// keep NULL: the prompt prefilled whole. Else (a task whose documents are asked several questions) the context is
// prefilled once for every question of it: kept in keep, a later document with the same context only feeds its
// question, token by token, after the context's mark; every question of the document, the first too, runs that way,
// so an answer is the same whichever ask reuses the prefill. A context whose ids are not a prefix of the prompt's
// (a token across the seam) is prefilled whole, not kept.
void ruler_answer(GPT *m, Comm *ring, const Tokenizer *tok, int64_t start, const RulerDoc *d, int max_tokens, RulerPrefill *keep,
                  RulerAnswer *a);
void ruler_answer_free(RulerAnswer *a);
