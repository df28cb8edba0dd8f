/* conv.c: 2D convolution forward and backward: the choice of path, the pointwise (1x1) path
 * and the lowered (im2col + cblas_sgemm) path for every shape Winograd does not take.
 *
 * 3x3 stride-1 convolutions (every convolution of unet-lite but its 1x1 head) go to
 * winograd.c. The forward products here use its own kernel too where it runs (AVX2 and FMA):
 * OpenBLAS's bits for a pixel depend on the product's width, so on the window's. The lowered
 * path processes each image on its own, in chunks of output rows: the lowered chunk (C*KH*KW
 * rows by about WC_CONV_CHUNK_COLS columns) stays in L2 while the GEMM reads it. Its backward
 * pass lowers each chunk again instead of keeping the forward's lowered matrix: a cheap,
 * cache-resident copy instead of memory the size of every layer's lowered input. The lowered
 * path runs on the calling thread (no network of this project uses it for more than a test);
 * the pointwise path splits samples across the pool.
 *
 * Not here: allocation (the caller passes the workspace), the Winograd pipeline (winograd.c). */
#include <cblas.h>
#include <string.h>

#include "wildcpu/conv.h"
#include "wildcpu/layers.h"
#include "wildcpu/pool.h"
#include "wildcpu/util.h"
#include "wildcpu/winograd.h"

wc_conv_shape wc_conv_shape_make(int N, int C, int H, int W, int K, int KH, int KW, int stride,
                                 int pad) {
    WC_ASSERT(N > 0 && C > 0 && H > 0 && W > 0 && K > 0 && KH > 0 && KW > 0);
    WC_ASSERT(stride > 0 && pad >= 0);
    wc_conv_shape s = {
        .N = N, .C = C, .H = H, .W = W, .K = K, .KH = KH, .KW = KW, .stride = stride, .pad = pad};
    s.OH = (H + 2 * pad - KH) / stride + 1;
    s.OW = (W + 2 * pad - KW) / stride + 1;
    WC_ASSERT(s.OH > 0 && s.OW > 0);
    s.chunk_rows = WC_MAX(1, WC_MIN(s.OH, WC_CONV_CHUNK_COLS / s.OW));
    s.in_sample = (size_t)C * H * W;
    s.out_sample = (size_t)K * s.OH * s.OW;
    return s;
}

int wc_conv_is_pointwise(const wc_conv_shape *s) {
    return s->KH == 1 && s->KW == 1 && s->stride == 1 && s->pad == 0;
}

/* ---- the bias gradient ------------------------------------------------------------------- */

typedef struct {
    float *dbias;
    const float *dout;
    const wc_conv_shape *s;
    int ntasks;
} bias_job;

/* A share of the channels: planes have thousands of terms, so float sums of a row at a time
 * (vectorized), added in double. */
static void bias_task(void *arg, int task, int thread) {
    const bias_job *j = arg;
    const wc_conv_shape *s = j->s;
    long lo, hi;
    wc_pool_share(s->K, task, j->ntasks, &lo, &hi);
    for (long k = lo; k < hi; k++) {
        double sum = 0.0;
        for (int n = 0; n < s->N; n++) {
            const float *dyk = j->dout + (size_t)n * s->out_sample + (size_t)k * s->OH * s->OW;
            for (int y = 0; y < s->OH; y++) {
                float row = 0.0f;
                for (int x = 0; x < s->OW; x++) row += dyk[(size_t)y * s->OW + x];
                sum += row;
            }
        }
        j->dbias[k] += (float)sum;
    }
}

void wc_conv_bias_grad(float *dbias, const float *dout, const wc_conv_shape *s,
                       struct wc_pool *pool) {
    bias_job j = {dbias, dout, s, WC_MIN(s->K, 4 * wc_pool_threads(pool))};
    wc_pool_run(pool, j.ntasks, bias_task, &j);
}

/* The forward's arithmetic decides a pixel's bits: Winograd's forward works in F(2x2) tiles
 * (winograd.c), every other shape pixel by pixel. */
int wc_conv_output_tile(int KH, int KW, int stride, int pad) {
    const wc_conv_shape s = {.KH = KH, .KW = KW, .stride = stride, .pad = pad};
    return wc_wino_applies(&s) ? 2 : 1;
}

/* ---- the input gradient of the lowered path as a convolution ------------------------------ */

/* The input gradient of a stride-1 convolution is itself a convolution: of the output gradient
 * with the flipped, transposed kernel, padded by KH-1-pad (square kernels). Lowering the output
 * gradient (K*KH*KW rows) and one GEMM into dinp replaces lowering-GEMM-scatter (col2im) and its
 * zeroed workspace; measured faster here, most for layers with more input than output channels
 * (the decoder's concatenations). */
static int backward_as_conv(const wc_conv_shape *s) {
    return s->stride == 1 && s->KH == s->KW && s->pad <= s->KH - 1 && !wc_conv_is_pointwise(s);
}

/* The shape of that convolution: input (N, K, OH, OW), output (N, C, H, W), the sample strides
 * exchanged. */
static wc_conv_shape transposed_shape(const wc_conv_shape *s) {
    wc_conv_shape t =
        wc_conv_shape_make(s->N, s->K, s->OH, s->OW, s->C, s->KH, s->KW, 1, s->KH - 1 - s->pad);
    t.in_sample = s->out_sample, t.out_sample = s->in_sample;
    return t;
}

static size_t lowered_floats(const wc_conv_shape *s) {
    return (size_t)s->C * s->KH * s->KW * (size_t)s->chunk_rows * s->OW;
}

size_t wc_conv_workspace_floats_threads(const wc_conv_shape *s, int threads) {
    if (wc_conv_is_pointwise(s)) return 0;
    if (wc_wino_applies(s)) return wc_wino_workspace_floats(s, threads);
    size_t need = lowered_floats(s);
    if (backward_as_conv(s)) {
        wc_conv_shape t = transposed_shape(s);
        need = WC_MAX(need, (size_t)s->K * s->C * s->KH * s->KW + lowered_floats(&t));
    }
    return need;
}

size_t wc_conv_workspace_floats(const wc_conv_shape *s) {
    return wc_conv_workspace_floats_threads(s, 1);
}

/* ---- the lowering -------------------------------------------------------------------------- */

/* The output columns [lo, hi) of a row for which input column ox*stride + kx - pad is inside
 * the image; the others read zero padding. */
static void valid_cols(const wc_conv_shape *s, int kx, int *lo, int *hi) {
    /* ix = ox*stride + kx - pad >= 0  <=>  ox >= ceil((pad - kx) / stride) */
    int a = s->pad - kx;
    *lo = a <= 0 ? 0 : (a + s->stride - 1) / s->stride;
    /* ix <= W - 1  <=>  ox <= floor((W - 1 + pad - kx) / stride) */
    int b = s->W - 1 + s->pad - kx;
    *hi = b < 0 ? 0 : WC_MIN(s->OW, b / s->stride + 1);
    if (*lo > *hi) *lo = *hi;
}

/* col (C*KH*KW, (oy1-oy0)*OW) <- patches of img (C, H, W) */
void wc_im2col(float *col, const float *img, const wc_conv_shape *s, int oy0, int oy1) {
    const int OW = s->OW, ncols = (oy1 - oy0) * OW;
    for (int c = 0; c < s->C; c++) {
        const float *plane = img + (size_t)c * s->H * s->W;
        for (int ky = 0; ky < s->KH; ky++) {
            for (int kx = 0; kx < s->KW; kx++) {
                float *row = col + ((size_t)(c * s->KH + ky) * s->KW + kx) * ncols;
                int lo, hi;
                valid_cols(s, kx, &lo, &hi);
                for (int oy = oy0; oy < oy1; oy++) {
                    float *dst = row + (size_t)(oy - oy0) * OW;
                    int iy = oy * s->stride + ky - s->pad;
                    if (iy < 0 || iy >= s->H) {
                        memset(dst, 0, sizeof(float) * OW);
                        continue;
                    }
                    const float *src = plane + (size_t)iy * s->W;
                    memset(dst, 0, sizeof(float) * lo);
                    if (s->stride == 1) {
                        if (hi > lo)
                            memcpy(dst + lo, src + lo + kx - s->pad, sizeof(float) * (hi - lo));
                    } else {
                        for (int ox = lo; ox < hi; ox++)
                            dst[ox] = src[ox * s->stride + kx - s->pad];
                    }
                    memset(dst + hi, 0, sizeof(float) * (OW - hi));
                }
            }
        }
    }
}

/* img (C, H, W) += col (C*KH*KW, (oy1-oy0)*OW) scattered back: the adjoint of wc_im2col. */
void wc_col2im(float *img, const float *col, const wc_conv_shape *s, int oy0, int oy1) {
    const int OW = s->OW, ncols = (oy1 - oy0) * OW;
    for (int c = 0; c < s->C; c++) {
        float *plane = img + (size_t)c * s->H * s->W;
        for (int ky = 0; ky < s->KH; ky++) {
            for (int kx = 0; kx < s->KW; kx++) {
                const float *row = col + ((size_t)(c * s->KH + ky) * s->KW + kx) * ncols;
                int lo, hi;
                valid_cols(s, kx, &lo, &hi);
                for (int oy = oy0; oy < oy1; oy++) {
                    int iy = oy * s->stride + ky - s->pad;
                    if (iy < 0 || iy >= s->H) continue;
                    const float *src = row + (size_t)(oy - oy0) * OW;
                    float *dst = plane + (size_t)iy * s->W;
                    for (int ox = lo; ox < hi; ox++) dst[ox * s->stride + kx - s->pad] += src[ox];
                }
            }
        }
    }
}

/* ---- forward ------------------------------------------------------------------------------- */

typedef struct {
    float *out;
    const float *inp, *weight, *bias;
    const wc_conv_shape *s;
    int relu;
} pointwise_job;

/* y (K, n, ld ldy) = bias + weight (K, ckk) x col (ckk, n, ld ldc). By the Winograd passes' own
 * kernel where it is in use, then the bias: a pixel's bits are then those of its own column,
 * whatever the width of the window around it (prediction's windows, validation's blocks and a
 * raster cut from the same grid all agree: docs/predict.md). Else OpenBLAS from the bias
 * (beta = 1), one pass over the output, whose edge columns may round otherwise. */
static void forward_product(float *y, size_t ldy, const float *weight, const float *col, size_t ldc,
                            const float *bias, int K, int n, int ckk) {
    if (wc_wino_own_product(K, n, ckk, weight, (size_t)ckk, col, ldc, y, ldy)) {
        if (bias)
            for (int k = 0; k < K; k++)
                for (int i = 0; i < n; i++) y[(size_t)k * ldy + i] += bias[k];
        return;
    }
    for (int k = 0; k < K; k++) {
        const float b = bias ? bias[k] : 0.0f;
        for (int i = 0; i < n; i++) y[(size_t)k * ldy + i] = b;
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, K, n, ckk, 1.0f, weight, ckk, col,
                (int)ldc, 1.0f, y, (int)ldy);
}

/* One sample of a 1x1 convolution: y (K, HW) = bias + weight (K, C) x x (C, HW). */
static void pointwise_forward_task(void *arg, int n, int thread) {
    const pointwise_job *j = arg;
    const wc_conv_shape *s = j->s;
    const int hw = s->OH * s->OW;
    float *y = j->out + (size_t)n * s->out_sample;
    forward_product(y, (size_t)hw, j->weight, j->inp + (size_t)n * s->in_sample, (size_t)hw,
                    j->bias, s->K, hw, s->C);
    if (j->relu) wc_relu_forward(y, y, (size_t)s->K * hw);
}

/* The lowered forward of one sample, chunk by chunk of output rows:
 * y[:, chunk] (K, ncols) = bias + weight (K, ckk) x col (ckk, ncols). */
static void lowered_forward(float *y, const float *x, const float *weight, const float *bias,
                            const wc_conv_shape *s, float *work) {
    const int ckk = s->C * s->KH * s->KW, out_plane = s->OH * s->OW;
    for (int oy0 = 0; oy0 < s->OH; oy0 += s->chunk_rows) {
        int oy1 = WC_MIN(s->OH, oy0 + s->chunk_rows), ncols = (oy1 - oy0) * s->OW;
        wc_im2col(work, x, s, oy0, oy1);
        forward_product(y + (size_t)oy0 * s->OW, (size_t)out_plane, weight, work, (size_t)ncols,
                        bias, s->K, ncols, ckk);
    }
}

void wc_conv2d_forward_ex(float *out, const float *inp, const float *weight, const float *bias,
                          const wc_conv_shape *s, int flags, struct wc_pool *pool, float *work) {
    if (wc_wino_applies(s)) {
        wc_wino_forward(out, inp, weight, bias, s, flags, pool, work);
        return;
    }
    if (wc_conv_is_pointwise(s)) {
        pointwise_job j = {out, inp, weight, bias, s, (flags & WC_CONV_RELU) != 0};
        wc_pool_run(pool, s->N, pointwise_forward_task, &j);
        return;
    }
    for (int n = 0; n < s->N; n++) {
        float *y = out + (size_t)n * s->out_sample;
        lowered_forward(y, inp + (size_t)n * s->in_sample, weight, bias, s, work);
        /* this layer's channels only: out_sample is the sample's stride, which is a whole
         * concatenation's when the output is a view in one */
        if (flags & WC_CONV_RELU) wc_relu_forward(y, y, (size_t)s->K * s->OH * s->OW);
    }
}

void wc_conv2d_forward(float *out, const float *inp, const float *weight, const float *bias,
                       const wc_conv_shape *s, float *work) {
    wc_conv2d_forward_ex(out, inp, weight, bias, s, 0, NULL, work);
}

/* ---- backward ------------------------------------------------------------------------------ */

/* dx = 0 where the ReLU output x is not positive (the mask of WC_CONV_DINP_RELU_MASK). */
static void relu_mask(float *restrict dx, const float *restrict x, size_t n) {
    for (size_t i = 0; i < n; i++) dx[i] = x[i] > 0.0f ? dx[i] : 0.0f;
}

typedef struct {
    float *dinp;
    const float *dout, *inp, *weight;
    const wc_conv_shape *s;
    int flags;
} pointwise_grad_job;

/* One sample's input gradient of a 1x1 convolution: dx (C, HW) (+)= weight^T (C, K) x dy. */
static void pointwise_dinp_task(void *arg, int n, int thread) {
    const pointwise_grad_job *j = arg;
    const wc_conv_shape *s = j->s;
    const int hw = s->OH * s->OW;
    float *dx = j->dinp + (size_t)n * s->in_sample;
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s->C, hw, s->K, 1.0f, j->weight, s->C,
                j->dout + (size_t)n * s->out_sample, hw,
                j->flags & WC_CONV_DINP_WRITE ? 0.0f : 1.0f, dx, hw);
    if (j->flags & WC_CONV_DINP_RELU_MASK)
        relu_mask(dx, j->inp + (size_t)n * s->in_sample, (size_t)s->C * hw);
}

/* dinp += conv(dout, flipped weights), for stride 1; work holds the flipped weights first. */
static void backward_data_as_conv(float *dinp, const float *dout, const float *weight,
                                  const wc_conv_shape *s, float *work) {
    const wc_conv_shape t = transposed_shape(s);
    const int kk = s->KH * s->KW, ckk = t.C * kk, out_plane = t.OH * t.OW;
    /* wt (C, K, KH, KW)[c, k, i] = weight (K, C, KH, KW)[k, c, kk-1-i] */
    float *wt = work, *col = work + (size_t)s->K * s->C * kk;
    for (int k = 0; k < s->K; k++)
        for (int c = 0; c < s->C; c++) {
            const float *src = weight + ((size_t)k * s->C + c) * kk;
            float *dst = wt + ((size_t)c * s->K + k) * kk;
            for (int i = 0; i < kk; i++) dst[i] = src[kk - 1 - i];
        }
    for (int n = 0; n < t.N; n++) {
        const float *x = dout + n * t.in_sample;
        float *y = dinp + n * t.out_sample;
        for (int oy0 = 0; oy0 < t.OH; oy0 += t.chunk_rows) {
            int oy1 = WC_MIN(t.OH, oy0 + t.chunk_rows), ncols = (oy1 - oy0) * t.OW;
            wc_im2col(col, x, &t, oy0, oy1);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t.K, ncols, ckk, 1.0f, wt, ckk,
                        col, ncols, 1.0f, y + (size_t)oy0 * t.OW, out_plane);
        }
    }
}

/* The lowered backward: dweight per chunk; dinp by col2im, or as a convolution after. */
static void lowered_backward(float *dinp, float *dweight, const float *dout, const float *inp,
                             const float *weight, const wc_conv_shape *s, float *work) {
    const int ckk = s->C * s->KH * s->KW, out_plane = s->OH * s->OW;
    for (int n = 0; n < s->N; n++) {
        const float *x = inp + n * s->in_sample, *dy = dout + n * s->out_sample;
        float *dx = dinp ? dinp + n * s->in_sample : NULL;
        for (int oy0 = 0; oy0 < s->OH; oy0 += s->chunk_rows) {
            int oy1 = WC_MIN(s->OH, oy0 + s->chunk_rows), ncols = (oy1 - oy0) * s->OW;
            const float *dyc = dy + (size_t)oy0 * s->OW;
            wc_im2col(work, x, s, oy0, oy1);
            /* dweight (K, ckk) += dy[:, chunk] (K, ncols) x col^T (ncols, ckk) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->K, ckk, ncols, 1.0f, dyc,
                        out_plane, work, ncols, 1.0f, dweight, ckk);
            if (!dx || backward_as_conv(s)) continue;
            /* dcol (ckk, ncols) = weight^T (ckk, K) x dy[:, chunk] (K, ncols), then scattered */
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ckk, ncols, s->K, 1.0f, weight,
                        ckk, dyc, out_plane, 0.0f, work, ncols);
            wc_col2im(dx, work, s, oy0, oy1);
        }
    }
    if (dinp && backward_as_conv(s)) backward_data_as_conv(dinp, dout, weight, s, work);
}

void wc_conv2d_backward_ex(float *dinp, float *dweight, float *dbias, const float *dout,
                           const float *inp, const float *weight, const wc_conv_shape *s, int flags,
                           struct wc_pool *pool, float *work) {
    if (wc_wino_applies(s)) {
        wc_wino_backward(dinp, dweight, dbias, dout, inp, weight, s, flags, pool, work);
        return;
    }
    if (dbias) wc_conv_bias_grad(dbias, dout, s, pool);
    if (wc_conv_is_pointwise(s)) {
        const int hw = s->OH * s->OW;
        /* dweight (K, C) += dy (K, HW) x x^T (HW, C), sample after sample (a fixed order) */
        for (int n = 0; n < s->N; n++)
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->K, s->C, hw, 1.0f,
                        dout + (size_t)n * s->out_sample, hw, inp + (size_t)n * s->in_sample, hw,
                        1.0f, dweight, s->C);
        pointwise_grad_job j = {dinp, dout, inp, weight, s, flags};
        if (dinp) wc_pool_run(pool, s->N, pointwise_dinp_task, &j);
        return;
    }
    if (dinp && (flags & WC_CONV_DINP_WRITE))
        for (int n = 0; n < s->N; n++)
            memset(dinp + n * s->in_sample, 0, sizeof(float) * s->C * s->H * s->W);
    lowered_backward(dinp, dweight, dout, inp, weight, s, work);
    if (dinp && (flags & WC_CONV_DINP_RELU_MASK))
        for (int n = 0; n < s->N; n++)
            relu_mask(dinp + n * s->in_sample, inp + n * s->in_sample, (size_t)s->C * s->H * s->W);
}

void wc_conv2d_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const wc_conv_shape *s,
                        float *work) {
    wc_conv2d_backward_ex(dinp, dweight, dbias, dout, inp, weight, s, 0, NULL, work);
}
