/* report.h: the run's cost and quality: a summary every rank contributes to (peak memory per
 * rank), printed at the end and written to DIR/report.json and DIR/report.md.
 *
 * Not here: computing the metrics (metrics.h), the risk map (predict.h). */
#ifndef WILDCPU_REPORT_H
#define WILDCPU_REPORT_H

#include <stddef.h>

#include "wildcpu/metrics.h"

typedef struct wc_run_summary {
    char arch[64];
    char augmentation[512];   /* how training samples were oriented (augment.h's summary) */
    int ranks, threads, batch, micro_batch;
    long steps_total, steps_done, start_step, steps_per_epoch;
    double wall_seconds;      /* this invocation, setup included */
    double train_seconds;     /* the step loop of this invocation */
    double compute_seconds, reduce_seconds, val_seconds, io_wait_seconds; /* rank 0's */
    double ckpt_seconds;      /* the training thread's: synchronous writes, and for background
                               * ones the wait and the copy at the step boundary */
    double ckpt_bg_seconds;   /* the background writes' own time (off the training thread) */
    long ckpts_written;
    size_t ckpt_bytes;
    long redo_steps;
    double last_loss;
    int have_val, have_oracle;
    wc_metrics val, oracle;
    long best_step;           /* the step best.wcp holds (-1: none), which the map uses */
    double best_auc_pr;       /* its validation AUC-PR */
    double flops_per_sample;
    size_t planned_bytes, baseline_bytes, data_bytes; /* data_bytes: part of planned_bytes */
    size_t gdal_cache_bytes;  /* GDAL's block cache in use at the end (data held, unplanned) */
    long patches_read;
    double bytes_read;
    int status;
} wc_run_summary;

/* The reliability diagram of the last validation, beside report.md. */
#define WC_REPORT_CALIBRATION_PNG "calibration.png"

/* Collective: gathers every rank's peak RSS, then rank 0 prints the summary and writes
 * out_dir/report.json, report.md and calibration.png (with a comparison against baseline_json
 * when given). Returns WC_ERR on every rank, after a message, when report.json or report.md
 * could not be written (a full disk): the run's status says so. The picture is optional. */
int wc_report_finish(const wc_run_summary *s, const char *out_dir, const char *baseline_json);

/* Rank 0, once the map is drawn: report.md embeds the pictures of out_dir by relative path, so
 * it reads as a page: the quick-look risk.png, and calibration.png when it exists. A section
 * from an earlier call is replaced. Failures are warnings (the report stays as it was). */
void wc_report_add_pictures(const char *out_dir);

#endif
