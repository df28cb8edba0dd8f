/* infer.h: the trained network over windows of a raster, the one way wildcpu turns features into
 * burn probabilities: the map (predict.c), the evaluation of a model (evaluate) and the
 * validation during training all go through it, so what was validated is what is mapped.
 *
 * A core (the pixels whose probabilities are wanted) is computed by one network window that
 * extends at least `margin` pixels beyond it on every side (the receptive-field radius rounded
 * up to the pooling alignment) and whose origin lies on the alignment grid in GLOBAL pixel
 * coordinates (raster.h, wc_raster_global_origin): a pixel then sees the same input pixels at
 * the same pooling phase whatever core it is computed in, so its probability does not depend on
 * where cores are cut, bitwise. Inputs are normalized by wc_normalize (dataset.h) exactly as
 * training normalizes them; a pixel with a nodata, NaN or Inf feature, or one whose normalized
 * value is beyond float's range, is invalid: 0 as an input, and no probability. Input outside
 * the raster is invalid too. A valid pixel whose network output is not finite gets no
 * probability either (counted): only finite probabilities in [0, 1] come out.
 *
 * Not here: which cores to compute (predict's strips, validation's blocks), labels, writing. */
#ifndef WILDCPU_INFER_H
#define WILDCPU_INFER_H

#include <stdint.h>

#include "wildcpu/net.h"
#include "wildcpu/raster.h"

/* Where the windows of a network and a raster lie. */
typedef struct wc_infer_geometry {
    int radius, align;    /* of the network */
    int margin;           /* radius rounded up to the alignment */
    int anchored;         /* 1: the georeferenced global grid; 0: the raster's own */
    long long gcol, grow; /* global pixel coordinates of the raster's pixel (0, 0) */
    int phase_x, phase_y; /* gcol, grow modulo the alignment */
} wc_infer_geometry;

/* The geometry of spec's network over raster r (collective-free, allocation-free). WC_ERR after
 * logging when the spec does not build for nfeat inputs. */
int wc_infer_geometry_of(wc_infer_geometry *g, const char *arch, const char *spec, int nfeat,
                         const wc_raster *r);

/* What a pixel of a core is, in wc_infer_core's valid output. */
enum {
    WC_PX_NODATA = 0, /* a feature is nodata, NaN or Inf, or the pixel is outside the raster */
    WC_PX_VALID = 1,  /* a probability */
    WC_PX_RANGE = 2,  /* a feature's normalized value is beyond float's range */
    WC_PX_BAD = 3,    /* the network's output was not finite */
};

/* An input this many training standard deviations from the training mean, or less, is one the
 * model has seen the like of: a non-finite output there is a diverged model's. */
#define WC_INFER_ORDINARY 8.0f

typedef struct wc_infer {
    wc_infer_geometry g;
    wc_raster *r;     /* borrowed; the reads go through it */
    const int *bands; /* (nfeat) the raster band feeding each input, borrowed */
    wc_dtype type;    /* the feature bands are read as */
    int nfeat;
    const double *mean, *std; /* (nfeat) borrowed */
    double *inv_std;          /* (nfeat) */
    wc_net *net;              /* built for one window of Tx x Ty */
    int64_t Tx, Ty;           /* window size: the widest core + 2 margins + alignment slack */
    int64_t max_cw, max_ch;
    void *raw;   /* (nfeat, Ty, Tx) as read */
    uint8_t *px; /* (Ty, Tx) WC_PX_* */
    int64_t windows_run, windows_skipped;
    int64_t beyond_range, nonfinite; /* core pixels with WC_PX_RANGE, WC_PX_BAD */
    int64_t nonfinite_ordinary;      /* ... of WC_PX_BAD in windows whose inputs all lie within
                                      * WC_INFER_ORDINARY training standard deviations: the model's
                                      * doing, not the data's (a pixel's output depends on its
                                      * neighbours', so a hostile value anywhere in the window
                                      * may be the cause) */
    int window_ordinary;             /* the window being computed is such a window */
    int window_outlier;      /* else the first feature (index) with a normalized value beyond
                              * WC_INFER_ORDINARY in it; -1 when only values beyond float's
                              * range (WC_PX_RANGE, their feature no longer known) made it so */
    int64_t *huge;           /* (nfeat) valid core pixels whose feature c is WC_HUGE_VALUE or
                              * more in magnitude: an undeclared nodata mapped as data */
    int64_t valid_pixels;    /* core pixels with all features valid (WC_PX_VALID) */
    double *z_sum;           /* (nfeat) their normalized values of feature c, summed: over
                              * valid_pixels, how many training standard deviations the
                              * raster's values lie from the training mean */
    const uint8_t *constant; /* (nfeat) or NULL, borrowed: wc_infer_set_constant */
    int64_t *differs;        /* (nfeat) valid core pixels whose constant feature c holds
                              * another value than it had in training */
} wc_infer;

/* Builds the window network (inference mode) for cores up to max_cw x max_ch with the given
 * parameters (copied). WC_ERR after logging (naming `what`) when it cannot be built. */
int wc_infer_init(wc_infer *p, const wc_infer_geometry *g, wc_raster *r, const int *bands,
                  wc_dtype type, int nfeat, const double *mean, const double *std, const char *arch,
                  const char *spec, const float *params, int64_t max_cw, int64_t max_ch,
                  const char *what);
void wc_infer_free(wc_infer *p);
/* The features that were constant over the training pixels (constant[c] = 1; borrowed, NULL for
 * none): fed as 0 whatever their values (dataset.h, wc_feature_inv_std), as training fed them,
 * and their valid core pixels of another value counted in differs. */
void wc_infer_set_constant(wc_infer *p, const uint8_t *constant);
/* What wc_infer_init would allocate for these arguments, known without allocating it (so that
 * the room for it can be checked first): the window's size, its network's memory plan, and the
 * bytes of both with the window's buffers. WC_ERR after logging, as wc_infer_init would. */
typedef struct wc_infer_plan_bytes {
    int64_t Tx, Ty;
    wc_memory_plan net;
    size_t bytes;
} wc_infer_plan_bytes;
int wc_infer_plan(const wc_infer_geometry *g, wc_dtype type, int nfeat, const char *arch,
                  const char *spec, int64_t max_cw, int64_t max_ch, const char *what,
                  wc_infer_plan_bytes *plan);
/* New parameters for the same network (validation after each epoch). */
void wc_infer_set_params(wc_infer *p, const float *params);

/* Probabilities of the core (cx, cy, cw, ch) of the raster into prob (ch rows of cw) and each
 * pixel's state into px (may be NULL); pixels without a probability get `fill`. WC_ERR after
 * logging when the window cannot be read. */
int wc_infer_core(wc_infer *p, int64_t cx, int64_t cy, int64_t cw, int64_t ch, float *prob,
                  uint8_t *px, float fill);

/* Collective: every rank's tallies of the cores run so far (huge, z_sum, differs) summed in
 * place on every rank; returns the valid core pixels over all ranks. */
int64_t wc_infer_sum_tallies(wc_infer *p);
/* Rank 0, after wc_infer_sum_tallies (`pixels` its result): warns of each feature whose values
 * no measurement has (an undeclared nodata), whose values average far from the training data's
 * (other units, a fill value), or that was constant in training and varies here. `what` leads
 * each message ("predict"), `done` says which pixels they are ("mapped", "of the validation
 * blocks"). */
void wc_infer_report_inputs(const wc_infer *p, int64_t pixels, const char *what, const char *done);

#endif
