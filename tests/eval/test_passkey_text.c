// tests/eval/test_passkey_text.c — passkey documents in a BPE tokenizer's tokens: exact lengths, the needle at its depth in tokens, the text they decode to, answers read as text and scored.
// Usage: test_passkey_text TOKENIZER.json TEXT [bos] (tests/eval/passkey_text.sh trains the tokenizer with `ringgpt tokenizer
// train`; bos: the tokenizer puts BOS first, and so must every document).
// Every document is read back through the tokenizer's own decoder and checked against the generator's sentences written
// out here by hand: the intro, the filler (a prefix of the repeated sentences, or of the haystack), each needle, the
// question and its answer; lengths are checked with sentinels past the end, depths by counting the filler's tokens.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "core/common.h"
#include "data/synthetic.h"
#include "eval/passkey.h"

static const char INTRO[] = "There is a pass key hidden in this text. Remember it.";
static const char INTRO_MANY[] = "There are pass keys hidden in this text. Remember them.";
static const char SENTENCES[] = " The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";
enum { SENTINEL = 0xFFFFFFFFu };

static Tokenizer tok;
static TokEncoder enc;

// ids[0..n) as text (the tokenizer's bytes of each id), malloc'd, NUL-terminated; *ends (n) gets each id's end.
// start: the ids start a text, whose first space a SentencePiece-style tokenizer put there (its decoder drops it).
static char *decode(const uint32_t *ids, uint64_t n, size_t *ends, bool start) {
    size_t cap = 64, k = 0;
    char *s = malloc(cap);
    for (uint64_t i = 0; i < n; i++) {
        size_t len = 0;
        const unsigned char *b = tokenizer_token(&tok, ids[i], &len);
        if (!b) b = (const unsigned char *)"\x01", len = 1;   // no text: shows as a byte no check expects
        while (k + len + 1 > cap) s = realloc(s, cap *= 2);
        memcpy(s + k, b, len);
        k += len;
        if (ends) ends[i] = k;
    }
    s[k] = 0;
    if (start && k > 0 && s[0] == ' ') {
        memmove(s, s + 1, k);
        for (uint64_t i = 0; ends && i < n; i++) ends[i] -= ends[i] > 0;
    }
    return s;
}

static uint64_t count_ids(const char *text) {
    uint32_t *ids = NULL;
    size_t n = 0, cap = 0;
    tokenizer_encode(&enc, (const unsigned char *)text, strlen(text), &ids, &n, &cap);
    free(ids);
    return n;
}

// The token whose text ends at byte `at` of the decoded document (ends: each token's end), or -1.
static int64_t token_ending_at(const size_t *ends, uint64_t n, size_t at) {
    if (at == 0) return 0;
    for (uint64_t i = 0; i < n; i++)
        if (ends[i] == at) return (int64_t)i + 1;
    return -1;
}

// s[0..n) is a prefix of the sentences repeated.
static bool filler_prefix(const char *s, size_t n) {
    size_t m = strlen(SENTENCES);
    for (size_t i = 0; i < n; i++)
        if (s[i] != SENTENCES[i % m]) return false;
    return true;
}

// One document of len tokens at depth, one needle: its length, its text piece by piece, its needle at the depth in tokens.
static void check_plain(SynthText *st, uint64_t len, double depth, uint64_t doc) {
    uint32_t *ids = malloc((len + 8) * sizeof *ids);
    size_t *ends = malloc(len * sizeof *ends);
    for (uint64_t i = 0; i < len + 8; i++) ids[i] = SENTINEL;
    PasskeyInfo info;
    synth_passkey(st, 7, doc, len, depth, 0, NULL, ids, &info);
    uint64_t unset = 0, past = 0;
    for (uint64_t i = 0; i < len; i++) unset += ids[i] == SENTINEL;
    for (uint64_t i = len; i < len + 8; i++) past += ids[i] != SENTINEL;
    CHECK(unset == 0 && past == 0, "len %" PRIu64 ": %" PRIu64 " tokens unwritten, %" PRIu64 " written past the end", len, unset, past);
    uint64_t bos = tok.add_bos && tok.bos >= 0;
    CHECK(!bos || ids[0] == (uint32_t)tok.bos, "the document does not start with BOS");
    char *s = decode(ids + bos, len - bos, ends, true), needle[96], question[96];
    snprintf(needle, sizeof needle, " The pass key is %05u. Remember it.", info.key);
    snprintf(question, sizeof question, " What is the pass key? The pass key is %05u", info.key);
    const char *nd = strstr(s, needle), *q = nd ? strstr(nd + strlen(needle), " What is the pass key?") : NULL;
    bool shape = strncmp(s, INTRO, strlen(INTRO)) == 0 && nd && q && strcmp(q, question) == 0 && !strstr(nd + 1, needle);
    CHECK(shape, "len %" PRIu64 " depth %g: not intro + filler + needle + filler + question + answer: %.200s", len, depth, s);
    if (shape) {
        // The filler around the needle continues the sentences; the needle sits at round(depth * filler tokens).
        size_t a = strlen(INTRO), before = (size_t)(nd - s) - a, after_at = (size_t)(nd - s) + strlen(needle);
        size_t after = (size_t)(q - s) - after_at;
        char *filler = malloc(before + after + 1);
        memcpy(filler, s + a, before);
        memcpy(filler + before, s + after_at, after);
        CHECK(filler_prefix(filler, before + after), "len %" PRIu64 ": the filler is not the sentences in order", len);
        free(filler);
        int64_t t_intro = token_ending_at(ends, len - bos, a), t_needle = token_ending_at(ends, len - bos, (size_t)(nd - s));
        int64_t t_after = token_ending_at(ends, len - bos, after_at), t_q = token_ending_at(ends, len - bos, (size_t)(q - s));
        CHECK(t_intro >= 0 && t_needle >= 0 && t_after >= 0 && t_q >= 0, "len %" PRIu64 ": a piece ends inside a token", len);
        CHECK(t_intro == (int64_t)count_ids(INTRO), "the intro is not its own ids");
        uint64_t f_before = (uint64_t)(t_needle - t_intro), f = f_before + (uint64_t)(t_q - t_after);
        CHECK(f_before == (uint64_t)(depth * (double)f + 0.5), "len %" PRIu64 " depth %g: %" PRIu64 " of %" PRIu64 " filler tokens before the needle",
              len, depth, f_before, f);
        CHECK(info.needle_pos == (uint64_t)t_needle + bos, "needle_pos %" PRIu64 ", the needle's text starts at token %" PRId64,
              info.needle_pos, t_needle + (int64_t)bos);
        // The needle's ids are its text's in running text: after the intro's last sentence, encoded whole, it has the
        // same ids (the pieces are cut where words start).
        char context[160];
        snprintf(context, sizeof context, "Remember it.%s", needle);
        uint32_t *whole = NULL;
        size_t nw = 0, cap = 0, nc = (size_t)count_ids("Remember it.");
        tokenizer_encode(&enc, (const unsigned char *)context, strlen(context), &whole, &nw, &cap);
        CHECK(nw - nc == (size_t)(t_after - t_needle) && memcmp(whole + nc, ids + bos + t_needle, (nw - nc) * sizeof *whole) == 0,
              "the needle's ids are not its text's (%zu ids in running text, %" PRId64 " in the document)", nw - nc, t_after - t_needle);
        free(whole);
        char key[16];
        snprintf(key, sizeof key, " %05u", info.key);
        char *at_key = decode(ids + info.key_pos, len - info.answer_pos, NULL, false),
             *answer = decode(ids + info.answer_pos, len - info.answer_pos, NULL, false);
        CHECK(strcmp(at_key, key) == 0 && strcmp(answer, key) == 0, "key_pos reads '%s', answer_pos '%s', the key is '%s'", at_key, answer, key);
        free(at_key), free(answer);
    }
    free(s), free(ends), free(ids);
}

// Documents with distractors in a haystack: every needle is in the text, the filler is the haystack's text in order.
static void check_haystack(SynthText *st, const uint32_t *hay, uint64_t hay_n, uint64_t len, int distractors, uint64_t doc) {
    uint32_t *ids = malloc((len + 8) * sizeof *ids);
    for (uint64_t i = 0; i < len + 8; i++) ids[i] = SENTINEL;
    PasskeyInfo info;
    synth_passkey(st, 11, doc, len, (double)doc / 17.0, distractors, hay, ids, &info);
    uint64_t unset = 0, past = 0;
    for (uint64_t i = 0; i < len; i++) unset += ids[i] == SENTINEL;
    for (uint64_t i = len; i < len + 8; i++) past += ids[i] != SENTINEL;
    CHECK(unset == 0 && past == 0 && info.needles == distractors + 1, "haystack len %" PRIu64 ": %" PRIu64 " unwritten, %" PRIu64 " past the end",
          len, unset, past);
    uint64_t bos = tok.add_bos && tok.bos >= 0;
    char *s = decode(ids + bos, len - bos, NULL, true), *rest = strdup(s);
    // Cut every needle out: what stays is the intro, the haystack's first tokens as text, the question and its answer.
    int found = 0;
    for (int i = 0; i <= distractors; i++) {
        char tail[64];
        snprintf(tail, sizeof tail, " is %05u. Remember it.", i ? info.others[i - 1] : info.key);
        char *t = strstr(rest, tail), *head = t;
        while (head && head > rest && strncmp(head, " The pass key ", 14) != 0) head--;
        if (!t || !head || head == rest) continue;
        found++;
        memmove(head, t + strlen(tail), strlen(t + strlen(tail)) + 1);
    }
    CHECK(found == distractors + 1, "haystack len %" PRIu64 ": %d of %d needles in the text", len, found, distractors + 1);
    char *q = strstr(rest, " What is the pass key");
    const char *intro = distractors ? INTRO_MANY : INTRO;
    bool shape = strncmp(rest, intro, strlen(intro)) == 0 && q;
    CHECK(shape, "haystack len %" PRIu64 ": no intro or question: %.200s", len, s);
    if (shape) {
        char *hay_text = decode(hay, hay_n < len ? hay_n : len, NULL, false);
        size_t n = (size_t)(q - rest) - strlen(intro);
        CHECK(strncmp(rest + strlen(intro), hay_text, n) == 0, "haystack len %" PRIu64 ": the filler is not the haystack's text", len);
        char answer[32];
        snprintf(answer, sizeof answer, " is %05u", info.key);
        CHECK(strlen(q) > strlen(answer) && strcmp(q + strlen(q) - strlen(answer), answer) == 0, "the document does not end on its answer: %s", q);
        free(hay_text);
    }
    free(rest), free(s), free(ids);
}

// Training documents: long keys, distractors, two questions. The loss is on the answers' tokens, which read " DIGITS"
// and are the asked needle's key; every document is len tokens, long keys or not.
static void check_train(SynthText *st, const uint32_t *hay, uint64_t hay_n) {
    PasskeyMix mx = {.depth = -1, .edge_span = 0.03, .edge_far = 0.5, .long_frac = 0.7, .key_max = 12, .distractor_frac = 0.7,
                     .distractors = 3, .ask = 2, .alike_frac = 0.5, .hay_frac = 0.5, .hay = hay, .hay_len = hay_n, .text = st};
    const uint64_t len = 700;
    uint32_t *ids = malloc(passkey_train_cap(len) * sizeof *ids);
    uint8_t *w = malloc(passkey_train_cap(len));
    int bad_runs = 0, bad_len = 0, asked_two = 0;
    for (uint64_t k = 0; k < 60; k++) {
        PasskeyInfo info;
        uint64_t n = synth_passkey_train(3, k, len, &mx, ids, w, &info);
        bad_len += n != len;
        char *s = decode(ids, n, NULL, true);
        int runs = 0;
        for (uint64_t i = 0; i < n;) {
            if (!w[i]) {
                i++;
                continue;
            }
            uint64_t j = i;
            while (j < n && w[j]) j++;
            char *a = decode(ids + i, j - i, NULL, false), want[16], stated[96];
            size_t digits = strspn(a + 1, "0123456789");
            snprintf(want, sizeof want, "%05u", info.key);
            snprintf(stated, sizeof stated, " is%s. Remember it.", a);
            bool ok = a[0] == ' ' && digits >= 5 && digits <= 12 && a[1 + digits] == 0 && strstr(s, stated) &&
                      (runs > 0 || strncmp(a + 1, want, 5) == 0);
            if (!ok) fprintf(stderr, "document %" PRIu64 ": answer %d reads '%s' (key %s)\n", k, runs, a, want);
            bad_runs += !ok;
            runs++;
            free(a);
            i = j;
        }
        bad_runs += runs != info.asked;
        asked_two += info.asked == 2;
        free(s);
    }
    CHECK(bad_runs == 0, "%d answers in the loss are not a needle's key after a space", bad_runs);
    CHECK(bad_len == 0, "%d documents are not len tokens", bad_len);
    CHECK(asked_two > 0, "no document asked two questions");
    free(ids), free(w);
}

// The text of an answer's tokens: leading space skipped, first 5 characters, an end token stops it.
static void answer_of(const char *text, bool then_eos, int32_t *answer) {
    uint32_t *ids = NULL;
    size_t n = 0, cap = 0;
    tokenizer_encode(&enc, (const unsigned char *)text, strlen(text), &ids, &n, &cap);
    int got = 0;
    for (size_t i = 0; i < n && got < PASSKEY_KEY_DIGITS; i++) {
        int more = passkey_answer_add(&tok, (int)ids[i], answer, got);
        CHECK(more >= got, "'%s': its token %zu ends the answer", text, i);
        got = more < got ? got : more;
    }
    if (then_eos) CHECK(passkey_answer_add(&tok, (int)tok.eos, answer, got) == -1, "EOS does not end an answer");
    for (int d = got; d < PASSKEY_KEY_DIGITS; d++) answer[d] = -1;
    free(ids);
}

// Right, wrong, partly right and empty answers of key 59547, written as a model would (its tokens), and scored.
static void check_scores(void) {
    const char *texts[] = {" 59547", "61238", " 59000. Remember", "", " 84634"};
    const bool eos[] = {false, false, false, true, false};
    const char *reads[] = {"59547", "61238", "59000", "?????", "84634"};
    enum { T = 5 };
    PasskeyInfo info = {.key = 59547, .first_key = 84634, .others = {84634}};
    PasskeyScore sc = {0, 0, 0, 0, 0};
    for (int t = 0; t < T; t++) {
        int32_t a[PASSKEY_KEY_DIGITS];
        char text[PASSKEY_KEY_DIGITS + 1];
        answer_of(texts[t], eos[t], a);
        passkey_answer_text(a, text);
        CHECK(strcmp(text, reads[t]) == 0, "'%s' reads '%s', want '%s'", texts[t], text, reads[t]);
        PasskeyScore one = passkey_score(&info, 1, text);
        sc.exact += one.exact, sc.digits += one.digits, sc.other += one.other, sc.first += one.first, sc.drifted += one.drifted;
    }
    // exact: the first; digits 5 + 0 + 2 (5, 9) + 0 + 0; a distractor's key: the last (the first needle's too);
    // drifted: the partly right one (its first digit, then off).
    CHECK(sc.exact == 1 && sc.digits == 7 && sc.other == 1 && sc.first == 1 && sc.drifted == 1,
          "scores exact %d digits %d other %d first %d drifted %d", sc.exact, sc.digits, sc.other, sc.first, sc.drifted);
}

int main(int argc, char **argv) {
    if (argc != 3 && !(argc == 4 && strcmp(argv[3], "bos") == 0)) {
        fprintf(stderr, "usage: test_passkey_text TOKENIZER.json TEXT [bos]\n");
        return 2;
    }
    char err[600];
    if (tokenizer_load(argv[1], &tok, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    CHECK(tok.add_bos == (argc == 4), "the tokenizer %s BOS first", tok.add_bos ? "puts" : "does not put");
    enc = tokenizer_encoder(&tok);
    SynthText *st = synth_text_new(&tok);
    CHECK(st != NULL, "a BPE tokenizer writes bytes");
    Tokenizer bytes;
    tokenizer_bytes(&bytes);
    CHECK(synth_text_new(&bytes) == NULL, "byte260 does not write bytes");
    CHECK(passkey_min_len(st, 0) < passkey_min_len(NULL, 0), "BPE's shortest document %" PRIu64 " tokens, bytes' %" PRIu64,
          passkey_min_len(st, 0), passkey_min_len(NULL, 0));
    const uint64_t lens[] = {passkey_min_len(st, 0), passkey_min_len(st, 0) + 1, 200, 333, 1000, 4097};
    const double depths[] = {0, 0.3, 0.5, 1};
    for (int l = 0; l < 6; l++)
        for (int d = 0; d < 4; d++) check_plain(st, lens[l], depths[d], (uint64_t)(l * 4 + d));
    size_t text_len;
    unsigned char *text = read_whole_file(argv[2], &text_len);
    uint32_t *hay = NULL;
    size_t hay_n = 0, cap = 0;
    tokenizer_encode(&enc, text, text_len, &hay, &hay_n, &cap);
    for (int k = 0; k <= PASSKEY_MAX_DISTRACTORS; k += 4)
        for (uint64_t doc = 0; doc < 12; doc++) {
            uint64_t len = doc % 2 ? 1500 : passkey_min_len(st, k);   // the shortest: the bound holds for every key and name
            check_haystack(st, hay, hay_n, len, k, doc);
        }
    check_train(st, hay, hay_n);
    check_scores();
    free(hay);
    free(text);
    synth_text_free(st);
    tokenizer_encoder_free(&enc);
    tokenizer_free(&tok);
    return check_summary();
}
