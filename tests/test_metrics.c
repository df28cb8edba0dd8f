/* test_metrics.c: the histogram metrics against an exact reference computed here from sorted
 * (p, y) pairs; bit-identical accumulators for any split of the pixels and any merge order;
 * nodata ignored; edge cases and every bin edge; small probabilities (the probe's p ~ 1e-4
 * maps, realistic log-uniform ones) and the extremes near 0 and 1 against the same reference;
 * the ties note; the fixed-point bounds; the JSON text and members.
 *
 * The reference shares nothing with metrics.c but wc_sigmoid and wc_bce_pixel (the definitions
 * of probability and loss): AP walks distinct thresholds high to low, ROC-AUC is the Mann-Whitney
 * rank sum with average ranks for ties, best F1 tries every distinct threshold. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "wildcpu/json.h"
#include "wildcpu/layers.h"
#include "wildcpu/metrics.h"
#include "wildcpu/rng.h"
#include "wildcpu/util.h"

#define BINS WC_METRICS_BINS

/* ---- data ---------------------------------------------------------------------------------- */

typedef struct dataset {
    size_t n;
    float *logits;  /* (n) */
    float *labels;  /* (n) */
    uint8_t *valid; /* (n) */
} dataset;

/* Labels with the given positive rate, informative logits (-3 + 2.5 y + N(0,1)); a fraction of
 * the pixels invalid and holding garbage (NaN logit, label 0.5) that must never be read. */
/* The metrics as a JSON object through the builder (what train.c and report.c write). */
static void metrics_text(char *buf, size_t size, const wc_metrics *m, const char *prefix) {
    wc_json j;
    wc_json_init(&j);
    wc_json_object(&j);
    wc_metrics_json_members(&j, m, prefix);
    wc_json_end(&j);
    snprintf(buf, size, "%s", wc_json_text(&j));
    wc_json_free(&j);
}

static dataset make_dataset(uint64_t seed, size_t n, double pos_rate, double invalid_frac) {
    dataset d = {n, WC_ALLOC(n * sizeof(float)), WC_ALLOC(n * sizeof(float)), WC_ALLOC(n)};
    wc_rng r;
    wc_rng_seed(&r, seed, 1000, 0);
    for (size_t i = 0; i < n; i++) {
        float y = wc_rng_uniform(&r) < pos_rate ? 1.0f : 0.0f;
        d.labels[i] = y;
        d.logits[i] = (float)(-3.0 + 2.5 * y + wc_rng_normal(&r));
        d.valid[i] = wc_rng_uniform(&r) >= invalid_frac;
        if (!d.valid[i]) {
            d.logits[i] = NAN;
            d.labels[i] = 0.5f;
        }
    }
    return d;
}

static void free_dataset(dataset *d) {
    free(d->logits);
    free(d->labels);
    free(d->valid);
}

static wc_metrics_acc *new_acc(void) {
    return WC_CALLOC(1, sizeof(wc_metrics_acc));
}

/* Adds in uneven chunks, as validation batches would. */
static void add_logits_chunked(wc_metrics_acc *acc, const dataset *d, size_t off, size_t n,
                               float pw) {
    size_t chunk = 4093;
    for (size_t i = 0; i < n; i += chunk) {
        size_t m = WC_MIN(chunk, n - i);
        wc_metrics_add_logits(acc, d->logits + off + i, d->labels + off + i, d->valid + off + i, m,
                              pw);
    }
}

/* ---- the exact reference ------------------------------------------------------------------- */

typedef struct pair {
    double p;
    int y;
} pair;

static int by_p_desc(const void *a, const void *b) {
    double x = ((const pair *)a)->p, y = ((const pair *)b)->p;
    return (x < y) - (x > y);
}

typedef struct ref_metrics {
    double auc_pr, roc_auc, best_f1, best_f1_threshold, precision_at_half, recall_at_half, brier;
} ref_metrics;

/* Sorts v in place (descending p). */
static ref_metrics reference(pair *v, size_t n) {
    qsort(v, n, sizeof *v, by_p_desc);
    double P = 0, brier = 0;
    for (size_t i = 0; i < n; i++) {
        P += v[i].y;
        brier += (v[i].p - v[i].y) * (v[i].p - v[i].y);
    }
    double N = (double)n - P;
    ref_metrics r = {NAN, NAN, NAN, NAN, NAN, NAN, brier / (double)n};

    /* AP and best F1: one threshold per distinct p, from high to low. */
    double tp = 0, fp = 0, ap = 0, best = -1, best_t = NAN;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        double gp = 0;
        while (j < n && v[j].p == v[i].p) gp += v[j++].y;
        double prev_recall = tp / P;
        tp += gp;
        fp += (double)(j - i) - gp;
        ap += (tp / P - prev_recall) * (tp / (tp + fp));
        double f1 = 2 * tp / (2 * tp + fp + (P - tp));
        if (f1 > best) best = f1, best_t = v[i].p;
        i = j;
    }
    if (P > 0) r.auc_pr = ap, r.best_f1 = best, r.best_f1_threshold = best_t;

    /* ROC-AUC by the rank sum: ascending ranks 1..n, a tie group shares its average rank. */
    double rank_sum_pos = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        double gp = 0;
        while (j < n && v[j].p == v[i].p) gp += v[j++].y;
        /* descending positions i..j-1 are ascending ranks n-j+1 .. n-i */
        double avg_rank = ((double)(n - j + 1) + (double)(n - i)) / 2;
        rank_sum_pos += gp * avg_rank;
        i = j;
    }
    if (P > 0 && N > 0) r.roc_auc = (rank_sum_pos - P * (P + 1) / 2) / (P * N);

    double tp5 = 0, pp5 = 0;
    for (size_t i = 0; i < n; i++)
        if (v[i].p >= 0.5) pp5++, tp5 += v[i].y;
    if (pp5 > 0) r.precision_at_half = tp5 / pp5;
    if (P > 0) r.recall_at_half = tp5 / P;
    return r;
}

/* What the histogram is documented to compute: p rounded down to its bin's lower edge. */
static double quantize(int bin) {
    return wc_metrics_bin_lower(bin);
}

/* ---- tests --------------------------------------------------------------------------------- */

static void check_close(const char *what, double got, double want, double tol) {
    int ok = (isnan(got) && isnan(want)) || fabs(got - want) <= tol;
    CHECK(ok, "%s = %.17g, want %.17g (tolerance %g)", what, got, want, tol);
}

static void test_hand_example(void) {
    /* High to low: 0.75 (+), 0.625 (-), 0.375 (+), 0.125 (-).
     * AP = 1/2 * 1 + 1/2 * 2/3 = 5/6; ROC: 3 of the 4 (pos, neg) pairs are ordered = 3/4;
     * F1 at t = 0.75, 0.625, 0.375, 0.125: 2/3, 1/2, 4/5, 2/3 -> 0.8 at 0.375;
     * p >= 0.5: {0.75+, 0.625-}: precision 1/2, recall 1/2; Brier = (1/16 + 25/64 + 25/64 +
     * 1/64)/4 = 55/256. All the probabilities are bin edges (multiples of 2^-16 in [1/32, 31/32]),
     * so these are exact. */
    const float probs[4] = {0.75f, 0.625f, 0.375f, 0.125f}, labels[4] = {1, 0, 1, 0};
    wc_metrics_acc *acc = new_acc();
    wc_metrics m;
    wc_metrics_add_probs(acc, probs, labels, NULL, 4, 1.0f);
    wc_metrics_compute(&m, acc);
    CHECK(m.pixels == 4 && m.positives == 2, "pixels %lld positives %lld", (long long)m.pixels,
          (long long)m.positives);
    check_close("auc_pr", m.auc_pr, 5.0 / 6.0, 1e-15);
    check_close("roc_auc", m.roc_auc, 0.75, 0);
    check_close("best_f1", m.best_f1, 0.8, 1e-15);
    check_close("best_f1_threshold", m.best_f1_threshold, 0.375, 0);
    check_close("precision_at_half", m.precision_at_half, 0.5, 0);
    check_close("recall_at_half", m.recall_at_half, 0.5, 0);
    check_close("brier", m.brier, 55.0 / 256.0, 1e-9);
    check_close("positive_rate", m.positive_rate, 0.5, 0);
    double loss = -(log(0.75) + log(1 - 0.625) + log(0.375) + log(1 - 0.125)) / 4;
    check_close("loss", m.loss, loss, 1e-6);

    /* Ties: 0.5 (+), 0.5 (-), 0.25 (+), 0.25 (-). Each tie group is one threshold with
     * precision 1/2, so AP = 1/2; ROC: (1/2 + 1 + 0 + 1/2)/4 = 1/2; F1: 1/2 at t = 0.5, 2/3 at
     * t = 0.25; Brier = (1/4 + 1/4 + 9/16 + 1/16)/4 = 9/32. */
    const float tprobs[4] = {0.5f, 0.5f, 0.25f, 0.25f};
    wc_metrics_reset(acc);
    wc_metrics_add_probs(acc, tprobs, labels, NULL, 4, 1.0f);
    wc_metrics_compute(&m, acc);
    check_close("tied auc_pr", m.auc_pr, 0.5, 1e-15);
    check_close("tied roc_auc", m.roc_auc, 0.5, 0);
    check_close("tied best_f1", m.best_f1, 2.0 / 3.0, 1e-15);
    check_close("tied best_f1_threshold", m.best_f1_threshold, 0.25, 0);
    check_close("tied precision_at_half", m.precision_at_half, 0.5, 0);
    check_close("tied recall_at_half", m.recall_at_half, 0.5, 0);
    check_close("tied brier", m.brier, 9.0 / 32.0, 1e-9);

    /* Equal F1 at two thresholds: 0.875 (+), 0.75 (-), 0.625 (-), 0.5 (+) gives 2/3 at t = 0.875
     * and 4/6 at t = 0.5; the higher threshold is reported. */
    const float fprobs[4] = {0.875f, 0.75f, 0.625f, 0.5f}, flabels[4] = {1, 0, 0, 1};
    wc_metrics_reset(acc);
    wc_metrics_add_probs(acc, fprobs, flabels, NULL, 4, 1.0f);
    wc_metrics_compute(&m, acc);
    check_close("F1 tie best_f1", m.best_f1, 2.0 / 3.0, 1e-15);
    check_close("F1 tie best_f1_threshold", m.best_f1_threshold, 0.875, 0);

    /* The same ranking given as logits, with pos_weight 3: the loss is training's. */
    const float logits[4] = {2.0f, 1.0f, -0.5f, -2.0f};
    wc_metrics_reset(acc);
    wc_metrics_add_logits(acc, logits, labels, NULL, 4, 3.0f);
    wc_metrics_compute(&m, acc);
    double want = 0;
    for (int i = 0; i < 4; i++) want += wc_bce_pixel(logits[i], labels[i], 3.0) / 4;
    check_close("logits loss", m.loss, want, 1e-6);
    check_close("logits auc_pr", m.auc_pr, 5.0 / 6.0, 1e-15);
    check_close("logits roc_auc", m.roc_auc, 0.75, 0);
    free(acc);
}

/* Informative random data, several seeds and pos_weights, both entry points. */
static void test_random_vs_exact_reference(void) {
    const size_t n = 50000;
    double worst_raw[3] = {0}, worst_loss = 0, worst_brier = 0, worst_q = 0;
    double worst_f1t = 0;
    for (uint64_t seed = 1; seed <= 4; seed++) {
        const float pw = seed % 2 ? 1.0f : 19.0f;
        const int use_probs = seed == 4;
        dataset d = make_dataset(seed, n, 0.05, 0.0);
        float *probs = WC_ALLOC(n * sizeof(float));
        pair *raw = WC_ALLOC(n * sizeof(pair)), *q = WC_ALLOC(n * sizeof(pair));
        double loss = 0;
        for (size_t i = 0; i < n; i++) {
            double p = wc_sigmoid(d.logits[i]), y = d.labels[i];
            if (use_probs) {
                probs[i] = (float)p;
                p = probs[i];
                double pc = fmin(fmax(p, 1e-7), 1 - 1e-7);
                loss += -(pw * y * log(pc) + (1 - y) * log(1 - pc));
            } else {
                loss += wc_bce_pixel(d.logits[i], y, pw);
            }
            raw[i] = (pair){p, (int)y};
            int b = use_probs ? wc_metrics_bin_of_prob(p) : wc_metrics_bin_of_logit(d.logits[i]);
            q[i] = (pair){quantize(b), (int)y};
        }
        loss /= (double)n;

        wc_metrics_acc *acc = new_acc();
        if (use_probs)
            wc_metrics_add_probs(acc, probs, d.labels, NULL, n, pw);
        else
            add_logits_chunked(acc, &d, 0, n, pw);
        wc_metrics m;
        wc_metrics_compute(&m, acc);
        ref_metrics r = reference(raw, n), rq = reference(q, n);

        CHECK(m.pixels == (int64_t)n, "pixels %lld", (long long)m.pixels);
        /* Against the raw probabilities: close (measured: AP 1.2e-5, ROC-AUC 1.4e-7, F1 equal),
         * and F1 from fewer thresholds is never higher. */
        double e_ap = fabs(m.auc_pr - r.auc_pr), e_roc = fabs(m.roc_auc - r.roc_auc);
        double e_f1 = r.best_f1 - m.best_f1;
        CHECK(e_ap <= 5e-5, "seed %d: AP %.9f vs exact %.9f", (int)seed, m.auc_pr, r.auc_pr);
        CHECK(e_roc <= 1e-6, "seed %d: ROC %.9f vs exact %.9f", (int)seed, m.roc_auc, r.roc_auc);
        CHECK(m.tied_pairs <= WC_METRICS_TIE_WARN / 10, "seed %d: %.3g of the pairs tied",
              (int)seed, m.tied_pairs);
        CHECK(e_f1 >= 0 && e_f1 <= 1e-4, "seed %d: F1 %.9f vs exact %.9f", (int)seed, m.best_f1,
              r.best_f1);
        CHECK(m.precision_at_half == r.precision_at_half && m.recall_at_half == r.recall_at_half,
              "seed %d: at 0.5 P %.17g R %.17g vs %.17g %.17g", (int)seed, m.precision_at_half,
              m.recall_at_half, r.precision_at_half, r.recall_at_half);
        double e_brier = rel_err(m.brier, r.brier, 0), e_loss = rel_err(m.loss, loss, 0);
        CHECK(e_brier <= 1e-6, "seed %d: Brier %.12g vs %.12g", (int)seed, m.brier, r.brier);
        CHECK(e_loss <= 1e-6, "seed %d: loss %.12g vs %.12g", (int)seed, m.loss, loss);
        NOTE("seed %d (%s, pw %g): |dAP| %.2e  |dROC| %.2e  dF1 %.2e  F1 t %.6f vs %.6f  "
             "rel dBrier %.1e  rel dloss %.1e",
             (int)seed, use_probs ? "probs" : "logits", pw, e_ap, e_roc, e_f1, m.best_f1_threshold,
             r.best_f1_threshold, e_brier, e_loss);
        worst_raw[0] = fmax(worst_raw[0], e_ap);
        worst_raw[1] = fmax(worst_raw[1], e_roc);
        worst_raw[2] = fmax(worst_raw[2], e_f1);
        worst_loss = fmax(worst_loss, e_loss);
        worst_brier = fmax(worst_brier, e_brier);
        worst_f1t = fmax(worst_f1t, fabs(m.best_f1_threshold - r.best_f1_threshold));

        /* Against the quantized probabilities: what the histogram promises, to rounding. */
        double eq = fmax(fmax(fabs(m.auc_pr - rq.auc_pr), fabs(m.roc_auc - rq.roc_auc)),
                         fabs(m.best_f1 - rq.best_f1));
        CHECK(eq <= 1e-12, "seed %d: quantized reference differs by %.3g", (int)seed, eq);
        CHECK(m.best_f1_threshold == rq.best_f1_threshold, "seed %d: threshold %.17g vs %.17g",
              (int)seed, m.best_f1_threshold, rq.best_f1_threshold);
        worst_q = fmax(worst_q, eq);

        free(acc);
        free(raw);
        free(q);
        free(probs);
        free_dataset(&d);
    }
    NOTE("worst over seeds: |dAP| %.2e |dROC| %.2e dF1 %.2e |dF1 threshold| %.2e rel dBrier %.1e "
         "rel dloss %.1e; vs quantized reference %.1e",
         worst_raw[0], worst_raw[1], worst_raw[2], worst_f1t, worst_brier, worst_loss, worst_q);
}

/* The edge of a bin at or above bin k that a float holds exactly (every edge below 1 - 2^-13
 * is one), as a float. */
static float float_edge(int k) {
    while ((double)(float)wc_metrics_bin_lower(k) != wc_metrics_bin_lower(k)) k++;
    return (float)wc_metrics_bin_lower(k);
}

/* Probabilities that are bin edges, with many exact ties: no two distinct values share a bin,
 * so the histogram is exact. The tied values reach every part of the bins, from 2^-53 (and 0)
 * to 1 - 2^-24. */
static void test_exact_multiples(void) {
    const size_t n = 50000;
    float *probs = WC_ALLOC(n * sizeof(float)), *labels = WC_ALLOC(n * sizeof(float));
    pair *v = WC_ALLOC(n * sizeof(pair));
    wc_rng r;
    wc_rng_seed(&r, 11, 1001, 0);
    for (size_t i = 0; i < n; i++) {
        int y = wc_rng_uniform(&r) < 0.05;
        float p;
        if (i % 2) /* only 256 distinct values: heavy ties */
            p = float_edge((int)wc_rng_below(&r, 256) * (BINS / 256));
        else
            p = float_edge(wc_metrics_bin_of_prob(
                fmin(0.999, fmax(0, 0.2 + 0.3 * y + 0.15 * wc_rng_normal(&r)))));
        probs[i] = p;
        labels[i] = (float)y;
        v[i] = (pair){p, y};
    }
    wc_metrics_acc *acc = new_acc();
    wc_metrics_add_probs(acc, probs, labels, NULL, n, 1.0f);
    wc_metrics m;
    wc_metrics_compute(&m, acc);
    ref_metrics ref = reference(v, n);
    double e = fmax(fmax(fabs(m.auc_pr - ref.auc_pr), fabs(m.roc_auc - ref.roc_auc)),
                    fabs(m.best_f1 - ref.best_f1));
    CHECK(e <= 1e-12, "exact multiples differ by %.3g (AP %.17g/%.17g ROC %.17g/%.17g)", e,
          m.auc_pr, ref.auc_pr, m.roc_auc, ref.roc_auc);
    CHECK(m.best_f1_threshold == ref.best_f1_threshold, "threshold %.17g vs %.17g",
          m.best_f1_threshold, ref.best_f1_threshold);
    CHECK(m.precision_at_half == ref.precision_at_half && m.recall_at_half == ref.recall_at_half,
          "at 0.5");
    NOTE("bin edges: max |difference| of AP, ROC-AUC, F1 = %.1e (AP %.6f, ROC "
         "%.6f, F1 %.6f at %.6f)",
         e, m.auc_pr, m.roc_auc, m.best_f1, m.best_f1_threshold);
    free(acc);
    free(v);
    free(probs);
    free(labels);
}

/* Gathers the pixels i with part_of[i] == part into a new dataset. */
static dataset gather(const dataset *d, const int *part_of, int part) {
    size_t m = 0;
    for (size_t i = 0; i < d->n; i++) m += part_of[i] == part;
    dataset s = {m, WC_ALLOC(m * sizeof(float) + 1), WC_ALLOC(m * sizeof(float) + 1),
                 WC_ALLOC(m + 1)};
    for (size_t i = 0, j = 0; i < d->n; i++) {
        if (part_of[i] != part) continue;
        s.logits[j] = d->logits[i];
        s.labels[j] = d->labels[i];
        s.valid[j] = d->valid[i];
        j++;
    }
    return s;
}

/* Any split into parts, any merge order, and the int64-array sum MPI_Allreduce will do: the same
 * bytes, so the same metrics bit for bit. */
static void test_order_independence(void) {
    const size_t n = 50001;
    const float pw = 7.0f;
    dataset d = make_dataset(5, n, 0.05, 0.1);
    wc_metrics_acc *base = new_acc(), *merged = new_acc();
    add_logits_chunked(base, &d, 0, n, pw);
    wc_metrics mb;
    wc_metrics_compute(&mb, base);
    char jb[2048], jm[2048];
    metrics_text(jb, sizeof jb, &mb, "val_");

    const int part_counts[] = {1, 2, 3, 4, 7};
    const char *split_names[] = {"contiguous", "strided", "random"};
    int *part_of = WC_ALLOC(n * sizeof(int));
    wc_rng r;
    wc_rng_seed(&r, 6, 1002, 0);
    int combos = 0, mismatches = 0;
    for (size_t pc = 0; pc < sizeof part_counts / sizeof part_counts[0]; pc++) {
        int k = part_counts[pc];
        for (int split = 0; split < 3; split++) {
            /* contiguous: uneven blocks at random cut points; strided: i % k; random: any. */
            size_t cuts[8];
            cuts[0] = 0, cuts[k] = n;
            for (int c = 1; c < k; c++)
                cuts[c] = cuts[c - 1] + wc_rng_below(&r, (n - cuts[c - 1]) / 2);
            for (size_t i = 0; i < n; i++) {
                if (split == 0) {
                    int c = 0;
                    while (i >= cuts[c + 1]) c++;
                    part_of[i] = c;
                } else if (split == 1) {
                    part_of[i] = (int)(i % (size_t)k);
                } else {
                    part_of[i] = (int)wc_rng_below(&r, (uint64_t)k);
                }
            }
            wc_metrics_acc *parts[7];
            for (int p = 0; p < k; p++) {
                parts[p] = new_acc();
                dataset s = gather(&d, part_of, p);
                add_logits_chunked(parts[p], &s, 0, s.n, pw);
                free_dataset(&s);
            }
            for (int order = 0; order < 4; order++) {
                wc_metrics_reset(merged);
                if (order == 0) { /* first to last */
                    for (int p = 0; p < k; p++) wc_metrics_merge(merged, parts[p]);
                } else if (order == 1) { /* last to first */
                    for (int p = k - 1; p >= 0; p--) wc_metrics_merge(merged, parts[p]);
                } else if (order == 2) { /* a reduction tree, as MPI may use */
                    wc_metrics_acc *t[7] = {NULL};
                    for (int p = 0; p < k; p++) {
                        t[p] = new_acc();
                        memcpy(t[p], parts[p], sizeof *t[p]);
                    }
                    for (int step = 1; step < k; step *= 2)
                        for (int p = 0; p + step < k; p += 2 * step)
                            wc_metrics_merge(t[p], t[p + step]);
                    memcpy(merged, t[0], sizeof *merged);
                    for (int p = 0; p < k; p++) free(t[p]);
                } else { /* MPI_SUM over the struct viewed as wc_metrics_acc_words() int64s */
                    int64_t *w = (int64_t *)merged;
                    for (int p = k - 1; p >= 0; p--) {
                        const int64_t *src = (const int64_t *)parts[p];
                        for (size_t i = 0; i < wc_metrics_acc_words(); i++) w[i] += src[i];
                    }
                }
                wc_metrics mm;
                wc_metrics_compute(&mm, merged);
                metrics_text(jm, sizeof jm, &mm, "val_");
                /* the word sums leave the low words uncarried (the metrics above are computed
                 * from them as they are); merged into an empty accumulator, they carry */
                if (order == 3) {
                    wc_metrics_acc *carried = new_acc();
                    wc_metrics_merge(carried, merged);
                    memcpy(merged, carried, sizeof *merged);
                    free(carried);
                }
                int same = memcmp(merged, base, sizeof *base) == 0 &&
                           memcmp(&mm, &mb, sizeof mm) == 0 && strcmp(jm, jb) == 0;
                CHECK(same, "%d parts, %s split, merge order %d: result differs", k,
                      split_names[split], order);
                mismatches += !same;
                combos++;
            }
            for (int p = 0; p < k; p++) free(parts[p]);
        }
    }
    NOTE("%d split/merge combinations, %d differ from the single accumulator; %s", combos,
         mismatches, jb);
    free(part_of);
    free(base);
    free(merged);
    free_dataset(&d);
}

/* Invalid pixels (with NaN logits and label 0.5 in them) change nothing. */
static void test_nodata_ignored(void) {
    const size_t n = 20000;
    dataset d = make_dataset(8, n, 0.05, 0.3);
    dataset c = {0, WC_ALLOC(n * sizeof(float)), WC_ALLOC(n * sizeof(float)), NULL};
    size_t invalid = 0;
    for (size_t i = 0; i < n; i++) {
        if (!d.valid[i]) {
            invalid++;
            continue;
        }
        c.logits[c.n] = d.logits[i];
        c.labels[c.n] = d.labels[i];
        c.n++;
    }
    wc_metrics_acc *a = new_acc(), *b = new_acc(), *all = new_acc();
    wc_metrics_add_logits(a, d.logits, d.labels, d.valid, n, 2.0f);
    wc_metrics_add_logits(b, c.logits, c.labels, NULL, c.n, 2.0f);
    CHECK(memcmp(a, b, sizeof *a) == 0, "masked and compacted accumulators differ");
    CHECK(a->bad_outputs == 0, "NaN logits at nodata pixels were read (%lld bad)",
          (long long)a->bad_outputs);
    wc_metrics m;
    wc_metrics_compute(&m, a);
    CHECK(m.pixels == (int64_t)c.n, "pixels %lld, want %zu", (long long)m.pixels, c.n);
    uint8_t *ones = WC_ALLOC(c.n + 1);
    memset(ones, 1, c.n + 1);
    wc_metrics_add_logits(all, c.logits, c.labels, ones, c.n, 2.0f);
    CHECK(memcmp(all, b, sizeof *all) == 0, "valid = all ones differs from valid = NULL");
    NOTE("%zu of %zu pixels nodata; accumulators identical to the compacted data", invalid, n);
    free(ones);
    free(a);
    free(b);
    free(all);
    free(c.logits);
    free(c.labels);
    free_dataset(&d);
}

static int64_t bin_count(const wc_metrics_acc *acc, int bin) {
    return acc->pos[bin] + acc->neg[bin];
}

static void test_edge_cases(void) {
    wc_metrics_acc *acc = new_acc();
    wc_metrics m;
    char buf[1024];

    /* empty */
    wc_metrics_compute(&m, acc);
    CHECK(m.pixels == 0 && m.positives == 0, "empty counts");
    CHECK(isnan(m.loss) && isnan(m.auc_pr) && isnan(m.roc_auc) && isnan(m.best_f1) &&
              isnan(m.best_f1_threshold) && isnan(m.precision_at_half) && isnan(m.recall_at_half) &&
              isnan(m.brier) && isnan(m.positive_rate),
          "empty: every metric should be NaN");
    metrics_text(buf, sizeof buf, &m, "");
    CHECK(strstr(buf, "\"loss\":null") && strstr(buf, "\"pixels\":0"), "empty JSON: %s", buf);

    /* no positives: precision at 0.5 is defined (0) when something is predicted positive */
    const float lz[3] = {-1.0f, 0.5f, 3.0f}, l0[3] = {0, 0, 0}, l1[3] = {1, 1, 1};
    wc_metrics_add_logits(acc, lz, l0, NULL, 3, 1.0f);
    wc_metrics_compute(&m, acc);
    CHECK(isnan(m.auc_pr) && isnan(m.roc_auc) && isnan(m.best_f1) && isnan(m.best_f1_threshold) &&
              isnan(m.recall_at_half),
          "no positives: AP %g ROC %g F1 %g recall %g", m.auc_pr, m.roc_auc, m.best_f1,
          m.recall_at_half);
    CHECK(m.precision_at_half == 0 && isfinite(m.loss) && isfinite(m.brier) && m.positive_rate == 0,
          "no positives: precision %g loss %g brier %g", m.precision_at_half, m.loss, m.brier);

    /* all positives: no negatives for ROC; AP, F1 = 1 */
    wc_metrics_reset(acc);
    wc_metrics_add_logits(acc, lz, l1, NULL, 3, 1.0f);
    wc_metrics_compute(&m, acc);
    CHECK(isnan(m.roc_auc), "all positives: ROC %g", m.roc_auc);
    CHECK(m.auc_pr == 1 && m.best_f1 == 1 && m.precision_at_half == 1 &&
              m.recall_at_half == 2.0 / 3.0 && m.positive_rate == 1,
          "all positives: AP %g F1 %g P %g R %g", m.auc_pr, m.best_f1, m.precision_at_half,
          m.recall_at_half);

    /* a perfect ranking scores AP 1 exactly, whatever the number of thresholds (adding 1/n
     * n times gives 0.9999999999999999 for n = 10, and more than 1 for others) */
    for (int n = 1; n <= 64; n++) {
        float p[64], y[64];
        for (int i = 0; i < n; i++) p[i] = (float)(i + 1) / 128.0f, y[i] = 1;
        wc_metrics_reset(acc);
        wc_metrics_add_probs(acc, p, y, NULL, (size_t)n, 1.0f);
        for (int i = 0; i < n; i++) p[i] = (float)i / 16384.0f, y[i] = 0; /* negatives below */
        wc_metrics_add_probs(acc, p, y, NULL, (size_t)n, 1.0f);
        wc_metrics_compute(&m, acc);
        CHECK(m.auc_pr == 1.0, "%d positives in %d bins above every negative: AP %.17g, not 1", n,
              n, m.auc_pr);
    }

    /* nothing predicted >= 0.5: precision undefined, recall 0 */
    wc_metrics_reset(acc);
    const float lowp[2] = {-5.0f, -6.0f}, l10[2] = {1, 0};
    wc_metrics_add_logits(acc, lowp, l10, NULL, 2, 1.0f);
    wc_metrics_compute(&m, acc);
    CHECK(isnan(m.precision_at_half) && m.recall_at_half == 0, "none >= 0.5: P %g R %g",
          m.precision_at_half, m.recall_at_half);

    /* the right bins for exact probabilities: the ends, 0.5 and the float below it, the end of
     * the bottom bin (2^-53) and the float below it, subnormals, the float below 1 */
    const float bp[9] = {0.0f,     1.0f,
                         0.5f,     nextafterf(0.5f, 0.0f),
                         0x1p-53f, nextafterf(0x1p-53f, 0.0f),
                         1e-45f,   nextafterf(1.0f, 0.0f),
                         0x1p-5f};
    const int want_bin[9] = {0, BINS - 1, BINS / 2, BINS / 2 - 1, 1, 0, 0, -1, 1 + 48 * 2048};
    const float bl[1] = {0};
    for (int i = 0; i < 9; i++) {
        int want = want_bin[i] >= 0 ? want_bin[i] : wc_metrics_bin_of_prob(bp[i]);
        wc_metrics_reset(acc);
        wc_metrics_add_probs(acc, &bp[i], bl, NULL, 1, 1.0f);
        CHECK(bin_count(acc, want) == 1, "p = %.9g should be in bin %d", bp[i], want);
        CHECK(wc_metrics_bin_lower(want) <= bp[i] &&
                  bp[i] < wc_metrics_bin_lower(want + 1) + (want == BINS - 1),
              "p = %.9g outside its bin %d's edges", bp[i], want);
    }
    CHECK(wc_metrics_bin_lower(BINS / 2) == 0.5 && wc_metrics_bin_lower(BINS) == 1.0 &&
              wc_metrics_bin_lower(0) == 0.0,
          "edges: 0.5 at %.17g, 1 at %.17g", wc_metrics_bin_lower(BINS / 2),
          wc_metrics_bin_lower(BINS));
    /* The float below 1 is resolved: its bin is not the top one (1 - 2^-24 and 1 - 2^-23 too). */
    CHECK(wc_metrics_bin_of_prob(nextafterf(1.0f, 0.0f)) < BINS - 1 &&
              wc_metrics_bin_of_prob(1.0 - 0x1p-23) < wc_metrics_bin_of_prob(1.0 - 0x1p-24),
          "1 - 2^-24 in bin %d of %d", wc_metrics_bin_of_prob(nextafterf(1.0f, 0.0f)), BINS);
    /* logit 0 is p = 0.5: predicted positive at 0.5; +-80 saturate to the end bins */
    const float lg[3] = {0.0f, 80.0f, -80.0f};
    const int lg_bin[3] = {BINS / 2, BINS - 1, 0};
    for (int i = 0; i < 3; i++) {
        wc_metrics_reset(acc);
        wc_metrics_add_logits(acc, &lg[i], bl, NULL, 1, 1.0f);
        CHECK(bin_count(acc, lg_bin[i]) == 1, "logit %g should be in bin %d", lg[i], lg_bin[i]);
    }

    /* huge logits, wrong: loss is 80 * pw, finite; infinite: clamped to the maximum; right and
     * infinite: loss 0, not 0 * inf = NaN */
    const float big[2] = {-80.0f, 80.0f}, by[2] = {1, 0};
    wc_metrics_reset(acc);
    wc_metrics_add_logits(acc, big, by, NULL, 2, 2.0f);
    wc_metrics_compute(&m, acc);
    check_close("loss at logits -+80, wrong, pw 2", m.loss, (80.0 * 2 + 80.0) / 2, 1e-6);
    CHECK(m.brier == 1, "brier %g", m.brier);
    const float inf[4] = {-INFINITY, INFINITY, INFINITY, -INFINITY}, iy[4] = {1, 0, 1, 0};
    wc_metrics_reset(acc);
    wc_metrics_add_logits(acc, inf, iy, NULL, 4, 1.0f);
    wc_metrics_compute(&m, acc);
    CHECK(m.bad_outputs == 0 && m.loss == WC_METRICS_LOSS_MAX / 2.0,
          "+-inf logits: loss %g (want %g)", m.loss, WC_METRICS_LOSS_MAX / 2.0);
    CHECK(m.auc_pr == 0.5 && m.roc_auc == 0.5, "+-inf logits: AP %g ROC %g", m.auc_pr, m.roc_auc);

    /* probabilities 0 and 1: the loss clamps p to [1e-7, 1 - 1e-7] */
    const float p01[2] = {0.0f, 1.0f}, y10[2] = {1, 0};
    wc_metrics_reset(acc);
    wc_metrics_add_probs(acc, p01, y10, NULL, 2, 1.0f);
    wc_metrics_compute(&m, acc);
    check_close("loss at p = 0, 1, wrong", m.loss, -log(1e-7), 1e-6);

    /* broken outputs: counted, and they make every metric NaN */
    const float nanl[2] = {NAN, 1.0f}, badp[3] = {NAN, 1.5f, -0.25f};
    wc_metrics_reset(acc);
    wc_metrics_add_logits(acc, nanl, y10, NULL, 2, 1.0f);
    wc_metrics_add_probs(acc, badp, l1, NULL, 3, 1.0f);
    wc_metrics_compute(&m, acc);
    CHECK(m.bad_outputs == 4 && m.pixels == 1, "bad outputs %lld pixels %lld",
          (long long)m.bad_outputs, (long long)m.pixels);
    CHECK(isnan(m.loss) && isnan(m.brier) && isnan(m.precision_at_half) && isnan(m.positive_rate),
          "bad outputs should make the metrics NaN (loss %g)", m.loss);
    free(acc);
}

/* The values at the ends of [0, 1] land in the end bins (the bin index is computed only from a
 * checked value, never from -0's bits): -0 and the smallest subnormal in bin 0, 1 in the last;
 * logits of +-FLT_MAX and +-inf likewise; none is a bad output. */
static void test_end_bins(void) {
    wc_metrics_acc *acc = new_acc();
    const float p[4] = {-0.0f, 1e-45f, 1.0f, 1.0f}, y[4] = {0, 0, 0, 0};
    wc_metrics_add_probs(acc, p, y, NULL, 4, 1.0f);
    CHECK(acc->bad_outputs == 0 && acc->neg[0] == 2 && acc->neg[WC_METRICS_BINS - 1] == 2,
          "probs: bad %lld, bin 0 %lld, last %lld", (long long)acc->bad_outputs,
          (long long)acc->neg[0], (long long)acc->neg[WC_METRICS_BINS - 1]);
    wc_metrics_reset(acc);
    const float z[4] = {-FLT_MAX, -INFINITY, FLT_MAX, INFINITY}, l[4] = {1, 1, 1, 1};
    wc_metrics_add_logits(acc, z, l, NULL, 4, 1.0f);
    CHECK(acc->bad_outputs == 0 && acc->pos[0] == 2 && acc->pos[WC_METRICS_BINS - 1] == 2,
          "logits: bad %lld, bin 0 %lld, last %lld", (long long)acc->bad_outputs,
          (long long)acc->pos[0], (long long)acc->pos[WC_METRICS_BINS - 1]);
    free(acc);
}

/* Every edge is where the bins say: a probability at bin i's lower edge is in bin i and the
 * double just below it in bin i - 1, the edges rising (strictly but above 1 - 2^-42, where they
 * are rounded to double); a logit's bin rises with it and is its probability's. */
static void test_bin_edges(void) {
    int wrong = 0, first = -1;
    for (int i = 1; i < BINS; i++) {
        const double lo = wc_metrics_bin_lower(i), below = wc_metrics_bin_lower(i - 1);
        const int exact = i < WC_METRICS_HALF_BINS || 1.0 - lo > 0x1p-42;
        const int ok = exact ? lo > below && wc_metrics_bin_of_prob(lo) == i &&
                                   wc_metrics_bin_of_prob(nextafter(lo, 0.0)) == i - 1
                             : lo >= below;
        if (!ok && first < 0) first = i;
        wrong += !ok;
    }
    CHECK(wrong == 0, "%d of %d edges wrong, first of bin %d at %.17g", wrong, BINS - 1, first,
          first >= 0 ? wc_metrics_bin_lower(first) : 0);
    int prev = 0, falls = 0, differ = 0;
    for (double z = -45; z <= 45; z += 1.0 / 1024) {
        const int b = wc_metrics_bin_of_logit(z);
        falls += b < prev;
        prev = b;
        /* above 15, 1 - sigmoid(z) in double has lost more than a bin's width */
        differ += fabs(z) <= 15 && abs(b - wc_metrics_bin_of_prob(wc_sigmoid(z))) > (z > 0);
    }
    CHECK(falls == 0 && differ == 0, "logit bins: %d falls, %d unlike their probability's", falls,
          differ);
    CHECK(wc_metrics_bin_of_logit(0) == BINS / 2 && wc_metrics_bin_of_logit(-40) == 0 &&
              wc_metrics_bin_of_logit(40) == BINS - 1 && wc_metrics_bin_of_logit(36) < BINS - 1,
          "logit bins at 0, -40, 40, 36");
}

/* The histogram's AP, ROC-AUC and best F1 of v (n pixels, in acc) against the exact sorted
 * reference; v's p need only order the pixels as their probabilities do (a logit will do). */
static wc_metrics check_exact(const char *what, const wc_metrics_acc *acc, pair *v, size_t n,
                              double tol_ap, double tol_roc) {
    wc_metrics m;
    wc_metrics_compute(&m, acc);
    ref_metrics r = reference(v, n);
    const double e_ap = fabs(m.auc_pr - r.auc_pr), e_roc = fabs(m.roc_auc - r.roc_auc);
    const double e_f1 = r.best_f1 - m.best_f1;
    CHECK(e_ap <= tol_ap, "%s: AP %.9f vs exact %.9f", what, m.auc_pr, r.auc_pr);
    CHECK(e_roc <= tol_roc, "%s: ROC %.9f vs exact %.9f", what, m.roc_auc, r.roc_auc);
    CHECK(e_roc <= m.tied_pairs / 2 + 1e-15,
          "%s: ROC %.9f is %.3g from exact, beyond half the "
          "tied pairs' share %.3g",
          what, m.roc_auc, e_roc, m.tied_pairs);
    CHECK(e_f1 >= 0 && e_f1 <= tol_ap, "%s: F1 %.9f vs exact %.9f", what, m.best_f1, r.best_f1);
    CHECK(m.tied_pairs <= WC_METRICS_TIE_WARN / 10, "%s: %.3g of the pairs tied", what,
          m.tied_pairs);
    NOTE("%s: AP %.6f |dAP| %.2e  ROC %.6f |dROC| %.2e  dF1 %.2e @ %.4g; %.2g of the pairs tied "
         "in %lld bins",
         what, m.auc_pr, e_ap, m.roc_auc, e_roc, e_f1, m.best_f1_threshold, m.tied_pairs,
         (long long)m.bins_used);
    return m;
}

/* n pixels given as float probabilities: their labels, the reference's pairs, an accumulator. */
typedef struct scored {
    float *probs, *labels; /* (n) */
    pair *v;               /* (n) */
    wc_metrics_acc *acc;
} scored;

static scored scored_new(size_t n) {
    return (scored){WC_ALLOC(n * sizeof(float)), WC_ALLOC(n * sizeof(float)),
                    WC_ALLOC(n * sizeof(pair)), new_acc()};
}

static void scored_free(scored *s) {
    free(s->probs), free(s->labels), free(s->v), free(s->acc);
}

/* s's n pixels into its emptied accumulator, then check_exact. */
static wc_metrics check_scored(const char *what, scored *s, size_t n, double tol_ap,
                               double tol_roc) {
    wc_metrics_reset(s->acc);
    wc_metrics_add_probs(s->acc, s->probs, s->labels, NULL, n, 1.0f);
    return check_exact(what, s->acc, s->v, n, tol_ap, tol_roc);
}

/* The probe's maps: a logistic model of elevation alone (elevations of 2200 to 2300 m, or 2800,
 * normalized as its checkpoint did, bias -9.2: p near 1e-4), burned where the elevation is
 * highest, a perfect ranking. 65536 equal bins put the 101 values in 2 bins (AP 0.23, ROC-AUC
 * 0.80) and the 601 in 13 (AP 0.973); every value has its own bin now, so every metric is 1
 * and the threshold lies between the classes. */
static void test_small_probabilities(void) {
    const size_t n = 262144;
    scored s = scored_new(n);
    wc_rng r;
    wc_rng_seed(&r, 13, 1005, 0);
    for (int top = 2300; top <= 2800; top += 500) {
        const int cut = top == 2300 ? 2290 : 2740;
        double min_pos = 1, max_neg = 0;
        for (size_t i = 0; i < n; i++) {
            const int e = 2200 + (int)wc_rng_below(&r, (uint64_t)(top - 2200 + 1));
            const float z = (float)((e - 2223.1100216078216) / 552.8036811888439) - 9.2f;
            s.probs[i] = (float)wc_sigmoid(z);
            s.labels[i] = e >= cut;
            s.v[i] = (pair){s.probs[i], e >= cut};
            if (e >= cut)
                min_pos = fmin(min_pos, s.probs[i]);
            else
                max_neg = fmax(max_neg, s.probs[i]);
        }
        char what[64];
        snprintf(what, sizeof what, "p ~ 1e-4, elevations to %d", top);
        wc_metrics m = check_scored(what, &s, n, 0, 0);
        CHECK(m.auc_pr == 1 && m.roc_auc == 1 && m.best_f1 == 1 && m.tied_pairs == 0,
              "%s: AP %.17g ROC %.17g F1 %.17g", what, m.auc_pr, m.roc_auc, m.best_f1);
        CHECK(m.best_f1_threshold > max_neg && m.best_f1_threshold <= min_pos,
              "%s: threshold %.9g not in (%.9g, %.9g]", what, m.best_f1_threshold, max_neg,
              min_pos);
    }
    scored_free(&s);
}

/* Realistic burn probabilities, log-uniform in [1e-5, 0.1]: burned with probability p (a
 * calibrated map), and burned exactly where p is above the bin edge nearest 0.01 (a perfect
 * ranking: a cut inside a bin would make its two classes ties). Six seeds: the first alone gave
 * AP within 7e-6 and F1 exact, which metrics.h stated as the rule until 2026-12-06; the others
 * reach 7.6e-5 in AP and 3.3e-5 in F1 (a tolerance of 2e-5 failed 3 of them). */
static void test_realistic_maps(void) {
    const size_t n = 300000;
    scored s = scored_new(n);
    wc_rng r;
    const double cut = wc_metrics_bin_lower(wc_metrics_bin_of_prob(0.01));
    for (int seed = 0; seed < 6; seed++)
        for (int perfect = 0; perfect <= 1; perfect++) {
            wc_rng_seed(&r, 14 + (uint64_t)seed, 1006, (uint64_t)perfect);
            for (size_t i = 0; i < n; i++) {
                s.probs[i] = (float)pow(10, -5 + 4 * wc_rng_uniform(&r));
                const int y = perfect ? s.probs[i] >= cut : wc_rng_uniform(&r) < s.probs[i];
                s.labels[i] = (float)y;
                s.v[i] = (pair){s.probs[i], y};
            }
            wc_metrics m = check_scored(perfect ? "log-uniform p, burned where p >= 0.01"
                                                : "log-uniform p in [1e-5, 0.1], burned with p",
                                        &s, n, 1e-4, 1e-6);
            if (perfect)
                CHECK(m.auc_pr == 1 && m.roc_auc == 1, "perfect ranking: AP %.17g ROC %.17g",
                      m.auc_pr, m.roc_auc);
        }
    scored_free(&s);
}

/* The extremes: logits of 16 to 36 in magnitude (p below 1e-7 or above 1 - 1e-7, where 1 - p
 * in double keeps 1 to 10 bits), burned more often the higher the logit, against the exact
 * ranking of the logits themselves; and float probabilities log-uniform in [1e-15, 1e-7]. */
static void test_extremes(void) {
    const size_t n = 200000;
    dataset d = make_dataset(15, n, 0.5, 0.0);
    float *probs = WC_ALLOC(n * sizeof(float));
    pair *v = WC_ALLOC(n * sizeof(pair));
    wc_metrics_acc *acc = new_acc();
    wc_rng r;
    wc_rng_seed(&r, 15, 1007, 0);
    for (size_t i = 0; i < n; i++) {
        const double u = wc_rng_uniform(&r), side = i % 2 ? 1 : -1;
        d.logits[i] = (float)(side * (16 + 20 * u));
        const int y = wc_rng_uniform(&r) < (side > 0 ? 0.5 + 0.5 * u : 0.5 - 0.5 * u);
        d.labels[i] = (float)y;
        v[i] = (pair){d.logits[i], y};
    }
    add_logits_chunked(acc, &d, 0, n, 1.0f);
    check_exact("logits of 16 to 36 in magnitude", acc, v, n, 2e-5, 1e-6);
    for (size_t i = 0; i < n; i++) {
        const double u = wc_rng_uniform(&r);
        probs[i] = (float)pow(10, -15 + 8 * u);
        v[i].y = wc_rng_uniform(&r) < u;
        d.labels[i] = (float)v[i].y;
        v[i].p = probs[i];
    }
    wc_metrics_reset(acc);
    wc_metrics_add_probs(acc, probs, d.labels, NULL, n, 1.0f);
    check_exact("float p in [1e-15, 1e-7]", acc, v, n, 2e-5, 1e-6);
    free(acc);
    free(v);
    free(probs);
    free_dataset(&d);
}

/* A map whose labelled pixels share few bins: a constant one, and one beyond 1e-16 of 0, where
 * every pixel is in bin 0; the note names the pixels; an informative map has none. */
static void test_ties_note(void) {
    wc_metrics_acc *acc = new_acc();
    wc_metrics m;
    char note[512] = "";
    const float flat[4] = {0.3f, 0.3f, 0.3f, 0.7f}, tiny[4] = {1e-20f, 1e-25f, 1e-30f, 0.5f};
    const float y[4] = {1, 0, 0, 1};
    wc_metrics_add_probs(acc, flat, y, NULL, 4, 1.0f);
    wc_metrics_compute(&m, acc);
    CHECK(m.tied_pairs == 0.5 && m.tied_pixels == 3 && m.bins_used == 2 && m.tied_bins == 1 &&
              wc_metrics_ties_note(&m, note, sizeof note) && strstr(note, "3 of the 4 labelled") &&
              strstr(note, "(1 bin holds them all)"),
          "constant map: tied %g, %lld pixels, %lld bins: %s", m.tied_pairs,
          (long long)m.tied_pixels, (long long)m.bins_used, note);
    NOTE("%s", note);
    wc_metrics_reset(acc);
    wc_metrics_add_probs(acc, tiny, y, NULL, 4, 1.0f);
    wc_metrics_compute(&m, acc);
    CHECK(m.tied_pairs == 0.5 && wc_metrics_ties_note(&m, note, sizeof note),
          "p below 2^-53: tied %g", m.tied_pairs);
    const float sep[4] = {0.3f, 0.2f, 0.1f, 0.7f};
    wc_metrics_reset(acc);
    wc_metrics_add_probs(acc, sep, y, NULL, 4, 1.0f);
    wc_metrics_compute(&m, acc);
    CHECK(m.tied_pairs == 0 && m.tied_pixels == 0 && !wc_metrics_ties_note(&m, note, 1),
          "distinct bins: tied %g", m.tied_pairs);
    free(acc);
}

/* AP's other difference from the raw values (metrics.h): two positives in one bin under a
 * negative are one threshold, as equal raw values would be, with no tied pair to warn of. */
static void test_ap_positives_sharing_a_bin(void) {
    wc_metrics_acc *acc = new_acc();
    wc_metrics m;
    const float p[3] = {0.9f, 0.300001f, 0.3f}, y[3] = {0, 1, 1};
    wc_metrics_add_probs(acc, p, y, NULL, 3, 1.0f);
    wc_metrics_compute(&m, acc);
    CHECK(wc_metrics_bin_of_prob(p[1]) == wc_metrics_bin_of_prob(p[2]) &&
              fabs(m.auc_pr - 2.0 / 3) < 1e-15 && m.tied_pairs == 0 && m.roc_auc == 0 &&
              m.best_f1 == 0.8,
          "AP %.17g (2/3 wanted; the raw values' 0.583), tied pairs %g", m.auc_pr, m.tied_pairs);
    free(acc);
}

/* The figures as the log and evaluate print them: an AP of a rare class (one burned pixel of
 * 20000, ranked last: AP 5e-5) keeps its digits instead of reading "AUC-PR 0.0000", as if the
 * map had found no fire at all; an exact 0 stays 0.0000. */
static void test_small_figures_text(void) {
    enum { N = 20000 };
    wc_metrics_acc *acc = new_acc();
    float *p = WC_CALLOC(N, sizeof(float)), *y = WC_CALLOC(N, sizeof(float));
    for (int i = 0; i < N; i++) p[i] = 0.9f;
    p[0] = 0.01f, y[0] = 1;
    wc_metrics_add_probs(acc, p, y, NULL, N, 1.0f);
    wc_metrics m;
    wc_metrics_compute(&m, acc);
    char text[256];
    wc_metrics_ranking_text(&m, 1, text, sizeof text);
    const char *ap = strstr(text, "AUC-PR ");
    const double printed = ap ? strtod(ap + 7, NULL) : NAN;
    CHECK(m.auc_pr > 0 && m.auc_pr < 1e-3 && fabs(printed - m.auc_pr) <= 5e-3 * m.auc_pr &&
              strstr(text, "recall 0.0000"),
          "AP %.6g printed \"%s\"", m.auc_pr, text);
    NOTE("%s", text);
    free(p), free(y), free(acc);
}

/* The threshold of best F1 as the log and report.md print it is a rule a user applies to the map
 * ("p >= t"): read back, it must select the same float probabilities as the threshold itself,
 * compared in double or in float (numpy and gdal_calc.py round the number to the map's Float32:
 * "0.04066467" became the float below the edge 0.0406646728515625). A constant map of 0.0406675
 * has its threshold at 0.0406647 (the bin's lower edge); "%.3g" printed "@ 0.0407", above every
 * pixel (F1 0 there, not the 0.109 printed beside it). */
static void test_threshold_text(void) {
    wc_metrics_acc *acc = new_acc();
    wc_metrics m;
    const float flat[4] = {0.0406675f, 0.0406675f, 0.0406675f, 0.0406675f}, y[4] = {1, 0, 0, 0};
    wc_metrics_add_probs(acc, flat, y, NULL, 4, 1.0f);
    wc_metrics_compute(&m, acc);
    char text[256];
    wc_metrics_ranking_text(&m, 0, text, sizeof text);
    const char *at = strstr(text, " @ ");
    const double t = at ? strtod(at + 3, NULL) : NAN;
    CHECK((double)flat[0] >= t && m.best_f1 > 0.39 && m.best_f1 < 0.41,
          "constant map of %.9g: \"%s\" (threshold %.17g) selects no pixel", flat[0], text,
          m.best_f1_threshold);
    NOTE("%s", text);
    /* every kind of bin edge: floats just below, at and above the edge compare with the printed
     * threshold as with the edge itself */
    wc_rng r;
    wc_rng_seed(&r, 21, 1010, 0);
    int wrong = 0, longest = 0;
    for (int k = 0; k < 200000; k++) {
        const int i = (int)wc_rng_below(&r, WC_METRICS_BINS);
        m.best_f1 = 0.5, m.best_f1_threshold = wc_metrics_bin_lower(i);
        wc_metrics_ranking_text(&m, 0, text, sizeof text);
        at = strstr(text, " @ ");
        const double printed = at ? strtod(at + 3, NULL) : NAN;
        if (at) longest = WC_MAX(longest, (int)strlen(at + 3));
        float f = (float)m.best_f1_threshold;
        const float probe[5] = {nextafterf(nextafterf(f, 0), 0), nextafterf(f, 0), f,
                                nextafterf(f, 2), nextafterf(nextafterf(f, 2), 2)};
        /* compared in double (C, GDAL's raster calculator) and in float, as numpy and
         * gdal_calc.py compare a Float32 map with a number: the number rounded to a float */
        const float printed_f = (float)printed;
        for (int j = 0; j < 5; j++) {
            if (!(probe[j] >= 0 && probe[j] <= 1)) continue;
            const int want = (double)probe[j] >= m.best_f1_threshold;
            if (((double)probe[j] >= printed) != want || (probe[j] >= printed_f) != want) {
                if (wrong++ < 3)
                    NOTE("bin %d: edge %.17g printed \"%s\": float %.9g compares otherwise (in "
                         "double or in float)",
                         i, m.best_f1_threshold, at ? at + 3 : "", probe[j]);
            }
        }
    }
    CHECK(wrong == 0, "%d floats compare otherwise with the printed threshold than with the edge",
          wrong);
    NOTE("printed thresholds at most %d characters", longest);
    free(acc);
}

/* The largest contribution of one pixel is 2^31 units in each sum, so 2^31 pixels stay within
 * 2^62; and one pixel's value is within half a unit. */
static void test_fixed_point_bounds(void) {
    wc_metrics_acc *acc = new_acc();
    const float z[1] = {-1e30f}, y[1] = {1};
    wc_metrics_add_logits(acc, z, y, NULL, 1, 1000.0f);
    CHECK(acc->loss_fx == INT64_C(1) << 31, "max loss is %lld units", (long long)acc->loss_fx);
    CHECK(acc->brier_fx == INT64_C(1) << 31, "max Brier is %lld units", (long long)acc->brier_fx);
    double worst = 0;
    wc_rng r;
    wc_rng_seed(&r, 9, 1003, 0);
    for (int i = 0; i < 1000; i++) {
        float zi = (float)(8 * wc_rng_normal(&r)), yi = (float)(i % 2);
        wc_metrics_reset(acc);
        wc_metrics_add_logits(acc, &zi, &yi, NULL, 1, 3.0f);
        double exact = wc_bce_pixel(zi, yi, 3.0);
        worst = fmax(worst, fabs((double)acc->loss_fx / (1 << WC_METRICS_LOSS_FX_BITS) - exact));
    }
    CHECK(worst <= 0.5 / (1 << WC_METRICS_LOSS_FX_BITS), "one pixel's loss off by %g", worst);
    CHECK(wc_metrics_acc_words() * sizeof(int64_t) == sizeof(wc_metrics_acc), "words %zu",
          wc_metrics_acc_words());
    NOTE("one pixel's loss within %.2e nats (bound %.2e); per-pixel maxima 2^31 units", worst,
         0.5 / (1 << WC_METRICS_LOSS_FX_BITS));
    free(acc);
}

/* Merging adds every word, so no counter (bad_outputs, the sums) can be left out of it. */
static void test_merge_is_word_sum(void) {
    wc_metrics_acc *a = new_acc(), *b = new_acc(), *want = new_acc();
    int64_t *wa = (int64_t *)a, *wb = (int64_t *)b, *ww = (int64_t *)want;
    wc_rng r;
    wc_rng_seed(&r, 12, 1004, 0);
    for (size_t i = 0; i < wc_metrics_acc_words(); i++) {
        wa[i] = (int64_t)wc_rng_below(&r, 1u << 20);
        wb[i] = (int64_t)wc_rng_below(&r, 1u << 20) + 1;
        ww[i] = wa[i] + wb[i];
    }
    wc_metrics_merge(a, b);
    size_t differ = 0;
    for (size_t i = 0; i < wc_metrics_acc_words(); i++) differ += wa[i] != ww[i];
    CHECK(differ == 0, "%zu of %zu words not summed by wc_metrics_merge", differ,
          wc_metrics_acc_words());
    free(a);
    free(b);
    free(want);
}

/* Sums past one int64 word: 2^34 pixels of the largest contribution (2^31 units each, 2^65 in
 * all) give the exact means. One word wrapped: the Brier sum passes 2^63 once the sum of
 * (p - y)^2 passes 2^32, an evaluate of 8.6e9 pixels at a mean Brier of 0.5. Built by merging an
 * accumulator into a copy of itself 34 times, as a reduction over ranks sums them. */
static void test_sums_beyond_one_word(void) {
    wc_metrics_acc *acc = new_acc(), *copy = new_acc();
    const float z[1] = {-1e30f}, y[1] = {1}; /* p = 0 for a burned pixel: Brier 1, loss clamped */
    wc_metrics_add_logits(acc, z, y, NULL, 1, 1000.0f);
    for (int k = 0; k < 34; k++) {
        memcpy(copy, acc, sizeof *acc);
        wc_metrics_merge(acc, copy);
    }
    wc_metrics m;
    wc_metrics_compute(&m, acc);
    CHECK(m.brier == 1.0, "Brier over 2^34 pixels of 1: %.17g", m.brier);
    CHECK(m.loss == (double)WC_METRICS_LOSS_MAX, "loss over 2^34 pixels of %d: %.17g",
          WC_METRICS_LOSS_MAX, m.loss);
    CHECK(m.positive_rate == 1.0, "positive rate %.17g", m.positive_rate);
    free(acc);
    free(copy);
}

/* The members, their order and values: NaN as null, every double to the bits, read back with
 * the strict reader. */
static void test_json(void) {
    wc_metrics m = {.pixels = 123,
                    .positives = 7,
                    .bad_outputs = 0,
                    .loss = 0.125,
                    .auc_pr = NAN,
                    .roc_auc = 0.75,
                    .best_f1 = 0.5,
                    .best_f1_threshold = 0.25,
                    .precision_at_half = NAN,
                    .recall_at_half = 0,
                    .brier = 1.0 / 3.0,
                    .positive_rate = 7.0 / 123.0};
    char buf[2048];
    metrics_text(buf, sizeof buf, &m, "val_");
    static const char *keys[] = {"val_pixels",
                                 "val_positives",
                                 "val_bad_outputs",
                                 "val_loss",
                                 "val_auc_pr",
                                 "val_roc_auc",
                                 "val_best_f1",
                                 "val_best_f1_threshold",
                                 "val_precision_at_half",
                                 "val_recall_at_half",
                                 "val_brier",
                                 "val_positive_rate"};
    const double want[] = {123, 7, 0, 0.125, NAN, 0.75, 0.5, 0.25, NAN, 0, 1.0 / 3.0, 7.0 / 123.0};
    wc_json_doc doc;
    char why[256];
    CHECK(wc_json_parse(buf, &doc, why, sizeof why) == WC_OK, "does not parse: %s: %s", why, buf);
    CHECK(doc.n == 12, "%d members: %s", doc.n, buf);
    for (int i = 0; i < 12 && i < doc.n; i++) {
        CHECK(strcmp(doc.members[i].key, keys[i]) == 0, "member %d is %s, want %s", i,
              doc.members[i].key, keys[i]);
        double v = wc_json_get_num(&doc, keys[i]);
        CHECK(isnan(want[i]) ? doc.members[i].kind == WC_JSON_NULL : v == want[i],
              "%s: %.17g, want %.17g", keys[i], v, want[i]);
    }
    wc_json_doc_free(&doc);
    metrics_text(buf, sizeof buf, &m, "");
    CHECK(strncmp(buf, "{\"pixels\":123,", 14) == 0, "no prefix: %s", buf);
}

int main(void) {
    wc_log_set_quiet(1);
    RUN(test_hand_example);
    RUN(test_random_vs_exact_reference);
    RUN(test_exact_multiples);
    RUN(test_order_independence);
    RUN(test_nodata_ignored);
    RUN(test_edge_cases);
    RUN(test_end_bins);
    RUN(test_bin_edges);
    RUN(test_small_probabilities);
    RUN(test_realistic_maps);
    RUN(test_extremes);
    RUN(test_ties_note);
    RUN(test_threshold_text);
    RUN(test_small_figures_text);
    RUN(test_ap_positives_sharing_a_bin);
    RUN(test_fixed_point_bounds);
    RUN(test_merge_is_word_sum);
    RUN(test_sums_beyond_one_word);
    RUN(test_json);
    HARNESS_EXIT();
}
