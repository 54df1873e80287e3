// core/json_strict.c — manifests read strictly: the exact text ringgpt writes, known keys only, a checksum of the text.
#include "core/json_strict.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/common.h"

cJSON *json_parse_exact(const char *text, size_t len, int newline, char *err, size_t n) {
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!cJSON_IsObject(root)) {
        size_t at = end ? (size_t)(end - text) : 0;
        snprintf(err, n, "not a valid JSON object (parsing stopped near byte %zu)", at);
        cJSON_Delete(root);
        return NULL;
    }
    size_t body = (size_t)(end - text);
    if (body + (size_t)newline != len || (newline && text[body] != '\n')) {
        snprintf(err, n, "%zu unexpected bytes after the JSON object at byte %zu", len - body, body);
        cJSON_Delete(root);
        return NULL;
    }
    // cJSON skips any byte <= 32 as whitespace and prints numbers one way: comparing with its own print
    // catches flips that parse to the same document (a space turned into a control byte, 1.0 for 1).
    char *canon = cJSON_Print(root);
    if (!canon) fail("out of memory printing a manifest");
    size_t k = 0;
    while (k < body && canon[k] == text[k]) k++;
    bool same = k == body && canon[k] == 0;
    free(canon);
    if (!same) {
        snprintf(err, n, "byte %zu is not what ringgpt writes there (the file was damaged or edited)", k);
        cJSON_Delete(root);
        return NULL;
    }
    return root;
}

int json_check_keys(const cJSON *o, const JsonKey *keys, int n, const char *where, char *err, size_t errn) {
    if (!cJSON_IsObject(o)) {
        snprintf(err, errn, "%s is not an object", where);
        return -1;
    }
    int count[64] = {0};
    if (n > 64) fail("internal: a JSON key table has more than 64 keys");
    for (const cJSON *c = o->child; c; c = c->next) {
        int k = 0;
        while (k < n && strcmp(keys[k].name, c->string) != 0) k++;
        if (k == n) {
            snprintf(err, errn, "%s has an unknown key \"%s\"", where, c->string);
            return -1;
        }
        if (++count[k] > 1) {
            snprintf(err, errn, "%s has the key \"%s\" twice", where, c->string);
            return -1;
        }
    }
    for (int k = 0; k < n; k++)
        if (keys[k].required && !count[k]) {
            snprintf(err, errn, "%s lacks the key \"%s\"", where, keys[k].name);
            return -1;
        }
    return 0;
}

uint32_t json_crc_without(cJSON *root, const char *key) {
    cJSON *copy = cJSON_Duplicate(root, true);
    if (!copy) fail("out of memory copying a manifest");
    cJSON_DeleteItemFromObjectCaseSensitive(copy, key);
    char *text = cJSON_Print(copy);
    if (!text) fail("out of memory printing a manifest");
    uint32_t crc = (uint32_t)crc32(0, (const unsigned char *)text, (uInt)strlen(text));
    free(text);
    cJSON_Delete(copy);
    return crc;
}
