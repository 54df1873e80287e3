// checkpoints/load.c — a model for evaluation and decoding, from a checkpoint (step or run directory) or an HF Llama directory.
#include "checkpoints/load.h"

#include <inttypes.h>
#include <string.h>

#include "checkpoints/hf.h"
#include "core/common.h"
#include "model/ops.h"

void load_model(const char *path, GPT *m, float rope_theta, CkptState *state, char *used, size_t n) {
    CkErr e;
    ModelConfig c;
    CkptState s = {0};
    char dir[4200];
    bool hf = hf_is_dir(path);
    snprintf(used, n, "%s", path);
    if (hf) {
        int max_pos;
        if (hf_read_config(path, &c, &max_pos, &e) != 0) fail_usage("%s", e.msg);
        s.run.seq_len = max_pos;
    } else {
        ckpt_resolve(path, dir, sizeof dir, NULL);
        snprintf(used, n, "%s", dir);
        if (ckpt_read_state(dir, &s, &e) != 0) fail_usage("%s", e.msg);
        c = s.model;
    }
    if (rope_theta > 0) c.rope_theta = rope_theta;
    gpt_init(m, &c, &BACKEND_CPU, 0, GPT_INFER);
    if ((hf ? hf_load_weights(path, m, &e) : ckpt_load_model(dir, &s, m, &e)) != 0) fail_usage("%s", e.msg);
    if (state) *state = s;
}

void load_report(const char *command, const char *path, const char *used, const CkptState *s, FILE *f) {
    if (strcmp(path, used) == 0 || log_rank() != 0) return;
    fprintf(f, "%s: checkpoint %s (step %" PRId64 " of %s)\n", command, used, s->step, path);
    fflush(f);
}
