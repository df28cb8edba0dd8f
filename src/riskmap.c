/* riskmap.c: the risk map's file on the writing rank; see riskmap.h and docs/predict.md.
 *
 * The probabilities are counted as they are written: the share of nodata for the summary, and
 * (--classes) an exact integer histogram from which the class breaks follow once the whole map
 * is known; the class band is then a second pass over the written probability band. The file
 * itself goes through the raster writer: a sparse working GeoTIFF, copied when complete into
 * the map proper, verified and renamed over the target.
 *
 * Not here: computing the probabilities, the windows, MPI (predict.c); GDAL (rwriter.c). */
#include "wildcpu/riskmap.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/quicklook.h"
#include "wildcpu/rwriter.h"
#include "wildcpu/stop.h"
#include "wildcpu/util.h"

/* ---- the file ------------------------------------------------------------------------------ */

/* The map is written in two files (rwriter.h). The working GeoTIFF receives the rounds' rows and
 * the class band; it is sparse (SPARSE_OK: tiles entirely nodata are not stored, tiles never
 * written are not filled in at close), so abandoning it after a stop or an error costs nothing:
 * a dense GeoTIFF fills every missing tile when it is closed, gigabytes and minutes for a map of
 * millions of tiles. The map proper is then a complete copy of it (GDAL's CreateCopy to the
 * GTiff or COG driver, every tile present, as any reader expects), which a stop can also
 * interrupt. The copy re-encodes the map once: DEFLATE runs far faster than the network.
 *
 * The layout: tiles of one strip's height, so each strip completes a row of tiles;
 * band-sequential, so the class band, written after the whole probability band, leaves the
 * first band's tiles untouched. */
#define STR_(x) #x
#define STR(x)  STR_(x)
#define MAP_LAYOUT                                                                                 \
    "TILED=YES", "BLOCKXSIZE=256", "BLOCKYSIZE=" STR(WC_PREDICT_STRIP), "COMPRESS=DEFLATE",        \
        "PREDICTOR=3", "BIGTIFF=IF_SAFER", "INTERLEAVE=BAND"
static const char *const MAP_OPTIONS[] = {MAP_LAYOUT, NULL};
/* ZLEVEL 1: the working file is read once, by the copy */
static const char *const WORK_OPTIONS[] = {MAP_LAYOUT, "SPARSE_OK=TRUE", "ZLEVEL=1", NULL};

static int not_stopped(void *arg) {
    (void)arg;
    return !wc_stop_requested();
}

/* The working file, georeferenced as the input, with the map's provenance. NULL after a
 * message. */
static wc_rwriter *create_file(const wc_predict_config *cfg, const wc_raster *r, const wc_model *m,
                               const char *window_layout) {
    const int nbands = cfg->classes ? 2 : 1;
    /* probabilities average well (nodata skipped); class numbers must not be averaged, and the
     * COG driver takes one resampling for all bands; BLOCKSIZE 256: overviews down to one tile */
    const char *const cog[] = {"COMPRESS=DEFLATE",
                               "PREDICTOR=YES",
                               "BIGTIFF=IF_SAFER",
                               "BLOCKSIZE=256",
                               "OVERVIEWS=AUTO",
                               nbands == 2 ? "RESAMPLING=NEAREST" : "RESAMPLING=AVERAGE",
                               NULL};
    const wc_rwriter_band bands[2] = {
        {.name = "fire_risk", .has_nodata = 1, .nodata = WC_PREDICT_NODATA},
        {.name = "fire_risk_class", .has_nodata = 1, .nodata = WC_PREDICT_NODATA},
    };
    const wc_rwriter_opts o = {.options = WORK_OPTIONS,
                               .width = r->width,
                               .height = r->height,
                               .nbands = nbands,
                               .type = WC_DT_FLOAT32,
                               .gt = r->has_gt ? r->gt : NULL,
                               .wkt = r->wkt,
                               .bands = bands,
                               .copy_driver = cfg->cog ? "COG" : "GTiff",
                               .copy_options = cfg->cog ? cog : MAP_OPTIONS,
                               .keep_going = not_stopped};
    wc_rwriter *w = wc_rwriter_create(cfg->out, &o);
    if (!w) return NULL;
    char ts[32], step[32], params[32], tiff_ts[32];
    wc_utc_timestamp(ts, sizeof ts);
    snprintf(step, sizeof step, "%ld", m->step);
    snprintf(params, sizeof params, "fnv1a64:%016llx",
             (unsigned long long)wc_fnv1a64(m->net->params, m->net->nparams * sizeof(float)));
    /* TIFF's own timestamp format */
    snprintf(tiff_ts, sizeof tiff_ts, "%.4s:%.2s:%.2s %.8s", ts, ts + 5, ts + 8, ts + 11);
    const char *const md[][2] = {
        {"wildcpu_version", WC_VERSION},
        {"created_utc", ts},
        {"checkpoint", m->path},
        {"checkpoint_step", step},
        {"checkpoint_params", params},
        {"model_arch", m->net->arch},
        {"training_data_fingerprint", m->fingerprint},
        {"input", r->path},
        {"window_layout", window_layout},
        {"TIFFTAG_SOFTWARE", "wildcpu " WC_VERSION},
        {"TIFFTAG_DATETIME", tiff_ts},
    };
    int rc = WC_OK;
    for (size_t i = 0; i < sizeof md / sizeof md[0] && rc == WC_OK; i++)
        rc = wc_rwriter_set_metadata(w, 0, md[i][0], md[i][1]);
    if (rc == WC_OK) rc = wc_rwriter_set_metadata(w, 1, "meaning", "burn probability in [0,1]");
    if (rc == WC_OK) return w;
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

/* Second pass over the finished probability band (H rows of W): the class band, strip by
 * strip. Returns an exit status: a stop signal on this rank (only rank 0 writes) ends it with
 * WC_EXIT_STOPPED. */
static int write_classes(wc_rwriter *w, int64_t W, int64_t H, const int64_t *hist, int64_t nvalid,
                         float *rows) {
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
    /* GeoTIFF has no field for category names: GDAL keeps them in FILE.aux.xml; the metadata
     * below (inside the TIFF) says the same for readers without the sidecar */
    const char *const md[][2] = {
        {"class_names", "low,moderate,high,very high,extreme"},
        {"class_values", "0,1,2,3,4"},
        {"class_rule", "class = number of breaks the probability exceeds (p > break)"},
        {"class_quantiles", q},
        {"class_breaks", nvalid ? br : "none (no valid pixel)"},
        {"class_fractions", fr},
    };
    if (wc_rwriter_set_categories(w, 2, WC_PREDICT_CLASS_NAMES) != WC_OK) return WC_EXIT_RUNTIME;
    for (size_t i = 0; i < sizeof md / sizeof md[0]; i++)
        if (wc_rwriter_set_metadata(w, 2, md[i][0], md[i][1]) != WC_OK) return WC_EXIT_RUNTIME;
    wc_info("predict: classes at quantiles %s of %lld valid pixels: breaks %s; shares %s", q,
            (long long)nvalid, nvalid ? br : "none", fr);
    for (int64_t y0 = 0; y0 < H; y0 += WC_PREDICT_STRIP) {
        if (wc_stop_requested()) return WC_EXIT_STOPPED;
        int64_t n = WC_MIN(WC_PREDICT_STRIP, H - y0);
        if (wc_rwriter_read(w, 1, y0, n, rows, 0) != WC_OK) return WC_EXIT_RUNTIME;
        for (size_t i = 0; i < (size_t)n * (size_t)W; i++)
            rows[i] = rows[i] == (float)WC_PREDICT_NODATA ? (float)WC_PREDICT_NODATA
                                                          : (float)class_of(rows[i], breaks);
        if (wc_rwriter_write(w, 2, y0, n, rows, 0) != WC_OK) return WC_EXIT_RUNTIME;
    }
    return WC_EXIT_OK;
}

/* ---- the map ------------------------------------------------------------------------------- */

struct wc_riskmap {
    const wc_predict_config *cfg;
    wc_rwriter *w;
    int64_t W, H;
    int64_t *hist;           /* --classes: (CLASS_BINS) */
    int64_t npixels, nvalid; /* pixels written, and those of them that are not nodata */
};

wc_riskmap *wc_riskmap_create(const wc_predict_config *cfg, const wc_raster *r, const wc_model *m,
                              const char *window_layout) {
    wc_rwriter *w = create_file(cfg, r, m, window_layout);
    if (!w) return NULL;
    wc_riskmap *map = WC_CALLOC(1, sizeof *map);
    map->cfg = cfg;
    map->w = w;
    map->W = r->width, map->H = r->height;
    if (cfg->classes) map->hist = WC_CALLOC(CLASS_BINS, sizeof(int64_t));
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
    free(map->hist);
    free(map);
}

int wc_riskmap_finish(wc_riskmap *map, float *scratch) {
    const wc_predict_config *cfg = map->cfg;
    int status = WC_EXIT_OK;
    if (cfg->classes)
        status = write_classes(map->w, map->W, map->H, map->hist, map->nvalid, scratch);
    if (status == WC_EXIT_OK) {
        const double t0 = wc_now();
        const int rc = wc_rwriter_commit(map->w);
        map->w = NULL; /* committed or removed: nothing to clean up */
        status = rc == WC_OK                ? WC_EXIT_OK
                 : rc == WC_RWRITER_STOPPED ? WC_EXIT_STOPPED
                                            : WC_EXIT_RUNTIME;
        if (status == WC_EXIT_OK && cfg->cog)
            wc_info("predict: Cloud-Optimized GeoTIFF with overviews written in %.1f s",
                    wc_now() - t0);
    }
    if (status == WC_EXIT_STOPPED)
        wc_info("predict: stopped by %s while finishing the map: it is not written (%s, if it "
                "exists, is untouched); rerun the same command to draw it",
                strsignal(wc_stop_signal()), cfg->out);
    wc_riskmap_abort(map);
    if (status != WC_EXIT_OK || !cfg->png) return status;
    /* the quick-look reads the finished map back: bounded memory, and it shows exactly what
     * was written */
    wc_quicklook_info qi;
    if (wc_quicklook_write(cfg->out, 1, cfg->png, cfg->png_max_side, &qi) != WC_OK) {
        wc_error("the risk map %s is complete, but its picture %s is not", cfg->out, cfg->png);
        return WC_EXIT_RUNTIME;
    }
    char how[32] = "full resolution";
    if (qi.factor > 1) snprintf(how, sizeof how, "downsampled %dx", qi.factor);
    wc_info("predict: quick-look %s: %dx%d px (map %dx%d, %s, legend %d px)", cfg->png, qi.width,
            qi.height, qi.map_width, qi.map_height, how, qi.legend_height);
    return WC_EXIT_OK;
}
