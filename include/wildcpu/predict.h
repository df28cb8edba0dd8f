/* predict.h: the risk map: the trained network run over a whole raster, written as GeoTIFF.
 *
 * `wildcpu predict` and the end of training call wc_predict_run. It is collective over every MPI
 * rank; the map is bitwise the same on any number of ranks, seamless (a pixel's value does not
 * depend on where window borders fall, so a sub-raster gives the same values away from its own
 * edges), and memory stays bounded for rasters far larger than RAM. See docs/predict.md.
 *
 * Not here: training, the quick-look drawing (quicklook.h). */
#ifndef WILDCPU_PREDICT_H
#define WILDCPU_PREDICT_H

#include "wildcpu/raster.h"
#include "wildcpu/util.h"

typedef struct wc_predict_config {
    const char *tiles;        /* the raster to map */
    const char *checkpoint;   /* checkpoint file or run directory */
    const char *out;          /* risk.tif */
    const char *png;          /* quick-look picture, or NULL */
    int cog;                  /* Cloud-Optimized GeoTIFF */
    int classes;              /* the risk classes as their own raster, NAME_classes.tif */
    int no_style;             /* no QGIS style NAME.qml beside the map */
    int threads;              /* the network's threads per rank */
    const char *threads_from; /* "SLURM_CPUS_PER_TASK" when threads came from it, else NULL */
    int window;               /* widest network window in pixels (0: WC_PREDICT_WINDOW); windows
                               * are WC_PREDICT_STRIP + 2 x margin + alignment pixels tall */
    int png_max_side;         /* quick-look downsampling limit (0: WC_QUICKLOOK_MAX_SIDE) */
    /* `wildcpu evaluate`: the map scored against labels (score.h); out may then be NULL: no
     * map is written */
    int evaluate;
    const char *labels;      /* --labels PATH, or NULL: the label band of the tiles */
    const char *label_band;  /* --label-band NAME|N [fire] */
    const char *metrics_out; /* --out metrics.json, or NULL: printed only */
    const char *rerun;       /* what a stop message tells the user to do ["rerun the same
                              * command"]: a training run's map says its own (rundir.h) */
    int run_map;             /* the map of a training run (DIR/risk.tif): no option names it */
    int tiles_checked;       /* the tiles' once-per-command checks and warnings (their sources,
                              * their georeferencing, the kernels) were made by training: not
                              * again, so they come once */
} wc_predict_config;

/* Output nodata: pixels where any feature is nodata (or NaN/Inf) or beyond float's range once
 * normalized, and pixels whose network output is not finite. Every other pixel is a finite
 * probability in [0, 1]. */
#define WC_PREDICT_NODATA (-9999.0)
/* Default widest window, and the core height of a strip (= the output's tile height, so each
 * strip completes a row of tiles and no tile is ever written twice). */
#define WC_PREDICT_WINDOW 448
#define WC_PREDICT_STRIP  256

/* --classes: five classes by quantiles of the map's own valid probabilities. A pixel is in
 * class k (0 = low .. 4 = extreme) when its probability exceeds k of the breaks; the breaks are
 * the probabilities at these quantiles (to float resolution 2^-11 relative, from an exact
 * integer histogram). */
#define WC_PREDICT_NCLASSES 5
extern const char *const WC_PREDICT_CLASS_NAMES[WC_PREDICT_NCLASSES];
extern const double WC_PREDICT_CLASS_QUANTILES[WC_PREDICT_NCLASSES - 1];

extern const char WC_PREDICT_HELP[];
extern const char WC_EVALUATE_HELP[];

void wc_predict_config_default(wc_predict_config *cfg);
/* Collective. Returns the exit status: 0 written, 1 runtime error (message names the file, band
 * or rank), 2 usage error (an output path that names an input). */
int wc_predict_run(const wc_predict_config *cfg);

/* What this rank will map to draw cfg's map of raster r with a network (arch, spec) of nfeat
 * inputs read as `type`, as wc_predict_run plans it, into need (advice: room for its advice), for
 * a training to check before its first step that its map will have room under an address-space
 * limit. Collective (GDAL's block cache is sized for the ranks sharing a node). WC_ERR after a
 * message when the network cannot be planned. */
int wc_predict_map_need(const wc_predict_config *cfg, wc_raster *r, const char *arch,
                        const char *spec, int nfeat, wc_dtype type, wc_address_need *need,
                        char advice[128]);

#endif
