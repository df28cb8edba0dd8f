/* synth.c: generates the synthetic region in memory (see synth.h and docs/synthetic.md): the
 * terrain, lakes, weather and vegetation, the latent risk and the labels drawn from it.
 *
 * Every field is computed on a padded square of side n = size + 2 * PAD with periodic
 * boundaries, then cropped: neighbourhood quantities at the region's edge see real neighbours,
 * and the label noise has exactly unit variance everywhere. All randomness comes from wc_rng
 * with stream WC_STREAM_SYNTH and one sub-stream per field, so adding a field never changes
 * another.
 *
 * Not here: the field arithmetic (blurs, smooth random fields, statistics: synth_field.c), the
 * road network (synth_roads.c), GDAL and files (synth_write.c), and any claim of physical
 * accuracy: the fields are plausible and correlated the way real ones are, no more. */
#include "wildcpu/synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/rng.h"
#include "wildcpu/synth_field.h"
#include "wildcpu/synth_roads.h"
#include "wildcpu/util.h"

/* Padding on each side: more than the reach of every neighbourhood quantity the risk uses
 * (topographic position 30 px, upwind look-up 16 px + its blur 6 px, ignition blur 18 px,
 * label noise 9 px), so pixels at the region's edge are computed like any other. */
#define PAD 64
#define DEG (180.0 / M_PI)

/* Upper-left corner of the region: UTM 11N, the Sawtooth/Salmon River country of central
 * Idaho, so that elevations of 900-3400 m are plausible. */
#define ORIGIN_X 640000.0
#define ORIGIN_Y 4930000.0

/* Label model: fire = (g + SIGMA * n > t), with g standardized and t chosen so that the
 * expected burned fraction of valid pixels is TARGET_BURN. SIGMA sets how predictable labels
 * are; 0.5 gives the oracle an average precision near 0.6 (docs/synthetic.md). */
#define SIGMA       0.5
#define TARGET_BURN 0.06
/* The oracle is stored rounded to a multiple of 2^-20 (error < 5e-7): the digits below carry
 * no information for any evaluation and would double the file's size. */
#define ORACLE_QUANTUM (1.0 / 1048576)
#define LAKE_FRACTION  0.025
#define STRIP_WIDTH    0.035 /* of the region's side */

const wc_synth_band_info wc_synth_bands[WC_SYNTH_NBANDS] = {
    {"elevation", "m", WC_SYNTH_NODATA_I16, 1.0},
    {"slope", "degrees", WC_SYNTH_NODATA_F32, 1.0 / 8},
    {"aspect_sin", "", WC_SYNTH_NODATA_F32, 1.0 / 256},
    {"aspect_cos", "", WC_SYNTH_NODATA_F32, 1.0 / 256},
    {"ndvi", "", WC_SYNTH_NODATA_F32, 1.0 / 256},
    {"fuel_moisture", "%", WC_SYNTH_NODATA_F32, 1.0 / 8},
    {"temp_max", "degC", WC_SYNTH_NODATA_F32, 1.0 / 16},
    {"rel_humidity", "%", WC_SYNTH_NODATA_F32, 1.0 / 8},
    {"wind_u", "m/s", WC_SYNTH_NODATA_F32, 1.0 / 16},
    {"wind_v", "m/s", WC_SYNTH_NODATA_F32, 1.0 / 16},
    {"precip_30d", "mm", WC_SYNTH_NODATA_F32, 1.0 / 4},
    {"dist_road", "m", WC_SYNTH_NODATA_F32, 1.0},
    {"fire", "", WC_SYNTH_NODATA_U8, 1.0},
};

/* Sub-streams of WC_STREAM_SYNTH, one per random field. */
enum {
    SUB_TERRAIN = 100, /* + octave */
    SUB_STRIP = 200,
    SUB_ROADS = 201,
    SUB_WIND_DIR = 300,
    SUB_WIND_U = 301,
    SUB_WIND_V = 302,
    SUB_TEMP = 400,
    SUB_DEWPOINT = 401,
    SUB_PRECIP = 402,
    SUB_PRECIP_LOCAL = 403,
    SUB_TREELINE = 500,
    SUB_NDVI_FINE = 501,
    SUB_NDVI_PATCH = 502,
    SUB_NDVI_PIXEL = 503,
    SUB_FUEL_MOISTURE = 600,
    SUB_LABEL_NOISE = 900,
};

static inline double clampd(double x, double lo, double hi) {
    return x < lo ? lo : (x > hi ? hi : x);
}

static inline double smoothstep(double lo, double hi, double x) {
    double t = clampd((x - lo) / (hi - lo), 0, 1);
    return t * t * (3 - 2 * t);
}

/* Rounds to a multiple of quantum, a power of two, so the stored float is exact and its low
 * mantissa bits are zero (what makes DEFLATE with the floating-point predictor effective). */
static inline float quantize(double x, double quantum) {
    return (float)(nearbyint(x / quantum) * quantum + 0.0); /* + 0.0: no negative zero */
}

/* quantize() of x clamped to [lo, hi], staying inside [lo, hi] when lo or hi is not itself a
 * multiple of the quantum. */
static inline float quantize_in(double x, double lo, double hi, double quantum) {
    double q = nearbyint(clampd(x, lo, hi) / quantum) * quantum;
    if (q < lo) q += quantum;
    if (q > hi) q -= quantum;
    return (float)(q + 0.0);
}

static float *field(const wc_synth_gen *g) {
    return WC_ALLOC(g->npix * sizeof(float));
}

void wc_synth_config_default(wc_synth_config *cfg) {
    cfg->out_dir = NULL;
    cfg->size = 1024;
    cfg->tile = 256;
    cfg->seed = 1;
}

/* The world: every field on the padded domain. */
typedef struct world {
    float *elev_smooth; /* without the finest octaves: valleys, lakes, lightning */
    float *elev;        /* stored elevation (rounded), m */
    float *band[WC_SYNTH_NFLOAT];
    uint8_t *lake, *road, *valid;
    float *g; /* standardized risk score */
    float *noise;
} world;

#define B(w, id) ((w)->band[(id)-WC_SYNTH_SLOPE])

/* Terrain: a fractal sum of smooth fields at radii 64 .. 2 px, amplitude (r / 64)^1.6, so
 * the large scales carry the relief and the small ones texture. The 32 and 16 px octaves enter
 * as -|o| (smoothed), which carves V-shaped valleys along their zero lines, as rivers do.
 * tanh maps the sum into 900-3400 m without hard clipping. elev_smooth, without the two finest
 * octaves, is what lakes and roads see. */
static void make_terrain(wc_synth_gen *g, world *w) {
    static const int radius[] = {64, 32, 16, 8, 4, 2};
    static const double valley[] = {0, 1, 0.7, 0, 0, 0};
    enum { NOCT = sizeof radius / sizeof radius[0], NSMOOTH = 4 };
    const double hurst = 1.6;
    double norm = 0;
    for (int k = 0; k < NOCT; k++) norm += pow(radius[k] / 64.0, 2 * hurst);
    norm = sqrt(norm);
    float *o = field(g);
    double *x = WC_CALLOC(g->npix, sizeof(double));
    for (int k = 0; k < NOCT; k++) {
        wc_synth_random_field(g, o, SUB_TERRAIN + (uint64_t)k, radius[k], 0);
        double a = pow(radius[k] / 64.0, hurst) / norm;
        if (valley[k] == 0) {
            for (size_t p = 0; p < g->npix; p++) x[p] += a * o[p];
        } else {
            /* sqrt(o^2 + 0.09) has mean 0.886 and sd 0.551 for a standard normal o. */
            double b = a * valley[k] / 0.551;
            for (size_t p = 0; p < g->npix; p++)
                x[p] -= b * (sqrt((double)o[p] * o[p] + 0.09) - 0.886);
        }
        if (k == NSMOOTH - 1)
            for (size_t p = 0; p < g->npix; p++)
                w->elev_smooth[p] = (float)(2150 + 1250 * tanh(0.6 * x[p]));
    }
    for (size_t p = 0; p < g->npix; p++)
        w->elev[p] = (float)nearbyint(2150 + 1250 * tanh(0.6 * x[p]));
    free(x);
    free(o);
}

/* Slope and aspect from the stored elevation with Horn's 3x3 gradient (what gdaldem does). */
static void make_slope_aspect(wc_synth_gen *g, world *w) {
    int n = g->n;
    const float *z = w->elev;
    for (int i = 0; i < n; i++) {
        const float *rn = z + (size_t)wc_synth_wrap(i - 1, n) * n, *r0 = z + (size_t)i * n,
                    *rs = z + (size_t)wc_synth_wrap(i + 1, n) * n;
        for (int j = 0; j < n; j++) {
            int jw = wc_synth_wrap(j - 1, n), je = wc_synth_wrap(j + 1, n);
            double dzdx = ((rn[je] + 2.0 * r0[je] + rs[je]) - (rn[jw] + 2.0 * r0[jw] + rs[jw])) /
                          (8 * WC_SYNTH_PIXEL_M);
            double dzdy = ((rn[jw] + 2.0 * rn[j] + rn[je]) - (rs[jw] + 2.0 * rs[j] + rs[je])) /
                          (8 * WC_SYNTH_PIXEL_M);
            double m = sqrt(dzdx * dzdx + dzdy * dzdy);
            size_t p = (size_t)i * n + j;
            B(w, WC_SYNTH_SLOPE)
            [p] = quantize(atan(m) * DEG, wc_synth_bands[WC_SYNTH_SLOPE].quantum);
            /* Downslope direction = -gradient; flat ground has no aspect. */
            B(w, WC_SYNTH_ASPECT_SIN)
            [p] = m > 0 ? quantize(-dzdx / m, wc_synth_bands[WC_SYNTH_ASPECT_SIN].quantum) : 0;
            B(w, WC_SYNTH_ASPECT_COS)
            [p] = m > 0 ? quantize(-dzdy / m, wc_synth_bands[WC_SYNTH_ASPECT_COS].quantum) : 0;
        }
    }
}

/* Lakes fill the lowest basins: where the smooth terrain lies below its surroundings and low
 * overall. The threshold is a quantile, so lakes cover LAKE_FRACTION of the region. */
static void make_lakes(wc_synth_gen *g, world *w) {
    float *s = field(g), *t = field(g);
    memcpy(t, w->elev_smooth, g->npix * sizeof(float));
    wc_synth_smooth(g, t, 24);
    for (size_t p = 0; p < g->npix; p++)
        s[p] = (w->elev_smooth[p] - t[p]) + 0.25f * (w->elev_smooth[p] - 2150.0f);
    float q = wc_synth_region_quantile(g, s, LAKE_FRACTION);
    for (size_t p = 0; p < g->npix; p++) w->lake[p] = s[p] <= q;
    free(s);
    free(t);
}

/* Roads (synth_roads.c), and dist_road: the exact Euclidean distance to them. */
static void make_roads(wc_synth_gen *g, world *w) {
    wc_rng rng;
    wc_rng_seed(&rng, g->seed, WC_STREAM_SYNTH, SUB_ROADS);
    const size_t nroad = wc_synth_roads(g, w->elev_smooth, w->lake, &rng, w->road);
    float *dr = B(w, WC_SYNTH_DIST_ROAD);
    wc_synth_distance_transform(g, w->road, dr);
    /* Never happens with the roads' endpoints, but a region without roads is simply far. */
    for (size_t p = 0; p < g->npix; p++) {
        double d = nroad ? dr[p] * WC_SYNTH_PIXEL_M : 30000.0;
        dr[p] = quantize(WC_MIN(d, 30000.0), wc_synth_bands[WC_SYNTH_DIST_ROAD].quantum);
    }
}

/* Topographic position: elevation above the mean of its surroundings (radius ~10 px). */
static void make_tpi(wc_synth_gen *g, const world *w, float *tpi) {
    memcpy(tpi, w->elev, g->npix * sizeof(float));
    wc_synth_smooth(g, tpi, 10);
    for (size_t p = 0; p < g->npix; p++) tpi[p] = w->elev[p] - tpi[p];
}

/* Simard's equilibrium moisture content of dead fuel (%), T in degrees F, RH in %. */
static double emc_simard(double t_f, double rh) {
    if (rh < 10) return 0.03229 + 0.281073 * rh - 0.000578 * rh * t_f;
    if (rh < 50) return 2.22749 + 0.160107 * rh - 0.01478 * t_f;
    return 21.0606 + 0.005565 * rh * rh - 0.00035 * rh * t_f - 0.483199 * rh;
}

static inline double magnus(double t) {
    return 17.62 * t / (243.12 + t);
}

/* Weather and vegetation, in the order they depend on each other. */
static void make_climate(wc_synth_gen *g, world *w, const float *tpi) {
    float *a = field(g), *b = field(g), *c = field(g);
    const float *elev = w->elev, *slope = B(w, WC_SYNTH_SLOPE);
    const float *asin_ = B(w, WC_SYNTH_ASPECT_SIN), *acos_ = B(w, WC_SYNTH_ASPECT_COS);

    /* temp_max: 6.5 C/km lapse rate, south-facing slopes warmer, regional anomaly. Relative
     * humidity from a dewpoint that falls more slowly with height (Magnus formula). */
    wc_synth_random_field(g, a, SUB_TEMP, 48, 0);
    wc_synth_random_field(g, b, SUB_DEWPOINT, 64, 0);
    for (size_t p = 0; p < g->npix; p++) {
        double sun = -acos_[p] * sin(slope[p] / DEG); /* > 0 on south-facing slopes */
        double t = 34.0 - 0.0065 * (elev[p] - 1000) + 2.0 * sun + 1.2 * a[p];
        double td = 4.0 - 0.002 * (elev[p] - 1000) + 2.5 * b[p];
        double rh = 100.0 * exp(magnus(td) - magnus(t));
        B(w, WC_SYNTH_TEMP_MAX)[p] = quantize(t, wc_synth_bands[WC_SYNTH_TEMP_MAX].quantum);
        B(w, WC_SYNTH_REL_HUMIDITY)
        [p] = quantize_in(rh, 1, 100, wc_synth_bands[WC_SYNTH_REL_HUMIDITY].quantum);
    }

    /* precip_30d: orographic increase with elevation, regional and local storm tracks. */
    wc_synth_random_field(g, a, SUB_PRECIP, 64, 0);
    wc_synth_random_field(g, b, SUB_PRECIP_LOCAL, 12, 0);
    for (size_t p = 0; p < g->npix; p++) {
        double pr = 28.0 * exp(0.00055 * (elev[p] - 2000) + 0.35 * a[p] + 0.1 * b[p]);
        B(w, WC_SYNTH_PRECIP_30D)[p] = quantize(pr, wc_synth_bands[WC_SYNTH_PRECIP_30D].quantum);
    }

    /* ndvi: grass and sage in the valleys, forest above ~1600 m up to a treeline near 2850 m,
     * sparser on south-facing and very steep slopes, greener where wetter, patchy at two
     * scales (stands and clearings). */
    wc_synth_random_field(g, a, SUB_TREELINE, 64, 0);
    wc_synth_random_field(g, b, SUB_NDVI_FINE, 3, 0);
    wc_synth_random_field(g, c, SUB_NDVI_PATCH, 12, 0);
    float *d = field(g);
    wc_synth_random_field(g, d, SUB_NDVI_PIXEL, 1, 0);
    for (size_t p = 0; p < g->npix; p++) {
        double e = elev[p], treeline = 2850 + 120 * a[p];
        double sun = -acos_[p] * WC_MIN(1.0, sin(slope[p] / DEG) / 0.5);
        double wet = log(B(w, WC_SYNTH_PRECIP_30D)[p] / 28.0);
        double v = 0.30 + 0.42 * smoothstep(1300, 1900, e) -
                   0.50 * smoothstep(treeline - 250, treeline + 250, e) - 0.12 * sun + 0.10 * wet -
                   0.25 * smoothstep(35, 50, slope[p]) + 0.15 * b[p] + 0.06 * c[p] + 0.20 * d[p];
        B(w, WC_SYNTH_NDVI)[p] = quantize_in(v, -0.1, 0.9, wc_synth_bands[WC_SYNTH_NDVI].quantum);
    }
    free(d);

    /* fuel_moisture (dead fuel): Simard's equilibrium moisture from temperature and humidity,
     * wetter after rain, under canopy and on north-facing slopes. */
    wc_synth_random_field(g, a, SUB_FUEL_MOISTURE, 4, 0);
    for (size_t p = 0; p < g->npix; p++) {
        double t_f = B(w, WC_SYNTH_TEMP_MAX)[p] * 1.8 + 32, rh = B(w, WC_SYNTH_REL_HUMIDITY)[p];
        double fm = emc_simard(t_f, rh) + 0.05 * B(w, WC_SYNTH_PRECIP_30D)[p] +
                    3.0 * fmax(0, B(w, WC_SYNTH_NDVI)[p]) + 1.2 * acos_[p] * sin(slope[p] / DEG) +
                    0.6 * a[p];
        B(w, WC_SYNTH_FUEL_MOISTURE)
        [p] = quantize_in(fm, 2, 35, wc_synth_bands[WC_SYNTH_FUEL_MOISTURE].quantum);
    }

    /* Wind: a prevailing direction per seed (toward the north-east, from the south-west, give
     * or take 35 degrees), regional gusts, speed-up over ridges, deflection along the contours
     * of steep slopes. */
    wc_rng rng;
    wc_rng_seed(&rng, g->seed, WC_STREAM_SYNTH, SUB_WIND_DIR);
    double dir = (45 + 70 * (wc_rng_uniform(&rng) - 0.5)) / DEG;
    double speed = 4.5 + 2 * (wc_rng_uniform(&rng) - 0.5);
    wc_synth_random_field(g, a, SUB_WIND_U, 48, 0);
    wc_synth_random_field(g, b, SUB_WIND_V, 48, 0);
    for (size_t p = 0; p < g->npix; p++) {
        double ridge = 1 + 0.5 * tanh(tpi[p] / 100.0);
        double u = (speed * sin(dir) + 1.2 * a[p]) * ridge;
        double v = (speed * cos(dir) + 1.2 * b[p]) * ridge;
        double upx = -asin_[p], upy = -acos_[p], s = sin(slope[p] / DEG);
        double into = u * upx + v * upy;
        a[p] = (float)(u - 0.7 * s * into * upx);
        b[p] = (float)(v - 0.7 * s * into * upy);
    }
    wc_synth_smooth(g, a, 2);
    wc_synth_smooth(g, b, 2);
    for (size_t p = 0; p < g->npix; p++) {
        B(w, WC_SYNTH_WIND_U)[p] = quantize(a[p], wc_synth_bands[WC_SYNTH_WIND_U].quantum);
        B(w, WC_SYNTH_WIND_V)[p] = quantize(b[p], wc_synth_bands[WC_SYNTH_WIND_V].quantum);
    }
    free(a);
    free(b);
    free(c);
}

/* The missing-data strip: a straight swath (like a gap between satellite passes) at a random
 * angle through the middle half of the region. */
static void mark_strip(const wc_synth_gen *g, uint8_t *strip) {
    wc_rng rng;
    wc_rng_seed(&rng, g->seed, WC_STREAM_SYNTH, SUB_STRIP);
    double cx = PAD + g->size * (0.25 + 0.5 * wc_rng_uniform(&rng));
    double cy = PAD + g->size * (0.25 + 0.5 * wc_rng_uniform(&rng));
    double ang = M_PI * wc_rng_uniform(&rng);
    double half = 0.5 * fmax(3.0, STRIP_WIDTH * g->size);
    double s = sin(ang), c = cos(ang);
    for (int i = 0; i < g->n; i++)
        for (int j = 0; j < g->n; j++) {
            double d = (j + 0.5 - cx) * s - (i + 0.5 - cy) * c;
            strip[(size_t)i * g->n + j] = fabs(d) < half;
        }
}

/* out = mean of f over the points x + sign * step * k * (dx, dy), k = 1 .. n_steps, where
 * (dx, dy) is a per-pixel unit vector (east, north); nearest-pixel look-ups. */
static void ray_mean(const wc_synth_gen *g, float *out, const float *f, const float *dx,
                     const float *dy, double sign, double step, int n_steps) {
    int n = g->n;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            size_t p = (size_t)i * n + j;
            double ex = sign * dx[p], ny = sign * dy[p], s = 0;
            for (int k = 1; k <= n_steps; k++) {
                int jj = wc_synth_wrap(j + (int)lrint(step * k * ex), n);
                int ii = wc_synth_wrap(i - (int)lrint(step * k * ny), n); /* rows grow southward */
                s += f[(size_t)ii * n + jj];
            }
            out[p] = (float)(s / n_steps);
        }
}

/* The latent risk score g, standardized over the valid pixels (docs/synthetic.md):
 *   g = z( 0.6 z(continuity) + 1.0 z(upwind) + 0.4 z(below) + 0.2 z(upslope_wind)
 *          + 0.8 z(ignition) + 0.8 z(position) + 0.2 z(dryness) )
 * Every term but dryness needs the neighbourhood (within ~20 px, what the U-Net sees); all are
 * computed from the stored (quantized) features, plus the hidden values under the missing-data
 * strip. */
static void make_risk(wc_synth_gen *g, world *w, const float *tpi) {
    const float *ndvi = B(w, WC_SYNTH_NDVI), *fm = B(w, WC_SYNTH_FUEL_MOISTURE);
    const float *slope = B(w, WC_SYNTH_SLOPE), *u = B(w, WC_SYNTH_WIND_U),
                *v = B(w, WC_SYNTH_WIND_V);
    const float *asp_e = B(w, WC_SYNTH_ASPECT_SIN), *asp_n = B(w, WC_SYNTH_ASPECT_COS);
    float *fuel = field(g), *near = field(g), *cont = field(g), *upwind = field(g),
          *below = field(g), *align = field(g), *ign = field(g), *dry = field(g);
    float *wx = field(g), *wy = field(g);

    /* Burnable fuel in [0, 1]: green enough to carry fire and dry enough to burn; none on
     * water. The pixel's own fuel is deliberately not a term of g: 30 m ndvi is noisy and
     * burned areas are mapped as perimeters, unburned islands included. */
    for (size_t p = 0; p < g->npix; p++) {
        double f = clampd((ndvi[p] - 0.2) / 0.5, 0, 1) * clampd((18.0 - fm[p]) / 10.0, 0, 1);
        fuel[p] = w->lake[p] ? 0.0f : (float)f;
    }
    /* continuity: burnable fraction within ~10 px (300 m). */
    memcpy(cont, fuel, g->npix * sizeof(float));
    wc_synth_smooth(g, cont, 4);
    /* upwind: fuel along the 2..16 px run the wind comes from (fire arrives downwind). */
    memcpy(near, fuel, g->npix * sizeof(float));
    wc_synth_smooth(g, near, 2);
    for (size_t p = 0; p < g->npix; p++) {
        double sp = hypot(u[p], v[p]);
        wx[p] = sp > 0 ? (float)(u[p] / sp) : 0.0f;
        wy[p] = sp > 0 ? (float)(v[p] / sp) : 0.0f;
    }
    ray_mean(g, upwind, near, wx, wy, -1.0, 2.0, 8);
    /* below: fuel 2..12 px downslope (fire runs uphill), counted in full on slopes of 30
     * degrees and more. */
    ray_mean(g, below, near, asp_e, asp_n, 1.0, 2.0, 6);
    for (size_t p = 0; p < g->npix; p++) below[p] *= (float)fmin(1.0, sin(slope[p] / DEG) / 0.5);
    /* upslope_wind: wind speed along the uphill direction times sin(slope), smoothed. */
    for (size_t p = 0; p < g->npix; p++)
        align[p] = (float)(-(u[p] * asp_e[p] + v[p] * asp_n[p]) * sin(slope[p] / DEG));
    wc_synth_smooth(g, align, 3);
    /* ignition: people near roads, lightning on ridges, where there is fuel to catch, summed
     * over ~20 px. */
    for (size_t p = 0; p < g->npix; p++) {
        double road = exp(-B(w, WC_SYNTH_DIST_ROAD)[p] / 600.0);
        double lightning = 0.6 * clampd(tpi[p] / 60.0, 0, 1);
        ign[p] = (float)((road + lightning) * fuel[p]);
    }
    wc_synth_smooth(g, ign, 6);
    for (size_t p = 0; p < g->npix; p++) ign[p] = (float)log(0.02 + ign[p]);
    /* dryness: the pixel's own weather. */
    for (size_t p = 0; p < g->npix; p++)
        dry[p] = (float)(-(fm[p] - 7.0) / 2.5 + (B(w, WC_SYNTH_TEMP_MAX)[p] - 28.0) / 5.0 -
                         (B(w, WC_SYNTH_REL_HUMIDITY)[p] - 20.0) / 10.0 -
                         (B(w, WC_SYNTH_PRECIP_30D)[p] - 30.0) / 25.0);

    /* position (tpi): upper slopes and ridges burn more than valley floors, where fires arrive
     * last and the air is cool and moist. */
    double *acc = WC_CALLOC(g->npix, sizeof(double));
    wc_synth_add_standardized(g, acc, cont, w->valid, 0.6);
    wc_synth_add_standardized(g, acc, upwind, w->valid, 1.0);
    wc_synth_add_standardized(g, acc, below, w->valid, 0.4);
    wc_synth_add_standardized(g, acc, align, w->valid, 0.2);
    wc_synth_add_standardized(g, acc, ign, w->valid, 0.8);
    wc_synth_add_standardized(g, acc, tpi, w->valid, 0.8);
    wc_synth_add_standardized(g, acc, dry, w->valid, 0.2);
    for (size_t p = 0; p < g->npix; p++) w->g[p] = (float)acc[p];
    double mean, sd;
    wc_synth_region_moments(g, w->g, w->valid, &mean, &sd);
    for (size_t p = 0; p < g->npix; p++) w->g[p] = (float)((w->g[p] - mean) / sd);
    free(acc);
    float *tofree[] = {fuel, near, cont, upwind, below, align, ign, dry, wx, wy};
    for (size_t k = 0; k < sizeof tofree / sizeof tofree[0]; k++) free(tofree[k]);
}

size_t wc_synth_peak_bytes(int size) {
    const size_t n = (size_t)size + 2 * PAD, npix = n * n, m = (size_t)size * size;
    /* held throughout: the world's 15 float fields, tpi and the blur's scratch, 4 masks */
    const size_t held = npix * (17 * sizeof(float) + 4) + 3 * n * sizeof(double);
    /* the most of what comes and goes beside them: make_risk's 10 float fields and its double
     * accumulator, or the region returned, made before the world is freed */
    const size_t risk = npix * (10 * sizeof(float) + sizeof(double));
    const size_t region =
        m * (sizeof(int16_t) + WC_SYNTH_NFLOAT * sizeof(float) + 1 + sizeof(float));
    return held + WC_MAX(risk, region);
}

wc_synth_region *wc_synth_region_create(const wc_synth_config *cfg) {
    if (cfg->size < WC_SYNTH_MIN_SIZE || cfg->size > WC_SYNTH_MAX_SIZE) {
        wc_error("synth: region size %d is out of range (%d .. %d pixels)", cfg->size,
                 WC_SYNTH_MIN_SIZE, WC_SYNTH_MAX_SIZE);
        return NULL;
    }
    wc_synth_gen g;
    wc_synth_gen_init(&g, cfg->size, PAD, cfg->seed);

    world w;
    memset(&w, 0, sizeof w);
    w.elev_smooth = field(&g);
    w.elev = field(&g);
    for (int b = 0; b < WC_SYNTH_NFLOAT; b++) w.band[b] = field(&g);
    w.lake = WC_ALLOC(g.npix);
    w.road = WC_ALLOC(g.npix);
    w.valid = WC_ALLOC(g.npix);
    w.g = field(&g);
    w.noise = field(&g);
    uint8_t *strip = WC_ALLOC(g.npix);
    float *tpi = field(&g);

    make_terrain(&g, &w);
    make_slope_aspect(&g, &w);
    make_tpi(&g, &w, tpi);
    make_lakes(&g, &w);
    make_roads(&g, &w);
    make_climate(&g, &w, tpi);
    mark_strip(&g, strip);
    for (size_t p = 0; p < g.npix; p++) w.valid[p] = !w.lake[p] && !strip[p];
    /* Label noise: Gaussian, blurred, scaled to exactly unit variance. */
    wc_synth_random_field(&g, w.noise, SUB_LABEL_NOISE, 3, 1);
    make_risk(&g, &w, tpi);
    WC_ASSERT(WC_SYNTH_BLUR_PASSES * 2 * 3 + 1 < g.n);
    double t = wc_synth_solve_threshold(&g, w.g, w.valid, SIGMA, TARGET_BURN);

    wc_synth_region *r = WC_CALLOC(1, sizeof *r);
    int s = g.size;
    size_t m = (size_t)s * s;
    r->size = s;
    r->threshold = t;
    r->sigma = SIGMA;
    double gt[6] = {ORIGIN_X, WC_SYNTH_PIXEL_M, 0, ORIGIN_Y, 0, -WC_SYNTH_PIXEL_M};
    memcpy(r->geotransform, gt, sizeof gt);
    r->elevation = WC_ALLOC(m * sizeof(int16_t));
    r->features = WC_ALLOC(WC_SYNTH_NFLOAT * m * sizeof(float));
    r->fire = WC_ALLOC(m);
    r->oracle = WC_ALLOC(m * sizeof(float));
    size_t nvalid = 0, nburn = 0;
    for (int i = 0; i < s; i++)
        for (int j = 0; j < s; j++) {
            size_t p = (size_t)(i + PAD) * g.n + j + PAD, q = (size_t)i * s + j;
            int lake = w.lake[p];
            r->elevation[q] = lake ? WC_SYNTH_NODATA_I16 : (int16_t)w.elev[p];
            for (int b = 0; b < WC_SYNTH_NFLOAT; b++) {
                int band = b + WC_SYNTH_SLOPE;
                int gap = strip[p] && (band == WC_SYNTH_NDVI || band == WC_SYNTH_FUEL_MOISTURE);
                r->features[b * m + q] = (lake || gap) ? WC_SYNTH_NODATA_F32 : w.band[b][p];
            }
            if (!w.valid[p]) {
                r->fire[q] = WC_SYNTH_NODATA_U8;
                r->oracle[q] = WC_SYNTH_NODATA_F32;
                continue;
            }
            int burn = (double)w.g[p] + SIGMA * (double)w.noise[p] > t;
            r->fire[q] = (uint8_t)burn;
            r->oracle[q] = quantize(wc_synth_normal_cdf((w.g[p] - t) / SIGMA), ORACLE_QUANTUM);
            nvalid++;
            nburn += (size_t)burn;
        }
    r->nodata_fraction = 1.0 - (double)nvalid / (double)m;
    r->burned_fraction = nvalid ? (double)nburn / (double)nvalid : 0;

    free(tpi);
    free(strip);
    free(w.noise);
    free(w.g);
    free(w.valid);
    free(w.road);
    free(w.lake);
    for (int b = 0; b < WC_SYNTH_NFLOAT; b++) free(w.band[b]);
    free(w.elev);
    free(w.elev_smooth);
    wc_synth_gen_free(&g);
    return r;
}

void wc_synth_region_destroy(wc_synth_region *r) {
    if (!r) return;
    free(r->elevation);
    free(r->features);
    free(r->fire);
    free(r->oracle);
    free(r);
}
