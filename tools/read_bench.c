/* read_bench.c: throughput of the sharded reader, without training. Every rank plans the
 * dataset (collectively), then reads, with the same reader thread training uses, the training
 * patches its micro-batches would read over an epoch; twice (GDAL's block cache cold, then
 * warm). Prints MB/s and patches/s per rank and for the job (bytes of all ranks over the
 * slowest rank's time).
 *
 *   mpirun -np N build/tools/read_bench TILES [PATCH] [BATCH] [MICRO] */
#include <stdio.h>
#include <stdlib.h>

#include "wildcpu/dataset.h"
#include "wildcpu/dist.h"
#include "wildcpu/reader.h"
#include "wildcpu/schedule.h"
#include "wildcpu/util.h"

int main(int argc, char **argv) {
    if (wc_dist_init(&argc, &argv) != WC_OK || argc < 2) return 2;
    wc_log_set_quiet(1);
    wc_data_config cfg;
    wc_data_config_default(&cfg);
    cfg.tiles = argv[1];
    cfg.patch = argc > 2 ? atoi(argv[2]) : 64;
    int batch = argc > 3 ? atoi(argv[3]) : 32, micro = argc > 4 ? atoi(argv[4]) : 4;
    double t0 = wc_now();
    wc_dataset *ds = wc_dataset_open(&cfg, NULL);
    if (!ds) return 1;
    double t_plan = wc_now() - t0;
    const int R = wc_dist_size(), rank = wc_dist_rank();
    wc_schedule s;
    long spe = wc_schedule_steps_per_epoch(ds->ntrain, batch);
    wc_schedule_init(&s, ds->train, ds->ntrain, batch, micro, rank, R, 1, 2 * spe);
    wc_reader *rd = wc_reader_create(ds, 8, micro);
    uint32_t ids[4096];
    wc_sample samples[4096];
    for (int epoch = 0; epoch < 2; epoch++) {
        wc_dist_barrier();
        long p0;
        double b0;
        wc_reader_counts(rd, &p0, &b0);
        double start = wc_now();
        int queued = 0;
        for (long step = epoch * spe; step < (epoch + 1) * spe; step++) {
            int lo, hi;
            wc_schedule_micro_batches(&s, step, &lo, &hi);
            for (int j = lo; j < hi; j++) {
                if (!wc_reader_can_submit(rd)) { /* keep the reader busy, consume in order */
                    const wc_read_batch *b;
                    if (wc_reader_take(rd, &b) != WC_OK) return 1;
                    wc_reader_release(rd);
                    queued--;
                }
                int n = wc_schedule_patches(&s, step, j, ids);
                for (int i = 0; i < n; i++) samples[i] = (wc_sample){.id = ids[i]};
                wc_reader_submit(rd, samples, n, step);
                queued++;
            }
        }
        for (; queued > 0; queued--) {
            const wc_read_batch *b;
            if (wc_reader_take(rd, &b) != WC_OK) return 1;
            wc_reader_release(rd);
        }
        double dt = wc_now() - start;
        long p1;
        double b1;
        wc_reader_counts(rd, &p1, &b1);
        double mine[3] = {(double)(p1 - p0), b1 - b0, dt}, sum[3] = {mine[0], mine[1], 0},
               mx[1] = {dt};
        wc_dist_sum_f64(sum, 2);
        wc_dist_max_f64(mx, 1);
        printf("rank %d epoch %d (%s cache): %.0f patches, %.1f MB in %.3f s: %.1f MB/s, %.0f "
               "patches/s\n",
               rank, epoch + 1, epoch ? "warm" : "cold", mine[0], mine[1] / 1e6, dt,
               mine[1] / 1e6 / dt, mine[0] / dt);
        fflush(stdout);
        wc_dist_barrier();
        if (rank == 0)
            printf("job, %d rank(s), epoch %d: %.0f patches, %.1f MB in %.3f s: %.1f MB/s, %.0f "
                   "patches/s (planning pass before: %.2f s)\n",
                   R, epoch + 1, sum[0], sum[1] / 1e6, mx[0], sum[1] / 1e6 / mx[0], sum[0] / mx[0],
                   t_plan);
    }
    wc_reader_destroy(rd);
    wc_schedule_free(&s);
    wc_dataset_close(ds);
    wc_dist_finalize();
    return 0;
}
