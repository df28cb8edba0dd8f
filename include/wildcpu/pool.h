/* pool.h: a small pool of threads, created once, that runs numbered tasks in parallel.
 *
 * The network's own work inside one rank (tile blocks of a convolution, planes of an
 * elementwise layer) is split into tasks 0..ntasks-1 whose number and boundaries depend on the
 * shapes only, never on the number of threads; every task writes its own outputs (or its own
 * partial sums, added afterwards in task order). So which thread runs which task changes
 * nothing: results are bitwise the same for any thread count. A task also gets the index of
 * the thread that runs it, for scratch memory private to that thread.
 *
 * wc_pool_run neither allocates nor returns before every task has finished; the calling thread
 * runs tasks too. Workers wait by spinning briefly, then on a condition variable, so a pool
 * costs nothing between steps. Only one thread may call wc_pool_run on a pool at a time, and
 * tasks must not call it (no nesting).
 *
 * Not here: what the tasks do; BLAS threads (callers keep OpenBLAS at one thread: its own
 * threads would compete with these). */
#ifndef WILDCPU_POOL_H
#define WILDCPU_POOL_H

typedef struct wc_pool wc_pool;

/* Runs task `task` (0 <= task < ntasks) on thread `thread` (0 <= thread < wc_pool_threads). */
typedef void (*wc_pool_fn)(void *ctx, int task, int thread);

/* A pool of nthreads threads in all: nthreads - 1 workers plus the caller of wc_pool_run.
 * nthreads <= 1 gives NULL, which every function accepts as "the caller alone". Aborts if a
 * thread cannot be started. */
wc_pool *wc_pool_create(int nthreads);
void wc_pool_destroy(wc_pool *pool);
/* 1 for NULL. */
int wc_pool_threads(const wc_pool *pool);
/* Runs every task once, in parallel, and returns when all are done. */
void wc_pool_run(wc_pool *pool, int ntasks, wc_pool_fn fn, void *ctx);

/* The part [lo, hi) of n items that task `task` of `ntasks` covers: contiguous, in order,
 * sizes differing by at most 1. */
static inline void wc_pool_share(long n, int task, int ntasks, long *lo, long *hi) {
    *lo = n * task / ntasks;
    *hi = n * (task + 1) / ntasks;
}

#endif
