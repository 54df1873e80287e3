// eval/infer.c — an inference command's model opened and closed: the grid and its threads, the checkpoint, the load report, the tokenizer.
#include "eval/infer.h"

#include "checkpoints/load.h"
#include "checkpoints/model_tokenizer.h"
#include "core/args.h"
#include "core/common.h"

void infer_open(const InferOptions *o, InferModel *im) {
    if (o->sp < 1) comm_fail_usage_all("--sp must be at least 1 (got %d)", o->sp);
    if (o->threads_given) args_check_threads(o->threads);
    im->ckpt = o->ckpt;
    im->grid = comm_grid(o->sp);   // a world that sp does not divide is a usage error
    im->threads = cpu_node_threads(o->threads_given ? o->threads : 0);
    cpu_threads(im->threads);
    load_model(o->ckpt, &im->model, o->rope_theta, &im->state, im->used, sizeof im->used);
    load_report(o->command, o->ckpt, im->used, &im->state, o->report);
    model_tokenizer(im->used, &im->model.cfg, &im->state, &im->tok);
}

void infer_close(InferModel *im) {
    tokenizer_free(&im->tok);
    gpt_free(&im->model);
    comm_grid_free(&im->grid);
}
