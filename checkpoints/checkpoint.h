// checkpoints/checkpoint.h — checkpoint directories: atomic save, manifest verification, newest-valid lookup, load by name.
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include "checkpoints/safetensors.h"
#include "core/comm.h"
#include "data/source.h"
#include "model/adamw.h"
#include "model/config.h"
#include "model/gpt.h"

#define CKPT_FORMAT "ringgpt-checkpoint"
#define CKPT_REAL_DTYPE (sizeof(real) == 4 ? ST_F32 : ST_F64)   // tensors are stored as the build's `real`
// Version 2: a sharded checkpoint (shard_*_of_*.safetensors, state.json "shard"); every other checkpoint is written as
// version 1, which older ringgpt reads. Both are read.
enum { CKPT_VERSION = 2, CKPT_VERSION_UNSHARDED = 1 };

// The run flags a checkpoint records; a resume must agree with them (see ckpt_check_resume).
typedef struct {
    int seq_len, batch, grad_accum, steps, warmup, loss_chunk;
    int shuffle;            // 1: the loader's per-epoch shuffle, 0: --no-shuffle
    float lr, min_lr, weight_decay, beta1, beta2, clip;
    char schedule[16];
    char data[1024];        // the --data path (recorded, not enforced)
} CkptRun;

// The tokenizer the model was trained with: state.json "tokenizer" (absent in older checkpoints:
// id ""), and tokenizer.json in the step directory when the data had one (listed in MANIFEST.json).
typedef struct {
    char id[32];                // "byte260", "bpe-<crc32>", "gpt2", ...; "" when not recorded
    int64_t eos, bos, pad;      // -1 = none
    bool add_bos;               // documents start with bos
    bool has_file;              // the step directory holds tokenizer.json
    const unsigned char *json;  // saving: the tokenizer.json bytes to write (NULL: none); not read back
    size_t json_len;
} CkptTokenizer;

// What a model imported from Hugging Face carries besides its weights and tokenizer: state.json "meta" and
// hf_meta.json in the step directory (absent in older checkpoints and for models trained from scratch). Kept
// through fine-tunes (train --init-from, --resume) and written back by export.
typedef struct {
    char name[256];      // config.json's _name_or_path, else the imported directory's name; "" for none
    int max_pos;         // the original max_position_embeddings (0: none); an export never writes less
    bool has_file;       // the step directory holds hf_meta.json
    const char *json;    // saving: the hf_meta.json text to write (NULL: none); not read back (model_meta_read)
    size_t json_len;
} CkptMeta;

// Everything in state.json.
typedef struct {
    int version;
    char kind[16];          // "train" (weights + optimizer + position) or "weights" (import: no optimizer)
    int64_t step;           // optimizer steps completed: the continued run starts at this step index
    int adamw_step;
    double next_lr;         // the schedule's value at `step` (for the record)
    DataState data;
    int64_t seed;           // initial weights and data order
    ModelConfig model;
    CkptRun run;
    int dp, sp;             // the layout it was saved from
    ShardLevel shard_level; // state.json "shard": how the state was split when saved (SHARD_NONE: not); written by
    int shard_ranks;        //   ckpt_save from the AdamW it is given, whatever these say; ranks 0 when unsharded
    char init_from[1024];   // the weights a fine-tune started from ("" for none)
    CkptTokenizer tok;
    CkptMeta meta;
    StFill weights;          // saving: when set, model.safetensors' tensors come from weights(weights_ctx, table index,
    const void *weights_ctx; //   dst) instead of m->params, one at a time (an import streams them); not read back
} CkptState;

// Saves OUT/step_NNNNNNNN atomically: files into step_N.tmp/, each fsync'd, MANIFEST.json last,
// rename to step_N/, fsync OUT, LATEST replaced by rename. opt NULL writes a weights-only
// checkpoint (kind "weights"). Unsharded (opt NULL or opt->shard NULL) the writing rank calls it alone (world unused,
// may be NULL). Sharded (opt->shard set: model/shard.h) every rank of world calls it: each writes its shard file
// (its slices of the moments, and of the weights at SHARD_PARAMS), rank 0 the rest (model.safetensors unless the
// weights are sharded) and commits after every rank's file is written; every rank returns the same result (a failed
// rank's message in every e). keep > 0 then removes the oldest step directories beyond keep,
// never the one LATEST names, and says which it removes; stale *.tmp directories are removed first. On any
// error nothing committed before is touched and the save's own .tmp is removed. An existing step_N that
// verifies is never replaced (-1); a damaged one is moved to step_N.damagedK. Returns 0, or -1 with e.
int ckpt_save(const char *out, const CkptState *s, const GPT *m, const AdamW *opt, int keep, Comm *world, CkErr *e);
// Checks dir/MANIFEST.json: format, version, and every listed file's size and CRC32.
// world NULL: this process checks every file. Else every rank of world calls it (a resume): each checks the manifest
// and the sizes and CRC32s of every world-size-th file (rank r: files r, r + N, ...), so the job reads each file once,
// and every rank returns the same result (the failing rank's message in every e).
int ckpt_verify(const char *dir, Comm *world, CkErr *e);
// The same for manifest text (len bytes) that stands for dir/MANIFEST.json (checkpoints/ckpt_format.c).
// Only the listed files i with i % parts == part have their size and CRC32 read (0, 1: all).
int ckpt_verify_manifest_text(const char *dir, const char *text, size_t len, int part, int parts, CkErr *e);
// A file's manifest record computed where it was written (a shard file, by its rank).
typedef struct {
    char name[64];
    uint64_t size;
    uint32_t crc32;
} CkptFileSum;
// Writes dir/MANIFEST.json: the size and CRC32 of each of the n_files files of dir named in files, in that order, then
// the n_shards records of shards (sharded: version 2).
int ckpt_write_manifest(const char *dir, const char *const *files, int n_files, const CkptFileSum *shards, int n_shards,
                        CkErr *e);
// The newest step directory of out whose manifest verifies, into dir (size n). Damaged or
// incomplete newer ones are reported on stderr, one line each naming the checkpoint used instead. Returns 1
// found, 0 none at all, -1 (with e) when step directories exist but none is valid.
// world: as ckpt_verify's (every rank of it calls this).
int ckpt_find_latest(const char *out, char *dir, size_t n, Comm *world, CkErr *e);
// 1 when out holds a checkpoint newer than step that passes its checks (the newest such into dir), else 0.
int ckpt_newer_valid(const char *out, int64_t step, char *dir, size_t n, Comm *world);
// Removes out/step_*.tmp directories that saves which crashed or failed left behind (the caller holds out's lock).
int ckpt_remove_stale_tmp(const char *out, CkErr *e);
// A path given by the user: a step directory, or a run directory (its newest valid checkpoint).
// Fails with a clear message.
// world: as ckpt_verify's.
void ckpt_resolve(const char *path, char *dir, size_t n, Comm *world);
int ckpt_read_state(const char *dir, CkptState *s, CkErr *e);
// Loads the weights of step directory dir (state s) into m->params: all of them, or at SHARD_PARAMS (m->shard) this
// rank's slices. From model.safetensors by name (every table tensor present with its shape), or from the shard files
// when the weights were saved sharded; only the values this rank keeps are read. Returns 0, or -1 with e naming the
// file and the tensor.
int ckpt_load_model(const char *dir, const CkptState *s, GPT *m, CkErr *e);
// Loads AdamW's moments (all, or opt->shard's slices of this rank) from optim.safetensors (m.<name>, v.<name>) or the
// shard files, whatever the rank count and level they were saved with, and its step from s.
int ckpt_load_optim(const char *dir, const CkptState *s, const GPT *m, AdamW *opt, CkErr *e);
// "shard_00003_of_00008.safetensors": the file of rank 3 of 8 in a sharded checkpoint (checkpoints/ckpt_shard.h).
void ckpt_shard_name(char *out, size_t n, int rank, int ranks);
// True for such a name (5 digits each, 0 <= rank < ranks), with *rank and *ranks.
bool ckpt_shard_parse_name(const char *name, int *rank, int *ranks);
// state.json <-> text (cJSON), for save and tests.
char *ckpt_state_json(const CkptState *s);
int ckpt_state_parse(const char *text, const char *path, CkptState *s, CkErr *e);
