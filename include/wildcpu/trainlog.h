/* trainlog.h: what a training run tells its user while it runs: on rank 0, a progress line every
 * --log-every steps (a live bar between them on a real terminal), the validation and checkpoint
 * lines, and the same figures as one JSON object per line in DIR/metrics.jsonl, flushed after
 * each line so a stopped run keeps its log. A resumed run first drops what the interrupted run
 * logged after the checkpoint it resumes from, so the file reads as if the run had never
 * stopped. A failed write (a full disk) is reported once: training does not depend on the log.
 *
 * Every function may be called on every rank; only rank 0 prints and writes.
 *
 * Not here: computing the figures (train.c, metrics.h), the end-of-run report (report.h). */
#ifndef WILDCPU_TRAINLOG_H
#define WILDCPU_TRAINLOG_H

#include <stddef.h>

#include "wildcpu/metrics.h"

typedef struct wc_trainlog wc_trainlog;

/* Opens the log of out_dir/metrics.jsonl for a run of total_steps steps of steps_per_epoch,
 * logging every log_every steps. start_step > 0 resumes it (lines after that step are dropped);
 * 0 starts it empty. Rank 0 fails (NULL, after a message) when the file cannot be written;
 * other ranks get a handle that does nothing. */
wc_trainlog *wc_trainlog_open(const char *out_dir, long start_step, long total_steps,
                              long steps_per_epoch, long log_every);
void wc_trainlog_close(wc_trainlog *l);

/* The loop starts (or resumes): rates and the ETA count from here. */
void wc_trainlog_start(wc_trainlog *l);
/* Step `step` (0-based) is done with mean loss `loss` at learning rate lr over `samples`
 * samples: adds it to the figures of the next line, printed when due. A NaN loss is a step
 * without one (its batch had no valid pixel): the line's mean leaves it out, and a line of
 * such steps alone shows no loss ("-", null in metrics.jsonl). */
void wc_trainlog_step(wc_trainlog *l, long step, double loss, double lr, long samples);
/* The loss of the steps since the last progress line (their sum and count, of the steps that
 * had one), kept in a
 * checkpoint, and handed back to the log of the run that resumes from it before its first
 * step: the first line after a resume then averages the same steps as the uninterrupted run's
 * (its samples/s counts from the resume). */
void wc_trainlog_pending_loss(const wc_trainlog *l, double *sum, long *steps);
void wc_trainlog_resume_loss(wc_trainlog *l, double sum, long steps);
/* The validation after step `step`; oracle may be NULL. */
void wc_trainlog_validation(wc_trainlog *l, long step, const wc_metrics *val,
                            const wc_metrics *oracle);
/* A checkpoint written into dir: ckpt-<step>.wcp, or name (best.wcp) when not NULL. seconds:
 * the write's time; stall: for a background write (ckptbg.h), the training thread's time at
 * the step boundary, else negative. */
void wc_trainlog_checkpoint(wc_trainlog *l, const char *dir, const char *name, long step,
                            size_t bytes, double seconds, double stall, const char *why);
/* Ends a live progress bar's line, so that what is printed next starts on its own line. */
void wc_trainlog_break_line(wc_trainlog *l);

#endif
