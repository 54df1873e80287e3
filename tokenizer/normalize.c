// tokenizer/normalize.c — GPT-2's byte <-> character map and the normalizer's Prepend and Replace steps.
#include "tokenizer/normalize.h"

#include <stdlib.h>
#include <string.h>

#include "core/common.h"

// Not printable: 0x00..0x20 (U+0100..), 0x7F..0xA0 (U+0121..) and 0xAD (U+0143).
uint32_t byte_level_char(unsigned char b) {
    if (b <= ' ') return 256u + b;
    if (b >= 0x7F && b <= 0xA0) return 256u + 33u + (b - 0x7Fu);
    return b == 0xAD ? 256u + 67u : b;
}

int byte_level_byte(uint32_t c) {
    if (c < 256) return byte_level_char((unsigned char)c) == c ? (int)c : -1;
    return c <= 256 + 32 ? (int)c - 256 : c <= 256 + 66 ? (int)c - 256 - 33 + 0x7F : c == 256 + 67 ? 0xAD : -1;
}

size_t byte_level_utf8(unsigned char b, char out[2]) {
    uint32_t cp = byte_level_char(b);
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    out[0] = (char)(0xC0 | cp >> 6);
    out[1] = (char)(0x80 | (cp & 63));
    return 2;
}

unsigned char *buf_room(TextBuf *b, size_t n) {
    if (b->cap < n) b->p = xrealloc(b->p, b->cap = n + n / 2 + 64, "a pre-token");
    return b->p;
}

bool norm_add(Normalizer *nz, const char *from, const char *to) {
    if (nz->n == MAX_NORM) return false;
    NormStep *st = &nz->step[nz->n++];
    st->prepend = !from;
    st->from = from ? xstrdup(from) : NULL;
    st->from_len = from ? strlen(from) : 0;
    st->to = xstrdup(to);
    st->to_len = strlen(to);
    return true;
}

void norm_free(Normalizer *nz) {
    for (int i = 0; i < nz->n; i++) {
        free(nz->step[i].from);
        free(nz->step[i].to);
    }
}

const unsigned char *norm_apply(const Normalizer *nz, TextBuf bufs[2], const unsigned char *s, size_t n, size_t *out_n) {
    int which = 0;
    for (int k = 0; k < nz->n; k++) {
        const NormStep *st = &nz->step[k];
        if (st->prepend) {
            if (!n) continue;   // HF prepends to a non-empty piece only
            unsigned char *o = buf_room(&bufs[which], n + st->to_len);
            memcpy(o, st->to, st->to_len);
            memcpy(o + st->to_len, s, n);
            s = o;
            n += st->to_len;
        } else {
            size_t growth = st->to_len > st->from_len ? st->to_len - st->from_len : 0, k2 = 0;
            unsigned char *o = buf_room(&bufs[which], n + n / st->from_len * growth + 1);
            for (size_t i = 0; i < n;) {
                if (s[i] == (unsigned char)st->from[0] && i + st->from_len <= n && memcmp(s + i, st->from, st->from_len) == 0) {
                    memcpy(o + k2, st->to, st->to_len);
                    k2 += st->to_len;
                    i += st->from_len;
                } else o[k2++] = s[i++];
            }
            s = o;
            n = k2;
        }
        which ^= 1;
    }
    *out_n = n;
    return s;
}
