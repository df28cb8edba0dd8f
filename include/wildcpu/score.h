/* score.h: a map scored against labels while it is computed: what `wildcpu evaluate` measures on
 * any labelled raster (another region, another year), with the same metrics, computed the same
 * exact way, as validation during training (metrics.h): AUC-PR, ROC-AUC, best F1 and its
 * threshold, precision and recall at 0.5, Brier score, the reliability bins, the base rate.
 *
 * The labels are the tiles' label band (--label-band, default the band described `fire`), or
 * --labels: a raster or burned-area polygons, brought onto the tiles' grid as training does
 * (labels.h). A pixel counts when the map has a probability for it and its label is not
 * nodata; a pixel the map has no probability for although its features are valid (the
 * network's output was not finite) makes every metric undefined, as in validation.
 *
 * Every rank scores the cores it computes; the accumulators are integers, summed across ranks,
 * so the metrics are bitwise the same on any number of ranks.
 *
 * Not here: computing the probabilities (infer.h), the map (predict.h). */
#ifndef WILDCPU_SCORE_H
#define WILDCPU_SCORE_H

#include <stdint.h>

#include "wildcpu/metrics.h"
#include "wildcpu/raster.h"

typedef struct wc_score wc_score;

/* Opens the labels for scoring cores of up to max_core pixels of tiles. Collective (preparing
 * --labels, see labels.h). NULL after an error on any rank; *stopped set when a stop signal
 * ended the preparation. */
wc_score *wc_score_open(const wc_raster *tiles, const char *labels, const char *label_band,
                        const char *work_dir, int64_t max_core, int *stopped);
/* What wc_score_open allocates for cores of up to max_core pixels (its buffers and the metrics'
 * histograms), for a memory plan. */
size_t wc_score_bytes(int64_t max_core);
void wc_score_close(wc_score *s);
/* Adds the core (cx, cy, cw, ch): its probabilities and pixel states (infer.h's WC_PX_*). WC_ERR
 * after logging when the labels cannot be read. */
int wc_score_add(wc_score *s, int64_t cx, int64_t cy, int64_t cw, int64_t ch, const float *prob,
                 const uint8_t *px);
/* The metrics over every rank's cores. Collective. */
void wc_score_finish(wc_score *s, wc_metrics *out);
/* A one-line description of where the labels come from ("band 13 'fire' of PATH"). */
const char *wc_score_source(const wc_score *s);
/* The same with its paths absolute (files.h's wc_path_absolute): what a metrics file records,
 * meaningful wherever it is read, as the map's own record of its input is. */
const char *wc_score_record(const wc_score *s);
/* The raster the labels are read from: the tiles, --labels, or the raster derived from them. */
const char *wc_score_labels_path(const wc_score *s);

#endif
