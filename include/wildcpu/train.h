/* train.h: `wildcpu train`: data-parallel training on every rank, checkpoints, validation, and
 * at the end the risk map and the report.
 *
 * One optimizer step processes the global batch (--batch patches), cut into micro-batches of
 * --micro-batch patches that are dealt to the ranks (schedule.h). Each rank computes the
 * gradients of its micro-batches; the reducer (reduce.h) sums them across ranks, exactly, and
 * divides by the global count of valid pixels, so every rank takes the same optimizer step and
 * the result is bitwise the same on 1, 2, 3 or 4 ranks. Rank 0 alone prints progress and writes
 * the run directory's files.
 *
 * Not here: option parsing (main.c), the map after training (run.h), the pieces it drives
 * (dataset, net, optim, reduce, snapshot, ckpt, report). */
#ifndef WILDCPU_TRAIN_H
#define WILDCPU_TRAIN_H

#include <stdint.h>

#include "wildcpu/dataset.h"
#include "wildcpu/optim.h"
#include "wildcpu/predict.h"

typedef struct wc_train_config {
    wc_data_config data;        /* --tiles, --labels, --label-band, --patch, --val-fraction, ... */
    const char *out_dir;        /* --out [run] */
    const char *model;          /* --model unet-lite|logistic|FILE [unet-lite] */
    long epochs;                /* --epochs [10] */
    long steps;                 /* --steps: overrides --epochs when > 0 */
    int batch;                  /* --batch, global [32] */
    int micro_batch;            /* --micro-batch [4] */
    wc_optim_config optim;      /* --optimizer, --lr (0: wc_train_lr's), --weight-decay, --warmup
                                 * (-1: auto), --lr-end as min_lr_ratio (-1: wc_train_lr_end's) */
    int lr_scaling_linear;      /* --lr-scaling linear: lr * batch / lr_ref_batch */
    int lr_ref_batch;           /* the batch the --lr was tuned for [32] */
    double pos_weight;          /* --pos-weight [1]: loss weight of burned pixels */
    uint64_t seed;              /* --seed [1] */
    int threads;                /* --threads per rank [$SLURM_CPUS_PER_TASK or 1] */
    const char *threads_from;   /* "SLURM_CPUS_PER_TASK" when threads came from it, else NULL */
    int fast_reduce;            /* --fast-reduce */
    int no_overlap;             /* --no-overlap: reduce after backward, not during it */
    int no_jitter;              /* --no-jitter: train on the fixed patches */
    int augment;                /* --augment: mirror and turn training samples (augment.h) */
    long log_every;             /* --log-every STEPS [10] */
    long ckpt_every;            /* --ckpt-every STEPS [0: off] */
    double ckpt_minutes;        /* --ckpt-minutes M [10 when neither is given] */
    int keep;                   /* --keep K [3] */
    int fresh;                  /* --fresh */
    int no_predict;             /* --no-predict */
    int prefetch;               /* read-ahead slots [auto] */
    const char *baseline;       /* --baseline OTHER/report.json */
    int cog, classes, no_style; /* risk map options, as for predict */
} wc_train_config;

void wc_train_config_default(wc_train_config *cfg);
/* The --lr the run uses: cfg->optim.lr when set (> 0), else the default of the model and the
 * optimizer: the optimizer's (optim.h), but 0.05 for the logistic baseline under AdamW. */
double wc_train_lr(const wc_train_config *cfg);
/* The --lr-end the run uses (where the cosine ends, a fraction of the peak rate):
 * cfg->optim.min_lr_ratio when set (>= 0), else the optimizer's (optim.h), but 0.05 for the
 * logistic baseline. */
double wc_train_lr_end(const wc_train_config *cfg);
/* The peak learning rate the run uses: wc_train_lr, scaled by --batch / --lr-ref-batch under
 * --lr-scaling linear. */
double wc_train_peak_lr(const wc_train_config *cfg);
/* The map a training run of cfg draws at its end (DIR/risk.tif, its picture and companions), as
 * a predict configuration into pc; risk and png (size bytes each) hold its paths. Training's
 * own: it checks before its first step that the address space holds that map. */
void wc_train_map_config(wc_predict_config *pc, const wc_train_config *cfg, char *risk, char *png,
                         size_t size);
/* Runs training to the end (or to a stop signal, see stop.h) in cfg->out_dir, which
 * wc_rundir_prepare (rundir.h) has prepared. Returns the exit status: WC_EXIT_OK,
 * WC_EXIT_RUNTIME (after an error message), WC_EXIT_USAGE, or WC_EXIT_STOPPED (stopped by
 * SIGTERM/SIGUSR1/SIGINT after writing a checkpoint; rerun to resume). Collective. */
int wc_train_run(const wc_train_config *cfg);

#endif
