/* bandmap.h: how a raster's bands feed a trained model's input channels.
 *
 * A model names its inputs by the band descriptions of its training data (wc_model.feat_names)
 * and records each band's type in its training data fingerprint. Any raster given to the model
 * later (`wildcpu predict`, `wildcpu evaluate`) is matched to those inputs by name,
 * whatever the order of its bands, and must be the same kind of data: every input present once,
 * of the type it had in training or a wider one that holds all its values (Int16 data stored as
 * Float32), and no band besides the inputs except the label band.
 *
 * Not here: reading the bands (raster.h), normalization (the model's mean and std). */
#ifndef WILDCPU_BANDMAP_H
#define WILDCPU_BANDMAP_H

#include <stddef.h>

#include "wildcpu/model.h"
#include "wildcpu/raster.h"

typedef struct wc_bandmap {
    int n;         /* the model's input channels (wc_model.nfeat) */
    int *bands;    /* (n) the raster band (1-based) feeding input channel i */
    wc_dtype type; /* what the n bands are read as in one call: the union of their read types */
} wc_bandmap;

/* Matches r's bands to m's inputs: an input is found by its band description, one named
 * band_<n> (a band that had no description) by its number; every input band must have the type
 * it had in training or a wider one; a band that is not an input is accepted only when it is
 * described as the training data's label band or WC_LABEL_BAND_NAME (but for case and blanks,
 * wc_labels_name_like, as training leaves such bands out of the features), or is label_band
 * (1-based: the band the command reads its labels from, `evaluate --label-band`; 0 for none),
 * which must not also be an input. Returns WC_OK with bm filled (free it with
 * wc_bandmap_free), or WC_ERR after one message naming the raster, the checkpoint and every
 * mismatch (bm is then empty). */
int wc_bandmap_match(wc_bandmap *bm, const wc_model *m, const wc_raster *r, int label_band);
void wc_bandmap_free(wc_bandmap *bm);

/* The meta record of a checkpoint (wc_snapshot.meta) naming the units of the training data's
 * input bands: WC_META_UNITS=name:unit,... for the bands of `bands` (n, 1-based) that have one.
 * Its value is returned (malloc'd): "" when no band has a unit. */
#define WC_META_UNITS "units"
char *wc_bandmap_units_record(const wc_raster *r, const int *bands, int n);

/* Warns once, naming every input band whose unit in r differs from its training data's as the
 * model's meta records it (case aside: "degC" is "degc"). A band without a unit on either side,
 * or a model written before units were recorded, says nothing. */
void wc_bandmap_warn_units(const wc_bandmap *bm, const wc_model *m, const wc_raster *r);

#endif
