/* schedule.c: the epoch permutations and the dealing of micro-batches; see schedule.h. */
#include "wildcpu/schedule.h"

#include <stdlib.h>

#include "wildcpu/dist.h"
#include "wildcpu/rng.h"
#include "wildcpu/util.h"

long wc_schedule_steps_per_epoch(long ntrain, int batch) {
    return (ntrain + batch - 1) / batch;
}

void wc_schedule_init(wc_schedule *s, const uint32_t *train, long ntrain, int batch, int micro,
                      int rank, int nranks, uint64_t seed, long total_steps) {
    WC_ASSERT(ntrain > 0 && batch > 0 && micro > 0 && micro <= batch);
    *s = (wc_schedule){.train = train,
                       .ntrain = ntrain,
                       .batch = batch,
                       .micro = micro,
                       .rank = rank,
                       .nranks = nranks,
                       .seed = seed,
                       .total_steps = total_steps};
    s->steps_per_epoch = wc_schedule_steps_per_epoch(ntrain, batch);
    for (int i = 0; i < 2; i++) {
        s->cached_epoch[i] = -1;
        s->perm[i] = WC_ALLOC(sizeof(uint32_t) * ntrain);
    }
    s->ids = WC_ALLOC(sizeof(uint32_t) * micro);
}

void wc_schedule_free(wc_schedule *s) {
    free(s->perm[0]);
    free(s->perm[1]);
    free(s->ids);
}

/* The permutation of epoch e (positions into train[]), from a two-entry cache. */
static const uint32_t *epoch_perm(wc_schedule *s, long e) {
    for (int i = 0; i < 2; i++)
        if (s->cached_epoch[i] == e) return s->perm[i];
    int slot = e % 2; /* consecutive epochs never evict each other */
    wc_rng_permutation(s->perm[slot], (size_t)s->ntrain, s->seed, WC_STREAM_PERM, (uint64_t)e);
    s->cached_epoch[slot] = e;
    return s->perm[slot];
}

int wc_schedule_samples(const wc_schedule *s, long step) {
    long k = step % s->steps_per_epoch, first = k * s->batch;
    return (int)WC_MIN((long)s->batch, s->ntrain - first);
}

int wc_schedule_micro_batches(wc_schedule *s, long step, int *lo, int *hi) {
    int m = (wc_schedule_samples(s, step) + s->micro - 1) / s->micro;
    long a, b;
    wc_dist_share(m, s->rank, s->nranks, &a, &b);
    *lo = (int)a, *hi = (int)b;
    return m;
}

int wc_schedule_rank_of(wc_schedule *s, long step, int j) {
    int lo, hi;
    const int m = wc_schedule_micro_batches(s, step, &lo, &hi);
    WC_ASSERT(j >= 0 && j < m);
    for (int r = 0; r < s->nranks; r++) {
        long a, b;
        wc_dist_share(m, r, s->nranks, &a, &b);
        if (j >= a && j < b) return r;
    }
    WC_ASSERT(0);
    return -1;
}

int wc_schedule_patches(wc_schedule *s, long step, int j, uint32_t *ids) {
    long e = step / s->steps_per_epoch, k = step % s->steps_per_epoch;
    const uint32_t *perm = epoch_perm(s, e);
    long first = k * s->batch + (long)j * s->micro;
    long end = WC_MIN(k * s->batch + wc_schedule_samples(s, step), first + s->micro);
    int n = 0;
    for (long i = first; i < end; i++) ids[n++] = s->train[perm[i]];
    return n;
}

int wc_schedule_ends_epoch(const wc_schedule *s, long step) {
    return (step + 1) % s->steps_per_epoch == 0 || step + 1 == s->total_steps;
}

void wc_schedule_cursor_start(wc_schedule_cursor *c, long step) {
    c->next = (wc_work){.step = step, .j = -1};
}

void wc_schedule_set_sampler(wc_schedule *s, wc_sample (*fn)(const void *, uint32_t, long),
                             const void *ctx) {
    s->sample = fn, s->sample_ctx = ctx;
}

int wc_schedule_cursor_next(wc_schedule *s, wc_schedule_cursor *c, wc_sample *samples, wc_work *w) {
    wc_work *n = &c->next;
    uint32_t *ids = s->ids;
    for (; n->step < s->total_steps; *n = (wc_work){.step = n->step + 1, .j = -1}) {
        int lo, hi;
        wc_schedule_micro_batches(s, n->step, &lo, &hi);
        if (n->j < lo) n->j = lo;
        if (n->j >= hi) continue;
        *w = *n;
        n->j++;
        const int count = wc_schedule_patches(s, w->step, w->j, ids);
        const long epoch = w->step / s->steps_per_epoch;
        for (int i = 0; i < count; i++)
            samples[i] =
                s->sample ? s->sample(s->sample_ctx, ids[i], epoch) : (wc_sample){.id = ids[i]};
        return count;
    }
    return 0;
}

long wc_work_tag(const wc_work *w) {
    /* j < 2^31: the tag is unique for any step a run can have */
    return (w->step << 31) | (long)w->j;
}
