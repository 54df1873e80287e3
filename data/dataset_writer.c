// data/dataset_writer.c — writes a dataset for `prepare`: rolls shards per split, then manifest.json atomically.
#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "core/json_strict.h"
#include "data/dataset.h"
#include "tokenizer/tokenizer.h"

typedef struct {
    ShardWriter *w;            // the open shard, NULL between shards
    char *name;                // its file name
    uint64_t index;            // shard number within the split
    cJSON *list;               // manifest entries of the closed shards
    SplitSummary sum;
} SplitWriter;

struct DatasetWriter {
    char *dir;
    ShardParams p;
    uint64_t shard_tokens;
    SplitWriter split[N_SPLITS];
    int cur;                   // split of the current document
    bool in_doc, start_pending;
    cJSON *source;
    cJSON *tokenizer_json;     // the "tokenizer_json" manifest entry (data/dataset_tokenizer.c), NULL for none
    char **made;               // (n_made) every file this writer created, final and .tmp names
    size_t n_made;
};

// Writers not closed yet: a process that fails before its manifest is written removes what they made, so a
// failed prepare leaves no shards and no .tmp behind (the manifest, written last, marks a dataset complete).
enum { MAX_OPEN_WRITERS = 16 };
static DatasetWriter *g_open[MAX_OPEN_WRITERS];

static void remove_unfinished(void) {
    for (int i = 0; i < MAX_OPEN_WRITERS; i++)
        for (size_t k = 0; g_open[i] && k < g_open[i]->n_made; k++) unlink(g_open[i]->made[k]);
}

static void track(DatasetWriter *w, const char *path) {
    w->made = xrealloc(w->made, (w->n_made + 2) * sizeof *w->made, "the dataset's file list");
    size_t n = strlen(path) + 5;
    w->made[w->n_made] = xstrdup(path);
    w->made[w->n_made + 1] = xmalloc(n, "a path");
    snprintf(w->made[w->n_made + 1], n, "%s.tmp", path);
    w->n_made += 2;
}

static void set_open(DatasetWriter *w, bool open) {
    static bool registered;
    if (!registered) atexit(remove_unfinished);
    registered = true;
    for (int i = 0; i < MAX_OPEN_WRITERS; i++)
        if (open ? g_open[i] == NULL : g_open[i] == w) {
            g_open[i] = open ? w : NULL;
            return;
        }
    if (open) fail("internal: more than %d dataset writers open at once", MAX_OPEN_WRITERS);
}

// Removes the partial files (*.tmp) of an earlier prepare into dir that died: they are never part of a dataset.
static void remove_stale_tmp(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    char path[4200];
    while ((de = readdir(d)) != NULL) {
        size_t n = strlen(de->d_name);
        if (n < 5 || strcmp(de->d_name + n - 4, ".tmp") != 0) continue;
        if (strncmp(de->d_name, "train_", 6) && strncmp(de->d_name, "val_", 4) && strcmp(de->d_name, MANIFEST_NAME ".tmp") &&
            strcmp(de->d_name, TOKENIZER_FILE ".tmp"))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
}

DatasetWriter *dataset_writer_open(const char *dir, const ShardParams *p, uint64_t shard_tokens) {
    if (shard_tokens == 0) fail_usage("--shard-tokens must be positive");
    make_dirs(dir);
    remove_stale_tmp(dir);
    DatasetWriter *w = xcalloc(1, sizeof *w, "a dataset writer");
    set_open(w, true);
    w->dir = xstrdup(dir);
    w->p = *p;
    w->shard_tokens = shard_tokens;
    for (int s = 0; s < N_SPLITS; s++) w->split[s].list = cJSON_CreateArray();
    return w;
}

static void close_shard(DatasetWriter *w, SplitWriter *s) {
    if (!s->w) return;
    ShardSummary r = shard_writer_close(s->w);
    char crc[16], icrc[16];
    snprintf(crc, sizeof crc, "%08x", r.file_crc);
    snprintf(icrc, sizeof icrc, "%08x", r.index_crc);
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "file", s->name);
    cJSON_AddNumberToObject(e, "tokens", (double)r.num_tokens);
    cJSON_AddNumberToObject(e, "docs", (double)r.num_docs);
    cJSON_AddNumberToObject(e, "bytes", (double)r.file_bytes);
    cJSON_AddStringToObject(e, "crc32", crc);
    cJSON_AddStringToObject(e, "index_crc32", icrc);
    cJSON_AddItemToArray(s->list, e);
    s->sum.tokens += r.num_tokens;
    s->sum.docs += r.num_docs;
    s->sum.raw_bytes += r.raw_bytes;
    s->sum.file_bytes += r.file_bytes;
    s->sum.shards++;
    s->w = NULL;
    free(s->name);
    s->name = NULL;
}

// Opens the split's next shard; it continues a document when one is open and has already started.
static void open_shard(DatasetWriter *w, SplitWriter *s, int split) {
    char name[64];
    snprintf(name, sizeof name, "%s_%06" PRIu64 ".rgs", SPLIT_NAMES[split], s->index++);
    s->name = xstrdup(name);
    size_t n = strlen(w->dir) + strlen(name) + 2;
    char *path = xmalloc(n, "a path");
    snprintf(path, n, "%s/%s", w->dir, name);
    track(w, path);
    s->w = shard_writer_open(path, &w->p, w->in_doc && !w->start_pending);
    free(path);
}

static void write_tokens(DatasetWriter *w, const uint32_t *tok, const uint8_t *weight, size_t n) {
    SplitWriter *s = &w->split[w->cur];
    do {
        if (s->w && shard_writer_count(s->w) >= w->shard_tokens) close_shard(w, s);
        if (!s->w) open_shard(w, s, w->cur);
        if (w->start_pending) {
            shard_writer_doc_start(s->w);
            w->start_pending = false;
        }
        uint64_t room = w->shard_tokens - shard_writer_count(s->w);
        size_t k = n < room ? n : (size_t)room;
        shard_writer_tokens_weighted(s->w, tok, weight, k);
        tok += k;
        if (weight) weight += k;
        n -= k;
    } while (n);
}

void dataset_doc_begin(DatasetWriter *w, int split) {
    if (w->in_doc) fail("internal: dataset_doc_begin inside a document");
    w->cur = split;
    w->in_doc = true;
    w->start_pending = true;
}

void dataset_doc_tokens(DatasetWriter *w, const uint32_t *tok, size_t n) {
    if (n) write_tokens(w, tok, NULL, n);
}

void dataset_doc_tokens_weighted(DatasetWriter *w, const uint32_t *tok, const uint8_t *weight, size_t n) {
    if (n) write_tokens(w, tok, weight, n);
}

void dataset_doc_end_weighted(DatasetWriter *w, uint8_t eos_weight) {
    uint32_t eos = w->p.eos_id;
    write_tokens(w, &eos, w->p.weights ? &eos_weight : NULL, 1);
    w->in_doc = false;
}

void dataset_doc_end(DatasetWriter *w) { dataset_doc_end_weighted(w, 1); }

void dataset_doc(DatasetWriter *w, int split, const uint32_t *tok, size_t n) {
    dataset_doc_begin(w, split);
    dataset_doc_tokens(w, tok, n);
    dataset_doc_end(w);
}

void dataset_writer_source(DatasetWriter *w, const char *json_object) {
    cJSON_Delete(w->source);
    w->source = cJSON_Parse(json_object);
    if (!w->source) fail("internal: bad manifest source JSON: %s", json_object);
}

void dataset_writer_tokenizer(DatasetWriter *w, const char *json_object) {
    cJSON_Delete(w->tokenizer_json);
    w->tokenizer_json = cJSON_Parse(json_object);
    if (!w->tokenizer_json) fail("internal: bad manifest tokenizer JSON: %s", json_object);
    const cJSON *file = cJSON_GetObjectItemCaseSensitive(w->tokenizer_json, "file");
    char path[4200];
    if (cJSON_IsString(file) && snprintf(path, sizeof path, "%s/%s", w->dir, file->valuestring) < (int)sizeof path)
        track(w, path);   // written by dataset_tokenizer_write into the dataset: removed with it if prepare fails
}

static void write_manifest(DatasetWriter *w, cJSON *root) {
    size_t n = strlen(w->dir) + 32;
    char *path = xmalloc(n, "a path"), *tmp = xmalloc(n, "a path");
    snprintf(path, n, "%s/%s", w->dir, MANIFEST_NAME);
    snprintf(tmp, n, "%s/%s.tmp", w->dir, MANIFEST_NAME);
    char *text = cJSON_Print(root);
    if (!text) fail("out of memory printing the manifest");
    FILE *f = xfopen(tmp, "wb");
    xfwrite(text, strlen(text), f, tmp);
    xfwrite("\n", 1, f, tmp);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0) fail_io(tmp, errno, "flush to disk failed");
    xfclose(f, tmp);
    if (rename(tmp, path) != 0) fail_io(path, errno, "cannot rename %s into place", tmp);
    int dfd = open(w->dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        if (fsync(dfd) != 0) fail_io(w->dir, errno, "fsync of the directory failed");
        close(dfd);
    }
    free(text);
    free(path);
    free(tmp);
}

void dataset_writer_close(DatasetWriter *w, SplitSummary sums[N_SPLITS]) {
    if (w->in_doc) dataset_doc_end(w);
    for (int s = 0; s < N_SPLITS; s++) close_shard(w, &w->split[s]);
    if (!w->split[SPLIT_TRAIN].sum.tokens)   // before the manifest: the shards written so far are removed at exit
        fail_usage("no documents went to the training split; lower --val-fraction or give more input");
    cJSON *root = cJSON_CreateObject(), *splits = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", MANIFEST_FORMAT);
    cJSON_AddNumberToObject(root, "version", 1);
    cJSON_AddStringToObject(root, "tokenizer", w->p.tokenizer ? w->p.tokenizer : "");
    cJSON_AddNumberToObject(root, "vocab_size", w->p.vocab_size);
    cJSON_AddNumberToObject(root, "eos_id", w->p.eos_id);
    cJSON_AddNumberToObject(root, "token_bytes", w->p.token_bytes);
    cJSON_AddNumberToObject(root, "block_tokens", w->p.block_tokens);
    cJSON_AddNumberToObject(root, "zlib_level", w->p.level);
    if (w->p.weights) cJSON_AddBoolToObject(root, "loss_weights", 1);
    for (int s = 0; s < N_SPLITS; s++) {
        SplitWriter *sw = &w->split[s];
        close_shard(w, sw);
        if (sums) sums[s] = sw->sum;
        if (!sw->sum.shards) {
            cJSON_Delete(sw->list);
            continue;
        }
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "tokens", (double)sw->sum.tokens);
        cJSON_AddNumberToObject(o, "docs", (double)sw->sum.docs);
        cJSON_AddNumberToObject(o, "bytes", (double)sw->sum.file_bytes);
        cJSON_AddItemToObject(o, "shards", sw->list);
        cJSON_AddItemToObject(splits, SPLIT_NAMES[s], o);
    }
    cJSON_AddItemToObject(root, "splits", splits);
    if (w->source) cJSON_AddItemToObject(root, "source", w->source);
    if (w->tokenizer_json) cJSON_AddItemToObject(root, DATASET_TOKENIZER_KEY, w->tokenizer_json);
    json_sign(root, MANIFEST_CRC_KEY);   // last: the CRC of everything above, so that any change to the text is caught
    write_manifest(w, root);
    cJSON_Delete(root);
    set_open(w, false);   // committed: nothing is removed any more
    for (size_t k = 0; k < w->n_made; k++) free(w->made[k]);
    free(w->made);
    free(w->dir);
    free(w);
}
