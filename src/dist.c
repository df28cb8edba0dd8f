/* dist.c: MPI behind a small interface; see dist.h. Every MPI call is checked: a failing
 * collective is fatal for the job, never silently ignored. */
#include "wildcpu/dist.h"

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/stop.h"
#include "wildcpu/util.h"

static int dist_rank = 0, dist_size = 1, dist_up = 0;

#define MPI_CHECK(call)                                                                            \
    do {                                                                                           \
        int rc_ = (call);                                                                          \
        if (rc_ != MPI_SUCCESS) mpi_fail(rc_, #call, __FILE__, __LINE__);                          \
    } while (0)

static void mpi_fail(int rc, const char *what, const char *file, int line) {
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    MPI_Error_string(rc, msg, &len);
    wc_fatal("MPI call %s failed at %s:%d: %s", what, file, line, msg);
}

static void abort_hook(int status) {
    if (dist_up && dist_size > 1) MPI_Abort(MPI_COMM_WORLD, status);
    /* A single process needs no MPI_Abort: a plain exit is cleaner for its parent. */
}

int wc_dist_init(int *argc, char ***argv) {
    int provided = 0;
    MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided));
    dist_up = 1;
    MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &dist_rank));
    MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &dist_size));
    /* Errors come back as return codes (checked by MPI_CHECK) instead of MPI's own abort. */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    wc_log_set_rank(dist_rank, dist_size);
    wc_set_fatal_hook(abort_hook);
    /* The read-ahead thread makes no MPI call; only the main thread does (FUNNELED). */
    if (provided < MPI_THREAD_FUNNELED) {
        wc_error("this MPI library offers no thread support (MPI_THREAD_FUNNELED), which the "
                 "read-ahead thread needs");
        return WC_ERR;
    }
    const char *ntasks = getenv("SLURM_NTASKS");
    const char *step = getenv("SLURM_STEP_ID");
    /* Only inside a job step (srun) must the world match SLURM_NTASKS; a batch script's shell
     * also sees SLURM_NTASKS but a program it starts without srun is legitimately alone. */
    char *end = NULL;
    const long tasks = ntasks ? strtol(ntasks, &end, 10) : 0;
    const int counted = ntasks && *ntasks && end && !*end && tasks > 0; /* else not Slurm's */
    /* Ranks Open MPI's mpirun started are not the step's tasks: on the nodes it reaches through
     * srun (one orted per node), they inherit the orted step's SLURM_STEP_ID and SLURM_NTASKS,
     * the count of nodes, and `mpirun -np 64` over two nodes was refused. mpirun's ranks carry
     * OMPI_COMM_WORLD_SIZE in their environment; those srun starts itself do not (measured with
     * Slurm 22.05 and Open MPI 4.1). */
    const int by_mpirun = getenv("OMPI_COMM_WORLD_SIZE") != NULL;
    if (counted && step && !by_mpirun && tasks != dist_size) {
        if (dist_size == 1)
            wc_error("Slurm started %ld tasks but MPI sees a world of 1 process: the launcher "
                     "started independent singletons. Use `srun --mpi=pmix` (see "
                     "jobs/train.sbatch) or check that Open MPI was built with Slurm/PMIx support",
                     tasks);
        else
            wc_error("Slurm started %ld tasks in this job step but MPI sees a world of %d "
                     "processes: another launcher runs inside the step (mpirun within srun?); "
                     "start the ranks with `srun --mpi=pmix` alone (see jobs/train.sbatch)",
                     tasks, dist_size);
        return WC_ERR;
    }
    return WC_OK;
}

void wc_dist_finalize(void) {
    if (!dist_up) return;
    MPI_Finalize();
    dist_up = 0;
}

int wc_dist_rank(void) {
    return dist_rank;
}
int wc_dist_size(void) {
    return dist_size;
}

void wc_dist_barrier(void) {
    MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
}

/* MPI counts are int: large buffers go in pieces. */
#define CHUNK (1 << 28)

static void allreduce(void *buf, size_t n, MPI_Datatype type, size_t size, MPI_Op op) {
    if (dist_size == 1) return;
    char *p = buf;
    while (n > 0) {
        int c = n > CHUNK ? CHUNK : (int)n;
        MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, p, c, type, op, MPI_COMM_WORLD));
        p += (size_t)c * size;
        n -= (size_t)c;
    }
}

void wc_dist_sum_i64(int64_t *buf, size_t n) {
    allreduce(buf, n, MPI_INT64_T, sizeof *buf, MPI_SUM);
}
void wc_dist_sum_f64(double *buf, size_t n) {
    allreduce(buf, n, MPI_DOUBLE, sizeof *buf, MPI_SUM);
}
void wc_dist_sum_f32(float *buf, size_t n) {
    allreduce(buf, n, MPI_FLOAT, sizeof *buf, MPI_SUM);
}
void wc_dist_max_f64(double *buf, size_t n) {
    allreduce(buf, n, MPI_DOUBLE, sizeof *buf, MPI_MAX);
}

/* The pending nonblocking collectives, completed together by wc_dist_wait. A step starts a
 * few (one per gradient bucket); beyond the table's size the oldest are waited for first. */
#define MAX_PENDING 256
static MPI_Request pending[MAX_PENDING];
static int npending = 0;

static void iallreduce(void *buf, size_t n, MPI_Datatype type, size_t size) {
    if (dist_size == 1) return;
    char *p = buf;
    while (n > 0) {
        if (npending == MAX_PENDING) wc_dist_wait();
        int c = n > CHUNK ? CHUNK : (int)n;
        MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, p, c, type, MPI_SUM, MPI_COMM_WORLD,
                                 &pending[npending++]));
        p += (size_t)c * size;
        n -= (size_t)c;
    }
}

void wc_dist_isum_i64(int64_t *buf, size_t n) {
    iallreduce(buf, n, MPI_INT64_T, sizeof *buf);
}
void wc_dist_isum_f32(float *buf, size_t n) {
    iallreduce(buf, n, MPI_FLOAT, sizeof *buf);
}

int wc_dist_progress(void) {
    if (npending == 0) return 1;
    int done = 0;
    MPI_CHECK(MPI_Testall(npending, pending, &done, MPI_STATUSES_IGNORE));
    if (done) npending = 0;
    return done;
}

void wc_dist_wait(void) {
    if (npending == 0) return;
    MPI_CHECK(MPI_Waitall(npending, pending, MPI_STATUSES_IGNORE));
    npending = 0;
}

int wc_dist_any(int flag) {
    int64_t v = flag != 0;
    wc_dist_sum_i64(&v, 1);
    return v > 0;
}

int wc_dist_max_int(int value) {
    if (dist_size == 1) return value;
    int v = value;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD));
    return v;
}

uint64_t wc_dist_host_sum_u64(uint64_t value, int *first_on_host) {
    *first_on_host = 1;
    /* saturating: a value that saturated (a plan of absurd options) must not wrap the sum to a
     * small one; no machine has 2^48 bytes, and fewer than 2^16 ranks on one cannot wrap 2^64 */
    const uint64_t cap = (uint64_t)1 << 48;
    value = value < cap ? value : cap;
    if (dist_size == 1) return value;
    MPI_Comm host;
    MPI_CHECK(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, dist_rank, MPI_INFO_NULL, &host));
    int host_rank;
    MPI_CHECK(MPI_Comm_rank(host, &host_rank));
    uint64_t v = value;
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_UINT64_T, MPI_SUM, host));
    MPI_CHECK(MPI_Comm_free(&host));
    *first_on_host = host_rank == 0;
    return v;
}

void wc_dist_bcast(void *buf, size_t bytes, int root) {
    if (dist_size == 1) return;
    char *p = buf;
    while (bytes > 0) {
        int c = bytes > CHUNK ? CHUNK : (int)bytes;
        MPI_CHECK(MPI_Bcast(p, c, MPI_BYTE, root, MPI_COMM_WORLD));
        p += c;
        bytes -= (size_t)c;
    }
}

static void counts_to_int(const size_t *counts, int **c, int **d) {
    *c = WC_ALLOC(sizeof(int) * dist_size);
    *d = WC_ALLOC(sizeof(int) * dist_size);
    size_t off = 0;
    for (int r = 0; r < dist_size; r++) {
        if (counts[r] > INT_MAX || off > INT_MAX)
            wc_fatal("gather of %zu bytes is larger than MPI's int counts allow", off + counts[r]);
        (*c)[r] = (int)counts[r];
        (*d)[r] = (int)off;
        off += counts[r];
    }
}

void wc_dist_allgatherv(const void *send, size_t count, void *recv, const size_t *counts) {
    if (dist_size == 1) {
        memmove(recv, send, count);
        return;
    }
    int *c, *d;
    counts_to_int(counts, &c, &d);
    MPI_CHECK(MPI_Allgatherv(send, (int)count, MPI_BYTE, recv, c, d, MPI_BYTE, MPI_COMM_WORLD));
    free(c);
    free(d);
}

void wc_dist_gatherv(const void *send, size_t count, void *recv, const size_t *counts, int root) {
    if (dist_size == 1) {
        memmove(recv, send, count);
        return;
    }
    int *c, *d;
    counts_to_int(counts, &c, &d);
    MPI_CHECK(MPI_Gatherv(send, (int)count, MPI_BYTE, recv, c, d, MPI_BYTE, root, MPI_COMM_WORLD));
    free(c);
    free(d);
}

void wc_dist_send(const void *buf, size_t bytes, int to) {
    WC_ASSERT(bytes <= INT_MAX);
    MPI_CHECK(MPI_Send(buf, (int)bytes, MPI_BYTE, to, 0, MPI_COMM_WORLD));
}

void wc_dist_recv(void *buf, size_t bytes, int from) {
    WC_ASSERT(bytes <= INT_MAX);
    MPI_CHECK(MPI_Recv(buf, (int)bytes, MPI_BYTE, from, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
}

void wc_dist_share(long n, int r, int R, long *lo, long *hi) {
    *lo = (long)((long long)n * r / R);
    *hi = (long)((long long)n * (r + 1) / R);
}

void wc_dist_agree_stop_origin(void) {
    const int size = wc_dist_size(), rank = wc_dist_rank(), sig = wc_stop_signal();
    /* one collective: the largest (size - rank) wins, so the lowest rank; signals are < 128 */
    const int v = wc_dist_max_int(sig ? (size - rank) * 128 + sig : 0);
    if (v > 0) wc_stop_set_origin(size - v / 128, v % 128);
}

/* ---- rank 0 working alone ------------------------------------------------------------------ */

#define SOLO_SECONDS 0.2

/* One meeting: rank 0 says whether it is done (the others pass 0), every rank whether it has a
 * stop signal. Returns whether rank 0 is done. A stop that comes once rank 0 is done stopped
 * nothing: its work is complete, and the signal stays for the next phase to honour. */
static int solo_meet(wc_dist_solo *s, int done) {
    const int finished = wc_dist_any(done);
    const int stop = wc_dist_any(wc_stop_requested());
    if (!finished) s->stop |= stop;
    return finished;
}

void wc_dist_solo_start(wc_dist_solo *s) {
    s->last = wc_now();
    s->stop = 0;
}

int wc_dist_solo_go_on(wc_dist_solo *s) {
    if (!s->stop && wc_now() - s->last >= SOLO_SECONDS) {
        s->last = wc_now();
        solo_meet(s, 0);
    }
    return !s->stop;
}

int wc_dist_solo_end(wc_dist_solo *s) {
    if (wc_dist_rank() == 0)
        solo_meet(s, 1);
    else
        while (!solo_meet(s, 0)) continue;
    return s->stop;
}
