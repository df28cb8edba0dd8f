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
    char *path; /* the checkpoint file it came from */
    long step;
    wc_net *net; /* inference mode, built for (max_N, H, W) */
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
    uint32_t crc;                  /* the checkpoint file's CRC-32 and size: which file it is */
    size_t file_bytes;
    wc_snapshot snap; /* owns the fields above */
} wc_model;

/* Loads from a checkpoint file or a run directory (its best.wcp when usable and the run's, else
 * its newest usable checkpoint; a best.wcp replaced while it was read is read again) and builds
 * the network for micro-batches of max_N samples of H x W (H = W = 0: the training patch size).
 * Returns WC_ERR after a message naming the file and the problem. */
int wc_model_load(wc_model *m, const char *path, int max_N, int H, int W);
/* The same on every rank, together (a collective): rank 0 resolves path (a run directory: the
 * checkpoint of its best validation, else its newest) and every rank loads that file, checked to
 * be the bytes rank 0 read, so that a training run writing into the directory meanwhile cannot
 * give the ranks different models. skip: this rank takes part but loads nothing (it failed
 * before), and gets WC_ERR. Returns WC_ERR after a message on the rank that failed (rank 0 when
 * it was its load); a rank may return WC_OK while another fails: callers agree on the outcome. */
int wc_model_load_agreed(wc_model *m, const char *path, int max_N, int H, int W, int skip);
void wc_model_free(wc_model *m);

#endif
