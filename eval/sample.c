// eval/sample.c — generation over the ring: the prompt shared by the ring's ranks, prefill, then one drawn token at a time.
#include "eval/sample.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "model/decode.h"

// The top_k-th largest of logits (V), by top_k passes of a partial selection.
static float kth_largest(const float *logits, int V, int top_k) {
    float *sorted = xmalloc((size_t)V * sizeof(float), "sorted logits");   // (V)
    memcpy(sorted, logits, (size_t)V * sizeof(float));
    for (int k = 0; k < top_k; k++)
        for (int i = k + 1; i < V; i++)
            if (sorted[i] > sorted[k]) { float t = sorted[k]; sorted[k] = sorted[i]; sorted[i] = t; }
    float kth = sorted[top_k - 1];
    free(sorted);
    return kth;
}

int logits_argmax(const float *logits, int V) {
    int best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best]) best = i;
    return best;
}

int sample_pick(const float *logits, int V, float temperature, int top_k, Rng *rng) {
    int best = logits_argmax(logits, V);
    if (temperature <= 0) return best;
    float kth = top_k > 0 && top_k < V ? kth_largest(logits, V, top_k) : -INFINITY;   // everything below is dropped
    double *p = xmalloc((size_t)V * sizeof(double), "probabilities");                // (V)
    double sum = 0;
    for (int i = 0; i < V; i++) sum += p[i] = logits[i] >= kth ? exp((logits[i] - logits[best]) / temperature) : 0;
    double u = rng_uniform(rng) * sum;
    int pick = best;
    for (int i = 0; i < V; i++) {
        if (p[i] > 0 && (u -= p[i]) <= 0) { pick = i; break; }
    }
    free(p);
    return pick;
}

// All of stdin (n bytes), malloc'd.
static unsigned char *read_stdin(uint64_t *n) {
    size_t cap = 1 << 16, got;
    unsigned char *p = xmalloc(cap, "the prompt");
    *n = 0;
    while ((got = fread(p + *n, 1, cap - *n, stdin)) > 0)
        if ((*n += got) == cap) p = xrealloc(p, cap *= 2, "the prompt");
    if (ferror(stdin)) fail("--prompt-file -: reading stdin failed");
    return p;
}

unsigned char *sample_read_prompt(const char *text, const char *file, Comm *ring, size_t *len) {
    unsigned char *p = NULL;
    uint64_t n = 0;
    if (comm_rank(ring) == 0) {
        if (!file) p = (unsigned char *)xstrdup(text), n = strlen(text);
        else if (strcmp(file, "-") != 0) {
            size_t got;
            p = read_whole_file(file, &got);
            n = got;
        } else p = read_stdin(&n);
    }
    comm_allreduce(ring, &n, 1, COMM_U64, COMM_MAX, "prompt length");
    size_t words = (n + 7) / 8;
    uint64_t *w = xcalloc(words + 1, sizeof(uint64_t), "the prompt");   // packed bytes: a sum with zeros is a copy
    if (comm_rank(ring) == 0) memcpy(w, p, n);
    comm_allreduce(ring, w, words, COMM_U64, COMM_SUM, "prompt bytes");
    free(p);
    *len = n;
    return (unsigned char *)w;
}

void sample_generate(GPT *m, Comm *ring, const Tokenizer *tok, const uint32_t *ids, size_t n_ids, const SampleOptions *o,
                     SampleEmit emit, void *ctx, SampleResult *r) {
    r->prompt_tokens = n_ids;
    Decoder s;
    decoder_init(&s, m, ring, o->tokens);
    Rng rng;
    rng_seed(&rng, o->seed);
    double t0 = now_seconds();
    const float *logits = decode_prefill(&s, (const int32_t *)ids, (int)r->prompt_tokens);   // ids < vocab < 2^31
    double t1 = now_seconds();
    r->made = 0;
    for (int i = 0; i < o->tokens; i++, r->made++) {
        int t = decode_agree(&s, sample_pick(logits, m->cfg.vocab_size, o->temperature, o->top_k, &rng));
        if (t == tok->eos && o->stop_at_eos) break;
        if (emit) emit(ctx, (uint32_t)t);
        if (i + 1 < o->tokens) logits = decode_step(&s, t);
    }
    r->prefill_s = t1 - t0, r->decode_s = now_seconds() - t1;
    decoder_free(&s);
}
