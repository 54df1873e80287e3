// data/haystack.c — real text for passkey needles to hide in: loaded from files or a dataset, kept apart from the text a model is evaluated on, encoded in a model's tokens.
#include "data/haystack.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "core/common.h"
#include "data/source.h"
#include "tokenizer/tokenizer.h"

static void append(Haystack *h, uint64_t *cap, const unsigned char *b, size_t n) {
    if (h->n + n > *cap) {
        *cap = (h->n + n) * 2;
        h->tok = xrealloc(h->tok, *cap * sizeof *h->tok, "the haystack");
    }
    for (size_t i = 0; i < n; i++) h->tok[h->n++] = b[i];
}

static void load_file(Haystack *h, uint64_t *cap, const char *path) {
    size_t n;
    unsigned char *b = read_whole_file(path, &n);
    append(h, cap, b, n);
    free(b);
    h->files++;
}

// Regular files under dir in name order, recursively (no dotfiles, no links).
static void load_dir(Haystack *h, uint64_t *cap, const char *dir) {
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    if (n < 0) fail_usage("--haystack %s: cannot list the directory (%s); check the path", dir, strerror(errno));
    for (int i = 0; i < n; i++) {
        char path[4200];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        if (names[i]->d_name[0] != '.' && lstat(path, &st) == 0) {
            if (S_ISREG(st.st_mode)) load_file(h, cap, path);
            else if (S_ISDIR(st.st_mode)) load_dir(h, cap, path);
        }
        free(names[i]);
    }
    free(names);
}

// A token's text: a byte-level dataset's byte, a BPE dataset's token's bytes (its tokenizer.json); special
// tokens (EOS, BOS, PAD, any id without text) as a space.
static void append_token(Haystack *h, uint64_t *cap, const Tokenizer *t, uint32_t id) {
    size_t len = 1;
    unsigned char byte = ' ';
    const unsigned char *b = &byte;
    if (!t->bpe && id < 256) byte = (unsigned char)id;
    else if (t->bpe && id != t->eos && id != t->bos && id != t->pad && !(b = tokenizer_token(t, id, &len))) b = &byte, len = 1;
    append(h, cap, b, len);
}

// Every token of a dataset's training split as text (append_token): a byte-level dataset, or one made with
// --tokenizer (its tokenizer.json reads the ids back).
static void load_dataset(Haystack *h, uint64_t *cap, const char *path) {
    DataOptions o = {.seq_len = 1, .batch = 1, .seed = 1, .dp = 1, .sp = 1, .no_shuffle = true};
    DataSource *d = data_open(path, &o, false);
    const Tokenizer *t = data_tokenizer(d);
    if (data_vocab_size(d) != TOK_VOCAB_SIZE && !t->bpe)
        fail_usage("--haystack %s: its tokens (tokenizer %s, vocab %u) have no tokenizer.json to read them back as text; give text files, "
                   "or a dataset made with --tokenizer", path, t->id, data_vocab_size(d));
    uint64_t tokens = data_num_samples(d);
    data_close(d);
    o.seq_len = (int)(tokens > (1u << 20) ? 1u << 20 : tokens);
    d = data_open(path, &o, false);
    t = data_tokenizer(d);
    Batch b = batch_alloc(1, o.seq_len);
    for (uint64_t done = 0; done + (uint64_t)o.seq_len <= tokens; done += (uint64_t)o.seq_len) {
        data_next(d, &b);
        for (int i = 0; i < o.seq_len; i++) append_token(h, cap, t, (uint32_t)b.tokens[i]);
    }
    batch_free(&b);
    data_close(d);
    h->files = 1;
}

void haystack_load(const char *path, Haystack *h) {
    memset(h, 0, sizeof *h);
    uint64_t cap = 0;
    struct stat st;
    if (stat(path, &st) != 0) fail_usage("--haystack %s: cannot open (%s); check the path", path, strerror(errno));
    char manifest[4200];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", path);
    struct stat mst;
    if (S_ISDIR(st.st_mode) && stat(manifest, &mst) == 0) load_dataset(h, &cap, path);
    else if (S_ISDIR(st.st_mode)) load_dir(h, &cap, path);
    else load_file(h, &cap, path);
    if (h->n == 0) fail_usage("--haystack %s holds no text; give text files or a dataset", path);
    unsigned char *bytes = xmalloc(h->n, "the haystack");
    for (uint64_t i = 0; i < h->n; i++) bytes[i] = (unsigned char)h->tok[i];
    h->crc = (uint32_t)crc32(0L, bytes, (uInt)h->n);
    h->bytes = h->n;
    free(bytes);
}

void haystack_encode(Haystack *h, const Tokenizer *t) {
    if (!t || !t->bpe) return;
    unsigned char *bytes = xmalloc(h->n, "the haystack");
    for (uint64_t i = 0; i < h->n; i++) bytes[i] = (unsigned char)h->tok[i];
    TokEncoder enc = tokenizer_encoder(t);
    uint32_t *ids = NULL;
    size_t n = 0, cap = 0;
    tokenizer_encode(&enc, bytes, (size_t)h->n, &ids, &n, &cap);
    tokenizer_encoder_free(&enc);
    free(bytes);
    free(h->tok);
    h->tok = ids;
    h->n = n;
}

void haystack_free(Haystack *h) {
    free(h->tok);
    memset(h, 0, sizeof *h);
}

// The text in the form windows are compared in: lowercase, whitespace runs as one space. pos[i] is where
// byte i of the normalised text came from.
static unsigned char *normalise(const Haystack *h, uint64_t *n, uint64_t **pos) {
    unsigned char *t = xmalloc(h->n + 1, "the haystack");
    *pos = xmalloc((h->n + 1) * sizeof **pos, "the haystack");
    uint64_t m = 0;
    for (uint64_t i = 0; i < h->n; i++) {
        unsigned char c = (unsigned char)h->tok[i];
        if (isspace(c)) {
            if (m > 0 && t[m - 1] == ' ') continue;
            c = ' ';
        }
        (*pos)[m] = i;
        t[m++] = (unsigned char)tolower(c);
    }
    *n = m;
    return t;
}

static uint64_t window_hash(const unsigned char *w) {
    uint64_t x = 0xcbf29ce484222325ull;
    for (int i = 0; i < HAYSTACK_WINDOW; i++) x = (x ^ w[i]) * 0x100000001b3ull;
    return x | 1;   // 0 marks an empty slot
}

void haystack_check_apart(const Haystack *train, const char *train_path, const Haystack *held, const char *held_path) {
    uint64_t nh, nt, *ph, *pt;
    unsigned char *h = normalise(held, &nh, &ph), *t = normalise(train, &nt, &pt);
    uint64_t slots = 1;
    while (slots < 2 * (nh + 1)) slots *= 2;
    uint64_t *set = xcalloc(slots, sizeof *set, "the held-out windows");
    for (uint64_t i = 0; i + HAYSTACK_WINDOW <= nh; i++) {
        uint64_t x = window_hash(h + i), s = x & (slots - 1);
        while (set[s] && set[s] != x) s = (s + 1) & (slots - 1);
        set[s] = x;
    }
    for (uint64_t i = 0; i + HAYSTACK_WINDOW <= nt; i++) {
        uint64_t x = window_hash(t + i), s = x & (slots - 1);
        while (set[s] && set[s] != x) s = (s + 1) & (slots - 1);
        if (!set[s]) continue;
        char passage[41];
        snprintf(passage, sizeof passage, "%.40s", (const char *)t + i);
        for (char *c = passage; *c; c++) *c = isprint((unsigned char)*c) ? *c : ' ';
        fail_usage("the haystack %s shares text with the held-out %s (from byte %" PRIu64 ": \"%s...\"): a model trained on it would be "
                   "scored on text it has seen; remove the shared files from one of them", train_path, held_path, pt[i], passage);
    }
    free(set);
    free(h), free(ph), free(t), free(pt);
}
