// core/rng.h — deterministic random numbers (splitmix64 seeding, xoshiro256**), uniform and normal.
#pragma once
#include <stdint.h>

typedef struct {
    uint64_t s[4];
} Rng;

void rng_seed(Rng *r, uint64_t seed);
uint64_t rng_u64(Rng *r);
double rng_uniform(Rng *r);                  // [0, 1)
uint64_t rng_below(Rng *r, uint64_t n);      // [0, n), unbiased
double rng_normal(Rng *r);                   // N(0, 1), Box-Muller
