/* layers.h: the network's building blocks but the convolution (conv.h), each a forward and a
 * backward function: ReLU, 2x2 max-pooling, 2x upsampling, concatenation, the loss.
 *
 * Layout: every activation is NCHW float32 (N samples, C channels, H rows, W columns), the
 * layout PyTorch uses, so weights and tensors exchange with it without transposition.
 * Conventions (after llm.c): outputs come first; forward functions overwrite their output;
 * backward functions ADD into the gradients they produce (dinp, dweight, dbias), so a tensor
 * read by two layers receives the sum of both contributions; callers zero gradients first.
 * A NULL dinp means "input gradient not needed" (the first layer) and skips that work.
 * The _write forms of the backward functions overwrite dinp instead (for the first contribution
 * to a gradient, so the network zeroes no gradient buffer before its backward pass).
 *
 * Not here: allocation (callers pass every buffer), the convolution (conv.h), the network graph
 * (net.h). */
#ifndef WILDCPU_LAYERS_H
#define WILDCPU_LAYERS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* ---- elementwise and resampling layers ----------------------------------------------------- */

/* out = max(inp, 0); out may equal inp (in place). */
void wc_relu_forward(float *out, const float *inp, size_t n);
/* dinp += dout where out > 0. */
void wc_relu_backward(float *dinp, const float *dout, const float *out, size_t n);
/* The in-place form: d = d where out > 0, else 0 (for a ReLU that overwrote its input, whose
 * gradient buffer is shared with its input's). */
void wc_relu_backward_inplace(float *d, const float *out, size_t n);
/* dinp = dout where out > 0, else 0. */
void wc_relu_backward_write(float *dinp, const float *dout, const float *out, size_t n);

/* 2x2 max-pool, stride 2, over planes: inp (P, H, W) -> out (P, H/2, W/2) where P = N*C; an
 * odd last row or column is dropped (as PyTorch does). The first maximum in row-major window
 * order wins ties. */
void wc_maxpool2_forward(float *out, const float *inp, int P, int H, int W);
/* dinp (P,H,W) += dout routed to each window's maximum, found again from inp. */
void wc_maxpool2_backward(float *dinp, const float *dout, const float *inp, int P, int H, int W);
/* dinp (P,H,W) = dout routed to each window's maximum, 0 elsewhere (a dropped row or column
 * too). */
void wc_maxpool2_backward_write(float *dinp, const float *dout, const float *inp, int P, int H,
                                int W);

/* 2x nearest-neighbour upsampling: inp (P, H, W) -> out (P, 2H, 2W). */
void wc_upsample2_forward(float *out, const float *inp, int P, int H, int W);
/* dinp (P,H,W) += sum of the four dout pixels each input pixel was copied to. */
void wc_upsample2_backward(float *dinp, const float *dout, int P, int H, int W);
/* dinp (P,H,W) = that sum. */
void wc_upsample2_backward_write(float *dinp, const float *dout, int P, int H, int W);

/* Channel concatenation: out (N, Ca+Cb, HW) = [a (N, Ca, HW), b (N, Cb, HW)] per sample. */
void wc_concat_forward(float *out, const float *a, int Ca, const float *b, int Cb, int N,
                       size_t HW);
/* da += dout[:, :Ca], db += dout[:, Ca:]. Either may be NULL. */
void wc_concat_backward(float *da, float *db, const float *dout, int Ca, int Cb, int N, size_t HW);

/* ---- loss: sigmoid + binary cross-entropy with logits -------------------------------------- */

/* One pixel's loss for logit z, label y in {0,1}, positive-class weight pw:
 *   l = pw * y * softplus(-z) + (1 - y) * softplus(z),  softplus(t) = log(1 + e^t),
 * written so that no exponential overflows for any finite z. Shared by training (wc_bce_*)
 * and validation metrics so both report the same number. */
static inline double wc_softplus(double t) {
    return fmax(t, 0.0) + log1p(exp(-fabs(t)));
}
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
void wc_bce_backward(float *dlogits, const float *logits, const float *labels, const uint8_t *valid,
                     size_t n, float pos_weight);

#endif
