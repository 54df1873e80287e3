// eval/ruler.h — RULER's synthetic long-context tasks as text: seeded documents (needles, variable tracking, aggregation, a needle with no literal match) sized by any tokenizer, and their scores.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// The length of text in a model's units (its tokens; bytes in tests). It must grow with the text; it need not
// be additive (a document is measured whole).
typedef size_t (*RulerMeasure)(void *ctx, const char *text, size_t n);

// RULER_MAX_NEEDLES: needle sentences in one document; RULER_MAX_ITEMS: expected answer items; an item is at most
// RULER_ITEM_CHARS - 1 bytes.
enum { RULER_MAX_NEEDLES = 64, RULER_MAX_ITEMS = 64, RULER_ITEM_CHARS = 48 };

// RULER's (Hsieh et al., 2024) threshold for the effective length: Llama-2-7B's average at 4K.
#define RULER_THRESHOLD_DEFAULT 0.856

typedef enum {
    RULER_NIAH,     // needles "One of the special magic {values} for {key} is: {value}." (single, multi-key/value/query)
    RULER_VT,       // variable tracking: chains "VAR B = VAR A." from a value; all names bound to the asked value
    RULER_CWE,      // common words: a numbered word list; the `common` words seen freq_common times, not freq_rare
    RULER_FWE,      // frequent words: coded words with Zipf counts; the `top` most frequent
    RULER_NOLIMA,   // a needle that shares no content word with the question: the link is an alias stated elsewhere
    RULER_TASK_KINDS
} RulerTask;

// What keys and values are: 7-digit numbers, adjective-noun words ("gleaming-kettle"), UUID-like hex keys.
typedef enum { RULER_NUMBER, RULER_WORD, RULER_UUID } RulerItem;

// The haystack: RULER's noise sentences, prose the caller passes, or needles with other keys (RULER's hard
// multi-key haystack). VT uses noise or prose; CWE and FWE are their own haystack (hay is ignored).
typedef enum { RULER_HAY_NOISE, RULER_HAY_PROSE, RULER_HAY_NEEDLES } RulerHay;

typedef struct {
    RulerTask task;
    RulerHay hay;
    const char *prose;            // RULER_HAY_PROSE: the text (not copied; needs a sentence end), prose_n bytes
    size_t prose_n;
    RulerItem key, value;         // NIAH
    int keys;                     // NIAH: keys with needles (the asked ones, then near-miss distractors); NOLIMA: people
    int values;                   // NIAH: values of each key (multi-value: all of the asked key's)
    int queries;                  // NIAH: keys asked at once (multi-query), at most keys
    int chains, hops;             // VT: chains of hops + 1 names; the first one is asked
    int common, freq_common, freq_rare;   // CWE (freq_common halves, down to freq_rare + 1, where the list is too long)
    int top;                      // FWE: the words asked
    double alpha;                 // FWE: Zipf exponent (a word of rank r appears budget / r^alpha times)
    int asks;                     // questions asked of one document, each a sample of its own that shares the document's
                                  // prefill (0 or 1: one; NIAH: <= keys / queries, ask a asks keys a·queries..;
                                  // NOLIMA: <= keys, ask a asks person a; the other tasks ask one)
    int n_depths;                 // needles 0..n_depths-1 sit at these depths (0 = the haystack's start, 1 = its end;
    double depths[RULER_MAX_NEEDLES];   // the piece boundary nearest that share of its bytes); the others are drawn.
                                  // Needle order: ruler_generate says.
} RulerSpec;

// A document: the prompt (the context, then the question, then the answer's prefix the model continues).
typedef struct {
    char *text;                   // text[0..n), NUL-ended
    size_t n;
    size_t hay_at, hay_end;       // the haystack with its needles: text[hay_at..hay_end)
    size_t question_at;           // the question: text[question_at..prefix_at); the answer's prefix: to n
    size_t prefix_at;
    size_t tokens;                // measure(text): at most the target
    size_t next_tokens;           // measure of the same document with one more haystack piece: above the target
    int pieces;                   // haystack pieces (noise passages, sentences, needles, words of the list)
    int n_needles;
    size_t needle_at[RULER_MAX_NEEDLES];   // where each needle sentence starts in text
    int n_items;
    char items[RULER_MAX_ITEMS][RULER_ITEM_CHARS];   // the answer: every item expected (recall)
} RulerDoc;

// RULER's setting of each of its tasks, by name: niah_single_1 (noise; word key, number value), niah_single_2
// (prose; word, number), niah_single_3 (prose; word, UUID), niah_multikey_1 (prose; 4 keys), niah_multikey_2
// (needle haystack; word, number), niah_multikey_3 (needle haystack; UUID, UUID), niah_multivalue (prose; 4 values),
// niah_multiquery (prose; 4 keys asked), vt (1 chain, 4 hops, noise), cwe (10 words, 30 and 3 times), fwe (top 3,
// alpha 2), and nolima (4 people; prose); niah_multikey_1 and nolima ask each of their 4 keys of one document. The tasks RULER runs on essays are set to RULER_HAY_PROSE (the caller
// swaps in noise where it has no text). Returns 0, or -1 for an unknown name.
int ruler_preset(const char *name, RulerSpec *s);
// The i-th name ruler_preset knows (the suite's order); NULL past the last.
const char *ruler_preset_name(int i);

// 0, or -1 with one line in why (size n) naming the field and its bounds (or the prose that has no sentence end).
int ruler_spec_check(const RulerSpec *s, char *why, size_t n);

// Document `sample` of seed `seed`: the largest document of the task whose measure stays at most target (every
// piece added while it fits). With asks > 1, samples a·asks .. a·asks + asks − 1 are one document asked its asks'
// questions in turn: the same text up to question_at (fitted with the question that measures longest), unless the
// measure puts one ask over target with it (that ask's document then has fewer pieces). Needles, in order: NIAH the asked keys' (key by key, value by value), then the
// distractors'; VT chain by chain, in assignment order (a chain's depths are sorted); NOLIMA the asked person's,
// the other people's, then the alias table. The same (spec, seed, sample, target, measure) gives the same
// document. Returns 0, or -1 with one line in why: a bad spec (ruler_spec_check), keys or words running out, or a
// target shorter than the task's smallest document (why names that length). d is freed by ruler_doc_free.
int ruler_generate(const RulerSpec *s, uint64_t seed, uint64_t sample, size_t target, RulerMeasure measure, void *ctx,
                   RulerDoc *d, char *why, size_t n);
void ruler_doc_free(RulerDoc *d);

// RULER's string match: the fraction of items found in answer, each ignoring case (0 without items or answer).
double ruler_score(const RulerDoc *d, const char *answer);
