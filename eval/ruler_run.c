// eval/ruler_run.c — a RULER document through a model: the measure in its tokens, the prompt prefilled over the ring, greedy decoding that stops once the answer is complete.
#include "eval/ruler_run.h"

#include <stdlib.h>
#include <string.h>

#include "checkpoints/model_tokenizer.h"
#include "core/common.h"
#include "eval/sample.h"
#include "model/decode.h"

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

void ruler_answer(GPT *m, Comm *ring, const Tokenizer *tok, int64_t start, const RulerDoc *d, int max_tokens, RulerAnswer *a) {
    size_t cap = 64;
    *a = (RulerAnswer){.text = xcalloc(cap, 1, "an answer")};
    uint32_t *ids;   // (prompt_tokens) ids < vocab < 2^31: their signed view is the prompt
    a->prompt_tokens = model_prompt_ids(tok, start, (const unsigned char *)d->text, d->n, &ids);
    Decoder s;
    decoder_init(&s, m, ring, max_tokens);
    double t0 = now_seconds();
    const float *logits = decode_prefill(&s, (const int32_t *)ids, (int)a->prompt_tokens);
    double t1 = now_seconds();
    for (int i = 0; i < max_tokens; i++) {
        int t = decode_agree(&s, logits_argmax(logits, m->cfg.vocab_size));
        if (t == tok->eos) break;
        answer_put(a, tok, (uint32_t)t, &cap);
        a->made++;
        if (ruler_score(d, a->text) == 1) break;   // complete: the same text on every rank, so every rank stops here
        if (i + 1 < max_tokens) logits = decode_step(&s, t);
    }
    a->prefill_s = t1 - t0, a->decode_s = now_seconds() - t1;
    a->score = ruler_score(d, a->text);
    decoder_free(&s);
    free(ids);
}

void ruler_answer_free(RulerAnswer *a) {
    free(a->text);
    *a = (RulerAnswer){0};
}
