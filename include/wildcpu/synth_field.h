/* synth_field.h: the arithmetic the synthetic generator builds its fields from: the padded
 * periodic domain, smooth random fields of unit variance, and the statistics the region needs
 * (quantiles, moments, distances, the label threshold).
 *
 * Internal to the generator (synth.c, synth_roads.c); synth.h is its interface. A field is
 * n x n floats, row-major, on the padded square; "the region" is its size x size interior, pad
 * pixels in from every side. Everything is deterministic: the same calls give the same bits.
 *
 * Not here: what any field means (synth.c), files (synth_write.c). */
#ifndef WILDCPU_SYNTH_FIELD_H
#define WILDCPU_SYNTH_FIELD_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

/* Box blurs per wc_synth_smooth: three make a kernel close to a Gaussian. */
#define WC_SYNTH_BLUR_PASSES 3

/* The padded domain and the blur's work buffers. */
typedef struct wc_synth_gen {
    int size, pad, n; /* region side, padding on each side, padded side = size + 2 * pad */
    size_t npix;      /* n * n */
    uint64_t seed;    /* of every random field (wc_rng's WC_STREAM_SYNTH) */
    float *scratch;   /* (n, n) for the vertical blur pass */
    double *acc;      /* (n) */
    double *line;     /* (2n) */
} wc_synth_gen;

/* Sets up the domain of a size x size region padded by pad, and allocates its buffers. */
void wc_synth_gen_init(wc_synth_gen *g, int size, int pad, uint64_t seed);
/* Frees the buffers (an all-zero struct is fine). */
void wc_synth_gen_free(wc_synth_gen *g);

/* k in [-n, 2n) wrapped into [0, n): the periodic neighbour index. */
static inline int wc_synth_wrap(int k, int n) {
    return k < 0 ? k + n : (k >= n ? k - n : k);
}

/* The standard normal distribution function. */
static inline double wc_synth_normal_cdf(double z) {
    return 0.5 * erfc(-z * 0.70710678118654752440);
}

/* WC_SYNTH_BLUR_PASSES periodic box blurs of radius r (at most (n - 1) / 2), in place: close to a
 * Gaussian of standard deviation r * sqrt(passes / 3) pixels (for large r), at the cost of a box
 * blur whatever r. */
void wc_synth_smooth(wc_synth_gen *g, float *f, int r);
/* Fills f with a smooth random field of zero mean and unit variance and blur radius r, from
 * sub-stream `substream` of the seed: uniform white noise (cheap, and Gaussian enough after
 * blurring) or, with gaussian set, Gaussian white noise (exact, for the label noise). */
void wc_synth_random_field(wc_synth_gen *g, float *f, uint64_t substream, int r, int gaussian);

/* The q-quantile of f over the region (the padding excluded). */
float wc_synth_region_quantile(const wc_synth_gen *g, const float *f, double q);
/* Mean and (sample) standard deviation of f over the valid pixels of the region; sd is 1 when
 * there are too few or they are all equal. */
void wc_synth_region_moments(const wc_synth_gen *g, const float *f, const uint8_t *valid,
                             double *mean, double *sd);
/* Adds w * (f - mean) / sd to acc everywhere (moments over the valid region). */
void wc_synth_add_standardized(const wc_synth_gen *g, double *acc, const float *f,
                               const uint8_t *valid, double w);
/* Distance in pixels from every pixel to the nearest pixel with mask set (not periodic: a road
 * across the border is not a road); HUGE_VAL everywhere if there is none. */
void wc_synth_distance_transform(const wc_synth_gen *g, const uint8_t *mask, float *dist);
/* The threshold t for which the mean over the valid region of Phi((gx - t) / sigma) is target. */
double wc_synth_solve_threshold(const wc_synth_gen *g, const float *gx, const uint8_t *valid,
                                double sigma, double target);

#endif
