/* predict.c: the risk map: the trained network run over a whole raster, written as a GeoTIFF
 * (or a Cloud-Optimized GeoTIFF) of burn probabilities, with an optional band of risk classes
 * and a quick-look picture; see predict.h and docs/predict.md.
 *
 * Seamless by construction. The raster is cut into cores: strips WC_PREDICT_STRIP rows tall,
 * each cut into equal columns. Each core is computed by one network window that extends at
 * least `margin` pixels beyond it on every side, margin = the network's receptive-field radius
 * rounded up to its pooling alignment, and whose origin lies on the alignment grid in GLOBAL
 * pixel coordinates (derived from the geotransform). Only the core is kept. A core pixel then
 * sees exactly the same input pixels, at the same pooling phase, whatever window computes it:
 * its value does not depend on where window borders fall. This is the limit of blending
 * overlapping windows in which the weight is 1 in the core and 0 elsewhere, so there is
 * nothing to blend and nothing to show at seams. Input outside the raster is invalid, i.e. 0
 * after normalization, exactly as nodata inside it.
 *
 * Distributed. The window layout depends on the raster and the model only, never on the number
 * of ranks, and each window is computed the same way wherever it runs, so the map is bitwise
 * identical on any number of ranks. Strips are processed in rounds of a few strips; the windows
 * of a round are split into contiguous runs, one per rank. Each rank sends its cores to rank 0,
 * which assembles the round's rows and writes them: one writer, so no file locking and no
 * join step, and the strips complete whole rows of output tiles, so no tile is written twice.
 * Memory is bounded by one round (a few strips of the raster's width), whatever its height.
 *
 * Writing. Rank 0 creates a temporary file next to the target before any computing (so an
 * unwritable path fails at once), checks every GDAL write and the close (GDAL 3.6's GDALClose
 * returns nothing: failures are caught by a pushed error handler), reopens and verifies the
 * result, then renames it over the target. An error on any rank ends the run on every rank
 * through a small agreement (wc_dist_max_f64 of the status) before the next collective step.
 *
 * Not here: training, the network's arithmetic (net.c), the picture (quicklook.c). */
#include "wildcpu/predict.h"

#include <cblas.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <gdal.h>

#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/layers.h"
#include "wildcpu/model.h"
#include "wildcpu/net.h"
#include "wildcpu/quicklook.h"
#include "wildcpu/raster.h"
#include "wildcpu/stop.h"
#include "wildcpu/util.h"

const char *const WC_PREDICT_CLASS_NAMES[WC_PREDICT_NCLASSES] = {"low", "moderate", "high",
                                                                 "very high", "extreme"};
const double WC_PREDICT_CLASS_QUANTILES[WC_PREDICT_NCLASSES - 1] = {0.5, 0.75, 0.9, 0.975};

const char WC_PREDICT_HELP[] =
    "wildcpu predict --tiles PATH --checkpoint PATH --out risk.tif [--png risk.png] [--cog]\n"
    "                [--classes] [--threads N]\n"
    "\n"
    "Runs the trained network over the whole raster PATH and writes every pixel's burn\n"
    "probability as a Float32 GeoTIFF on the raster's grid (band `fire_risk`, nodata -9999 where\n"
    "any feature is nodata). Works the same as one process and under mpirun/srun: ranks split\n"
    "the windows, rank 0 writes, and the map is bitwise the same on any number of ranks. The map\n"
    "is seamless: a sub-raster gives the same values away from its own edges.\n"
    "\n"
    "  --tiles PATH        the raster; its bands are matched to the model's inputs by name and\n"
    "                      must have the types they had in training (the label band is ignored)\n"
    "  --checkpoint PATH   a checkpoint file, or a run directory (its newest valid checkpoint)\n"
    "  --out FILE          the risk map; written to a temporary file, renamed over FILE when\n"
    "                      complete and verified\n"
    "  --png FILE          also a quick-look picture with a legend (RGBA, nodata transparent;\n"
    "                      downsampled to at most 4096 px on the long side)\n"
    "  --cog               write a Cloud-Optimized GeoTIFF (DEFLATE, overviews)\n"
    "  --classes           add band `fire_risk_class`: 0 low, 1 moderate, 2 high, 3 very high,\n"
    "                      4 extreme, split at the 50th, 75th, 90th and 97.5th percentiles of\n"
    "                      the map's probabilities (the breaks are in the band's metadata)\n"
    "  --threads N         OpenBLAS threads per rank [$SLURM_CPUS_PER_TASK or 1]\n"
    "\n"
    "exit status: 0 written, 1 runtime error, 2 usage error, 75 stopped by a signal (nothing\n"
    "written; rerun). See docs/predict.md.\n";

void wc_predict_config_default(wc_predict_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->threads = 1;
}

/* ---- agreement --------------------------------------------------------------------------- */

/* Every rank learns the worst status any rank has: the small collective that keeps a failure
 * on one rank from leaving the others waiting in the next collective step. */
static int agree(int status) {
    double s = status;
    wc_dist_max_f64(&s, 1);
    return (int)s;
}

/* After a round: any rank's failure ends the run (WC_EXIT_RUNTIME), else any rank's stop
 * signal (WC_EXIT_STOPPED); all ranks learn the same. */
static int agree_round(int failed) {
    double v[2] = {failed, wc_stop_requested()};
    wc_dist_max_f64(v, 2);
    return v[0] ? WC_EXIT_RUNTIME : v[1] ? WC_EXIT_STOPPED : WC_EXIT_OK;
}

/* ---- window layout ----------------------------------------------------------------------- */

typedef struct layout {
    int W, H;             /* the raster */
    int radius, align;    /* of the network */
    int margin;           /* radius rounded up to the alignment */
    int anchored;         /* 1: aligned on the georeferenced global grid; 0: the raster's own */
    long long gcol, grow; /* global pixel coordinates of the raster's pixel (0, 0) */
    int phase_x, phase_y; /* gcol, grow modulo the alignment */
    int Sx, Sy;           /* core width of a window, strip height */
    int nx, ny;           /* windows per strip, strips */
    int Tx, Ty;           /* window (network input) width and height */
} layout;

typedef struct window {
    int cx, cy, cw, ch; /* the core in raster pixels (clipped to the raster) */
    int wx, wy;         /* the window's origin (may lie outside the raster) */
} window;

static int pmod(long long a, int m) {
    long long r = a % m;
    return (int)(r < 0 ? r + m : r);
}

static int round_up(int v, int a) {
    return (v + a - 1) / a * a;
}

/* The largest v' <= v whose global coordinate (phase + v') is a multiple of the alignment. */
static int align_down(int v, int phase, int a) {
    return v - pmod((long long)phase + v, a);
}

/* Global column of pixel 0 = round(gt0 / gt1), row = round(gt3 / gt5): two rasters on the same
 * grid (a raster and a sub-window cut from it) then agree on every pixel's global coordinate.
 * Rotated or ungeoreferenced rasters fall back to their own pixel grid. */
static void anchor(layout *L, const wc_raster *r) {
    L->anchored = 0;
    L->gcol = L->grow = 0;
    if (r->has_gt && r->gt[2] == 0 && r->gt[4] == 0 && r->gt[1] != 0 && r->gt[5] != 0) {
        double c = r->gt[0] / r->gt[1], w = r->gt[3] / r->gt[5];
        if (fabs(c) < 1e15 && fabs(w) < 1e15) {
            L->gcol = llround(c), L->grow = llround(w);
            L->anchored = 1;
        }
    }
    L->phase_x = pmod(L->gcol, L->align);
    L->phase_y = pmod(L->grow, L->align);
}

/* Cores: strips of WC_PREDICT_STRIP rows (= the output's tile height), each cut into nx equal
 * columns (a multiple of the alignment) no wider than the window allows. The window adds the
 * margin on both sides plus `align` pixels of slack for snapping its origin to the grid. */
static void plan_layout(layout *L, int window_max) {
    const int A = L->align, M = L->margin, slack = A > 1 ? A : 0;
    int smax = (window_max - 2 * M - slack) / A * A;
    if (smax < A) smax = A;
    L->nx = (L->W + smax - 1) / smax;
    L->Sx = round_up((L->W + L->nx - 1) / L->nx, A);
    L->Sy = WC_MIN(WC_PREDICT_STRIP, round_up(L->H, A));
    L->ny = (L->H + L->Sy - 1) / L->Sy;
    L->Tx = L->Sx + 2 * M + slack;
    L->Ty = L->Sy + 2 * M + slack;
}

static void window_at(const layout *L, int strip, int col, window *w) {
    w->cx = col * L->Sx, w->cy = strip * L->Sy;
    w->cw = WC_MIN(L->Sx, L->W - w->cx), w->ch = WC_MIN(L->Sy, L->H - w->cy);
    w->wx = align_down(w->cx - L->margin, L->phase_x, L->align);
    w->wy = align_down(w->cy - L->margin, L->phase_y, L->align);
    /* the core keeps at least `margin` pixels of window on every side */
    WC_ASSERT(w->wx + L->Tx >= w->cx + w->cw + L->margin);
    WC_ASSERT(w->wy + L->Ty >= w->cy + w->ch + L->margin);
}

/* Strips per round. Ranks wait for each other at the end of every round (window times vary by
 * 10-30% with the data and the machine), so rounds should be long; rank 0 holds a round's rows,
 * so they must stay small: at most about 8 windows per rank and 64 MiB of rows per round. Among
 * those, the grouping that minimizes the window-times the slowest rank spends over the whole
 * map (the last windows of a round cannot be balanced), the larger on ties. Only the grouping
 * depends on the rank count, never the windows themselves. */
static int choose_group(const layout *L, int R) {
    int gmax = WC_MIN(L->ny, WC_MAX(1, (8 * R + L->nx - 1) / L->nx));
    const size_t strip_bytes = sizeof(float) * (size_t)L->Sy * L->W;
    while (gmax > 1 && (size_t)gmax * strip_bytes > ((size_t)64 << 20)) gmax--;
    int best = 1;
    long best_cost = LONG_MAX;
    for (int g = 1; g <= gmax; g++) {
        long cost = 0;
        for (int s = 0; s < L->ny; s += g) {
            long n = (long)WC_MIN(g, L->ny - s) * L->nx;
            cost += (n + R - 1) / R;
        }
        if (cost <= best_cost) best_cost = cost, best = g;
    }
    return best;
}

/* ---- matching the raster's bands to the model's inputs ----------------------------------- */

/* From the training data fingerprint "...;bands=name:Type,name:Type;labels=band:fire": the type
 * a band had in training, or NULL when the fingerprint does not list it. */
static const char *training_type(const char *list, const char *name, char *buf, size_t size) {
    size_t nlen = strlen(name);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ','), *colon;
        size_t len = end ? (size_t)(end - p) : strlen(p);
        /* the type follows the LAST colon: band names may hold colons */
        colon = NULL;
        for (const char *q = p; q < p + len; q++)
            if (*q == ':') colon = q;
        if (colon && (size_t)(colon - p) == nlen && strncmp(p, name, nlen) == 0) {
            snprintf(buf, size, "%.*s", (int)(p + len - colon - 1), colon + 1);
            return buf;
        }
        p += len + (end ? 1 : 0);
    }
    return NULL;
}

static void appendf(char *buf, size_t size, const char *fmt, ...) WC_PRINTF(3, 4);
static void appendf(char *buf, size_t size, const char *fmt, ...) {
    size_t n = strlen(buf);
    if (n + 1 >= size) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + n, size - n, fmt, ap);
    va_end(ap);
}

/* bands[i] = the raster band (1-based) feeding input channel i. A feature is found by its band
 * description; a feature named band_<n> (a band that had no description) by its number. Every
 * feature band must have the type it had in training. Bands that are not inputs are accepted
 * only when they are the training data's label band (or named `fire`, the default label band):
 * any other extra band means the raster is not the kind of data the model was trained on. */
static int match_bands(const wc_model *m, const wc_raster *r, int *bands, char *why, size_t size) {
    char *list = WC_ALLOC(strlen(m->fingerprint) + 1), label[WC_BAND_NAME_MAX + 16] = "";
    wc_kv_get(m->fingerprint, "bands", list, strlen(m->fingerprint) + 1);
    wc_kv_get(m->fingerprint, "labels", label, sizeof label);
    const char *label_band = strncmp(label, "band:", 5) == 0 ? label + 5 : "";
    int *used = WC_CALLOC(r->nbands + 1, sizeof(int));
    why[0] = '\0';
    for (int i = 0; i < m->nfeat; i++) {
        const char *f = m->feat_names[i];
        int found = 0, named = 0;
        for (int b = 1; b <= r->nbands; b++)
            if (strcmp(r->bands[b - 1].name, f) == 0) named++, found = found ? found : b;
        int n;
        char tail;
        if (!found && sscanf(f, "band_%d%c", &n, &tail) == 1 && n >= 1 && n <= r->nbands) found = n;
        if (!found) {
            appendf(why, size, "%sband '%s' (input %d of the model) is missing", *why ? "; " : "",
                    f, i + 1);
            continue;
        }
        if (named > 1) {
            appendf(why, size, "%s%d bands are named '%s': which is input %d is ambiguous",
                    *why ? "; " : "", named, f, i + 1);
            continue;
        }
        if (used[found]) {
            appendf(why, size, "%sband %d feeds two inputs ('%s' and '%s')", *why ? "; " : "",
                    found, m->feat_names[used[found] - 1], f);
            continue;
        }
        used[found] = i + 1;
        bands[i] = found;
        char tbuf[32];
        const char *want = training_type(list, f, tbuf, sizeof tbuf);
        const char *have = wc_dtype_name(r->bands[found - 1].type);
        if (want && strcmp(want, have) != 0)
            appendf(why, size, "%sband %d '%s' is %s here but was %s in the training data",
                    *why ? "; " : "", found, f, have, want);
    }
    int extra = 0, matched = 0;
    for (int b = 1; b <= r->nbands; b++) matched += used[b] != 0;
    for (int b = 1; b <= r->nbands; b++) {
        const char *name = r->bands[b - 1].name;
        if (used[b] || strcmp(name, label_band) == 0 || strcmp(name, WC_LABEL_BAND_NAME) == 0)
            continue;
        extra++;
        appendf(why, size, "%sband %d '%s' is not among the model's inputs", *why ? "; " : "", b,
                name);
    }
    if (extra)
        appendf(why, size,
                " (the model takes %d feature bands, this raster has %d besides the "
                "label band: drop the extra ones, e.g. with gdal_translate -b, or use a model "
                "trained with them)",
                m->nfeat, matched + extra);
    free(used);
    free(list);
    return *why ? WC_ERR : WC_OK;
}

/* ---- output paths ------------------------------------------------------------------------ */

/* The absolute, symlink-free path p names; for a file that does not exist yet, the real path
 * of its directory plus its name. NULL when the directory does not exist either. */
static char *resolve_path(const char *p) {
    char buf[PATH_MAX];
    if (realpath(p, buf)) return wc_strdup(buf);
    char *dir = wc_strdup(p), *slash = strrchr(dir, '/');
    const char *base = slash ? slash + 1 : p;
    if (slash) *slash = '\0';
    const char *d = slash ? (*dir ? dir : "/") : ".";
    char *out = NULL;
    if (realpath(d, buf)) {
        size_t n = strlen(buf) + strlen(base) + 2;
        out = WC_ALLOC(n);
        snprintf(out, n, "%s/%s", strcmp(buf, "/") == 0 ? "" : buf, base);
    }
    free(dir);
    return out;
}

static int same_file(const char *a, const char *b) {
    char *ra = resolve_path(a), *rb = resolve_path(b);
    int same = ra && rb && strcmp(ra, rb) == 0;
    struct stat sa, sb; /* hard links, bind mounts */
    if (!same && stat(a, &sa) == 0 && stat(b, &sb) == 0)
        same = sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    free(ra);
    free(rb);
    return same;
}

/* An output path that can be written: its directory exists and is writable, it is not a
 * directory, and it is none of the inputs (the raster's files, e.g. a VRT and its tiles, and
 * the checkpoint). Returns an exit status. */
static int check_output(const char *what, const char *path, char **inputs) {
    struct stat st;
    if (!*path) {
        wc_error("%s: empty path", what);
        return WC_EXIT_USAGE;
    }
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        wc_error("cannot write the %s to %s: it is a directory", what, path);
        return WC_EXIT_RUNTIME;
    }
    for (int i = 0; inputs && inputs[i]; i++)
        if (same_file(path, inputs[i])) {
            wc_error("refusing to write the %s to %s: that is an input (%s); choose another path",
                     what, path, inputs[i]);
            return WC_EXIT_USAGE;
        }
    char *dir = wc_strdup(path), *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    const char *d = slash ? (*dir ? dir : "/") : ".";
    int status = WC_EXIT_OK;
    if (stat(d, &st) != 0 || !S_ISDIR(st.st_mode)) {
        wc_error("cannot write the %s to %s: directory %s does not exist", what, path, d);
        status = WC_EXIT_RUNTIME;
    } else if (access(d, W_OK | X_OK) != 0) {
        wc_error("cannot write the %s to %s: directory %s is not writable (%s)", what, path, d,
                 strerror(errno));
        status = WC_EXIT_RUNTIME;
    } else if (access(path, F_OK) == 0 && access(path, W_OK) != 0) {
        /* rename would replace it anyway, but a read-only file is a user's way of saying no */
        wc_error("cannot write the %s to %s: the file is read-only", what, path);
        status = WC_EXIT_RUNTIME;
    }
    free(dir);
    return status;
}

static char *aux_path(const char *path) {
    size_t n = strlen(path) + 9;
    char *a = WC_ALLOC(n);
    snprintf(a, n, "%s.aux.xml", path);
    return a;
}

static void unlink_with_aux(const char *path) {
    if (!path) return;
    unlink(path);
    char *a = aux_path(path);
    unlink(a);
    free(a);
}

/* ---- the writer (rank 0) ----------------------------------------------------------------- */


typedef struct writer {
    const wc_predict_config *cfg;
    int W, H, nbands;
    char *tmp;     /* the GeoTIFF being written */
    char *tmp_cog; /* its COG copy (--cog) */
    GDALDatasetH ds;
    wc_gdal_errors err;
} writer;

#define GDAL_BEGIN(w) (wc_gdal_errors_push(&(w)->err), (w)->err.failures)
#define GDAL_END()    wc_gdal_errors_pop()

static const char *gdal_why(const writer *w) {
    return w->err.failures ? w->err.last : "unknown error";
}

static int writer_create(writer *w, const wc_predict_config *cfg, const wc_raster *r,
                         const wc_model *m, const layout *L) {
    memset(w, 0, sizeof *w);
    w->cfg = cfg;
    w->W = r->width, w->H = r->height;
    w->nbands = cfg->classes ? 2 : 1;
    w->tmp = wc_temp_path(cfg->out, "tmp");
    if (cfg->cog) w->tmp_cog = wc_temp_path(cfg->out, "cog");
    int before = GDAL_BEGIN(w);
    GDALDriverH drv = GDALGetDriverByName("GTiff");
    char **opt = NULL;
    opt = CSLSetNameValue(opt, "TILED", "YES");
    opt = CSLSetNameValue(opt, "BLOCKXSIZE", "256");
    opt = CSLSetNameValue(opt, "BLOCKYSIZE", CPLSPrintf("%d", WC_PREDICT_STRIP));
    opt = CSLSetNameValue(opt, "COMPRESS", "DEFLATE");
    opt = CSLSetNameValue(opt, "PREDICTOR", "3");
    opt = CSLSetNameValue(opt, "BIGTIFF", "IF_SAFER");
    /* the class band is written after the whole probability band: band-sequential tiles keep
     * the first band's tiles untouched then */
    opt = CSLSetNameValue(opt, "INTERLEAVE", "BAND");
    w->ds = drv ? GDALCreate(drv, w->tmp, w->W, w->H, w->nbands, GDT_Float32, opt) : NULL;
    CSLDestroy(opt);
    int rc = WC_OK;
    if (!w->ds) {
        wc_error("cannot create %s (for %s): %s", w->tmp, cfg->out, gdal_why(w));
        rc = WC_ERR;
        goto out;
    }
    if (r->has_gt) GDALSetGeoTransform(w->ds, (double *)r->gt);
    if (*r->wkt) GDALSetProjection(w->ds, r->wkt);
    char ts[32], buf[64];
    wc_utc_timestamp(ts, sizeof ts);
    GDALSetMetadataItem(w->ds, "wildcpu_version", WC_VERSION, NULL);
    GDALSetMetadataItem(w->ds, "created_utc", ts, NULL);
    GDALSetMetadataItem(w->ds, "checkpoint", m->path, NULL);
    snprintf(buf, sizeof buf, "%ld", m->step);
    GDALSetMetadataItem(w->ds, "checkpoint_step", buf, NULL);
    snprintf(buf, sizeof buf, "fnv1a64:%016llx",
             (unsigned long long)wc_fnv1a64(m->net->params, m->net->nparams * sizeof(float)));
    GDALSetMetadataItem(w->ds, "checkpoint_params", buf, NULL);
    GDALSetMetadataItem(w->ds, "model_arch", m->net->arch, NULL);
    GDALSetMetadataItem(w->ds, "training_data_fingerprint", m->fingerprint, NULL);
    GDALSetMetadataItem(w->ds, "input", r->path, NULL);
    GDALSetMetadataItem(w->ds, "window_layout",
                        CPLSPrintf("windows %dx%d, cores %dx%d, margin %d, alignment %d on the "
                                   "%s grid (pixel 0,0 = global %lld,%lld)",
                                   L->Tx, L->Ty, L->Sx, L->Sy, L->margin, L->align,
                                   L->anchored ? "global georeferenced" : "raster's own", L->gcol,
                                   L->grow),
                        NULL);
    GDALSetMetadataItem(w->ds, "TIFFTAG_SOFTWARE", "wildcpu " WC_VERSION, NULL);
    /* TIFF's own timestamp format */
    snprintf(buf, sizeof buf, "%.4s:%.2s:%.2s %.8s", ts, ts + 5, ts + 8, ts + 11);
    GDALSetMetadataItem(w->ds, "TIFFTAG_DATETIME", buf, NULL);
    GDALRasterBandH b1 = GDALGetRasterBand(w->ds, 1);
    GDALSetDescription(b1, "fire_risk");
    GDALSetRasterNoDataValue(b1, WC_PREDICT_NODATA);
    GDALSetMetadataItem(b1, "meaning", "burn probability in [0,1]", NULL);
    if (w->nbands == 2) {
        GDALRasterBandH b2 = GDALGetRasterBand(w->ds, 2);
        GDALSetDescription(b2, "fire_risk_class");
        GDALSetRasterNoDataValue(b2, WC_PREDICT_NODATA);
    }
    if (w->err.failures != before) {
        wc_error("cannot set up %s (for %s): %s", w->tmp, cfg->out, gdal_why(w));
        rc = WC_ERR;
    }
out:
    GDAL_END();
    return rc;
}

static int writer_rows(writer *w, int band, int y0, int n, float *rows, GDALRWFlag rw) {
    int before = GDAL_BEGIN(w);
    CPLErr e = GDALRasterIO(GDALGetRasterBand(w->ds, band), rw, 0, y0, w->W, n, rows, w->W, n,
                            GDT_Float32, 0, 0);
    int bad = e != CE_None || w->err.failures != before;
    GDAL_END();
    if (bad) {
        wc_error("%s rows %d-%d of band %d of %s (for %s) failed: %s",
                 rw == GF_Write ? "writing" : "reading back", y0, y0 + n - 1, band, w->tmp,
                 w->cfg->out, gdal_why(w));
        return WC_ERR;
    }
    return WC_OK;
}

/* Removes whatever was written: the target is never touched. */
static void writer_abort(writer *w) {
    if (w->ds) {
        CPLPushErrorHandler(CPLQuietErrorHandler);
        GDALClose(w->ds);
        CPLPopErrorHandler();
        w->ds = NULL;
    }
    unlink_with_aux(w->tmp);
    unlink_with_aux(w->tmp_cog);
}

static void writer_free(writer *w) {
    free(w->tmp);
    free(w->tmp_cog);
    memset(w, 0, sizeof *w);
}

/* ---- classes ----------------------------------------------------------------------------- */

/* Probabilities are binned by the top bits of their IEEE float representation (the order of
 * non-negative floats is the order of their bits): 2^11 bins per power of two, so a break is
 * resolved to 0.05% of its value whether risks are around 0.9 or 0.001. The counts are
 * integers, exact on any rank count. */
#define CLASS_SHIFT 12
#define CLASS_BINS  ((0x3F800000u >> CLASS_SHIFT) + 1) /* up to 1.0f */

static uint32_t prob_bin(float p) {
    uint32_t u;
    memcpy(&u, &p, sizeof u);
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

/* Second pass over the finished probability band: the class band, strip by strip. */
static int writer_classes(writer *w, const int64_t *hist, int64_t nvalid, float *rows) {
    float breaks[WC_PREDICT_NCLASSES - 1];
    int64_t counts[WC_PREDICT_NCLASSES];
    class_breaks(hist, nvalid, breaks, counts);
    char q[256] = "", br[256] = "", fr[256] = "";
    for (int k = 0; k < WC_PREDICT_NCLASSES - 1; k++) {
        appendf(q, sizeof q, "%s%g", k ? "," : "", WC_PREDICT_CLASS_QUANTILES[k]);
        appendf(br, sizeof br, "%s%.9g", k ? "," : "", (double)breaks[k]);
    }
    for (int c = 0; c < WC_PREDICT_NCLASSES; c++)
        appendf(fr, sizeof fr, "%s%.6f", c ? "," : "",
                nvalid ? (double)counts[c] / (double)nvalid : 0.0);
    int before = GDAL_BEGIN(w);
    GDALRasterBandH b2 = GDALGetRasterBand(w->ds, 2);
    char *names[WC_PREDICT_NCLASSES + 1];
    for (int c = 0; c < WC_PREDICT_NCLASSES; c++) names[c] = (char *)WC_PREDICT_CLASS_NAMES[c];
    names[WC_PREDICT_NCLASSES] = NULL;
    /* GeoTIFF has no field for category names: GDAL keeps them in FILE.aux.xml; the metadata
     * below (inside the TIFF) says the same for readers without the sidecar */
    GDALSetRasterCategoryNames(b2, names);
    GDALSetMetadataItem(b2, "class_names", "low,moderate,high,very high,extreme", NULL);
    GDALSetMetadataItem(b2, "class_values", "0,1,2,3,4", NULL);
    GDALSetMetadataItem(b2, "class_rule",
                        "class = number of breaks the probability exceeds (p > break)", NULL);
    GDALSetMetadataItem(b2, "class_quantiles", q, NULL);
    GDALSetMetadataItem(b2, "class_breaks", nvalid ? br : "none (no valid pixel)", NULL);
    GDALSetMetadataItem(b2, "class_fractions", fr, NULL);
    int bad = w->err.failures != before;
    GDAL_END();
    if (bad) {
        wc_error("cannot describe the class band of %s: %s", w->tmp, gdal_why(w));
        return WC_ERR;
    }
    wc_info("predict: classes at quantiles %s of %lld valid pixels: breaks %s; shares %s", q,
            (long long)nvalid, nvalid ? br : "none", fr);
    for (int y0 = 0; y0 < w->H; y0 += WC_PREDICT_STRIP) {
        int n = WC_MIN(WC_PREDICT_STRIP, w->H - y0);
        if (writer_rows(w, 1, y0, n, rows, GF_Read) != WC_OK) return WC_ERR;
        for (size_t i = 0; i < (size_t)n * w->W; i++)
            rows[i] = rows[i] == (float)WC_PREDICT_NODATA ? (float)WC_PREDICT_NODATA
                                                          : (float)class_of(rows[i], breaks);
        if (writer_rows(w, 2, y0, n, rows, GF_Write) != WC_OK) return WC_ERR;
    }
    return WC_OK;
}

/* ---- finishing: close, COG, verify, rename ------------------------------------------------ */

static int verify(writer *w, const char *path, const wc_raster *r) {
    int before = GDAL_BEGIN(w);
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    char why[640] = "";
    if (!ds) {
        snprintf(why, sizeof why, "it does not open: %s", gdal_why(w));
    } else {
        double gt[6];
        if (GDALGetRasterXSize(ds) != w->W || GDALGetRasterYSize(ds) != w->H)
            snprintf(why, sizeof why, "its size is %dx%d, not %dx%d", GDALGetRasterXSize(ds),
                     GDALGetRasterYSize(ds), w->W, w->H);
        else if (GDALGetRasterCount(ds) != w->nbands)
            snprintf(why, sizeof why, "it has %d bands, not %d", GDALGetRasterCount(ds), w->nbands);
        else if (GDALGetRasterDataType(GDALGetRasterBand(ds, 1)) != GDT_Float32)
            snprintf(why, sizeof why, "band 1 is not Float32");
        else if (r->has_gt &&
                 (GDALGetGeoTransform(ds, gt) != CE_None || memcmp(gt, r->gt, sizeof gt) != 0))
            snprintf(why, sizeof why, "its geotransform differs from the input's");
        else if (w->cfg->cog) {
            const char *lay = GDALGetMetadataItem(ds, "LAYOUT", "IMAGE_STRUCTURE");
            if (!lay || strcmp(lay, "COG") != 0)
                snprintf(why, sizeof why, "GDAL does not report it as a COG layout");
        }
        GDALClose(ds);
    }
    GDAL_END();
    (void)before;
    if (*why) {
        wc_error("verifying %s (for %s) failed: %s", path, w->cfg->out, why);
        return WC_ERR;
    }
    return WC_OK;
}

static int writer_finish(writer *w, const wc_raster *r) {
    const wc_predict_config *cfg = w->cfg;
    /* write errors (a full disk) surface when GDAL flushes at close */
    int before = GDAL_BEGIN(w);
    GDALClose(w->ds);
    w->ds = NULL;
    int bad = w->err.failures != before;
    GDAL_END();
    if (bad) {
        wc_error("writing %s (for %s) failed: %s", w->tmp, cfg->out, gdal_why(w));
        return WC_ERR;
    }
    const char *final = w->tmp;
    if (cfg->cog) {
        double t0 = wc_now();
        before = GDAL_BEGIN(w);
        GDALDriverH cog = GDALGetDriverByName("COG");
        GDALDatasetH src = GDALOpenEx(w->tmp, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
        char **opt = NULL;
        opt = CSLSetNameValue(opt, "COMPRESS", "DEFLATE");
        opt = CSLSetNameValue(opt, "PREDICTOR", "YES");
        opt = CSLSetNameValue(opt, "BIGTIFF", "IF_SAFER");
        opt = CSLSetNameValue(opt, "BLOCKSIZE", "256"); /* overviews down to one tile */
        opt = CSLSetNameValue(opt, "OVERVIEWS", "AUTO");
        /* probabilities average well (nodata skipped); class numbers must not be averaged, and
         * the COG driver takes one resampling for all bands */
        opt = CSLSetNameValue(opt, "RESAMPLING", w->nbands == 2 ? "NEAREST" : "AVERAGE");
        GDALDatasetH dst =
            cog && src ? GDALCreateCopy(cog, w->tmp_cog, src, FALSE, opt, NULL, NULL) : NULL;
        CSLDestroy(opt);
        if (dst) GDALClose(dst);
        if (src) GDALClose(src);
        bad = !cog || !src || !dst || w->err.failures != before;
        GDAL_END();
        if (bad) {
            wc_error("writing the Cloud-Optimized GeoTIFF %s (for %s) failed: %s", w->tmp_cog,
                     cfg->out, !cog ? "GDAL has no COG driver" : gdal_why(w));
            return WC_ERR;
        }
        unlink_with_aux(w->tmp);
        final = w->tmp_cog;
        wc_info("predict: Cloud-Optimized GeoTIFF with overviews written in %.1f s", wc_now() - t0);
    }
    if (verify(w, final, r) != WC_OK) return WC_ERR;
    if (wc_fsync_path(final, 0) != WC_OK) return WC_ERR;
    if (rename(final, cfg->out) != 0) {
        wc_error("cannot rename %s to %s: %s", final, cfg->out, strerror(errno));
        return WC_ERR;
    }
    /* the sidecar (category names) follows its file; a stale one from an earlier map would
     * describe this one wrongly */
    char *faux = aux_path(final), *oaux = aux_path(cfg->out);
    int rc = WC_OK;
    if (access(faux, F_OK) == 0) {
        if (rename(faux, oaux) != 0) {
            wc_error("cannot rename %s to %s: %s", faux, oaux, strerror(errno));
            rc = WC_ERR;
        }
    } else if (access(oaux, F_OK) == 0 && unlink(oaux) != 0) {
        wc_warn("%s is left from an earlier map and could not be removed: %s", oaux,
                strerror(errno));
    }
    free(faux);
    free(oaux);
    if (wc_fsync_parent(cfg->out) != WC_OK)
        wc_warn("%s is complete, but its directory entry may not survive a crash", cfg->out);
    return rc;
}

/* ---- one window -------------------------------------------------------------------------- */

typedef struct predictor {
    const layout *L;
    wc_raster *r;
    wc_model *m;
    int *bands;      /* (nfeat) */
    wc_dtype type;   /* the feature bands are read as */
    void *raw;       /* (nfeat, Ty, Tx) as read */
    uint8_t *valid;  /* (Ty, Tx) */
    double *inv_std; /* (nfeat) */
    long windows_run, windows_skipped;
} predictor;

static inline int is_nodata(const wc_band *b, double v) {
    return !isfinite(v) || (b->has_nodata && v == b->nodata);
}

/* Fills core (ch rows of cw) with the probabilities of window w's core. */
static int predict_window(predictor *p, const window *w, float *core) {
    const layout *L = p->L;
    const int Tx = L->Tx, Ty = L->Ty, nf = p->m->nfeat;
    const size_t plane = (size_t)Tx * Ty;
    /* the part of the window inside the raster */
    const int ix0 = WC_MAX(w->wx, 0), iy0 = WC_MAX(w->wy, 0);
    const int ix1 = WC_MIN(w->wx + Tx, L->W), iy1 = WC_MIN(w->wy + Ty, L->H);
    if (wc_raster_read(p->r, w->wx, w->wy, Tx, Ty, p->bands, nf, p->type, p->raw) != WC_OK) {
        wc_error("predict: window at x=%d y=%d of %s could not be read", w->wx, w->wy, p->r->path);
        return WC_ERR;
    }
    memset(p->valid, 0, plane);
    for (int y = iy0; y < iy1; y++)
        memset(p->valid + (size_t)(y - w->wy) * Tx + (ix0 - w->wx), 1, (size_t)(ix1 - ix0));
    for (int c = 0; c < nf; c++) {
        const wc_band *b = &p->r->bands[p->bands[c] - 1];
        for (int y = iy0; y < iy1; y++) {
            size_t i0 = (size_t)(y - w->wy) * Tx + (ix0 - w->wx);
            for (size_t i = i0; i < i0 + (size_t)(ix1 - ix0); i++)
                if (is_nodata(b, wc_dtype_get(p->raw, p->type, c * plane + i))) p->valid[i] = 0;
        }
    }
    long core_valid = 0;
    for (int y = w->cy; y < w->cy + w->ch; y++) {
        const uint8_t *v = p->valid + (size_t)(y - w->wy) * Tx + (w->cx - w->wx);
        for (int x = 0; x < w->cw; x++) core_valid += v[x];
    }
    if (core_valid == 0) { /* nothing to predict: skip the network (deterministically) */
        for (size_t i = 0; i < (size_t)w->cw * w->ch; i++) core[i] = (float)WC_PREDICT_NODATA;
        p->windows_skipped++;
        return WC_OK;
    }
    /* normalized exactly as training does (dataset.c): invalid pixels, and everything outside
     * the raster, are 0 */
    float *x = wc_net_input(p->m->net);
    memset(x, 0, sizeof(float) * plane * nf);
    for (int c = 0; c < nf; c++) {
        const double mean = p->m->mean[c], inv = p->inv_std[c];
        float *xc = x + c * plane;
        for (int y = iy0; y < iy1; y++) {
            size_t i0 = (size_t)(y - w->wy) * Tx + (ix0 - w->wx);
            for (size_t i = i0; i < i0 + (size_t)(ix1 - ix0); i++)
                if (p->valid[i])
                    xc[i] = (float)((wc_dtype_get(p->raw, p->type, c * plane + i) - mean) * inv);
        }
    }
    wc_net_forward(p->m->net, 1);
    const float *logit = wc_net_output(p->m->net);
    for (int y = 0; y < w->ch; y++) {
        size_t i0 = (size_t)(w->cy + y - w->wy) * Tx + (w->cx - w->wx);
        for (int xx = 0; xx < w->cw; xx++)
            core[(size_t)y * w->cw + xx] =
                p->valid[i0 + xx] ? (float)wc_sigmoid(logit[i0 + xx]) : (float)WC_PREDICT_NODATA;
    }
    p->windows_run++;
    return WC_OK;
}

/* Floats the cores of windows [lo, hi) of the round starting at strip s0 occupy. */
static size_t cores_floats(const layout *L, int s0, long lo, long hi) {
    size_t n = 0;
    for (long k = lo; k < hi; k++) {
        window w;
        window_at(L, s0 + (int)(k / L->nx), (int)(k % L->nx), &w);
        n += (size_t)w.cw * w.ch;
    }
    return n;
}

/* Copies packed cores of windows [lo, hi) into the round's rows (which start at raster row y0). */
static void unpack(const layout *L, int s0, long lo, long hi, const float *packed, float *rows,
                   int y0) {
    for (long k = lo; k < hi; k++) {
        window w;
        window_at(L, s0 + (int)(k / L->nx), (int)(k % L->nx), &w);
        for (int y = 0; y < w.ch; y++)
            memcpy(rows + (size_t)(w.cy - y0 + y) * L->W + w.cx, packed + (size_t)y * w.cw,
                   sizeof(float) * w.cw);
        packed += (size_t)w.cw * w.ch;
    }
}

/* ---- the command ------------------------------------------------------------------------- */

/* The network rebuilt for the window size, with the checkpoint's parameters. */
static int build_window_net(wc_model *m, const layout *L) {
    wc_net *big =
        wc_net_create(m->net->arch, m->net->spec, m->nfeat, 1, L->Ty, L->Tx, WC_NET_INFER);
    if (!big) {
        wc_error("%s: the network cannot be built for %dx%d windows", m->path, L->Tx, L->Ty);
        return WC_ERR;
    }
    WC_ASSERT(big->nparams == m->net->nparams);
    memcpy(big->params, m->net->params, sizeof(float) * big->nparams);
    wc_net_destroy(m->net);
    m->net = big;
    return WC_OK;
}

int wc_predict_run(const wc_predict_config *cfg) {
    const double t_start = wc_now();
    const int rank = wc_dist_rank(), R = wc_dist_size();
    openblas_set_num_threads(cfg->threads > 0 ? cfg->threads : 1);
    wc_raster_init();
    /* Each window is read once per rank and overlapping reads are few, so a large block cache
     * buys little; a small one keeps the memory flat whatever the raster's size. */
    const int64_t cache_was = GDALGetCacheMax64();
    if (!CPLGetConfigOption("GDAL_CACHEMAX", NULL) && cache_was > ((int64_t)64 << 20))
        GDALSetCacheMax64((int64_t)64 << 20);

    wc_raster r = {0};
    wc_model m = {0};
    layout L = {0};
    writer w = {0};
    predictor p = {0};
    int *bands = NULL;
    float *send = NULL, *recv = NULL, *rows = NULL;
    int64_t *hist = NULL;
    int status = WC_EXIT_OK, have_writer = 0;
    char why[4096];

    /* 1. every rank: the raster, the model, the band matching, the layout, the network */
    if (wc_raster_open(&r, cfg->tiles) != WC_OK) status = WC_EXIT_RUNTIME;
    if (status == WC_EXIT_OK && wc_model_load(&m, cfg->checkpoint, 1, 0, 0) != WC_OK)
        status = WC_EXIT_RUNTIME;
    if (status == WC_EXIT_OK) {
        bands = WC_CALLOC(m.nfeat, sizeof(int));
        if (match_bands(&m, &r, bands, why, sizeof why) != WC_OK) {
            wc_error("%s does not have the bands %s was trained on: %s", r.path, m.path, why);
            status = WC_EXIT_RUNTIME;
        }
    }
    if (status == WC_EXIT_OK) {
        L.W = r.width, L.H = r.height;
        wc_net_receptive_field(m.net, &L.radius, &L.align);
        L.margin = round_up(L.radius, L.align);
        anchor(&L, &r);
        plan_layout(&L, cfg->window > 0 ? cfg->window : WC_PREDICT_WINDOW);
        if (build_window_net(&m, &L) != WC_OK) status = WC_EXIT_RUNTIME;
    }
    status = agree(status);
    if (status != WC_EXIT_OK) goto out;

    /* 2. rank 0: the outputs can be written and are not inputs; the temporary map exists */
    if (rank == 0) {
        char **inputs = GDALGetFileList((GDALDatasetH)r.ds); /* ours to free */
        inputs = CSLAddString(inputs, r.path);
        inputs = CSLAddString(inputs, m.path);
        status = check_output("risk map", cfg->out, inputs);
        if (status == WC_EXIT_OK && cfg->png) {
            inputs = CSLAddString(inputs, cfg->out);
            status = check_output("quick-look picture", cfg->png, inputs);
        }
        CSLDestroy(inputs);
        if (status == WC_EXIT_OK) {
            if (writer_create(&w, cfg, &r, &m, &L) != WC_OK) status = WC_EXIT_RUNTIME;
            have_writer = 1;
        }
    }
    status = agree(status);
    if (status != WC_EXIT_OK) goto out;

    wc_memory_plan plan;
    wc_net_memory_plan(m.net, &plan);
    char mem[16];
    wc_info("predict: %s (%dx%d px) with %s (step %ld, %s): %d strips x %d windows of %dx%d "
            "px (cores %dx%d, margin %d >= receptive radius %d, alignment %d on the %s grid); "
            "%d rank%s x %d thread%s; network activations %s per rank",
            r.path, r.width, r.height, m.path, m.step, m.net->arch, L.ny, L.nx, L.Tx, L.Ty, L.Sx,
            L.Sy, L.margin, L.radius, L.align, L.anchored ? "global" : "raster's", R,
            R > 1 ? "s" : "", cfg->threads, cfg->threads > 1 ? "s" : "",
            wc_fmt_bytes(mem, sizeof mem, (double)(plan.activations + plan.workspace)));

    /* 3. the rounds: compute, agree, send to rank 0, which writes */
    const int G = choose_group(&L, R);
    const long max_share = ((long)G * L.nx + R - 1) / R;
    const size_t core_max = (size_t)L.Sx * L.Sy;
    send = WC_ALLOC(sizeof(float) * core_max * max_share);
    if (rank == 0) {
        rows = WC_ALLOC(sizeof(float) * (size_t)G * L.Sy * L.W);
        if (R > 1) recv = WC_ALLOC(sizeof(float) * core_max * max_share);
        if (cfg->classes) hist = WC_CALLOC(CLASS_BINS, sizeof(int64_t));
    }
    p.L = &L, p.r = &r, p.m = &m, p.bands = bands;
    p.type = r.bands[bands[0] - 1].type;
    for (int c = 1; c < m.nfeat; c++) p.type = wc_dtype_union(p.type, r.bands[bands[c] - 1].type);
    p.raw = WC_ALLOC(wc_dtype_size(p.type) * (size_t)m.nfeat * L.Tx * L.Ty);
    p.valid = WC_ALLOC((size_t)L.Tx * L.Ty);
    p.inv_std = WC_ALLOC(sizeof(double) * m.nfeat);
    for (int c = 0; c < m.nfeat; c++) p.inv_std[c] = 1.0 / m.std[c];
    int64_t nvalid = 0, npixels = 0;
    int write_failed = 0;
    const double t_map = wc_now();
    double last_log = t_map;
    for (int s0 = 0; s0 < L.ny; s0 += G) {
        const int s1 = WC_MIN(L.ny, s0 + G);
        const long nwin = (long)(s1 - s0) * L.nx;
        long lo, hi;
        wc_dist_share(nwin, rank, R, &lo, &hi);
        int failed = 0;
        size_t off = 0;
        for (long k = lo; k < hi && !failed; k++) {
            window wd;
            window_at(&L, s0 + (int)(k / L.nx), (int)(k % L.nx), &wd);
            if (predict_window(&p, &wd, send + off) != WC_OK) failed = 1;
            off += (size_t)wd.cw * wd.ch;
        }
        status = agree_round(failed || write_failed);
        if (status == WC_EXIT_STOPPED)
            wc_info("predict: stopped by %s at rows %d-%d: the map is not written (%s, if "
                    "it exists, is untouched); rerun the same command to draw it",
                    wc_stop_signal() ? strsignal(wc_stop_signal()) : "a signal on another rank",
                    s0 * L.Sy, WC_MIN(L.H, s1 * L.Sy) - 1, cfg->out);
        if (status != WC_EXIT_OK) goto out;
        if (rank != 0) {
            if (off) wc_dist_send(send, sizeof(float) * off, 0);
            continue;
        }
        const int y0 = s0 * L.Sy, y1 = WC_MIN(L.H, s1 * L.Sy);
        unpack(&L, s0, lo, hi, send, rows, y0);
        for (int q = 1; q < R; q++) {
            long qlo, qhi;
            wc_dist_share(nwin, q, R, &qlo, &qhi);
            size_t n = cores_floats(&L, s0, qlo, qhi);
            if (!n) continue;
            wc_dist_recv(recv, sizeof(float) * n, q);
            unpack(&L, s0, qlo, qhi, recv, rows, y0);
        }
        const size_t count = (size_t)(y1 - y0) * L.W;
        for (size_t i = 0; i < count; i++) {
            if (rows[i] == (float)WC_PREDICT_NODATA) continue;
            nvalid++;
            if (hist) hist[prob_bin(rows[i])]++;
        }
        npixels += (int64_t)count;
        if (writer_rows(&w, 1, y0, y1 - y0, rows, GF_Write) != WC_OK) write_failed = 1;
        double now = wc_now();
        if (s1 == L.ny || now - last_log >= 5.0) {
            double done = (double)y1 / L.H, el = now - t_map;
            wc_info("predict: rows 0-%d of %d (%.0f%%): %.1f s, %.3f Mpx/s, about %.0f s left",
                    y1 - 1, L.H, 100 * done, el, (double)y1 * L.W / 1e6 / el,
                    el / done * (1 - done));
            last_log = now;
        }
    }
    const double t_computed = wc_now();
    const double rss_mapped = (double)wc_peak_rss_bytes();

    /* 4. rank 0: classes, close, COG, verify, rename, picture */
    if (rank == 0) {
        if (write_failed) status = WC_EXIT_RUNTIME;
        if (status == WC_EXIT_OK && cfg->classes && writer_classes(&w, hist, nvalid, rows) != WC_OK)
            status = WC_EXIT_RUNTIME;
        if (status == WC_EXIT_OK && writer_finish(&w, &r) != WC_OK) status = WC_EXIT_RUNTIME;
        if (status == WC_EXIT_OK) have_writer = 0; /* renamed: nothing to clean up */
        if (status == WC_EXIT_OK && cfg->png) {
            /* the quick-look reads the finished map back: bounded memory, and it shows
             * exactly what was written */
            wc_quicklook_info qi;
            if (wc_quicklook_write(cfg->out, 1, cfg->png, cfg->png_max_side, &qi) != WC_OK) {
                wc_error("the risk map %s is complete, but its picture %s is not", cfg->out,
                         cfg->png);
                status = WC_EXIT_RUNTIME;
            } else {
                wc_info("predict: quick-look %s: %dx%d px (map %dx%d, %s, legend %d px)", cfg->png,
                        qi.width, qi.height, qi.map_width, qi.map_height,
                        qi.factor > 1 ? CPLSPrintf("downsampled %dx", qi.factor)
                                      : "full resolution",
                        qi.legend_height);
            }
        }
    }
    double rss[2] = {rss_mapped, (double)wc_peak_rss_bytes()};
    wc_dist_max_f64(rss, 2);
    status = agree(status);
    if (status == WC_EXIT_OK) {
        double total = wc_now() - t_start, mpx = (double)L.W * L.H / 1e6;
        char rb[16], rm[16];
        wc_info("predict: wrote %s%s: %dx%d px, %.1f%% nodata; %.2f Mpx in %.1f s = %.3f Mpx/s "
                "(mapping %.1f s = %.3f Mpx/s); %ld windows on %d rank%s; peak RSS per rank "
                "(max) %s after mapping, %s at the end",
                cfg->out, cfg->cog ? " (COG)" : "", L.W, L.H,
                npixels ? 100.0 * (double)(npixels - nvalid) / (double)npixels : 0.0, mpx, total,
                mpx / total, t_computed - t_map, mpx / (t_computed - t_map), (long)L.nx * L.ny, R,
                R > 1 ? "s" : "", wc_fmt_bytes(rm, sizeof rm, rss[0]),
                wc_fmt_bytes(rb, sizeof rb, rss[1]));
    }
out:
    if (have_writer) writer_abort(&w);
    writer_free(&w);
    free(send), free(recv), free(rows), free(hist);
    free(p.raw), free(p.valid), free(p.inv_std);
    free(bands);
    wc_model_free(&m);
    wc_raster_close(&r);
    GDALSetCacheMax64(cache_was);
    return status;
}
