/* labels.h: --labels PATH made into a label raster on the tiles' grid.
 *
 *   - a raster already on the grid (same size, geotransform and CRS) is used as it is;
 *   - a raster on another grid that GDAL can warp (both have a CRS and a geotransform) is warped
 *     onto the grid (nearest neighbour);
 *   - a vector layer of burned-area polygons in any CRS is reprojected and rasterized onto the
 *     grid: 1 inside a polygon, 0 outside, all-touched off.
 * Derived rasters are written to the run directory as labels-<hash>.tif, where the hash covers
 * the source file (path, size, modification time) and the grid, so a rerun reuses them; they
 * are written to a temporary name and renamed, so an interrupted run never leaves a torn one.
 *
 * Errors name both grids (or both extents): no CRS to reproject from, a vector file without
 * polygons, perimeters that do not overlap the tiles.
 *
 * Not here: reading labels (dataset.h). */
#ifndef WILDCPU_LABELS_H
#define WILDCPU_LABELS_H

#include "wildcpu/raster.h"

/* Collective: rank 0 prepares, every rank learns the outcome. On WC_OK, *out_path (caller
 * frees) is the raster to read labels from and *out_band its band (1-based). band_name selects
 * a band of a label raster ("" or NULL: band 1). */
int wc_labels_prepare(const wc_raster *tiles, const char *labels, const char *band_name,
                      const char *work_dir, char **out_path, int *out_band);

#endif
