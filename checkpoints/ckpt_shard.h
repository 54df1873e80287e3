// checkpoints/ckpt_shard.h — sharded checkpoints: each rank's shard file, and any range of a checkpoint's parameter-shaped buffers read from the files that hold it.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "checkpoints/checkpoint.h"
#include "model/adamw.h"
#include "model/gpt.h"

// Writes this rank's shard file into dir: for every unit u whose slice on this rank is not empty (model/shard.h),
// m.unit.<u> and v.unit.<u> (the slice of AdamW's moments) and, at SHARD_PARAMS, first w.unit.<u> (of the weights), each
// 1-D, in m->shard's layout; fsync'd. Returns 0, or -1 with e.
int ckpt_shard_write(const char *dir, const GPT *m, const AdamW *opt, int64_t step, CkErr *e);

// A checkpoint's three parameter-shaped buffers.
typedef enum { CKPT_WEIGHTS, CKPT_MOMENT1, CKPT_MOMENT2 } CkptBuffer;

// A checkpoint's buffers read by element ranges of the parameter buffer, from whichever files hold them:
// model.safetensors / optim.safetensors (by tensor name), or the shard files of state.json's shard record (weights from
// them at SHARD_PARAMS only). A file's header is checked against m's table (names, shapes; for shard files every
// unit's slice length under the saved rank count) the first time a buffer it holds is asked for, and a buffer held by
// shard files checks all of them at once: every rank then finds the same damage. Only the asked-for bytes are read.
typedef struct CkptReader CkptReader;
CkptReader *ckpt_reader_open(const char *dir, const CkptState *s, const GPT *m);
// count values of buffer b from element `first` of the parameter buffer (table order) into dst (host memory).
// Returns 0, or -1 with e naming the file and the tensor.
int ckpt_reader_read(CkptReader *r, CkptBuffer b, size_t first, size_t count, real *dst, CkErr *e);
void ckpt_reader_close(CkptReader *r);
