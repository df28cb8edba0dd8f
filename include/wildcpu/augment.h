/* augment.h: the orientations a training sample is seen in (the dihedral group of the square:
 * flips and quarter turns) and what they do to bands that hold the components of a vector.
 *
 * A wildfire's drivers have no preferred direction on the map except through bands that say so:
 * wind and the downslope direction (aspect) are vectors. Turning or mirroring a patch is a
 * valid new sample only if those vectors turn with it, so a band pair (east component, north
 * component) is transformed as a vector and every other band as a scalar. Then the label is
 * unchanged by the orientation wherever the risk depends on directions only through such
 * vectors (the synthetic region's does, exactly: docs/synthetic.md), and the model learns that
 * "upwind" means the direction the wind bands give, not a direction on the training map.
 *
 * Orientation o (0..7) has bits: 1 mirror the columns, 2 mirror the rows, 4 transpose first.
 * Output pixel (r, c) is input pixel wc_orient_source(P, o, r, c). 0 is the identity.
 *
 * Vector pairs are found by name (wc_augment_plan; case does not matter): NAME_u:NAME_v,
 * NAME_east:NAME_north, eastness:northness, u:v, u10:v10 (any height; U10M:V10M), uas:vas,
 * uwnd:vwnd, UGRD..:VGRD.., eastward_..:northward_.., x_wind..:y_wind.. (CF), and
 * NAME_sin:NAME_cos when NAME is a direction (aspect_sin: an azimuth clockwise from north, sin
 * east, cos north; a day of the year's doy_sin is not); or given with --vector-bands
 * EAST:NORTH,..., which replaces the search. The components must be along the raster's own
 * axes (grid east and north). With --augment, a band that looks like a direction (aspect,
 * azimuth, direction, bearing, eastness, northness, dir as part of a name, th, wd, wdir, u, v,
 * uas, vas, uwnd, vwnd, u10, U10M, UGRD.., eastward_.., x_wind.., NAME_u) but is in no pair is
 * refused, as is a rotated geotransform with vector bands: turned as a scalar, such a band
 * would teach the model a wrong map ("--vector-bands none" declares that no band is a vector).
 * Non-square pixels and geographic (degree) grids allow the mirrors only (4 orientations);
 * rhombic pixels (a sheared geotransform: sides of one length not at right angles) the half
 * turn only (2).
 *
 * Not here: which orientation a sample gets (dataset.c, from seed, epoch and patch). */
#ifndef WILDCPU_AUGMENT_H
#define WILDCPU_AUGMENT_H

#define WC_ORIENT_MIRROR_COLS 1
#define WC_ORIENT_MIRROR_ROWS 2
#define WC_ORIENT_TRANSPOSE   4
#define WC_ORIENT_COUNT       8
#define WC_AUGMENT_MAX_PAIRS  16
#define WC_AUGMENT_NAME_MAX   256
/* The summary: every pair whole (16 pairs of two band names of up to 63 bytes, raster.h), and
 * the orientations and turns before them. */
#define WC_AUGMENT_SUMMARY_MAX 2560

/* The raster's geometry, as far as orientations care. */
typedef struct wc_augment_grid {
    double gt[6];   /* geotransform */
    int has_gt;     /* 0: read as an image, north up */
    int geographic; /* the CRS is in degrees */
} wc_augment_grid;

typedef struct wc_augment {
    int norient;     /* orientations drawn from: 1 (off), 2, 4 or 8 (wc_orient_drawn) */
    double turn_deg; /* turns by any angle up to this either way (--rotate; dataset.h), or 0 */
    int npairs;
    int pair[WC_AUGMENT_MAX_PAIRS][2];    /* feature channels (0-based): east, north */
    int axes_sign;                        /* sign(gt1) * sign(gt5): -1 for north-up rasters */
    char summary[WC_AUGMENT_SUMMARY_MAX]; /* what the log and report say */
} wc_augment;

/* Plans the augmentation of a raster's features. names: the feature channels' band names;
 * vector_bands: --vector-bands (NULL: find pairs by name; "none": no pairs, no direction
 * check); orientations: --augment; turn_deg: --rotate (0: off). Returns WC_ERR after a message
 * naming `path` and the band when --vector-bands is malformed or names a band that is not a
 * feature, when more than WC_AUGMENT_MAX_PAIRS pairs are found, and, with either option, when
 * a direction band is in no pair or the geotransform is rotated with vector bands; with
 * --rotate also when the pixels are not square or the grid is in degrees (a turn by any angle
 * needs equal ground distances along both axes). */
int wc_augment_plan(wc_augment *a, int orientations, double turn_deg, const char *vector_bands,
                    const char *const *names, int nfeat, const wc_augment_grid *grid,
                    const char *path);

/* The orientation of draw k (0 <= k < a->norient): the first 4 are the mirrors, all 8 add the
 * quarter turns; of 2 (rhombic pixels) the second is the half turn, both axes mirrored. */
static inline int wc_orient_drawn(const wc_augment *a, int k) {
    return a->norient == 2 ? k * (WC_ORIENT_MIRROR_COLS | WC_ORIENT_MIRROR_ROWS) : k;
}

/* The input pixel that output pixel (r, c) of a P x P patch in orientation o comes from. */
static inline void wc_orient_source(int P, int o, int r, int c, int *sr, int *sc) {
    int a = r, b = c;
    if (o & WC_ORIENT_TRANSPOSE) a = c, b = r;
    if (o & WC_ORIENT_MIRROR_ROWS) a = P - 1 - a;
    if (o & WC_ORIENT_MIRROR_COLS) b = P - 1 - b;
    *sr = a, *sc = b;
}

/* Output channel c in orientation o is sign * (input channel *src at the same pixel) before the
 * pixels move: c itself for a scalar, its own or its partner component for a vector. */
void wc_augment_channel(const wc_augment *a, int o, int c, int *src, double *sign);

/* Moves the pixels of a P x P plane (float or byte) into orientation o, in place. */
void wc_orient_plane_f32(int P, int o, float *plane);
void wc_orient_plane_u8(int P, int o, unsigned char *plane);

#endif
