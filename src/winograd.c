/* winograd.c: 3x3 stride-1 convolution, forward and both gradients, by Winograd's minimal
 * filtering, as one cache-blocked pass over blocks of tiles.
 *
 * The arithmetic. Each m x m tile of output is A^T [ (G g G^T) .* (B^T d B) ] A, summed over
 * input channels, where d is the (m+2) x (m+2) input tile under it and g a 3x3 filter: one GEMM
 * per position xi of the transformed tile, between transformed weights U[xi] (K x C) and
 * transformed input tiles V[xi] (C x tiles). The weight gradient is the adjoint,
 *     dW = G^T [ sum over tiles (A dY A^T) .* (B^T d B) ] G,
 * GEMMs whose inner dimension is the number of tiles; the input gradient is a convolution of dY
 * with the flipped, transposed filters, padded by 2 - pad: the forward pass again.
 *
 * Two tile sizes. The forward uses F(2x2, 3x3): 16 multiplies per 4 outputs (instead of 36),
 * and each output's arithmetic reads only the 3x3 input pixels it depends on, so an input
 * beyond the receptive field never changes an output's bits (test_net checks it; prediction's
 * seams and the inference path rely on it). The two gradients use F(4x4, 3x3): 36 multiplies
 * per 16 outputs (instead of 144) and 2.25 transformed values per pixel instead of 4, at the
 * price of that locality (the transform of a 6x6 tile mixes rounding over 5 rows) and of about
 * ten times F(2x2)'s rounding, 1e-6 of the gradient's magnitude with the points 0, 1, -1, 2,
 * -2 of Lavin and Gray's matrices (test_layers compares every path with naive loops; their
 * tolerance is 1e-5).
 *
 * The pass. Tiles of the whole micro-batch are numbered (sample, tile row, tile column) and cut
 * into blocks of `nb` consecutive tiles, so the small images of the deep layers share a block
 * and every GEMM is at least nb wide. A block is transformed straight into the layout the GEMM
 * reads (V: one C x nb matrix per position), multiplied (M: K x nb per position) and transformed
 * back into the output (bias and ReLU applied there, or the input gradient added or masked
 * there) while it is still in cache; no transformed tensor of a whole layer ever exists. The
 * weight gradient's blocks are wider (its GEMMs' inner dimension) and gathered into a fixed
 * number of groups, each summing its blocks into its own partial dU; the partials are added in
 * group order at the end.
 *
 * Threads. Blocks (forward, input gradient) and groups (weight gradient) are the tasks; their
 * number and bounds come from the shape alone, and each writes only its own tiles or its own
 * partial, so any number of threads gives the same bits. OpenBLAS runs at one thread inside
 * each task.
 *
 * Not here: allocation (conv.c's caller passes the workspace), other shapes (conv.c). */
#include "wildcpu/winograd.h"

#include <cblas.h>
#include <string.h>

#include "wildcpu/util.h"

/* Block sizes, in floats of transformed data (V and M together) per block: the forward's and
 * input gradient's near L2 (512 KiB a core here), but no narrower than MIN_NB tiles, below
 * which OpenBLAS's per-call cost and its packing of U dominate; the weight gradient's wider,
 * since its GEMMs accumulate over tiles (measured on unet-lite with tools/bench). Each may be
 * set with -D to try another machine's caches; 64 Ki to 160 Ki floats measured alike here. */
#ifndef PASS_BLOCK_FLOATS
#define PASS_BLOCK_FLOATS (160 * 1024)
#endif
#ifndef WEIGHT_BLOCK_FLOATS
#define WEIGHT_BLOCK_FLOATS (512 * 1024)
#endif
#ifndef MIN_NB
#define MIN_NB 32
#endif
#define MAX_NB 1024
/* At least this many blocks when there are tiles enough, so that threads have work to share
 * even for a micro-batch of the deep layers' small images. */
#define MIN_BLOCKS 4
/* Weight-gradient groups (partial sums): a bound on the threads its pass can use. */
#define MAX_GROUPS 8
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

/* ---- the plan: tiles, blocks, groups -------------------------------------------------------- */

/* Floats from one transformed plane (one position xi) to the next, for planes of n floats:
 * n rounded up to whole cache lines, an odd number of them. The transforms write (or read) all
 * 16 or 36 planes of a tile at once; plane sizes like 128 x 64 floats (32 KiB) put all of them
 * in the same L1 sets and make every access alias the previous plane's (4 KiB apart), which
 * measured 4 to 8 times slower than the padded layout. */
static size_t plane_stride(size_t n) {
    size_t s = (n + 15) / 16 * 16;
    return (s / 16) % 2 ? s : s + 16;
}
#define PLANE_MAX(n) ((size_t)(n) + 32) /* plane_stride(n) <= this, for sizing */

typedef struct {
    int th, tw;  /* tile rows and columns of one image */
    long ntiles; /* N * th * tw */
    int nb;      /* tiles per block (the last block may have fewer) */
    int nblocks;
    int segw;    /* widest run of tiles of one tile row inside a block */
} plan;

static plan make_plan(const kind *kd, int N, int OH, int OW, int C, int K, size_t block_floats) {
    plan p;
    p.th = (OH + kd->m - 1) / kd->m, p.tw = (OW + kd->m - 1) / kd->m;
    p.ntiles = (long)N * p.th * p.tw;
    long nb = (long)(block_floats / ((size_t)kd->tt * (C + K)));
    nb = WC_MAX(nb, MIN_NB);
    nb = WC_MIN(nb, (p.ntiles + MIN_BLOCKS - 1) / MIN_BLOCKS);
    nb = WC_MAX(8, (nb + 7) / 8 * 8); /* whole SIMD vectors */
    nb = WC_MIN(nb, MAX_NB);
    nb = WC_MIN(nb, p.ntiles);
    p.nb = (int)nb;
    p.nblocks = (int)((p.ntiles + nb - 1) / nb);
    p.segw = (int)WC_MIN(nb, p.tw);
    return p;
}

/* A forward-like pass as the pipeline sees it: the forward reads inp (N, C, H, W) and writes
 * (N, K, OH, OW); the input gradient reads dout as its input and writes dinp. */
typedef struct {
    kind kd;
    int N, C, H, W, K, OH, OW, pad;
    size_t in_sample, out_sample; /* floats between samples */
} pass_shape;

static pass_shape forward_pass(const wc_conv_shape *s) {
    return (pass_shape){F2, s->N, s->C, s->H, s->W, s->K, s->OH, s->OW, s->pad, s->in_sample,
                        s->out_sample};
}

static pass_shape input_grad_pass(const wc_conv_shape *s) {
    return (pass_shape){F4, s->N, s->K, s->OH, s->OW, s->C, s->H, s->W, 2 - s->pad,
                        s->out_sample, s->in_sample};
}

/* The weight gradient tiles the forward's output with F(4x4) and reads the forward's input. */
static pass_shape weight_pass(const wc_conv_shape *s) {
    pass_shape ps = forward_pass(s);
    ps.kd = F4;
    return ps;
}

static plan pass_plan(const pass_shape *ps) {
    return make_plan(&ps->kd, ps->N, ps->OH, ps->OW, ps->C, ps->K, PASS_BLOCK_FLOATS);
}

static plan weight_plan(const pass_shape *ps) {
    return make_plan(&ps->kd, ps->N, ps->OH, ps->OW, ps->C, ps->K, WEIGHT_BLOCK_FLOATS);
}

static int groups_of(const plan *p) { return WC_MIN(p->nblocks, MAX_GROUPS); }

/* One run of tiles inside a tile row: image n, tile row ty, columns [tx0, tx1); pos is the
 * index of its first tile within the block. */
typedef struct {
    int n, ty, tx0, tx1, pos;
} segment;

/* The segment of the block [t0, t1) that starts at tile t (t0 <= t < t1). */
static segment segment_at(const plan *p, long t0, long t, long t1) {
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

/* ---- transforms of the filters -------------------------------------------------------------- */

/* u (ts) = G v for a 3-vector v. F(2x2): G's rows (1,0,0) (1/2,1/2,1/2) (1/2,-1/2,1/2) (0,0,1).
 * F(4x4): (1/4,0,0) (-1/6,-1/6,-1/6) (-1/6,1/6,-1/6) (1/24,1/12,1/6) (1/24,-1/12,1/6) (0,0,1). */
static inline void g_apply(const kind *kd, float *u, float v0, float v1, float v2) {
    if (kd->m == 2) {
        u[0] = v0;
        u[1] = 0.5f * (v0 + v1 + v2);
        u[2] = 0.5f * (v0 - v1 + v2);
        u[3] = v2;
        return;
    }
    const float sixth = 1.0f / 6.0f;
    float a = v0 + v2, b = 0.25f * v0 + v2;
    u[0] = 0.25f * v0;
    u[1] = -sixth * (a + v1);
    u[2] = -sixth * (a - v1);
    u[3] = sixth * (b + 0.5f * v1);
    u[4] = sixth * (b - 0.5f * v1);
    u[5] = v2;
}

/* r (3) = G^T z for a 6-vector z: the adjoint of F(4x4)'s g_apply. */
static inline void gt4_apply(float *r, const float *z) {
    const float sixth = 1.0f / 6.0f;
    float s12 = z[1] + z[2], d12 = z[2] - z[1], s34 = z[3] + z[4], d34 = z[3] - z[4];
    r[0] = 0.25f * z[0] - sixth * s12 + (sixth * 0.25f) * s34;
    r[1] = sixth * d12 + (sixth * 0.5f) * d34;
    r[2] = sixth * (s34 - s12) + z[5];
}

typedef struct {
    kind kd;
    float *U;            /* (tt, rows, cols) */
    const float *weight; /* (K, C, 3, 3) */
    int K, C;
    int transposed;      /* U[xi][c][k] from the flipped filter, for the input gradient */
    int ntasks;
} weights_job;

/* U[xi] = G g G^T for the filters of a share of the rows of U. */
static void weights_task(void *arg, int task, int thread) {
    const weights_job *j = arg;
    const int ts = j->kd.ts;
    const int rows = j->transposed ? j->C : j->K, cols = j->transposed ? j->K : j->C;
    const size_t plane = plane_stride((size_t)rows * cols);
    long lo, hi;
    wc_pool_share(rows, task, j->ntasks, &lo, &hi);
    for (long r = lo; r < hi; r++)
        for (int q = 0; q < cols; q++) {
            const int k = j->transposed ? q : (int)r, c = j->transposed ? (int)r : q;
            const float *w = j->weight + ((size_t)k * j->C + c) * 9;
            float g[9], t[6][3], u[6];
            for (int i = 0; i < 9; i++) g[i] = j->transposed ? w[8 - i] : w[i];
            for (int col = 0; col < 3; col++) { /* t = G g */
                g_apply(&j->kd, u, g[col], g[3 + col], g[6 + col]);
                for (int i = 0; i < ts; i++) t[i][col] = u[i];
            }
            float *dst = j->U + (size_t)r * cols + q;
            for (int i = 0; i < ts; i++) { /* (G g) G^T, a row at a time */
                g_apply(&j->kd, u, t[i][0], t[i][1], t[i][2]);
                for (int jj = 0; jj < ts; jj++) dst[(size_t)(ts * i + jj) * plane] = u[jj];
            }
        }
}

static void transform_weights(const kind *kd, float *U, const float *weight, int K, int C,
                              int transposed, wc_pool *pool) {
    weights_job j = {*kd, U, weight, K, C, transposed, 0};
    j.ntasks = WC_MIN(transposed ? C : K, 4 * wc_pool_threads(pool));
    wc_pool_run(pool, j.ntasks, weights_task, &j);
}

/* ---- row kernels ------------------------------------------------------------------------------ */

/* Each kernel combines whole rows of values, one value per tile, so every loop runs along the
 * tiles of a row with unit stride and vectorizes (restrict: no row overlaps one written). */

/* F(2x2): o = B^T d, rows (1,0,-1,0) (0,1,1,0) (0,-1,1,0) (0,1,0,-1). */
static inline void bt2_rows(float *restrict o0, float *restrict o1, float *restrict o2,
                            float *restrict o3, const float *restrict d0,
                            const float *restrict d1, const float *restrict d2,
                            const float *restrict d3, int w) {
    for (int i = 0; i < w; i++) {
        o0[i] = d0[i] - d2[i];
        o1[i] = d1[i] + d2[i];
        o2[i] = d2[i] - d1[i];
        o3[i] = d1[i] - d3[i];
    }
}

/* F(4x4): o = B^T d, rows (4,0,-5,0,1,0) (0,-4,-4,1,1,0) (0,4,-4,-1,1,0) (0,-2,-1,2,1,0)
 * (0,2,-1,-2,1,0) (0,4,0,-5,0,1), shared terms first. */
static inline void bt4_rows(float *restrict o0, float *restrict o1, float *restrict o2,
                            float *restrict o3, float *restrict o4, float *restrict o5,
                            const float *restrict d0, const float *restrict d1,
                            const float *restrict d2, const float *restrict d3,
                            const float *restrict d4, const float *restrict d5, int w) {
    for (int i = 0; i < w; i++) {
        float a = d4[i] - 4.0f * d2[i], b = d3[i] - 4.0f * d1[i];
        float c = d4[i] - d2[i], e = 2.0f * (d3[i] - d1[i]);
        o0[i] = 4.0f * (d0[i] - d2[i]) + c;
        o1[i] = a + b;
        o2[i] = a - b;
        o3[i] = c + e;
        o4[i] = c - e;
        o5[i] = 4.0f * (d1[i] - d3[i]) + (d5[i] - d3[i]);
    }
}

/* F(2x2): o = A^T m, rows (1,1,1,0) (0,1,-1,-1). */
static inline void at2_rows(float *restrict o0, float *restrict o1, const float *restrict m0,
                            const float *restrict m1, const float *restrict m2,
                            const float *restrict m3, int w) {
    for (int i = 0; i < w; i++) {
        o0[i] = m0[i] + m1[i] + m2[i];
        o1[i] = m1[i] - m2[i] - m3[i];
    }
}

/* F(4x4): o = A^T m, rows (1,1,1,1,1,0) (0,1,-1,2,-2,0) (0,1,1,4,4,0) (0,1,-1,8,-8,1). */
static inline void at4_rows(float *restrict o0, float *restrict o1, float *restrict o2,
                            float *restrict o3, const float *restrict m0,
                            const float *restrict m1, const float *restrict m2,
                            const float *restrict m3, const float *restrict m4,
                            const float *restrict m5, int w) {
    for (int i = 0; i < w; i++) {
        float s12 = m1[i] + m2[i], d12 = m1[i] - m2[i], s34 = m3[i] + m4[i], d34 = m3[i] - m4[i];
        o0[i] = m0[i] + s12 + s34;
        o1[i] = d12 + 2.0f * d34;
        o2[i] = s12 + 4.0f * s34;
        o3[i] = d12 + 8.0f * d34 + m5[i];
    }
}

/* F(4x4): o = A y (the adjoint of at4_rows), rows (1,0,0,0) (1,1,1,1) (1,-1,1,-1) (1,2,4,8)
 * (1,-2,4,-8) (0,0,0,1). */
static inline void a4_rows(float *restrict o0, float *restrict o1, float *restrict o2,
                           float *restrict o3, float *restrict o4, float *restrict o5,
                           const float *restrict y0, const float *restrict y1,
                           const float *restrict y2, const float *restrict y3, int w) {
    for (int i = 0; i < w; i++) {
        float e = y0[i] + y2[i], d = y1[i] + y3[i], e4 = y0[i] + 4.0f * y2[i];
        float d4 = 2.0f * (y1[i] + 4.0f * y3[i]);
        o0[i] = y0[i];
        o1[i] = e + d;
        o2[i] = e - d;
        o3[i] = e4 + d4;
        o4[i] = e4 - d4;
        o5[i] = y3[i];
    }
}

/* o = B^T d over kd->ts rows (pointer arrays, each row w long). */
static inline void bt_rows(const kind *kd, float *const *o, const float *const *d, int w) {
    if (kd->m == 2)
        bt2_rows(o[0], o[1], o[2], o[3], d[0], d[1], d[2], d[3], w);
    else
        bt4_rows(o[0], o[1], o[2], o[3], o[4], o[5], d[0], d[1], d[2], d[3], d[4], d[5], w);
}

/* o (m rows) = A^T m (ts rows). */
static inline void at_rows(const kind *kd, float *const *o, const float *const *m, int w) {
    if (kd->m == 2)
        at2_rows(o[0], o[1], m[0], m[1], m[2], m[3], w);
    else
        at4_rows(o[0], o[1], o[2], o[3], m[0], m[1], m[2], m[3], m[4], m[5], w);
}

/* p_q[i] = src[m i + q] for q < m: a row split into the m phases of the tile grid, so that a
 * tile's values are the same index of m (or, shifted by one, m + 2) unit-stride rows. */
static inline void deinterleave(int m, float *const *p, const float *restrict src, int n) {
    if (m == 2) {
        float *restrict p0 = p[0], *restrict p1 = p[1];
        for (int i = 0; i < n; i++) p0[i] = src[2 * i], p1[i] = src[2 * i + 1];
        return;
    }
    float *restrict p0 = p[0], *restrict p1 = p[1], *restrict p2 = p[2], *restrict p3 = p[3];
    for (int i = 0; i < n; i++) {
        p0[i] = src[4 * i];
        p1[i] = src[4 * i + 1];
        p2[i] = src[4 * i + 2];
        p3[i] = src[4 * i + 3];
    }
}

/* dst[m i + q] = p_q[i], the inverse of deinterleave. */
static inline void interleave(int m, float *restrict dst, const float *const *p, int n) {
    if (m == 2) {
        const float *restrict p0 = p[0], *restrict p1 = p[1];
        for (int i = 0; i < n; i++) dst[2 * i] = p0[i], dst[2 * i + 1] = p1[i];
        return;
    }
    const float *restrict p0 = p[0], *restrict p1 = p[1], *restrict p2 = p[2],
                          *restrict p3 = p[3];
    for (int i = 0; i < n; i++) {
        dst[4 * i] = p0[i];
        dst[4 * i + 1] = p1[i];
        dst[4 * i + 2] = p2[i];
        dst[4 * i + 3] = p3[i];
    }
}

/* Row scratch of one thread, in floats: the input transform's ring of ts transformed rows
 * (ts x ts x segw) and m phase rows, or the vertical half of an output transform (m x ts x
 * segw), m phase rows and one output row; plus slack for the row ends. */
static size_t scratch_floats(const kind *kd, const plan *p) {
    return ((size_t)kd->tt + 2 * kd->m) * (p->segw + 1) + 64;
}

/* ---- transforms of tiles ---------------------------------------------------------------------- */

/* h (ts, segw): B^T along input row y for the tiles [tx0, tx1) of a segment, tile tx reading
 * columns m tx - pad .. m tx - pad + ts - 1 (zero outside the image). The row is split into its
 * phases straight from the image; only the phase groups at its ends go through bounds checks.
 * phase: m (segw + 1) floats. */
static void input_row(const pass_shape *ps, float *h, int segw, const float *img, int y, int tx0,
                      int tx1, float *phase) {
    const int m = ps->kd.m, w = tx1 - tx0, n = w + 1, x0 = m * tx0 - ps->pad;
    if (y < 0 || y >= ps->H) {
        for (int j = 0; j < ps->kd.ts; j++) memset(h + (size_t)j * segw, 0, sizeof(float) * w);
        return;
    }
    float *p[4] = {0};
    for (int q = 0; q < m; q++) p[q] = phase + (size_t)q * (segw + 1);
    const float *row = img + (size_t)y * ps->W;
    /* phase group i reads columns x0 + m i .. x0 + m i + m - 1: inside the row for i in [lo, hi) */
    int lo = x0 >= 0 ? 0 : (-x0 + m - 1) / m;
    int hi = ps->W - x0 >= m ? (ps->W - x0 - m) / m + 1 : 0;
    lo = WC_MIN(lo, n), hi = WC_MAX(lo, WC_MIN(hi, n));
    if (hi > lo) {
        float *pl[4] = {0};
        for (int q = 0; q < m; q++) pl[q] = p[q] + lo;
        deinterleave(m, pl, row + x0 + m * lo, hi - lo);
    }
    for (int i = 0; i < n; i++) {
        if (i == lo) i = hi;
        if (i >= n) break;
        for (int q = 0; q < m; q++) {
            int x = x0 + m * i + q;
            p[q][i] = x >= 0 && x < ps->W ? row[x] : 0.0f;
        }
    }
    float *o[6] = {0};
    const float *d[6] = {0};
    for (int j = 0; j < ps->kd.ts; j++) o[j] = h + (size_t)j * segw;
    for (int q = 0; q < m; q++) d[q] = p[q];
    d[m] = p[0] + 1, d[m + 1] = p[1] + 1;
    bt_rows(&ps->kd, o, d, w);
}

/* V (tt, C, nt) for the tiles [t0, t1) of the input x: B^T d B per tile and channel. The
 * horizontal half is computed once per input row and kept in a ring of ts rows, since
 * consecutive tile rows share two input rows; the vertical half combines ts of them. */
static void input_transform(float *V, const float *x, const pass_shape *ps, const plan *p,
                            long t0, long t1, float *scratch) {
    const int ts = ps->kd.ts, sw = p->segw;
    const long nt = t1 - t0;
    const size_t plane = plane_stride((size_t)ps->C * nt), hsz = (size_t)ts * sw;
    float *phase = scratch + ts * hsz;
    /* the input rows the block reads, in each image it touches: a contiguous strip of every
     * plane, fetched PREFETCH_AHEAD channels ahead (planes are far apart, too far for the
     * hardware prefetcher to follow from one to the next) */
    const segment sa = segment_at(p, t0, t0, t1), sb = segment_at(p, t0, t1 - 1, t1);
    for (int c = 0; c < ps->C; c++) {
        if (c + PREFETCH_AHEAD < ps->C)
            for (int n = sa.n; n <= sb.n; n++) {
                int ya = n == sa.n ? ps->kd.m * sa.ty - ps->pad : 0;
                int yb = n == sb.n ? ps->kd.m * sb.ty - ps->pad + ts : ps->H;
                ya = WC_MAX(ya, 0), yb = WC_MIN(yb, ps->H);
                const size_t row0 = ((size_t)(c + PREFETCH_AHEAD) * ps->H + ya) * ps->W;
                const char *strip = (const char *)(x + (size_t)n * ps->in_sample + row0);
                for (size_t b = 0; b < sizeof(float) * (size_t)(yb - ya) * ps->W; b += 64)
                    __builtin_prefetch(strip + b);
            }
        float *ring[6];
        for (int r = 0; r < ts; r++) ring[r] = scratch + r * hsz;
        segment prev = {-1, -1, -1, -1, 0};
        for (long t = t0; t < t1;) {
            segment g = segment_at(p, t0, t, t1);
            t += g.tx1 - g.tx0;
            const float *img = x + (size_t)g.n * ps->in_sample + (size_t)c * ps->H * ps->W;
            const int y0 = ps->kd.m * g.ty - ps->pad;
            int first = 0; /* rows of the ring still valid from the previous tile row */
            if (g.n == prev.n && g.ty == prev.ty + 1 && g.tx0 == prev.tx0 && g.tx1 == prev.tx1) {
                float *keep0 = ring[ts - 2], *keep1 = ring[ts - 1];
                for (int r = ts - 1; r >= 2; r--) ring[r] = ring[r - 2];
                ring[0] = keep0, ring[1] = keep1;
                first = 2;
            }
            for (int r = first; r < ts; r++)
                input_row(ps, ring[r], sw, img, y0 + r, g.tx0, g.tx1, phase);
            prev = g;
            float *v = V + (size_t)c * nt + g.pos;
            for (int j = 0; j < ts; j++) { /* B^T down the columns: positions (0..ts-1, j) */
                float *o[6] = {0};
                const float *d[6] = {0};
                for (int i = 0; i < ts; i++) {
                    o[i] = v + (size_t)(ts * i + j) * plane;
                    d[i] = ring[i] + (size_t)j * sw;
                }
                bt_rows(&ps->kd, o, d, g.tx1 - g.tx0);
            }
        }
    }
}

/* What the output transform does with each value v it computes for out[n, k, y, x]:
 * out = bias[k] + v, then max(., 0) with relu (a NaN passes, as wc_relu_forward lets it);
 * or out = v, or out += v with add; then, with mask, 0 where mask[n, k, y, x] <= 0. */
typedef struct {
    const float *bias;
    int relu, add;
    const float *mask; /* laid out as out */
} out_mode;

/* One output row segment o (n values) from the transform's values v, as the mode says. */
static inline void store_row(float *restrict o, const float *restrict v, const float *restrict mk,
                             float b0, const out_mode *om, int n) {
    if (om->relu) {
        for (int i = 0; i < n; i++) {
            float t = b0 + v[i];
            o[i] = t > 0.0f || t != t ? t : 0.0f;
        }
    } else if (om->add) {
        for (int i = 0; i < n; i++) o[i] += v[i];
    } else {
        for (int i = 0; i < n; i++) o[i] = b0 + v[i];
    }
    if (mk)
        for (int i = 0; i < n; i++) o[i] = mk[i] > 0.0f ? o[i] : 0.0f;
}

/* out (N, K, OH, OW) for the tiles [t0, t1) from M (tt, K, nt): A^T m A per tile and channel,
 * applied as the mode says. The vertical half first (ts rows of each tile into m), then the
 * horizontal half gives each output row's m phases, interleaved into the row. */
static void output_transform(float *out, const float *Mb, const pass_shape *ps, const plan *p,
                             long t0, long t1, const out_mode *om, float *scratch) {
    const int m = ps->kd.m, ts = ps->kd.ts;
    const long nt = t1 - t0;
    const size_t plane = plane_stride((size_t)ps->K * nt), sw = p->segw;
    float *a = scratch;                       /* (m, ts, segw): A^T m down the columns */
    float *q = a + (size_t)m * ts * sw;       /* (m, segw): one output row's m phases */
    float *rowbuf = q + (size_t)m * sw;       /* (m segw): that row */
    for (int k = 0; k < ps->K; k++) {
        const float b0 = om->bias ? om->bias[k] : 0.0f;
        for (long t = t0; t < t1;) {
            segment g = segment_at(p, t0, t, t1);
            t += g.tx1 - g.tx0;
            const int w = g.tx1 - g.tx0;
            const float *mk = Mb + (size_t)k * nt + g.pos;
            for (int j = 0; j < ts; j++) {
                float *o[4] = {0};
                const float *in[6] = {0};
                for (int r = 0; r < m; r++) o[r] = a + (size_t)(r * ts + j) * sw;
                for (int i = 0; i < ts; i++) in[i] = mk + (size_t)(ts * i + j) * plane;
                at_rows(&ps->kd, o, in, w);
            }
            const size_t base = (size_t)g.n * ps->out_sample + (size_t)k * ps->OH * ps->OW;
            const int x0 = m * g.tx0, ncols = WC_MIN(m * w, ps->OW - x0);
            for (int r = 0; r < m; r++) {
                const int y = m * g.ty + r;
                if (y >= ps->OH) break;
                float *o[4] = {0};
                const float *in[6] = {0};
                for (int i = 0; i < m; i++) o[i] = q + (size_t)i * sw;
                for (int jj = 0; jj < ts; jj++) in[jj] = a + (size_t)(r * ts + jj) * sw;
                at_rows(&ps->kd, o, in, w);
                interleave(m, rowbuf, (const float *const *)o, w);
                const size_t at = base + (size_t)y * ps->OW + x0;
                store_row(out + at, rowbuf, om->mask ? om->mask + at : NULL, b0, om, ncols);
            }
        }
    }
}

/* Wg (36, K, nt) for the tiles [t0, t1): A dy A^T of each 4x4 tile of dout (zero beyond the
 * output's edge), the horizontal half per output row, then the vertical half (F(4x4) only). */
static void grad_output_transform(float *Wg, const float *dout, const wc_conv_shape *s,
                                  const plan *p, long t0, long t1, float *scratch) {
    const long nt = t1 - t0;
    const size_t plane = plane_stride((size_t)s->K * nt), sw = p->segw;
    float *h = scratch;                    /* (4, 6, segw) */
    float *ph = h + (size_t)4 * 6 * sw;    /* (4, segw + 1) */
    float *pad_row = ph + 4 * (sw + 1);    /* (4 segw) */
    for (int k = 0; k < s->K; k++) {
        for (long t = t0; t < t1;) {
            segment g = segment_at(p, t0, t, t1);
            t += g.tx1 - g.tx0;
            const int w = g.tx1 - g.tx0, x0 = 4 * g.tx0;
            const float *img = dout + (size_t)g.n * s->out_sample + (size_t)k * s->OH * s->OW;
            float *pq[4] = {ph, ph + sw + 1, ph + 2 * (sw + 1), ph + 3 * (sw + 1)};
            for (int r = 0; r < 4; r++) {
                const int y = 4 * g.ty + r;
                const float *src = img + (size_t)y * s->OW + x0;
                if (y >= s->OH || x0 + 4 * w > s->OW) { /* the bottom or right edge: zero-padded */
                    int nv = y >= s->OH ? 0 : s->OW - x0;
                    memset(pad_row, 0, sizeof(float) * 4 * w);
                    if (nv > 0) memcpy(pad_row, src, sizeof(float) * nv);
                    src = pad_row;
                }
                deinterleave(4, pq, src, w);
                float *hr = h + (size_t)(r * 6) * sw;
                a4_rows(hr, hr + sw, hr + 2 * sw, hr + 3 * sw, hr + 4 * sw, hr + 5 * sw, pq[0],
                        pq[1], pq[2], pq[3], w);
            }
            float *wg = Wg + (size_t)k * nt + g.pos;
            for (int j = 0; j < 6; j++) {
                float *oj = wg + (size_t)j * plane;
                const size_t os = 6 * plane;
                const float *hj = h + (size_t)j * sw;
                a4_rows(oj, oj + os, oj + 2 * os, oj + 3 * os, oj + 4 * os, oj + 5 * os, hj,
                        hj + 6 * sw, hj + 12 * sw, hj + 18 * sw, w);
            }
        }
    }
}

/* ---- the forward-like passes ------------------------------------------------------------------- */

/* Per-thread workspace of a forward-like pass: V (tt, C, nb), M (tt, K, nb), row scratch. */
static size_t pass_thread_floats(const pass_shape *ps, const plan *p) {
    return ps->kd.tt * (PLANE_MAX((size_t)ps->C * p->nb) + PLANE_MAX((size_t)ps->K * p->nb)) +
           scratch_floats(&ps->kd, p);
}

typedef struct {
    const pass_shape *ps;
    const plan *p;
    const float *U;   /* (tt, K, C) */
    const float *in;
    float *out;
    out_mode om;
    float *work;      /* per-thread parts, `per_thread` floats each */
    size_t per_thread;
} pass_job;

/* One block: transform, one GEMM per position, transform back. */
static void pass_task(void *arg, int block, int thread) {
    const pass_job *j = arg;
    const pass_shape *ps = j->ps;
    const plan *p = j->p;
    const int tt = ps->kd.tt;
    const long t0 = (long)block * p->nb, t1 = WC_MIN(p->ntiles, t0 + p->nb);
    const int nt = (int)(t1 - t0);
    float *V = j->work + (size_t)thread * j->per_thread; /* (tt, C, nt) */
    float *M = V + tt * PLANE_MAX((size_t)ps->C * p->nb); /* (tt, K, nt) */
    float *scratch = M + tt * PLANE_MAX((size_t)ps->K * p->nb);
    input_transform(V, j->in, ps, p, t0, t1, scratch);
    for (int xi = 0; xi < tt; xi++) /* M[xi] (K, nt) = U[xi] (K, C) x V[xi] (C, nt) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, ps->K, nt, ps->C, 1.0f,
                    j->U + xi * plane_stride((size_t)ps->K * ps->C), ps->C,
                    V + xi * plane_stride((size_t)ps->C * nt), nt, 0.0f,
                    M + xi * plane_stride((size_t)ps->K * nt), nt);
    output_transform(j->out, M, ps, p, t0, t1, &j->om, scratch);
}

static void run_pass(float *out, const float *in, const float *U, const pass_shape *ps,
                     const out_mode *om, wc_pool *pool, float *thread_work) {
    plan p = pass_plan(ps);
    pass_job j = {ps, &p, U, in, out, *om, thread_work, pass_thread_floats(ps, &p)};
    wc_pool_run(pool, p.nblocks, pass_task, &j);
}

/* ---- workspace ---------------------------------------------------------------------------------- */

/* Per-thread workspace of the weight gradient: V (36, C, nb), Wg (36, K, nb), dU (36, K, C),
 * row scratch. */
static size_t weight_thread_floats(const pass_shape *ps, const plan *p) {
    return 36 * (PLANE_MAX((size_t)ps->C * p->nb) + PLANE_MAX((size_t)ps->K * p->nb) +
                 PLANE_MAX((size_t)ps->K * ps->C)) +
           scratch_floats(&ps->kd, p);
}

/* Shared by the threads: the transformed weights (forward: 16 K C; input gradient: 36 C K), or
 * the weight gradient's partials (groups, K, C, 9). */
static size_t shared_floats(const wc_conv_shape *s) {
    pass_shape wps = weight_pass(s);
    plan wp = weight_plan(&wps);
    size_t partials = groups_of(&wp) > 1 ? (size_t)groups_of(&wp) * 9 * s->K * s->C : 0;
    return WC_MAX(36 * PLANE_MAX((size_t)s->K * s->C), partials);
}

/* The workspace for exactly s->N samples. */
static size_t workspace_for(const wc_conv_shape *s, int threads) {
    pass_shape f = forward_pass(s), b = input_grad_pass(s), w = weight_pass(s);
    plan pf = pass_plan(&f), pb = pass_plan(&b), pw = weight_plan(&w);
    size_t per = WC_MAX(pass_thread_floats(&f, &pf), pass_thread_floats(&b, &pb));
    per = WC_MAX(per, weight_thread_floats(&w, &pw));
    return shared_floats(s) + (size_t)WC_MAX(threads, 1) * per;
}

int wc_wino_applies(const wc_conv_shape *s) {
    return s->KH == 3 && s->KW == 3 && s->stride == 1 && s->pad <= 2;
}

/* Blocks and groups depend on N (fewer samples, narrower blocks; the group count need not
 * grow with N), so the workspace for up to N samples is the largest over 1..N. */
size_t wc_wino_workspace_floats(const wc_conv_shape *s, int threads) {
    size_t need = 0;
    wc_conv_shape t = *s;
    for (t.N = 1; t.N <= s->N; t.N++) need = WC_MAX(need, workspace_for(&t, threads));
    return need;
}

void wc_wino_forward(float *out, const float *inp, const float *weight, const float *bias,
                     const wc_conv_shape *s, int flags, wc_pool *pool, float *work) {
    pass_shape ps = forward_pass(s);
    float *U = work; /* (16, K, C) */
    transform_weights(&ps.kd, U, weight, s->K, s->C, 0, pool);
    out_mode om = {.bias = bias, .relu = (flags & WC_CONV_RELU) != 0};
    run_pass(out, inp, U, &ps, &om, pool, work + shared_floats(s));
}

/* ---- the weight gradient ---------------------------------------------------------------------- */

typedef struct {
    const pass_shape *ps;
    const plan *p;
    int groups;
    const float *dout, *inp;
    const wc_conv_shape *s;
    float *dweight;  /* with one group: dweight itself, added into */
    float *partials; /* (groups, K, C, 9) otherwise, overwritten */
    float *work;
    size_t per_thread;
} weight_job;

/* dst (K, C, 9) = or += G^T dU G per filter, dU (36, K, C). */
static void weight_grad_from(float *dst, const float *dU, int K, int C, int add) {
    const size_t plane = plane_stride((size_t)K * C);
    for (size_t kc = 0; kc < (size_t)K * C; kc++) {
        float m[36], t[3][6], r[3];
        for (int xi = 0; xi < 36; xi++) m[xi] = dU[(size_t)xi * plane + kc];
        for (int j = 0; j < 6; j++) { /* G^T m down each column */
            float z[6];
            for (int i = 0; i < 6; i++) z[i] = m[6 * i + j];
            gt4_apply(r, z);
            for (int i = 0; i < 3; i++) t[i][j] = r[i];
        }
        float *g = dst + kc * 9;
        for (int i = 0; i < 3; i++) { /* (G^T m) G along each row */
            gt4_apply(r, t[i]);
            for (int jj = 0; jj < 3; jj++) g[3 * i + jj] = add ? g[3 * i + jj] + r[jj] : r[jj];
        }
    }
}

/* One group of blocks: their transforms and GEMMs summed into this thread's dU, then brought
 * back to the 3x3 domain. */
static void weight_task(void *arg, int group, int thread) {
    const weight_job *j = arg;
    const pass_shape *ps = j->ps;
    const plan *p = j->p;
    const int K = ps->K, C = ps->C;
    float *V = j->work + (size_t)thread * j->per_thread; /* (36, C, nt) */
    float *Wg = V + 36 * PLANE_MAX((size_t)C * p->nb);   /* (36, K, nt) */
    float *dU = Wg + 36 * PLANE_MAX((size_t)K * p->nb);  /* (36, K, C) */
    float *scratch = dU + 36 * PLANE_MAX((size_t)K * C);
    long b0, b1;
    wc_pool_share(p->nblocks, group, j->groups, &b0, &b1);
    for (long b = b0; b < b1; b++) {
        const long t0 = b * p->nb, t1 = WC_MIN(p->ntiles, t0 + p->nb);
        const int nt = (int)(t1 - t0);
        input_transform(V, j->inp, ps, p, t0, t1, scratch);
        grad_output_transform(Wg, j->dout, j->s, p, t0, t1, scratch);
        for (int xi = 0; xi < 36; xi++) /* dU[xi] (K, C) += Wg[xi] (K, nt) x V[xi]^T (nt, C) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, K, C, nt, 1.0f,
                        Wg + xi * plane_stride((size_t)K * nt), nt,
                        V + xi * plane_stride((size_t)C * nt), nt, b == b0 ? 0.0f : 1.0f,
                        dU + xi * plane_stride((size_t)K * C), C);
    }
    if (j->groups == 1)
        weight_grad_from(j->dweight, dU, K, C, 1);
    else
        weight_grad_from(j->partials + (size_t)group * 9 * K * C, dU, K, C, 0);
}

typedef struct {
    float *dweight;
    const float *partials;
    size_t n; /* K * C * 9 */
    int groups, ntasks;
} sum_job;

/* dweight += the partials, in group order, over a share of the elements. */
static void sum_task(void *arg, int task, int thread) {
    const sum_job *j = arg;
    long lo, hi;
    wc_pool_share((long)j->n, task, j->ntasks, &lo, &hi);
    for (int g = 0; g < j->groups; g++) {
        const float *restrict src = j->partials + (size_t)g * j->n;
        float *restrict dst = j->dweight;
        for (long i = lo; i < hi; i++) dst[i] += src[i];
    }
}

void wc_wino_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                      const float *inp, const float *weight, const wc_conv_shape *s, int flags,
                      wc_pool *pool, float *work) {
    float *shared = work, *thread_work = work + shared_floats(s);
    const int nthreads = wc_pool_threads(pool);
    if (dbias) wc_conv_bias_grad(dbias, dout, s, pool);
    pass_shape wps = weight_pass(s);
    plan wp = weight_plan(&wps);
    weight_job wj = {&wps, &wp, groups_of(&wp), dout, inp, s, dweight, shared, thread_work,
                     weight_thread_floats(&wps, &wp)};
    wc_pool_run(pool, wj.groups, weight_task, &wj);
    if (wj.groups > 1) {
        sum_job sj = {dweight, shared, (size_t)9 * s->K * s->C, wj.groups, 4 * nthreads};
        wc_pool_run(pool, sj.ntasks, sum_task, &sj);
    }
    if (!dinp) return;
    /* the input gradient: the forward pass over dout with the flipped, transposed filters */
    pass_shape ps = input_grad_pass(s);
    float *U = shared; /* (36, C, K) */
    transform_weights(&ps.kd, U, weight, s->K, s->C, 1, pool);
    out_mode om = {.add = !(flags & WC_CONV_DINP_WRITE),
                   .mask = flags & WC_CONV_DINP_RELU_MASK ? inp : NULL};
    run_pass(dinp, dout, U, &ps, &om, pool, thread_work);
}
