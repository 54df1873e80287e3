// cli/export.c — `ringgpt export | import`: a checkpoint to a Hugging Face Llama directory and back.
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
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
#include "data/tokenizer.h"

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
        {"--max-pos", ARG_INT, &max_pos, "max_position_embeddings", .dflt = "the checkpoint's --seq-len"},
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
    if (max_pos <= 0) max_pos = s.run.seq_len > 0 ? s.run.seq_len : 2048;
    Tokenizer tok;
    model_tokenizer(used, &m.cfg, &s, &tok);
    CkErr e;
    if (hf_save(pos[1], &m, strcmp(dtype, "bf16") == 0 ? ST_BF16 : ST_F32, max_pos, tok.bos, tok.eos, &e) != 0 ||
        model_export_tokenizer(pos[1], &tok, max_pos, &e) != 0)
        fail("%s", e.msg);
    tokenizer_free(&tok);
    printf("exported %s (%.2fM parameters) to %s as LlamaForCausalLM, %s\n", used, m.table.total / 1e6, pos[1], dtype);
    gpt_free(&m);
    return 0;
}

static const ArgCommand IMPORT_CMD = {
    "import", "ringgpt import HF_DIR --out OUT",
    "Reads a Hugging Face Llama directory (config.json and model.safetensors, or shards listed in\n"
    "model.safetensors.index.json; F32, BF16 or F16) into a ringgpt weights checkpoint OUT/step_00000000,\n"
    "for `train --init-from OUT`, eval, sample and export."};

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
    rundir_claim_new(out, mode, "--out");
    GPT m;
    CkptState s;
    char used[4200];
    load_model(pos[0], &m, 0, &s, used, sizeof used);
    s.version = CKPT_VERSION;
    snprintf(s.kind, sizeof s.kind, "weights");
    s.model = m.cfg;
    s.dp = s.sp = 1;
    s.seed = 0;
    snprintf(s.run.schedule, sizeof s.run.schedule, "none");
    snprintf(s.init_from, sizeof s.init_from, "%s", pos[0]);
    Tokenizer tok;
    model_tokenizer(pos[0], &m.cfg, NULL, &tok);   // tokenizer.json when the directory has one
    s.tok = model_tokenizer_record(&tok);
    CkErr e;
    if (ckpt_save(out, &s, &m, NULL, 0, &e) != 0) fail("%s", e.msg);
    printf("imported %s (%.2fM parameters, %d layers, dim %d, tokenizer %s) into %s/step_00000000\n", pos[0], m.table.total / 1e6,
           m.cfg.n_layer, m.cfg.dim, tok.id, out);
    tokenizer_free(&tok);
    gpt_free(&m);
    return 0;
}
