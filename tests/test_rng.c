/* test_rng.c: the generator is deterministic per (seed, stream, substream), streams differ,
 * and permutations are permutations. */
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "wildcpu/rng.h"

static void test_deterministic_and_independent(void) {
    wc_rng a, b, c;
    wc_rng_seed(&a, 1, WC_STREAM_INIT, 0);
    wc_rng_seed(&b, 1, WC_STREAM_INIT, 0);
    wc_rng_seed(&c, 1, WC_STREAM_PERM, 0);
    int same = 0, differ = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = wc_rng_next(&a), y = wc_rng_next(&b), z = wc_rng_next(&c);
        same += x == y;
        differ += x != z;
    }
    CHECK(same == 1000, "same seed gave different numbers (%d of 1000 equal)", same);
    CHECK(differ == 1000, "different streams collide (%d of 1000 differ)", differ);
}

static void test_uniform_and_normal_moments(void) {
    wc_rng r;
    wc_rng_seed(&r, 7, 99, 0);
    double su = 0, sn = 0, sn2 = 0;
    const int n = 200000;
    for (int i = 0; i < n; i++) {
        double u = wc_rng_uniform(&r);
        CHECK(u >= 0 && u < 1, "uniform out of range: %g", u);
        su += u;
        double z = wc_rng_normal(&r);
        sn += z;
        sn2 += z * z;
    }
    CHECK(fabs(su / n - 0.5) < 0.005, "uniform mean %g", su / n);
    CHECK(fabs(sn / n) < 0.01, "normal mean %g", sn / n);
    CHECK(fabs(sn2 / n - 1) < 0.02, "normal variance %g", sn2 / n);
}

static void test_permutation(void) {
    enum { N = 1001 };
    uint32_t p[N], q[N];
    unsigned char seen[N];
    wc_rng_permutation(p, N, 5, WC_STREAM_PERM, 3);
    wc_rng_permutation(q, N, 5, WC_STREAM_PERM, 3);
    memset(seen, 0, sizeof seen);
    int dup = 0;
    for (int i = 0; i < N; i++) {
        CHECK(p[i] < N, "out of range %u", p[i]);
        if (p[i] < N) dup += seen[p[i]]++;
    }
    CHECK(dup == 0, "%d duplicates", dup);
    CHECK(memcmp(p, q, sizeof p) == 0, "not deterministic");
    wc_rng_permutation(q, N, 5, WC_STREAM_PERM, 4);
    CHECK(memcmp(p, q, sizeof p) != 0, "epochs 3 and 4 gave the same order");
}

int main(void) {
    RUN(test_deterministic_and_independent);
    RUN(test_uniform_and_normal_moments);
    RUN(test_permutation);
    HARNESS_EXIT();
}
