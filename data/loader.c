// data/loader.c — the streaming shard loader: global deterministic samples, a prefetch thread, each rank's slice under the placement.
//
// Samples. The split's shards, in manifest order, form one token stream in which every document
// ends with EOS. Sample j (0 <= j < N) is the T+1 tokens starting at stream token s_j: s_0 is the
// range's first token and s_{j+1} is the last document start in (s_j, s_j + T], or s_j + T when
// the window holds no document start (a document longer than T continues in the next window). So
// windows start at document starts wherever documents are shorter than T: every such document is
// whole in the window that starts at it (the document cut off at a window's end is repeated whole
// in the next); consecutive windows share at least one token and no target is lost. N counts the
// s_j with s_j + T + 1 <= the range's end; the starts (8 bytes each) are computed once at open
// from the document indexes alone, so they depend on the data and T only.
// Order. Per epoch the samples are shuffled in two levels: consecutive samples are grouped by G
// (about GROUP_BLOCKS compressed blocks of tokens, G = max(1, GROUP_BLOCKS·block_tokens / T)); the
// order of the groups and the order inside each group are permutations seeded by (seed, epoch[,
// group]). Nearby samples reuse decompressed blocks (the cache holds a whole group), so each block
// is inflated about (GROUP_BLOCKS + 1) / GROUP_BLOCKS times per epoch, while the epoch is still
// fully mixed at the scale of a few blocks.
// Global sample k of the run is sample order(k mod N) of epoch k / N: the same whatever dp and sp.
// Ranks. Each micro-step consumes B·dp global samples; dp group g takes k = consumed + g·B + row
// and every sp rank of the group gets its positions of the same samples under the placement (data/placement.h:
// the zigzag, or by cost), which every rank computes alike from the sample's document starts.
// Loss weights. A dataset with per-token weights (prepare's synthetic tasks and JSONL) masks the
// targets whose token has weight 0: they become -1, "no target", which the loss neither counts nor
// differentiates (--loss-on all: weights ignored).
// Threads. A producer thread gathers the rank's next batches into a bounded queue; the position
// (`consumed`) only advances when data_next hands a batch to the step, so the resume state is
// (seed, consumed) and nothing per rank.
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"
#include "core/rng.h"
#include "data/dataset.h"
#include "data/source_impl.h"

enum { QUEUE_SLOTS = 3, GROUP_BLOCKS = 4, MAX_CACHE = 64 };

typedef struct {
    int32_t *tok;               // (block_tokens) decoded tokens
    uint8_t *w;                 // (block_tokens) their loss weights (use_weights only)
    uint32_t n;
    size_t shard;
    uint64_t block, stamp;
    bool valid;
} CachedBlock;

typedef struct {
    int32_t *samples;           // (B, T+1)
    uint8_t *weights;           // (B, T+1) loss weight of each token (use_weights only)
    int64_t *ids;               // (B) global sample numbers
    bool failed;
    char msg[640];
} Slot;

// The per-epoch sample order (producer thread only).
typedef struct {
    uint64_t n, G, NG, last;    // samples per epoch, group size, groups, size of the last group
    uint64_t seed;
    bool no_shuffle;            // stream order: sample k of an epoch is sample k
    bool have_epoch, have_group;
    uint64_t epoch, short_slot; // epoch held in gperm; where the short last group landed
    uint64_t *gperm;            // (NG) group order of `epoch`
    uint64_t group_epoch, group;
    uint64_t *iperm;            // (G) order inside `group`
} Order;

typedef struct {
    Dataset ds;
    DataOptions o;
    int T;
    bool use_weights;           // the data has loss weights and --loss-on is not `all`
    uint64_t lo, hi;            // the split's stream token range
    uint64_t *starts;           // (order.n) first stream token of each sample
    Order order;
    CachedBlock cache[MAX_CACHE];
    int n_cache;                // blocks one group can touch, plus slack
    uint64_t stamp;
    void *raw, *comp;           // one block's raw and compressed bytes
    pthread_t thread;
    bool running, stop;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    Slot slot[QUEUE_SLOTS];
    int head, count;
    uint64_t produce_from;      // the producer's first global sample
    uint64_t seed, consumed;    // the consumer's (the run's) position
} Loader;

static uint64_t mix(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t x = a ^ 0x6A09E667F3BCC909ull;
    uint64_t in[3] = {a, b, c};
    for (int i = 0; i < 3; i++) {
        x ^= in[i] + 0x9E3779B97F4A7C15ull + (x << 6) + (x >> 2);
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        x ^= x >> 31;
    }
    return x;
}

static void permute(uint64_t *p, uint64_t n, uint64_t seed) {
    Rng r;
    rng_seed(&r, seed);
    for (uint64_t i = 0; i < n; i++) p[i] = i;
    for (uint64_t i = n; i > 1; i--) {
        uint64_t j = rng_below(&r, i), t = p[i - 1];
        p[i - 1] = p[j];
        p[j] = t;
    }
}

static void order_init(Order *o, uint64_t n, uint64_t block_tokens, int T, uint64_t seed, bool no_shuffle) {
    *o = (Order){.n = n, .seed = seed, .no_shuffle = no_shuffle};
    o->G = GROUP_BLOCKS * block_tokens / (uint64_t)T ? GROUP_BLOCKS * block_tokens / (uint64_t)T : 1;
    if (o->G > n) o->G = n;
    o->NG = (n + o->G - 1) / o->G;
    o->last = n - (o->NG - 1) * o->G;
    o->gperm = xmalloc(o->NG * sizeof(uint64_t), "the sample order");
    o->iperm = xmalloc(o->G * sizeof(uint64_t), "the sample order");
}

// Global sample k -> sample number within the split's stream.
static uint64_t order_sample(Order *o, uint64_t k) {
    uint64_t e = k / o->n, i = k % o->n, G = o->G;
    if (o->no_shuffle) return i;
    if (!o->have_epoch || o->epoch != e) {
        permute(o->gperm, o->NG, mix(o->seed, e, UINT64_MAX));
        for (uint64_t s = 0; s < o->NG; s++)
            if (o->gperm[s] == o->NG - 1) o->short_slot = s;
        o->epoch = e;
        o->have_epoch = true;
    }
    uint64_t s = o->short_slot, slot, off;
    if (i < s * G) slot = i / G, off = i % G;
    else if (i < s * G + o->last) slot = s, off = i - s * G;
    else slot = s + 1 + (i - s * G - o->last) / G, off = (i - s * G - o->last) % G;
    uint64_t g = o->gperm[slot];
    if (!o->have_group || o->group_epoch != e || o->group != g) {
        permute(o->iperm, g == o->NG - 1 ? o->last : G, mix(o->seed, e, g));
        o->group_epoch = e;
        o->group = g;
        o->have_group = true;
    }
    return g * G + o->iperm[off];
}

// The shard holding stream token a: the largest s with first[s] <= a (empty shards are skipped by construction).
static size_t find_shard(const Dataset *d, uint64_t a) {
    size_t lo = 0, hi = d->n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (d->first[mid] <= a) lo = mid;
        else hi = mid;
    }
    return lo;
}

static uint64_t find_block(const Shard *s, uint64_t local) {
    uint64_t lo = 0, hi = s->h.num_blocks;
    while (hi - lo > 1) {
        uint64_t mid = (lo + hi) / 2;
        if (s->blocks[mid].first_token <= local) lo = mid;
        else hi = mid;
    }
    return lo;
}

// A decoded block from the cache, reading (CRC-checked, every id < vocab) into the oldest slot on a miss.
static const CachedBlock *get_block(Loader *L, size_t shard, uint64_t block, DataErr *e) {
    CachedBlock *victim = &L->cache[0];
    for (int i = 0; i < L->n_cache; i++) {
        CachedBlock *c = &L->cache[i];
        if (c->valid && c->shard == shard && c->block == block) {
            c->stamp = ++L->stamp;
            return c;
        }
        if (c->stamp < victim->stamp) victim = c;   // invalid slots have stamp 0
    }
    const Shard *s = L->ds.shards[shard];
    const ShardBlock *b = &s->blocks[block];
    DataErr inner;
    victim->valid = false;
    victim->stamp = 0;
    if (shard_read_block(s, block, L->raw, L->comp, &inner)) {
        data_err(e, "%s: %s", s->path, inner.msg);
        return NULL;
    }
    int64_t bad = shard_decode_tokens(&s->h, L->raw, b->n_tokens, s->h.vocab_size, victim->tok);
    if (bad >= 0) {
        data_err(e, "%s: block %" PRIu64 " at byte %" PRIu64 ": token %" PRIu64 " has id %u, not below the vocab size %u;"
                 " the shard is damaged, re-run `ringgpt prepare`", s->path, block, b->offset, b->first_token + (uint64_t)bad,
                 (uint32_t)victim->tok[bad], s->h.vocab_size);
        return NULL;
    }
    if (L->use_weights && (bad = shard_decode_weights(&s->h, L->raw, b->n_tokens, victim->w)) >= 0) {
        data_err(e, "%s: block %" PRIu64 " at byte %" PRIu64 ": token %" PRIu64 " has loss weight %u, not 0 or 1;"
                 " the shard is damaged, re-run `ringgpt prepare`", s->path, block, b->offset, b->first_token + (uint64_t)bad, victim->w[bad]);
        return NULL;
    }
    *victim = (CachedBlock){.tok = victim->tok, .w = victim->w, .n = b->n_tokens, .shard = shard, .block = block, .stamp = ++L->stamp, .valid = true};
    return victim;
}

// Copies stream tokens [a, a+n) into out, and their loss weights into wout (use_weights only).
static int read_range(Loader *L, uint64_t a, uint64_t n, int32_t *out, uint8_t *wout, DataErr *e) {
    while (n) {
        size_t s = find_shard(&L->ds, a);
        const Shard *sh = L->ds.shards[s];
        uint64_t local = a - L->ds.first[s], b = find_block(sh, local);
        const CachedBlock *c = get_block(L, s, b, e);
        if (!c) return -1;
        uint64_t off = local - sh->blocks[b].first_token, k = c->n - off < n ? c->n - off : n;
        memcpy(out, c->tok + off, k * sizeof(int32_t));
        if (wout) {
            memcpy(wout, c->w + off, k);
            wout += k;
        }
        out += k;
        a += k;
        n -= k;
    }
    return 0;
}

static void fill(Loader *L, Slot *sl, uint64_t k0) {
    int B = L->o.batch, T = L->T;
    for (int r = 0; r < B && !sl->failed; r++) {
        uint64_t k = k0 + (uint64_t)L->o.dp_index * B + r, j = order_sample(&L->order, k);
        DataErr e;
        sl->ids[r] = (int64_t)k;
        uint8_t *w = L->use_weights ? sl->weights + (size_t)r * (T + 1) : NULL;
        if (read_range(L, L->starts[j], (uint64_t)T + 1, sl->samples + (size_t)r * (T + 1), w, &e)) {
            snprintf(sl->msg, sizeof sl->msg, "%s (while reading sample %" PRIu64 ")", e.msg, k);
            sl->failed = true;
        }
    }
}

static void *producer(void *arg) {
    Loader *L = arg;
    uint64_t step = (uint64_t)L->o.batch * L->o.dp;
    for (uint64_t s = 0;; s++) {
        pthread_mutex_lock(&L->mu);
        while (L->count == QUEUE_SLOTS && !L->stop) pthread_cond_wait(&L->cv, &L->mu);
        bool stop = L->stop;
        Slot *sl = &L->slot[(L->head + L->count) % QUEUE_SLOTS];
        pthread_mutex_unlock(&L->mu);
        if (stop) break;
        sl->failed = false;
        fill(L, sl, L->produce_from + s * step);
        pthread_mutex_lock(&L->mu);
        L->count++;
        pthread_cond_broadcast(&L->cv);
        pthread_mutex_unlock(&L->mu);
        if (sl->failed) break;   // the consumer reports it when it reaches this batch
    }
    return NULL;
}

static void start(Loader *L) {
    L->head = L->count = 0;
    L->stop = false;
    L->produce_from = L->consumed;
    if (L->order.seed != L->seed) {
        L->order.seed = L->seed;
        L->order.have_epoch = L->order.have_group = false;
    }
    int rc = pthread_create(&L->thread, NULL, producer, L);
    if (rc != 0) fail("cannot start the data loader thread (error %d)", rc);
    L->running = true;
}

static void stop(Loader *L) {
    if (!L->running) return;
    pthread_mutex_lock(&L->mu);
    L->stop = true;
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
    pthread_join(L->thread, NULL);
    L->running = false;
}

static void loader_next(void *impl, Batch *b) {
    Loader *L = impl;
    int B = L->o.batch, T = L->T;
    if (b->B != B || b->T != T / L->o.sp)
        fail("internal: the batch is (%d, %d) but the data source makes (%d, %d); allocate it with batch_alloc(batch, seq_len / sp)",
             b->B, b->T, B, T / L->o.sp);
    if (!L->running) start(L);
    pthread_mutex_lock(&L->mu);
    while (L->count == 0) pthread_cond_wait(&L->cv, &L->mu);
    Slot *sl = &L->slot[L->head];
    pthread_mutex_unlock(&L->mu);
    if (sl->failed) fail_data(NULL, "%s", sl->msg);   // never train on damaged data; bad input: exit 2
    for (int r = 0; r < B; r++) {
        batch_put_sample(b, r, sl->samples + (size_t)r * (T + 1), T, (int32_t)L->ds.eos_id,
                         (RankSlice){L->o.sp, L->o.sp_index, L->o.placement, L->o.place_groups});
        if (L->use_weights) batch_mask_targets(b, r, sl->weights + (size_t)r * (T + 1));
        b->sample[r] = sl->ids[r];
    }
    pthread_mutex_lock(&L->mu);
    L->head = (L->head + 1) % QUEUE_SLOTS;
    L->count--;
    pthread_cond_broadcast(&L->cv);
    pthread_mutex_unlock(&L->mu);
    L->consumed += (uint64_t)B * L->o.dp;
}

// The split's token range: a val split as is; without one, the last val_fraction of train is held out.
static void choose_range(Loader *L, const char *path, bool validation) {
    uint64_t total = L->ds.tokens;
    L->lo = 0;
    L->hi = total;
    bool has_val = dataset_has_split(path, SPLIT_VAL);
    if (has_val || L->o.val_fraction <= 0) return;
    uint64_t cut = total - (uint64_t)((double)total * L->o.val_fraction);
    if (validation) L->lo = cut;
    else L->hi = cut;
    if (validation) log_info("data: %s has no val split; validating on the last %.3g of its training tokens (%" PRIu64 " tokens)\n",
                             path, L->o.val_fraction, total - cut);
}

// The last document start in (s, s + T], or s + T when there is none.
static uint64_t next_window(const Dataset *d, uint64_t s, uint64_t T) {
    uint64_t x = s + T;
    for (size_t i = find_shard(d, x);; i--) {
        const Shard *sh = d->shards[i];
        uint64_t first = d->first[i];
        if (x >= first && sh->h.num_docs) {
            uint64_t lo = 0, hi = sh->h.num_docs;   // count of local starts <= x - first
            while (lo < hi) {
                uint64_t mid = (lo + hi) / 2;
                if (sh->doc_start[mid] <= x - first) lo = mid + 1;
                else hi = mid;
            }
            if (lo > 0) {
                uint64_t g = first + sh->doc_start[lo - 1];
                return g > s ? g : x;
            }
        }
        if (i == 0 || first <= s) return x;   // earlier shards end before s
    }
}

// Every sample's first token (see the top of this file).
static uint64_t window_starts(Loader *L) {
    size_t cap = 1024, n = 0;
    L->starts = xmalloc(cap * sizeof(uint64_t), "the sample starts");
    for (uint64_t s = L->lo; s + (uint64_t)L->T + 1 <= L->hi; s = next_window(&L->ds, s, (uint64_t)L->T)) {
        if (n == cap) L->starts = xrealloc(L->starts, (cap *= 2) * sizeof(uint64_t), "the sample starts");
        L->starts[n++] = s;
    }
    return n;
}

static void alloc_buffers(Loader *L) {
    size_t raw = 1, comp = 1;
    for (size_t i = 0; i < L->ds.n; i++) {
        const Shard *s = L->ds.shards[i];
        size_t r = shard_raw_bytes(&s->h, s->h.block_tokens), c = shard_max_comp_bytes(s);
        if (r > raw) raw = r;
        if (c > comp) comp = c;
    }
    L->raw = xmalloc(raw, "a data block");
    L->comp = xmalloc(comp, "a compressed data block");
    // A group spans G·T + 1 tokens: ceil of that in blocks, one more for misalignment, one for shard ends.
    uint64_t span = (L->order.G * (uint64_t)L->T + 1 + L->ds.block_tokens - 1) / L->ds.block_tokens + 2;
    L->n_cache = span > MAX_CACHE ? MAX_CACHE : (int)span;
    for (int i = 0; i < L->n_cache; i++) {
        L->cache[i].tok = xmalloc((size_t)L->ds.block_tokens * sizeof(int32_t), "the block cache");
        if (L->use_weights) L->cache[i].w = xmalloc(L->ds.block_tokens, "the block cache");
    }
    for (int i = 0; i < QUEUE_SLOTS; i++) {
        L->slot[i].samples = xmalloc((size_t)L->o.batch * (L->T + 1) * sizeof(int32_t), "the prefetch queue");
        L->slot[i].ids = xmalloc((size_t)L->o.batch * sizeof(int64_t), "the prefetch queue");
        if (L->use_weights) L->slot[i].weights = xmalloc((size_t)L->o.batch * (L->T + 1), "the prefetch queue");
    }
}

void *loader_open(const char *path, const DataOptions *o, bool validation) {
    Loader *L = xcalloc(1, sizeof *L, "a data loader");
    L->o = *o;
    L->T = o->seq_len;
    L->seed = o->seed;
    DataErr e = {{0}};
    bool use_val = validation && dataset_has_split(path, SPLIT_VAL);
    if (validation && !use_val && o->val_fraction <= 0)
        fail_usage("%s: has no validation split; make one with `ringgpt prepare --val-fraction F`, or hold out the tail of the"
                   " training data with --val-fraction F", path);
    if (dataset_open(path, use_val ? SPLIT_VAL : SPLIT_TRAIN, &L->ds, &e) != 0)
        fail_usage("%s", e.msg[0] ? e.msg : "dataset has no training split; re-run `ringgpt prepare`");
    choose_range(L, path, validation);
    L->use_weights = L->ds.weights && !o->loss_on_all;
    if (L->hi - L->lo < (uint64_t)L->T + 1)
        fail_usage("%s: the %s part has %" PRIu64 " tokens, fewer than --seq-len %d + 1; use a shorter --seq-len or more data",
                   path, validation ? "validation" : "training", L->hi - L->lo, L->T);
    order_init(&L->order, window_starts(L), L->ds.block_tokens, L->T, L->seed, o->no_shuffle);
    alloc_buffers(L);
    pthread_mutex_init(&L->mu, NULL);
    pthread_cond_init(&L->cv, NULL);
    return L;
}

uint32_t loader_vocab_size(const void *impl) { return ((const Loader *)impl)->ds.vocab_size; }
bool loader_masks_targets(const void *impl) { return ((const Loader *)impl)->use_weights; }

static uint64_t loader_num_samples(const void *impl) { return ((const Loader *)impl)->order.n; }

static DataState loader_state(const void *impl) {
    const Loader *L = impl;
    return (DataState){.seed = L->seed, .consumed = L->consumed, .epoch = L->consumed / L->order.n};
}

static void loader_restore(void *impl, DataState s) {
    Loader *L = impl;
    stop(L);
    L->seed = s.seed;
    L->consumed = s.consumed;
}

static void loader_close(void *impl) {
    Loader *L = impl;
    stop(L);
    pthread_mutex_destroy(&L->mu);
    pthread_cond_destroy(&L->cv);
    for (int i = 0; i < L->n_cache; i++) {
        free(L->cache[i].tok);
        free(L->cache[i].w);
    }
    for (int i = 0; i < QUEUE_SLOTS; i++) {
        free(L->slot[i].samples);
        free(L->slot[i].weights);
        free(L->slot[i].ids);
    }
    free(L->starts);
    free(L->order.gperm);
    free(L->order.iperm);
    free(L->raw);
    free(L->comp);
    dataset_close(&L->ds);
    free(L);
}

const SourceOps LOADER_SOURCE = {loader_next, loader_num_samples, loader_state, loader_restore, loader_close};
