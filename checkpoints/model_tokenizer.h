// checkpoints/model_tokenizer.h — the tokenizer a model carries (checkpoint or HF directory): its files, its record in state.json, HF export.
#pragma once
#include "checkpoints/checkpoint.h"
#include "tokenizer/tokenizer.h"

// The tokenizer of the model at path (a step or run directory, or an HF directory), whose state
// (NULL for HF) and config were read by infer_load. A step directory is taken as its caller verified it (load_model's
// `used`, a resume's directory); a run directory is resolved to its newest valid step. A checkpoint: state.json's tokenizer and its
// tokenizer.json; an HF directory: tokenizer.json with eos/bos from config.json and tokenizer_config.json.
// A model with neither is byte260 when its vocab is 260, else known by vocab only (id "unknown").
// Fails with one line naming the file when a recorded tokenizer is missing, damaged or too large.
void model_tokenizer(const char *path, const ModelConfig *c, const CkptState *s, Tokenizer *t);
// What state.json records for a model trained on data with tokenizer t (json points into t).
CkptTokenizer model_tokenizer_record(const Tokenizer *t);
// model_check_data's check (tokenizer/tokenizer.h) for a resume or --init-from: the checkpoint's record against the data's tokenizer.
void model_check_record(const char *state_path, const CkptTokenizer *saved, const Tokenizer *data);

// True when the model at path takes its start token from an HF tokenizer config (model_start_token's `imported`, tokenizer/tokenizer.h):
// an HF directory or a checkpoint that keeps one (an import, its fine-tunes), unless ringgpt wrote that config when it
// exported a model of its own (tokenizer_config.json's ringgpt_tokenizer), whose data started documents its own way.
bool model_hf_prefill(const char *path, const CkptState *s);
// The HF metadata of the model at path (an HF directory: its files; a checkpoint: state.json's meta and its
// hf_meta.json) into m; returns m->json (malloc'd, the caller frees it) or NULL when it has none. t: the model's
// tokenizer (an HF directory's tokenizer.json that t could not use is kept for the export).
char *model_meta(const char *path, const CkptState *s, const Tokenizer *t, CkptMeta *m);

// Writes the tokenizer files of an HF export into dir: tokenizer.json (byte260 as an equivalent
// byte-level BPE without merges), tokenizer_config.json, special_tokens_map.json and
// generation_config.json (eos/bos/pad), so that AutoTokenizer loads the directory. The files meta kept (NULL:
// none) are written as they were imported (tokenizer_config.json's model_max_length raised to max_pos where
// below). Returns 0 or -1 with e.
int model_export_tokenizer(const char *dir, const Tokenizer *t, int max_pos, const CkptMeta *meta, CkErr *e);
