// tests/model/test_plan.c — the presets of released models against their HF configs' parameter counts; the model state's
// buffers per shard level (shard_sizes) against the layout; the memory plan's shard arithmetic (what each level divides,
// the gathered units' buffers); the step plan's shard traffic (its volume against the all-reduce, what the units' compute
// hides, the step as the sum of its parts).
#include <string.h>

#include "core/common.h"
#include "core/real.h"
#include "model/config.h"
#include "model/memplan.h"
#include "model/stepplan.h"
#include "tests/check.h"

// The parameter counts transformers gives these shapes (LlamaForCausalLM built on the meta device from the configs'
// num_hidden_layers, hidden_size, heads, intermediate_size, vocab_size, tie_word_embeddings; they are also the counts
// the model cards publish: 1.24B, 3.21B, 8.03B, 6.74B, 135M, 362M).
static const struct {
    const char *name;
    int64_t params;
    int vocab;
    bool tied;
    float theta;
} HF[] = {
    {"smollm2-135m", 134515008, 49152, true, 100000},  {"smollm2-360m", 361821120, 49152, true, 100000},
    {"llama3.2-1b", 1235814400, 128256, true, 500000}, {"llama3.2-3b", 3212749824, 128256, true, 500000},
    {"llama3-8b", 8030261248, 128256, false, 500000},  {"llama2-7b", 6738415616, 32000, false, 10000},
};

static void test_presets(void) {
    for (size_t i = 0; i < sizeof HF / sizeof HF[0]; i++) {
        ModelConfig c;
        CHECK(config_preset(&c, HF[i].name), "no preset %s", HF[i].name);
        CHECK(config_num_params(&c) == HF[i].params, "%s: %lld parameters, HF has %lld", HF[i].name,
              (long long)config_num_params(&c), (long long)HF[i].params);
        CHECK(c.vocab_size == HF[i].vocab && c.tie_embeddings == HF[i].tied && c.rope_theta == HF[i].theta,
              "%s: vocab %d tied %d theta %g", HF[i].name, c.vocab_size, c.tie_embeddings, c.rope_theta);
    }
    ModelConfig c;
    config_preset(&c, "llama3.2-1b");   // rope_scaling: llama3, factor 32 over 8192 (1, 4)
    CHECK(c.rope_scaling.type == ROPE_LLAMA3 && c.rope_scaling.factor == 32 && c.rope_scaling.original_max_pos == 8192 &&
              c.rope_scaling.low_freq_factor == 1 && c.rope_scaling.high_freq_factor == 4, "llama3.2-1b: RoPE scaling");
    // Every listed name is a preset, and the old ones keep their shape (untied; 125m's vocab 32000).
    char names[512];
    snprintf(names, sizeof names, "%s", config_preset_names());
    int n = 0;
    for (char *save = NULL, *t = strtok_r(names, ", ", &save); t; t = strtok_r(NULL, ", ", &save), n++)
        CHECK(config_preset(&c, t), "listed preset %s unknown", t);
    CHECK(n == 10, "%d presets listed", n);
    CHECK(!strcmp(config_preset_names(), CONFIG_PRESET_NAMES), "the names' function and macro differ");
    config_preset(&c, "125m");
    CHECK(!c.tie_embeddings && c.vocab_size == 32000 && config_num_params(&c) == 134105856, "125m changed");
}

// T = 32768 over a ring of 8, at shard level s over `ranks` ranks (ACT_F32 on a device: no host collectives).
static MemPlanInput input_at(const ModelConfig *c, ShardLevel s, int ranks) {
    return (MemPlanInput){.model = c, .batch = 1, .T_local = 4096, .sp = 8, .shard = s, .ranks = ranks,
                          .recompute = RECOMPUTE_FULL, .store = ACT_F32, .loss_chunk = 256};
}

static MemPlan plan_at(const ModelConfig *c, ShardLevel s, int ranks) { return memplan(input_at(c, s, ranks)); }

// The longest unit, from the shape alone: the embeddings (V·C), a layer, or the untied LM head with the final norm.
static double longest_unit(const ModelConfig *c) {
    double C = c->dim, layer = 2 * C + C * C * 2 + 2.0 * cfg_kv_dim(c) * C + 3.0 * c->ffn_dim * C;
    double emb = (double)c->vocab_size * C, head = C + (c->tie_embeddings ? 0 : emb);
    return emb > layer ? (emb > head ? emb : head) : (layer > head ? layer : head);
}

static void test_memplan_shards(const char *preset) {
    ModelConfig c;
    config_preset(&c, preset);
    const int N = 8;
    // A gathered unit's buffer: the longest unit padded to N equal slices of pad.
    const double all = (double)config_num_params(&c) * sizeof(real), pad = ceil(longest_unit(&c) / N) * sizeof(real);
    const double span = N * pad;
    MemPlan none = plan_at(&c, SHARD_NONE, N), optim = plan_at(&c, SHARD_OPTIM, N), grads = plan_at(&c, SHARD_GRADS, N),
            params = plan_at(&c, SHARD_PARAMS, N);
    CHECK(none.weights == all && none.grads == all && none.optimizer == 2 * all && none.gathered == 0,
          "%s none: every part whole", preset);
    MemPlan one = plan_at(&c, SHARD_NONE, 1);
    CHECK(one.total == none.total && one.model_state == none.model_state, "%s: none does not read the rank count", preset);
    // optim divides the moments alone; the weights are gathered after the update through two units' buffers and slices
    CHECK(optim.weights == all && optim.grads == all, "%s optim: weights and grads whole", preset);
    CHECK(rel_err(optim.optimizer, none.optimizer / N, 0) < 1e-3, "%s optim: moments %.0f, 1/%d of %.0f", preset,
          optim.optimizer, N, none.optimizer);
    CHECK(rel_err(optim.gathered, 2 * span + 2 * pad, 0) < 1e-12, "%s optim: two weight buffers and slices (%.0f, want %.0f)",
          preset, optim.gathered, 2 * span + 2 * pad);
    // grads also the gradients (with a slice of padding), and two units' gradient buffers
    CHECK(grads.weights == all && grads.optimizer == optim.optimizer && rel_err(grads.grads, all / N + pad, 0) < 1e-3,
          "%s grads: 1/N of the gradients", preset);
    CHECK(rel_err(grads.gathered, 4 * span + 2 * pad, 0) < 1e-12, "%s grads: and two gradient buffers (%.0f, want %.0f)",
          preset, grads.gathered, 4 * span + 2 * pad);
    // params: 1/N of all the state plus two units' weights and gradients (and the padding of the slices)
    CHECK(rel_err(params.model_state, none.model_state / N + 4 * span + 4 * pad, 0) < 1e-3,
          "%s params on %d ranks: %.0f bytes, want %.0f / %d + 4 x %.0f + 4 x %.0f", preset, N, params.model_state,
          none.model_state, N, span, pad);
    CHECK(params.gathered == grads.gathered && rel_err(params.weights, all / N + pad, 0) < 1e-3, "%s params: 1/N of the "
          "weights", preset);
    CHECK(params.kept == none.kept && params.work == none.work && params.total - params.model_state ==
          none.total - none.model_state, "%s: the shard level changes the model state alone", preset);
    CHECK(none.total > optim.total && optim.total > grads.total && grads.total > params.total,
          "%s: each level holds less than the one before (%.0f %.0f %.0f %.0f)", preset, none.total, optim.total, grads.total,
          params.total);
    // On the host (MPI's collectives), from grads on Open MPI's reduce-scatter scratch: two buffers of a unit, two in flight.
    for (ShardLevel l = SHARD_NONE; l <= SHARD_PARAMS; l++) {
        MemPlanInput host = input_at(&c, l, N);
        host.host_collectives = true;
        MemPlan h = memplan(host), d = plan_at(&c, l, N);
        double want = l >= SHARD_GRADS ? 4 * span : 0;
        CHECK(fabs(h.coll_scratch - want) <= 1e-12 * want && h.total == d.total + want && d.coll_scratch == 0,
              "%s %s on the host: reduce-scatter scratch %.0f (want %.0f), total %.0f vs %.0f on a device", preset,
              shard_level_name(l), h.coll_scratch, want, h.total, d.total);
    }
    // Under bf16 the copies: whole weights at none, the gathered units' at params.
    MemPlanInput none_bf16 = input_at(&c, SHARD_NONE, N), params_bf16 = input_at(&c, SHARD_PARAMS, N);
    none_bf16.store = params_bf16.store = ACT_BF16;
    MemPlan nb = memplan(none_bf16), pb = memplan(params_bf16);
    CHECK(nb.weights == all * 1.5 && pb.weights == params.weights && rel_err(pb.gathered, params.gathered + span, 0) < 1e-12,
          "%s bf16: the weights' copies", preset);
    long T_none = memplan_max_seq_len(input_at(&c, SHARD_NONE, N), 80e9);
    long T_params = memplan_max_seq_len(input_at(&c, SHARD_PARAMS, N), 80e9);
    CHECK(T_params > T_none && T_params % 16 == 0, "%s: params holds a longer T (%ld) than none (%ld)", preset, T_params,
          T_none);
}

// shard_sizes against the layout it reads, at every level, tied and untied, over 1..5 ranks: the ranks' slices of the
// moments add up to the model, the sliced buffers carry one longest slice of padding, the unit buffers are the longest
// unit padded to N slices, and unit 0's own buffers are there for a tied head alone.
static void test_shard_sizes(void) {
    ModelConfig c;
    config_preset(&c, "tiny");
    for (int tie = 0; tie < 2; tie++)
        for (int n = 1; n <= 5; n++) {
            c.tie_embeddings = tie;
            ParamTable t = params_build(&c);
            ShardSizes none = shard_sizes(&c, SHARD_NONE, NULL);
            CHECK(none.weights == t.total && none.grads == t.total && none.moment == t.total && none.units == 0 &&
                  none.state == 4 * t.total && none.shadow == t.total, "tie %d: unsharded, every buffer whole", tie);
            for (ShardLevel l = SHARD_OPTIM; l <= SHARD_PARAMS; l++) {
                size_t moments = 0;
                for (int r = 0; r < n; r++) {
                    ShardLayout s = shard_layout(&t, &c, n, r);
                    ShardSizes z = shard_sizes(&c, l, &s);
                    size_t pad = 0, local, own0 = tie ? s.per[0] * n : 0;
                    for (int u = 0; u < s.n_units; u++) pad = s.per[u] > pad ? s.per[u] : pad;
                    local = s.local_total + pad;
                    moments += z.moment;
                    CHECK(z.pad == pad && z.slices == s.local_total && z.moment == s.local_total &&
                          z.grads == (l >= SHARD_GRADS ? local : t.total) && z.weights == (l >= SHARD_PARAMS ? local : t.total) &&
                          z.state == z.weights + z.grads + 2 * z.moment, "%s tie %d rank %d of %d: the state's buffers",
                          shard_level_name(l), tie, r, n);
                    CHECK(z.unit_weights[0] == pad * n && z.unit_weights[1] == pad * n &&
                          z.unit_weights[2] == (l >= SHARD_PARAMS ? own0 : 0) && z.unit_grads[0] == (l >= SHARD_GRADS ? pad * n : 0) &&
                          z.unit_grads[2] == (l >= SHARD_GRADS ? own0 : 0) &&
                          z.units == 2 * pad + z.unit_weights[0] + z.unit_weights[1] + z.unit_weights[2] + z.unit_grads[0] +
                                         z.unit_grads[1] + z.unit_grads[2],
                          "%s tie %d rank %d of %d: the unit buffers", shard_level_name(l), tie, r, n);
                    shard_layout_free(&s);
                }
                CHECK(moments == t.total, "%s tie %d over %d: the slices hold %zu of %zu weights", shard_level_name(l), tie, n,
                      moments, t.total);
            }
            params_free(&t);
        }
}

// One node, no latency, the whole link while computing: collectives cost bytes / rate alone.
static DeviceSpec plain_device(double link) {
    DeviceSpec d = *device_preset("h100-sxm");
    d.link_bytes_per_s = d.node_link_bytes_per_s = link;
    d.per_node = 64, d.latency_s = 0, d.busy_share = 1, d.host_bytes_per_s = 0;
    return d;
}

static void test_stepplan_shards(void) {
    ModelConfig c;
    config_preset(&c, "base");   // byte-level vocab: the layers are the units, the embeddings small
    const int dp = 4, sp = 2, T = 8192;
    DeviceSpec slow = plain_device(1e9), fast = plain_device(1e15);
    StepPlan none = stepplan(&c, 1, 1, T, dp, sp, SHARD_NONE, RECOMPUTE_NONE, &slow);
    StepPlan optim = stepplan(&c, 1, 1, T, dp, sp, SHARD_OPTIM, RECOMPUTE_NONE, &slow);
    StepPlan grads = stepplan(&c, 1, 1, T, dp, sp, SHARD_GRADS, RECOMPUTE_NONE, &slow);
    StepPlan params = stepplan(&c, 1, 1, T, dp, sp, SHARD_PARAMS, RECOMPUTE_NONE, &slow);
    CHECK(none.shard_transfer_s == 0 && none.allreduce_s > 0, "none: the all-reduce alone");
    // optim: the all-reduce and the weights' all-gather (half an all-reduce), nothing hidden
    CHECK(rel_err(optim.allreduce_s, none.allreduce_s, 0) < 1e-12 && rel_err(optim.shard_transfer_s, none.allreduce_s / 2, 0) < 1e-9 &&
          optim.shard_wait_s == optim.shard_transfer_s, "optim: all-reduce %.4g + all-gather %.4g", optim.allreduce_s,
          optim.shard_transfer_s);
    // grads: a reduce-scatter and an all-gather, the all-reduce's volume; params ~1.5x it (no second gather of the
    // embeddings, small here)
    CHECK(grads.allreduce_s == 0 && rel_err(grads.shard_transfer_s, none.allreduce_s, 0) < 1e-9,
          "grads: %.4g s, the all-reduce's %.4g", grads.shard_transfer_s, none.allreduce_s);
    double ratio = params.shard_transfer_s / none.allreduce_s;
    CHECK(params.allreduce_s == 0 && ratio > 1.49 && ratio <= 1.5, "params: %.4f x the all-reduce's volume", ratio);
    // A unit's compute hides the next one's gather: on a fast link all but what nothing computes beside (the embeddings'
    // gather, then layer 0's, as the step starts; layer 0's reduce-scatter, then the embeddings', as it ends), on a slow
    // one less.
    StepPlan hidden = stepplan(&c, 1, 1, T, dp, sp, SHARD_PARAMS, RECOMPUTE_NONE, &fast);
    double C = c.dim, layer = 2 * C + 2 * C * C + 2.0 * cfg_kv_dim(&c) * C + 3.0 * c.ffn_dim * C;
    double edges = 2 * (c.vocab_size * C + layer) * sizeof(real) * (dp * sp - 1) / (dp * sp) / fast.link_bytes_per_s;
    CHECK(rel_err(hidden.shard_wait_s, edges, 0) < 1e-6, "fast link: %.4g s exposed, want the first gathers and the last "
          "reduce-scatters' %.4g s", hidden.shard_wait_s, edges);
    CHECK(params.shard_wait_s > 0 && params.shard_wait_s < params.shard_transfer_s, "slow link: %.3g of %.3g s exposed",
          params.shard_wait_s, params.shard_transfer_s);
    StepPlan accum = stepplan(&c, 1, 3, T, dp, sp, SHARD_PARAMS, RECOMPUTE_NONE, &slow);
    CHECK(rel_err(accum.shard_transfer_s, 3 * params.shard_transfer_s, 0) < 1e-9, "params gathers every micro-step");
    const StepPlan *all[] = {&none, &optim, &grads, &params};
    for (int i = 0; i < 4; i++) {
        const StepPlan *p = all[i];
        double sum = p->matmul_s + p->attn_compute_s + p->ring_wait_s + p->allreduce_s + p->shard_wait_s + p->shard_stack_s;
        CHECK(rel_err(p->step_s, sum, 0) < 1e-12, "level %d: the step is the sum of its parts", i);
        CHECK(rel_err(p->mfu, p->tokens_per_s * p->flops_per_token / (dp * sp * slow.matmul_flops), 0) < 1e-12 &&
                  p->mfu > 0 && p->mfu < 1, "level %d: MFU %.3f", i, p->mfu);
    }
    // The network stack's work (a CPU rank's core) counts: the bytes each rank takes in over its rate.
    DeviceSpec host = slow;
    host.host_bytes_per_s = 1e9;
    StepPlan h = stepplan(&c, 1, 1, T, dp, sp, SHARD_PARAMS, RECOMPUTE_NONE, &host);
    // gathers of every unit forward and of the layers again backward (the head's forward and backward are one fused
    // step), reduce-scatters of every unit
    double emb = (double)c.vocab_size * c.dim * sizeof(real), head = emb + c.dim * sizeof(real);
    double P = (double)config_num_params(&c) * sizeof(real), moved = (3 * P - emb - head) * (dp * sp - 1) / (dp * sp);
    CHECK(rel_err(h.shard_stack_s, moved / 1e9, 0) < 1e-9, "network stack %.4g s, want %.4g", h.shard_stack_s, moved / 1e9);
}

int main(void) {
    test_presets();
    test_shard_sizes();
    test_memplan_shards("llama3-8b");    // untied: the embeddings and the head are the longest units
    test_memplan_shards("llama3.2-1b");  // tied: the embeddings
    test_memplan_shards("base");         // byte-level: a layer
    test_stepplan_shards();
    return check_summary();
}
