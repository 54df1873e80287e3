// data/prepare_synth.c — prepare's synthetic datasets: passkey (in --tokenizer's tokens) or recall documents under a mix, with text records between them.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "core/rng.h"
#include "data/prepare_impl.h"

enum { TEXT_RECORD_MIN = 256, TEXT_RECORD_MAX = 1024 };

static bool is_passkey(const PreparePlan *plan) { return strcmp(plan->spec.synthetic, "passkey") == 0; }

static int64_t longest_doc(const PreparePlan *plan) {
    int64_t longest = 0;
    for (int i = 0; i < plan->n_lens; i++) longest = plan->lens[i] > longest ? plan->lens[i] : longest;
    return longest;
}

// The text records' text (the mix's "text", read when "text-frac" asks for records): at least one record long.
static void load_text(PreparePlan *plan) {
    const PrepareMix *m = &plan->spec.mix;
    if (!m->text) return;
    if (access(m->text, R_OK) != 0) fail_usage("%s: \"text\" %s: cannot open (%s); check the path", m->path, m->text, strerror(errno));
    if (!(m->text_frac > 0)) return;
    plan->text = read_whole_file(m->text, &plan->text_len);
    if (plan->text_len < TEXT_RECORD_MAX)
        fail_usage("%s: \"text\" %s holds %zu bytes; its records are up to %d bytes long: give more text", m->path, m->text, plan->text_len,
                   TEXT_RECORD_MAX);
}

// The haystack the needles of a "haystack-frac" share of the documents hide in, checked apart from "held-out"
// (the evaluation's haystack) and long enough for the longest document.
static void load_haystack(PreparePlan *plan) {
    const PrepareMix *m = &plan->spec.mix;
    if (!m->haystack) return;
    for (int i = 0; i < 2; i++) {   // named by the mix's key (haystack_load's messages name the paths alone)
        const char *key = i ? "held-out" : "haystack", *path = i ? m->held_out : m->haystack;
        if (path && access(path, R_OK) != 0) fail_usage("%s: \"%s\" %s: cannot open (%s); check the path", m->path, key, path, strerror(errno));
    }
    haystack_load(m->haystack, &plan->hay);
    if (m->held_out) {
        Haystack held;
        haystack_load(m->held_out, &held);
        haystack_check_apart(&plan->hay, m->haystack, &held, m->held_out);
        haystack_free(&held);
    }
    haystack_encode(&plan->hay, &plan->tok);   // a --tokenizer's ids: windows and lengths count them
    uint64_t longest = (uint64_t)longest_doc(plan);
    if (plan->hay.n < longest)
        fail_usage("%s: \"haystack\" %s holds %" PRIu64 " %s of text, shorter than the longest document (%" PRIu64 "); give more text "
                   "or shorter --doc-len", m->path, m->haystack, plan->hay.n, plan->tok.bpe ? "tokens" : "bytes", longest);
}

// Recall documents and text records stay bytes: with a --tokenizer, passkey documents only.
static void check_tokenizer(const PreparePlan *plan, bool passkey) {
    const PrepareSpec *s = &plan->spec;
    if (!plan->tok.bpe) return;
    if (!passkey) fail_usage("--synthetic recall writes byte260 documents; drop --tokenizer %s", s->tokenizer);
    if (s->mix.passkey.recall_frac > 0)
        fail_usage("%s: \"recall-frac\" %g: recall documents are byte260 only; drop it with --tokenizer %s", s->mix.path ? s->mix.path : "the mix",
                   s->mix.passkey.recall_frac, s->tokenizer);
}

void prepare_synth_plan(PreparePlan *plan) {
    const PrepareSpec *s = &plan->spec;
    bool passkey = strcmp(s->synthetic, "passkey") == 0;
    if (!passkey && strcmp(s->synthetic, "recall") != 0) fail_usage("--synthetic must be passkey or recall, not '%s'", s->synthetic);
    char err[1024];
    if (prepare_mix_check_task(&s->mix, passkey, err, sizeof err) != 0) fail_usage("%s", err);
    check_tokenizer(plan, passkey);
    PrepareMix mix = s->mix;   // its shortest document counted in the tokenizer's tokens
    mix.passkey.text = synth_text_new(&plan->tok);
    uint64_t need = prepare_mix_min_doc_len(&mix, passkey);
    synth_text_free(mix.passkey.text);
    for (int i = 0; i < plan->n_lens; i++)
        if ((uint64_t)plan->lens[i] < need)
            fail_usage("--doc-len %" PRId64 " is too short for a %s document (at least %" PRIu64 ", the EOS included)", plan->lens[i],
                       s->synthetic, need);
    load_text(plan);
    load_haystack(plan);
}

// After each synthetic document, with probability text_frac: a record of 256..1023 bytes of the text (with a
// --tokenizer, their ids: enc), loss on every token, drawn from its own random stream.
static void text_record(Prep *p, const PreparePlan *plan, Rng *rng, TokEncoder *enc) {
    if (!plan->text || !(rng_uniform(rng) < plan->spec.mix.text_frac)) return;
    size_t n = TEXT_RECORD_MIN + (size_t)rng_below(rng, TEXT_RECORD_MAX - TEXT_RECORD_MIN);
    size_t at = (size_t)rng_below(rng, (uint64_t)(plan->text_len - n));
    uint32_t tok[TEXT_RECORD_MAX], *ids = tok;
    uint8_t weight[TEXT_RECORD_MAX];
    size_t m = n, cap = 0;
    if (plan->tok.bpe) {
        ids = NULL, m = 0;
        tokenizer_encode(enc, plan->text + at, n, &ids, &m, &cap);
        if (m > TEXT_RECORD_MAX) m = TEXT_RECORD_MAX;   // byte fallback can spend several ids on a byte
    } else {
        for (size_t i = 0; i < n; i++) tok[i] = plan->text[at + i];
    }
    memset(weight, 1, m);
    prep_doc_tokens(p, ids, weight, m);
    prep_doc_end(p, 1);
    if (ids != tok) free(ids);
    p->in_bytes += n;
}

// What a passkey mix realised: short documents hold fewer distractors and questions than asked for.
static void count_passkey(PrepareResult *r, const PasskeyInfo *pk) {
    if (pk->needles == 0) return;   // a recall document
    r->passkey_docs++;
    if (pk->needles > 1) r->with_distractors++, r->distractors += (uint64_t)(pk->needles - 1), r->questions += (uint64_t)pk->asked;
}

// Document i of the task: passkey's loss on the whole answer and the EOS that ends it (as a JSONL completion),
// recall's on the queried values; everything else 0. Returns its tokens (no EOS).
static uint64_t synth_doc(const PreparePlan *plan, const PasskeyMix *mix, int64_t i, uint32_t *doc, uint8_t *weight, PrepareResult *r) {
    const PrepareSpec *s = &plan->spec;
    uint64_t len = (uint64_t)plan->lens[i % plan->n_lens] - 1;
    if (is_passkey(plan)) {
        PasskeyInfo pk;
        uint64_t n = synth_passkey_train((uint64_t)s->seed, (uint64_t)i, len, mix, doc, weight, &pk);
        count_passkey(r, &pk);
        return n;
    }
    RecallInfo rc;
    synth_recall((uint64_t)s->seed, (uint64_t)i, len, s->mix.pairs, s->mix.queries, doc, &rc);
    recall_weights(&rc, len, weight);
    return len;
}

// --doc-len counts the EOS: doc-len = seq-len gives exactly one document per training window; a list of
// lengths is cycled through.
void prep_synthesize(Prep *p, const PreparePlan *plan, PrepareResult *r) {
    const PrepareSpec *s = &plan->spec;
    size_t cap = (size_t)passkey_train_cap((uint64_t)longest_doc(plan));
    PasskeyMix mix = s->mix.passkey;
    mix.recall_pairs = s->mix.pairs, mix.recall_queries = s->mix.queries;
    if (plan->hay.n) mix.hay = plan->hay.tok, mix.hay_len = plan->hay.n;
    mix.text = synth_text_new(&plan->tok);   // NULL: byte260
    TokEncoder enc = tokenizer_encoder(&plan->tok);
    uint32_t *doc = xmalloc(cap * sizeof(uint32_t), "a synthetic document");
    uint8_t *weight = xmalloc(cap, "a synthetic document");
    Rng text_rng;
    rng_seed(&text_rng, (uint64_t)s->seed * 0x9E6C63D0676A9A99ull ^ 0x5851F42D4C957F2Dull);
    for (int64_t i = 0; i < s->docs; i++) {
        uint64_t n = synth_doc(plan, &mix, i, doc, weight, r);
        prep_doc_tokens(p, doc, weight, n);
        prep_doc_end(p, is_passkey(plan));
        p->in_bytes += n;
        text_record(p, plan, &text_rng, &enc);
        prep_progress(p);
    }
    tokenizer_encoder_free(&enc);
    synth_text_free(mix.text);
    free(doc);
    free(weight);
}
