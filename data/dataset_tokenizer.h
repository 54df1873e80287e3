// data/dataset_tokenizer.h — the tokenizer a dataset was made with: a tokenizer.json copy in the dataset and its manifest entry.
#pragma once
#include "data/shard.h"
#include "tokenizer/tokenizer.h"

// The one manifest key this adds (DATASET_TOKENIZER_KEY in data/dataset.h), present only when prepare
// had --tokenizer FILE:
//   "tokenizer_json": {"file": "tokenizer.json", "crc32": "1a2b3c4d", "bos_id": 257, "pad_id": 258,
//                      "add_bos": false}
// file is inside the dataset directory; crc32 is the CRC-32 of its bytes (the manifest's "tokenizer"
// is then "bpe-" + that CRC); bos_id / pad_id are -1 when the tokenizer has none; add_bos says that
// every document starts with bos_id. The manifest's vocab_size and eos_id are the tokenizer's.

// Copies t's tokenizer.json into dir (tmp + rename) and returns the manifest entry's JSON text (free it).
char *dataset_tokenizer_write(const char *dir, const Tokenizer *t);
// The tokenizer of what `--data` names: a dataset directory (its tokenizer.json, checked against the
// manifest), a single shard, or a text file (byte260). Datasets of token files without a tokenizer.json
// get a tokenizer that knows its id, vocab and EOS but cannot encode text (t->bpe NULL, id not byte260).
// Returns 0, or -1 with e naming the file and the problem.
int dataset_tokenizer(const char *path, Tokenizer *t, DataErr *e);
