// data/tokenizer_cmd.c — `ringgpt tokenizer train|encode|decode`: byte-level BPE from the command line.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/args.h"
#include "core/common.h"
#include "data/tokenizer.h"
#include "train/commands.h"

// The whole of a file, or of stdin when path is NULL or "-".
static unsigned char *read_input(const char *path, size_t *len) {
    if (path && strcmp(path, "-") != 0) return read_whole_file(path, len);
    size_t cap = 1 << 20, n = 0, k;
    unsigned char *buf = xmalloc(cap, "the input");
    while ((k = fread(buf + n, 1, cap - n, stdin)) > 0) {
        n += k;
        if (n == cap) buf = xrealloc(buf, cap *= 2, "the input");
    }
    if (ferror(stdin)) fail_data("stdin", "read failed (%s)", strerror(errno));
    *len = n;
    return buf;
}

static void load(const char *path, Tokenizer *t) {
    char err[512];
    if (!path) fail_usage("needs --tokenizer FILE (a tokenizer.json)");
    if (tokenizer_load(path, t, err, sizeof err) != 0) fail("%s", err);
}

static int cmd_encode(int argc, char **argv) {
    const char *tok_path = NULL;
    bool count = false;
    ArgSpec specs[] = {
        {"--tokenizer", ARG_STRING, &tok_path, "tokenizer.json (byte-level BPE, e.g. from `ringgpt tokenizer train`)"},
        {"--count", ARG_BOOL, &count, "print only the number of tokens and the bytes per token"},
    };
    ArgCommand cmd = {"tokenizer encode", "ringgpt tokenizer encode --tokenizer FILE [TEXT_FILE]",
                      "Prints the token ids of a text file (stdin when none is given), separated by spaces. Special-token text\n"
                      "such as <|endoftext|> becomes its id; no BOS or EOS is added. Any bytes encode, UTF-8 or not."};
    const char *in[1];
    int n_in = args_parse(&cmd, specs, 2, argc, argv, in, 1);
    Tokenizer t;
    load(tok_path, &t);
    size_t len, n = 0, cap = 0;
    unsigned char *text = read_input(n_in ? in[0] : NULL, &len);
    uint32_t *ids = NULL;
    TokEncoder e = tokenizer_encoder(&t);
    tokenizer_encode(&e, text, len, &ids, &n, &cap);
    if (count) printf("%zu tokens, %.3f bytes per token\n", n, n ? (double)len / (double)n : 0.0);
    else {
        for (size_t i = 0; i < n; i++) printf(i ? " %u" : "%u", ids[i]);
        printf("\n");
    }
    if (fflush(stdout) != 0) fail("writing the ids failed (%s)", strerror(errno));
    tokenizer_encoder_free(&e);
    tokenizer_free(&t);
    free(ids);
    free(text);
    return 0;
}

static int cmd_decode(int argc, char **argv) {
    const char *tok_path = NULL;
    ArgSpec specs[] = {{"--tokenizer", ARG_STRING, &tok_path, "tokenizer.json the ids were made with"}};
    ArgCommand cmd = {"tokenizer decode", "ringgpt tokenizer decode --tokenizer FILE [IDS_FILE]",
                      "Reads token ids separated by white space (stdin when no file is given) and writes the bytes they\n"
                      "stand for to stdout, special tokens as their text."};
    const char *in[1];
    int n_in = args_parse(&cmd, specs, 1, argc, argv, in, 1);
    Tokenizer t;
    load(tok_path, &t);
    const char *name = n_in ? in[0] : "stdin";
    size_t len;
    char *text = (char *)read_input(n_in ? in[0] : NULL, &len);
    text = xrealloc(text, len + 1, "the input");
    text[len] = 0;
    uint64_t k = 0;
    for (char *p = text;; k++) {
        while (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r') p++;
        if (!*p) break;
        char *end;
        errno = 0;
        unsigned long long id = strtoull(p, &end, 10);
        if (end == p || *p == '-' || errno || (*end && *end != ' ' && *end != '\n' && *end != '\t' && *end != '\r'))
            fail_data(name, "id %" PRIu64 " (byte %td) is not a non-negative integer", k, p - text);
        size_t n;
        const unsigned char *bytes = id < t.vocab_size ? tokenizer_token(&t, (uint32_t)id, &n) : NULL;
        if (!bytes) fail_data(name, "id %" PRIu64 " is %llu: not a token of this tokenizer (vocab size %u)", k, id, t.vocab_size);
        if (n && fwrite(bytes, 1, n, stdout) != n) fail("writing the text failed (%s)", strerror(errno));
        p = end;
    }
    if (fflush(stdout) != 0) fail("writing the text failed (%s)", strerror(errno));
    tokenizer_free(&t);
    free(text);
    return 0;
}

static int cmd_info(int argc, char **argv) {
    const char *tok_path = NULL;
    ArgSpec specs[] = {{"--tokenizer", ARG_STRING, &tok_path, "tokenizer.json"}};
    ArgCommand cmd = {"tokenizer info", "ringgpt tokenizer info --tokenizer FILE",
                      "Checks a tokenizer.json and prints its id, vocab size and the special ids ringgpt takes from it."};
    args_parse(&cmd, specs, 1, argc, argv, NULL, 0);
    Tokenizer t;
    load(tok_path, &t);
    printf("%s: %s, vocab %u, eos %" PRId64 ", bos %" PRId64 ", pad %" PRId64 ", documents start with bos: %s\n", tok_path, t.id,
           t.vocab_size, t.eos, t.bos, t.pad, t.add_bos ? "yes" : "no");
    tokenizer_free(&t);
    return 0;
}

int cmd_tokenizer(int argc, char **argv) {
    static const char *usage = "usage: ringgpt tokenizer train|encode|decode|info [flags]   (ringgpt tokenizer SUB --help)";
    if (argc < 2) fail_usage("%s", usage);
    if (strcmp(argv[1], "encode") == 0) return cmd_encode(argc - 1, argv + 1);
    if (strcmp(argv[1], "decode") == 0) return cmd_decode(argc - 1, argv + 1);
    if (strcmp(argv[1], "info") == 0) return cmd_info(argc - 1, argv + 1);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        printf("%s\n  encode   text -> token ids\n  decode   token ids -> text\n  info     check a tokenizer.json, print its special ids\n", usage);
        return 0;
    }
    fail_usage("unknown tokenizer subcommand '%s'; %s", argv[1], usage);
}
