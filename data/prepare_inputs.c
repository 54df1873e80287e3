// data/prepare_inputs.c — input files (prepare's and tokenizer train's): found in name order, one kind, binary and empty ones left out, joined into documents.
#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/common.h"
#include "data/prepare_impl.h"
#include "data/prepare_inputs.h"
#include "data/prepare_stream.h"

static void add_file(InputFiles *l, const char *path, size_t root) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->paths = xrealloc(l->paths, l->cap * sizeof *l->paths, "the input list");
        l->root = xrealloc(l->root, l->cap * sizeof *l->root, "the input list");
    }
    l->root[l->n] = root;
    l->paths[l->n++] = xstrdup(path);
}

// True if name matches one of the comma-separated globs of include (NULL: every name).
static bool included(const char *name, const char *include) {
    if (!include) return true;
    char glob[256];
    for (const char *p = include; *p;) {
        size_t n = strcspn(p, ",");
        snprintf(glob, sizeof glob, "%.*s", (int)n, p);
        if (n && fnmatch(glob, name, 0) == 0) return true;
        p += n + (p[n] == ',');
    }
    return false;
}

// named: path was given to input_files_add (always read), not found in a directory; root: the given path's length.
static void collect(InputFiles *l, const char *path, const char *include, bool named, size_t root) {
    struct stat st;
    if (stat(path, &st) != 0) fail_usage("%s: cannot read input (%s); check the path", path, strerror(errno));
    if (!S_ISDIR(st.st_mode)) {
        const char *base = strrchr(path, '/');
        if (named || included(base ? base + 1 : path, include)) add_file(l, path, root);
        return;
    }
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0) fail_io(path, errno, "cannot list directory");
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            size_t k = strlen(path) + strlen(names[i]->d_name) + 2;
            char *child = xmalloc(k, "a path");
            snprintf(child, k, "%s/%s", path, names[i]->d_name);
            collect(l, child, include, false, root);
            free(child);
        }
        free(names[i]);
    }
    free(names);
}

void input_files_add(InputFiles *l, const char *path, const char *include) { collect(l, path, include, true, strlen(path)); }

enum { BINARY_PROBE = 8192 };
// A text input with a NUL byte in its first 8 KiB is binary (a .pyc, an image).
static bool looks_binary(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return false;   // the reader reports it
    unsigned char b[BINARY_PROBE];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    return memchr(b, 0, n) != NULL;
}

// The same, looking at a gzip or zstd file's text (damaged compressed data stops prepare here, before it writes).
static bool looks_binary_decompressed(const char *path) {
    InStream *s = in_open(path);
    unsigned char b[BINARY_PROBE];
    size_t n = in_read(s, b, sizeof b);
    in_close(s);
    return memchr(b, 0, n) != NULL;
}

static bool is_empty(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && st.st_size == 0;   // one that cannot be read is reported when it is read
}

// Removes the files `skip` picks from the list; returns how many, with the first in *example (free it).
static size_t drop_files(InputFiles *l, bool (*skip)(const char *path), char **example) {
    size_t kept = 0, skipped = 0;
    *example = NULL;
    for (size_t i = 0; i < l->n; i++) {
        if (!skip(l->paths[i])) {
            l->root[kept] = l->root[i];
            l->paths[kept++] = l->paths[i];
            continue;
        }
        if (!*example) *example = l->paths[i];
        else free(l->paths[i]);
        skipped++;
    }
    l->n = kept;
    return skipped;
}

void input_files_drop_unreadable(InputFiles *l, InputContent content, InputSkips *skips) {
    *skips = (InputSkips){0};
    if (content != INPUT_TOKENS)
        skips->binary = drop_files(l, content == INPUT_TEXT ? looks_binary : looks_binary_decompressed, &skips->binary_example);
    skips->empty = drop_files(l, is_empty, &skips->empty_example);
}

void input_skips_free(InputSkips *skips) {
    free(skips->binary_example);
    free(skips->empty_example);
    *skips = (InputSkips){0};
}

void input_files_free(InputFiles *l) {
    for (size_t i = 0; i < l->n; i++) free(l->paths[i]);
    free(l->paths);
    free(l->root);
    *l = (InputFiles){0};
}

static uint32_t llmc_magic(const char *path) {
    FILE *f = fopen(path, "rb");
    unsigned char b[4];
    uint32_t m = 0;
    if (f && fread(b, 1, 4, f) == 4) m = rd32(b);
    if (f) fclose(f);
    return m == LLMC_GPT2 || m == LLMC_LLAMA3 ? m : 0;
}

static int parse_kind(const char *s) {
    const int kinds[] = {PREPARE_TEXT, PREPARE_U16, PREPARE_U32, PREPARE_LLMC, PREPARE_JSONL, PREPARE_JSONL_TEXT};
    for (int k = 0; k < 6; k++)
        if (strcmp(s, PREPARE_KIND_NAMES[kinds[k]]) == 0) return kinds[k];
    if (strcmp(s, "auto") == 0) return -1;
    fail_usage("--input-kind must be auto, text, u16, u32, llmc, jsonl or jsonl-text, not '%s'", s);
}

static bool ends_with(const char *s, size_t n, const char *tail) {
    size_t k = strlen(tail);
    return n >= k && memcmp(s + n - k, tail, k) == 0;
}

// *.jsonl, and *.jsonl or *.json compressed (.gz, .zst, .zstd: what datasets' to_json and corpus dumps write).
static bool jsonl_name(const char *path) {
    size_t n = strlen(path);
    const char *const packed[] = {".gz", ".zst", ".zstd"};
    for (int i = 0; i < 3; i++)
        if (ends_with(path, n, packed[i])) {
            n -= strlen(packed[i]);
            return ends_with(path, n, ".jsonl") || ends_with(path, n, ".json");
        }
    return ends_with(path, n, ".jsonl");
}

// A file's kind under auto: llm.c by its magic, JSONL by its name and then its first record, else text.
static int auto_kind(const char *path, uint32_t magic, const char *text_field) {
    if (magic) return PREPARE_LLMC;
    return jsonl_name(path) ? prep_jsonl_kind(path, text_field) : PREPARE_TEXT;
}

// Every input must be the same kind (a JSONL file without records goes with the others).
static PrepareKind input_kind(const PrepareSpec *s, const InputFiles *l, uint32_t *magic) {
    int want = parse_kind(s->input_kind);
    *magic = 0;
    int kind = want;
    for (size_t i = 0; i < l->n; i++) {
        uint32_t m = llmc_magic(l->paths[i]);
        int k = want >= 0 ? want : auto_kind(l->paths[i], m, s->text_field);
        if (k == PREPARE_LLMC && !m) fail_data(l->paths[i], "header at byte 0: not an llm.c shard (magic 20240520 or 20240801)");
        if (k == PREPARE_LLMC && *magic && m != *magic)
            fail_data(l->paths[i], "llm.c magic %u differs from the other inputs' %u; prepare them separately", m, *magic);
        if (kind >= 0 && k >= 0 && k != kind)
            fail_data(l->paths[i], "is %s input but earlier inputs are %s; prepare them separately", PREPARE_KIND_NAMES[k], PREPARE_KIND_NAMES[kind]);
        if (k == PREPARE_LLMC) *magic = m;
        if (k >= 0) kind = k;
    }
    return kind >= 0 ? (PrepareKind)kind : PREPARE_JSONL;
}

// Binary text inputs are skipped (and counted); empty ones too, and when nothing is left, refused.
static void drop_unreadable(PreparePlan *plan, InputFiles *l) {
    InputSkips k;
    input_files_drop_unreadable(l, plan->kind == PREPARE_TEXT ? INPUT_TEXT_COMPRESSED : INPUT_TOKENS, &k);
    plan->skipped_binary = k.binary, plan->binary_example = k.binary_example;
    plan->skipped_empty = k.empty, plan->empty_example = k.empty_example;
    if (!l->n && !k.empty) fail_usage("every input file is binary; give text files (or --input-kind u16|u32|llmc)");
    if (!l->n && !k.binary) fail_usage("every input is empty (0 bytes), e.g. %s; give files with text or tokens in them", k.empty_example);
    if (!l->n)
        fail_usage("every input is binary or empty (%zu and %zu files, e.g. %s and %s); give text files (or --input-kind u16|u32|llmc)",
                   k.binary, k.empty, k.binary_example, k.empty_example);
}

// --doc-per dir: a directory inside an input directory is one document, its files (in the order found) joined;
// a file directly in an input directory, or given itself, is one alone. Each file's label is its path below
// the input directory (a file given itself: its name).
static void join_dirs(PreparePlan *plan, const InputFiles *l) {
    plan->label_at = xmalloc(l->n * sizeof *plan->label_at, "the input list");
    plan->joins = xcalloc(l->n, sizeof *plan->joins, "the input list");
    size_t group = 0;   // the length of the previous file's document's directory, 0 for a file alone
    for (size_t i = 0; i < l->n; i++) {
        const char *path = l->paths[i], *base = strrchr(path, '/');
        size_t root = l->root[i], len = strlen(path);
        if (root == len) root = base ? (size_t)(base - path) : 0;   // given itself: labelled by its name
        if (path[root] == '/') root++;
        plan->label_at[i] = root;
        const char *slash = strchr(path + root, '/');
        size_t dir = slash ? (size_t)(slash - path) + 1 : 0;   // "in/repo/" of "in/repo/src/a.c"
        plan->joins[i] = dir && dir == group && strncmp(path, l->paths[i - 1], dir) == 0;
        group = dir;
    }
}

void prepare_find_inputs(PreparePlan *plan) {
    const PrepareSpec *s = &plan->spec;
    InputFiles l = {0};
    for (int i = 0; i < s->n_inputs; i++) input_files_add(&l, s->inputs[i], s->include);
    if (!l.n) fail_usage("no input files found under the given paths%s", s->include ? " that match --include" : "");
    plan->kind = input_kind(s, &l, &plan->llmc_magic);
    if (strcmp(s->doc_per, "dir") == 0 && plan->kind != PREPARE_TEXT)
        fail_usage("--doc-per dir joins text files into documents; %s input has its own documents: drop --doc-per", PREPARE_KIND_NAMES[plan->kind]);
    drop_unreadable(plan, &l);
    if (strcmp(s->doc_per, "dir") == 0) join_dirs(plan, &l);
    free(l.root);
    plan->files = l.paths, plan->n_files = l.n;
}
