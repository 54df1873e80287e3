// data/synthetic.h — seeded long-context tasks in any tokenizer's tokens: passkey retrieval (and associative recall, in bytes), any length.
#pragma once
#include <stdint.h>

#include "tokenizer/tokenizer.h"

// The tokens a passkey document is written in. Byte tokens (SynthText NULL): the text byte for byte, as always.
// A BPE tokenizer's: the document is built as text in pieces (intro, filler, each needle's statement, key and
// ending, the questions, their answers), each piece encoded alone with the space between two pieces leading the
// second (" The pass key is", " 12345", ". Remember it."); the filler is a stream of ids (the generator's
// sentences encoded as one text, or a haystack's ids) cut at the token the layout needs, so a document has
// exactly the length asked for, in tokens, and its needle sits at the depth asked for, in tokens. A tokenizer
// whose documents start with BOS gets it first.
typedef struct SynthText SynthText;
// NULL for the byte tokenizer (t NULL or byte260); t must encode text (tokenizer_can_encode) and outlive it.
SynthText *synth_text_new(const Tokenizer *t);
void synth_text_free(SynthText *st);

// Passkey: "There is a pass key hidden in this text. Remember it. " + filler + "The pass key is 12345.
// Remember it. " (at the requested depth of the filler) + filler + "What is the pass key? The pass
// key is 12345". Exactly `len` tokens (no EOS; the writer appends it).
// With distractors (RULER's multi-key needle): "There are pass keys hidden in this text. Remember them. " and
// 1 + distractors needles "The pass key for NAME is 12345. Remember it. " with distinct names and keys at
// their own depths; the question names one: "What is the pass key for NAME? The pass key for NAME is 12345".
enum { PASSKEY_KEY_DIGITS = 5, PASSKEY_KEY_MAX = 60, PASSKEY_MAX_DISTRACTORS = 8 };
typedef struct {
    uint32_t key;          // the asked key's first 5 digits, 10000..99999
    double depth;          // where its needle sits, as a fraction of the filler (0 = start, 1 = end)
    uint64_t needle_pos;   // first token of its needle sentence
    uint64_t key_pos;      // first digit of its key in the needle
    uint64_t answer_pos;   // first digit of the answer at the end
    int needles;           // 1 + distractors
    int asked;             // questions at the end (a training mix's `ask`; else 1), the asked key's first
    uint32_t others[PASSKEY_MAX_DISTRACTORS];   // (needles - 1) the distractors' keys, their first 5 digits
    uint32_t first_key;    // the first 5 digits of the key of the document's first needle (key when the asked one is first)
} PasskeyInfo;
// What a decoded answer (PASSKEY_KEY_DIGITS characters) is: the asked key, another needle's key (the copy
// went to a distractor: the name did not pick it), the asked key's first digit and then off it (the copy
// left the needle it started on), or wrong from the first digit.
typedef enum { PASSKEY_ANSWER_WRONG, PASSKEY_ANSWER_EXACT, PASSKEY_ANSWER_OTHER_KEY, PASSKEY_ANSWER_DRIFTED } PasskeyAnswer;
PasskeyAnswer passkey_answer_kind(const char *answer, uint32_t key, const uint32_t *others, int n_others);
// The shortest document the layout fits in, with `distractors` other needles, in st's tokens (any key's).
uint64_t passkey_min_len(const SynthText *st, int distractors);
// Document `doc` of the task seeded `seed` in st's tokens; depth < 0 draws it uniformly. out has len tokens. The
// filler is the generator's sentences (hay NULL) or real text: hay holds at least len tokens (st's), and the key
// hides in a haystack that is not the generator's repeated sentences. A length below passkey_min_len(st,
// distractors) or more than PASSKEY_MAX_DISTRACTORS is a usage error. info's positions count st's tokens; with
// a BPE, key_pos and answer_pos are the first token of the key's piece (" 12345": its space included).
void synth_passkey(SynthText *st, uint64_t seed, uint64_t doc, uint64_t len, double depth, int distractors, const uint32_t *hay,
                   uint32_t *out, PasskeyInfo *info);

// How passkey training documents vary (prepare --synthetic passkey): where the needle sits, how long the
// keys are, how many distractors surround it, what text it hides in. The zero mix with depth < 0 is the
// plain task (uniform depth, 5-digit keys, the generator's filler, one needle).
typedef struct {
    double depth;       // the needle's depth in 0..1, or < 0: drawn (uniformly, or at an edge: edge_frac)
    double edge_frac;   // drawn depths: the share within edge_span of the filler's start or end (with distractors,
                        // the edge goes to one needle chosen evenly, so an edge never marks the asked key)
    double edge_span;   // how near, as a fraction of the filler
    double edge_far;    // of the edge documents, the share at the far edge (the needle near the filler's start)
    double long_frac;   // documents whose keys get 1..key_max−5 more digits after their 5 (the answer likewise)
    int key_max;        // the longest key, in digits (5..60)
    double distractor_frac;   // documents with 1..distractors other named needles (as many as fit in a short one)
    int distractors;
    double alike_frac;        // distractor keys that share the asked key's first 1..4 digits (then differ): a copy
                              // keyed on the digits before it no longer tells the keys apart
    int ask;                  // questions a document with distractors asks (≤ 1: one): the asked key's, then
                              // other needles' in turn, each answer in the loss; as many as fit
    double hay_frac;          // documents whose filler is a window of hay (real text) instead of the sentences
    const uint32_t *hay;      // (hay_len) tokens (text's), or NULL
    uint64_t hay_len;         // at least the longest document's len
    double recall_frac;       // documents that are associative recall instead (synth_recall: many keys, many queries)
    int recall_pairs, recall_queries;   // their pairs and queries (fewer where a document is too short for them)
    SynthText *text;          // the tokens documents are written in (NULL: bytes; recall documents are bytes only)
} PasskeyMix;

// Training document k: the generator's document of len tokens (as synth_passkey) with what the mix draws:
// its depth, its keys lengthened by extra digits (the asked key's in its needle and the answer: in bytes the
// document grows by twice them, in a BPE's tokens it stays len tokens; the distractors' come out of the filler),
// its distractors and its haystack window. The mix's draws come from a random stream apart from the document's
// own, so the zero mix gives synth_passkey's document. out and weight hold passkey_train_cap(len) entries;
// weight is 1 on every answer's digits (one answer, or `ask` with distractors; a BPE's: every token of the answer's
// piece), 0 elsewhere. A recall document (recall_frac of them; info->needles
// 0) has weight 1 on its queries' values. Returns the document's tokens (no EOS).
uint64_t synth_passkey_train(uint64_t seed, uint64_t k, uint64_t len, const PasskeyMix *mix, uint32_t *out, uint8_t *weight,
                             PasskeyInfo *info);
uint64_t passkey_train_cap(uint64_t len);
// The shortest len a training document with `distractors` other keys fits in under mix (their long keys included).
uint64_t passkey_train_min_len(const PasskeyMix *mix, int distractors);

// Associative recall: "Remember these pairs: " + "abcd=1234, ..." (n_pairs, early) + filler + "Recall: "
// + n_queries of "abcd=1234, " for keys drawn from the pairs (late). Keys are 4 distinct lowercase
// letters, values 4 digits. Exactly `len` tokens.
enum { RECALL_MAX_PAIRS = 256, RECALL_KEY_CHARS = 4, RECALL_VALUE_CHARS = 4 };
typedef struct {
    int n_pairs, n_queries;
    uint64_t pair_value_pos[RECALL_MAX_PAIRS];    // first digit of pair i's value
    int query_pair[RECALL_MAX_PAIRS];             // which pair query q asks for
    uint64_t query_key_pos[RECALL_MAX_PAIRS];     // first letter of query q's key
    uint64_t query_value_pos[RECALL_MAX_PAIRS];   // first digit of query q's value (the answer)
} RecallInfo;
uint64_t recall_min_len(int n_pairs, int n_queries);
void synth_recall(uint64_t seed, uint64_t doc, uint64_t len, int n_pairs, int n_queries, uint32_t *out, RecallInfo *info);
// Loss weights of a recall document of len tokens: 1 on every query's value digits, 0 elsewhere.
void recall_weights(const RecallInfo *info, uint64_t len, uint8_t *weight);
