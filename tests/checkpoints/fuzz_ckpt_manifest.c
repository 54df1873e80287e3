// tests/checkpoints/fuzz_ckpt_manifest.c — libFuzzer target: any MANIFEST.json text beside a real checkpoint verifies or is refused with a message, never a crash.
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/checkpoint.h"

// The first byte's low bit: 1 = reprint the input as cJSON prints it (ringgpt's manifest is exactly that text), so
// the fuzzer gets past the exactness check into the keys, names, sizes and CRCs; 0 = the raw bytes.
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *dir = getenv("RINGGPT_FUZZ_CKPT");   // a real step directory: its files are what the entries must match
    if (!dir || size < 1) return 0;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    char *owned = NULL;
    if (data[0] & 1) {
        cJSON *root = cJSON_ParseWithLength(text, len);
        owned = root ? cJSON_Print(root) : NULL;
        cJSON_Delete(root);
        if (!owned) return 0;
        text = owned, len = strlen(owned);
    }
    CkErr e = {{0}};
    if (ckpt_verify_manifest_text(dir, text, len, 0, 1, &e) != 0 && !e.msg[0]) abort();   // a refusal always says why
    free(owned);
    return 0;
}
