// model/config.c — model presets and the checks that turn an impossible shape into a clear error.
#include "model/config.h"

#include <string.h>

#include "core/common.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    const char *name;
    ModelConfig cfg;
} Preset;

// Byte-level vocab by default; ffn_dim is a multiple of 64 near 8/3·dim (Llama's SwiGLU sizing).
// The shapes of released models follow, as their HF config.json has them (vocab, tied head, RoPE base and scaling,
// norm epsilon): their vocab is their tokenizer's, which `ringgpt plan` counts; `ringgpt train` takes the vocab of
// the data it reads (prepared with that tokenizer, it is the same).
#define LLAMA32_ROPE {.type = ROPE_LLAMA3, .factor = 32, .original_max_pos = 8192, .low_freq_factor = 1, .high_freq_factor = 4}
static const Preset PRESETS[] = {
    {"tiny", {.n_layer = 2, .dim = 64, .n_head = 4, .n_kv_head = 2, .ffn_dim = 192, .vocab_size = TOK_VOCAB_SIZE,
              .rope_theta = 10000.0f, .norm_eps = 1e-5f}},
    {"small", {.n_layer = 4, .dim = 256, .n_head = 4, .n_kv_head = 4, .ffn_dim = 704, .vocab_size = TOK_VOCAB_SIZE,
               .rope_theta = 10000.0f, .norm_eps = 1e-5f}},
    {"base", {.n_layer = 8, .dim = 512, .n_head = 8, .n_kv_head = 4, .ffn_dim = 1408, .vocab_size = TOK_VOCAB_SIZE,
              .rope_theta = 10000.0f, .norm_eps = 1e-5f}},
    {"125m", {.n_layer = 12, .dim = 768, .n_head = 12, .n_kv_head = 12, .ffn_dim = 2048, .vocab_size = 32000,
              .rope_theta = 10000.0f, .norm_eps = 1e-5f}},
    // HuggingFaceTB/SmolLM2-135M and -360M
    {"smollm2-135m", {.n_layer = 30, .dim = 576, .n_head = 9, .n_kv_head = 3, .ffn_dim = 1536, .vocab_size = 49152,
                      .rope_theta = 100000.0f, .norm_eps = 1e-5f, .tie_embeddings = true}},
    {"smollm2-360m", {.n_layer = 32, .dim = 960, .n_head = 15, .n_kv_head = 5, .ffn_dim = 2560, .vocab_size = 49152,
                      .rope_theta = 100000.0f, .norm_eps = 1e-5f, .tie_embeddings = true}},
    // meta-llama/Llama-3.2-1B and -3B (RoPE scaled as llama3, factor 32 over 8192), Meta-Llama-3-8B, Llama-2-7b-hf
    {"llama3.2-1b", {.n_layer = 16, .dim = 2048, .n_head = 32, .n_kv_head = 8, .ffn_dim = 8192, .vocab_size = 128256,
                     .rope_theta = 500000.0f, .rope_scaling = LLAMA32_ROPE, .norm_eps = 1e-5f, .tie_embeddings = true}},
    {"llama3.2-3b", {.n_layer = 28, .dim = 3072, .n_head = 24, .n_kv_head = 8, .ffn_dim = 8192, .vocab_size = 128256,
                     .rope_theta = 500000.0f, .rope_scaling = LLAMA32_ROPE, .norm_eps = 1e-5f, .tie_embeddings = true}},
    {"llama3-8b", {.n_layer = 32, .dim = 4096, .n_head = 32, .n_kv_head = 8, .ffn_dim = 14336, .vocab_size = 128256,
                   .rope_theta = 500000.0f, .norm_eps = 1e-5f}},
    {"llama2-7b", {.n_layer = 32, .dim = 4096, .n_head = 32, .n_kv_head = 32, .ffn_dim = 11008, .vocab_size = 32000,
                   .rope_theta = 10000.0f, .norm_eps = 1e-5f}},
};
#undef LLAMA32_ROPE

bool config_preset(ModelConfig *c, const char *name) {
    for (size_t i = 0; i < sizeof PRESETS / sizeof PRESETS[0]; i++)
        if (strcmp(PRESETS[i].name, name) == 0) {
            *c = PRESETS[i].cfg;
            return true;
        }
    return false;
}

const char *config_preset_names(void) { return CONFIG_PRESET_NAMES; }

void config_validate(const ModelConfig *c) {
    if (c->n_layer < 1) fail_usage("--layers must be at least 1 (got %d)", c->n_layer);
    if (c->dim < 2) fail_usage("--dim must be at least 2 (got %d)", c->dim);
    if (c->n_head < 1) fail_usage("--heads must be at least 1 (got %d)", c->n_head);
    if (c->n_kv_head < 1) fail_usage("--kv-heads must be at least 1 (got %d)", c->n_kv_head);
    if (c->ffn_dim < 1) fail_usage("--ffn-dim must be at least 1 (got %d)", c->ffn_dim);
    if (c->vocab_size < 2) fail_usage("vocab size must be at least 2 (got %d)", c->vocab_size);
    if (c->dim % c->n_head != 0)
        fail_usage("--dim %d is not divisible by --heads %d; choose a dim that is a multiple of the head count",
                   c->dim, c->n_head);
    if (c->n_head % c->n_kv_head != 0)
        fail_usage("--heads %d is not divisible by --kv-heads %d; GQA needs kv-heads to divide heads", c->n_head,
                   c->n_kv_head);
    if (cfg_head_dim(c) % 2 != 0)
        fail_usage("head dim %d (dim %d / heads %d) is odd; RoPE rotates pairs, so choose dim/heads even",
                   cfg_head_dim(c), c->dim, c->n_head);
    if (!(c->rope_theta > 1.0f)) fail_usage("--rope-theta must be greater than 1 (got %g)", c->rope_theta);
    if (!(c->norm_eps > 0.0f)) fail_usage("norm epsilon must be positive (got %g)", c->norm_eps);
    char why[256];
    if (!rope_scaling_check(&c->rope_scaling, cfg_head_dim(c), why, sizeof why)) fail_usage("the model: %s", why);
}

int64_t config_num_params(const ModelConfig *c) {
    int64_t C = c->dim, F = c->ffn_dim, V = c->vocab_size, KV = cfg_kv_dim(c);
    int64_t per_layer = C + C * C + 2 * KV * C + C * C + C + 3 * F * C;
    return V * C + c->n_layer * per_layer + C + (c->tie_embeddings ? 0 : V * C);
}
