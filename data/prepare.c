// data/prepare.c — prepare's plan and write: the spec checked, the shards' parameters, the manifest's source, the documents written.
#include "data/prepare.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/args.h"
#include "core/common.h"
#include "data/dataset_tokenizer.h"
#include "data/prepare_impl.h"

const char *const PREPARE_KIND_NAMES[] = {"text", "u16", "u32", "llmc", "synthetic", "jsonl", "jsonl-text"};

PrepareSpec prepare_spec_defaults(void) {
    return (PrepareSpec){.input_kind = "auto", .text_field = "text", .doc_per = "file", .eos = -1, .vocab = -1, .shard_tokens = 1 << 26,
                         .block_tokens = SHARD_DEFAULT_BLOCK_TOKENS, .level = 6, .threads = 1, .byte_planes = true, .val_fraction = 0.1,
                         .docs = 100, .seed = 1337, .doc_len = "4096", .mix = prepare_mix_defaults()};
}

// The checks that need no file: ranges, and inputs or a synthetic task (not both).
static void check_spec(const PrepareSpec *s) {
    if (!(s->val_fraction >= 0 && s->val_fraction < 1)) fail_usage("--val-fraction must be in [0, 1), not %g", s->val_fraction);
    if (s->shard_tokens < 1) fail_usage("--shard-tokens must be positive (got %" PRId64 ")", s->shard_tokens);
    if (s->docs < 1) fail_usage("--docs must be positive (got %" PRId64 ")", s->docs);
    if (s->synthetic && s->n_inputs) fail_usage("--synthetic generates its data; give no input files");
    if (!s->synthetic && !s->n_inputs) fail_usage("prepare needs input files or directories, or --synthetic (see `ringgpt prepare --help`)");
    if (!s->synthetic && s->mix.path) fail_usage("--mix %s shapes synthetic documents; give --synthetic passkey|recall, or drop --mix", s->mix.path);
    if (s->synthetic && s->shuffle_docs) fail_usage("--shuffle-docs orders the documents of input files; synthetic ones are drawn at random already");
    if (strcmp(s->doc_per, "file") != 0 && strcmp(s->doc_per, "dir") != 0) fail_usage("--doc-per must be file or dir, not '%s'", s->doc_per);
    if (!s->text_field[0]) fail_usage("--text-field needs a name: the JSONL field that holds a document's text");
    args_check_threads(s->threads);
    if (s->level < 0 || s->level > 9) fail_usage("--level must be 0..9 (zlib), not %d", s->level);
    if (s->block_tokens < 1 || s->block_tokens > (1 << 28)) fail_usage("--block-tokens must be in 1..2^28");
    if (s->token_bytes != 0 && s->token_bytes != 2 && s->token_bytes != 4) fail_usage("--token-bytes must be 0 (auto), 2 or 4");
}

// Kinds whose documents are text: encoded with the byte tokenizer or a tokenizer.json.
static bool text_kind(PrepareKind k) { return k == PREPARE_TEXT || k == PREPARE_SYNTHETIC || k == PREPARE_JSONL || k == PREPARE_JSONL_TEXT; }

// A tokenizer.json (a path that exists, or one that says .json); with token files a bare id is only recorded.
static void load_tokenizer(PreparePlan *plan) {
    const char *path = plan->spec.tokenizer;
    struct stat st;
    if (path && (stat(path, &st) == 0 || strstr(path, ".json"))) {
        char err[600];
        if (tokenizer_load(path, &plan->tok, err, sizeof err) != 0) fail_usage("%s", err);
    } else if (path && text_kind(plan->kind)) {
        fail_usage("--tokenizer %s: no such file; text needs a tokenizer.json (or no --tokenizer for the byte tokenizer)", path);
    }
}

// Vocab and EOS from a tokenizer.json, unless the flags say otherwise.
static void bpe_vocab(const PreparePlan *plan, int64_t *vocab, int64_t *eos) {
    const Tokenizer *tok = &plan->tok;
    if (*vocab >= 0 && *vocab != tok->vocab_size)
        fail_usage("--vocab %" PRId64 " disagrees with --tokenizer %s (vocab %u)", *vocab, plan->spec.tokenizer, tok->vocab_size);
    *vocab = tok->vocab_size;
    if (*eos < 0) *eos = tok->eos;
    if (*eos < 0) fail_usage("--tokenizer %s has no end-of-text token (<|endoftext|>, <|end_of_text|>, </s>); give --eos ID", plan->spec.tokenizer);
}

// The dataset's vocab, EOS and tokenizer id from the input kind and the flags.
static const char *input_vocab(const PreparePlan *plan, int64_t *vocab, int64_t *eos) {
    PrepareKind kind = plan->kind;
    if (text_kind(kind)) {
        if (*vocab < 0) *vocab = TOK_VOCAB_SIZE;
        if (*eos < 0) *eos = TOK_EOS;
        return TOKENIZER_ID;
    }
    if (kind == PREPARE_LLMC) {
        bool gpt2 = plan->llmc_magic == LLMC_GPT2;
        if (*vocab < 0) *vocab = gpt2 ? 50257 : 128256;
        if (*eos < 0) *eos = gpt2 ? 50256 : 128000;
        return gpt2 ? "gpt2" : "llama3";
    }
    if (*eos < 0) fail_usage("raw token input needs --eos ID, the token that ends each document");
    if (*vocab < 0 && kind == PREPARE_U32) fail_usage("u32 token input needs --vocab N (every id is checked against it)");
    if (*vocab < 0) *vocab = 65536;
    return "unknown";
}

// Vocab, EOS, token width and tokenizer id of the dataset.
static void shard_params(PreparePlan *plan) {
    const PrepareSpec *s = &plan->spec;
    ShardParams sp = {.block_tokens = (uint32_t)s->block_tokens, .level = s->level, .byte_planes = s->byte_planes, .tokenizer = s->tokenizer,
                      .threads = s->threads};
    int64_t vocab = s->vocab, eos = s->eos;
    sp.weights = plan->kind == PREPARE_SYNTHETIC || plan->kind == PREPARE_JSONL;   // answers / completions carry the loss
    if (plan->tok.bpe) bpe_vocab(plan, &vocab, &eos), sp.tokenizer = plan->tok.id;
    else {
        const char *id = input_vocab(plan, &vocab, &eos);
        if (!sp.tokenizer) sp.tokenizer = id;
    }
    if (vocab < 1 || vocab > 0xffffffffLL || eos < 0 || eos >= vocab) fail_usage("--eos %" PRId64 " must be below --vocab %" PRId64, eos, vocab);
    sp.vocab_size = (uint32_t)vocab;
    sp.eos_id = (uint32_t)eos;
    sp.token_bytes = s->token_bytes ? (uint32_t)s->token_bytes : vocab <= 65536 ? 2 : 4;
    if (sp.token_bytes == 2 && vocab > 65536) fail_usage("--vocab %" PRId64 " needs --token-bytes 4", vocab);
    plan->shard = sp;
}

void prepare_plan(const PrepareSpec *spec, PreparePlan *plan) {
    *plan = (PreparePlan){.spec = *spec};
    check_spec(spec);
    plan->n_lens = args_parse_lengths("--doc-len", spec->doc_len, plan->lens, PREPARE_MAX_DOC_LENS);
    if (spec->synthetic) plan->kind = PREPARE_SYNTHETIC;
    else prepare_find_inputs(plan);
    load_tokenizer(plan);
    shard_params(plan);
    if (spec->synthetic) prepare_synth_plan(plan);
}

void prepare_plan_free(PreparePlan *plan) {
    for (size_t i = 0; i < plan->n_files; i++) free(plan->files[i]);
    free(plan->files);
    free(plan->label_at);
    free(plan->joins);
    free(plan->binary_example);
    free(plan->empty_example);
    tokenizer_free(&plan->tok);
    haystack_free(&plan->hay);
    free(plan->text);
    *plan = (PreparePlan){0};
}

// The passkey mix's keys as the manifest records them (keys that are off are left out).
static void passkey_source(cJSON *o, const PrepareMix *m) {
    const PasskeyMix *p = &m->passkey;
    cJSON_AddNumberToObject(o, "depth", p->depth);
    cJSON_AddNumberToObject(o, "edge_frac", p->edge_frac);
    cJSON_AddNumberToObject(o, "edge_span", p->edge_span);
    cJSON_AddNumberToObject(o, "edge_far", p->edge_far);
    cJSON_AddNumberToObject(o, "long_frac", p->long_frac);
    cJSON_AddNumberToObject(o, "key_max", p->key_max);
    if (p->distractor_frac > 0) {
        cJSON_AddNumberToObject(o, "distractor_frac", p->distractor_frac);
        cJSON_AddNumberToObject(o, "distractors", p->distractors);
        cJSON_AddNumberToObject(o, "ask", p->ask);
        if (p->alike_frac > 0) cJSON_AddNumberToObject(o, "distractor_alike", p->alike_frac);
    }
    if (p->recall_frac > 0) {
        cJSON_AddNumberToObject(o, "recall_frac", p->recall_frac);
        cJSON_AddNumberToObject(o, "pairs", m->pairs);
        cJSON_AddNumberToObject(o, "queries", m->queries);
    }
    if (p->hay_frac > 0) {
        cJSON_AddStringToObject(o, "haystack", m->haystack);
        cJSON_AddNumberToObject(o, "haystack_frac", p->hay_frac);
    }
}

// The synthetic task and its mix, as the manifest's "source" records them.
static void synthetic_source(cJSON *o, const PrepareSpec *s) {
    cJSON_AddStringToObject(o, "task", s->synthetic);
    cJSON_AddNumberToObject(o, "seed", (double)s->seed);
    cJSON_AddNumberToObject(o, "docs", (double)s->docs);
    cJSON_AddStringToObject(o, "doc_len", s->doc_len);
    if (strcmp(s->synthetic, "passkey") == 0) {
        passkey_source(o, &s->mix);
    } else {
        cJSON_AddNumberToObject(o, "pairs", s->mix.pairs);
        cJSON_AddNumberToObject(o, "queries", s->mix.queries);
    }
    if (s->mix.text_frac > 0) {
        cJSON_AddStringToObject(o, "text", s->mix.text);
        cJSON_AddNumberToObject(o, "text_frac", s->mix.text_frac);
    }
}

// The input files as the manifest's "source" records them (a choice left at its default is left out).
static void inputs_source(cJSON *o, const PreparePlan *plan) {
    const PrepareSpec *s = &plan->spec;
    cJSON_AddNumberToObject(o, "files", (double)plan->n_files);
    if (plan->kind == PREPARE_JSONL_TEXT) cJSON_AddStringToObject(o, "text_field", s->text_field);
    if (plan->joins) cJSON_AddStringToObject(o, "doc_per", s->doc_per);
    if (s->shuffle_docs) cJSON_AddNumberToObject(o, "shuffle_seed", (double)s->seed);
}

// The manifest's "source": what the data was made from (malloc'ed JSON text).
static char *source_json(const PreparePlan *plan) {
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "kind", PREPARE_KIND_NAMES[plan->kind]);
    if (plan->kind == PREPARE_SYNTHETIC) synthetic_source(o, &plan->spec);
    else inputs_source(o, plan);
    cJSON_AddNumberToObject(o, "val_fraction", plan->spec.val_fraction);
    char *s = cJSON_PrintUnformatted(o);
    cJSON_Delete(o);
    if (!s) fail("out of memory printing the manifest's source");
    return s;
}

static void write_header(Prep *p, const PreparePlan *plan) {
    char *src = source_json(plan);
    dataset_writer_source(p->w, src);
    free(src);
    if (!plan->tok.bpe) return;
    char *entry = dataset_tokenizer_write(plan->spec.out, &plan->tok);
    dataset_writer_tokenizer(p->w, entry);
    free(entry);
}

void prepare_write(PreparePlan *plan, PrepareProgressFn progress, void *ctx, PrepareResult *r) {
    *r = (PrepareResult){0};
    Prep p = {.val_fraction = plan->spec.val_fraction, .t0 = now_seconds(), .eos = plan->shard.eos_id,
              .bos = plan->tok.add_bos ? plan->tok.bos : -1, .progress = progress, .ctx = ctx};
    p.last_report = p.t0;
    p.buf = xmalloc(PREP_CHUNK_BYTES * sizeof(uint32_t), "a token buffer");
    p.w = dataset_writer_open(plan->spec.out, &plan->shard, (uint64_t)plan->spec.shard_tokens);
    write_header(&p, plan);
    if (plan->spec.shuffle_docs) p.spool = spool_open(plan->spec.out, plan->shard.token_bytes, plan->shard.weights);
    if (plan->kind == PREPARE_SYNTHETIC) prep_synthesize(&p, plan, r);
    else prep_read_inputs(&p, plan);
    if (p.spool) spool_write(&p, (uint64_t)plan->spec.seed);
    dataset_writer_close(p.w, r->splits);   // refuses a dataset whose training split is empty (and removes its shards)
    r->in_bytes = p.in_bytes;
    r->seconds = now_seconds() - p.t0;
    free(p.buf);
}
