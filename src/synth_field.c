/* synth_field.c: the synthetic generator's field arithmetic: periodic blurs, smooth random
 * fields, quantiles, distance transforms, moments and the label threshold; see synth_field.h.
 *
 * Smooth random fields are white noise under WC_SYNTH_BLUR_PASSES passes of a periodic box blur
 * (O(n^2) whatever the radius), scaled by the blur's exact gain so that they have unit variance.
 * All randomness comes from wc_rng with stream WC_STREAM_SYNTH and the caller's sub-stream.
 *
 * Not here: what the fields mean or which sub-streams they take (synth.c). */
#include "wildcpu/synth_field.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/rng.h"
#include "wildcpu/util.h"

void wc_synth_gen_init(wc_synth_gen *g, int size, int pad, uint64_t seed) {
    *g = (wc_synth_gen){.size = size, .pad = pad, .n = size + 2 * pad, .seed = seed};
    g->npix = (size_t)g->n * g->n;
    g->scratch = WC_ALLOC(g->npix * sizeof(float));
    g->acc = WC_ALLOC((size_t)g->n * sizeof(double));
    g->line = WC_ALLOC((size_t)2 * g->n * sizeof(double));
}

void wc_synth_gen_free(wc_synth_gen *g) {
    free(g->acc);
    free(g->line);
    free(g->scratch);
}

/* One periodic box blur of radius r, rows then columns, in place. Running sums in double keep
 * the result independent of r in cost and accurate to float rounding. */
static void box_blur(wc_synth_gen *g, float *f, int r) {
    int n = g->n;
    WC_ASSERT(2 * r + 1 <= n);
    double inv = 1.0 / (2 * r + 1);
    double *line = g->line; /* the row with r wrapped-around samples on either side */
    for (int i = 0; i < n; i++) {
        float *row = f + (size_t)i * n;
        for (int j = -r; j < n + r; j++) line[j + r] = row[wc_synth_wrap(j, n)];
        double s = 0;
        for (int k = 0; k < 2 * r + 1; k++) s += line[k];
        for (int j = 0; j < n; j++) {
            row[j] = (float)(s * inv);
            s += line[j + 2 * r + 1 < n + 2 * r ? j + 2 * r + 1 : 0] - line[j];
        }
    }
    memcpy(g->scratch, f, g->npix * sizeof(float));
    double *acc = g->acc;
    for (int j = 0; j < n; j++) acc[j] = 0;
    for (int k = -r; k <= r; k++) {
        const float *src = g->scratch + (size_t)wc_synth_wrap(k, n) * n;
        for (int j = 0; j < n; j++) acc[j] += src[j];
    }
    for (int i = 0; i < n; i++) {
        float *row = f + (size_t)i * n;
        const float *add = g->scratch + (size_t)wc_synth_wrap(i + r + 1, n) * n;
        const float *sub = g->scratch + (size_t)wc_synth_wrap(i - r, n) * n;
        for (int j = 0; j < n; j++) {
            row[j] = (float)(acc[j] * inv);
            acc[j] += (double)add[j] - (double)sub[j];
        }
    }
}

/* WC_SYNTH_BLUR_PASSES box blurs: close to a Gaussian of standard deviation
 * r * sqrt(passes / 3) pixels (for large r), at the cost of a box blur. */
void wc_synth_smooth(wc_synth_gen *g, float *f, int r) {
    r = WC_MIN(r, (g->n - 1) / 2);
    for (int p = 0; p < WC_SYNTH_BLUR_PASSES; p++) box_blur(g, f, r);
}

/* Standard deviation of wc_synth_smooth applied to unit-variance white noise: the 2D kernel is
 * h x h with h the 1D kernel (a box convolved with itself WC_SYNTH_BLUR_PASSES times), so the
 * variance is (sum h_i^2)^2. Exact as long as the kernel does not wrap around the domain. */
static double smooth_gain(int r) {
    int len = 1, box = 2 * r + 1;
    int maxlen = WC_SYNTH_BLUR_PASSES * 2 * r + 1;
    double *h = WC_CALLOC((size_t)maxlen, sizeof(double));
    double *t = WC_CALLOC((size_t)maxlen, sizeof(double));
    h[0] = 1;
    for (int p = 0; p < WC_SYNTH_BLUR_PASSES; p++) {
        for (int i = 0; i < len + box - 1; i++) t[i] = 0;
        for (int i = 0; i < len; i++)
            for (int k = 0; k < box; k++) t[i + k] += h[i] / box;
        len += box - 1;
        memcpy(h, t, (size_t)len * sizeof(double));
    }
    double s = 0;
    for (int i = 0; i < len; i++) s += h[i] * h[i];
    free(h);
    free(t);
    return s; /* sqrt(s^2) */
}

/* A smooth random field with zero mean and unit variance: uniform white noise (cheap, and
 * Gaussian enough after blurring) or Gaussian white noise (exact, for the label noise). */
void wc_synth_random_field(wc_synth_gen *g, float *f, uint64_t substream, int r, int gaussian) {
    wc_rng rng;
    wc_rng_seed(&rng, g->seed, WC_STREAM_SYNTH, substream);
    const double s12 = sqrt(12.0);
    for (size_t i = 0; i < g->npix; i++)
        f[i] = gaussian ? (float)wc_rng_normal(&rng) : (float)((wc_rng_uniform(&rng) - 0.5) * s12);
    r = WC_MIN(r, (g->n - 1) / 2);
    wc_synth_smooth(g, f, r);
    float inv = (float)(1.0 / smooth_gain(r));
    for (size_t i = 0; i < g->npix; i++) f[i] *= inv;
}

/* The k-th smallest of v[0..count) (v is reordered): Hoare's quickselect. */
static float select_kth(float *v, size_t count, size_t k) {
    size_t lo = 0, hi = count - 1;
    while (lo < hi) {
        float a = v[lo], b = v[(lo + hi) / 2], c = v[hi];
        float pivot = (a < b) ? (b < c ? b : (a < c ? c : a)) : (a < c ? a : (b < c ? c : b));
        size_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                float t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                if (j == 0) break;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return v[k];
    }
    return v[k];
}

/* The q-quantile of f over the region (the padded border excluded). */
float wc_synth_region_quantile(const wc_synth_gen *g, const float *f, double q) {
    size_t m = (size_t)g->size * g->size, k = 0;
    float *v = WC_ALLOC(m * sizeof(float));
    for (int i = 0; i < g->size; i++)
        for (int j = 0; j < g->size; j++) v[k++] = f[(size_t)(i + g->pad) * g->n + j + g->pad];
    float x = select_kth(v, m, (size_t)(q * (double)(m - 1)));
    free(v);
    return x;
}

/* Exact squared Euclidean distance transform of one line (Felzenszwalb & Huttenlocher):
 * d[i] = min_j (i - j)^2 + f[j]. v, z are work arrays of n and n + 1. */
static void edt_line(const double *f, double *d, int n, int *v, double *z) {
    int k = 0;
    v[0] = 0;
    z[0] = -HUGE_VAL;
    z[1] = HUGE_VAL;
    for (int q = 1; q < n; q++) {
        if (f[q] == HUGE_VAL) continue;
        if (f[v[0]] == HUGE_VAL) { /* the first finite sample so far */
            v[0] = q;
            continue;
        }
        double s;
        for (;;) { /* terminates at k == 0, since z[0] = -inf */
            int p = v[k];
            s = ((f[q] + (double)q * q) - (f[p] + (double)p * p)) / (2.0 * (q - p));
            if (s > z[k]) break;
            k--;
        }
        k++;
        v[k] = q;
        z[k] = s;
        z[k + 1] = HUGE_VAL;
    }
    k = 0;
    for (int q = 0; q < n; q++) {
        while (z[k + 1] < q) k++;
        double dq = q - v[k];
        d[q] = f[v[k]] == HUGE_VAL ? HUGE_VAL : dq * dq + f[v[k]];
    }
}

/* Distance in pixels from every pixel to the nearest pixel with mask set (not periodic: a
 * road across the border is not a road). HUGE_VAL everywhere if there is none. */
void wc_synth_distance_transform(const wc_synth_gen *g, const uint8_t *mask, float *dist) {
    int n = g->n;
    double *a = WC_ALLOC(g->npix * sizeof(double));
    double *f = WC_ALLOC((size_t)n * sizeof(double)), *d = WC_ALLOC((size_t)n * sizeof(double));
    double *z = WC_ALLOC((size_t)(n + 1) * sizeof(double));
    int *v = WC_ALLOC((size_t)n * sizeof(int));
    for (int j = 0; j < n; j++) {
        for (int i = 0; i < n; i++) f[i] = mask[(size_t)i * n + j] ? 0 : HUGE_VAL;
        edt_line(f, d, n, v, z);
        for (int i = 0; i < n; i++) a[(size_t)i * n + j] = d[i];
    }
    for (int i = 0; i < n; i++) {
        edt_line(a + (size_t)i * n, d, n, v, z);
        for (int j = 0; j < n; j++) dist[(size_t)i * n + j] = (float)sqrt(d[j]);
    }
    free(a);
    free(f);
    free(d);
    free(z);
    free(v);
}

/* Mean and standard deviation of f over the valid pixels of the region. */
void wc_synth_region_moments(const wc_synth_gen *g, const float *f, const uint8_t *valid,
                             double *mean, double *sd) {
    double s = 0, s2 = 0;
    size_t m = 0;
    for (int i = 0; i < g->size; i++)
        for (int j = 0; j < g->size; j++) {
            size_t p = (size_t)(i + g->pad) * g->n + j + g->pad;
            if (!valid[p]) continue;
            s += f[p];
            m++;
        }
    *mean = m ? s / (double)m : 0;
    for (int i = 0; i < g->size; i++)
        for (int j = 0; j < g->size; j++) {
            size_t p = (size_t)(i + g->pad) * g->n + j + g->pad;
            if (!valid[p]) continue;
            double d = f[p] - *mean;
            s2 += d * d;
        }
    *sd = m > 1 ? sqrt(s2 / (double)(m - 1)) : 1;
    if (*sd <= 0) *sd = 1;
}

/* Adds w * (f - mean) / sd to acc everywhere (moments over the valid region). */
void wc_synth_add_standardized(const wc_synth_gen *g, double *acc, const float *f,
                               const uint8_t *valid, double w) {
    double mean, sd;
    wc_synth_region_moments(g, f, valid, &mean, &sd);
    for (size_t p = 0; p < g->npix; p++) acc[p] += w * ((double)f[p] - mean) / sd;
}

/* The threshold t with mean over valid pixels of Phi((g - t) / sigma) == target: safeguarded
 * Newton on a function that is smooth and decreasing in t. */
double wc_synth_solve_threshold(const wc_synth_gen *g, const float *gx, const uint8_t *valid,
                                double sigma, double target) {
    double lo = -20, hi = 20, t = 0;
    for (int it = 0; it < 100; it++) {
        double m = 0, dm = 0;
        size_t cnt = 0;
        for (int i = 0; i < g->size; i++)
            for (int j = 0; j < g->size; j++) {
                size_t p = (size_t)(i + g->pad) * g->n + j + g->pad;
                if (!valid[p]) continue;
                double z = (gx[p] - t) / sigma;
                m += wc_synth_normal_cdf(z);
                dm += exp(-0.5 * z * z);
                cnt++;
            }
        if (cnt == 0) return t;
        m = m / (double)cnt - target;
        dm = -dm / ((double)cnt * sigma * 2.5066282746310002);
        if (m > 0)
            lo = t;
        else
            hi = t;
        if (fabs(m) < 1e-9 * target || hi - lo < 1e-12) break;
        double next = dm < 0 ? t - m / dm : 0.5 * (lo + hi);
        t = (next > lo && next < hi) ? next : 0.5 * (lo + hi);
    }
    return t;
}
