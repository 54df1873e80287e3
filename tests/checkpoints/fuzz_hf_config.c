// tests/checkpoints/fuzz_hf_config.c — libFuzzer target: any HF config.json text gives a Llama shape or is refused with a message, never a crash.
#include <stdint.h>
#include <stdlib.h>

#include "checkpoints/hf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    ModelConfig c;
    int max_pos;
    CkErr e = {{0}};
    int rc = hf_parse_config((const char *)data, size, "config.json", &c, &max_pos, &e);
    if (rc != 0 && !e.msg[0]) abort();   // a refusal always says why
    if (rc == 0 && (c.n_layer < 1 || c.dim < 1 || c.n_head < 1 || c.vocab_size < 1 || max_pos < 1 || !(c.norm_eps > 0)))
        abort();   // an accepted config is one the model can be built from
    return 0;
}
