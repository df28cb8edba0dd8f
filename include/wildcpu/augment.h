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
 * Vector pairs are found by name (wc_augment_plan): NAME_u/NAME_v (wind, u east, v north),
 * NAME_sin/NAME_cos (an azimuth clockwise from north: sin is east, cos north, as aspect),
 * NAME_east/NAME_north, eastness/northness; or given with --vector-bands EAST:NORTH,...
 * A band that looks like a direction (its name has aspect, azimuth, direction, bearing,
 * eastness, northness or dir as a word part, or ends in _u or _v) but is not in a pair turns
 * augmentation off, with a message saying
 * so: turning it as a scalar would teach the model a wrong map. Non-square pixels allow the
 * mirrors only (4 orientations); a rotated geotransform with vector bands allows none.
 *
 * Not here: which orientation a sample gets (dataset.c, from seed, epoch and patch). */
#ifndef WILDCPU_AUGMENT_H
#define WILDCPU_AUGMENT_H

#define WC_ORIENT_MIRROR_COLS 1
#define WC_ORIENT_MIRROR_ROWS 2
#define WC_ORIENT_TRANSPOSE   4
#define WC_ORIENT_COUNT       8
#define WC_AUGMENT_MAX_PAIRS  16

typedef struct wc_augment {
    int norient; /* orientations drawn from: 1 (off), 4 or 8 */
    int npairs;
    int pair[WC_AUGMENT_MAX_PAIRS][2]; /* feature channels (0-based): east, north */
    int axes_sign;                     /* sign(gt1) * sign(gt5): -1 for north-up rasters */
    char summary[512];                 /* what the log and report say */
} wc_augment;

/* Plans the augmentation of a raster's features. names: the feature channels' band names;
 * gt/has_gt: the raster's geotransform; vector_bands: --vector-bands (NULL: find pairs by name;
 * "none": no pairs, no direction check); enabled: --augment. Returns WC_ERR (after a
 * message naming `path` and the band) when --vector-bands names a band that is not a feature or
 * is malformed. */
int wc_augment_plan(wc_augment *a, int enabled, const char *vector_bands, const char *const *names,
                    int nfeat, const double gt[6], int has_gt, const char *path);

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

/* Moves the pixels of a P x P plane (float or byte) into orientation o; scratch holds P * P
 * elements of the plane's type. */
void wc_orient_plane_f32(int P, int o, float *plane, float *scratch);
void wc_orient_plane_u8(int P, int o, unsigned char *plane, unsigned char *scratch);

#endif
