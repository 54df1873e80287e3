// data/tokenizer.c — byte-level tokenizer: a token is a byte; ids 256.. are special tokens.
#include "data/tokenizer.h"

#include <stdio.h>

size_t tok_encode(const unsigned char *text, size_t n, int32_t *out) {
    for (size_t i = 0; i < n; i++) out[i] = text[i];
    return n;
}

int tok_decode(int32_t token, char *buf) {
    static const char *SPECIAL[] = {"<eos>", "<bos>", "<pad>", "<sep>"};
    if (token >= 0 && token < 256) {
        buf[0] = (char)token;
        buf[1] = 0;
        return 1;
    }
    if (token >= TOK_EOS && token < TOK_VOCAB_SIZE) return snprintf(buf, 8, "%s", SPECIAL[token - TOK_EOS]);
    return snprintf(buf, 8, "<?>");
}
