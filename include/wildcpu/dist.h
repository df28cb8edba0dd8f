/* dist.h: the job's processes (MPI ranks) and the few collectives wildcpu uses.
 *
 * Works the same as a single process (an MPI singleton: ./wildcpu), under mpirun and under
 * Slurm's srun. A fatal error on any rank ends every rank through MPI_Abort, so nobody hangs
 * in a collective; wc_dist_init installs that as util's fatal hook.
 *
 * Not here: what is reduced (see reduce.h for gradients, metrics.h for validation). */
#ifndef WILDCPU_DIST_H
#define WILDCPU_DIST_H

#include <stddef.h>
#include <stdint.h>

/* Initializes MPI (thread level FUNNELED: only the main thread calls MPI; the data reader
 * thread never does), sets the log prefix, installs the fatal hook, and checks the launch:
 * if SLURM_NTASKS says N tasks but MPI reports a different world size (a launcher that started
 * N singletons), logs why and returns WC_ERR. */
int wc_dist_init(int *argc, char ***argv);
void wc_dist_finalize(void);
int wc_dist_rank(void);
int wc_dist_size(void);

void wc_dist_barrier(void);
/* In-place sums and maxima over all ranks. */
void wc_dist_sum_i64(int64_t *buf, size_t n);
void wc_dist_sum_f64(double *buf, size_t n);
void wc_dist_sum_f32(float *buf, size_t n);
void wc_dist_max_f64(double *buf, size_t n);
/* Nonblocking in-place sums (MPI_Iallreduce), for overlapping the gradient reduction with the
 * backward pass. Each call starts one collective (or several, for more than 2^28 values) that
 * every rank must start in the same order; buf must stay untouched until wc_dist_wait returns.
 * wc_dist_progress lets MPI advance the pending ones (MPI_Testall; Open MPI's TCP transport
 * moves bytes only inside MPI calls) and returns 1 once all are complete. wc_dist_wait
 * completes them all. No-ops on one rank. */
void wc_dist_isum_i64(int64_t *buf, size_t n);
void wc_dist_isum_f32(float *buf, size_t n);
int wc_dist_progress(void);
void wc_dist_wait(void);
/* The agreements that keep a rank from waiting in a collective another rank will never join:
 * whether any rank's flag is set (a failure, a stop signal), and the largest of the ranks'
 * values (an exit status). The same answer on every rank. Collective. */
int wc_dist_any(int flag);
int wc_dist_max_int(int value);
/* The sum of value over the ranks that share this rank's machine (its memory), each value
 * capped at 2^48 (256 TiB) so that the sum cannot wrap; *first_on_host is set on the lowest of
 * them, which speaks for the machine. Collective. */
uint64_t wc_dist_host_sum_u64(uint64_t value, int *first_on_host);
/* Every rank together, once the ranks have agreed to stop: learns the lowest rank a stop signal
 * reached and its signal (wc_stop_set_origin), so that the messages of a rank the signal did not
 * reach (rank 0, which writes DIR/STOPPED) name them rather than "another rank". Collective. */
void wc_dist_agree_stop_origin(void);
/* Rank 0 working alone while the other ranks wait for it (preparing --labels, writing the
 * split raster): so that a stop signal on any rank ends the work promptly, rank 0 meets the
 * others in a small collective every fifth of a second of work, and the others wait in that
 * same collective, again and again, until rank 0 says it is done: every rank makes the same
 * calls, and they all learn the same stop. */
typedef struct wc_dist_solo {
    double last; /* when rank 0 last met the others */
    int stop;    /* a rank has a stop signal: every rank knows it */
} wc_dist_solo;
void wc_dist_solo_start(wc_dist_solo *s);
/* Rank 0, while working: 1 to go on, 0 once the ranks agreed to stop. */
int wc_dist_solo_go_on(wc_dist_solo *s);
/* Every rank, once: rank 0 when its work has ended, the others at once (they wait in it until
 * rank 0 comes). Collective. Returns whether the ranks agreed to stop while rank 0 worked (it
 * then gave its work up), the same on every rank; a stop signal that comes later is left to the
 * next phase. */
int wc_dist_solo_end(wc_dist_solo *s);
/* Broadcast of bytes from root. */
void wc_dist_bcast(void *buf, size_t bytes, int root);
/* Every rank contributes `count` bytes; all ranks receive the concatenation in rank order.
 * counts (nranks) are each rank's byte counts, the same array on every rank. */
void wc_dist_allgatherv(const void *send, size_t count, void *recv, const size_t *counts);
/* Gathers to root: like allgatherv, but only root receives (recv may be NULL elsewhere). */
void wc_dist_gatherv(const void *send, size_t count, void *recv, const size_t *counts, int root);
/* Point to point, for the ordered chain that makes sums identical on any rank count. */
void wc_dist_send(const void *buf, size_t bytes, int to);
void wc_dist_recv(void *buf, size_t bytes, int from);

/* The part [lo, hi) of n items that rank r of R handles: contiguous, sizes differ by at most 1,
 * ranks with nothing get an empty range. */
void wc_dist_share(long n, int r, int R, long *lo, long *hi);

#endif
