// data/source_impl.h — the two data source kinds behind data/source.h: a text file and the shard loader.
#pragma once
#include <stdbool.h>

#include "data/source.h"

typedef struct {
    void (*next)(void *impl, Batch *b);
    uint64_t (*num_samples)(const void *impl);
    DataState (*state)(const void *impl);
    void (*restore)(void *impl, DataState s);
    void (*close)(void *impl);
} SourceOps;

// A plain text file, byte tokenizer, in memory (data/textdata.c).
void *text_source_open(const char *path, const DataOptions *o, bool validation);
extern const SourceOps TEXT_SOURCE;
// A dataset directory or a shard, streamed by a background thread (data/loader.c).
void *loader_open(const char *path, const DataOptions *o, bool validation);
uint32_t loader_vocab_size(const void *impl);
bool loader_masks_targets(const void *impl);   // the data's loss weights mask targets (see data_masks_targets)
extern const SourceOps LOADER_SOURCE;
