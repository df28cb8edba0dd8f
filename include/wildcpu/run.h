/* run.h: `wildcpu [train]`, the whole command: training (train.h), then the risk map of the
 * trained model (predict.h), and what the run directory says about how it ended.
 *
 * DIR/STOPPED exists exactly when the last run of DIR ended with status 75 (stopped by a signal
 * with its checkpoint written, or stopped while drawing the map after the final one): a script
 * whose launcher reports its own status (mpirun signalled itself exits 1) tells "rerun to
 * resume" from "failed" by it. It is a key=value record: stopped_utc, phase (training or map),
 * step (of the checkpoint a rerun resumes from), signal.
 *
 * Not here: the training loop (train.c), the map (predict.c), option parsing (main.c). */
#ifndef WILDCPU_RUN_H
#define WILDCPU_RUN_H

#include "wildcpu/train.h"

/* Collective. Returns the exit status (util.h). */
int wc_run_train_and_map(const wc_train_config *cfg);

#endif
