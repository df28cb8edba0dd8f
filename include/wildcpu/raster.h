/* raster.h: a georeferenced raster opened through GDAL, and windowed reads from it.
 *
 * Any driver GDAL reads works (VRT mosaics, GeoTIFF, GeoPackage rasters, LCP, ...). Band data
 * types Byte, UInt16, Int16, UInt32, Int32, Float32 and Float64 are accepted. A window is
 * read with ONE RasterIO call over all requested bands; the part of a window that lies outside
 * the raster is left to the caller (the buffer is not touched there), so windows may overhang
 * the edges (prediction does that).
 *
 * A handle is not thread-safe (GDAL datasets are not): each thread opens its own.
 *
 * Not here: patches, normalization, labels' meaning. gdal.h stays inside raster.c and the few
 * modules that write rasters. */
#ifndef WILDCPU_RASTER_H
#define WILDCPU_RASTER_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

typedef enum wc_dtype {
    WC_DT_BYTE,
    WC_DT_UINT16,
    WC_DT_INT16,
    WC_DT_UINT32,
    WC_DT_INT32,
    WC_DT_FLOAT32,
    WC_DT_FLOAT64,
} wc_dtype;

size_t wc_dtype_size(wc_dtype t);
const char *wc_dtype_name(wc_dtype t);
/* The smallest type that holds every value of both a and b exactly (for reading bands of
 * different types in one call without losing anything). */
wc_dtype wc_dtype_union(wc_dtype a, wc_dtype b);
/* GDAL's GDALDataType for t (an int, so this header needs no gdal.h). */
int wc_dtype_to_gdal(wc_dtype t);
/* Value i of a buffer of type t, as double. */
double wc_dtype_get(const void *buf, wc_dtype t, size_t i);

#define WC_BAND_NAME_MAX 64
#define WC_BAND_UNIT_MAX 32
/* A control byte (below 0x20, and DEL), which no band name holds: wc_band_name_of turns it into
 * '_', and a checkpoint whose names hold one is refused (one rule for the writer and the
 * reader: a name the writer let through would make every checkpoint of the run unreadable). */
static inline int wc_band_name_control(unsigned char c) {
    return c < 0x20 || c == 0x7f;
}
/* The band description that marks the label band unless --label-band says otherwise; with
 * --labels such a band is still a label, never a feature (docs/cli.md, "Input"). */
#define WC_LABEL_BAND_NAME "fire"

typedef struct wc_band {
    /* the band description (',' ';' '=' and control characters read as '_'), or "band_<n>"
     * when it has none; one of 64 bytes or more is its first 46 or fewer (whole characters),
     * '~' and 16 hex digits of a hash of the whole, so that long names stay apart */
    char name[WC_BAND_NAME_MAX];
    int renamed;     /* name is not the description as it is: a character replaced, or cut */
    int undescribed; /* the band has no description: name is "band_<n>" */
    /* GDAL's unit type ("degC", "m", "%"; "" when it has none), cut to WC_BAND_UNIT_MAX - 1
     * bytes, ',' ';' '=' ':' and control characters read as '_' (it travels in checkpoints as
     * name:unit lists) */
    char unit[WC_BAND_UNIT_MAX];
    wc_dtype type;
    int has_nodata;
    /* compared with the stored value, as GDAL defines it; rounded to the band's type, as GDAL
     * compares it (a Float32 band's -9999.9 is the float nearest it, -9999.900390625) */
    double nodata;
    int nodata_rounded; /* GDAL's value was not a float's: the float nearest it is the nodata */
    /* GDAL's value as declared (equal to nodata unless rounded): a Float32 band read as Float64
     * (beside a masked or a Float64 band) gets its pixels widened, -9999.900390625, but a VRT
     * fills its nodata pixels and holes with the declared double, -9999.9; both are nodata (no
     * float widens to a value that is not a float's, so no data pixel is taken for it) */
    double nodata_declared;
    /* GDAL's scale and offset (packed bands: CF scale_factor/add_offset in netCDF, a GeoTIFF's
     * scale/offset): the band's value is stored * scale + offset. 1 and 0 when it has none;
     * always finite, scale never 0 (wc_raster_open refuses the raster otherwise). */
    double scale, offset;
    /* A mask says which pixels are valid, beyond what nodata says: GDAL's (an internal or
     * .msk mask; GDALGetMaskFlags neither all-valid nor from nodata), or the raster's alpha
     * band, which GDAL applies only to 2- and 4-band rasters. wc_raster_read returns masked
     * pixels as NaN, which every reader takes as nodata. */
    int masked;
    /* GDAL's own mask of the band (an internal or .msk one, not the alpha), read beside the
     * alpha band where the raster has one: a pixel is valid where both say so */
    int own_mask;
    int is_alpha; /* the alpha band (colour interpretation Alpha): a mask, never a feature */
} wc_band;

/* The type a band is read as: its own, or Float64 (which holds every value of every type, and
 * NaN) when it has a mask. */
static inline wc_dtype wc_band_read_type(const wc_band *b) {
    return b->masked ? WC_DT_FLOAT64 : b->type;
}

/* Whether a stored value, as read (wc_raster_read), is nodata: NaN or Inf (a masked pixel reads
 * as NaN), or the band's nodata value. */
static inline int wc_band_is_nodata(const wc_band *b, double stored) {
    return !isfinite(stored) ||
           (b->has_nodata && (stored == b->nodata || stored == b->nodata_declared));
}

/* Whether the band is packed (its stored values are not its values). */
static inline int wc_band_packed(const wc_band *b) {
    return b->scale != 1.0 || b->offset != 0.0;
}
/* Whether wildcpu reads the band otherwise than versions before 2026-12-02 did (which took its
 * stored values, ignored masks and compared an unrounded nodata value): packed, masked, or with
 * a rounded nodata value. Checkpoints of those versions are refused for such bands. */
static inline int wc_band_read_differs(const wc_band *b) {
    return wc_band_packed(b) || b->masked || b->nodata_rounded;
}
/* The value of a stored (non-nodata) value: what the band means, whatever its packing. For an
 * unpacked band it is the stored value exactly (v * 1 + 0 == v for every finite v). Training
 * statistics, training samples and prediction all read feature values through this, so a model
 * trained on one packing predicts on another (ERA5 files each have their own) the same, to the
 * last bit where both give the same double. */
static inline double wc_band_value(const wc_band *b, double stored) {
    return stored * b->scale + b->offset;
}
/* No measurement in any unit a raster uses reaches this magnitude: a value that does is an
 * undeclared nodata (the -3.4e38 of float rasters, a netCDF fill value of 9.97e36) taken for
 * data. Training and the maps warn about such values. */
#define WC_HUGE_VALUE 1e30

/* A ground control point: the pixel (column) and line (row) from the raster's top left corner,
 * as GDAL counts them, placed at x, y, z in the GCPs' CRS. */
typedef struct wc_raster_gcp {
    double pixel, line, x, y, z;
} wc_raster_gcp;

typedef struct wc_raster {
    char *path;
    int width, height, nbands;
    double gt[6]; /* geotransform: x = gt0 + col*gt1 + row*gt2, y = gt3 + col*gt4 + row*gt5 */
    int has_gt;
    int gcps;           /* ground control points (a raster GCPs place instead of a geotransform) */
    wc_raster_gcp *gcp; /* (gcps) the points, kept for the maps of the raster */
    char *gcp_wkt;      /* their CRS as WKT, "" when none */
    int alpha;          /* the alpha band (1-based): the mask of every other band; 0 when none */
    char *wkt;          /* CRS as WKT, "" when none */
    wc_band *bands;     /* (nbands), band n is bands[n-1] */
    void *ds;           /* GDALDatasetH */
    double *mask;       /* masked bands' reads: the mask of a window, kept for the next read */
    size_t mask_cap;    /* its values */
    int covered;        /* wc_raster_window_empty: 1 GDAL reports data everywhere in band
                         * covered_band (no window can be empty), 2 it does not, 0 not asked */
    int covered_band;
    int holes_checked; /* 1: a window GDAL reports empty read as nodata; 2: it did not (nothing
                        * is skipped); 3: the read failed (nothing is skipped, nor read again
                        * to check); 0: not read yet */
    char **files;      /* wc_raster_files: listed on first use, NULL until then */
} wc_raster;

/* Registers GDAL's drivers and routes GDAL's messages to wildcpu's log. Idempotent. */
void wc_raster_init(void);
/* Opens path read-only and reads its metadata; returns WC_ERR with a message saying why
 * (missing, not a raster, unsupported band type, ...). */
int wc_raster_open(wc_raster *r, const char *path);
void wc_raster_close(wc_raster *r);
/* Closes the GDAL handle (freeing its cached blocks) but keeps the metadata; reads then fail. */
void wc_raster_release(wc_raster *r);
/* The files r is read from, as wc_gdal_file_list(r->path) lists them (r->path first): listed
 * once, on the first call, and kept until wc_raster_close, so that the checks of one command
 * (its sources, its coverage, the ranks' agreement, its outputs) share one listing of a large
 * mosaic. NULL-terminated; owned by r. */
char *const *wc_raster_files(wc_raster *r);
/* What GDAL keeps for the files of r it holds open while `handles` handles read r (GDAL's
 * dataset pool keeps up to GDAL_MAX_DATASET_POOL_SIZE, default 100, of a VRT's sources open
 * process-wide; a file read directly stays open once per handle): the open files' count times
 * the bytes GDAL allocated to open and read one pixel of each band of r's first data file (a
 * GeoTIFF that interleaves its bands by pixel decodes a whole block of all of them into a buffer
 * of its own: hundreds of MiB for a 2048-pixel block of 12 Float32 bands), its block cache's
 * growth left out. Measured, not modelled: the drivers' buffers are theirs. 0 when the file
 * cannot be opened (the reads will say why). *files and *per_file, when given, get the parts. */
size_t wc_raster_open_files_bytes(wc_raster *r, int handles, int *files, size_t *per_file);
/* A VRT mosaic's own description, which every handle that reads it holds: the heap one handle
 * keeps once open (its sources: about 300 bytes each, 41 MiB for 10,000 tiles of 13 bands) and,
 * in *opening, what opening one touches beyond that while GDAL parses the VRT's XML (several
 * times the file's size). Measured by opening r->path once. 0 and 0 for a raster that is not a
 * VRT of sources. */
size_t wc_raster_mosaic_bytes(wc_raster *r, size_t *opening);
/* The decoded blocks a window of w x h pixels of r can touch, wherever it lies, in bytes: every
 * band of the file, not only those a caller reads (a GeoTIFF interleaved by pixel decodes a
 * block of all its bands at once, and GDAL's cache keeps them only when they all fit). A VRT
 * mosaic's first few sources stand for all of them, as in wc_raster_open_files_bytes. 0 when no
 * file can be opened. */
size_t wc_raster_window_blocks_bytes(wc_raster *r, int64_t w, int64_t h);
/* GDAL's block cache: bytes in use now, and the limit; a new limit (bytes); whether the user set
 * it (GDAL_CACHEMAX), which wildcpu then leaves alone. */
size_t wc_raster_cache_used(void);
size_t wc_raster_cache_max(void);
void wc_raster_cache_set(size_t bytes);
int wc_raster_cache_user_set(void);
/* The most GDAL's block cache may take for one of host_ranks ranks on this node: a quarter of
 * the node's memory over them. */
size_t wc_raster_cache_most(uint64_t host_ranks);
/* Sizes GDAL's block cache to what reads of `bytes` bytes of decoded raster can use: the whole
 * of them plus the edge blocks, at least 16 MiB, at most `most` bytes (0: 256 MiB); so a small
 * region does not reserve a cache it cannot fill, and the memory plan counts what can really be
 * held. Returns the size it would have wanted when the cap held it below (0 when it fits).
 * Leaves GDAL_CACHEMAX, when the user sets it, alone. */
size_t wc_raster_cache_fit(size_t bytes, size_t most);

/* Reads the window (x0, y0, w, h), which may overhang the raster, of the given bands (1-based,
 * nb of them) into buf as type `type`, laid out band by band (nb, h, w). Only the part inside
 * the raster is written. One RasterIO call (and one per distinct mask of masked bands, whose
 * masked pixels are written as NaN: `type` is then floating-point, see wc_band_read_type). An I/O
 * error is logged naming the file and window and returns WC_ERR. Coordinates are 64-bit: a window
 * near the edge of a raster INT_MAX pixels wide extends beyond int; the part inside the raster
 * always fits GDAL's int arguments. */
int wc_raster_read(wc_raster *r, int64_t x0, int64_t y0, int64_t w, int64_t h, const int *bands,
                   int nb, wc_dtype type, void *buf);

/* Refuses (WC_ERR, after a message naming the raster and band) a VRT band that has no nodata
 * value and no mask while part of its extent has no source (a tile missing from the mosaic):
 * GDAL reads that part as 0, which would be taken for data. Bands are 1-based, nb of them;
 * other drivers, and VRTs GDAL cannot tell about, pass. */
int wc_raster_check_coverage(wc_raster *r, const int *bands, int nb);

/* When r has no geotransform (placed by GCPs alone, or not at all): a warning naming it, how to
 * place it, and `consequence` (what the command cannot do without it). */
void wc_raster_warn_unplaced(const wc_raster *r, const char *consequence);

/* Whether GDAL knows that the window (x0, y0, w, h) holds nothing but nodata: the first of the
 * bands (1-based, nb of them) that has a nodata value is reported empty there by its driver (a
 * VRT without a source in the window, the missing blocks of a sparse GeoTIFF), so reading it as
 * `type` would give that nodata at every pixel and every pixel of the window is invalid. 0 when
 * unsure: a band without nodata reads 0 there, which is data; a driver that cannot tell; a
 * raster whose holes, read once to check, do not read as nodata (GDAL promises a fill value
 * only: a nodata its type cannot hold fills with another). One band stands for all (a mosaic's
 * bands share their sources): GDAL's answer costs time in the number of sources, and asking
 * about every band would cost more than reading a small window. A raster GDAL reports covered
 * everywhere is asked once. */
int wc_raster_window_empty(wc_raster *r, int64_t x0, int64_t y0, int64_t w, int64_t h,
                           const int *bands, int nb, wc_dtype type);
/* The same for each cell of a grid of cols x rows cells of cell x cell pixels whose first cell
 * is at (x0, y0): empty[row * cols + col] = 1 where the cell is known empty, else 0; returns
 * their number. Blocks of cells are asked about whole and halved only where partly covered, so
 * the calls grow with the cells along the edges of the data, not with the grid. */
long wc_raster_empty_cells(wc_raster *r, const int *bands, int nb, wc_dtype type, int64_t x0,
                           int64_t y0, int cell, int cols, int rows, uint8_t *empty);

/* The name wildcpu keeps for a band described desc (wc_band.name), into name; so a name given
 * on the command line is compared as the band's description is. Returns whether it differs from
 * desc (a character replaced, or cut). */
int wc_band_name_of(const char *desc, char name[WC_BAND_NAME_MAX]);
/* For a message about bands named `name`: a note on how descriptions become names when one of
 * them is not its description as it is (two bands "a,b" and "a;b" are both 'a_b'), else "". */
const char *wc_raster_renamed_note(const wc_raster *r, const char *name);
/* The checks of a raster made once per command, on one rank. An integer band whose nodata value
 * its type cannot hold (-1 in a Byte band) is warned about: no pixel is nodata by it.
 * A VRT mosaic whose sources are in another CRS than its own (gdalbuildvrt
 * -allow_projection_difference) places their pixels on the wrong ground, and one whose sources'
 * pixels are of another size than its own (gdalbuildvrt -resolution) resamples them: warns,
 * naming the first such source of each. A source holding signed bytes (GDAL 3.6's
 * PIXELTYPE=SIGNEDBYTE, which the mosaic reads as unsigned) is refused: WC_ERR after naming it.
 * Opens its sources (up to 2000, spread over a larger mosaic): call it on one rank. */
int wc_raster_check_sources(wc_raster *r);
/* After "nothing is valid": names each of bands (1-based, nb of them) that is nodata in 99% or
 * more of a 256 x 256 sample of the raster, as an error (or a warning) ending in why; returns
 * how many. */
int wc_raster_say_empty_bands(const wc_raster *r, const int *bands, int nb, const char *why,
                              int as_error);

/* GDAL's failures while writing: GDAL 3.6's GDALClose returns nothing, and a write error
 * surfaces only as an error message. Between push and pop every failure is counted and the last
 * message kept (warnings go to wildcpu's log); callers compare `failures` before and after a
 * call and report `last` with their own context. Pushes nest; each thread has its own stack. */
typedef struct wc_gdal_errors {
    int failures;
    char last[512];
} wc_gdal_errors;
void wc_gdal_errors_push(wc_gdal_errors *e);
void wc_gdal_errors_pop(void);

/* The files a dataset (raster or vector) consists of: path itself, then every file GDAL reads
 * for it (a VRT's tiles, a shapefile's .dbf and .shx, sidecars), those of every VRT among them
 * (a mosaic of mosaics), and for a file inside an archive (/vsizip/a.zip/x.vrt) the archive
 * itself. NULL-terminated; free with wc_strv_free. A path GDAL cannot open gives just itself. */
char **wc_gdal_file_list(const char *path);

/* Pixel (col, row) -> map coordinates of the pixel's corner, and back (fractional pixels). */
void wc_raster_pixel_to_map(const double gt[6], double col, double row, double *x, double *y);
int wc_raster_map_to_pixel(const double gt[6], double x, double y, double *col, double *row);

/* The raster's place on the global pixel grid its georeferencing defines: pixel (0, 0) is global
 * pixel (gcol, grow) = (round(gt0 / gt1), round(gt3 / gt5)), halves (and values within 1e-6 of
 * one) rounded up, also below zero, so two rasters on one grid (a mosaic and a window cut from
 * it, or adjacent tiles) agree on every pixel's global coordinate, half-pixel origins too.
 * Returns 1; 0 for a rotated or ungeoreferenced raster, whose own grid is used (0, 0). The
 * network's pooling phase is defined on this grid, for training, validation and maps alike. */
int wc_raster_global_origin(const wc_raster *r, long long *gcol, long long *grow);

/* Whether a geotransform's pixel axes run along the CRS's axes: its rotation terms are 0, or
 * within 1e-9 of the pixel's side (the noise a transform computed in floating point, or read
 * from a ModelTransformation tag, carries; it moves a pixel 1e-3 of its size over a million
 * pixels). North-up and south-up alike. */
int wc_gt_axis_aligned(const double gt[6]);
/* v mod m in [0, m), for negative v too. */
int wc_pmod(long long v, int m);

/* True when two rasters are on the same grid: size, geotransform (to 1e-9 of a pixel) and CRS. */
int wc_raster_same_grid(const wc_raster *a, const wc_raster *b);
/* One-line description of a raster's grid for messages: "1024x1024 px, 30 m, origin (..),
 * EPSG:32611". */
void wc_raster_describe_grid(const wc_raster *r, char *buf, size_t size);
/* A short name of the CRS ("EPSG:32611" when it has an authority code, else its name, else "none").
 */
void wc_raster_crs_name(const char *wkt, char *buf, size_t size);
/* The same for messages, except that a CRS PROJ calls "unknown" (made from a PROJ string) is
 * its PROJ definition. The name above stays the key of checkpoints' fingerprints. */
void wc_raster_crs_describe(const char *wkt, char *buf, size_t size);
/* Whether two CRSs (WKT) place a geotransform's pixels on the same ground: 1 for the same CRS
 * (however each is written, but for a vertical part, which moves no pixel), 0 for two others,
 * -1 when either is missing ("") or does not parse. */
int wc_raster_crs_same_place(const char *a, const char *b);
/* True when the CRS is geographic (coordinates in degrees of longitude and latitude). */
int wc_raster_crs_is_geographic(const char *wkt);
/* Metres per unit of a projected CRS (WKT or anything GDAL takes, such as "EPSG:2241": 0.3048006
 * for US survey feet), 0 for a geographic one (degrees), NaN when it is unknown. */
double wc_raster_crs_metres_per_unit(const char *crs);
/* The size on the ground, in metres, of a pixel's width (one column on: *px_width_m) and height
 * (one row on: *px_height_m) at the centre of a width x height raster with geotransform
 * gt in crs (WKT or anything GDAL takes, such as "EPSG:3857"), through the CRS's longitude and
 * latitude on its ellipsoid: a Web Mercator pixel of 42 CRS metres at 45 degrees north is 30 m
 * of ground, a UTM one is its own size within 0.1%, and degrees become metres. WC_ERR when the
 * CRS is unknown or has no geographic base (a local engineering CRS). */
int wc_raster_ground_pixel_size(const char *crs, const double gt[6], int width, int height,
                                double *px_width_m, double *px_height_m);

/* The name (as a band's description reads, wc_band_name_of) that the first source of each of
 * the first nbands bands of the VRT `path` gives its band, into names[b - 1] ("" for none, or
 * when path is no VRT). Returns how many bands got one. GDAL 3.6's gdalbuildvrt does not copy
 * band descriptions, so a mosaic of described tiles can have none of its own. */
int wc_raster_source_names(const char *path, int nbands, char (*names)[WC_BAND_NAME_MAX]);

/* When some bands of r have no description and the sources of r (a VRT) name every one of the
 * n names `wanted` (with r's described bands): what to do, as ". Its sources do describe ..."
 * into hint (size bytes), for a message that the bands were not found; "" otherwise. */
void wc_raster_undescribed_hint(const wc_raster *r, const char *const *wanted, int n, char *hint,
                                size_t size);

/* Whether two units name one scale, whatever their spelling ("degC" is "Celsius", "m" is
 * "metre"); units it does not know must match up to case, spaces, underscores and dots. */
int wc_units_same(const char *a, const char *b);

#endif
