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
 * for the same shapes, and 1.19x the training throughput (README, Performance). Each value of M
 * is the sum over c of U[k][c] V[c][j], one FMA per c in increasing c, whatever the block, the
 * column's place in it or the thread: the bits depend on the input tile alone, as the passes
 * need (prediction's windows and the inference path rely on it).
 *
 * The weight gradient's products (inner dimension: the tiles) stay on OpenBLAS: a dot-product
 * kernel over the tiles measured slower than OpenBLAS beyond 64 channels.
 *
 * Elsewhere (no AVX2/FMA; or AVX-512, where OpenBLAS's SkylakeX kernels are twice as wide and
 * this kernel has not been measured; or WILDCPU_GEMM=openblas) OpenBLAS does the products. The
 * two give different roundings (about 1e-7 relative), like OpenBLAS on two kinds of CPU. */
#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/util.h"
#include "wildcpu/winograd.h"
#include "winograd_tiles.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_AVX2_KERNEL 1
#endif

static int cpu_has_kernel, cpu_is_wide; /* AVX2 with FMA; AVX-512 */
static int own_kernel;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static int uses_own(int which) {
    if (which == WC_PRODUCTS_OWN) return cpu_has_kernel;
    return which == WC_PRODUCTS_AUTO && cpu_has_kernel && !cpu_is_wide;
}

static void probe(void) {
#ifdef HAVE_AVX2_KERNEL
    __builtin_cpu_init();
    cpu_has_kernel = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    cpu_is_wide = __builtin_cpu_supports("avx512f");
#endif
    const char *env = getenv("WILDCPU_GEMM");
    int which = WC_PRODUCTS_AUTO;
    if (env && strcmp(env, "openblas") == 0) which = WC_PRODUCTS_OPENBLAS;
    if (env && strcmp(env, "own") == 0) which = WC_PRODUCTS_OWN;
    own_kernel = uses_own(which);
}

int wc_wino_own_products(void) {
    pthread_once(&probe_once, probe);
    return own_kernel;
}

int wc_wino_set_products(int which) {
    pthread_once(&probe_once, probe);
    return own_kernel = uses_own(which);
}

#ifdef HAVE_AVX2_KERNEL

#define MR 6  /* rows of M (output channels) per kernel call */
#define NR 16 /* columns (tiles) per kernel call: two vectors */

/* M[0..rows)[0..cols) = U[0..rows) x V over C, cols <= NR. rows, nvec and masked are
 * constants in every call (below), so the branches fold away; the accumulators are named
 * variables, not an array (GCC 12 stores an array of vectors back to the stack every
 * iteration); `mask` selects the columns of the last vector when `masked`. */
#define ACC_DECL(r) __m256 a##r##0 = _mm256_setzero_ps(), a##r##1 = _mm256_setzero_ps()
#define ACC_FMA(r)                                                                                 \
    if (rows > r) {                                                                                \
        const __m256 u = _mm256_broadcast_ss(U + (size_t)r * ldu + c);                             \
        a##r##0 = _mm256_fmadd_ps(u, b0, a##r##0);                                                 \
        if (nvec == 2) a##r##1 = _mm256_fmadd_ps(u, b1, a##r##1);                                  \
    }
#define ACC_STORE(r)                                                                               \
    if (rows > r) {                                                                                \
        float *o = M + (size_t)r * ldm;                                                            \
        if (nvec == 2) {                                                                           \
            _mm256_storeu_ps(o, a##r##0);                                                          \
            if (masked)                                                                            \
                _mm256_maskstore_ps(o + 8, mask, a##r##1);                                         \
            else                                                                                   \
                _mm256_storeu_ps(o + 8, a##r##1);                                                  \
        } else if (masked) {                                                                       \
            _mm256_maskstore_ps(o, mask, a##r##0);                                                 \
        } else {                                                                                   \
            _mm256_storeu_ps(o, a##r##0);                                                          \
        }                                                                                          \
    }

__attribute__((target("avx2,fma"), always_inline)) static inline void
kernel(const int rows, const int nvec, const int masked, __m256i mask, int C,
       const float *restrict U, size_t ldu, const float *restrict V, size_t ldv, float *restrict M,
       size_t ldm) {
    ACC_DECL(0);
    ACC_DECL(1);
    ACC_DECL(2);
    ACC_DECL(3);
    ACC_DECL(4);
    ACC_DECL(5);
    for (int c = 0; c < C; c++) {
        const float *v = V + (size_t)c * ldv;
        __m256 b0, b1 = _mm256_setzero_ps();
        if (nvec == 2) {
            b0 = _mm256_loadu_ps(v);
            b1 = masked ? _mm256_maskload_ps(v + 8, mask) : _mm256_loadu_ps(v + 8);
        } else {
            b0 = masked ? _mm256_maskload_ps(v, mask) : _mm256_loadu_ps(v);
        }
        ACC_FMA(0)
        ACC_FMA(1)
        ACC_FMA(2)
        ACC_FMA(3)
        ACC_FMA(4)
        ACC_FMA(5)
    }
    ACC_STORE(0)
    ACC_STORE(1)
    ACC_STORE(2)
    ACC_STORE(3)
    ACC_STORE(4)
    ACC_STORE(5)
}

/* One call of the kernel for `rows` (1..MR) and a column shape: 0 = NR full columns, 1 = NR
 * with the second vector masked, 2 = one vector, masked. */
#define ROWS_CASES(NV, MASKED)                                                                     \
    switch (rows) {                                                                                \
    case 1:                                                                                        \
        kernel(1, NV, MASKED, mask, C, U, ldu, V, ldv, M, ldm);                                    \
        break;                                                                                     \
    case 2:                                                                                        \
        kernel(2, NV, MASKED, mask, C, U, ldu, V, ldv, M, ldm);                                    \
        break;                                                                                     \
    case 3:                                                                                        \
        kernel(3, NV, MASKED, mask, C, U, ldu, V, ldv, M, ldm);                                    \
        break;                                                                                     \
    case 4:                                                                                        \
        kernel(4, NV, MASKED, mask, C, U, ldu, V, ldv, M, ldm);                                    \
        break;                                                                                     \
    case 5:                                                                                        \
        kernel(5, NV, MASKED, mask, C, U, ldu, V, ldv, M, ldm);                                    \
        break;                                                                                     \
    default:                                                                                       \
        kernel(MR, NV, MASKED, mask, C, U, ldu, V, ldv, M, ldm);                                   \
        break;                                                                                     \
    }

__attribute__((target("avx2,fma"))) static void panel(int rows, int shape, __m256i mask, int C,
                                                      const float *U, size_t ldu, const float *V,
                                                      size_t ldv, float *M, size_t ldm) {
    if (shape == 0) {
        ROWS_CASES(2, 0)
    } else if (shape == 1) {
        ROWS_CASES(2, 1)
    } else {
        ROWS_CASES(1, 1)
    }
}

/* M (K x nt, ld nt) = U (K x C, ld C) x V (C x nt, ld nt). Rows of U outermost: a block of
 * MR rows (MR C floats) stays in L1 while the panels of V stream past it from L2 (columns
 * outermost, a V panel in L1 and U streaming, measured alike). */
__attribute__((target("avx2,fma"))) static void product(int K, int nt, int C, const float *U,
                                                        const float *V, float *M) {
    const int last = nt % NR ? nt % NR : NR;        /* columns of the last panel */
    const int in_last = last > 8 ? last - 8 : last; /* ... in its last vector */
    const int last_shape = last == NR ? 0 : last > 8 ? 1 : 2;
    int lanes[8];
    for (int l = 0; l < 8; l++) lanes[l] = l < in_last ? -1 : 0;
    const __m256i mask = _mm256_loadu_si256((const __m256i *)lanes);
    for (int k = 0; k < K; k += MR) {
        const int rows = WC_MIN(MR, K - k);
        for (int j = 0; j < nt; j += NR)
            panel(rows, j + NR < nt ? 0 : last_shape, mask, C, U + (size_t)k * C, (size_t)C, V + j,
                  (size_t)nt, M + (size_t)k * nt + j, (size_t)nt);
    }
}

#endif

void wc_wino_products(const kind *kd, int K, int nt, int C, const float *U, const float *V,
                      float *M) {
    const size_t su = plane_stride((size_t)K * C), sv = plane_stride((size_t)C * nt),
                 sm = plane_stride((size_t)K * nt);
#ifdef HAVE_AVX2_KERNEL
    if (wc_wino_own_products()) {
        for (int xi = 0; xi < kd->tt; xi++)
            product(K, nt, C, U + xi * su, V + xi * sv, M + xi * sm);
        return;
    }
#endif
    for (int xi = 0; xi < kd->tt; xi++)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, K, nt, C, 1.0f, U + xi * su, C,
                    V + xi * sv, nt, 0.0f, M + xi * sm, nt);
}
