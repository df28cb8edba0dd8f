/* rwriter.h: writing a raster file through GDAL so that it appears only complete and verified.
 *
 * Every raster wildcpu writes (the risk map, its quick-look picture, the synthetic tiles, their
 * VRT and oracle, derived label rasters) goes through the same steps:
 *
 *   create   a working dataset: a file next to the target (wc_temp_path: DIR/.NAME.tmp-PID),
 *            or a MEM dataset for a picture built in memory; size, bands, type, creation
 *            options, georeferencing and band descriptions are set here
 *   write    rows of one band or of every band (and read them back); metadata, category names,
 *            and anything driver-specific through the GDAL handle (wc_rwriter_gdal)
 *   commit   the working dataset closed with GDAL's errors captured (GDAL 3.6's GDALClose
 *            returns nothing; write errors surface there); optionally copied into the output
 *            format (GDAL's CreateCopy: a dense GeoTIFF or a COG from a sparse working file, a
 *            PNG from a MEM dataset) at DIR/.NAME.out-PID; the result reopened and verified
 *            (size, bands, types, geotransform, COG layout); fsync; renamed over the target,
 *            its .aux.xml sidecar renamed with it or a stale sidecar of the target removed;
 *            fsync of the directory
 *   abort    every temporary file removed; the target is untouched
 *
 * A failure of any GDAL call is reported with GDAL's message, naming the temporary file and the
 * target. A working GeoTIFF created with SPARSE_OK=TRUE stores no tile that was never written,
 * so an abort after a stop is instant even for a map of millions of tiles; committing it through
 * a copy then gives every reader a complete file.
 *
 * Not here: what the values mean, deciding paths (files.h checks them), MPI (one process
 * writes). The header needs no gdal.h; the GDAL handle is a void pointer. */
#ifndef WILDCPU_RWRITER_H
#define WILDCPU_RWRITER_H

#include <stddef.h>
#include <stdint.h>

#include "wildcpu/raster.h"

/* What a band says about itself; NULL fields (and has_nodata 0) are left unset. */
typedef struct wc_rwriter_band {
    const char *name; /* band description */
    const char *unit; /* unit type */
    int has_nodata;
    double nodata;
    const char *color; /* colour interpretation by GDAL's name: "Red", "Green", "Blue", "Alpha" */
} wc_rwriter_band;

typedef struct wc_rwriter_opts {
    const char *driver;         /* of the working dataset: "GTiff" (NULL), "MEM", "VRT", ... */
    const char *const *options; /* its creation options, "KEY=VALUE", NULL-terminated; or NULL */
    int width, height, nbands;  /* nbands may be 0 for a VRT whose bands are added later */
    wc_dtype type;              /* of every band (ignored when nbands is 0) */
    const double *gt;           /* geotransform (6), or NULL: none, and none verified */
    const char *wkt;            /* CRS as WKT, or NULL or "": none */
    /* Ground control points (for a raster they place, without a geotransform), and their CRS */
    const wc_raster_gcp *gcps;
    int ngcps;
    const char *gcp_wkt;
    const wc_rwriter_band *bands; /* (nbands), or NULL */
    /* NULL: the working file is the output. Otherwise the output is a CreateCopy of the working
     * dataset through this driver ("GTiff", "COG", "PNG") with these creation options; a MEM
     * working dataset needs one. */
    const char *copy_driver;
    const char *const *copy_options;
    /* NULL, or asked after the working dataset is closed, while the copy runs (GDAL's progress
     * callback) and just before the rename: returning 0 abandons the commit
     * (WC_RWRITER_STOPPED), leaving the target untouched. */
    int (*keep_going)(void *arg);
    /* NULL, or called once the output is verified, just before it replaces the target: the
     * caller removes what describes the file it replaces (a map's picture and STAC item), so
     * that a process killed between the rename and their rewriting leaves none that lie. */
    void (*before_publish)(void *arg);
    void *arg;
    /* NULL, or what heads a progress line of the copy every WC_PROGRESS_SECONDS ("predict:
     * copying the map into risk.tif"): a map of billions of pixels takes minutes to copy. */
    const char *progress;
} wc_rwriter_opts;

typedef struct wc_rwriter wc_rwriter;

/* wc_rwriter_commit's status when keep_going said to stop (no message: the caller says why). */
#define WC_RWRITER_STOPPED 1

/* Creates the working dataset for target. The options are copied: nothing opts points to is
 * needed afterwards. Returns NULL after a message naming the target (it is a directory, the
 * driver is missing, GDAL cannot create the file or set it up); nothing is left behind then. */
wc_rwriter *wc_rwriter_create(const char *target, const wc_rwriter_opts *opts);

/* Describes band `band` (1-based) as wc_rwriter_opts.bands does at creation (for a writer that
 * describes each band just before writing it). WC_OK, or WC_ERR after a message. */
int wc_rwriter_set_band(wc_rwriter *w, int band, const wc_rwriter_band *b);
/* Metadata item key=value of the dataset (band 0) or of band `band`, in GDAL's default domain.
 * WC_OK, or WC_ERR after a message naming the item and the files. */
int wc_rwriter_set_metadata(wc_rwriter *w, int band, const char *key, const char *value);
/* Category names of a band (NULL-terminated): a GeoTIFF keeps them in the .aux.xml sidecar,
 * which the commit publishes with the file. WC_OK, or WC_ERR after a message. */
int wc_rwriter_set_categories(wc_rwriter *w, int band, const char *const *names);

/* A colour table for band `band` (a Byte band: its palette): ncolors entries of r, g, b, alpha
 * for the values 0 .. ncolors - 1. A GeoTIFF keeps it in the file itself (a palette TIFF).
 * WC_OK, or WC_ERR after a message. */
int wc_rwriter_set_colors(wc_rwriter *w, int band, const unsigned char (*rgba)[4], int ncolors);

/* Writes rows [y0, y0 + n) of band `band` (1-based), or of every band when band is 0 (then
 * band after band: rows of band 1, then of band 2, ...), from rows, whose values have the
 * writer's type and whose lines are line_bytes apart (0: packed, width values). WC_OK, or
 * WC_ERR after a message naming the rows, the band and the files. */
int wc_rwriter_write(wc_rwriter *w, int band, int64_t y0, int64_t n, const void *rows,
                     size_t line_bytes);
/* Reads rows back, as wc_rwriter_write writes them. */
int wc_rwriter_read(wc_rwriter *w, int band, int64_t y0, int64_t n, void *rows, size_t line_bytes);

/* Writes out what GDAL holds of the working dataset. The first flush of a new tiled GeoTIFF
 * writes its directory, tile index included: for a raster of millions of tiles that is a hundred
 * MB and seconds, which a caller that must honour a stop within a second does before it starts
 * rather than at whichever block first leaves GDAL's cache. WC_OK, or WC_ERR after a message. */
int wc_rwriter_flush(wc_rwriter *w);

/* Closes the working file (errors checked) and opens it again for update: a VRT closes the
 * sources it holds open, which bounds the file descriptors a mosaic of many tiles needs.
 * WC_OK, or WC_ERR after a message (the writer then only accepts wc_rwriter_abort). */
int wc_rwriter_reopen(wc_rwriter *w);

/* The working dataset's GDALDatasetH, for what only GDAL can put there (VRT sources, a warp or
 * a rasterization into it). Valid until commit, abort or reopen. Errors of calls made on it are
 * the caller's to report. */
void *wc_rwriter_gdal(wc_rwriter *w);

/* Publishes the target as described above. Returns WC_OK, WC_RWRITER_STOPPED, or WC_ERR after
 * a message naming the call and the files; on anything but WC_OK every temporary file is
 * removed and the target is as it was, except after a failed rename of the sidecar once the
 * file itself is in place (reported). Frees w in every case. */
int wc_rwriter_commit(wc_rwriter *w);
/* Gives up: closes the working dataset without reporting, removes every temporary file.
 * Frees w; NULL is fine. */
void wc_rwriter_abort(wc_rwriter *w);

#endif
