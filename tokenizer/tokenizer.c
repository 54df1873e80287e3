// tokenizer/tokenizer.c — the byte tokenizer (a token is a byte; ids 256.. are special), the Tokenizer handle over it and BPE, prompts.
#include "tokenizer/tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/common.h"
#include "tokenizer/bpe.h"

const char *const TOK_SPECIAL_TEXT[TOK_VOCAB_SIZE - TOK_EOS] = {"<eos>", "<bos>", "<pad>", "<sep>"};
static unsigned char BYTES[256];   // byte i is token i (filled by tokenizer_bytes)

size_t tok_encode(const unsigned char *text, size_t n, int32_t *out) {
    for (size_t i = 0; i < n; i++) out[i] = text[i];
    return n;
}

// ---- Tokenizer -----------------------------------------------------------------------------------
void tokenizer_bytes(Tokenizer *t) {
    *t = (Tokenizer){.vocab_size = TOK_VOCAB_SIZE, .eos = TOK_EOS, .bos = TOK_BOS, .pad = TOK_PAD, .add_bos = false};
    for (int i = 0; i < 256; i++) BYTES[i] = (unsigned char)i;
    snprintf(t->id, sizeof t->id, "%s", TOKENIZER_ID);
}

static int64_t first_added(const Bpe *b, const char *const *names) {
    for (; *names; names++) {
        int64_t id = bpe_added_id(b, *names);
        if (id >= 0) return id;
    }
    return -1;
}

int tokenizer_load(const char *path, Tokenizer *t, char *err, size_t err_len) {
    static const char *const EOS[] = {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", NULL};
    static const char *const BOS[] = {"<|begin_of_text|>", "<|bos|>", "<s>", "<bos>", NULL};
    static const char *const PAD[] = {"<|pad|>", "<pad>", "<|finetune_right_pad_id|>", NULL};
    *t = (Tokenizer){0};
    t->bpe = bpe_load(path, err, err_len);
    if (!t->bpe) return -1;
    t->json = read_whole_file(path, &t->json_len);
    t->crc = (uint32_t)crc32(0, t->json, (uInt)t->json_len);
    snprintf(t->id, sizeof t->id, "bpe-%08x", t->crc);
    t->vocab_size = bpe_vocab_size(t->bpe);
    t->eos = first_added(t->bpe, EOS);
    t->bos = first_added(t->bpe, BOS);
    t->pad = first_added(t->bpe, PAD);
    int64_t tb;
    t->add_bos = bpe_template_bos(t->bpe, &tb);
    if (t->add_bos) t->bos = tb;
    return 0;
}

void tokenizer_free(Tokenizer *t) {
    bpe_free(t->bpe);
    free(t->json);
    *t = (Tokenizer){0};
}

bool tokenizer_cuts_at_lines(const Tokenizer *t) { return !t->bpe || bpe_safe_cuts(t->bpe); }

size_t tokenizer_line_cut(const unsigned char *s, size_t n) {
    for (size_t i = n ? n - 1 : 0; i >= 2; i--) {
        unsigned char c = s[i] | 0x20;
        if (s[i - 1] == '\n' && c >= 'a' && c <= 'z' && s[i - 2] > 0x20 && s[i - 2] < 0x7f) return i;
    }
    return 0;
}

TokEncoder tokenizer_encoder(const Tokenizer *t) { return (TokEncoder){t, t->bpe ? bpe_encoder_new(t->bpe) : NULL}; }

void tokenizer_encoder_free(TokEncoder *e) {
    bpe_encoder_free(e->bpe);
    e->bpe = NULL;
}

size_t tokenizer_encode(TokEncoder *e, const unsigned char *text, size_t n, uint32_t **out, size_t *n_out, size_t *cap) {
    if (!tokenizer_can_encode(e->tok)) fail("internal: tokenizer '%s' has no tokenizer.json to encode text with", e->tok->id);
    if (e->bpe) return bpe_encode(e->bpe, text, n, out, n_out, cap);
    if (*n_out + n > *cap) {
        *cap = *n_out + n + 1024;
        *out = xrealloc(*out, *cap * sizeof **out, "the token output");
    }
    for (size_t i = 0; i < n; i++) (*out)[(*n_out)++] = text[i];
    return *n_out;
}

bool tokenizer_can_encode(const Tokenizer *t) { return t->bpe || strcmp(t->id, TOKENIZER_ID) == 0; }

static const unsigned char *token_at(const Tokenizer *t, uint32_t id, bool first, size_t *len) {
    if (t->bpe) return bpe_token_bytes(t->bpe, id, first, len);
    if (id >= TOK_VOCAB_SIZE || !tokenizer_can_encode(t)) return NULL;
    if (id < 256) {
        *len = 1;
        return BYTES + id;
    }
    *len = strlen(TOK_SPECIAL_TEXT[id - TOK_EOS]);
    return (const unsigned char *)TOK_SPECIAL_TEXT[id - TOK_EOS];
}

const unsigned char *tokenizer_token(const Tokenizer *t, uint32_t id, size_t *len) { return token_at(t, id, false, len); }

const unsigned char *tokenizer_first_token(const Tokenizer *t, uint32_t id, size_t *len) { return token_at(t, id, true, len); }

// ---- a model's tokenizer at work ------------------------------------------------------------------
static bool known(const char *id) { return id[0] && strcmp(id, "unknown") != 0; }

bool tokenizer_ids_differ(const char *a, const char *b) { return known(a) && known(b) && strcmp(a, b) != 0; }

void model_check_data(const char *model_path, const Tokenizer *model, int model_vocab, const char *data_path, const Tokenizer *data) {
    if (data->vocab_size > (uint32_t)model_vocab)
        fail_usage("%s: the data has vocab %u (tokenizer %s) but the model %s has %d rows (tokenizer %s); use data made with the model's "
                   "tokenizer (`ringgpt prepare --tokenizer` with its tokenizer.json)",
                   data_path, data->vocab_size, data->id, model_path, model_vocab, model->id);
    if (tokenizer_ids_differ(data->id, model->id))
        fail_usage("%s: the data was made with tokenizer %s but the model %s with %s; use data made with the model's tokenizer "
                   "(`ringgpt prepare --tokenizer` with its tokenizer.json)", data_path, data->id, model_path, model->id);
}

int64_t model_start_token(const Tokenizer *t, bool imported, const char *bos_flag) {
    if (strcmp(bos_flag, "off") == 0) return -1;
    if (strcmp(bos_flag, "on") == 0) {
        if (t->bos < 0) fail_usage("--bos on: the model's tokenizer %s has no BOS token; give its id (--bos ID) or --bos off", t->id);
        return t->bos;
    }
    if (strcmp(bos_flag, "auto") != 0) {
        char *end;
        long long id = strtoll(bos_flag, &end, 10);
        if (!*bos_flag || *end || id < 0 || id >= t->vocab_size)
            fail_usage("--bos %s: give auto, on, off or a token id below the vocab of %u", bos_flag, t->vocab_size);
        return id;
    }
    if (imported) return t->add_bos ? t->bos : -1;   // as transformers' generate and llama.cpp prefill
    return t->add_bos ? t->bos : t->eos >= 0 ? t->eos : t->bos;
}

size_t model_prompt_ids(const Tokenizer *t, int64_t start, const unsigned char *prompt, size_t len, uint32_t **ids) {
    size_t n = 0, cap = 0;
    *ids = NULL;
    if (len && !tokenizer_can_encode(t))
        fail_usage("the model's tokenizer %s came without a tokenizer.json it can use, so a text prompt cannot be encoded; give the "
                   "prompt as token ids (--prompt-ids 1,2,3)", t->id);
    if (start >= 0) {
        *ids = xmalloc(sizeof **ids, "the prompt");
        (*ids)[n++] = (uint32_t)start;
        cap = 1;
    }
    if (len) {
        TokEncoder e = tokenizer_encoder(t);
        tokenizer_encode(&e, prompt, len, ids, &n, &cap);
        tokenizer_encoder_free(&e);
    }
    if (!n) fail_usage("nothing to start from: the prompt is empty and no start token is prefilled (the model's tokenizer %s); give "
                       "a --prompt, --prompt-ids or --bos on|ID", t->id);
    return n;
}

void model_write_token(const Tokenizer *t, uint32_t id, FILE *f) {
    size_t n;
    const unsigned char *bytes = tokenizer_token(t, id, &n);
    if (bytes) fwrite(bytes, 1, n, f);
    else fprintf(f, "<%u>", id);
}
