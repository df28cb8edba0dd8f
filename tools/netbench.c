/* netbench.c: what the network between the ranks does, measured with MPI itself: a ping-pong
 * between ranks 0 and 1 (latency and bandwidth of the link), and the reduction a training step
 * makes (one MPI_Allreduce of COUNT int64 or float values, then an MPI_MAX of 22 doubles, as
 * src/reduce.c does), timed on its own after a barrier so that no rank waits for a slower one's
 * compute. tools/bench_scaling.sh runs it inside a network namespace whose loopback is shaped.
 *
 *   mpirun -np 2 build/tools/netbench pingpong [REPS]
 *   mpirun -np N build/tools/netbench allreduce COUNT i64|f32 [REPS]
 *
 * Output: one line of key=value pairs per measurement (times in seconds, the median over the
 * repetitions, with min and max; for allreduce the slowest rank's time of each repetition).
 * When /sys/class/net/lo/statistics/tx_bytes is readable (it is inside `ip netns exec`), the
 * bytes that crossed the loopback during the timed repetitions are given per operation
 * (wire_bytes: every rank's traffic together, TCP/IP headers included).
 *
 * Not here: shaping the link, choosing the transport (mpirun's --mca options do). */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sorts t in place; median, min and max. */
static void stats(double *t, int n, double *med, double *lo, double *hi) {
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    *med = n % 2 ? t[n / 2] : 0.5 * (t[n / 2 - 1] + t[n / 2]);
    *lo = t[0];
    *hi = t[n - 1];
}

/* Bytes sent through this network namespace's loopback so far; -1 when unknown. */
static long long lo_tx_bytes(void) {
    FILE *f = fopen("/sys/class/net/lo/statistics/tx_bytes", "r");
    long long v = -1;
    if (!f) return -1;
    if (fscanf(f, "%lld", &v) != 1) v = -1;
    fclose(f);
    return v;
}

static void pingpong(int rank, int reps) {
    static const long sizes[] = {8, 65536, 1 << 20, 4 << 20};
    const long maxsize = 4 << 20;
    char *buf = calloc((size_t)maxsize, 1);
    double *t = calloc((size_t)reps, sizeof *t);
    if (!buf || !t) MPI_Abort(MPI_COMM_WORLD, 1);
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        const int n = (int)sizes[s];
        /* small messages need many round trips for a stable median, large ones few */
        const int r = n <= 65536 ? reps * 10 : reps;
        double *tt = n <= 65536 ? calloc((size_t)r, sizeof *tt) : t;
        if (!tt) MPI_Abort(MPI_COMM_WORLD, 1);
        for (int i = -2; i < r; i++) { /* two untimed round trips first */
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (rank == 0) {
                MPI_Send(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
                MPI_Recv(buf, n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (rank == 1) {
                MPI_Recv(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
            }
            if (i >= 0) tt[i] = (MPI_Wtime() - t0) / 2; /* one way */
        }
        if (rank == 0) {
            double med, lo, hi;
            stats(tt, r, &med, &lo, &hi);
            printf("pingpong bytes=%d reps=%d oneway_s=%.9f min_s=%.9f max_s=%.9f "
                   "bandwidth_Bps=%.6g\n",
                   n, r, med, lo, hi, n / med);
            fflush(stdout);
        }
        if (tt != t) free(tt);
    }
    free(buf);
    free(t);
}

static void allreduce(int rank, int size, long count, int is_i64, int reps) {
    const size_t elem = is_i64 ? sizeof(int64_t) : sizeof(float);
    void *buf = calloc((size_t)count, elem);
    double mx[22] = {0};
    double *t = calloc((size_t)reps, sizeof *t);
    if (!buf || !t) MPI_Abort(MPI_COMM_WORLD, 1);
    MPI_Datatype type = is_i64 ? MPI_INT64_T : MPI_FLOAT;
    long long b0 = 0;
    for (int i = -2; i < reps; i++) { /* two untimed repetitions first */
        if (i == 0) {
            MPI_Barrier(MPI_COMM_WORLD);
            b0 = lo_tx_bytes();
        }
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(MPI_IN_PLACE, buf, (int)count, type, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allreduce(MPI_IN_PLACE, mx, 22, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0;
        MPI_Allreduce(MPI_IN_PLACE, &dt, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (i >= 0) t[i] = dt;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    long long b1 = lo_tx_bytes();
    if (rank == 0) {
        double med, lo, hi;
        stats(t, reps, &med, &lo, &hi);
        /* the barriers and the timing's own MPI_MAX add a few hundred bytes per repetition */
        double wire = b0 >= 0 && b1 >= b0 ? (double)(b1 - b0) / reps : -1;
        printf("allreduce ranks=%d type=%s count=%ld bytes=%ld reps=%d median_s=%.9f min_s=%.9f "
               "max_s=%.9f wire_bytes=%.0f\n",
               size, is_i64 ? "i64" : "f32", count, count * (long)elem, reps, med, lo, hi, wire);
        fflush(stdout);
    }
    free(buf);
    free(t);
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int rc = 0;
    if (argc >= 2 && strcmp(argv[1], "pingpong") == 0 && size >= 2) {
        pingpong(rank, argc > 2 ? atoi(argv[2]) : 10);
    } else if (argc >= 4 && strcmp(argv[1], "allreduce") == 0 && atol(argv[2]) > 0 &&
               (strcmp(argv[3], "i64") == 0 || strcmp(argv[3], "f32") == 0)) {
        allreduce(rank, size, atol(argv[2]), strcmp(argv[3], "i64") == 0,
                  argc > 4 && atoi(argv[4]) > 0 ? atoi(argv[4]) : 10);
    } else {
        if (rank == 0)
            fprintf(stderr, "usage: mpirun -np 2 netbench pingpong [REPS]\n"
                            "       mpirun -np N netbench allreduce COUNT i64|f32 [REPS]\n");
        rc = 2;
    }
    MPI_Finalize();
    return rc;
}
