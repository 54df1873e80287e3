// cli/export.c — `ringgpt export | import`: a checkpoint to a Hugging Face Llama directory and back.
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoints/checkpoint.h"
#include "checkpoints/hf.h"
#include "checkpoints/load.h"
#include "checkpoints/model_tokenizer.h"
#include "checkpoints/rundir.h"
#include "cli/commands.h"
#include "core/args.h"
#include "core/common.h"
#include "model/ops.h"
#include "model/params.h"
#include "tokenizer/tokenizer.h"

static const ArgCommand EXPORT_CMD = {
    "export", "ringgpt export CKPT --to hf DIR [flags]",
    "Writes a checkpoint as a Hugging Face Llama directory: config.json (LlamaForCausalLM) and\n"
    "model.safetensors with HF tensor names and HF's rotate-half RoPE row order, and the model's tokenizer:\n"
    "tokenizer.json, tokenizer_config.json, special_tokens_map.json, generation_config.json."};

// The export directory is created before the model is read; one that holds a training run or a dataset (whose
// config.json or files an export would replace) is refused. An earlier export there is replaced file by file.
static void check_export_dir(const char *dir) {
    make_dirs(dir);
    DIR *d = opendir(dir);
    if (!d) fail_io(dir, errno, "cannot list the directory");
    struct dirent *de;
    while ((de = readdir(d)) != NULL)
        if ((rundir_is_run_entry(de->d_name) && strcmp(de->d_name, "config.json") != 0) || !strcmp(de->d_name, "manifest.json"))
            fail_usage("export: %s holds a training run or a dataset (%s); export into a new directory", dir, de->d_name);
    closedir(d);
    if (access(dir, W_OK) != 0) fail_io(dir, errno, "cannot write into the export directory");
}

int cmd_export(int argc, char **argv) {
    const char *to = NULL, *dtype = "f32", *pos[2];
    int max_pos = 0;
    ArgSpec specs[] = {
        {"--to", ARG_STRING, &to, "target format: hf"},
        {"--dtype", ARG_STRING, &dtype, "f32 or bf16"},
        {"--max-pos", ARG_INT, &max_pos, "max_position_embeddings",
         .dflt = "the imported model's, or the checkpoint's --seq-len where longer"},
    };
    int n = sizeof specs / sizeof specs[0];
    if (args_parse(&EXPORT_CMD, specs, n, argc, argv, pos, 2) != 2)
        fail_usage("export needs a checkpoint and a directory: ringgpt export CKPT --to hf DIR");
    if (!to || strcmp(to, "hf") != 0) fail_usage("--to must be hf (got '%s')", to ? to : "nothing");
    if (strcmp(dtype, "f32") != 0 && strcmp(dtype, "bf16") != 0) fail_usage("--dtype must be f32 or bf16 (got '%s')", dtype);
    if (max_pos < 0) fail_usage("--max-pos must be positive (got %d)", max_pos);
    check_export_dir(pos[1]);
    GPT m;
    CkptState s;
    char used[4200];
    load_model(pos[0], &m, 0, &s, used, sizeof used);
    load_report("export", pos[0], used, &s, stdout);
    Tokenizer tok;
    model_tokenizer(used, &m.cfg, &s, &tok);
    CkptMeta meta;
    char *meta_json = model_meta(used, &s, &tok, &meta);   // an imported model's metadata goes back as it came
    if (max_pos <= 0) {   // never below the original: a fine-tune at 2048 of an 8192 model is still an 8192 model
        max_pos = s.run.seq_len > meta.max_pos ? s.run.seq_len : meta.max_pos;
        if (max_pos <= 0) max_pos = 2048;
    }
    CkErr e;
    if (hf_save(pos[1], &m, strcmp(dtype, "bf16") == 0 ? ST_BF16 : ST_F32, max_pos, tok.bos, tok.eos, &meta, &e) != 0 ||
        model_export_tokenizer(pos[1], &tok, max_pos, &meta, &e) != 0)
        fail("%s", e.msg);
    free(meta_json);
    tokenizer_free(&tok);
    printf("exported %s (%.2fM parameters) to %s as LlamaForCausalLM, %s\n", used, m.table.total / 1e6, pos[1], dtype);
    gpt_free(&m);
    return 0;
}

static const ArgCommand IMPORT_CMD = {
    "import", "ringgpt import HF_DIR --out OUT",
    "Reads a Hugging Face Llama directory (config.json and model.safetensors, or shards listed in\n"
    "model.safetensors.index.json; F32, BF16 or F16) into a ringgpt weights checkpoint OUT/step_00000000,\n"
    "for `train --init-from OUT`, eval, sample and export. Its metadata (config.json, generation_config.json,\n"
    "tokenizer_config.json, special_tokens_map.json: special ids, chat template, name) is kept for the export.\n"
    "A tokenizer.json ringgpt cannot use never refuses the model: one line says why, and the model is known by\n"
    "its vocab only (eval on token data, sample --prompt-ids)."};

int cmd_import(int argc, char **argv) {
    const char *out = NULL, *out_exists = "refuse", *pos[1];
    ArgSpec specs[] = {
        {"--out", ARG_STRING, &out, "the ringgpt checkpoint directory to create (one that holds no run)"},
        {"--out-exists", ARG_STRING, &out_exists, "an --out that holds a run: refuse (exit 2), or move it aside to OUT.old1, ..."},
    };
    if (args_parse(&IMPORT_CMD, specs, 2, argc, argv, pos, 1) != 1)
        fail_usage("import needs an HF directory: ringgpt import HF_DIR --out OUT");
    if (!out) fail_usage("--out is required (see `ringgpt import --help`)");
    OutdirMode mode;
    if (!outdir_mode_parse(out_exists, &mode)) fail_usage("--out-exists must be refuse or move, not '%s'", out_exists);
    if (!hf_is_dir(pos[0])) fail_usage("%s: no config.json; give a Hugging Face model directory", pos[0]);
    CkptState s = {.version = CKPT_VERSION, .dp = 1, .sp = 1};
    CkErr e;
    int max_pos;
    if (hf_read_config(pos[0], &s.model, &max_pos, &e) != 0) fail_usage("%s", e.msg);
    Tokenizer tok;
    model_tokenizer(pos[0], &s.model, NULL, &tok);   // first, before any weight is read: it never refuses the model
    char *meta_json = model_meta(pos[0], &s, &tok, &s.meta);
    config_validate(&s.model);
    // Only the parameter table: the weights go from the HF files to the checkpoint one tensor at a time, so that
    // import holds one tensor, never the model (a BF16 file's float32 weights would be twice its size).
    GPT m = {.cfg = s.model, .be = &BACKEND_CPU, .table = params_build(&s.model)};
    HfWeights *w;
    if (hf_weights_open(pos[0], &s.model, &m.table, &w, &e) != 0) fail_usage("%s", e.msg);   // every tensor checked first
    s.weights = hf_weights_fill, s.weights_ctx = w;
    rundir_claim_new(out, mode, "--out");
    snprintf(s.kind, sizeof s.kind, "weights");
    snprintf(s.run.schedule, sizeof s.run.schedule, "none");
    s.run.seq_len = max_pos;
    snprintf(s.init_from, sizeof s.init_from, "%s", pos[0]);
    s.tok = model_tokenizer_record(&tok);
    if (ckpt_save(out, &s, &m, NULL, 0, NULL, &e) != 0) fail("%s", e.msg);
    printf("imported %s (%s, %.2fM parameters, %d layers, dim %d, tokenizer %s) into %s/step_00000000\n", pos[0], s.meta.name,
           m.table.total / 1e6, m.cfg.n_layer, m.cfg.dim, tok.id, out);
    hf_weights_close(w);
    free(meta_json);
    tokenizer_free(&tok);
    params_free(&m.table);
    return 0;
}
