// eval/ruler_words.c — what RULER's documents are written with: the word lists, keys and values drawn distinct (a set of their hashes), coded words, a growing string.
#include "eval/ruler_words.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

// None is a word of a task's own sentences (a key never
// reads as part of the template around it) and none is inside another (string match would find one in the other).
const char *const RULER_ADJS[] = {
    "able", "amber", "ancient", "angry", "arctic", "autumn", "bitter", "bold", "brave", "breezy", "bright",
    "brisk", "broad", "bronze", "calm", "candid", "careful", "cheerful", "chilly", "clever", "cloudy", "coastal",
    "cosmic", "crimson", "crisp", "curious", "daring", "dusty", "eager", "early", "earnest", "elegant", "empty",
    "fancy", "fearless", "fierce", "flat", "fluffy", "fond", "fragile", "frozen", "gentle", "giant", "gleaming",
    "golden", "graceful", "grand", "gritty", "hasty", "hazy", "hollow", "honest", "humble", "idle", "jolly",
    "keen", "kind", "lazy", "little", "lively", "lonely", "lucky", "lunar", "mellow", "merry", "mighty",
    "misty", "modest", "narrow", "neat", "noble", "nimble", "odd", "orange", "pale", "patient", "plain", "polite",
    "proud", "quick", "quiet", "rapid", "rare", "rustic", "sandy", "scarlet", "shiny", "silent", "silver", "simple",
    "sleepy", "slim", "smooth", "snowy", "soft", "solar", "sour", "spicy", "steady", "stormy", "sturdy", "subtle",
    "sunny", "swift", "tall", "tame", "tender", "tidy", "tiny", "tough", "tranquil", "vast", "velvet", "vivid",
    "warm", "wary", "wild", "windy", "wise", "witty", "young", "zesty"};
const char *const RULER_NOUNS[] = {
    "acorn", "anchor", "apple", "badge", "bakery", "balloon", "banjo", "barrel", "basket", "beacon",
    "bicycle", "blanket", "bottle", "bridge", "bucket", "button", "cabin", "camel", "candle", "canoe", "canyon",
    "carpet", "castle", "cedar", "chimney", "circus", "cliff", "clock", "comet", "compass", "cottage", "crater",
    "crayon", "cricket", "crown", "cushion", "dolphin", "dragon", "drum", "eagle", "easel", "falcon", "feather",
    "fern", "ferry", "fiddle", "garden", "garnet", "glacier", "goblet", "harbor", "harp", "helmet", "hammock",
    "island", "ivory", "jacket", "jungle", "kettle", "kite", "ladder", "lagoon", "lantern", "lemon", "lighthouse",
    "lizard", "locket", "magnet", "mango", "maple", "meadow", "mirror", "mitten", "monkey", "mountain", "napkin",
    "nutmeg", "oasis", "orchard", "otter", "paddle", "parrot", "pebble", "pepper", "piano", "pillow", "planet",
    "pocket", "pumpkin", "puzzle", "quilt", "rabbit", "radish", "raven", "ribbon", "river", "rocket", "saddle",
    "sailboat", "scarf", "shovel", "spoon", "squirrel", "statue", "teapot", "thimble", "tiger", "tractor", "trumpet",
    "tulip", "tunnel", "turtle", "umbrella", "valley", "violin", "wagon", "walnut", "whistle", "willow", "window",
    "wizard", "yacht", "zebra"};
const char *const RULER_NAMES[] = {
    "Yuki", "Omar", "Priya", "Lars", "Mei", "Diego", "Amara", "Tomas", "Ingrid", "Kofi", "Leila", "Mateo", "Sana",
    "Bjorn", "Chioma", "Emil", "Farah", "Hiro", "Ines", "Jonas", "Kalani", "Luca", "Maya", "Nadia", "Oskar", "Paulo",
    "Quinn", "Rosa", "Soren", "Tariq", "Uma", "Viktor", "Wanda", "Ximena", "Yara", "Zane", "Anika", "Bruno", "Carmen",
    "Dmitri", "Elena", "Felix", "Greta", "Hassan", "Ilse", "Jamal", "Keiko", "Liam"};

// ---- growing strings -------------------------------------------------------------------------------------------

void str_put(Str *s, const char *t, size_t n) {
    if (s->n + n + 1 > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : 256;
        while (cap < s->n + n + 1) cap *= 2;
        s->p = xrealloc(s->p, cap, "a RULER document");
        s->cap = cap;
    }
    if (n) memcpy(s->p + s->n, t, n);
    s->n += n;
    s->p[s->n] = 0;
}

void str_printf(Str *s, const char *fmt, ...) {
    char small[512];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (k < 0) fail("ruler: a format failed");
    if ((size_t)k < sizeof small) {
        str_put(s, small, (size_t)k);
        return;
    }
    char *big = xmalloc((size_t)k + 1, "a RULER sentence");
    va_start(ap, fmt);
    vsnprintf(big, (size_t)k + 1, fmt, ap);
    va_end(ap);
    str_put(s, big, (size_t)k);
    free(big);
}

void str_free(Str *s) {
    free(s->p);
    *s = (Str){0};
}

// ---- a set of strings (by 64-bit hash): keys, values and words stay distinct ---------------------------------

static uint64_t hash_str(const char *s) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h ? h : 1;
}

static void keyset_insert(KeySet *k, uint64_t h) {
    size_t i = h & (k->cap - 1);
    while (k->slot[i]) i = (i + 1) & (k->cap - 1);
    k->slot[i] = h;
    k->n++;
}

bool keyset_add(KeySet *k, const char *s) {
    if (2 * (k->n + 1) > k->cap) {
        KeySet big = {xcalloc(k->cap ? k->cap * 2 : 64, sizeof(uint64_t), "a key set"), k->cap ? k->cap * 2 : 64, 0};
        for (size_t i = 0; i < k->cap; i++)
            if (k->slot[i]) keyset_insert(&big, k->slot[i]);
        free(k->slot);
        *k = big;
    }
    uint64_t h = hash_str(s);
    for (size_t i = h & (k->cap - 1); k->slot[i]; i = (i + 1) & (k->cap - 1))
        if (k->slot[i] == h) return false;
    keyset_insert(k, h);
    return true;
}

KeySet keyset_copy(const KeySet *k) {
    KeySet c = {xcalloc(k->cap ? k->cap : 1, sizeof(uint64_t), "a key set"), k->cap, k->n};
    if (k->cap) memcpy(c.slot, k->slot, k->cap * sizeof(uint64_t));
    return c;
}

// ---- keys and values -------------------------------------------------------------------------------------------

static void draw_item(Rng *r, RulerItem kind, char *out) {
    if (kind == RULER_NUMBER) {
        snprintf(out, RULER_ITEM_CHARS, "%07" PRIu64, 1000000 + rng_below(r, 9000000));
    } else if (kind == RULER_WORD) {
        snprintf(out, RULER_ITEM_CHARS, "%s-%s", RULER_ADJS[rng_below(r, RULER_N_ADJS)], RULER_NOUNS[rng_below(r, RULER_N_NOUNS)]);
    } else {   // UUID version 4: 8-4-4-4-12 lowercase hex
        static const char hex[] = "0123456789abcdef";
        const char *shape = "xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx";
        for (int i = 0; shape[i]; i++) {
            uint64_t v = rng_below(r, 16);
            out[i] = shape[i] == 'x' ? hex[v] : shape[i] == 'y' ? hex[8 + v % 4] : shape[i];
        }
        out[36] = 0;
    }
}

// A key like `like` but not it (RULER's multi-key distractor).
static void near_item(Rng *r, RulerItem kind, const char *like, char *out) {
    draw_item(r, kind, out);
    if (kind == RULER_NUMBER) {
        memcpy(out, like, 8);
        int at = 1 + (int)rng_below(r, 6);
        out[at] = (char)('0' + (out[at] - '0' + 1 + (int)rng_below(r, 9)) % 10);
    } else if (kind == RULER_UUID) {
        memcpy(out, like, 8);
    } else {
        const char *dash = strchr(like, '-');
        int keep_adj = (int)rng_below(r, 2);
        if (keep_adj) snprintf(out, RULER_ITEM_CHARS, "%.*s-%s", (int)(dash - like), like, RULER_NOUNS[rng_below(r, RULER_N_NOUNS)]);
        else snprintf(out, RULER_ITEM_CHARS, "%s-%s", RULER_ADJS[rng_below(r, RULER_N_ADJS)], dash + 1);
    }
}

int draw_new(Rng *r, RulerItem kind, const char *like, KeySet *ks, char *out) {
    for (int tries = 0; tries < 1000; tries++) {
        if (like) near_item(r, kind, like, out);
        else draw_item(r, kind, out);
        if (keyset_add(ks, out)) return 0;
    }
    return -1;
}

// All of one length, so none is inside another.
void coded_word(Rng *r, char *out) {
    static const char cons[] = "bdfgklmnprstvz", vow[] = "aeiou";
    int k = 0;
    for (int i = 0; i < 3; i++) {
        out[k++] = cons[rng_below(r, sizeof cons - 1)];
        out[k++] = vow[rng_below(r, sizeof vow - 1)];
    }
    out[k] = 0;
}

const char *value_plural(RulerItem kind) {
    return kind == RULER_NUMBER ? "numbers" : kind == RULER_WORD ? "words" : "UUIDs";
}

void count_word(int k, char *out, size_t n) {
    static const char *const w[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"};
    if (k >= 0 && k <= 10) snprintf(out, n, "%s", w[k]);
    else snprintf(out, n, "%d", k);
}
