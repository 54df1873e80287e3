// data/dataset_tokenizer.c — a dataset's tokenizer: prepare's copy of tokenizer.json and the manifest's "tokenizer_json" entry.
#include "data/dataset_tokenizer.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/common.h"
#include "data/dataset.h"

#define REMAKE "; re-run `ringgpt prepare --tokenizer FILE`"

char *dataset_tokenizer_write(const char *dir, const Tokenizer *t) {
    size_t n = strlen(dir) + sizeof TOKENIZER_FILE + 8;
    char *path = xmalloc(n, "a path"), *tmp = xmalloc(n + 4, "a path");
    snprintf(path, n, "%s/%s", dir, TOKENIZER_FILE);
    snprintf(tmp, n + 4, "%s.tmp", path);
    FILE *f = xfopen(tmp, "wb");
    xfwrite(t->json, t->json_len, f, tmp);
    xfclose(f, tmp);
    if (rename(tmp, path) != 0) fail("cannot rename %s to %s (%s)", tmp, path, strerror(errno));
    free(path);
    free(tmp);
    cJSON *o = cJSON_CreateObject();
    char crc[16];
    snprintf(crc, sizeof crc, "%08x", t->crc);
    cJSON_AddStringToObject(o, "file", TOKENIZER_FILE);
    cJSON_AddStringToObject(o, "crc32", crc);
    cJSON_AddNumberToObject(o, "bos_id", (double)t->bos);
    cJSON_AddNumberToObject(o, "pad_id", (double)t->pad);
    cJSON_AddBoolToObject(o, "add_bos", t->add_bos);
    char *text = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!text) fail("out of memory writing the manifest");
    return text;
}

static bool special_id(const cJSON *o, const char *key, uint32_t vocab, int64_t *id) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < -1 || v->valuedouble >= vocab || v->valuedouble != (double)(int64_t)v->valuedouble) return false;
    *id = (int64_t)v->valuedouble;
    return true;
}

// dir/tokenizer.json as the manifest entry describes it.
static int load_entry(const char *dir, const char *manifest, const cJSON *entry, const Dataset *d, Tokenizer *t, DataErr *e) {
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(entry, "file"), *crc = cJSON_GetObjectItemCaseSensitive(entry, "crc32");
    if (!cJSON_IsString(file) || strchr(file->valuestring, '/') || !cJSON_IsString(crc)) {
        data_err(e, "%s: \"" DATASET_TOKENIZER_KEY "\" needs \"file\" (a name in the dataset) and \"crc32\"" REMAKE, manifest);
        return -1;
    }
    char path[4200], err[600];
    if (snprintf(path, sizeof path, "%s/%s", dir, file->valuestring) >= (int)sizeof path) {
        data_err(e, "%s: tokenizer path too long", manifest);
        return -1;
    }
    if (tokenizer_load(path, t, err, sizeof err) != 0) {
        data_err(e, "%s" REMAKE, err);
        return -1;
    }
    char hex[16];
    snprintf(hex, sizeof hex, "%08x", t->crc);
    if (strcmp(hex, crc->valuestring) != 0 || strcmp(t->id, d->tokenizer) != 0) {
        data_err(e, "%s: CRC-32 is %s but %s records %s and tokenizer '%s' (the file was changed or damaged)" REMAKE, path, hex, manifest,
                 crc->valuestring, d->tokenizer);
        tokenizer_free(t);
        return -1;
    }
    if (t->vocab_size != d->vocab_size) {
        data_err(e, "%s: vocab %u but %s says vocab_size %u" REMAKE, path, t->vocab_size, manifest, d->vocab_size);
        tokenizer_free(t);
        return -1;
    }
    const cJSON *add = cJSON_GetObjectItemCaseSensitive(entry, "add_bos");
    if (!special_id(entry, "bos_id", t->vocab_size, &t->bos) || !special_id(entry, "pad_id", t->vocab_size, &t->pad) || !cJSON_IsBool(add) ||
        (cJSON_IsTrue(add) && t->bos < 0)) {
        data_err(e, "%s: \"" DATASET_TOKENIZER_KEY "\" needs bos_id and pad_id (-1 or a token id) and add_bos (true needs a bos_id)" REMAKE,
                 manifest);
        tokenizer_free(t);
        return -1;
    }
    t->add_bos = cJSON_IsTrue(add);
    t->eos = d->eos_id;   // prepare --eos may have chosen another end-of-document token
    return 0;
}

int dataset_tokenizer(const char *path, Tokenizer *t, DataErr *e) {
    if (!dataset_path_is_shards(path)) {
        tokenizer_bytes(t);
        return 0;
    }
    Dataset d;
    if (dataset_open(path, SPLIT_TRAIN, &d, e) != 0) return -1;
    int rc = 0;
    cJSON *entry = NULL, *root = NULL;
    if (d.manifest) {
        size_t len;
        unsigned char *text = read_whole_file(d.manifest, &len);
        root = cJSON_ParseWithLength((const char *)text, len);
        free(text);
        entry = cJSON_GetObjectItemCaseSensitive(root, DATASET_TOKENIZER_KEY);
    }
    if (entry) {
        char dir[4200];
        snprintf(dir, sizeof dir, "%s", d.manifest);
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0;
        else snprintf(dir, sizeof dir, ".");
        rc = load_entry(dir, d.manifest, entry, &d, t, e);
    } else if (strcmp(d.tokenizer, TOKENIZER_ID) == 0 && d.vocab_size == TOK_VOCAB_SIZE) {
        tokenizer_bytes(t);
        t->eos = d.eos_id;
    } else {
        *t = (Tokenizer){.vocab_size = d.vocab_size, .eos = d.eos_id, .bos = -1, .pad = -1};
        snprintf(t->id, sizeof t->id, "%s", d.tokenizer[0] ? d.tokenizer : "unknown");
    }
    cJSON_Delete(root);
    dataset_close(&d);
    return rc;
}
