/* reduce.h: summing the micro-batch gradients of a step across ranks, so that every rank takes
 * the same optimizer step, bitwise identical for any number of ranks.
 *
 * Floating-point addition is not associative: summing the same micro-batch gradients in a
 * different grouping (3 ranks instead of 2) changes the last bits, and over many steps the
 * models drift apart. The exact reducer therefore converts each micro-batch's gradient to
 * fixed point (int64) before adding: integer addition is associative, so the sum does not
 * depend on which rank computed which micro-batch or on the order MPI adds them.
 *
 * Scale: tensor t of a micro-batch gradient is rounded to a multiple of 2^-e_t, where e_t is
 * chosen from the largest |gradient| component of that tensor in the previous step (over every
 * micro-batch, MPI_MAX-reduced, so all ranks agree), leaving 2^16 of headroom for growth and
 * room for the step's M micro-batches to add up without overflow:
 *     max_prev * 2^e_t <= 2^(62 - 16 - ceil(log2 M)).
 * Precision: the rounding error of one component is at most 2^-(47 - ceil(log2 M)) times the
 * previous step's largest component of its tensor (about 1e-13 for M = 8): far below float32's
 * own rounding of that largest component (6e-8). If a component outgrows the headroom, the
 * overflow is detected on every rank (the counts are summed) and the step is recomputed with
 * scales from this step's maxima, which then fit by construction. The first step of a fresh
 * run takes its scales from micro-batch 0 alone, which its owner computes first and
 * broadcasts (so they do not depend on the rank count either).
 *
 * The same collective carries the step's loss sum (fixed point, 2^-20), the count of valid
 * pixels (the mean's denominator), the sample count and the ranks' votes to stop, to
 * checkpoint and to fail, so a step costs one large MPI_Allreduce and one small MPI_MAX.
 *
 * Overlap (wc_reducer_set_overlap, the default; --no-overlap turns it off): the last
 * micro-batch of a rank's step is converted bucket by bucket while its backward pass runs, and
 * each bucket's sum is started with a nonblocking collective as soon as backward has produced
 * it. A bucket is a run of whole tensors of about WC_REDUCE_BUCKET_BYTES on the wire (at least
 * a sixteenth of the gradient), formed from the last tensor down, the order backward finishes
 * them. Integer sums do not depend on how they are grouped, so the result is the same bits with
 * overlap on or off; the step's loss, counts, votes and divergence flags follow in a small
 * blocking collective once every bucket is started, then the MPI_MAX of the maxima, as without
 * overlap. A step without scales yet (the first of a fresh run) is never overlapped.
 *
 * --fast-reduce (exact = 0) instead sums float gradients per rank and with MPI_SUM: faster,
 * equal to the exact result only to float rounding, and not rank-count independent.
 *
 * Not here: computing gradients, the optimizer. */
#ifndef WILDCPU_REDUCE_H
#define WILDCPU_REDUCE_H

#include <stddef.h>
#include <stdint.h>

#include "wildcpu/net.h"

#define WC_REDUCE_HEADROOM_BITS 16
#define WC_REDUCE_LOSS_FX_BITS  20
#define WC_REDUCE_BUCKET_BYTES  (1 << 18)

enum { WC_REDUCE_DONE = 0, WC_REDUCE_REDO = 1, WC_REDUCE_DIVERGED = 2, WC_REDUCE_FAILED = 3 };

/* What the whole job saw in a step (identical on every rank). */
typedef struct wc_step_totals {
    double loss_sum; /* sum of per-pixel loss over the global batch (from fixed point) */
    int64_t valid_pixels;
    int64_t samples;
    int64_t stop_votes; /* ranks that received a stop signal */
    int64_t ckpt_votes; /* ranks that want a checkpoint after this step */
    /* divergence: micro-batches whose gradient had a NaN or infinite component, or whose loss
     * was not finite or beyond the fixed-point range; the first such tensor (-1: none) and how
     * many tensors were affected */
    int64_t nonfinite, bad_loss;
    int first_bad_tensor, bad_tensors;
    int64_t failed_ranks; /* ranks that could not compute their share (wc_reducer_fail) */
} wc_step_totals;

typedef struct wc_reducer {
    int exact;
    size_t n;                 /* parameters */
    const wc_tensor *tensors; /* the network's tensor table (not owned) */
    int ntensors;
    int max_micro_batches; /* per step, for the overflow bound */
    int calibrated;        /* exponents come from a real step's maxima */
    int32_t *exponent;     /* (ntensors) e_t: components are multiples of 2^-e_t */
    double *maxabs;        /* (ntensors) this step's max |component|, then the global max */
    int64_t *acc;          /* (n + extras) fixed-point sums; exact mode */
    float *facc;           /* (n) float sums; fast mode */
    int64_t overflow;      /* micro-batches of this rank that did not fit the scale */
    int64_t nonfinite;     /* ... whose gradient had a NaN or infinite component */
    int64_t bad_loss;      /* ... whose loss was not finite or beyond the loss's range */
    int64_t failed;        /* this rank could not compute its share (wc_reducer_fail) */
    double loss_sum;
    int64_t valid_pixels, samples;
    /* overlap: bucket b holds tensors [bucket_t[b + 1], bucket_t[b]) (bucket 0 the last ones) */
    int nbuckets;                            /* 0: overlap off */
    int *bucket_t;                           /* (nbuckets + 1) tensor bounds, descending */
    int streaming;                           /* this step's buckets are being started */
    int next_bucket;                         /* the next bucket to start */
    int s_has, s_bad_loss, s_finite, s_fits; /* the streamed micro-batch, so far */
    double s_loss;
} wc_reducer;

wc_reducer *wc_reducer_create(const wc_net *net, int exact, int max_micro_batches);
void wc_reducer_destroy(wc_reducer *r);
/* Sets the scales of a fresh run from one micro-batch's gradient: the rank that computes
 * micro-batch 0 of the first step (root) passes its gradient, every other rank NULL.
 * Collective (a broadcast from root). */
void wc_reducer_calibrate(wc_reducer *r, const float *grads, int root);
/* Starts a step: zeroes this rank's sums. */
void wc_reducer_begin(wc_reducer *r);
/* Adds one micro-batch: its parameter gradient (sum over its pixels, not yet averaged), its
 * loss sum, valid pixel and sample counts. */
void wc_reducer_add(wc_reducer *r, const float *grads, double loss_sum, int64_t valid_pixels,
                    int64_t samples);
/* Overlap on (1) or off (0): forms the buckets. */
void wc_reducer_set_overlap(wc_reducer *r, int on);
/* Whether this step's last micro-batch is to be streamed: overlap on and the scales known. The
 * same answer on every rank. */
int wc_reducer_overlapping(const wc_reducer *r);
/* Streaming the step's last micro-batch of this rank instead of wc_reducer_add: stream_begin
 * with its loss and counts (after forward, before backward), stream_ready whenever backward
 * has made the gradients from index final_from on final (it converts and starts each bucket
 * that became complete, and lets MPI progress the started ones), stream_end after backward
 * (grads NULL and no stream_begin on a rank without a micro-batch in this step: it starts the
 * buckets with what it has). Collective in the order of the buckets: every rank starts them
 * all, in the same order, before wc_reducer_finish. */
void wc_reducer_stream_begin(wc_reducer *r, double loss_sum, int64_t valid_pixels, int64_t samples);
void wc_reducer_stream_ready(wc_reducer *r, const float *grads, size_t final_from);
void wc_reducer_stream_end(wc_reducer *r, const float *grads);
/* This rank could not compute its share of the step (its patches could not be read, after its
 * message): it joins the step's collectives with nothing (as a rank without a micro-batch), and
 * wc_reducer_finish returns WC_REDUCE_FAILED on every rank, so that all end the run together,
 * with a report, instead of one rank aborting the job. Until the next wc_reducer_begin. */
void wc_reducer_fail(wc_reducer *r);
/* Sums across ranks. On WC_REDUCE_DONE, mean_grad (n) holds the global sum divided by the global
 * count of valid pixels and totals the step's figures. WC_REDUCE_REDO: the scales were
 * recalibrated; recompute the step (begin, add..., finish again). WC_REDUCE_DIVERGED: some
 * rank's micro-batch had a non-finite gradient or loss (totals say which tensor); mean_grad and
 * the scales are untouched, and every rank returns it for the same step. WC_REDUCE_FAILED
 * (before any other outcome): some rank called wc_reducer_fail; nothing is applied. Collective. */
int wc_reducer_finish(wc_reducer *r, float *mean_grad, int stop_vote, int ckpt_vote,
                      wc_step_totals *totals);

#endif
