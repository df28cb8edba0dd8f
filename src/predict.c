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
 * Only probabilities reach the map. A feature normalized beyond float's range makes its pixel
 * invalid (as nodata), and a network output that is not finite gives nodata; both are counted
 * and reported once. Pixel arithmetic is 64-bit (rasters up to INT_MAX a side); a raster whose
 * round of rows cannot fit in memory is refused before any work.
 *
 * Distributed. The window layout depends on the raster and the model only, never on the number
 * of ranks, and each window is computed the same way wherever it runs, so the map is bitwise
 * identical on any number of ranks. Strips are processed in rounds of a few strips; the windows
 * of a round are split into contiguous runs, one per rank. Each rank sends its cores to rank 0,
 * which assembles the round's rows and writes them: one writer, so no file locking and no
 * join step, and the strips complete whole rows of output tiles, so no tile is written twice.
 * Memory is bounded by one round (a few strips of the raster's width), whatever its height.
 * The ranks agree on failures and stops every few windows (about once a second), not only once
 * a round, so a stop signal is honoured within about one window.
 *
 * Writing. Rank 0 creates a working file next to the target before any computing (so an
 * unwritable path fails at once; sparse, so abandoning it is instant), checks every GDAL write
 * and the close (GDAL 3.6's GDALClose returns nothing: failures are caught by a pushed error
 * handler), copies it into the map proper (every tile present), verifies that, then renames it
 * over the target. An error on any rank ends the run on every rank
 * through a small agreement (wc_dist_max_f64 of the status) before the next collective step.
 *
 * Not here: training, the network's arithmetic (net.c), the picture (quicklook.c). */
#include "wildcpu/predict.h"

#include <cblas.h>
#include <errno.h>
#include <inttypes.h>
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

#include "wildcpu/dataset.h"
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

/* While mapping, the ranks agree on failures and stops after every `every` window slots, not
 * only at the end of a round: a round holds up to about 8 windows per rank, tens of seconds on
 * large windows or slow reads, and a stop must be honoured within a few seconds. `every` is
 * derived from the slowest window any rank has computed so far (carried by the agreement
 * itself), so agreements come about every AGREE_SECONDS, and it is the same number on every
 * rank, so every rank makes the same collectives. Agreeing more often costs balance: ranks
 * wait for each other at each agreement. */
#define AGREE_SECONDS 1.0
#define AGREE_MAX_EVERY 64 /* even for windows that cost nothing (no valid pixel) */

typedef struct pacer {
    double slowest; /* seconds of the slowest window so far: this rank's, then every rank's */
    int64_t every;  /* window slots between agreements, the same on every rank */
    int64_t since;  /* window slots since the last agreement */
} pacer;

/* After a round, or within one: any rank's failure ends the run (WC_EXIT_RUNTIME), else any
 * rank's stop signal (WC_EXIT_STOPPED); all ranks learn the same and the same cadence. */
static int agree_round(pacer *pc, int failed) {
    double v[3] = {failed, wc_stop_requested(), pc->slowest};
    wc_dist_max_f64(v, 3);
    pc->slowest = v[2];
    pc->every = v[2] > 0 ? (int64_t)fmin(AGREE_MAX_EVERY, fmax(1.0, AGREE_SECONDS / v[2])) : 1;
    pc->since = 0;
    return v[0] ? WC_EXIT_RUNTIME : v[1] ? WC_EXIT_STOPPED : WC_EXIT_OK;
}

/* ---- window layout ----------------------------------------------------------------------- */

/* Pixel quantities are 64-bit throughout: a raster may be up to INT_MAX pixels on a side, and
 * window origins, core ends and products of sizes go beyond int there. They become int only at
 * the GDAL and network calls, whose values are checked to fit. */
typedef struct layout {
    int64_t W, H;         /* the raster */
    int radius, align;    /* of the network */
    int margin;           /* radius rounded up to the alignment */
    int anchored;         /* 1: aligned on the georeferenced global grid; 0: the raster's own */
    long long gcol, grow; /* global pixel coordinates of the raster's pixel (0, 0) */
    int phase_x, phase_y; /* gcol, grow modulo the alignment */
    int64_t Sx, Sy;       /* core width of a window, strip height */
    int64_t nx, ny;       /* windows per strip, strips */
    int64_t Tx, Ty;       /* window (network input) width and height */
} layout;

typedef struct window {
    int64_t cx, cy, cw, ch; /* the core in raster pixels (clipped to the raster) */
    int64_t wx, wy;         /* the window's origin (may lie outside the raster) */
} window;

static int pmod(long long a, int m) {
    long long r = a % m;
    return (int)(r < 0 ? r + m : r);
}

static int64_t ceil_div(int64_t v, int64_t d) {
    return (v + d - 1) / d;
}

static int64_t round_up(int64_t v, int64_t a) {
    return ceil_div(v, a) * a;
}

/* The largest v' <= v whose global coordinate (phase + v') is a multiple of the alignment. */
static int64_t align_down(int64_t v, int phase, int a) {
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
    const int64_t A = L->align, M = L->margin, slack = A > 1 ? A : 0;
    int64_t smax = ((int64_t)window_max - 2 * M - slack) / A * A;
    if (smax < A) smax = A;
    L->nx = ceil_div(L->W, smax);
    L->Sx = round_up(ceil_div(L->W, L->nx), A);
    L->Sy = WC_MIN(WC_PREDICT_STRIP, round_up(L->H, A));
    L->ny = ceil_div(L->H, L->Sy);
    L->Tx = L->Sx + 2 * M + slack;
    L->Ty = L->Sy + 2 * M + slack;
}

static void window_at(const layout *L, int64_t strip, int64_t col, window *w) {
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
static int64_t choose_group(const layout *L, int R) {
    int64_t gmax = WC_MIN(L->ny, WC_MAX(1, ceil_div(8 * (int64_t)R, L->nx)));
    const int64_t strip_bytes = (int64_t)sizeof(float) * L->Sy * L->W;
    while (gmax > 1 && gmax * strip_bytes > ((int64_t)64 << 20)) gmax--;
    int64_t best = 1, best_cost = INT64_MAX;
    for (int64_t g = 1; g <= gmax; g++) {
        int64_t cost = 0;
        for (int64_t s = 0; s < L->ny; s += g) cost += ceil_div(WC_MIN(g, L->ny - s) * L->nx, R);
        if (cost <= best_cost) best_cost = cost, best = g;
    }
    return best;
}

/* Window slots of a round per rank: the most windows any rank has in it. */
static int64_t round_slots(int64_t nwin, int R) {
    return ceil_div(nwin, R);
}

/* This node's physical memory in bytes (0 when unknown). */
static double node_memory(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    return pages > 0 && page > 0 ? (double)pages * (double)page : 0;
}

/* What a rank holds for the rounds, in bytes: its run of cores (send), and on rank 0 the round's
 * rows plus another rank's run (recv). In double, to compare and report whatever the size; what
 * is allocated later is this, in size_t, once it has been found to fit. */
static double round_bytes(const layout *L, int64_t G, int rank, int R) {
    const double core = (double)L->Sx * (double)L->Sy * sizeof(float);
    const double share = (double)round_slots(G * L->nx, R);
    double b = core * share;
    if (rank == 0) b += (double)G * (double)L->Sy * (double)L->W * sizeof(float);
    if (rank == 0 && R > 1) b += core * share;
    return b;
}

/* Refuses, before any work, a layout whose buffers cannot fit: the rows of one strip of the
 * raster's whole width, which rank 0 assembles (256 rows x 4 bytes per pixel of width), may
 * take more than the node has. Half of the node's memory is the limit: the network, GDAL's
 * cache and the other ranks on the node need the rest. */
static int check_fits(const layout *L, int64_t G, const char *path, int rank, int R) {
    const double need = round_bytes(L, G, rank, R), have = node_memory();
    if (have <= 0 || need <= have / 2) return WC_OK;
    char bn[16], bh[16];
    /* the widest raster that would fit: the bytes grow linearly with the width */
    const double fit = floor(have / 2 / (need / (double)L->W));
    wc_error("%s is %" PRId64 "x%" PRId64 " px: mapping it takes rounds of %" PRId64 " rows of "
             "its full width (4 bytes a pixel), and rank %d would need %s for them, more than "
             "half of this node's memory (%s): split the raster into pieces at most %.0f px wide "
             "(gdal_translate -srcwin, or one VRT per column of tiles) and map each; pieces cut "
             "from one grid get the same values away from their edges",
             path, L->W, L->H, G * L->Sy, rank, wc_fmt_bytes(bn, sizeof bn, need),
             wc_fmt_bytes(bh, sizeof bh, have), fit);
    return WC_ERR;
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
        if (wc_same_file(path, inputs[i])) {
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

/* The map is written in two files. The working GeoTIFF receives the rounds' rows and the class
 * band; it is sparse (SPARSE_OK: tiles entirely nodata are not stored, tiles never written are
 * not filled in at close), so abandoning it after a stop or an error costs nothing: a dense
 * GeoTIFF fills every missing tile when it is closed, gigabytes and minutes for a map of
 * millions of tiles. The map proper is then a complete copy of it (GDAL's CreateCopy to the
 * GTiff or COG driver, every tile present, as any reader expects), which a stop can also
 * interrupt. The copy re-encodes the map once: DEFLATE runs far faster than the network. */
typedef struct writer {
    const wc_predict_config *cfg;
    int W, H, nbands; /* GDAL's sizes: int */
    char *work;       /* the working GeoTIFF */
    char *copy;       /* the map proper, renamed over the target when verified */
    GDALDatasetH ds;  /* the working GeoTIFF, open */
    wc_gdal_errors err;
} writer;

#define GDAL_BEGIN(w) (wc_gdal_errors_push(&(w)->err), (w)->err.failures)
#define GDAL_END()    wc_gdal_errors_pop()

static const char *gdal_why(const writer *w) {
    return w->err.failures ? w->err.last : "unknown error";
}

/* The map's GeoTIFF layout: tiles of one strip's height, so each strip completes a row of tiles;
 * band-sequential, so the class band, written after the whole probability band, leaves the
 * first band's tiles untouched. */
static char **geotiff_options(void) {
    char **opt = NULL;
    opt = CSLSetNameValue(opt, "TILED", "YES");
    opt = CSLSetNameValue(opt, "BLOCKXSIZE", "256");
    opt = CSLSetNameValue(opt, "BLOCKYSIZE", CPLSPrintf("%d", WC_PREDICT_STRIP));
    opt = CSLSetNameValue(opt, "COMPRESS", "DEFLATE");
    opt = CSLSetNameValue(opt, "PREDICTOR", "3");
    opt = CSLSetNameValue(opt, "BIGTIFF", "IF_SAFER");
    opt = CSLSetNameValue(opt, "INTERLEAVE", "BAND");
    return opt;
}

static int writer_create(writer *w, const wc_predict_config *cfg, const wc_raster *r,
                         const wc_model *m, const layout *L) {
    memset(w, 0, sizeof *w);
    w->cfg = cfg;
    w->W = r->width, w->H = r->height;
    w->nbands = cfg->classes ? 2 : 1;
    w->work = wc_temp_path(cfg->out, "tmp");
    w->copy = wc_temp_path(cfg->out, "out");
    int before = GDAL_BEGIN(w);
    GDALDriverH drv = GDALGetDriverByName("GTiff");
    char **opt = geotiff_options();
    opt = CSLSetNameValue(opt, "SPARSE_OK", "TRUE");
    opt = CSLSetNameValue(opt, "ZLEVEL", "1"); /* it is read once, by the copy */
    w->ds = drv ? GDALCreate(drv, w->work, w->W, w->H, w->nbands, GDT_Float32, opt) : NULL;
    CSLDestroy(opt);
    int rc = WC_OK;
    if (!w->ds) {
        wc_error("cannot create %s (for %s): %s", w->work, cfg->out, gdal_why(w));
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
                        CPLSPrintf("windows %" PRId64 "x%" PRId64 ", cores %" PRId64 "x%" PRId64
                                   ", margin %d, alignment %d on the %s grid (pixel 0,0 = "
                                   "global %lld,%lld)",
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
        wc_error("cannot set up %s (for %s): %s", w->work, cfg->out, gdal_why(w));
        rc = WC_ERR;
    }
out:
    GDAL_END();
    return rc;
}

static int writer_rows(writer *w, int band, int64_t y0, int64_t n, float *rows, GDALRWFlag rw) {
    /* rows of the raster: GDAL's int sizes hold them */
    WC_ASSERT(y0 >= 0 && n > 0 && y0 + n <= w->H);
    int before = GDAL_BEGIN(w);
    CPLErr e = GDALRasterIO(GDALGetRasterBand(w->ds, band), rw, 0, (int)y0, w->W, (int)n, rows,
                            w->W, (int)n, GDT_Float32, 0, 0);
    int bad = e != CE_None || w->err.failures != before;
    GDAL_END();
    if (bad) {
        wc_error("%s rows %" PRId64 "-%" PRId64 " of band %d of %s (for %s) failed: %s",
                 rw == GF_Write ? "writing" : "reading back", y0, y0 + n - 1, band, w->work,
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
    unlink_with_aux(w->work);
    unlink_with_aux(w->copy);
}

static void writer_free(writer *w) {
    free(w->work);
    free(w->copy);
    memset(w, 0, sizeof *w);
}

/* ---- classes ----------------------------------------------------------------------------- */

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

/* Second pass over the finished probability band: the class band, strip by strip. Returns an
 * exit status: a stop signal on this rank (only rank 0 writes) ends it with WC_EXIT_STOPPED. */
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
        wc_error("cannot describe the class band of %s: %s", w->work, gdal_why(w));
        return WC_EXIT_RUNTIME;
    }
    wc_info("predict: classes at quantiles %s of %lld valid pixels: breaks %s; shares %s", q,
            (long long)nvalid, nvalid ? br : "none", fr);
    for (int64_t y0 = 0; y0 < w->H; y0 += WC_PREDICT_STRIP) {
        if (wc_stop_requested()) return WC_EXIT_STOPPED;
        int64_t n = WC_MIN(WC_PREDICT_STRIP, w->H - y0);
        if (writer_rows(w, 1, y0, n, rows, GF_Read) != WC_OK) return WC_EXIT_RUNTIME;
        for (size_t i = 0; i < (size_t)n * (size_t)w->W; i++)
            rows[i] = rows[i] == (float)WC_PREDICT_NODATA ? (float)WC_PREDICT_NODATA
                                                          : (float)class_of(rows[i], breaks);
        if (writer_rows(w, 2, y0, n, rows, GF_Write) != WC_OK) return WC_EXIT_RUNTIME;
    }
    return WC_EXIT_OK;
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

/* GDAL's progress callback for the copy, which can take minutes on a large map: returning FALSE
 * makes GDAL abandon it when a stop signal arrives. */
static int CPL_STDCALL copy_progress(double done, const char *msg, void *arg) {
    (void)done, (void)msg, (void)arg;
    return !wc_stop_requested();
}

/* The map proper: the working GeoTIFF copied, every tile present, as a GeoTIFF of the same
 * layout or (--cog) a Cloud-Optimized GeoTIFF with overviews. Returns an exit status. */
static int writer_copy(writer *w) {
    const wc_predict_config *cfg = w->cfg;
    const double t0 = wc_now();
    int before = GDAL_BEGIN(w);
    GDALDriverH drv = GDALGetDriverByName(cfg->cog ? "COG" : "GTiff");
    GDALDatasetH src = GDALOpenEx(w->work, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    char **opt = NULL;
    if (cfg->cog) {
        opt = CSLSetNameValue(opt, "COMPRESS", "DEFLATE");
        opt = CSLSetNameValue(opt, "PREDICTOR", "YES");
        opt = CSLSetNameValue(opt, "BIGTIFF", "IF_SAFER");
        opt = CSLSetNameValue(opt, "BLOCKSIZE", "256"); /* overviews down to one tile */
        opt = CSLSetNameValue(opt, "OVERVIEWS", "AUTO");
        /* probabilities average well (nodata skipped); class numbers must not be averaged, and
         * the COG driver takes one resampling for all bands */
        opt = CSLSetNameValue(opt, "RESAMPLING", w->nbands == 2 ? "NEAREST" : "AVERAGE");
    } else {
        opt = geotiff_options();
    }
    GDALDatasetH dst =
        drv && src ? GDALCreateCopy(drv, w->copy, src, FALSE, opt, copy_progress, NULL) : NULL;
    CSLDestroy(opt);
    if (dst) GDALClose(dst); /* written and flushed here: errors surface now */
    if (src) GDALClose(src);
    const int bad = !drv || !src || !dst || w->err.failures != before;
    GDAL_END();
    if (bad && wc_stop_requested()) return WC_EXIT_STOPPED;
    if (bad) {
        wc_error("writing %s (the map for %s, a copy of %s) failed: %s", w->copy, cfg->out,
                 w->work, !drv ? "GDAL lacks the driver" : gdal_why(w));
        return WC_EXIT_RUNTIME;
    }
    unlink_with_aux(w->work);
    if (cfg->cog)
        wc_info("predict: Cloud-Optimized GeoTIFF with overviews written in %.1f s",
                wc_now() - t0);
    return WC_EXIT_OK;
}

/* Closes the working GeoTIFF, copies it into the map proper, verifies the copy and renames it
 * into place. Returns an exit status: a stop signal before the rename ends it with
 * WC_EXIT_STOPPED (the target is untouched then). */
static int writer_finish(writer *w, const wc_raster *r) {
    const wc_predict_config *cfg = w->cfg;
    /* write errors (a full disk) surface when GDAL flushes at close */
    int before = GDAL_BEGIN(w);
    GDALClose(w->ds);
    w->ds = NULL;
    int bad = w->err.failures != before;
    GDAL_END();
    if (bad) {
        wc_error("writing %s (for %s) failed: %s", w->work, cfg->out, gdal_why(w));
        return WC_EXIT_RUNTIME;
    }
    if (wc_stop_requested()) return WC_EXIT_STOPPED;
    int status = writer_copy(w);
    if (status != WC_EXIT_OK) return status;
    const char *final = w->copy;
    if (verify(w, final, r) != WC_OK || wc_fsync_path(final, 0) != WC_OK) return WC_EXIT_RUNTIME;
    /* the last moment a stop can leave the target as it was */
    if (wc_stop_requested()) return WC_EXIT_STOPPED;
    if (rename(final, cfg->out) != 0) {
        wc_error("cannot rename %s to %s: %s", final, cfg->out, strerror(errno));
        return WC_EXIT_RUNTIME;
    }
    /* the sidecar (category names) follows its file; a stale one from an earlier map would
     * describe this one wrongly */
    char *faux = aux_path(final), *oaux = aux_path(cfg->out);
    int rc = WC_EXIT_OK;
    if (access(faux, F_OK) == 0) {
        if (rename(faux, oaux) != 0) {
            wc_error("cannot rename %s to %s: %s", faux, oaux, strerror(errno));
            rc = WC_EXIT_RUNTIME;
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

/* What a pixel of a window is, in predictor.valid. */
enum {
    PX_NODATA = 0, /* a feature is nodata, NaN or Inf, or the pixel is outside the raster */
    PX_VALID = 1,
    PX_RANGE = 2, /* a feature is a value whose normalized value is beyond float's range */
};

typedef struct predictor {
    const layout *L;
    wc_raster *r;
    wc_model *m;
    int *bands;      /* (nfeat) */
    wc_dtype type;   /* the feature bands are read as */
    void *raw;       /* (nfeat, Ty, Tx) as read */
    uint8_t *valid;  /* (Ty, Tx) PX_* */
    double *inv_std; /* (nfeat) */
    int64_t windows_run, windows_skipped;
    /* core pixels (each pixel of the map is in one core) written as nodata because a feature
     * is beyond float's range once normalized, or because the network's output was not finite */
    int64_t beyond_range, nonfinite;
} predictor;

static inline int is_nodata(const wc_band *b, double v) {
    return !isfinite(v) || (b->has_nodata && v == b->nodata);
}

/* The network input x (nfeat, Ty, Tx) of window w and the state of its pixels, from one reading
 * of each value: a pixel is valid when every feature is a value (not nodata, NaN or Inf) whose
 * normalized value, computed by wc_normalize exactly as training computes it, is finite in
 * float. Invalid pixels, and everything outside the raster, are 0: the network cannot tell an
 * edge from nodata, nor a window that overhangs the raster from one that does not. */
static void window_input(predictor *p, const window *w, float *x) {
    const layout *L = p->L;
    const int nf = p->m->nfeat;
    const size_t Tx = (size_t)L->Tx, plane = Tx * (size_t)L->Ty;
    /* the part of the window inside the raster, relative to the window */
    const size_t x0 = (size_t)(WC_MAX(w->wx, 0) - w->wx), y0 = (size_t)(WC_MAX(w->wy, 0) - w->wy);
    const size_t x1 = (size_t)(WC_MIN(w->wx + L->Tx, L->W) - w->wx);
    const size_t y1 = (size_t)(WC_MIN(w->wy + L->Ty, L->H) - w->wy);
    memset(p->valid, PX_NODATA, plane);
    for (size_t y = y0; y < y1; y++) memset(p->valid + y * Tx + x0, PX_VALID, x1 - x0);
    memset(x, 0, sizeof(float) * plane * nf);
    for (int c = 0; c < nf; c++) {
        const wc_band *b = &p->r->bands[p->bands[c] - 1];
        const double mean = p->m->mean[c], inv = p->inv_std[c];
        float *xc = x + c * plane;
        for (size_t y = y0; y < y1; y++)
            for (size_t i = y * Tx + x0; i < y * Tx + x1; i++) {
                if (p->valid[i] == PX_NODATA) continue;
                const double v = wc_dtype_get(p->raw, p->type, c * plane + i);
                if (is_nodata(b, v)) {
                    p->valid[i] = PX_NODATA;
                    continue;
                }
                const float xn = wc_normalize(v, mean, inv);
                if (isfinite(xn))
                    xc[i] = xn;
                else
                    p->valid[i] = PX_RANGE;
            }
    }
    /* a pixel found invalid in a later channel has values in the earlier ones */
    for (size_t y = y0; y < y1; y++)
        for (size_t i = y * Tx + x0; i < y * Tx + x1; i++)
            if (p->valid[i] != PX_VALID)
                for (int c = 0; c < nf; c++) x[c * plane + i] = 0.0f;
}

/* Valid pixels of window w's core; its pixels beyond float's range are counted in p. */
static int64_t core_census(predictor *p, const window *w) {
    const size_t Tx = (size_t)p->L->Tx;
    int64_t valid = 0;
    for (int64_t y = 0; y < w->ch; y++) {
        const uint8_t *v = p->valid + (size_t)(w->cy + y - w->wy) * Tx + (size_t)(w->cx - w->wx);
        for (int64_t x = 0; x < w->cw; x++) {
            valid += v[x] == PX_VALID;
            p->beyond_range += v[x] == PX_RANGE;
        }
    }
    return valid;
}

/* A valid pixel's probability from its logit, or nodata (counted in *bad) when the network's
 * output is not finite: an infinite logit is a float overflow inside the network, not a
 * certainty, and NaN is no probability at all. Nothing else may reach the map, its histogram
 * or its picture. */
static float probability(float logit, int64_t *bad) {
    if (isfinite(logit)) {
        const double q = wc_sigmoid(logit);
        if (q >= 0.0 && q <= 1.0) return (float)q;
    }
    (*bad)++;
    return (float)WC_PREDICT_NODATA;
}

/* Fills core (ch rows of cw) with the probabilities of window w's core. */
static int predict_window(predictor *p, const window *w, float *core) {
    const layout *L = p->L;
    const int nf = p->m->nfeat;
    if (wc_raster_read(p->r, w->wx, w->wy, L->Tx, L->Ty, p->bands, nf, p->type, p->raw) !=
        WC_OK) {
        wc_error("predict: window at x=%" PRId64 " y=%" PRId64 " of %s could not be read", w->wx,
                 w->wy, p->r->path);
        return WC_ERR;
    }
    window_input(p, w, wc_net_input(p->m->net));
    const size_t ncore = (size_t)w->cw * (size_t)w->ch, Tx = (size_t)L->Tx;
    if (core_census(p, w) == 0) { /* nothing to predict: skip the network (deterministically) */
        for (size_t i = 0; i < ncore; i++) core[i] = (float)WC_PREDICT_NODATA;
        p->windows_skipped++;
        return WC_OK;
    }
    wc_net_forward(p->m->net, 1);
    const float *logit = wc_net_output(p->m->net);
    for (int64_t y = 0; y < w->ch; y++) {
        const size_t i0 = (size_t)(w->cy + y - w->wy) * Tx + (size_t)(w->cx - w->wx);
        float *out = core + (size_t)y * (size_t)w->cw;
        for (int64_t x = 0; x < w->cw; x++)
            out[x] = p->valid[i0 + x] == PX_VALID ? probability(logit[i0 + x], &p->nonfinite)
                                                  : (float)WC_PREDICT_NODATA;
    }
    p->windows_run++;
    return WC_OK;
}

/* Floats the cores of windows [lo, hi) of the round starting at strip s0 occupy. */
static size_t cores_floats(const layout *L, int64_t s0, int64_t lo, int64_t hi) {
    size_t n = 0;
    for (int64_t k = lo; k < hi; k++) {
        window w;
        window_at(L, s0 + k / L->nx, k % L->nx, &w);
        n += (size_t)w.cw * (size_t)w.ch;
    }
    return n;
}

/* Copies packed cores of windows [lo, hi) into the round's rows (which start at raster row y0). */
static void unpack(const layout *L, int64_t s0, int64_t lo, int64_t hi, const float *packed,
                   float *rows, int64_t y0) {
    for (int64_t k = lo; k < hi; k++) {
        window w;
        window_at(L, s0 + k / L->nx, k % L->nx, &w);
        for (int64_t y = 0; y < w.ch; y++)
            memcpy(rows + (size_t)(w.cy - y0 + y) * (size_t)L->W + (size_t)w.cx,
                   packed + (size_t)y * (size_t)w.cw, sizeof(float) * (size_t)w.cw);
        packed += (size_t)w.cw * (size_t)w.ch;
    }
}

/* ---- the command ------------------------------------------------------------------------- */

/* The network rebuilt for the window size, with the checkpoint's parameters. */
static int build_window_net(wc_model *m, const layout *L) {
    if (L->Tx > INT_MAX || L->Ty > INT_MAX) {
        wc_error("%s: the network cannot be built for %" PRId64 "x%" PRId64 " windows", m->path,
                 L->Tx, L->Ty);
        return WC_ERR;
    }
    wc_net *big = wc_net_create(m->net->arch, m->net->spec, m->nfeat, 1, (int)L->Ty, (int)L->Tx,
                                WC_NET_INFER);
    if (!big) {
        wc_error("%s: the network cannot be built for %" PRId64 "x%" PRId64 " windows", m->path,
                 L->Tx, L->Ty);
        return WC_ERR;
    }
    WC_ASSERT(big->nparams == m->net->nparams);
    memcpy(big->params, m->net->params, sizeof(float) * big->nparams);
    wc_net_destroy(m->net);
    m->net = big;
    return WC_OK;
}

/* One rank's part of the mapping, from round to round. */
typedef struct mapping {
    const wc_predict_config *cfg;
    const layout *L;
    int rank, R;
    predictor *p;
    writer *w;               /* rank 0 */
    float *send;             /* (share, Sy, Sx) this rank's cores of a round, packed */
    float *recv;             /* rank 0, R > 1: another rank's cores */
    float *rows;             /* rank 0: (G x Sy, W) the round's rows */
    int64_t *hist;           /* rank 0, --classes: (CLASS_BINS) */
    int64_t npixels, nvalid; /* rank 0: pixels written, and those of them that are not nodata */
    int write_failed;        /* rank 0 */
    pacer pc;
    double t_map, last_log;
} mapping;

static void report_stop(const mapping *mp, int64_t s0, int64_t s1) {
    const layout *L = mp->L;
    char when[48] = "";
    if (wc_stop_signal())
        snprintf(when, sizeof when, " (%.1f s after it)", wc_stop_seconds_since());
    wc_info("predict: stopped by %s%s at rows %" PRId64 "-%" PRId64 ": the map is not written (%s, "
            "if it exists, is untouched); rerun the same command to draw it",
            wc_stop_signal() ? strsignal(wc_stop_signal()) : "a signal on another rank", when,
            s0 * L->Sy, WC_MIN(L->H, s1 * L->Sy) - 1, mp->cfg->out);
}

/* This rank's windows of the round of strips [s0, s1) into mp->send, agreeing with the other
 * ranks on failures and stops as the pacer says. Returns the agreed status. */
static int compute_round(mapping *mp, int64_t s0, int64_t s1, size_t *off) {
    const layout *L = mp->L;
    const int64_t nwin = (s1 - s0) * L->nx, slots = round_slots(nwin, mp->R);
    long lo, hi;
    wc_dist_share((long)nwin, mp->rank, mp->R, &lo, &hi);
    int failed = 0;
    *off = 0;
    /* every rank walks the same number of slots, so the agreements are the same collectives on
     * every rank; a rank with fewer windows, or one that failed, only takes part in them */
    for (int64_t j = 0; j < slots; j++) {
        if (!failed && lo + j < hi) {
            window wd;
            window_at(L, s0 + (lo + j) / L->nx, (lo + j) % L->nx, &wd);
            const double t0 = wc_now();
            if (predict_window(mp->p, &wd, mp->send + *off) != WC_OK) failed = 1;
            mp->pc.slowest = fmax(mp->pc.slowest, wc_now() - t0);
            *off += (size_t)wd.cw * (size_t)wd.ch;
        }
        if (++mp->pc.since >= mp->pc.every && j + 1 < slots) {
            int status = agree_round(&mp->pc, failed || mp->write_failed);
            if (status != WC_EXIT_OK) return status;
        }
    }
    return agree_round(&mp->pc, failed || mp->write_failed);
}

/* Rank 0: the round's cores, its own and every other rank's, into the round's rows; counted
 * (nodata, the class histogram) and written. */
static void write_round(mapping *mp, int64_t s0, int64_t s1) {
    const layout *L = mp->L;
    const int64_t nwin = (s1 - s0) * L->nx;
    const int64_t y0 = s0 * L->Sy, y1 = WC_MIN(L->H, s1 * L->Sy);
    for (int q = 0; q < mp->R; q++) {
        long qlo, qhi;
        wc_dist_share((long)nwin, q, mp->R, &qlo, &qhi);
        const float *cores = mp->send;
        if (q > 0) {
            size_t n = cores_floats(L, s0, qlo, qhi);
            if (!n) continue;
            wc_dist_recv(mp->recv, sizeof(float) * n, q);
            cores = mp->recv;
        }
        unpack(L, s0, qlo, qhi, cores, mp->rows, y0);
    }
    const size_t count = (size_t)(y1 - y0) * (size_t)L->W;
    for (size_t i = 0; i < count; i++) {
        if (mp->rows[i] == (float)WC_PREDICT_NODATA) continue;
        mp->nvalid++;
        if (mp->hist) mp->hist[prob_bin(mp->rows[i])]++;
    }
    mp->npixels += (int64_t)count;
    if (writer_rows(mp->w, 1, y0, y1 - y0, mp->rows, GF_Write) != WC_OK) mp->write_failed = 1;
    const double now = wc_now();
    if (s1 == L->ny || now - mp->last_log >= 5.0) {
        const double done = (double)y1 / (double)L->H, el = now - mp->t_map;
        wc_info("predict: rows 0-%" PRId64 " of %" PRId64 " (%.0f%%): %.1f s, %.3f Mpx/s, about "
                "%.0f s left",
                y1 - 1, L->H, 100 * done, el, (double)y1 * (double)L->W / 1e6 / el,
                el / done * (1 - done));
        mp->last_log = now;
    }
}

/* Rank 0, once: the pixels written as nodata for their values rather than for nodata inputs
 * (counts summed over the ranks). */
static void report_invalid(const char *path, const int64_t counts[2]) {
    if (counts[0])
        wc_warn("predict: %s: %" PRId64 " pixels have a feature value beyond float's range once "
                "normalized (far outside the training range): written as nodata",
                path, counts[0]);
    if (counts[1])
        wc_warn("predict: %s: %" PRId64 " pixels gave a non-finite network output (feature "
                "values far outside the training range?): written as nodata",
                path, counts[1]);
}

/* Rank 0 after mapping: classes, close, COG, verify, rename, picture. Returns an exit status. */
static int finish_map(mapping *mp, const wc_raster *r, int *have_writer) {
    const wc_predict_config *cfg = mp->cfg;
    int status = mp->write_failed ? WC_EXIT_RUNTIME : WC_EXIT_OK;
    if (status == WC_EXIT_OK && cfg->classes)
        status = writer_classes(mp->w, mp->hist, mp->nvalid, mp->rows);
    if (status == WC_EXIT_OK) status = writer_finish(mp->w, r);
    if (status == WC_EXIT_STOPPED)
        wc_info("predict: stopped by %s while finishing the map: it is not written (%s, if it "
                "exists, is untouched); rerun the same command to draw it",
                strsignal(wc_stop_signal()), cfg->out);
    if (status != WC_EXIT_OK) return status;
    *have_writer = 0; /* renamed: nothing to clean up */
    if (!cfg->png) return WC_EXIT_OK;
    /* the quick-look reads the finished map back: bounded memory, and it shows exactly what
     * was written */
    wc_quicklook_info qi;
    if (wc_quicklook_write(cfg->out, 1, cfg->png, cfg->png_max_side, &qi) != WC_OK) {
        wc_error("the risk map %s is complete, but its picture %s is not", cfg->out, cfg->png);
        return WC_EXIT_RUNTIME;
    }
    wc_info("predict: quick-look %s: %dx%d px (map %dx%d, %s, legend %d px)", cfg->png, qi.width,
            qi.height, qi.map_width, qi.map_height,
            qi.factor > 1 ? CPLSPrintf("downsampled %dx", qi.factor) : "full resolution",
            qi.legend_height);
    return WC_EXIT_OK;
}

int wc_predict_run(const wc_predict_config *cfg) {
    const double t_start = wc_now();
    const int rank = wc_dist_rank(), R = wc_dist_size();
    wc_net_set_threads(cfg->threads > 0 ? cfg->threads : 1); /* OpenBLAS at one */
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
    mapping mp = {.cfg = cfg, .L = &L, .rank = rank, .R = R, .p = &p, .w = &w};
    int64_t G = 1; /* strips per round */
    int *bands = NULL;
    int status = WC_EXIT_OK, have_writer = 0;
    char why[4096];

    /* 1. every rank: the raster, the model, the band matching, the layout (refused when it
     * cannot fit), the network */
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
        L.margin = (int)round_up(L.radius, L.align);
        anchor(&L, &r);
        plan_layout(&L, cfg->window > 0 ? cfg->window : WC_PREDICT_WINDOW);
        G = choose_group(&L, R);
        if (check_fits(&L, G, r.path, rank, R) != WC_OK || build_window_net(&m, &L) != WC_OK)
            status = WC_EXIT_RUNTIME;
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
    wc_info("predict: %s (%dx%d px) with %s (step %ld, %s): %" PRId64 " strips x %" PRId64
            " windows of %" PRId64 "x%" PRId64 " px (cores %" PRId64 "x%" PRId64 ", margin %d >= "
            "receptive radius %d, alignment %d on the %s grid); %d rank%s x %d thread%s; network "
            "activations %s per rank",
            r.path, r.width, r.height, m.path, m.step, m.net->arch, L.ny, L.nx, L.Tx, L.Ty, L.Sx,
            L.Sy, L.margin, L.radius, L.align, L.anchored ? "global" : "raster's", R,
            R > 1 ? "s" : "", cfg->threads, cfg->threads > 1 ? "s" : "",
            wc_fmt_bytes(mem, sizeof mem, (double)(plan.activations + plan.workspace)));

    /* 3. the rounds: compute (agreeing as the pacer says), send to rank 0, which writes. The
     * sizes were checked to fit (check_fits), so these products do not overflow. */
    const size_t core_floats = (size_t)L.Sx * (size_t)L.Sy;
    const size_t share = (size_t)round_slots(G * L.nx, R);
    mp.send = WC_ALLOC(sizeof(float) * core_floats * share);
    if (rank == 0) {
        mp.rows = WC_ALLOC(sizeof(float) * (size_t)G * (size_t)L.Sy * (size_t)L.W);
        if (R > 1) mp.recv = WC_ALLOC(sizeof(float) * core_floats * share);
        if (cfg->classes) mp.hist = WC_CALLOC(CLASS_BINS, sizeof(int64_t));
    }
    p.L = &L, p.r = &r, p.m = &m, p.bands = bands;
    p.type = r.bands[bands[0] - 1].type;
    for (int c = 1; c < m.nfeat; c++) p.type = wc_dtype_union(p.type, r.bands[bands[c] - 1].type);
    p.raw = WC_ALLOC(wc_dtype_size(p.type) * (size_t)m.nfeat * (size_t)L.Tx * (size_t)L.Ty);
    p.valid = WC_ALLOC((size_t)L.Tx * (size_t)L.Ty);
    p.inv_std = WC_ALLOC(sizeof(double) * m.nfeat);
    for (int c = 0; c < m.nfeat; c++) p.inv_std[c] = 1.0 / m.std[c];
    mp.pc.every = 1; /* until a window has been timed */
    mp.t_map = mp.last_log = wc_now();
    for (int64_t s0 = 0; s0 < L.ny; s0 += G) {
        const int64_t s1 = WC_MIN(L.ny, s0 + G);
        size_t off;
        status = compute_round(&mp, s0, s1, &off);
        if (status == WC_EXIT_STOPPED) report_stop(&mp, s0, s1);
        if (status != WC_EXIT_OK) goto out;
        if (rank == 0)
            write_round(&mp, s0, s1);
        else if (off)
            wc_dist_send(mp.send, sizeof(float) * off, 0);
    }
    const double t_computed = wc_now();
    const double rss_mapped = (double)wc_peak_rss_bytes();
    int64_t invalid[2] = {p.beyond_range, p.nonfinite};
    wc_dist_sum_i64(invalid, 2);

    /* 4. rank 0: classes, close, COG, verify, rename, picture */
    if (rank == 0) {
        report_invalid(r.path, invalid);
        status = finish_map(&mp, &r, &have_writer);
    }
    double rss[2] = {rss_mapped, (double)wc_peak_rss_bytes()};
    wc_dist_max_f64(rss, 2);
    status = agree(status);
    if (status == WC_EXIT_OK) {
        double total = wc_now() - t_start, mpx = (double)L.W * (double)L.H / 1e6;
        char rb[16], rm[16];
        wc_info("predict: wrote %s%s: %" PRId64 "x%" PRId64 " px, %.1f%% nodata; %.2f Mpx in "
                "%.1f s = %.3f Mpx/s (mapping %.1f s = %.3f Mpx/s); %" PRId64 " windows on %d "
                "rank%s; peak RSS per rank (max) %s after mapping, %s at the end",
                cfg->out, cfg->cog ? " (COG)" : "", L.W, L.H,
                mp.npixels ? 100.0 * (double)(mp.npixels - mp.nvalid) / (double)mp.npixels : 0.0,
                mpx, total, mpx / total, t_computed - mp.t_map, mpx / (t_computed - mp.t_map),
                L.nx * L.ny, R, R > 1 ? "s" : "", wc_fmt_bytes(rm, sizeof rm, rss[0]),
                wc_fmt_bytes(rb, sizeof rb, rss[1]));
    }
out:
    if (have_writer) writer_abort(&w);
    writer_free(&w);
    free(mp.send), free(mp.recv), free(mp.rows), free(mp.hist);
    free(p.raw), free(p.valid), free(p.inv_std);
    free(bands);
    wc_model_free(&m);
    wc_raster_close(&r);
    GDALSetCacheMax64(cache_was);
    return status;
}
