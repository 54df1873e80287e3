// data/synthetic.c — generates passkey (in any tokenizer's tokens) and associative-recall documents of any length from (seed, doc).
#include "data/synthetic.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"

static const char INTRO[] = "There is a pass key hidden in this text. Remember it. ";
static const char INTRO_MANY[] = "There are pass keys hidden in this text. Remember them. ";
static const char FILLER[] = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. ";
static const char NEEDLE_PREFIX[] = "The pass key is ";
static const char NEEDLE_FOR[] = "The pass key for ";   // + name + NAMED_IS + key
static const char NAMED_IS[] = " is ";
static const char NEEDLE_SUFFIX[] = ". Remember it. ";
static const char QUESTION[] = "What is the pass key? ";        // + "The pass key is " + key
static const char QUESTION_FOR[] = "What is the pass key for ";   // + name + QUESTION_END + "The pass key for NAME is " + key
static const char QUESTION_END[] = "? ";
static const char ANSWER_END[] = ". ";   // between an answer and the next question
static const char PAIRS_INTRO[] = "Remember these pairs: ";
static const char RECALL_INTRO[] = "Recall: ";
enum { PAIR_CHARS = RECALL_KEY_CHARS + 1 + RECALL_VALUE_CHARS + 2 };   // "abcd=1234, "
// The names of keys when a document holds several (distractors): short, distinct, plain letters.
static const char *const NAMES[] = {
    "Ada",  "Alma", "Arlo", "Bea",   "Boris", "Cleo",  "Dara", "Dov",  "Edda", "Elio", "Faye", "Finn", "Gus",  "Hana",
    "Ida",  "Igor", "Ines", "Ivo",   "Jade",  "Joel",  "Juno", "Kai",  "Kira", "Lars", "Lea",  "Liam", "Lior", "Mara",
    "Milo", "Nadia", "Nils", "Noor", "Odin", "Olga",  "Omar", "Otto", "Pia",  "Quinn", "Raj", "Rhea", "Rosa", "Sami",
    "Sven", "Tara", "Teo",  "Ugo",   "Una",   "Vera",  "Vik",  "Wes",  "Xena", "Yara", "Yuri", "Zane", "Zoe",  "Ayla",
    "Bram", "Cyra", "Dima", "Enzo",  "Frida", "Gia",   "Hugo", "Iris"};
enum { N_NAMES = sizeof NAMES / sizeof NAMES[0], NAME_MAX = 5 };
#define LEN(s) ((uint64_t)(sizeof(s) - 1))

// A BPE's filler: one period of the sentences with the space before them instead of after (" The grass ... again."),
// so that periods encoded alone and put end to end are the text's ids.
static const char FILLER_BPE[] = " The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again.";
// A key piece's most ids: its space (up to 3 byte-fallback ids for a Metaspace "▁") and one per digit at worst.
enum { KEY_SPACE_IDS = 3 };

static void seed_doc(Rng *r, uint64_t seed, uint64_t doc) { rng_seed(r, seed * 0x9E3779B97F4A7C15ull ^ (doc + 0x632BE59BD9B4E019ull)); }

// Appends text to out at *p, byte tokens (recall documents).
static void put_text(uint32_t *out, uint64_t *p, const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) out[(*p)++] = (unsigned char)s[i];
}

struct SynthText {
    TokEncoder enc;
    uint32_t *filler;          // (n_filler) FILLER_BPE's ids: one period of the filler stream
    size_t n_filler;
    uint32_t *ids;             // (ids_cap) scratch: a piece's ids
    size_t ids_cap;
    int64_t bos;               // the id documents start with, or -1
    uint64_t intro, intro_many, needle, needle_named, question, question_named;   // most ids of each part (passkey_min_len)
};

enum { PIECE_MAX = 128 };   // pieces are short: the fixed sentences, names, keys

// Where a document's tokens go: st's (NULL: bytes) into out (NULL: only counted). bound: a key counts as the
// most ids it can take (passkey_min_len), not its own.
typedef struct {
    SynthText *st;
    uint32_t *out;
    uint64_t p;                // tokens so far
    bool space;                // BPE: the space the last piece ended with, which leads the next piece
    bool bound;
    char anchor[PIECE_MAX];    // BPE: the last piece's text ("" before the first)
} Writer;

static void put_id(Writer *w, uint32_t id) {
    if (w->out) w->out[w->p] = id;
    w->p++;
}

// The ids text has after anchor: those of anchor + text past anchor's own, where they start them (a piece is
// tokenized as in the running text, also by a SentencePiece-style tokenizer that puts "▁" before every text it
// encodes); else text's alone. Into st->ids, returns their count.
static size_t encode_after(SynthText *st, const char *anchor, const char *text) {
    size_t na = 0, n = 0;
    char both[2 * PIECE_MAX];
    snprintf(both, sizeof both, "%s%s", anchor, text);
    if (anchor[0]) tokenizer_encode(&st->enc, (const unsigned char *)anchor, strlen(anchor), &st->ids, &na, &st->ids_cap);
    uint32_t *a = anchor[0] ? xmalloc(na * sizeof *a + 1, "a passkey piece") : NULL;
    if (na) memcpy(a, st->ids, na * sizeof *a);
    tokenizer_encode(&st->enc, (const unsigned char *)both, strlen(both), &st->ids, &n, &st->ids_cap);
    bool after = n >= na && (na == 0 || memcmp(a, st->ids, na * sizeof *a) == 0);
    free(a);
    if (after) {
        memmove(st->ids, st->ids + na, (n - na) * sizeof *st->ids);
        return n - na;
    }
    n = 0;
    tokenizer_encode(&st->enc, (const unsigned char *)text, strlen(text), &st->ids, &n, &st->ids_cap);
    return n;
}

// A piece of text: byte for byte, or its ids after the last piece (encode_after), its trailing space moved to
// the next piece.
static void put_str(Writer *w, const char *s) {
    size_t n = strlen(s), k = n;
    if (!w->st) {
        for (size_t i = 0; i < n; i++) put_id(w, (unsigned char)s[i]);
        return;
    }
    while (k > 0 && s[k - 1] == ' ') k--;
    if (k == 0) {
        w->space = w->space || n > 0;
        return;
    }
    char text[PIECE_MAX];
    int m = snprintf(text, sizeof text, "%s%.*s", w->space ? " " : "", (int)k, s);
    if (m < 0 || (size_t)m >= sizeof text) fail("internal: a passkey piece of %zu bytes is too long", n);
    w->space = k < n;
    size_t got = encode_after(w->st, w->anchor, text);
    for (size_t i = 0; i < got; i++) put_id(w, w->st->ids[i]);
    memcpy(w->anchor, text, (size_t)m + 1);
}

// A key's digits (with a BPE, the space before them leads its piece).
static void put_key(Writer *w, const char *key) {
    if (!(w->bound && w->st)) {
        put_str(w, key);
        return;
    }
    w->p += KEY_SPACE_IDS + strlen(key);
    w->space = false;
    snprintf(w->anchor, sizeof w->anchor, " %s", key);
}

// n filler tokens continuing the filler from its offset `from`: the generator's sentences, or hay. A BPE's
// pending space stays pending: the filler's ids carry their own spaces.
static void put_filler(Writer *w, const uint32_t *hay, uint64_t from, uint64_t n) {
    const size_t m = sizeof FILLER - 1;
    const SynthText *st = w->st;
    for (uint64_t i = 0; i < n; i++)
        put_id(w, hay ? hay[from + i] : st ? st->filler[(from + i) % st->n_filler] : (unsigned char)FILLER[(from + i) % m]);
}

// One needle: "The pass key is KEY. Remember it. " (name NULL) or "The pass key for NAME is KEY. Remember it. ".
typedef struct {
    const char *name;
    char key[PASSKEY_KEY_MAX + 1];   // its digits: 5, plus a training document's extra ones
    double depth;
    uint64_t before;                 // filler tokens before it
} Needle;

// "The pass key is KEY" or "The pass key for NAME is KEY": a needle's statement, and a question's answer. Its
// key's tokens are [*key_pos, *key_end).
static void put_statement(Writer *w, const Needle *n, uint64_t *key_pos, uint64_t *key_end) {
    if (n->name) {
        put_str(w, NEEDLE_FOR);
        put_str(w, n->name);
        put_str(w, NAMED_IS);
    } else {
        put_str(w, NEEDLE_PREFIX);
    }
    *key_pos = w->p;
    put_key(w, n->key);
    *key_end = w->p;
}

static void put_needle(Writer *w, const Needle *n, uint64_t *key_pos) {
    uint64_t end;
    put_statement(w, n, key_pos, &end);
    put_str(w, NEEDLE_SUFFIX);
}

// "What is the pass key for NAME? " (or the unnamed question) and the statement that answers it; the
// answer (the key) is [*answer, *answer_end).
static void put_question(Writer *w, const Needle *n, uint64_t *answer, uint64_t *answer_end) {
    if (n->name) {
        put_str(w, QUESTION_FOR);
        put_str(w, n->name);
        put_str(w, QUESTION_END);
    } else {
        put_str(w, QUESTION);
    }
    put_statement(w, n, answer, answer_end);
}

// "The pass key is KEY" and the rest, in bytes: the byte tokenizer's lengths.
static uint64_t statement_len(const Needle *n, int key_digits) {
    return (n->name ? LEN(NEEDLE_FOR) + strlen(n->name) + LEN(NAMED_IS) : LEN(NEEDLE_PREFIX)) + (uint64_t)key_digits;
}

static uint64_t needle_len(const Needle *n, int key_digits) { return statement_len(n, key_digits) + LEN(NEEDLE_SUFFIX); }

static uint64_t question_len(const Needle *n, int key_digits) {
    return (n->name ? LEN(QUESTION_FOR) + strlen(n->name) + LEN(QUESTION_END) : LEN(QUESTION)) + statement_len(n, key_digits);
}

uint64_t passkey_min_len(const SynthText *st, int distractors) {
    if (st)
        return (uint64_t)(st->bos >= 0) + (distractors ? st->intro_many : st->intro) +
               (uint64_t)(distractors + 1) * (distractors ? st->needle_named : st->needle) +
               (distractors ? st->question_named : st->question);
    Needle longest = {.name = distractors ? "NNNNN" : NULL};   // NAME_MAX letters
    return LEN(INTRO_MANY) * (distractors > 0) + LEN(INTRO) * (distractors == 0) +
           (uint64_t)(distractors + 1) * needle_len(&longest, PASSKEY_KEY_DIGITS) + question_len(&longest, PASSKEY_KEY_DIGITS);
}

// A needle's and a question's most ids in st's tokens (any 5-digit key), after an intro or a needle (the pieces
// that come before them, filler aside).
static uint64_t most_ids(SynthText *st, const char *name, bool question) {
    static const char *const before[] = {INTRO, INTRO_MANY, NEEDLE_SUFFIX};
    uint64_t most = 0;
    for (int i = 0; i < 3; i++) {
        Needle n = {.name = name, .key = "00000"};
        Writer w = {.st = st, .bound = true};
        put_str(&w, before[i]);
        uint64_t a, b, start = w.p;
        if (question) put_question(&w, &n, &a, &b);
        else put_needle(&w, &n, &a);
        most = w.p - start > most ? w.p - start : most;
    }
    return most;
}

SynthText *synth_text_new(const Tokenizer *t) {
    if (!t || !t->bpe) return NULL;
    SynthText *st = xcalloc(1, sizeof *st, "a tokenizer's passkey text");
    st->enc = tokenizer_encoder(t);
    st->bos = t->add_bos && t->bos >= 0 ? t->bos : -1;
    size_t n = encode_after(st, "There and back again.", FILLER_BPE);   // a period as it follows the one before
    st->filler = xmalloc(n * sizeof *st->filler + 1, "the passkey filler");
    memcpy(st->filler, st->ids, n * sizeof *st->filler);
    st->n_filler = n;
    Writer w = {.st = st};
    put_str(&w, INTRO);
    st->intro = w.p;
    w = (Writer){.st = st};
    put_str(&w, INTRO_MANY);
    st->intro_many = w.p;
    st->needle = most_ids(st, NULL, false);
    st->question = most_ids(st, NULL, true);
    for (int i = 0; i < N_NAMES; i++) {
        uint64_t nd = most_ids(st, NAMES[i], false), q = most_ids(st, NAMES[i], true);
        st->needle_named = nd > st->needle_named ? nd : st->needle_named;
        st->question_named = q > st->question_named ? q : st->question_named;
    }
    return st;
}

void synth_text_free(SynthText *st) {
    if (!st) return;
    tokenizer_encoder_free(&st->enc);
    free(st->filler);
    free(st->ids);
    free(st);
}

// A key's first PASSKEY_KEY_DIGITS digits as a number.
static uint32_t first_digits(const char *key) {
    uint32_t v = 0;
    for (int d = 0; d < PASSKEY_KEY_DIGITS; d++) v = v * 10 + (uint32_t)(key[d] - '0');
    return v;
}

PasskeyAnswer passkey_answer_kind(const char *answer, uint32_t key, const uint32_t *others, int n_others) {
    char asked[16], k[16];
    snprintf(asked, sizeof asked, "%05u", key);
    if (memcmp(answer, asked, PASSKEY_KEY_DIGITS) == 0) return PASSKEY_ANSWER_EXACT;
    for (int i = 0; i < n_others; i++) {
        snprintf(k, sizeof k, "%05u", others[i]);
        if (memcmp(answer, k, PASSKEY_KEY_DIGITS) == 0) return PASSKEY_ANSWER_OTHER_KEY;
    }
    return answer[0] == asked[0] ? PASSKEY_ANSWER_DRIFTED : PASSKEY_ANSWER_WRONG;
}

// The document of needles nd[0..count) around `filler` filler tokens into w: (BOS,) intro, filler with each
// needle at its `before`, then the questions for nd[0..asks) in turn, each followed by its answer (nd[0] is the
// one an evaluation asks for; answer q is [answers[q], answer_ends[q])). Returns the tokens written.
static uint64_t layout(Writer *w, const Needle *nd, int count, int asks, uint64_t filler, const uint32_t *hay, PasskeyInfo *info,
                       uint64_t *answers, uint64_t *answer_ends) {
    int order[PASSKEY_MAX_DISTRACTORS + 1];
    for (int i = 0; i < count; i++) order[i] = i;
    for (int i = 1; i < count; i++)   // by position; equal positions keep their index order
        for (int j = i; j > 0 && nd[order[j]].before < nd[order[j - 1]].before; j--) {
            int t = order[j];
            order[j] = order[j - 1], order[j - 1] = t;
        }
    uint64_t at = 0, key_pos;
    if (w->st && w->st->bos >= 0) put_id(w, (uint32_t)w->st->bos);
    put_str(w, count > 1 ? INTRO_MANY : INTRO);
    for (int i = 0; i < count; i++) {
        const Needle *n = &nd[order[i]];
        put_filler(w, hay, at, n->before - at);
        at = n->before;
        if (order[i] == 0) info->needle_pos = w->p;
        put_needle(w, n, &key_pos);
        if (order[i] == 0) info->key_pos = key_pos;
    }
    put_filler(w, hay, at, filler - at);
    for (int q = 0; q < asks; q++) {
        if (q) put_str(w, ANSWER_END);
        put_question(w, &nd[q], &answers[q], &answer_ends[q]);
    }
    info->answer_pos = answers[0];
    for (int i = 1; i < count; i++) info->others[i - 1] = first_digits(nd[i].key);
    info->first_key = first_digits(nd[order[0]].key);
    return w->p;
}

// The document's own draws: every key (distinct), the asked key's depth when not given, the others' depths,
// and distinct names when there are several needles. The single needle draws exactly what it always did.
static void draw_needles(uint64_t seed, uint64_t doc, double depth, int distractors, Needle *nd) {
    Rng r;
    seed_doc(&r, seed, doc);
    uint32_t key = 10000 + (uint32_t)rng_below(&r, 90000);
    double u = rng_uniform(&r);
    nd[0] = (Needle){.depth = depth < 0 ? u : depth > 1 ? 1 : depth};
    snprintf(nd[0].key, sizeof nd[0].key, "%05u", key);
    for (int i = 1; i <= distractors; i++) {
        uint32_t k;
        do k = 10000 + (uint32_t)rng_below(&r, 90000);
        while (k == key);
        nd[i] = (Needle){.depth = rng_uniform(&r)};
        snprintf(nd[i].key, sizeof nd[i].key, "%05u", k);
    }
    for (int i = 0; distractors && i <= distractors; i++) {
        int taken;
        do {
            nd[i].name = NAMES[rng_below(&r, N_NAMES)];
            taken = 0;
            for (int j = 0; j < i; j++) taken |= nd[j].name == nd[i].name;
        } while (taken);
    }
}

// Tokens that are not filler: (BOS,) intro, needles and the questions for nd[0..asks) with their answers, as
// the document is now (in bytes a training document's asked key is still at 5 digits: the document grows by its
// extra digits), counted by laying it out without filler.
static uint64_t fixed_len(SynthText *st, const Needle *nd, int count, int asks) {
    Writer w = {.st = st};
    PasskeyInfo info;
    uint64_t a[PASSKEY_MAX_DISTRACTORS + 1], e[PASSKEY_MAX_DISTRACTORS + 1];
    return layout(&w, nd, count, asks, 0, NULL, &info, a, e);
}

// Places the needles in the filler that len tokens leave around them and the asks questions.
static uint64_t place(SynthText *st, Needle *nd, int count, int asks, uint64_t len) {
    uint64_t fixed = fixed_len(st, nd, count, asks);
    if (fixed > len) fail("internal: a passkey document of %" PRIu64 " tokens cannot hold its needles (%" PRIu64 ")", len, fixed);
    uint64_t filler = len - fixed;
    for (int i = 0; i < count; i++) {
        uint64_t before = (uint64_t)(nd[i].depth * (double)filler + 0.5);
        nd[i].before = before > filler ? filler : before;
    }
    return filler;
}

static void check_passkey_len(const SynthText *st, uint64_t len, int distractors) {
    if (distractors < 0 || distractors > PASSKEY_MAX_DISTRACTORS)
        fail_usage("--distractors %d: give 0..%d", distractors, PASSKEY_MAX_DISTRACTORS);
    if (len < passkey_min_len(st, distractors))
        fail_usage("--doc-len %" PRIu64 " is too short for a passkey document with %d distractors (at least %" PRIu64 ")", len,
                   distractors, passkey_min_len(st, distractors));
}

void synth_passkey(SynthText *st, uint64_t seed, uint64_t doc, uint64_t len, double depth, int distractors, const uint32_t *hay,
                   uint32_t *out, PasskeyInfo *info) {
    check_passkey_len(st, len, distractors);
    Needle nd[PASSKEY_MAX_DISTRACTORS + 1];
    draw_needles(seed, doc, depth, distractors, nd);
    uint64_t filler = place(st, nd, distractors + 1, 1, len), answer, answer_end;
    *info = (PasskeyInfo){.key = first_digits(nd[0].key), .depth = nd[0].depth, .needles = distractors + 1, .asked = 1};
    Writer w = {.st = st, .out = out};
    layout(&w, nd, distractors + 1, 1, filler, hay, info, &answer, &answer_end);
}

// The needle's depth of training document k: fixed, or within edge_span of either end of the filler in
// edge_frac of the documents (the far edge, depth ~0, in edge_far of them, else the near edge), else -1
// (the generator's uniform draw).
static double mix_depth(Rng *r, const PasskeyMix *mx) {
    if (mx->depth >= 0) return mx->depth;
    if (!(rng_uniform(r) < mx->edge_frac)) return -1;
    double u = rng_uniform(r) * mx->edge_span;
    return rng_uniform(r) < mx->edge_far ? u : 1 - u;
}

// An edge draw goes to one of the count needles, chosen evenly, the asked one taking that needle's uniform
// depth: with distractors, the key nearest an edge is the asked one no more often than any other.
static void share_edge(Rng *r, Needle *nd, int count) {
    int j = (int)rng_below(r, (uint64_t)count);
    double edge = nd[0].depth;
    nd[0].depth = nd[j].depth;
    nd[j].depth = edge;
}

// Each distractor's key, in alike_frac of them, takes the asked key's first 1..4 digits and then differs.
static void make_alike(Rng *r, const PasskeyMix *mx, Needle *nd, int count) {
    for (int i = 1; i < count; i++) {
        if (!(rng_uniform(r) < mx->alike_frac)) continue;
        int m = 1 + (int)rng_below(r, PASSKEY_KEY_DIGITS - 1);
        memcpy(nd[i].key, nd[0].key, (size_t)m);
        if (nd[i].key[m] == nd[0].key[m]) nd[i].key[m] = (char)('0' + (nd[0].key[m] - '0' + 1 + (int)rng_below(r, 9)) % 10);
    }
}

// 1..key_max−5 more digits appended to a key (its first 5 unchanged).
static void lengthen(Rng *r, const PasskeyMix *mx, char *key) {
    int m = 1 + (int)rng_below(r, (uint64_t)(mx->key_max - PASSKEY_KEY_DIGITS));
    for (int i = 0; i < m; i++) key[PASSKEY_KEY_DIGITS + i] = (char)('0' + rng_below(r, 10));
    key[PASSKEY_KEY_DIGITS + m] = 0;
}

// The asked key's extra digits grow its needle and its answer by at most KEY_SPACE_IDS + PASSKEY_KEY_MAX ids each.
uint64_t passkey_train_cap(uint64_t len) { return len + 2 * (PASSKEY_KEY_MAX + KEY_SPACE_IDS); }

// A BPE's document is len tokens whatever its keys: the asked key's extra digits (twice) come out of its filler too.
uint64_t passkey_train_min_len(const PasskeyMix *mix, int distractors) {
    int extra = mix->long_frac > 0 && mix->key_max > PASSKEY_KEY_DIGITS ? mix->key_max - PASSKEY_KEY_DIGITS : 0;
    return passkey_min_len(mix->text, distractors) + (uint64_t)(distractors + 2 * (mix->text != NULL)) * (uint64_t)extra;
}

// Training document k as associative recall: the mix's pairs and queries, both cut down until they fit in len.
static uint64_t recall_train(uint64_t seed, uint64_t k, uint64_t len, const PasskeyMix *mix, uint32_t *out, uint8_t *weight,
                             PasskeyInfo *info) {
    int pairs = mix->recall_pairs, queries = mix->recall_queries;
    while ((pairs > 1 || queries > 1) && recall_min_len(pairs, queries) > len) pairs -= pairs > 1, queries -= queries > 1;
    RecallInfo rc;
    synth_recall(seed, k, len, pairs, queries, out, &rc);
    recall_weights(&rc, len, weight);
    *info = (PasskeyInfo){.needles = 0};
    return len;
}

uint64_t synth_passkey_train(uint64_t seed, uint64_t k, uint64_t len, const PasskeyMix *mix, uint32_t *out, uint8_t *weight,
                             PasskeyInfo *info) {
    if (mix->recall_frac > 0) {   // its own stream: the passkey documents' draws stay what they were
        Rng rr;
        rng_seed(&rr, seed * 0x94D049BB133111EBull ^ (k + 0x2545F4914F6CDD1Dull));
        if (rng_uniform(&rr) < mix->recall_frac) return recall_train(seed, k, len, mix, out, weight, info);
    }
    Rng r;
    rng_seed(&r, seed * 0xD1B54A32D192ED03ull ^ (k + 0x8CB92BA72F3D8DD7ull));   // apart from the document's stream
    double depth = mix_depth(&r, mix);
    char extra[PASSKEY_KEY_MAX + 1] = "00000";
    bool longer = mix->key_max > PASSKEY_KEY_DIGITS && rng_uniform(&r) < mix->long_frac;
    if (longer) lengthen(&r, mix, extra);
    // Draws added after the first ones above, so documents without them are what they always were.
    int distractors = mix->distractor_frac > 0 && rng_uniform(&r) < mix->distractor_frac
                          ? 1 + (int)rng_below(&r, (uint64_t)mix->distractors) : 0;
    const uint32_t *hay = NULL;
    if (mix->hay && rng_uniform(&r) < mix->hay_frac) hay = mix->hay + rng_below(&r, mix->hay_len - len + 1);
    while (distractors > 0 && len < passkey_train_min_len(mix, distractors)) distractors--;   // as many as fit
    if (len < passkey_train_min_len(mix, distractors))
        fail_usage("--doc-len %" PRIu64 " is too short for a passkey document (at least %" PRIu64 ")", len,
                   passkey_train_min_len(mix, distractors));
    Needle nd[PASSKEY_MAX_DISTRACTORS + 1];
    draw_needles(seed, k, depth, distractors, nd);
    for (int i = 1; longer && i <= distractors; i++) lengthen(&r, mix, nd[i].key);   // the asked key is not the longest one
    if (distractors > 0 && depth >= 0 && mix->depth < 0) share_edge(&r, nd, distractors + 1);
    if (mix->alike_frac > 0) make_alike(&r, mix, nd, distractors + 1);   // after every older draw: without it, the same documents
    int asks = distractors > 0 && mix->ask > 1 ? (mix->ask < distractors + 1 ? mix->ask : distractors + 1) : 1;
    bool grow = longer && !mix->text;   // bytes: the document grows by the asked key's extra digits, twice
    if (longer && !grow) strcpy(nd[0].key + PASSKEY_KEY_DIGITS, extra + PASSKEY_KEY_DIGITS);
    while (asks > 1 && fixed_len(mix->text, nd, distractors + 1, asks) > len) asks--;   // as many questions as fit
    uint64_t filler = place(mix->text, nd, distractors + 1, asks, len);   // the others' extra digits come out of the filler
    if (grow) strcpy(nd[0].key + PASSKEY_KEY_DIGITS, extra + PASSKEY_KEY_DIGITS);
    *info = (PasskeyInfo){.key = first_digits(nd[0].key), .depth = nd[0].depth, .needles = distractors + 1, .asked = asks};
    uint64_t answers[PASSKEY_MAX_DISTRACTORS + 1], ends[PASSKEY_MAX_DISTRACTORS + 1];
    Writer w = {.st = mix->text, .out = out};
    uint64_t n = layout(&w, nd, distractors + 1, asks, filler, hay, info, answers, ends);
    memset(weight, 0, (size_t)n);
    for (int q = 0; q < asks; q++) memset(weight + answers[q], 1, (size_t)(ends[q] - answers[q]));
    return n;
}

uint64_t recall_min_len(int n_pairs, int n_queries) {
    return (sizeof PAIRS_INTRO - 1) + (uint64_t)PAIR_CHARS * n_pairs + (sizeof RECALL_INTRO - 1) + (uint64_t)PAIR_CHARS * n_queries - 2;
}

static void random_key(Rng *r, char *key, char keys[][RECALL_KEY_CHARS], int n) {
    for (;;) {
        for (int c = 0; c < RECALL_KEY_CHARS; c++) key[c] = (char)('a' + rng_below(r, 26));
        int dup = 0;
        for (int i = 0; i < n && !dup; i++) dup = memcmp(keys[i], key, RECALL_KEY_CHARS) == 0;
        if (!dup) return;
    }
}

// "abcd=1234" (+ ", " unless last); records where the key and the value start.
static void put_pair(uint32_t *out, uint64_t *p, const char *key, const char *val, int last, uint64_t *key_pos, uint64_t *val_pos) {
    if (key_pos) *key_pos = *p;
    put_text(out, p, key, RECALL_KEY_CHARS);
    put_text(out, p, "=", 1);
    *val_pos = *p;
    put_text(out, p, val, RECALL_VALUE_CHARS);
    if (!last) put_text(out, p, ", ", 2);
}

void synth_recall(uint64_t seed, uint64_t doc, uint64_t len, int n_pairs, int n_queries, uint32_t *out, RecallInfo *info) {
    if (n_pairs < 1 || n_pairs > RECALL_MAX_PAIRS || n_queries < 1 || n_queries > RECALL_MAX_PAIRS)
        fail_usage("--pairs and --queries must be in 1..%d (got %d and %d)", RECALL_MAX_PAIRS, n_pairs, n_queries);
    if (len < recall_min_len(n_pairs, n_queries))
        fail_usage("--doc-len %" PRIu64 " is too short for %d pairs and %d queries (at least %" PRIu64 ")", len, n_pairs, n_queries,
                   recall_min_len(n_pairs, n_queries));
    Rng r;
    seed_doc(&r, seed, doc);
    char keys[RECALL_MAX_PAIRS][RECALL_KEY_CHARS];
    char vals[RECALL_MAX_PAIRS][RECALL_VALUE_CHARS + 1];
    memset(info, 0, sizeof *info);
    info->n_pairs = n_pairs;
    info->n_queries = n_queries;
    for (int i = 0; i < n_pairs; i++) {
        random_key(&r, keys[i], keys, i);
        snprintf(vals[i], sizeof vals[i], "%04u", (unsigned)rng_below(&r, 10000));
    }
    uint64_t p = 0;
    put_text(out, &p, PAIRS_INTRO, sizeof PAIRS_INTRO - 1);
    for (int i = 0; i < n_pairs; i++) put_pair(out, &p, keys[i], vals[i], 0, NULL, &info->pair_value_pos[i]);
    Writer w = {.out = out, .p = p};   // byte tokens
    put_filler(&w, NULL, 0, len - recall_min_len(n_pairs, n_queries));
    p = w.p;
    put_text(out, &p, RECALL_INTRO, sizeof RECALL_INTRO - 1);
    for (int q = 0; q < n_queries; q++) {
        int i = (int)rng_below(&r, (uint64_t)n_pairs);
        info->query_pair[q] = i;
        put_pair(out, &p, keys[i], vals[i], q == n_queries - 1, &info->query_key_pos[q], &info->query_value_pos[q]);
    }
}


void recall_weights(const RecallInfo *info, uint64_t len, uint8_t *weight) {
    memset(weight, 0, len);
    for (int q = 0; q < info->n_queries; q++) memset(weight + info->query_value_pos[q], 1, RECALL_VALUE_CHARS);
}
