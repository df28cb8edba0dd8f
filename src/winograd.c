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
 * weight gradient cuts the tiles into a power-of-two number of groups of equal size, each
 * summing its blocks (wider: the GEMMs' inner dimension) into its own partial dU; the partials
 * are added in group order at the end.
 *
 * Threads. Blocks (forward, input gradient) and groups (weight gradient) are the tasks; their
 * number and bounds come from the shape alone, and each writes only its own tiles or its own
 * partial, so any number of threads gives the same bits. OpenBLAS runs at one thread inside
 * each task.
 *
 * Not here: the transforms themselves (winograd_tf.c), the forward-like passes' products
 * (wino_gemm.c: an AVX2/FMA kernel that reads V and U in place, or OpenBLAS), allocation
 * (conv.c's caller passes the workspace), other shapes (conv.c). */
#include "wildcpu/winograd.h"

#include <cblas.h>
#include <string.h>

#include "wildcpu/util.h"
#include "winograd_tiles.h"

/* Block sizes, in floats of transformed data (V and M together) per block: the forward's and
 * input gradient's near L2 (512 KiB a core here), but no narrower than MIN_NB tiles, below
 * which OpenBLAS's per-call cost and its packing of U dominate; the weight gradient's wider,
 * since its GEMMs accumulate over tiles (measured on unet-lite with tools/bench). Each may be
 * set with -D to try another machine's caches; 64 Ki to 160 Ki floats measured alike here.
 * The weight gradient's, with its equal groups (2026-12-07, AMD EPYC family 26, the pass alone
 * timed beside a variant in one process): 256 Ki 3% slower at 1 thread, 1 Mi alike. */
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
/* Weight-gradient groups (partial sums): a bound on the threads its pass can use. 4 made the
 * pass 2% faster at 1 thread and 5% at 2 (fewer partials to transform and add; measured as
 * above), but would leave every thread past the fourth idle in it. */
#define MAX_GROUPS 8

/* ---- the plan: tiles, blocks, groups -------------------------------------------------------- */

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

static pass_shape forward_pass(const wc_conv_shape *s) {
    return (pass_shape){F2,    s->N,  s->C,   s->H,         s->W,         s->K,
                        s->OH, s->OW, s->pad, s->in_sample, s->out_sample};
}

static pass_shape input_grad_pass(const wc_conv_shape *s) {
    return (pass_shape){F4,   s->N, s->K,       s->OH,         s->OW,       s->C,
                        s->H, s->W, 2 - s->pad, s->out_sample, s->in_sample};
}

/* The weight gradient tiles the forward's output with F(4x4) and reads the forward's input. */
static pass_shape weight_pass(const wc_conv_shape *s) {
    pass_shape ps = forward_pass(s);
    ps.kd = F4;
    return ps;
}

/* A forward-like pass's blocks are a whole number of the product kernel's panels of tiles (32
 * columns at 16 lanes, two panels at 8) where they can be: a block ending in a narrower panel
 * runs it at a lower rate (unet-lite's products at 16 lanes, AMD EPYC family 25, 1 thread:
 * 81-86 GFLOP/s for its blocks of 40 tiles, 81-102 at all the widths they had, 97-110 at the
 * nearest multiples of 32). So the cache's width is rounded to the nearest multiple of
 * PANEL_TILES, down where up would leave fewer than MIN_BLOCKS blocks. The bits do not
 * change: each product's column depends on its own tile alone (wino_gemm.c). The weight
 * gradient's blocks are not rounded: its groups, and so its rounding, follow from the cache's
 * block count (weight_plan). */
#define PANEL_TILES 32

static plan pass_plan(const pass_shape *ps) {
    plan p = make_plan(&ps->kd, ps->N, ps->OH, ps->OW, ps->C, ps->K, PASS_BLOCK_FLOATS);
    if (p.nb < PANEL_TILES) return p;
    long nb = (p.nb + PANEL_TILES / 2) / PANEL_TILES * PANEL_TILES;
    if (nb > (p.ntiles + MIN_BLOCKS - 1) / MIN_BLOCKS) nb = p.nb / PANEL_TILES * PANEL_TILES;
    p.nb = (int)WC_MIN(nb, MAX_NB);
    p.nblocks = (int)((p.ntiles + p.nb - 1) / p.nb);
    p.segw = (int)WC_MIN(p.nb, p.tw);
    return p;
}

/* The weight gradient's groups: tile ranges of equal size (to a tile), a power of two of them
 * (so that 2, 4 or 8 threads get equal shares) and no more than the blocks the cache allows
 * (each group's partial costs a transform and a sum). Groups of whole blocks were unequal for
 * most unet-lite layers (5, 7, 9 or 13 blocks), leaving one of two threads idle at the pass's
 * end; these groups made the pass 6% faster at 2 threads and 3% at 1 (docs/performance.md). */
static int groups_of(const plan *p) {
    int g = 1;
    while (2 * g <= WC_MIN(MAX_GROUPS, p->nblocks)) g *= 2;
    return g;
}

/* Inside a group, blocks of equal width about the cache's: a group of gt tiles is cut into the
 * nearest whole number of nb-wide blocks, so that none is a sliver. Only nb is used after this:
 * nblocks stays the cache's count, which groups_of reads. */
static plan weight_plan(const pass_shape *ps) {
    plan p = make_plan(&ps->kd, ps->N, ps->OH, ps->OW, ps->C, ps->K, WEIGHT_BLOCK_FLOATS);
    const int groups = groups_of(&p);
    const long gt = (p.ntiles + groups - 1) / groups;
    const long per_group = WC_MAX((gt + MAX_NB - 1) / MAX_NB, (gt + p.nb / 2) / p.nb);
    p.nb = (int)(((gt + per_group - 1) / per_group + 7) / 8 * 8);
    p.segw = (int)WC_MIN(p.nb, p.tw);
    return p;
}

/* ---- the forward-like passes -------------------------------------------------------------------
 */

/* Per-thread workspace of a forward-like pass: V (tt, C, nb), M (tt, K, nb), row scratch. */
static size_t pass_thread_floats(const pass_shape *ps, const plan *p) {
    return ps->kd.tt * (PLANE_MAX((size_t)ps->C * p->nb) + PLANE_MAX((size_t)ps->K * p->nb)) +
           wc_wino_scratch_floats(&ps->kd, p);
}

typedef struct {
    const pass_shape *ps;
    const plan *p;
    const float *U; /* (tt, K, C) */
    const float *in;
    float *out;
    out_mode om;
    float *work; /* per-thread parts, `per_thread` floats each */
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
    float *V = j->work + (size_t)thread * j->per_thread;  /* (tt, C, nt) */
    float *M = V + tt * PLANE_MAX((size_t)ps->C * p->nb); /* (tt, K, nt) */
    float *scratch = M + tt * PLANE_MAX((size_t)ps->K * p->nb);
    wc_wino_input_transform(V, j->in, ps, p, t0, t1, scratch);
    wc_wino_products(&ps->kd, ps->K, nt, ps->C, j->U, V, M); /* M[xi] = U[xi] V[xi] */
    wc_wino_output_transform(j->out, M, ps, p, t0, t1, &j->om, scratch);
}

static void run_pass(float *out, const float *in, const float *U, const pass_shape *ps,
                     const out_mode *om, wc_pool *pool, float *thread_work) {
    plan p = pass_plan(ps);
    pass_job j = {ps, &p, U, in, out, *om, thread_work, pass_thread_floats(ps, &p)};
    wc_pool_run(pool, p.nblocks, pass_task, &j);
}

/* ---- workspace ----------------------------------------------------------------------------------
 */

/* Per-thread workspace of the weight gradient: V (36, C, nb), Wg (36, K, nb), dU (36, K, C),
 * row scratch. */
static size_t weight_thread_floats(const pass_shape *ps, const plan *p) {
    return 36 * (PLANE_MAX((size_t)ps->C * p->nb) + PLANE_MAX((size_t)ps->K * p->nb) +
                 PLANE_MAX((size_t)ps->K * ps->C)) +
           wc_wino_scratch_floats(&ps->kd, p);
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
    wc_wino_transform_weights(&ps.kd, U, weight, s->K, s->C, 0, pool);
    out_mode om = {.bias = bias, .relu = (flags & WC_CONV_RELU) != 0};
    run_pass(out, inp, U, &ps, &om, pool, work + shared_floats(s));
}

/* ---- the weight gradient ----------------------------------------------------------------------
 */

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

/* One group of tiles, block by block: their transforms and GEMMs summed into this thread's dU,
 * then brought back to the 3x3 domain. */
static void weight_task(void *arg, int group, int thread) {
    const weight_job *j = arg;
    const pass_shape *ps = j->ps;
    const plan *p = j->p;
    const int K = ps->K, C = ps->C;
    float *V = j->work + (size_t)thread * j->per_thread; /* (36, C, nt) */
    float *Wg = V + 36 * PLANE_MAX((size_t)C * p->nb);   /* (36, K, nt) */
    float *dU = Wg + 36 * PLANE_MAX((size_t)K * p->nb);  /* (36, K, C) */
    float *scratch = dU + 36 * PLANE_MAX((size_t)K * C);
    long g0, g1;
    wc_pool_share(p->ntiles, group, j->groups, &g0, &g1);
    for (long t0 = g0; t0 < g1; t0 += p->nb) {
        const long t1 = WC_MIN(g1, t0 + p->nb);
        const int nt = (int)(t1 - t0);
        wc_wino_input_transform(V, j->inp, ps, p, t0, t1, scratch);
        wc_wino_grad_output_transform(Wg, j->dout, j->s, p, t0, t1, scratch);
        for (int xi = 0; xi < 36; xi++) /* dU[xi] (K, C) += Wg[xi] (K, nt) x V[xi]^T (nt, C) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, K, C, nt, 1.0f,
                        Wg + xi * plane_stride((size_t)K * nt), nt,
                        V + xi * plane_stride((size_t)C * nt), nt, t0 == g0 ? 0.0f : 1.0f,
                        dU + xi * plane_stride((size_t)K * C), C);
    }
    if (j->groups == 1)
        wc_wino_weight_grad_from(j->dweight, dU, K, C, 1);
    else
        wc_wino_weight_grad_from(j->partials + (size_t)group * 9 * K * C, dU, K, C, 0);
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
    weight_job wj = {&wps, &wp,     groups_of(&wp), dout,        inp,
                     s,    dweight, shared,         thread_work, weight_thread_floats(&wps, &wp)};
    wc_pool_run(pool, wj.groups, weight_task, &wj);
    if (wj.groups > 1) {
        sum_job sj = {dweight, shared, (size_t)9 * s->K * s->C, wj.groups, 4 * nthreads};
        wc_pool_run(pool, sj.ntasks, sum_task, &sj);
    }
    if (!dinp) return;
    /* the input gradient: the forward pass over dout with the flipped, transposed filters */
    pass_shape ps = input_grad_pass(s);
    float *U = shared; /* (36, C, K) */
    wc_wino_transform_weights(&ps.kd, U, weight, s->K, s->C, 1, pool);
    out_mode om = {.add = !(flags & WC_CONV_DINP_WRITE),
                   .mask = flags & WC_CONV_DINP_RELU_MASK ? inp : NULL};
    run_pass(dinp, dout, U, &ps, &om, pool, thread_work);
}
