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

const char *json_printable(const char *s, char *out, size_t n) {
    size_t k = 0;
    for (; s && s[k] && k + 1 < n; k++) out[k] = (unsigned char)s[k] < 0x20 || s[k] == 0x7f ? '?' : s[k];
    out[k] = 0;
    return out;
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
            char key[128];
            snprintf(err, errn, "%s has an unknown key \"%s\"", where, json_printable(c->string, key, sizeof key));
            return -1;
        }
        if (++count[k] > 1) {
            char key[128];
            snprintf(err, errn, "%s has the key \"%s\" twice", where, json_printable(c->string, key, sizeof key));
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

// Outside strings only JSON's four whitespace bytes; inside them no raw byte below 0x20. Returns the
// offset of the first offending byte, or -1.
static long bad_byte(const char *text, size_t len) {
    bool in_string = false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (in_string) {
            if (c < 0x20) return (long)i;
            if (c == '\\') i++;
            else if (c == '"') in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c < 0x20 && c != ' ' && c != '\t' && c != '\r' && c != '\n') {
            return (long)i;
        } else if (c == 0x7f) {
            return (long)i;
        }
    }
    return -1;
}

// The first key that an object of the tree holds twice, with its path ("a.b"), into err. Returns 0 if none.
static int duplicate_key(const cJSON *o, const char *where, int depth, char *err, size_t n) {
    if (depth > 64) {
        snprintf(err, n, "nested more than 64 levels deep at %s", where);
        return -1;
    }
    for (const cJSON *c = o ? o->child : NULL; c; c = c->next) {
        if (cJSON_IsObject(o))
            for (const cJSON *d = o->child; d != c; d = d->next)
                if (strcmp(d->string, c->string) == 0) {
                    char key[128];
                    snprintf(err, n, "the key \"%s\" appears twice in %s (which value is meant?)",
                             json_printable(c->string, key, sizeof key), where);
                    return -1;
                }
        if (c->child) {
            char sub[320];
            char key[65];
            snprintf(sub, sizeof sub, "%.200s%s%s", where, cJSON_IsObject(o) ? "." : "[]",
                     cJSON_IsObject(o) ? json_printable(c->string, key, sizeof key) : "");
            if (duplicate_key(c, sub, depth + 1, err, n)) return -1;
        }
    }
    return 0;
}

cJSON *json_parse_strict(const char *text, size_t len, char *err, size_t n) {
    long bad = bad_byte(text, len);
    if (bad >= 0) {
        snprintf(err, n, "byte %ld is a control character (0x%02x); JSON allows only space, tab, CR and LF between "
                 "tokens and none inside strings (write \\n, \\t)", bad, (unsigned char)text[bad]);
        return NULL;
    }
    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(text, len, &end, false);
    if (!root) {
        snprintf(err, n, "not valid JSON (parsing stopped near byte %zu)", end ? (size_t)(end - text) : (size_t)0);
        return NULL;
    }
    for (; end < text + len; end++)
        if (!strchr(" \t\r\n", *end)) {
            snprintf(err, n, "bytes after the JSON %s (at byte %td)", cJSON_IsObject(root) ? "object" : "value", end - text);
            cJSON_Delete(root);
            return NULL;
        }
    if (duplicate_key(root, "the top-level object", 0, err, n)) {
        cJSON_Delete(root);
        return NULL;
    }
    return root;
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

void json_sign(cJSON *root, const char *key) {
    char crc[16];
    snprintf(crc, sizeof crc, "%08x", json_crc_without(root, key));
    cJSON_DeleteItemFromObjectCaseSensitive(root, key);
    if (!cJSON_AddStringToObject(root, key, crc)) fail("out of memory signing a manifest");
}
