/* conv.h: 2D convolution, forward and both gradients, over cblas_sgemm.
 *
 *   out[n,k,oy,ox] = bias[k] + sum_{c,ky,kx} weight[k,c,ky,kx] * inp[n,c,oy*stride+ky-pad,
 *                                                                     ox*stride+kx-pad]
 * with zero padding, NCHW float32 like every activation (layers.h states the conventions:
 * outputs first, backward adds into gradients, a NULL dinp skips the input gradient).
 *
 * Three paths, chosen by shape: 3x3 kernels with stride 1 and padding up to 2 use Winograd's
 * minimal filtering F(4x4, 3x3) forward and for both gradients, as one cache-blocked pass over
 * blocks of tiles of the whole micro-batch (winograd.h); 1x1 kernels with stride 1 and no
 * padding use the GEMM directly (the image already is the matrix); every other shape is lowered
 * (im2col) in chunks of output rows, about WC_CONV_CHUNK_COLS output pixels at a time, so the
 * lowered matrix stays in cache and the workspace is small.
 *
 * The _ex forms take a thread pool (pool.h; NULL: the caller alone) and flags that fuse the
 * neighbouring elementwise work the network graph allows; results are bitwise the same for any
 * number of threads. Samples of the input and output may lie further apart than one sample's
 * size (in_sample, out_sample: a tensor that is a view into a concatenation's buffer).
 *
 * Not here: allocation (the caller passes the workspace, sized by wc_conv_workspace_floats),
 * the graph (net.h). */
#ifndef WILDCPU_CONV_H
#define WILDCPU_CONV_H

#include <stddef.h>

struct wc_pool;

#define WC_CONV_CHUNK_COLS 2048

typedef struct wc_conv_shape {
    int N, C, H, W;  /* input (N, C, H, W) */
    int K, KH, KW;   /* weight (K, C, KH, KW), bias (K) */
    int stride, pad; /* the same in both directions */
    int OH, OW;      /* output (N, K, OH, OW) */
    int chunk_rows;  /* output rows lowered at a time */
    /* floats from one sample to the next in the input and its gradient (C*H*W unless a view)
     * and in the output and its gradient (K*OH*OW unless a view) */
    size_t in_sample, out_sample;
} wc_conv_shape;

/* Fused work (flags of the _ex forms). */
enum {
    WC_CONV_RELU = 1,           /* forward: out = max(conv + bias, 0), a NaN passing through */
    WC_CONV_DINP_WRITE = 2,     /* backward: dinp = the gradient, instead of += */
    WC_CONV_DINP_RELU_MASK = 4, /* backward: then dinp = 0 where inp <= 0 (inp is the output of
                                 * a ReLU whose gradient buffer this is) */
};

/* Fills in OH, OW, chunk_rows and contiguous sample strides. Asserts that the output is at
 * least 1x1. */
wc_conv_shape wc_conv_shape_make(int N, int C, int H, int W, int K, int KH, int KW, int stride,
                                 int pad);
/* Floats of workspace wc_conv2d_forward/backward need for this shape (0 for a plain 1x1), for
 * up to s->N samples. */
size_t wc_conv_workspace_floats(const wc_conv_shape *s);
/* The same for the _ex forms running on `threads` threads. */
size_t wc_conv_workspace_floats_threads(const wc_conv_shape *s, int threads);
/* The side of the output tiles a kernel shape's arithmetic works in (2 for Winograd F(2x2, 3x3),
 * 1 otherwise): an output pixel's float result depends on its position within its tile, so two
 * windows give a pixel the same bits only when their origins agree modulo the tile, at the
 * layer's scale (net.h's exact alignment). */
int wc_conv_output_tile(int KH, int KW, int stride, int pad);
/* True when the lowering is skipped (1x1, stride 1, no padding). */
int wc_conv_is_pointwise(const wc_conv_shape *s);

/* out (N,K,OH,OW) = conv(inp (N,C,H,W), weight (K,C,KH,KW)) + bias (K, or NULL for none).
 * work: wc_conv_workspace_floats(s) floats. */
void wc_conv2d_forward(float *out, const float *inp, const float *weight, const float *bias,
                       const wc_conv_shape *s, float *work);
/* dinp (N,C,H,W) += d/dinp, dweight (K,C,KH,KW) += d/dweight, dbias (K) += d/dbias, given
 * dout (N,K,OH,OW), the forward input and the weight. dinp and dbias may be NULL. */
void wc_conv2d_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const wc_conv_shape *s, float *work);
/* The same with flags (WC_CONV_RELU forward; WC_CONV_DINP_* backward) on a pool; work:
 * wc_conv_workspace_floats_threads(s, wc_pool_threads(pool)) floats. */
void wc_conv2d_forward_ex(float *out, const float *inp, const float *weight, const float *bias,
                          const wc_conv_shape *s, int flags, struct wc_pool *pool, float *work);
void wc_conv2d_backward_ex(float *dinp, float *dweight, float *dbias, const float *dout,
                           const float *inp, const float *weight, const wc_conv_shape *s, int flags,
                           struct wc_pool *pool, float *work);

/* dbias (K) += the sums of dout (N, K, OH, OW) over samples and pixels (channels in parallel;
 * each channel's sum in the same order whatever the threads). */
void wc_conv_bias_grad(float *dbias, const float *dout, const wc_conv_shape *s,
                       struct wc_pool *pool);

/* The lowering of output rows [oy0, oy1) of one image, and its adjoint.
 *   im2col: col (C*KH*KW, (oy1-oy0)*OW) = patches of img (C, H, W)   [overwrites col]
 *   col2im: img (C, H, W) += the patches in col scattered back        [adds into img]
 * <im2col(x), y> == <x, col2im(y)> holds exactly in real arithmetic (tested). */
void wc_im2col(float *col, const float *img, const wc_conv_shape *s, int oy0, int oy1);
void wc_col2im(float *img, const float *col, const wc_conv_shape *s, int oy0, int oy1);

#endif
