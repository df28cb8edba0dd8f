/* reduce.c: the exact (fixed-point) and fast (float) gradient reductions; see reduce.h. */
#include "wildcpu/reduce.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/dist.h"
#include "wildcpu/util.h"

/* Extra int64 words after the n gradient sums. */
enum {
    X_LOSS,
    X_VALID,
    X_SAMPLES,
    X_OVERFLOW,
    X_NONFINITE,
    X_BAD_LOSS,
    X_STOP,
    X_CKPT,
    X_FAILED,
    X_COUNT
};

/* Exponent for a tensor whose components are at most maxabs: leaves the headroom and room for
 * max_micro_batches additions below 2^62. */
static int exponent_for(double maxabs, int max_micro_batches) {
    int log2_m = 0;
    while ((1 << log2_m) < max_micro_batches) log2_m++;
    int budget = 62 - WC_REDUCE_HEADROOM_BITS - log2_m;
    if (!(maxabs > 0) || !isfinite(maxabs)) return budget; /* all zero: as if max were 1 */
    int k;
    frexp(maxabs, &k); /* maxabs < 2^k */
    return budget - k;
}

/* The largest |component| of a tensor, and whether every component is finite: fmax would drop
 * a NaN, and a NaN or an infinity must never reach the fixed-point conversion (llrint of either
 * is undefined), so both are tested explicitly, in one vectorizable pass. */
static float tensor_maxabs(const float *g, size_t n, int *finite) {
    float m = 0.0f;
    int ok = 1;
    for (size_t i = 0; i < n; i++) {
        float a = fabsf(g[i]);
        m = a > m ? a : m;
        ok &= a <= FLT_MAX;
    }
    *finite = ok;
    return m;
}

wc_reducer *wc_reducer_create(const wc_net *net, int exact, int max_micro_batches) {
    WC_ASSERT(max_micro_batches >= 1);
    wc_reducer *r = WC_CALLOC(1, sizeof *r);
    r->exact = exact;
    r->n = net->nparams;
    r->tensors = net->tensors;
    r->ntensors = net->ntensors;
    r->max_micro_batches = max_micro_batches;
    r->exponent = WC_CALLOC(r->ntensors, sizeof(int32_t));
    r->maxabs = WC_CALLOC(r->ntensors, sizeof(double));
    r->acc = WC_CALLOC_FOR(r->n + X_COUNT, sizeof(int64_t), "the reducer's sums");
    if (!exact) r->facc = WC_CALLOC_FOR(r->n, sizeof(float), "the reducer's sums");
    return r;
}

void wc_reducer_set_overlap(wc_reducer *r, int on) {
    free(r->bucket_t);
    r->bucket_t = NULL;
    r->nbuckets = 0;
    if (!on || r->ntensors == 0) return;
    const size_t elem = r->exact ? sizeof(int64_t) : sizeof(float);
    size_t target = WC_MAX((size_t)WC_REDUCE_BUCKET_BYTES, r->n * elem / 16);
    r->bucket_t = WC_ALLOC(sizeof(int) * ((size_t)r->ntensors + 1));
    int nb = 0;
    r->bucket_t[0] = r->ntensors;
    size_t bytes = 0;
    for (int t = r->ntensors - 1; t >= 0; t--) {
        /* offsets grow with the tensor index: backward finishes them from the last down */
        WC_ASSERT(t == 0 ||
                  r->tensors[t].offset == r->tensors[t - 1].offset + r->tensors[t - 1].count);
        bytes += r->tensors[t].count * elem;
        if (bytes >= target || t == 0) {
            r->bucket_t[++nb] = t;
            bytes = 0;
        }
    }
    r->nbuckets = nb;
}

int wc_reducer_overlapping(const wc_reducer *r) {
    return r->nbuckets > 0 && r->calibrated;
}

void wc_reducer_destroy(wc_reducer *r) {
    if (!r) return;
    free(r->bucket_t);
    free(r->exponent);
    free(r->maxabs);
    free(r->acc);
    free(r->facc);
    free(r);
}

void wc_reducer_calibrate(wc_reducer *r, const float *grads, int root) {
    double *m = WC_CALLOC(r->ntensors, sizeof(double));
    for (int t = 0; grads && t < r->ntensors; t++) {
        int finite; /* a non-finite micro-batch 0 is caught by wc_reducer_add right after */
        m[t] = tensor_maxabs(grads + r->tensors[t].offset, r->tensors[t].count, &finite);
        if (!finite) m[t] = 0;
    }
    wc_dist_bcast(m, sizeof(double) * r->ntensors, root);
    for (int t = 0; t < r->ntensors; t++) r->exponent[t] = exponent_for(m[t], r->max_micro_batches);
    r->calibrated = 1;
    free(m);
}

void wc_reducer_begin(wc_reducer *r) {
    memset(r->acc, 0, (r->n + X_COUNT) * sizeof(int64_t));
    if (r->facc) memset(r->facc, 0, r->n * sizeof(float));
    memset(r->maxabs, 0, r->ntensors * sizeof(double));
    r->overflow = r->nonfinite = r->bad_loss = 0;
    r->failed = 0;
    r->loss_sum = 0;
    r->valid_pixels = r->samples = 0;
    r->streaming = r->next_bucket = 0;
    r->s_has = 0;
}

void wc_reducer_add(wc_reducer *r, const float *grads, double loss_sum, int64_t valid_pixels,
                    int64_t samples) {
    r->valid_pixels += valid_pixels;
    r->samples += samples;
    /* The loss is summed in fixed point; beyond the bound it would wrap around. A loss that
     * large (or not finite) is itself the sign of a diverged model. */
    const double loss_limit = ldexp(1.0, 62 - WC_REDUCE_LOSS_FX_BITS) / r->max_micro_batches;
    if (!(fabs(loss_sum) <= loss_limit)) {
        r->bad_loss++;
        return;
    }
    const double limit = ldexp(1.0, 62) / r->max_micro_batches;
    int fits = 1, finite_all = 1;
    for (int t = 0; t < r->ntensors; t++) {
        const wc_tensor *tn = &r->tensors[t];
        int finite;
        double m = tensor_maxabs(grads + tn->offset, tn->count, &finite);
        if (!finite) {
            r->maxabs[t] = INFINITY; /* names the tensor once MPI_MAX has combined the ranks */
            finite_all = 0;
            continue;
        }
        if (m > r->maxabs[t]) r->maxabs[t] = m;
        if (!r->calibrated || !(ldexp(m, r->exponent[t]) <= limit)) fits = 0;
    }
    if (!finite_all) {
        r->nonfinite++;
        return;
    }
    if (!r->exact) {
        r->loss_sum += loss_sum;
        for (size_t i = 0; i < r->n; i++) r->facc[i] += grads[i];
        return;
    }
    r->acc[r->n + X_LOSS] += llround(ldexp(loss_sum, WC_REDUCE_LOSS_FX_BITS));
    if (!fits) {
        r->overflow++;
        return;
    }
    for (int t = 0; t < r->ntensors; t++) {
        const wc_tensor *tn = &r->tensors[t];
        const double scale = ldexp(1.0, r->exponent[t]);
        const float *g = grads + tn->offset;
        int64_t *a = r->acc + tn->offset;
        for (size_t i = 0; i < tn->count; i++) a[i] += llrint((double)g[i] * scale);
    }
}

void wc_reducer_stream_begin(wc_reducer *r, double loss_sum, int64_t valid_pixels,
                             int64_t samples) {
    WC_ASSERT(wc_reducer_overlapping(r) && !r->streaming);
    r->streaming = 1;
    r->s_has = 1;
    r->valid_pixels += valid_pixels;
    r->samples += samples;
    const double loss_limit = ldexp(1.0, 62 - WC_REDUCE_LOSS_FX_BITS) / r->max_micro_batches;
    r->s_bad_loss = !(fabs(loss_sum) <= loss_limit); /* as in wc_reducer_add */
    r->s_finite = r->s_fits = 1;
    r->s_loss = loss_sum;
}

/* Converts bucket b of the streamed micro-batch into the sums (as wc_reducer_add does for a
 * whole gradient) and starts its collective. A bucket that is not finite or does not fit its
 * scale is not converted: the step is then abandoned (diverged) or recomputed (redo) anyway. */
static void start_bucket(wc_reducer *r, const float *grads, int b) {
    const int tlo = r->bucket_t[b + 1], thi = r->bucket_t[b];
    const size_t lo = r->tensors[tlo].offset;
    const size_t hi = r->tensors[thi - 1].offset + r->tensors[thi - 1].count;
    if (grads && r->s_has && !r->s_bad_loss) {
        const double limit = ldexp(1.0, 62) / r->max_micro_batches;
        int fits = 1, finite_all = 1;
        for (int t = tlo; t < thi; t++) {
            const wc_tensor *tn = &r->tensors[t];
            int finite;
            double m = tensor_maxabs(grads + tn->offset, tn->count, &finite);
            if (!finite) {
                r->maxabs[t] = INFINITY;
                finite_all = 0;
                continue;
            }
            if (m > r->maxabs[t]) r->maxabs[t] = m;
            if (!(ldexp(m, r->exponent[t]) <= limit)) fits = 0;
        }
        r->s_finite &= finite_all;
        r->s_fits &= fits;
        if (finite_all && !r->exact) {
            for (size_t i = lo; i < hi; i++) r->facc[i] += grads[i];
        } else if (finite_all && fits) {
            for (int t = tlo; t < thi; t++) {
                const wc_tensor *tn = &r->tensors[t];
                const double scale = ldexp(1.0, r->exponent[t]);
                const float *g = grads + tn->offset;
                int64_t *a = r->acc + tn->offset;
                for (size_t i = 0; i < tn->count; i++) a[i] += llrint((double)g[i] * scale);
            }
        }
    }
    if (r->exact)
        wc_dist_isum_i64(r->acc + lo, hi - lo);
    else
        wc_dist_isum_f32(r->facc + lo, hi - lo);
}

void wc_reducer_stream_ready(wc_reducer *r, const float *grads, size_t final_from) {
    WC_ASSERT(r->streaming);
    while (r->next_bucket < r->nbuckets &&
           r->tensors[r->bucket_t[r->next_bucket + 1]].offset >= final_from) {
        start_bucket(r, grads, r->next_bucket);
        r->next_bucket++;
    }
    wc_dist_progress();
}

void wc_reducer_stream_end(wc_reducer *r, const float *grads) {
    WC_ASSERT(wc_reducer_overlapping(r));
    r->streaming = 1; /* a rank without a micro-batch starts here */
    wc_reducer_stream_ready(r, grads, 0);
    if (!r->s_has) return;
    /* the micro-batch's own counts, as wc_reducer_add would have made them */
    if (r->s_bad_loss)
        r->bad_loss++;
    else if (!r->s_finite)
        r->nonfinite++;
    else {
        if (r->exact)
            r->acc[r->n + X_LOSS] += llround(ldexp(r->s_loss, WC_REDUCE_LOSS_FX_BITS));
        else
            r->loss_sum += r->s_loss;
        if (r->exact && !r->s_fits) r->overflow++;
    }
}

void wc_reducer_fail(wc_reducer *r) {
    r->failed = 1;
}

int wc_reducer_finish(wc_reducer *r, float *mean_grad, int stop_vote, int ckpt_vote,
                      wc_step_totals *totals) {
    int64_t *x = r->acc + r->n;
    x[X_VALID] = r->valid_pixels;
    x[X_SAMPLES] = r->samples;
    x[X_OVERFLOW] = r->overflow;
    x[X_NONFINITE] = r->nonfinite;
    x[X_BAD_LOSS] = r->bad_loss;
    x[X_STOP] = stop_vote ? 1 : 0;
    x[X_CKPT] = ckpt_vote ? 1 : 0;
    x[X_FAILED] = r->failed;
    if (r->streaming) {
        WC_ASSERT(r->next_bucket == r->nbuckets);
        wc_dist_wait();
        if (!r->exact) x[X_LOSS] = llround(ldexp(r->loss_sum, WC_REDUCE_LOSS_FX_BITS));
        wc_dist_sum_i64(x, X_COUNT);
        r->streaming = 0;
    } else if (r->exact) {
        wc_dist_sum_i64(r->acc, r->n + X_COUNT);
    } else {
        x[X_LOSS] = llround(ldexp(r->loss_sum, WC_REDUCE_LOSS_FX_BITS));
        wc_dist_sum_i64(x, X_COUNT);
        wc_dist_sum_f32(r->facc, r->n);
    }
    wc_dist_max_f64(r->maxabs, r->ntensors);
    totals->loss_sum = ldexp((double)x[X_LOSS], -WC_REDUCE_LOSS_FX_BITS);
    totals->valid_pixels = x[X_VALID];
    totals->samples = x[X_SAMPLES];
    totals->stop_votes = x[X_STOP];
    totals->ckpt_votes = x[X_CKPT];
    totals->nonfinite = x[X_NONFINITE];
    totals->bad_loss = x[X_BAD_LOSS];
    totals->failed_ranks = x[X_FAILED];
    totals->first_bad_tensor = -1;
    totals->bad_tensors = 0;
    for (int t = 0; t < r->ntensors; t++)
        if (isinf(r->maxabs[t])) {
            if (totals->first_bad_tensor < 0) totals->first_bad_tensor = t;
            totals->bad_tensors++;
        }
    /* Every rank saw the same sums: all stop together, nothing of this step is applied, and the
     * scales stay those of the last good step. */
    if (totals->failed_ranks > 0) return WC_REDUCE_FAILED;
    if (totals->nonfinite > 0 || totals->bad_loss > 0) return WC_REDUCE_DIVERGED;
    int redo = r->exact && (!r->calibrated || x[X_OVERFLOW] > 0);
    if (!redo) {
        const double denom = totals->valid_pixels > 0 ? (double)totals->valid_pixels : 1.0;
        for (int t = 0; t < r->ntensors; t++) {
            const wc_tensor *tn = &r->tensors[t];
            /* sum * 2^-e / count: the power of two is exact, one rounding in the division */
            const double unscale = ldexp(1.0, -r->exponent[t]);
            for (size_t i = tn->offset; i < tn->offset + tn->count; i++)
                mean_grad[i] = r->exact ? (float)((double)r->acc[i] * unscale / denom)
                                        : (float)(r->facc[i] / denom);
        }
    }
    /* This step's global maxima set the next step's scales (or this step's, on a redo), on
     * every rank alike. */
    for (int t = 0; t < r->ntensors; t++)
        r->exponent[t] = exponent_for(r->maxabs[t], r->max_micro_batches);
    r->calibrated = 1;
    return redo ? WC_REDUCE_REDO : WC_REDUCE_DONE;
}
