/* rundir.h: a training run's directory (--out DIR): the files it holds, the checks made before
 * a run starts, --fresh, and the marker of a stopped run.
 *
 * Before a run: no input may be one of the run's files (a --tiles D/risk.tif with --out D would
 * be replaced by the map, or moved aside by --fresh); DIR is created and locked (DIR/.lock, held
 * by rank 0 until it exits: a second run into DIR meanwhile is refused, status 1);
 * DIR/checkpoints is created and locked the same way by its own .lock, link or not (a run whose
 * checkpoints link to the same directory is refused), unless it is DIR itself. --fresh moves
 * the previous run's files to DIR/replaced-<time>/ once the data is open and planned
 * (wc_rundir_set_aside); with DIR/checkpoints a link to a directory, the link stays and the
 * checkpoint files move to a replaced-<time>/ inside that directory.
 *
 * DIR/STOPPED exists exactly when the last run of DIR ended with status 75 (stopped by a signal
 * with its checkpoint written, or stopped while drawing the map after the final one): a script
 * whose launcher reports its own status (mpirun signalled itself exits 1) tells "rerun to
 * resume" from "failed" by it. It is written as soon as the stop's checkpoint is durable (a
 * launcher may kill the processes soon after), as a key=value record: stopped_utc, phase
 * (planning, training or map), step (of the checkpoint a rerun resumes from; -1: none yet),
 * signal.
 *
 * Not here: what is written into the directory (train.c, snapshot.c, report.c, predict.c); only
 * the names below, which those writers and the checks here share. */
#ifndef WILDCPU_RUNDIR_H
#define WILDCPU_RUNDIR_H

#include "wildcpu/train.h"

#define WC_RUNDIR_STOPPED "STOPPED"
/* The files a run writes into DIR, besides those named where they are written (the checkpoints,
 * WC_CKPT_DIR and WC_CKPT_BEST in ckpt.h): the metrics log (trainlog.c), the report and its
 * reliability diagram (report.c), and the end-of-run map (run.c), whose companions riskmap.c
 * names after it (risk.qml, risk_classes.tif, ...), as the stem says. */
#define WC_RUNDIR_METRICS_LOG     "metrics.jsonl"
#define WC_RUNDIR_REPORT_JSON     "report.json"
#define WC_RUNDIR_REPORT_MD       "report.md"
#define WC_RUNDIR_CALIBRATION_PNG "calibration.png"
#define WC_RUNDIR_MAP_STEM        "risk"
#define WC_RUNDIR_MAP             WC_RUNDIR_MAP_STEM ".tif"
#define WC_RUNDIR_PICTURE         WC_RUNDIR_MAP_STEM ".png"
/* The lock a training run holds on its directory (rundir.c): a second run into it is refused. */
#define WC_RUNDIR_LOCK ".lock"

/* Checks and prepares cfg->out_dir as described above; removes the stop marker of the previous
 * run. Collective. Returns WC_OK, or an exit status: WC_EXIT_USAGE when an input is one of the
 * run's files, WC_EXIT_RUNTIME when the directory cannot be prepared (after a message). */
int wc_rundir_prepare(const wc_train_config *cfg);

/* After a run refused before it wrote anything (--tiles that does not open, a bad band): a
 * run directory this run created, that holds nothing but its locks and an empty
 * DIR/checkpoints, is removed with the parents the run created for it, so that a mistyped
 * command leaves nothing behind. Rank 0; nothing elsewhere, or when DIR existed before. */
void wc_rundir_forget_refused(const wc_train_config *cfg);

/* --fresh: moves the previous run's files to out_dir/replaced-<time>/, once the data is open and
 * planned (a run that cannot start leaves a finished run's files where they were). Collective;
 * nothing without --fresh. WC_ERR after a message when a file cannot be moved: a replaced-*
 * directory that received nothing is removed, and one that received part of the files is named
 * with what it holds. */
int wc_rundir_set_aside(const wc_train_config *cfg);

/* What resumes a run stopped in `phase` ("planning", "training" or "map"): "rerun the same
 * command", or "rerun the same command without --fresh" once --fresh has moved the previous run
 * aside (after planning): with it, the rerun would set this run aside too and start over. */
const char *wc_rundir_rerun(const wc_train_config *cfg, const char *phase);

/* Rank 0: the step of the newest checkpoint in the run's checkpoints directory whose header
 * checks out (the one a rerun resumes from), -1 when there is none, -2 when the directory cannot
 * be read. */
long wc_rundir_newest_step(const wc_train_config *cfg);

/* Writes out_dir/STOPPED (rank 0; the others return at once), its resume= field from
 * wc_rundir_rerun. */
void wc_rundir_mark_stopped(const wc_train_config *cfg, const char *phase);

/* Whether writing `path` would take a file from a training that is running: path is one of the
 * files a run directory holds (risk.tif, report.json, ...) and its directory's lock is held by
 * another run (another process; this process's own run directory is not another's). Fills
 * `holder` (size bytes) with what the lock notes of its holder ("pid N on HOST since T"). */
int wc_rundir_taken_by_live_run(const char *path, char *holder, size_t size);

/* Whether dir/.lock (a run directory's, or its checkpoints directory's) is held by a training
 * running in another process; fills `holder` as above. */
int wc_rundir_lock_held(const char *dir, char *holder, size_t size);

/* After a model could not be loaded from --checkpoint path: when path is a run directory (or
 * its checkpoints directory) whose training is running and has written no checkpoint yet, says
 * so, that the user waits instead of looking for what went wrong. Rank 0; nothing otherwise. */
void wc_rundir_say_if_training(const char *path);

/* What path is of a training run directory's record of itself, which only its training writes
 * ("the metrics log": metrics.jsonl, report.json, report.md, calibration.png, split.tif,
 * STOPPED), when its directory is one (a training left its lock there, DIR/.lock), running or
 * not; NULL otherwise. The map's files (risk.tif and what is named after it) are not: predict
 * redraws them on purpose. */
const char *wc_rundir_record_of(const char *path);

#endif
