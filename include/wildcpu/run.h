/* run.h: `wildcpu [train]`, the whole command: the run directory is checked and prepared
 * (rundir.h), the model is trained (train.h), then the risk map of the trained model is drawn
 * (predict.h).
 *
 * Not here: the training loop (train.c), the map (predict.c), option parsing (main.c). */
#ifndef WILDCPU_RUN_H
#define WILDCPU_RUN_H

#include "wildcpu/train.h"

/* The train command. Collective. Returns the exit status (util.h). */
int wc_run_train_and_map(const wc_train_config *cfg);

#endif
