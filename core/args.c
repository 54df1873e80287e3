// core/args.c — flag parsing shared by all subcommands: `--flag value` or `--flag=value`, typed, checked.
#include "core/args.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/common.h"
#include "core/json_strict.h"

// The default after a flag's help, in words (" (default 6)"), into buf; empty when there is none to show.
static void default_text(const ArgSpec *s, char *buf, size_t n) {
    buf[0] = 0;
    if (s->dflt) {   // one default per line: the words replace the sentinel's value
        snprintf(buf, n, strcmp(s->dflt, "preset") == 0 ? " (preset)" : " (default: %s)", s->dflt);
        return;
    }
    switch (s->kind) {
    case ARG_INT: snprintf(buf, n, " (default %d)", *(int *)s->dst); break;
    case ARG_I64: snprintf(buf, n, " (default %" PRId64 ")", *(int64_t *)s->dst); break;
    case ARG_FLOAT: snprintf(buf, n, " (default %g)", *(float *)s->dst); break;
    case ARG_DOUBLE: snprintf(buf, n, " (default %g)", *(double *)s->dst); break;
    case ARG_STRING:
        if (*(const char **)s->dst) snprintf(buf, n, " (default %s)", *(const char **)s->dst);
        break;
    case ARG_BOOL:
        if (*(bool *)s->dst) snprintf(buf, n, " (default on; =false turns it off)");
        break;
    case ARG_HEADING: break;
    }
}

enum { HELP_WIDTH = 100, HELP_INDENT = 27 };   // columns of a --help line; where a flag's text starts

// text from column `col` on, broken at spaces (and at its own newlines) so that no line passes HELP_WIDTH; each
// later line starts at column `indent`.
static void print_wrapped(const char *text, int col, int indent) {
    const char *p = text;
    while (*p) {
        int room = HELP_WIDTH - col, n = (int)strcspn(p, "\n");
        if (n > room) {
            int cut = room;
            while (cut > 0 && p[cut] != ' ') cut--;
            if (cut == 0) cut = (int)strcspn(p, " \n");   // one word longer than the line: it stays whole
            n = cut;
        }
        printf("%.*s\n", n, p);
        p += n;
        if (*p == '\n') p++;
        else
            while (*p == ' ') p++;
        if (*p) printf("%*s", indent, ""), col = indent;
    }
}

static void print_flag(const ArgSpec *s) {
    const char *meta = s->kind == ARG_BOOL ? "" : s->kind == ARG_STRING ? " S" : " N";
    char flag[64], dflt[256], text[1024];
    snprintf(flag, sizeof flag, "%s%s", s->name, meta);
    default_text(s, dflt, sizeof dflt);
    snprintf(text, sizeof text, "%s%s", s->help, dflt);
    int col = printf("  %-*s", HELP_INDENT - 3, flag);
    if (col >= HELP_INDENT) printf("\n%*s", HELP_INDENT, ""), col = HELP_INDENT;
    else col += printf(" ");
    print_wrapped(text, col, HELP_INDENT);
}

static _Noreturn void print_help(const ArgCommand *cmd, const ArgSpec *specs, int n) {
    printf("usage: ");
    print_wrapped(cmd->usage, 7, 9);
    printf("\n");
    char *summary = xstrdup(cmd->summary);   // reflowed: a single newline is a space, a blank line a paragraph
    for (char *c = summary; *c; c++)
        if (c[0] == '\n' && c[1] != '\n' && (c == summary || c[-1] != '\n')) c[0] = ' ';
    print_wrapped(summary, 0, 0);
    free(summary);
    bool grouped = n > 0 && specs[0].kind == ARG_HEADING;
    if (!grouped) printf("\nflags:\n");
    for (const ArgSpec *s = specs; s < specs + n; s++) {
        if (s->kind == ARG_HEADING) printf("\n%s:\n", s->name);
        else print_flag(s);
    }
    if (grouped) printf("\nhelp:\n");
    printf("  %-*s this text\n", HELP_INDENT - 3, "--help");
    bool counts = false;
    for (const ArgSpec *s = specs; s < specs + n; s++) counts |= s->kind == ARG_INT || s->kind == ARG_I64;
    if (counts) printf("\nAn integer N may end in K or M (x 1024, x 1024²): 4K = 4096, 1M = 1048576.\n");
    exit(0);
}

bool args_parse_int(const char *text, int64_t lo, int64_t hi, int64_t *out) {
    char *end = NULL;
    errno = 0;
    long long x = strtoll(text, &end, 10), scale = 1;
    if (errno || end == text || (*text != '-' && *text != '+' && (*text < '0' || *text > '9'))) return false;
    if (*end == 'K' || *end == 'k') scale = 1024, end++;
    else if (*end == 'M' || *end == 'm') scale = 1024 * 1024, end++;
    if (*end || x > INT64_MAX / scale || x < INT64_MIN / scale || x * scale < lo || x * scale > hi) return false;
    *out = x * scale;
    return true;
}

static void parse_value(const ArgCommand *cmd, ArgSpec *s, const char *v) {
    char *end = NULL;
    int64_t i;
    errno = 0;
    switch (s->kind) {
    case ARG_INT:
    case ARG_I64:
        if (!args_parse_int(v, s->kind == ARG_INT ? -INT32_MAX : INT64_MIN, s->kind == ARG_INT ? INT32_MAX : INT64_MAX, &i))
            fail_usage("%s expects an integer (K or M may end it: 4K = 4096, 1M = 1048576), got '%s' (see "
                       "`ringgpt %s --help`)", s->name, v, cmd->command);
        if (s->kind == ARG_INT) *(int *)s->dst = (int)i;
        else *(int64_t *)s->dst = i;
        break;
    case ARG_FLOAT:
    case ARG_DOUBLE: {
        double x = strtod(v, &end);
        if (errno || *end || end == v || !isfinite(x) || (s->kind == ARG_FLOAT && !isfinite((float)x)))
            fail_usage("%s expects a number, got '%s' (see `ringgpt %s --help`)", s->name, v, cmd->command);
        if (s->kind == ARG_FLOAT) *(float *)s->dst = (float)x;
        else *(double *)s->dst = x;
        break;
    }
    case ARG_STRING: *(const char **)s->dst = v; break;
    case ARG_BOOL:
    case ARG_HEADING: break;
    }
}

// Edit distance of a and the first nb bytes of b (insertions, deletions, substitutions), capped at 9.
static int distance(const char *a, const char *b, size_t nb) {
    size_t na = strlen(a);
    if (na > 63 || nb > 63) return 9;
    int row[64];
    for (size_t j = 0; j <= nb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= na; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= nb; j++) {
            int up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            diag = up, row[j] = best;
        }
    }
    return row[nb] < 9 ? row[nb] : 9;
}

// The flag nearest to the len bytes of word ("--seq-lne"): within 2 edits, or NULL.
static const char *nearest_flag(const ArgSpec *specs, int n, const char *word, size_t len) {
    const char *best = NULL;
    int best_d = 3;
    for (const ArgSpec *s = specs; s < specs + n; s++) {
        if (s->kind == ARG_HEADING) continue;
        int d = distance(s->name, word, len);
        if (d < best_d) best = s->name, best_d = d;
    }
    return best;
}

// Where a flag the command no longer has went (ArgCommand.moved), or NULL; name is "--flag" or "flag", len bytes.
static const char *moved_to(const ArgCommand *cmd, const char *name, size_t len) {
    char bare[64];
    if (!cmd->moved) return NULL;
    if (len >= 2 && strncmp(name, "--", 2) == 0) name += 2, len -= 2;
    snprintf(bare, sizeof bare, "%.*s", (int)len, name);
    return cmd->moved(bare);
}

static _Noreturn void unknown_flag(const ArgCommand *cmd, const ArgSpec *specs, int n, const char *a, size_t len) {
    const char *went = moved_to(cmd, a, len);
    if (went) fail_usage("%.*s is not a flag of `ringgpt %s` any more: %s", (int)len, a, cmd->command, went);
    const char *near = nearest_flag(specs, n, a, len);
    char hint[96] = "";
    if (near) snprintf(hint, sizeof hint, "; did you mean %s?", near);
    fail_usage("unknown flag '%.*s' for `ringgpt %s`%s (see `ringgpt %s --help`)", (int)len, a, cmd->command, hint,
               cmd->command);
}

int args_parse(const ArgCommand *cmd, ArgSpec *specs, int n, int argc, char **argv, const char **positional,
               int max_positional) {
    int npos = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) print_help(cmd, specs, n);
        if (strncmp(a, "--", 2) != 0) {
            if (npos >= max_positional)
                fail_usage("unexpected argument '%s' for `ringgpt %s` (see `ringgpt %s --help`)", a, cmd->command,
                           cmd->command);
            positional[npos++] = a;
            continue;
        }
        const char *eq = strchr(a, '=');
        size_t len = eq ? (size_t)(eq - a) : strlen(a);
        ArgSpec *s = NULL;
        for (int k = 0; k < n; k++)
            if (specs[k].kind != ARG_HEADING && strlen(specs[k].name) == len && strncmp(specs[k].name, a, len) == 0) s = &specs[k];
        if (!s) unknown_flag(cmd, specs, n, a, len);
        s->seen = true;
        if (s->kind == ARG_BOOL) {
            if (eq) {
                if (strcmp(eq + 1, "1") == 0 || strcmp(eq + 1, "true") == 0) *(bool *)s->dst = true;
                else if (strcmp(eq + 1, "0") == 0 || strcmp(eq + 1, "false") == 0) *(bool *)s->dst = false;
                else fail_usage("%s expects true or false, got '%s'", s->name, eq + 1);
            } else {
                *(bool *)s->dst = true;
            }
            continue;
        }
        const char *v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (!v || (!eq && strncmp(v, "--", 2) == 0))
            fail_usage("%s needs a value (see `ringgpt %s --help`)", s->name, cmd->command);
        parse_value(cmd, s, v);
    }
    return npos;
}

bool args_seen(const ArgSpec *specs, int n, const char *name) {
    const ArgSpec *s = args_find((ArgSpec *)specs, n, name);
    return s && s->seen;
}

ArgSpec *args_find(ArgSpec *specs, int n, const char *name) {
    for (ArgSpec *s = specs; s < specs + n; s++)
        if (s->kind != ARG_HEADING && strcmp(s->name, name) == 0) return s;
    return NULL;
}

static bool in_list(const char *name, const char *const *list) {
    for (; list && *list; list++)
        if (strcmp(*list, name) == 0) return true;
    return false;
}

// A string flag from a config file lives as long as the process (the flag tables point at it, beside argv's);
// the list keeps it reachable.
static char **g_kept;
static size_t g_n_kept;

static const char *keep_string(const char *s) {
    g_kept = xrealloc(g_kept, (g_n_kept + 1) * sizeof *g_kept, "config strings");
    return g_kept[g_n_kept++] = xstrdup(s);
}

void args_free_strings(void) {
    for (size_t i = 0; i < g_n_kept; i++) free(g_kept[i]);
    free(g_kept);
    g_kept = NULL, g_n_kept = 0;
}

// A flag's value from a config file, checked but not yet stored.
typedef union {
    int64_t i;
    double x;
    const char *s;
    bool b;
} ArgValue;

// An integer key: a JSON number that is whole and fits, or a string the command line takes ("4K", "1M").
static int json_int(const ArgCommand *cmd, const ArgSpec *s, const cJSON *v, const char *path, ArgValue *out, char *err,
                    size_t errn) {
    const char *key = s->name + 2;
    int64_t lo = s->kind == ARG_INT ? -INT32_MAX : INT64_MIN, hi = s->kind == ARG_INT ? INT32_MAX : INT64_MAX;
    if (cJSON_IsString(v)) {
        char shown[64];
        if (args_parse_int(v->valuestring, lo, hi, &out->i)) return 0;
        return snprintf(err, errn, "%s: \"%s\" must be an integer: a number, or a string with K or M (\"4K\", \"1M\"); "
                        "got \"%s\"", path, key, json_printable(v->valuestring, shown, sizeof shown)), -1;
    }
    if (!cJSON_IsNumber(v))
        return snprintf(err, errn, "%s: \"%s\" must be a number (see `ringgpt %s --help`)", path, key, cmd->command), -1;
    double x = v->valuedouble;
    if (!isfinite(x)) return snprintf(err, errn, "%s: \"%s\" must be a finite number (got %g)", path, key, x), -1;
    if (x != floor(x) || x < (double)lo || x >= (double)hi + 1.0)
        return snprintf(err, errn, "%s: \"%s\" must be an integer (got %g)", path, key, x), -1;
    out->i = (int64_t)x;
    return 0;
}

// One key of a config file checked against its flag: the value's JSON type must fit the flag's kind, and its value
// the flag's range (as on the command line: a finite number, an integer that fits). Returns 0, or -1 with err.
static int json_value(const ArgCommand *cmd, const ArgSpec *s, const cJSON *v, const char *path, ArgValue *out, char *err,
                      size_t errn) {
    const char *key = s->name + 2;
    switch (s->kind) {
    case ARG_INT:
    case ARG_I64: return json_int(cmd, s, v, path, out, err, errn);
    case ARG_FLOAT:
    case ARG_DOUBLE:
        if (!cJSON_IsNumber(v))
            return snprintf(err, errn, "%s: \"%s\" must be a number (see `ringgpt %s --help`)", path, key, cmd->command), -1;
        out->x = v->valuedouble;
        if (!(s->kind == ARG_FLOAT ? isfinite((float)out->x) : isfinite(out->x)))
            return snprintf(err, errn, "%s: \"%s\" must be a finite number (got %g)", path, key, out->x), -1;
        return 0;
    case ARG_STRING:
        if (!cJSON_IsString(v)) return snprintf(err, errn, "%s: \"%s\" must be a string", path, key), -1;
        out->s = v->valuestring;
        return 0;
    case ARG_BOOL:
        if (!cJSON_IsBool(v)) return snprintf(err, errn, "%s: \"%s\" must be true or false", path, key), -1;
        out->b = cJSON_IsTrue(v);
        return 0;
    case ARG_HEADING: break;
    }
    return 0;
}

// A checked value into its flag, which is then given.
static void store_value(ArgSpec *s, const ArgValue *v) {
    switch (s->kind) {
    case ARG_INT: *(int *)s->dst = (int)v->i; break;
    case ARG_I64: *(int64_t *)s->dst = v->i; break;
    case ARG_FLOAT: *(float *)s->dst = (float)v->x; break;
    case ARG_DOUBLE: *(double *)s->dst = v->x; break;
    case ARG_STRING: *(const char **)s->dst = keep_string(v->s); break;
    case ARG_BOOL: *(bool *)s->dst = v->b; break;
    case ARG_HEADING: break;
    }
    s->seen = true;
}

// A config_crc32 member (written by ringgpt into OUT/config.json) must match the rest of the document.
static int check_crc(cJSON *root, const char *path, char *err, size_t errn) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(root, ARGS_CRC_KEY);
    if (!c) return 0;   // a file written by hand
    char want[16];
    snprintf(want, sizeof want, "%08x", json_crc_without(root, ARGS_CRC_KEY));
    if (!cJSON_IsString(c) || strcmp(c->valuestring, want) != 0)
        return snprintf(err, errn, "%s: \"" ARGS_CRC_KEY "\" does not match the flags in the file (CRC-32 %s): the file "
                        "was damaged or edited; repair it, or delete the " ARGS_CRC_KEY " line to accept an edit", path,
                        want), -1;
    return 0;
}

int args_json_load(const ArgCommand *cmd, ArgSpec *specs, int n, const char *text, size_t len, const char *path,
                   const char *const *skip, const char *const *only, char *err, size_t errn) {
    char why[512];
    cJSON *root = json_parse_strict(text, len, why, sizeof why);
    if (!root) return snprintf(err, errn, "%s: %s; fix the file", path, why), -1;
    int rc = cJSON_IsObject(root) ? check_crc(root, path, err, errn) : -1;
    if (!cJSON_IsObject(root)) snprintf(err, errn, "%s: not a JSON object of flags ({\"seq-len\": 1024, ...}); fix the file", path);
    char name[128];
    bool *named = xcalloc((size_t)n, sizeof *named, "config keys");   // "seq-len" and "--seq-len" are one key
    for (const cJSON *v = rc == 0 ? root->child : NULL; v && rc == 0; v = v->next) {
        if (strcmp(v->string, ARGS_CRC_KEY) == 0) continue;
        snprintf(name, sizeof name, "%s%s", strncmp(v->string, "--", 2) == 0 ? "" : "--", v->string);
        if (only && !in_list(name, only)) continue;
        ArgSpec *s = args_find(specs, n, name);
        if (!s && in_list(name, skip)) continue;   // a key the caller passes over though no flag has it (a retired one)
        const char *went = s ? NULL : moved_to(cmd, name, strlen(name));
        if (went) {
            snprintf(err, errn, "%s: \"%s\" is not a flag of `ringgpt %s` any more: %s", path, name + 2, cmd->command, went);
            rc = -1;
        } else if (!s) {
            char key[128], hint[96] = "";
            const char *near = nearest_flag(specs, n, name, strlen(name));
            if (near) snprintf(hint, sizeof hint, "; did you mean \"%s\"?", near + 2);
            snprintf(err, errn, "%s: unknown key \"%s\": not a flag of `ringgpt %s`%s (see `ringgpt %s --help`)", path,
                     json_printable(v->string, key, sizeof key), cmd->command, hint, cmd->command);
            rc = -1;
        } else if (named[s - specs]) {
            snprintf(err, errn, "%s: the flag %s appears twice (which value is meant?); fix the file", path, s->name);
            rc = -1;
        } else {
            named[s - specs] = true;   // checked even where the command line or `skip` keeps the flag's value
            ArgValue x;
            rc = json_value(cmd, s, v, path, &x, err, errn);
            if (rc == 0 && !s->seen && !in_list(s->name, skip)) store_value(s, &x);
        }
    }
    free(named);
    cJSON_Delete(root);
    return rc;
}

// The keys of the JSON object at path into the flags not given yet: every key must be a flag unless `only`
// names the flags to read (then other keys are passed over); flags in skip are left alone.
static void apply_json(const ArgCommand *cmd, ArgSpec *specs, int n, const char *path, const char *const *skip,
                       const char *const *only) {
    size_t len;
    char *text = (char *)read_whole_file(path, &len);
    char err[1024];
    if (args_json_load(cmd, specs, n, text, len, path, skip, only, err, sizeof err) != 0) fail_usage("%s", err);
    free(text);
}

void args_apply_json(const ArgCommand *cmd, ArgSpec *specs, int n, const char *path, const char *const *skip) {
    apply_json(cmd, specs, n, path, skip, NULL);
}

void args_apply_json_only(const ArgCommand *cmd, ArgSpec *specs, int n, const char *path, const char *const *only) {
    apply_json(cmd, specs, n, path, NULL, only);
}

char *args_json_sign(const char *json) {
    cJSON *root = cJSON_Parse(json);
    if (!cJSON_IsObject(root)) fail("internal: the flags to sign are not a JSON object");
    char crc[16];   // of the document as a reader prints it back (check_crc), whole numbers as doubles
    snprintf(crc, sizeof crc, "%08x", json_crc_without(root, ARGS_CRC_KEY));
    cJSON_Delete(root);
    size_t len = strlen(json);   // json itself is kept: its whole numbers are exact digits (args_to_json)
    while (len > 0 && json[len - 1] != '}') len--;
    if (len == 0) fail("internal: the flags to sign are not a JSON object");
    size_t body = len - 1;
    while (body > 0 && (json[body - 1] == '\n' || json[body - 1] == '\t' || json[body - 1] == ' ')) body--;
    bool empty = body > 0 && json[body - 1] == '{';
    size_t n = body + 64;
    char *text = xmalloc(n, "signed flags");
    snprintf(text, n, "%.*s%s\n\t\"" ARGS_CRC_KEY "\":\t\"%s\"\n}", (int)body, json, empty ? "" : ",", crc);
    return text;
}

void args_apply_config(const ArgCommand *cmd, ArgSpec *specs, int n) {
    ArgSpec *c = args_find(specs, n, "--config");
    const char *path = c ? *(const char **)c->dst : NULL;
    if (!path) return;
    if (access(path, R_OK) != 0) fail_usage("--config %s: cannot open (%s); check the path", path, strerror(errno));
    const char *const only_once[] = {"--config", NULL};   // a config file may hold every other flag
    args_apply_json(cmd, specs, n, path, only_once);
}

// The shortest decimal that reads back as the same float (config.json says 0.001, not 0.0010000000474974513).
static double short_float(float f) {
    char buf[32];
    for (int digits = 6; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, f);
        if ((float)strtod(buf, NULL) == f) break;
    }
    return strtod(buf, NULL);
}

char *args_to_json(const ArgSpec *specs, int n, const char *const *skip) {
    cJSON *root = cJSON_CreateObject();
    for (const ArgSpec *s = specs; s < specs + n; s++) {
        if (s->kind == ARG_HEADING || in_list(s->name, skip)) continue;
        const char *key = s->name + 2;
        switch (s->kind) {
        case ARG_INT: cJSON_AddNumberToObject(root, key, *(int *)s->dst); break;
        case ARG_I64: {   // digits as they are: cJSON prints 2^53 as 9.00719925474099e+15, which reads back 2 less
            char digits[24];
            snprintf(digits, sizeof digits, "%" PRId64, *(int64_t *)s->dst);
            cJSON_AddRawToObject(root, key, digits);
            break;
        }
        case ARG_FLOAT: cJSON_AddNumberToObject(root, key, short_float(*(float *)s->dst)); break;
        case ARG_DOUBLE: cJSON_AddNumberToObject(root, key, *(double *)s->dst); break;
        case ARG_STRING:
            if (*(const char **)s->dst) cJSON_AddStringToObject(root, key, *(const char **)s->dst);
            break;
        case ARG_BOOL: cJSON_AddBoolToObject(root, key, *(bool *)s->dst); break;
        case ARG_HEADING: break;
        }
    }
    char *text = cJSON_Print(root);
    cJSON_Delete(root);
    if (!text) fail("out of memory writing the flags as JSON");
    return text;
}

int args_parse_lengths(const char *flag, const char *spec, int64_t *out, int max) {
    const char *p = spec;
    int n = 0;
    while (*p) {
        char *end;
        double v = strtod(p, &end);
        if (end == p) fail_usage("%s '%s': '%s' is not a number; write e.g. %s 1K,4K,16K", flag, spec, p, flag);
        if (*end == 'K' || *end == 'k') v *= 1024, end++;
        else if (*end == 'M' || *end == 'm') v *= 1024 * 1024, end++;
        if (*end != ',' && *end) fail_usage("%s '%s': unexpected '%s'; write e.g. %s 1K,4K,16K", flag, spec, end, flag);
        if (n == max) fail_usage("%s: at most %d lengths", flag, max);
        if (v != floor(v) || v < 1 || v > INT32_MAX / 2)
            fail_usage("%s: %g is not a whole number of tokens in 1..%d", flag, v, INT32_MAX / 2);
        out[n++] = (int64_t)v;
        p = *end ? end + 1 : end;
    }
    if (n == 0) fail_usage("%s is empty; write e.g. %s 1K,4K,16K", flag, flag);
    return n;
}

void args_check_threads(int threads) {
    if (threads < 1) fail_usage("--threads must be at least 1 (got %d)", threads);
    if (threads > ARGS_MAX_THREADS)
        fail_usage("--threads must be at most %d (got %d); this machine has %ld cores", ARGS_MAX_THREADS, threads,
                   sysconf(_SC_NPROCESSORS_ONLN));
}

void args_check_seed(const char *flag, int64_t seed) {
    if (seed < 0 || seed > ARGS_MAX_SEED)
        fail_usage("%s must be a whole number in 0..%lld (2^53, what a checkpoint's JSON keeps exactly); got %" PRId64,
                   flag, ARGS_MAX_SEED, seed);
}
