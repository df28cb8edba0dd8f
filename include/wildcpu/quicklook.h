/* quicklook.h: the pictures: a quick-look of a probability raster (and a reliability diagram): a
 * PNG with a perceptually ordered yellow-orange-red colour ramp (ColorBrewer/matplotlib YlOrRd),
 * nodata and anything that is not a probability in [0, 1] (NaN, Inf, out of range) transparent
 * (RGBA), and a legend strip below the map: the title "burn probability", a gradient bar and tick
 * labels 0, 0.25, 0.5, 0.75, 1 drawn with a tiny built-in 5x7 bitmap font.
 *
 * Memory stays bounded for any raster size: a raster longer than max_side pixels on its long
 * side is downsampled by the smallest integer factor that fits (GDAL's averaging read, which
 * skips nodata), read a band of rows at a time, so the picture never exceeds max_side (plus the
 * legend) whatever the raster's size. Pixels that are not square on the ground have the
 * picture's rows scaled (nearest), so that it keeps the ground's shape.
 *
 * Written through GDAL's PNG driver (a MEM dataset and CreateCopy): no other dependency. The PNG
 * goes to a temporary file next to the target and is renamed over it only when complete.
 *
 * Not here: computing the probabilities (predict.c), MPI (rank 0 calls this alone). */
#ifndef WILDCPU_QUICKLOOK_H
#define WILDCPU_QUICKLOOK_H

#include <stddef.h>
#include <stdint.h>

/* Downsampling limit on the long side of the map part of the picture. */
#define WC_QUICKLOOK_MAX_SIDE 4096
/* Legend strip height at scale 1 (the strip is scaled up with the picture's width). */
#define WC_QUICKLOOK_LEGEND_PX 42
/* Narrowest picture: a narrower map is padded (transparent) so the legend fits. */
#define WC_QUICKLOOK_MIN_WIDTH 160

typedef struct wc_quicklook_info {
    int width, height;         /* the PNG */
    int map_width, map_height; /* the map part (top-left) */
    int factor;                /* downsampling factor: 1 = one picture pixel per raster pixel */
    int box_rows;              /* rows of factor x factor boxes: map_height unless row-scaled */
    int legend_height;
} wc_quicklook_info;

/* The picture's layout for a raster of width x height pixels (no I/O), its pixels square. */
void wc_quicklook_layout(int width, int height, int max_side, wc_quicklook_info *info);
/* The same for pixels row_scale times as tall on the ground as wide: the picture has about
 * row_scale times as many map rows as boxes (each the nearest box row), so that it keeps the
 * ground's shape, and its long side stays within max_side. */
void wc_quicklook_layout_scaled(int width, int height, double row_scale, int max_side,
                                wc_quicklook_info *info);
/* How much taller than wide on the ground a pixel of the geotransform gt in the CRS wkt is, for
 * the picture: |gt[5]| / gt[1] of a projected (or unnamed) north-up grid, 1 for square pixels (to
 * 1e-9), a rotated grid (painted as stored) and a grid in degrees (drawn as stored, as QGIS
 * draws it in its CRS). */
double wc_quicklook_row_scale(const double gt[6], const char *wkt);
/* What drawing a picture of that layout allocates: its pixels (the MEM dataset), the rows read
 * and painted at a time, the legend. */
size_t wc_quicklook_bytes(const wc_quicklook_info *info);

/* Writes the picture of band `band` (1-based; values in [0,1]; the band's nodata, and values
 * that are not probabilities, transparent: the latter counted in a warning)
 * of the raster at src_path to png_path. max_side <= 0 means WC_QUICKLOOK_MAX_SIDE. info may be
 * NULL. Returns WC_OK, or WC_ERR after a message naming the file; png_path is untouched then. */
int wc_quicklook_write(const char *src_path, int band, const char *png_path, int max_side,
                       wc_quicklook_info *info);

/* The same in two steps, so that the reading (the long part: a map of billions of pixels is read
 * whole) can come before the map it shows is published, and a stop can end it: the picture
 * drawn in memory, then published. Rows GDAL knows to be empty (a sparse GeoTIFF's tiles never
 * stored) are not read. */
typedef struct wc_quicklook wc_quicklook;
/* What drawing asks: keep_going(arg), between reads of a fraction of a second, returns 0 to stop
 * (NULL: never); `what` ("predict: quick-look risk.png") heads a progress line every
 * WC_PROGRESS_SECONDS (NULL: none). */
typedef struct wc_quicklook_ask {
    int (*keep_going)(void *arg);
    void *arg;
    const char *what;
} wc_quicklook_ask;
#define WC_QUICKLOOK_STOPPED 1
/* Draws the picture of band `band` of src (a GDALDatasetH, open; its name src_name for the
 * messages) for png_path; ask may be NULL. Returns it, or NULL after a message, or NULL with
 * *stopped set when keep_going said to stop (no message). Nothing is written to png_path. */
wc_quicklook *wc_quicklook_draw(void *src, const char *src_name, int band, const char *png_path,
                                int max_side, const wc_quicklook_ask *ask, int *stopped);
/* Publishes the picture at its png_path (a PNG copy, verified, renamed over it); info may be
 * NULL. WC_OK, or WC_ERR after a message (png_path untouched). Frees q. */
int wc_quicklook_publish(wc_quicklook *q, wc_quicklook_info *info);
/* Gives the picture up, nothing written. NULL is fine. */
void wc_quicklook_discard(wc_quicklook *q);

/* A reliability diagram of nbins bins (count, mean predicted probability and observed share
 * of each; empty bins and NaN skipped) as a PNG at png_path: the diagonal, the curve through
 * the bins, each bin a square in the ramp's colour of its prediction. Returns WC_OK, or WC_ERR
 * after a message naming the file (png_path untouched then). */
int wc_quicklook_reliability(const char *png_path, int nbins, const int64_t *count,
                             const double *predicted, const double *observed);

/* The ramp: ColorBrewer YlOrRd's 9 stops, evenly spaced over 0..1 (stop k at k / 8), as r, g, b.
 * The one source of the map's colours: the picture interpolates them, the QGIS style (style.h)
 * lists them, the class raster's colour table takes every other one. */
#define WC_QUICKLOOK_NSTOPS 9
extern const unsigned char WC_QUICKLOOK_RAMP[WC_QUICKLOOK_NSTOPS][3];

/* The colour of probability p (clamped to [0,1]) on the ramp, as r, g, b. */
void wc_quicklook_color(double p, unsigned char rgb[3]);

#endif
