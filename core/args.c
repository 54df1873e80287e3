// core/args.c — flag parsing shared by all subcommands: `--flag value` or `--flag=value`, typed, checked.
#include "core/args.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/common.h"

static void print_default(const ArgSpec *s) {
    switch (s->kind) {
    case ARG_INT: printf(" (default %d)", *(int *)s->dst); break;
    case ARG_I64: printf(" (default %" PRId64 ")", *(int64_t *)s->dst); break;
    case ARG_FLOAT: printf(" (default %g)", *(float *)s->dst); break;
    case ARG_DOUBLE: printf(" (default %g)", *(double *)s->dst); break;
    case ARG_STRING:
        if (*(const char **)s->dst) printf(" (default %s)", *(const char **)s->dst);
        break;
    case ARG_BOOL: break;
    }
}

static _Noreturn void print_help(const ArgCommand *cmd, const ArgSpec *specs, int n) {
    printf("usage: %s\n\n%s\n\nflags:\n", cmd->usage, cmd->summary);
    for (int i = 0; i < n; i++) {
        const char *meta = specs[i].kind == ARG_BOOL ? "" : specs[i].kind == ARG_STRING ? " S" : " N";
        printf("  %s%-*s %s", specs[i].name, (int)(22 - strlen(specs[i].name)), meta, specs[i].help);
        print_default(&specs[i]);
        printf("\n");
    }
    printf("  --help                  this text\n");
    exit(0);
}

static void parse_value(const ArgCommand *cmd, ArgSpec *s, const char *v) {
    char *end = NULL;
    errno = 0;
    switch (s->kind) {
    case ARG_INT: {
        long x = strtol(v, &end, 10);
        if (errno || *end || end == v || x < -2147483647L || x > 2147483647L)
            fail_usage("%s expects an integer, got '%s' (see `ringgpt %s --help`)", s->name, v, cmd->command);
        *(int *)s->dst = (int)x;
        break;
    }
    case ARG_I64: {
        long long x = strtoll(v, &end, 10);
        if (errno || *end || end == v)
            fail_usage("%s expects an integer, got '%s' (see `ringgpt %s --help`)", s->name, v, cmd->command);
        *(int64_t *)s->dst = x;
        break;
    }
    case ARG_FLOAT:
    case ARG_DOUBLE: {
        double x = strtod(v, &end);
        if (errno || *end || end == v || !isfinite(x))
            fail_usage("%s expects a number, got '%s' (see `ringgpt %s --help`)", s->name, v, cmd->command);
        if (s->kind == ARG_FLOAT) *(float *)s->dst = (float)x;
        else *(double *)s->dst = x;
        break;
    }
    case ARG_STRING: *(const char **)s->dst = v; break;
    case ARG_BOOL: break;
    }
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
            if (strlen(specs[k].name) == len && strncmp(specs[k].name, a, len) == 0) s = &specs[k];
        if (!s) fail_usage("unknown flag '%.*s' for `ringgpt %s` (see `ringgpt %s --help`)", (int)len, a, cmd->command,
                           cmd->command);
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
    for (int i = 0; i < n; i++)
        if (strcmp(specs[i].name, name) == 0) return specs[i].seen;
    return false;
}
