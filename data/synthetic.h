// data/synthetic.h — seeded long-context tasks in byte tokens: passkey retrieval and associative recall, any length.
#pragma once
#include <stdint.h>

// Passkey: "There is a pass key hidden in this text. Remember it. " + filler + "The pass key is 12345.
// Remember it. " (at the requested depth of the filler) + filler + "What is the pass key? The pass
// key is 12345". Exactly `len` tokens (no EOS; the writer appends it).
typedef struct {
    uint32_t key;          // 10000..99999
    double depth;          // where the key sentence sits, as a fraction of the filler (0 = start, 1 = end)
    uint64_t needle_pos;   // first token of the key sentence
    uint64_t key_pos;      // first digit of the key in the key sentence
    uint64_t answer_pos;   // first digit of the answer at the end (= len - 5)
} PasskeyInfo;
enum { PASSKEY_KEY_DIGITS = 5 };
// The shortest document the layout fits in.
uint64_t passkey_min_len(void);
// Document `doc` of the task seeded `seed`; depth < 0 draws it uniformly. out has len tokens. The filler is
// the generator's sentences (hay NULL) or real text: hay holds len − passkey_min_len() tokens, and the key
// hides in a haystack that is not the generator's repeated sentences.
void synth_passkey(uint64_t seed, uint64_t doc, uint64_t len, double depth, const uint32_t *hay, uint32_t *out,
                   PasskeyInfo *info);
// Loss weights of a passkey document of len tokens: 1 on the answer's digits, 0 elsewhere.
void passkey_weights(const PasskeyInfo *info, uint64_t len, uint8_t *weight);

// How passkey training documents vary (prepare --synthetic passkey): where the needle sits and how long
// the key is. The zero mix with depth < 0 is the plain task (uniform depth, 5-digit keys).
typedef struct {
    double depth;       // the needle's depth in 0..1, or < 0: drawn (uniformly, or at an edge: edge_frac)
    double edge_frac;   // drawn depths: the share within edge_span of the filler's start or end
    double edge_span;   // how near, as a fraction of the filler
    double edge_far;    // of the edge documents, the share at the far edge (the needle near the filler's start)
    double long_frac;   // documents whose key gets 1..key_max−5 more digits after its 5 (the answer likewise)
    int key_max;        // the longest key, in digits (5..60)
} PasskeyMix;
enum { PASSKEY_KEY_MAX = 60 };

// Training document k: the generator's document of len tokens (as synth_passkey; hay likewise) at the depth
// the mix draws, its key lengthened by the extra digits the mix draws in both the needle and the answer
// (2·extra more tokens). The mix's draws come from a random stream apart from the document's own, so the
// zero mix gives synth_passkey's document. out and weight hold len + 2·(PASSKEY_KEY_MAX − 5) entries;
// weight is 1 on the whole answer (every digit), 0 elsewhere. Returns the document's tokens (no EOS).
uint64_t synth_passkey_train(uint64_t seed, uint64_t k, uint64_t len, const PasskeyMix *mix, const uint32_t *hay,
                             uint32_t *out, uint8_t *weight, PasskeyInfo *info);

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
