// checkpoints/hf.h — Hugging Face Llama directories: config.json <-> ModelConfig, tensor names, RoPE row permutation.
#pragma once
#include <stdbool.h>

#include <cjson/cJSON.h>

#include "checkpoints/checkpoint.h"
#include "checkpoints/safetensors.h"
#include "model/gpt.h"

// True if dir holds config.json (an HF model directory rather than a ringgpt checkpoint).
bool hf_is_dir(const char *dir);
// Reads dir/config.json: a LlamaForCausalLM / model_type "llama" config that ringgpt can run
// (silu MLP, no biases, RoPE default or scaled (linear, dynamic, yarn, llama3), head_dim = hidden_size / heads). *max_pos gets
// max_position_embeddings. Returns 0, or -1 with e naming config.json and the field.
// Read as strictly as a flag: standard JSON (no duplicate keys, no control bytes), model_type and
// architectures must not name another model, counts are whole numbers in range, rms_norm_eps is required,
// and a key a letter or two away from one ringgpt reads (with that one absent) is refused as a typo.
int hf_read_config(const char *dir, ModelConfig *c, int *max_pos, CkErr *e);
// The same on the text of a config.json (len bytes; path names it in messages).
int hf_parse_config(const char *text, size_t len, const char *path, ModelConfig *c, int *max_pos, CkErr *e);
// Loads the weights of an HF directory (model.safetensors, or shards listed in
// model.safetensors.index.json; F32/BF16/F16) into m, whose table fixes the expected shapes;
// q/k rows go from HF's rotate-half order back to ringgpt's interleaved pairs. At SHARD_PARAMS (m->shard) m->params
// gets this rank's slices only.
int hf_load_weights(const char *dir, GPT *m, CkErr *e);
// Writes dir/config.json and dir/model.safetensors (HF names, rotate-half q/k rows) for model m.
// dtype ST_F32 or ST_BF16. max_pos is max_position_embeddings; bos / eos (-1: none) the tokenizer's ids.
// meta (NULL: none; meta->json the hf_meta.json text): config.json is the imported one with ringgpt's values
// over it, where a number that reads as the same float stays as written, and the special ids and keys
// ringgpt does not write stay the original's; _name_or_path is meta->name when the original has none.
int hf_save(const char *dir, const GPT *m, StDtype dtype, int max_pos, int64_t bos, int64_t eos, const CkptMeta *meta,
            CkErr *e);
// The metadata of an HF directory, as checkpoints keep it (hf_meta.json): a JSON object mapping each of
// config.json, generation_config.json, tokenizer_config.json, special_tokens_map.json that dir has to its text
// as read, plus tokenizer.json when keep_tokenizer (one ringgpt cannot use: the export gives it back).
// m gets the name (config.json's _name_or_path, else the directory's name), max_position_embeddings and
// json (malloc'd). Returns 0, or -1 with e naming the file.
int hf_read_meta(const char *dir, bool keep_tokenizer, CkptMeta *m, CkErr *e);
// The text of file `name` ("config.json", ...) kept in hf_meta.json text meta_json (NULL: none); malloc'd, or NULL.
char *hf_meta_file(const char *meta_json, const char *name);
// v as the shortest decimal that reads back as the same float (1e-05, not 9.99999974737875e-06); a whole number
// as its digits (10000).
void hf_float_text(float v, char *out, size_t n);
// The weights of an HF directory read one tensor at a time (an import streams them into its checkpoint).
typedef struct HfWeights HfWeights;
// Opens dir's safetensors files (headers only) and checks that every tensor of table t (model c) is there with its
// shape and a dtype ringgpt reads; *w is freed by hf_weights_close. Returns 0, or -1 with e naming the file and tensor.
int hf_weights_open(const char *dir, const ModelConfig *c, const ParamTable *t, HfWeights **w, CkErr *e);
// Tensor `index` of the table (ctx: an HfWeights), converted to real and its q/k rows in ringgpt's order (an StFill).
int hf_weights_fill(const void *ctx, int index, real *dst, CkErr *e);
void hf_weights_close(HfWeights *w);
// The HF name of a ringgpt table name ("layers.3.attn.wq" -> "model.layers.3.self_attn.q_proj.weight").
void hf_name(const char *ringgpt_name, char *out, size_t n);
// Reorders the rows of a (n_heads·hd, C) q or k weight: to_hf moves pair (2i, 2i+1) of every head to
// rows (i, i + hd/2) (HF's rotate-half convention); !to_hf is the inverse.
void hf_permute_rope_rows(real *w, int n_heads, int hd, int C, bool to_hf);
