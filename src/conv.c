/* conv.c: 2D convolution as a lowering (im2col) plus cblas_sgemm, forward and backward.
 *
 * Each image is processed on its own, in chunks of output rows: the lowered chunk
 * (C*KH*KW rows by about WC_CONV_CHUNK_COLS columns) stays in L2 while the GEMM reads it, which
 * measured faster here than lowering a whole image or a whole micro-batch at once (GEMMs with
 * ~512 columns ran at 58-64 GFLOP/s against 46-54 with 4096-16384). The backward pass lowers
 * each chunk again instead of keeping the forward's lowered matrix: that costs a cheap, cache-
 * resident copy and saves memory the size of every layer's lowered input.
 *
 * Not here: allocation (the caller passes the workspace), threads (OpenBLAS's own). */
#include <cblas.h>
#include <string.h>

#include "wildcpu/layers.h"
#include "wildcpu/util.h"

wc_conv_shape wc_conv_shape_make(int N, int C, int H, int W, int K, int KH, int KW, int stride,
                                 int pad) {
    WC_ASSERT(N > 0 && C > 0 && H > 0 && W > 0 && K > 0 && KH > 0 && KW > 0);
    WC_ASSERT(stride > 0 && pad >= 0);
    wc_conv_shape s = {.N = N, .C = C, .H = H, .W = W, .K = K, .KH = KH, .KW = KW,
                       .stride = stride, .pad = pad};
    s.OH = (H + 2 * pad - KH) / stride + 1;
    s.OW = (W + 2 * pad - KW) / stride + 1;
    WC_ASSERT(s.OH > 0 && s.OW > 0);
    s.chunk_rows = WC_MAX(1, WC_MIN(s.OH, WC_CONV_CHUNK_COLS / s.OW));
    return s;
}

int wc_conv_is_pointwise(const wc_conv_shape *s) {
    return s->KH == 1 && s->KW == 1 && s->stride == 1 && s->pad == 0;
}

size_t wc_conv_workspace_floats(const wc_conv_shape *s) {
    if (wc_conv_is_pointwise(s)) return 0;
    return (size_t)s->C * s->KH * s->KW * (size_t)s->chunk_rows * s->OW;
}

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
                        if (hi > lo) memcpy(dst + lo, src + lo + kx - s->pad, sizeof(float) * (hi - lo));
                    } else {
                        for (int ox = lo; ox < hi; ox++) dst[ox] = src[ox * s->stride + kx - s->pad];
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

void wc_conv2d_forward(float *out, const float *inp, const float *weight, const float *bias,
                       const wc_conv_shape *s, float *work) {
    const int ckk = s->C * s->KH * s->KW;
    const size_t in_size = (size_t)s->C * s->H * s->W, out_plane = (size_t)s->OH * s->OW;
    for (int n = 0; n < s->N; n++) {
        const float *x = inp + n * in_size;
        float *y = out + n * (size_t)s->K * out_plane;
        /* Start from the bias and let the GEMM accumulate (beta = 1): one pass over y. */
        for (int k = 0; k < s->K; k++) {
            float b = bias ? bias[k] : 0.0f;
            float *yk = y + k * out_plane;
            for (size_t i = 0; i < out_plane; i++) yk[i] = b;
        }
        if (wc_conv_is_pointwise(s)) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->K, (int)out_plane, s->C,
                        1.0f, weight, s->C, x, (int)out_plane, 1.0f, y, (int)out_plane);
            continue;
        }
        for (int oy0 = 0; oy0 < s->OH; oy0 += s->chunk_rows) {
            int oy1 = WC_MIN(s->OH, oy0 + s->chunk_rows), ncols = (oy1 - oy0) * s->OW;
            wc_im2col(work, x, s, oy0, oy1);
            /* y[:, chunk] (K, ncols) += weight (K, ckk) x col (ckk, ncols) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->K, ncols, ckk, 1.0f, weight,
                        ckk, work, ncols, 1.0f, y + (size_t)oy0 * s->OW, (int)out_plane);
        }
    }
}

void wc_conv2d_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const wc_conv_shape *s,
                        float *work) {
    const int ckk = s->C * s->KH * s->KW;
    const size_t in_size = (size_t)s->C * s->H * s->W, out_plane = (size_t)s->OH * s->OW;
    for (int n = 0; n < s->N; n++) {
        const float *x = inp + n * in_size;
        const float *dy = dout + n * (size_t)s->K * out_plane;
        float *dx = dinp ? dinp + n * in_size : NULL;
        if (dbias) {
            for (int k = 0; k < s->K; k++) {
                const float *dyk = dy + k * out_plane;
                double sum = 0.0; /* a plane has thousands of terms: keep the sum accurate */
                for (size_t i = 0; i < out_plane; i++) sum += dyk[i];
                dbias[k] += (float)sum;
            }
        }
        if (wc_conv_is_pointwise(s)) {
            /* dweight (K, C) += dy (K, HW) x x^T (HW, C) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->K, s->C, (int)out_plane, 1.0f,
                        dy, (int)out_plane, x, (int)out_plane, 1.0f, dweight, s->C);
            /* dx (C, HW) += weight^T (C, K) x dy (K, HW) */
            if (dx)
                cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, s->C, (int)out_plane, s->K,
                            1.0f, weight, s->C, dy, (int)out_plane, 1.0f, dx, (int)out_plane);
            continue;
        }
        for (int oy0 = 0; oy0 < s->OH; oy0 += s->chunk_rows) {
            int oy1 = WC_MIN(s->OH, oy0 + s->chunk_rows), ncols = (oy1 - oy0) * s->OW;
            const float *dyc = dy + (size_t)oy0 * s->OW;
            wc_im2col(work, x, s, oy0, oy1);
            /* dweight (K, ckk) += dy[:, chunk] (K, ncols) x col^T (ncols, ckk) */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->K, ckk, ncols, 1.0f, dyc,
                        (int)out_plane, work, ncols, 1.0f, dweight, ckk);
            if (!dx) continue;
            /* dcol (ckk, ncols) = weight^T (ckk, K) x dy[:, chunk] (K, ncols), then scattered */
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ckk, ncols, s->K, 1.0f, weight,
                        ckk, dyc, (int)out_plane, 0.0f, work, ncols);
            wc_col2im(dx, work, s, oy0, oy1);
        }
    }
}
