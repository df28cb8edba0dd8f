/* model.h: a trained model as a checkpoint holds it: the network (spec and parameters), the
 * input channels it expects (band names, types) and their normalization, the patch size and
 * the data fingerprint it was trained on. Prediction, export and the test tools load it here.
 *
 * Not here: training state (optimizer moments: train.c), reading rasters. */
#ifndef WILDCPU_MODEL_H
#define WILDCPU_MODEL_H

#include <stdint.h>

#include "wildcpu/net.h"

typedef struct wc_model {
    char *path;           /* the checkpoint file it came from */
    long step;
    wc_net *net;          /* inference mode, built for (max_N, H, W) */
    int nfeat;
    char **feat_names;    /* (nfeat) band descriptions, in input-channel order */
    double *mean, *std;   /* (nfeat) */
    int patch;            /* training patch side */
    char *fingerprint;    /* of the training data */
    char *config;         /* the training configuration record */
    char *meta;           /* the checkpoint's meta record */
    char *metrics;        /* the last validation metrics (JSON members), may be "" */
} wc_model;

/* Loads from a checkpoint file or a run directory (its newest valid checkpoint) and builds the
 * network for micro-batches of max_N samples of H x W (H = W = 0: the training patch size).
 * Returns WC_ERR after a message naming the file and the problem. */
int wc_model_load(wc_model *m, const char *path, int max_N, int H, int W);
void wc_model_free(wc_model *m);

#endif
