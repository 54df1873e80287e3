// eval/ruler.c — RULER's tasks as text: each task's needles, question and answer from a seed; the haystack filled to a measured length with needles at their depths; string-match scores.
#include "eval/ruler.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "eval/ruler_words.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

// RULER's noise haystack: one passage, repeated.
static const char NOISE[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ";

// Random streams of a document, apart from each other.
enum { STREAM_SETUP = 1, STREAM_UNITS = 2, STREAM_SHUFFLE = 3, STREAM_WORDS = 4 };
// A prose piece longer than this is cut at a space.
enum { PROSE_PIECE_MAX = 512 };

// ---- the presets: RULER's 13 tasks less its two QA sets, and the no-literal-match needle ------------------------

typedef struct {
    const char *name;
    RulerSpec spec;
} Preset;

#define NIAH(h, k, v, nk, nv, nq) {.task = RULER_NIAH, .hay = h, .key = k, .value = v, .keys = nk, .values = nv, .queries = nq}
static const Preset PRESETS[] = {
    {"niah_single_1", NIAH(RULER_HAY_NOISE, RULER_WORD, RULER_NUMBER, 1, 1, 1)},
    {"niah_single_2", NIAH(RULER_HAY_PROSE, RULER_WORD, RULER_NUMBER, 1, 1, 1)},
    {"niah_single_3", NIAH(RULER_HAY_PROSE, RULER_WORD, RULER_UUID, 1, 1, 1)},
    {"niah_multikey_1", {.task = RULER_NIAH, .hay = RULER_HAY_PROSE, .key = RULER_WORD, .value = RULER_NUMBER, .keys = 4,
                         .values = 1, .queries = 1, .asks = 4}},
    {"niah_multikey_2", NIAH(RULER_HAY_NEEDLES, RULER_WORD, RULER_NUMBER, 1, 1, 1)},
    {"niah_multikey_3", NIAH(RULER_HAY_NEEDLES, RULER_UUID, RULER_UUID, 1, 1, 1)},
    {"niah_multivalue", NIAH(RULER_HAY_PROSE, RULER_WORD, RULER_NUMBER, 1, 4, 1)},
    {"niah_multiquery", NIAH(RULER_HAY_PROSE, RULER_WORD, RULER_NUMBER, 4, 1, 4)},
    {"vt", {.task = RULER_VT, .hay = RULER_HAY_NOISE, .chains = 1, .hops = 4}},
    {"cwe", {.task = RULER_CWE, .common = 10, .freq_common = 30, .freq_rare = 3}},
    {"fwe", {.task = RULER_FWE, .top = 3, .alpha = 2.0}},
    {"nolima", {.task = RULER_NOLIMA, .hay = RULER_HAY_PROSE, .keys = 4, .asks = 4}},
};
#undef NIAH

int ruler_preset(const char *name, RulerSpec *s) {
    for (int i = 0; i < COUNT(PRESETS); i++)
        if (strcmp(PRESETS[i].name, name) == 0) {
            *s = PRESETS[i].spec;
            return 0;
        }
    return -1;
}

const char *ruler_preset_name(int i) { return i >= 0 && i < COUNT(PRESETS) ? PRESETS[i].name : NULL; }

// ---- checks ----------------------------------------------------------------------------------------------------

static int needle_count(const RulerSpec *s) {
    switch (s->task) {
    case RULER_NIAH: return s->keys * s->values;
    case RULER_VT: return s->chains * (s->hops + 1);
    case RULER_NOLIMA: return s->keys + 1;
    default: return 0;
    }
}

static int check_niah(const RulerSpec *s, char *why, size_t n) {
    if (s->keys < 1 || s->values < 1 || s->queries < 1 || s->queries > s->keys) {
        snprintf(why, n, "NIAH: keys %d, values %d, queries %d: need keys, values >= 1 and 1 <= queries <= keys", s->keys,
                 s->values, s->queries);
        return -1;
    }
    if (s->keys * s->values > RULER_MAX_NEEDLES || s->queries * s->values > RULER_MAX_ITEMS) {
        snprintf(why, n, "NIAH: %d keys x %d values: at most %d needles and %d asked values", s->keys, s->values,
                 RULER_MAX_NEEDLES, RULER_MAX_ITEMS);
        return -1;
    }
    return 0;
}

// Asks: NIAH's key sets, nolima's people; one question elsewhere.
static int max_asks(const RulerSpec *s) {
    switch (s->task) {
    case RULER_NIAH: return s->queries > 0 ? s->keys / s->queries : 1;
    case RULER_NOLIMA: return s->keys;
    default: return 1;
    }
}

static int check_task(const RulerSpec *s, char *why, size_t n) {
    if (s->asks < 0 || s->asks > (max_asks(s) > 1 ? max_asks(s) : 1)) {
        snprintf(why, n, "asks %d: this task asks at most %d question%s of a document", s->asks, max_asks(s), max_asks(s) > 1 ? "s" : "");
        return -1;
    }
    switch (s->task) {
    case RULER_NIAH: return check_niah(s, why, n);
    case RULER_VT:
        if (s->chains < 1 || s->hops < 1 || s->chains * (s->hops + 1) > RULER_MAX_NEEDLES || s->hay == RULER_HAY_NEEDLES) {
            snprintf(why, n, "vt: chains %d, hops %d: need >= 1 each, chains x (hops + 1) <= %d, and a noise or prose haystack",
                     s->chains, s->hops, RULER_MAX_NEEDLES);
            return -1;
        }
        return 0;
    case RULER_CWE:
        if (s->common < 1 || s->common > RULER_MAX_ITEMS || s->freq_rare < 1 || s->freq_common <= s->freq_rare) {
            snprintf(why, n, "cwe: common %d, freq_common %d, freq_rare %d: need 1..%d words and freq_common > freq_rare >= 1",
                     s->common, s->freq_common, s->freq_rare, RULER_MAX_ITEMS);
            return -1;
        }
        return 0;
    case RULER_FWE:
        if (s->top < 1 || s->top > RULER_MAX_ITEMS || !(s->alpha > 0 && s->alpha <= 8)) {
            snprintf(why, n, "fwe: top %d, alpha %g: need 1..%d words and 0 < alpha <= 8", s->top, s->alpha, RULER_MAX_ITEMS);
            return -1;
        }
        return 0;
    case RULER_NOLIMA:
        if (s->keys < 1 || s->keys > RULER_N_NAMES || s->hay == RULER_HAY_NEEDLES) {
            snprintf(why, n, "nolima: %d people: give 1..%d, and a noise or prose haystack", s->keys, RULER_N_NAMES);
            return -1;
        }
        return 0;
    default: snprintf(why, n, "task %d: no such task", (int)s->task); return -1;
    }
}

static size_t sentence_start(const char *p, size_t n, size_t at);

int ruler_spec_check(const RulerSpec *s, char *why, size_t n) {
    if (check_task(s, why, n)) return -1;
    if (s->hay == RULER_HAY_PROSE && (s->task == RULER_NIAH || s->task == RULER_VT || s->task == RULER_NOLIMA)) {
        if (!s->prose || s->prose_n == 0) {
            snprintf(why, n, "a prose haystack needs its text; pass it, or use the noise haystack");
            return -1;
        }
        if (sentence_start(s->prose, s->prose_n, 0) == s->prose_n) {
            snprintf(why, n, "the prose has no sentence end ('.', '!' or '?' before white space, or a newline)");
            return -1;
        }
    }
    if (s->n_depths < 0 || s->n_depths > needle_count(s)) {
        snprintf(why, n, "%d depths for %d needles", s->n_depths, needle_count(s));
        return -1;
    }
    for (int i = 0; i < s->n_depths; i++)
        if (!(s->depths[i] >= 0 && s->depths[i] <= 1)) {
            snprintf(why, n, "depth %g is outside 0..1 (0 = the haystack's start, 1 = its end)", s->depths[i]);
            return -1;
        }
    return 0;
}

// ---- a document's generator ------------------------------------------------------------------------------------

typedef struct {
    const RulerSpec *s;
    uint64_t stream;          // this document's random streams derive from it
    Str intro, question, prefix;   // the asked question and the answer's prefix
    Str fit_question, fit_prefix;  // the ask whose question and prefix measure longest: the fit's (asks > 1)
    int ask;                  // which of the document's questions this sample asks
    bool fitting;             // build with fit_question (fit's probes), else with question
    RulerMeasure measure;
    void *ctx;
    int n_needles;
    Str needle[RULER_MAX_NEEDLES];
    double depth[RULER_MAX_NEEDLES];
    KeySet taken;             // keys and values of the needles (the needle haystack draws others)
    size_t prose_at;          // the prose's sentence this document's haystack starts on
    int freq_common;          // CWE: as fitted
    bool cwe_pairs;           // CWE: the words are word pairs (the single words are too few)
    int64_t budget0;          // FWE: the least budget whose top words are strictly the most frequent
    RulerDoc *d;
} Gen;

static void stream_rng(const Gen *g, uint64_t which, Rng *r) { rng_seed(r, g->stream ^ which * 0x9E3779B97F4A7C15ull); }

static void add_item(RulerDoc *d, const char *item) { snprintf(d->items[d->n_items++], RULER_ITEM_CHARS, "%s", item); }

static void draw_depths(Gen *g, Rng *r) {
    for (int j = 0; j < g->n_needles; j++) g->depth[j] = j < g->s->n_depths ? g->s->depths[j] : rng_uniform(r);
}

// The asked keys as RULER lists them: "a", "a, and b", "a, b, and c".
static void key_list(Str *out, char keys[][RULER_ITEM_CHARS], int n) {
    for (int i = 0; i < n; i++) str_printf(out, "%s%s", i == 0 ? "" : i + 1 == n ? ", and " : ", ", keys[i]);
}

static int asks_of(const RulerSpec *s) { return s->asks > 1 ? s->asks : 1; }

// The questions (and answers' prefixes) of a document's asks, qs and ps taken: the sample's own into g->question and
// g->prefix, and the one whose text measures longest into g->fit_question and g->fit_prefix.
static void set_questions(Gen *g, Str *qs, Str *ps, int n) {
    int longest = 0;
    size_t most = 0;
    for (int a = 0; a < n && n > 1; a++) {
        Str t = {0};
        str_printf(&t, "\n%s%s", qs[a].p, ps[a].p);
        size_t m = g->measure(g->ctx, t.p, t.n);
        if (m > most) most = m, longest = a;
        str_free(&t);
    }
    str_put(&g->question, qs[g->ask].p, qs[g->ask].n), str_put(&g->prefix, ps[g->ask].p, ps[g->ask].n);
    str_put(&g->fit_question, qs[longest].p, qs[longest].n), str_put(&g->fit_prefix, ps[longest].p, ps[longest].n);
    for (int a = 0; a < n; a++) str_free(&qs[a]), str_free(&ps[a]);
}

// Word key k shares its first or its second word with every key before it (other kinds: always near).
static bool near_all(RulerItem kind, char keys[][RULER_ITEM_CHARS], int k) {
    const char *dash = strchr(keys[k], '-');
    for (int j = 0; j < k && kind == RULER_WORD; j++) {
        const char *dj = strchr(keys[j], '-');
        if (!(dash - keys[k] == dj - keys[j] && strncmp(keys[k], keys[j], (size_t)(dash - keys[k])) == 0) && strcmp(dash, dj) != 0)
            return false;
    }
    return true;
}

static int setup_niah(Gen *g, Rng *r, char *why, size_t n) {
    const RulerSpec *s = g->s;
    char keys[RULER_MAX_NEEDLES][RULER_ITEM_CHARS];
    for (int k = 0; k < s->keys; k++) {
        const char *like = k < s->queries ? NULL : keys[(k - s->queries) % s->queries];
        // Every key of a document asked in turn is a near miss of every other: one kept word for all of them.
        int rc, tries = 0;
        do rc = draw_new(r, s->key, like, &g->taken, keys[k]);
        while (rc == 0 && asks_of(s) > 1 && !near_all(s->key, keys, k) && ++tries < 1000);
        if (rc || tries == 1000) {
            snprintf(why, n, "NIAH: no %d distinct keys of this kind", s->keys);
            return -1;
        }
    }
    const char *type = value_plural(s->value);
    str_printf(&g->intro, "Some special magic %s are hidden within the following text. Make sure to memorize it. I will "
               "quiz you about the %s afterwards.\n", type, type);
    for (int k = 0; k < s->keys; k++)
        for (int v = 0; v < s->values; v++) {
            char value[RULER_ITEM_CHARS];
            if (draw_new(r, s->value, NULL, &g->taken, value)) {
                snprintf(why, n, "NIAH: no %d distinct values of this kind", s->keys * s->values);
                return -1;
            }
            str_printf(&g->needle[g->n_needles++], "One of the special magic %s for %s is: %s. ", type, keys[k], value);
            if (k / s->queries == g->ask) add_item(g->d, value);
        }
    Str qs[RULER_MAX_NEEDLES] = {0}, ps[RULER_MAX_NEEDLES] = {0};
    for (int a = 0; a < asks_of(s); a++) {
        Str q = {0};
        key_list(&q, keys + a * s->queries, s->queries);
        str_printf(&qs[a], "What are all the special magic %s for %s mentioned in the provided text?", type, q.p);
        str_printf(&ps[a], " The special magic %s for %s mentioned in the provided text are", type, q.p);
        str_free(&q);
    }
    set_questions(g, qs, ps, asks_of(s));
    draw_depths(g, r);
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int setup_vt(Gen *g, Rng *r, char *why, size_t n) {
    const RulerSpec *s = g->s;
    int len = s->hops + 1;
    char value[RULER_MAX_NEEDLES][RULER_ITEM_CHARS];
    for (int c = 0; c < s->chains; c++) {
        char prev[RULER_ITEM_CHARS] = "";
        do snprintf(value[c], RULER_ITEM_CHARS, "%05" PRIu64, 10000 + rng_below(r, 90000));
        while (!keyset_add(&g->taken, value[c]));
        for (int h = 0; h < len; h++) {
            char name[RULER_ITEM_CHARS];
            do {
                for (int i = 0; i < 5; i++) name[i] = (char)('A' + rng_below(r, 26));
                name[5] = 0;
            } while (!keyset_add(&g->taken, name));
            if (h == 0) str_printf(&g->needle[g->n_needles++], "VAR %s = %s. ", name, value[c]);
            else str_printf(&g->needle[g->n_needles++], "VAR %s = VAR %s. ", name, prev);
            if (c == 0) add_item(g->d, name);
            memcpy(prev, name, sizeof prev);
        }
    }
    (void)why, (void)n;
    str_printf(&g->intro, "Memorize and track the chain(s) of variable assignment hidden in the following text.\n\n");
    str_printf(&g->question, "Question: Find all variables that are assigned the value %s in the text above.", value[0]);
    str_printf(&g->prefix, " Answer: According to the chain(s) of variable assignment in the text above, %d variables are "
               "assigned the value %s, they are: ", len, value[0]);
    draw_depths(g, r);
    for (int c = 0; c < s->chains; c++) qsort(g->depth + c * len, (size_t)len, sizeof(double), cmp_double);
    return 0;
}

static void setup_cwe(Gen *g) {
    const RulerSpec *s = g->s;
    str_printf(&g->intro, "Below is a numbered list of words. In these words, some appear more often than others. Memorize "
               "the ones that appear most often.\n");
    str_printf(&g->question, "Question: What are the %d most common words in the above list?", s->common);
    str_printf(&g->prefix, " Answer: The top %d words that appear most often in the list are:", s->common);
}

static void setup_fwe(Gen *g) {
    const RulerSpec *s = g->s;
    char k[16];
    count_word(s->top, k, sizeof k);
    str_printf(&g->intro, "Read the following coded text and track the frequency of each coded word. Find the %s most "
               "frequently appeared coded words.\n", k);
    str_printf(&g->question, "Question: Do not provide any explanation. What are the %s most frequently appeared words in "
               "the above coded text?", k);
    str_printf(&g->prefix, " Answer: According to the coded text above, the %s most frequently appeared words are:", k);
    // floor(B / top^a) > floor(B / (top+1)^a) for every B from here on: their difference is at least 1.
    double gap = pow(s->top, -s->alpha) - pow(s->top + 1, -s->alpha);
    g->budget0 = (int64_t)ceil(1 / gap);
}

// The asked person's needle shares no content word with the question: the needle names the person, the question
// the person's nickname, and only the alias table (elsewhere in the document) ties the two.
static int setup_nolima(Gen *g, Rng *r, char *why, size_t n) {
    const RulerSpec *s = g->s;
    int pick[RULER_N_NAMES];
    for (int i = 0; i < RULER_N_NAMES; i++) pick[i] = i;
    Str table = {0};
    str_printf(&table, "Everyone in the club has a nickname: ");
    Str qs[RULER_MAX_NEEDLES] = {0}, ps[RULER_MAX_NEEDLES] = {0};
    for (int k = 0; k < s->keys; k++) {
        int j = k + (int)rng_below(r, (uint64_t)(RULER_N_NAMES - k)), t = pick[k];
        pick[k] = pick[j], pick[j] = t;
        char alias[RULER_ITEM_CHARS], value[RULER_ITEM_CHARS];
        do snprintf(alias, sizeof alias, "%s %s", RULER_ADJS[rng_below(r, RULER_N_ADJS)], RULER_NOUNS[rng_below(r, RULER_N_NOUNS)]);
        while (!keyset_add(&g->taken, alias));
        if (draw_new(r, RULER_NUMBER, NULL, &g->taken, value)) {
            snprintf(why, n, "nolima: no %d distinct values", s->keys);
            str_free(&table);
            for (int a = 0; a < asks_of(s); a++) str_free(&qs[a]), str_free(&ps[a]);
            return -1;
        }
        str_printf(&g->needle[g->n_needles++], "%s once tucked %s beneath the floorboards. ", RULER_NAMES[pick[k]], value);
        str_printf(&table, "%s%s is the %s", k == 0 ? "" : k + 1 == s->keys ? ", and " : ", ", RULER_NAMES[pick[k]], alias);
        if (k == g->ask) add_item(g->d, value);
        if (k < asks_of(s)) str_printf(&qs[k], "Which number belongs to the %s?", alias), str_printf(&ps[k], " The number is");
    }
    str_printf(&table, ". ");
    g->needle[g->n_needles++] = table;
    str_printf(&g->intro, "Some club members hid numbers in the following text. Memorize them: I will quiz you about them "
               "afterwards.\n");
    set_questions(g, qs, ps, asks_of(s));
    draw_depths(g, r);
    return 0;
}

// The prose's first sentence start at or after `at` (wrapping); prose_n when it has no sentence end.
static bool sentence_end(const char *p, size_t n, size_t i) {
    if (p[i] == '\n') return true;
    return (p[i] == '.' || p[i] == '!' || p[i] == '?') && i + 1 < n && isspace((unsigned char)p[i + 1]);
}

static size_t sentence_start(const char *p, size_t n, size_t at) {
    for (size_t k = 0; k < n; k++) {
        size_t i = (at + k) % n;
        if (!sentence_end(p, n, i)) continue;
        size_t j = i + 1;
        while (j < n && isspace((unsigned char)p[j])) j++;
        return j % n;
    }
    return n;
}

// One prose piece from *at: to the end of its sentence and the white space after (cut at a space past
// PROSE_PIECE_MAX bytes; ended with a newline where the text wraps around). *at moves past it.
static void prose_piece(const char *p, size_t n, size_t *at, Str *out) {
    size_t i = *at, last_space = 0;
    for (; i < n && i - *at < PROSE_PIECE_MAX; i++) {
        if (isspace((unsigned char)p[i])) last_space = i;
        if (sentence_end(p, n, i)) break;
    }
    size_t end;
    if (i < n && i - *at < PROSE_PIECE_MAX) {   // a sentence end: take it and the white space after
        end = i + 1;
        while (end < n && isspace((unsigned char)p[end])) end++;
    } else if (i < n) {
        end = last_space > *at ? last_space + 1 : i;
    } else {
        end = n;
    }
    str_put(out, p + *at, end - *at);
    if (end == n && out->n && !isspace((unsigned char)out->p[out->n - 1])) str_put(out, "\n", 1);
    *at = end == n ? 0 : end;
}

// The numbered word list of CWE with `rare` rare words: the common ones freq_common times, the rare freq_rare
// times, shuffled. The words are single words, or word pairs for the whole document once the singles run out
// (common and rare alike, so the kind of word is no clue); 2 when the singles run out (the caller then sets
// cwe_pairs and starts again), -1 when the pairs do.
static int cwe_list(Gen *g, int rare, Str *hay, char *why, size_t n) {
    const RulerSpec *s = g->s;
    int singles = RULER_N_ADJS + RULER_N_NOUNS, pairs = RULER_N_ADJS * RULER_N_NOUNS, need = s->common + rare;
    int pool = g->cwe_pairs ? pairs : singles;
    if (need > pool && !g->cwe_pairs) return 2;
    if (need > pool) {
        snprintf(why, n, "cwe: %d distinct words needed, the word list has %d; use a shorter length", need, pool);
        return -1;
    }
    int *idx = xmalloc((size_t)pool * sizeof(int), "the cwe pool");   // (pool) a permutation; its first `need` are used
    for (int i = 0; i < pool; i++) idx[i] = i;
    Rng r;
    stream_rng(g, STREAM_WORDS ^ (uint64_t)(pool == pairs) << 32, &r);
    for (int i = 0; i < need; i++) {
        int j = i + (int)rng_below(&r, (uint64_t)(pool - i)), t = idx[i];
        idx[i] = idx[j], idx[j] = t;
    }
    char(*words)[RULER_ITEM_CHARS] = xmalloc((size_t)need * RULER_ITEM_CHARS, "the cwe words");   // (need)
    for (int w = 0; w < need; w++) {
        int x = idx[w];
        if (pool == pairs) snprintf(words[w], RULER_ITEM_CHARS, "%s-%s", RULER_ADJS[x / RULER_N_NOUNS], RULER_NOUNS[x % RULER_N_NOUNS]);
        else snprintf(words[w], RULER_ITEM_CHARS, "%s", x < RULER_N_ADJS ? RULER_ADJS[x] : RULER_NOUNS[x - RULER_N_ADJS]);
    }
    int entries = s->common * g->freq_common + rare * s->freq_rare;
    int *list = xmalloc((size_t)entries * sizeof(int), "the cwe list");   // (entries) word numbers 0..need-1
    int k = 0;
    for (int w = 0; w < need; w++)
        for (int c = 0; c < (w < s->common ? g->freq_common : s->freq_rare); c++) list[k++] = w;
    stream_rng(g, STREAM_SHUFFLE ^ (uint64_t)rare << 8, &r);
    for (int i = entries - 1; i > 0; i--) {
        int j = (int)rng_below(&r, (uint64_t)i + 1), t = list[i];
        list[i] = list[j], list[j] = t;
    }
    for (int i = 0; i < entries; i++) str_printf(hay, "%d. %s\n", i + 1, words[list[i]]);
    g->d->n_items = 0;
    for (int w = 0; w < s->common; w++) add_item(g->d, words[w]);
    free(idx);
    free(words);
    free(list);
    return 0;
}

// FWE's coded text at budget B: the word of rank r floor(B / r^alpha) times, shuffled; the top words are the answer.
static void fwe_text(Gen *g, int64_t budget, Str *hay) {
    const RulerSpec *s = g->s;
    int ranks = 0;
    int64_t total = 0;
    while ((int64_t)floor((double)budget / pow(ranks + 1, s->alpha)) >= 1)
        total += (int64_t)floor((double)budget / pow(ranks + 1, s->alpha)), ranks++;
    char(*words)[RULER_ITEM_CHARS] = xmalloc((size_t)ranks * RULER_ITEM_CHARS, "the fwe words");   // (ranks)
    KeySet seen = {0};
    Rng r;
    stream_rng(g, STREAM_WORDS, &r);
    for (int i = 0; i < ranks; i++)
        do coded_word(&r, words[i]);
        while (!keyset_add(&seen, words[i]));
    int *list = xmalloc((size_t)total * sizeof(int), "the fwe text");   // (total) ranks - 1
    int64_t k = 0;
    for (int i = 0; i < ranks; i++)
        for (int64_t c = (int64_t)floor((double)budget / pow(i + 1, s->alpha)); c > 0; c--) list[k++] = i;
    stream_rng(g, STREAM_SHUFFLE ^ (uint64_t)budget << 8, &r);
    for (int64_t i = total - 1; i > 0; i--) {
        int64_t j = (int64_t)rng_below(&r, (uint64_t)i + 1);
        int t = list[i];
        list[i] = list[j], list[j] = t;
    }
    for (int64_t i = 0; i < total; i++) str_printf(hay, "%s%s", i ? " " : "", words[list[i]]);
    g->d->n_items = 0;
    for (int i = 0; i < s->top; i++) add_item(g->d, words[i]);
    free(seen.slot);
    free(words);
    free(list);
}

// Needles with keys and values of their own: the haystack of RULER's hardest multi-key tasks.
static int needle_units(Gen *g, int count, Str *hay, size_t *ends, char *why, size_t n) {
    const RulerSpec *s = g->s;
    KeySet ks = keyset_copy(&g->taken);
    Rng r;
    stream_rng(g, STREAM_UNITS, &r);
    int rc = 0;
    for (int i = 0; i < count && rc == 0; i++) {
        char key[RULER_ITEM_CHARS], value[RULER_ITEM_CHARS];
        rc = draw_new(&r, s->key, NULL, &ks, key) || draw_new(&r, s->value, NULL, &ks, value) ? -1 : 0;
        if (rc) snprintf(why, n, "the needle haystack ran out of distinct keys after %d needles; use a shorter length", i);
        else str_printf(hay, "One of the special magic %s for %s is: %s. ", value_plural(s->value), key, value);
        ends[i] = hay->n;
    }
    free(ks.slot);
    return rc;
}

// The haystack of `count` pieces into hay; ends[i] where piece i ends (CWE and FWE, which have no needles, leave
// every end at the list's end).
static int make_units(Gen *g, int count, Str *hay, size_t *ends, char *why, size_t n) {
    const RulerSpec *s = g->s;
    if (s->task == RULER_CWE || s->task == RULER_FWE) {
        int rc = 0;
        if (s->task == RULER_CWE) rc = cwe_list(g, count, hay, why, n);
        else fwe_text(g, g->budget0 + count, hay);
        for (int i = 0; i < count; i++) ends[i] = hay->n;
        return rc;
    }
    if (s->hay == RULER_HAY_NEEDLES) return needle_units(g, count, hay, ends, why, n);
    size_t at = g->prose_at;
    for (int i = 0; i < count; i++) {
        if (s->hay == RULER_HAY_NOISE) str_put(hay, NOISE, sizeof NOISE - 1);
        else prose_piece(s->prose, s->prose_n, &at, hay);
        ends[i] = hay->n;
    }
    return 0;
}

// The needle at depth goes before haystack piece slot (count: after the last): the piece boundary nearest to
// depth x the haystack's bytes (ends: where each of the count pieces ends).
static int depth_slot(double depth, const size_t *ends, int count) {
    double want = depth * (double)(count ? ends[count - 1] : 0);
    int lo = 0, hi = count;   // the first boundary at or past want; boundary i is the start of piece i
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if ((double)(mid ? ends[mid - 1] : 0) < want) lo = mid + 1;
        else hi = mid;
    }
    if (lo > 0 && want - (double)(lo > 1 ? ends[lo - 2] : 0) < (double)ends[lo - 1] - want) lo--;
    return lo;
}

// The prompt with `count` haystack pieces into out; the document's offsets (and CWE's and FWE's items) into g->d.
static int build(Gen *g, int count, Str *out, char *why, size_t n) {
    RulerDoc *d = g->d;
    Str hay = {0};
    size_t *ends = xmalloc(((size_t)count + 1) * sizeof(size_t), "the haystack's pieces");   // (count)
    int rc = make_units(g, count, &hay, ends, why, n);
    if (rc == 0) {
        out->n = 0;
        str_put(out, g->intro.p, g->intro.n);
        d->hay_at = out->n;
        int slot[RULER_MAX_NEEDLES];   // (n_needles) the piece each needle goes before
        for (int j = 0; j < g->n_needles; j++) slot[j] = depth_slot(g->depth[j], ends, count);
        size_t from = 0;
        for (int i = 0; i <= count; i++) {
            for (int j = 0; j < g->n_needles; j++)
                if (slot[j] == i) {
                    d->needle_at[j] = out->n;
                    str_put(out, g->needle[j].p, g->needle[j].n);
                }
            if (i < count) str_put(out, hay.p + from, ends[i] - from), from = ends[i];
        }
        str_put(out, hay.p + from, hay.n - from);
        d->hay_end = out->n;
        str_put(out, "\n", 1);
        bool fit = g->fitting && g->fit_question.n;   // the longest ask's question while fitting
        d->question_at = out->n;
        str_put(out, fit ? g->fit_question.p : g->question.p, fit ? g->fit_question.n : g->question.n);
        d->prefix_at = out->n;
        str_put(out, fit ? g->fit_prefix.p : g->prefix.p, fit ? g->fit_prefix.n : g->prefix.n);
        d->pieces = count;
    }
    str_free(&hay);
    free(ends);
    return rc;
}

// 0, or build's error (-1, or 2: CWE's single words ran out).
static int measure_at(Gen *g, int64_t count, Str *out, RulerMeasure m, void *ctx, size_t *t, char *why, size_t n) {
    int rc = build(g, (int)count, out, why, n);
    if (rc == 0) *t = m(ctx, out->p, out->n);
    return rc;
}

enum { RULER_MAX_PIECES = 1 << 26 };

// The next piece count to measure: while no count is too long, past where the growth so far puts the target;
// then inside (lo, hi) by interpolation, or by halving when the last step did not halve the interval.
static int64_t next_probe(int64_t lo, size_t lo_t, int64_t hi, size_t hi_t, size_t t0, size_t target, bool halve) {
    int64_t p;
    if (hi < 0) {
        double rate = (double)(lo_t - t0) / (double)lo;   // measure per piece so far (lo > 0 here)
        p = rate > 0 ? lo + 1 + (int64_t)((double)(target - lo_t) / rate * 1.05) : 2 * lo;
        int64_t far = 64 * lo + 8;   // a measure that barely grew so far must not send the probe to the limit at once
        return p > far ? far : p > lo ? p : lo + 1;
    }
    if (halve) p = lo + (hi - lo) / 2;
    else p = lo + (int64_t)((double)(target - lo_t) / (double)(hi_t - lo_t) * (double)(hi - lo));
    return p <= lo ? lo + 1 : p >= hi ? hi - 1 : p;
}

// The largest piece count whose document measures at most target, built into out. 1 (with why) when even no
// piece is too long, 2 when CWE's single words run out, -1 on another error.
static int fit(Gen *g, size_t target, RulerMeasure m, void *ctx, Str *out, char *why, size_t n) {
    size_t t0, t, lo_t, hi_t = 0;
    g->fitting = true;
    int rc = measure_at(g, 0, out, m, ctx, &t0, why, n);
    if (rc) return rc;
    if (t0 > target) {
        snprintf(why, n, "the task's smallest document measures %zu, more than the length %zu; use a longer length", t0, target);
        return 1;
    }
    int64_t lo = 0, hi = -1, p = 8;
    lo_t = t0;
    bool halve = false;
    for (;;) {
        if (p > RULER_MAX_PIECES) {
            snprintf(why, n, "%" PRId64 " haystack pieces still measure %zu, at most the length %zu: the measure does not grow "
                     "with the text", lo, lo_t, target);
            return -1;
        }
        if ((rc = measure_at(g, p, out, m, ctx, &t, why, n))) return rc;
        int64_t width = hi < 0 ? 0 : hi - lo;
        if (t <= target) lo = p, lo_t = t;
        else hi = p, hi_t = t;
        if (hi >= 0 && hi - lo <= 1) break;
        halve = width > 0 && 2 * (hi - lo) > width;
        p = next_probe(lo, lo_t, hi, hi_t, t0, target, halve);
    }
    // The sample's own question: never longer than the fitted one, unless the measure is not additive over the seam.
    g->fitting = false;
    do
        if ((rc = measure_at(g, lo, out, m, ctx, &t, why, n))) return rc;
    while (t > target && lo-- > 0);
    if (t > target) {
        snprintf(why, n, "the task's smallest document measures %zu with this question, more than the length %zu; use a longer "
                 "length", t, target);
        return 1;
    }
    g->d->tokens = t, g->d->next_tokens = hi_t;
    return 0;
}

static uint64_t mix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static int setup(Gen *g, char *why, size_t n) {
    const RulerSpec *s = g->s;
    Rng r;
    stream_rng(g, STREAM_SETUP, &r);
    int rc = 0;
    switch (s->task) {
    case RULER_NIAH: rc = setup_niah(g, &r, why, n); break;
    case RULER_VT: rc = setup_vt(g, &r, why, n); break;
    case RULER_CWE: setup_cwe(g); break;
    case RULER_FWE: setup_fwe(g); break;
    default: rc = setup_nolima(g, &r, why, n); break;
    }
    bool prose = s->hay == RULER_HAY_PROSE && s->task != RULER_CWE && s->task != RULER_FWE;
    if (rc == 0 && prose) g->prose_at = sentence_start(s->prose, s->prose_n, rng_below(&r, s->prose_n));   // checked: one exists
    return rc;
}

int ruler_generate(const RulerSpec *s, uint64_t seed, uint64_t sample, size_t target, RulerMeasure measure, void *ctx,
                   RulerDoc *d, char *why, size_t n) {
    *d = (RulerDoc){0};
    if (ruler_spec_check(s, why, n)) return -1;
    uint64_t kind = (uint64_t)s->task | (uint64_t)s->hay << 4 | (uint64_t)s->key << 8 | (uint64_t)s->value << 12;
    uint64_t asks = (uint64_t)asks_of(s), doc = sample / asks;   // the asks of one document share its random streams
    Gen g = {.s = s, .d = d, .freq_common = s->freq_common, .stream = mix64(seed ^ mix64(doc ^ mix64(kind))),
             .ask = (int)(sample % asks), .measure = measure, .ctx = ctx};
    Str out = {0};
    int rc = setup(&g, why, n);
    while (rc == 0 && (rc = fit(&g, target, measure, ctx, &out, why, n)) > 0 && s->task == RULER_CWE) {
        int next = g.freq_common / 2 > s->freq_rare ? g.freq_common / 2 : s->freq_rare + 1;
        if (rc == 2) g.cwe_pairs = true, rc = 0;   // longer lists: word pairs
        else if (rc == 1 && next < g.freq_common) g.freq_common = next, rc = 0;   // short lengths: fewer repeats
    }
    if (rc == 0) d->text = out.p, d->n = out.n, d->n_needles = g.n_needles;
    else str_free(&out);
    str_free(&g.intro), str_free(&g.question), str_free(&g.prefix), str_free(&g.fit_question), str_free(&g.fit_prefix);
    for (int j = 0; j < g.n_needles; j++) str_free(&g.needle[j]);
    free(g.taken.slot);
    return rc ? -1 : 0;
}

void ruler_doc_free(RulerDoc *d) {
    free(d->text);
    *d = (RulerDoc){0};
}

// ---- scores ----------------------------------------------------------------------------------------------------

static bool contains_nocase(const char *hay, const char *needle) {
    size_t m = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t i = 0;
        while (i < m && p[i] && tolower((unsigned char)p[i]) == tolower((unsigned char)needle[i])) i++;
        if (i == m) return true;
    }
    return false;
}

double ruler_score(const RulerDoc *d, const char *answer) {
    if (!answer || !*answer || d->n_items == 0) return 0;
    int found = 0;
    for (int i = 0; i < d->n_items; i++) found += contains_nocase(answer, d->items[i]);
    return (double)found / d->n_items;
}
