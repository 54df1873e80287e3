// data/dataset.h — a dataset: a directory of shards per split plus manifest.json; writer (for prepare) and checked reader.
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "data/shard.h"

#define MANIFEST_NAME "manifest.json"
#define MANIFEST_FORMAT "ringgpt-shards"
#define MANIFEST_CRC_KEY "manifest_crc32"   // the last key: CRC-32 of the manifest as printed without it
enum { SPLIT_TRAIN = 0, SPLIT_VAL = 1, N_SPLITS = 2 };
extern const char *const SPLIT_NAMES[N_SPLITS];   // "train", "val"

// One split of a dataset opened for reading: its shards in manifest order form one token stream.
typedef struct {
    char *path;               // the dataset directory or single shard file (for messages)
    char *manifest;           // path of manifest.json, NULL for a single shard
    uint32_t token_bytes, vocab_size, eos_id, block_tokens;
    char tokenizer[32];
    Shard **shards;           // (n)
    uint64_t *first;          // (n + 1) stream offset of each shard's first token; first[n] = tokens
    size_t n;
    uint64_t tokens, docs;
    bool weights;             // some shard stores per-token loss weights (the others count as weight 1)
} Dataset;

// Opens split `split` of a dataset directory (manifest.json) or a single shard file (its only split
// is train). Checks every shard's header, indexes and agreement with the manifest.
// Returns 0, 1 when the split does not exist (nothing opened), or -1 with e (message starts with the file).
int dataset_open(const char *path, int split, Dataset *d, DataErr *e);
void dataset_close(Dataset *d);
// dataset_open of a directory, with text (len bytes) standing for its manifest.json (the fuzz test's entry).
int dataset_open_manifest_text(const char *dir, const char *text, size_t len, int split, Dataset *d, DataErr *e);
// Full check of an open split: whole-file CRCs against the manifest, every block, every token id,
// the document indexes and document continuity across shards. Prints one line per shard when verbose.
int dataset_verify(const Dataset *d, bool verbose, DataErr *e);
// True if path is a directory or starts with the shard magic (i.e. the loader, not the text source, reads it).
bool dataset_path_is_shards(const char *path);

// ---- writing (ringgpt prepare) -----------------------------------------------------------------
typedef struct {
    uint64_t tokens, docs, raw_bytes, file_bytes, shards;
} SplitSummary;

typedef struct DatasetWriter DatasetWriter;
// Shards of at most shard_tokens tokens go to dir/<split>_NNNNNN.rgs; documents may span blocks and shards.
DatasetWriter *dataset_writer_open(const char *dir, const ShardParams *p, uint64_t shard_tokens);
void dataset_doc_begin(DatasetWriter *w, int split);
void dataset_doc_tokens(DatasetWriter *w, const uint32_t *tok, size_t n);
void dataset_doc_end(DatasetWriter *w);          // appends EOS (loss weight 1)
// With a loss weight (0 or 1) per token (weight NULL = all 1); the dataset must be opened with p->weights.
void dataset_doc_tokens_weighted(DatasetWriter *w, const uint32_t *tok, const uint8_t *weight, size_t n);
void dataset_doc_end_weighted(DatasetWriter *w, uint8_t eos_weight);
// A whole document in one call (begin, tokens, end).
void dataset_doc(DatasetWriter *w, int split, const uint32_t *tok, size_t n);
// A JSON object text stored under "source" in the manifest (what the data was made from).
void dataset_writer_source(DatasetWriter *w, const char *json_object);
// The manifest entry that names the dataset's tokenizer.json copy (see data/dataset_tokenizer.c).
#define DATASET_TOKENIZER_KEY "tokenizer_json"
void dataset_writer_tokenizer(DatasetWriter *w, const char *json_object);
// Closes all shards and writes manifest.json (tmp + rename). sums gets per-split totals.
void dataset_writer_close(DatasetWriter *w, SplitSummary sums[N_SPLITS]);

// True if the dataset at path has split `split` (reads only the manifest; a single shard has only train).
bool dataset_has_split(const char *path, int split);
