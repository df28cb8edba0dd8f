/* model.h: a trained model as a checkpoint holds it: the network (spec and parameters), the
 * input channels it expects (band names) and their normalization, the patch size and the data
 * fingerprint it was trained on. Prediction, export and the test tools load it here; every
 * field has been checked by the snapshot decoder (snapshot.h) before it is used.
 *
 * Not here: training state (optimizer moments: train.c), reading rasters. */
#ifndef WILDCPU_MODEL_H
#define WILDCPU_MODEL_H

#include <stdint.h>

#include "wildcpu/net.h"
#include "wildcpu/snapshot.h"

typedef struct wc_model {
    char *path;                    /* the checkpoint file it came from */
    long step;
    wc_net *net;                   /* inference mode, built for (max_N, H, W) */
    int nfeat;
    const char *const *feat_names; /* (nfeat) band descriptions, in input-channel order */
    const double *mean, *std;      /* (nfeat) */
    uint8_t *constant;             /* (nfeat) 1: constant in training, fed as 0 (dataset.h's
                                    * wc_feature_inv_std; WC_META_CONSTANT) */
    int patch;                     /* training patch side */
    const char *fingerprint;       /* of the training data */
    const char *config;            /* the training configuration record */
    const char *meta;              /* the checkpoint's meta record */
    const char *metrics;           /* the last validation metrics (JSON members), may be "" */
    wc_snapshot snap;              /* owns the fields above */
} wc_model;

/* Loads from a checkpoint file or a run directory (its newest usable checkpoint) and builds the
 * network for micro-batches of max_N samples of H x W (H = W = 0: the training patch size).
 * Returns WC_ERR after a message naming the file and the problem. */
int wc_model_load(wc_model *m, const char *path, int max_N, int H, int W);
void wc_model_free(wc_model *m);

#endif
