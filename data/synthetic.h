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
// The needle variant: the same document with the filler taken from real text, hay (len − passkey_min_len()
// tokens): the key hides in a haystack that is not the generator's repeated sentences.
void synth_passkey_in(uint64_t seed, uint64_t doc, uint64_t len, double depth, const uint32_t *hay, uint32_t *out,
                      PasskeyInfo *info);
// The shortest document the layout fits in.
uint64_t passkey_min_len(void);
// Document `doc` of the task seeded `seed`; depth < 0 draws it uniformly. out has len tokens.
void synth_passkey(uint64_t seed, uint64_t doc, uint64_t len, double depth, uint32_t *out, PasskeyInfo *info);
// Loss weights of a passkey document of len tokens: 1 on the answer's digits, 0 elsewhere.
void passkey_weights(const PasskeyInfo *info, uint64_t len, uint8_t *weight);

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
