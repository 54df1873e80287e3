// eval/ruler_run.h — a RULER document through a model: measured in its tokenizer, its prompt prefilled over the ring, the answer decoded greedily until it holds every expected item.
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "data/tokenizer.h"
#include "eval/ruler.h"
#include "model/gpt.h"

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
    size_t prompt_tokens;    // ids prefilled: the start token (if any) and the prompt's
    int made;                // tokens decoded
    double score;            // ruler_score(d, text)
    double prefill_s, decode_s;
} RulerAnswer;

// Prefills d's prompt after the token start (-1: none; model_start_token) through m over ring (NULL or one rank:
// local) and decodes greedily, the KV cache sharded over the ring, at most max_tokens tokens. Stops at the
// end-of-document token, and as soon as the answer holds every expected item: more text cannot change a string-match
// score, so the score is the one max_tokens would give. The same on every rank of the ring.
void ruler_answer(GPT *m, Comm *ring, const Tokenizer *tok, int64_t start, const RulerDoc *d, int max_tokens, RulerAnswer *a);
void ruler_answer_free(RulerAnswer *a);
