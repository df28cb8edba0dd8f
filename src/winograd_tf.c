/* winograd_tf.c: the transforms of winograd.c's pipeline (see the top of winograd.c): filters
 * into the Winograd domain (G g G^T) and weight gradients back (G^T dU G), and a block of tiles
 * into the layout its GEMMs read (B^T d B) and back into the output (A^T m A, with bias, ReLU,
 * adding or masking fused) or from the output gradient (A dY A^T). Row kernels work along the
 * tiles of a row, so every inner loop has unit stride and vectorizes. */
#include "winograd_tiles.h"

#include <string.h>

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
    int transposed; /* U[xi][c][k] from the flipped filter, for the input gradient */
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

void wc_wino_transform_weights(const kind *kd, float *U, const float *weight, int K, int C,
                               int transposed, wc_pool *pool) {
    weights_job j = {*kd, U, weight, K, C, transposed, 0};
    j.ntasks = WC_MIN(transposed ? C : K, 4 * wc_pool_threads(pool));
    wc_pool_run(pool, j.ntasks, weights_task, &j);
}

/* ---- row kernels ------------------------------------------------------------------------------
 */

/* Each kernel combines whole rows of values, one value per tile, so every loop runs along the
 * tiles of a row with unit stride and vectorizes (restrict: no row overlaps one written). */

/* F(2x2): o = B^T d, rows (1,0,-1,0) (0,1,1,0) (0,-1,1,0) (0,1,0,-1). */
static inline void bt2_rows(float *restrict o0, float *restrict o1, float *restrict o2,
                            float *restrict o3, const float *restrict d0, const float *restrict d1,
                            const float *restrict d2, const float *restrict d3, int w) {
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
                            float *restrict o3, const float *restrict m0, const float *restrict m1,
                            const float *restrict m2, const float *restrict m3,
                            const float *restrict m4, const float *restrict m5, int w) {
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
    const float *restrict p0 = p[0], *restrict p1 = p[1], *restrict p2 = p[2], *restrict p3 = p[3];
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
size_t wc_wino_scratch_floats(const kind *kd, const plan *p) {
    return ((size_t)kd->tt + 2 * kd->m) * (p->segw + 1) + 64;
}

/* ---- transforms of tiles ----------------------------------------------------------------------
 */

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
void wc_wino_input_transform(float *V, const float *x, const pass_shape *ps, const plan *p, long t0,
                             long t1, float *scratch) {
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
void wc_wino_output_transform(float *out, const float *Mb, const pass_shape *ps, const plan *p,
                              long t0, long t1, const out_mode *om, float *scratch) {
    const int m = ps->kd.m, ts = ps->kd.ts;
    const long nt = t1 - t0;
    const size_t plane = plane_stride((size_t)ps->K * nt), sw = p->segw;
    float *a = scratch;                 /* (m, ts, segw): A^T m down the columns */
    float *q = a + (size_t)m * ts * sw; /* (m, segw): one output row's m phases */
    float *rowbuf = q + (size_t)m * sw; /* (m segw): that row */
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
void wc_wino_grad_output_transform(float *Wg, const float *dout, const wc_conv_shape *s,
                                   const plan *p, long t0, long t1, float *scratch) {
    const long nt = t1 - t0;
    const size_t plane = plane_stride((size_t)s->K * nt), sw = p->segw;
    float *h = scratch;                 /* (4, 6, segw) */
    float *ph = h + (size_t)4 * 6 * sw; /* (4, segw + 1) */
    float *pad_row = ph + 4 * (sw + 1); /* (4 segw) */
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

/* dst (K, C, 9) = or += G^T dU G per filter, dU (36, K, C). */
void wc_wino_weight_grad_from(float *dst, const float *dU, int K, int C, int add) {
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
