/* inspect.h: `wildcpu info PATH`: what a checkpoint file holds, or which checkpoints a run
 * directory has and whether each one is valid. Reads only; never changes a file. */
#ifndef WILDCPU_INSPECT_H
#define WILDCPU_INSPECT_H

/* Prints the description to stdout; returns the exit status (1 if PATH is unusable or, for a
 * single file, invalid). */
int wc_inspect_run(const char *path);

#endif
