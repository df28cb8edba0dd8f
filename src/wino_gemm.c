/* wino_gemm.c: the products of winograd.c's forward-like passes (the forward and the input
 * gradient), M[xi] (K x nt) = U[xi] (K x C) x V[xi] (C x nt) for every position xi of a block.
 *
 * Why not OpenBLAS alone. Per call, OpenBLAS zeroes M first (beta = 0 is a separate pass over
 * C), then packs both operands into its own layouts, then multiplies; for these products (C and
 * K 12 to 192, nt 8 to a few hundred, 16 or 36 of them per block) the zeroing and packing cost
 * more than half as much as the multiplies (perf, unet-lite, 1 thread, AMD Zen 3: sgemm_kernel
 * 21% of the step in these passes, sgemm_beta 6%, the copies about 6%). Both operands are
 * already where a register-blocked kernel wants them: V's rows run along the tiles with unit
 * stride (the transforms write them so), and U's rows are read one scalar at a time. So on AVX2
 * with FMA the products here are a 6 x 16 kernel reading U and V in place and storing M once,
 * with no packing and no zeroing: 67-88 GFLOP/s on one Zen 3 core where OpenBLAS reached 29-85
 * for the same shapes, and 1.19x the training throughput (docs/performance.md). Each value of M
 * is the sum over c of U[k][c] V[c][j], one FMA per c in increasing c, whatever the block, the
 * column's place in it or the thread: the bits depend on the input tile alone, as the passes
 * need (prediction's windows and the inference path rely on it). conv.c's 1x1 and lowered
 * forward products use it for the same reason (wc_wino_own_product).
 *
 * The weight gradient's products (inner dimension: the tiles) stay on OpenBLAS: a dot-product
 * kernel over the tiles measured slower than OpenBLAS beyond 64 channels.
 *
 * On AVX-512 the same kernel runs 16 lanes wide (12 x 32, wino_kernel.h), with the same bits as
 * the 8-lane one: unet-lite, 1 thread, Intel Xeon family 6 model 207, five interleaved rounds,
 * median 30.3 samples/s against 27.8 for the 8-lane kernel and 30.5 for OpenBLAS's SkylakeX
 * kernels; kept for its bits, which do not depend on OpenBLAS's choice of core. Without AVX2
 * and FMA, or with WILDCPU_GEMM=openblas, OpenBLAS does the products. The own kernel and
 * OpenBLAS give different roundings (about 1e-7 relative), like OpenBLAS on two kinds of CPU. */
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/blas_core.h"
#include "wildcpu/util.h"
#include "wildcpu/winograd.h"
#include "winograd_tiles.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_KERNEL 1
#endif

static int cpu_has_kernel, cpu_is_wide; /* AVX2 with FMA; AVX-512 (F, CD, BW, DQ, VL) */
static int own_lanes; /* the own kernel's vector width in use: 0 (OpenBLAS), 8, 16 */
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static int lanes_for(int which) {
    if (!cpu_has_kernel || which == WC_PRODUCTS_OPENBLAS) return 0;
    if (which == WC_PRODUCTS_OWN_AVX2) return 8;
    return cpu_is_wide ? 16 : 8;
}

static void probe(void) {
#ifdef HAVE_AVX2_KERNEL
    const wc_cpu_features f = wc_cpu_features_here(); /* the detection blas_core.c decides by */
    cpu_has_kernel = f.avx2_fma;
    cpu_is_wide = f.avx2_fma && f.avx512;
#endif
    const char *env = getenv("WILDCPU_GEMM");
    const int which = env ? wc_wino_products_parse(env) : WC_PRODUCTS_AUTO;
    own_lanes = lanes_for(which < 0 ? WC_PRODUCTS_AUTO : which); /* cpuinfo.c warns of it */
}

int wc_wino_products_parse(const char *name) {
    static const struct {
        const char *name;
        int which;
    } choices[] = {{"own", WC_PRODUCTS_OWN},
                   {"own-avx2", WC_PRODUCTS_OWN_AVX2},
                   {"openblas", WC_PRODUCTS_OPENBLAS}};
    for (size_t i = 0; i < sizeof choices / sizeof choices[0]; i++)
        if (strcmp(name, choices[i].name) == 0) return choices[i].which;
    return -1;
}

const char *wc_wino_products_name(void) {
    pthread_once(&probe_once, probe);
    return own_lanes == 16 ? "own-avx512" : own_lanes == 8 ? "own-avx2" : "openblas";
}

int wc_wino_set_products(int which) {
    pthread_once(&probe_once, probe);
    own_lanes = lanes_for(which);
    return own_lanes;
}

#ifdef HAVE_AVX2_KERNEL

__attribute__((target("avx2"))) static inline __m256i avx2_first_lanes(int n) {
    int lanes[8];
    for (int l = 0; l < 8; l++) lanes[l] = l < n ? -1 : 0;
    return _mm256_loadu_si256((const __m256i *)lanes);
}

/* AVX2 with FMA: 6 x 16 (12 of the 16 registers accumulate) */
#define KERNEL_PRODUCT          product_avx2
#define KERNEL_TARGET           "avx2,fma"
#define VEC                     __m256
#define MASK                    __m256i
#define LANES                   8
#define MR                      6
#define V_ZERO()                _mm256_setzero_ps()
#define V_LOAD(p)               _mm256_loadu_ps(p)
#define V_LOAD_MASKED(p, m)     _mm256_maskload_ps(p, m)
#define V_STORE(p, v)           _mm256_storeu_ps(p, v)
#define V_STORE_MASKED(p, m, v) _mm256_maskstore_ps(p, m, v)
#define V_FMA(a, b, c)          _mm256_fmadd_ps(a, b, c)
#define V_SET1(x)               _mm256_set1_ps(x)
#define MASK_FIRST(n)           avx2_first_lanes(n)
#include "wino_kernel.h"

/* AVX-512 (F): 12 x 32 (24 of the 32 registers accumulate) */
#define KERNEL_PRODUCT          product_avx512
#define KERNEL_TARGET           "avx512f"
#define VEC                     __m512
#define MASK                    __mmask16
#define LANES                   16
#define MR                      12
#define V_ZERO()                _mm512_setzero_ps()
#define V_LOAD(p)               _mm512_loadu_ps(p)
#define V_LOAD_MASKED(p, m)     _mm512_maskz_loadu_ps(m, p)
#define V_STORE(p, v)           _mm512_storeu_ps(p, v)
#define V_STORE_MASKED(p, m, v) _mm512_mask_storeu_ps(p, m, v)
#define V_FMA(a, b, c)          _mm512_fmadd_ps(a, b, c)
#define V_SET1(x)               _mm512_set1_ps(x)
#define MASK_FIRST(n)           ((__mmask16)((1u << (n)) - 1u))
#include "wino_kernel.h"

#endif

/* conv.c's 1x1 and lowered forward products: the same kernel, so that a pixel's bits there too
 * depend on its own column of V alone, not on the width of the window that holds it. */
int wc_wino_own_product(int K, int n, int C, const float *U, size_t ldu, const float *V, size_t ldv,
                        float *M, size_t ldm) {
    pthread_once(&probe_once, probe);
#ifdef HAVE_AVX2_KERNEL
    if (own_lanes == 16) product_avx512(K, n, C, U, ldu, V, ldv, M, ldm);
    if (own_lanes == 8) product_avx2(K, n, C, U, ldu, V, ldv, M, ldm);
#endif
    return own_lanes != 0;
}

void wc_wino_products(const kind *kd, int K, int nt, int C, const float *U, const float *V,
                      float *M) {
    const size_t su = plane_stride((size_t)K * C), sv = plane_stride((size_t)C * nt),
                 sm = plane_stride((size_t)K * nt);
#ifdef HAVE_AVX2_KERNEL
    pthread_once(&probe_once, probe);
    if (own_lanes) {
        void (*product)(int, int, int, const float *, size_t, const float *, size_t, float *,
                        size_t) = own_lanes == 16 ? product_avx512 : product_avx2;
        for (int xi = 0; xi < kd->tt; xi++)
            product(K, nt, C, U + xi * su, (size_t)C, V + xi * sv, (size_t)nt, M + xi * sm,
                    (size_t)nt);
        return;
    }
#endif
    for (int xi = 0; xi < kd->tt; xi++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, K, nt, C, 1.0f, U + xi * su, C,
                    V + xi * sv, nt, 0.0f, M + xi * sm, nt);
}
