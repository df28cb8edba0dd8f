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
 * Writing. Rank 0 checks the output paths (wc_check_outputs) and creates the map's working
 * file before any computing, so an unwritable path fails at once; riskmap.c counts, classifies
 * and publishes the rows it is given (a sparse working file, copied, verified and renamed over
 * the target by the raster writer). An error on any rank ends the run on every rank through a
 * small agreement (wc_dist_max_f64 of the status) before the next collective step.
 *
 * Not here: training, the network's arithmetic (net.c), matching the raster's bands to the
 * model's inputs (bandmap.c), the map's file and classes (riskmap.c), GDAL's file handling
 * (rwriter.c), the picture (quicklook.c). */
#include "wildcpu/predict.h"

#include <cblas.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wildcpu/agree.h"
#include "wildcpu/bandmap.h"
#include "wildcpu/ckpt.h"
#include "wildcpu/cpuinfo.h"
#include "wildcpu/dataset.h"
#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/infer.h"
#include "wildcpu/json.h"
#include "wildcpu/labels.h"
#include "wildcpu/layers.h"
#include "wildcpu/model.h"
#include "wildcpu/net.h"
#include "wildcpu/quicklook.h"
#include "wildcpu/raster.h"
#include "wildcpu/riskmap.h"
#include "wildcpu/rundir.h"
#include "wildcpu/score.h"
#include "wildcpu/stop.h"
#include "wildcpu/util.h"

const char *const WC_PREDICT_CLASS_NAMES[WC_PREDICT_NCLASSES] = {"low", "moderate", "high",
                                                                 "very high", "extreme"};
const double WC_PREDICT_CLASS_QUANTILES[WC_PREDICT_NCLASSES - 1] = {0.5, 0.75, 0.9, 0.975};

const char WC_EVALUATE_HELP[] =
    "wildcpu evaluate --tiles PATH --checkpoint PATH [--labels PATH] [--label-band B]\n"
    "                 [--out metrics.json] [--map risk.tif] [--threads N]\n"
    "\n"
    "Scores a trained model on any labelled raster (another region, another year): runs the\n"
    "prediction over the whole raster, exactly as `wildcpu predict` does (distributed, the same\n"
    "bits on any number of ranks), and computes against its labels the metrics validation\n"
    "computes during training: AUC-PR (average precision), ROC-AUC, best F1 and its\n"
    "threshold, precision and recall at 0.5, Brier score, the loss, the base rate, and the\n"
    "reliability (calibration) in 10 bins. A pixel counts when the map has a probability for it\n"
    "and its label is not nodata.\n"
    "\n"
    "  --tiles PATH        the raster; its bands are matched to the model's inputs as predict\n"
    "                      does\n"
    "  --checkpoint PATH   a checkpoint file, or a run directory (its best.wcp, else its newest\n"
    "                      valid checkpoint)\n"
    "  --labels PATH       labels from elsewhere: a raster (on the grid, or warped onto it) or\n"
    "                      burned-area polygons (rasterized onto the grid; the derived raster is\n"
    "                      kept beside --out, else beside --map, else in the current\n"
    "                      directory)\n"
    "  --label-band NAME|N the label band, of the tiles or of --labels [the band the model was\n"
    "                      trained on, when it was one of its tiles; else fire]\n"
    "  --out FILE          the metrics as one JSON object (written atomically)\n"
    "  --map FILE          also write the risk map (as predict --out)\n"
    "  --threads N         threads per rank [$SLURM_CPUS_PER_TASK or 1]\n"
    "\n"
    "exit status: 0 scored, 1 runtime error, 2 usage error, 75 stopped by a signal (nothing\n"
    "written; rerun).\n";

const char WC_PREDICT_HELP[] =
    "wildcpu predict --tiles PATH --checkpoint PATH --out risk.tif [--png risk.png] [--cog]\n"
    "                [--classes] [--no-style] [--threads N]\n"
    "\n"
    "Runs the trained network over the whole raster PATH and writes every pixel's burn\n"
    "probability as a Float32 GeoTIFF on the raster's grid (band `fire_risk`, nodata -9999 where\n"
    "any feature is nodata). Works the same as one process and under mpirun/srun: ranks split\n"
    "the windows, rank 0 writes, and the map is bitwise the same on any number of ranks. The map\n"
    "is seamless: a sub-raster gives the same values away from its own edges. Beside the map\n"
    "come NAME.qml, its QGIS style, and NAME.json, a STAC item describing the files.\n"
    "\n"
    "  --tiles PATH        the raster; its bands are matched to the model's inputs by name and\n"
    "                      must have the types they had in training (the label band is ignored)\n"
    "  --checkpoint PATH   a checkpoint file, or a run directory (its best.wcp, else its newest\n"
    "                      valid checkpoint)\n"
    "  --out FILE          the risk map; written to a temporary file, renamed over FILE when\n"
    "                      complete and verified\n"
    "  --png FILE          also a quick-look picture with a legend (RGBA, nodata transparent;\n"
    "                      downsampled to at most 4096 px on the long side)\n"
    "  --cog               write Cloud-Optimized GeoTIFFs (DEFLATE, overviews)\n"
    "  --classes           also NAME_classes.tif: Byte, 0 low, 1 moderate, 2 high, 3 very high,\n"
    "                      4 extreme (255 nodata), split at the 50th, 75th, 90th and 97.5th\n"
    "                      percentiles of the map's probabilities, with a colour table and\n"
    "                      category names (the breaks are in its metadata)\n"
    "  --no-style          no QGIS styles NAME.qml and NAME_classes.qml beside the map (those\n"
    "                      wildcpu wrote are removed)\n"
    "  --threads N         threads per rank [$SLURM_CPUS_PER_TASK or 1]\n"
    "\n"
    "exit status: 0 written, 1 runtime error, 2 usage error, 75 stopped by a signal (nothing\n"
    "written; rerun). See docs/predict.md.\n";

void wc_predict_config_default(wc_predict_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    cfg->threads = 1;
    cfg->rerun = "rerun the same command";
}

/* ---- agreement ------------------------------------------------------------------------------- */

/* While mapping, the ranks agree on failures and stops after every `every` window slots, not
 * only at the end of a round: a round holds up to about 8 windows per rank, tens of seconds on
 * large windows or slow reads, and a stop must be honoured within a few seconds. `every` is
 * derived from the slowest window any rank has computed so far (carried by the agreement
 * itself), so agreements come about every AGREE_SECONDS, and it is the same number on every
 * rank, so every rank makes the same collectives. Agreeing more often costs balance: ranks
 * wait for each other at each agreement. */
#define AGREE_SECONDS   1.0
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

/* ---- window layout --------------------------------------------------------------------------- */

/* Pixel quantities are 64-bit throughout: a raster may be up to INT_MAX pixels on a side, and
 * window origins, core ends and products of sizes go beyond int there. They become int only at
 * the GDAL and network calls, whose values are checked to fit. */
typedef struct layout {
    int64_t W, H;        /* the raster */
    wc_infer_geometry g; /* where windows lie: margin, alignment, phase on the global grid */
    int64_t Sx, Sy;      /* core width of a window, strip height */
    int64_t nx, ny;      /* windows per strip, strips */
} layout;

/* A window's core in raster pixels (clipped to the raster); wc_infer places the window. */
typedef struct window {
    int64_t cx, cy, cw, ch;
} window;

static int64_t ceil_div(int64_t v, int64_t d) {
    return (v + d - 1) / d;
}

static int64_t round_up(int64_t v, int64_t a) {
    return ceil_div(v, a) * a;
}

/* Cores: strips of WC_PREDICT_STRIP rows (= the output's tile height), each cut into nx equal
 * columns (a multiple of the alignment) no wider than the window allows. The window adds the
 * margin on both sides plus `align` pixels of slack for snapping its origin to the grid. */
static void plan_layout(layout *L, int window_max) {
    const int64_t A = L->g.align, M = L->g.margin, slack = A > 1 ? A : 0;
    int64_t smax = ((int64_t)window_max - 2 * M - slack) / A * A;
    if (smax < A) smax = A;
    L->nx = ceil_div(L->W, smax);
    L->Sx = round_up(ceil_div(L->W, L->nx), A);
    L->Sy = WC_MIN(WC_PREDICT_STRIP, round_up(L->H, A));
    L->ny = ceil_div(L->H, L->Sy);
}

static void window_at(const layout *L, int64_t strip, int64_t col, window *w) {
    w->cx = col * L->Sx, w->cy = strip * L->Sy;
    w->cw = WC_MIN(L->Sx, L->W - w->cx), w->ch = WC_MIN(L->Sy, L->H - w->cy);
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

/* What the rounds' buffers take on this rank (alloc_buffers): its run of cores of a round, and
 * evaluate's pixel states of a core; on rank 0 with a map, the round's rows and another rank's
 * run. Within what check_fits let through, so the products do not overflow. */
static size_t round_buffers_bytes(const layout *L, int64_t G, int rank, int R, int map, int score) {
    const size_t core_floats = (size_t)L->Sx * (size_t)L->Sy;
    const size_t share = (size_t)round_slots(G * L->nx, R);
    size_t b = sizeof(float) * core_floats * share + (score ? core_floats : 0);
    if (rank == 0 && map) {
        b += sizeof(float) * (size_t)G * (size_t)L->Sy * (size_t)L->W;
        if (R > 1) b += sizeof(float) * core_floats * share;
    }
    return b;
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

/* ---- the command ----------------------------------------------------------------------------- */

/* One rank's part of the mapping, from round to round. */
typedef struct mapping {
    const wc_predict_config *cfg;
    const layout *L;
    int rank, R;
    wc_infer *inf;              /* the network over this rank's windows */
    wc_infer_plan_bytes window; /* what the window's network and buffers take */
    wc_score *score;            /* evaluate: the labels, and this rank's share of the metrics */
    uint8_t *px;                /* evaluate: (Sy, Sx) one core's pixel states */
    wc_riskmap *map;            /* rank 0: the map being written */
    int64_t G;                  /* strips per round */
    float *send;                /* (share, Sy, Sx) this rank's cores of a round, packed */
    float *recv;                /* rank 0, R > 1: another rank's cores */
    float *rows;                /* rank 0: (G x Sy, W) the round's rows */
    int write_failed;           /* rank 0 */
    pacer pc;
    wc_progress progress; /* of the rounds: rank 0's lines */
    /* evaluate: the label band of the tiles, or of --labels (NULL: WC_LABEL_BAND_NAME) */
    const char *label_band;
    char training_label[WC_BAND_NAME_MAX + 16];
} mapping;

/* The stop, said by rank 0 once every rank agreed on it; where: what was being done ("at rows
 * 0-255"). Collective. */
static void report_stop_where(const mapping *mp, const char *where) {
    wc_dist_agree_stop_origin(); /* every rank: rank 0 names the rank the signal reached */
    char when[48] = "", what[8800];
    if (wc_stop_signal())
        snprintf(when, sizeof when, " (%.1f s after it)", wc_stop_seconds_since());
    wc_riskmap_unwritten(mp->cfg, what, sizeof what);
    char origin[96];
    wc_info("%s: stopped by %s%s %s: %s; %s to %s", mp->cfg->evaluate ? "evaluate" : "predict",
            wc_stop_origin(origin, sizeof origin, "a signal on another rank"), when, where, what,
            mp->cfg->rerun, mp->cfg->evaluate ? "score the model" : "draw it");
}

static void report_stop(const mapping *mp, int64_t s0, int64_t s1) {
    const layout *L = mp->L;
    char where[96];
    snprintf(where, sizeof where, "at rows %" PRId64 "-%" PRId64, s0 * L->Sy,
             WC_MIN(L->H, s1 * L->Sy) - 1);
    report_stop_where(mp, where);
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
            if (wc_infer_core(mp->inf, wd.cx, wd.cy, wd.cw, wd.ch, mp->send + *off, mp->px,
                              (float)WC_PREDICT_NODATA) != WC_OK ||
                (mp->score && wc_score_add(mp->score, wd.cx, wd.cy, wd.cw, wd.ch, mp->send + *off,
                                           mp->px) != WC_OK))
                failed = 1;
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

/* Rank 0: the round's cores, its own and every other rank's, into the round's rows, which go to
 * the map. */
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
    if (wc_riskmap_write(mp->map, y0, y1 - y0, mp->rows) != WC_OK) mp->write_failed = 1;
}

/* Rank 0, after the round that ends at strip s1: a progress line when one is due, and at the
 * end; scoring without a map says it as the map does. */
static void say_progress(mapping *mp, int64_t s1) {
    const layout *L = mp->L;
    if (s1 < L->ny && !wc_progress_due(&mp->progress)) return;
    const int64_t y1 = WC_MIN(L->H, s1 * L->Sy);
    const double done = (double)y1 / (double)L->H, el = wc_progress_elapsed(&mp->progress);
    wc_info("%s: rows 0-%" PRId64 " of %" PRId64 " (%.0f%%): %.1f s, %.3f Mpx/s, about %.0f s "
            "left",
            mp->cfg->evaluate ? "evaluate" : "predict", y1 - 1, L->H, 100 * done, el,
            (double)y1 * (double)L->W / 1e6 / el, wc_progress_left(&mp->progress, done));
}

/* Rank 0, once: the pixels written as nodata for their values rather than for nodata inputs
 * (counts summed over the ranks). In evaluate a pixel whose input is beyond float's range is
 * nodata, left out of the scores; one whose output is not finite is a failure of the model
 * (score.c counts it in bad_outputs where it is labelled, and every metric is undefined), so
 * "left out of the scores" is said of the first only. */
static void report_invalid(const wc_predict_config *cfg, const char *path,
                           const int64_t counts[4]) {
    const char *cmd = cfg->evaluate ? "evaluate" : "predict";
    const char *fate = !cfg->evaluate ? "written as nodata"
                       : cfg->out     ? "written as nodata and left out of the scores"
                                      : "left out of the scores";
    const char *failed = !cfg->evaluate ? "written as nodata"
                         : cfg->out     ? "written as nodata, and where labelled they leave every "
                                          "metric undefined"
                                    : "no prediction, and where labelled they leave every metric "
                                      "undefined";
    if (counts[0])
        wc_warn("%s: %s: %" PRId64 " pixel%s a feature value beyond float's range once "
                "normalized (far outside the training range): %s",
                cmd, path, counts[0], counts[0] == 1 ? " has" : "s have", fate);
    /* (those in windows of ordinary inputs, the model's doing, were refused: refuse_diverged) */
    if (counts[1])
        wc_warn("%s: %s: %" PRId64 " pixel%s a non-finite network output (feature "
                "values far outside the training range?): %s",
                cmd, path, counts[1], counts[1] == 1 ? " gave" : "s gave", failed);
}

/* The angle in degrees between a geotransform's pixel axes (its columns' and its rows'
 * directions, in its CRS): 90 unless it shears its pixels into parallelograms. */
static double axes_angle(const double g[6]) {
    const double c = (g[1] * g[2] + g[4] * g[5]) / (hypot(g[1], g[4]) * hypot(g[2], g[5]));
    return acos(fmin(1, fmax(-1, c))) * 180 / M_PI;
}

/* What the map cannot know on its own, said before any computing (rank 0): ground of another
 * scale or orientation than the model was trained on (the network's receptive field then covers
 * other ground, or a mirrored picture: the map is computed but means something else), and a
 * raster without a geotransform (the map is written on its pixel grid, with the raster's GCPs
 * when it has them). */
static void warn_other_ground(const wc_model *m, const wc_raster *r) {
    wc_raster_warn_unplaced(r, r->gcps > 0
                                   ? "the map is written on its pixel grid with the same GCPs "
                                     "(which place it as they place the raster: gdalwarp), and "
                                     "its pixel size cannot be checked against the model's "
                                     "training data"
                                   : "the map is written on its pixel grid, placed nowhere in a "
                                     "GIS, and its pixel size cannot be checked against the "
                                     "model's training data");
    char gt_text[256] = "";
    double t[6];
    wc_kv_get(m->fingerprint, "geotransform", gt_text, sizeof gt_text);
    const int trained_placed =
        sscanf(gt_text, "%lf,%lf,%lf,%lf,%lf,%lf", &t[0], &t[1], &t[2], &t[3], &t[4], &t[5]) == 6 &&
        !(t[0] == 0 && t[1] == 1 && t[2] == 0 && t[3] == 0 && t[4] == 0 && t[5] == 1);
    if (r->has_gt && !trained_placed)
        wc_warn("%s: the model %s was trained on data without georeferencing, so the scale and "
                "orientation of this raster's ground cannot be checked against what it learned",
                r->path, m->path);
    if (!r->has_gt || !trained_placed) return; /* nothing to compare */
    /* pixel sizes on the ground, in metres at each raster's centre (a Web Mercator pixel of 42
     * CRS metres at 45 degrees north is the 30 m of a UTM training raster); where a CRS has no
     * ground (unknown, or a local one), in metres where both CRSs say their unit, else as the
     * CRSs' own numbers */
    char crs[256] = "", size[64] = "";
    wc_kv_get(m->fingerprint, "crs", crs, sizeof crs);
    wc_kv_get(m->fingerprint, "size", size, sizeof size);
    /* a geotransform without a CRS: its numbers place pixels in no known unit (a raster whose
     * .prj was lost beside it); the map inherits that, and its scale is compared as bare numbers */
    if (!*r->wkt && *crs && strcmp(crs, "no CRS") != 0)
        wc_warn("%s has a geotransform but no CRS, the model's training data is in %s: the map "
                "is written without a CRS (a GIS cannot place it on the ground), and this "
                "raster's pixel size is compared with the training data's as bare numbers; give "
                "it its CRS (gdal_edit.py -a_srs)",
                r->path, crs);
    int tw = 0, th = 0;
    double tx, ty, rx, ry;
    const int ground =
        sscanf(size, "%dx%d", &tw, &th) == 2 &&
        wc_raster_ground_pixel_size(crs, t, tw, th, &tx, &ty) == WC_OK &&
        wc_raster_ground_pixel_size(r->wkt, r->gt, r->width, r->height, &rx, &ry) == WC_OK;
    const double ut = wc_raster_crs_metres_per_unit(crs),
                 ur = wc_raster_crs_metres_per_unit(r->wkt);
    const int metres = ground || (ut > 0 && ur > 0);
    if (!ground) {
        const double st = metres ? ut : 1, sr = metres ? ur : 1;
        tx = st * hypot(t[1], t[4]), ty = st * hypot(t[2], t[5]);
        rx = sr * hypot(r->gt[1], r->gt[4]), ry = sr * hypot(r->gt[2], r->gt[5]);
    }
    /* on the ground, three digits: a UTM pixel of 30 m is 30.005 m of ground 140 km from its
     * central meridian, and a user knows it as 30 */
    const int digits = ground ? 3 : 6;
    const double axes_r = axes_angle(r->gt), axes_t = axes_angle(t);
    if (fabs(axes_r - axes_t) > 1) /* said first: a shear also lengthens one axis */
        wc_warn("%s has pixel axes at %.1f degrees to each other (a sheared geotransform), the "
                "model's training data at %.1f: the network sees the ground sheared, and the map "
                "may mean little (gdalwarp writes it on a grid of square corners)",
                r->path, axes_r, axes_t);
    else if (!ground && (ut == 0) != (ur == 0) && !isnan(ut) && !isnan(ur))
        wc_warn("%s is in %s, the model's training data in %s (%s): the network may see ground "
                "at another scale than it learned (warp the raster to the training data's CRS "
                "and resolution, gdalwarp -t_srs -tr)",
                r->path, ur == 0 ? "degrees" : "a projected CRS",
                ut == 0 ? "degrees"
                        : "a "
                          "projected CRS",
                crs);
    else if (fabs(rx / tx - 1) > 0.01 || fabs(ry / ty - 1) > 0.01)
        wc_warn("%s has pixels of %.*g x %.*g%s, the model's training data %.*g x %.*g%s: the "
                "network sees ground at another scale than it learned, and the map may mean "
                "little (resample the raster to the training resolution, gdalwarp -tr)",
                r->path, digits, rx, digits, ry,
                ground   ? " m on the ground"
                : metres ? " m"
                         : " (CRS units)",
                digits, tx, digits, ty, metres ? " m" : "");
    else if ((t[1] * t[5] - t[2] * t[4] > 0) != (r->gt[1] * r->gt[5] - r->gt[2] * r->gt[4] > 0)) {
        /* the handedness of the pixel axes on the ground (the geotransform's determinant):
         * a turn, 180 degrees included, keeps it; a mirror flips it */
        if (wc_gt_axis_aligned(t) && wc_gt_axis_aligned(r->gt))
            wc_warn("%s is %s%s, the model's training data %s%s: the network sees the ground "
                    "mirrored (gdalwarp writes it north-up, west to east)",
                    r->path, r->gt[5] > 0 ? "south-up" : "north-up",
                    r->gt[1] > 0 ? "" : " with columns east to west",
                    t[5] > 0 ? "south-up" : "north-up",
                    t[1] > 0 ? "" : " with columns east to west");
        else
            wc_warn("%s is mirrored against the model's training data (its geotransform turns the "
                    "pixel axes the other way round): the network sees the ground mirrored "
                    "(gdalwarp writes it north-up, west to east)",
                    r->path);
    } else {
        /* the direction of the raster's rows on the ground, against the training data's */
        double turn = (atan2(r->gt[4], r->gt[1]) - atan2(t[4], t[1])) * 180 / M_PI;
        turn = fmod(turn + 540, 360) - 180;
        if (turn == -180) turn = 180; /* (-180, 180] */
        if (fabs(turn) > 1 && wc_gt_axis_aligned(r->gt) && wc_gt_axis_aligned(t))
            wc_warn("%s is turned by %.1f degrees against the model's training data (its rows "
                    "run %s, its columns %s; the training data's %s, %s): the network sees the "
                    "ground turned, and directions in its bands (wind, aspect) mean other "
                    "ground directions (gdalwarp writes it north-up)",
                    r->path, turn, r->gt[1] > 0 ? "west to east" : "east to west",
                    r->gt[5] < 0 ? "north to south" : "south to north",
                    t[1] > 0 ? "west to east" : "east to west",
                    t[5] < 0 ? "north to south" : "south to north");
        else if (fabs(turn) > 1)
            wc_warn("%s is turned by %.1f degrees against the model's training data (its "
                    "geotransform's rotation terms): the network sees the ground turned, and "
                    "directions in its bands (wind, aspect) mean other ground directions "
                    "(gdalwarp writes it north-up)",
                    r->path, turn);
    }
}

/* evaluate's label band: --label-band; without it and without --labels, the band the model was
 * trained on when it was a band of the tiles (a model trained on 'burned' is scored on the other
 * region's 'burned', not on a 'fire' band that may mean something else); else the default. */
static void choose_label_band(mapping *mp, const wc_model *m, const wc_raster *r) {
    const wc_predict_config *cfg = mp->cfg;
    mp->label_band = cfg->label_band;
    if ((cfg->label_band && *cfg->label_band) || cfg->labels) return;
    char label[sizeof mp->training_label] = "", number[32] = "";
    wc_kv_get(m->fingerprint, "labels", label, sizeof label);
    if (strncmp(label, "band:", 5) != 0 || !label[5]) return;
    snprintf(mp->training_label, sizeof mp->training_label, "%s", label + 5);
    mp->label_band = mp->training_label;
    /* training chose it by number among bands of one name: the same number here, when that
     * band carries the name (else the name decides, and says if it is ambiguous) */
    wc_kv_get(m->fingerprint, "label_band", number, sizeof number);
    const long n = strtol(number, NULL, 10);
    if (n >= 1 && n <= r->nbands && strcmp(r->bands[n - 1].name, mp->training_label) == 0) {
        snprintf(mp->training_label, sizeof mp->training_label, "%ld", n);
        if (mp->rank == 0)
            wc_info("evaluate: labels from band %ld (%s), the label band of %s's training "
                    "(--label-band names another)",
                    n, r->bands[n - 1].name, m->path);
        return;
    }
    if (mp->rank == 0 && strcmp(mp->label_band, WC_LABEL_BAND_NAME) != 0)
        wc_info("evaluate: labels from the band described '%s', the label band of %s's training "
                "(--label-band names another)",
                mp->label_band, m->path);
}

/* GDAL's block cache for windows of Tx x Ty (need: what their blocks want, x 1.25), or -1 when
 * GDAL_CACHEMAX sets it. Collective (the ranks sharing this node share its memory). */
static double block_cache_bytes(wc_raster *r, int64_t Tx, int64_t Ty, double *need) {
    int first_on_host;
    const uint64_t host_ranks = wc_dist_host_sum_u64(1, &first_on_host);
    *need = 1.25 * (double)wc_raster_window_blocks_bytes(r, Tx, Ty);
    if (wc_raster_cache_user_set()) return -1;
    const double most = (double)wc_raster_cache_most(host_ranks), least = (double)(64 << 20);
    const double size = WC_MAX(*need, least);
    return most > least && size > most ? most : size;
}

/* What a rank maps to compute the map of layout L in rounds of G strips (with evaluate's labels,
 * GDAL's cache and files, the threads' stacks), part by part, into need; advice: room for
 * need's. */
static void map_need(const wc_predict_config *cfg, const layout *L, int64_t G, int rank, int R,
                     const wc_infer_plan_bytes *ip, wc_raster *r, size_t cache,
                     wc_address_need *need, char advice[128]) {
    memset(need, 0, sizeof *need);
    need->threads = cfg->threads;
    need->started = cfg->threads - 1; /* the window network's pool */
    need->when = "once the windows are computed";
    wc_address_need_add(need, ip->bytes,
                        "the network over %" PRId64 "x%" PRId64 " windows and "
                        "its buffers",
                        ip->Tx, ip->Ty);
    wc_address_need_add(need, round_buffers_bytes(L, G, rank, R, cfg->out != NULL, cfg->evaluate),
                        "the buffers of a round of %" PRId64 " rows", G * L->Sy);
    if (cfg->evaluate)
        wc_address_need_add(need, wc_score_bytes(L->Sx * L->Sy),
                            "a core's labels and the metrics' histograms");
    if (cfg->out && cfg->png && rank == 0) {
        wc_quicklook_info qi;
        wc_quicklook_layout_scaled((int)L->W, (int)L->H,
                                   r->has_gt ? wc_quicklook_row_scale(r->gt, r->wkt) : 1,
                                   cfg->png_max_side, &qi);
        wc_address_need_add(need, wc_quicklook_bytes(&qi), "the picture (%dx%d px)", qi.width,
                            qi.height);
    }
    wc_address_need_add(need, cache, "GDAL's block cache");
    const size_t files = wc_raster_open_files_bytes(r, cfg->evaluate ? 2 : 1, NULL, NULL);
    if (files) wc_address_need_add(need, files, "the files GDAL holds open");
    char c[32];
    if (wc_raster_cache_user_set() && cache > ((size_t)64 << 20)) {
        snprintf(advice, 128, "a smaller GDAL_CACHEMAX (now %s)",
                 wc_fmt_bytes(c, sizeof c, (double)cache));
        need->advice = advice;
    }
}

/* Before the window's network and the rounds' buffers are allocated: the room for them under an
 * address-space limit, which the map would otherwise find missing in an allocation or its first
 * product. WC_OK, or WC_ERR after a message. */
static int check_room(const wc_predict_config *cfg, const mapping *mp, wc_raster *r) {
    wc_address_need need;
    char advice[128];
    map_need(cfg, mp->L, mp->G, mp->rank, mp->R, &mp->window, r, wc_raster_cache_max(), &need,
             advice);
    return wc_check_address_space(&need);
}

int wc_predict_map_need(const wc_predict_config *cfg, wc_raster *r, const char *arch,
                        const char *spec, int nfeat, wc_dtype type, wc_address_need *need,
                        char advice[128]) {
    layout L = {.W = r->width, .H = r->height};
    const int rank = wc_dist_rank(), R = wc_dist_size();
    wc_infer_plan_bytes ip;
    if (wc_infer_geometry_of(&L.g, arch, spec, nfeat, r) != WC_OK) return WC_ERR;
    plan_layout(&L, cfg->window > 0 ? cfg->window : WC_PREDICT_WINDOW);
    const int64_t G = choose_group(&L, R);
    if (wc_infer_plan(&L.g, type, nfeat, arch, spec, L.Sx, L.Sy, r->path, &ip) != WC_OK)
        return WC_ERR;
    double want;
    const double cache = block_cache_bytes(r, ip.Tx, ip.Ty, &want);
    map_need(cfg, &L, G, rank, R, &ip, r, cache < 0 ? wc_raster_cache_max() : (size_t)cache, need,
             advice);
    return WC_OK;
}

/* Every rank: the raster, the model, the band matching, the layout (refused when it cannot fit),
 * what the network for the layout's windows takes. Returns an exit status (this rank's). */
static int prepare(const wc_predict_config *cfg, mapping *mp, wc_raster *r, wc_model *m,
                   wc_bandmap *bm, layout *L) {
    const int opened =
        wc_raster_open(r, cfg->tiles) == WC_OK &&
        !(mp->rank == 0 && !cfg->tiles_checked && wc_raster_check_sources(r) != WC_OK);
    /* every rank the model of the file rank 0 chose (a collective: a rank that failed takes part)
     */
    if (wc_model_load_agreed(m, cfg->checkpoint, 1, 0, 0, !opened) != WC_OK || !opened) {
        if (opened) wc_rundir_say_if_training(cfg->checkpoint);
        return WC_EXIT_RUNTIME;
    }
    /* evaluate's labels from a band of the tiles: that band is no feature */
    int label_band = 0, by_number;
    if (cfg->evaluate) choose_label_band(mp, m, r);
    if (cfg->evaluate && !cfg->labels && mp->label_band && *mp->label_band &&
        !(label_band = wc_labels_find_band(r, mp->label_band, 1, &by_number)))
        return WC_EXIT_RUNTIME;
    if (wc_bandmap_match(bm, m, r, label_band) != WC_OK ||
        wc_raster_check_coverage(r, bm->bands, bm->n) != WC_OK)
        return WC_EXIT_RUNTIME;
    /* a training run's map: its own raster, by the model trained on it, on the machine that
     * trained it (training warned) */
    if (mp->rank == 0 && !cfg->tiles_checked) {
        warn_other_ground(m, r);
        wc_bandmap_warn_units(bm, m, r);
        wc_cpuinfo_warn_ignored();
    }
    L->W = r->width, L->H = r->height;
    if (wc_infer_geometry_of(&L->g, m->net->arch, m->net->spec, m->nfeat, r) != WC_OK)
        return WC_EXIT_RUNTIME;
    plan_layout(L, cfg->window > 0 ? cfg->window : WC_PREDICT_WINDOW);
    mp->G = choose_group(L, mp->R);
    if (check_fits(L, mp->G, r->path, mp->rank, mp->R) != WC_OK ||
        wc_infer_plan(&L->g, bm->type, m->nfeat, m->net->arch, m->net->spec, L->Sx, L->Sy, m->path,
                      &mp->window) != WC_OK)
        return WC_EXIT_RUNTIME;
    return WC_EXIT_OK;
}

/* Other writers of an output: a training running in the output's directory that writes it at
 * its end (risk.tif of its run directory: its map would replace this one, and remove companions
 * it does not make), or a live wildcpu on this host writing the same output (its working file
 * lies beside it: each would publish its own files, and the last rename of each would win, a
 * map from one model beside classes from another) refuse this one (WC_EXIT_RUNTIME); the
 * working files of killed runs are said. */
static int say_leftovers(const char *what, const char *path, int claim) {
    char holder[256];
    if (wc_rundir_taken_by_live_run(path, holder, sizeof holder)) {
        wc_error("refusing to write the %s to %s: its directory is the run directory of a "
                 "training that is running (%s), which writes that file itself; choose another "
                 "path",
                 what, path, *holder ? holder : "its pid unknown");
        return WC_EXIT_RUNTIME;
    }
    const long writer = claim ? wc_claim_output(path) : wc_output_writer(path);
    if (!writer) return WC_EXIT_OK;
    wc_error("refusing to write the %s to %s: wildcpu process %ld on this host is writing it now "
             "(its working file lies beside it), and two writers would leave a mix of their "
             "files; wait for it to end, or choose another path",
             what, path, writer);
    return WC_EXIT_RUNTIME;
}

/* A training run directory's record of itself (its metrics log, report, split: rundir.h) is
 * the training's alone, finished or not: evaluate --out DIR/report.json or DIR/metrics.jsonl,
 * predict --out DIR/split.tif replaced it with status 0 once the training had ended (the
 * metrics log cannot be made again without training again), where a running training's was
 * refused. WC_EXIT_USAGE after a message, as for a checkpoint. */
static int refuse_run_record(const char *what, const char *path) {
    const char *record = path ? wc_rundir_record_of(path) : NULL;
    if (!record) return WC_EXIT_OK;
    char *dir = wc_dir_of(path);
    wc_error("refusing to write the %s to %s: it is %s of the training run directory %s, which "
             "only its training writes; choose another path",
             what, path, record, dir);
    free(dir);
    return WC_EXIT_USAGE;
}

/* Rank 0, before any computing: every file this command writes (the map and what comes with
 * it, the metrics) can be written, is none of the files it reads (the raster's, the
 * checkpoint, the labels' own: an item "east.json" beside a map "east.tif" must not replace
 * perimeters "east.json") and none of the others. Returns an exit status. */
static int check_outputs(const wc_predict_config *cfg, wc_raster *r, const wc_model *m) {
    /* the raster's files (VRTs within it and archives included), the checkpoint, the labels' */
    char *const *tiles = wc_raster_files(r);
    char **labels = cfg->labels ? wc_gdal_file_list(cfg->labels) : NULL;
    size_t n_in = 2;
    for (char *const *l = tiles; *l; l++) n_in++;
    for (char **l = labels; l && *l; l++) n_in++;
    const char **inputs = WC_ALLOC(sizeof(char *) * n_in);
    n_in = 0;
    for (char *const *l = tiles; *l; l++) inputs[n_in++] = *l;
    inputs[n_in++] = m->path;
    for (char **l = labels; l && *l; l++) inputs[n_in++] = *l;
    inputs[n_in] = NULL;
    wc_riskmap_paths p = {0};
    wc_output outs[WC_RISKMAP_OUTPUTS + 1];
    int n = 0;
    if (cfg->out) {
        wc_riskmap_paths_of(cfg->out, &p);
        wc_riskmap_outputs(cfg, &p, outs);
        n = WC_RISKMAP_OUTPUTS;
    }
    outs[n++] = (wc_output){"metrics", cfg->metrics_out, 0, WC_KIND_JSON};
    /* a checkpoint first, by name: the kinds' check would call it "a file of another kind" */
    int status = WC_EXIT_OK;
    for (int i = 0; status == WC_EXIT_OK && i < n; i++)
        status = wc_ckpt_refuse_as_output(outs[i].what, outs[i].path);
    for (int i = 0; status == WC_EXIT_OK && i < n; i++)
        status = refuse_run_record(outs[i].what, outs[i].path);
    if (status == WC_EXIT_OK) status = wc_check_outputs(outs, n, inputs);
    if (status == WC_EXIT_OK && wc_riskmap_check_companions(cfg, &p) != WC_OK)
        status = WC_EXIT_RUNTIME;
    for (int i = 0; status == WC_EXIT_OK && i < n; i++)
        /* the map is claimed (its companions follow it, the metrics are written whole) */
        if (outs[i].path) status = say_leftovers(outs[i].what, outs[i].path, i == 0 && cfg->out);
    wc_riskmap_paths_free(&p);
    free(inputs);
    wc_strv_free(labels);
    return status;
}

/* Rank 0, once the labels are open: an output that is the raster the labels are read from
 * (the map or the metrics written where evaluate keeps the labels it derived) is refused. */
static int check_labels_not_output(const wc_predict_config *cfg, const wc_score *s) {
    const char *outs[2], *whats[2];
    int n = 0;
    if (cfg->out) outs[n] = cfg->out, whats[n++] = "the risk map";
    if (cfg->metrics_out) outs[n] = cfg->metrics_out, whats[n++] = "the metrics";
    const char *const labels[] = {wc_score_labels_path(s), NULL};
    return wc_check_outputs_not_inputs(outs, whats, n, NULL, 0, labels) == WC_OK ? WC_EXIT_OK
                                                                                 : WC_EXIT_USAGE;
}

/* Rank 0, before any computing (after check_outputs): the map's working file, described by
 * the window layout. Returns an exit status. */
static int open_outputs(const wc_predict_config *cfg, mapping *mp, const wc_raster *r,
                        const wc_model *m) {
    const layout *L = mp->L;
    char desc[256];
    snprintf(desc, sizeof desc,
             "windows %" PRId64 "x%" PRId64 ", cores %" PRId64 "x%" PRId64 ", margin %d, "
             "alignment %d on the %s grid (pixel 0,0 = global %lld,%lld)",
             mp->inf->Tx, mp->inf->Ty, L->Sx, L->Sy, L->g.margin, L->g.align,
             L->g.anchored ? "global georeferenced" : "raster's own", L->g.gcol, L->g.grow);
    mp->map = wc_riskmap_create(cfg, r, m, desc);
    return mp->map ? WC_EXIT_OK : WC_EXIT_RUNTIME;
}

static void report_plan(const wc_predict_config *cfg, const wc_raster *r, const wc_model *m,
                        const layout *L, const wc_infer *inf, int R) {
    wc_memory_plan plan;
    wc_net_memory_plan(inf->net, &plan);
    char mem[16], cache[16];
    wc_info("predict: %s (%dx%d px) with %s (step %ld, %s): %" PRId64 " strips x %" PRId64
            " windows of %" PRId64 "x%" PRId64 " px (cores %" PRId64 "x%" PRId64 ", margin %d >= "
            "receptive radius %d, alignment %d on the %s grid); %d rank%s x %d thread%s; network "
            "activations %s and GDAL's block cache %s per rank",
            r->path, r->width, r->height, m->path, m->step, m->net->arch, L->ny, L->nx, inf->Tx,
            inf->Ty, L->Sx, L->Sy, L->g.margin, L->g.radius, L->g.align,
            L->g.anchored ? "global" : "raster's", R, R > 1 ? "s" : "", cfg->threads,
            cfg->threads > 1 ? "s" : "",
            wc_fmt_bytes(mem, sizeof mem, (double)(plan.activations + plan.workspace)),
            wc_fmt_bytes(cache, sizeof cache, (double)wc_raster_cache_max()));
}

/* The buffers of the rounds, as round_buffers_bytes counts them. The sizes were checked to fit
 * (check_fits), so these products do not overflow. */
static void alloc_buffers(mapping *mp) {
    const layout *L = mp->L;
    const size_t core_floats = (size_t)L->Sx * (size_t)L->Sy;
    const size_t share = (size_t)round_slots(mp->G * L->nx, mp->R);
    mp->send = WC_ALLOC_FOR(sizeof(float) * core_floats * share, "this rank's cores of a round");
    if (mp->score) mp->px = WC_ALLOC_FOR(core_floats, "a core's pixel states");
    if (mp->rank == 0 && mp->cfg->out) {
        mp->rows = WC_ALLOC_FOR(sizeof(float) * (size_t)mp->G * (size_t)L->Sy * (size_t)L->W,
                                "the rows of a round of the map");
        if (mp->R > 1)
            mp->recv = WC_ALLOC_FOR(sizeof(float) * core_floats * share,
                                    "another rank's cores of a round");
    }
}

/* The rounds: compute (agreeing as the pacer says), send to rank 0, which writes. Returns the
 * agreed exit status. */
static int run_rounds(mapping *mp) {
    const layout *L = mp->L;
    mp->pc.every = 1; /* until a window has been timed */
    wc_progress_start(&mp->progress);
    for (int64_t s0 = 0; s0 < L->ny; s0 += mp->G) {
        const int64_t s1 = WC_MIN(L->ny, s0 + mp->G);
        size_t off;
        const int status = compute_round(mp, s0, s1, &off);
        if (status == WC_EXIT_STOPPED) report_stop(mp, s0, s1);
        if (status != WC_EXIT_OK) return status;
        /* scoring only: the cores stay where they were made */
        if (mp->cfg->out && mp->rank == 0)
            write_round(mp, s0, s1);
        else if (mp->cfg->out && off)
            wc_dist_send(mp->send, sizeof(float) * off, 0);
        if (mp->rank == 0) say_progress(mp, s1);
    }
    /* A rank whose windows are done waits in the round's last agreement, its vote given, while
     * the others compute theirs (with fewer windows than ranks, for the whole map): a stop
     * signal it got meanwhile was heard by no agreement after it, and the map was finished and
     * published, status 0. One more agreement, once every window is computed and written,
     * hears it (and a write failure of the last round, as the agreements within rounds do). */
    const int64_t last = (L->ny - 1) / mp->G * mp->G;
    const int status = agree_round(&mp->pc, mp->write_failed);
    if (status == WC_EXIT_STOPPED) report_stop(mp, last, L->ny);
    return status;
}

/* Rank 0, at the end: what was written, how fast, in how much memory. */
static void report_done(const mapping *mp, int64_t npixels, int64_t nvalid, double t_start,
                        double t_computed, const double rss[2]) {
    const layout *L = mp->L;
    const double total = wc_now() - t_start, mpx = (double)L->W * (double)L->H / 1e6;
    char rb[16], rm[16], nodata[24];
    wc_fmt_percent(nodata, sizeof nodata, (double)(npixels - nvalid), (double)npixels);
    wc_info("predict: wrote %s%s: %" PRId64 "x%" PRId64 " px, %s%% nodata; %.2f Mpx in "
            "%.1f s = %.3f Mpx/s (mapping %.1f s = %.3f Mpx/s); %" PRId64 " windows on %d "
            "rank%s; peak RSS per rank (max) %s after mapping, %s at the end",
            mp->cfg->out, mp->cfg->cog ? " (COG)" : "", L->W, L->H, nodata, mpx, total, mpx / total,
            t_computed - mp->progress.t0, mpx / (t_computed - mp->progress.t0), L->nx * L->ny,
            mp->R, mp->R > 1 ? "s" : "", wc_fmt_bytes(rm, sizeof rm, rss[0]),
            wc_fmt_bytes(rb, sizeof rb, rss[1]));
}

/* ---- evaluate ------------------------------------------------------------------------------ */

/* Where derived labels (--labels polygons rasterized onto the grid) are kept: beside the
 * metrics file, else beside the map (--map), else in the current directory. */
static const char *work_dir_of(const wc_predict_config *cfg) {
    static char dir[4096];
    const char *beside = cfg->metrics_out ? cfg->metrics_out : cfg->out;
    const char *slash = beside ? strrchr(beside, '/') : NULL;
    if (!slash) return ".";
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - beside), beside);
    return *dir ? dir : "/";
}

/* Rank 0: the metrics, printed and (with --out) made into one JSON object in *j, which
 * write_metrics writes once the map (with --map) is complete. */
static int report_scores(const wc_predict_config *cfg, const wc_metrics *v, const wc_model *m,
                         const wc_score *score, wc_json *j) {
    const char *source = wc_score_source(score);
    /* a pixel whose output is not finite is counted in bad_outputs, not in pixels; a raster
     * without a pixel that has every input was refused before (refuse_empty) */
    if (v->pixels == 0 && v->bad_outputs == 0) {
        wc_error("evaluate: no pixel of %s has both a label from %s and a prediction (the labels "
                 "are nodata wherever the raster has data, or do not overlap it): nothing to "
                 "score%s",
                 cfg->tiles, source, cfg->metrics_out ? "; no metrics written" : "");
        return WC_EXIT_RUNTIME;
    }
    if (v->bad_outputs) {
        /* the warning below says it all */
    } else if (v->positives == 0)
        wc_warn("evaluate: none of the %lld labelled pixels is burned: AUC-PR, ROC-AUC and best "
                "F1 are undefined (null in the metrics)",
                (long long)v->pixels);
    else if (v->positives == v->pixels)
        wc_warn("evaluate: all %lld labelled pixels are burned: ROC-AUC is undefined and AUC-PR "
                "is 1 for any map",
                (long long)v->pixels);
    if (v->bad_outputs)
        wc_warn("evaluate: the network's output was not finite on %lld labelled pixels: the "
                "metrics are undefined",
                (long long)v->bad_outputs);
    char ties[512];
    if (wc_metrics_ties_note(v, ties, sizeof ties)) wc_warn("evaluate: %s", ties);
    char ranking[224];
    wc_metrics_ranking_text(v, 1, ranking, sizeof ranking);
    /* labelled outputs that are not finite leave the figures undefined, said in words as the
     * ranking says them ("nan% burned", "Brier nan" read as a fault of the program) */
    char rate[128] = "no pixel scored", brier[24] = "undefined", loss[24] = "undefined";
    if (v->pixels > 0 && isnan(v->positive_rate)) /* some labelled outputs not finite */
        snprintf(rate, sizeof rate, "%lld pixels with a prediction, burned share undefined",
                 (long long)v->pixels);
    else if (v->pixels > 0) {
        /* a share that rounds to 0.00% or 100.00% but is not: its digits, and the count, so
         * that one burned pixel in 61413 does not read as labels without one */
        const double pct = 100 * v->positive_rate;
        int digits = 2; /* more while the share would read as 0 or 100 and is not */
        while (digits < 12 && ((pct > 0 && pct < 0.5 * pow(10, -digits)) ||
                               (pct < 100 && pct > 100 - 0.5 * pow(10, -digits))))
            digits++;
        char share[40];
        snprintf(share, sizeof share, "%.*f%%", digits, pct);
        snprintf(rate, sizeof rate,
                 "%lld pixels, %s burned (%lld pixel%s; the base rate: the AUC-PR of a map that "
                 "knows nothing)",
                 (long long)v->pixels, share, (long long)v->positives,
                 v->positives == 1 ? "" : "s");
    }
    if (!isnan(v->brier)) snprintf(brier, sizeof brier, "%.4f", v->brier);
    if (!isnan(v->loss)) snprintf(loss, sizeof loss, "%.4f", v->loss);
    wc_info("evaluate: %s with %s (step %ld) against %s: %s; %s  Brier %s  loss %s", cfg->tiles,
            m->path, m->step, source, rate, ranking, brier, loss);
    for (int k = 0; k < WC_METRICS_CAL_BINS; k++)
        if (v->cal_count[k])
            wc_info("  p in [%.1f, %.1f%c: %lld pixels, mean predicted %.4f, burned %.4f", k / 10.0,
                    (k + 1) / 10.0, k == WC_METRICS_CAL_BINS - 1 ? ']' : ')',
                    (long long)v->cal_count[k], v->cal_predicted[k], v->cal_observed[k]);
    if (!cfg->metrics_out) return WC_EXIT_OK;
    char ts[32];
    wc_utc_timestamp(ts, sizeof ts);
    wc_json_object(j);
    wc_json_kstr(j, "wildcpu", WC_VERSION);
    wc_json_kstr(j, "created", ts);
    /* absolute, as the map records them (riskmap.c): the file may be read from anywhere */
    char tiles[4200], ckpt[4200], map[4200];
    wc_path_absolute(cfg->tiles, tiles, sizeof tiles);
    wc_path_absolute(m->path, ckpt, sizeof ckpt);
    if (cfg->out) wc_path_absolute(cfg->out, map, sizeof map);
    wc_json_kstr(j, "tiles", tiles);
    wc_json_kstr(j, "checkpoint", ckpt);
    wc_json_kint(j, "checkpoint_step", m->step);
    wc_json_kstr(j, "labels", wc_score_record(score));
    wc_json_kstr(j, "map", cfg->out ? map : NULL);
    wc_metrics_json_members(j, v, "");
    wc_json_knum(j, "base_rate", v->positive_rate);
    wc_metrics_json_calibration(j, "calibration", v);
    wc_json_end(j);
    return WC_EXIT_OK;
}

/* Rank 0: --out, the metrics report_scores made, written last: a stop or a failure before
 * (the map's) leaves the previous metrics file as it was, never one naming a map that is not
 * there. */
static int write_metrics(const wc_predict_config *cfg, const wc_json *j) {
    wc_atomic_file f;
    int status = WC_EXIT_RUNTIME;
    if (wc_atomic_open(&f, cfg->metrics_out, "w") == WC_OK) {
        fputs(wc_json_text(j), f.f);
        fputc('\n', f.f);
        if (wc_atomic_commit(&f) == WC_OK) status = WC_EXIT_OK;
    }
    if (status == WC_EXIT_OK)
        wc_info("evaluate: metrics written to %s", cfg->metrics_out);
    else if (cfg->out)
        wc_error("evaluate: the map %s is complete, but the metrics %s are not written (the "
                 "previous file, if any, is untouched)",
                 cfg->out, cfg->metrics_out);
    return status;
}

/* GDAL's block cache for the windows, set once the windows' size is known (collective). It holds
 * the blocks one window touches, of every band of the files: a GeoTIFF interleaved by pixel
 * decodes a block of all its bands at once and GDAL keeps them only when they all fit, else each
 * band's read decodes the block again (13 Float32 bands in 2048-pixel blocks: the map took 1.9x
 * as long with 64 MiB); the windows of a strip then find the blocks they share. Each window is
 * read once per rank, so more buys little: at least 64 MiB, at most a quarter of the node's
 * memory shared by its ranks (warned). GDAL_CACHEMAX, when set, stands. */
static void fit_block_cache(const wc_predict_config *cfg, wc_raster *r, int64_t Tx, int64_t Ty) {
    double need;
    const double size = block_cache_bytes(r, Tx, Ty, &need);
    if (size < 0) return;
    char bn[16], bm[16];
    if (size < need && wc_dist_rank() == 0)
        wc_warn("%s: the blocks one %" PRId64 "x%" PRId64 " window reads take %s with every "
                "band of its files, more than GDAL's cache can hold here (%s: a quarter of the "
                "node's memory "
                "over its ranks): blocks will be decoded more than once, which slows the "
                "reads; files tiled in smaller blocks read faster (gdal_translate -co "
                "TILED=YES -co BLOCKXSIZE=512 -co BLOCKYSIZE=512), and GDAL_CACHEMAX sets "
                "the cache",
                cfg->tiles, Tx, Ty, wc_fmt_bytes(bn, sizeof bn, need / 1.25),
                wc_fmt_bytes(bm, sizeof bm, size));
    wc_raster_cache_set((size_t)size);
}

/* Collective, once the inputs and outputs are checked: GDAL's block cache for the windows, then,
 * with the room for what the map allocates checked on every rank before any of it is (a usage
 * error without it), the window's network. Returns the agreed exit status. */
static int build_window(const wc_predict_config *cfg, mapping *mp, wc_raster *r, const wc_model *m,
                        const wc_bandmap *bm) {
    fit_block_cache(cfg, r, mp->window.Tx, mp->window.Ty);
    int status = wc_dist_max_int(check_room(cfg, mp, r) == WC_OK ? WC_EXIT_OK : WC_EXIT_USAGE);
    if (status != WC_EXIT_OK) return status;
    const layout *L = mp->L;
    const int built =
        wc_infer_init(mp->inf, &L->g, r, bm->bands, bm->type, m->nfeat, m->mean, m->std,
                      m->net->arch, m->net->spec, m->net->params, L->Sx, L->Sy, m->path);
    if (built == WC_OK) wc_infer_set_constant(mp->inf, m->constant);
    return wc_dist_max_int(built == WC_OK ? WC_EXIT_OK : WC_EXIT_RUNTIME);
}

/* evaluate, every rank, once the layout gives the cores' size: the labels. Those derived from
 * --labels are an input too, known only now (their name depends on the label band and the
 * grid), so rank 0 checks them against the outputs here. Returns an exit status. */
static int open_labels(const wc_predict_config *cfg, mapping *mp, const wc_raster *r) {
    int stopped = 0;
    mp->score = wc_score_open(r, cfg->labels, mp->label_band, work_dir_of(cfg),
                              mp->L->Sx * mp->L->Sy, &stopped);
    const int status = mp->score ? WC_EXIT_OK : stopped ? WC_EXIT_STOPPED : WC_EXIT_RUNTIME;
    /* (every rank learns the stop alike) it was said by no one: a bare status 75 */
    if (status == WC_EXIT_STOPPED) {
        char where[4200];
        snprintf(where, sizeof where, "while deriving the labels from %s", cfg->labels);
        report_stop_where(mp, where);
    }
    if (status != WC_EXIT_OK) return status;
    return wc_dist_max_int(mp->rank == 0 ? check_labels_not_output(cfg, mp->score) : WC_EXIT_OK);
}

/* Everything before any computing, so that a bad input or an unwritable path fails at once:
 * every rank: the inputs, the layout, the window's network and evaluate's labels; rank 0: the
 * outputs, checked, and the map's working file. Returns an exit status. */
static int open_run(const wc_predict_config *cfg, mapping *mp, wc_raster *r, wc_model *m,
                    wc_bandmap *bm, layout *L) {
    int status = wc_dist_max_int(prepare(cfg, mp, r, m, bm, L));
    if (status != WC_EXIT_OK) return status;
    const char *others[] = {cfg->labels};
    if (!cfg->tiles_checked && wc_agree_inputs(r, others, 1) != WC_OK) return WC_EXIT_RUNTIME;
    /* a map bitwise the same on any number of ranks needs one kind of kernels (training's own
     * map: training said so) */
    if (!cfg->tiles_checked) wc_agree_kernels(cfg->evaluate ? "this evaluation" : "this map");
    status = wc_dist_max_int(mp->rank == 0 ? check_outputs(cfg, r, m) : WC_EXIT_OK);
    if (status == WC_EXIT_OK) status = build_window(cfg, mp, r, m, bm);
    if (status != WC_EXIT_OK) return status;
    if (cfg->evaluate) {
        status = open_labels(cfg, mp, r);
        if (status != WC_EXIT_OK) return status;
    }
    if (!cfg->out) return WC_EXIT_OK;
    return wc_dist_max_int(mp->rank == 0 ? open_outputs(cfg, mp, r, m) : WC_EXIT_OK);
}

/* The computing: the rounds' buffers, then, with the address space they leave checked on every
 * rank, the rounds. Returns the agreed exit status. */
static int map_rounds(mapping *mp) {
    alloc_buffers(mp);
    /* right before the first product: the room for OpenBLAS's buffers and GDAL's cache as it
     * fills, which check_room counted, is there still (what the libraries mapped since, deriving
     * evaluate's labels say, may have taken it: OpenBLAS, out of room, would spin for ever) */
    wc_address_need late = {
        .threads = mp->cfg->threads, .when = "once the windows are computed", .first_product = 1};
    wc_address_need_add(&late, wc_raster_cache_max(), "GDAL's block cache as it fills");
    const int room = wc_check_address_space(&late);
    const int status = wc_dist_max_int(room == WC_OK ? WC_EXIT_OK : WC_EXIT_USAGE);
    if (status != WC_EXIT_OK) return status;
    return run_rounds(mp);
}

/* Every rank, after the rounds: the counts rank 0 warns about, summed over the ranks. counts
 * gets the pixels beyond float's range, those with a non-finite output, the valid ones and those
 * of the non-finite outputs in windows of ordinary inputs. */
static void sum_counts(wc_infer *inf, int64_t counts[4]) {
    counts[0] = inf->beyond_range, counts[1] = inf->nonfinite, counts[2] = 0;
    counts[3] = inf->nonfinite_ordinary;
    wc_dist_sum_i64(counts, 4);
    counts[2] = wc_infer_sum_tallies(inf); /* the valid pixels, with the per-feature tallies */
}

/* No finite output on any pixel with every input is a diverged model, not the data's doing;
 * so is a non-finite output anywhere in a window whose inputs all lie within WC_INFER_ORDINARY
 * training standard deviations (its activations overflow on ordinary data: a sane model's
 * cannot). Either makes no map (one the user had stays) and no scores; until 2026-12-07 the
 * second wrote a map with holes over the user's, status 0. counts as sum_counts gives them.
 * Returns an exit status, the same on every rank. */
static int refuse_diverged(const mapping *mp, const wc_model *m, const wc_raster *r,
                           const int64_t counts[4], const char *what) {
    const int none = counts[2] > 0 && counts[1] == counts[2];
    if (!none && counts[3] == 0) return WC_EXIT_OK;
    const char *outcome = mp->cfg->out ? "no map written" : "nothing scored";
    if (mp->rank == 0 && none)
        wc_error("%s: the model %s (step %ld) gives no finite output on any of the %" PRId64
                 " pixels of %s with every input: its weights have diverged (trained at too "
                 "high a rate, with no validation to catch it?); %s",
                 what, m->path, m->step, counts[2], r->path, outcome);
    else if (mp->rank == 0)
        wc_error("%s: the model %s (step %ld) gives a non-finite output on %" PRId64 " of the "
                 "%" PRId64 " pixels of %s with every input, in windows whose inputs all lie "
                 "within %g training standard deviations of their mean: its weights have "
                 "diverged (its activations overflow on ordinary data), not the raster; %s; "
                 "train again with a lower --lr",
                 what, m->path, m->step, counts[3], counts[2], r->path, (double)WC_INFER_ORDINARY,
                 outcome);
    return WC_EXIT_RUNTIME;
}

/* A raster no pixel of which has every input the model needs (a band nodata everywhere, or
 * values beyond float's range once normalized, an undeclared nodata of a band of small
 * spread): its map would be nodata everywhere, its scores none. Refused before anything is
 * written, naming the bands (a map the user had stays; until 2026-12-07 predict replaced it by
 * that empty map, status 0). counts as sum_counts gives them. Returns an exit status, the same
 * on every rank. */
static int refuse_empty(const mapping *mp, const wc_raster *r, const wc_bandmap *bm,
                        const int64_t counts[4], const char *what) {
    if (counts[2] > 0) return WC_EXIT_OK;
    const wc_predict_config *cfg = mp->cfg;
    if (mp->rank == 0) {
        const int named =
            wc_raster_say_empty_bands(r, bm->bands, bm->n, ": no pixel has every input", 0);
        char why[256];
        if (counts[0])
            snprintf(
                why, sizeof why,
                "a nodata input or a feature value beyond float's range once normalized (%" PRId64
                " pixel%s: an undeclared nodata? see the warnings%s)",
                counts[0], counts[0] == 1 ? "" : "s",
                named ? "; the bands nodata everywhere are named above" : "");
        else if (named)
            snprintf(why, sizeof why, "a nodata input (the bands are named above)");
        else
            snprintf(why, sizeof why,
                     "a nodata input (in one band or another: none is nodata everywhere)");
        const char *written = !cfg->evaluate                 ? "; no map written"
                              : cfg->out && cfg->metrics_out ? "; no map or metrics written"
                              : cfg->out                     ? "; no map written"
                              : cfg->metrics_out             ? "; no metrics written"
                                                             : "";
        wc_error("%s: no pixel of %s has a prediction: every pixel has %s: nothing to %s%s", what,
                 r->path, why, cfg->evaluate ? "score" : "map", written);
    }
    return WC_EXIT_RUNTIME;
}

/* What the rounds made, made into files: every rank: the scores; rank 0: the metrics said, the
 * map's classes, close, COG, verify, rename and picture, then the metrics file once the map is
 * in place. *npixels and *nvalid get the map's pixels (rank 0, with a map). Returns this rank's
 * exit status. */
static int finish_outputs(mapping *mp, const wc_raster *r, const wc_model *m,
                          const int64_t invalid[4], int64_t *npixels, int64_t *nvalid) {
    const wc_predict_config *cfg = mp->cfg;
    const int rank = mp->rank;
    int status = WC_EXIT_OK, scores_ok = 0, published = 0;
    wc_json scores; /* evaluate --out: the metrics file's text, written last */
    wc_json_init(&scores);
    if (mp->score) {
        wc_metrics met;
        wc_score_finish(mp->score, &met);
        if (rank == 0) {
            status = report_scores(cfg, &met, m, mp->score, &scores);
            scores_ok = status == WC_EXIT_OK;
        }
    }
    if (rank == 0) report_invalid(cfg, r->path, invalid);
    if (rank == 0 && cfg->out) {
        wc_riskmap_counts(mp->map, npixels, nvalid);
        /* the map is finished even when there was nothing to score: it is complete */
        const int map_status =
            mp->write_failed ? WC_EXIT_RUNTIME : wc_riskmap_finish(mp->map, mp->rows, &published);
        status = WC_MAX(status, map_status);
        if (!mp->write_failed) mp->map = NULL; /* finished: committed or removed */
    }
    /* the metrics once the map is in place (a companion of it may have failed: the metrics
     * are right whatever its picture), never beside a map that was not written */
    const int scored = rank == 0 && mp->score && cfg->metrics_out && scores_ok;
    if (scored && (cfg->out ? published : status == WC_EXIT_OK)) {
        const int metrics_status = write_metrics(cfg, &scores);
        status = WC_MAX(status, metrics_status);
    }
    wc_json_free(&scores);
    return status;
}

int wc_predict_run(const wc_predict_config *cfg) {
    const double t_start = wc_now();
    const int rank = wc_dist_rank(), R = wc_dist_size();
    if (wc_dist_any(wc_check_threads(cfg->threads, cfg->threads_from) != WC_OK))
        return WC_EXIT_USAGE;
    wc_net_set_threads(cfg->threads > 0 ? cfg->threads : 1); /* OpenBLAS at one */
    /* what an allocation that fails advises, after its cause */
    char advice[64];
    snprintf(advice, sizeof advice, "fewer --threads than %d", cfg->threads);
    wc_alloc_set_advice(cfg->threads > 1 ? advice : NULL);
    wc_raster_init();
    const size_t cache_was = wc_raster_cache_max();

    wc_raster r = {0};
    wc_model m = {0};
    wc_bandmap bm = {0};
    layout L = {0};
    wc_infer inf = {0};
    mapping mp = {.cfg = cfg, .L = &L, .rank = rank, .R = R, .inf = &inf, .G = 1};
    int64_t npixels = 0, nvalid = 0;

    int status = open_run(cfg, &mp, &r, &m, &bm, &L);
    if (status != WC_EXIT_OK) goto out;
    report_plan(cfg, &r, &m, &L, &inf, R);
    status = map_rounds(&mp);
    if (status != WC_EXIT_OK) goto out;
    const double t_computed = wc_now();
    const double rss_mapped = (double)wc_peak_rss_bytes();
    int64_t invalid[4];
    sum_counts(&inf, invalid);
    const char *what = cfg->evaluate ? "evaluate" : "predict";
    status = refuse_diverged(&mp, &m, &r, invalid, what);
    if (status != WC_EXIT_OK) goto out;
    if (rank == 0) wc_infer_report_inputs(&inf, invalid[2], what, "mapped");
    status = refuse_empty(&mp, &r, &bm, invalid, what);
    if (status != WC_EXIT_OK) goto out;
    status = finish_outputs(&mp, &r, &m, invalid, &npixels, &nvalid);
    double rss[2] = {rss_mapped, (double)wc_peak_rss_bytes()};
    wc_dist_max_f64(rss, 2);
    status = wc_dist_max_int(status);
    if (status == WC_EXIT_OK && cfg->out)
        report_done(&mp, npixels, nvalid, t_start, t_computed, rss);
out:
    wc_riskmap_abort(mp.map);
    if (rank == 0 && cfg->out) wc_claim_release(cfg->out); /* say_leftovers' */
    wc_score_close(mp.score);
    free(mp.px);
    free(mp.send), free(mp.recv), free(mp.rows);
    wc_infer_free(&inf);
    wc_bandmap_free(&bm);
    wc_model_free(&m);
    wc_raster_close(&r);
    wc_raster_cache_set(cache_was);
    return status;
}
