/* riskmap.h: the risk map's files, on the one rank that writes them.
 *
 * wc_predict_run computes the probabilities; this module makes them the GeoTIFF (or COG) that
 * docs/predict.md describes: its layout and provenance metadata, the count of valid pixels and
 * the exact histogram behind the risk classes, the class raster NAME_classes.tif (--classes),
 * the verified atomic publication through the raster writer (rwriter.h), then what comes with
 * the map once it is in place: the quick-look picture (--png), the QGIS styles NAME.qml and
 * (--classes) NAME_classes.qml (unless --no-style) and the STAC item NAME.json.
 *
 * Rows come in strips of WC_PREDICT_STRIP (the output's tile height), in order; each is
 * counted before it is written. Not here: windows, the network, MPI (predict.c). */
#ifndef WILDCPU_RISKMAP_H
#define WILDCPU_RISKMAP_H

#include <stdint.h>

#include "wildcpu/files.h"
#include "wildcpu/model.h"
#include "wildcpu/predict.h"
#include "wildcpu/raster.h"

typedef struct wc_riskmap wc_riskmap;

/* The files named after the map (wc_sibling_path): NAME_classes.tif, NAME.qml,
 * NAME_classes.qml, NAME.json. */
typedef struct wc_riskmap_paths {
    char *classes, *style, *classes_style, *stac;
    char *map_aux, *classes_aux; /* GDAL's sidecars (PATH.aux.xml), which GDAL may write */
} wc_riskmap_paths;
void wc_riskmap_paths_of(const char *out, wc_riskmap_paths *p);
void wc_riskmap_paths_free(wc_riskmap_paths *p);

/* The files cfg asks the map to write, for the caller's check before any work (together with
 * its other outputs: wc_check_outputs): the map, the picture, the class raster, the styles,
 * the item; one not asked for has path NULL. The derived paths point into p, from
 * wc_riskmap_paths_of(cfg->out, p). */
enum { WC_RISKMAP_OUTPUTS = 8 };
void wc_riskmap_outputs(const wc_predict_config *cfg, const wc_riskmap_paths *p,
                        wc_output out[WC_RISKMAP_OUTPUTS]);

/* Rank 0, before any work: refuses (after a message) to write over a file of another wildcpu
 * map still there, as its STAC item lists them (the map's files, --png, evaluate's metrics),
 * and the files named after the map that are not wildcpu's and would be replaced: a NAME.json
 * that is not a STAC item it wrote (a GeoJSON of perimeters, say), and with --classes a
 * NAME_classes.tif that is not its class raster. (A NAME.qml that is not its style is kept when
 * the map is written, with a warning.) p may be all NULL when cfg->out is (metrics alone). */
int wc_riskmap_check_companions(const wc_predict_config *cfg, const wc_riskmap_paths *p);

/* The working files of cfg->out (and of its class raster) for raster r mapped by model m, with
 * the map's provenance; window_layout describes the windows for the metadata of that name. Made
 * before any computing, so an unwritable location fails at once. r and m must stay until
 * finish or abort (the STAC item describes them). NULL after a message. */
wc_riskmap *wc_riskmap_create(const wc_predict_config *cfg, const wc_raster *r, const wc_model *m,
                              const char *window_layout);

/* Rows [y0, y0 + n) of the probability band: each value a probability in [0, 1] or
 * WC_PREDICT_NODATA (checked: anything else is a programmer error). They are counted whether or
 * not the write succeeds. WC_OK, or WC_ERR after a message naming the rows and the files. */
int wc_riskmap_write(wc_riskmap *map, int64_t y0, int64_t n, const float *rows);

/* Pixels written so far, and those of them that are not nodata. */
void wc_riskmap_counts(const wc_riskmap *map, int64_t *npixels, int64_t *nvalid);

/* After the last rows: the class raster, the commits (copy, verification, rename: the map, then
 * its classes), the picture, the style, the STAC item. scratch holds WC_PREDICT_STRIP rows of
 * the map's width (the caller's round buffer). Returns an exit status: WC_EXIT_STOPPED
 * (reported) when a stop signal arrives before the map's rename, the targets then untouched.
 * *published says whether the map itself replaced its target (a companion may still have
 * failed). Frees map. */
int wc_riskmap_finish(wc_riskmap *map, float *scratch, int *published);
/* What a stopped predict or evaluate leaves unwritten, for its stop line: the map and (evaluate,
 * written after the map) the metrics, each untouched where it exists; "nothing is written" when
 * the command writes neither. */
void wc_riskmap_unwritten(const wc_predict_config *cfg, char *buf, size_t size);

/* Gives up: every temporary file removed, the target untouched. Frees map; NULL is fine. */
void wc_riskmap_abort(wc_riskmap *map);

#endif
