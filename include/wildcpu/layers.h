/* layers.h: the network's building blocks, each a forward and a backward function.
 *
 * Layout: every activation is NCHW float32 (N samples, C channels, H rows, W columns), the
 * layout PyTorch uses, so weights and tensors exchange with it without transposition.
 * Conventions (after llm.c): outputs come first; forward functions overwrite their output;
 * backward functions ADD into the gradients they produce (dinp, dweight, dbias), so a tensor
 * read by two layers receives the sum of both contributions; callers zero gradients first.
 * A NULL dinp means "input gradient not needed" (the first layer) and skips that work.
 *
 * Not here: allocation (callers pass every buffer, including the convolution workspace), the
 * network graph, threads (OpenBLAS threads inside the GEMMs are the only parallelism). */
#ifndef WILDCPU_LAYERS_H
#define WILDCPU_LAYERS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* ---- 2D convolution: lowering (im2col) + cblas_sgemm ---------------------------------------
 * out[n,k,oy,ox] = bias[k] + sum_{c,ky,kx} weight[k,c,ky,kx] * inp[n,c,oy*stride+ky-pad,
 *                                                                  ox*stride+kx-pad]
 * with zero padding. Each image is lowered in chunks of output rows (about WC_CONV_CHUNK_COLS
 * output pixels), so the lowered matrix stays in cache and the workspace is small; 1x1 kernels
 * with stride 1 and no padding skip the lowering (the image already is the matrix). */

#define WC_CONV_CHUNK_COLS 2048

typedef struct wc_conv_shape {
    int N, C, H, W;   /* input (N, C, H, W) */
    int K, KH, KW;    /* weight (K, C, KH, KW), bias (K) */
    int stride, pad;  /* the same in both directions */
    int OH, OW;       /* output (N, K, OH, OW) */
    int chunk_rows;   /* output rows lowered at a time */
} wc_conv_shape;

/* Fills in OH, OW and chunk_rows. Asserts that the output is at least 1x1. */
wc_conv_shape wc_conv_shape_make(int N, int C, int H, int W, int K, int KH, int KW, int stride,
                                 int pad);
/* Floats of workspace wc_conv2d_forward/backward need for this shape (0 for a plain 1x1). */
size_t wc_conv_workspace_floats(const wc_conv_shape *s);
/* True when the lowering is skipped (1x1, stride 1, no padding). */
int wc_conv_is_pointwise(const wc_conv_shape *s);

/* out (N,K,OH,OW) = conv(inp (N,C,H,W), weight (K,C,KH,KW)) + bias (K, or NULL for none).
 * work: wc_conv_workspace_floats(s) floats. */
void wc_conv2d_forward(float *out, const float *inp, const float *weight, const float *bias,
                       const wc_conv_shape *s, float *work);
/* dinp (N,C,H,W) += d/dinp, dweight (K,C,KH,KW) += d/dweight, dbias (K) += d/dbias, given
 * dout (N,K,OH,OW), the forward input and the weight. dinp and dbias may be NULL. */
void wc_conv2d_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const wc_conv_shape *s,
                        float *work);

/* The lowering of output rows [oy0, oy1) of one image, and its adjoint.
 *   im2col: col (C*KH*KW, (oy1-oy0)*OW) = patches of img (C, H, W)   [overwrites col]
 *   col2im: img (C, H, W) += the patches in col scattered back        [adds into img]
 * <im2col(x), y> == <x, col2im(y)> holds exactly in real arithmetic (tested). */
void wc_im2col(float *col, const float *img, const wc_conv_shape *s, int oy0, int oy1);
void wc_col2im(float *img, const float *col, const wc_conv_shape *s, int oy0, int oy1);

/* ---- elementwise and resampling layers ----------------------------------------------------- */

/* out = max(inp, 0); out may equal inp (in place). */
void wc_relu_forward(float *out, const float *inp, size_t n);
/* dinp += dout where out > 0. */
void wc_relu_backward(float *dinp, const float *dout, const float *out, size_t n);
/* The in-place form: d = d where out > 0, else 0 (for a ReLU that overwrote its input, whose
 * gradient buffer is shared with its input's). */
void wc_relu_backward_inplace(float *d, const float *out, size_t n);

/* 2x2 max-pool, stride 2, over planes: inp (P, H, W) -> out (P, H/2, W/2) where P = N*C; an
 * odd last row or column is dropped (as PyTorch does). The first maximum in row-major window
 * order wins ties. */
void wc_maxpool2_forward(float *out, const float *inp, int P, int H, int W);
/* dinp (P,H,W) += dout routed to each window's maximum, found again from inp. */
void wc_maxpool2_backward(float *dinp, const float *dout, const float *inp, int P, int H, int W);

/* 2x nearest-neighbour upsampling: inp (P, H, W) -> out (P, 2H, 2W). */
void wc_upsample2_forward(float *out, const float *inp, int P, int H, int W);
/* dinp (P,H,W) += sum of the four dout pixels each input pixel was copied to. */
void wc_upsample2_backward(float *dinp, const float *dout, int P, int H, int W);

/* Channel concatenation: out (N, Ca+Cb, HW) = [a (N, Ca, HW), b (N, Cb, HW)] per sample. */
void wc_concat_forward(float *out, const float *a, int Ca, const float *b, int Cb, int N,
                       size_t HW);
/* da += dout[:, :Ca], db += dout[:, Ca:]. Either may be NULL. */
void wc_concat_backward(float *da, float *db, const float *dout, int Ca, int Cb, int N,
                        size_t HW);

/* ---- loss: sigmoid + binary cross-entropy with logits -------------------------------------- */

/* One pixel's loss for logit z, label y in {0,1}, positive-class weight pw:
 *   l = pw * y * softplus(-z) + (1 - y) * softplus(z),  softplus(t) = log(1 + e^t),
 * written so that no exponential overflows for any finite z. Shared by training (wc_bce_*)
 * and validation metrics so both report the same number. */
static inline double wc_softplus(double t) { return fmax(t, 0.0) + log1p(exp(-fabs(t))); }
static inline double wc_bce_pixel(double z, double y, double pw) {
    return pw * y * wc_softplus(-z) + (1.0 - y) * wc_softplus(z);
}
static inline double wc_sigmoid(double z) {
    return z >= 0 ? 1.0 / (1.0 + exp(-z)) : exp(z) / (1.0 + exp(z));
}

/* Sum of the loss over valid pixels (valid[i] != 0); pixels with valid[i] == 0 (nodata)
 * contribute nothing. Returns the sum (not the mean: the mean's denominator is the global
 * count of valid pixels, known only after the reduction across micro-batches and ranks). */
double wc_bce_forward(const float *logits, const float *labels, const uint8_t *valid, size_t n,
                      float pos_weight);
/* dlogits = d(sum of loss)/dlogits (overwrites; 0 at invalid pixels). */
void wc_bce_backward(float *dlogits, const float *logits, const float *labels,
                     const uint8_t *valid, size_t n, float pos_weight);

#endif
