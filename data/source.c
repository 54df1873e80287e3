// data/source.c — data_open picks the source for a path (dataset, shard or text) and forwards every call to it.
#include <stdlib.h>

#include "core/common.h"
#include "data/dataset.h"
#include "data/dataset_tokenizer.h"
#include "data/source_impl.h"
#include "tokenizer/tokenizer.h"

struct DataSource {
    const SourceOps *ops;
    void *impl;
    uint32_t vocab_size;
    bool masks_targets;
    Tokenizer tok;        // the tokenizer the data was made with
};

static void check_options(const DataOptions *o) {
    if (o->seq_len < 1 || o->batch < 1) fail_usage("--seq-len and --batch must be positive (got %d and %d)", o->seq_len, o->batch);
    if (o->dp < 1 || o->sp < 1 || o->dp_index < 0 || o->dp_index >= o->dp || o->sp_index < 0 || o->sp_index >= o->sp)
        fail_usage("impossible layout dp %d (index %d) x sp %d (index %d)", o->dp, o->dp_index, o->sp, o->sp_index);
    if (o->place_groups < 0 || (o->place_groups > 0 && o->sp % o->place_groups != 0))
        fail_usage("a placement over %d groups of the %d ranks of a ring; the groups must divide sp", o->place_groups, o->sp);
    if (o->seq_len % (2 * o->sp) != 0 && o->sp > 1)
        fail_usage("--seq-len %d is not a multiple of 2·sp = %d; the ring cuts each sequence into 2·sp equal chunks",
                   o->seq_len, 2 * o->sp);
    if (!(o->val_fraction >= 0 && o->val_fraction < 1)) fail_usage("--val-fraction must be in [0, 1) (got %g)", o->val_fraction);
}

DataSource *data_open(const char *path, const DataOptions *o, bool validation) {
    check_options(o);
    DataSource *d = xcalloc(1, sizeof *d, "a data source");
    if (dataset_path_is_shards(path)) {
        d->ops = &LOADER_SOURCE;
        d->impl = loader_open(path, o, validation);
        d->vocab_size = loader_vocab_size(d->impl);
        d->masks_targets = loader_masks_targets(d->impl);
        DataErr e;
        if (dataset_tokenizer(path, &d->tok, &e) != 0) fail_usage("%s", e.msg);
    } else {
        d->ops = &TEXT_SOURCE;
        d->impl = text_source_open(path, o, validation);
        d->vocab_size = TOK_VOCAB_SIZE;
        tokenizer_bytes(&d->tok);
    }
    return d;
}

void data_next(DataSource *d, Batch *b) { d->ops->next(d->impl, b); }
uint32_t data_vocab_size(const DataSource *d) { return d->vocab_size; }
bool data_masks_targets(const DataSource *d) { return d->masks_targets; }
const Tokenizer *data_tokenizer(const DataSource *d) { return &d->tok; }
uint64_t data_num_samples(const DataSource *d) { return d->ops->num_samples(d->impl); }
DataState data_state(const DataSource *d) { return d->ops->state(d->impl); }
void data_restore(DataSource *d, DataState s) { d->ops->restore(d->impl, s); }

void data_close(DataSource *d) {
    if (!d) return;
    d->ops->close(d->impl);
    tokenizer_free(&d->tok);
    free(d);
}
