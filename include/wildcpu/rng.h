/* rng.h: deterministic random numbers that do not depend on the number of ranks.
 *
 * Every random choice in wildcpu is a pure function of (seed, stream, position): a stream is a
 * named purpose (initialization, the epoch's permutation, the synthetic region's noise, ...),
 * so a resumed or re-sharded run draws exactly the numbers an uninterrupted single-process run
 * would. The generator is xoshiro256** seeded through splitmix64.
 *
 * Not here: any global state; every generator is a value owned by its caller. */
#ifndef WILDCPU_RNG_H
#define WILDCPU_RNG_H

#include <stddef.h>
#include <stdint.h>

typedef struct wc_rng {
    uint64_t s[4];
} wc_rng;

/* Well-known streams. Adding one never changes the numbers drawn from another. */
enum {
    WC_STREAM_INIT = 1,    /* parameter initialization */
    WC_STREAM_PERM = 2,    /* the epoch's training order: stream = PERM, then the epoch */
    WC_STREAM_SPLIT = 3,   /* spatial train/validation split */
    WC_STREAM_SYNTH = 4,   /* synthetic region */
    WC_STREAM_AUGMENT = 5, /* augmentation choices */
};

/* splitmix64 finalizer: a bijective 64-bit mixer. */
uint64_t wc_hash64(uint64_t x);

/* Seeds a generator for (seed, stream, substream). Distinct triples give independent streams. */
void wc_rng_seed(wc_rng *r, uint64_t seed, uint64_t stream, uint64_t substream);
uint64_t wc_rng_next(wc_rng *r);
/* Uniform in [0, 1) with 53 random bits. */
double wc_rng_uniform(wc_rng *r);
/* Uniform integer in [0, n), without modulo bias. n > 0. */
uint64_t wc_rng_below(wc_rng *r, uint64_t n);
/* Standard normal (Box-Muller, one value per call so the state is just the generator). */
double wc_rng_normal(wc_rng *r);

/* perm[0..n) = a uniformly random permutation of 0..n-1 (Fisher-Yates), a pure function of
 * (seed, stream, substream). */
void wc_rng_permutation(uint32_t *perm, size_t n, uint64_t seed, uint64_t stream,
                        uint64_t substream);

#endif
