// model/decode.h — decoding over the ring: block prefill of a prompt, then one token at a time with a KV cache sharded over the sp ranks.
#pragma once
#include <stdbool.h>

#include "core/comm.h"
#include "model/gpt.h"

// One sequence spread over the sp ranks of a ring (or held by one rank).
//
// Prefill runs the prompt but its last token through the model in one pass (gpt_prefill: every block
// whole but the last, which stops at its keys and values): the blockwise attention on one rank, the ring
// forward (zigzag slices) over sp ranks; the last token is then the first decoding step, the one row whose
// output (the next token's logits) is wanted. Each rank keeps its slice's keys and values
// where the forward left them (the model's layer activations) as its shard of the KV cache; the
// prompt is padded at its end to a multiple of 2·sp, and causal attention means the padding changes
// nothing before it (its rows are left out of the cache).
//
// Decoding runs the same transformer block as training (gpt_layer_forward) on the new token's one row,
// with an attention step of its own: the row's keys and values join the shard of one rank (round-robin
// over the ranks); every rank folds the query into the attention state of its own shard, and the partial
// results (O_r, LSE_r) are merged across the ring by log-sum-exp — the ring forward's math — so no rank
// ever holds more than its shard.
typedef struct Decoder Decoder;

typedef struct {
    AttnStep step;    // first: the block calls step.forward(&step, ...)
    Decoder *dec;
    bool owner;       // this rank keeps the new token's keys and values
} CacheAttention;

struct Decoder {
    GPT *m;
    Recompute model_mode;           // m->recompute before decoder_init set RECOMPUTE_DECODE; restored by decoder_free
    struct Comm *ring;              // NULL: this rank holds the whole sequence
    int rank, size;                 // sp_index, sp
    int len, prefilled;             // tokens fed so far (prompt included) and the prefill's (the prompt's but its last)
    // this rank's prefill shard: rows [seg_off[i], seg_off[i] + seg_len[i]) of m->act.layers[l].k, v
    int seg_off[2], seg_len[2];
    // this rank's decoded tokens: (n_layer, cap, Hkv·hd) each, k after RoPE
    int cap, n_dec;
    real *kc, *vc;
    Batch batch;                    // (1, T_local) the prefill's slice
    LayerActs row;                  // the new token's one row of every layer activation (N = 1)
    real *h;                        // (F) the block's SwiGLU scratch
    real *xn_f, *rstd_f;            // (C), (1) the final norm
    real *l_row;                    // (H) attention row sums of the one query row
    real *merge;                    // (H·hd + H) host: the partial output and LSE, then the merge sums
    real *lse_max;                  // (H) host
    real *lg;                       // (V) logits on the backend
    real *lg_host;                  // (V) the same, copied to the host
    float *logits;                  // (V) of the last token fed, identical on every rank
    CacheAttention attn;
};

// max_new: the most tokens decode_step will be fed after one prefill. ring: the sp ranks that share the
// sequence (NULL or one rank: local); with sp > 1 the model's ring is attached here (gpt_set_cp). The model's activations
// are laid out as RECOMPUTE_DECODE (every layer's keys and values kept) until decoder_free.
void decoder_init(Decoder *s, GPT *m, struct Comm *ring, int max_new);
void decoder_free(Decoder *s);
// Starts a new sequence: feeds tokens[0..n) (the same on every rank; all but the last in one prefill
// pass) and returns the logits (V) of the token after them. n >= 1.
const float *decode_prefill(Decoder *s, const int32_t *tokens, int n);
// Feeds `token` at position s->len and returns the logits (V) of the next token.
const float *decode_step(Decoder *s, int token);
// A point of the sequence fed so far: decode_rewind(s, decode_mark(s)) later forgets every token fed after the mark
// (the prompt that came before stays in the cache), so one prompt's prefill serves several continuations.
typedef struct {
    int len, n_dec;
} DecodeMark;
DecodeMark decode_mark(const Decoder *s);
void decode_rewind(Decoder *s, DecodeMark at);
// The token rank 0 of the ring chose, on every rank (sampling must not drift apart between ranks).
int decode_agree(Decoder *s, int token);
