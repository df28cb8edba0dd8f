/* train_ctx.h: the state of one training run, shared by the two halves of the training driver
 * and private to them: train.c (set-up, the step, validation, the loop, teardown) and
 * train_ckpt.c (checkpoints: when, what they hold, resume, best.wcp, the stop). Nothing outside
 * these two files includes it; wc_train_run (train.h) is the way in. */
#ifndef WILDCPU_TRAIN_CTX_H
#define WILDCPU_TRAIN_CTX_H

#include <stdint.h>

#include "wildcpu/ckptbg.h"
#include "wildcpu/dataset.h"
#include "wildcpu/net.h"
#include "wildcpu/optim.h"
#include "wildcpu/reader.h"
#include "wildcpu/reduce.h"
#include "wildcpu/report.h"
#include "wildcpu/schedule.h"
#include "wildcpu/train.h"
#include "wildcpu/trainlog.h"
#include "wildcpu/validation.h"

/* Reading ahead: the reader thread fills slots in the order the cursor walks this rank's
 * requests; a step's own batches stay held until its reduction is final (a recomputation reads
 * them again). */
typedef struct {
    wc_reader *rd;
    wc_schedule_cursor cursor;
    wc_sample *samples;         /* (micro_batch) one request's samples */
    const wc_read_batch **held; /* (max_local) this step's batches */
    int max_local;              /* most micro-batches a rank gets in a step */
    int prefetch_given;         /* --prefetch as given (0: the default) */
    char advice[256];           /* what lowers the read-ahead, for a plan too large */
} read_ahead;

/* What a micro-batch decodes into, besides the network's input. */
typedef struct {
    float *y;           /* (micro_batch, P, P) labels */
    uint8_t *valid;     /* (micro_batch, P, P) */
    int n;              /* the samples decoded last, still in the network's input (0: none yet) */
    double loss_before; /* the loss (summed) of the last micro-batch, with the weights before
                         * the step's update: update_sane compares the new weights' */
    int step_outlier;   /* the first feature (index) with values beyond WC_INFER_ORDINARY training
                         * standard deviations in this rank's micro-batches of the step whose loss
                         * exploded (-1: none; input_outlier) */
} decoded;

/* When to checkpoint and stop: decided by votes that ride the step's reduction. */
typedef struct {
    double interval; /* seconds between timed checkpoints; 0: none */
    int adaptive;    /* the default interval: follows the background writes' cost */
    double last;     /* when the last one was written */
    int time_due;    /* rank 0 voted for a timed checkpoint in the last step */
    int stop_agreed; /* some rank voted to stop in the last step */
} ckpt_policy;

/* What a rank allocates for training, planned before any of it is, so that the room for it is
 * checked first (an address-space limit); what is then built is checked against it. Bytes. */
typedef struct {
    int micro_batch;
    wc_memory_plan net;      /* the training network */
    size_t optim, reducer;   /* the optimizer's moments, the reducer's sums */
    size_t ckpt;             /* checkpoint buffers: a snapshot, serialized, compressed */
    size_t read_ahead;       /* the reader's slots */
    size_t data;             /* the read-ahead, a decoded micro-batch, the histograms */
    wc_infer_plan_bytes val; /* validation's window network and buffers (0: no validation) */
    size_t total;            /* all of the above */
    /* what GDAL holds for the reader's handle and validation's, outside the heap the plan
     * counts: the files it holds open (measured on one, wc_raster_open_files_bytes) and a VRT
     * mosaic's own description, per handle and while one opens (wc_raster_mosaic_bytes);
     * files is their total */
    size_t files, per_file, mosaic, mosaic_opening;
    int open_files, handles;
} train_plan;

typedef struct {
    const wc_train_config *cfg;
    int rank, nranks;
    char ckpt_dir[4200];
    /* the run's objects */
    wc_dataset *ds;
    wc_net *net;
    wc_optim *opt;
    wc_reducer *red;
    wc_ckptbg *bg; /* rank 0's background checkpoint writer */
    wc_schedule sched;
    wc_trainlog *log;
    long total_steps, start_step;
    /* from the checkpoint resumed: the loss of its steps since the last progress line */
    double resumed_loss_sum;
    long resumed_loss_steps;
    read_ahead ra;
    decoded dec;
    wc_validation val;
    int val_pending;          /* the last epoch's validation was cut short by a stop */
    int ties_warned;          /* a validation's metrics were mostly ties, said once a run */
    int one_class_warned;     /* validation labels all burned or none: said once a run */
    int range_warned;         /* validation pixels beyond float's range left out: said once a run */
    int said_no_valid_pixel;  /* a batch without a valid pixel: said once a run */
    int said_loss_high;       /* a loss above WC_LOSS_HIGH times the reference: once a session */
    int said_outlier_loss;    /* an exploded loss blamed on values far outside the training
                               * range: said once a session */
    double first_loss;        /* a fresh run's first step's loss (NaN before it; 0 resumed):
                               * loss_exploded's reference */
    long diverged_weights[2]; /* exploded losses found the weights of these steps'
                               * checkpoints diverged (their numbers of steps; 0: none):
                               * describe_kept sets them aside (a NaN may be the data's or a
                               * fault's: not set aside) */
    long exploded_step;       /* the last step (index) whose loss exploded, -1: none */
    int said_exploded;        /* a first exploded step: said once a session */
    int diverged_as_initialized; /* the loss or gradient of the first update, before any */
    int kernels_mixed;           /* some rank computes with other kernels than rank 0 (agree.h) */
    ckpt_policy ckpt;
    struct {
        double auc_pr;         /* the best validation AUC-PR so far, -1 before the first */
        long step;             /* the step best.wcp holds */
        double unsaved_auc_pr; /* the best validation whose best.wcp write failed, -1: none */
        long unsaved_step;
        /* the best the checkpoint resumed from knows: what a checkpoint of a step before a
         * later best.wcp adopted at the resume (check_best) records, as of its own step */
        double resumed_auc_pr;
        long resumed_step;
    } best;
    train_plan plan;         /* what training allocates, planned before it is */
    char memory_advice[160]; /* what lowers it, for the memory checks' messages */
    wc_run_summary sum;      /* the report's figures, kept up to date as the run goes */
    char *spec;              /* the network spec text */
    double t_start, t_loop;
    size_t gdal_cache_peak; /* GDAL's block cache at its fullest, sampled after each step */
    int report_due;         /* the report changes even without a step (a pending validation ran) */
    char config_kv[2048];
    long poison_step; /* the divergence and read-failure test hook (WILDCPU_TEST_POISON), -1: off */
    char poison_kind;
    struct {
        size_t final_from; /* the streamed micro-batch's gradients from here on are final */
        int poison;        /* its gradient is still to be poisoned (the test hook) */
    } stream;
} train_ctx;

/* ---- train_ckpt.c ------------------------------------------------------------------------ */

/* The settings that must be equal for a resume to be exact (t->config_kv). */
void wc_train_ckpt_config_kv(train_ctx *t);
/* The checkpoint policy (--ckpt-every, --ckpt-minutes or the adaptive default) and rank 0's
 * background writer. After the resume. */
void wc_train_ckpt_start(train_ctx *t);
/* Resumes from the newest usable checkpoint, if any. Collective. Returns WC_OK (t->start_step
 * set, 0 for a fresh start) or WC_ERR. */
int wc_train_ckpt_resume(train_ctx *t);
/* Room for a checkpoint where they are kept, before training (status 1 without). Collective. */
int wc_train_ckpt_check_room(const train_ctx *t);
/* A synchronous checkpoint of the state after steps_done steps, written by rank 0; every rank
 * learns whether it worked. Collective. */
int wc_train_ckpt_collective(train_ctx *t, long steps_done, const char *why);
/* An interval checkpoint: handed to rank 0's writer thread (or, without one, collective). */
void wc_train_ckpt_interval(train_ctx *t, long steps_done);
/* After a validation of step: keeps the state as best.wcp if its AUC-PR beats every earlier. */
void wc_train_ckpt_keep_if_best(train_ctx *t, long step);
/* Records the background writes that have ended (rank 0; with wait, the running one too). */
void wc_train_ckpt_take_background(train_ctx *t, int wait);
/* The stop: a checkpoint, then WC_EXIT_STOPPED (or WC_EXIT_RUNTIME when it failed). */
int wc_train_ckpt_stop(train_ctx *t, long steps_done);
/* Ends rank 0's writer, after waiting for (and logging) a write still running. */
void wc_train_ckpt_finish(train_ctx *t);

#endif
