// tests/check.h — a tiny test harness: CHECK macros, relative-error helpers, the closing "N passed, N failed" line.
#pragma once
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static int check_passed, check_failed;

#define CHECK(cond, ...)                                                  \
    do {                                                                  \
        if (cond) {                                                       \
            check_passed++;                                               \
        } else {                                                          \
            check_failed++;                                               \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);          \
            fprintf(stderr, __VA_ARGS__);                                 \
            fputc('\n', stderr);                                          \
        }                                                                 \
    } while (0)

// |a - b| / max(|a|, |b|, floor): relative error that does not explode near zero.
static inline double rel_err(double a, double b, double floor) {
    double d = fabs(a - b), s = fmax(fmax(fabs(a), fabs(b)), floor);
    return d / s;
}

// max_i |a_i - b_i| / max(max_i |b_i|, floor): error relative to the tensor's scale.
static inline double tensor_rel_err(const double *a, const double *b, size_t n, double floor) {
    double dmax = 0, smax = floor;
    for (size_t i = 0; i < n; i++) {
        dmax = fmax(dmax, fabs(a[i] - b[i]));
        smax = fmax(smax, fabs(b[i]));
    }
    return dmax / smax;
}

static inline int check_summary(void) {
    printf("%d passed, %d failed\n", check_passed, check_failed);
    return check_failed ? 1 : 0;
}
