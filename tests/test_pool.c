/* test_pool.c: the thread pool runs every task exactly once, on a thread index in range, for
 * any number of threads and tasks; a thread first works through its own contiguous share (what
 * keeps a pass's data in its core's caches), and the others take what a stalled thread has not
 * started, so one slow thread does not hold up the pass. */
#include <stdatomic.h>
#include <time.h>

#include "harness.h"
#include "wildcpu/pool.h"

#define MAX_TASKS   64
#define MAX_THREADS 5

typedef struct {
    atomic_int runs[MAX_TASKS];
    int thread_of[MAX_TASKS];
    int seq[MAX_THREADS][MAX_TASKS]; /* the tasks each thread ran, in order */
    int nseq[MAX_THREADS];
    int nthreads, ntasks;
    atomic_int bad_thread;
    int stall_first; /* thread 0's first task waits until every other task has run */
} record;

static void record_task(void *arg, int task, int thread) {
    record *r = arg;
    if (thread < 0 || thread >= r->nthreads) {
        atomic_store(&r->bad_thread, 1);
        return;
    }
    r->seq[thread][r->nseq[thread]++] = task;
    atomic_fetch_add(&r->runs[task], 1);
    r->thread_of[task] = thread;
    if (!(r->stall_first && thread == 0 && r->nseq[0] == 1)) return;
    /* Wait for the others (10 s at most: a pool that never takes the rest fails, not hangs). */
    for (int ms = 0; ms < 10000; ms++) {
        int done = 0;
        for (int t = 0; t < r->ntasks; t++) done += atomic_load(&r->runs[t]) > 0;
        if (done == r->ntasks) return;
        nanosleep(&(struct timespec){0, 1000000L}, NULL);
    }
}

static void reset(record *r, int nthreads, int ntasks, int stall_first) {
    for (int t = 0; t < MAX_TASKS; t++) atomic_store(&r->runs[t], 0), r->thread_of[t] = -1;
    for (int k = 0; k < MAX_THREADS; k++) r->nseq[k] = 0;
    atomic_store(&r->bad_thread, 0);
    r->nthreads = nthreads, r->ntasks = ntasks;
    r->stall_first = stall_first;
}

static void test_every_task_once(void) {
    static record r;
    for (int threads = 1; threads <= MAX_THREADS; threads++) {
        wc_pool *pool = wc_pool_create(threads);
        CHECK(wc_pool_threads(pool) == threads, "%d threads: the pool reports %d", threads,
              wc_pool_threads(pool));
        for (int ntasks = 0; ntasks <= MAX_TASKS; ntasks++) {
            /* many jobs in a row: workers must not miss one or run one twice */
            for (int rep = 0; rep < 20; rep++) {
                reset(&r, threads, ntasks, 0);
                wc_pool_run(pool, ntasks, record_task, &r);
                int wrong = 0;
                for (int t = 0; t < MAX_TASKS; t++)
                    wrong += atomic_load(&r.runs[t]) != (t < ntasks);
                CHECK(wrong == 0 && !atomic_load(&r.bad_thread),
                      "%d threads, %d tasks: %d tasks not run exactly once, bad thread index %d",
                      threads, ntasks, wrong, atomic_load(&r.bad_thread));
                if (wrong) break;
            }
        }
        wc_pool_destroy(pool);
    }
}

/* The caller (thread 0) is held in its first task, the front of its share (task 0), until
 * every other task has run: the worker runs its own share (8..15) in order, then the caller's
 * (7 down to 1) from the back. (Should the caller be descheduled before it takes task 0, the
 * worker takes that too, last, and the caller runs nothing.) */
static void test_own_share_first_then_the_others(void) {
    static record r;
    const int ntasks = 16;
    wc_pool *pool = wc_pool_create(2);
    reset(&r, 2, ntasks, 1);
    wc_pool_run(pool, ntasks, record_task, &r);
    CHECK(r.nseq[0] == 0 || (r.nseq[0] == 1 && r.seq[0][0] == 0),
          "the caller ran %d tasks, first %d (want task 0 alone)", r.nseq[0], r.seq[0][0]);
    if (r.nseq[0] == 0) NOTE("the worker took every task (the caller started late)");
    int in_order = r.nseq[1] == ntasks - r.nseq[0];
    for (int i = 0; in_order && i < r.nseq[1]; i++)
        in_order = r.seq[1][i] == (i < 8 ? 8 + i : 15 - i);
    CHECK(in_order,
          "the worker ran %d tasks, not its share in order and then the caller's from "
          "the back (starting %d %d, ending %d)",
          r.nseq[1], r.seq[1][0], r.seq[1][1], r.seq[1][r.nseq[1] > 0 ? r.nseq[1] - 1 : 0]);
    wc_pool_destroy(pool);
}

int main(void) {
    RUN(test_every_task_once);
    RUN(test_own_share_first_then_the_others);
    HARNESS_EXIT();
}
