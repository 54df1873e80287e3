// data/dataset.c — opens a dataset split (manifest.json + shards), checks that they agree, verifies them in full.
#include "data/dataset.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "core/common.h"
#include "core/json_strict.h"

const char *const SPLIT_NAMES[N_SPLITS] = {"train", "val"};

// manifest.json's keys, one table per object (a new key adds a row; see data/FORMAT.md).
static const JsonKey MANIFEST_KEYS[] = {{"format", true},       {"version", true},      {"tokenizer", true},
                                        {"vocab_size", true},   {"eos_id", true},       {"token_bytes", true},
                                        {"block_tokens", true}, {"zlib_level", true},   {"splits", true},
                                        {"source", false},      {"loss_weights", false}, {DATASET_TOKENIZER_KEY, false},
                                        {MANIFEST_CRC_KEY, true}};
static const JsonKey SPLITS_KEYS[] = {{"train", false}, {"val", false}};
static const JsonKey SPLIT_KEYS[] = {{"tokens", true}, {"docs", true}, {"bytes", true}, {"shards", true}};
static const JsonKey SHARD_KEYS[] = {{"file", true},  {"tokens", true}, {"docs", true},
                                     {"bytes", true}, {"crc32", true},  {"index_crc32", true}};
static const JsonKey TOKENIZER_JSON_KEYS[] = {{"file", true},   {"crc32", true},  {"bos_id", true},
                                              {"pad_id", true}, {"add_bos", true}};
#define N_KEYS(t) ((int)(sizeof t / sizeof t[0]))
#define REMAKE "; re-run `ringgpt prepare`"

bool dataset_path_is_shards(const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return false;
    if (S_ISDIR(st.st_mode)) return true;
    FILE *f = fopen(path, "rb");
    char m[8] = {0};
    bool yes = f && fread(m, 1, 8, f) == 8 && memcmp(m, SHARD_MAGIC, 8) == 0;
    if (f) fclose(f);
    return yes;
}

static char *join(const char *dir, const char *name) {
    size_t n = strlen(dir) + strlen(name) + 2;
    char *p = xmalloc(n, "a path");
    snprintf(p, n, "%s/%s", dir, name);
    return p;
}

// A non-negative integer field of a JSON object; names the field when missing or wrong.
static int jint(const cJSON *o, const char *key, uint64_t *v, const char *mpath, const char *where, DataErr *e) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(x) || x->valuedouble < 0 || x->valuedouble > 9007199254740992.0 || x->valuedouble != (double)(uint64_t)x->valuedouble) {
        data_err(e, "%s: %s.%s is missing or not a non-negative integer" REMAKE, mpath, where, key);
        return -1;
    }
    *v = (uint64_t)x->valuedouble;
    return 0;
}

static int jhex(const cJSON *o, const char *key, uint32_t *v, const char *mpath, const char *where, DataErr *e) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
    char *end = NULL;
    unsigned long u = cJSON_IsString(x) ? strtoul(x->valuestring, &end, 16) : 0;
    bool lower = cJSON_IsString(x) && strlen(x->valuestring) == 8 && strspn(x->valuestring, "0123456789abcdef") == 8;
    if (!lower || !end || *end || u > 0xffffffffUL) {
        data_err(e, "%s: %s.%s is missing or not an 8-digit hex CRC" REMAKE, mpath, where, key);
        return -1;
    }
    *v = (uint32_t)u;
    return 0;
}

static void dataset_add_shard(Dataset *d, Shard *s) {
    d->shards = xrealloc(d->shards, (d->n + 1) * sizeof *d->shards, "the shard list");
    d->first = xrealloc(d->first, (d->n + 2) * sizeof *d->first, "the shard list");
    d->first[d->n] = d->tokens;
    d->shards[d->n++] = s;
    d->tokens += s->h.num_tokens;
    d->docs += s->h.num_docs;
    d->weights |= shard_has_weights(&s->h);
    d->first[d->n] = d->tokens;
    if (s->h.block_tokens > d->block_tokens) d->block_tokens = s->h.block_tokens;
}

// Every shard must share the dataset's token width, vocab, EOS and tokenizer.
static int check_params(const Dataset *d, const Shard *s, DataErr *e) {
    const ShardHeader *h = &s->h;
    if (h->token_bytes != d->token_bytes || h->vocab_size != d->vocab_size || h->eos_id != d->eos_id ||
        strcmp(h->tokenizer, d->tokenizer) != 0) {
        data_err(e, "%s: header at byte 16: token width %u, vocab %u, EOS %u, tokenizer '%s' disagree with %s (%u, %u, %u, '%s')" REMAKE,
                 s->path, h->token_bytes, h->vocab_size, h->eos_id, h->tokenizer, d->manifest ? d->manifest : "the dataset",
                 d->token_bytes, d->vocab_size, d->eos_id, d->tokenizer);
        return -1;
    }
    return 0;
}

static int open_single(const char *path, int split, Dataset *d, DataErr *e) {
    if (split != SPLIT_TRAIN) return 1;
    DataErr inner;
    Shard *s = shard_open(path, &inner);
    if (!s) {
        data_err(e, "%s: %s", path, inner.msg);
        return -1;
    }
    d->token_bytes = s->h.token_bytes;
    d->vocab_size = s->h.vocab_size;
    d->eos_id = s->h.eos_id;
    memcpy(d->tokenizer, s->h.tokenizer, 32);
    dataset_add_shard(d, s);
    return 0;
}

static int manifest_params(Dataset *d, const cJSON *root, DataErr *e) {
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(root, "format");
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, "tokenizer");
    uint64_t version, tb, vocab, eos;
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, MANIFEST_FORMAT) != 0) {
        data_err(e, "%s: \"format\" is not \"%s\"; this is not a ringgpt dataset manifest" REMAKE, d->manifest, MANIFEST_FORMAT);
        return -1;
    }
    if (jint(root, "version", &version, d->manifest, "manifest", e) || jint(root, "token_bytes", &tb, d->manifest, "manifest", e) ||
        jint(root, "vocab_size", &vocab, d->manifest, "manifest", e) || jint(root, "eos_id", &eos, d->manifest, "manifest", e))
        return -1;
    if (version != 1 || !cJSON_IsString(tok) || strlen(tok->valuestring) >= 32) {
        data_err(e, "%s: unsupported version %" PRIu64 " or bad \"tokenizer\"" REMAKE, d->manifest, version);
        return -1;
    }
    d->token_bytes = (uint32_t)tb;
    d->vocab_size = (uint32_t)vocab;
    d->eos_id = (uint32_t)eos;
    snprintf(d->tokenizer, sizeof d->tokenizer, "%s", tok->valuestring);
    return 0;
}

// One manifest shard entry: open the file, check it, and check that it is the file the manifest describes.
static int manifest_shard(Dataset *d, const char *dir, const cJSON *it, size_t i, const char *split, DataErr *e) {
    char where[64];
    snprintf(where, sizeof where, "splits.%s.shards[%zu]", split, i);
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(it, "file");
    uint64_t tokens, docs, bytes;
    uint32_t icrc, fcrc;
    if (!cJSON_IsString(file) || strchr(file->valuestring, '/') || !file->valuestring[0]) {
        data_err(e, "%s: %s.file is missing or not a plain file name" REMAKE, d->manifest, where);
        return -1;
    }
    if (jint(it, "tokens", &tokens, d->manifest, where, e) || jint(it, "docs", &docs, d->manifest, where, e) ||
        jint(it, "bytes", &bytes, d->manifest, where, e) || jhex(it, "index_crc32", &icrc, d->manifest, where, e) ||
        jhex(it, "crc32", &fcrc, d->manifest, where, e))
        return -1;
    char *path = join(dir, file->valuestring);
    DataErr inner;
    Shard *s = shard_open(path, &inner);
    if (!s) data_err(e, "%s: %s", path, inner.msg);
    free(path);
    if (!s) return -1;
    if (s->h.num_tokens != tokens || s->h.num_docs != docs || s->h.file_bytes != bytes || s->index_crc != icrc) {
        data_err(e, "%s: header at byte 40 says %" PRIu64 " tokens, %" PRIu64 " docs, %" PRIu64 " bytes, index CRC %08x but %s %s says %" PRIu64
                 ", %" PRIu64 ", %" PRIu64 ", %08x: the manifest and the shard disagree" REMAKE,
                 s->path, s->h.num_tokens, s->h.num_docs, s->h.file_bytes, s->index_crc, d->manifest, where, tokens, docs, bytes, icrc);
        shard_close(s);
        return -1;
    }
    if (check_params(d, s, e)) {
        shard_close(s);
        return -1;
    }
    dataset_add_shard(d, s);
    return 0;
}

// Every object of the manifest has only its table's keys, and the text its own CRC.
static int manifest_strict(const Dataset *d, cJSON *root, DataErr *e) {
    char why[256];
    const cJSON *splits = cJSON_GetObjectItemCaseSensitive(root, "splits");
    int bad = json_check_keys(root, MANIFEST_KEYS, N_KEYS(MANIFEST_KEYS), "the manifest", why, sizeof why) ||
              json_check_keys(splits, SPLITS_KEYS, N_KEYS(SPLITS_KEYS), "splits", why, sizeof why);
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(root, DATASET_TOKENIZER_KEY);
    if (tok && !bad) bad = json_check_keys(tok, TOKENIZER_JSON_KEYS, N_KEYS(TOKENIZER_JSON_KEYS), DATASET_TOKENIZER_KEY, why, sizeof why);
    for (int sp = 0; sp < N_SPLITS && !bad; sp++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(splits, SPLIT_NAMES[sp]);
        char where[64];
        snprintf(where, sizeof where, "splits.%s", SPLIT_NAMES[sp]);
        if (o) bad = json_check_keys(o, SPLIT_KEYS, N_KEYS(SPLIT_KEYS), where, why, sizeof why);
        const cJSON *list = o ? cJSON_GetObjectItemCaseSensitive(o, "shards") : NULL;
        int i = 0;
        for (const cJSON *it = cJSON_IsArray(list) ? list->child : NULL; it && !bad; it = it->next, i++) {
            snprintf(where, sizeof where, "splits.%s.shards[%d]", SPLIT_NAMES[sp], i);
            bad = json_check_keys(it, SHARD_KEYS, N_KEYS(SHARD_KEYS), where, why, sizeof why);
        }
    }
    if (bad) {
        data_err(e, "%s: %s" REMAKE, d->manifest, why);
        return -1;
    }
    uint32_t stored;
    if (jhex(root, MANIFEST_CRC_KEY, &stored, d->manifest, "manifest", e)) return -1;
    uint32_t crc = json_crc_without(root, MANIFEST_CRC_KEY);
    if (crc != stored) {
        data_err(e, "%s: the text's CRC is %08x but " MANIFEST_CRC_KEY " says %08x: the manifest is damaged" REMAKE,
                 d->manifest, crc, stored);
        return -1;
    }
    return 0;
}

static int manifest_text(const char *dir, const char *text, size_t len, int split, Dataset *d, DataErr *e) {
    char why[256];
    cJSON *root = json_parse_exact(text, len, 1, why, sizeof why);
    int rc = -1;
    if (!root) {
        data_err(e, "%s: %s" REMAKE, d->manifest, why);
        goto done;
    }
    if (manifest_strict(d, root, e) || manifest_params(d, root, e)) goto done;
    const cJSON *sp = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "splits"), SPLIT_NAMES[split]);
    if (!sp) {
        rc = 1;
        goto done;
    }
    const cJSON *list = cJSON_GetObjectItemCaseSensitive(sp, "shards");
    uint64_t tokens, docs;
    if (!cJSON_IsArray(list)) {
        data_err(e, "%s: splits.%s.shards is missing or not a list" REMAKE, d->manifest, SPLIT_NAMES[split]);
        goto done;
    }
    char where[32];
    snprintf(where, sizeof where, "splits.%s", SPLIT_NAMES[split]);
    if (jint(sp, "tokens", &tokens, d->manifest, where, e) || jint(sp, "docs", &docs, d->manifest, where, e)) goto done;
    size_t i = 0;
    for (const cJSON *it = list->child; it; it = it->next, i++)
        if (manifest_shard(d, dir, it, i, SPLIT_NAMES[split], e)) goto done;
    if (tokens != d->tokens || docs != d->docs) {
        data_err(e, "%s: %s says %" PRIu64 " tokens and %" PRIu64 " docs, its shards hold %" PRIu64 " and %" PRIu64 REMAKE, d->manifest,
                 where, tokens, docs, d->tokens, d->docs);
        goto done;
    }
    rc = 0;
done:
    cJSON_Delete(root);
    return rc;
}

static int open_manifest(const char *dir, int split, Dataset *d, DataErr *e) {
    d->manifest = join(dir, MANIFEST_NAME);
    FILE *f = fopen(d->manifest, "rb");
    if (!f) {
        data_err(e, "%s: cannot open (%s); give a directory made by `ringgpt prepare`", d->manifest, strerror(errno));
        return -1;
    }
    fclose(f);
    size_t len;
    char *text = (char *)read_whole_file(d->manifest, &len);
    int rc = manifest_text(dir, text, len, split, d, e);
    free(text);
    return rc;
}

int dataset_open_manifest_text(const char *dir, const char *text, size_t len, int split, Dataset *d, DataErr *e) {
    *d = (Dataset){.path = xstrdup(dir), .manifest = join(dir, MANIFEST_NAME)};
    int rc = manifest_text(dir, text, len, split, d, e);
    if (rc != 0) dataset_close(d);
    return rc;
}

int dataset_open(const char *path, int split, Dataset *d, DataErr *e) {
    *d = (Dataset){.path = xstrdup(path)};
    struct stat st;
    if (stat(path, &st) != 0) {
        data_err(e, "%s: cannot open (%s); check the path", path, strerror(errno));
        dataset_close(d);
        return -1;
    }
    int rc = S_ISDIR(st.st_mode) ? open_manifest(path, split, d, e) : open_single(path, split, d, e);
    if (rc != 0) dataset_close(d);
    return rc;
}

void dataset_close(Dataset *d) {
    for (size_t i = 0; i < d->n; i++) shard_close(d->shards[i]);
    free(d->shards);
    free(d->first);
    free(d->path);
    free(d->manifest);
    *d = (Dataset){0};
}

// Whole-file CRC32, streamed.
static int file_crc(const Shard *s, uint32_t *crc, DataErr *e) {
    enum { CHUNK = 1 << 20 };
    unsigned char *buf = xmalloc(CHUNK, "a read buffer");
    uint32_t c = 0;
    for (uint64_t off = 0; off < s->h.file_bytes;) {
        ssize_t r = pread(s->fd, buf, CHUNK, (off_t)off);
        if (r <= 0) {
            data_err(e, "%s: read at byte %" PRIu64 " failed (%s)", s->path, off, r < 0 ? strerror(errno) : "end of file");
            free(buf);
            return -1;
        }
        c = (uint32_t)crc32(c, buf, (uInt)r);
        off += (uint64_t)r;
    }
    free(buf);
    *crc = c;
    return 0;
}

// The manifest's whole-file CRC of shard i (the open check compared everything else).
static int manifest_crc(const Dataset *d, size_t i, uint32_t *crc) {
    if (!d->manifest) return 1;
    size_t len;
    char *text = (char *)read_whole_file(d->manifest, &len);
    cJSON *root = cJSON_ParseWithLength(text, len);
    free(text);
    int rc = 1;
    const cJSON *splits = cJSON_GetObjectItemCaseSensitive(root, "splits");
    for (int sp = 0; sp < N_SPLITS && rc; sp++) {
        const cJSON *list = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(splits, SPLIT_NAMES[sp]), "shards");
        for (const cJSON *it = list ? list->child : NULL; it; it = it->next) {
            const cJSON *file = cJSON_GetObjectItemCaseSensitive(it, "file"), *c = cJSON_GetObjectItemCaseSensitive(it, "crc32");
            const char *base = strrchr(d->shards[i]->path, '/');
            if (cJSON_IsString(file) && cJSON_IsString(c) && strcmp(file->valuestring, base ? base + 1 : d->shards[i]->path) == 0) {
                *crc = (uint32_t)strtoul(c->valuestring, NULL, 16);
                rc = 0;
                break;
            }
        }
    }
    cJSON_Delete(root);
    return rc;
}

int dataset_verify(const Dataset *d, bool verbose, DataErr *e) {
    int32_t prev_last = (int32_t)d->eos_id;
    for (size_t i = 0; i < d->n; i++) {
        const Shard *s = d->shards[i];
        uint32_t want, got;
        int32_t last;
        DataErr inner;
        // Blocks first: their messages say where; the whole-file CRC then catches anything else.
        if (shard_verify(s, &last, &inner)) {
            data_err(e, "%s: %s", s->path, inner.msg);
            return -1;
        }
        if (manifest_crc(d, i, &want) == 0) {
            if (file_crc(s, &got, e)) return -1;
            if (got != want) {
                data_err(e, "%s: whole-file CRC %08x does not match the manifest's %08x (bytes 0-%" PRIu64 ")" REMAKE, s->path, got, want,
                         s->h.file_bytes);
                return -1;
            }
        }
        bool continues = s->h.flags & SHARD_FLAG_CONTINUES;
        if (d->manifest && continues != (prev_last != (int32_t)d->eos_id)) {
            data_err(e, "%s: header at byte 36: the continuation flag is %d but the previous shard %s with EOS" REMAKE, s->path,
                     continues, continues ? "ends" : "does not end");
            return -1;
        }
        if (s->h.num_tokens) prev_last = last;
        if (verbose) printf("  ok  %s  %" PRIu64 " tokens, %" PRIu64 " docs, %" PRIu64 " blocks\n", s->path, s->h.num_tokens,
                            s->h.num_docs, s->h.num_blocks);
    }
    if (d->manifest && prev_last != (int32_t)d->eos_id) {
        data_err(e, "%s: the last document does not end with EOS: the last shard is incomplete" REMAKE, d->n ? d->shards[d->n - 1]->path : d->path);
        return -1;
    }
    return 0;
}

bool dataset_has_split(const char *path, int split) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) return split == SPLIT_TRAIN;
    char *m = join(path, MANIFEST_NAME);
    FILE *f = fopen(m, "rb");
    bool has = false;
    if (f) {
        fclose(f);
        size_t len;
        char *text = (char *)read_whole_file(m, &len);
        cJSON *root = cJSON_ParseWithLength(text, len);
        has = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(root, "splits"), SPLIT_NAMES[split]) != NULL;
        cJSON_Delete(root);
        free(text);
    }
    free(m);
    return has;
}
