/* riskmap.c: the risk map's files on the writing rank; see riskmap.h and docs/predict.md.
 *
 * The probabilities are counted as they are written: the share of nodata for the summary, and
 * (--classes) an exact integer histogram from which the class breaks follow once the whole map
 * is known; the class raster is then a second pass over the written probability band. Both
 * rasters go through the raster writer: a sparse working GeoTIFF, copied when complete into
 * the file proper, verified and renamed over the target. What comes with the map (picture,
 * QGIS style, STAC item) is written only once the map is in place, from the files on disk.
 *
 * Not here: computing the probabilities, the windows, MPI (predict.c); GDAL (rwriter.c); the
 * style's and the item's documents (style.c, stac.c). */
#include "wildcpu/riskmap.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cpl_error.h>
#include <cpl_string.h>
#include <gdal.h>

#include "wildcpu/files.h"
#include "wildcpu/quicklook.h"
#include "wildcpu/rwriter.h"
#include "wildcpu/sha256.h"
#include "wildcpu/stac.h"
#include "wildcpu/stop.h"
#include "wildcpu/style.h"
#include "wildcpu/util.h"

/* ---- the file ------------------------------------------------------------------------------ */

/* The map is written in two files (rwriter.h). The working GeoTIFF receives the rounds' rows and
 * nothing else (the class raster has its own); it is sparse (SPARSE_OK: tiles entirely nodata
 * are not stored, tiles never written are not filled in at close), so abandoning it after a stop
 * or an error costs no more than its tile index (GDAL rewrites the directory when it closes the
 * file: about a second for a raster of millions of tiles, 2^31 rows of 512): a dense GeoTIFF
 * fills every missing tile when it is closed, gigabytes and minutes for such a map. The map
 * proper is then a complete copy of it (GDAL's CreateCopy to the GTiff or COG driver, every tile
 * present, as any reader expects), which a stop can also interrupt. The copy re-encodes the map
 * once: DEFLATE runs far faster than the network.
 *
 * The layout: tiles of one strip's height, so each strip completes a row of tiles. The class
 * raster has the same tiles, Byte, and no predictor (its values are categories, not a smooth
 * field). */
#define STR_(x) #x
#define STR(x)  STR_(x)
#define MAP_LAYOUT                                                                                 \
    "TILED=YES", "BLOCKXSIZE=256", "BLOCKYSIZE=" STR(WC_PREDICT_STRIP), "COMPRESS=DEFLATE",        \
        "PREDICTOR=3", "BIGTIFF=IF_SAFER", "INTERLEAVE=BAND"
#define CLASS_LAYOUT                                                                               \
    "TILED=YES", "BLOCKXSIZE=256", "BLOCKYSIZE=" STR(WC_PREDICT_STRIP), "COMPRESS=DEFLATE",        \
        "BIGTIFF=IF_SAFER"
static const char *const MAP_OPTIONS[] = {MAP_LAYOUT, NULL};
static const char *const CLASS_OPTIONS[] = {CLASS_LAYOUT, NULL};
/* ZLEVEL 1: the working file is read once, by the copy */
static const char *const WORK_OPTIONS[] = {MAP_LAYOUT, "SPARSE_OK=TRUE", "ZLEVEL=1", NULL};
static const char *const CLASS_WORK_OPTIONS[] = {CLASS_LAYOUT, "SPARSE_OK=TRUE", "ZLEVEL=1", NULL};
/* COG: BLOCKSIZE 256, overviews down to one tile. Probabilities average well (nodata skipped);
 * class numbers must not be averaged. */
#define COG_LAYOUT "COMPRESS=DEFLATE", "BIGTIFF=IF_SAFER", "BLOCKSIZE=256", "OVERVIEWS=AUTO"
static const char *const MAP_COG[] = {COG_LAYOUT, "PREDICTOR=YES", "RESAMPLING=AVERAGE", NULL};
static const char *const CLASS_COG[] = {COG_LAYOUT, "RESAMPLING=NEAREST", NULL};

/* The class raster's nodata: Byte has no room for the map's -9999. */
#define CLASS_NODATA 255

/* What both rasters record of where they come from (the map's metadata, docs/predict.md). */
typedef struct provenance {
    char created[32], step[32], params[32], tiff_ts[32];
    char input[4200], checkpoint[4200]; /* absolute: they mean something beside the map */
} provenance;

static void provenance_of(provenance *p, const wc_model *m, const wc_raster *r) {
    wc_path_absolute(r->path, p->input, sizeof p->input);
    wc_path_absolute(m->path, p->checkpoint, sizeof p->checkpoint);
    wc_utc_timestamp(p->created, sizeof p->created);
    snprintf(p->step, sizeof p->step, "%ld", m->step);
    snprintf(p->params, sizeof p->params, "fnv1a64:%016llx",
             (unsigned long long)wc_fnv1a64(m->net->params, m->net->nparams * sizeof(float)));
    /* TIFF's own timestamp format */
    snprintf(p->tiff_ts, sizeof p->tiff_ts, "%.4s:%.2s:%.2s %.8s", p->created, p->created + 5,
             p->created + 8, p->created + 11);
}

/* A working file for target, georeferenced as the input, with the map's provenance: the
 * probability map (1 band Float32) or the class raster (1 band Byte). NULL after a message. */
static wc_rwriter *create_file(const char *target, const wc_rwriter_opts *o, const wc_raster *r,
                               const wc_model *m, const provenance *p, const char *window_layout) {
    wc_rwriter *w = wc_rwriter_create(target, o);
    if (!w) return NULL;
    const char *const md[][2] = {
        {"wildcpu_version", WC_VERSION},
        {"created_utc", p->created},
        {"checkpoint", p->checkpoint},
        {"checkpoint_step", p->step},
        {"checkpoint_params", p->params},
        {"model_arch", m->net->arch},
        {"training_data_fingerprint", m->fingerprint},
        {"input", p->input},
        {"window_layout", window_layout},
        {"TIFFTAG_SOFTWARE", "wildcpu " WC_VERSION},
        {"TIFFTAG_DATETIME", p->tiff_ts},
    };
    int rc = WC_OK;
    for (size_t i = 0; i < sizeof md / sizeof md[0] && rc == WC_OK; i++)
        rc = wc_rwriter_set_metadata(w, 0, md[i][0], md[i][1]);
    /* the file's directory and tile index now, before mapping starts (see wc_rwriter_flush) */
    if (rc == WC_OK) rc = wc_rwriter_flush(w);
    if (rc == WC_OK) return w;
    wc_rwriter_abort(w);
    return NULL;
}

static int not_stopped_arg(void *arg) {
    (void)arg;
    return !wc_stop_requested();
}

/* The writer's options for one of the rasters on r's grid: one band of type, the working file
 * sparse, published as a GTiff or (--cog) COG copy. */
static wc_rwriter_opts raster_opts(const wc_predict_config *cfg, const wc_raster *r, wc_dtype type,
                                   const wc_rwriter_band *band, const char *const *work,
                                   const char *const *plain, const char *const *cog) {
    return (wc_rwriter_opts){.options = work,
                             .width = r->width,
                             .height = r->height,
                             .nbands = 1,
                             .type = type,
                             .gt = r->has_gt ? r->gt : NULL,
                             .wkt = r->wkt,
                             .gcps = r->gcp,
                             .ngcps = r->has_gt ? 0 : r->gcps,
                             .gcp_wkt = r->gcp_wkt,
                             .bands = band,
                             .copy_driver = cfg->cog ? "COG" : "GTiff",
                             .copy_options = cfg->cog ? cog : plain};
}

static void drop_described(void *arg);

/* The map's working file; `map` is what its commit clears the way for (drop_described). */
static wc_rwriter *create_map(const wc_predict_config *cfg, const wc_raster *r, const wc_model *m,
                              const provenance *p, const char *window_layout, wc_riskmap *map) {
    /* the unit as the synthetic oracle's: QGIS's identify tool shows it beside the value */
    const wc_rwriter_band band = {
        .name = "fire_risk", .unit = "probability", .has_nodata = 1, .nodata = WC_PREDICT_NODATA};
    wc_rwriter_opts o =
        raster_opts(cfg, r, WC_DT_FLOAT32, &band, WORK_OPTIONS, MAP_OPTIONS, MAP_COG);
    o.keep_going = not_stopped_arg;
    o.before_publish = drop_described, o.arg = map;
    char progress[4200];
    snprintf(progress, sizeof progress, "predict: the map %s", cfg->out);
    o.progress = progress;
    wc_rwriter *w = create_file(cfg->out, &o, r, m, p, window_layout);
    if (w && wc_rwriter_set_metadata(w, 1, "meaning", "burn probability in [0,1]") != WC_OK) {
        wc_rwriter_abort(w);
        return NULL;
    }
    return w;
}

/* The class raster's working file. Its commit comes after the map's and asks no stop: once the
 * map is in place, the classes that belong to it follow. Colours and names are set here, so
 * the file describes itself to any GDAL client: a palette (the ramp's every other stop, low
 * pale yellow to extreme dark red; nodata transparent) and category names. */
static wc_rwriter *create_classes(const wc_predict_config *cfg, const char *path,
                                  const wc_raster *r, const wc_model *m, const provenance *p,
                                  const char *window_layout) {
    const wc_rwriter_band band = {
        .name = "fire_risk_class", .has_nodata = 1, .nodata = CLASS_NODATA};
    wc_rwriter_opts o =
        raster_opts(cfg, r, WC_DT_BYTE, &band, CLASS_WORK_OPTIONS, CLASS_OPTIONS, CLASS_COG);
    char progress[4200];
    snprintf(progress, sizeof progress, "predict: the class raster %s", path);
    o.progress = progress;
    wc_rwriter *w = create_file(path, &o, r, m, p, window_layout);
    if (!w) return NULL;
    unsigned char colors[256][4] = {{0}}; /* values beyond the classes: transparent */
    for (int c = 0; c < WC_PREDICT_NCLASSES; c++) {
        wc_style_class_rgb(c, WC_PREDICT_NCLASSES, colors[c]);
        colors[c][3] = 255;
    }
    const char *map_name = strrchr(cfg->out, '/');
    const char *names[WC_PREDICT_NCLASSES + 1] = {NULL}; /* GDAL's lists end with NULL */
    memcpy(names, WC_PREDICT_CLASS_NAMES, sizeof WC_PREDICT_CLASS_NAMES);
    if (wc_rwriter_set_colors(w, 1, (const unsigned char(*)[4])colors, 256) == WC_OK &&
        wc_rwriter_set_categories(w, 1, names) == WC_OK &&
        wc_rwriter_set_metadata(w, 0, "probability_map", map_name ? map_name + 1 : cfg->out) ==
            WC_OK)
        return w;
    wc_rwriter_abort(w);
    return NULL;
}

/* ---- classes ------------------------------------------------------------------------------- */

/* Probabilities are binned by the top bits of their IEEE float representation (the order of
 * non-negative floats is the order of their bits): 2^11 bins per power of two, so a break is
 * resolved to 0.05% of its value whether risks are around 0.9 or 0.001. The counts are
 * integers, exact on any rank count. */
#define CLASS_SHIFT 12
#define CLASS_BINS  ((0x3F800000u >> CLASS_SHIFT) + 1) /* up to 1.0f */

/* p: a checked probability in [0, 1]; anything else (a NaN's bits above all) would index far
 * beyond the histogram. */
static uint32_t prob_bin(float p) {
    WC_ASSERT(p >= 0.0f && p <= 1.0f);
    if (p == 0.0f) p = 0.0f; /* -0 has the sign bit set */
    uint32_t u;
    memcpy(&u, &p, sizeof u);
    WC_ASSERT((u >> CLASS_SHIFT) < CLASS_BINS);
    return u >> CLASS_SHIFT;
}

/* breaks[k]: the largest float of the bin holding the quantile's value, so "p > breaks[k]" is
 * exactly "p's bin lies above it": at least a share q of the valid pixels is at or below. A map
 * of one constant value is then all "low" rather than all "extreme". */
static void class_breaks(const int64_t *hist, int64_t n, float breaks[], int64_t counts[]) {
    for (int k = 0; k < WC_PREDICT_NCLASSES - 1; k++) {
        int64_t need = (int64_t)ceil(WC_PREDICT_CLASS_QUANTILES[k] * (double)n), cum = 0;
        if (need < 1) need = 1;
        uint32_t b = 0;
        for (; b < CLASS_BINS; b++)
            if ((cum += hist[b]) >= need) break;
        uint32_t bits = (WC_MIN(b, CLASS_BINS - 1) << CLASS_SHIFT) | ((1u << CLASS_SHIFT) - 1);
        memcpy(&breaks[k], &bits, sizeof bits);
        breaks[k] = fminf(breaks[k], 1.0f); /* the top bin holds 1 alone: no break above it */
    }
    memset(counts, 0, sizeof(int64_t) * WC_PREDICT_NCLASSES);
    for (uint32_t b = 0; b < CLASS_BINS; b++) {
        float lo;
        uint32_t bits = b << CLASS_SHIFT;
        memcpy(&lo, &bits, sizeof lo);
        int c = 0;
        while (c < WC_PREDICT_NCLASSES - 1 && lo > breaks[c]) c++;
        counts[c] += hist[b];
    }
}

static int class_of(float p, const float breaks[]) {
    int c = 0;
    while (c < WC_PREDICT_NCLASSES - 1 && p > breaks[c]) c++;
    return c;
}

/* Second pass over the finished probability band (H rows of W, read back from the map's working
 * file): the class raster, strip by strip. rows: WC_PREDICT_STRIP rows of floats; bytes: as many
 * of Byte. Returns an exit status: a stop signal on this rank (only rank 0 writes) ends it with
 * WC_EXIT_STOPPED. */
static int write_classes(wc_rwriter *map, wc_rwriter *cw, int64_t W, int64_t H, const int64_t *hist,
                         int64_t nvalid, float *rows, unsigned char *bytes) {
    float breaks[WC_PREDICT_NCLASSES - 1];
    int64_t counts[WC_PREDICT_NCLASSES];
    class_breaks(hist, nvalid, breaks, counts);
    /* at most 5 numbers of at most 16 characters each: the buffers cannot overflow */
    char q[256] = "", br[256] = "", fr[256] = "";
    size_t nq = 0, nb = 0, nf = 0;
    for (int k = 0; k < WC_PREDICT_NCLASSES - 1; k++) {
        nq += (size_t)snprintf(q + nq, sizeof q - nq, "%s%g", k ? "," : "",
                               WC_PREDICT_CLASS_QUANTILES[k]);
        nb += (size_t)snprintf(br + nb, sizeof br - nb, "%s%.9g", k ? "," : "", (double)breaks[k]);
    }
    for (int c = 0; c < WC_PREDICT_NCLASSES; c++)
        nf += (size_t)snprintf(fr + nf, sizeof fr - nf, "%s%.6f", c ? "," : "",
                               nvalid ? (double)counts[c] / (double)nvalid : 0.0);
    /* the category names live in the sidecar (GeoTIFF has no field for them): the metadata
     * inside the TIFF says the same for readers without it */
    const char *const md[][2] = {
        {"class_names", "low,moderate,high,very high,extreme"},
        {"class_values", "0,1,2,3,4"},
        {"class_nodata", STR(CLASS_NODATA)},
        {"class_rule", "class = number of breaks the probability exceeds (p > break)"},
        {"class_quantiles", q},
        {"class_breaks", nvalid ? br : "none (no valid pixel)"},
        {"class_fractions", fr},
    };
    for (size_t i = 0; i < sizeof md / sizeof md[0]; i++)
        if (wc_rwriter_set_metadata(cw, 1, md[i][0], md[i][1]) != WC_OK) return WC_EXIT_RUNTIME;
    wc_info("predict: classes at quantiles %s of %lld valid pixels: breaks %s; shares %s", q,
            (long long)nvalid, nvalid ? br : "none", fr);
    wc_progress progress;
    wc_progress_start(&progress);
    for (int64_t y0 = 0; y0 < H; y0 += WC_PREDICT_STRIP) {
        if (wc_stop_requested()) return WC_EXIT_STOPPED;
        if (wc_progress_due(&progress)) {
            const double done = (double)y0 / (double)H;
            wc_info("predict: classes of rows 0-%" PRId64 " of %" PRId64 " (%.0f%%): %.1f s, "
                    "about %.0f s left",
                    y0 - 1, H, 100 * done, wc_progress_elapsed(&progress),
                    wc_progress_left(&progress, done));
        }
        int64_t n = WC_MIN(WC_PREDICT_STRIP, H - y0);
        if (wc_rwriter_read(map, 1, y0, n, rows, 0) != WC_OK) return WC_EXIT_RUNTIME;
        for (size_t i = 0; i < (size_t)n * (size_t)W; i++)
            bytes[i] = rows[i] == (float)WC_PREDICT_NODATA
                           ? CLASS_NODATA
                           : (unsigned char)class_of(rows[i], breaks);
        if (wc_rwriter_write(cw, 1, y0, n, bytes, 0) != WC_OK) return WC_EXIT_RUNTIME;
    }
    return WC_EXIT_OK;
}

/* ---- the files that come with the map -------------------------------------------------------- */

struct wc_riskmap {
    const wc_predict_config *cfg;
    const wc_raster *r; /* the caller's, until finish */
    const wc_model *m;
    provenance prov;
    wc_rwriter *w;  /* the map */
    wc_rwriter *cw; /* --classes: the class raster */
    wc_riskmap_paths paths;
    int64_t W, H;
    int64_t *hist;           /* --classes: (CLASS_BINS) */
    int64_t npixels, nvalid; /* pixels written, and those of them that are not nodata */
    int dropped;             /* the earlier map's companions removed as it was replaced */
};
enum { DROPPED_CLASSES = 1, DROPPED_PICTURE = 2, DROPPED_ITEM = 4 };

void wc_riskmap_paths_of(const char *out, wc_riskmap_paths *p) {
    p->classes = wc_sibling_path(out, "_classes.tif");
    p->style = wc_sibling_path(out, ".qml");
    p->classes_style = wc_sibling_path(out, "_classes.qml");
    p->stac = wc_sibling_path(out, ".json");
    p->map_aux = wc_strdup(CPLSPrintf("%s.aux.xml", out));
    p->classes_aux = wc_strdup(CPLSPrintf("%s.aux.xml", p->classes));
}

void wc_riskmap_paths_free(wc_riskmap_paths *p) {
    free(p->classes), free(p->style), free(p->classes_style), free(p->stac), free(p->map_aux);
    free(p->classes_aux);
    memset(p, 0, sizeof *p);
}

void wc_riskmap_outputs(const wc_predict_config *cfg, const wc_riskmap_paths *p,
                        wc_output out[WC_RISKMAP_OUTPUTS]) {
    out[0] = (wc_output){"risk map", cfg->out, 0, WC_KIND_TIFF};
    out[1] = (wc_output){"quick-look picture", cfg->png, 0, WC_KIND_PNG};
    out[2] = (wc_output){"class raster (named after the map)", cfg->classes ? p->classes : NULL, 0,
                         WC_KIND_TIFF};
    out[3] = (wc_output){"QGIS style (named after the map)", cfg->no_style ? NULL : p->style, 0,
                         WC_KIND_XML};
    out[4] = (wc_output){"STAC item (named after the map)", p->stac, 0, WC_KIND_JSON};
    out[5] = (wc_output){"map's GDAL sidecar", p->map_aux, 1, WC_KIND_XML};
    out[6] = (wc_output){"class raster's GDAL sidecar", cfg->classes ? p->classes_aux : NULL, 1,
                         WC_KIND_XML};
    out[7] = (wc_output){"class raster's QGIS style (named after the map)",
                         cfg->classes && !cfg->no_style ? p->classes_style : NULL, 0, WC_KIND_XML};
}

/* Whether path is a class raster wildcpu wrote (its band carries the class rule). */
static int classes_are_ours(const char *path) {
    struct stat st; /* a pipe of that name must not be opened: GDAL would wait on it */
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    const int ours = ds && GDALGetRasterCount(ds) == 1 &&
                     GDALGetMetadataItem(ds, "wildcpu_version", NULL) &&
                     GDALGetMetadataItem(GDALGetRasterBand(ds, 1), "class_rule", NULL);
    if (ds) GDALClose(ds);
    CPLPopErrorHandler();
    return ours;
}

/* Whether a file is at path (a dangling symlink too: the rename would replace it). */
static int exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

/* Whether the style may be written: no file there, or one wildcpu wrote. Someone's own style
 * of this map (made in QGIS's layer properties, saved as its default) is theirs to keep. */
static int style_writable(const char *path) {
    return !exists(path) || wc_style_is_ours(path);
}

/* The text of path when it is a STAC item wildcpu wrote (its properties carry
 * wildcpu:version), else NULL. Read within a bound and without waiting on a pipe: it is
 * someone's file until shown ours. Caller frees. */
static char *our_item(const char *path) {
    char why[256];
    char *text = wc_read_file_limited(path, (size_t)16 << 20, why, sizeof why);
    if (text && (!strstr(text, "\"stac_version\"") || !strstr(text, "\"wildcpu:version\""))) {
        free(text);
        return NULL;
    }
    return text;
}

static int item_is_ours(const char *path) {
    char *text = our_item(path);
    free(text);
    return text != NULL;
}

/* Whether path is a map wildcpu wrote (its metadata carries wildcpu_version). */
static int map_is_ours(const char *path) {
    struct stat st; /* a pipe of that name must not be opened: GDAL would wait on it */
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    const int ours = ds && GDALGetMetadataItem(ds, "wildcpu_version", NULL);
    if (ds) GDALClose(ds);
    CPLPopErrorHandler();
    return ours;
}

/* ---- other maps' files ----------------------------------------------------------------------
 *
 * A map must not replace another wildcpu map's files while that map is there: its STAC item
 * (beside it, named after it) lists them, with checksums. risk.tif, risk.tiff and risk.TIF share
 * the stem risk and so the files named after it (wc_sibling_path); a map written as m_classes.tif
 * would take m.tif's class raster, a map n.tif drawn with --classes the style n_classes.qml of a
 * map n_classes.tif, and --png any map's picture. The items asked are those in the directories of
 * the files written (a map's item lies beside it) and those named like the maps the files would
 * belong to (found even where a directory cannot be listed). */

/* The path an item's href names: the href itself when absolute, else beside the item (hrefs
 * of wc_stac_write). Caller frees. */
static char *href_path(const char *item, const char *href) {
    if (href[0] == '/') return wc_strdup(href);
    char *dir = wc_dir_of(item);
    const size_t n = strlen(dir) + strlen(href) + 2;
    char *path = WC_ALLOC(n);
    snprintf(path, n, "%s/%s", dir, href);
    free(dir);
    return path;
}

/* The map a STAC item (wildcpu's, its assets listed) describes, its risk_map asset, when that
 * map is another file than out, still there and wildcpu's; NULL otherwise (no such asset, the
 * item's map gone or replaced: the files it lists are stale, and go as an earlier map's do).
 * Caller frees. */
static char *live_map(const char *out, const char *item, const wc_stac_listed *assets, int n) {
    for (int i = 0; i < n; i++) {
        if (strcmp(assets[i].key, "risk_map") != 0 || !*assets[i].href) continue;
        char *map = href_path(item, assets[i].href);
        if ((out && wc_same_file(map, out)) || !map_is_ours(map)) {
            free(map);
            return NULL;
        }
        return map;
    }
    return NULL;
}

/* Whether the file at path is still the one an item lists: there, of the size and SHA-256 the
 * item recorded (one written over since, a --png path each new map draws, is nobody's now; one
 * that is gone is lost already). The checksum is read only when the size agrees. */
static int still_as_listed(const char *path, const wc_stac_listed *a) {
    struct stat st;
    if (lstat(path, &st) != 0) return 0;
    if (a->size >= 0 && (int64_t)st.st_size != a->size) return 0;
    char hex[65];
    int64_t size;
    return !*a->sha256 ||
           (wc_sha256_file(path, hex, &size) == WC_OK && strcmp(hex, a->sha256) == 0);
}

/* A file a command would write: its path, what it is to the map, the option that names it. */
typedef struct written_file {
    const char *path, *what, *option;
} written_file;

/* The files a map (or evaluate's metrics alone) at cfg writes, as its options ask. Returns how
 * many (at most 9). The earlier map's files its options do not ask for are removed as stale
 * unless another map's item lists them (remove_stale). */
static int written_files(const wc_predict_config *cfg, const wc_riskmap_paths *p,
                         written_file f[9]) {
    /* the option naming the map, and so the files named after it */
    const char *named = cfg->run_map ? NULL : cfg->evaluate ? "--map" : "--out";
    int n = 0;
    if (cfg->out) {
        f[n++] = (written_file){cfg->out, "the map", named};
        f[n++] = (written_file){p->map_aux, "its GDAL sidecar", named};
        f[n++] = (written_file){p->stac, "its STAC item", named};
        if (!cfg->no_style) f[n++] = (written_file){p->style, "its QGIS style", named};
        if (cfg->classes) {
            f[n++] = (written_file){p->classes, "its class raster", named};
            f[n++] = (written_file){p->classes_aux, "its class raster's GDAL sidecar", named};
            if (!cfg->no_style)
                f[n++] = (written_file){p->classes_style, "its class raster's QGIS style", named};
        }
        if (cfg->png)
            f[n++] =
                (written_file){cfg->png, "its quick-look picture", cfg->run_map ? NULL : "--png"};
    }
    if (cfg->evaluate && cfg->metrics_out)
        f[n++] = (written_file){cfg->metrics_out, "the metrics", "--out"};
    return n;
}

/* What an asset of an item is, in words. */
static const char *asset_words(const char *key) {
    static const char *const words[][2] = {
        {"risk_map", "map"},
        {"risk_map_sidecar", "GDAL sidecar"},
        {"risk_classes", "class raster"},
        {"risk_classes_sidecar", "class raster's GDAL sidecar"},
        {"quicklook", "quick-look picture"},
        {"qgis_style", "QGIS style"},
        {"qgis_style_classes", "class raster's QGIS style"},
    };
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (strcmp(key, words[i][0]) == 0) return words[i][1];
    return key;
}

/* A file of another map still there, among those a command would write. */
typedef struct claim {
    int file;           /* its index among the files */
    char *owner, *item; /* the map it is a file of, and that map's STAC item */
    char as[64];        /* what it is to that map */
} claim;

/* Whether the regular file at path begins as a STAC item wc_stac_write wrote: a file of a
 * directory's listing is read whole only then, so that a directory of GeoJSON perimeters beside
 * the maps costs a read of 64 bytes each. */
static int begins_as_item(const char *path) {
    char head[65] = "";
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* made a pipe meanwhile */
    if (fd < 0) return 0;
    const ssize_t n = read(fd, head, sizeof head - 1);
    close(fd);
    if (n > 0) head[n] = '\0';
    return strstr(head, "\"stac_version\"") != NULL;
}

/* Whether item is the STAC item of another map still there, and it or a file it lists as it is
 * now (still_as_listed) is one of f: into *c. listed: found in a directory's listing (read
 * whole only when it begins as an item); else by its name (read whole: an item rewritten by
 * another tool with its keys in another order is still the map's). */
static int item_claims(const wc_predict_config *cfg, const char *item, int listed,
                       const written_file *f, int nf, claim *c) {
    struct stat st; /* a pipe of that name must not be opened: reading it would wait */
    if (stat(item, &st) != 0 || !S_ISREG(st.st_mode) || (listed && !begins_as_item(item))) return 0;
    char *text = our_item(item);
    if (!text) return 0;
    wc_stac_listed *assets;
    const int nassets = wc_stac_assets(text, &assets);
    int found = 0, stale = 0;
    for (int i = -1; i < nassets && !found && !stale; i++) { /* -1: the item itself */
        char *path = i < 0 ? wc_strdup(item) : href_path(item, assets[i].href);
        int k = 0;
        while (k < nf && !(f[k].path && wc_same_file(path, f[k].path))) k++;
        if (k < nf && (i < 0 || still_as_listed(path, &assets[i]))) {
            /* the map last: opening it is the dear part */
            c->owner = live_map(cfg->out, item, assets, nassets);
            found = c->owner != NULL;
            stale = !found; /* none of its files is another map's */
            c->file = k;
            snprintf(c->as, sizeof c->as, "%s", i < 0 ? "STAC item" : asset_words(assets[i].key));
        }
        free(path);
    }
    if (found) c->item = wc_strdup(item);
    wc_stac_listed_free(assets, nassets);
    free(text);
    return found;
}

/* The items of the maps a file path would belong to by its name: NAME.json for NAME.EXT, and
 * for NAME_classes.EXT also that of the map NAME.EXT, whose class raster it is named as. Adds
 * them to items[*n] (at most 2). */
static void items_by_name(const char *path, char *items[], int *n) {
    items[(*n)++] = wc_sibling_path(path, ".json");
    char *stem = wc_sibling_path(path, "");
    const size_t len = strlen(stem), suffix = strlen("_classes");
    if (len > suffix && strcmp(stem + len - suffix, "_classes") == 0) {
        stem[len - suffix] = '\0';
        items[(*n)++] = wc_strdup(CPLSPrintf("%s.json", stem));
    }
    free(stem);
}

/* Whether one of the files f is another map's (one still there): the first found into *c, which
 * claim_free frees. */
static int claimed(const wc_predict_config *cfg, const written_file *f, int nf, claim *c) {
    memset(c, 0, sizeof *c);
    int found = 0;
    for (int k = 0; k < nf && !found; k++) {
        if (!f[k].path) continue;
        char *items[2];
        int n = 0;
        items_by_name(f[k].path, items, &n);
        for (int i = 0; i < n; i++) {
            found = found || item_claims(cfg, items[i], 0, f, nf, c);
            free(items[i]);
        }
    }
    /* then every item in the files' directories (--png may name any map's picture), each
     * directory once */
    char *dirs[9];
    int ndirs = 0;
    for (int k = 0; k < nf && !found; k++) {
        if (!f[k].path) continue;
        char *dir = wc_dir_of(f[k].path);
        int seen = 0;
        for (int j = 0; j < ndirs && !seen; j++) seen = wc_same_file(dirs[j], dir);
        if (seen) {
            free(dir);
            continue;
        }
        dirs[ndirs++] = dir;
        DIR *d = opendir(dir); /* one that cannot be listed was asked by name above */
        for (struct dirent *e; d && !found && (e = readdir(d));) {
            const size_t len = strlen(e->d_name);
            if (len < 6 || strcmp(e->d_name + len - 5, ".json") != 0) continue;
            char *item = href_path(f[k].path, e->d_name);
            found = item_claims(cfg, item, 1, f, nf, c);
            free(item);
        }
        if (d) closedir(d);
    }
    for (int j = 0; j < ndirs; j++) free(dirs[j]);
    return found;
}

static void claim_free(claim *c) {
    free(c->owner), free(c->item);
    memset(c, 0, sizeof *c);
}

int wc_riskmap_check_companions(const wc_predict_config *cfg, const wc_riskmap_paths *p) {
    written_file f[9];
    claim c;
    if (claimed(cfg, f, written_files(cfg, p, f), &c)) {
        const written_file *w = &f[c.file];
        const char *what = cfg->out ? "map" : "metrics", *name = cfg->out ? cfg->out : w->path;
        char writing[4400] = "", advice[64] = "pass --no-predict"; /* a training run's map */
        if (w->path != name)
            snprintf(writing, sizeof writing, ", writing %s %s,", w->what, w->path);
        if (w->option) snprintf(advice, sizeof advice, "choose another %s", w->option);
        if (strcmp(c.as, "STAC item") != 0)
            wc_error("the %s %s%s would replace the %s of %s, another map, which is still there "
                     "(its STAC item %s lists it): %s, or move %s and the files named after it "
                     "away",
                     what, name, writing, c.as, c.owner, c.item, advice, c.owner);
        else /* risk.tiff beside risk.tif: one stem, and so the files named after it */
            wc_error("%s is the STAC item of %s, another map, which is still there: the %s %s%s "
                     "would replace it%s; %s, or move %s and the files named after it away",
                     c.item, c.owner, what, name, writing,
                     w->path == p->stac ? " (the two maps share the stem, and so the files named "
                                          "after it)"
                                        : "",
                     advice, c.owner);
        claim_free(&c);
        return WC_ERR;
    }
    if (!cfg->out) return WC_OK;
    const char *const advice = "move it, or choose another --out";
    if (exists(p->stac) && !item_is_ours(p->stac)) {
        wc_error("%s exists and is not a STAC item wildcpu wrote: the map's item, named after "
                 "%s, would replace it; %s",
                 p->stac, cfg->out, advice);
        return WC_ERR;
    }
    if (cfg->classes && exists(p->classes) && !classes_are_ours(p->classes)) {
        wc_error("%s exists and is not a class raster wildcpu wrote: --classes, named after %s, "
                 "would replace it; %s",
                 p->classes, cfg->out, advice);
        return WC_ERR;
    }
    return WC_OK;
}

/* GDAL's sidecar of path (path.aux.xml). Caller frees. */
static char *sidecar_of(const char *path) {
    const size_t n = strlen(path) + 9;
    char *aux = WC_ALLOC(n);
    snprintf(aux, n, "%s.aux.xml", path);
    return aux;
}

/* A file of ours beside the map that this map does not have (classes from an earlier run with
 * --classes, our style before a run with --no-style) would describe another map or contradict
 * the options: it goes, and with `and_sidecar` GDAL's sidecar of it (a class raster's category
 * names; a style has none of ours). Someone else's file of that name stays. */
static void remove_stale(const wc_riskmap *map, const char *path, const char *what,
                         int and_sidecar) {
    claim c; /* named like this map's, but another map's: kept, as that map's item says */
    if (claimed(map->cfg, &(written_file){path, what, NULL}, 1, &c)) {
        wc_info("predict: kept %s, named like this map's %s: it is the %s of %s, another map", path,
                what, c.as, c.owner);
        claim_free(&c);
        return;
    }
    if (unlink(path) == 0)
        wc_info("predict: removed %s, the %s of an earlier map", path, what);
    else
        wc_warn("%s, the %s of an earlier map, could not be removed: %s", path, what,
                strerror(errno));
    if (!and_sidecar) return;
    char *aux = sidecar_of(path);
    unlink(aux);
    free(aux);
}

/* The STAC item describing the files as they are on disk. */
static int write_item(const wc_riskmap *map) {
    const wc_predict_config *cfg = map->cfg;
    const wc_model *m = map->m;
    const wc_raster *r = map->r;
    wc_stac_asset assets[7];
    int n = 0;
    /* GDAL's sidecars hold what GeoTIFF cannot (the class raster's category names; a CRS the
     * GeoTIFF keys cannot express, rwriter.c): an asset too, so that a copy of the item's
     * assets is placed and named as the files here are */
    const char *map_aux = map->paths.map_aux, *classes_aux = map->paths.classes_aux;
    assets[n++] =
        (wc_stac_asset){"risk_map", cfg->out,
                        cfg->cog ? "image/tiff; application=geotiff; profile=cloud-optimized"
                                 : "image/tiff; application=geotiff",
                        "burn probability (Float32, 0..1, nodata -9999)", "data"};
    if (access(map_aux, F_OK) == 0)
        assets[n++] = (wc_stac_asset){"risk_map_sidecar", map_aux, "application/xml",
                                      "GDAL's sidecar of the risk map (what GeoTIFF cannot hold)",
                                      "metadata"};
    if (cfg->classes)
        assets[n++] = (wc_stac_asset){
            "risk_classes", map->paths.classes,
            cfg->cog ? "image/tiff; application=geotiff; profile=cloud-optimized"
                     : "image/tiff; application=geotiff",
            "risk classes (Byte: 0 low, 1 moderate, 2 high, 3 very high, 4 extreme; nodata 255)",
            "data"};
    if (cfg->classes && access(classes_aux, F_OK) == 0)
        assets[n++] = (wc_stac_asset){"risk_classes_sidecar", classes_aux, "application/xml",
                                      "GDAL's sidecar of the risk classes (their category names)",
                                      "metadata"};
    if (cfg->png)
        assets[n++] = (wc_stac_asset){"quicklook", cfg->png, "image/png",
                                      "quick-look picture with a legend", "overview,visual"};
    if (!cfg->no_style && style_writable(map->paths.style)) /* written: someone's is kept */
        assets[n++] = (wc_stac_asset){"qgis_style", map->paths.style, "application/xml",
                                      "QGIS layer style (QML) of the risk map", "style,metadata"};
    if (cfg->classes && !cfg->no_style && style_writable(map->paths.classes_style))
        assets[n++] =
            (wc_stac_asset){"qgis_style_classes", map->paths.classes_style, "application/xml",
                            "QGIS layer style (QML) of the risk classes", "style,metadata"};
    const char *slash = strrchr(cfg->out, '/');
    char *id = wc_sibling_path(slash ? slash + 1 : cfg->out, "");
    const char *const props[][2] = {
        {"created", map->prov.created},
        {"wildcpu:version", WC_VERSION},
        {"wildcpu:checkpoint", map->prov.checkpoint},
        {"wildcpu:checkpoint_params", map->prov.params},
        {"wildcpu:model_arch", m->net->arch},
        {"wildcpu:data_fingerprint", m->fingerprint},
        {"wildcpu:input", map->prov.input},
    };
    const wc_stac_item item = {.id = id,
                               .datetime = map->prov.created,
                               .width = r->width,
                               .height = r->height,
                               .gt = r->has_gt ? r->gt : NULL,
                               .wkt = r->wkt,
                               .assets = assets,
                               .nassets = n,
                               .props = props,
                               .nprops = (int)(sizeof props / sizeof props[0]),
                               .int_key = "wildcpu:step",
                               .int_value = m->step,
                               .metrics_json = m->metrics,
                               .metrics_prefix = "wildcpu:"};
    const int rc = wc_stac_write(map->paths.stac, &item);
    free(id);
    return rc;
}

/* The earlier map's companions that this map's replace (its class raster, picture and STAC
 * item: all ours, checked before the map was made) describe a map about to be gone, the item
 * with checksums that will no longer match: they go just before the map is replaced, so that a
 * process killed before the new ones are written (a node lost, Slurm's SIGKILL) leaves a map
 * without them rather than beside another's. Called by the map's commit (before_publish). */
static void drop_described(void *arg) {
    wc_riskmap *map = arg;
    const wc_predict_config *cfg = map->cfg;
    if ((cfg->classes || classes_are_ours(map->paths.classes)) && unlink(map->paths.classes) == 0) {
        map->dropped |= DROPPED_CLASSES;
        char *aux = sidecar_of(map->paths.classes); /* its category names */
        unlink(aux);
        free(aux);
    }
    if (cfg->png && unlink(cfg->png) == 0) map->dropped |= DROPPED_PICTURE;
    if (unlink(map->paths.stac) == 0) map->dropped |= DROPPED_ITEM;
}

/* A companion failed after the map was replaced: the earlier map's were removed as it was
 * (drop_described); this message names those not made again since. Returns WC_EXIT_RUNTIME. */
static int companion_failed(const wc_riskmap *map, const char *what, const char *path) {
    const wc_predict_config *cfg = map->cfg;
    const char *const dropped[] = {map->dropped & DROPPED_CLASSES ? map->paths.classes : NULL,
                                   map->dropped & DROPPED_PICTURE ? cfg->png : NULL,
                                   map->dropped & DROPPED_ITEM ? map->paths.stac : NULL};
    char gone[12600] = "";
    for (size_t i = 0; i < sizeof dropped / sizeof dropped[0]; i++) {
        if (!dropped[i] || access(dropped[i], F_OK) == 0) continue;
        const size_t n = strlen(gone);
        snprintf(gone + n, sizeof gone - n, "%s%s", n ? ", " : "", dropped[i]);
    }
    wc_error("the risk map %s is complete, but its %s %s is not%s%s%s; %s to make them", cfg->out,
             what, path, *gone ? " (the earlier map's " : "", gone,
             *gone ? ", which described the map it replaced, removed)" : "", cfg->rerun);
    return WC_EXIT_RUNTIME;
}

/* The picture, drawn before the map is published, from its working file: the values the map's
 * copy holds, in bounded memory. Reading a map of billions of pixels takes minutes (a huge
 * mosaic, mostly nodata: the tiles the working file never stored are not read), which are said
 * and which a stop ends with nothing published, the earlier map and its picture as they were.
 * Returns an exit status; *picture is NULL after a failure, which the map outlives (said once it
 * is published, as a picture that cannot be written is). */
static int draw_picture(const wc_riskmap *map, wc_quicklook **picture) {
    const wc_predict_config *cfg = map->cfg;
    *picture = NULL;
    /* what GDAL holds is on disk: a tile still in its cache reads as never stored */
    if (wc_rwriter_flush(map->w) != WC_OK) return WC_EXIT_RUNTIME;
    char what[4200];
    snprintf(what, sizeof what, "predict: quick-look %s", cfg->png);
    const wc_quicklook_ask ask = {.keep_going = not_stopped_arg, .what = what};
    int stopped;
    *picture = wc_quicklook_draw(wc_rwriter_gdal(map->w), cfg->out, 1, cfg->png, cfg->png_max_side,
                                 &ask, &stopped);
    return stopped ? WC_EXIT_STOPPED : WC_EXIT_OK;
}

/* The map's style (classes 0) or the class raster's (1), unless --no-style or (the class
 * raster's) no --classes, when one of ours is removed as stale; a style there that is not ours
 * (the user's own, saved in QGIS as the layer's default) is kept. Returns an exit status. */
static int write_style(const wc_riskmap *map, int classes) {
    const wc_predict_config *cfg = map->cfg;
    const char *path = classes ? map->paths.classes_style : map->paths.style;
    const char *layer = classes ? map->paths.classes : cfg->out;
    const char *what = classes ? "class raster's QGIS style" : "QGIS style";
    if (cfg->no_style || (classes && !cfg->classes)) {
        char stale[64];
        snprintf(stale, sizeof stale, "%s%s", what, cfg->no_style ? " (--no-style)" : "");
        if (wc_style_is_ours(path)) remove_stale(map, path, stale, 0);
        return WC_EXIT_OK;
    }
    if (!style_writable(path)) {
        wc_warn("%s is not a style wildcpu wrote (your own?): left as it is, so QGIS draws %s "
                "with it; remove it for wildcpu's style, or pass --no-style to keep it quietly",
                path, layer);
        return WC_EXIT_OK;
    }
    const int rc =
        classes ? wc_style_write_classes_qml(path, WC_PREDICT_CLASS_NAMES, WC_PREDICT_NCLASSES)
                : wc_style_write_qml(path);
    if (rc != WC_OK) return companion_failed(map, what, path);
    wc_info("predict: %s %s", what, path);
    return WC_EXIT_OK;
}

/* After the map (and its classes) are in place: the picture (drawn before, or NULL when that
 * failed), the style, stale files, the item. Returns an exit status. */
static int write_companions(const wc_riskmap *map, wc_quicklook *picture) {
    const wc_predict_config *cfg = map->cfg;
    if (cfg->png) {
        wc_quicklook_info qi;
        if (!picture || wc_quicklook_publish(picture, &qi) != WC_OK)
            return companion_failed(map, "picture", cfg->png);
        char how[96] = "full resolution";
        if (qi.factor > 1) snprintf(how, sizeof how, "downsampled %dx", qi.factor);
        if (qi.map_height != qi.box_rows) /* pixels not square on the ground */
            snprintf(how + strlen(how), sizeof how - strlen(how),
                     ", rows scaled to the ground's shape");
        wc_info("predict: quick-look %s: %dx%d px (map %dx%d, %s, legend %d px)", cfg->png,
                qi.width, qi.height, qi.map_width, qi.map_height, how, qi.legend_height);
    }
    int status = write_style(map, 0);
    if (status == WC_EXIT_OK) status = write_style(map, 1);
    if (status != WC_EXIT_OK) return status;
    if (!cfg->classes && classes_are_ours(map->paths.classes))
        remove_stale(map, map->paths.classes, "class raster", 1);
    if (write_item(map) != WC_OK) return companion_failed(map, "STAC item", map->paths.stac);
    wc_info("predict: STAC item %s", map->paths.stac);
    return WC_EXIT_OK;
}

/* ---- the map ------------------------------------------------------------------------------- */

wc_riskmap *wc_riskmap_create(const wc_predict_config *cfg, const wc_raster *r, const wc_model *m,
                              const char *window_layout) {
    wc_riskmap *map = WC_CALLOC(1, sizeof *map);
    map->cfg = cfg, map->r = r, map->m = m;
    map->W = r->width, map->H = r->height;
    provenance_of(&map->prov, m, r);
    wc_riskmap_paths_of(cfg->out, &map->paths);
    map->w = create_map(cfg, r, m, &map->prov, window_layout, map);
    if (map->w && cfg->classes) {
        map->cw = create_classes(cfg, map->paths.classes, r, m, &map->prov, window_layout);
        map->hist = WC_CALLOC(CLASS_BINS, sizeof(int64_t));
    }
    if (!map->w || (cfg->classes && !map->cw)) {
        wc_riskmap_abort(map);
        return NULL;
    }
    return map;
}

int wc_riskmap_write(wc_riskmap *map, int64_t y0, int64_t n, const float *rows) {
    const size_t count = (size_t)n * (size_t)map->W;
    for (size_t i = 0; i < count; i++) {
        if (rows[i] == (float)WC_PREDICT_NODATA) continue;
        map->nvalid++;
        if (map->hist) map->hist[prob_bin(rows[i])]++;
    }
    map->npixels += (int64_t)count;
    return wc_rwriter_write(map->w, 1, y0, n, rows, 0);
}

void wc_riskmap_counts(const wc_riskmap *map, int64_t *npixels, int64_t *nvalid) {
    *npixels = map->npixels;
    *nvalid = map->nvalid;
}

void wc_riskmap_abort(wc_riskmap *map) {
    if (!map) return;
    wc_rwriter_abort(map->w);
    wc_rwriter_abort(map->cw);
    wc_riskmap_paths_free(&map->paths);
    free(map->hist);
    free(map);
}

/* Whether path has its GDAL sidecar, where GeoTIFF keeps category names. */
static int has_sidecar(const char *path) {
    char *aux = sidecar_of(path);
    const int has = access(aux, F_OK) == 0;
    free(aux);
    return has;
}

/* wc_rwriter_commit's status as an exit status. */
static int commit_status(int rc) {
    return rc == WC_OK ? WC_EXIT_OK : rc == WC_RWRITER_STOPPED ? WC_EXIT_STOPPED : WC_EXIT_RUNTIME;
}

void wc_riskmap_unwritten(const wc_predict_config *cfg, char *buf, size_t size) {
    int n = 0;
    if (cfg->out)
        n = snprintf(buf, size, "the map is not written (%s, if it exists, is untouched)",
                     cfg->out);
    if (cfg->metrics_out && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, "%s (%s, if it exists, is untouched)",
                 cfg->out ? ", nor are the metrics" : "no metrics are written", cfg->metrics_out);
    if (!cfg->out && !cfg->metrics_out) snprintf(buf, size, "nothing is written");
}

int wc_riskmap_finish(wc_riskmap *map, float *scratch, int *published) {
    const wc_predict_config *cfg = map->cfg;
    int status = WC_EXIT_OK;
    *published = 0;
    if (map->cw) {
        unsigned char *bytes = WC_ALLOC((size_t)WC_PREDICT_STRIP * (size_t)map->W);
        status =
            write_classes(map->w, map->cw, map->W, map->H, map->hist, map->nvalid, scratch, bytes);
        free(bytes);
    }
    wc_quicklook *picture = NULL;
    if (status == WC_EXIT_OK && cfg->png) status = draw_picture(map, &picture);
    if (status == WC_EXIT_OK) {
        const double t0 = wc_now();
        status = commit_status(wc_rwriter_commit(map->w));
        map->w = NULL; /* committed or removed: nothing to clean up */
        *published = status == WC_EXIT_OK;
        /* the rename failed after the earlier map's companions went (drop_described) */
        if (status != WC_EXIT_OK && map->dropped)
            wc_warn("the earlier map %s stays, without its %s%s%s (removed as it was about to "
                    "be replaced); %s to make them",
                    cfg->out, map->dropped & DROPPED_CLASSES ? "class raster, " : "",
                    map->dropped & DROPPED_PICTURE ? "picture, " : "",
                    map->dropped & DROPPED_ITEM ? "STAC item" : "companions", cfg->rerun);
        if (status == WC_EXIT_OK && map->cw) {
            /* (it asks no stop: a failure is a failure) */
            status = commit_status(wc_rwriter_commit(map->cw));
            map->cw = NULL;
            if (status != WC_EXIT_OK)
                status = companion_failed(map, "class raster", map->paths.classes);
            else
                wc_info("predict: class raster %s (Byte, colour table%s)", map->paths.classes,
                        has_sidecar(map->paths.classes) ? ", category names" : "");
        }
        if (status == WC_EXIT_OK && cfg->cog)
            wc_info("predict: Cloud-Optimized GeoTIFF%s with overviews written in %.1f s",
                    cfg->classes ? "s" : "", wc_now() - t0);
    }
    if (status == WC_EXIT_STOPPED) {
        char what[8800];
        wc_riskmap_unwritten(cfg, what, sizeof what);
        wc_info("%s: stopped by %s while finishing the map: %s; %s to %s",
                cfg->evaluate ? "evaluate" : "predict", strsignal(wc_stop_signal()), what,
                cfg->rerun, cfg->evaluate ? "score the model" : "draw it");
    }
    if (status == WC_EXIT_OK)
        status = write_companions(map, picture);
    else
        wc_quicklook_discard(picture);
    wc_riskmap_abort(map);
    return status;
}
