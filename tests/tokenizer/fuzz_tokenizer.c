// tests/tokenizer/fuzz_tokenizer.c — libFuzzer target: any tokenizer.json text loads or is refused with a message, never a crash; a loaded one encodes text to ids that decode.
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/bpe.h"

static const unsigned char TEXT[] = "Hello world's 12345 \xe4\xb8\xad\xe6\x96\x87  \n\n<|endoftext|> tabs\t\xff\xfe end";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char err[512];
    Bpe *b = bpe_from_json((const char *)data, size, err, sizeof err);
    if (!b) {
        if (!err[0] || strlen(err) >= sizeof err) abort();   // a refusal always says why
        return 0;
    }
    // Fuzzed regexes may backtrack without end (PCRE2's match limit then ends the run with a message),
    // so text is encoded only with the known pre-tokenizers, or with no regex at all (SentencePiece-style).
    if (bpe_safe_cuts(b) || !memmem(data, size, "Regex", 5)) {
        BpeEncoder *e = bpe_encoder_new(b);
        uint32_t *ids = NULL;
        size_t n = 0, cap = 0, len = sizeof TEXT - 1;
        bpe_encode(e, TEXT, len, &ids, &n, &cap);
        for (size_t i = 0; i < n; i++) {   // every id encode yields has bytes to decode to, first in a text or not
            size_t k;
            if (!bpe_token_bytes(b, ids[i], false, &k) || !bpe_token_bytes(b, ids[i], true, &k)) abort();
        }
        free(ids);
        bpe_encoder_free(e);
    }
    bpe_free(b);
    return 0;
}
