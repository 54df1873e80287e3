// bench/ckpt_bench.c — checkpoint save and load (verify + model + optimizer) time and MB/s for the `small` and `125m` presets.
// Usage: ckpt_bench [DIR] [PRESET...]   (DIR default /tmp; presets default small 125m)
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checkpoints/checkpoint.h"
#include "checkpoints/fsio.h"
#include "core/common.h"
#include "model/ops.h"

static void bench(const char *root, const char *preset) {
    ModelConfig c;
    if (!config_preset(&c, preset)) fail_usage("unknown preset '%s'; choose one of %s", preset, config_preset_names());
    GPT m;
    gpt_init(&m, &c, &BACKEND_CPU, 1, GPT_TRAIN);
    AdamW opt;
    adamw_init(&opt, &m, (AdamWConfig){0.9f, 0.95f, 1e-8f, 0.1f});
    CkptState s = {.version = CKPT_VERSION, .step = 1, .model = c, .dp = 1, .sp = 1};
    snprintf(s.kind, sizeof s.kind, "train");
    char out[4200], dir[4300];
    snprintf(out, sizeof out, "%s/ringgpt_ckpt_bench_%d_%s", root, (int)getpid(), preset);
    snprintf(dir, sizeof dir, "%s/step_00000001", out);
    CkErr e;
    double mb = 3.0 * m.table.total * sizeof(real) / 1e6, t0 = now_seconds();
    if (ckpt_save(out, &s, &m, &opt, 0, NULL, &e) != 0) fail("%s", e.msg);
    double save = now_seconds() - t0;
    t0 = now_seconds();
    if (ckpt_verify(dir, NULL, &e) != 0 || ckpt_load_model(dir, &s, &m, &e) != 0 || ckpt_load_optim(dir, &s, &m, &opt, &e) != 0)
        fail("%s", e.msg);
    double load = now_seconds() - t0;
    printf("%-6s %7.1fM params  %8.1f MB   save %6.2f s (%6.0f MB/s, fsync'd)   load %6.2f s (%6.0f MB/s, with CRC verify)\n",
           preset, m.table.total / 1e6, mb, save, mb / save, load, mb / load);
    char p[4400];
    const char *files[] = {"model.safetensors", "optim.safetensors", "state.json", "MANIFEST.json"};
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        if (unlink(p) != 0) fprintf(stderr, "cannot remove %s\n", p);
    }
    snprintf(p, sizeof p, "%s/LATEST", out);
    if (unlink(p) != 0 || rmdir(dir) != 0 || rmdir(out) != 0) fprintf(stderr, "cannot remove %s\n", out);
    adamw_free(&opt, &m);
    gpt_free(&m);
}

int main(int argc, char **argv) {
    const char *root = argc > 1 ? argv[1] : "/tmp";
    const char *def[] = {"small", "125m"};
    if (argc > 2)
        for (int i = 2; i < argc; i++) bench(root, argv[i]);
    else
        for (int i = 0; i < 2; i++) bench(root, def[i]);
    return 0;
}
