// cli/inspect.c — `ringgpt inspect PATH`: summary of a dataset or shard; --verify checks every CRC, index and token.
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/common.h"
#include "data/dataset.h"
#include "data/dataset_tokenizer.h"
#include "data/tokenizer.h"
#include "cli/commands.h"

static void print_split(const Dataset *d, int split) {
    uint64_t bytes = 0, blocks = 0;
    for (size_t i = 0; i < d->n; i++) {
        bytes += d->shards[i]->h.file_bytes;
        blocks += d->shards[i]->h.num_blocks;
    }
    double raw = (double)d->tokens * d->token_bytes;
    printf("  %-5s %zu shard%s, %" PRIu64 " documents, %" PRIu64 " tokens, %" PRIu64 " blocks, %.2f MB on disk (%.2fx vs raw %u-byte tokens)\n",
           SPLIT_NAMES[split], d->n, d->n == 1 ? "" : "s", d->docs, d->tokens, blocks, bytes / 1e6, bytes ? raw / bytes : 0.0, d->token_bytes);
}

// The first n tokens of the split, printed with the byte tokenizer when the dataset uses it.
static void print_head(const Dataset *d, int n) {
    if (!d->n || n <= 0) return;
    const Shard *s = d->shards[0];
    void *raw = xmalloc(shard_raw_bytes(&s->h, s->h.block_tokens), "a block"), *comp = xmalloc(shard_max_comp_bytes(s), "a block");
    int32_t *tok = xmalloc((size_t)s->h.block_tokens * sizeof(int32_t), "a block");
    DataErr e;
    if (s->h.num_blocks && shard_read_block(s, 0, raw, comp, &e) == 0) {
        uint32_t k = s->blocks[0].n_tokens < (uint32_t)n ? s->blocks[0].n_tokens : (uint32_t)n;
        shard_decode_tokens(&s->h, raw, s->blocks[0].n_tokens, UINT32_MAX, tok);
        bool bytes = strcmp(d->tokenizer, TOKENIZER_ID) == 0;
        printf("  first %u tokens: ", k);
        for (uint32_t i = 0; i < k; i++) {
            char buf[16];
            if (bytes) tok_decode(tok[i], buf);
            else snprintf(buf, sizeof buf, "%d ", tok[i]);
            fputs(buf, stdout);
        }
        printf("\n");
    }
    free(raw);
    free(comp);
    free(tok);
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

int cmd_inspect(int argc, char **argv) {
    bool verify = false;
    int head = 0;
    ArgSpec specs[] = {
        {"--verify", ARG_BOOL, &verify, "check every CRC, index, token id and document boundary; exit 2 on the first problem"},
        {"--head", ARG_INT, &head, "print the first N tokens of the training split"},
    };
    ArgCommand cmd = {"inspect", "ringgpt inspect PATH [--verify]",
                      "Summarises a dataset directory made by `ringgpt prepare` or a single .rgs shard: token width, vocab, EOS,\n"
                      "tokenizer, shards, documents, tokens and compression per split. Opening already checks headers, indexes and\n"
                      "the manifest; --verify also reads every block."};
    const char *pos[1];
    if (args_parse(&cmd, specs, sizeof specs / sizeof specs[0], argc, argv, pos, 1) != 1)
        fail_usage("inspect needs one PATH (see `ringgpt inspect --help`)");
    if (head < 0) fail_usage("--head must not be negative (got %d)", head);
    bool any = false;
    for (int split = 0; split < N_SPLITS; split++) {
        Dataset d;
        DataErr e;
        int rc = dataset_open(pos[0], split, &d, &e);
        if (rc < 0) fail_usage("%s", e.msg);
        if (rc > 0) continue;
        if (!any) printf("%s: tokenizer %s, vocab %u, EOS %u, %u-byte tokens, blocks of %u tokens%s\n", pos[0], d.tokenizer, d.vocab_size,
                         d.eos_id, d.token_bytes, d.block_tokens, d.weights ? ", per-token loss weights" : "");
        any = true;
        print_split(&d, split);
        if (split == SPLIT_TRAIN) print_head(&d, head);
        if (verify && dataset_verify(&d, true, &e)) fail_usage("%s", e.msg);
        dataset_close(&d);
    }
    if (!any) fail_usage("%s: has no splits; re-run `ringgpt prepare`", pos[0]);
    if (verify) verify_tokenizer(pos[0]);
    if (verify) printf("verify: ok\n");
    return 0;
}
