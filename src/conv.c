/* conv.c: 2D convolution as a lowering (im2col) plus cblas_sgemm, forward and backward.
 *
 * Each image is processed on its own, in chunks of output rows: the lowered chunk
 * (C*KH*KW rows by about WC_CONV_CHUNK_COLS columns) stays in L2 while the GEMM reads it, which
 * measured faster here than lowering a whole image or a whole micro-batch at once (GEMMs with
 * ~512 columns ran at 58-64 GFLOP/s against 46-54 with 4096-16384). The backward pass lowers
 * each chunk again instead of keeping the forward's lowered matrix: that costs a cheap, cache-
 * resident copy and saves memory the size of every layer's lowered input.
 *
 * 3x3 stride-1 convolutions (every convolution of unet-lite but its 1x1 head) run forward,
 * and both gradients backward, with Winograd's minimal filtering F(2x2, 3x3): each 2x2 output
 * tile costs 16 multiplies per channel pair instead of 36, as 16 GEMMs (one per transform
 * position) between transformed weights (K x C) and transformed input tiles (C x tiles); the
 * weight gradient is the adjoint of the forward transform (winograd_backward_weights). The
 * transforms are exact in real arithmetic; in float32 they add rounding of the order of the
 * direct sum's (tests compare every path with naive loops).
 *
 * Not here: allocation (the caller passes the workspace), threads (OpenBLAS's own). */
#include <cblas.h>
#include <string.h>

#include "wildcpu/conv.h"
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

/* dbias (K) += the sums of dout (N, K, OH, OW) over samples and pixels. */
static void add_bias_grad(float *dbias, const float *dout, const wc_conv_shape *s) {
    const size_t out_plane = (size_t)s->OH * s->OW;
    for (int k = 0; k < s->K; k++) {
        /* planes have thousands of terms: float sums of a row at a time (vectorized), added
         * in double */
        double sum = 0.0;
        for (int n = 0; n < s->N; n++) {
            const float *dyk = dout + ((size_t)n * s->K + k) * out_plane;
            for (int y = 0; y < s->OH; y++) {
                float row = 0.0f;
                for (int x = 0; x < s->OW; x++) row += dyk[(size_t)y * s->OW + x];
                sum += row;
            }
        }
        dbias[k] += (float)sum;
    }
}

/* ---- Winograd F(2x2, 3x3) ----------------------------------------------------------------- */

/* Rows of tiles transformed at a time: the transformed input (16 x C x tiles) and products
 * (16 x K x tiles) of a chunk stay near L2 size. */
static int winograd_chunk_rows(const wc_conv_shape *s) {
    int tiles_w = (s->OW + 1) / 2;
    int tiles = WC_MAX(32, WC_MIN(256, 32768 / (s->C + s->K)));
    return WC_MAX(1, tiles / tiles_w);
}

static int use_winograd(const wc_conv_shape *s) {
    return s->KH == 3 && s->KW == 3 && s->stride == 1 && s->pad <= 2;
}

int wc_conv_output_tile(int KH, int KW, int stride, int pad) {
    const wc_conv_shape s = {.KH = KH, .KW = KW, .stride = stride, .pad = pad};
    return use_winograd(&s) ? 2 : 1;
}

/* Row buffers (10 are used), each as wide as the padded input row, the output row, and 4
 * transformed values per tile. */
static size_t winograd_row_floats(const wc_conv_shape *s) {
    size_t tiles_w = (size_t)(s->OW + 1) / 2;
    return WC_MAX((size_t)s->W + 2 * s->pad, 4 * tiles_w) + 8;
}

/* U or dU (16 K C), V (16 C tiles), M (16 K tiles), row buffers. */
static size_t winograd_workspace(const wc_conv_shape *s) {
    size_t tiles = (size_t)winograd_chunk_rows(s) * ((s->OW + 1) / 2);
    return 16 * ((size_t)s->K * s->C + tiles * ((size_t)s->C + s->K)) +
           10 * winograd_row_floats(s);
}

/* U (16, K, C) = G g G^T for every 3x3 filter g = weight[k, c]. */
static void winograd_weights(float *U, const float *weight, int K, int C) {
    const size_t plane = (size_t)K * C;
    for (int k = 0; k < K; k++)
        for (int c = 0; c < C; c++) {
            const float *g = weight + ((size_t)k * C + c) * 9;
            float t[4][3]; /* G g: rows of G are (1,0,0), (.5,.5,.5), (.5,-.5,.5), (0,0,1) */
            for (int j = 0; j < 3; j++) {
                float a = g[j], b = g[3 + j], d = g[6 + j];
                t[0][j] = a;
                t[1][j] = 0.5f * (a + b + d);
                t[2][j] = 0.5f * (a - b + d);
                t[3][j] = d;
            }
            for (int i = 0; i < 4; i++) {
                float a = t[i][0], b = t[i][1], d = t[i][2];
                float *u = U + (size_t)(4 * i) * plane + (size_t)k * C + c;
                u[0] = a;
                u[plane] = 0.5f * (a + b + d);
                u[2 * plane] = 0.5f * (a - b + d);
                u[3 * plane] = d;
            }
        }
}

/* h (4, tiles_w): the horizontal half of B^T d B for one input row y (zero outside the image):
 * per tile tx, the row's four elements e0..e3 from column 2 tx - pad, combined as
 * e0-e2, e1+e2, e2-e1, e1-e3. pad_row: a buffer for the zero-padded row. */
static void winograd_row(float *restrict h, const float *img, int y, const wc_conv_shape *s,
                         int tiles_w, float *restrict pad_row) {
    float *restrict h0 = h, *restrict h1 = h + tiles_w, *restrict h2 = h1 + tiles_w,
                    *restrict h3 = h2 + tiles_w;
    if (y < 0 || y >= s->H) {
        memset(h, 0, sizeof(float) * 4 * tiles_w);
        return;
    }
    memset(pad_row, 0, sizeof(float) * s->pad);
    memcpy(pad_row + s->pad, img + (size_t)y * s->W, sizeof(float) * s->W);
    memset(pad_row + s->pad + s->W, 0, sizeof(float) * (2 * tiles_w + 2 - s->W - s->pad + 2));
    for (int tx = 0; tx < tiles_w; tx++) {
        float e0 = pad_row[2 * tx], e1 = pad_row[2 * tx + 1], e2 = pad_row[2 * tx + 2],
              e3 = pad_row[2 * tx + 3];
        h0[tx] = e0 - e2;
        h1[tx] = e1 + e2;
        h2[tx] = e2 - e1;
        h3[tx] = e1 - e3;
    }
}

/* V (16, C, nt) for the tile rows [ty0, ty1) of one image x (C, H, W): B^T d B of each 4x4
 * input tile d whose top-left is (2 ty - pad, 2 tx - pad), zero outside the image. The
 * horizontal half is computed once per input row (consecutive tile rows share two rows), the
 * vertical half combines four rows; every loop runs along a row and vectorizes. rows: the row
 * buffers (a ring of 4 transformed rows and one padded row). */
static void winograd_input(float *V, const float *x, const wc_conv_shape *s, int ty0, int ty1,
                           float *rows) {
    const int tiles_w = (s->OW + 1) / 2, nt = (ty1 - ty0) * tiles_w;
    const size_t plane = (size_t)s->C * nt, hsz = 4 * (size_t)tiles_w;
    float *ring = rows, *pad_row = rows + 4 * hsz;
    for (int c = 0; c < s->C; c++) {
        const float *img = x + (size_t)c * s->H * s->W;
        int have = 0; /* input rows [first, first + have) are in the ring, row y at y % 4 */
        int first = 2 * ty0 - s->pad;
        for (int ty = ty0; ty < ty1; ty++) {
            const int y0 = 2 * ty - s->pad;
            for (int y = first + have; y < y0 + 4; y++, have++)
                winograd_row(ring + (size_t)((y - first) & 3) * hsz, img, y, s, tiles_w, pad_row);
            const float *h[4];
            for (int r = 0; r < 4; r++) h[r] = ring + (size_t)((y0 + r - first) & 3) * hsz;
            float *v = V + (size_t)c * nt + (size_t)(ty - ty0) * tiles_w;
            for (int j = 0; j < 4; j++) { /* vertical: rows d0-d2, d1+d2, d2-d1, d1-d3 */
                const float *restrict a0 = h[0] + (size_t)j * tiles_w, *restrict a1 = h[1] + (size_t)j * tiles_w,
                                      *restrict a2 = h[2] + (size_t)j * tiles_w, *restrict a3 = h[3] + (size_t)j * tiles_w;
                float *restrict v0 = v + (size_t)j * plane, *restrict v1 = v0 + 4 * plane,
                                *restrict v2 = v1 + 4 * plane, *restrict v3 = v2 + 4 * plane;
                for (int tx = 0; tx < tiles_w; tx++) {
                    v0[tx] = a0[tx] - a2[tx];
                    v1[tx] = a1[tx] + a2[tx];
                    v2[tx] = a2[tx] - a1[tx];
                    v3[tx] = a1[tx] - a3[tx];
                }
            }
        }
    }
}

/* out (K, OH, OW) gets A^T m A of the products m = M (16, K, nt) of tile rows [ty0, ty1); with
 * `add` the result is added to out, otherwise written after the bias. rows: 10 row buffers. */
static void winograd_output(float *out, const float *M, const float *bias, const wc_conv_shape *s,
                            int ty0, int ty1, int add, float *rows) {
    const int tiles_w = (s->OW + 1) / 2, nt = (ty1 - ty0) * tiles_w;
    const size_t plane = (size_t)s->K * nt, rw = winograd_row_floats(s);
    float *a[2][4];
    for (int r = 0; r < 2; r++)
        for (int q = 0; q < 4; q++) a[r][q] = rows + (4 * r + q) * rw;
    float *yrow[2] = {rows + 8 * rw, rows + 9 * rw};
    for (int k = 0; k < s->K; k++) {
        float *o = out + (size_t)k * s->OH * s->OW;
        const float b0 = bias ? bias[k] : 0.0f;
        for (int ty = ty0; ty < ty1; ty++) {
            const float *m = M + (size_t)k * nt + (size_t)(ty - ty0) * tiles_w;
            for (int q = 0; q < 4; q++) { /* A^T m: rows m0+m1+m2, m1-m2-m3 */
                const float *m0 = m + (size_t)q * plane, *m1 = m0 + 4 * plane,
                            *m2 = m1 + 4 * plane, *m3 = m2 + 4 * plane;
                float *a0 = a[0][q], *a1 = a[1][q];
                for (int tx = 0; tx < tiles_w; tx++) {
                    a0[tx] = m0[tx] + m1[tx] + m2[tx];
                    a1[tx] = m1[tx] - m2[tx] - m3[tx];
                }
            }
            for (int r = 0; r < 2; r++) { /* (A^T m) A along the row, interleaving pairs */
                const float *e0 = a[r][0], *e1 = a[r][1], *e2 = a[r][2], *e3 = a[r][3];
                float *yr = yrow[r];
                for (int tx = 0; tx < tiles_w; tx++) {
                    yr[2 * tx] = e0[tx] + e1[tx] + e2[tx];
                    yr[2 * tx + 1] = e1[tx] - e2[tx] - e3[tx];
                }
            }
            for (int r = 0; r < 2; r++) {
                int oy = 2 * ty + r;
                if (oy >= s->OH) break;
                float *row = o + (size_t)oy * s->OW;
                const float *yr = yrow[r];
                if (add)
                    for (int ox = 0; ox < s->OW; ox++) row[ox] += yr[ox];
                else
                    for (int ox = 0; ox < s->OW; ox++) row[ox] = b0 + yr[ox];
            }
        }
    }
}

/* out (N, K, OH, OW) = or += conv(inp, weight) + bias, for 3x3 stride-1 shapes. */
static void winograd_conv(float *out, const float *inp, const float *weight, const float *bias,
                          const wc_conv_shape *s, float *work, int add) {
    const int tiles_w = (s->OW + 1) / 2, tiles_h = (s->OH + 1) / 2;
    const int rows_per_chunk = winograd_chunk_rows(s);
    const size_t max_nt = (size_t)rows_per_chunk * tiles_w;
    float *U = work, *V = U + 16 * (size_t)s->K * s->C, *M = V + 16 * max_nt * s->C;
    float *rows = M + 16 * max_nt * s->K;
    winograd_weights(U, weight, s->K, s->C);
    for (int n = 0; n < s->N; n++) {
        const float *x = inp + (size_t)n * s->C * s->H * s->W;
        float *y = out + (size_t)n * s->K * s->OH * s->OW;
        for (int ty0 = 0; ty0 < tiles_h; ty0 += rows_per_chunk) {
            int ty1 = WC_MIN(tiles_h, ty0 + rows_per_chunk), nt = (ty1 - ty0) * tiles_w;
            winograd_input(V, x, s, ty0, ty1, rows);
            for (int xi = 0; xi < 16; xi++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, s->K, nt, s->C, 1.0f,
                            U + (size_t)xi * s->K * s->C, s->C, V + (size_t)xi * s->C * nt, nt,
                            0.0f, M + (size_t)xi * s->K * nt, nt);
            winograd_output(y, M, bias, s, ty0, ty1, add, rows);
        }
    }
}

/* Wg (16, K, nt) = A dy A^T of each 2x2 tile dy of the output gradient (K, OH, OW) in tile rows
 * [ty0, ty1) (zero beyond the last row or column): the adjoint of the output transform.
 * A dy A^T: rows y0, y0+y1, y0-y1, -y1 of the tile, then the same on its columns. */
static void winograd_grad_output(float *Wg, const float *dout, const wc_conv_shape *s, int ty0,
                                 int ty1, float *rows) {
    const int tiles_w = (s->OW + 1) / 2, nt = (ty1 - ty0) * tiles_w;
    const size_t plane = (size_t)s->K * nt, rw = winograd_row_floats(s);
    float *restrict r0 = rows, *restrict r1 = rows + rw;
    /* the vertical half, per row of the tile: e[r][0..1] for each tile as two row arrays */
    float *e[4][2];
    for (int r = 0; r < 4; r++)
        for (int q = 0; q < 2; q++) e[r][q] = rows + (2 + 2 * r + q) * rw;
    for (int k = 0; k < s->K; k++) {
        const float *g = dout + (size_t)k * s->OH * s->OW;
        for (int ty = ty0; ty < ty1; ty++) {
            for (int r = 0; r < 2; r++) { /* the two output rows, zero-padded to an even width */
                float *dst = r ? r1 : r0;
                int oy = 2 * ty + r;
                if (oy < s->OH)
                    memcpy(dst, g + (size_t)oy * s->OW, sizeof(float) * s->OW);
                else
                    memset(dst, 0, sizeof(float) * s->OW);
                dst[s->OW] = 0.0f;
            }
            for (int q = 0; q < 2; q++) {
                float *restrict p0 = e[0][q], *restrict p1 = e[1][q], *restrict p2 = e[2][q],
                                *restrict p3 = e[3][q];
                for (int tx = 0; tx < tiles_w; tx++) {
                    float a = r0[2 * tx + q], b = r1[2 * tx + q];
                    p0[tx] = a;
                    p1[tx] = a + b;
                    p2[tx] = a - b;
                    p3[tx] = -b;
                }
            }
            float *w = Wg + (size_t)k * nt + (size_t)(ty - ty0) * tiles_w;
            for (int r = 0; r < 4; r++) {
                const float *restrict a = e[r][0], *restrict b = e[r][1];
                float *restrict o0 = w + (size_t)(4 * r) * plane, *restrict o1 = o0 + plane,
                                *restrict o2 = o1 + plane, *restrict o3 = o2 + plane;
                for (int tx = 0; tx < tiles_w; tx++) {
                    o0[tx] = a[tx];
                    o1[tx] = a[tx] + b[tx];
                    o2[tx] = a[tx] - b[tx];
                    o3[tx] = -b[tx];
                }
            }
        }
    }
}

/* dweight (K, C, 3, 3) += G^T dU G for every (k, c), dU (16, K, C). */
static void winograd_weight_grad(float *dweight, const float *dU, int K, int C) {
    const size_t plane = (size_t)K * C;
    for (int k = 0; k < K; k++)
        for (int c = 0; c < C; c++) {
            const float *u = dU + (size_t)k * C + c;
            float m[4][4], t[3][4];
            for (int i = 0; i < 16; i++) m[i / 4][i % 4] = u[(size_t)i * plane];
            for (int q = 0; q < 4; q++) { /* G^T m */
                t[0][q] = m[0][q] + 0.5f * (m[1][q] + m[2][q]);
                t[1][q] = 0.5f * (m[1][q] - m[2][q]);
                t[2][q] = 0.5f * (m[1][q] + m[2][q]) + m[3][q];
            }
            float *g = dweight + ((size_t)k * C + c) * 9;
            for (int i = 0; i < 3; i++) { /* (G^T m) G */
                g[3 * i + 0] += t[i][0] + 0.5f * (t[i][1] + t[i][2]);
                g[3 * i + 1] += 0.5f * (t[i][1] - t[i][2]);
                g[3 * i + 2] += 0.5f * (t[i][1] + t[i][2]) + t[i][3];
            }
        }
}

/* dweight += the weight gradient of a 3x3 stride-1 convolution, through
 *   dW = G^T [ sum over tiles (B^T d B) .* (A dy A^T) ] G,
 * the adjoint of the forward's Y = A^T [ (G g G^T) .* (B^T d B) ] A: 16 GEMMs whose inner
 * dimension is the number of tiles. */
static void winograd_backward_weights(float *dweight, const float *dout, const float *inp,
                                      const wc_conv_shape *s, float *work) {
    const int tiles_w = (s->OW + 1) / 2, tiles_h = (s->OH + 1) / 2;
    const int rows_per_chunk = winograd_chunk_rows(s);
    const size_t max_nt = (size_t)rows_per_chunk * tiles_w;
    float *dU = work, *V = dU + 16 * (size_t)s->K * s->C, *Wg = V + 16 * max_nt * s->C;
    float *rows = Wg + 16 * max_nt * s->K;
    memset(dU, 0, sizeof(float) * 16 * (size_t)s->K * s->C);
    for (int n = 0; n < s->N; n++) {
        const float *x = inp + (size_t)n * s->C * s->H * s->W;
        const float *dy = dout + (size_t)n * s->K * s->OH * s->OW;
        for (int ty0 = 0; ty0 < tiles_h; ty0 += rows_per_chunk) {
            int ty1 = WC_MIN(tiles_h, ty0 + rows_per_chunk), nt = (ty1 - ty0) * tiles_w;
            winograd_input(V, x, s, ty0, ty1, rows);
            winograd_grad_output(Wg, dy, s, ty0, ty1, rows);
            /* dU[xi] (K, C) += Wg[xi] (K, nt) x V[xi]^T (nt, C) */
            for (int xi = 0; xi < 16; xi++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->K, s->C, nt, 1.0f,
                            Wg + (size_t)xi * s->K * nt, nt, V + (size_t)xi * s->C * nt, nt,
                            1.0f, dU + (size_t)xi * s->K * s->C, s->C);
        }
    }
    winograd_weight_grad(dweight, dU, s->K, s->C);
}

/* ---- the input gradient as a convolution -------------------------------------------------- */

/* The input gradient of a stride-1 convolution is itself a convolution: of the output gradient
 * with the flipped, transposed kernel, padded by KH-1-pad (square kernels). Lowering the output
 * gradient (K*KH*KW rows) and one GEMM into dinp replaces lowering-GEMM-scatter (col2im) and its
 * zeroed workspace; measured faster here, most for layers with more input than output channels
 * (the decoder's concatenations). */
static int backward_as_conv(const wc_conv_shape *s) {
    return s->stride == 1 && s->KH == s->KW && s->pad <= s->KH - 1 && !wc_conv_is_pointwise(s);
}

/* The shape of that convolution: input (N, K, OH, OW), output (N, C, H, W). */
static wc_conv_shape transposed_shape(const wc_conv_shape *s) {
    return wc_conv_shape_make(s->N, s->K, s->OH, s->OW, s->C, s->KH, s->KW, 1, s->KH - 1 - s->pad);
}

size_t wc_conv_workspace_floats(const wc_conv_shape *s) {
    if (wc_conv_is_pointwise(s)) return 0;
    size_t need = (size_t)s->C * s->KH * s->KW * (size_t)s->chunk_rows * s->OW;
    if (use_winograd(s)) need = WC_MAX(need, winograd_workspace(s));
    if (backward_as_conv(s)) {
        wc_conv_shape t = transposed_shape(s);
        size_t tw = (size_t)s->K * s->C * s->KH * s->KW; /* the flipped weights */
        size_t tl = use_winograd(&t) ? winograd_workspace(&t)
                                     : (size_t)t.C * t.KH * t.KW * (size_t)t.chunk_rows * t.OW;
        need = WC_MAX(need, tw + tl);
    }
    return need;
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
    if (use_winograd(s)) {
        winograd_conv(out, inp, weight, bias, s, work, 0);
        return;
    }
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

/* dinp += conv(dout, flipped weights), for stride 1; work holds the flipped weights first. */
static void backward_data_as_conv(float *dinp, const float *dout, const float *weight,
                                  const wc_conv_shape *s, float *work) {
    const wc_conv_shape t = transposed_shape(s);
    const int kk = s->KH * s->KW;
    /* wt (C, K, KH, KW)[c, k, i] = weight (K, C, KH, KW)[k, c, kk-1-i] */
    float *wt = work, *col = work + (size_t)s->K * s->C * kk;
    for (int k = 0; k < s->K; k++)
        for (int c = 0; c < s->C; c++) {
            const float *src = weight + ((size_t)k * s->C + c) * kk;
            float *dst = wt + ((size_t)c * s->K + k) * kk;
            for (int i = 0; i < kk; i++) dst[i] = src[kk - 1 - i];
        }
    if (use_winograd(&t)) {
        winograd_conv(dinp, dout, wt, NULL, &t, col, 1);
        return;
    }
    const int ckk = t.C * kk;
    const size_t in_size = (size_t)t.C * t.H * t.W, out_plane = (size_t)t.OH * t.OW;
    for (int n = 0; n < t.N; n++) {
        const float *x = dout + n * in_size;
        float *y = dinp + n * (size_t)t.K * out_plane;
        for (int oy0 = 0; oy0 < t.OH; oy0 += t.chunk_rows) {
            int oy1 = WC_MIN(t.OH, oy0 + t.chunk_rows), ncols = (oy1 - oy0) * t.OW;
            wc_im2col(col, x, &t, oy0, oy1);
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, t.K, ncols, ckk, 1.0f, wt, ckk,
                        col, ncols, 1.0f, y + (size_t)oy0 * t.OW, (int)out_plane);
        }
    }
}

void wc_conv2d_backward(float *dinp, float *dweight, float *dbias, const float *dout,
                        const float *inp, const float *weight, const wc_conv_shape *s,
                        float *work) {
    if (use_winograd(s)) {
        if (dbias) add_bias_grad(dbias, dout, s);
        winograd_backward_weights(dweight, dout, inp, s, work);
        if (dinp) backward_data_as_conv(dinp, dout, weight, s, work);
        return;
    }
    const int ckk = s->C * s->KH * s->KW;
    const size_t in_size = (size_t)s->C * s->H * s->W, out_plane = (size_t)s->OH * s->OW;
    if (dbias) add_bias_grad(dbias, dout, s);
    for (int n = 0; n < s->N; n++) {
        const float *x = inp + n * in_size;
        const float *dy = dout + n * (size_t)s->K * out_plane;
        float *dx = dinp ? dinp + n * in_size : NULL;
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
            if (!dx || backward_as_conv(s)) continue;
            /* dcol (ckk, ncols) = weight^T (ckk, K) x dy[:, chunk] (K, ncols), then scattered */
            cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, ckk, ncols, s->K, 1.0f, weight,
                        ckk, dyc, (int)out_plane, 0.0f, work, ncols);
            wc_col2im(dx, work, s, oy0, oy1);
        }
    }
    if (dinp && backward_as_conv(s)) backward_data_as_conv(dinp, dout, weight, s, work);
}
