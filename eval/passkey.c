// eval/passkey.c — the passkey grid: its depths and checks, each trial's document in the model's tokens, greedy decoding of the key over the ring, the scores.
#include "eval/passkey.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "tokenizer/tokenizer.h"
#include "model/decode.h"
#include "eval/sample.h"

// start:stop:step with stop included; 0 or -1 with why.
static int depth_range(PasskeyGrid *g, const char *spec, double a, double b, double step, char *why, size_t n) {
    if (!(step > 0) || !(b >= a)) {
        snprintf(why, n, "--depths %s: need start <= stop and step > 0, e.g. 0:1:0.1", spec);
        return -1;
    }
    double count = floor((b - a) / step + 1e-9) + 1;
    if (count > PASSKEY_MAX_DEPTHS) {
        snprintf(why, n, "--depths %s: %.0f depths, at most %d; use a larger step", spec, count, PASSKEY_MAX_DEPTHS);
        return -1;
    }
    for (int i = 0; i < (int)count; i++) g->depths[g->n_depth++] = a + i * step;
    return 0;
}

// A comma list; 0 or -1 with why.
static int depth_list(PasskeyGrid *g, const char *spec, char *why, size_t n) {
    for (const char *p = spec; *p;) {
        char *end;
        double v = strtod(p, &end);
        if (end == p || (*end != ',' && *end)) {
            snprintf(why, n, "--depths %s: write start:stop:step (0:1:0.1) or a list (0,0.5,1)", spec);
            return -1;
        }
        if (g->n_depth == PASSKEY_MAX_DEPTHS) {
            snprintf(why, n, "--depths: at most %d depths", PASSKEY_MAX_DEPTHS);
            return -1;
        }
        g->depths[g->n_depth++] = v;
        p = *end ? end + 1 : end;
    }
    return 0;
}

int passkey_grid_depths(PasskeyGrid *g, const char *spec, char *why, size_t n) {
    double a, b, step;
    int used = 0;
    g->n_depth = 0;
    bool range = sscanf(spec, "%lf:%lf:%lf%n", &a, &b, &step, &used) == 3 && spec[used] == 0;
    if ((range ? depth_range(g, spec, a, b, step, why, n) : depth_list(g, spec, why, n)) != 0) return -1;
    if (g->n_depth == 0) {
        snprintf(why, n, "--depths is empty; write e.g. --depths 0:1:0.1");
        return -1;
    }
    for (int i = 0; i < g->n_depth; i++) {
        if (fabs(g->depths[i] - 1) < 1e-9) g->depths[i] = 1;   // 0:1:0.1 lands on 1 up to rounding
        if (!(g->depths[i] >= 0 && g->depths[i] <= 1)) {
            snprintf(why, n, "--depths %s: depth %g is outside 0..1 (0 = the key right after the intro, 1 = just before the"
                     " question)", spec, g->depths[i]);
            return -1;
        }
    }
    return 0;
}

int passkey_grid_check(const PasskeyGrid *g, char *why, size_t n) {
    if (g->trials < 1) {
        snprintf(why, n, "--trials must be at least 1 (got %d)", g->trials);
        return -1;
    }
    long long docs = (long long)g->n_len * g->n_depth * g->trials;
    if (docs > PASSKEY_MAX_DOCS) {
        snprintf(why, n, "--trials %d: %d length%s x %d depth%s x %d trials is %lld documents, more than the %d (1M) one call "
                 "evaluates; give fewer trials, lengths or depths", g->trials, g->n_len, plural(g->n_len), g->n_depth,
                 plural(g->n_depth), g->trials, docs, PASSKEY_MAX_DOCS);
        return -1;
    }
    if (g->distractors < 0 || g->distractors > PASSKEY_MAX_DISTRACTORS) {
        snprintf(why, n, "--distractors %d: give 0..%d", g->distractors, PASSKEY_MAX_DISTRACTORS);
        return -1;
    }
    uint64_t least = passkey_min_len(g->text, g->distractors) + 2;
    for (int i = 0; i < g->n_len; i++)
        if ((uint64_t)g->lengths[i] < least) {
            snprintf(why, n, "--lengths: %" PRId64 " tokens is too short for a passkey document%s (at least %" PRIu64
                     " with its EOS); use longer lengths%s", g->lengths[i], g->distractors ? " with its distractors" : "", least,
                     g->distractors ? " or fewer --distractors" : "");
            return -1;
        }
    return 0;
}

int passkey_grid_load_haystack(PasskeyGrid *g, char *why, size_t n) {
    haystack_load(g->haystack, &g->hay);
    haystack_encode(&g->hay, g->tok);
    for (int i = 0; i < g->n_len; i++)
        if (g->hay.n < (uint64_t)g->lengths[i]) {
            if (g->text)
                snprintf(why, n, "--haystack %s holds %" PRIu64 " tokens of text (%" PRIu64 " bytes), fewer than a document of --lengths "
                         "%" PRId64 "; give more text or shorter --lengths", g->haystack, g->hay.n, g->hay.bytes, g->lengths[i]);
            else
                snprintf(why, n, "--haystack %s holds %" PRIu64 " bytes of text, fewer than a document of --lengths %" PRId64 "; give "
                         "more text or shorter --lengths", g->haystack, g->hay.n, g->lengths[i]);
            return -1;
        }
    return 0;
}

int passkey_grid_tokenizer(PasskeyGrid *g, const Tokenizer *t, int model_vocab, const char *path, char *why, size_t n) {
    if (!tokenizer_can_encode(t)) {
        snprintf(why, n, "%s: its tokenizer (%s, vocab %u) is known by id only; passkey documents are text: import the model with "
                 "its tokenizer.json", path, t->id, t->vocab_size);
        return -1;
    }
    if (t->vocab_size > (uint32_t)model_vocab) {
        snprintf(why, n, "%s: its tokenizer has %u ids, more than the model's vocab %d", path, t->vocab_size, model_vocab);
        return -1;
    }
    g->tok = t->bpe ? t : NULL;
    g->text = synth_text_new(t);
    return 0;
}

void passkey_grid_free(PasskeyGrid *g) {
    haystack_free(&g->hay);
    synth_text_free(g->text);
    g->text = NULL;
}

// The haystack window of a trial: len tokens of the text starting where (seed, len, trial) says, wrapping
// around at its end; the same window for the same trial whatever the ranks. Returns where it starts.
static uint64_t hay_window(const Haystack *h, uint64_t seed, uint64_t len, int trial, uint32_t *out) {
    Rng r;
    rng_seed(&r, seed * 0xA0761D6478BD642Full ^ (len * 0xE7037ED1A0B428DBull + (uint64_t)trial));
    uint64_t at = rng_below(&r, h->n);
    for (uint64_t i = 0; i < len; i++) out[i] = h->tok[(at + i) % h->n];
    return at;
}

uint64_t passkey_trial_doc(const PasskeyGrid *g, int64_t len, double depth, int trial, uint32_t *hay, uint32_t *doc,
                           PasskeyInfo *info) {
    uint64_t content = (uint64_t)len - 1, at = 0;
    if (g->haystack) at = hay_window(&g->hay, g->seed, content, trial, hay);
    synth_passkey(g->text, g->seed, (uint64_t)trial, content, depth, g->distractors, g->haystack ? hay : NULL, doc, info);
    return at;
}

// A trial's buffers: hay (len) its haystack window, doc (len) its document.
typedef struct {
    uint32_t *hay, *doc;
} TrialBufs;

int passkey_answer_add(const Tokenizer *t, int id, int32_t *answer, int got) {
    size_t len = 0;
    const unsigned char *b = id < 0 || id == t->eos || id == t->bos || id == t->pad ? NULL : tokenizer_token(t, (uint32_t)id, &len);
    if (!b) return -1;
    for (size_t i = 0; i < len && got < PASSKEY_KEY_DIGITS; i++)
        if (got || !isspace(b[i])) answer[got++] = b[i];
    return got;
}

// A BPE model's answer after logits: tokens decoded greedily (passkey_answer_add) until PASSKEY_KEY_DIGITS
// characters, an end or PASSKEY_ANSWER_TOKENS tokens; -1 for characters it never wrote. Every rank of the ring
// takes the same tokens, so stops at the same one.
static void decode_text_answer(Decoder *s, const Tokenizer *t, const float *logits, int32_t *answer) {
    int V = s->m->cfg.vocab_size, got = 0;
    for (int k = 0; k < PASSKEY_ANSWER_TOKENS && got < PASSKEY_KEY_DIGITS; k++) {
        int id = decode_agree(s, logits_argmax(logits, V)), more = passkey_answer_add(t, id, answer, got);
        if (more < 0) break;
        got = more;
        if (got < PASSKEY_KEY_DIGITS && k + 1 < PASSKEY_ANSWER_TOKENS) logits = decode_step(s, id);
    }
    for (; got < PASSKEY_KEY_DIGITS; got++) answer[got] = -1;
}

// One trial: the prompt up to the answer, prefilled; then the key decoded greedily: byte260's 5 tokens, or a
// BPE's text. answer gets PASSKEY_KEY_DIGITS characters; returns the document's keys (the asked one and the
// distractors').
static PasskeyInfo run_trial(Decoder *s, const PasskeyGrid *g, int64_t len, double depth, int trial, TrialBufs *b,
                             int32_t *answer) {
    PasskeyInfo info;
    passkey_trial_doc(g, len, depth, trial, b->hay, b->doc, &info);
    int V = s->m->cfg.vocab_size;   // ids below V < 2^31: the signed view of the document is the prompt
    const float *logits = decode_prefill(s, (const int32_t *)b->doc, (int)info.answer_pos);
    if (g->text) {
        decode_text_answer(s, g->tok, logits, answer);
        return info;
    }
    for (int d = 0; d < PASSKEY_KEY_DIGITS; d++) {
        answer[d] = decode_agree(s, logits_argmax(logits, V));
        if (d + 1 < PASSKEY_KEY_DIGITS) logits = decode_step(s, answer[d]);
    }
    return info;
}

// Job `job`'s numbers into r (the reporting rank of its ring only; the sums after the grid share them).
static void record_job(PasskeyResults *r, const PasskeyGrid *g, size_t job, const PasskeyInfo *info, const int32_t *answer) {
    size_t K = (size_t)g->distractors;
    r->keys[job] = info->key;
    for (size_t k = 0; k < K; k++) r->others[job * K + k] = info->others[k];
    r->firsts[job] = info->first_key;
    for (int d = 0; d < PASSKEY_KEY_DIGITS; d++) r->answers[job * PASSKEY_KEY_DIGITS + d] = answer[d];
}

// The jobs of length index li that are this dp group's; *job counts every job of the grid.
static void run_length(Decoder *s, const PasskeyGrid *g, const CommGrid *cg, int li, size_t *job, PasskeyResults *r) {
    int64_t len = g->lengths[li];
    TrialBufs b = {g->haystack ? xmalloc((size_t)len * sizeof(uint32_t), "a haystack window") : NULL,
                   xmalloc((size_t)len * sizeof(uint32_t), "a passkey document")};
    bool reporter = cg->sp_index == 0;   // one rank per ring writes a job's numbers
    double t_len = now_seconds();
    for (int di = 0; di < g->n_depth; di++)
        for (int t = 0; t < g->trials; t++, (*job)++) {
            if ((int)(*job % cg->dp) != cg->dp_index) continue;
            double t0 = now_seconds();
            int32_t answer[PASSKEY_KEY_DIGITS];
            PasskeyInfo info = run_trial(s, g, len, g->depths[di], t, &b, answer);
            if (!reporter) continue;
            record_job(r, g, *job, &info, answer);
            r->seconds[li * g->n_depth + di] += now_seconds() - t0;
        }
    log_info("passkey: length %" PRId64 ": %d depth%s x %d trial%s in %.1f s\n", len, g->n_depth, plural(g->n_depth), g->trials,
             plural(g->trials), now_seconds() - t_len);
    free(b.hay);
    free(b.doc);
}

PasskeyScore passkey_score_cell(const PasskeyGrid *g, const PasskeyResults *r, int c) {
    PasskeyScore sc = {0, 0, 0, 0, 0};
    for (int t = 0; t < g->trials; t++) {
        size_t job = (size_t)c * g->trials + t;
        char key[8], first[8], ans[PASSKEY_KEY_DIGITS + 1];
        snprintf(key, sizeof key, "%05d", (int)r->keys[job]);
        snprintf(first, sizeof first, "%05d", (int)r->firsts[job]);
        passkey_answer_text(r, job, ans);
        for (int d = 0; d < PASSKEY_KEY_DIGITS; d++) sc.digits += ans[d] == key[d];
        uint32_t others[PASSKEY_MAX_DISTRACTORS];   // (distractors)
        for (int k = 0; k < g->distractors; k++) others[k] = (uint32_t)r->others[job * (size_t)g->distractors + k];
        PasskeyAnswer kind = passkey_answer_kind(ans, (uint32_t)r->keys[job], others, g->distractors);
        sc.exact += kind == PASSKEY_ANSWER_EXACT;
        sc.other += kind == PASSKEY_ANSWER_OTHER_KEY;
        sc.first += kind == PASSKEY_ANSWER_OTHER_KEY && memcmp(ans, first, PASSKEY_KEY_DIGITS) == 0;
        sc.drifted += kind == PASSKEY_ANSWER_DRIFTED;
    }
    return sc;
}

PasskeyResults passkey_grid_run(GPT *m, const PasskeyGrid *g, const CommGrid *cg) {
    int cells = g->n_len * g->n_depth, D = PASSKEY_KEY_DIGITS;
    size_t jobs = (size_t)cells * g->trials, K = (size_t)g->distractors;
    PasskeyResults r = {xcalloc(jobs * D, sizeof(int64_t), "passkey answers"), xcalloc(jobs, sizeof(int64_t), "passkey keys"),
                        xcalloc(jobs * K + 1, sizeof(int64_t), "distractor keys"),
                        xcalloc(jobs, sizeof(int64_t), "first needles' keys"), xcalloc((size_t)cells, sizeof(double), "timings"),
                        xcalloc((size_t)cells, sizeof(PasskeyScore), "passkey scores")};
    Decoder s;
    decoder_init(&s, m, cg->ring, g->text ? PASSKEY_ANSWER_TOKENS : D);
    size_t job = 0;
    for (int li = 0; li < g->n_len; li++) run_length(&s, g, cg, li, &job, &r);
    decoder_free(&s);
    comm_allreduce(cg->world, r.answers, jobs * D, COMM_I64, COMM_SUM, "passkey answers");
    comm_allreduce(cg->world, r.keys, jobs, COMM_I64, COMM_SUM, "passkey keys");
    if (K) comm_allreduce(cg->world, r.others, jobs * K, COMM_I64, COMM_SUM, "distractor keys");
    if (K) comm_allreduce(cg->world, r.firsts, jobs, COMM_I64, COMM_SUM, "first needles' keys");
    comm_allreduce(cg->world, r.seconds, (size_t)cells, COMM_F64, COMM_SUM, "passkey timings");
    for (int c = 0; c < cells; c++) r.scores[c] = passkey_score_cell(g, &r, c);
    return r;
}

void passkey_results_free(PasskeyResults *r) {
    free(r->answers);
    free(r->keys);
    free(r->others);
    free(r->firsts);
    free(r->seconds);
    free(r->scores);
    *r = (PasskeyResults){0};
}

void passkey_answer_text(const PasskeyResults *r, size_t job, char *out) {
    for (int d = 0; d < PASSKEY_KEY_DIGITS; d++) {
        int64_t t = r->answers[job * PASSKEY_KEY_DIGITS + d];
        out[d] = t >= 32 && t < 127 ? (char)t : '?';
    }
    out[PASSKEY_KEY_DIGITS] = 0;
}
