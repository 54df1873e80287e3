// tests/model/test_decode.c — decoding (block prefill, then the model's own block on one row, KV cache sharded over the ring) gives the training forward's logits.
// Usage (under mpiexec -np SP): test_decode. For prompts whose prefill (all but their last token) does and
// does not divide 2·sp (1: an empty prefill, every position decoded), the ring prefills the prompt, the
// last block only to its keys and values, and then decodes more tokens one by one; the logits
// after every token must equal those of the single-rank training forward (gpt_logits, computed on every
// rank) within the precision's rounding. Both paths run gpt_layer_forward: a change to the block is one
// edit, and this test fails if the decode path ever stops following it.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../check.h"
#include "core/comm.h"
#include "core/common.h"
#include "core/rng.h"
#include "data/source.h"
#include "model/decode.h"
#include "model/gpt.h"
#include "model/ops.h"

#ifdef RINGGPT_F64
static const double TOL = 1e-10;
#else
static const double TOL = 2e-4;
#endif
enum { T = 37, SEED = 11 };

// Decodes T tokens of the model cfg after each prompt length and compares with the one-rank forward's logits.
static void check_decoding(const ModelConfig *cfg, const char *what, CommGrid grid) {
    int V = cfg->vocab_size;
    GPT ring_model, ref;
    gpt_init(&ring_model, cfg, &BACKEND_CPU, SEED, GPT_TRAIN);
    gpt_init(&ref, cfg, &BACKEND_CPU, SEED, GPT_TRAIN);
    // The reference: logits (T, V) of the full forward of one rank.
    Batch b = batch_alloc(1, T);
    Rng r;
    rng_seed(&r, 5);
    for (int t = 0; t < T; t++) b.tokens[t] = (int32_t)rng_below(&r, V), b.targets[t] = -1, b.pos[t] = t;
    float *full = xmalloc((size_t)T * V * sizeof(float), "reference logits");
    gpt_logits(&ref, &b, full);
    Decoder s;
    decoder_init(&s, &ring_model, grid.ring, T);
    int prompts[] = {1, 2, 5, 2 * grid.sp, 2 * grid.sp + 1, 20, T - 1};
    for (size_t i = 0; i < sizeof prompts / sizeof prompts[0]; i++) {
        int p = prompts[i];
        double worst = 0;
        const float *lg = decode_prefill(&s, b.tokens, p);
        for (int t = p - 1; t < T; t++) {
            if (t >= p) lg = decode_step(&s, b.tokens[t]);
            for (int v = 0; v < V; v++) worst = fmax(worst, rel_err(lg[v], full[(size_t)t * V + v], 1.0));
        }
        CHECK(worst < TOL, "%s, sp %d, prompt %d then %d decoded tokens: logits differ from one rank's by %.2e", what,
              grid.sp, p, T - p, worst);
    }
    CHECK(decode_agree(&s, 3 + grid.rank) == 3, "every rank takes rank 0's token");
    decoder_free(&s);
    free(full);
    batch_free(&b);
    gpt_free(&ring_model);
    gpt_free(&ref);
}

int main(int argc, char **argv) {
    comm_init(&argc, &argv);
    comm_set_timeout(120);
    CommGrid grid = comm_grid(comm_size(comm_world()));
    // GQA (6 query heads, 2 kv heads), head dim 16, two layers.
    ModelConfig cfg = {.n_layer = 2, .dim = 96, .n_head = 6, .n_kv_head = 2, .ffn_dim = 128, .vocab_size = 64,
                       .rope_theta = 10000, .norm_eps = 1e-5f};
    check_decoding(&cfg, "default RoPE", grid);
    // RoPE scaling beyond an original context of 16 (T = 37): yarn's cos/sin scale and llama3's table reach the cache.
    cfg.rope_scaling = (RopeScaling){.type = ROPE_YARN, .factor = 4, .original_max_pos = 16, .beta_fast = 32, .beta_slow = 1};
    check_decoding(&cfg, "rope scaling yarn", grid);
    cfg.rope_scaling = (RopeScaling){.type = ROPE_LLAMA3, .factor = 8, .original_max_pos = 16, .low_freq_factor = 1,
                                     .high_freq_factor = 4};
    check_decoding(&cfg, "rope scaling llama3", grid);
    int rc = grid.rank == 0 ? check_summary() : (check_failed ? 1 : 0);
    comm_grid_free(&grid);
    comm_finalize();
    return rc;
}
