/* validation.h: scoring the network on the validation blocks during training, with the map's
 * own computation (infer.h) over whole blocks at the global pooling phase, into exact integer
 * accumulators summed across ranks: a run's validation metrics are those of its map on the same
 * pixels, and the same for any number of ranks. Also the split raster (DIR/split.tif) that shows
 * where training and validation lie.
 *
 * Not here: when validation runs, the log and the summary (train.c), the metrics' definitions
 * (metrics.h). */
#ifndef WILDCPU_VALIDATION_H
#define WILDCPU_VALIDATION_H

#include <stdint.h>

#include "wildcpu/dataset.h"
#include "wildcpu/infer.h"
#include "wildcpu/metrics.h"

typedef struct wc_validation {
    const wc_dataset *ds;
    wc_metrics_acc *acc, *oracle_acc; /* exact, rank-independent accumulators */
    int64_t oracle_missing; /* counted pixels where the oracle has no probability in [0, 1] */
    /* Of the last run's bad outputs (summed over the ranks): those in windows whose inputs all
     * lie within WC_INFER_ORDINARY training standard deviations (the model's doing), and the
     * first feature (index; -1 if none is known) whose values lay beyond that in the window of
     * any other: there the data may be the cause (an undeclared nodata), not a divergence. */
    int64_t bad_ordinary;
    int bad_outlier;
    /* labelled pixels of the last run left out because a feature's value, once normalized, is
     * beyond float's range (WC_PX_RANGE: an undeclared nodata such as -3.4e38 of a band of small
     * spread), summed over the ranks */
    int64_t beyond_range;
    int inputs_said;     /* the first run of this session warned of doubtful feature values
                          * in the blocks (wc_infer_report_inputs): said once */
    wc_infer inf;        /* the map's network, over one core's window */
    wc_data_files files; /* the main thread's own handles (the reader thread has its own) */
    long *blocks;        /* the validation blocks, in index order */
    long nblocks;        /* how many */
    long lo, hi;         /* this rank's share of them */
    long max_share;      /* the largest share (every rank agrees that many times) */
    int64_t core;        /* blocks are scored in cores of at most core x core pixels */
    /* (core ^ 2) one core's pixels: probabilities, labels, the oracle, the state of each pixel
     * (WC_PX_*), which pixels count, and the label reading's scratch */
    float *prob, *y, *oracle;
    uint8_t *px, *use;
    double *scratch;
} wc_validation;

/* Outcomes of wc_validation_run, the same on every rank. */
enum {
    WC_VALIDATION_DONE = 0,
    WC_VALIDATION_DIVERGED = 1, /* the network's output was not finite on some pixel */
    WC_VALIDATION_STOPPED = 2,  /* the ranks agreed on a stop signal before it finished */
    WC_VALIDATION_FAILED = 3,   /* a rank could not read its blocks (after its message) */
};

/* Collective. The network for one core's window (arch, spec as the training network's, params
 * its current parameters), the files and buffers. WC_ERR on every rank when some rank cannot
 * open its files; WC_VALIDATION_NO_NETWORK when the network cannot be built for the window
 * (a spec that fits a patch but not the larger window: the spec's fault, a usage error). */
#define WC_VALIDATION_NO_NETWORK (-2)
/* What wc_validation_init allocates for the core's window (its network and buffers, as
 * wc_infer_plan gives them) and the core's pixel buffers, in plan->bytes (even without a
 * validation patch: the window is built anyway). Allocates nothing; WC_ERR after logging when
 * the network cannot be built for the window. */
int wc_validation_plan(const wc_dataset *ds, const char *arch, const char *spec,
                       wc_infer_plan_bytes *plan);
int wc_validation_init(wc_validation *v, const wc_dataset *ds, const char *arch, const char *spec,
                       const float *params);
void wc_validation_free(wc_validation *v);

/* Collective: the metrics of parameters params on the validation blocks, into *m and, with an
 * oracle, *oracle. Rank 0 says how far it is every
 * WC_PROGRESS_SECONDS, naming the validation after step `step` (1-based). Returns a WC_VALIDATION_*
 * outcome; *m is set for DONE and DIVERGED (whose m->bad_outputs counts the broken pixels;
 * then v->bad_ordinary and v->bad_outlier say where they lay, the same on every rank).
 * The oracle's metrics are over the pixels where it has a probability in [0, 1]: its
 * bad_outputs counts the others (nodata, masked), which it leaves out. */
int wc_validation_run(wc_validation *v, long step, const float *params, wc_metrics *m,
                      wc_metrics *oracle);

/* The split raster at path: a Byte raster on the tiles' grid, 0 outside the patch grid, 1 a
 * training patch, 2 a validation patch, 3 a patch dropped for too few valid pixels. Collective:
 * rank 0 writes it, saying how far it is every WC_PROGRESS_SECONDS, and the ranks agree on a
 * stop signal while it does (dist.h, wc_dist_solo). A failure is a warning: training does not
 * need the file. Returns WC_OK, or WC_VALIDATION_STOPPED on every rank when the ranks agreed to
 * stop (nothing of the file is left then). */
int wc_validation_write_split(const wc_dataset *ds, const char *path);

#endif
