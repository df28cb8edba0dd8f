/* cache_share.c: does one core read what another core just wrote from a shared cache, or from
 * memory? The answer decides how much a second thread of one rank gains (pool.c keeps each
 * thread on the samples it wrote in the previous pass for this reason).
 *
 *   build/tools/cache_share [--json] [MiB ...]      default: 2 8 32
 *
 * For each size, thread 0 writes a buffer, then either thread 0 or thread 1 (pinned to CPUs 0
 * and 1) reads it back; 100 rounds each way, the reads timed. Prints GB/s for "same core" and
 * "other core" (--json: one JSON line per size, for tools/bench.sh). On a CPU whose cores share
 * their last-level cache the two are close while the buffer fits in it; where they do not (seen on
 * a 2-vCPU AMD EPYC, family 26: 81 against 30 GB/s at 8 MiB), the other core reads at memory speed.
 * A benchmark tool, not a test. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/util.h"

#define ROUNDS 100

typedef struct {
    float *buf;
    size_t n;
    int reader;          /* the thread that reads: 0 (the writer itself) or 1 */
    atomic_int phase;    /* 2 r: round r's write may start; 2 r + 1: its read may start */
    double read_seconds; /* the reads' time, summed */
    double checksum;     /* the reads' sum */
} job;

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

static double read_all(const float *restrict b, size_t n) {
    float s[16] = {0};
    for (size_t i = 0; i + 16 <= n; i += 16)
        for (int k = 0; k < 16; k++) s[k] += b[i + k];
    double sum = 0;
    for (int k = 0; k < 16; k++) sum += s[k];
    return sum;
}

static void *run(void *arg, int self) {
    job *j = arg;
    pin(self);
    for (int r = 0; r < ROUNDS; r++) {
        while (atomic_load(&j->phase) < 2 * r) sched_yield();
        if (self == 0) {
            for (size_t i = 0; i < j->n; i++) j->buf[i] = (float)(i + r);
            atomic_store(&j->phase, 2 * r + 1);
        }
        if (self == j->reader) {
            while (atomic_load(&j->phase) < 2 * r + 1) sched_yield();
            double t0 = wc_now();
            j->checksum += read_all(j->buf, j->n);
            j->read_seconds += wc_now() - t0;
            atomic_store(&j->phase, 2 * r + 2);
        }
    }
    return NULL;
}

static volatile double sink; /* the reads' sum, stored so that they cannot be left out */

static void *thread1(void *arg) {
    return run(arg, 1);
}

static double measure(size_t bytes, int reader) {
    job j = {.n = bytes / sizeof(float), .reader = reader};
    j.buf = WC_ALLOC(bytes);
    atomic_init(&j.phase, 0);
    pthread_t t;
    if (pthread_create(&t, NULL, thread1, &j) != 0) wc_fatal("cannot start a thread");
    run(&j, 0);
    pthread_join(t, NULL);
    free(j.buf);
    sink = j.checksum;
    return (double)bytes * ROUNDS / j.read_seconds / 1e9;
}

int main(int argc, char **argv) {
    const char *defaults[] = {"2", "8", "32"};
    int json = argc > 1 && !strcmp(argv[1], "--json");
    char **sizes = argv + 1 + json;
    int n = argc - 1 - json;
    if (n == 0) sizes = (char **)defaults, n = 3;
    if (!json) printf("buffer MiB   same core GB/s   other core GB/s\n");
    for (int i = 0; i < n; i++) {
        const double mib = atof(sizes[i]);
        if (!(mib > 0 && mib <= 4096)) {
            fprintf(stderr, "cache_share: sizes are MiB from above 0 to 4096, got '%s'\n",
                    sizes[i]);
            return 2;
        }
        const size_t bytes = (size_t)(mib * 1048576.0) / 64 * 64;
        const double same = measure(bytes, 0), other = measure(bytes, 1);
        if (json)
            printf("{\"mib\": %g, \"same_core_gbps\": %.2f, \"other_core_gbps\": %.2f}\n", mib,
                   same, other);
        else
            printf("%10g   %14.1f   %15.1f\n", mib, same, other);
    }
    return 0;
}
