// eval/ruler_run.c — a RULER document through a model: the measure in its tokens, the prompt prefilled over the ring, greedy decoding that stops once the answer is complete.
#include "eval/ruler_run.h"

#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "eval/sample.h"
#include "model/decode.h"
#include "tokenizer/tokenizer.h"

size_t ruler_measure_tokens(void *ctx, const char *text, size_t n) {
    RulerTokMeasure *m = ctx;
    size_t got = 0;
    tokenizer_encode(&m->enc, (const unsigned char *)text, n, &m->ids, &got, &m->cap);
    return got;
}

// Appends token id's bytes to the answer (NUL as a space).
static void answer_put(RulerAnswer *a, const Tokenizer *tok, uint32_t id, size_t *cap) {
    size_t len;
    const unsigned char *b = tokenizer_token(tok, id, &len);
    if (!b) return;
    if (a->n + len + 1 > *cap) {
        *cap = (a->n + len + 1) * 2;
        a->text = xrealloc(a->text, *cap, "an answer");
    }
    for (size_t i = 0; i < len; i++) a->text[a->n++] = b[i] ? (char)b[i] : ' ';
    a->text[a->n] = 0;
}

void ruler_prefill_free(RulerPrefill *k) {
    if (k->live) decoder_free(&k->dec);
    free(k->context), free(k->ids);
    *k = (RulerPrefill){0};
}

static bool holds_context(const RulerPrefill *k, const RulerDoc *d) {
    return k->live && k->context_n == d->question_at && memcmp(k->context, d->text, d->question_at) == 0;
}

// keep holds d's context with room for `need` more tokens (prefilled now if it did not), rewound to its mark.
static void context_ready(RulerPrefill *k, GPT *m, Comm *ring, const RulerDoc *d, const uint32_t *ids, size_t n_ctx, int need,
                          RulerAnswer *a) {
    if (holds_context(k, d) && need <= k->max_new) {
        decode_rewind(&k->dec, k->mark);
        return;
    }
    ruler_prefill_free(k);
    k->context = xmalloc(d->question_at + 1, "a document's context"), memcpy(k->context, d->text, d->question_at);
    k->context_n = d->question_at;
    k->ids = xmalloc(n_ctx * sizeof *ids, "a document's context"), memcpy(k->ids, ids, n_ctx * sizeof *ids);
    k->n_ids = n_ctx;
    k->max_new = need + 64;   // the next asks' questions may be a little longer
    decoder_init(&k->dec, m, ring, k->max_new);
    double t0 = now_seconds();
    decode_prefill(&k->dec, (const int32_t *)ids, (int)n_ctx);   // ids < vocab < 2^31: their signed view is the prompt
    a->prefill_s += now_seconds() - t0, a->prefilled += n_ctx;
    k->mark = decode_mark(&k->dec), k->live = true;
}

// The context's ids when they begin the prompt's (ids, n): their count; 0 when a token crosses the seam. A context
// keep holds is not encoded again.
static size_t context_ids(const Tokenizer *tok, int64_t start, const RulerDoc *d, const RulerPrefill *keep, const uint32_t *ids,
                          size_t n) {
    uint32_t *ctx = NULL;
    size_t n_ctx = holds_context(keep, d) ? keep->n_ids : model_prompt_ids(tok, start, (const unsigned char *)d->text, d->question_at, &ctx);
    bool prefix = n_ctx < n && memcmp(ctx ? ctx : keep->ids, ids, n_ctx * sizeof *ids) == 0;
    free(ctx);
    return prefix ? n_ctx : 0;
}

// The prompt's logits after ids[0..n): through keep's context and the question fed token by token, or prefilled whole
// into s (s initialised here; *own set when the caller must free it).
static const float *prompt_logits(GPT *m, Comm *ring, const Tokenizer *tok, int64_t start, const RulerDoc *d, int max_tokens,
                                  RulerPrefill *keep, const uint32_t *ids, size_t n, Decoder **dec, Decoder *own, RulerAnswer *a) {
    size_t n_ctx = keep ? context_ids(tok, start, d, keep, ids, n) : 0;
    if (n_ctx) {
        context_ready(keep, m, ring, d, ids, n_ctx, (int)(n - n_ctx) + max_tokens, a);
        *dec = &keep->dec;
        double t0 = now_seconds();
        const float *logits = NULL;
        for (size_t i = n_ctx; i < n; i++) logits = decode_step(*dec, (int)ids[i]);
        a->prefill_s += now_seconds() - t0, a->prefilled += n - n_ctx;
        return logits;
    }
    if (keep) ruler_prefill_free(keep);
    decoder_init(own, m, ring, max_tokens);
    *dec = own;
    double t0 = now_seconds();
    const float *logits = decode_prefill(own, (const int32_t *)ids, (int)n);
    a->prefill_s += now_seconds() - t0, a->prefilled += n;
    return logits;
}

void ruler_answer(GPT *m, Comm *ring, const Tokenizer *tok, int64_t start, const RulerDoc *d, int max_tokens, RulerPrefill *keep,
                  RulerAnswer *a) {
    size_t cap = 64;
    *a = (RulerAnswer){.text = xcalloc(cap, 1, "an answer")};
    uint32_t *ids;   // (prompt_tokens)
    a->prompt_tokens = model_prompt_ids(tok, start, (const unsigned char *)d->text, d->n, &ids);
    Decoder own, *s;
    const float *logits = prompt_logits(m, ring, tok, start, d, max_tokens, keep, ids, a->prompt_tokens, &s, &own, a);
    double t1 = now_seconds();
    for (int i = 0; i < max_tokens; i++) {
        int t = decode_agree(s, logits_argmax(logits, m->cfg.vocab_size));
        if (t == tok->eos) break;
        answer_put(a, tok, (uint32_t)t, &cap);
        a->made++;
        if (ruler_score(d, a->text) == 1) break;   // complete: the same text on every rank, so every rank stops here
        if (i + 1 < max_tokens) logits = decode_step(s, t);
    }
    a->decode_s = now_seconds() - t1;
    a->score = ruler_score(d, a->text);
    if (s == &own) decoder_free(&own);
    free(ids);
}

void ruler_answer_free(RulerAnswer *a) {
    free(a->text);
    *a = (RulerAnswer){0};
}
