// tests/eval/test_eval_unit.c — the eval library called directly: the passkey grid's parsing, checks, documents, table and scores through the needle harness; loss evaluation; sampling.
// A tiny random byte-level model (vocab 260) on one rank: the grid's table has its shape, every score lies in 0..1,
// the same seed gives the same keys and answers and another seed other keys, and hand-made answers score as their
// kind says (exact, a distractor's, the first needle's, drifted). Loss of the random model on text is near ln 260;
// greedy sampling is argmax and repeats itself, a seeded draw stays among the top-k.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check.h"
#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "eval/loss.h"
#include "eval/passkey.h"
#include "eval/sample.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "tokenizer/tokenizer.h"

static ModelConfig tiny_config(void) {
    return (ModelConfig){.n_layer = 2, .dim = 32, .n_head = 4, .n_kv_head = 2, .ffn_dim = 64, .vocab_size = TOK_VOCAB_SIZE,
                         .rope_theta = 10000, .norm_eps = 1e-5f};
}

static void test_depths_and_checks(void) {
    PasskeyGrid g = {.trials = 2, .seed = 7, .n_len = 1, .lengths = {300}};
    char why[512] = "";
    CHECK(passkey_grid_depths(&g, "0:1:0.25", why, sizeof why) == 0 && g.n_depth == 5 && g.depths[4] == 1 && g.depths[1] == 0.25,
          "0:1:0.25: %d depths (%s)", g.n_depth, why);
    CHECK(passkey_grid_depths(&g, "0,0.5,1", why, sizeof why) == 0 && g.n_depth == 3 && g.depths[1] == 0.5, "a list: %d depths", g.n_depth);
    CHECK(passkey_grid_depths(&g, "0:2:0.5", why, sizeof why) == -1 && strstr(why, "outside 0..1"), "0:2:0.5: %s", why);
    CHECK(passkey_grid_depths(&g, "1:0:0.5", why, sizeof why) == -1 && strstr(why, "start <= stop"), "1:0:0.5: %s", why);
    CHECK(passkey_grid_depths(&g, "0,x", why, sizeof why) == -1 && strstr(why, "or a list"), "0,x: %s", why);
    CHECK(passkey_grid_depths(&g, "0:1:0.0001", why, sizeof why) == -1 && strstr(why, "at most 1001"), "too many depths: %s", why);
    CHECK(passkey_grid_check(&g, why, sizeof why) == 0, "a good grid refused: %s", why);
    g.trials = 0;
    CHECK(passkey_grid_check(&g, why, sizeof why) == -1 && strstr(why, "--trials"), "0 trials: %s", why);
    g.trials = 2, g.distractors = PASSKEY_MAX_DISTRACTORS + 1;
    CHECK(passkey_grid_check(&g, why, sizeof why) == -1 && strstr(why, "give 0..8"), "9 distractors: %s", why);
    g.distractors = 3;
    CHECK(passkey_grid_check(&g, why, sizeof why) == -1 && strstr(why, "fewer --distractors"), "300 tokens, 3 distractors: %s", why);
    g.distractors = 0, g.lengths[0] = 100;
    CHECK(passkey_grid_check(&g, why, sizeof why) == -1 && strstr(why, "too short"), "100 tokens: %s", why);
    Tokenizer bytes, id_only = {.id = "gpt2", .vocab_size = 50257, .eos = 50256, .bos = -1, .pad = -1};
    tokenizer_bytes(&bytes);
    CHECK(passkey_grid_tokenizer(&g, &bytes, 260, "m", why, sizeof why) == 0 && !g.text && !g.tok, "byte260 refused: %s", why);
    CHECK(passkey_grid_tokenizer(&g, &bytes, 64, "m", why, sizeof why) == -1 && strstr(why, "vocab 64"), "vocab 64: %s", why);
    CHECK(passkey_grid_tokenizer(&g, &id_only, 50304, "m", why, sizeof why) == -1 && strstr(why, "known by id only"),
          "an id-only tokenizer: %s", why);
}

// Trial 0 of seed 7 at depth 0.5: the intro, the key's digits where the info says, the answer after them.
static void test_document(void) {
    PasskeyGrid g = {.trials = 1, .seed = 7, .n_len = 1, .lengths = {300}, .n_depth = 1, .depths = {0.5}};
    uint32_t doc[300], again[300];   // (len) each; the document is the first 299 (no EOS)
    PasskeyInfo info, info2;
    passkey_trial_doc(&g, 300, 0.5, 0, NULL, doc, &info);
    const char *intro = "There is a pass key hidden in this text. Remember it. ";
    bool starts = true;
    for (size_t i = 0; i < strlen(intro); i++) starts &= doc[i] == (uint32_t)(unsigned char)intro[i];
    char key[8], at_key[8] = "";
    snprintf(key, sizeof key, "%05u", info.key);
    for (int d = 0; d < PASSKEY_KEY_DIGITS; d++) at_key[d] = (char)doc[info.key_pos + d];
    CHECK(starts, "the document does not open with the intro");
    CHECK(strcmp(key, at_key) == 0 && info.key >= 10000 && info.key <= 99999, "key %s, the document holds %s", key, at_key);
    CHECK(info.key_pos < info.answer_pos && info.answer_pos + PASSKEY_KEY_DIGITS <= 299, "answer at %llu, key at %llu",
          (unsigned long long)info.answer_pos, (unsigned long long)info.key_pos);
    passkey_trial_doc(&g, 300, 0.5, 0, NULL, again, &info2);
    CHECK(memcmp(doc, again, 299 * sizeof(uint32_t)) == 0 && info2.key == info.key, "the same trial twice gives two documents");
    g.seed = 8;
    passkey_trial_doc(&g, 300, 0.5, 0, NULL, again, &info2);
    CHECK(info2.key != info.key, "seeds 7 and 8 give the same key %u", info.key);
}

// Three trials with hand-made answers: exact, the first needle's key, drifted off the asked key.
static void test_score_known(void) {
    PasskeyInfo info[3] = {{.key = 12345, .first_key = 12345, .others = {55555, 66666}},
                           {.key = 23456, .first_key = 55555, .others = {55555, 66666}},
                           {.key = 34567, .first_key = 34567, .others = {77777, 88888}}};
    const char *ans[3] = {"12345", "55555", "34999"};
    PasskeyScore sc = {0, 0, 0, 0, 0};
    for (int t = 0; t < 3; t++) {
        PasskeyScore one = passkey_score(&info[t], 2, ans[t]);
        sc.exact += one.exact, sc.digits += one.digits, sc.other += one.other, sc.first += one.first, sc.drifted += one.drifted;
    }
    CHECK(sc.exact == 1 && sc.other == 1 && sc.first == 1 && sc.drifted == 1, "exact %d other %d first %d drifted %d (want 1 1 1 1)",
          sc.exact, sc.other, sc.first, sc.drifted);
    CHECK(sc.digits == 5 + 1 + 2, "%d right digits, want 8 (12345; 55555 for 23456: the 5; 34999 for 34567)", sc.digits);
    char text[8];
    int32_t answer[PASSKEY_KEY_DIGITS] = {'1', '2', '3', 7, '5'};
    passkey_answer_text(answer, text);
    CHECK(strcmp(text, "123?5") == 0, "a non-printable token shows as '?': %s", text);
}

// Job j's answer and keys in a and b alike.
static bool same_job(const NeedleResults *a, size_t ja, const NeedleResults *b, size_t jb) {
    return strcmp(a->text[ja], b->text[jb]) == 0 &&
           !memcmp(a->values + ja * a->n_values, b->values + jb * b->n_values, (size_t)a->n_values * sizeof(double));
}

// The table's shape and ranges, the keys the documents hold, the cells' scores from their trials, determinism by seed.
static void test_grid(GPT *m, const CommGrid *cg) {
    PasskeyGrid g = {.trials = 2, .seed = 7, .n_len = 2, .lengths = {320, 401}, .distractors = 1};
    char why[512];
    CHECK(passkey_grid_depths(&g, "0:1:0.5", why, sizeof why) == 0 && passkey_grid_check(&g, why, sizeof why) == 0, "%s", why);
    NeedleResults r = passkey_grid_run(m, &g, cg), again = passkey_grid_run(m, &g, cg);
    size_t jobs = (size_t)g.n_len * g.n_depth * g.trials;
    // The last cell alone (401 tokens, depth 1) decodes the same answers as its slice of the whole grid: each job's
    // answer lands at its own (length, depth, trial) place.
    PasskeyGrid one = g;
    one.n_len = 1, one.lengths[0] = 401, one.n_depth = 1, one.depths[0] = 1;
    NeedleResults cell = passkey_grid_run(m, &one, cg);
    size_t last = jobs - (size_t)g.trials;
    CHECK(same_job(&cell, 0, &r, last) && same_job(&cell, 1, &r, last + 1), "the cell (401, 1) alone decodes other answers than in the grid");
    needle_results_free(&cell);
    bool same = true;
    for (size_t j = 0; j < jobs; j++) {   // job j = (length, depth, trial) in that order
        PasskeyInfo info;
        uint32_t doc[401];
        int c = (int)(j / g.trials);
        passkey_trial_doc(&g, g.lengths[c / g.n_depth], g.depths[c % g.n_depth], (int)(j % g.trials), NULL, doc, &info);
        const double *v = r.values + j * r.n_values;
        CHECK(v[PASSKEY_KEY] == info.key && v[PASSKEY_OTHER_KEYS] == info.others[0] && v[PASSKEY_FIRST_KEY] == info.first_key,
              "job %zu: key %.0f, its document's %u", j, v[PASSKEY_KEY], info.key);
        same &= same_job(&r, j, &again, j);
    }
    for (int c = 0; c < g.n_len * g.n_depth; c++) {   // a cell's scores: its trials' answers against their keys
        PasskeyScore sc = passkey_cell_score(&r, c), want = {0, 0, 0, 0, 0};
        for (size_t j = (size_t)c * g.trials; j < (size_t)(c + 1) * g.trials; j++) {
            PasskeyInfo info = {.key = (uint32_t)r.values[j * r.n_values + PASSKEY_KEY], .first_key = (uint32_t)r.values[j * r.n_values + PASSKEY_FIRST_KEY],
                                .others = {(uint32_t)r.values[j * r.n_values + PASSKEY_OTHER_KEYS]}};
            PasskeyScore one = passkey_score(&info, 1, r.text[j]);
            want.exact += one.exact, want.digits += one.digits, want.other += one.other, want.first += one.first;
        }
        CHECK(sc.exact == want.exact && sc.digits == want.digits && sc.other == want.other && sc.first == want.first &&
              sc.digits <= g.trials * PASSKEY_KEY_DIGITS && strlen(r.text[(size_t)c * g.trials]) == PASSKEY_KEY_DIGITS,
              "cell %d: exact %d digits %d, its trials' %d %d", c, sc.exact, sc.digits, want.exact, want.digits);
    }
    CHECK(same, "the same grid twice: other answers");
    g.seed = 8;
    NeedleResults other = passkey_grid_run(m, &g, cg);
    CHECK(memcmp(r.values, other.values, jobs * r.n_values * sizeof(double)) != 0, "seeds 7 and 8: the same keys");
    needle_results_free(&r);
    needle_results_free(&again);
    needle_results_free(&other);
}

// The random model's loss on text is about ln 260; the batches a split cannot hold are refused.
static void test_loss(GPT *m, const CommGrid *cg, const char *text) {
    Tokenizer tok;
    tokenizer_bytes(&tok);
    LossEval e = {.ckpt = "tiny", .tok = &tok, .data = text, .val = false, .val_fraction = 0.1f, .seq_len = 32, .batch = 2,
                  .batches = "3", .seed = 5};
    LossResult r;
    char why[512] = "";
    CHECK(loss_eval(m, &e, cg, &r, why, sizeof why) == 0, "loss_eval: %s", why);
    CHECK(fabs(r.loss - log(TOK_VOCAB_SIZE)) < 0.3 && r.tokens == 3 * 2 * 32 && r.batches == 3 && r.rest == 0,
          "loss %.4f (ln 260 = %.4f) over %.0f tokens, %d batches", r.loss, log(TOK_VOCAB_SIZE), r.tokens, r.batches);
    LossResult again;
    CHECK(loss_eval(m, &e, cg, &again, why, sizeof why) == 0 && again.loss == r.loss, "the same evaluation twice: %.6f, %.6f", r.loss,
          again.loss);
    e.batches = "all";
    CHECK(loss_eval(m, &e, cg, &r, why, sizeof why) == 0 && r.batches >= 3, "--batches all: %d batches (%s)", r.batches, why);
    e.batches = "100000";
    CHECK(loss_eval(m, &e, cg, &r, why, sizeof why) == -1 && strstr(why, "use --batches all or at most"), "too many batches: %s", why);
    e.batches = "x";
    CHECK(loss_eval(m, &e, cg, &r, why, sizeof why) == -1 && strstr(why, "positive count or all"), "--batches x: %s", why);
    tokenizer_free(&tok);
}

static void collect(void *ctx, uint32_t token) {
    int32_t *got = ctx;
    got[1 + got[0]++] = (int32_t)token;
}

// Greedy picks the argmax and repeats itself; a seeded draw stays among the top k.
static void test_sample(GPT *m, const CommGrid *cg) {
    float logits[6] = {0.1f, 2.0f, -1.0f, 1.5f, 0.0f, 1.9f};
    Rng rng;
    rng_seed(&rng, 1);
    CHECK(sample_pick(logits, 6, 0, 0, &rng) == 1, "greedy is not the argmax");
    for (int i = 0; i < 50; i++) {
        int t = sample_pick(logits, 6, 1.0f, 2, &rng);
        CHECK(t == 1 || t == 5, "top-2 drew token %d", t);
    }
    Tokenizer tok;
    tokenizer_bytes(&tok);
    SampleOptions o = {.tokens = 12, .temperature = 0, .seed = 3, .stop_at_eos = false};
    int32_t a[16] = {0}, b[16] = {0};
    SampleResult r;
    const uint32_t prompt[] = {TOK_EOS, 'a', 'b', 'c', 'a', 'b', 'c'};   // the document-start token, then "abcabc"
    sample_generate(m, cg->ring, &tok, prompt, 7, &o, collect, a, &r);
    CHECK(r.made == 12 && a[0] == 12 && r.prompt_tokens == 7, "made %d, emitted %d, prompt %zu ids (want 12, 12, 7)", r.made, a[0],
          r.prompt_tokens);
    sample_generate(m, cg->ring, &tok, prompt, 7, &o, collect, b, &r);
    CHECK(memcmp(a, b, sizeof a) == 0, "greedy sampling twice: two continuations");
    tokenizer_free(&tok);
}

int main(int argc, char **argv) {
    comm_init(&argc, &argv);
    CommGrid cg = comm_grid(1);
    char text[] = "/tmp/ringgpt_eval_unit_XXXXXX";
    int fd = mkstemp(text);
    CHECK(fd >= 0, "mkstemp");
    FILE *f = fdopen(fd, "w");
    for (int i = 0; i < 200; i++) fprintf(f, "line %d: the quick brown fox jumps over the lazy dog %d times.\n", i, i * 7 % 13);
    fclose(f);
    test_depths_and_checks();
    test_document();
    test_score_known();
    ModelConfig c = tiny_config();
    GPT m;
    gpt_init(&m, &c, &BACKEND_CPU, 11, GPT_TRAIN);
    m.loss_chunk = 64;
    test_grid(&m, &cg);
    test_loss(&m, &cg, text);
    test_sample(&m, &cg);
    gpt_free(&m);
    unlink(text);
    comm_grid_free(&cg);
    comm_finalize();
    return check_summary();
}
