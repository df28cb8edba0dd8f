/* pool.c: the thread pool of pool.h. A job is (fn, ctx, ntasks) published under a generation
 * number. Its tasks are cut into one contiguous share per thread (wc_pool_share); each thread
 * works through its own share from the front, then takes tasks from the back of the others'
 * shares until none is left.
 *
 * Why shares and not one counter: the network numbers every pass's tasks sample-major (tile
 * blocks, planes), so thread k's share of one pass covers about the same samples as its share
 * of the next, and a thread mostly reads what it wrote itself, from its own core's caches. On
 * CPUs whose cores do not share a last-level cache, reading what the other core wrote costs
 * memory traffic (measured on a 2-vCPU AMD EPYC, family 26, most of the time: 8 MB written by
 * one core is read at 47-81 GB/s by that core and at 25-33 GB/s by the other; tools/cache_share
 * measures a node); tasks dealt from one counter alternate
 * between the threads, so every pass read half of its input from the other core. Taking from
 * the others' shares keeps a thread slowed by another process on a shared machine from holding
 * up the pass. Which thread runs a task never changes a result (pool.h).
 *
 * Waiting: a worker spins on the generation for a short while (a training step starts a new job
 * every few hundred microseconds, and a sleeping worker takes tens of microseconds to wake),
 * then sleeps on a condition variable; the caller waits for the last task the same way. */
#include "wildcpu/pool.h"

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "wildcpu/util.h"

/* About 50-100 microseconds of polling before sleeping. */
#define SPIN_ROUNDS 20000

/* The tasks [lo, hi) of one thread's share not yet taken, packed as lo | hi << 32 so that the
 * owner (from the front) and the others (from the back) take them by one compare-and-swap. On
 * its own cache line: the owner touches it for every task. */
typedef struct {
    alignas(64) _Atomic uint64_t range;
} share;

struct wc_pool {
    int nthreads;
    share *shares;      /* (nthreads) */
    pthread_t *workers; /* (nthreads - 1) */
    pthread_mutex_t mu;
    pthread_cond_t start_cv, done_cv;
    /* the current job, written before `generation` is released */
    wc_pool_fn fn;
    void *ctx;
    int ntasks;
    atomic_int running;     /* workers still inside the current job */
    atomic_uint generation; /* bumped once per job */
    atomic_int stop;
};

typedef struct {
    wc_pool *pool;
    int thread;
} worker_arg;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static uint64_t pack(long lo, long hi) {
    return (uint64_t)lo | (uint64_t)hi << 32;
}

/* Takes one task of share `s`, from the front or from the back; -1 when it is empty. */
static int take(share *s, int from_back) {
    uint64_t r = atomic_load_explicit(&s->range, memory_order_relaxed);
    for (;;) {
        const uint32_t lo = (uint32_t)r, hi = (uint32_t)(r >> 32);
        if (lo >= hi) return -1;
        const uint64_t next = from_back ? pack(lo, hi - 1) : pack(lo + 1, hi);
        if (atomic_compare_exchange_weak_explicit(&s->range, &r, next, memory_order_relaxed,
                                                  memory_order_relaxed))
            return (int)(from_back ? hi - 1 : lo);
    }
}

static void run_tasks(wc_pool *p, int thread) {
    for (int t; (t = take(&p->shares[thread], 0)) >= 0;) p->fn(p->ctx, t, thread);
    for (int k = 1; k < p->nthreads; k++) {
        share *other = &p->shares[(thread + k) % p->nthreads];
        for (int t; (t = take(other, 1)) >= 0;) p->fn(p->ctx, t, thread);
    }
}

static void *worker_main(void *arg) {
    worker_arg a = *(worker_arg *)arg;
    free(arg);
    wc_pool *p = a.pool;
    unsigned seen = 0;
    for (;;) {
        unsigned g = atomic_load_explicit(&p->generation, memory_order_acquire);
        for (int i = 0; g == seen && i < SPIN_ROUNDS; i++) {
            cpu_relax();
            g = atomic_load_explicit(&p->generation, memory_order_acquire);
        }
        if (g == seen) {
            pthread_mutex_lock(&p->mu);
            while ((g = atomic_load(&p->generation)) == seen && !atomic_load(&p->stop))
                pthread_cond_wait(&p->start_cv, &p->mu);
            pthread_mutex_unlock(&p->mu);
        }
        if (atomic_load(&p->stop)) return NULL;
        seen = g;
        run_tasks(p, a.thread);
        if (atomic_fetch_sub_explicit(&p->running, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done_cv);
            pthread_mutex_unlock(&p->mu);
        }
    }
}

wc_pool *wc_pool_create(int nthreads) {
    if (nthreads <= 1) return NULL;
    wc_pool *p = WC_CALLOC(1, sizeof *p);
    p->nthreads = nthreads;
    p->workers = WC_CALLOC((size_t)nthreads - 1, sizeof(pthread_t));
    p->shares = aligned_alloc(alignof(share), (size_t)nthreads * sizeof(share));
    if (!p->shares) wc_fatal("out of memory for a pool of %d threads", nthreads);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->start_cv, NULL);
    pthread_cond_init(&p->done_cv, NULL);
    for (int i = 0; i < nthreads - 1; i++) {
        worker_arg *a = WC_ALLOC(sizeof *a);
        a->pool = p, a->thread = i + 1;
        const int err = pthread_create(&p->workers[i], NULL, worker_main, a);
        char why[1200];
        if (err != 0)
            wc_fatal("cannot start thread %d of %d (--threads): %s", i + 2, nthreads,
                     wc_thread_start_error(err, why, sizeof why));
    }
    return p;
}

void wc_pool_destroy(wc_pool *p) {
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    pthread_cond_broadcast(&p->start_cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads - 1; i++) pthread_join(p->workers[i], NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->start_cv);
    pthread_cond_destroy(&p->done_cv);
    free(p->workers);
    free(p->shares);
    free(p);
}

int wc_pool_threads(const wc_pool *p) {
    return p ? p->nthreads : 1;
}

void wc_pool_run(wc_pool *p, int ntasks, wc_pool_fn fn, void *ctx) {
    if (ntasks <= 0) return;
    if (!p || ntasks == 1) {
        for (int t = 0; t < ntasks; t++) fn(ctx, t, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn, p->ctx = ctx, p->ntasks = ntasks;
    for (int k = 0; k < p->nthreads; k++) {
        long lo, hi;
        wc_pool_share(ntasks, k, p->nthreads, &lo, &hi);
        atomic_store_explicit(&p->shares[k].range, pack(lo, hi), memory_order_relaxed);
    }
    atomic_store_explicit(&p->running, p->nthreads - 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&p->generation, 1, memory_order_release);
    pthread_cond_broadcast(&p->start_cv);
    pthread_mutex_unlock(&p->mu);
    run_tasks(p, 0);
    for (int i = 0; atomic_load_explicit(&p->running, memory_order_acquire) && i < SPIN_ROUNDS; i++)
        cpu_relax();
    if (atomic_load_explicit(&p->running, memory_order_acquire)) {
        pthread_mutex_lock(&p->mu);
        while (atomic_load(&p->running)) pthread_cond_wait(&p->done_cv, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
}
