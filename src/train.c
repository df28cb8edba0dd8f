/* train.c: the training driver; see train.h. In order: reading ahead, one step
 * (forward/backward per micro-batch, exact reduction, update, divergence), validation, then
 * the three phases of a run: setup, the loop, teardown. The run's state is train_ctx.h's; its
 * checkpoints (when, what, resume, best.wcp, the stop) are train_ckpt.c's. */
#include "wildcpu/train.h"

#include "train_ctx.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wildcpu/ckpt.h"
#include "wildcpu/cpuinfo.h"
#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/layers.h"
#include "wildcpu/metrics.h"
#include "wildcpu/net.h"
#include "wildcpu/predict.h"
#include "wildcpu/raster.h"
#include "wildcpu/reader.h"
#include "wildcpu/reduce.h"
#include "wildcpu/report.h"
#include "wildcpu/rundir.h"
#include "wildcpu/schedule.h"
#include "wildcpu/stop.h"
#include "wildcpu/trainlog.h"
#include "wildcpu/util.h"
#include "wildcpu/validation.h"

void wc_train_config_default(wc_train_config *cfg) {
    memset(cfg, 0, sizeof *cfg);
    wc_data_config_default(&cfg->data);
    cfg->out_dir = "run";
    cfg->model = "unet-lite";
    cfg->epochs = 10;
    cfg->batch = 32;
    cfg->micro_batch = 4;
    wc_optim_config_default(&cfg->optim, WC_OPTIM_ADAMW);
    cfg->optim.lr = 0; /* the model's and the optimizer's: wc_train_lr */
    cfg->optim.warmup_steps = -1;
    cfg->optim.min_lr_ratio = -1; /* wc_train_lr_end */
    cfg->lr_ref_batch = 32;
    cfg->pos_weight = 1.0;
    cfg->seed = 1;
    cfg->threads = 1;
    cfg->log_every = 10;
    cfg->keep = 3;
}

/* ---- reading ahead ----------------------------------------------------------------------- */

/* Submits read requests in consumption order while the reader has room. */
static void submit_ahead(train_ctx *t) {
    read_ahead *ra = &t->ra;
    while (wc_reader_can_submit(ra->rd)) {
        wc_work w;
        int n = wc_schedule_cursor_next(&t->sched, &ra->cursor, ra->samples, &w);
        if (n == 0) return;
        wc_reader_submit(ra->rd, ra->samples, n, wc_work_tag(&w));
    }
}

/* The batch of request `w`, which must be the oldest not yet taken; NULL when it could not be
 * read (the reader said why; its slot is taken all the same, and released like the others). */
static const wc_read_batch *take(train_ctx *t, wc_work w) {
    submit_ahead(t);
    const wc_read_batch *b;
    if (wc_reader_take(t->ra.rd, &b) != WC_OK) return NULL;
    WC_ASSERT(b->tag == wc_work_tag(&w));
    return b;
}

/* Decodes the batch's patches into the network input and the label/validity buffers. */
static long decode_batch(train_ctx *t, const wc_read_batch *b) {
    const size_t pp = (size_t)t->ds->P * t->ds->P;
    float *x = wc_net_input(t->net);
    long nvalid = 0;
    for (int i = 0; i < b->n; i++)
        nvalid += wc_dataset_decode(t->ds, b->raw + (size_t)i * b->patch_bytes, b->samples[i],
                                    t->ds->mean, t->ds->std, x + (size_t)i * t->ds->nfeat * pp,
                                    t->dec.y + i * pp, t->dec.valid + i * pp, NULL);
    t->dec.n = b->n;
    return nvalid;
}

/* The first feature (index) of the samples in the network's input with a normalized value beyond
 * WC_INFER_ORDINARY training standard deviations, -1 for none: a value far outside the training
 * range (an undeclared nodata that is not huge, -9999 in a band of small spread) can make the
 * loss explode on its own. Asked only of a micro-batch whose loss exploded (loss_exploded). */
static int input_outlier(const train_ctx *t) {
    const size_t pp = (size_t)t->ds->P * t->ds->P;
    const float *x = wc_net_input(t->net);
    const int C = t->ds->nfeat;
    for (int c = 0; c < C; c++)
        for (int i = 0; i < t->dec.n; i++) {
            const float *xc = x + ((size_t)i * C + c) * pp;
            for (size_t k = 0; k < pp; k++)
                if (fabsf(xc[k]) > WC_INFER_ORDINARY) return c;
        }
    return -1;
}

/* The lowest feature index any rank's `outlier` names, -1 for none (collective). */
static int lowest_outlier(const train_ctx *t, int outlier) {
    const int C = t->ds->nfeat;
    const int c = C - wc_dist_max_int(outlier < 0 ? 0 : C - outlier);
    return c >= C ? -1 : c;
}

/* ---- one step ---------------------------------------------------------------------------- */

/* What calms a diverging training: the options that set the size of its steps, with their
 * values in this run. */
static void options_to_change(const train_ctx *t, char *buf, size_t size) {
    char scaled[80] = "";
    const double decay = t->opt->cfg.lr * t->opt->cfg.weight_decay;
    if (t->cfg->lr_scaling_linear)
        snprintf(scaled, sizeof scaled, ", %.3g after --lr-scaling linear", t->opt->cfg.lr);
    snprintf(buf, size, "lower --lr (now %.3g%s)%s or lengthen --warmup (now %ld)",
             wc_train_lr(t->cfg), scaled, decay > 0.1 ? " or --weight-decay" : "",
             t->opt->cfg.warmup_steps);
}

#define KEPT_MAX 4800 /* a checkpoint directory's path (4200) and the remedy */
/* Rank 0: what a diverged run leaves, once a background write in flight has ended, and what to
 * do. Training is deterministic, so resuming with the same options diverges again at the same
 * step; the checkpoints left (ckpt-*.wcp, or best.wcp, which a resume falls back to) are intact
 * and can make a map, but going on needs other options, so --fresh. */
static void describe_kept(train_ctx *t, char *buf, size_t size) {
    wc_train_ckpt_take_background(t, 1);
    /* a checkpoint of the weights this step found diverged (its loss or gradient is theirs,
     * left by the update before it) is no model: set aside, so that a resume, predict or
     * evaluate given the run take the one before it */
    char aside[4300], set_aside[8800] = "";
    for (int k = 0; k < 2; k++)
        if (t->diverged_weights[k] > 0 && wc_ckpt_set_aside(t->ckpt_dir, t->diverged_weights[k],
                                                            "diverged", aside, sizeof aside) == 1) {
            const size_t used = strlen(set_aside);
            snprintf(set_aside + used, sizeof set_aside - used,
                     "the checkpoint of step %ld, whose weights gave an exploded loss, is set "
                     "aside as %s; ",
                     t->diverged_weights[k], aside);
        }
    wc_ckpt_entry *e;
    const int n = wc_ckpt_list(t->ckpt_dir, 0, &e);
    char best_path[4300];
    snprintf(best_path, sizeof best_path, "%s/" WC_CKPT_BEST, t->ckpt_dir);
    const int best = access(best_path, F_OK) == 0;
    char remedy[400], change[240];
    options_to_change(t, change, sizeof change);
    if (t->diverged_as_initialized)
        snprintf(remedy, sizeof remedy,
                 "no update had been applied yet (the network is as initialized, whatever the "
                 "rate), so neither --lr nor --warmup changes this: this step's training "
                 "patches hold values the network cannot take (see the warnings above: values "
                 "of magnitude 1e30 or more, an undeclared nodata?), unless a fault of the "
                 "machine caused it");
    else
        snprintf(remedy, sizeof remedy,
                 "%s and rerun with --fresh (training is deterministic: unless a fault of the "
                 "machine caused it, a rerun with the same options diverges again here)",
                 change);
    if (n > 0)
        snprintf(buf, size, "%sthe checkpoints in %s are intact (a map can be drawn from them); %s",
                 set_aside, t->ckpt_dir, remedy);
    else if (best)
        snprintf(buf, size, "%s%s is intact (a map can be drawn from it); %s", set_aside, best_path,
                 remedy);
    else
        snprintf(buf, size, "%sno checkpoint %s before it; %s", set_aside,
                 *set_aside ? "is left from" : "was written", remedy);
    if (n > 0) wc_ckpt_list_free(e, n);
}

/* Rank 0: the divergence said (fmt, as printf), followed by what it leaves and what to do. */
static void say_diverged(train_ctx *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void say_diverged(train_ctx *t, const char *fmt, ...) {
    char what[1024], kept[KEPT_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    describe_kept(t, kept, sizeof kept);
    wc_error("%s: %s", what, kept);
}

/* Divergence: a non-finite gradient, loss, or an update that made the state non-finite. Every
 * rank reaches this for the same step (it is decided from reduced values), so all return the
 * error together; nothing of the step was applied to anything that is saved or logged. */
static void report_divergence(train_ctx *t, long step, const wc_step_totals *tot,
                              int bad_update_tensor) {
    char what[256];
    if (bad_update_tensor >= 0)
        snprintf(what, sizeof what, "the optimizer's update made %s non-finite",
                 t->net->tensors[bad_update_tensor].name);
    else if (tot->first_bad_tensor >= 0)
        snprintf(what, sizeof what,
                 "the gradient of %s%s%.0d%s is not finite (NaN or infinite) "
                 "in %lld micro-batch%s",
                 t->net->tensors[tot->first_bad_tensor].name, tot->bad_tensors > 1 ? " and " : "",
                 tot->bad_tensors > 1 ? tot->bad_tensors - 1 : 0,
                 tot->bad_tensors > 1 ? " more tensors" : "", (long long)tot->nonfinite,
                 tot->nonfinite == 1 ? "" : "es");
    else
        snprintf(what, sizeof what,
                 "the loss of %lld micro-batch%s is not finite or too large "
                 "to be summed exactly (beyond 2^%d nats)",
                 (long long)tot->bad_loss, tot->bad_loss == 1 ? "" : "es",
                 62 - WC_REDUCE_LOSS_FX_BITS);
    /* a loss or gradient of a fresh run's first step comes from the initial weights: no rate
     * has touched them, and the remedy told to lower it (its update is rate-made, and named
     * above as such) */
    t->diverged_as_initialized = bad_update_tensor < 0 && t->opt->step == 0;
    if (t->rank == 0)
        say_diverged(t,
                     "step %ld: training diverged: %s; the step was not applied and nothing of "
                     "it was saved",
                     step + 1, what);
}

/* A step's loss against the thresholds of loss_exploded, in multiples of both what a network
 * whose output is 0 everywhere costs a pixel at most (ln 2, times --pos-weight where burned)
 * and, in a fresh run, its first step's loss: above WC_LOSS_HIGH a warning (a logistic model of
 * 2049 bands at its default rate reaches 16 times ln 2 in step 2, and comes down again), above
 * WC_LOSS_EXPLODED a divergence (unet-lite at --lr 0.03: 13807 nats per pixel in step 2, and a
 * validation ROC-AUC of 0.28 after it; logistic at --lr 100: 171 to 267, never down again). */
#define WC_LOSS_HIGH     10.0
#define WC_LOSS_EXPLODED 100.0
static double explosion_reference(const train_ctx *t) {
    const double pw = t->cfg->pos_weight, flat = M_LN2 * (pw > 1 ? pw : 1.0);
    return isnan(t->first_loss) ? flat : fmax(flat, t->first_loss);
}

/* Whether the last update left a network fit to be saved: a forward pass, with the new weights,
 * of the micro-batch this rank decoded last (still in the network's input), its valid pixels'
 * outputs finite and their loss not exploded (loss_exploded's rule, unless those samples hold
 * values far outside the training range). A step's loss is computed before its update, so it
 * judges the update before it: without this, the update of the step before an explosion (or a
 * last step at a rate that blew the weights up) would be checkpointed, and --keep would prune
 * the good checkpoints for it. Run before every checkpoint; every rank returns the same. */
static int update_sane(train_ctx *t, long step) {
    int64_t bad[2] = {0, 0}; /* non-finite outputs, valid pixels checked */
    /* their loss with the new weights and with the old (compute_micro_batches), summed in any
     * order: only a failure depends on it */
    double loss[2] = {0, t->dec.n > 0 ? t->dec.loss_before : 0};
    if (t->dec.n > 0) {
        wc_net_forward(t->net, t->dec.n);
        const float *z = wc_net_output(t->net);
        const size_t n = (size_t)t->dec.n * t->ds->P * t->ds->P;
        for (size_t i = 0; i < n; i++)
            if (t->dec.valid[i]) bad[0] += !isfinite(z[i]), bad[1]++;
        if (bad[0] == 0 && bad[1] > 0)
            loss[0] = wc_bce_forward(z, t->dec.y, t->dec.valid, n, (float)t->cfg->pos_weight);
    }
    wc_dist_sum_i64(bad, 2);
    wc_dist_sum_f64(loss, 2);
    if (bad[0] > 0) {
        if (t->rank == 0)
            say_diverged(t,
                         "step %ld: training diverged: after its update the network's output is "
                         "not finite on %lld of %lld valid pixels of the last micro-batches; its "
                         "state was not saved",
                         step + 1, (long long)bad[0], (long long)bad[1]);
        return 0;
    }
    const double per_pixel = bad[1] > 0 ? loss[0] / (double)bad[1] : 0;
    const double was = bad[1] > 0 ? loss[1] / (double)bad[1] : 0;
    const double reference = explosion_reference(t);
    /* exploded, and by the update itself: its own batch costs more than 10 times what it cost
     * before it (one hard patch at batch 1 costs hundreds of nats before and after alike); every
     * rank alike: the losses are summed, the network's input is still the micro-batch */
    if (!(per_pixel > WC_LOSS_EXPLODED * reference && per_pixel > 10 * was) ||
        lowest_outlier(t, input_outlier(t)) >= 0)
        return 1;
    if (t->rank == 0)
        say_diverged(t,
                     "step %ld: training diverged: after its update the loss of the last "
                     "micro-batches is %.4g nats per pixel (%.3g before it), more than 100 "
                     "times the %.3g of an untrained network or the run's first step: the rate "
                     "threw the weights far off; its state was not saved",
                     step + 1, per_pixel, was, reference);
    return 0;
}

/* The test hook that proves divergence is caught on any rank: WILDCPU_TEST_POISON=STEP:RANK:WHAT
 * makes RANK's first micro-batch of step STEP (1-based) have a NaN gradient component (grad), an
 * infinite one (inf), a NaN loss (loss) or a finite loss of 100 nats per pixel (huge: an
 * exploding loss, its gradient left as it is; far: the same on patches whose first feature holds
 * values beyond WC_INFER_ORDINARY standard deviations). Parsed once at setup. */
static void parse_poison(train_ctx *t) {
    t->poison_step = -1;
    const char *s = getenv("WILDCPU_TEST_POISON");
    long step;
    int rank;
    char what[8];
    if (!s || sscanf(s, "%ld:%d:%7s", &step, &rank, what) != 3 || rank != t->rank) return;
    t->poison_step = step - 1;
    t->poison_kind = what[0];
}

static void poison_grad(train_ctx *t) {
    t->net->grads[t->net->nparams / 2] = t->poison_kind == 'i' ? INFINITY : NAN;
}

/* While the last micro-batch's backward runs (overlap): after each convolution, the gradients
 * from its weights on are final, and the reducer starts the buckets that became complete;
 * after every node, MPI moves the started ones along. */
static void on_backward_node(void *ctx, const wc_node *nd) {
    train_ctx *t = ctx;
    if (nd->op == WC_OP_CONV && nd->w_off < t->stream.final_from) {
        t->stream.final_from = nd->w_off;
        if (t->stream.poison && t->net->nparams / 2 >= nd->w_off) {
            poison_grad(t);
            t->stream.poison = 0;
        }
    }
    wc_reducer_stream_ready(t->red, t->net->grads, t->stream.final_from);
}

/* This rank's micro-batches of the step, forward and backward, each added to the reducer; with
 * overlap, the last one is streamed into it during its backward pass. */
static void compute_micro_batches(train_ctx *t, long step, int lo, int hi, int root) {
    const size_t pp = (size_t)t->ds->P * t->ds->P;
    const float pw = (float)t->cfg->pos_weight;
    const int calibrate = !t->red->calibrated;
    const int stream = wc_reducer_overlapping(t->red); /* never while calibrating */
    if (calibrate && lo == hi) wc_reducer_calibrate(t->red, NULL, root);
    if (stream && lo == hi) wc_reducer_stream_end(t->red, NULL);
    for (int j = lo; j < hi; j++) {
        const wc_read_batch *b = t->ra.held[j - lo];
        long nvalid = decode_batch(t, b);
        wc_net_forward(t->net, b->n);
        const float *z = wc_net_output(t->net);
        double loss = wc_bce_forward(z, t->dec.y, t->dec.valid, b->n * pp, pw);
        wc_bce_backward(wc_net_output_grad(t->net), z, t->dec.y, t->dec.valid, b->n * pp, pw);
        const int hit = step == t->poison_step && j == lo;
        if (hit && (t->poison_kind == 'h' || t->poison_kind == 'f')) loss = 100.0 * (double)nvalid;
        if (hit && t->poison_kind == 'f') t->dec.step_outlier = 0; /* as if band 1 held -9999 */
        /* a micro-batch whose own loss exploded: are its values the cause? (its input is
         * overwritten by the next one; loss_exploded asks after the step) */
        if (nvalid > 0 && loss > WC_LOSS_EXPLODED * explosion_reference(t) * (double)nvalid) {
            const int c = input_outlier(t);
            if (c >= 0 && (t->dec.step_outlier < 0 || c < t->dec.step_outlier))
                t->dec.step_outlier = c;
        }
        if (j == hi - 1) t->dec.loss_before = loss;
        const int poisoned = hit && strchr("rhf", t->poison_kind) == NULL;
        if (poisoned && t->poison_kind == 'l') loss = NAN;
        memset(t->net->grads, 0, t->net->nparams * sizeof(float));
        if (stream && j == hi - 1) {
            wc_reducer_stream_begin(t->red, loss, nvalid, b->n);
            t->stream.final_from = t->net->nparams;
            t->stream.poison = poisoned && t->poison_kind != 'l';
            t->net->backward_hook = on_backward_node;
            t->net->backward_hook_ctx = t;
            wc_net_backward(t->net, b->n);
            t->net->backward_hook = NULL;
            wc_reducer_stream_end(t->red, t->net->grads);
            continue;
        }
        wc_net_backward(t->net, b->n);
        if (calibrate && j == lo) wc_reducer_calibrate(t->red, j == 0 ? t->net->grads : NULL, root);
        if (poisoned && t->poison_kind != 'l') poison_grad(t);
        wc_reducer_add(t->red, t->net->grads, loss, nvalid, b->n);
    }
}

/* Rank 0, once a run: a step whose batch had no valid pixel, which is taken without a loss. */
static void say_no_valid_pixel(train_ctx *t, long step) {
    if (t->rank != 0 || t->said_no_valid_pixel) return;
    t->said_no_valid_pixel = 1;
    wc_warn("step %ld: no pixel of the batch is valid (its samples were shifted or turned onto "
            "nodata): the step has no loss and a zero gradient (a larger --batch makes such "
            "steps rarer); said once a run",
            step + 1);
}

/* A step whose loss exploded without becoming NaN or infinite. A network whose output is 0
 * everywhere (an untrained one, near enough) costs a pixel ln 2 nats, times --pos-weight where
 * it is burned; a training loss of many times the most that costs any batch means outputs of tens
 * or thousands on the wrong side. The first step of a fresh run is the reference: its loss is
 * the network's as initialized, before any update, so one that high comes from the step's inputs
 * (values far beyond their band's training mean, which no rate made: as a NaN there does,
 * describe_kept), which the network may still learn to take: warned about. A later step (or a
 * resumed session's first, its checkpoint's weights) whose loss exceeds WC_LOSS_HIGH times both
 * that and an untrained network's (explosion_reference) is warned about, once a session; beyond
 * WC_LOSS_EXPLODED times in two steps of three it is the updates' doing, a divergence (one such
 * step alone is warned about: a batch of one hard patch can cost that), unless its patches hold
 * values beyond WC_INFER_ORDINARY training standard deviations (an undeclared nodata of -9999 in
 * a band of small spread explodes the loss on its own: warned about, once a session, naming the
 * band). The step is not applied, the checkpoints of the weights that gave the two losses are
 * set aside (describe_kept), and update_sane keeps an update that blows up its own batch from any
 * checkpoint (measured: unet-lite at --lr 0.03 reached a loss of 13807
 * in step 2 and a validation ROC-AUC of 0.28 after it; logistic at --lr 100 losses of 40 to 267
 * that never came down, a map of 0 everywhere). Until 2026-12-07 such a run went on with a
 * warning and finished with status 0: --keep pruned the checkpoints from before the explosion,
 * and the map of its last one replaced the user's. The loss is reduced exactly, so every rank
 * decides alike. Returns 1 when the step diverged (rank 0 said so). */
static int loss_exploded(train_ctx *t, long step, double loss) {
    const double pw = t->cfg->pos_weight, flat = M_LN2 * (pw > 1 ? pw : 1.0);
    const char *times_pw = pw > 1 ? " x --pos-weight" : "";
    if (isnan(t->first_loss) && t->opt->step > 0)
        t->first_loss = 0; /* a resumed session: judged by the checkpoint's weights' first loss */
    if (isnan(t->first_loss)) {
        t->first_loss = loss;
        if (t->rank == 0 && loss > WC_LOSS_HIGH * flat)
            wc_warn("step %ld: the training loss is %.4g nats per pixel, %.0f times the %.3g a "
                    "network whose output is 0 everywhere costs at most (ln 2%s), before any "
                    "update (the network is as initialized, whatever the rate, so neither --lr "
                    "nor --warmup changes this): this step's training patches hold values the "
                    "network cannot take (values far beyond their band's training mean, an "
                    "undeclared nodata?)",
                    step + 1, loss, loss / flat, flat, times_pw);
        return 0;
    }
    const double reference = explosion_reference(t);
    if (loss > WC_LOSS_HIGH * reference && !(loss > WC_LOSS_EXPLODED * reference)) {
        if (t->rank == 0 && !t->said_loss_high) {
            char change[240];
            options_to_change(t, change, sizeof change);
            wc_warn("step %ld: the training loss rose to %.4g nats per pixel, more than %g times "
                    "the %.3g of an untrained network or the run's first step: the rate may be "
                    "throwing the weights off (or its patches hold values far outside the "
                    "training range); %g times stops the run; if validation's AUC-PR does not "
                    "recover, %s; said once a session",
                    step + 1, loss, WC_LOSS_HIGH, reference, WC_LOSS_EXPLODED, change);
        }
        t->said_loss_high = 1;
        return 0;
    }
    if (!(loss > WC_LOSS_EXPLODED * reference)) return 0;
    const int outlier = lowest_outlier(t, t->dec.step_outlier); /* collective, as decided */
    if (outlier >= 0) {
        if (t->rank == 0 && !t->said_outlier_loss) {
            const int band = t->ds->feat_bands[outlier];
            wc_warn("step %ld: the training loss is %.4g nats per pixel, more than 100 times "
                    "the %.3g of an untrained network or the run's first step, on patches that "
                    "hold values beyond %g training standard deviations of their band's mean "
                    "(first of them %s, band %d (%s)): an undeclared nodata or fill value? The "
                    "data's doing, not the rate's; declare the band's nodata (gdal_edit.py "
                    "-a_nodata) or mask those values; said once a session",
                    step + 1, loss, reference, (double)WC_INFER_ORDINARY, t->ds->tiles_path, band,
                    t->ds->files.src.bands[band - 1].name);
        }
        t->said_outlier_loss = 1;
        return 0;
    }
    /* one step's loss is one batch's: at batch 1 one patch can cost 726 nats and the next
     * 1e-8 (unet-lite at --lr 1e-2); weights thrown off stay off, so a divergence is a second
     * exploded step within three */
    const long before = t->exploded_step;
    t->exploded_step = step;
    if (before < 0 || step - before > 2) {
        if (t->rank == 0 && !t->said_exploded)
            wc_warn("step %ld: the training loss exploded to %.4g nats per pixel, more than 100 "
                    "times the %.3g of an untrained network (ln 2%s) or the run's first step: "
                    "a second such step within three stops the run; said once a session",
                    step + 1, loss, reference, times_pw);
        t->said_exploded = 1;
        return 0;
    }
    t->diverged_weights[0] = step, t->diverged_weights[1] = before;
    if (t->rank == 0)
        say_diverged(t,
                     "step %ld: training diverged: the loss exploded to %.4g nats per pixel, "
                     "more than 100 times the %.3g of an untrained network (ln 2%s) or the "
                     "run's first step, as in step %ld: the updates threw the weights far off; "
                     "this step was not applied and nothing of it was saved",
                     step + 1, loss, reference, times_pw, before + 1);
    return 1;
}

/* One optimizer step: this rank's micro-batches, the exact reduction, the update. Returns
 * WC_ERR (on every rank alike) when training diverged or a rank could not read its patches. */
static int train_step(train_ctx *t, long step) {
    int lo, hi, taken = 0;
    wc_schedule_micro_batches(&t->sched, step, &lo, &hi);
    int unread = 0; /* a micro-batch could not be read */
    for (int j = lo; j < hi && !unread; j++) {
        if (step == t->poison_step && t->poison_kind == 'r' && j == lo) {
            wc_error("step %ld: micro-batch %d could not be read (WILDCPU_TEST_POISON)", step + 1,
                     j + 1);
            unread = 1;
            break;
        }
        unread = !(t->ra.held[j - lo] = take(t, (wc_work){.step = step, .j = j}));
        taken++;
    }
    /* a rank that could not read computes nothing and says so in the step's reduction: every
     * rank ends the run at this step, with its report, rather than this one aborting the job */
    if (unread) wc_error("step %ld: reading training patches failed (see above)", step + 1);
    /* a fresh run's scales come from micro-batch 0, which its owner computes first (lo == 0;
     * with fewer micro-batches than ranks that need not be rank 0) */
    const int root = wc_schedule_rank_of(&t->sched, step, 0);
    wc_step_totals tot;
    int rc;
    for (;;) {
        double t0 = wc_now();
        t->dec.step_outlier = -1;
        wc_reducer_begin(t->red);
        if (unread) wc_reducer_fail(t->red);
        compute_micro_batches(t, step, lo, unread ? lo : hi, root);
        double t1 = wc_now();
        /* a timed checkpoint: rank 0's clock decides, everyone follows */
        int ckpt_vote =
            t->rank == 0 && t->ckpt.interval > 0 && wc_now() - t->ckpt.last >= t->ckpt.interval;
        rc = wc_reducer_finish(t->red, t->net->grads, wc_stop_requested(), ckpt_vote, &tot);
        t->sum.compute_seconds += t1 - t0;
        t->sum.reduce_seconds += wc_now() - t1;
        if (rc != WC_REDUCE_REDO) break;
        if (step > t->start_step)
            wc_info("step %ld: a gradient outgrew its fixed-point scale; recomputing the step "
                    "with rescaled gradients",
                    step + 1);
        t->sum.redo_steps++;
    }
    for (int j = 0; j < taken; j++) wc_reader_release(t->ra.rd);
    if (rc == WC_REDUCE_FAILED) return WC_ERR; /* the ranks that failed said why */
    if (rc == WC_REDUCE_DIVERGED) {
        report_divergence(t, step, &tot, -1);
        return WC_ERR;
    }
    /* A batch without a valid pixel (every rank alike) has no loss and a zero gradient: its
     * samples, each from a kept patch, were shifted or turned onto nodata (a patch half valid,
     * shifted by half a patch). The step is taken all the same, so that steps and optimizer
     * steps stay one (a checkpoint's invariant) on every number of ranks. */
    const double loss = tot.valid_pixels > 0 ? tot.loss_sum / (double)tot.valid_pixels : NAN;
    if (tot.valid_pixels == 0)
        say_no_valid_pixel(t, step);
    else if (loss_exploded(t, step, loss))
        return WC_ERR;
    const double lr = wc_optim_lr(&t->opt->cfg, t->opt->step);
    int bad =
        wc_optim_step(t->opt, t->net->params, t->net->grads, t->net->tensors, t->net->ntensors);
    if (bad >= 0) {
        report_divergence(t, step, &tot, bad);
        return WC_ERR;
    }
    if (tot.valid_pixels > 0) t->sum.last_loss = loss;
    t->sum.steps_done++;
    t->sum.samples_done += (long)tot.samples;
    wc_trainlog_step(t->log, step, loss, lr, (long)tot.samples);
    /* The decision is the vote, never this rank's own flag: a signal that lands after the
     * reduction is counted in the next step's vote, so all ranks stop at the same step. */
    t->ckpt.stop_agreed = tot.stop_votes > 0;
    t->ckpt.time_due = tot.ckpt_votes > 0;
    return WC_OK;
}

/* ---- validation -------------------------------------------------------------------------- */

/* Validation runs the map's own computation (infer.h) over whole validation blocks, so its
 * metrics are those of the map on the same pixels, bitwise: the pixels of the kept patches of
 * validation blocks whose features and label are valid. Each rank takes a contiguous share of
 * the blocks; ranks agree on a stop signal after every block of the largest share (one window
 * of a block is a fraction of a second), never by time. */

/* Validation after `step` (validation.h), then its figures into the summary and the log.
 * WC_VALIDATION_DIVERGED on every rank alike when the network's output was not finite,
 * WC_VALIDATION_FAILED when a rank could not read its blocks (it said why). */
static int validate(train_ctx *t, long step) {
    /* no validation patches (every rank alike): nothing to score, and nothing to pay for; the
     * empty pass still cleared and summed the histograms (2 x 3.9 MiB), 30% of a small run */
    if (t->ds->nval == 0) return WC_VALIDATION_DONE;
    const double t0 = wc_now();
    wc_metrics m, om;
    const int rc = wc_validation_run(&t->val, step + 1, t->net->params, &m, &om);
    t->sum.val_seconds += wc_now() - t0;
    if (rc == WC_VALIDATION_STOPPED || rc == WC_VALIDATION_FAILED) return rc;
    if (rc == WC_VALIDATION_DIVERGED && t->val.bad_ordinary == 0 && t->val.bad_outlier >= 0) {
        /* every broken pixel lies in a window of values far outside the training range, which
         * a lower rate would not change: the data's doing, said as such (predict says the same
         * of such pixels, report_invalid) */
        const wc_dataset *ds = t->ds;
        const int c = t->val.bad_outlier, band = ds->feat_bands[c];
        if (t->rank == 0)
            wc_error("validation after step %ld: the network's output is not finite on %lld "
                     "pixels, each near values of its features beyond %g training standard "
                     "deviations of their mean (first of them %s, band %d (%s)): the validation "
                     "blocks hold values far outside the training range (an undeclared nodata "
                     "such as -3.4e38? see the warnings above), not a divergence of training, "
                     "which a lower --lr would not change; declare the band's nodata "
                     "(gdal_edit.py -a_nodata) or mask those values, and rerun with --fresh; "
                     "nothing of this validation was logged or saved",
                     step + 1, (long long)m.bad_outputs, (double)WC_INFER_ORDINARY, ds->tiles_path,
                     band, ds->files.src.bands[band - 1].name);
        return rc;
    }
    if (rc == WC_VALIDATION_DIVERGED) {
        if (t->rank == 0)
            say_diverged(t,
                         "validation after step %ld: the network's output is not finite on %lld "
                         "pixels: training diverged; nothing of this validation was logged or "
                         "saved",
                         step + 1, (long long)m.bad_outputs);
        return rc;
    }
    const int with_oracle = t->ds->oracle_path != NULL;
    t->sum.val = m;
    t->sum.have_val = t->ds->nval > 0, t->sum.val_earlier = 0;
    /* said at the first validation: the oracle's metrics are over fewer pixels than the model's */
    if (with_oracle && om.bad_outputs && !t->sum.have_oracle && t->rank == 0)
        wc_warn("oracle %s has no probability in [0, 1] at %s%lld %svalidation pixels (nodata, "
                "masked, or out of range): its metrics leave them out, the model's do not%s",
                t->ds->oracle_path, om.pixels == 0 ? "any of the " : "", (long long)om.bad_outputs,
                om.pixels == 0 ? "" : "of the ",
                om.pixels == 0 ? "; it has no figures (is it this region's oracle?)" : "");
    /* this validation's oracle alone: a session resumed without one (--oracle '') must not pair
     * its metrics with the oracle's of the checkpoint's earlier validation in the report */
    if (with_oracle) t->sum.oracle = om;
    t->sum.have_oracle = with_oracle && t->ds->nval > 0; /* no validation: no pixel scored */
    if (t->sum.have_val)
        wc_trainlog_validation(t->log, step, &t->sum.val, with_oracle ? &t->sum.oracle : NULL);
    if (t->val.beyond_range > 0 && !t->range_warned) {
        t->range_warned = 1; /* on every rank (the count is summed), so only the first is said */
        if (t->rank == 0)
            wc_warn("validation after step %ld: %lld labelled pixels of its blocks are left out "
                    "of its metrics (as if nodata): a feature's value there is beyond float's "
                    "range once normalized by the training's mean and std (an undeclared nodata "
                    "such as -3.4e38? see the warning about huge values above); declare the "
                    "band's nodata (gdal_edit.py -a_nodata) or mask them; said once a run",
                    step + 1, (long long)t->val.beyond_range);
    }
    char ties[512];
    if (t->sum.have_val && !t->ties_warned && wc_metrics_ties_note(&m, ties, sizeof ties)) {
        t->ties_warned = 1; /* on every rank, so that only the first is said */
        if (t->rank == 0) wc_warn("validation after step %ld: %s; said once a run", step + 1, ties);
    }
    if (t->sum.have_val && !wc_metrics_can_rank(&m) && m.pixels > 0 && !t->one_class_warned) {
        t->one_class_warned = 1;
        if (t->rank == 0)
            wc_warn("validation after step %ld: %s of its %lld pixels is burned, so AUC-PR "
                    "cannot rank models (it is %s for any model): " WC_CKPT_BEST " is not chosen "
                    "by it, and the map comes from the newest checkpoint; check the labels, or "
                    "move the validation blocks (--val-block, --seed); said once a run",
                    step + 1, m.positives == 0 ? "none" : "every one", (long long)m.pixels,
                    m.positives == 0 ? "undefined" : "1");
    }
    return rc;
}

/* ---- checkpoints and resume -------------------------------------------------------------- */

/* ---- setup ------------------------------------------------------------------------------- */

/* Logs the memory plan per rank (t->plan, checked against what was built); returns training's
 * part (planning's peak has passed). */
static size_t print_plan(train_ctx *t, size_t baseline) {
    const train_plan *p = &t->plan;
    /* what was built is what was planned, and checked the room for */
    wc_memory_plan mp, vp;
    wc_net_memory_plan(t->net, &mp);
    wc_net_memory_plan(t->val.inf.net, &vp);
    WC_ASSERT(memcmp(&mp, &p->net, sizeof mp) == 0 && memcmp(&vp, &p->val.net, sizeof vp) == 0);
    WC_ASSERT(wc_optim_state_bytes(t->opt) == p->optim &&
              wc_reader_bytes_held(t->ra.rd) == p->read_ahead);
    char a[17][32], mosaic[160] = "";
    if (p->mosaic > 0)
        snprintf(mosaic, sizeof mosaic,
                 " and the mosaic's description, %s per reading handle (%d) and %s more while "
                 "one opens",
                 wc_fmt_bytes(a[15], 32, (double)p->mosaic), p->handles,
                 wc_fmt_bytes(a[16], 32, (double)p->mosaic_opening));
    wc_info("memory plan per rank: parameters %s, gradients %s, optimizer state %s, activations "
            "%s (micro-batch %d of %dx%d), workspace %s, reducer %s, checkpoint buffers %s, data "
            "held %s (read-ahead %d slots of %d patches, validation histograms), validation "
            "network %s (%" PRId64 "x%" PRId64 " windows) = %s, plus "
            "%s runtime (libraries, metadata: measured), GDAL's block cache (up to %s) and the "
            "files GDAL holds open, %s (up to %d x %s: measured on one)%s; planning held %s at "
            "its peak (freed before training)",
            wc_fmt_bytes(a[0], 32, (double)p->net.params),
            wc_fmt_bytes(a[1], 32, (double)p->net.grads), wc_fmt_bytes(a[2], 32, (double)p->optim),
            wc_fmt_bytes(a[3], 32, (double)p->net.activations), t->cfg->micro_batch, t->ds->P,
            t->ds->P, wc_fmt_bytes(a[4], 32, (double)p->net.workspace),
            wc_fmt_bytes(a[5], 32, (double)p->reducer), wc_fmt_bytes(a[9], 32, (double)p->ckpt),
            wc_fmt_bytes(a[6], 32, (double)p->data), t->cfg->prefetch, t->cfg->micro_batch,
            wc_fmt_bytes(a[11], 32, (double)p->val.bytes), t->val.inf.Tx, t->val.inf.Ty,
            wc_fmt_bytes(a[7], 32, (double)p->total), wc_fmt_bytes(a[8], 32, (double)baseline),
            wc_fmt_bytes(a[10], 32, (double)wc_raster_cache_max()),
            wc_fmt_bytes(a[13], 32, (double)p->files), p->open_files,
            wc_fmt_bytes(a[14], 32, (double)p->per_file), mosaic,
            wc_fmt_bytes(a[12], 32, (double)t->ds->plan_peak_bytes));
    t->sum.gdal_files_bytes = p->files;
    /* the run's peak is training's or planning's, whichever is larger */
    t->sum.planned_bytes = WC_MAX(p->total, (size_t)t->ds->plan_peak_bytes);
    t->sum.baseline_bytes = baseline;
    return p->total;
}

/* Collective: refuses (usage error) a run whose memory plan, summed over the ranks of a
 * machine, exceeds the machine's physical memory: the options decide most of it (the read-ahead
 * alone is --prefetch slots of --micro-batch patches), and a plan that cannot fit would only end
 * in the kernel's out-of-memory killer, hours in. */
static int plan_fits_memory(const train_ctx *t, size_t training_bytes) {
    const uint64_t need = (uint64_t)training_bytes + t->sum.baseline_bytes + wc_raster_cache_max() +
                          t->sum.gdal_files_bytes;
    int speaks;
    const uint64_t here = wc_dist_host_sum_u64(need, &speaks);
    const uint64_t phys = wc_physical_memory_bytes();
    const int too_big = phys > 0 && here > phys;
    /* the cause named is the largest part: GDAL's block cache (as GDAL_CACHEMAX sets it), the
     * read-ahead, or the rest (the network's parameters, activations and buffers, the runtime) */
    const size_t cache = wc_raster_cache_max(), ahead = wc_reader_bytes_held(t->ra.rd);
    const uint64_t rest = need - WC_MIN(need, (uint64_t)cache + ahead);
    if (too_big && speaks) {
        char a[32], b[32], c[32], d[32], cause[512];
        if (cache > ahead && cache > rest && getenv("GDAL_CACHEMAX"))
            snprintf(cause, sizeof cause,
                     "GDAL's block cache holds %s of it, as GDAL_CACHEMAX sets it: lower "
                     "GDAL_CACHEMAX (or unset it: wildcpu sizes the cache to its reads)",
                     wc_fmt_bytes(d, sizeof d, (double)cache));
        else if (ahead >= rest)
            snprintf(cause, sizeof cause,
                     "the read-ahead holds %s of it (%d slots of --micro-batch %d patches): %s",
                     wc_fmt_bytes(d, sizeof d, (double)ahead), t->cfg->prefetch,
                     t->cfg->micro_batch, t->ra.advice);
        else
            snprintf(cause, sizeof cause,
                     "the rest of the plan (the network's parameters, activations and buffers, "
                     "the runtime) holds %s of it (--micro-batch %d of %dx%d): lower "
                     "--micro-batch or --patch, or use a smaller --model",
                     wc_fmt_bytes(d, sizeof d, (double)rest), t->cfg->micro_batch, t->ds->P,
                     t->ds->P);
        wc_error("the memory plan needs %s per rank (%s for the ranks on this machine), more "
                 "than its %s of physical memory; %s, or run fewer ranks per machine",
                 wc_fmt_bytes(a, sizeof a, (double)need),
                 wc_fmt_bytes(b, sizeof b, (double)WC_MAX(here, need)), /* the sum is capped */
                 wc_fmt_bytes(c, sizeof c, (double)phys), cause);
    }
    /* right before the first product: the room for OpenBLAS's buffers and GDAL's cache as it
     * fills, which the plan's check counted, is there still (what the libraries mapped since
     * may have taken it: OpenBLAS, out of room, would spin for ever) */
    wc_address_need late = {.threads = t->cfg->threads,
                            .when = "once training starts",
                            .advice = *t->memory_advice ? t->memory_advice : NULL,
                            .first_product = 1};
    wc_address_need_add(&late, cache, "GDAL's block cache as it fills");
    const int no_room = !too_big && wc_check_address_space(&late) != WC_OK;
    return wc_dist_any(too_big || no_room) ? WC_ERR : WC_OK;
}

/* One refusal's part of the warnings of say_sample_shares: how many, and where they went
 * (`bounds`: what a window must stay in, the raster or the patch grid). */
static void refusal_part(char *buf, size_t size, long off, long on_val, const char *what,
                         const char *bounds) {
    char a[96] = "", b[96] = "";
    if (off > 0) snprintf(a, sizeof a, "off the %s for %ld", bounds, off);
    if (on_val > 0) snprintf(b, sizeof b, "onto a validation block for %ld", on_val);
    snprintf(buf, size, "%s would reach %s%s%s", what, a, off > 0 && on_val > 0 ? " and " : "", b);
}

/* What to do about refusals off the raster (off) and onto validation blocks (on_val). */
static const char *refusal_advice(const wc_dataset *ds, long off, long on_val) {
    static char advice[320];
    const int vb = ds->cfg.val_block_px;
    if (off > 0 && on_val > 0)
        snprintf(advice, sizeof advice,
                 "the patch is large for the region and the validation blocks lie close to most "
                 "patches: a smaller --patch, or a larger --val-block than %d px (fewer, larger "
                 "blocks have fewer edges)",
                 vb);
    else if (off > 0)
        snprintf(advice, sizeof advice,
                 "the %dx%d patch is large for the %dx%d region: a smaller --patch", ds->P, ds->P,
                 ds->width, ds->height);
    else
        snprintf(advice, sizeof advice,
                 "the validation blocks lie close to most patches: a larger --val-block than %d "
                 "px (fewer, larger blocks have fewer edges) or a smaller --patch",
                 vb);
    return advice;
}

/* How many of the first epoch's samples the jitter shifts and --rotate turns (rank 0), with a
 * warning for each that leaves most of them as they are, saying why. */
static void say_sample_shares(const train_ctx *t, const wc_sample_shares *sh) {
    const wc_dataset *ds = t->ds;
    if (sh->counted == 0 || (!sh->shifts && !sh->turns)) return;
    char shifted[96] = "", turned[96] = "", of[32];
    const double n = (double)sh->counted;
    snprintf(of, sizeof of, " of %ld", sh->counted); /* after the first figure */
    if (sh->shifts)
        snprintf(shifted, sizeof shifted, "%ld%s shifted (%.0f%%)", sh->shifted, of,
                 100.0 * (double)sh->shifted / n);
    if (sh->turns)
        snprintf(turned, sizeof turned, "%s%ld%s turned (%.0f%%)", sh->shifts ? ", " : "",
                 sh->turned, sh->shifts ? "" : of, 100.0 * (double)sh->turned / n);
    wc_info("training samples of the first epoch%s: %s%s",
            sh->counted < ds->ntrain ? " (an even spread of them)" : "", shifted, turned);
    char why[256];
    if (sh->shifts && 2 * sh->shifted < sh->counted) {
        refusal_part(why, sizeof why, sh->shift_off_raster, sh->shift_on_validation,
                     "the shifted patch", "patch grid");
        wc_warn("the jitter shifts only %ld of the first epoch's %ld training samples (%.0f%%): "
                "%s; %s",
                sh->shifted, sh->counted, 100.0 * (double)sh->shifted / n, why,
                refusal_advice(ds, sh->shift_off_raster, sh->shift_on_validation));
    }
    if (sh->turns && 2 * sh->turned < sh->counted) {
        char what[96];
        snprintf(what, sizeof what, "the turned window (up to %dx%d px)", ds->turn_side,
                 ds->turn_side);
        refusal_part(why, sizeof why, sh->turn_off_raster, sh->turn_on_validation, what, "raster");
        wc_warn("--rotate %g turns only %ld of the first epoch's %ld training samples (%.0f%%), "
                "the others stay unturned: %s; %s",
                ds->cfg.turn_deg, sh->turned, sh->counted, 100.0 * (double)sh->turned / n, why,
                refusal_advice(ds, sh->turn_off_raster, sh->turn_on_validation));
    }
}

/* The logistic baseline is convex: it has its own schedule, with which 12 epochs reach its
 * optimum (docs/quality.md): AdamW at lr 0.05 (5e-4 would leave it short of it), the decay
 * ending at 0.05 of the peak (the rate falling is what settles a convex model). */
static int is_baseline(const wc_train_config *cfg) {
    return strcmp(cfg->model, "logistic") == 0;
}

/* Fewer optimizer steps than this in a run that --epochs sizes get a note at start-up. */
#define FEW_STEPS 200

/* A run of little ground at the default batch takes a few dozen optimizer steps and ends far
 * from trained, with nothing in its log to say so: on one 1024 x 1024 region, 12 epochs at
 * batch 32 are 72 steps and map unseen ground at 0.61 of the oracle's AP; the one-region
 * options, batch 4 foremost (648 steps), 0.80 (README, "How good is the map?"). A note, not a
 * warning: nothing is wrong. Not for --steps (the user chose the count) nor for the logistic
 * baseline (convex, on its own schedule). */
static void say_if_few_steps(const train_ctx *t) {
    const wc_train_config *cfg = t->cfg;
    if (t->total_steps >= FEW_STEPS || cfg->steps > 0 || is_baseline(cfg)) return;
    char smaller[96] = "";
    if (cfg->batch > 4)
        snprintf(smaller, sizeof smaller,
                 "a smaller --batch (4, with --micro-batch 2, mapped best), ");
    wc_info("note: %ld optimizer step%s in all (%ld per epoch at batch %d): the model may end far "
            "from trained on this little ground; %smore --epochs or more ground train it further "
            "(README, \"How good is the map?\")",
            t->total_steps, t->total_steps > 1 ? "s" : "", t->sched.steps_per_epoch, cfg->batch,
            smaller);
}

static void print_setup(const train_ctx *t, double prior, const wc_sample_shares *shares) {
    if (t->rank != 0) return;
    const wc_train_config *cfg = t->cfg;
    const wc_dataset *ds = t->ds;
    char crs[160];
    wc_raster_crs_describe(ds->files.src.wkt, crs, sizeof crs);
    wc_info("data: %s, %dx%d px, %s, %d features (%s), labels from %s", cfg->data.tiles, ds->width,
            ds->height, crs, ds->nfeat, wc_dtype_name(ds->read_type),
            ds->label_path ? ds->label_path : ds->files.src.bands[ds->label_band - 1].name);
    wc_raster_warn_unplaced(&ds->files.src,
                            "the model learns no pixel size, so the rasters it maps later cannot "
                            "be checked against its scale, and a map of this one is placed "
                            "nowhere in a GIS");
    wc_info("patches: %ld of %dx%d on a %dx%d grid, %ld kept; %ld training, %ld validation "
            "(%ld of %ld blocks of %dx%d patches); %.2f%% of training pixels burned",
            ds->npatches, ds->P, ds->P, ds->cols, ds->rows, ds->ntrain + ds->nval, ds->ntrain,
            ds->nval, ds->nval_blocks, ds->nblocks, ds->val_block, ds->val_block, 100.0 * prior);
    if (cfg->data.val_fraction > 0 && ds->nval == 0)
        wc_warn("no validation: --val-fraction %g asks for it, but the raster's kept patches lie "
                "in %s validation block (--val-block %d px: %dx%d patches here), which must "
                "stay for training; no validation metrics and no " WC_CKPT_BEST ": a smaller "
                "--val-block gives the blocks to choose from",
                cfg->data.val_fraction, ds->nblocks > 1 ? "a single non-empty" : "one",
                cfg->data.val_block_px, ds->val_block, ds->val_block);
    if (prior <= 0 || prior >= 1)
        wc_warn("%s of the training pixels is burned: the model can learn nothing about where "
                "fire goes (its output only follows the base rate); check the labels (> 0 "
                "burned) and --label-band",
                prior <= 0 ? "none" : "every one");
    wc_info("augmentation: %s", ds->aug.summary);
    say_sample_shares(t, shares);
    const wc_optim_config *oc = &t->opt->cfg;
    char overlap[64] = "not overlapped (--no-overlap)";
    if (t->red->nbuckets > 0)
        snprintf(overlap, sizeof overlap, "overlapped with backward in %d bucket%s",
                 t->red->nbuckets, t->red->nbuckets > 1 ? "s" : "");
    wc_info("model %s: %zu parameters, %.3f GFLOP per sample per step; %d rank%s x %d "
            "thread%s; batch %d = %d micro-batch%s of %d; %ld step%s (%ld per epoch); %s "
            "lr %.3g, warmup %ld, cosine to %.3g x lr; %s reduction, %s",
            t->net->arch, t->net->nparams, 3 * t->net->flops_forward / 1e9, t->nranks,
            t->nranks > 1 ? "s" : "", cfg->threads, cfg->threads > 1 ? "s" : "", cfg->batch,
            t->red->max_micro_batches, t->red->max_micro_batches > 1 ? "es" : "", cfg->micro_batch,
            t->total_steps, t->total_steps > 1 ? "s" : "", t->sched.steps_per_epoch,
            oc->kind == WC_OPTIM_ADAMW ? "AdamW" : "SGD", oc->lr, oc->warmup_steps,
            oc->min_lr_ratio, cfg->fast_reduce ? "fast (float)" : "exact (fixed-point)", overlap);
    say_if_few_steps(t);
    char machine[400];
    wc_info("%s", wc_cpuinfo_describe(machine, sizeof machine));
    wc_cpuinfo_warn_ignored();
}

/* Every rank reads a --model file itself, so the ranks compare what they read, together, before
 * anything depends on it: a rank that alone could not read it returned before the others'
 * next collective, and they waited for it for ever; a rank whose copy differs (a node-local
 * copy out of date) built another network, which aborted in the reduction (MPI_ERR_TRUNCATE)
 * or, of the same size (one ReLU less), trained two networks as one, status 0, the checkpoint
 * claiming rank 0's. WC_EXIT_OK, or the status every rank ends with. */
static int agree_spec(const train_ctx *t, int status) {
    if (wc_dist_any(status != WC_EXIT_OK)) return WC_EXIT_USAGE; /* the rank that failed said */
    const size_t n = strlen(t->spec);
    uint64_t mine[2] = {n, wc_fnv1a64(t->spec, n)}, first[2] = {mine[0], mine[1]};
    wc_dist_bcast(first, sizeof first, 0);
    const int differs = mine[0] != first[0] || mine[1] != first[1];
    if (differs)
        wc_error("rank %d reads another --model %s than rank 0 (%zu bytes here, %" PRIu64
                 " there%s): every rank must read the same inputs (a node-local copy out of date, "
                 "a file system not yet in sync?)",
                 t->rank, t->cfg->model, n, first[0],
                 mine[0] == first[0] ? ", other contents" : "");
    return wc_dist_any(differs) ? WC_EXIT_RUNTIME : WC_EXIT_OK;
}

/* The spec --model names (a built-in name or a file), the same on every rank. WC_EXIT_OK or an
 * exit status. */
static int load_spec(train_ctx *t) {
    const wc_train_config *cfg = t->cfg;
    const char *builtin = wc_net_builtin_spec(cfg->model);
    char why[256];
    t->spec = builtin ? wc_strdup(builtin)
                      : wc_read_file_limited(cfg->model, WC_NET_MAX_SPEC, why, sizeof why);
    if (!t->spec)
        wc_error("--model %s: %s (a network spec file, or a built-in model: unet-lite, "
                 "logistic)",
                 cfg->model, why);
    return agree_spec(t, t->spec ? WC_EXIT_OK : WC_EXIT_USAGE);
}

/* The network's pooling alignment, which the data's patch grid and jitter follow. */
static int spec_alignment(const train_ctx *t, int *alignment) {
    wc_net_facts f;
    const int P = t->cfg->data.patch;
    /* the alignment first, at a size any pooling divides, so a --patch that is not a multiple of
     * it is named as such rather than as a layer's complaint (quiet: the spec's own errors come
     * again below, at the patch size) */
    enum { ANY_SIZE = 1 << 12 };
    const int was = wc_log_set_quiet(2);
    const int known = wc_net_describe(t->cfg->model, t->spec, 1, ANY_SIZE, ANY_SIZE, &f) == WC_OK;
    wc_log_set_quiet(was);
    if (known && f.alignment > 1 && P % f.alignment != 0) {
        const int lo = P / f.alignment * f.alignment, hi = lo + f.alignment;
        char either[32] = "";
        if (lo > 0) snprintf(either, sizeof either, "%d or ", lo);
        wc_error("--patch %d is not a multiple of %d, the alignment of %s's poolings: use "
                 "--patch %s%d",
                 P, f.alignment, t->cfg->model, either, hi);
        return WC_EXIT_USAGE;
    }
    if (wc_net_describe(t->cfg->model, t->spec, 1, P, P, &f) != WC_OK ||
        wc_net_check_output(t->cfg->model, t->spec) != WC_OK)
        return WC_EXIT_USAGE;
    *alignment = f.alignment;
    return WC_EXIT_OK;
}

static wc_sample sample_patch(const void *ds, uint32_t id, long epoch) {
    return wc_dataset_sample(ds, id, epoch);
}

/* The most steps a run may have: what --steps allows, also when --epochs decides. */
#define MAX_STEPS 1000000000L

/* Micro-batches of a step, and the most of them one rank runs. */
static int micro_batches(const wc_train_config *cfg) {
    return (cfg->batch + cfg->micro_batch - 1) / cfg->micro_batch;
}
static int local_micro_batches(const wc_train_config *cfg, int nranks) {
    return (micro_batches(cfg) + nranks - 1) / nranks;
}

/* The reader's slots: a step's own micro-batches stay held for a recomputation, plus as many
 * to read ahead (--prefetch, at least the first part). */
static int read_slots(const wc_train_config *cfg, int nranks) {
    const int held = local_micro_batches(cfg, nranks);
    return cfg->prefetch <= 0 ? 2 * held + 1 : WC_MAX(cfg->prefetch, held + 1);
}

double wc_train_lr(const wc_train_config *cfg) {
    if (cfg->optim.lr != 0) return cfg->optim.lr; /* 0: unset; any other value is checked */
    if (is_baseline(cfg) && cfg->optim.kind == WC_OPTIM_ADAMW) return 0.05;
    wc_optim_config kind_default;
    wc_optim_config_default(&kind_default, cfg->optim.kind);
    return kind_default.lr;
}

void wc_train_map_config(wc_predict_config *pc, const wc_train_config *cfg, char *risk, char *png,
                         size_t size) {
    snprintf(risk, size, "%s/" WC_RUNDIR_MAP, cfg->out_dir);
    snprintf(png, size, "%s/" WC_RUNDIR_PICTURE, cfg->out_dir);
    wc_predict_config_default(pc);
    pc->tiles = cfg->data.tiles;
    pc->checkpoint = cfg->out_dir;
    pc->out = risk;
    pc->png = png;
    pc->rerun = wc_rundir_rerun(cfg, "map");
    pc->tiles_checked = 1;
    pc->run_map = 1;
    pc->cog = cfg->cog;
    pc->classes = cfg->classes;
    pc->no_style = cfg->no_style;
    pc->threads = cfg->threads, pc->threads_from = cfg->threads_from;
}

double wc_train_lr_end(const wc_train_config *cfg) {
    if (cfg->optim.min_lr_ratio >= 0) return cfg->optim.min_lr_ratio;
    if (is_baseline(cfg)) return 0.05;
    wc_optim_config kind_default;
    wc_optim_config_default(&kind_default, cfg->optim.kind);
    return kind_default.min_lr_ratio;
}

double wc_train_peak_lr(const wc_train_config *cfg) {
    const double lr = wc_train_lr(cfg);
    return cfg->lr_scaling_linear ? lr * ((double)cfg->batch / (double)cfg->lr_ref_batch) : lr;
}

/* What lowers the read-ahead, as the memory checks advise it: --prefetch while it is above the
 * fewest slots a step needs, else only fewer micro-batches per rank and step (--batch, ranks).
 * `given` is --prefetch as the user gave it (0: the default). */
static void read_ahead_advice(const wc_train_config *cfg, int nranks, int given, char *buf,
                              size_t size) {
    const int held = local_micro_batches(cfg, nranks), fewest = held + 1;
    if (given <= 0 && 2 * held + 1 > fewest)
        snprintf(buf, size,
                 "the default --prefetch is %d (twice a step's %d micro-batches on a rank, and "
                 "one): give --prefetch %d, the fewest, or lower --batch",
                 2 * held + 1, held, fewest);
    else if (given > fewest)
        snprintf(buf, size,
                 "lower --prefetch (to %d at least: a step's %d micro-batches on a rank, and one) "
                 "or --batch",
                 fewest, held);
    else if (given > 0 && given < fewest)
        snprintf(buf, size,
                 "--prefetch %d was raised to %d, the fewest slots a step of %d micro-batches on "
                 "a rank needs: lower --batch, or run more ranks",
                 given, fewest, held);
    else
        snprintf(buf, size,
                 "%d slots are the fewest a step of %d micro-batches on a rank needs: lower "
                 "--batch, or run more ranks",
                 fewest, held);
}

/* The optimizer, the reducer and the schedule of the run. A usage error (after a message) when
 * what the options give together is out of the range each is held to alone. */
static int build_optimization(train_ctx *t) {
    const wc_train_config *cfg = t->cfg;
    const wc_dataset *ds = t->ds;
    long spe = wc_schedule_steps_per_epoch(ds->ntrain, cfg->batch);
    if (cfg->steps <= 0 && cfg->epochs > MAX_STEPS / spe) {
        wc_error("--epochs %ld of %ld steps each (%ld training patches, --batch %d) make more "
                 "than the %ld steps a run may have: lower --epochs or give --steps",
                 cfg->epochs, spe, ds->ntrain, cfg->batch, MAX_STEPS);
        return WC_EXIT_USAGE;
    }
    t->total_steps = cfg->steps > 0 ? cfg->steps : cfg->epochs * spe;
    wc_optim_config oc = cfg->optim;
    oc.lr = wc_train_peak_lr(cfg);
    if (!(oc.lr >= 1e-12 && oc.lr <= 100)) {
        wc_error("--lr %g scaled linearly by --batch %d / --lr-ref-batch %d gives %g, outside "
                 "1e-12 to 100: %s --lr, or --lr-scaling none",
                 wc_train_lr(cfg), cfg->batch, cfg->lr_ref_batch, oc.lr,
                 oc.lr > 100 ? "lower" : "raise");
        return WC_EXIT_USAGE;
    }
    oc.min_lr_ratio = wc_train_lr_end(cfg);
    oc.total_steps = t->total_steps;
    if (oc.warmup_steps < 0) oc.warmup_steps = WC_MIN(100, t->total_steps / 10);
    if (oc.warmup_steps > t->total_steps && t->rank == 0)
        wc_warn("--warmup %ld is longer than the run's %ld steps: the learning rate never "
                "reaches --lr (it ends at %.3g)",
                oc.warmup_steps, t->total_steps,
                oc.lr * (double)t->total_steps / (double)oc.warmup_steps);
    t->opt = wc_optim_create(&oc, t->net->nparams);
    t->red = wc_reducer_create(t->net, !cfg->fast_reduce, micro_batches(cfg));
    wc_reducer_set_overlap(t->red, !cfg->no_overlap);
    wc_schedule_init(&t->sched, ds->train, ds->ntrain, cfg->batch, cfg->micro_batch, t->rank,
                     t->nranks, cfg->seed, t->total_steps);
    wc_schedule_set_sampler(&t->sched, sample_patch, ds);
    return WC_EXIT_OK;
}

/* Buffers, the validation accumulators and the reader (collective: every rank learns whether
 * every reader opened its files). */
static int build_buffers(train_ctx *t, wc_train_config *cfg) {
    const size_t pp = (size_t)t->ds->P * t->ds->P, m = (size_t)cfg->micro_batch;
    t->dec.y = WC_ALLOC(sizeof(float) * m * pp);
    t->dec.valid = WC_ALLOC(m * pp);
    t->ra.samples = WC_ALLOC(sizeof(wc_sample) * m);
    t->ra.held = WC_CALLOC(t->ra.max_local + 1, sizeof(*t->ra.held));
    t->ra.rd = wc_reader_create(t->ds, cfg->prefetch, cfg->micro_batch);
    return wc_dist_any(t->ra.rd == NULL) ? WC_ERR : WC_OK;
}

/* What training allocates on this rank with micro-batches of mb samples, from the options, the
 * data and the spec alone: nothing of it is allocated. WC_ERR after logging when a network
 * cannot be built (the training one for the patches, validation's for its windows). */
static int plan_training(const train_ctx *t, int mb, train_plan *p) {
    const wc_dataset *ds = t->ds;
    memset(p, 0, sizeof *p);
    p->micro_batch = mb;
    if (wc_net_plan(t->cfg->model, t->spec, ds->nfeat, mb, ds->P, ds->P, WC_NET_TRAIN, &p->net) !=
            WC_OK ||
        wc_validation_plan(ds, t->cfg->model, t->spec, &p->val) != WC_OK)
        return WC_ERR;
    const size_t n = p->net.params / sizeof(float);
    const int adamw = t->cfg->optim.kind == WC_OPTIM_ADAMW;
    p->optim = p->net.params * (adamw ? 2 : 1);
    /* the exact sums in int64 (and the losses, counts and votes), the fast ones in float too */
    p->reducer = (n + 8) * sizeof(int64_t) + (t->cfg->fast_reduce ? n * sizeof(float) : 0);
    /* the checkpoint is serialized (raw, then compressed) before it is written, from rank 0's
     * background writer's snapshot copy (ckptbg.h) */
    p->ckpt = p->net.params * (adamw ? 3 : 2) * 3;
    wc_train_config c = *t->cfg;
    c.micro_batch = mb, c.prefetch = t->ra.prefetch_given;
    const size_t pp = (size_t)ds->P * ds->P;
    p->read_ahead = (size_t)read_slots(&c, t->nranks) * (size_t)mb * wc_dataset_patch_bytes(ds, 0);
    p->data = p->read_ahead + (size_t)mb * pp * (sizeof(float) + 1) + wc_metrics_acc_words() * 16;
    p->total = p->net.params + p->net.grads + p->net.activations + p->net.workspace + p->optim +
               p->reducer + p->ckpt + p->data + p->val.bytes;
    return WC_OK;
}

/* What a rank of the plan p maps once training starts, part by part, for the address-space
 * check. files: the files GDAL holds open (measured). */
static void training_need(const train_ctx *t, const train_plan *p, size_t files,
                          wc_address_need *need) {
    const wc_train_config *cfg = t->cfg;
    const int threads = cfg->threads;
    memset(need, 0, sizeof *need);
    need->threads = threads;
    /* the pools of the training and the validation networks, the reader, rank 0's writer */
    need->started = (threads - 1) * 2 + 1 + (t->rank == 0);
    need->when = "once training starts";
    wc_address_need_add(need, p->net.params + p->net.grads + p->net.activations + p->net.workspace,
                        "the network's parameters, gradients, activations and workspace "
                        "(--micro-batch %d of %dx%d)",
                        p->micro_batch, t->ds->P, t->ds->P);
    wc_address_need_add(need, p->optim + p->reducer + p->ckpt,
                        "the optimizer's state, the reducer and the checkpoint buffers");
    wc_train_config c = *cfg;
    c.micro_batch = p->micro_batch, c.prefetch = t->ra.prefetch_given;
    wc_address_need_add(need, p->data,
                        "the read-ahead (%d slots of %d patches) and a decoded "
                        "micro-batch",
                        read_slots(&c, t->nranks), p->micro_batch);
    wc_address_need_add(need, p->val.bytes,
                        "validation's network over %" PRId64 "x%" PRId64 " windows and its buffers",
                        p->val.Tx, p->val.Ty);
    wc_address_need_add(need, wc_raster_cache_max(), "GDAL's block cache");
    if (files) wc_address_need_add(need, files, "the files GDAL holds open");
}

/* What lowers what training maps, for the memory checks' messages: a smaller --micro-batch (at
 * most the largest that fits what the address-space limit leaves, when one does) and fewer
 * --threads. Empty when neither can. */
static void memory_advice(train_ctx *t, size_t files) {
    const wc_train_config *cfg = t->cfg;
    char mb[128] = "";
    const size_t left = wc_address_space_left();
    if (cfg->micro_batch > 1 && left != SIZE_MAX) {
        /* the largest micro-batch below this one whose plan fits (the plan grows with it), with
         * the margin of the limit's own advice */
        int lo = 0, hi = cfg->micro_batch - 1;
        while (lo < hi) {
            const int mid = lo + (hi - lo + 1) / 2;
            train_plan p;
            wc_address_need need;
            const int was = wc_log_set_quiet(2);
            const int planned = plan_training(t, mid, &p) == WC_OK;
            wc_log_set_quiet(was);
            if (planned) training_need(t, &p, files, &need);
            if (planned && wc_address_space_fits_advice(wc_address_need_bytes(&need)))
                lo = mid;
            else
                hi = mid - 1;
        }
        if (lo > 0)
            snprintf(mb, sizeof mb, "a --micro-batch of at most %d (now %d)", lo, cfg->micro_batch);
    }
    /* without a limit (the machine's memory runs out), any smaller one helps */
    if (cfg->micro_batch > 1 && left == SIZE_MAX)
        snprintf(mb, sizeof mb, "a smaller --micro-batch than %d", cfg->micro_batch);
    char th[64] = "";
    if (cfg->threads > 1) snprintf(th, sizeof th, "fewer --threads than %d", cfg->threads);
    snprintf(t->memory_advice, sizeof t->memory_advice, "%s%s%s", mb, *mb && *th ? ", or " : "",
             th);
}

/* The room for training's need and for the map drawn after it: a map that needs more than
 * training (windows far wider than the patches) would otherwise be refused only once training
 * has ended, hours later. The map is checked as it will be drawn: beside what training leaves
 * mapped (OpenBLAS's buffers, which its need counts as not yet mapped, and the libraries' share
 * of training's allocations). The larger of the two is checked first, so that a limit raised to
 * what a refusal names is enough for both. Collective. WC_OK or WC_ERR after a message. */
static int check_room_with_map(const train_ctx *t, const wc_address_need *need) {
    /* collective below: every rank takes the same way (a limit set on some ranks only, too) */
    if (t->cfg->no_predict || !wc_dist_any(wc_address_space_limit() != 0))
        return wc_check_address_space(need);
    char risk[4200], png[4200], advice[128];
    wc_predict_config pc;
    wc_train_map_config(&pc, t->cfg, risk, png, sizeof risk);
    wc_address_need map;
    if (wc_predict_map_need(&pc, &t->ds->files.src, t->cfg->model, t->spec, t->ds->nfeat,
                            t->ds->read_type, &map, advice) != WC_OK)
        return WC_ERR;
    wc_address_need_add(&map, WC_ADDRESS_SLACK, "what training leaves mapped");
    map.when = "once the end-of-run map's windows are computed (after training)";
    if (!map.advice)
        map.advice = "train with --no-predict and draw the map with `wildcpu predict` where the "
                     "limit is higher";
    if (wc_address_need_bytes(&map) > wc_address_need_bytes(need) &&
        wc_check_address_space(&map) != WC_OK)
        return WC_ERR;
    return wc_check_address_space(need);
}

/* Before anything of training is allocated: the plan, and under an address-space limit the
 * room for it, GDAL's cache and files, OpenBLAS's buffers and the threads' stacks, which a run
 * would otherwise find missing in its first allocation or product. Collective: WC_EXIT_OK, or
 * a usage error on every rank. */
static int plan_fits_address_space(train_ctx *t) {
    train_plan *p = &t->plan;
    if (wc_dist_any(plan_training(t, t->cfg->micro_batch, p) != WC_OK)) return WC_EXIT_USAGE;
    /* large for some layouts (pixel-interleaved blocks of many bands) */
    p->handles = t->ds->nval > 0 ? 2 : 1;
    p->files =
        wc_raster_open_files_bytes(&t->ds->files.src, p->handles, &p->open_files, &p->per_file);
    p->mosaic = wc_raster_mosaic_bytes(&t->ds->files.src, &p->mosaic_opening);
    p->files += p->mosaic * (size_t)p->handles + p->mosaic_opening;
    const size_t files = p->files;
    memory_advice(t, files);
    /* an allocation that fails later (a limit the plan could not foresee) advises the same */
    wc_alloc_set_advice(*t->memory_advice ? t->memory_advice : NULL);
    wc_address_need need;
    training_need(t, &t->plan, files, &need);
    need.advice = *t->memory_advice ? t->memory_advice : NULL;
    return wc_dist_any(check_room_with_map(t, &need) != WC_OK) ? WC_EXIT_USAGE : WC_EXIT_OK;
}

/* Opens the data, builds everything the run needs, resumes. WC_EXIT_OK or the exit status to
 * end with. */
static int setup(train_ctx *t, wc_train_config *cfg) {
    if (wc_dist_any(wc_check_threads(cfg->threads, cfg->threads_from) != WC_OK))
        return WC_EXIT_USAGE;
    wc_net_set_threads(cfg->threads); /* the network's own threads; OpenBLAS at one */
    wc_stop_install();                /* main installs it before MPI starts; idempotent */
    if (cfg->micro_batch < 1 || cfg->batch < cfg->micro_batch) {
        wc_error("--micro-batch (%d) must be between 1 and --batch (%d)", cfg->micro_batch,
                 cfg->batch);
        return WC_EXIT_USAGE;
    }
    snprintf(t->ckpt_dir, sizeof t->ckpt_dir, "%s/" WC_CKPT_DIR, cfg->out_dir);
    wc_data_config dcfg = cfg->data;
    dcfg.work_dir = cfg->out_dir;
    dcfg.seed = cfg->seed;
    dcfg.jitter = !cfg->no_jitter;
    dcfg.augment = cfg->augment;
    t->ra.max_local = local_micro_batches(cfg, t->nranks);
    read_ahead_advice(cfg, t->nranks, cfg->prefetch, t->ra.advice, sizeof t->ra.advice);
    t->ra.prefetch_given = cfg->prefetch;
    cfg->prefetch = read_slots(cfg, t->nranks);
    dcfg.read_slots = cfg->prefetch, dcfg.slot_patches = cfg->micro_batch;
    dcfg.read_advice = t->ra.advice;
    int status = load_spec(t);
    if (status == WC_EXIT_OK) status = spec_alignment(t, &dcfg.align);
    if (status != WC_EXIT_OK) return status;
    int opened = WC_EXIT_OK;
    t->ds = wc_dataset_open(&dcfg, &opened);
    /* Planning reads every patch's label once and may take minutes on a large mosaic: a stop
     * signal during it (it stops planning on every rank) ends the run here, with nothing new to
     * save. */
    if (wc_dist_any(opened == WC_EXIT_STOPPED || (t->ds && wc_stop_requested()))) {
        wc_info("stopped by a signal while planning the data, before any step: nothing new to "
                "save; rerun the same command to continue");
        wc_dist_agree_stop_origin(); /* every rank: DIR/STOPPED names the rank the signal reached */
        wc_stop_ignore_further();
        wc_rundir_mark_stopped(cfg, "planning");
        return WC_EXIT_STOPPED;
    }
    if (!t->ds) return opened;
    /* The runtime baseline: MPI, GDAL's drivers and PROJ's database, OpenBLAS, the dataset's
     * metadata; measured here, after planning released its GDAL handles, before any training
     * buffer is allocated (and after returning the planning pass's freed heap to the system). */
    malloc_trim(0);
    const size_t baseline = wc_current_rss_bytes();
    if (t->ds->ntrain < cfg->batch) {
        char held[160] = "";
        if (t->ds->nval > 0)
            snprintf(held, sizeof held, "; validation holds out %ld more (--val-fraction %g)",
                     t->ds->nval, cfg->data.val_fraction);
        wc_error("%s has %ld valid training patches of %dx%d, fewer than one batch (--batch %d)%s: "
                 "lower --batch, --patch%s, or give more data",
                 cfg->data.tiles, t->ds->ntrain, t->ds->P, t->ds->P, cfg->batch, held,
                 t->ds->nval > 0 ? " or --val-fraction" : "");
        return WC_EXIT_RUNTIME;
    }
    status = plan_fits_address_space(t);
    if (status != WC_EXIT_OK) return status;
    t->net = wc_net_create(cfg->model, t->spec, t->ds->nfeat, cfg->micro_batch, t->ds->P, t->ds->P,
                           WC_NET_TRAIN);
    if (!t->net) return WC_EXIT_USAGE;
    status = build_optimization(t);
    if (status != WC_EXIT_OK) return status;
    wc_train_ckpt_config_kv(t);
    const wc_dataset *ds = t->ds;
    double prior = ds->train_pixels > 0 ? (double)ds->train_positives / ds->train_pixels : 0.05;
    wc_net_init_params(t->net, cfg->seed, prior);
    if (wc_train_ckpt_resume(t) != WC_OK || build_buffers(t, cfg) != WC_OK) return WC_EXIT_RUNTIME;
    const int val = wc_validation_init(&t->val, t->ds, t->net->arch, t->spec, t->net->params);
    if (val != WC_OK) return val == WC_VALIDATION_NO_NETWORK ? WC_EXIT_USAGE : WC_EXIT_RUNTIME;
    wc_sample_shares shares;
    wc_dataset_sample_shares(t->ds, &shares);
    t->sum.shifted_fraction = shares.shifts ? (double)shares.shifted / shares.counted : NAN;
    t->sum.turned_fraction = shares.turns ? (double)shares.turned / shares.counted : NAN;
    print_setup(t, prior, &shares);
    if (plan_fits_memory(t, print_plan(t, baseline)) != WC_OK) return WC_EXIT_USAGE;
    /* the first file this run writes into DIR: what --fresh moves aside goes only now, when
     * nothing can refuse the run any more (resume ignores checkpoints under --fresh) */
    if (wc_train_ckpt_check_room(t) != WC_OK || wc_rundir_set_aside(cfg) != WC_OK)
        return WC_EXIT_RUNTIME;
    char split[4200];
    snprintf(split, sizeof split, "%s/split.tif", cfg->out_dir);
    if (wc_validation_write_split(t->ds, split) == WC_VALIDATION_STOPPED) {
        /* (a large raster's takes minutes) before any step, as a stop while planning */
        wc_info("stopped by a signal while writing %s, before any step: nothing new to save; "
                "rerun the same command to continue",
                split);
        wc_dist_agree_stop_origin(); /* every rank, as the solo's end told them all */
        wc_stop_ignore_further();
        wc_rundir_mark_stopped(cfg, "planning");
        return WC_EXIT_STOPPED;
    }
    t->log = wc_trainlog_open(cfg->out_dir, t->start_step, t->total_steps, t->sched.steps_per_epoch,
                              cfg->log_every);
    if (wc_dist_any(t->log == NULL)) return WC_EXIT_RUNTIME;
    wc_trainlog_resume_loss(t->log, t->resumed_loss_sum, t->resumed_loss_steps);
    wc_schedule_cursor_start(&t->ra.cursor, t->start_step);
    parse_poison(t);
    t->first_loss = NAN; /* loss_exploded's reference: a fresh run's first step */
    t->dec.step_outlier = -1;
    t->exploded_step = -1;
    wc_train_ckpt_start(t);
    return WC_EXIT_OK;
}

/* ---- the loop ---------------------------------------------------------------------------- */

/* A stop during the validation after the checkpoint's step left it undone: run it first (the
 * read-ahead cursor starts at that validation), as the uninterrupted run did. Sets *ran. */
static int run_pending_validation(train_ctx *t, int *ran) {
    *ran = 0;
    if (!t->val_pending) return WC_EXIT_OK;
    int v = validate(t, t->start_step - 1);
    if (v == WC_VALIDATION_STOPPED) {
        wc_info("stopped by a signal during the pending validation: the checkpoint is "
                "unchanged; %s to resume",
                wc_rundir_rerun(t->cfg, "training"));
        wc_dist_agree_stop_origin(); /* every rank: the validation's stop is agreed */
        wc_rundir_mark_stopped(t->cfg, "training");
    }
    if (v != WC_VALIDATION_DONE)
        return v == WC_VALIDATION_STOPPED ? WC_EXIT_STOPPED : WC_EXIT_RUNTIME;
    wc_train_ckpt_keep_if_best(t, t->start_step - 1);
    t->val_pending = 0;
    *ran = 1;
    return WC_EXIT_OK;
}

/* The loop failed (on every rank alike): the report says so and why, also when this session
 * trained no step, since an earlier session's report ("stopped") would describe a run that can
 * go on. */
static int loop_failed(train_ctx *t) {
    t->report_due = 1;
    return WC_EXIT_RUNTIME;
}

/* Steps from start_step to the end, with validation, checkpoints and stops. */
static int loop(train_ctx *t) {
    const wc_train_config *cfg = t->cfg;
    int ran_pending;
    t->t_loop = wc_now(); /* a pending validation is the loop's time, as it was the first run's */
    int status = run_pending_validation(t, &ran_pending);
    if (status == WC_EXIT_RUNTIME) return loop_failed(t);
    if (status != WC_EXIT_OK) return status;
    t->ckpt.last = wc_now();
    wc_trainlog_start(t->log);
    for (long step = t->start_step; step < t->total_steps; step++) {
        if (train_step(t, step) != WC_OK) return loop_failed(t);
        /* the block cache at its fullest, for the report's peak against the plan (its blocks
         * go when the files close, before the report) */
        t->gdal_cache_peak = WC_MAX(t->gdal_cache_peak, wc_raster_cache_used());
        int checked = 0; /* update_sane passed this step's weights: they may be saved */
        if (wc_schedule_ends_epoch(&t->sched, step)) {
            int v = validate(t, step);
            if (v == WC_VALIDATION_DIVERGED || v == WC_VALIDATION_FAILED) return loop_failed(t);
            if (v == WC_VALIDATION_DONE) {
                if (!update_sane(t, step)) return loop_failed(t);
                checked = 1;
                wc_train_ckpt_keep_if_best(t, step);
            }
            t->val_pending = v == WC_VALIDATION_STOPPED;
            t->ckpt.stop_agreed |= t->val_pending;
        }
        int due = (cfg->ckpt_every > 0 && (step + 1) % cfg->ckpt_every == 0) || t->ckpt.time_due;
        const int saving = t->ckpt.stop_agreed || due || step + 1 == t->total_steps;
        if (saving && !checked && !update_sane(t, step)) return loop_failed(t);
        if (t->ckpt.stop_agreed) return wc_train_ckpt_stop(t, step + 1);
        if (due && step + 1 < t->total_steps) wc_train_ckpt_interval(t, step + 1);
        if (t->rank == 0) wc_train_ckpt_take_background(t, 0);
    }
    wc_trainlog_break_line(t->log);
    /* A rerun of a finished training has nothing to add: its checkpoint and report stay as
     * they are (a pending final validation is the exception: it changes both). */
    if (t->start_step >= t->total_steps && !ran_pending) {
        /* ... unless the report is missing (its write failed, on a full disk say) or is an
         * earlier session's (the one that finished was killed before writing its own): the
         * rerun writes it, from the checkpoint's figures and its own */
        long said = -1;
        const int missing =
            t->rank == 0 ? wc_report_missing(cfg->out_dir, t->start_step, &said) : WC_OK;
        t->report_due = wc_dist_any(missing != WC_OK);
        char earlier[160], at[48] = "";
        if (said >= 0) snprintf(at, sizeof at, ", at step %ld", said);
        snprintf(earlier, sizeof earlier,
                 "; writing its report again (the one there is an earlier session's%s: the "
                 "session that finished did not write its own)",
                 at);
        wc_info("training already finished (%ld steps): keeping its checkpoint%s", t->total_steps,
                missing == WC_REPORT_MISSING   ? "; writing its missing report"
                : missing == WC_REPORT_EARLIER ? earlier
                : t->sum.best_lost ? " and report, which now says " WC_CKPT_BEST " is lost"
                                   : " and report");
        if (t->rank == 0 && !missing && t->sum.best_lost)
            wc_report_best_lost(cfg->out_dir, t->sum.best_lost_step);
        /* a --baseline given now would compare nothing that ran: said, not silently dropped */
        if (cfg->baseline && !t->report_due && t->rank == 0)
            wc_warn("--baseline %s: this run's report is kept as its training wrote it, without "
                    "the comparison (compare the two report.json files, or give --baseline to "
                    "a run that trains)",
                    cfg->baseline);
        return WC_EXIT_OK;
    }
    t->report_due |= ran_pending;
    return wc_train_ckpt_collective(t, t->total_steps, "end of training") == WC_OK
               ? WC_EXIT_OK
               : WC_EXIT_RUNTIME;
}

/* ---- teardown ---------------------------------------------------------------------------- */

/* The report (when this invocation did anything), then everything is released. Returns the
 * run's status: a report that could not be written fails a finished run. */
static int teardown(train_ctx *t, int status) {
    wc_run_summary *sum = &t->sum;
    sum->status = status;
    sum->map =
        status == WC_EXIT_OK && !t->cfg->no_predict ? WC_REPORT_MAP_PENDING : WC_REPORT_MAP_NONE;
    sum->wall_seconds = wc_now() - t->t_start;
    sum->train_seconds = sum->steps_done > 0 ? wc_now() - t->t_loop : 0;
    snprintf(sum->arch, sizeof sum->arch, "%s", t->net ? t->net->arch : t->cfg->model);
    if (t->ds) snprintf(sum->augmentation, sizeof sum->augmentation, "%s", t->ds->aug.summary);
    if (t->net) sum->flops_per_sample = 3 * t->net->flops_forward;
    sum->steps_total = t->total_steps;
    sum->start_step = t->start_step;
    sum->steps_per_epoch = t->sched.steps_per_epoch;
    sum->val_patches = t->ds && t->ds->nval > 0;
    sum->best_step = t->best.step, sum->best_auc_pr = t->best.auc_pr;
    const int unsaved = t->best.unsaved_auc_pr > t->best.auc_pr; /* not beaten since */
    sum->best_unsaved_step = unsaved ? t->best.unsaved_step : -1;
    sum->best_unsaved_auc_pr = t->best.unsaved_auc_pr;
    sum->gdal_cache_bytes = WC_MAX(t->gdal_cache_peak, wc_raster_cache_used());
    if (t->ra.rd) {
        sum->io_wait_seconds = wc_reader_wait_seconds(t->ra.rd);
        sum->data_bytes = wc_reader_bytes_held(t->ra.rd);
        wc_reader_counts(t->ra.rd, &sum->patches_read, &sum->bytes_read);
    }
    /* a background write still running is finished (and logged) before anything goes */
    wc_train_ckpt_finish(t);
    if (t->rank == 0) sum->newest_ckpt_step = wc_rundir_newest_step(t->cfg);
    if ((sum->steps_done > 0 || t->report_due) &&
        wc_report_finish(sum, t->cfg->out_dir, t->cfg->baseline) != WC_OK && status == WC_EXIT_OK)
        status = WC_EXIT_RUNTIME;
    wc_trainlog_close(t->log);
    wc_reader_destroy(t->ra.rd);
    wc_schedule_free(&t->sched);
    free(t->dec.y), free(t->dec.valid);
    free(t->ra.samples), free((void *)t->ra.held);
    wc_validation_free(&t->val);
    wc_reducer_destroy(t->red);
    wc_optim_destroy(t->opt);
    wc_net_destroy(t->net);
    wc_dataset_close(t->ds);
    free(t->spec);
    return status;
}

int wc_train_run(const wc_train_config *cfg_in) {
    wc_train_config cfg = *cfg_in; /* setup fills in what is automatic (--prefetch) */
    train_ctx tc = {.cfg = &cfg, .rank = wc_dist_rank(), .nranks = wc_dist_size()};
    train_ctx *t = &tc;
    t->t_start = wc_now();
    t->best.auc_pr = -1, t->best.step = -1;
    t->best.unsaved_auc_pr = -1, t->best.unsaved_step = -1;
    t->best.resumed_auc_pr = -1, t->best.resumed_step = -1;
    t->sum.ranks = t->nranks, t->sum.threads = cfg.threads;
    t->sum.batch = cfg.batch, t->sum.micro_batch = cfg.micro_batch;
    t->sum.shifted_fraction = t->sum.turned_fraction = NAN; /* until the data is planned */
    t->sum.last_loss = NAN; /* none until a step has a valid pixel (report.json: null) */
    int status = setup(t, &cfg);
    if (status == WC_EXIT_OK) status = loop(t);
    return teardown(t, status);
}
