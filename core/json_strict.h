// core/json_strict.h — manifests read strictly: the exact text ringgpt writes, known keys only, a checksum of the text.
#pragma once
#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// One allowed key of a JSON object; a manifest has one table per object kind.
typedef struct {
    const char *name;
    bool required;
} JsonKey;

// Parses text (len bytes) that ringgpt wrote with cJSON_Print (plus newline bytes of trailing newline,
// 0 or 1). Bytes after the JSON, or any byte that differs from how cJSON prints the parsed document
// (a flipped whitespace or number digit that still parses), is an error. Returns the tree, or NULL with
// a message in err (size n) that says where.
cJSON *json_parse_exact(const char *text, size_t len, int newline, char *err, size_t n);
// Every key of o is in keys (n entries) and appears once; every required key is present. Returns 0,
// or -1 with a message naming the key and `where` ("splits.train").
int json_check_keys(const cJSON *o, const JsonKey *keys, int n, const char *where, char *err, size_t errn);
// JSON that people write (config files, HF config.json), read as strictly as the standard: whitespace between
// tokens is only space, tab, CR and LF (cJSON takes any byte <= 32), strings hold no raw control bytes, no
// object has a key twice (cJSON would keep the first value silently), nothing follows the value but
// whitespace. Returns the tree, or NULL with a message in err (size n) that gives the byte or the key.
cJSON *json_parse_strict(const char *text, size_t len, char *err, size_t n);
// A key or value from a file, fit for a one-line message: at most n-1 bytes, control bytes as '?'. Returns out.
const char *json_printable(const char *s, char *out, size_t n);
// CRC-32 of the document as cJSON prints it without the member `key` (a self-checksum stored under key).
uint32_t json_crc_without(cJSON *root, const char *key);
// Stores that CRC as the last member, `key`: "%08x" (a member of that name already there is replaced).
void json_sign(cJSON *root, const char *key);
