/* metrics.h: validation metrics of a per-pixel binary classifier, exact and identical for any
 * number of ranks.
 *
 * The accumulator is made only of int64 counters, so that partial results from any split of the
 * pixels, combined in any order, give the same bits: the distributed layer sums it across ranks
 * with one MPI_Allreduce(MPI_INT64_T, MPI_SUM) over wc_metrics_acc_words() words, and integer
 * addition does not depend on order the way a floating-point sum does. Threshold metrics (AP,
 * ROC-AUC, F1, precision/recall) come from a histogram of predicted probabilities in
 * WC_METRICS_BINS bins; the two sums (loss, Brier) are kept in fixed point.
 *
 * The bins resolve a probability relatively at both ends, because burn probabilities are small
 * (1e-4 to 1e-2 a year) and a model's confident pixels sit near 0 or 1. With q = min(p, 1 - p):
 *   q in [2^-5, 1/2):     bins of 2^-16 (p in [1/32, 31/32]: the bins of 65536 equal ones);
 *   q in [2^-53, 2^-5):   2^11 bins per power of two (the top 11 bits of q's mantissa: widths
 *                         2^-12 to 2^-11 of q, 3e-4 to 5e-4 in logit), 48 powers of two;
 *   q < 2^-53:            one bin at each end (|logit| > 36.7; 2^-53 is the smallest 1 - p a
 *                         double below 1 has, so both ends resolve the same range).
 * The p >= 1/2 half mirrors the other, 0.5 is the lower edge of bin BINS/2, and a bin holds p in
 * [lower edge, next one's) (p == 1 in the last bin). Every edge is exact in double but the lower
 * edges above 1 - 2^-42, which are rounded (no probability read from a float lies there). The
 * probability of a logit is binned by q = sigmoid(-|z|), not 1 - sigmoid(|z|), so a pixel near 1
 * is resolved as well as one near 0.
 *
 * What the histogram means, exactly: AP, ROC-AUC, best F1 and its threshold are the exact
 * metrics of the probabilities rounded down to their bin's lower edge (wc_metrics_bin_lower),
 * with equal rounded values as ties: ROC-AUC counts a tied positive/negative pair as 1/2, AP
 * (sklearn's average_precision_score) takes equal values as one threshold. Precision and recall
 * at 0.5 are exact. Against the raw values, the tolerance each meets (tests/test_metrics.c checks
 * the bounds and reports the measures):
 *   ROC-AUC: differs only through positive/negative pairs sharing a bin, by at most half their
 *            share of all pairs (tied_pairs below; |d| <= tied_pairs / 2);
 *   best F1: never above the raw values' best F1 (the bins' thresholds are some of theirs), and
 *            below it only through bins holding both classes; it is exactly the F1 of "p >= its
 *            threshold" on the map;
 *   AP:      also differs through bins holding several positives under any negative, which
 *            tied_pairs does not count: a bin of positives alone is one threshold (positives at
 *            0.300001 and 0.3 under a negative at 0.9 give AP 2/3; their raw values 0.583, and
 *            raw values that are equal 2/3 too, so the histogram cannot know which is meant).
 * Measured against an exact sorted computation: p uniform in [0, 1] or 50k informative logits, AP
 * within 1.3e-5 and ROC-AUC within 1.2e-7 (as with 65536 equal bins); p log-uniform in
 * [1e-5, 0.1] (300k float pixels, 6 seeds), AP within 2.4e-6 to 7.6e-5, best F1 within 3.3e-5
 * and ROC-AUC within 1e-7 (1e-5 with equal bins; one seed had given AP 7e-6 here before
 * 2026-12-06, taken for the rule); p near 1e-4 with a perfect ranking, and logits of 16 to 36 in
 * magnitude (p below 1e-7 or above 1 - 1e-7), exact to 3e-6 (equal bins gave AP 0.23 for 1 and
 * ROC-AUC 0.70 for 0.80). A logistic model's map of the 256 px synthetic region (61515 pixels, p
 * in 0.03 to 0.11, tied_pairs 1.9e-4: no warning) is 4.4e-5 off in AP and 6.7e-5 in best F1;
 * a unet-lite validation of 11956 pixels after 18 steps (tied_pairs 2.5e-4: no warning) 8.7e-5
 * in AP and 3.1e-4 in best F1 (an independent numpy audit, 2026-12-07). These are measurements,
 * not bounds: fewer pixels in fewer bins go further, and the tie warning below says when.
 * Validation and evaluate bin the map's probabilities as floats (wc_metrics_add_probs): near 1
 * a float holds few values (1 - 2^-24 is the last below 1: every logit above about 17 reads as
 * 1.0f), so there only the logit path (wc_metrics_add_logits) resolves what the bins can; near
 * 0 a float resolves p down to about 1e-38, beyond the bins' 2^-53.
 *
 * Fixed point, each sum in two words (an accumulator's low word carries into its high word
 * whenever it reaches 2^WC_METRICS_CARRY_BITS units, so neither overflows for any count of
 * pixels an int64 counts; the value is high x 2^CARRY_BITS + low, summed across ranks word by
 * word, exactly):
 *   loss_fx:  units of 2^-20 nats; a pixel's loss is clamped to WC_METRICS_LOSS_MAX = 2048 nats,
 *             then rounded to nearest (llround), so it contributes at most 2^31 units. The mean
 *             is within 2^-21 (4.8e-7) nats of the exact mean of the clamped losses even if every
 *             rounding went the same way. They do not all cancel: a pixel's loss below 2^-21
 *             nats (every pixel clamped at p = 1e-7 or 1 - 1e-7 that is right) rounds to 0, so
 *             the mean is biased low, by about 2.6e-8 nats measured over 61610 and 339393
 *             pixels of unet-lite maps (2026-12-07), not shrinking with more pixels.
 *   brier_fx: units of 2^-31; (p - y)^2 <= 1 contributes at most 2^31 units; the mean is within
 *             2^-32 (2.3e-10) of the exact mean.
 * The probability and loss of a pixel are computed in double from its float input with libm's
 * exp/log1p: bitwise identical across ranks that run the same binary against the same libm.
 *
 * Not here: MPI (the caller reduces the accumulator), I/O beyond formatting JSON members, and
 * any allocation but the JSON builder's buffer (the accumulator is 3.9 MiB, summed at each
 * validation: callers allocate it, never on the stack). */
#ifndef WILDCPU_METRICS_H
#define WILDCPU_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "wildcpu/json.h"

/* The bins of one half (p < 1/2): one for q < 2^-53, 48 x 2^11 relative ones, 30720 of 2^-16. */
#define WC_METRICS_HALF_BINS     (1 + 48 * 2048 + 30720)
#define WC_METRICS_BINS          (2 * WC_METRICS_HALF_BINS) /* bin BINS/2 starts at 0.5 */
#define WC_METRICS_TIE_WARN      1e-3 /* tied_pairs above this: the metrics are mostly ties */
#define WC_METRICS_LOSS_FX_BITS  20   /* loss_fx unit: 2^-20 nats */
#define WC_METRICS_LOSS_MAX      2048 /* a single pixel's loss is clamped to this many nats */
#define WC_METRICS_BRIER_FX_BITS 31   /* brier_fx unit: 2^-31 */
#define WC_METRICS_PROB_EPS      1e-7 /* wc_metrics_add_probs clamps p to [EPS, 1-EPS] for loss */
#define WC_METRICS_CARRY_BITS    40   /* a low word carries into its high word at 2^40 units */

/* Every field is int64 and there is no padding: the struct is summed across ranks as one int64
 * array of wc_metrics_acc_words() elements. All counts are of valid pixels only. */
typedef struct wc_metrics_acc {
    int64_t pos[WC_METRICS_BINS]; /* (BINS) label-1 pixels per probability bin */
    int64_t neg[WC_METRICS_BINS]; /* (BINS) label-0 pixels per probability bin */
    int64_t loss_fx;              /* sum of per-pixel BCE loss, units of 2^-20 nats: low word */
    int64_t brier_fx;             /* sum of (p - y)^2, units of 2^-31: low word */
    int64_t loss_hi, brier_hi;    /* their high words, units of 2^CARRY_BITS low units */
    int64_t bad_outputs;          /* pixels whose logit or probability was NaN, or whose
                                   * probability was outside [0, 1]: not in the histogram or the
                                   * sums, and any of them makes every computed metric NaN */
} wc_metrics_acc;

/* The bin of probability p in [0, 1] (wc_metrics_add_probs's), and of the probability of a
 * logit z that is not NaN (wc_metrics_add_logits's: from sigmoid(-|z|), so the end near 1 is
 * resolved beyond what 1 - p in double keeps). */
int wc_metrics_bin_of_prob(double p);
int wc_metrics_bin_of_logit(double z);
/* Bin i's lower edge, i in [0, BINS]: a p in [0, 1] is in bin i exactly when
 * lower(i) <= p < lower(i + 1) (lower(BINS) = 1; p == 1 in bin BINS - 1); above 1 - 2^-42 the
 * edges are rounded to double, see above. */
double wc_metrics_bin_lower(int i);

/* Number of int64 words in a wc_metrics_acc (its size / 8): the count for MPI_Allreduce. */
size_t wc_metrics_acc_words(void);
/* The pos_weight of a map's loss, in validation, for the oracle and in `evaluate`: the unweighted
 * binary cross-entropy of its probabilities, comparable between runs of any --pos-weight
 * (training's own loss, which it minimizes, weighs burned pixels by it). */
#define WC_METRICS_MAP_POS_WEIGHT 1.0f

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
    double best_f1;            /* max F1 over thresholds t = a bin's lower edge, "p >= t" */
    double best_f1_threshold;  /* that t; the highest such t among equal F1 values */
    double precision_at_half;  /* at "positive if p >= 0.5" (0.5 is a bin boundary: exact) */
    double recall_at_half;     /* at the same threshold */
    double brier;              /* mean (p - y)^2 */
    double positive_rate;      /* positives / pixels */
    /* ties: the share of (positive, negative) pairs whose probabilities share a bin (NaN
     * without both classes), the pixels in bins that hold both classes and the bins holding
     * any pixel. Informative maps measure below 3e-5 (tests/test_metrics.c); above
     * WC_METRICS_TIE_WARN the ranking metrics describe ties more than the map's ranking. */
    double tied_pairs;
    int64_t tied_pixels, tied_bins, bins_used; /* tied_bins: those holding both classes */
    /* reliability (calibration): the probabilities in WC_METRICS_CAL_BINS bins made of whole
     * histogram bins; bin k holds the histogram bins whose lower edge is in [k/10, (k+1)/10),
     * so its bounds are k/10 rounded up to a multiple of 2^-16 (0.1 falls inside the histogram
     * bin [0.099991, 0.100006), whose pixels count in bin 0); the pixels' count, their mean
     * predicted probability (each pixel at its histogram bin's middle: within 2^-17, and 2^-12
     * relative below 1/32 and above 31/32) and the share of them that burned (NaN for an empty
     * bin) */
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
/* The members wc_metrics_json_members wrote with prefix, read back from doc into m (a
 * checkpoint's last validation): null as NaN; the ties and the reliability bins, which that
 * form does not hold, as unknown (NaN, counts 0). WC_ERR when a count is absent or not one. */
int wc_metrics_read_members(const wc_json_doc *doc, const char *prefix, wc_metrics *m);
/* The reliability bins as member `key`: an array of {"from","to","pixels","predicted",
 * "observed"} objects (NaN as null). */
void wc_metrics_json_calibration(wc_json *j, const char *key, const wc_metrics *m);

/* Whether m's labels can rank models: both burned and unburned pixels. Without burned ones
 * AUC-PR is undefined; with nothing else it is 1 for any model. */
int wc_metrics_can_rank(const wc_metrics *m);

/* When m's tied_pairs is above WC_METRICS_TIE_WARN: writes into buf (size bytes) a sentence
 * naming the pixels that share bins and the share of tied pairs, for a warning, and returns 1;
 * otherwise returns 0 and leaves buf alone. */
int wc_metrics_ties_note(const wc_metrics *m, char *buf, size_t size);

/* A threshold t in [0, 1] (best_f1_threshold: a bin's lower edge) as a decimal of 3 to 9
 * significant digits (t rounded where that will do) that a float probability, the map's, is >=
 * exactly when it is >= t, compared in double or in float (the decimal rounded to a float, as
 * numpy compares a Float32 map with a number), so that "p >= printed" selects the pixels the F1
 * beside it counts (0.040664672 for the edge under a map of 0.0406675, which "%.3g" printed as
 * 0.0407, above every pixel); "%.3g" of anything else. */
void wc_metrics_threshold_text(double t, char *buf, size_t size);

/* m's ranking figures for a log line, "AUC-PR 0.4312  ROC-AUC 0.9012  best F1 0.456 @ 0.3100861"
 * (with at_half, then "  precision 0.51 and recall 0.40 at 0.5"), each undefined one (labels
 * without burned pixels, no pixel predicted >= 0.5, a network output that is not finite) as
 * "undefined" where printf would write "nan". */
void wc_metrics_ranking_text(const wc_metrics *m, int at_half, char *buf, size_t size);

#endif
