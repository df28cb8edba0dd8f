/* validation.c: the validation blocks scored with the map's computation; see validation.h.
 *
 * Each rank takes a contiguous share of the blocks (in index order). Every rank makes the same
 * number of agreement rounds (the largest share), one per block, so that a read failure or a
 * stop signal on any rank is seen by all of them within one block. The accumulators are integer
 * histograms: their sum is the same for any number of ranks and any split. */
#include "wildcpu/validation.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wildcpu/dist.h"
#include "wildcpu/rwriter.h"
#include "wildcpu/stop.h"
#include "wildcpu/util.h"

/* The validation blocks in index order (by * bcols + bx), and this rank's share of them. */
static void plan_blocks(wc_validation *v) {
    const wc_dataset *ds = v->ds;
    const long B = ds->val_block, bcols = (ds->cols + B - 1) / B;
    const long nb = bcols * ((ds->rows + B - 1) / B);
    uint8_t *is_block = WC_CALLOC((size_t)nb + 1, 1);
    for (long id = 0; id < ds->npatches; id++)
        if (ds->is_val[id]) is_block[(id / ds->cols) / B * bcols + (id % ds->cols) / B] = 1;
    long n = 0;
    for (long b = 0; b < nb; b++) n += is_block[b];
    v->blocks = WC_ALLOC(sizeof(long) * (size_t)(n + 1));
    n = 0;
    for (long b = 0; b < nb; b++)
        if (is_block[b]) v->blocks[n++] = b;
    free(is_block);
    v->nblocks = n;
    const int rank = wc_dist_rank(), nranks = wc_dist_size();
    wc_dist_share(n, rank, nranks, &v->lo, &v->hi);
    v->max_share = (n + nranks - 1) / nranks;
}

/* A validation block's pixel rectangle: its patches' cells, clipped to the patch grid. */
static void block_rect(const wc_dataset *ds, long b, int64_t *x0, int64_t *y0, int64_t *w,
                       int64_t *h) {
    const long B = ds->val_block, bcols = (ds->cols + B - 1) / B;
    const long bx = b % bcols, by = b / bcols;
    *x0 = ds->x_origin + (int64_t)bx * B * ds->P, *y0 = ds->y_origin + (int64_t)by * B * ds->P;
    *w = (int64_t)WC_MIN(B, ds->cols - bx * B) * ds->P;
    *h = (int64_t)WC_MIN(B, ds->rows - by * B) * ds->P;
}

/* A validation block is scored in cores of at most this side (pixels), so the network's window,
 * and its memory, is that of one core whatever --val-block says (a block of the whole raster
 * would need gigabytes of activations). Windows snap to the exact alignment (infer.c), so a
 * pixel's value is the map's whichever core computes it (t_phase), and the accumulators are
 * integer sums over the same pixels. The default block (256 px, in whole patches) is one core
 * or a few equal ones. */
#define CORE_MAX 256

/* The core (x0, y0, w, h)'s probabilities, labels and oracle into the accumulators. */
static int score_core(wc_validation *v, int64_t x0, int64_t y0, int64_t w, int64_t h) {
    const wc_dataset *ds = v->ds;
    if (wc_infer_core(&v->inf, x0, y0, w, h, v->prob, v->px, 0.0f) != WC_OK ||
        wc_dataset_read_labels(ds, &v->files, x0, y0, w, h, v->y, v->use, v->scratch) != WC_OK ||
        (ds->oracle_path &&
         wc_dataset_read_oracle(ds, &v->files, x0, y0, w, h, v->oracle) != WC_OK))
        return WC_ERR;
    /* the pixels that count: of kept patches (every patch of a validation block is a
     * validation patch), a label, a probability; a valid pixel without a probability (the
     * network's output was not finite) is a broken model */
    const size_t n = (size_t)w * (size_t)h;
    for (size_t i = 0; i < n; i++) {
        const int64_t px = x0 + (int64_t)(i % (size_t)w), py = y0 + (int64_t)(i / (size_t)w);
        const long id =
            (long)((py - ds->y_origin) / ds->P) * ds->cols + (px - ds->x_origin) / ds->P;
        const int counts =
            v->use[i] && ds->keep[id] && v->px[i] != WC_PX_NODATA && v->px[i] != WC_PX_RANGE;
        v->beyond_range += v->use[i] && ds->keep[id] && v->px[i] == WC_PX_RANGE;
        if (counts && v->px[i] == WC_PX_BAD) {
            v->acc->bad_outputs++;
            v->bad_ordinary += v->inf.window_ordinary;
            if (!v->inf.window_ordinary && v->inf.window_outlier >= 0 &&
                (v->bad_outlier < 0 || v->inf.window_outlier < v->bad_outlier))
                v->bad_outlier = v->inf.window_outlier;
        }
        v->use[i] = counts && v->px[i] == WC_PX_VALID;
    }
    wc_metrics_add_probs(v->acc, v->prob, v->y, v->use, n, WC_METRICS_MAP_POS_WEIGHT);
    if (!ds->oracle_path) return WC_OK;
    /* the oracle over the same pixels, but those where it has no probability (its nodata, a
     * mask): left out and counted, not taken for a broken model */
    for (size_t i = 0; i < n; i++) {
        if (!v->use[i] || (v->oracle[i] >= 0.0f && v->oracle[i] <= 1.0f)) continue;
        v->use[i] = 0;
        v->oracle_missing++;
    }
    wc_metrics_add_probs(v->oracle_acc, v->oracle, v->y, v->use, n, WC_METRICS_MAP_POS_WEIGHT);
    return WC_OK;
}

/* Block b, core by core: as few cores as fit, of equal sides (a 288 px block is two of 144,
 * not 256 and a strip of 32 that pays a whole margin). */
static int score_block(wc_validation *v, long b) {
    int64_t x0, y0, w, h;
    block_rect(v->ds, b, &x0, &y0, &w, &h);
    const int64_t nx = (w + v->core - 1) / v->core, ny = (h + v->core - 1) / v->core;
    const int64_t sx = (w + nx - 1) / nx, sy = (h + ny - 1) / ny; /* at most v->core */
    for (int64_t cy = 0; cy < h; cy += sy)
        for (int64_t cx = 0; cx < w; cx += sx)
            if (score_core(v, x0 + cx, y0 + cy, WC_MIN(sx, w - cx), WC_MIN(sy, h - cy)) != WC_OK)
                return WC_ERR;
    return WC_OK;
}

/* The blocks every rank together has scored after `rounds` agreement rounds (each rank scores
 * one block of its share per round). */
static long blocks_scored(const wc_validation *v, long rounds) {
    const int R = wc_dist_size();
    long done = 0;
    for (int r = 0; r < R; r++) {
        long lo, hi;
        wc_dist_share(v->nblocks, r, R, &lo, &hi);
        done += WC_MIN(rounds, hi - lo);
    }
    return done;
}

/* Rank 0, every WC_PROGRESS_SECONDS: a validation of a large mosaic takes minutes, which
 * silence would make look like a hang. */
static void say_progress(const wc_validation *v, wc_progress *progress, long step, long rounds) {
    if (wc_dist_rank() != 0 || !wc_progress_due(progress)) return;
    const long done = blocks_scored(v, rounds);
    const double frac = (double)rounds / (double)v->max_share;
    wc_info("validation after step %ld: %ld of %ld blocks (%.0f%%): %.1f s, about %.0f s left",
            step, done, v->nblocks, 100 * frac, wc_progress_elapsed(progress),
            wc_progress_left(progress, frac));
}

int wc_validation_run(wc_validation *v, long step, const float *params, wc_metrics *m,
                      wc_metrics *oracle) {
    const int with_oracle = v->ds->oracle_path != NULL;
    wc_metrics_reset(v->acc);
    wc_metrics_reset(v->oracle_acc);
    v->oracle_missing = 0;
    v->bad_ordinary = 0, v->bad_outlier = -1, v->beyond_range = 0;
    wc_infer_set_params(&v->inf, params);
    int failed = 0;
    wc_progress progress;
    wc_progress_start(&progress);
    for (long k = 0; k < v->max_share; k++) {
        say_progress(v, &progress, step, k);
        if (!failed && v->lo + k < v->hi && score_block(v, v->blocks[v->lo + k]) != WC_OK)
            failed = 1;
        int64_t flags[2] = {failed, wc_stop_requested()};
        wc_dist_sum_i64(flags, 2);
        if (failed)
            wc_error("validation after step %ld: reading its blocks failed (see above)", step);
        if (flags[0]) return WC_VALIDATION_FAILED;
        if (flags[1]) return WC_VALIDATION_STOPPED;
    }
    wc_dist_sum_i64((int64_t *)v->acc, wc_metrics_acc_words());
    if (with_oracle) wc_dist_sum_i64((int64_t *)v->oracle_acc, wc_metrics_acc_words());
    if (with_oracle) wc_dist_sum_i64(&v->oracle_missing, 1);
    wc_dist_sum_i64(&v->bad_ordinary, 1);
    wc_dist_sum_i64(&v->beyond_range, 1);
    /* the lowest index of any rank's, as the largest nfeat - index (0: none) */
    const int nfeat = v->ds->nfeat;
    v->bad_outlier = nfeat - wc_dist_max_int(v->bad_outlier < 0 ? 0 : nfeat - v->bad_outlier);
    if (v->bad_outlier >= nfeat) v->bad_outlier = -1;
    if (!v->inputs_said) {
        /* the blocks' features as predict checks a raster's: a fill value that only the
         * validation blocks hold (training never meets it) spoils the scores and best.wcp */
        const int64_t pixels = wc_infer_sum_tallies(&v->inf);
        /* values of 1e30 or more: training's check of the kept patches (validation's too) has
         * named them already */
        memset(v->inf.huge, 0, sizeof(int64_t) * (size_t)v->inf.nfeat);
        char what[64];
        snprintf(what, sizeof what, "validation after step %ld", step);
        /* (the pixels of its blocks with every input: those scored, and those of patches left
         * out or without a label beside them) */
        if (wc_dist_rank() == 0)
            wc_infer_report_inputs(&v->inf, pixels, what, "of the validation blocks");
        v->inputs_said = 1;
    }
    wc_metrics_compute(m, v->acc);
    if (with_oracle) {
        wc_metrics_compute(oracle, v->oracle_acc);
        oracle->bad_outputs = v->oracle_missing;
    }
    return m->bad_outputs > 0 ? WC_VALIDATION_DIVERGED : WC_VALIDATION_DONE;
}

/* The side of a core: a validation block, or a part of it. */
static int64_t core_side(const wc_dataset *ds) {
    return WC_MIN((int64_t)ds->val_block * ds->P, CORE_MAX);
}

/* A core's pixel buffers (wc_validation_init): probabilities, labels and the oracle's as
 * floats, the metrics' scratch as doubles, the states and the use mask as bytes. */
#define CORE_PIXEL_BYTES (3 * sizeof(float) + sizeof(double) + 2)

int wc_validation_plan(const wc_dataset *ds, const char *arch, const char *spec,
                       wc_infer_plan_bytes *plan) {
    wc_infer_geometry g;
    const int64_t side = core_side(ds);
    if (wc_infer_geometry_of(&g, arch, spec, ds->nfeat, &ds->files.src) != WC_OK ||
        wc_infer_plan(&g, ds->read_type, ds->nfeat, arch, spec, side, side, ds->tiles_path, plan) !=
            WC_OK)
        return WC_ERR;
    plan->bytes += (size_t)side * (size_t)side * CORE_PIXEL_BYTES;
    return WC_OK;
}

int wc_validation_init(wc_validation *v, const wc_dataset *ds, const char *arch, const char *spec,
                       const float *params) {
    memset(v, 0, sizeof *v);
    v->ds = ds;
    plan_blocks(v);
    v->core = core_side(ds);
    const size_t n = (size_t)v->core * (size_t)v->core;
    v->prob = WC_ALLOC(sizeof(float) * n), v->y = WC_ALLOC(sizeof(float) * n);
    v->oracle = WC_ALLOC(sizeof(float) * n), v->scratch = WC_ALLOC(sizeof(double) * n);
    v->px = WC_ALLOC(n), v->use = WC_ALLOC(n);
    WC_ASSERT(CORE_PIXEL_BYTES == 3 * sizeof *v->prob + sizeof *v->scratch + 2);
    v->acc = WC_CALLOC(1, sizeof(wc_metrics_acc));
    v->oracle_acc = WC_CALLOC(1, sizeof(wc_metrics_acc));
    wc_infer_geometry g;
    if (wc_dist_any(wc_data_files_open(&v->files, ds, 1) != WC_OK)) return WC_ERR;
    int failed = wc_infer_geometry_of(&g, arch, spec, ds->nfeat, &v->files.src) != WC_OK ||
                 wc_infer_init(&v->inf, &g, &v->files.src, ds->feat_bands, ds->read_type, ds->nfeat,
                               ds->mean, ds->std, arch, spec, params, v->core, v->core,
                               ds->tiles_path) != WC_OK;
    if (!failed) wc_infer_set_constant(&v->inf, ds->constant);
    return wc_dist_any(failed) ? WC_VALIDATION_NO_NETWORK : WC_OK;
}

void wc_validation_free(wc_validation *v) {
    wc_infer_free(&v->inf);
    wc_data_files_close(&v->files);
    free(v->blocks), free(v->prob), free(v->y), free(v->oracle), free(v->scratch);
    free(v->px), free(v->use), free(v->acc), free(v->oracle_acc);
}

/* Rank 0's part of wc_validation_write_split: the file, row by row, with a progress line every
 * WC_PROGRESS_SECONDS (a raster of billions of pixels takes minutes), ending early when the ranks
 * agree on a stop (solo): then nothing is left of it. */
static void write_split_here(const wc_dataset *ds, const char *path, wc_dist_solo *solo) {
    static const char *const opts[] = {"TILED=YES", "COMPRESS=DEFLATE", "BIGTIFF=IF_SAFER", NULL};
    const wc_rwriter_band band = {.name = "split"};
    const wc_rwriter_opts o = {.options = opts,
                               .width = ds->width,
                               .height = ds->height,
                               .nbands = 1,
                               .type = WC_DT_BYTE,
                               .gt = ds->files.src.has_gt ? ds->files.src.gt : NULL,
                               .wkt = ds->files.src.wkt,
                               .bands = &band};
    wc_rwriter *w = wc_rwriter_create(path, &o);
    if (!w) return;
    wc_rwriter_set_metadata(w, 1, "values",
                            "0 outside the patch grid, 1 training patch, "
                            "2 validation patch, 3 dropped patch");
    uint8_t *row = WC_ALLOC((size_t)ds->width);
    wc_progress progress;
    wc_progress_start(&progress);
    int rc = WC_OK;
    for (int64_t y = 0; y < ds->height && rc == WC_OK; y++) {
        if (!wc_dist_solo_go_on(solo)) break;
        if (wc_progress_due(&progress)) {
            const double done = (double)y / (double)ds->height;
            wc_info("%s: rows 0-%" PRId64 " of %d written (%.0f%%): %.1f s, about %.0f s left",
                    path, y - 1, ds->height, 100 * done, wc_progress_elapsed(&progress),
                    wc_progress_left(&progress, done));
        }
        memset(row, 0, (size_t)ds->width);
        const int64_t cy = (y - ds->y_origin) / ds->P;
        if (y >= ds->y_origin && cy < ds->rows)
            for (int64_t cx = 0; cx < ds->cols; cx++) {
                const long id = (long)(cy * ds->cols + cx);
                const uint8_t val = !ds->keep[id] ? 3 : ds->is_val[id] ? 2 : 1;
                memset(row + ds->x_origin + cx * ds->P, val, (size_t)ds->P);
            }
        rc = wc_rwriter_write(w, 1, y, 1, row, 0);
    }
    free(row);
    if (solo->stop) {
        wc_rwriter_abort(w); /* nothing partial; the earlier run's, if any, went with --fresh */
        return;
    }
    if (rc != WC_OK || wc_rwriter_commit(w) != WC_OK) {
        if (rc != WC_OK) wc_rwriter_abort(w);
        wc_warn("%s was not written (see above); training goes on", path);
    } else if (wc_progress_elapsed(&progress) >= wc_progress_seconds()) {
        wc_info("%s: written in %.1f s", path, wc_progress_elapsed(&progress));
    }
}

int wc_validation_write_split(const wc_dataset *ds, const char *path) {
    wc_dist_solo solo;
    wc_dist_solo_start(&solo);
    if (wc_dist_rank() == 0) write_split_here(ds, path, &solo);
    return wc_dist_solo_end(&solo) ? WC_VALIDATION_STOPPED : WC_OK;
}
