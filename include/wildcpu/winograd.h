/* winograd.h: 3x3 stride-1 convolutions by Winograd's minimal filtering F(4x4, 3x3), forward
 * and both gradients, as one cache-blocked pass over blocks of tiles. conv.h is the public
 * interface (it picks this path for 3x3 stride-1 kernels with padding up to 2); this header is
 * what conv.c calls. Shapes, layouts and flags are conv.h's (wc_conv_shape, WC_CONV_*).
 *
 * Work is split into tasks by the shape alone (winograd.c says how), run on the pool when one
 * is given: the results are bitwise the same for any number of threads.
 *
 * Not here: allocation (the caller passes the workspace), other kernel shapes (conv.c). */
#ifndef WILDCPU_WINOGRAD_H
#define WILDCPU_WINOGRAD_H

#include <stddef.h>

#include "wildcpu/conv.h"
#include "wildcpu/pool.h"

/* Whether the shape runs here: 3x3, stride 1, padding 0 to 2. */
int wc_wino_applies(const wc_conv_shape *s);
/* Floats of workspace forward and backward need with `threads` threads (a part shared by the
 * threads plus one part per thread). Non-decreasing in s->N. */
size_t wc_wino_workspace_floats(const wc_conv_shape *s, int threads);

/* out (N, K, OH, OW) = conv(inp, weight) + bias (bias may be NULL); with WC_CONV_RELU, max(., 0)
 * (a NaN passes). */
void wc_wino_forward(float *out, const float *inp, const float *weight, const float *bias,
                     const wc_conv_shape *s, int flags, wc_pool *pool, float *work);
/* dweight += d/dweight; dbias += d/dbias (may be NULL); dinp (may be NULL) += d/dinp, or = with
 * WC_CONV_DINP_WRITE, masked by inp > 0 with WC_CONV_DINP_RELU_MASK. */
void wc_wino_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                      const float *inp, const float *weight, const wc_conv_shape *s, int flags,
                      wc_pool *pool, float *work);

/* Who multiplies in the forward and input-gradient passes (src/wino_gemm.c says why):
 * WC_PRODUCTS_AUTO, the default, and WC_PRODUCTS_OWN are wildcpu's own kernel wherever the CPU
 * has AVX2 and FMA, 16 lanes wide where it also has AVX-512, 8 elsewhere (the two widths give
 * the same bits); WC_PRODUCTS_OWN_AVX2 the 8-lane kernel even on AVX-512; WC_PRODUCTS_OPENBLAS
 * OpenBLAS (the only choice without AVX2 and FMA). At start-up the environment variable
 * WILDCPU_GEMM (own, own-avx2 or openblas) chooses. For tests and benchmarks: not to be called
 * while a pass runs. Returns the own kernel's lanes now in use (0: OpenBLAS). */
enum { WC_PRODUCTS_AUTO, WC_PRODUCTS_OWN, WC_PRODUCTS_OWN_AVX2, WC_PRODUCTS_OPENBLAS };
int wc_wino_set_products(int which);
/* M (K x n, ld ldm) = U (K x C, ld ldu) x V (C x n, ld ldv) by the own kernel when it is in use
 * (returns 1), else nothing (returns 0: the caller multiplies, with OpenBLAS). Each value is the
 * sum over c of U[k][c] V[c][j], one FMA per c in increasing c from zero: its bits depend on
 * that row and column alone, never on n or on the column's place among the n. OpenBLAS's do
 * not: its kernels round the columns at the end of a product (and of its blocks) otherwise than
 * the rest, so the same pixel computed in windows of two widths differed in its last bits
 * (conv.c's 1x1 and lowered paths, adjacent rasters cut from one grid: 3e-9 to 2e-8). */
int wc_wino_own_product(int K, int n, int C, const float *U, size_t ldu, const float *V, size_t ldv,
                        float *M, size_t ldm);
/* WILDCPU_GEMM's values, for messages, and the WC_PRODUCTS_ choice one names (-1: none). */
#define WC_PRODUCTS_CHOICES "own, own-avx2 or openblas"
int wc_wino_products_parse(const char *name);
/* Who does the products now, for logs and reports: "own-avx512", "own-avx2" or "openblas". */
const char *wc_wino_products_name(void);

#endif
