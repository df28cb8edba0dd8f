/* report.h: the run's cost and quality: a summary every rank contributes to (peak memory per
 * rank), printed at the end and written to DIR/report.json and DIR/report.md.
 *
 * Not here: computing the metrics (metrics.h), the risk map (predict.h). */
#ifndef WILDCPU_REPORT_H
#define WILDCPU_REPORT_H

#include <stddef.h>

#include "wildcpu/augment.h"
#include "wildcpu/metrics.h"

/* What became of the end-of-run map (report.json's "map"): none drawn by this command
 * (--no-predict, or training did not finish), pending (being drawn, or the process died drawing
 * it), written, failed, stopped. */
typedef enum {
    WC_REPORT_MAP_NONE,
    WC_REPORT_MAP_PENDING,
    WC_REPORT_MAP_WRITTEN,
    WC_REPORT_MAP_FAILED,
    WC_REPORT_MAP_STOPPED
} wc_report_map;

typedef struct wc_run_summary {
    char arch[64];
    char augmentation[WC_AUGMENT_SUMMARY_MAX]; /* how training samples were oriented (augment.h's
                                                * summary) */
    double shifted_fraction; /* of the first epoch's training samples, those the jitter */
    double turned_fraction;  /* shifts and those --rotate turns (NaN: no jitter, no --rotate) */
    int ranks, threads, batch, micro_batch;
    long steps_total, steps_done, start_step, steps_per_epoch;
    long samples_done;    /* trained in this invocation, over the ranks (an epoch's last
                           * step takes what is left of it: fewer than --batch) */
    double wall_seconds;  /* this invocation, setup included */
    double train_seconds; /* the step loop of this invocation */
    double compute_seconds, reduce_seconds, val_seconds, io_wait_seconds; /* rank 0's */
    double ckpt_seconds;    /* the training thread's: synchronous writes, and for background
                             * ones the wait and the copy at the step boundary */
    double ckpt_bg_seconds; /* the background writes' own time (off the training thread) */
    long ckpts_written;
    size_t ckpt_bytes;
    long redo_steps;
    double last_loss;
    int have_val, have_oracle;
    wc_metrics val, oracle;
    int val_patches;    /* the run has validation patches (validation runs each epoch) */
    int val_earlier;    /* val is an earlier session's, read from the checkpoint resumed
                         * from (no validation ran since): no reliability bins */
    long best_step;     /* the step best.wcp holds (-1: none), which the map uses */
    double best_auc_pr; /* its validation AUC-PR */
    int best_lost;      /* best.wcp (of step best_lost_step) was missing or damaged when
                         * this session resumed, and no validation has written one since */
    long best_lost_step;
    long newest_ckpt_step;      /* the newest valid checkpoint on disk when the report is
                                 * written (-1: none, -2: unreadable): what a run without
                                 * best.wcp predicts with */
    long best_unsaved_step;     /* a better validation than best_step's, whose best.wcp write
                                 * failed in this session (-1: none): its weights are gone */
    double best_unsaved_auc_pr; /* its validation AUC-PR */
    char kernels[512];          /* the kernels the run's steps were computed with, session after
                                 * session (wc_cpuinfo_kernels, "/ranks:mixed" when ranks differed),
                                 * a change appended, comma-separated: one entry, bitwise one run */
    double flops_per_sample;
    size_t planned_bytes, baseline_bytes, data_bytes; /* data_bytes: part of planned_bytes */
    size_t gdal_cache_bytes; /* GDAL's block cache at its fullest (data held, unplanned) */
    size_t gdal_files_bytes; /* the files GDAL holds open, as planned (measured on one) */
    long patches_read;       /* this rank's; the report gives the sum over the ranks */
    double bytes_read;
    int status;        /* how training ended: WC_EXIT_OK, _STOPPED or _RUNTIME */
    wc_report_map map; /* _PENDING when the map is drawn next, else _NONE */
} wc_run_summary;

/* Collective: gathers every rank's peak RSS, then rank 0 prints the summary and writes
 * out_dir/report.json, report.md and calibration.png (with a comparison against baseline_json
 * when given). Returns WC_ERR on every rank, after a message, when report.json or report.md
 * could not be written (a full disk): the run's status says so. The picture is optional. */
int wc_report_finish(const wc_run_summary *s, const char *out_dir, const char *baseline_json);

/* What wc_report_missing finds besides WC_OK (a report of the finished training). */
enum {
    WC_REPORT_MISSING = 1, /* report.json or report.md is not there */
    WC_REPORT_EARLIER = 2, /* report.json is an earlier session's (its steps_done another) */
};

/* Whether out_dir lacks the report of the training that finished after `steps` steps: no
 * report.json or report.md (their write failed, on a full disk say), or a report.json whose
 * steps_done is another, *said (-1 when it has none): an earlier session's, left when the
 * session that finished was killed (SIGKILL after a preemption's grace period) between its
 * final checkpoint and its report. A rerun of a finished training then writes them
 * (train.c). Returns WC_OK or a WC_REPORT_MISSING / WC_REPORT_EARLIER. */
int wc_report_missing(const char *out_dir, long steps, long *said);

/* Rank 0, on a rerun of a finished training that found best.wcp (of step `step`) lost: its
 * report.json's best_step and best_val_auc_pr, and report.md's model-selection paragraph, say
 * the map now comes from the newest checkpoint; the rest of both stays as the training wrote
 * it. Failures leave them as they were. */
void wc_report_best_lost(const char *out_dir, long step);

/* Every rank's failure cause (wc_last_error) becomes that of the lowest rank that logged one,
 * "rank N: " in front when it is not rank 0: a rank that could not read its patches said why in
 * its own log only, and the report, rank 0's, names the cause. wc_report_finish does it; a
 * caller of wc_report_map_done does it first. Collective. */
void wc_report_agree_failure(void);

/* Rank 0, once drawing the map has ended with status (a WC_EXIT_ code): report.json's status and
 * map, and report.md's status line, say how (a stopped map: rerun says how to resume, as
 * wc_rundir_rerun words it; NULL: the same command); when the map was drawn, report.md embeds its
 * picture by relative path, so it reads as a page. A picture section from an earlier call is
 * replaced. Returns 0, or the WC_REPORT_*_STALE bits of the files that could not be written (a
 * full disk: an error said why, and each stays as it was, saying what it said of the map
 * before). */
#define WC_REPORT_JSON_STALE 1
#define WC_REPORT_MD_STALE   2
int wc_report_map_done(const char *out_dir, int status, const char *rerun);

#endif
