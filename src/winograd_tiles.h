/* winograd_tiles.h: the pieces of winograd.c's pipeline shared by its two files, private to
 * them: the tile geometry of F(2x2) and F(4x4), the plan of a pass (tiles, blocks, segments), the
 * padded plane layout, and the transforms (winograd_tf.c) and products (wino_gemm.c) that the
 * passes (winograd.c) call once per block. The arithmetic and the pipeline are described at the top
 * of winograd.c. */
#ifndef WILDCPU_WINOGRAD_TILES_H
#define WILDCPU_WINOGRAD_TILES_H

#include <stddef.h>

#include "wildcpu/conv.h"
#include "wildcpu/pool.h"
#include "wildcpu/util.h"

/* How many channels ahead the input transform prefetches its input rows (1 to 4 measured
 * alike, about 20% faster than none for inputs beyond L3). */
#define PREFETCH_AHEAD 2

/* Tile geometry of F(m x m, 3 x 3). */
typedef struct {
    int m;  /* output tile side: 2 or 4 */
    int ts; /* input tile side, m + 2 */
    int tt; /* positions of a transformed tile, ts * ts */
} kind;

static const kind F2 = {2, 4, 16}, F4 = {4, 6, 36};

/* Floats from one transformed plane (one position xi) to the next, for planes of n floats:
 * n rounded up to whole cache lines, an odd number of them. The transforms write (or read) all
 * 16 or 36 planes of a tile at once; plane sizes like 128 x 64 floats (32 KiB) put all of them
 * in the same L1 sets and make every access alias the previous plane's (4 KiB apart), which
 * measured 4 to 8 times slower than the padded layout. */
static inline size_t plane_stride(size_t n) {
    size_t s = (n + 15) / 16 * 16;
    return (s / 16) % 2 ? s : s + 16;
}
#define PLANE_MAX(n) ((size_t)(n) + 32) /* plane_stride(n) <= this, for sizing */

typedef struct {
    int th, tw;  /* tile rows and columns of one image */
    long ntiles; /* N * th * tw */
    int nb;      /* tiles per block (the last block may have fewer) */
    int nblocks;
    int segw; /* widest run of tiles of one tile row inside a block */
} plan;

/* A forward-like pass as the pipeline sees it: the forward reads inp (N, C, H, W) and writes
 * (N, K, OH, OW); the input gradient reads dout as its input and writes dinp. */
typedef struct {
    kind kd;
    int N, C, H, W, K, OH, OW, pad;
    size_t in_sample, out_sample; /* floats between samples */
} pass_shape;

/* One run of tiles inside a tile row: image n, tile row ty, columns [tx0, tx1); pos is the
 * index of its first tile within the block. */
typedef struct {
    int n, ty, tx0, tx1, pos;
} segment;

/* The segment of the block [t0, t1) that starts at tile t (t0 <= t < t1). */
static inline segment segment_at(const plan *p, long t0, long t, long t1) {
    const long per_image = (long)p->th * p->tw;
    segment g;
    g.n = (int)(t / per_image);
    long r = t % per_image;
    g.ty = (int)(r / p->tw);
    g.tx0 = (int)(r % p->tw);
    g.tx1 = (int)WC_MIN((long)p->tw, g.tx0 + (t1 - t));
    g.pos = (int)(t - t0);
    return g;
}

/* What the output transform does with each value v it computes for out[n, k, y, x]:
 * out = bias[k] + v, then max(., 0) with relu (a NaN passes, as wc_relu_forward lets it);
 * or out = v, or out += v with add; then, with mask, 0 where mask[n, k, y, x] <= 0. */
typedef struct {
    const float *bias;
    int relu, add;
    const float *mask; /* laid out as out */
} out_mode;

/* ---- the transforms (winograd_tf.c) -------------------------------------------------------- */

/* U[xi] = G g G^T for every filter: (tt, K, C) planes, or with transposed (tt, C, K) from the
 * flipped filters (the input gradient's). Shared among the pool's threads. */
void wc_wino_transform_weights(const kind *kd, float *U, const float *weight, int K, int C,
                               int transposed, wc_pool *pool);
/* Row scratch one thread's transforms need, in floats. */
size_t wc_wino_scratch_floats(const kind *kd, const plan *p);
/* V (tt, C, nt) = B^T d B for the input tiles of the block [t0, t1) of x. */
void wc_wino_input_transform(float *V, const float *x, const pass_shape *ps, const plan *p, long t0,
                             long t1, float *scratch);
/* out (N, K, OH, OW) for the tiles [t0, t1) from M (tt, K, nt): A^T m A, applied as om says. */
void wc_wino_output_transform(float *out, const float *Mb, const pass_shape *ps, const plan *p,
                              long t0, long t1, const out_mode *om, float *scratch);
/* Wg (36, K, nt) = A dY A^T for the F(4x4) tiles [t0, t1) of the output gradient dout. */
void wc_wino_grad_output_transform(float *Wg, const float *dout, const wc_conv_shape *s,
                                   const plan *p, long t0, long t1, float *scratch);
/* dst (K, C, 9) = (or, with add, +=) G^T dU G per filter, dU (36, K, C). */
void wc_wino_weight_grad_from(float *dst, const float *dU, int K, int C, int add);

/* ---- the products (wino_gemm.c) ------------------------------------------------------------ */

/* M[xi] (K, nt) = U[xi] (K, C) x V[xi] (C, nt) for the kd->tt positions of a block, each array
 * in its padded planes (plane_stride). */
void wc_wino_products(const kind *kd, int K, int nt, int C, const float *U, const float *V,
                      float *M);

#endif
