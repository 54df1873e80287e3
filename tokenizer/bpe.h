// tokenizer/bpe.h — BPE tokenizers of the GPT-2 / Llama family (byte-level and SentencePiece-style): Hugging Face tokenizer.json in, ids out and back.
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

// A loaded tokenizer; read-only after bpe_load, so threads may share it (each with its own BpeEncoder).
typedef struct Bpe Bpe;
// Per-thread encoding state: scratch arrays and a cache of recently seen words.
typedef struct BpeEncoder BpeEncoder;

// Parses a tokenizer.json text with a BPE model, of one of two kinds:
// - byte-level (GPT-2, Llama 3, SmolLM2): a ByteLevel pre-tokenizer, last, after optional Split (Isolated)
//   and Digits steps in a Sequence; the ByteLevel decoder. A byte without a vocab token is dropped (or
//   becomes model.unk_token), as HF does.
// - SentencePiece-style (Llama 2, Mistral, TinyLlama): no ByteLevel; a normalizer of Prepend / Replace
//   (" " -> "▁") and/or a Metaspace pre-tokenizer; model.byte_fallback (<0xNN>), unk_token, fuse_unk;
//   a decoder of Replace, ByteFallback, Fuse, Strip, or Metaspace.
// Either: ignore_merges, added tokens with their normalized / lstrip / rstrip / single_word flags.
// Returns NULL and a one-line message naming the field in err when the file is malformed or uses
// something this encoder does not implement.
Bpe *bpe_from_json(const char *json, size_t len, char *err, size_t err_len);
Bpe *bpe_load(const char *path, char *err, size_t err_len);
void bpe_free(Bpe *b);

uint32_t bpe_vocab_size(const Bpe *b);          // 1 + the largest id (vocab and added tokens)
// The id of an added token with this exact content, or -1.
int64_t bpe_added_id(const Bpe *b, const char *content);
// True when the post-processor puts a special token before every sequence (Llama 3's <|begin_of_text|>).
bool bpe_template_bos(const Bpe *b, int64_t *bos_id);

// True when cutting text at a "line cut" (see tokenizer_line_cut) never changes the ids: byte-level, every
// pre-tokenizer regex is GPT-2's, Llama 3's or Digits' (all end a pre-token there), no add_prefix_space, no
// normalizer, no added token holds a newline or strips space. Lets `prepare` encode one long document on
// several threads.
bool bpe_safe_cuts(const Bpe *b);

BpeEncoder *bpe_encoder_new(const Bpe *b);
void bpe_encoder_free(BpeEncoder *e);
// Appends the ids of text[0..n) to *out, which holds *n_out ids and has room for *cap (both grown as
// needed), and returns the new *n_out. Any bytes encode, UTF-8 or not; added tokens in the text are
// matched as HF does (add_special_tokens=False semantics: no template tokens are added).
size_t bpe_encode(BpeEncoder *e, const unsigned char *text, size_t n, uint32_t **out, size_t *n_out, size_t *cap);

// The bytes a token stands for, as the tokenizer's decoder gives them (byte-level: its bytes; SentencePiece:
// "▁" as " ", <0xNN> as the byte); first: as a text's first token, which the Strip and Metaspace
// decoders give without the space the encoder put before the text. NULL when id is out of range or unused.
// (One difference from HF: <0xNN> bytes that do not make valid UTF-8 come out as they are, not as U+FFFD.)
const unsigned char *bpe_token_bytes(const Bpe *b, uint32_t id, bool first, size_t *len);

// The pre-tokenizer regexes: GPT-2's (HF's ByteLevel with use_regex) and Llama 3's Split (Meta-Llama-3's tokenizer.json).
extern const char BPE_GPT2_PATTERN[], BPE_LLAMA3_PATTERN[];

// ---- training (tokenizer/bpe_train.c) ------------------------------------------------------------
typedef struct {
    uint32_t vocab_size;      // total, special tokens included (>= 256 + specials)
    int threads;              // pre-tokenize and count with this many threads
    const char *pattern;      // "gpt2" (ByteLevel's regex) or "llama3" (a Split regex before ByteLevel)
    uint64_t min_frequency;   // stop when the best pair occurs fewer times than this
    bool quiet;               // no progress lines on stderr
} BpeTrainOptions;

// The special tokens every trained tokenizer has, with fixed ids right after the 256 bytes (as in byte260).
enum { BPE_TRAIN_EOS = 256, BPE_TRAIN_BOS = 257, BPE_TRAIN_PAD = 258, BPE_TRAIN_FIRST_MERGE = 259 };

typedef struct {
    uint64_t bytes, words, unique_words, merges;
    double count_seconds, merge_seconds;
} BpeTrainStats;

// Learns merges over the files (each file split on its special-token text, then pre-tokenized) and
// returns the text of an HF tokenizer.json (caller frees). Fails with a message on unreadable input.
char *bpe_train(const char *const *files, size_t n_files, const BpeTrainOptions *o, BpeTrainStats *stats);
// byte260 (tokenizer/tokenizer.h) as a tokenizer.json (caller frees): token b is byte b (GPT-2's byte -> character
// map), no merges, the four specials as added tokens. HF encodes text to the same ids as the byte tokenizer.
char *bpe_byte260_json(void);
