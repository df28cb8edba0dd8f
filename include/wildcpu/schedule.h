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

#include "wildcpu/dataset.h"

typedef struct wc_schedule {
    const uint32_t *train; /* (ntrain) the training patches, grid order (not owned) */
    long ntrain;
    int batch, micro; /* --batch, --micro-batch */
    int rank, nranks;
    uint64_t seed;
    long steps_per_epoch, total_steps;
    long cached_epoch[2]; /* two epochs' permutations: the current one and the look-ahead's */
    uint32_t *perm[2];
    /* how epoch e samples training patch id (jitter); NULL: unshifted */
    wc_sample (*sample)(const void *ctx, uint32_t id, long epoch);
    const void *sample_ctx;
    uint32_t *ids; /* (micro) the cursor's scratch */
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
/* How training samples are drawn from their patches (dataset.h's wc_dataset_sample). */
void wc_schedule_set_sampler(wc_schedule *s, wc_sample (*fn)(const void *, uint32_t, long),
                             const void *ctx);
/* Samples in step `step` (--batch, or fewer in the last step of an epoch). */
int wc_schedule_samples(const wc_schedule *s, long step);
/* True when `step` is the last of its epoch or of the run: validation follows it. */
int wc_schedule_ends_epoch(const wc_schedule *s, long step);

/* What a read request is for: micro-batch j of step `step`. */
typedef struct wc_work {
    long step;
    int j;
} wc_work;

/* The read-ahead cursor: walks this rank's requests in the order it consumes them (a step's
 * micro-batches, then the next step's) up to the last step. */
typedef struct wc_schedule_cursor {
    wc_work next;
} wc_schedule_cursor;

/* Positions the cursor at the first request of step `step`. */
void wc_schedule_cursor_start(wc_schedule_cursor *c, long step);
/* The cursor's next request: its samples (at most --micro-batch of them, as the sampler draws
 * them) and what it is for into *w; returns the number of samples, 0 when the run has no more
 * requests. */
int wc_schedule_cursor_next(wc_schedule *s, wc_schedule_cursor *c, wc_sample *samples, wc_work *w);
/* A request's identity as one number (the reader echoes it back with the filled batch), and
 * whether two requests are the same. */
long wc_work_tag(const wc_work *w);

#endif
