// tests/data/fuzz_manifest.c — libFuzzer target: any manifest.json text beside real shards opens the dataset or is refused with a message, never a crash.
#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json_strict.h"
#include "data/dataset.h"

// The first byte's low bit: 1 = re-sign the input (parse it, set manifest_crc32 to its CRC and print it as ringgpt
// does), so the fuzzer gets past the self-checksum into the checks of splits and shards; 0 = the raw bytes. The
// second bit picks the split.
static char *resign(const char *text, size_t len, size_t *out_len) {
    cJSON *root = cJSON_ParseWithLength(text, len);
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return NULL;
    }
    json_sign(root, MANIFEST_CRC_KEY);
    char *printed = cJSON_Print(root);
    cJSON_Delete(root);
    if (!printed) return NULL;
    *out_len = strlen(printed) + 1;
    char *with_newline = malloc(*out_len + 1);
    memcpy(with_newline, printed, *out_len - 1);
    memcpy(with_newline + *out_len - 1, "\n", 2);
    free(printed);
    return with_newline;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *dir = getenv("RINGGPT_FUZZ_DATASET");   // a real dataset: its shards are what the manifest must match
    if (!dir || size < 1) return 0;
    int mode = data[0];
    const char *text = (const char *)data + 1;
    size_t len = size - 1;
    char *owned = (mode & 1) ? resign(text, len, &len) : NULL;
    if ((mode & 1) && !owned) return 0;
    Dataset d;
    DataErr e;
    int rc = dataset_open_manifest_text(dir, owned ? owned : text, len, (mode & 2) ? SPLIT_VAL : SPLIT_TRAIN, &d, &e);
    if (rc < 0 && !e.msg[0]) abort();   // a refusal always says why
    if (rc == 0) dataset_close(&d);
    free(owned);
    return 0;
}
