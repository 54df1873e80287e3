// tests/model/test_rope_table.c — prints the RoPE table (model/rope.h rope_frequencies) of a --rope-scaling text, for rope_table.py to compare with HF's formulas.
// Usage: test_rope_table THETA HD LEN SPEC. Prints "scale S" and then the hd/2 inverse frequencies, one a line, in %.17g;
// exits 1 when SPEC's record does not survive rope_scaling_format -> rope_scaling_parse unchanged.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "model/config.h"

int main(int argc, char **argv) {
    if (argc != 5) fail_usage("usage: test_rope_table THETA HD LEN SPEC");
    int hd = atoi(argv[2]), len = atoi(argv[3]);
    if (hd < 2 || hd % 2 || hd > 1024) fail_usage("HD must be even, 2..1024 (got %s)", argv[2]);
    ModelConfig c = {.n_layer = 1, .dim = 2 * hd, .n_head = 2, .n_kv_head = 2, .ffn_dim = 1, .vocab_size = 2,
                     .rope_theta = strtof(argv[1], NULL), .norm_eps = 1e-5f};
    rope_scaling_parse(argv[4], NULL, "--rope-scaling", &c.rope_scaling);
    config_validate(&c);
    char text[256], again[256];
    rope_scaling_format(&c.rope_scaling, text, sizeof text);
    RopeScaling back;
    rope_scaling_parse(text, NULL, "--rope-scaling", &back);
    rope_scaling_format(&back, again, sizeof again);
    if (strcmp(text, again) != 0) {
        fprintf(stderr, "FAIL %s -> %s -> %s: the record changed\n", argv[4], text, again);
        return 1;
    }
    double *inv_freq = xmalloc((size_t)(hd / 2) * sizeof(double), "table"), scale;   // (hd/2)
    rope_frequencies(&c, len, inv_freq, &scale);
    printf("format %s\nscale %.17g\n", text, scale);
    for (int i = 0; i < hd / 2; i++) printf("%.17g\n", inv_freq[i]);
    free(inv_freq);
    return 0;
}
