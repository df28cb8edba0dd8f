/* metrics.c: validation metrics from an all-int64 accumulator; see metrics.h.
 *
 * Not here: MPI, allocation (but for the JSON builder's buffer), the loss formula itself
 * (wc_bce_pixel in layers.h is the one both training and validation use). */
#include "wildcpu/metrics.h"

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/layers.h"
#include "wildcpu/util.h"

/* The reduction treats the struct as an int64 array; a field of another type, or padding, would
 * break that silently. A new field must also be added to wc_metrics_merge. */
_Static_assert(sizeof(wc_metrics_acc) == (2 * (size_t)WC_METRICS_BINS + 5) * sizeof(int64_t),
               "wc_metrics_acc must be int64 words only; update wc_metrics_merge too");

/* The bins of one half, q = min(p, 1 - p) in [0, 1/2): bin 0 below Q_MIN, then LOG_BINS of
 * 2^REL_BITS per power of two up to Q_LIN, then bins of 2^-16 up to 1/2. */
#define REL_BITS 11
#define Q_MIN    0x1p-53
#define Q_LIN    0x1p-5
#define LOG_BINS (48 << REL_BITS) /* log2(Q_LIN / Q_MIN) powers of two */
#define LIN_BINS 30720            /* (1/2 - Q_LIN) * 2^16 */
_Static_assert(WC_METRICS_HALF_BINS == 1 + LOG_BINS + LIN_BINS, "the half's bins");
_Static_assert(WC_METRICS_BINS == 2 * WC_METRICS_HALF_BINS, "0.5 must be a bin boundary");

/* Per-pixel maxima times their scales must stay <= 2^31: a low word below 2^CARRY_BITS plus one
 * pixel, summed over 2^22 ranks' accumulators, stays below 2^63. */
_Static_assert(((int64_t)WC_METRICS_LOSS_MAX << WC_METRICS_LOSS_FX_BITS) <= (INT64_C(1) << 31),
               "loss fixed point could overflow for 2^31 pixels");
_Static_assert(WC_METRICS_BRIER_FX_BITS <= 31, "Brier fixed point could overflow");

#define LOSS_SCALE  ((double)(1LL << WC_METRICS_LOSS_FX_BITS))
#define BRIER_SCALE ((double)(1LL << WC_METRICS_BRIER_FX_BITS))

size_t wc_metrics_acc_words(void) {
    return sizeof(wc_metrics_acc) / sizeof(int64_t);
}

void wc_metrics_reset(wc_metrics_acc *acc) {
    memset(acc, 0, sizeof *acc);
}

static uint64_t bits_of(double x) {
    uint64_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

/* The half's bin of q in [0, 1/2): q's value decides the region (a -0.0 is below Q_MIN, not a
 * bit pattern), then q - Q_LIN scaled by 2^16 (exact: q >= Q_LIN has no bit below 2^-57) or the
 * top REL_BITS of q's mantissa after its exponent, which order positive doubles as their bits
 * do. */
static int half_bin(double q) {
    WC_ASSERT(q >= 0.0 && q < 0.5);
    if (q < Q_MIN) return 0;
    if (q >= Q_LIN) return 1 + LOG_BINS + (int)((q - Q_LIN) * 65536.0);
    return 1 + (int)((bits_of(q) >> (52 - REL_BITS)) - (bits_of(Q_MIN) >> (52 - REL_BITS)));
}

/* The bin of p with q = min(p, 1 - p) given (computed from p, or from the logit): the upper half
 * mirrors the lower one with the edges on the other side, q in (edge, next edge], which is the
 * lower half's bin of the double just below q. */
static int bin_of(int upper, double q) {
    if (!upper) return half_bin(q);
    WC_ASSERT(q >= 0.0 && q <= 0.5);
    return WC_METRICS_BINS - 1 - (q <= Q_MIN ? 0 : half_bin(nextafter(q, 0.0)));
}

/* Every caller has checked p: a NaN or out-of-range value would be an out-of-bounds index. */
int wc_metrics_bin_of_prob(double p) {
    WC_ASSERT(p >= 0.0 && p <= 1.0);
    return p >= 0.5 ? bin_of(1, 1.0 - p) : bin_of(0, p); /* 1 - p is exact for p >= 1/2 */
}

/* p >= 0.5 decides the half, as for the probability wc_sigmoid(z) the other metrics use: a z
 * just below 0 can round to p = 0.5, and then sigmoid(z) = 0.5 is its q too. */
int wc_metrics_bin_of_logit(double z) {
    WC_ASSERT(!isnan(z));
    const double p = wc_sigmoid(z);
    return bin_of(p >= 0.5, z >= 0 ? wc_sigmoid(-z) : p);
}

/* The half's edge i in [0, HALF_BINS]: the inverse of half_bin. */
static double half_lower(int i) {
    if (i == 0) return 0.0;
    if (i > LOG_BINS) return Q_LIN + (double)(i - 1 - LOG_BINS) / 65536.0;
    uint64_t b = ((bits_of(Q_MIN) >> (52 - REL_BITS)) + (uint64_t)(i - 1)) << (52 - REL_BITS);
    double q;
    memcpy(&q, &b, sizeof q);
    return q;
}

double wc_metrics_bin_lower(int i) {
    WC_ASSERT(i >= 0 && i <= WC_METRICS_BINS);
    return i < WC_METRICS_HALF_BINS ? half_lower(i) : 1.0 - half_lower(WC_METRICS_BINS - i);
}

static int is_label(float y) {
    return y == 0.0f || y == 1.0f;
}

/* A sum's low word at or above 2^CARRY_BITS units moves its whole multiples of 2^CARRY_BITS into
 * the high word: the low word stays below 2^CARRY_BITS + 2^31 however many pixels are added
 * (Brier's 2^-31 units overflowed an int64 once the sum of (p - y)^2 passed 2^32, an evaluate of
 * 8.6e9 pixels at a mean Brier of 0.5), and the value, high x 2^CARRY_BITS + low, is unchanged. */
static void carry(int64_t *low, int64_t *high) {
    if (*low < ((int64_t)1 << WC_METRICS_CARRY_BITS)) return;
    *high += *low >> WC_METRICS_CARRY_BITS;
    *low &= ((int64_t)1 << WC_METRICS_CARRY_BITS) - 1;
}

/* A two-word sum's value in units, rounded once: the low word carried first (summed across
 * ranks, low words reach R x 2^CARRY_BITS), then both words convert exactly (below 2^53) and
 * 2^CARRY_BITS scales exactly. So the double is that of the exact sum whatever the rank count,
 * and that of a sum one word held, as before the high word existed. */
static double two_words(int64_t low, int64_t high) {
    carry(&low, &high);
    return ldexp((double)high, WC_METRICS_CARRY_BITS) + (double)low;
}

/* Adds one pixel in bin with probability p (already checked to be in [0, 1]) and loss (>= 0, may be
 * +inf). Rounding each pixel's value to the fixed-point grid before summing is what makes the
 * sums independent of order. */
static void add_pixel(wc_metrics_acc *acc, int bin, double p, float y, double loss) {
    WC_ASSERT(loss >= 0.0); /* fmin below would turn a NaN into the maximum and hide it */
    if (y != 0.0f)
        acc->pos[bin]++;
    else
        acc->neg[bin]++;
    double l = fmin(loss, (double)WC_METRICS_LOSS_MAX);
    acc->loss_fx += llround(l * LOSS_SCALE);
    double d = p - (double)y;
    acc->brier_fx += llround(d * d * BRIER_SCALE);
    carry(&acc->loss_fx, &acc->loss_hi);
    carry(&acc->brier_fx, &acc->brier_hi);
}

static void check_pos_weight(float pos_weight) {
    WC_ASSERT(isfinite(pos_weight) && pos_weight >= 0.0f);
}

void wc_metrics_add_logits(wc_metrics_acc *acc, const float *logits, const float *labels,
                           const uint8_t *valid, size_t n, float pos_weight) {
    check_pos_weight(pos_weight);
    for (size_t i = 0; i < n; i++) {
        if (valid && !valid[i]) continue;
        float y = labels[i];
        WC_ASSERT(is_label(y));
        double z = (double)logits[i];
        if (isnan(z)) {
            acc->bad_outputs++;
            continue;
        }
        /* An infinite logit would make wc_bce_pixel compute 0 * inf = NaN in the other label's
         * term; +-FLT_MAX gives the same probability (0 or 1) and a finite or +inf loss. */
        z = fmin(fmax(z, -FLT_MAX), FLT_MAX);
        double p = wc_sigmoid(z);
        if (!(p >= 0.0 && p <= 1.0)) { /* cannot happen for a finite z; checked, as for probs */
            acc->bad_outputs++;
            continue;
        }
        add_pixel(acc, wc_metrics_bin_of_logit(z), p, y,
                  wc_bce_pixel(z, (double)y, (double)pos_weight));
    }
}

void wc_metrics_add_probs(wc_metrics_acc *acc, const float *probs, const float *labels,
                          const uint8_t *valid, size_t n, float pos_weight) {
    check_pos_weight(pos_weight);
    const double pw = (double)pos_weight;
    for (size_t i = 0; i < n; i++) {
        if (valid && !valid[i]) continue;
        float y = labels[i];
        WC_ASSERT(is_label(y));
        double p = (double)probs[i];
        if (!(p >= 0.0 && p <= 1.0)) { /* also catches NaN */
            acc->bad_outputs++;
            continue;
        }
        double pc = fmin(fmax(p, WC_METRICS_PROB_EPS), 1.0 - WC_METRICS_PROB_EPS);
        /* Only the term of the pixel's own label, so 0 * log(...) never meets an infinity. */
        double loss = y != 0.0f ? -pw * log(pc) : -log1p(-pc);
        add_pixel(acc, wc_metrics_bin_of_prob(p), p, y, loss);
    }
}

void wc_metrics_merge(wc_metrics_acc *acc, const wc_metrics_acc *other) {
    for (int i = 0; i < WC_METRICS_BINS; i++) {
        acc->pos[i] += other->pos[i];
        acc->neg[i] += other->neg[i];
    }
    acc->loss_fx += other->loss_fx;
    acc->brier_fx += other->brier_fx;
    acc->loss_hi += other->loss_hi;
    acc->brier_hi += other->brier_hi;
    carry(&acc->loss_fx, &acc->loss_hi);
    carry(&acc->brier_fx, &acc->brier_hi);
    acc->bad_outputs += other->bad_outputs;
}

/* The reliability bins from the histogram: a coarse bin of 1/10 holds whole fine bins, the one
 * straddling its edge going by its lower edge (as the histogram rounds p down); a fine bin's
 * pixels count at its middle. 10 times an edge near k/10 is exact (a multiple of 2^-16). */
static void calibration(wc_metrics *out, const wc_metrics_acc *acc) {
    double sum_p[WC_METRICS_CAL_BINS] = {0}, burned[WC_METRICS_CAL_BINS] = {0};
    for (int i = 0; i < WC_METRICS_BINS; i++) {
        const int64_t n = acc->pos[i] + acc->neg[i];
        if (!n) continue;
        const double lo = wc_metrics_bin_lower(i), hi = wc_metrics_bin_lower(i + 1);
        const int k = WC_MIN(WC_METRICS_CAL_BINS - 1, (int)(WC_METRICS_CAL_BINS * lo));
        out->cal_count[k] += n;
        sum_p[k] += (double)n * (lo + (hi - lo) / 2);
        burned[k] += (double)acc->pos[i];
    }
    for (int k = 0; k < WC_METRICS_CAL_BINS; k++)
        if (out->cal_count[k]) {
            out->cal_predicted[k] = sum_p[k] / (double)out->cal_count[k];
            out->cal_observed[k] = burned[k] / (double)out->cal_count[k];
        }
}

/* The ties among the labelled pixels (see wc_metrics): pairs in one bin, summed in double as
 * the Mann-Whitney count is. */
static void ties(wc_metrics *out, const wc_metrics_acc *acc, int64_t P, int64_t N) {
    double pairs = 0.0;
    for (int i = 0; i < WC_METRICS_BINS; i++) {
        out->bins_used += acc->pos[i] + acc->neg[i] > 0;
        if (!acc->pos[i] || !acc->neg[i]) continue;
        out->tied_bins++;
        out->tied_pixels += acc->pos[i] + acc->neg[i];
        pairs += (double)acc->pos[i] * (double)acc->neg[i];
    }
    if (P > 0 && N > 0) out->tied_pairs = pairs / ((double)P * (double)N);
}

int wc_metrics_ties_note(const wc_metrics *m, char *buf, size_t size) {
    if (!(m->tied_pairs > WC_METRICS_TIE_WARN)) return 0;
    snprintf(buf, size,
             "%lld of the %lld labelled pixels share a probability bin with pixels of the other "
             "class (%lld bin%s hold%s them all): %.3g%% of the burned/unburned pairs are ties, "
             "each counted as half in AUC-PR, ROC-AUC and best F1. Where the map is equal (on "
             "uniform ground) that is its ranking; where its probabilities differ by less than a "
             "bin (nearly equal, below 1e-16, or within 6e-8 of 1, where a float holds few "
             "values) the metrics measure ties more than the ranking",
             (long long)m->tied_pixels, (long long)m->pixels, (long long)m->tied_bins,
             m->tied_bins == 1 ? "" : "s", m->tied_bins == 1 ? "s" : "", 100 * m->tied_pairs);
    return 1;
}

static void figure(char *buf, size_t size, const char *fmt, double v) {
    if (isnan(v))
        snprintf(buf, size, "undefined");
    else if (v > 0 && v < 0.001) /* a rare class's AP, say, which fixed digits would call 0 */
        snprintf(buf, size, "%.3g", v);
    else
        snprintf(buf, size, fmt, v);
}

/* The floats >= t are those >= f, the least float >= t, so a decimal v selects the same ones
 * compared in double exactly when it lies in (the float below f, f]; numpy and gdal_calc.py
 * compare a Float32 map with a number rounded to a float, which must then be f itself, so v
 * lies in [the middle of (below, f), f] as well (a v in the lower half of (below, f), such as
 * 0.04066467 for the edge 0.0406646728515625, rounds to the float below and selects it too).
 * First t rounded to nearest at 3 to 9 digits (the threshold as it reads), else a point three
 * quarters up that interval rounded (t's own digits may round up past f for many digits:
 * 1.3753104557978624e-16); that point, a quarter of a float's spacing (2^-26 relative) from
 * either end of [middle, f], is inside at 9 digits at the latest. */
void wc_metrics_threshold_text(double t, char *buf, size_t size) {
    if (!(t >= 0.0 && t <= 1.0)) {
        snprintf(buf, size, "%.3g", t);
        return;
    }
    float f = (float)t;
    if ((double)f < t) f = nextafterf(f, 2.0f);
    const double below = (double)nextafterf(f, -1.0f), aim = below + ((double)f - below) * 0.75;
    for (int k = 0; k < 2; k++)
        for (int digits = 3; digits <= (k ? 17 : 9); digits++) {
            snprintf(buf, size, "%.*g", digits, k ? aim : t);
            const double v = strtod(buf, NULL);
            if (v > below && v <= (double)f && (float)v == f) return;
        }
}

void wc_metrics_ranking_text(const wc_metrics *m, int at_half, char *buf, size_t size) {
    char ap[24], roc[24], f1[24], at[40] = "", t[32], prec[24], rec[24], half[128] = "";
    figure(ap, sizeof ap, "%.4f", m->auc_pr);
    figure(roc, sizeof roc, "%.4f", m->roc_auc);
    figure(f1, sizeof f1, "%.3f", m->best_f1);
    if (!isnan(m->best_f1)) {
        wc_metrics_threshold_text(m->best_f1_threshold, t, sizeof t);
        snprintf(at, sizeof at, " @ %s", t);
    }
    if (at_half) {
        figure(prec, sizeof prec, "%.4f", m->precision_at_half);
        figure(rec, sizeof rec, "%.4f", m->recall_at_half);
        /* a map of low risk everywhere: precision at 0.5 is 0/0, said why (broken outputs make
         * every figure undefined, which their own warning explains) */
        snprintf(half, sizeof half, "  precision %s and recall %s at 0.5%s", prec, rec,
                 isnan(m->precision_at_half) && !m->bad_outputs ? " (no pixel predicted >= 0.5)"
                                                                : "");
    }
    snprintf(buf, size, "AUC-PR %s  ROC-AUC %s  best F1 %s%s%s", ap, roc, f1, at, half);
}

void wc_metrics_json_calibration(wc_json *j, const char *key, const wc_metrics *m) {
    wc_json_key(j, key);
    wc_json_array(j);
    for (int k = 0; k < WC_METRICS_CAL_BINS; k++) {
        wc_json_object(j);
        wc_json_knum(j, "from", (double)k / WC_METRICS_CAL_BINS);
        wc_json_knum(j, "to", (double)(k + 1) / WC_METRICS_CAL_BINS);
        wc_json_kint(j, "pixels", m->cal_count[k]);
        wc_json_knum(j, "predicted", m->cal_predicted[k]);
        wc_json_knum(j, "observed", m->cal_observed[k]);
        wc_json_end(j);
    }
    wc_json_end(j);
}

void wc_metrics_compute(wc_metrics *out, const wc_metrics_acc *acc) {
    int64_t P = 0, N = 0;
    for (int i = 0; i < WC_METRICS_BINS; i++) {
        P += acc->pos[i];
        N += acc->neg[i];
    }
    const double nan = NAN;
    *out = (wc_metrics){.pixels = P + N,
                        .positives = P,
                        .bad_outputs = acc->bad_outputs,
                        .loss = nan,
                        .auc_pr = nan,
                        .roc_auc = nan,
                        .best_f1 = nan,
                        .best_f1_threshold = nan,
                        .precision_at_half = nan,
                        .recall_at_half = nan,
                        .brier = nan,
                        .positive_rate = nan,
                        .tied_pairs = nan};
    for (int k = 0; k < WC_METRICS_CAL_BINS; k++)
        out->cal_predicted[k] = out->cal_observed[k] = nan;
    if (P + N == 0 || acc->bad_outputs != 0) return;
    calibration(out, acc);
    ties(out, acc, P, N);

    const double total = (double)(P + N);
    out->loss = two_words(acc->loss_fx, acc->loss_hi) / LOSS_SCALE / total;
    out->brier = two_words(acc->brier_fx, acc->brier_hi) / BRIER_SCALE / total;
    out->positive_rate = (double)P / total;

    /* One pass from the highest bin down: tp, fp = pixels with p >= bin i's lower edge. Each bin
     * is one threshold; only bins holding positives move recall, so only they add to AP, and only
     * they can raise F1 (a bin of negatives alone lowers precision at the same recall). */
    int64_t tp = 0, fp = 0;
    double ap = 0.0, best_f1 = -1.0, best_t = nan;
    for (int i = WC_METRICS_BINS - 1; i >= 0; i--) {
        tp += acc->pos[i];
        fp += acc->neg[i];
        if (i == WC_METRICS_BINS / 2 && tp + fp > 0) {
            out->precision_at_half = (double)tp / (double)(tp + fp);
        }
        if (i == WC_METRICS_BINS / 2 && P > 0) out->recall_at_half = (double)tp / (double)P;
        if (acc->pos[i] == 0) continue;
        /* sum pos_i * precision_i, divided by P once: each term is at most pos_i and the
         * partial sums are integers at most P when every precision is 1, so AP is 1 exactly
         * for a perfect ranking and never above it (pos_i / P summed would give 1 - 1e-16 or
         * 1 + 5e-14) */
        ap += (double)acc->pos[i] * ((double)tp / (double)(tp + fp));
        /* F1 = 2tp / (2tp + fp + fn) = 2tp / (tp + fp + P); strict > keeps the highest t. */
        double f1 = 2.0 * (double)tp / (double)(tp + fp + P);
        if (f1 > best_f1) {
            best_f1 = f1;
            best_t = wc_metrics_bin_lower(i);
        }
    }
    if (P > 0) {
        out->auc_pr = ap / (double)P;
        out->best_f1 = best_f1;
        out->best_f1_threshold = best_t;
    }

    /* Mann-Whitney: each positive beats the negatives in lower bins and ties (1/2) those in its
     * own. In units of half pairs the count is an integer, but up to 2PN, which can exceed int64,
     * so it is summed in double: relative error ~1e-16 per term, and still a fixed order. */
    if (P > 0 && N > 0) {
        int64_t neg_below = 0;
        double half_pairs = 0.0;
        for (int i = 0; i < WC_METRICS_BINS; i++) {
            if (acc->pos[i] != 0)
                half_pairs += (double)acc->pos[i] * (double)(2 * neg_below + acc->neg[i]);
            neg_below += acc->neg[i];
        }
        out->roc_auc = half_pairs / (2.0 * (double)P * (double)N);
    }
}

/* The members of the JSON form, in its order: the counts, then the doubles. */
static const struct {
    const char *key;
    size_t offset;
} COUNTS[] = {{"pixels", offsetof(wc_metrics, pixels)},
              {"positives", offsetof(wc_metrics, positives)},
              {"bad_outputs", offsetof(wc_metrics, bad_outputs)}},
  DOUBLES[] = {{"loss", offsetof(wc_metrics, loss)},
               {"auc_pr", offsetof(wc_metrics, auc_pr)},
               {"roc_auc", offsetof(wc_metrics, roc_auc)},
               {"best_f1", offsetof(wc_metrics, best_f1)},
               {"best_f1_threshold", offsetof(wc_metrics, best_f1_threshold)},
               {"precision_at_half", offsetof(wc_metrics, precision_at_half)},
               {"recall_at_half", offsetof(wc_metrics, recall_at_half)},
               {"brier", offsetof(wc_metrics, brier)},
               {"positive_rate", offsetof(wc_metrics, positive_rate)}};
#define NCOUNTS  (sizeof COUNTS / sizeof COUNTS[0])
#define NDOUBLES (sizeof DOUBLES / sizeof DOUBLES[0])

void wc_metrics_json_members(wc_json *j, const wc_metrics *m, const char *prefix) {
    if (!prefix) prefix = "";
    WC_ASSERT(strlen(prefix) <= 64);
    char key[96];
    for (size_t i = 0; i < NCOUNTS; i++) {
        snprintf(key, sizeof key, "%s%s", prefix, COUNTS[i].key);
        wc_json_kint(j, key, *(const int64_t *)((const char *)m + COUNTS[i].offset));
    }
    for (size_t i = 0; i < NDOUBLES; i++) {
        snprintf(key, sizeof key, "%s%s", prefix, DOUBLES[i].key);
        wc_json_knum(j, key, *(const double *)((const char *)m + DOUBLES[i].offset));
    }
}

int wc_metrics_read_members(const wc_json_doc *doc, const char *prefix, wc_metrics *m) {
    if (!prefix) prefix = "";
    WC_ASSERT(strlen(prefix) <= 64);
    char key[96];
    memset(m, 0, sizeof *m);
    m->tied_pairs = NAN;
    for (int k = 0; k < WC_METRICS_CAL_BINS; k++) m->cal_predicted[k] = m->cal_observed[k] = NAN;
    for (size_t i = 0; i < NCOUNTS; i++) {
        snprintf(key, sizeof key, "%s%s", prefix, COUNTS[i].key);
        const double v = wc_json_get_num(doc, key);
        if (!(v >= 0 && v <= 9e18)) return WC_ERR; /* absent, null or not a count */
        *(int64_t *)((char *)m + COUNTS[i].offset) = (int64_t)v;
    }
    for (size_t i = 0; i < NDOUBLES; i++) {
        snprintf(key, sizeof key, "%s%s", prefix, DOUBLES[i].key);
        *(double *)((char *)m + DOUBLES[i].offset) = wc_json_get_num(doc, key); /* null: NaN */
    }
    return WC_OK;
}

int wc_metrics_can_rank(const wc_metrics *m) {
    return m->positives > 0 && m->positives < m->pixels;
}
