// data/prepare_mix.c — the mix file of `prepare --mix`: strict JSON, one table of keys with their types, ranges and fixes.
#include "data/prepare_mix.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "core/json_strict.h"

PrepareMix prepare_mix_defaults(void) {
    return (PrepareMix){.passkey = {.depth = -1, .edge_span = 0.03, .edge_far = 0.5, .key_max = 40, .distractors = 3, .ask = 1},
                        .pairs = 16, .queries = 4};
}

// One key of a mix file: where its value goes and the range it must be in (lo_open: lo itself is out).
typedef enum { KEY_NUMBER, KEY_INT, KEY_PATH } KeyType;
typedef struct {
    const char *name;
    KeyType type;
    size_t offset;       // into PrepareMix
    double lo, hi;
    bool lo_open;
    const char *range;   // the fix, in words
} MixKey;

#define PK(field) offsetof(PrepareMix, passkey) + offsetof(PasskeyMix, field)
#define FRACTION(name, off) {name, KEY_NUMBER, off, 0, 1, false, "give a fraction in 0..1"}
static const MixKey KEYS[] = {
    {"depth", KEY_NUMBER, PK(depth), -INFINITY, 1, false, "give a depth in 0..1 (or a negative one: drawn per document)"},
    FRACTION("edge-frac", PK(edge_frac)),
    {"edge-span", KEY_NUMBER, PK(edge_span), 0, 1, true, "give a fraction in (0, 1]"},
    FRACTION("edge-far", PK(edge_far)),
    FRACTION("long-frac", PK(long_frac)),
    {"key-max", KEY_INT, PK(key_max), PASSKEY_KEY_DIGITS, PASSKEY_KEY_MAX, false, "give 5..60 digits"},
    FRACTION("distractor-frac", PK(distractor_frac)),
    {"distractors", KEY_INT, PK(distractors), 1, PASSKEY_MAX_DISTRACTORS, false,
     "give 1..8 (the most other keys a document may hold)"},
    FRACTION("distractor-alike", PK(alike_frac)),
    {"ask", KEY_INT, PK(ask), 1, PASSKEY_MAX_DISTRACTORS + 1, false, "give 1..9 (questions a document with distractors asks)"},
    FRACTION("recall-frac", PK(recall_frac)),
    {"pairs", KEY_INT, offsetof(PrepareMix, pairs), 1, RECALL_MAX_PAIRS, false, "give 1..256 (key-value pairs per recall document)"},
    {"queries", KEY_INT, offsetof(PrepareMix, queries), 1, RECALL_MAX_PAIRS, false, "give 1..256 (queries per recall document)"},
    {"haystack", KEY_PATH, offsetof(PrepareMix, haystack), 0, 0, false, NULL},
    FRACTION("haystack-frac", PK(hay_frac)),
    {"held-out", KEY_PATH, offsetof(PrepareMix, held_out), 0, 0, false, NULL},
    {"text", KEY_PATH, offsetof(PrepareMix, text), 0, 0, false, NULL},
    FRACTION("text-frac", offsetof(PrepareMix, text_frac)),
};
enum { N_KEYS = sizeof KEYS / sizeof KEYS[0] };

static int say(char *err, size_t errn, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int say(char *err, size_t errn, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errn, fmt, ap);
    va_end(ap);
    one_line(err);
    return -1;
}

static const MixKey *find_key(const char *name) {
    for (const MixKey *k = KEYS; k < KEYS + N_KEYS; k++)
        if (strcmp(k->name, name) == 0) return k;
    return NULL;
}

bool prepare_mix_has_key(const char *name) { return find_key(name) != NULL; }

static int unknown_key(const char *path, const char *name, char *err, size_t errn) {
    char key[128], list[512] = "";
    for (const MixKey *k = KEYS; k < KEYS + N_KEYS; k++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", k == KEYS ? "" : ", ", k->name);
    return say(err, errn, "%s: unknown key \"%s\": a mix file takes %s (docs/data.md)", path, json_printable(name, key, sizeof key), list);
}

// A path: a copy the mix owns (the file's text is freed once it is read).
static int set_path(PrepareMix *m, const MixKey *k, const cJSON *v, const char *path, char *err, size_t errn) {
    if (!cJSON_IsString(v) || !v->valuestring[0]) return say(err, errn, "%s: \"%s\" must be a path (a non-empty string)", path, k->name);
    int slot = 0;
    while (m->owned[slot]) slot++;   // at most one per path key: the parser refuses a key given twice
    *(const char **)((char *)m + k->offset) = m->owned[slot] = xstrdup(v->valuestring);
    return 0;
}

static int set_number(PrepareMix *m, const MixKey *k, const cJSON *v, const char *path, char *err, size_t errn) {
    if (!cJSON_IsNumber(v)) return say(err, errn, "%s: \"%s\" must be a number; %s", path, k->name, k->range);
    double x = v->valuedouble;
    if (k->type == KEY_INT && x != floor(x)) return say(err, errn, "%s: \"%s\" must be a whole number (got %g); %s", path, k->name, x, k->range);
    if (!isfinite(x) || x > k->hi || x < k->lo || (k->lo_open && x == k->lo))
        return say(err, errn, "%s: \"%s\" %g: %s", path, k->name, x, k->range);
    if (k->type == KEY_INT) *(int *)((char *)m + k->offset) = (int)x;
    else *(double *)((char *)m + k->offset) = x;
    return 0;
}

// The keys that only make sense with another one.
static int check_pairs(const PrepareMix *m, const char *path, char *err, size_t errn) {
    const PasskeyMix *p = &m->passkey;
    if (p->alike_frac > 0 && !(p->distractor_frac > 0))
        return say(err, errn, "%s: \"distractor-alike\" %g needs \"distractor-frac\" (only documents with distractors have keys to make "
                   "alike)", path, p->alike_frac);
    if (p->ask > 1 && !(p->distractor_frac > 0))
        return say(err, errn, "%s: \"ask\" %d needs \"distractor-frac\" (only documents with distractors ask more)", path, p->ask);
    if (p->hay_frac > 0 && !m->haystack) return say(err, errn, "%s: \"haystack-frac\" needs \"haystack\" (the text the needles hide in)", path);
    if (m->haystack && !(p->hay_frac > 0))
        return say(err, errn, "%s: \"haystack\" needs \"haystack-frac\" (the share of documents that use it)", path);
    if (m->held_out && !m->haystack) return say(err, errn, "%s: \"held-out\" is checked against \"haystack\"; give both", path);
    if (m->text_frac > 0 && !m->text) return say(err, errn, "%s: \"text-frac\" needs \"text\" (the file its records are cut from)", path);
    return 0;
}

static int set_key(PrepareMix *m, const cJSON *v, const char *path, char *err, size_t errn) {
    const MixKey *k = find_key(v->string);
    if (!k) return unknown_key(path, v->string, err, errn);
    return k->type == KEY_PATH ? set_path(m, k, v, path, err, errn) : set_number(m, k, v, path, err, errn);
}

int prepare_mix_parse(const char *text, size_t len, const char *path, PrepareMix *m, char *err, size_t errn) {
    *m = prepare_mix_defaults();
    char why[512];
    cJSON *root = json_parse_strict(text, len, why, sizeof why);   // a key given twice is refused here
    int rc = root ? 0 : say(err, errn, "%s: %s; fix the file", path, why);
    if (root && !cJSON_IsObject(root)) rc = say(err, errn, "%s: not a JSON object of mix keys ({\"edge-frac\": 0.4, ...}); fix the file", path);
    for (const cJSON *v = rc == 0 ? root->child : NULL; v && rc == 0; v = v->next) rc = set_key(m, v, path, err, errn);
    if (rc == 0) rc = check_pairs(m, path, err, errn);
    cJSON_Delete(root);
    if (rc != 0) prepare_mix_free(m);
    else m->path = path;
    return rc;
}

// The whole file as text, or NULL with err naming the file and the system's reason.
int prepare_mix_load(const char *path, PrepareMix *m, char *err, size_t errn) {
    *m = prepare_mix_defaults();
    size_t len;
    if (access(path, R_OK) != 0) return say(err, errn, "%s: cannot open the mix file (%s); check the path", path, strerror(errno)), -1;
    char *text = (char *)read_whole_file(path, &len);   // a file that cannot be read after all: one line, exit 2
    int rc = prepare_mix_parse(text, len, path, m, err, errn);
    free(text);
    return rc;
}

void prepare_mix_free(PrepareMix *m) {
    for (int i = 0; i < 3; i++) free(m->owned[i]);
    *m = prepare_mix_defaults();
}

int prepare_mix_check_task(const PrepareMix *m, bool passkey, char *err, size_t errn) {
    const PasskeyMix *p = &m->passkey;
    if (passkey) return 0;
    if (p->distractor_frac > 0 || p->hay_frac > 0 || p->recall_frac > 0 || p->edge_frac > 0 || p->long_frac > 0)
        return say(err, errn, "%s: \"edge-frac\", \"long-frac\", \"distractor-frac\", \"haystack-frac\" and \"recall-frac\" shape passkey "
                   "documents; drop them for --synthetic recall", m->path ? m->path : "the mix");
    return 0;
}

uint64_t prepare_mix_min_doc_len(const PrepareMix *m, bool passkey) {
    return 1 + (passkey ? passkey_train_min_len(&m->passkey, 0) : recall_min_len(m->pairs, m->queries));
}
