/* schedule.h: which patches every optimizer step trains on, and which rank computes what.
 *
 * The order is a pure function of (seed, epoch): each epoch is a random permutation of the
 * training patches, the same on every rank and for any number of ranks. Step s of epoch e takes
 * the next --batch patches of the permutation (the last step of an epoch takes what is left),
 * cut into micro-batches of --micro-batch patches; the micro-batches of a step are dealt to the
 * ranks in contiguous runs whose lengths differ by at most one (8 micro-batches on 3 ranks:
 * 3, 3, 2; a rank may get none). Over an epoch the ranks together cover every training patch
 * exactly once. Because every rank can compute every step's plan, resuming at any step, on any
 * number of ranks, continues exactly where an uninterrupted run would be.
 *
 * Not here: reading (reader.h), computing (train.c). */
#ifndef WILDCPU_SCHEDULE_H
#define WILDCPU_SCHEDULE_H

#include <stdint.h>

typedef struct wc_schedule {
    const uint32_t *train;  /* (ntrain) the training patches, grid order (not owned) */
    long ntrain;
    int batch, micro;       /* --batch, --micro-batch */
    int rank, nranks;
    uint64_t seed;
    long steps_per_epoch, total_steps;
    long cached_epoch[2];   /* two epochs' permutations: the current one and the look-ahead's */
    uint32_t *perm[2];
} wc_schedule;

void wc_schedule_init(wc_schedule *s, const uint32_t *train, long ntrain, int batch, int micro,
                      int rank, int nranks, uint64_t seed, long total_steps);
void wc_schedule_free(wc_schedule *s);
long wc_schedule_steps_per_epoch(long ntrain, int batch);
/* Micro-batches in step `step` (all ranks), and this rank's run [*lo, *hi) of them. */
int wc_schedule_micro_batches(wc_schedule *s, long step, int *lo, int *hi);
/* The rank that computes micro-batch j of step `step`. */
int wc_schedule_rank_of(wc_schedule *s, long step, int j);
/* Patches of micro-batch j of step `step` into ids (at most micro); returns how many. */
int wc_schedule_patches(wc_schedule *s, long step, int j, uint32_t *ids);
/* Samples in step `step` (--batch, or fewer in the last step of an epoch). */
int wc_schedule_samples(const wc_schedule *s, long step);
/* True when `step` is the last of its epoch or of the run: validation follows it. */
int wc_schedule_ends_epoch(const wc_schedule *s, long step);

#endif
