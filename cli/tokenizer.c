// cli/tokenizer.c — `ringgpt tokenizer train|encode|decode`: byte-level BPE from the command line.
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/args.h"
#include "core/common.h"
#include "data/bpe.h"
#include "data/prepare_inputs.h"
#include "data/tokenizer.h"
#include "cli/commands.h"

// The whole of a file, or of stdin when path is NULL or "-".
static unsigned char *read_input(const char *path, size_t *len) {
    if (path && strcmp(path, "-") != 0) return read_whole_file(path, len);
    size_t cap = 1 << 20, n = 0, k;
    unsigned char *buf = xmalloc(cap, "the input");
    while ((k = fread(buf + n, 1, cap - n, stdin)) > 0) {
        n += k;
        if (n == cap) buf = xrealloc(buf, cap *= 2, "the input");
    }
    if (ferror(stdin)) fail_io("stdin", errno, "read failed");
    *len = n;
    return buf;
}

static void load(const char *path, Tokenizer *t) {
    char err[512];
    if (!path) fail_usage("needs --tokenizer FILE (a tokenizer.json)");
    if (tokenizer_load(path, t, err, sizeof err) != 0) fail_usage("%s", err);   // a file that is not a tokenizer: bad input
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
        const unsigned char *bytes = id >= t.vocab_size ? NULL
                                     : k ? tokenizer_token(&t, (uint32_t)id, &n)
                                         : tokenizer_first_token(&t, (uint32_t)id, &n);   // a text's first token: without the space put first
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

// "N binary file(s), e.g. PATH" for the kinds skipped, joined by " and ".
static void describe_skips(const InputSkips *k, char *buf, size_t size) {
    int n = 0;
    if (k->binary)
        n = snprintf(buf, size, "%zu binary file%s (a NUL byte in the first 8 KiB), e.g. %s", k->binary, k->binary == 1 ? "" : "s",
                     k->binary_example);
    if (k->empty && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "%s%zu empty file%s, e.g. %s", n ? " and " : "", k->empty, k->empty == 1 ? "" : "s",
                 k->empty_example);
}

// The text files under the inputs (as `prepare` finds them), binary and empty ones left out and said so; none
// left is refused before anything is counted.
static InputFiles find_text(const char *const *in, int n_in, const char *include, bool quiet) {
    InputFiles l = {0};
    for (int i = 0; i < n_in; i++) input_files_add(&l, in[i], include);
    if (!l.n) fail_usage("no input files found under the given paths%s", include ? " that match --include" : "");
    InputSkips k;
    input_files_drop_unreadable(&l, INPUT_TEXT, &k);
    char skipped[9000] = "";
    describe_skips(&k, skipped, sizeof skipped);
    if (!l.n) fail_usage("no text to learn from: %s; give text files, or --include GLOBS to pick them", skipped);
    if (!quiet && k.binary)
        fprintf(stderr, "tokenizer train: skipped %zu binary file%s (a NUL byte in the first 8 KiB), e.g. %s; --include GLOBS picks "
                "the files to read\n", k.binary, k.binary == 1 ? "" : "s", k.binary_example);
    if (!quiet && k.empty) fprintf(stderr, "tokenizer train: skipped %zu empty file%s, e.g. %s\n", k.empty, k.empty == 1 ? "" : "s", k.empty_example);
    input_skips_free(&k);
    return l;
}

// The tokenizer.json to write: its directory must exist and take files, and the path must not be a directory —
// checked before the text is read and counted.
static void check_out_file(const char *out) {
    char dir[4200];
    path_dirname(out, dir, sizeof dir);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        fail_usage("--out %s: the directory %s does not exist; create it first, or give another path", out, dir);
    if (access(dir, W_OK) != 0) fail_io(dir, errno, "--out %s: cannot write into the directory", out);
    if (stat(out, &st) == 0 && S_ISDIR(st.st_mode)) fail_usage("--out %s is a directory; give the path of a .json file", out);
}

static const char *g_tmp_out;   // the .tmp of the tokenizer being written, removed if the process fails
static void remove_tmp_out(void) {
    if (g_tmp_out) unlink(g_tmp_out);
}

static int cmd_train_bpe(int argc, char **argv) {
    const char *out = NULL, *pattern = "gpt2", *include = NULL;
    int64_t vocab = 16384, min_freq = 2;
    int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    bool quiet = false;
    ArgSpec specs[] = {
        {"--out", ARG_STRING, &out, "the tokenizer.json to write (HF tokenizers loads it)"},
        {"--vocab", ARG_I64, &vocab, "vocab size: 256 bytes + 3 special tokens + merges"},
        {"--threads", ARG_INT, &threads, "threads that pre-tokenize and count the text"},
        {"--include", ARG_STRING, &include, "comma-separated globs of the file names to read in input directories ('*.txt,*.md')",
         .dflt = "every file but dotfiles, binary and empty files"},
        {"--pattern", ARG_STRING, &pattern, "pre-tokenizer: gpt2 (ByteLevel's regex) or llama3 (Llama 3's Split regex)"},
        {"--min-frequency", ARG_I64, &min_freq, "stop early when the best pair occurs fewer times"},
        {"--quiet", ARG_BOOL, &quiet, "no progress lines"},
    };
    ArgCommand cmd = {"tokenizer train", "ringgpt tokenizer train --vocab N --out tokenizer.json [--include GLOBS] INPUT...",
                      "Learns a byte-level BPE from text files (directories are read recursively; binary and empty files are\n"
                      "skipped, as `prepare` does). Special tokens, with fixed ids after the 256 bytes: <|endoftext|> 256 (EOS),\n"
                      "<|begin_of_text|> 257 (BOS), <|pad|> 258; their text in the input is not learned from. Writes\n"
                      "tokenizer.json (tmp + rename)."};
    const char *in[4096];
    int n_in = args_parse(&cmd, specs, sizeof specs / sizeof specs[0], argc, argv, in, 4096);
    if (!out) fail_usage("tokenizer train needs --out FILE (see `ringgpt tokenizer train --help`)");
    if (!n_in) fail_usage("tokenizer train needs input text files or directories");
    if (vocab < BPE_TRAIN_FIRST_MERGE || vocab > (1 << 24)) fail_usage("--vocab must be in %d..2^24, not %" PRId64, BPE_TRAIN_FIRST_MERGE, vocab);
    args_check_threads(threads);
    if (min_freq < 1) fail_usage("--min-frequency must be at least 1");
    check_out_file(out);
    InputFiles files = find_text(in, n_in, include, quiet);
    BpeTrainOptions o = {.vocab_size = (uint32_t)vocab, .threads = threads, .pattern = pattern, .min_frequency = (uint64_t)min_freq, .quiet = quiet};
    BpeTrainStats st;
    char *json = bpe_train((const char *const *)files.paths, files.n, &o, &st);
    size_t len = strlen(out) + 8;
    char *tmp = xmalloc(len, "a path");
    snprintf(tmp, len, "%s.tmp", out);
    g_tmp_out = tmp;   // a failed write leaves no .tmp
    atexit(remove_tmp_out);
    FILE *f = xfopen(tmp, "wb");
    xfwrite(json, strlen(json), f, tmp);
    xfclose(f, tmp);
    if (rename(tmp, out) != 0) fail("cannot rename %s to %s (%s)", tmp, out, strerror(errno));
    g_tmp_out = NULL;
    printf("tokenizer train: %s: %u tokens (%" PRIu64 " merges) from %.1f MB in %zu file%s (%" PRIu64 " words, %" PRIu64
           " distinct); counting %.1f s (%d threads), merging %.1f s\n",
           out, (uint32_t)(BPE_TRAIN_FIRST_MERGE + st.merges), st.merges, st.bytes / 1e6, files.n, files.n == 1 ? "" : "s", st.words,
           st.unique_words, st.count_seconds, threads, st.merge_seconds);
    input_files_free(&files);
    free(tmp);
    free(json);
    return 0;
}

int cmd_tokenizer(int argc, char **argv) {
    static const char *usage = "usage: ringgpt tokenizer train|encode|decode|info [flags]   (ringgpt tokenizer SUB --help)";
    if (argc < 2) fail_usage("%s", usage);
    if (strcmp(argv[1], "train") == 0) return cmd_train_bpe(argc - 1, argv + 1);
    if (strcmp(argv[1], "encode") == 0) return cmd_encode(argc - 1, argv + 1);
    if (strcmp(argv[1], "decode") == 0) return cmd_decode(argc - 1, argv + 1);
    if (strcmp(argv[1], "info") == 0) return cmd_info(argc - 1, argv + 1);
    if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
        printf("%s\n  train    text files -> tokenizer.json\n  encode   text -> token ids\n  decode   token ids -> text\n  info     check a tokenizer.json, print its special ids\n", usage);
        return 0;
    }
    fail_usage("unknown tokenizer subcommand '%s'; %s", argv[1], usage);
}
