// tests/eval/test_ruler.c — RULER's tasks as text (eval/ruler.h), measured in bytes and in words: every preset's document checked by parsing it (its answer is the asked needle's, the chain's, the most common words'), determinism, lengths and depths, scores of hand-made answers, the answerer targets, the effective length; a document through a random model (eval/ruler_suite.h, eval/needle.h).
// References are independent of the generator: the test parses the documents itself (the variable chains, the word
// counts, the alias table), and two answerers written here stand for models: one copies the sentence sharing the
// most content words with the question (it must find every single needle and do no better than chance on the
// no-literal-match needle), one answers nothing (0 everywhere).
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check.h"
#include "checkpoints/model_tokenizer.h"
#include "core/common.h"
#include "tokenizer/tokenizer.h"
#include "eval/ruler.h"
#include "eval/ruler_suite.h"
#include "eval/sample.h"
#include "model/gpt.h"
#include "model/ops.h"
#include "tokenizer/tokenizer.h"

static size_t measure_bytes(void *ctx, const char *text, size_t n) {
    (void)ctx, (void)text;
    return n;
}

// Another unit: runs of non-space bytes (a crude word tokenizer); ctx counts the calls.
static size_t measure_words(void *ctx, const char *text, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += !isspace((unsigned char)text[i]) && (i == 0 || isspace((unsigned char)text[i - 1]));
    ++*(int *)ctx;
    return k;
}

// Held-out-like prose: short paragraphs of plain sentences, none about magic numbers, clubs or floorboards.
static const char *const PROSE_SENTENCES[] = {
    "The ferry left the harbour at dawn and reached the far shore before noon.",
    "Farmers in the valley bring their bread and cheese to market every Saturday.",
    "A long road winds through the hills, past orchards and a ruined mill.",
    "Rain fell for three days, and the streams rose over their stony banks.",
    "The library keeps maps that show the coast as sailors drew it centuries ago.",
    "Children ran along the beach, chasing gulls that never let them come close.",
    "In winter the lake freezes, and the village skates on it under lanterns.",
    "Her grandfather built boats by hand and taught her how to read the wind.",
    "Most of the town's houses are painted white, with shutters the colour of the sea.",
    "The train crosses a high bridge where the gorge is at its narrowest.",
    "Bakers start work long before sunrise so that the loaves are warm at seven.",
    "On clear nights the observatory opens its dome to visitors from the school.",
};

static char *make_prose(size_t *n) {
    size_t cap = 1 << 16, len = 0;
    char *p = malloc(cap);
    int k = (int)(sizeof PROSE_SENTENCES / sizeof *PROSE_SENTENCES);
    for (int para = 0; len + 2048 < cap; para++) {
        for (int i = 0; i < 5; i++) {
            const char *s = PROSE_SENTENCES[(para * 7 + i * 5) % k];
            len += (size_t)snprintf(p + len, cap - len, "%s%s", s, i < 4 ? " " : "\n\n");
        }
    }
    *n = len;
    return p;
}

static char *prose;
static size_t prose_n;

// sample_generate's sink: ids[0] counts, ids[1..] the tokens.
static void collect_token(void *ctx, uint32_t token) {
    int32_t *ids = ctx;
    if (ids[0] < 15) ids[1 + ids[0]++] = (int32_t)token;
}

static RulerSpec preset(const char *name) {
    RulerSpec s;
    if (ruler_preset(name, &s) != 0) {
        fprintf(stderr, "no preset %s\n", name);
        exit(1);
    }
    s.prose = prose, s.prose_n = prose_n;
    return s;
}

static RulerDoc generate(const RulerSpec *s, uint64_t seed, uint64_t sample, size_t target) {
    RulerDoc d;
    char why[512] = "";
    int rc = ruler_generate(s, seed, sample, target, measure_bytes, NULL, &d, why, sizeof why);
    CHECK(rc == 0, "task %d at %zu: %s", (int)s->task, target, why);
    if (rc) exit(1);
    return d;
}

// ---- the answerers ---------------------------------------------------------------------------------------------

static const char *const STOP[] = {"a", "an", "the", "of", "for", "is", "are", "in", "to", "and", "what", "which", "all", "it",
                                   "i", "you", "will", "me", "about", "be", "this", "that", "with", "some", "one", "there",
                                   "here", "we", "go", "as", "at", "on", "by", "its", "their", "them"};

// The content words of s[0..n): lowercase runs of letters and digits, less the stop words; into w (at most max).
static int content_words(const char *s, size_t n, char w[][48], int max) {
    int k = 0;
    for (size_t i = 0; i < n;) {
        if (!isalnum((unsigned char)s[i])) {
            i++;
            continue;
        }
        char word[48];
        size_t j = 0;
        while (i < n && isalnum((unsigned char)s[i])) {
            if (j < sizeof word - 1) word[j++] = (char)tolower((unsigned char)s[i]);
            i++;
        }
        word[j] = 0;
        bool stop = false;
        for (size_t t = 0; t < sizeof STOP / sizeof *STOP; t++) stop |= strcmp(word, STOP[t]) == 0;
        if (!stop && k < max) snprintf(w[k++], 48, "%s", word);
    }
    return k;
}

// Distinct content words of a that b also has.
static int shared_words(const char *a, size_t an, const char *b, size_t bn) {
    static char wa[4096][48], wb[256][48];
    int na = content_words(a, an, wa, 4096), nb = content_words(b, bn, wb, 256), shared = 0;
    for (int i = 0; i < nb; i++) {
        bool dup = false, in_a = false;
        for (int j = 0; j < i; j++) dup |= strcmp(wb[i], wb[j]) == 0;
        for (int j = 0; j < na && !dup; j++) in_a |= strcmp(wb[i], wa[j]) == 0;
        shared += in_a && !dup;
    }
    return shared;
}

// A sentence of the context ends at a newline or at '.', '?', '!' before a space.
static size_t sentence_len(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n' || ((s[i] == '.' || s[i] == '?' || s[i] == '!') && (i + 1 == n || s[i + 1] == ' '))) return i + 1;
    return n;
}

// The answerer that copies by surface match: the context's sentence sharing the most content words with the
// question (the first of equals), into out.
static void answer_by_overlap(const RulerDoc *d, char *out, size_t cap) {
    const char *q = d->text + d->question_at;
    size_t qn = d->prefix_at - d->question_at, best_at = 0, best_n = 0;
    int best = -1;
    for (size_t at = 0; at < d->question_at;) {
        size_t n = sentence_len(d->text + at, d->question_at - at);
        int k = shared_words(q, qn, d->text + at, n);
        if (k > best) best = k, best_at = at, best_n = n;
        at += n;
    }
    snprintf(out, cap, "%.*s", (int)best_n, d->text + best_at);
}

// ---- tests -----------------------------------------------------------------------------------------------------

static void test_presets_and_checks(void) {
    int n = 0;
    for (; ruler_preset_name(n); n++) {
        RulerSpec s = preset(ruler_preset_name(n));
        char why[256] = "";
        CHECK(ruler_spec_check(&s, why, sizeof why) == 0, "%s refused: %s", ruler_preset_name(n), why);
    }
    CHECK(n == 12, "%d presets, expected RULER's 11 (less QA) and nolima", n);
    RulerSpec s;
    CHECK(ruler_preset("niah_single_9", &s) == -1, "an unknown task loads");
    char why[256] = "";
    RulerDoc d;
    s = preset("niah_multiquery"), s.queries = 5;
    CHECK(ruler_spec_check(&s, why, sizeof why) == -1 && strstr(why, "queries <= keys"), "5 queries of 4 keys: %s", why);
    s = preset("niah_single_2"), s.prose = NULL;
    CHECK(ruler_spec_check(&s, why, sizeof why) == -1 && strstr(why, "prose"), "prose without text: %s", why);
    s = preset("niah_single_1"), s.n_depths = 1, s.depths[0] = 1.5;
    CHECK(ruler_spec_check(&s, why, sizeof why) == -1 && strstr(why, "outside 0..1"), "depth 1.5: %s", why);
    s.depths[0] = 0.5, s.n_depths = 2;
    CHECK(ruler_spec_check(&s, why, sizeof why) == -1 && strstr(why, "2 depths for 1 needles"), "2 depths: %s", why);
    s = preset("cwe"), s.freq_common = 3;
    CHECK(ruler_spec_check(&s, why, sizeof why) == -1 && strstr(why, "freq_common > freq_rare"), "cwe 3 vs 3: %s", why);
    s = preset("vt"), s.hay = RULER_HAY_NEEDLES;
    CHECK(ruler_spec_check(&s, why, sizeof why) == -1 && strstr(why, "noise or prose"), "vt in needles: %s", why);
    s = preset("niah_single_1");
    CHECK(ruler_generate(&s, 1, 0, 100, measure_bytes, NULL, &d, why, sizeof why) == -1 && strstr(why, "longer length"),
          "100 bytes: %s", why);
    s = preset("niah_single_2"), s.prose = "no end here", s.prose_n = 11;
    CHECK(ruler_spec_check(&s, why, sizeof why) == -1 && strstr(why, "no sentence end"), "prose without a sentence: %s", why);
    CHECK(ruler_generate(&s, 1, 0, 2000, measure_bytes, NULL, &d, why, sizeof why) == -1 && strstr(why, "no sentence end"),
          "prose without a sentence generates: %s", why);
}

static int count_in(const char *s, size_t n, const char *word) {
    int k = 0;
    size_t m = strlen(word);
    for (size_t i = 0; i + m <= n; i++) k += memcmp(s + i, word, m) == 0;
    return k;
}

// The items are the document's answer, found by parsing the document (not through the generator's records).
static void check_answer_in_doc(const char *name, const RulerSpec *s, const RulerDoc *d) {
    const char *ctx = d->text;
    size_t cn = d->hay_end;
    if (s->task == RULER_NIAH) {   // every item is a value of a needle naming an asked key
        for (int i = 0; i < d->n_items; i++) {
            char needle[160];
            bool found = false;
            for (int j = 0; j < d->n_needles && !found; j++) {
                size_t len = strcspn(ctx + d->needle_at[j], "\n");
                snprintf(needle, sizeof needle, "%.*s", (int)len, ctx + d->needle_at[j]);
                const char *for_ = strstr(needle, " for "), *is = strstr(needle, " is: ");
                if (!for_ || !is) continue;
                char key[64];
                snprintf(key, sizeof key, "%.*s", (int)(is - for_ - 5), for_ + 5);
                const char *q = d->text + d->question_at;
                found = strncmp(is + 5, d->items[i], strlen(d->items[i])) == 0 && strstr(q, key) != NULL;
            }
            CHECK(found, "%s: item %s is no asked key's value", name, d->items[i]);
        }
    } else if (s->task == RULER_CWE || s->task == RULER_FWE) {   // the items are strictly the most frequent words
        size_t ln = cn - d->hay_at + 2;   // the list as " w w ... w ": every word between spaces
        char *list = malloc(ln + 1);
        list[0] = ' ', list[ln - 1] = ' ', list[ln] = 0;
        memcpy(list + 1, ctx + d->hay_at, ln - 2);
        for (size_t i = 0; i < ln; i++) list[i] = list[i] == '\n' ? ' ' : list[i];
        int least_item = 1 << 30, most_other = 0, n_seen = 0;
        static char seen[20000][48];
        for (size_t at = 1; at < ln;) {
            size_t e = at;
            while (e < ln && list[e] != ' ') e++;
            char w[48], pat[64];
            snprintf(w, sizeof w, "%.*s", (int)(e - at), list + at);
            at = e + 1;
            bool dup = false, item = false;
            for (int i = 0; i < n_seen && !dup; i++) dup = strcmp(seen[i], w) == 0;
            if (dup || !w[0] || isdigit((unsigned char)w[0]) || n_seen == 20000) continue;
            snprintf(seen[n_seen++], 48, "%s", w);
            snprintf(pat, sizeof pat, " %s ", w);
            int c = count_in(list, ln, pat);
            for (int i = 0; i < d->n_items; i++) item |= strcmp(w, d->items[i]) == 0;
            if (item) least_item = c < least_item ? c : least_item;
            else most_other = c > most_other ? c : most_other;
        }
        int items_seen = 0;
        for (int i = 0; i < d->n_items; i++)
            for (int k = 0; k < n_seen; k++) items_seen += strcmp(seen[k], d->items[i]) == 0;
        CHECK(items_seen == d->n_items && least_item > most_other, "%s: %d of %d answer words in the list; one appears %d times, "
              "another word %d", name, items_seen, d->n_items, least_item, most_other);
        free(list);
    } else if (s->task == RULER_VT) {   // resolve every "VAR X = ..." to its value; the items are those of the asked one
        char names[64][8], vals[64][8];
        int k = 0;
        for (const char *p = ctx; (p = strstr(p, "VAR ")) && p < ctx + cn && k < 64; p += 4) {
            if (p >= ctx + 2 && p[-2] == '=') continue;   // "= VAR X" is a right-hand side
            const char *eq = p + 4 + 5;
            if (strncmp(eq, " = ", 3)) continue;
            snprintf(names[k], 8, "%.5s", p + 4);
            snprintf(vals[k], 8, "%.5s", strncmp(eq + 3, "VAR ", 4) == 0 ? eq + 7 : eq + 3);
            k++;
        }
        for (int pass = 0; pass < k; pass++)   // substitute variables by their values until only numbers are left
            for (int i = 0; i < k; i++)
                for (int j = 0; j < k; j++)
                    if (strcmp(vals[i], names[j]) == 0) memcpy(vals[i], vals[j], 8);
        const char *q = strstr(d->text + d->question_at, "the value ") + 10;
        int bound = 0, matched = 0;
        for (int i = 0; i < k; i++) {
            if (strncmp(vals[i], q, 5)) continue;
            bound++;
            for (int t = 0; t < d->n_items; t++) matched += strcmp(names[i], d->items[t]) == 0;
        }
        CHECK(bound == s->hops + 1 && matched == bound && d->n_items == bound, "%s: %d names bound to the value, %d items, %d matched",
              name, bound, d->n_items, matched);
    } else {   // NOLIMA: the alias in the question names a person in the table; that person's needle holds the item
        const char *q = d->text + d->question_at, *al = strstr(q, "belongs to the ") + 15;
        char alias[64], name_of[64] = "", pat[160];
        snprintf(alias, sizeof alias, "%.*s", (int)strcspn(al, "?"), al);
        snprintf(pat, sizeof pat, " is the %s", alias);
        const char *hit = strstr(ctx, pat);
        CHECK(hit != NULL, "%s: the alias '%s' is in no table", name, alias);
        if (!hit) return;
        const char *start = hit;
        while (start > ctx && start[-1] != ' ') start--;
        snprintf(name_of, sizeof name_of, "%.*s", (int)(hit - start), start);
        snprintf(pat, sizeof pat, "%s once tucked %s ", name_of, d->items[0]);
        CHECK(strstr(ctx, pat) != NULL, "%s: no needle '%s'", name, pat);
        // the asked needle and the question share no content word
        const char *needle = strstr(ctx, pat);
        CHECK(shared_words(needle, sentence_len(needle, cn), q, d->prefix_at - d->question_at) == 0,
              "%s: the needle and the question share a content word", name);
    }
}

// Every preset at several lengths: the length reached within one piece, the answer in the document.
static void test_every_task(void) {
    size_t targets[] = {1500, 4000, 16000, 64000};
    for (int t = 0; ruler_preset_name(t); t++) {
        const char *name = ruler_preset_name(t);
        RulerSpec s = preset(name);
        for (size_t li = 0; li < sizeof targets / sizeof *targets; li++) {
            RulerDoc d = generate(&s, 11, li, targets[li]);
            CHECK(d.tokens == d.n && d.tokens <= targets[li] && d.next_tokens > targets[li] && d.next_tokens - d.tokens <= 600,
                  "%s at %zu: %zu bytes, one more piece %zu", name, targets[li], d.n, d.next_tokens);
            CHECK(d.n_items >= 1 && strlen(d.text) == d.n && d.hay_at < d.hay_end && d.question_at < d.prefix_at && d.prefix_at < d.n,
                  "%s: %d items, offsets %zu %zu %zu %zu", name, d.n_items, d.hay_at, d.hay_end, d.question_at, d.prefix_at);
            check_answer_in_doc(name, &s, &d);
            ruler_doc_free(&d);
        }
    }
}

// The same tasks measured in words: the target reached within one piece in that unit, in a few measures (doubling
// and halving would take about twice log2 of the pieces).
static void test_other_measure(void) {
    size_t targets[] = {300, 2000, 12000};
    for (int t = 0; ruler_preset_name(t); t++) {
        RulerSpec s = preset(ruler_preset_name(t));
        for (int li = 0; li < 3; li++) {
            RulerDoc d;
            char why[512] = "";
            int calls = 0;
            int rc = ruler_generate(&s, 8, (uint64_t)li, targets[li], measure_words, &calls, &d, why, sizeof why);
            CHECK(rc == 0, "%s at %zu words: %s", ruler_preset_name(t), targets[li], why);
            if (rc) continue;
            int calls_doc = 0;
            size_t words = measure_words(&calls_doc, d.text, d.n);
            CHECK(words == d.tokens && words <= targets[li] && d.next_tokens > targets[li] && d.next_tokens - words <= 100,
                  "%s at %zu words: %zu words, one more piece %zu", ruler_preset_name(t), targets[li], words, d.next_tokens);
            CHECK(calls <= 16, "%s at %zu words: %d measures", ruler_preset_name(t), targets[li], calls);
            ruler_doc_free(&d);
        }
    }
}

static void test_determinism(void) {
    for (int t = 0; ruler_preset_name(t); t++) {
        RulerSpec s = preset(ruler_preset_name(t));
        RulerDoc a = generate(&s, 5, 3, 6000), b = generate(&s, 5, 3, 6000), c = generate(&s, 5, 4, 6000),
                 e = generate(&s, 6, 3, 6000);
        CHECK(a.n == b.n && memcmp(a.text, b.text, a.n) == 0 && memcmp(a.items, b.items, sizeof a.items) == 0,
              "%s: the same seed and sample give two documents", ruler_preset_name(t));
        CHECK(strcmp(a.text, c.text) != 0 && strcmp(a.text, e.text) != 0, "%s: another sample or seed gives the same document",
              ruler_preset_name(t));
        ruler_doc_free(&a), ruler_doc_free(&b), ruler_doc_free(&c), ruler_doc_free(&e);
    }
}

// A needle at depth x has about x of the haystack's other text before it (within a piece and the other needles).
static void test_depths(void) {
    const char *names[] = {"niah_single_1", "niah_single_2", "niah_multikey_1", "nolima"};
    double depths[] = {0, 0.1, 0.25, 0.5, 0.8, 1};
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 6; i++) {
            RulerSpec s = preset(names[k]);
            s.n_depths = 1, s.depths[0] = depths[i];
            RulerDoc d = generate(&s, 3, (uint64_t)i, 20000);
            size_t needles = 0, before_others = 0;
            for (int j = 0; j < d.n_needles; j++) {
                size_t len = sentence_len(d.text + d.needle_at[j], d.n) + 1;   // a needle ends with ". "
                needles += len;
                if (j > 0 && d.needle_at[j] < d.needle_at[0]) before_others += len;
            }
            double hay = (double)(d.hay_end - d.hay_at - needles), at = (double)(d.needle_at[0] - d.hay_at - before_others);
            double tol = (s.hay == RULER_HAY_NOISE ? 90.0 : 513.0) / 2 / hay;   // half a piece
            CHECK(at / hay >= depths[i] - tol - 1e-9 && at / hay <= depths[i] + tol + 1e-9, "%s depth %g: the needle at %.4f of the haystack",
                  names[k], depths[i], at / hay);
            ruler_doc_free(&d);
        }
}

static void test_scores(void) {
    for (int t = 0; ruler_preset_name(t); t++) {
        const char *name = ruler_preset_name(t);
        RulerSpec s = preset(name);
        RulerDoc d = generate(&s, 9, 0, 8000);
        char right[4096] = "", upper[4096], partly[4096] = "";
        int kept = d.n_items == 1 ? 1 : d.n_items / 2;   // the partly right answer's items
        for (int i = 0; i < d.n_items; i++) {
            snprintf(right + strlen(right), sizeof right - strlen(right), "%s%s", i ? ", " : " ", d.items[i]);
            if (i < kept) snprintf(partly + strlen(partly), sizeof partly - strlen(partly), "%s ", d.items[i]);
        }
        for (size_t i = 0; i <= strlen(right); i++) upper[i] = (char)toupper((unsigned char)right[i]);
        CHECK(ruler_score(&d, right) == 1.0 && ruler_score(&d, upper) == 1.0, "%s: the right answer scores %g, upper case %g", name,
              ruler_score(&d, right), ruler_score(&d, upper));
        CHECK(fabs(ruler_score(&d, partly) - (double)kept / d.n_items) < 1e-12, "%s: %d of %d items score %g", name, kept, d.n_items,
              ruler_score(&d, partly));
        CHECK(ruler_score(&d, "I could not find it in the text.") == 0 && ruler_score(&d, "") == 0 && ruler_score(&d, NULL) == 0,
              "%s: a wrong or empty answer scores above 0", name);
        char cut[64];   // an item less its last character is no match (string match on the whole item)
        snprintf(cut, sizeof cut, "%.*s", (int)strlen(d.items[0]) - 1, d.items[0]);
        CHECK(d.n_items > 1 || ruler_score(&d, cut) == 0, "%s: '%s' (cut) scores %g", name, cut, ruler_score(&d, cut));
        ruler_doc_free(&d);
    }
}

// The answerer targets: copying the best-matching sentence finds every single needle, and on the no-literal-match
// needle does no better than choosing one person at random; answering nothing scores 0 on every task.
static void test_answerers(void) {
    const char *single[] = {"niah_single_1", "niah_single_2", "niah_single_3"};
    int samples = 20;
    for (int k = 0; k < 3; k++) {
        RulerSpec s = preset(single[k]);
        double sum = 0;
        for (int i = 0; i < samples; i++) {
            RulerDoc d = generate(&s, 21, (uint64_t)i, i % 2 ? 3000 : 12000);
            char ans[1024];
            answer_by_overlap(&d, ans, sizeof ans);
            sum += ruler_score(&d, ans);
            ruler_doc_free(&d);
        }
        CHECK(sum == samples, "%s: the overlap answerer scores %.1f %%, not 100 %%", single[k], 100 * sum / samples);
    }
    RulerSpec s = preset("nolima");
    double sum = 0, chance = 1.0 / s.keys;
    for (int i = 0; i < 40; i++) {
        RulerDoc d = generate(&s, 21, (uint64_t)i, i % 2 ? 3000 : 12000);
        char ans[1024];
        answer_by_overlap(&d, ans, sizeof ans);
        sum += ruler_score(&d, ans);
        ruler_doc_free(&d);
    }
    CHECK(sum / 40 <= chance, "nolima: the overlap answerer scores %.1f %%, above chance %.1f %%", 100 * sum / 40, 100 * chance);
    printf("overlap answerer: 100 %% on single NIAH, %.1f %% on nolima (chance %.1f %%)\n", 100 * sum / 40, 100 * chance);
    for (int t = 0; ruler_preset_name(t); t++) {
        RulerSpec p = preset(ruler_preset_name(t));
        double none = 0;
        for (int i = 0; i < 4; i++) {
            RulerDoc d = generate(&p, 2, (uint64_t)i, 5000);
            none += ruler_score(&d, "");
            ruler_doc_free(&d);
        }
        CHECK(none == 0, "%s: the empty answerer scores %g", ruler_preset_name(t), none);
    }
}

// Variable tracking with several chains and more hops; multi-key distractors near the asked key.
static void test_vt_and_distractors(void) {
    RulerSpec s = preset("vt");
    s.chains = 3, s.hops = 6;
    RulerDoc d = generate(&s, 4, 1, 9000);
    check_answer_in_doc("vt 3 chains 6 hops", &s, &d);
    for (int j = 1; j < s.hops + 1; j++)
        CHECK(d.needle_at[j] > d.needle_at[j - 1], "vt: hop %d before the hop it reads", j);
    ruler_doc_free(&d);
    // niah_multikey_1 asks each of its 4 keys of one document (samples 4..7: document 1): the same text up to the
    // question, the asked key's needle answers, every other needle is a near miss of the asked key.
    s = preset("niah_multikey_1");
    RulerDoc first = generate(&s, 4, 4, 9000);
    bool asked_each[4] = {false};
    for (int a = 0; a < 4; a++) {
        d = generate(&s, 4, 4 + (uint64_t)a, 9000);
        CHECK(d.question_at == first.question_at && memcmp(d.text, first.text, d.question_at) == 0,
              "multikey: ask %d's document differs from ask 0's before the question", a);
        const char *q = d.text + d.question_at + strlen("What are all the special magic numbers for ");
        char asked[64];
        snprintf(asked, sizeof asked, "%.*s", (int)(strstr(q, " mentioned") - q), q);
        const char *dash = strchr(asked, '-');
        int own = 0;
        for (int j = 0; j < d.n_needles; j++) {
            const char *n = d.text + d.needle_at[j] + strlen("One of the special magic numbers for ");
            char key[64];
            snprintf(key, sizeof key, "%.*s", (int)(strstr(n, " is: ") - n), n);
            const char *kd = strchr(key, '-');
            bool same_adj = kd - key == dash - asked && strncmp(key, asked, (size_t)(dash - asked)) == 0,
                 same_noun = strcmp(kd, dash) == 0;
            if (strcmp(key, asked) == 0) {
                own++;
                if (j < 4) asked_each[j] = true;
                CHECK(strstr(n, d.items[0]) == n + strlen(key) + strlen(" is: "), "multikey: ask %d's needle holds no %s", a, d.items[0]);
            } else {
                CHECK(same_adj || same_noun, "multikey ask %d: distractor %s is not near %s", a, key, asked);
            }
        }
        CHECK(own == 1 && d.n_items == 1, "multikey ask %d: %d needles of the asked key, %d items", a, own, d.n_items);
        char ans[1024];
        answer_by_overlap(&d, ans, sizeof ans);
        CHECK(ruler_score(&d, ans) == 1, "multikey ask %d: the overlap answerer took '%s'", a, ans);
        ruler_doc_free(&d);
    }
    CHECK(asked_each[0] && asked_each[1] && asked_each[2] && asked_each[3], "multikey: the 4 asks do not ask the 4 keys");
    ruler_doc_free(&first);
}

static void test_effective_length(void) {
    int64_t lengths[] = {1000, 2000, 4000, 8000};
    // (4 lengths, 2 tasks, 2 samples): means by length 1.0, 0.9, 0.5, 0.9
    double scores[] = {1, 1, 1, 1, 1, 0.8, 0.9, 0.9, 0.5, 0.5, 0, 1, 1, 0.8, 1, 0.8};
    NeedleResults t = {.n_len = 4, .n_col = 2, .samples = 2, .n_values = 1, .lengths = lengths, .values = scores};
    CHECK(fabs(needle_cell_mean(&t, 2, 0) - 0.9) < 1e-12 && fabs(needle_cell_mean(&t, 5, 0) - 0.5) < 1e-12, "cell means %g %g",
          needle_cell_mean(&t, 2, 0), needle_cell_mean(&t, 5, 0));
    double want[] = {1, 0.9, 0.5, 0.9};
    for (int li = 0; li < 4; li++)
        CHECK(fabs(needle_length_mean(&t, li) - want[li]) < 1e-12, "length %d: mean %g, want %g", li, needle_length_mean(&t, li), want[li]);
    CHECK(needle_effective_length(&t, RULER_THRESHOLD_DEFAULT) == 2000, "effective length %lld at 85.6 %%",
          (long long)needle_effective_length(&t, RULER_THRESHOLD_DEFAULT));
    CHECK(needle_effective_length(&t, 0.5) == 8000, "effective length %lld at 50 %%", (long long)needle_effective_length(&t, 0.5));
    CHECK(needle_effective_length(&t, 1.0) == 1000 && needle_effective_length(&t, 1.01) == 0, "at 100 %%: %lld, above: %lld",
          (long long)needle_effective_length(&t, 1.0), (long long)needle_effective_length(&t, 1.01));
}

// d through m (a kept context with context): its answer's text into a (freed by the caller), the work into st.
static void answer(NeedleDecoder *dec, GPT *m, const Tokenizer *tok, const RulerDoc *d, int max_tokens, bool context,
                   RulerAnswer *a, NeedleStats *st, size_t *prompt_tokens) {
    NeedlePrompt p;
    ruler_prompt(tok, tok->eos, d, max_tokens, context, &p);
    *a = (RulerAnswer){.d = d, .tok = tok};
    needle_answer(dec, m, NULL, &p, ruler_take, a, st);
    if (!a->text) a->text = xcalloc(1, 1, "an answer");
    *prompt_tokens = p.n;
    free(p.ids);
}

// A random tiny byte-level model: the measure counts its tokens; the answer is greedy decoding (sample_generate's);
// the decoding stops once the answer holds every item, and not before.
static void test_answer_through_a_model(void) {
    ModelConfig c = {.n_layer = 2, .dim = 32, .n_head = 4, .n_kv_head = 2, .ffn_dim = 64, .vocab_size = TOK_VOCAB_SIZE,
                     .rope_theta = 10000, .norm_eps = 1e-5f};
    GPT m;
    gpt_init(&m, &c, &BACKEND_CPU, 5, GPT_TRAIN);
    Tokenizer tok;
    tokenizer_bytes(&tok);
    RulerTokMeasure tm = {tokenizer_encoder(&tok), NULL, 0};
    RulerSpec s = preset("niah_single_1");
    RulerDoc d;
    char why[512] = "";
    CHECK(ruler_generate(&s, 3, 0, 700, ruler_measure_tokens, &tm, &d, why, sizeof why) == 0 && d.tokens == d.n,
          "byte tokens: %zu for %zu bytes (%s)", d.tokens, d.n, why);
    snprintf(d.items[0], RULER_ITEM_CHARS, "%s", "\x01never");   // an item no answer holds: all 12 tokens decoded
    NeedleDecoder dec = {0};
    RulerAnswer full;
    NeedleStats fs;
    size_t prompt_n;
    answer(&dec, &m, &tok, &d, 12, false, &full, &fs, &prompt_n);
    int32_t ref[16] = {0};   // (1 + 12) the count, then sample_generate's greedy tokens
    SampleOptions o = {.tokens = 12, .temperature = 0, .stop_at_eos = true};
    SampleResult r;
    uint32_t *ids;   // (d.n + 1) the start token (EOS, as ringgpt's byte-level models start) and the prompt's bytes
    size_t n_ids = model_prompt_ids(&tok, tok.eos, (const unsigned char *)d.text, d.n, &ids);
    sample_generate(&m, NULL, &tok, ids, n_ids, &o, collect_token, ref, &r);
    free(ids);
    bool same = fs.made == r.made && prompt_n == r.prompt_tokens && prompt_n == d.n + 1 && fs.prefilled == prompt_n;
    for (int i = 0; i < r.made && same; i++) same = (unsigned char)full.text[i] == (ref[1 + i] ? ref[1 + i] : ' ');
    CHECK(same && fs.made >= 3 && ruler_score(&d, full.text) == 0, "the answer (%d tokens, score %g) is not sample_generate's %d "
          "greedy tokens", fs.made, ruler_score(&d, full.text), r.made);
    snprintf(d.items[0], RULER_ITEM_CHARS, "%.2s", full.text);   // complete after 2 tokens
    RulerAnswer early;
    NeedleStats es;
    answer(&dec, &m, &tok, &d, 12, false, &early, &es, &prompt_n);
    CHECK(es.made == 2 && ruler_score(&d, early.text) == 1 && strncmp(early.text, full.text, 2) == 0, "stopped after %d tokens, "
          "score %g", es.made, ruler_score(&d, early.text));
    d.n_items = 2;   // one item found, one never: no early stop, half the score
    snprintf(d.items[1], RULER_ITEM_CHARS, "%s", "\x01never");
    RulerAnswer half;
    NeedleStats hs;
    answer(&dec, &m, &tok, &d, 12, false, &half, &hs, &prompt_n);
    CHECK(hs.made == fs.made && ruler_score(&d, half.text) == 0.5, "one of two items: %d tokens, score %g", hs.made,
          ruler_score(&d, half.text));
    free(full.text), free(early.text), free(half.text);
    ruler_doc_free(&d);
    // The 4 asks of one multi-key document through one kept prefill equal each ask through a prefill of its own: the
    // context runs once, then only each question's tokens.
    s = preset("niah_multikey_1");
    for (int a = 0; a < 4; a++) {
        CHECK(ruler_generate(&s, 3, 4 + (uint64_t)a, 900, ruler_measure_tokens, &tm, &d, why, sizeof why) == 0, "%s", why);
        snprintf(d.items[0], RULER_ITEM_CHARS, "%s", "\x01never");   // every answer decodes all 8 tokens
        NeedleDecoder alone = {0};
        RulerAnswer x, y;
        NeedleStats xs, ys;
        answer(&dec, &m, &tok, &d, 8, true, &x, &xs, &prompt_n);
        answer(&alone, &m, &tok, &d, 8, false, &y, &ys, &prompt_n);
        size_t tail = d.n - d.question_at;   // byte tokens: the question and the answer's prefix
        CHECK(xs.made == 8 && strcmp(x.text, y.text) == 0, "ask %d: '%s' through the kept prefill, '%s' alone", a, x.text, y.text);
        CHECK(ys.prefilled == prompt_n && xs.prefilled == (a == 0 ? prompt_n : tail), "ask %d: %zu and %zu of %zu ids run", a,
              xs.prefilled, ys.prefilled, prompt_n);
        free(x.text), free(y.text);
        needle_decoder_free(&alone);
        if (a < 3) ruler_doc_free(&d);
    }
    // A prompt prefilled whole takes the cache the context was in: the next ask prefills its context again.
    RulerDoc other;
    CHECK(ruler_generate(&s, 4, 0, 700, ruler_measure_tokens, &tm, &other, why, sizeof why) == 0, "%s", why);
    RulerAnswer x, y;
    NeedleStats xs, ys;
    answer(&dec, &m, &tok, &other, 8, false, &x, &xs, &prompt_n);
    free(x.text);
    answer(&dec, &m, &tok, &d, 8, true, &x, &xs, &prompt_n);
    NeedleDecoder alone = {0};
    answer(&alone, &m, &tok, &d, 8, false, &y, &ys, &prompt_n);
    CHECK(strcmp(x.text, y.text) == 0 && xs.prefilled == prompt_n, "after another prompt: '%s' (%zu of %zu ids run), alone '%s'",
          x.text, xs.prefilled, prompt_n, y.text);
    free(x.text), free(y.text);
    needle_decoder_free(&alone), needle_decoder_free(&dec);
    ruler_doc_free(&other), ruler_doc_free(&d);
    free(tm.ids);
    tokenizer_encoder_free(&tm.enc);
    tokenizer_free(&tok);
    gpt_free(&m);
}

int main(void) {
    prose = make_prose(&prose_n);
    test_presets_and_checks();
    test_every_task();
    test_other_measure();
    test_determinism();
    test_depths();
    test_scores();
    test_answerers();
    test_vt_and_distractors();
    test_effective_length();
    test_answer_through_a_model();
    free(prose);
    return check_summary();
}
