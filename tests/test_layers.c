/* test_layers.c: every layer against an independent reference.
 *
 *   - convolution forward and backward against naive 7-loop versions (double accumulation), for
 *     odd sizes, stride 2, padding 0/1/2, 1x1 (the path without lowering), several chunks;
 *   - the lowering's adjoint identity <im2col(x), y> == <x, col2im(y)>;
 *   - every backward against central finite differences of a scalar probe L = <f(x), r>,
 *     with inputs kept away from the ReLU and max-pool kinks (a perturbation must not change
 *     which side of 0 / which window element wins), relative error reported;
 *   - the forms the network uses equal the plain ones: backward layers that write instead of
 *     add, convolutions with a fused ReLU, a written or ReLU-masked input gradient, samples
 *     further apart than their size, and 1, 2 or 3 threads (bitwise). */
#include <stdint.h>
#include <string.h>

#include "harness.h"
#include "wildcpu/blas_core.h"
#include "wildcpu/conv.h"
#include "wildcpu/layers.h"
#include "wildcpu/pool.h"
#include "wildcpu/rng.h"
#include "wildcpu/util.h"
#include "wildcpu/winograd.h"

static wc_rng rng;

static float *random_buf(size_t n, double scale) {
    float *p = WC_ALLOC(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = (float)(scale * (2.0 * wc_rng_uniform(&rng) - 1.0));
    return p;
}

/* integers in [-8, 8] */
static float *small_ints(size_t n) {
    float *p = WC_ALLOC(n * sizeof(float));
    for (size_t i = 0; i < n; i++) p[i] = (float)wc_rng_below(&rng, 17) - 8.0f;
    return p;
}

static double dot(const float *a, const float *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)a[i] * b[i];
    return s;
}

/* max |a-b| / max(max|b|, floor) over the arrays */
static double max_rel(const float *a, const double *b, size_t n, double floor_) {
    double num = 0, den = floor_;
    for (size_t i = 0; i < n; i++) {
        num = fmax(num, fabs(a[i] - b[i]));
        den = fmax(den, fabs(b[i]));
    }
    return num / den;
}

/* ---- naive convolution ---------------------------------------------------------------- */

static void naive_conv_forward(double *out, const float *x, const float *w, const float *b,
                               const wc_conv_shape *s) {
    for (int n = 0; n < s->N; n++)
        for (int k = 0; k < s->K; k++)
            for (int oy = 0; oy < s->OH; oy++)
                for (int ox = 0; ox < s->OW; ox++) {
                    double acc = b ? b[k] : 0.0;
                    for (int c = 0; c < s->C; c++)
                        for (int ky = 0; ky < s->KH; ky++)
                            for (int kx = 0; kx < s->KW; kx++) {
                                int iy = oy * s->stride + ky - s->pad;
                                int ix = ox * s->stride + kx - s->pad;
                                if (iy < 0 || iy >= s->H || ix < 0 || ix >= s->W) continue;
                                acc += (double)w[((k * s->C + c) * s->KH + ky) * s->KW + kx] *
                                       x[((size_t)(n * s->C + c) * s->H + iy) * s->W + ix];
                            }
                    out[((size_t)(n * s->K + k) * s->OH + oy) * s->OW + ox] = acc;
                }
}

static void naive_conv_backward(double *dx, double *dw, double *db, const float *dy, const float *x,
                                const float *w, const wc_conv_shape *s) {
    for (int n = 0; n < s->N; n++)
        for (int k = 0; k < s->K; k++)
            for (int oy = 0; oy < s->OH; oy++)
                for (int ox = 0; ox < s->OW; ox++) {
                    double g = dy[((size_t)(n * s->K + k) * s->OH + oy) * s->OW + ox];
                    db[k] += g;
                    for (int c = 0; c < s->C; c++)
                        for (int ky = 0; ky < s->KH; ky++)
                            for (int kx = 0; kx < s->KW; kx++) {
                                int iy = oy * s->stride + ky - s->pad;
                                int ix = ox * s->stride + kx - s->pad;
                                if (iy < 0 || iy >= s->H || ix < 0 || ix >= s->W) continue;
                                size_t xi = ((size_t)(n * s->C + c) * s->H + iy) * s->W + ix;
                                size_t wi = ((size_t)(k * s->C + c) * s->KH + ky) * s->KW + kx;
                                dw[wi] += g * x[xi];
                                dx[xi] += g * w[wi];
                            }
                }
}

typedef struct {
    int N, C, H, W, K, KH, KW, stride, pad;
} conv_case;

/* A case's shape and the floats of its input, weights and output (densely packed). */
static wc_conv_shape case_shape(const conv_case *c, size_t *nx, size_t *nw, size_t *ny) {
    wc_conv_shape s =
        wc_conv_shape_make(c->N, c->C, c->H, c->W, c->K, c->KH, c->KW, c->stride, c->pad);
    *nx = (size_t)s.N * s.C * s.H * s.W;
    *nw = (size_t)s.K * s.C * s.KH * s.KW;
    *ny = (size_t)s.N * s.K * s.OH * s.OW;
    return s;
}

static const conv_case conv_cases[] = {
    {2, 3, 7, 9, 4, 3, 3, 1, 1},   /* odd sizes, "same" 3x3 */
    {2, 5, 9, 7, 3, 3, 3, 2, 0},   /* stride 2, no padding */
    {1, 2, 11, 10, 4, 5, 5, 1, 2}, /* 5x5, padding 2 */
    {3, 6, 8, 5, 7, 1, 1, 1, 0},   /* 1x1: no lowering */
    {2, 4, 9, 9, 3, 1, 1, 2, 0},   /* 1x1 with stride 2: lowered */
    {1, 3, 13, 12, 2, 3, 2, 2, 1}, /* rectangular kernel, stride 2, padding 1 */
    {2, 3, 40, 37, 5, 3, 3, 1, 1}, /* more than one chunk of output rows */
    {1, 2, 5, 5, 3, 3, 3, 1, 2},   /* padding wider than the kernel's reach at the corners */
};

static void test_conv_forward_matches_naive(void) {
    for (size_t t = 0; t < sizeof conv_cases / sizeof conv_cases[0]; t++) {
        const conv_case *c = &conv_cases[t];
        size_t nx, nw, ny;
        wc_conv_shape s = case_shape(c, &nx, &nw, &ny);
        float *x = random_buf(nx, 1.0), *w = random_buf(nw, 1.0), *b = random_buf(s.K, 1.0);
        float *y = WC_ALLOC(ny * sizeof(float));
        float *work = WC_ALLOC((wc_conv_workspace_floats(&s) + 1) * sizeof(float));
        double *ref = WC_ALLOC(ny * sizeof(double));
        wc_conv2d_forward(y, x, w, b, &s, work);
        naive_conv_forward(ref, x, w, b, &s);
        double err = max_rel(y, ref, ny, 1.0);
        NOTE("case %zu (N%d C%d %dx%d K%d %dx%d s%d p%d -> %dx%d): max rel err %.2e", t, s.N, s.C,
             s.H, s.W, s.K, s.KH, s.KW, s.stride, s.pad, s.OH, s.OW, err);
        CHECK(err < 1e-5, "case %zu: forward differs from naive loops by %.3g", t, err);
        free(x), free(w), free(b), free(y), free(work), free(ref);
    }
}

static void test_conv_backward_matches_naive(void) {
    for (size_t t = 0; t < sizeof conv_cases / sizeof conv_cases[0]; t++) {
        const conv_case *c = &conv_cases[t];
        size_t nx, nw, ny;
        wc_conv_shape s = case_shape(c, &nx, &nw, &ny);
        float *x = random_buf(nx, 1.0), *w = random_buf(nw, 1.0), *dy = random_buf(ny, 1.0);
        /* Gradients start non-zero to prove the backward adds rather than overwrites. */
        float *dx = random_buf(nx, 1.0), *dw = random_buf(nw, 1.0), *db = random_buf(s.K, 1.0);
        double *rdx = WC_CALLOC(nx, sizeof(double)), *rdw = WC_CALLOC(nw, sizeof(double));
        double *rdb = WC_CALLOC(s.K, sizeof(double));
        for (size_t i = 0; i < nx; i++) rdx[i] = dx[i];
        for (size_t i = 0; i < nw; i++) rdw[i] = dw[i];
        for (int i = 0; i < s.K; i++) rdb[i] = db[i];
        float *work = WC_ALLOC((wc_conv_workspace_floats(&s) + 1) * sizeof(float));
        wc_conv2d_backward(dx, dw, db, dy, x, w, &s, work);
        naive_conv_backward(rdx, rdw, rdb, dy, x, w, &s);
        double ex = max_rel(dx, rdx, nx, 1.0), ew = max_rel(dw, rdw, nw, 1.0);
        double eb = max_rel(db, rdb, s.K, 1.0);
        NOTE("case %zu: dinp %.2e  dweight %.2e  dbias %.2e", t, ex, ew, eb);
        CHECK(ex < 1e-5 && ew < 1e-5 && eb < 1e-5, "case %zu: backward differs: %.3g %.3g %.3g", t,
              ex, ew, eb);
        free(x), free(w), free(dy), free(dx), free(dw), free(db), free(rdx), free(rdw), free(rdb),
            free(work);
    }
}

/* 3x3 stride-1 shapes large enough for the Winograd products to use every part of the own
 * kernel (full 6-row and 16-column panels and every remainder of both, tile counts that are
 * not a multiple of 8, one channel and many), each run with the own kernel and with OpenBLAS,
 * both against naive loops. */
static const conv_case product_cases[] = {
    {2, 12, 20, 24, 32, 3, 3, 1, 1}, /* unet-lite's first layer: C 12, K 32 */
    {1, 7, 9, 30, 15, 3, 3, 1, 1},   /* 15 = 2 x 6 + 3 rows */
    {3, 40, 10, 10, 6, 3, 3, 1, 0},  /* no padding: 8x8 outputs */
    {1, 1, 33, 35, 1, 3, 3, 1, 1},   /* one channel in, one out */
    {2, 18, 12, 11, 11, 3, 3, 1, 2}, /* padding 2 */
};

/* Every product kernel against naive loops; and the own kernel's widths bit for bit: the
 * AVX-512 kernel sums each value in the AVX2 kernel's order (wino_kernel.h). */
static void test_conv_products_every_way(void) {
    const int modes[] = {WC_PRODUCTS_OWN, WC_PRODUCTS_OWN_AVX2, WC_PRODUCTS_OPENBLAS};
    const int nmodes = sizeof modes / sizeof modes[0];
    for (size_t t = 0; t < sizeof product_cases / sizeof product_cases[0]; t++) {
        const conv_case *c = &product_cases[t];
        size_t nx, nw, ny;
        wc_conv_shape s = case_shape(c, &nx, &nw, &ny);
        float *x = random_buf(nx, 1.0), *w = random_buf(nw, 1.0), *b = random_buf(s.K, 1.0);
        float *dy = random_buf(ny, 1.0), *dw = WC_ALLOC(nw * sizeof(float));
        float *y[3], *dx[3];
        float *db = WC_ALLOC(s.K * sizeof(float));
        float *work = WC_ALLOC((wc_conv_workspace_floats(&s) + 1) * sizeof(float));
        double *ref = WC_ALLOC(ny * sizeof(double));
        double *rdx = WC_CALLOC(nx, sizeof(double)), *rdw = WC_CALLOC(nw, sizeof(double));
        double *rdb = WC_CALLOC(s.K, sizeof(double));
        naive_conv_forward(ref, x, w, b, &s);
        naive_conv_backward(rdx, rdw, rdb, dy, x, w, &s);
        int lanes[3];
        for (int m = 0; m < nmodes; m++) {
            y[m] = WC_ALLOC(ny * sizeof(float)), dx[m] = WC_CALLOC(nx, sizeof(float));
            lanes[m] = wc_wino_set_products(modes[m]);
            if (modes[m] != WC_PRODUCTS_OPENBLAS && !lanes[m]) {
                if (t == 0)
                    NOTE("this CPU has no AVX2 with FMA: the own kernel is not tested here");
                continue;
            }
            const char *who = wc_wino_products_name();
            memset(dw, 0, nw * sizeof(float)), memset(db, 0, s.K * sizeof(float));
            wc_conv2d_forward(y[m], x, w, b, &s, work);
            wc_conv2d_backward(dx[m], dw, db, dy, x, w, &s, work);
            double ey = max_rel(y[m], ref, ny, 1.0), ex = max_rel(dx[m], rdx, nx, 1.0);
            double ew = max_rel(dw, rdw, nw, 1.0);
            NOTE("case %zu (N%d C%d %dx%d K%d p%d), %s: out %.2e  dinp %.2e  dweight %.2e", t, s.N,
                 s.C, s.H, s.W, s.K, s.pad, who, ey, ex, ew);
            CHECK(ey < 1e-5 && ex < 1e-5 && ew < 1e-5,
                  "case %zu with %s: differs from naive loops: %.3g %.3g %.3g", t, who, ey, ex, ew);
        }
        if (lanes[0] == 16 && lanes[1] == 8)
            CHECK(memcmp(y[0], y[1], ny * sizeof(float)) == 0 &&
                      memcmp(dx[0], dx[1], nx * sizeof(float)) == 0,
                  "case %zu: the AVX-512 and AVX2 kernels give different bits", t);
        else if (t == 0)
            NOTE("this CPU has no AVX-512: the two widths are not compared here");
        wc_wino_set_products(WC_PRODUCTS_AUTO);
        for (int m = 0; m < nmodes; m++) free(y[m]), free(dx[m]);
        free(x), free(w), free(b), free(dy), free(dw), free(db), free(work);
        free(ref), free(rdx), free(rdw), free(rdb);
    }
}

/* The weight gradient's groups of several blocks, each group's last a few tiles short (an
 * image of 424 x 424 gives 11236 tiles: 8 groups of 1404 or 1405, cut into blocks of 704). A
 * block lost or counted twice would be off by a sixteenth of the gradient or more; the tolerance is
 * wider than other cases' 1e-5 because each weight's gradient here sums 180,000 products in
 * float (5e-6 measured, before and after the groups became tile ranges). */
static void test_conv_weight_grad_groups(void) {
    wc_conv_shape s = wc_conv_shape_make(1, 2, 424, 424, 3, 3, 3, 1, 1);
    const size_t nx = (size_t)2 * 424 * 424, nw = 3 * 2 * 9, ny = (size_t)3 * 424 * 424;
    float *x = random_buf(nx, 1), *w = random_buf(nw, 1), *dy = random_buf(ny, 1);
    float *dw = WC_CALLOC(nw, 4), *db = WC_CALLOC(3, 4);
    float *work = WC_ALLOC(wc_conv_workspace_floats(&s) * sizeof(float));
    double *rdx = WC_CALLOC(nx, sizeof(double)), *rdw = WC_CALLOC(nw, sizeof(double));
    double *rdb = WC_CALLOC(3, sizeof(double));
    wc_conv2d_backward(NULL, dw, db, dy, x, w, &s, work);
    naive_conv_backward(rdx, rdw, rdb, dy, x, w, &s);
    double ew = max_rel(dw, rdw, nw, 1.0);
    NOTE("weight gradient of 424x424, C2 K3: max rel err %.2e", ew);
    CHECK(ew < 1e-4, "the weight gradient of a 424x424 image differs from naive loops: %.3g", ew);
    free(x), free(w), free(dy), free(dw), free(db), free(work), free(rdx), free(rdw), free(rdb);
}

static void test_conv_backward_without_input_gradient(void) {
    /* dinp == NULL (the first layer) must still give the weight and bias gradients. */
    wc_conv_shape s = wc_conv_shape_make(2, 3, 9, 8, 4, 3, 3, 1, 1);
    size_t nx = (size_t)2 * 3 * 9 * 8, nw = 4 * 3 * 9, ny = (size_t)2 * 4 * s.OH * s.OW;
    float *x = random_buf(nx, 1), *w = random_buf(nw, 1), *dy = random_buf(ny, 1);
    float *dw1 = WC_CALLOC(nw, 4), *dw2 = WC_CALLOC(nw, 4), *db1 = WC_CALLOC(4, 4),
          *db2 = WC_CALLOC(4, 4), *dx = WC_CALLOC(nx, 4);
    float *work = WC_ALLOC(wc_conv_workspace_floats(&s) * sizeof(float));
    wc_conv2d_backward(dx, dw1, db1, dy, x, w, &s, work);
    wc_conv2d_backward(NULL, dw2, db2, dy, x, w, &s, work);
    CHECK(memcmp(dw1, dw2, nw * 4) == 0 && memcmp(db1, db2, 16) == 0,
          "weight gradient depends on whether the input gradient is computed");
    free(x), free(w), free(dy), free(dw1), free(dw2), free(db1), free(db2), free(dx), free(work);
}

static void test_im2col_adjoint(void) {
    for (size_t t = 0; t < sizeof conv_cases / sizeof conv_cases[0]; t++) {
        const conv_case *c = &conv_cases[t];
        wc_conv_shape s =
            wc_conv_shape_make(1, c->C, c->H, c->W, c->K, c->KH, c->KW, c->stride, c->pad);
        int oy0 = s.OH > 2 ? 1 : 0, oy1 = s.OH; /* a chunk that does not start at row 0 */
        size_t nx = (size_t)s.C * s.H * s.W;
        size_t ncol = (size_t)s.C * s.KH * s.KW * (oy1 - oy0) * s.OW;
        /* Small integers: every float sum in col2im and every product is exact, so the
         * identity must hold exactly, not merely to rounding. */
        float *x = small_ints(nx), *y = small_ints(ncol);
        float *col = WC_ALLOC(ncol * 4), *img = WC_CALLOC(nx, 4);
        wc_im2col(col, x, &s, oy0, oy1);
        wc_col2im(img, y, &s, oy0, oy1);
        double lhs = dot(col, y, ncol), rhs = dot(x, img, nx);
        NOTE("case %zu: <im2col(x),y> = %.1f  <x,col2im(y)> = %.1f", t, lhs, rhs);
        CHECK(lhs == rhs, "case %zu: adjoint identity fails: %.17g vs %.17g", t, lhs, rhs);
        free(x), free(y), free(col), free(img);
    }
}

/* ---- the fused and threaded forms ------------------------------------------------------ */

/* Elementwise equality that counts -0 and +0 as equal (a written gradient is v where an added
 * one is 0 + v) and NaNs as equal to NaNs. */
static int same_values(const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!(a[i] == b[i] || (a[i] != a[i] && b[i] != b[i]))) return 0;
    return 1;
}

static void test_backward_write_forms(void) {
    /* the _write forms equal the adding forms on a zeroed gradient, odd sizes included */
    const int P = 3, H = 9, W = 7;
    const size_t nx = (size_t)P * H * W, ny = (size_t)P * (H / 2) * (W / 2), nu = nx * 4;
    float *x = random_buf(nx, 1), *r = random_buf(nu, 1), *y = WC_ALLOC(nx * 4);
    float *add = WC_ALLOC(nx * 4), *wr = random_buf(nx, 1); /* garbage the write must replace */
    wc_relu_forward(y, x, nx);
    memset(add, 0, nx * 4);
    wc_relu_backward(add, r, y, nx);
    wc_relu_backward_write(wr, r, y, nx);
    CHECK(same_values(add, wr, nx), "relu: write form differs");
    memset(add, 0, nx * 4);
    wc_maxpool2_backward(add, r, x, P, H, W);
    wc_maxpool2_backward_write(wr, r, x, P, H, W);
    CHECK(same_values(add, wr, nx), "maxpool: write form differs (dropped row/column?)");
    memset(add, 0, nx * 4);
    wc_upsample2_backward(add, r, P, H, W);
    float *wr2 = random_buf(nx, 1);
    wc_upsample2_backward_write(wr2, r, P, H, W);
    CHECK(same_values(add, wr2, nx), "upsample: write form differs");
    (void)ny;
    free(x), free(r), free(y), free(add), free(wr), free(wr2);
}

/* One convolution shape through every form: forward with fused ReLU, backward writing and
 * masking, samples further apart than their size, on 1, 2 and 3 threads. */
static void check_conv_forms(const conv_case *c) {
    const int extra = 5; /* floats of padding between samples of the strided layout */
    wc_conv_shape s =
        wc_conv_shape_make(c->N, c->C, c->H, c->W, c->K, c->KH, c->KW, c->stride, c->pad);
    const size_t xs = s.in_sample, ys = s.out_sample;
    const size_t nx = s.N * xs, ny = s.N * ys, nw = (size_t)s.K * s.C * s.KH * s.KW;
    float *x = random_buf(nx, 1), *w = random_buf(nw, 1), *b = random_buf(s.K, 1);
    float *dy = random_buf(ny, 1), *work = WC_ALLOC((wc_conv_workspace_floats(&s) + 1) * 4);
    float *garbage = random_buf(nx, 1);
    /* references through the plain forms */
    float *y = WC_ALLOC(ny * 4), *yr = WC_ALLOC(ny * 4);
    wc_conv2d_forward(y, x, w, b, &s, work);
    wc_relu_forward(yr, y, ny);
    float *dx0 = random_buf(nx, 1), *dx_add = WC_ALLOC(nx * 4), *dx_zero = WC_CALLOC(nx, 4);
    memcpy(dx_add, dx0, nx * 4);
    float *dw = WC_CALLOC(nw, 4), *db = WC_CALLOC(s.K, 4);
    wc_conv2d_backward(dx_add, dw, db, dy, x, w, &s, work);
    float *dw2 = WC_CALLOC(nw, 4), *db2 = WC_CALLOC(s.K, 4);
    wc_conv2d_backward(dx_zero, dw2, db2, dy, x, w, &s, work);
    float *mask_add = WC_ALLOC(nx * 4), *mask_zero = WC_ALLOC(nx * 4);
    for (size_t i = 0; i < nx; i++) {
        mask_add[i] = x[i] > 0 ? dx_add[i] : 0.0f;
        mask_zero[i] = x[i] > 0 ? dx_zero[i] : 0.0f;
    }
    /* the strided layout: sample n at n * (size + extra) */
    const size_t xs2 = xs + extra, ys2 = ys + extra;
    float *xg = WC_CALLOC(s.N * xs2, 4), *dyg = WC_CALLOC(s.N * ys2, 4);
    for (int n = 0; n < s.N; n++) {
        memcpy(xg + n * xs2, x + n * xs, xs * 4);
        memcpy(dyg + n * ys2, dy + n * ys, ys * 4);
    }
    for (int threads = 1; threads <= 3; threads++) {
        wc_pool *pool = wc_pool_create(threads);
        float *wk = WC_ALLOC((wc_conv_workspace_floats_threads(&s, threads) + 1) * 4);
        for (int strided = 0; strided < 2; strided++) {
            wc_conv_shape t = s;
            const float *xi = x, *dyi = dy;
            size_t txs = xs, tys = ys;
            if (strided) {
                t.in_sample = txs = xs2, t.out_sample = tys = ys2;
                xi = xg, dyi = dyg;
            }
            float *yo = WC_ALLOC(s.N * tys * 4), *dxo = WC_ALLOC(s.N * txs * 4);
            float *dwo = WC_CALLOC(nw, 4), *dbo = WC_CALLOC(s.K, 4);
            float *got = WC_ALLOC(nx * 4), *got2 = WC_ALLOC(ny * 4);
#define GATHER(dst, src, n_, size, stride)                                                         \
    for (int n = 0; n < s.N; n++) memcpy((dst) + n * (size), (src) + n * (stride), (size)*4)
            wc_conv2d_forward_ex(yo, xi, w, b, &t, WC_CONV_RELU, pool, wk);
            GATHER(got2, yo, s.N, ys, tys);
            CHECK(same_values(got2, yr, ny), "T%d strided %d: forward with ReLU differs", threads,
                  strided);
            wc_conv2d_forward_ex(yo, xi, w, b, &t, 0, pool, wk);
            GATHER(got2, yo, s.N, ys, tys);
            CHECK(same_values(got2, y, ny), "T%d strided %d: forward differs", threads, strided);
            for (int flags = 0; flags < 4; flags++) { /* WRITE x MASK */
                const int f =
                    (flags & 1 ? WC_CONV_DINP_WRITE : 0) | (flags & 2 ? WC_CONV_DINP_RELU_MASK : 0);
                for (int n = 0; n < s.N; n++) /* adding onto dx0; writing over garbage */
                    memcpy(dxo + n * txs, (flags & 1 ? garbage : dx0) + n * xs, xs * 4);
                memset(dwo, 0, nw * 4), memset(dbo, 0, s.K * 4);
                wc_conv2d_backward_ex(dxo, dwo, dbo, dyi, xi, w, &t, f, pool, wk);
                GATHER(got, dxo, s.N, xs, txs);
                const float *want = flags == 0   ? dx_add
                                    : flags == 1 ? dx_zero
                                    : flags == 2 ? mask_add
                                                 : mask_zero;
                CHECK(same_values(got, want, nx), "T%d strided %d flags %d: dinp differs", threads,
                      strided, f);
                CHECK(same_values(dwo, dw, nw) && same_values(dbo, db, s.K),
                      "T%d strided %d flags %d: dweight or dbias differs", threads, strided, f);
            }
#undef GATHER
            free(yo), free(dxo), free(dwo), free(dbo), free(got), free(got2);
        }
        free(wk);
        wc_pool_destroy(pool);
    }
    free(x), free(w), free(b), free(dy), free(work), free(y), free(yr), free(dx0), free(dx_add),
        free(dx_zero), free(dw), free(db), free(dw2), free(db2), free(mask_add), free(mask_zero),
        free(xg), free(dyg), free(garbage);
}

static void test_conv_fused_strided_threaded(void) {
    /* bitwise equal to the plain forms: results depend on the shape, never on the threads */
    static const conv_case cases[] = {
        {5, 6, 20, 18, 7, 3, 3, 1, 1},   /* Winograd: several blocks and groups */
        {3, 4, 9, 7, 5, 3, 3, 1, 2},     /* Winograd, padding 2 */
        {1, 3, 130, 9, 4, 3, 3, 1, 0},   /* Winograd, one image of many blocks, no padding */
        {1, 2, 424, 424, 3, 3, 3, 1, 1}, /* Winograd, weight-gradient groups of several blocks */
        {4, 6, 8, 5, 3, 1, 1, 1, 0},     /* pointwise */
        {2, 3, 9, 8, 4, 5, 5, 1, 2},     /* lowered, the input gradient as a convolution */
        {2, 3, 9, 8, 4, 3, 3, 2, 1},     /* lowered, stride 2 (col2im) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_conv_forms(&cases[i]);
}

/* ---- finite differences ----------------------------------------------------------------- */

/* The probe L(x) = <f(x), r> in double; the finite-difference test perturbs one input at a time. */
typedef double (*probe_fn)(const float *x, void *ctx);

static double max_abs(const float *v, size_t n) {
    double m = 0;
    for (size_t i = 0; i < n; i++) m = fmax(m, fabs(v[i]));
    return m;
}

/* Central differences of probe at a sample of coordinates of x, against grad. Returns the max
 * relative error (|fd - g| / max(|fd|, |g|, floor)). */
static double fd_check(float *x, size_t n, const float *grad, probe_fn f, void *ctx, float h,
                       size_t samples, double floor_) {
    double worst = 0;
    size_t step = n > samples ? n / samples : 1;
    for (size_t i = 0; i < n; i += step) {
        float keep = x[i];
        x[i] = keep + h;
        double lp = f(x, ctx);
        x[i] = keep - h;
        double lm = f(x, ctx);
        x[i] = keep;
        double fd = (lp - lm) / ((double)(keep + h) - (double)(keep - h));
        worst = fmax(worst, rel_err(fd, grad[i], floor_));
    }
    return worst;
}

typedef struct {
    wc_conv_shape s;
    float *x, *w, *b, *r, *y, *work;
    int wrt; /* 0: input, 1: weight, 2: bias */
} conv_probe;

static double conv_probe_fn(const float *v, void *ctx) {
    conv_probe *p = ctx;
    const float *x = p->wrt == 0 ? v : p->x, *w = p->wrt == 1 ? v : p->w;
    const float *b = p->wrt == 2 ? v : p->b;
    wc_conv2d_forward(p->y, x, w, b, &p->s, p->work);
    return dot(p->y, p->r, (size_t)p->s.N * p->s.K * p->s.OH * p->s.OW);
}

static void test_conv_finite_differences(void) {
    conv_probe p;
    p.s = wc_conv_shape_make(2, 3, 7, 6, 4, 3, 3, 2, 1);
    size_t nx = (size_t)2 * 3 * 7 * 6, nw = 4 * 3 * 9, ny = (size_t)2 * 4 * p.s.OH * p.s.OW;
    p.x = random_buf(nx, 1), p.w = random_buf(nw, 1), p.b = random_buf(4, 1);
    p.r = random_buf(ny, 1), p.y = WC_ALLOC(ny * 4);
    p.work = WC_ALLOC(wc_conv_workspace_floats(&p.s) * 4);
    float *dx = WC_CALLOC(nx, 4), *dw = WC_CALLOC(nw, 4), *db = WC_CALLOC(4, 4);
    wc_conv2d_backward(dx, dw, db, p.r, p.x, p.w, &p.s, p.work);
    /* The probe is linear in each argument, so central differences are exact up to rounding:
     * a large step keeps the float rounding of the forward small relative to the difference.
     * That rounding (about 1e-6 absolute) is judged against 5% of the tensor's largest
     * gradient, not against a fixed 1e-2: with that floor a coordinate whose gradient happened
     * to be near 0 failed 34 of 300 random draws (errors to 2.6e-4); with this one the worst of
     * 300 was 1.7e-5, while a gradient wrong by 1% of its size still errs by 1e-2. */
    p.wrt = 0;
    double ex = fd_check(p.x, nx, dx, conv_probe_fn, &p, 0.25f, 200, 0.05 * max_abs(dx, nx));
    p.wrt = 1;
    double ew = fd_check(p.w, nw, dw, conv_probe_fn, &p, 0.25f, 200, 0.05 * max_abs(dw, nw));
    p.wrt = 2;
    double eb = fd_check(p.b, 4, db, conv_probe_fn, &p, 0.25f, 4, 0.05 * max_abs(db, 4));
    NOTE("conv finite differences: dinp %.2e  dweight %.2e  dbias %.2e", ex, ew, eb);
    CHECK(ex < 1e-4 && ew < 1e-4 && eb < 1e-4, "conv FD: %.3g %.3g %.3g", ex, ew, eb);
    free(p.x), free(p.w), free(p.b), free(p.r), free(p.y), free(p.work), free(dx), free(dw),
        free(db);
}

typedef struct {
    int kind; /* 0 relu, 1 maxpool, 2 upsample */
    int P, H, W;
    float *r, *y;
    size_t ny;
} simple_probe;

static double simple_probe_fn(const float *x, void *ctx) {
    simple_probe *p = ctx;
    if (p->kind == 0) wc_relu_forward(p->y, x, p->ny);
    if (p->kind == 1) wc_maxpool2_forward(p->y, x, p->P, p->H, p->W);
    if (p->kind == 2) wc_upsample2_forward(p->y, x, p->P, p->H, p->W);
    return dot(p->y, p->r, p->ny);
}

static void test_relu(void) {
    const size_t n = 1000;
    float *x = random_buf(n, 1), *y = WC_ALLOC(n * 4), *r = random_buf(n, 1);
    /* away from the kink: |x| >= 0.3, perturbation 0.1 */
    for (size_t i = 0; i < n; i++)
        if (fabsf(x[i]) < 0.3f) x[i] = x[i] < 0 ? -0.3f : 0.3f;
    wc_relu_forward(y, x, n);
    int bad = 0;
    for (size_t i = 0; i < n; i++) bad += y[i] != (x[i] > 0 ? x[i] : 0);
    CHECK(bad == 0, "%d wrong relu outputs", bad);
    float *dz = WC_CALLOC(n, 4);
    wc_relu_backward(dz, r, y, n);
    simple_probe p = {.kind = 0, .r = r, .y = y, .ny = n};
    double e = fd_check(x, n, dz, simple_probe_fn, &p, 0.1f, 1000, 1e-3);
    NOTE("relu finite differences: %.2e", e);
    CHECK(e < 1e-5, "relu FD %.3g", e);
    /* the backward adds into what is there */
    float *dx = random_buf(n, 1), *want = WC_ALLOC(n * 4);
    for (size_t i = 0; i < n; i++) want[i] = dx[i] + dz[i];
    wc_relu_backward(dx, r, y, n);
    CHECK(memcmp(dx, want, n * 4) == 0, "relu backward does not add");
    /* the in-place form equals the adding form on a zeroed gradient */
    float *d = WC_ALLOC(n * 4);
    memcpy(d, r, n * 4);
    wc_relu_backward_inplace(d, y, n);
    CHECK(memcmp(d, dz, n * 4) == 0, "in-place relu backward differs");
    free(x), free(y), free(r), free(dz), free(dx), free(want), free(d);
}

static void test_maxpool(void) {
    const int P = 3, H = 8, W = 7; /* odd width: last column dropped */
    size_t nx = (size_t)P * H * W, ny = (size_t)P * (H / 2) * (W / 2);
    float *x = WC_ALLOC(nx * 4), *y = WC_ALLOC(ny * 4), *r = random_buf(ny, 1);
    /* Distinct values at least 0.05 apart, shuffled: no two window elements within 2h. */
    uint32_t *perm = WC_ALLOC(nx * 4);
    wc_rng_permutation(perm, nx, 3, 77, 0);
    for (size_t i = 0; i < nx; i++) x[i] = 0.05f * (float)perm[i] - 5.0f;
    wc_maxpool2_forward(y, x, P, H, W);
    int bad = 0;
    for (int p = 0; p < P; p++)
        for (int oy = 0; oy < H / 2; oy++)
            for (int ox = 0; ox < W / 2; ox++) {
                const float *pl = x + (size_t)p * H * W;
                float m =
                    fmaxf(fmaxf(pl[2 * oy * W + 2 * ox], pl[2 * oy * W + 2 * ox + 1]),
                          fmaxf(pl[(2 * oy + 1) * W + 2 * ox], pl[(2 * oy + 1) * W + 2 * ox + 1]));
                bad += y[(p * (H / 2) + oy) * (W / 2) + ox] != m;
            }
    CHECK(bad == 0, "%d wrong max-pool outputs", bad);
    float *dx = WC_CALLOC(nx, 4);
    wc_maxpool2_backward(dx, r, x, P, H, W);
    simple_probe p = {.kind = 1, .P = P, .H = H, .W = W, .r = r, .y = y, .ny = ny};
    double e = fd_check(x, nx, dx, simple_probe_fn, &p, 0.01f, nx, 1e-3);
    NOTE("max-pool finite differences: %.2e", e);
    CHECK(e < 1e-5, "maxpool FD %.3g", e);
    free(x), free(y), free(r), free(perm), free(dx);
}

/* A NaN entering ReLU or max-pooling comes out as NaN (PyTorch's behaviour), so a diverged
 * network's loss shows it instead of a plausible finite value. */
static void test_nan_propagates(void) {
    float in[4] = {NAN, -1.0f, 2.0f, -0.5f}, out[4];
    wc_relu_forward(out, in, 4);
    CHECK(isnan(out[0]) && out[1] == 0.0f && out[2] == 2.0f && out[3] == 0.0f,
          "relu gave %g %g %g %g", out[0], out[1], out[2], out[3]);
    float plane[16], pooled[4];
    for (int i = 0; i < 16; i++) plane[i] = (float)i;
    plane[5] = NAN; /* in the top-left 2x2 window, not its first element */
    wc_maxpool2_forward(pooled, plane, 1, 4, 4);
    CHECK(isnan(pooled[0]) && pooled[1] == 7.0f && pooled[3] == 15.0f, "maxpool gave %g %g %g",
          pooled[0], pooled[1], pooled[3]);
}

static void test_upsample(void) {
    const int P = 4, H = 5, W = 3;
    size_t nx = (size_t)P * H * W, ny = nx * 4;
    float *x = random_buf(nx, 1), *y = WC_ALLOC(ny * 4), *r = random_buf(ny, 1);
    wc_upsample2_forward(y, x, P, H, W);
    int bad = 0;
    for (int p = 0; p < P; p++)
        for (int oy = 0; oy < 2 * H; oy++)
            for (int ox = 0; ox < 2 * W; ox++)
                bad += y[((size_t)p * 2 * H + oy) * 2 * W + ox] !=
                       x[((size_t)p * H + oy / 2) * W + ox / 2];
    CHECK(bad == 0, "%d wrong upsample outputs", bad);
    float *dx = WC_CALLOC(nx, 4);
    wc_upsample2_backward(dx, r, P, H, W);
    simple_probe p = {.kind = 2, .P = P, .H = H, .W = W, .r = r, .y = y, .ny = ny};
    double e = fd_check(x, nx, dx, simple_probe_fn, &p, 0.25f, nx, 1e-3);
    NOTE("upsample finite differences: %.2e", e);
    CHECK(e < 1e-5, "upsample FD %.3g", e);
    free(x), free(y), free(r), free(dx);
}

static void test_concat(void) {
    const int N = 3, Ca = 2, Cb = 5;
    const size_t HW = 6;
    size_t na = N * Ca * HW, nb = N * Cb * HW, no = na + nb;
    float *a = random_buf(na, 1), *b = random_buf(nb, 1), *o = WC_ALLOC(no * 4);
    wc_concat_forward(o, a, Ca, b, Cb, N, HW);
    int bad = 0;
    for (int n = 0; n < N; n++)
        for (int c = 0; c < Ca + Cb; c++)
            for (size_t i = 0; i < HW; i++) {
                float want = c < Ca ? a[(n * Ca + c) * HW + i] : b[(n * Cb + c - Ca) * HW + i];
                bad += o[(n * (Ca + Cb) + c) * HW + i] != want;
            }
    CHECK(bad == 0, "%d wrong concat outputs", bad);
    /* backward is the exact transpose: <concat(a,b), d> == <a, da> + <b, db> */
    float *d = random_buf(no, 1), *da = WC_CALLOC(na, 4), *db = WC_CALLOC(nb, 4);
    wc_concat_backward(da, db, d, Ca, Cb, N, HW);
    double lhs = dot(o, d, no), rhs = dot(a, da, na) + dot(b, db, nb);
    CHECK(rel_err(lhs, rhs, 1e-30) < 1e-12, "concat backward not the transpose: %g vs %g", lhs,
          rhs);
    free(a), free(b), free(o), free(d), free(da), free(db);
}

typedef struct {
    const float *labels;
    const uint8_t *valid;
    size_t n;
    float pw;
} bce_probe;

static double bce_probe_fn(const float *z, void *ctx) {
    bce_probe *p = ctx;
    return wc_bce_forward(z, p->labels, p->valid, p->n, p->pw);
}

static void test_bce(void) {
    const size_t n = 500;
    float *z = random_buf(n, 6), *y = WC_ALLOC(n * 4), *dz = WC_ALLOC(n * 4);
    uint8_t *valid = WC_ALLOC(n);
    for (size_t i = 0; i < n; i++) {
        y[i] = wc_rng_uniform(&rng) < 0.2 ? 1.0f : 0.0f;
        valid[i] = wc_rng_uniform(&rng) < 0.9;
    }
    for (int w = 0; w < 2; w++) {
        float pw = w ? 4.0f : 1.0f;
        /* forward against the textbook formula with probabilities */
        double ref = 0;
        for (size_t i = 0; i < n; i++) {
            if (!valid[i]) continue;
            double p = 1.0 / (1.0 + exp(-(double)z[i]));
            ref += -(pw * y[i] * log(p) + (1 - y[i]) * log(1 - p));
        }
        double got = wc_bce_forward(z, y, valid, n, pw);
        CHECK(rel_err(got, ref, 1e-12) < 1e-9, "pw %g: loss %.12g vs textbook %.12g", pw, got, ref);
        wc_bce_backward(dz, z, y, valid, n, pw);
        bce_probe p = {y, valid, n, pw};
        double e = fd_check(z, n, dz, bce_probe_fn, &p, 1e-2f, n, 1e-3);
        NOTE("bce (pos_weight %g) finite differences: %.2e", pw, e);
        CHECK(e < 1e-3, "bce FD %.3g", e);
        int leaked = 0;
        for (size_t i = 0; i < n; i++) leaked += !valid[i] && dz[i] != 0.0f;
        CHECK(leaked == 0, "%d nodata pixels got a gradient", leaked);
    }
    /* extreme logits stay finite */
    float zz[4] = {100.0f, -100.0f, 1e30f, -1e30f}, yy[4] = {0, 1, 1, 0}, dd[4];
    uint8_t vv[4] = {1, 1, 1, 1};
    double l = wc_bce_forward(zz, yy, vv, 4, 1.0f);
    wc_bce_backward(dd, zz, yy, vv, 4, 1.0f);
    CHECK(isfinite(l) && fabs(l - 200.0) < 1e-9, "extreme logits loss %g", l);
    CHECK(dd[0] == 1.0f && dd[1] == -1.0f && dd[2] == 0.0f && dd[3] == 0.0f,
          "extreme logits gradient %g %g %g %g", dd[0], dd[1], dd[2], dd[3]);
    free(z), free(y), free(dz), free(valid);
}

int main(int argc, char **argv) {
    (void)argc;
    wc_blas_core_settle(argv); /* OpenBLAS's kernels as the program runs them (blas_core.h) */
    wc_rng_seed(&rng, 2026, 1000, 0);
    RUN(test_conv_forward_matches_naive);
    RUN(test_conv_backward_matches_naive);
    RUN(test_conv_backward_without_input_gradient);
    RUN(test_conv_products_every_way);
    RUN(test_im2col_adjoint);
    RUN(test_conv_finite_differences);
    RUN(test_relu);
    RUN(test_maxpool);
    RUN(test_nan_propagates);
    RUN(test_upsample);
    RUN(test_concat);
    RUN(test_bce);
    RUN(test_backward_write_forms);
    RUN(test_conv_fused_strided_threaded);
    RUN(test_conv_weight_grad_groups);
    HARNESS_EXIT();
}
