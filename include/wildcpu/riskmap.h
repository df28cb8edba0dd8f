/* riskmap.h: the risk map's file, on the one rank that writes it.
 *
 * wc_predict_run computes the probabilities; this module makes them the GeoTIFF (or COG) that
 * docs/predict.md describes: its layout and provenance metadata, the count of valid pixels and
 * the exact histogram behind the risk classes, the class band (--classes), the verified atomic
 * publication through the raster writer (rwriter.h), then the quick-look picture (--png).
 *
 * Rows come in strips of WC_PREDICT_STRIP (the output's tile height), in order; each is
 * counted before it is written. Not here: windows, the network, MPI (predict.c). */
#ifndef WILDCPU_RISKMAP_H
#define WILDCPU_RISKMAP_H

#include <stdint.h>

#include "wildcpu/model.h"
#include "wildcpu/predict.h"
#include "wildcpu/raster.h"

typedef struct wc_riskmap wc_riskmap;

/* The working file of cfg->out for raster r mapped by model m, with the map's provenance;
 * window_layout describes the windows for the metadata of that name. Made before any
 * computing, so an unwritable location fails at once. NULL after a message. */
wc_riskmap *wc_riskmap_create(const wc_predict_config *cfg, const wc_raster *r, const wc_model *m,
                              const char *window_layout);

/* Rows [y0, y0 + n) of the probability band: each value a probability in [0, 1] or
 * WC_PREDICT_NODATA (checked: anything else is a programmer error). They are counted whether or
 * not the write succeeds. WC_OK, or WC_ERR after a message naming the rows and the files. */
int wc_riskmap_write(wc_riskmap *map, int64_t y0, int64_t n, const float *rows);

/* Pixels written so far, and those of them that are not nodata. */
void wc_riskmap_counts(const wc_riskmap *map, int64_t *npixels, int64_t *nvalid);

/* After the last rows: the class band, the commit (copy, verification, rename), the picture.
 * scratch holds WC_PREDICT_STRIP rows of the map's width (the caller's round buffer). Returns
 * an exit status: WC_EXIT_STOPPED (reported) when a stop signal arrives before the rename, the
 * target then untouched. Frees map. */
int wc_riskmap_finish(wc_riskmap *map, float *scratch);

/* Gives up: every temporary file removed, the target untouched. Frees map; NULL is fine. */
void wc_riskmap_abort(wc_riskmap *map);

#endif
