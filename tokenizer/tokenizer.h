// tokenizer/tokenizer.h — tokenizers: the byte tokenizer (256 bytes + specials), the handle over it and BPE, a model's use of it.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum {
    TOK_EOS = 256,     // end of a document; separates packed documents
    TOK_BOS = 257,     // start of a document (used by prompts)
    TOK_PAD = 258,     // padding, never a target
    TOK_SEP = 259,     // separator for synthetic tasks (e.g. question / answer)
    TOK_VOCAB_SIZE = 260,
};
#define TOKENIZER_ID "byte260"
extern const char *const TOK_SPECIAL_TEXT[TOK_VOCAB_SIZE - TOK_EOS];   // the specials as text: "<eos>", "<bos>", "<pad>", "<sep>"

// bytes -> tokens: one token per byte; returns the count written (== n).
size_t tok_encode(const unsigned char *text, size_t n, int32_t *out);

// ---- the tokenizer a dataset or model uses: the byte tokenizer above or a BPE (tokenizer/bpe.h) --
typedef struct Bpe Bpe;
typedef struct BpeEncoder BpeEncoder;

#define TOKENIZER_FILE "tokenizer.json"   // its name inside datasets, checkpoints and HF exports
typedef struct {
    char id[32];              // "byte260", or "bpe-" + the CRC-32 of tokenizer.json in hex
    uint32_t vocab_size;
    int64_t eos, bos, pad;    // special ids, -1 = none
    bool add_bos;             // documents start with BOS (the tokenizer's post-processor puts one first)
    Bpe *bpe;                 // NULL for byte260, and for token-file data without a tokenizer.json (id "gpt2",
                              // "unknown", ...: vocab and EOS known, text cannot be encoded; see tokenizer_can_encode)
    unsigned char *json;      // the tokenizer.json bytes (NULL for byte260), copied where the data goes
    size_t json_len;
    uint32_t crc;             // CRC-32 of json
} Tokenizer;

void tokenizer_bytes(Tokenizer *t);
// Loads a tokenizer.json; eos/bos/pad come from its added tokens by their usual names
// (<|endoftext|>, <|end_of_text|>, </s>; <|begin_of_text|>, <s>, <|bos|>; <|pad|>, <pad>).
// Returns 0, or -1 with one line in err naming the file and the field.
int tokenizer_load(const char *path, Tokenizer *t, char *err, size_t err_len);
void tokenizer_free(Tokenizer *t);

// False for a tokenizer known only by id (token-file data): it cannot turn text into ids or back.
bool tokenizer_can_encode(const Tokenizer *t);
// True when text may be cut at line cuts and the pieces encoded separately give the same ids as the
// whole (the byte tokenizer; byte-level BPE with GPT-2, Llama 3 or Digits pre-tokenizers, see bpe_safe_cuts).
bool tokenizer_cuts_at_lines(const Tokenizer *t);
// The last line cut in s[0..n), 0 if none: a position i with s[i-2] printable ASCII (not white space),
// s[i-1] == '\n' and s[i] an ASCII letter. Both pre-tokenizer regexes end a pre-token at such a place
// whether or not the text goes on.
size_t tokenizer_line_cut(const unsigned char *s, size_t n);

// Per-thread encoding state (a BPE word cache); any number may share one Tokenizer.
typedef struct {
    const Tokenizer *tok;
    BpeEncoder *bpe;
} TokEncoder;
TokEncoder tokenizer_encoder(const Tokenizer *t);
void tokenizer_encoder_free(TokEncoder *e);
// Appends the ids of text[0..n) to *out (holding *n_out ids, room for *cap; grown as needed).
// Special-token text (e.g. "<|endoftext|>") becomes its id; no BOS/EOS is added.
size_t tokenizer_encode(TokEncoder *e, const unsigned char *text, size_t n, uint32_t **out, size_t *n_out, size_t *cap);
// The bytes of one token inside a text (specials as their text, "<eos>" for byte260). NULL when id is out of range.
const unsigned char *tokenizer_token(const Tokenizer *t, uint32_t id, size_t *len);
// The bytes of the token that starts a decoded text: SentencePiece-style tokenizers drop the space their
// encoder put before the text (HF's Strip / Metaspace decoders); the same as tokenizer_token otherwise.
const unsigned char *tokenizer_first_token(const Tokenizer *t, uint32_t id, size_t *len);

// ---- a model's tokenizer at work: its data checked, the token a generation starts with, prompts, output --
// True when a and b are two different known tokenizers ("" and "unknown" are not known).
bool tokenizer_ids_differ(const char *a, const char *b);
// Exits 2 with one line when data made with `data` cannot feed a model of vocab model_vocab made with
// `model`: a token id the model has no row for, or two different known tokenizers.
void model_check_data(const char *model_path, const Tokenizer *model, int model_vocab, const char *data_path, const Tokenizer *data);
// The token a generation starts with (-1: none). bos_flag "auto": for a model imported from Hugging Face (an HF
// directory, or a checkpoint that keeps its metadata) what its tokenizer config says, BOS when add_bos_token (or the
// post-processor's BOS) and else none, as transformers' generate and llama.cpp; for ringgpt's own, BOS where its data
// starts documents with it, else EOS (packed documents each follow one). "on": BOS, "off": none, or a token id.
int64_t model_start_token(const Tokenizer *t, bool imported, const char *bos_flag);
// start (-1: none), then the ids of prompt[0..len) encoded with t. Returns the count; *ids is malloc'd.
size_t model_prompt_ids(const Tokenizer *t, int64_t start, const unsigned char *prompt, size_t len, uint32_t **ids);
// Writes a generated token as text (its bytes; an id-only tokenizer prints "<id>").
void model_write_token(const Tokenizer *t, uint32_t id, FILE *f);
