// checkpoints/infer.h — inference over the ring: block prefill of a prompt, then decoding with the KV cache sharded over the sp ranks.
#pragma once
#include "checkpoints/checkpoint.h"
#include "core/comm.h"
#include "model/gpt.h"

struct Comm;

// One sequence spread over the sp ranks of a ring (or held by one rank).
//
// Prefill runs the prompt through the model's forward in one pass: the blockwise attention on one
// rank, the ring forward (zigzag slices) over sp ranks. Each rank keeps its slice's keys and values
// where the forward left them (the model's layer activations) as its shard of the KV cache; the
// prompt is padded at its end to a multiple of 2·sp, and causal attention means the padding changes
// nothing before it (its rows are left out of the cache).
//
// Decoding: every rank computes the new token's row (the weights are replicated); its keys and values
// join the shard of one rank (round-robin over the ranks); every rank folds the query into the
// attention state of its own shard, and the partial results (O_r, LSE_r) are merged across the ring
// by log-sum-exp — the ring forward's math — so no rank ever holds more than its shard.
typedef struct {
    GPT *m;
    struct Comm *ring;              // NULL: this rank holds the whole sequence
    int rank, size;                 // sp_index, sp
    int len, prompt_len;            // tokens fed so far (prompt included) and the prompt's
    // this rank's prefill shard: rows [seg_off[i], seg_off[i] + seg_len[i]) of m->act.layers[l].k, v
    int seg_off[2], seg_len[2];
    // this rank's decoded tokens: (n_layer, cap, Hkv·hd) each, k after RoPE
    int cap, n_dec;
    real *kc, *vc;
    Batch batch;                    // (1, T_local) the prefill's slice
    real *x, *xn, *q, *k, *v, *att, *tmp, *gate, *up, *h, *rstd;   // one row of each
    real *m_row, *l_row;            // (H) attention state of the one query row; m_row ends as its lse
    real *merge;                    // (H·hd + H) host: the partial output and LSE, then the merge sums
    real *lse_max;                  // (H) host
    real *lg;                       // (V) logits on the backend
    real *lg_host;                  // (V) the same, copied to the host
    float *logits;                  // (V) of the last token fed, identical on every rank
} Infer;

// max_new: the most tokens infer_step will be fed after one prefill. ring: the sp ranks that share the
// sequence (NULL or one rank: local); with sp > 1 the model's ring is created here (m->ring).
void infer_init(Infer *s, GPT *m, struct Comm *ring, int max_new);
void infer_free(Infer *s);
// Starts a new sequence: feeds tokens[0..n) (the same on every rank) in one forward pass and returns
// the logits (V) of the token after them. n >= 1.
const float *infer_prefill(Infer *s, const int32_t *tokens, int n);
// Feeds `token` at position s->len and returns the logits (V) of the next token.
const float *infer_step(Infer *s, int token);
// The token rank 0 of the ring chose, on every rank (sampling must not drift apart between ranks).
int infer_agree(Infer *s, int token);

// The dp × sp grid of an inference command (eval, sample, passkey): sp must be at least 1 and divide
// the world (one line from rank 0 otherwise). With auto_threads, *threads is shared among the ranks of a node.
CommGrid infer_grid(int sp, bool auto_threads, int *threads);

// Loads a model for inference from a checkpoint (step or run directory) or an HF directory.
// rope_theta > 0 overrides the stored base. *state (optional) gets the checkpoint's state (zeroed for HF).
void infer_load(const char *path, GPT *m, float rope_theta, CkptState *state);
