/* labels.h: --labels PATH made into a label raster on the tiles' grid, and the choice of a label
 * band (--label-band) in the tiles or in a label raster.
 *
 *   - a raster already on the grid (same size, geotransform and CRS) is used as it is;
 *   - a raster on another grid that GDAL can warp (both have a CRS and a geotransform) is warped
 *     onto the grid (nearest neighbour), its chosen band only, into Float32 (Float64 for a
 *     Float64 band) with NaN as nodata: every label keeps its sign and whether it is 0, the
 *     band's nodata stays nodata, and so does the ground the raster does not cover;
 *   - a vector layer of burned-area polygons in any CRS is reprojected and rasterized onto the
 *     grid: 1 inside a polygon, 0 outside, all-touched off. Polygons, multipolygons and the
 *     polygonal members of geometry collections are burned (curved ones linearized); points and
 *     lines are skipped and counted in the log: they mark no area.
 * Derived rasters are written to the run directory as labels-<hash>.tif, where the hash covers
 * the source (its path, and every file GDAL reads for it, a VRT's rasters or a shapefile's
 * .dbf, by size, inode and modification time to the nanosecond), the band and the grid, so a
 * rerun reuses them; they are written to a temporary name and renamed, so an interrupted run
 * never leaves a torn one.
 *
 * Preparing labels can take minutes on a large grid (GDAL's rasterize and warp); a stop signal
 * on any rank cancels it within a fraction of a second (see wc_labels_prepare).
 *
 * Errors name both grids (or both extents): no CRS to reproject from, a vector file without
 * polygons, perimeters that do not overlap the tiles, a band that does not exist (listing the
 * bands that do).
 *
 * A label > 0 is burned, any other unburned. Labels that are neither 0 nor 1 (an undeclared
 * nodata such as 255, percentages, probabilities) are counted as they are read, and said once
 * per labels source (wc_label_tally).
 *
 * Not here: reading labels (dataset.h, score.h). */
#ifndef WILDCPU_LABELS_H
#define WILDCPU_LABELS_H

#include <math.h>
#include <stdint.h>

#include "wildcpu/raster.h"

/* The 1-based band of r that --label-band `sel` names: the one band described `sel`, else band
 * number `sel`. With sel NULL or "" (a separate label raster without --label-band): the band
 * described `fire`, else band 1 when it is r's only band. Returns 0 after an error that names
 * the file (in_tiles: r is the tiles, else the --labels raster) and lists its bands: no such
 * band; two or more bands described `sel` (ambiguous: --label-band N picks one by number); a
 * label raster of several bands, none described `fire`. *by_number: chosen by its number. */
int wc_labels_find_band(const wc_raster *r, const char *sel, int in_tiles, int *by_number);

/* 1 when band names a and b are one name but for case and blanks around it (`Fire`, `FIRE`
 * and `fire ` are `fire`): a band so named beside the labels is a label band too. */
int wc_labels_name_like(const char *a, const char *b);

/* Where labels come from, for messages and records: "band N 'NAME' of PATH" for a band of the
 * tiles (name not NULL), else "band N of PATH", followed by " (from LABELS)" when PATH is a
 * raster derived from --labels (labels not NULL and not PATH itself). */
void wc_labels_describe(char *out, size_t size, int band, const char *name, const char *path,
                        const char *labels);

/* Where the labels of --labels come from, once prepared. */
typedef struct wc_labels {
    char *path;      /* the raster to read labels from (caller frees) */
    int band;        /* its band, 1-based */
    int source_band; /* the band of the --labels raster they are taken from; 0 for polygons */
    int stopped;     /* a stop signal (on any rank) ended the preparation; no error logged */
} wc_labels;

/* Collective: rank 0 prepares, every rank learns the outcome. band_name selects a band of a
 * label raster (see wc_labels_find_band; "" or NULL: the default). While rank 0 works, every
 * rank meets it in a small collective every fraction of a second, so a stop signal on any rank
 * cancels GDAL's work there (a partial derived raster is removed) and every rank returns WC_ERR
 * with out->stopped set. Otherwise WC_OK with out filled, or WC_ERR after an error message. */
int wc_labels_prepare(const wc_raster *tiles, const char *labels, const char *band_name,
                      const char *work_dir, wc_labels *out);

/* The labels read that are neither 0 nor 1, counted while they are read (no second pass):
 * wc_label_tally_add on each label that is not nodata, wc_label_tally_infinite on each that is
 * infinite (nodata, like NaN, but no declared one), then wc_label_tally_say once. */
typedef struct wc_label_tally {
    int64_t labelled; /* labels read (not nodata) */
    int64_t other;    /* of those, neither 0 nor 1 */
    double lo, hi;    /* the smallest and largest of the others */
    int64_t infinite; /* labels of +-Inf, left out as nodata */
} wc_label_tally;
#define WC_LABEL_TALLY_INIT                                                                        \
    { 0, 0, INFINITY, -INFINITY, 0 }

static inline void wc_label_tally_infinite(wc_label_tally *t) {
    t->infinite++;
}

static inline void wc_label_tally_add(wc_label_tally *t, double label) {
    t->labelled++;
    if (label == 0 || label == 1) return;
    t->other++;
    if (label < t->lo) t->lo = label;
    if (label > t->hi) t->hi = label;
}

/* Collective: sums every rank's tally (each read its own part of the labels: the sum is the
 * same on any number of ranks), then rank 0 warns when some labels are neither 0 nor 1, naming
 * `source` (the labels' file and band), how many, their range, and what to do; and when some
 * are infinite, how many. */
void wc_label_tally_say(wc_label_tally *t, const char *source);

#endif
