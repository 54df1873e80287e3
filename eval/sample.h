// eval/sample.h — generation: a prompt read and shared over the ring, prefilled, then tokens drawn one at a time (greedy, or temperature and top-k).
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/comm.h"
#include "core/rng.h"
#include "model/gpt.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    int tokens;          // the most tokens to draw
    float temperature;   // softmax temperature; 0: greedy
    int top_k;           // draw among the k most likely tokens; 0: all
    uint64_t seed;       // of the draws
    bool stop_at_eos;    // stop at the tokenizer's end-of-document token (not emitted)
} SampleOptions;

typedef struct {
    size_t prompt_tokens;         // ids prefilled: the document-start token and the prompt's
    int made;                     // tokens drawn (and emitted)
    double prefill_s, decode_s;   // wall time of the prefill and of the draws after it
} SampleResult;

// Called with every drawn token, in order (the same tokens on every rank of the ring).
typedef void (*SampleEmit)(void *ctx, uint32_t token);

// The index of the largest of logits (V); the first where several are equal (greedy decoding).
int logits_argmax(const float *logits, int V);
// The next token from logits (V): the largest at temperature 0, else a draw from softmax(logits / temperature)
// over the top_k largest (0: all), with rng.
int sample_pick(const float *logits, int V, float temperature, int top_k, Rng *rng);
// The prompt's bytes, the same on every rank of ring: text, or the file at `file` (`-`: stdin) read by the ring's
// rank 0 (mpiexec gives stdin to rank 0 only). Returns them malloc'd (NUL-terminated), *len their count.
unsigned char *sample_read_prompt(const char *text, const char *file, Comm *ring, size_t *len);
// Prefills ids (n_ids of them, each below the vocab: the start token and the prompt's, see model_prompt_ids) through
// m over ring (NULL or one rank: local) and draws up to o->tokens tokens with a KV cache sharded over the ring;
// tok gives the end-of-document token (o->stop_at_eos).
void sample_generate(GPT *m, Comm *ring, const Tokenizer *tok, const uint32_t *ids, size_t n_ids, const SampleOptions *o,
                     SampleEmit emit, void *ctx, SampleResult *r);
