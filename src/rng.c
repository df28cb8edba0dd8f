/* rng.c: xoshiro256** seeded by splitmix64; see rng.h. */
#include "wildcpu/rng.h"

#include <math.h>

#include "wildcpu/util.h"

uint64_t wc_hash64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void wc_rng_seed(wc_rng *r, uint64_t seed, uint64_t stream, uint64_t substream) {
    uint64_t x = wc_hash64(wc_hash64(wc_hash64(seed) ^ stream) ^ substream);
    for (int i = 0; i < 4; i++) {
        x = wc_hash64(x + (uint64_t)i);
        r->s[i] = x;
    }
    if ((r->s[0] | r->s[1] | r->s[2] | r->s[3]) == 0) r->s[0] = 1; /* the one forbidden state */
}

static inline uint64_t rotl(uint64_t x, int k) {
    return (x << k) | (x >> (64 - k));
}

uint64_t wc_rng_next(wc_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double wc_rng_uniform(wc_rng *r) {
    return (double)(wc_rng_next(r) >> 11) * 0x1.0p-53;
}

uint64_t wc_rng_below(wc_rng *r, uint64_t n) {
    WC_ASSERT(n > 0);
    /* Rejection of the short top range removes modulo bias. */
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do x = wc_rng_next(r);
    while (x >= limit);
    return x % n;
}

double wc_rng_normal(wc_rng *r) {
    double u1 = 1.0 - wc_rng_uniform(r); /* (0, 1]: log is finite */
    double u2 = wc_rng_uniform(r);
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

void wc_rng_permutation(uint32_t *perm, size_t n, uint64_t seed, uint64_t stream,
                        uint64_t substream) {
    wc_rng r;
    wc_rng_seed(&r, seed, stream, substream);
    for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)wc_rng_below(&r, i);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}
