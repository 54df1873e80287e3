// tests/checkpoints/fuzz_ckpt_state.c — libFuzzer target: any state.json text parses into a checkpoint state or is refused with a message, never a crash.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/checkpoint.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);   // the reader takes a NUL-terminated text, as fs_read_file gives it
    memcpy(text, data, size);
    text[size] = 0;
    CkptState s;
    CkErr e = {{0}};
    int rc = ckpt_state_parse(text, "state.json", &s, &e);
    if (rc != 0 && !e.msg[0]) abort();   // a refusal always says why
    if (rc == 0) {   // what it read prints back and reads again the same
        char *again = ckpt_state_json(&s);
        CkptState t;
        if (!again || ckpt_state_parse(again, "state.json", &t, &e) != 0 || t.step != s.step || t.model.dim != s.model.dim ||
            t.meta.max_pos != s.meta.max_pos || strcmp(t.meta.name, s.meta.name) != 0)
            abort();
        free(again);
    }
    free(text);
    return 0;
}
