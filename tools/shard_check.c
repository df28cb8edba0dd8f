/* shard_check.c: a test tool run under mpirun. Every rank plans the dataset (collectively) and
 * computes, step by step, the patches its micro-batches read; rank 0 gathers them and checks
 * that over each epoch the ranks together read every training patch exactly once. It prints a
 * digest of each epoch's read order (the gathered batches in micro-batch order) and the
 * normalization statistics in hexadecimal, so runs on different rank counts can be compared
 * bit for bit: the same order and statistics as one process. The training loop asks the same
 * schedule functions what to read (train.c, submit_ahead).
 *
 *   mpirun -np N build/tools/shard_check TILES PATCH BATCH MICRO [EPOCHS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/dataset.h"
#include "wildcpu/dist.h"
#include "wildcpu/schedule.h"
#include "wildcpu/util.h"

int main(int argc, char **argv) {
    if (wc_dist_init(&argc, &argv) != WC_OK) return 1;
    if (argc < 5) {
        fprintf(stderr, "usage: shard_check TILES PATCH BATCH MICRO [EPOCHS]\n");
        wc_dist_finalize();
        return 2;
    }
    wc_log_set_quiet(1);
    wc_data_config cfg;
    wc_data_config_default(&cfg);
    cfg.tiles = argv[1];
    cfg.patch = atoi(argv[2]);
    const int batch = atoi(argv[3]), micro = atoi(argv[4]), epochs = argc > 5 ? atoi(argv[5]) : 2;
    wc_dataset *ds = wc_dataset_open(&cfg, NULL);
    if (!ds) {
        wc_dist_finalize();
        return 1;
    }
    const int R = wc_dist_size(), rank = wc_dist_rank();
    if (R > 64) {
        fprintf(stderr, "shard_check: at most 64 ranks\n");
        wc_dist_finalize();
        return 2;
    }
    wc_schedule s;
    long spe = wc_schedule_steps_per_epoch(ds->ntrain, batch);
    wc_schedule_init(&s, ds->train, ds->ntrain, batch, micro, rank, R, cfg.seed, epochs * spe);
    int failures = 0;
    uint32_t *mine = WC_ALLOC(sizeof(uint32_t) * (batch + 1)),
             *all = WC_ALLOC(sizeof(uint32_t) * (batch + 1));
    int *seen = WC_ALLOC(sizeof(int) * ds->npatches);
    size_t *counts = WC_ALLOC(sizeof(size_t) * R);
    for (int e = 0; e < epochs; e++) {
        memset(seen, 0, sizeof(int) * ds->npatches);
        long total = 0;
        uint64_t order = 0;
        for (long step = e * spe; step < (e + 1) * spe; step++) {
            int lo, hi, n = 0;
            wc_schedule_micro_batches(&s, step, &lo, &hi);
            for (int j = lo; j < hi; j++) n += wc_schedule_patches(&s, step, j, mine + n);
            int64_t nn[64] = {0};
            nn[rank] = n;
            wc_dist_sum_i64(nn, (size_t)R);
            for (int r = 0; r < R; r++) counts[r] = (size_t)nn[r] * sizeof(uint32_t);
            /* rank order = micro-batch order: the gathered list is the step's batch in order */
            wc_dist_gatherv(mine, (size_t)n * sizeof(uint32_t), all, counts, 0);
            if (rank != 0) continue;
            long got = 0;
            for (int r = 0; r < R; r++) got += nn[r];
            for (long i = 0; i < got; i++) seen[all[i]]++;
            order = wc_fnv1a64(all, (size_t)got * sizeof(uint32_t)) ^ (order * 0x100000001b3ull);
            total += got;
        }
        if (rank == 0) {
            long twice = 0, missing = 0;
            for (long i = 0; i < ds->ntrain; i++) {
                twice += seen[ds->train[i]] > 1;
                missing += seen[ds->train[i]] == 0;
            }
            long strays = 0;
            for (long id = 0; id < ds->npatches; id++)
                strays += seen[id] && (!ds->keep[id] || ds->is_val[id]);
            printf("epoch %d: %ld samples read by %d ranks, %ld training patches, %ld twice, %ld "
                   "missing, %ld not training\n",
                   e, total, R, ds->ntrain, twice, missing, strays);
            printf("order epoch %d %016llx\n", e, (unsigned long long)order);
            failures += total != ds->ntrain || twice || missing || strays;
        }
    }
    if (rank == 0) {
        printf("stats");
        for (int c = 0; c < ds->nfeat; c++) printf(" %a/%a", ds->mean[c], ds->std[c]);
        printf("\nsplit %ld/%ld kept %ld pixels %lld burned %lld\n", ds->ntrain, ds->nval,
               ds->ntrain + ds->nval, (long long)ds->train_pixels, (long long)ds->train_positives);
        printf("%s\n", failures ? "COVERAGE FAILED" : "coverage ok");
    }
    wc_schedule_free(&s);
    free(mine), free(all), free(seen), free(counts);
    wc_dataset_close(ds);
    wc_dist_finalize();
    return failures ? 1 : 0;
}
