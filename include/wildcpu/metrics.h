/* metrics.h: validation metrics of a per-pixel binary classifier, exact and identical for any
 * number of ranks.
 *
 * The accumulator is made only of int64 counters, so that partial results from any split of the
 * pixels, combined in any order, give the same bits: the distributed layer sums it across ranks
 * with one MPI_Allreduce(MPI_INT64_T, MPI_SUM) over wc_metrics_acc_words() words, and integer
 * addition does not depend on order the way a floating-point sum does. Threshold metrics (AP,
 * ROC-AUC, F1, precision/recall) come from a histogram of predicted probabilities in
 * WC_METRICS_BINS equal bins; the two sums (loss, Brier) are kept in fixed point.
 *
 * What the histogram means, exactly: AP, ROC-AUC, best F1 and its threshold are the exact
 * metrics of the probabilities rounded down to a multiple of 1/WC_METRICS_BINS (p == 1 to the
 * last bin's lower edge), with equal rounded values as ties: ROC-AUC counts a tied
 * positive/negative pair as 1/2, AP (sklearn's average_precision_score) takes equal values as one
 * threshold. Precision and recall at 0.5 are exact (0.5 is a bin boundary). Probabilities that
 * are multiples of 1/BINS give exactly the metrics of the raw values; otherwise the difference
 * comes only from positive/negative pairs sharing a bin (for ROC-AUC at most half their share of
 * all pairs). Measured on 50k informative pixels: AP within 1.2e-5, ROC-AUC within 2e-7, best F1
 * equal, its threshold within 1/BINS (tests/test_metrics.c reports these).
 * Limitation: every probability above 1 - 2^-16 (logit > 11.09) falls in the top bin and every
 * one below 2^-16 (logit < -11.09) in the bottom one, so a model that confident on many pixels
 * has its ranking among them flattened to ties.
 *
 * Fixed point (overflow-free for up to 2^31 pixels, with a factor 2 to spare):
 *   loss_fx:  units of 2^-20 nats; a pixel's loss is clamped to WC_METRICS_LOSS_MAX = 2048 nats,
 *             then rounded to nearest (llround), so it contributes at most 2^31 units. The mean
 *             is within 2^-21 (4.8e-7) nats of the exact mean of the clamped losses even if every
 *             rounding went the same way; in practice the errors cancel (~1e-9 nats over 50k
 *             pixels, shrinking as 1/sqrt(pixels)).
 *   brier_fx: units of 2^-31; (p - y)^2 <= 1 contributes at most 2^31 units; the mean is within
 *             2^-32 (2.3e-10) of the exact mean.
 * The probability and loss of a pixel are computed in double from its float input with libm's
 * exp/log1p: bitwise identical across ranks that run the same binary against the same libm.
 *
 * Not here: MPI (the caller reduces the accumulator), I/O beyond formatting JSON members, and
 * any allocation but the JSON builder's buffer (the accumulator is ~1 MiB: callers allocate it,
 * never on the stack). */
#ifndef WILDCPU_METRICS_H
#define WILDCPU_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "wildcpu/json.h"

/* Bin i holds probabilities in [i/BINS, (i+1)/BINS); p == 1 goes to the last bin. */
#define WC_METRICS_BINS          65536
#define WC_METRICS_LOSS_FX_BITS  20   /* loss_fx unit: 2^-20 nats */
#define WC_METRICS_LOSS_MAX      2048 /* a single pixel's loss is clamped to this many nats */
#define WC_METRICS_BRIER_FX_BITS 31   /* brier_fx unit: 2^-31 */
#define WC_METRICS_PROB_EPS      1e-7 /* wc_metrics_add_probs clamps p to [EPS, 1-EPS] for loss */

/* Every field is int64 and there is no padding: the struct is summed across ranks as one int64
 * array of wc_metrics_acc_words() elements. All counts are of valid pixels only. */
typedef struct wc_metrics_acc {
    int64_t pos[WC_METRICS_BINS]; /* (BINS) label-1 pixels per probability bin */
    int64_t neg[WC_METRICS_BINS]; /* (BINS) label-0 pixels per probability bin */
    int64_t loss_fx;              /* sum of per-pixel BCE loss, units of 2^-20 nats */
    int64_t brier_fx;             /* sum of (p - y)^2, units of 2^-31 */
    int64_t bad_outputs;          /* pixels whose logit or probability was NaN, or whose
                                   * probability was outside [0, 1]: not in the histogram or the
                                   * sums, and any of them makes every computed metric NaN */
} wc_metrics_acc;

/* Number of int64 words in a wc_metrics_acc (its size / 8): the count for MPI_Allreduce. */
size_t wc_metrics_acc_words(void);
/* Zeroes every counter. */
void wc_metrics_reset(wc_metrics_acc *acc);

/* Adds n pixels to acc.
 *   logits (n): the network's output; the probability is wc_sigmoid(logit), the loss
 *               wc_bce_pixel(logit, label, pos_weight) (layers.h), the same as training's;
 *               +-inf is accepted (p = 1 or 0; a wrong one's loss is clamped), NaN counts in
 *               bad_outputs;
 *   labels (n): 0 or 1 at every valid pixel (anything else there is a programmer error: the
 *               loader marks unknown labels invalid); ignored at invalid pixels;
 *   valid (n):  nonzero for pixels that count; 0 for nodata, whose logits and labels are never
 *               read; NULL means every pixel counts;
 *   pos_weight: the positive-class weight of training's loss (finite, >= 0). */
void wc_metrics_add_logits(wc_metrics_acc *acc, const float *logits, const float *labels,
                           const uint8_t *valid, size_t n, float pos_weight);
/* The same from probabilities (an oracle map that is already a probability). The histogram and
 * the Brier score use p as given; the loss is -(pw*y*log(p) + (1-y)*log(1-p)) with p clamped to
 * [1e-7, 1 - 1e-7] (WC_METRICS_PROB_EPS), so p = 0 or 1 gives a finite loss. A p that is NaN or
 * outside [0, 1] counts in bad_outputs. */
void wc_metrics_add_probs(wc_metrics_acc *acc, const float *probs, const float *labels,
                          const uint8_t *valid, size_t n, float pos_weight);
/* acc += other, counter by counter: what MPI_Allreduce does (for tests and in-process merges). */
void wc_metrics_merge(wc_metrics_acc *acc, const wc_metrics_acc *other);

typedef struct wc_metrics {
    int64_t pixels, positives; /* valid pixels counted (not bad_outputs), those with label 1 */
    int64_t bad_outputs;       /* see wc_metrics_acc; nonzero makes every double below NaN */
    double loss;               /* mean BCE over valid pixels */
    double auc_pr;             /* average precision: sum_k (R_k - R_{k-1}) P_k over thresholds
                                * from high to low (sklearn's average_precision_score) */
    double roc_auc;            /* area under the ROC curve, ties (same bin) counted as 1/2 */
    double best_f1;            /* max F1 over thresholds t = i/BINS, "positive if p >= t" */
    double best_f1_threshold;  /* that t; the highest such t among equal F1 values */
    double precision_at_half;  /* at "positive if p >= 0.5" (0.5 is a bin boundary: exact) */
    double recall_at_half;     /* at the same threshold */
    double brier;              /* mean (p - y)^2 */
    double positive_rate;      /* positives / pixels */
    /* reliability (calibration): the probabilities in WC_METRICS_CAL_BINS bins made of whole
     * histogram bins; bin k holds the histogram bins i with floor(10 i / WC_METRICS_BINS) = k,
     * so its bounds are k/10 rounded up to a multiple of 1/WC_METRICS_BINS (0.1 falls inside
     * histogram bin 6553: its pixels, p in [0.099991, 0.100006), count in bin 0); the pixels'
     * count, their mean predicted probability (from the histogram's bins, to 1/2^17) and the
     * share of them that burned (NaN for an empty bin) */
    int64_t cal_count[10];
    double cal_predicted[10], cal_observed[10];
} wc_metrics;

#define WC_METRICS_CAL_BINS 10

/* out = the metrics of acc. Undefined quantities are NaN, never a division by zero:
 *   no pixels:              everything (pixels and positives are 0);
 *   no positives:           auc_pr, roc_auc, best_f1, best_f1_threshold, recall_at_half;
 *   no negatives:           roc_auc;
 *   nothing p >= 0.5:       precision_at_half;
 *   bad_outputs > 0:        every double (the model's output is broken). */
void wc_metrics_compute(wc_metrics *out, const wc_metrics_acc *acc);

/* Writes m's members into the object open in j, each key prefixed with prefix ("val_" gives
 * "val_loss"; "" or NULL for none; at most 64 bytes), in this order:
 *   "pixels":123,"positives":7,"bad_outputs":0,"loss":0.1234,"auc_pr":...,"roc_auc":...,
 *   "best_f1":...,"best_f1_threshold":...,"precision_at_half":...,"recall_at_half":...,
 *   "brier":...,"positive_rate":...
 * Doubles in the builder's round-trip form (wc_json_num), NaN as null. */
void wc_metrics_json_members(wc_json *j, const wc_metrics *m, const char *prefix);
/* The reliability bins as member `key`: an array of {"from","to","pixels","predicted",
 * "observed"} objects (NaN as null). */
void wc_metrics_json_calibration(wc_json *j, const char *key, const wc_metrics *m);

#endif
