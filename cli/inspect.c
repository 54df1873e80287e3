// cli/inspect.c — `ringgpt inspect PATH`: summary of a dataset, a shard (its first tokens as text, loss masks marked) or a checkpoint.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoints/summary.h"
#include "core/args.h"
#include "core/common.h"
#include "data/dataset.h"
#include "data/dataset_tokenizer.h"
#include "tokenizer/tokenizer.h"
#include "cli/commands.h"

static void print_split(const Dataset *d, int split) {
    uint64_t bytes = 0, blocks = 0;
    for (size_t i = 0; i < d->n; i++) {
        bytes += d->shards[i]->h.file_bytes;
        blocks += d->shards[i]->h.num_blocks;
    }
    double raw = (double)d->tokens * d->token_bytes;
    printf("  %-5s %zu shard%s, %" PRIu64 " document%s, %" PRIu64 " token%s, %" PRIu64 " block%s, %.2f MB on disk (%.2fx vs raw "
           "%u-byte tokens)\n", SPLIT_NAMES[split], d->n, d->n == 1 ? "" : "s", d->docs, plural((long long)d->docs), d->tokens,
           plural((long long)d->tokens), blocks, plural((long long)blocks), bytes / 1e6, bytes ? raw / bytes : 0.0, d->token_bytes);
}

// ---- --head: the first tokens as text, the ones outside the loss marked -----------------------

// The head as bytes, and per byte whether its token has loss weight 0.
typedef struct {
    unsigned char *bytes;
    bool *masked;
    size_t n, cap;
} HeadText;

static void head_add(HeadText *h, const void *bytes, size_t len, bool masked) {
    if (!len) return;
    if (h->n + len > h->cap) {
        h->cap = 2 * (h->n + len) + 256;
        h->bytes = xrealloc(h->bytes, h->cap, "the head's text");
        h->masked = xrealloc(h->masked, h->cap * sizeof *h->masked, "the head's marks");
    }
    memcpy(h->bytes + h->n, bytes, len);
    for (size_t i = 0; i < len; i++) h->masked[h->n + i] = masked;
    h->n += len;
}

// The first n tokens of the split's first shard, block after block, and their loss weights (1 everywhere in a shard
// without weights) into tok and w (room for n + a block). Returns the count. Damaged data is a usage error.
static uint32_t read_head(const Dataset *d, uint32_t n, int32_t *tok, uint8_t *w) {
    const Shard *s = d->shards[0];
    void *raw = xmalloc(shard_raw_bytes(&s->h, s->h.block_tokens), "a block"), *comp = xmalloc(shard_max_comp_bytes(s), "a block");
    uint32_t k = 0;
    DataErr e;
    for (uint64_t b = 0; b < s->h.num_blocks && k < n; b++) {
        uint32_t m = s->blocks[b].n_tokens;
        if (shard_read_block(s, b, raw, comp, &e) != 0) fail_usage("%s", e.msg);
        if (shard_decode_tokens(&s->h, raw, m, d->vocab_size, tok + k) >= 0 || shard_decode_weights(&s->h, raw, m, w + k) >= 0)
            fail_usage("%s: block %" PRIu64 " holds a token id >= vocab %u or a loss weight other than 0 and 1; "
                       "`ringgpt inspect --verify` names it", s->path, b, d->vocab_size);
        k += m < n - k ? m : n - k;
    }
    free(raw);
    free(comp);
    return k;
}

// The tokens as their bytes; a tokenizer that knows no text (token-file data) gives ids separated by spaces.
static void head_text(const Tokenizer *t, const int32_t *tok, const uint8_t *w, uint32_t k, HeadText *h) {
    bool text = tokenizer_can_encode(t);
    char id[24];
    for (uint32_t i = 0; i < k; i++) {
        size_t len = 0;
        const unsigned char *b = text ? tokenizer_token(t, (uint32_t)tok[i], &len) : NULL;
        if (!text && i) head_add(h, " ", 1, !w[i - 1] && !w[i]);
        if (!b) len = (size_t)snprintf(id, sizeof id, text ? "<%d>" : "%d", tok[i]);
        head_add(h, b ? (const void *)b : id, len, !w[i]);
    }
}

// The length of the UTF-8 character at byte i whose bytes share one mark, or 0 when there is none.
static size_t utf8_len(const HeadText *h, size_t i) {
    unsigned char c = h->bytes[i];
    size_t len = c >= 0xf0 && c <= 0xf4 ? 4 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xc2 && c < 0xe0 ? 2 : 0;
    if (!len || i + len > h->n) return 0;
    for (size_t j = 1; j < len; j++)
        if ((h->bytes[i + j] & 0xc0) != 0x80 || h->masked[i + j] != h->masked[i]) return 0;
    return len;
}

static void print_byte(unsigned char c, bool marks) {
    if (c == '\n') fputs("\\n", stdout);
    else if (c == '\t') fputs("\\t", stdout);
    else if (c == '\r') fputs("\\r", stdout);
    else if (c == '\\' || (marks && (c == '[' || c == ']'))) printf("\\%c", c);
    else if (c < 0x20 || c >= 0x7f) printf("\\x%02x", c);
    else putchar(c);
}

// One line: UTF-8 characters as themselves, \n \t \r \\ and every other byte as \xNN; with marks, the tokens of loss
// weight 0 between [ and ] (a bracket of the text itself as \[ or \]).
static void print_text(const HeadText *h, bool marks) {
    bool open = false;
    fputs("    ", stdout);
    for (size_t i = 0, len; i < h->n; i += len ? len : 1) {
        if (marks && h->masked[i] != open) putchar((open = !open) ? '[' : ']');
        len = h->bytes[i] >= 0x80 ? utf8_len(h, i) : 1;
        if (len > 1) fwrite(h->bytes + i, 1, len, stdout);
        else print_byte(h->bytes[i], marks);
    }
    if (open) putchar(']');
    putchar('\n');
}

// The first n tokens of the split, as text with the dataset's tokenizer (ids when it knows no text).
static void print_head(const char *path, const Dataset *d, int n) {
    if (!d->n || n <= 0) return;
    uint64_t have = d->shards[0]->h.num_tokens;
    uint32_t want = (uint64_t)n < have ? (uint32_t)n : (uint32_t)have, room = want + d->shards[0]->h.block_tokens;
    int32_t *tok = xmalloc((size_t)room * sizeof *tok, "the head");
    uint8_t *w = xmalloc(room, "the head's loss weights");
    uint32_t k = read_head(d, want, tok, w);
    Tokenizer t;
    DataErr e;
    char why[600] = "";
    if (dataset_tokenizer(path, &t, &e) != 0) {
        snprintf(why, sizeof why, "; %s", e.msg);
        t = (Tokenizer){.id = "unknown"};   // ids shown
    }
    HeadText h = {0};
    head_text(&t, tok, w, k, &h);
    char what[700] = "as text";
    if (!tokenizer_can_encode(&t)) snprintf(what, sizeof what, "as ids (tokenizer %s: no text to show%s)", t.id, why);
    printf("  first %u tokens %s%s:\n", k, what, d->weights ? " ([...] = loss weight 0, not trained on)" : "");
    print_text(&h, d->weights);
    free(h.bytes);
    free(h.masked);
    free(tok);
    free(w);
    if (!why[0]) tokenizer_free(&t);
}

// The tokenizer the dataset carries (a BPE dataset's tokenizer.json: present, its CRC as the manifest records,
// the same vocab), loaded as training and eval will load it.
static void verify_tokenizer(const char *path) {
    Tokenizer t;
    DataErr e;
    if (dataset_tokenizer(path, &t, &e) != 0) fail_usage("%s", e.msg);
    printf("  tokenizer %s: ok (vocab %u%s)\n", t.id, t.vocab_size, t.bpe ? ", tokenizer.json loads and matches its CRC" : "");
    tokenizer_free(&t);
}

static void inspect_dataset(const char *path, bool verify, int head) {
    bool any = false;
    for (int split = 0; split < N_SPLITS; split++) {
        Dataset d;
        DataErr e;
        int rc = dataset_open(path, split, &d, &e);
        if (rc < 0) fail_usage("%s", e.msg);
        if (rc > 0) continue;
        if (!any) printf("%s: tokenizer %s, vocab %u, EOS %u, %u-byte tokens, blocks of %u tokens%s\n", path, d.tokenizer, d.vocab_size,
                         d.eos_id, d.token_bytes, d.block_tokens, d.weights ? ", per-token loss weights" : "");
        any = true;
        print_split(&d, split);
        if (split == SPLIT_TRAIN) print_head(path, &d, head);
        if (verify && dataset_verify(&d, true, &e)) fail_usage("%s", e.msg);
        dataset_close(&d);
    }
    if (!any) fail_usage("%s: has no splits; re-run `ringgpt prepare`", path);
    if (verify) verify_tokenizer(path);
    if (verify) printf("verify: ok\n");
}

// ---- a checkpoint --------------------------------------------------------------------------------

static void print_model(const CkptSummary *s) {
    const ModelConfig *c = &s->state.model;
    const char *name = s->state.meta.name[0] ? s->state.meta.name : s->preset;   // an imported model's own name
    printf("  model%s%s: %d layers, dim %d, %d heads, %d kv heads, ffn %d, vocab %d, RoPE theta %g, %s; %.2fM parameters\n",
           name[0] ? " " : "", name, c->n_layer, c->dim, c->n_head, c->n_kv_head, c->ffn_dim, c->vocab_size,
           c->rope_theta, c->tie_embeddings ? "tied embeddings" : "untied head", s->params / 1e6);
    if (c->rope_scaling.type != ROPE_DEFAULT) {
        char scaling[256];
        rope_scaling_format(&c->rope_scaling, scaling, sizeof scaling);
        printf("  RoPE scaling %s (TYPE:FACTOR:ORIG as train --rope-scaling)\n", scaling);
    }
}

static void print_tokenizer(const CkptTokenizer *t) {
    printf("  tokenizer %s: eos %" PRId64 ", bos %" PRId64 ", pad %" PRId64 "%s; %s\n", t->id[0] ? t->id : "not recorded",
           t->eos, t->bos, t->pad, t->add_bos ? ", documents start with bos" : "",
           t->has_file ? "tokenizer.json in the checkpoint" : "no tokenizer.json");
}

// The run flags state.json records (and what config.json adds); an import has none.
static void print_run(const CkptSummary *s) {
    const CkptState *st = &s->state;
    const CkptRun *r = &st->run;
    if (strcmp(st->kind, "weights") == 0) {
        printf("  run: none; weights imported from %s (max_position_embeddings %d)\n", st->init_from, r->seq_len);
        return;
    }
    printf("  run: seq-len %d, batch %d, grad-accum %d, steps %d, data %s", r->seq_len, r->batch, r->grad_accum, r->steps, r->data);
    if (s->loss_on[0]) printf(", loss-on %s", s->loss_on);
    if (s->doc_mask >= 0) printf(", doc-mask %s", s->doc_mask ? "on" : "off");
    printf("%s\n", s->has_config ? "" : " (no config.json beside it)");
    printf("  optimizer: lr %g -> min-lr %g (%s, warmup %d), weight-decay %g, betas %g/%g, clip %g; seed %llu\n", r->lr, r->min_lr,
           r->schedule, r->warmup, r->weight_decay, r->beta1, r->beta2, r->clip, (unsigned long long)st->seed);
    printf("  data position: %" PRIu64 " sequences consumed, epoch %" PRIu64 "%s%s\n", st->data.consumed, st->data.epoch,
           st->init_from[0] ? "; fine-tuned from " : "", st->init_from);
}

static void inspect_checkpoint(const char *path, int head) {
    if (head) fail_usage("--head shows a dataset's first tokens; %s is a checkpoint", path);
    CkptSummary s;
    CkErr e;
    if (ckpt_summary(path, &s, &e) != 0) fail_usage("%s", e.msg);
    const CkptState *st = &s.state;
    printf("%s: checkpoint of step %" PRId64, s.dir, st->step);
    if (s.from_run)
        printf(" (%s %s, %d checkpoint%s there)", s.latest_missing ? "no LATEST: the newest valid one of" : "LATEST of", path,
               s.run_checkpoints, s.run_checkpoints == 1 ? "" : "s");
    printf("\n  kind %s: %s\n", st->kind,
           strcmp(st->kind, "train") == 0 ? "weights, AdamW moments and data position (resumable)"
                                          : "weights only (for train --init-from, eval, sample, export)");
    print_model(&s);
    print_tokenizer(&st->tok);
    printf("  layout: saved on dp %d x sp %d%s\n", st->dp, st->sp,
           strcmp(st->kind, "train") == 0 ? " (a resume may change it: keep batch x grad-accum x dp equal)" : "");
    if (st->shard_ranks > 0)
        printf("  sharded: --shard %s over %d ranks, one shard_*_of_%05d.safetensors per rank with its slices of the moments%s\n",
               shard_level_name(st->shard_level), st->shard_ranks, st->shard_ranks,
               st->shard_level == SHARD_PARAMS ? " and the weights" : " (the weights: model.safetensors)");
    print_run(&s);
    printf("  size: %.2f MB in %d files; verify: ok (every file's size and CRC32 as MANIFEST.json lists them)\n", s.bytes / 1e6,
           s.files);
}

int cmd_inspect(int argc, char **argv) {
    bool verify = false;
    int head = 0;
    ArgSpec specs[] = {
        {"--verify", ARG_BOOL, &verify, "check every CRC, index, token id and document boundary; exit 2 on the first problem"},
        {"--head", ARG_INT, &head, "print the first N tokens of the training split as text, [...] around tokens outside the loss"},
    };
    ArgCommand cmd = {"inspect", "ringgpt inspect PATH [--verify] [--head N]",
                      "Summarises a dataset directory made by `ringgpt prepare` or a single .rgs shard: token width, vocab, EOS,\n"
                      "tokenizer, shards, documents, tokens and compression per split. Opening already checks headers, indexes and\n"
                      "the manifest; --verify also reads every block. A checkpoint (a step directory, or a run directory: its\n"
                      "LATEST) is summarised too: step, model, tokenizer, layout, run flags and size, after checking every file."};
    const char *pos[1];
    if (args_parse(&cmd, specs, sizeof specs / sizeof specs[0], argc, argv, pos, 1) != 1)
        fail_usage("inspect needs one PATH (see `ringgpt inspect --help`)");
    if (head < 0) fail_usage("--head must not be negative (got %d)", head);
    if (ckpt_summary_applies(pos[0])) inspect_checkpoint(pos[0], head);
    else inspect_dataset(pos[0], verify, head);
    return 0;
}
