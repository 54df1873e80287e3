// tokenizer/bpe_model.h — a loaded BPE: what bpe.c builds from tokenizer.json, bpe_encode.c runs and bpe_token_bytes reads (data only).
#pragma once
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "tokenizer/bpe.h"
#include "tokenizer/bpe_tables.h"
#include "tokenizer/normalize.h"

enum { MAX_STAGES = 8, MAX_ID = (1 << 22) - 1 };
#define NO_ID UINT32_MAX

typedef enum { STAGE_SPLIT, STAGE_BYTE_LEVEL, STAGE_METASPACE } StageKind;
typedef enum { PREPEND_NEVER, PREPEND_FIRST, PREPEND_ALWAYS } PrependScheme;

// One pre-tokenizer step. Split, Digits and ByteLevel's regex cut a piece into the regex's matches and the
// gaps between them (HF's "Isolated"); ByteLevel may first put a space before it; Metaspace turns " " into
// its replacement, may put one before the piece and may cut before each.
typedef struct {
    StageKind kind;
    pcre2_code *re;            // NULL = no cut (ByteLevel with use_regex false)
    bool prefix_space;         // ByteLevel add_prefix_space: " " before a piece that does not start with one
    char rep[8];               // Metaspace: the replacement of " " (UTF-8, "▁")
    size_t rep_len;
    PrependScheme prepend;     // Metaspace: rep before the text's first piece / every piece / none
    bool split;                // Metaspace: a piece starts at each rep
    bool known;                // cuts at a line cut are safe (see bpe_safe_cuts)
} Stage;

typedef struct {
    char *content;             // as written
    unsigned char *bytes;      // what the text matches: the content, normalized for normalized tokens
    size_t len;
    uint32_t id;
    bool normalized;           // matched in HF's second pass, inside the normalized pieces
    bool lstrip, rstrip;       // the match takes the white space on its left / right
    bool single_word;          // matches only with no word character on either side
} AddedToken;

struct Bpe {
    uint32_t vocab_size;
    bool char_mode;             // no ByteLevel step: the model sees UTF-8 characters (SentencePiece-style), not bytes
    unsigned char **tok;        // (vocab_size) the string the model matches (byte-level: the raw bytes); NULL = unused id
    uint32_t *tok_len;          // (vocab_size)
    unsigned char **dec;        // (vocab_size) the bytes a token decodes to inside a text (== tok in byte-level mode)
    uint32_t *dec_len;          // (vocab_size)
    unsigned char **dec_first;  // (vocab_size) the bytes at the start of a text where they differ (Strip, Metaspace), else NULL
    uint32_t *dec_first_len;    // (vocab_size)
    uint32_t byte_id[256];      // the vocab token of each single byte (byte-level) or one-byte character; NO_ID if none
    bool byte_fallback;         // an unknown character becomes its <0xNN> tokens
    uint32_t fallback_id[256];  // <0xNN>; NO_ID if absent
    uint32_t unk_id;            // model.unk_token's id, NO_ID if none (an unknown character is then dropped, as HF does)
    bool fuse_unk;              // consecutive unknown characters make one unk
    StrTable vocab;             // model.vocab's strings (over tok, tok_len) -> id
    PairTable merges;           // (left id, right id) -> (rank, merged id)
    bool ignore_merges;
    char cut[8];                // SentencePiece-style: a word may be cut before each "▁" (no merge can join across one), "" if not
    size_t cut_len;
    Normalizer norm;
    Stage stages[MAX_STAGES];
    int n_stages;
    AddedToken *added;
    size_t n_added;
    bool added_first[2][256];   // [normalized] a token of that pass starts with this byte
    pcre2_code *word_re;        // a word character (single_word tokens), NULL when none has the flag
    int64_t template_bos;       // post_processor's leading special token, -1 if none
};
