/* layers.c: ReLU, 2x2 max-pool, 2x nearest upsampling, channel concatenation and the masked
 * binary cross-entropy loss, forward and backward. Convolution lives in conv.c.
 * Plain loops: these layers move memory, they do not compute, and gcc vectorizes them. */
#include <string.h>

#include "wildcpu/layers.h"
#include "wildcpu/util.h"

/* A NaN passes through (as in PyTorch): hiding it as 0 would let a diverged network look
 * healthy, since divergence is detected from the loss and the gradients. */
void wc_relu_forward(float *out, const float *inp, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = inp[i] > 0.0f || inp[i] != inp[i] ? inp[i] : 0.0f;
}

void wc_relu_backward(float *dinp, const float *dout, const float *out, size_t n) {
    for (size_t i = 0; i < n; i++) dinp[i] += out[i] > 0.0f ? dout[i] : 0.0f;
}

void wc_relu_backward_inplace(float *d, const float *out, size_t n) {
    for (size_t i = 0; i < n; i++) d[i] = out[i] > 0.0f ? d[i] : 0.0f;
}

void wc_relu_backward_write(float *restrict dinp, const float *restrict dout,
                            const float *restrict out, size_t n) {
    for (size_t i = 0; i < n; i++) dinp[i] = out[i] > 0.0f ? dout[i] : 0.0f;
}

/* Index, within a plane of width W, of the maximum of the 2x2 window at output (oy, ox); a NaN
 * wins, so it propagates (as in PyTorch). */
static inline size_t window_argmax(const float *plane, int W, int oy, int ox) {
    size_t i0 = (size_t)(2 * oy) * W + 2 * ox;
    size_t cand[4] = {i0, i0 + 1, i0 + W, i0 + W + 1};
    size_t best = cand[0];
    for (int j = 1; j < 4; j++)
        if (plane[cand[j]] > plane[best] || plane[cand[j]] != plane[cand[j]]) best = cand[j];
    return best;
}

void wc_maxpool2_forward(float *out, const float *inp, int P, int H, int W) {
    const int OH = H / 2, OW = W / 2;
    for (int p = 0; p < P; p++) {
        const float *plane = inp + (size_t)p * H * W;
        float *o = out + (size_t)p * OH * OW;
        for (int oy = 0; oy < OH; oy++) {
            const float *r0 = plane + (size_t)(2 * oy) * W, *r1 = r0 + W;
            for (int ox = 0; ox < OW; ox++) {
                /* the rule of window_argmax: the larger wins, and a NaN wins */
                float m = r0[2 * ox], v[3] = {r0[2 * ox + 1], r1[2 * ox], r1[2 * ox + 1]};
                for (int j = 0; j < 3; j++) m = v[j] > m || v[j] != v[j] ? v[j] : m;
                o[(size_t)oy * OW + ox] = m;
            }
        }
    }
}

void wc_maxpool2_backward(float *dinp, const float *dout, const float *inp, int P, int H, int W) {
    const int OH = H / 2, OW = W / 2;
    for (int p = 0; p < P; p++) {
        const float *plane = inp + (size_t)p * H * W;
        float *dplane = dinp + (size_t)p * H * W;
        const float *d = dout + (size_t)p * OH * OW;
        for (int oy = 0; oy < OH; oy++)
            for (int ox = 0; ox < OW; ox++)
                dplane[window_argmax(plane, W, oy, ox)] += d[(size_t)oy * OW + ox];
    }
}

void wc_maxpool2_backward_write(float *dinp, const float *dout, const float *inp, int P, int H,
                                int W) {
    const int OH = H / 2, OW = W / 2;
    for (int p = 0; p < P; p++) {
        const float *plane = inp + (size_t)p * H * W;
        float *dplane = dinp + (size_t)p * H * W;
        const float *d = dout + (size_t)p * OH * OW;
        /* a window's four values are written in one pass over its two rows */
        for (int oy = 0; oy < OH; oy++) {
            float *r0 = dplane + (size_t)(2 * oy) * W, *r1 = r0 + W;
            for (int ox = 0; ox < OW; ox++) {
                size_t best = window_argmax(plane, W, oy, ox) - (size_t)(2 * oy) * W;
                r0[2 * ox] = r0[2 * ox + 1] = r1[2 * ox] = r1[2 * ox + 1] = 0.0f;
                r0[best] = d[(size_t)oy * OW + ox];
            }
            if (W % 2) r0[W - 1] = r1[W - 1] = 0.0f;
        }
        if (H % 2) memset(dplane + (size_t)(H - 1) * W, 0, sizeof(float) * W);
    }
}

void wc_upsample2_forward(float *out, const float *inp, int P, int H, int W) {
    const int OW = 2 * W;
    for (int p = 0; p < P; p++) {
        const float *plane = inp + (size_t)p * H * W;
        float *o = out + (size_t)p * 4 * H * W;
        for (int y = 0; y < H; y++) {
            float *r0 = o + (size_t)(2 * y) * OW;
            for (int x = 0; x < W; x++) r0[2 * x] = r0[2 * x + 1] = plane[(size_t)y * W + x];
            memcpy(r0 + OW, r0, sizeof(float) * OW);
        }
    }
}

/* Both forms of upsampling's backward: add is a compile-time constant at each call, so each
 * keeps its own loop; writing is not adding to zeros (0 + -0 would turn -0 into +0). */
static inline void upsample2_backward(float *dinp, const float *dout, int P, int H, int W,
                                      const int add) {
    const int OW = 2 * W;
    for (int p = 0; p < P; p++) {
        const float *d = dout + (size_t)p * 4 * H * W;
        float *dplane = dinp + (size_t)p * H * W;
        for (int y = 0; y < H; y++) {
            const float *r0 = d + (size_t)(2 * y) * OW, *r1 = r0 + OW;
            float *row = dplane + (size_t)y * W;
            for (int x = 0; x < W; x++) {
                const float s = (r0[2 * x] + r0[2 * x + 1]) + (r1[2 * x] + r1[2 * x + 1]);
                row[x] = add ? row[x] + s : s;
            }
        }
    }
}

void wc_upsample2_backward(float *dinp, const float *dout, int P, int H, int W) {
    upsample2_backward(dinp, dout, P, H, W, 1);
}

void wc_upsample2_backward_write(float *dinp, const float *dout, int P, int H, int W) {
    upsample2_backward(dinp, dout, P, H, W, 0);
}

void wc_concat_forward(float *out, const float *a, int Ca, const float *b, int Cb, int N,
                       size_t HW) {
    const size_t na = (size_t)Ca * HW, nb = (size_t)Cb * HW;
    for (int n = 0; n < N; n++) {
        memcpy(out + n * (na + nb), a + n * na, sizeof(float) * na);
        memcpy(out + n * (na + nb) + na, b + n * nb, sizeof(float) * nb);
    }
}

void wc_concat_backward(float *da, float *db, const float *dout, int Ca, int Cb, int N, size_t HW) {
    const size_t na = (size_t)Ca * HW, nb = (size_t)Cb * HW;
    for (int n = 0; n < N; n++) {
        const float *d = dout + n * (na + nb);
        if (da)
            for (size_t i = 0; i < na; i++) da[n * na + i] += d[i];
        if (db)
            for (size_t i = 0; i < nb; i++) db[n * nb + i] += d[na + i];
    }
}

double wc_bce_forward(const float *logits, const float *labels, const uint8_t *valid, size_t n,
                      float pos_weight) {
    double sum = 0.0;
    for (size_t i = 0; i < n; i++)
        if (valid[i]) sum += wc_bce_pixel(logits[i], labels[i], pos_weight);
    return sum;
}

void wc_bce_backward(float *dlogits, const float *logits, const float *labels, const uint8_t *valid,
                     size_t n, float pos_weight) {
    /* d/dz [pw*y*softplus(-z) + (1-y)*softplus(z)] = sigmoid(z)*(1 - y + pw*y) - pw*y */
    for (size_t i = 0; i < n; i++) {
        if (!valid[i]) {
            dlogits[i] = 0.0f;
            continue;
        }
        double y = labels[i];
        dlogits[i] = (float)(wc_sigmoid(logits[i]) * (1.0 - y + pos_weight * y) - pos_weight * y);
    }
}
