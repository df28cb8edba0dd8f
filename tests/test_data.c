/* test_data.c: the data pipeline against independent computations (no MPI needed: one rank).
 *
 *   - every training patch is covered exactly once per epoch for 1..5 simulated ranks, the
 *     order is the same for every rank count, and uneven shares leave ranks empty, not stuck;
 *   - pixel -> map -> pixel round-trips, for north-up, south-up and rotated geotransforms;
 *   - the spatial split: no training patch in a validation block, the fraction about right;
 *   - normalization statistics equal a direct computation from GDAL's own reader, and, on
 *     hostile values (near +-DBL_MAX, mixed signs, outliers, huge and subnormal spreads), a
 *     __float128 reference: always finite;
 *   - a pixel whose normalized value is beyond float's range is invalid;
 *   - decoding: nodata and NaN/Inf features make a pixel invalid, labels > 0 are burned;
 *   - type unions hold every value of both types;
 *   - augmentation: in each of the 8 orientations the aspect bands equal the downslope direction
 *     recomputed (Horn's method, as gdaldem) from the turned elevation, scalar bands and labels
 *     move with the pixels, the wind-aspect dot product is unchanged, the orientations are
 *     distinct and drawn evenly; vector pairs by name and by --vector-bands, and when the
 *     augmentation must stay off;
 *   - the jitter keeps samples within the patch grid on all four sides (they reached the
 *     margins after it, bottom and right, but never those before it). */
#include <float.h>
#include <gdal.h>
#include <gdal_utils.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "wildcpu/dataset.h"
#include "wildcpu/dist.h"
#include "wildcpu/raster.h"
#include "wildcpu/schedule.h"
#include "wildcpu/util.h"

static const char *sample_path(void) {
    static char path[4096];
    const char *root = getenv("WILDCPU_ROOT");
    snprintf(path, sizeof path, "%s/data/sample/tiles.vrt", root ? root : ".");
    return path;
}

static void test_schedule_covers_every_patch_once(void) {
    enum { NTRAIN = 157 }; /* prime: uneven batches and shares */
    uint32_t train[NTRAIN];
    for (int i = 0; i < NTRAIN; i++) train[i] = 1000 + 3 * i; /* arbitrary grid ids */
    const int batch = 16, micro = 3;
    long spe = wc_schedule_steps_per_epoch(NTRAIN, batch);
    uint32_t order1[2][NTRAIN]; /* the single-rank order of epochs 0 and 1 */
    for (int R = 1; R <= 5; R++) {
        for (int epoch = 0; epoch < 2; epoch++) {
            int seen[NTRAIN * 3 + 1000];
            memset(seen, 0, sizeof seen);
            uint32_t order[NTRAIN];
            int count = 0;
            for (long step = epoch * spe; step < (epoch + 1) * spe; step++) {
                /* the micro-batches of the step in global order, whoever computes them */
                int m_all = -1;
                for (int r = 0; r < R; r++) {
                    wc_schedule s;
                    wc_schedule_init(&s, train, NTRAIN, batch, micro, r, R, 42, 4 * spe);
                    int lo, hi, m = wc_schedule_micro_batches(&s, step, &lo, &hi);
                    if (m_all < 0) m_all = m;
                    CHECK(m == m_all, "ranks disagree on the micro-batch count");
                    for (int j = lo; j < hi; j++) {
                        uint32_t ids[16];
                        int n = wc_schedule_patches(&s, step, j, ids);
                        for (int i = 0; i < n; i++) {
                            seen[ids[i]]++;
                            /* position in the epoch: step's first sample + j*micro + i */
                            long pos = (step - epoch * spe) * batch + (long)j * micro + i;
                            if (pos < NTRAIN) order[pos] = ids[i];
                        }
                        count += n;
                    }
                    wc_schedule_free(&s);
                }
            }
            int twice = 0, missing = 0;
            for (int i = 0; i < NTRAIN; i++) {
                twice += seen[train[i]] > 1;
                missing += seen[train[i]] == 0;
            }
            CHECK(count == NTRAIN && twice == 0 && missing == 0,
                  "R=%d epoch %d: %d samples, %d twice, %d missing", R, epoch, count, twice,
                  missing);
            if (R == 1)
                memcpy(order1[epoch], order, sizeof order);
            else
                CHECK(memcmp(order1[epoch], order, sizeof order) == 0,
                      "R=%d epoch %d: the order depends on the number of ranks", R, epoch);
        }
    }
    CHECK(memcmp(order1[0], order1[1], sizeof order1[0]) != 0, "epochs 0 and 1 in the same order");
    /* 8 micro-batches on 3 ranks: 3, 3, 2; 2 micro-batches on 5 ranks: some get none */
    uint32_t t2[64];
    for (int i = 0; i < 64; i++) t2[i] = i;
    int shares[3];
    for (int r = 0; r < 3; r++) {
        wc_schedule s;
        wc_schedule_init(&s, t2, 64, 32, 4, r, 3, 1, 10);
        int lo, hi;
        wc_schedule_micro_batches(&s, 0, &lo, &hi);
        shares[r] = hi - lo;
        wc_schedule_free(&s);
    }
    CHECK(shares[0] == 2 && shares[1] == 3 && shares[2] == 3,
          "8 micro-batches on 3 ranks dealt %d,%d,%d", shares[0], shares[1], shares[2]);
    int empty = 0;
    for (int r = 0; r < 5; r++) {
        wc_schedule s;
        wc_schedule_init(&s, t2, 64, 8, 4, r, 5, 1, 10);
        int lo, hi;
        wc_schedule_micro_batches(&s, 0, &lo, &hi);
        empty += hi == lo;
        wc_schedule_free(&s);
    }
    CHECK(empty == 3, "2 micro-batches on 5 ranks: %d ranks without work (expect 3)", empty);
}

static void test_georeferencing_round_trip(void) {
    const double gts[3][6] = {
        {640000, 30, 0, 4930000, 0, -30}, /* north-up */
        {640000, 30, 0, 4900000, 0, 30},  /* south-up: positive pixel height */
        {500000, 25, 5, 4000000, 4, -25}, /* rotated */
    };
    double worst = 0;
    for (int g = 0; g < 3; g++)
        for (int k = 0; k < 100; k++) {
            double col = (k * 37) % 1024 + 0.25, row = (k * 91) % 1024 + 0.75, x, y, c2, r2;
            wc_raster_pixel_to_map(gts[g], col, row, &x, &y);
            CHECK(wc_raster_map_to_pixel(gts[g], x, y, &c2, &r2) == WC_OK, "not invertible");
            worst = fmax(worst, fmax(fabs(c2 - col), fabs(r2 - row)));
        }
    NOTE("pixel -> map -> pixel: worst error %.2e px", worst);
    CHECK(worst < 1e-6, "round trip off by %g px", worst);
    /* the patch origin of a real dataset maps to the map coordinates GDAL reports */
    wc_data_config cfg;
    wc_data_config_default(&cfg);
    cfg.tiles = sample_path();
    cfg.patch = 64;
    wc_dataset *ds = wc_dataset_open(&cfg, NULL);
    CHECK(ds != NULL, "sample data does not open");
    if (!ds) return;
    int x0, y0;
    wc_dataset_patch_origin(ds, (uint32_t)(2 * ds->cols + 5), &x0, &y0);
    /* the grid starts at the global pooling phase: within one patch of the raster's corner */
    CHECK(ds->x_origin >= 0 && ds->x_origin < 64 && ds->y_origin >= 0 && ds->y_origin < 64,
          "grid origin (%d, %d)", ds->x_origin, ds->y_origin);
    CHECK(x0 == ds->x_origin + 5 * 64 && y0 == ds->y_origin + 2 * 64, "patch origin (%d, %d)", x0,
          y0);
    GDALDatasetH g = GDALOpen(cfg.tiles, GA_ReadOnly);
    double gt[6];
    GDALGetGeoTransform(g, gt);
    double mx, my;
    wc_raster_pixel_to_map(ds->files.src.gt, x0, y0, &mx, &my);
    CHECK(fabs(mx - (gt[0] + x0 * gt[1])) < 1e-6 && fabs(my - (gt[3] + y0 * gt[5])) < 1e-6,
          "patch corner (%.3f, %.3f) differs from GDAL's geotransform", mx, my);
    GDALClose(g);
    wc_dataset_close(ds);
}

/* Direct statistics with GDAL's own reader: every band read whole, as double. */
static void test_split_and_normalization(void) {
    wc_data_config cfg;
    wc_data_config_default(&cfg);
    cfg.tiles = sample_path();
    cfg.patch = 32;
    cfg.val_block_px = 128;
    cfg.val_fraction = 0.25;
    wc_dataset *ds = wc_dataset_open(&cfg, NULL);
    CHECK(ds != NULL, "sample data does not open");
    if (!ds) return;
    /* the split */
    int overlap = 0;
    for (long i = 0; i < ds->ntrain; i++) overlap += ds->is_val[ds->train[i]];
    for (long i = 0; i < ds->nval; i++) overlap += !ds->is_val[ds->val[i]];
    CHECK(overlap == 0, "%d patches on the wrong side of the split", overlap);
    /* whole blocks: every patch of a block is on the same side */
    int mixed = 0;
    for (long id = 0; id < ds->npatches; id++) {
        long bx = (id % ds->cols) / ds->val_block, by = (id / ds->cols) / ds->val_block;
        long first = by * ds->val_block * ds->cols + bx * ds->val_block;
        mixed += ds->is_val[id] != ds->is_val[first];
    }
    CHECK(mixed == 0, "%d patches disagree with their block", mixed);
    double frac = (double)ds->nval / (double)(ds->nval + ds->ntrain);
    NOTE("split: %ld training, %ld validation patches (%.3f), %ld of %ld blocks", ds->ntrain,
         ds->nval, frac, ds->nval_blocks, ds->nblocks);
    CHECK(frac > 0.1 && frac < 0.4, "validation fraction %.3f far from 0.25", frac);

    /* the statistics, directly */
    GDALDatasetH g = GDALOpen(cfg.tiles, GA_ReadOnly);
    const int W = GDALGetRasterXSize(g), H = GDALGetRasterYSize(g), nb = GDALGetRasterCount(g);
    double *band = WC_ALLOC(sizeof(double) * W * H * nb);
    int *valid = WC_CALLOC((size_t)W * H, sizeof(int));
    for (int b = 0; b < nb; b++)
        CHECK(GDALRasterIO(GDALGetRasterBand(g, b + 1), GF_Read, 0, 0, W, H,
                           band + (size_t)b * W * H, W, H, GDT_Float64, 0, 0) == CE_None,
              "GDAL read of band %d", b + 1);
    for (size_t p = 0; p < (size_t)W * H; p++) {
        int ok = 1;
        for (int b = 0; b < nb; b++) {
            int has;
            double nd = GDALGetRasterNoDataValue(GDALGetRasterBand(g, b + 1), &has);
            double v = band[(size_t)b * W * H + p];
            if (!isfinite(v) || (has && v == nd)) ok = 0;
        }
        valid[p] = ok;
    }
    int *in_train = WC_CALLOC((size_t)W * H, sizeof(int));
    for (long i = 0; i < ds->ntrain; i++) {
        int x0, y0;
        wc_dataset_patch_origin(ds, ds->train[i], &x0, &y0);
        for (int y = y0; y < y0 + ds->P; y++)
            for (int x = x0; x < x0 + ds->P; x++) in_train[(size_t)y * W + x] = 1;
    }
    double worst = 0;
    int64_t pixels = 0, burned = 0;
    for (int c = 0; c < ds->nfeat; c++) {
        const double *v = band + (size_t)(ds->feat_bands[c] - 1) * W * H;
        long double s = 0, s2 = 0;
        long n = 0;
        for (size_t p = 0; p < (size_t)W * H; p++)
            if (valid[p] && in_train[p]) s += v[p], n++;
        long double mean = s / n;
        for (size_t p = 0; p < (size_t)W * H; p++)
            if (valid[p] && in_train[p]) s2 += (v[p] - mean) * (v[p] - mean);
        double sd = sqrtl(s2 / n);
        worst = fmax(worst, rel_err(ds->mean[c], (double)mean, 1e-12));
        worst = fmax(worst, rel_err(ds->std[c], sd, 1e-12));
        if (c == 0) pixels = n;
    }
    const double *lab = band + (size_t)(ds->label_band - 1) * W * H;
    for (size_t p = 0; p < (size_t)W * H; p++) burned += valid[p] && in_train[p] && lab[p] > 0;
    NOTE("normalization vs direct: worst relative difference %.2e over %d bands (%lld pixels)",
         worst, ds->nfeat, (long long)pixels);
    CHECK(worst < 1e-10, "statistics differ from the direct computation by %.3g", worst);
    CHECK(pixels == ds->train_pixels && burned == ds->train_positives,
          "pixel counts: %lld/%lld vs %lld/%lld", (long long)pixels, (long long)burned,
          (long long)ds->train_pixels, (long long)ds->train_positives);
    free(band), free(valid), free(in_train);
    GDALClose(g);
    wc_dataset_close(ds);
}

/* A 64x64 raster as one 64-pixel patch, all of it training (no validation blocks). */
static wc_dataset *open_one_patch(const char *path) {
    wc_data_config cfg;
    wc_data_config_default(&cfg);
    cfg.tiles = path;
    cfg.patch = 64;
    cfg.val_fraction = 0;
    return wc_dataset_open(&cfg, NULL);
}

static void test_decode_nodata_nan_and_labels(void) {
    /* a 64x64 two-band Float32 raster + Byte label with nodata, NaN and Inf planted */
    char dir[] = "/tmp/wildcpu-test-data.XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];
    snprintf(path, sizeof path, "%s/r.tif", dir);
    GDALAllRegister();
    GDALDatasetH g = GDALCreate(GDALGetDriverByName("GTiff"), path, 64, 64, 3, GDT_Float32, NULL);
    double gt[6] = {0, 1, 0, 64, 0, -1};
    GDALSetGeoTransform(g, gt);
    float *buf = WC_ALLOC(sizeof(float) * 64 * 64);
    for (int b = 1; b <= 3; b++) {
        GDALRasterBandH hb = GDALGetRasterBand(g, b);
        for (int i = 0; i < 64 * 64; i++) buf[i] = b == 3 ? (float)(i % 3) : (float)(i % 7);
        if (b == 1) buf[10] = NAN, buf[11] = INFINITY, buf[12] = -9999;
        if (b == 3) buf[13] = -9999; /* GeoTIFF: one nodata value for all bands */
        GDALSetRasterNoDataValue(hb, -9999);
        GDALSetDescription(hb, b == 1 ? "a" : b == 2 ? "b" : "fire");
        CHECK(GDALRasterIO(hb, GF_Write, 0, 0, 64, 64, buf, 64, 64, GDT_Float32, 0, 0) == CE_None,
              "write band %d", b);
    }
    GDALClose(g);
    wc_dataset *ds = open_one_patch(path);
    CHECK(ds != NULL, "small raster does not open");
    if (ds) {
        wc_data_files f;
        CHECK(wc_data_files_open(&f, ds, 0) == WC_OK, "files");
        void *raw = WC_ALLOC(wc_dataset_patch_bytes(ds, 0));
        float *x = WC_ALLOC(sizeof(float) * 2 * 64 * 64), *y = WC_ALLOC(sizeof(float) * 64 * 64);
        uint8_t *valid = WC_ALLOC(64 * 64);
        CHECK(wc_dataset_read_patch(ds, &f, (wc_sample){.id = 0}, raw, 0) == WC_OK, "read");
        long n = wc_dataset_decode(ds, raw, (wc_sample){0}, ds->mean, ds->std, x, y, valid, NULL);
        CHECK(n == 64 * 64 - 4, "%ld valid pixels, expected %d", n, 64 * 64 - 4);
        CHECK(!valid[10] && !valid[11] && !valid[12] && !valid[13] && valid[14],
              "NaN, Inf, nodata feature and nodata label must be invalid");
        CHECK(x[10] == 0 && x[64 * 64 + 10] == 0, "invalid pixels must be 0 after normalization");
        CHECK(y[14] == 1.0f && y[15] == 0.0f && y[16] == 1.0f, "labels 2 and 1 burned, 0 not");
        CHECK(ds->nfeat == 2, "2 features (the label band is not one), got %d", ds->nfeat);
        free(raw), free(x), free(y), free(valid);
        wc_data_files_close(&f);
        wc_dataset_close(ds);
    }
    free(buf);
    unlink(path);
    rmdir(dir);
}

/* Rasters of every accepted type read and decode to their values. */
static void test_band_types(void) {
    static const GDALDataType types[] = {GDT_Byte,  GDT_UInt16,  GDT_Int16,  GDT_UInt32,
                                         GDT_Int32, GDT_Float32, GDT_Float64};
    char dir[] = "/tmp/wildcpu-test-types.XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        char path[256];
        snprintf(path, sizeof path, "%s/t%zu.tif", dir, t);
        GDALDatasetH g = GDALCreate(GDALGetDriverByName("GTiff"), path, 64, 64, 2, types[t], NULL);
        double gt[6] = {0, 1, 0, 0, 0, 1}; /* south-up: positive pixel height */
        GDALSetGeoTransform(g, gt);
        double *v = WC_ALLOC(sizeof(double) * 64 * 64);
        for (int i = 0; i < 64 * 64; i++) v[i] = 3 + (i * 7) % 200; /* fits every type */
        CHECK(GDALRasterIO(GDALGetRasterBand(g, 1), GF_Write, 0, 0, 64, 64, v, 64, 64, GDT_Float64,
                           0, 0) == CE_None,
              "w1");
        for (int i = 0; i < 64 * 64; i++) v[i] = i % 5 == 0;
        CHECK(GDALRasterIO(GDALGetRasterBand(g, 2), GF_Write, 0, 0, 64, 64, v, 64, 64, GDT_Float64,
                           0, 0) == CE_None,
              "w2");
        GDALSetDescription(GDALGetRasterBand(g, 2), "fire");
        GDALClose(g);
        wc_dataset *ds = open_one_patch(path);
        CHECK(ds != NULL, "%s raster does not open", GDALGetDataTypeName(types[t]));
        if (!ds) continue;
        wc_data_files f;
        wc_data_files_open(&f, ds, 0);
        void *raw = WC_ALLOC(wc_dataset_patch_bytes(ds, 0));
        float x[64 * 64], y[64 * 64];
        uint8_t valid[64 * 64];
        CHECK(wc_dataset_read_patch(ds, &f, (wc_sample){.id = 0}, raw, 0) == WC_OK, "read");
        long n = wc_dataset_decode(ds, raw, (wc_sample){0}, NULL, NULL, x, y, valid, NULL);
        int bad = 0;
        for (int i = 0; i < 64 * 64; i++) bad += x[i] != 3 + (i * 7) % 200 || y[i] != (i % 5 == 0);
        CHECK(n == 64 * 64 && bad == 0, "%s: %ld valid, %d wrong values (read as %s)",
              GDALGetDataTypeName(types[t]), n, bad, wc_dtype_name(ds->read_type));
        free(raw);
        wc_data_files_close(&f);
        wc_dataset_close(ds);
        free(v);
        unlink(path);
    }
    rmdir(dir);
}

/* The statistics on hostile values, against a reference in __float128 (113-bit mantissa, the
 * same 15-bit exponent as long double): a plain two-pass mean and variance, which in that
 * precision are exact far beyond double's. Each feature band of a 128x128 Float64 raster (four
 * 64-pixel patches, all training) holds one kind of hostile value; planning must give each a
 * finite mean and std within a few double roundings of the reference, or, for a band whose
 * spread is subnormal, call it constant (std 1). Decoding then gives finite inputs only. */
enum { HOSTILE_BANDS = 8, HOSTILE_SIDE = 128 };
static const char *hostile_names[HOSTILE_BANDS] = {"near +DBL_MAX",
                                                   "near -DBL_MAX",
                                                   "+-1e308 mixed",
                                                   "1e308 outliers among N(0,1)",
                                                   "log-uniform 1e-300..1e300, both signs",
                                                   "subnormal spread",
                                                   "ordinary",
                                                   "1e30, one rounding apart"};

static double hostile_value(int band, int i, uint64_t *rng) {
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    double u = (double)(*rng >> 11) * 0x1p-53; /* [0, 1) */
    switch (band) {
    case 0:
        return DBL_MAX * (1 - 0x1p-12 * u);
    case 1:
        return -DBL_MAX * (1 - 0x1p-20 * u);
    case 2:
        return (i % 2 ? 1e308 : -1e308) * (0.5 + 0.5 * u);
    case 3:
        return i % 97 == 0 ? 1e308 : 2 * u - 1;
    case 4:
        return (i % 3 ? 1 : -1) * pow(10, -300 + 600 * u);
    case 5:
        return 0x1p-1060 * (1 + u); /* subnormal values and spread */
    case 7:
        return i % 2 ? 1e30 : nextafter(1e30, INFINITY); /* constant but for rounding */
    default:
        return 100 + 10 * u;
    }
}

static void test_statistics_of_hostile_values(void) {
    char dir[] = "/tmp/wildcpu-test-hostile.XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];
    snprintf(path, sizeof path, "%s/h.tif", dir);
    const int S = HOSTILE_SIDE, NB = HOSTILE_BANDS;
    GDALDatasetH g =
        GDALCreate(GDALGetDriverByName("GTiff"), path, S, S, NB + 1, GDT_Float64, NULL);
    double gt[6] = {0, 1, 0, S, 0, -1};
    GDALSetGeoTransform(g, gt);
    double *v = WC_ALLOC(sizeof(double) * S * S * (NB + 1));
    uint64_t rng = 12345;
    for (int b = 0; b <= NB; b++) {
        double *vb = v + (size_t)b * S * S;
        for (int i = 0; i < S * S; i++) vb[i] = b < NB ? hostile_value(b, i, &rng) : i % 5 == 0;
        GDALRasterBandH hb = GDALGetRasterBand(g, b + 1);
        GDALSetDescription(hb, b < NB ? hostile_names[b] : "fire");
        CHECK(GDALRasterIO(hb, GF_Write, 0, 0, S, S, vb, S, S, GDT_Float64, 0, 0) == CE_None,
              "write band %d", b + 1);
    }
    GDALClose(g);
    wc_dataset *ds = open_one_patch(path); /* 64-pixel patches, no validation */
    CHECK(ds != NULL && ds->nfeat == NB && ds->ntrain == 4, "hostile raster does not plan");
    double worst = 0;
    for (int c = 0; ds && c < NB; c++) {
        const double *vb = v + (size_t)c * S * S;
        __float128 sum = 0, ss = 0;
        for (int i = 0; i < S * S; i++) sum += vb[i];
        __float128 mean = sum / (S * S);
        for (int i = 0; i < S * S; i++) ss += (vb[i] - mean) * (vb[i] - mean);
        double ref_mean = (double)mean, ref_std = (double)sqrtl((long double)(ss / (S * S)));
        double m = ds->mean[c], sd = ds->std[c];
        CHECK(isfinite(m) && isfinite(sd) && sd > 0, "%s: mean %g std %g", hostile_names[c], m, sd);
        if (c == 5) { /* a subnormal spread carries nothing a float input could show */
            CHECK(sd == 1.0, "%s: std %g, expected 1 (constant)", hostile_names[c], sd);
            continue;
        }
        if (c == 7) { /* constant: normalized by its own size, so its inputs are 0 */
            CHECK(sd == fabs(m), "%s: std %g, expected |mean| %g (constant)", hostile_names[c], sd,
                  fabs(m));
            continue;
        }
        /* the mean's error is measured against the spread it is normalized by */
        double em = fabs(m - ref_mean) / fmax(fabs(ref_mean), ref_std);
        double es = rel_err(sd, ref_std, 0);
        NOTE("%-40s mean %-24.17g (ref %-24.17g) std %-24.17g (ref %-24.17g) errors %.1e %.1e",
             hostile_names[c], m, ref_mean, sd, ref_std, em, es);
        worst = fmax(worst, fmax(em, es));
    }
    CHECK(worst < 1e-14, "statistics differ from the __float128 reference by %.3g", worst);
    if (ds) {
        wc_data_files f;
        CHECK(wc_data_files_open(&f, ds, 0) == WC_OK, "files");
        void *raw = WC_ALLOC(wc_dataset_patch_bytes(ds, 0));
        float *x = WC_ALLOC(sizeof(float) * NB * 64 * 64), y[64 * 64];
        uint8_t valid[64 * 64];
        long bad = 0, nvalid = 0;
        for (uint32_t id = 0; id < 4; id++) {
            CHECK(wc_dataset_read_patch(ds, &f, (wc_sample){.id = id}, raw, 0) == WC_OK,
                  "read patch %u", id);
            nvalid +=
                wc_dataset_decode(ds, raw, (wc_sample){0}, ds->mean, ds->std, x, y, valid, NULL);
            for (int i = 0; i < NB * 64 * 64; i++) bad += !isfinite(x[i]);
            for (int i = 7 * 64 * 64; i < 8 * 64 * 64; i++) bad += !(fabsf(x[i]) < 1e-6f);
        }
        CHECK(bad == 0 && nvalid == 4 * 64 * 64,
              "%ld non-finite inputs (or not 0 for the constant band), %ld of %d valid", bad,
              nvalid, 4 * 64 * 64);
        free(raw), free(x);
        wc_data_files_close(&f);
        wc_dataset_close(ds);
    }
    free(v);
    unlink(path);
    rmdir(dir);
}

/* A pixel whose normalized value lies beyond float's range is invalid (not an input, not in the
 * loss), and only that pixel: here a Float64 value of 1e300 in a band of ordinary training
 * values, normalized by a std of about 0.3. */
static void test_unrepresentable_input_is_invalid(void) {
    char dir[] = "/tmp/wildcpu-test-range.XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[256];
    snprintf(path, sizeof path, "%s/r.tif", dir);
    GDALDatasetH g = GDALCreate(GDALGetDriverByName("GTiff"), path, 64, 64, 3, GDT_Float64, NULL);
    double gt[6] = {0, 1, 0, 64, 0, -1};
    GDALSetGeoTransform(g, gt);
    double v[64 * 64];
    for (int b = 1; b <= 3; b++) {
        for (int i = 0; i < 64 * 64; i++) v[i] = b == 3 ? i % 2 : (i % 10) * 0.1;
        GDALRasterBandH hb = GDALGetRasterBand(g, b);
        GDALSetDescription(hb, b == 1 ? "a" : b == 2 ? "b" : "fire");
        CHECK(GDALRasterIO(hb, GF_Write, 0, 0, 64, 64, v, 64, 64, GDT_Float64, 0, 0) == CE_None,
              "write band %d", b);
    }
    GDALClose(g);
    wc_dataset *ds = open_one_patch(path);
    CHECK(ds != NULL, "raster does not open");
    if (ds) {
        wc_data_files f;
        CHECK(wc_data_files_open(&f, ds, 0) == WC_OK, "files");
        double *raw = WC_ALLOC(wc_dataset_patch_bytes(ds, 0));
        float x[2 * 64 * 64], y[64 * 64];
        uint8_t valid[64 * 64];
        CHECK(ds->read_type == WC_DT_FLOAT64, "read as %s", wc_dtype_name(ds->read_type));
        CHECK(wc_dataset_read_patch(ds, &f, (wc_sample){.id = 0}, raw, 0) == WC_OK, "read");
        raw[64 * 64 + 7] = 1e300; /* band b, pixel 7: as if read from another raster */
        long n = wc_dataset_decode(ds, raw, (wc_sample){0}, ds->mean, ds->std, x, y, valid, NULL);
        CHECK(n == 64 * 64 - 1 && !valid[7] && valid[6] && valid[8],
              "%ld valid; pixel 7 valid %d (its normalized value is beyond float's range)", n,
              valid[7]);
        CHECK(x[7] == 0 && x[64 * 64 + 7] == 0, "an invalid pixel's inputs must be 0");
        free(raw);
        wc_data_files_close(&f);
        wc_dataset_close(ds);
    }
    unlink(path);
    rmdir(dir);
}

static void test_type_union_holds_both(void) {
    const wc_dtype all[] = {WC_DT_BYTE,  WC_DT_UINT16,  WC_DT_INT16,  WC_DT_UINT32,
                            WC_DT_INT32, WC_DT_FLOAT32, WC_DT_FLOAT64};
    /* extremes of each type */
    const double lo[] = {0, 0, -32768, 0, -2147483648.0, -3.4e38, -1.7e308};
    const double hi[] = {255, 65535, 32767, 4294967295.0, 2147483647.0, 3.4e38, 1.7e308};
    const int int_bits[] = {8, 16, 15, 32, 31, 24, 53}; /* exact integer precision */
    int bad = 0;
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 7; j++) {
            wc_dtype u = wc_dtype_union(all[i], all[j]);
            int k = (int)u;
            /* the union must span both ranges and their integer precision */
            if (lo[k] > fmin(lo[i], lo[j]) || hi[k] < fmax(hi[i], hi[j]) ||
                int_bits[k] < fmax(int_bits[i], int_bits[j])) {
                bad++;
                NOTE("union(%s, %s) = %s is too narrow", wc_dtype_name(all[i]),
                     wc_dtype_name(all[j]), wc_dtype_name(u));
            }
            if (wc_dtype_union(all[i], all[j]) != wc_dtype_union(all[j], all[i])) bad++;
        }
    CHECK(bad == 0, "%d bad unions", bad);
    CHECK(wc_dtype_union(WC_DT_BYTE, WC_DT_INT16) == WC_DT_INT16, "Byte+Int16 should stay 2 bytes");
}

/* The feature channel of band `name`, or -1. */
static int channel_of(const wc_dataset *ds, const char *name) {
    for (int c = 0; c < ds->nfeat; c++)
        if (strcmp(ds->files.src.bands[ds->feat_bands[c] - 1].name, name) == 0) return c;
    return -1;
}

/* Horn's 3x3 gradient (gx east = +column, gy north = -row) of plane zp at interior pixel (r, c),
 * as gdaldem computes slope and aspect; 0 when a pixel of the 3x3 is invalid. */
static int horn_gradient(const float *zp, const uint8_t *v, int P, int r, int c, double *gx,
                         double *gy) {
    for (int dr = -1; dr <= 1; dr++)
        for (int dc = -1; dc <= 1; dc++)
            if (!v[(r + dr) * P + c + dc]) return 0;
#define Z(dr, dc) ((double)zp[(size_t)(r + (dr)) * P + c + (dc)])
    *gx = (Z(-1, 1) + 2 * Z(0, 1) + Z(1, 1)) - (Z(-1, -1) + 2 * Z(0, -1) + Z(1, -1));
    *gy = (Z(-1, -1) + 2 * Z(-1, 0) + Z(-1, 1)) - (Z(1, -1) + 2 * Z(1, 0) + Z(1, 1));
#undef Z
    return 1;
}

static void test_orientations_turn_vectors_with_the_terrain(void) {
    wc_data_config cfg;
    wc_data_config_default(&cfg);
    cfg.tiles = sample_path();
    cfg.patch = 64;
    cfg.augment = 1;
    wc_dataset *ds = wc_dataset_open(&cfg, NULL);
    CHECK(ds != NULL, "sample data does not open");
    if (!ds) return;
    const int P = ds->P, nf = ds->nfeat;
    const size_t pp = (size_t)P * P;
    const int z = channel_of(ds, "elevation"), ae = channel_of(ds, "aspect_sin"),
              an = channel_of(ds, "aspect_cos"), wu = channel_of(ds, "wind_u"),
              wv = channel_of(ds, "wind_v");
    CHECK(z >= 0 && ae >= 0 && an >= 0 && wu >= 0 && wv >= 0, "sample bands missing");
    CHECK(ds->aug.norient == 8 && ds->aug.npairs == 2, "augmentation: %s", ds->aug.summary);
    NOTE("augmentation: %s", ds->aug.summary);
    wc_data_files f;
    CHECK(wc_data_files_open(&f, ds, 0) == WC_OK, "files");
    void *raw = WC_ALLOC(wc_dataset_patch_bytes(ds, 0));
    float *x0 = WC_ALLOC(sizeof(float) * nf * pp), *x = WC_ALLOC(sizeof(float) * nf * pp);
    float y0[64 * 64], y[64 * 64];
    uint8_t v0[64 * 64], v[64 * 64];
    int moved = 0, horn_bad = 0, horn_n = 0, dot_bad = 0, same_as_other = 0;
    double worst = 0;
    for (long k = 0; k < ds->ntrain && k < 6; k++) {
        const uint32_t id = ds->train[k * (ds->ntrain / 6)];
        CHECK(wc_dataset_read_patch(ds, &f, (wc_sample){.id = id}, raw, 0) == WC_OK, "read");
        const long n0 = wc_dataset_decode(ds, raw, (wc_sample){0}, NULL, NULL, x0, y0, v0, NULL);
        float elev[WC_ORIENT_COUNT][64 * 64];
        for (int o = 0; o < WC_ORIENT_COUNT; o++) {
            const long n =
                wc_dataset_decode(ds, raw, (wc_sample){.orient = o}, NULL, NULL, x, y, v, NULL);
            CHECK(n == n0, "orientation %d: %ld valid pixels, not %ld", o, n, n0);
            memcpy(elev[o], x + (size_t)z * pp, sizeof elev[o]);
            for (int r = 0; r < P; r++)
                for (int c = 0; c < P; c++) {
                    int sr, sc;
                    wc_orient_source(P, o, r, c, &sr, &sc);
                    const size_t i = (size_t)r * P + c, s = (size_t)sr * P + sc;
                    /* scalars, labels and validity move with the pixels, unchanged */
                    moved += x[z * pp + i] != x0[z * pp + s] || y[i] != y0[s] || v[i] != v0[s];
                    /* wind . downslope is a scalar too */
                    if (v[i]) {
                        const float d =
                            x[wu * pp + i] * x[ae * pp + i] + x[wv * pp + i] * x[an * pp + i];
                        const float d0 =
                            x0[wu * pp + s] * x0[ae * pp + s] + x0[wv * pp + s] * x0[an * pp + s];
                        dot_bad += d != d0;
                    }
                }
            /* Horn's gradient of the turned elevation (x east = +column, north = -row) */
            for (int r = 1; r < P - 1; r++)
                for (int c = 1; c < P - 1; c++) {
                    double gx, gy;
                    if (!horn_gradient(x + z * pp, v, P, r, c, &gx, &gy)) continue;
                    const double g = hypot(gx, gy);
                    if (g < 8) continue; /* nearly flat: the direction is rounding */
                    const size_t i = (size_t)r * P + c;
                    const double err =
                        fmax(fabs(x[ae * pp + i] + gx / g), fabs(x[an * pp + i] + gy / g));
                    worst = fmax(worst, err);
                    horn_bad += err > 1.0 / 256;
                    horn_n++;
                }
        }
        for (int a = 0; a < WC_ORIENT_COUNT; a++)
            for (int b = a + 1; b < WC_ORIENT_COUNT; b++)
                same_as_other += memcmp(elev[a], elev[b], sizeof elev[a]) == 0;
    }
    NOTE("Horn's downslope direction of the turned elevation vs the turned aspect bands: %d "
         "pixels, worst component error %.5f (quantum 1/256 = %.5f)",
         horn_n, worst, 1.0 / 256);
    CHECK(horn_n > 10000 && horn_bad == 0,
          "%d of %d pixels: turned aspect is not the turned "
          "terrain's downslope direction (worst %.4f)",
          horn_bad, horn_n, worst);
    CHECK(moved == 0, "%d pixel values did not move with their pixel", moved);
    CHECK(dot_bad == 0, "wind . aspect changed at %d pixels", dot_bad);
    CHECK(same_as_other == 0, "%d pairs of orientations gave the same patch", same_as_other);
    /* normalized, each output channel with its own mean and std, from the turned raw value */
    int norm_bad = 0;
    float *xn = WC_ALLOC(sizeof(float) * nf * pp);
    CHECK(wc_dataset_read_patch(ds, &f, (wc_sample){.id = ds->train[0]}, raw, 0) == WC_OK, "read");
    for (int o = 0; o < WC_ORIENT_COUNT; o++) {
        wc_dataset_decode(ds, raw, (wc_sample){.orient = o}, NULL, NULL, x, y, v, NULL);
        wc_dataset_decode(ds, raw, (wc_sample){.orient = o}, ds->mean, ds->std, xn, y0, v0, NULL);
        for (int c = 0; c < nf; c++)
            for (size_t i = 0; i < pp; i++)
                if (v[i])
                    norm_bad += xn[c * pp + i] !=
                                wc_normalize(x[c * pp + i], ds->mean[c], 1.0 / ds->std[c]);
    }
    free(xn);
    CHECK(norm_bad == 0, "%d normalized values not from their own channel's statistics", norm_bad);
    /* the draw: every orientation about equally often, a pure function of (seed, epoch, id);
     * off, always as it lies */
    long count[WC_ORIENT_COUNT] = {0}, total = 0, unstable = 0;
    for (long e = 0; e < 40; e++)
        for (long k = 0; k < ds->ntrain; k++) {
            wc_sample s = wc_dataset_sample(ds, ds->train[k], e);
            wc_sample t = wc_dataset_sample(ds, ds->train[k], e);
            unstable += memcmp(&s, &t, sizeof s) != 0;
            count[s.orient]++, total++;
        }
    int uneven = 0;
    for (int o = 0; o < WC_ORIENT_COUNT; o++)
        uneven += count[o] < total / 10 || count[o] > total / 6;
    CHECK(uneven == 0 && unstable == 0, "orientation draw: %d uneven, %ld unstable", uneven,
          unstable);
    wc_data_files_close(&f);
    cfg.augment = 0;
    wc_dataset *plain = wc_dataset_open(&cfg, NULL);
    long turned = 0, shifted_otherwise = 0;
    for (long e = 0; plain && e < 5; e++)
        for (long k = 0; k < plain->ntrain; k++) {
            wc_sample s0 = wc_dataset_sample(plain, plain->train[k], e);
            wc_sample s1 = wc_dataset_sample(ds, plain->train[k], e);
            turned += s0.orient != 0;
            shifted_otherwise +=
                s0.dx != s1.dx || s0.dy != s1.dy; /* the jitter's draws come first */
        }
    CHECK(plain && plain->aug.norient == 1 && turned == 0,
          "without --augment %ld samples are turned", turned);
    CHECK(shifted_otherwise == 0, "--augment changed the jitter of %ld samples", shifted_otherwise);
    wc_dataset_close(plain);
    wc_dataset_close(ds);
    free(raw), free(x0), free(x);
}

/* Decodes sample s of ds unnormalized into x, y, v (P x P planes); returns the valid count. */
static long decode_raw(const wc_dataset *ds, wc_data_files *f, void *raw, wc_sample s, float *x,
                       float *y, uint8_t *v) {
    CHECK(wc_dataset_read_patch(ds, f, s, raw, 0) == WC_OK, "read patch %u", s.id);
    return wc_dataset_decode(ds, raw, s, NULL, NULL, x, y, v, NULL);
}

/* Median of n doubles (sorts them). */
static int cmp_double(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median_of(double *v, long n) {
    if (n == 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* --rotate: a turned sample is the patch resampled about its centre, its vector bands turned by
 * the same angle. Checked three independent ways on the sample region: a turn of almost 0 is the
 * unturned patch; a quarter turn is the quarter-turn orientation of augment.c (tested against the
 * terrain above); at +-0.5 rad the turned aspect bands are the downslope direction of the turned
 * elevation (Horn), and turned the other way they would be 1 rad off. */
static void test_turns_resample_and_turn_vectors_with_the_terrain(void) {
    wc_data_config cfg;
    wc_data_config_default(&cfg);
    cfg.tiles = sample_path();
    cfg.patch = 64;
    cfg.turn_deg = 40;
    wc_dataset *ds = wc_dataset_open(&cfg, NULL);
    CHECK(ds != NULL, "sample data does not open with --rotate");
    if (!ds) return;
    NOTE("augmentation: %s; window %d for patch %d", ds->aug.summary, ds->turn_side, ds->P);
    /* the largest window: 40 degrees reach (cos + sin) 63 / 2 = 44.4 px from the centre, and a
     * neighbour: 90 (an even side, as the patch's, keeps the centre) */
    CHECK(ds->aug.norient == 1 && ds->aug.npairs == 2 && ds->turn_side == 90,
          "--rotate 40 alone: %d orientations, %d pairs, window %d", ds->aug.norient,
          ds->aug.npairs, ds->turn_side);
    const int P = ds->P, nf = ds->nfeat;
    const size_t pp = (size_t)P * P;
    const int z = channel_of(ds, "elevation"), ae = channel_of(ds, "aspect_sin"),
              an = channel_of(ds, "aspect_cos"), sl = channel_of(ds, "slope");
    long not_whole = 0, blended = 0;
    wc_data_files f;
    CHECK(wc_data_files_open(&f, ds, 0) == WC_OK, "files");
    void *raw = WC_ALLOC(wc_dataset_patch_bytes(ds, 0));
    float *xa = WC_ALLOC(sizeof(float) * nf * pp), *xb = WC_ALLOC(sizeof(float) * nf * pp);
    float ya[64 * 64], yb[64 * 64];
    uint8_t va[64 * 64], vb[64 * 64];
    double *err = WC_ALLOC(sizeof(double) * pp * 16),
           *err_wrong = WC_ALLOC(sizeof(double) * pp * 16);
    long nerr = 0, samples = 0, tiny_bad = 0, quarter_bad = 0, quarter_n = 0;
    for (long k = 0; k < ds->ntrain && samples < 8; k += 3) {
        /* a sample whose turned window lies on training ground: its draw says so; turned by 0.5
         * rad or more, so that the windows of the turns below lie within its own */
        wc_sample s = {0};
        for (long e = 0; e < 40 && fabs(s.turn) < 0.5; e++)
            s = wc_dataset_sample(ds, ds->train[k], e);
        if (fabs(s.turn) < 0.5) continue;
        samples++;
        s.orient = 0;
        /* almost no turn: the unturned sample, bit for bit in value and validity */
        wc_sample flat = s, tiny = s;
        flat.turn = 0, tiny.turn = 1e-12;
        const long n0 = decode_raw(ds, &f, raw, flat, xa, ya, va);
        const long n1 = decode_raw(ds, &f, raw, tiny, xb, yb, vb);
        tiny_bad += n0 != n1 || memcmp(va, vb, pp) || memcmp(ya, yb, sizeof ya);
        for (size_t i = 0; i < pp * nf; i++)
            tiny_bad += fabsf(xa[i] - xb[i]) > 1e-6f * (1.0f + fabsf(xa[i]));
        /* a quarter turn in pixel axes is orientation 6 (transpose, then mirror the rows) */
        wc_sample quarter = s, oriented = flat;
        quarter.turn = 1.57079632679489661923, oriented.orient = 6;
        decode_raw(ds, &f, raw, quarter, xa, ya, va);
        decode_raw(ds, &f, raw, oriented, xb, yb, vb);
        for (size_t i = 0; i < pp; i++) {
            quarter_n += vb[i];
            quarter_bad += va[i] != vb[i] || ya[i] != yb[i];
            for (int c = 0; c < nf && va[i] && vb[i]; c++)
                quarter_bad +=
                    fabsf(xa[c * pp + i] - xb[c * pp + i]) > 1e-5f * (1.0f + fabsf(xb[c * pp + i]));
        }
        /* half a radian either way: the turned aspect against the turned terrain */
        for (int sgn = -1; sgn <= 1; sgn += 2) {
            wc_sample t = s;
            t.turn = 0.5 * sgn;
            decode_raw(ds, &f, raw, t, xa, ya, va);
            /* elevation is Int16: each turned value is one of the window's (a class code would
             * survive); slope is Float32: blended */
            for (size_t i = 0; i < pp; i++)
                if (va[i])
                    not_whole += xa[z * pp + i] != rintf(xa[z * pp + i]),
                        blended += xa[sl * pp + i] != rintf(xa[sl * pp + i] * 8) / 8;
            for (int r = 1; r < P - 1; r++)
                for (int c = 1; c < P - 1; c++) {
                    double gx, gy;
                    if (!horn_gradient(xa + z * pp, va, P, r, c, &gx, &gy)) continue;
                    const double g = hypot(gx, gy);
                    if (g < 8) continue; /* nearly flat: the direction is rounding */
                    const size_t i = (size_t)r * P + c;
                    const double e = xa[ae * pp + i], n = xa[an * pp + i];
                    const double down = atan2(-gx, -gy), aspect = atan2(e, n);
                    /* the aspect turned back and then the wrong way: by -2 turn */
                    const double wrong = aspect + 2.0 * t.turn * ds->aug.axes_sign;
                    err[nerr] = fabs(remainder(aspect - down, 2 * M_PI));
                    err_wrong[nerr++] = fabs(remainder(wrong - down, 2 * M_PI));
                }
        }
    }
    const double med = median_of(err, nerr), med_wrong = median_of(err_wrong, nerr);
    NOTE("%ld turned samples; Horn's downslope direction of the turned elevation vs the turned "
         "aspect: median error %.4f rad over %ld pixels (%.4f rad had the vectors turned the "
         "other way); quarter turn = orientation 6 at %ld valid pixels",
         samples, med, nerr, med_wrong, quarter_n);
    CHECK(samples >= 4, "only %ld samples drew a turn", samples);
    CHECK(tiny_bad == 0, "a turn of 1e-12 differs from no turn at %ld values", tiny_bad);
    CHECK(quarter_n > 1000 && quarter_bad == 0,
          "a quarter turn differs from orientation 6 at %ld of %ld values", quarter_bad, quarter_n);
    CHECK(not_whole == 0 && blended > 1000,
          "integer band blended at %ld pixels; float band blended at only %ld", not_whole, blended);
    CHECK(nerr > 5000 && med < 0.2 && med_wrong > 0.6,
          "turned aspect vs turned terrain: median error %.3f rad (wrong way %.3f) over %ld", med,
          med_wrong, nerr);
    /* the draw: uniform within +-40 degrees, most windows on training ground, a pure function
     * of (seed, epoch, id); the jitter unchanged by it; validation never turned */
    cfg.turn_deg = 0;
    wc_dataset *plain = wc_dataset_open(&cfg, NULL);
    long turned = 0, total = 0, beyond = 0, unstable = 0, shifted_otherwise = 0, positive = 0;
    for (long e = 0; plain && e < 20; e++)
        for (long k = 0; k < ds->ntrain; k++) {
            const wc_sample s = wc_dataset_sample(ds, ds->train[k], e);
            const wc_sample again = wc_dataset_sample(ds, ds->train[k], e);
            const wc_sample s0 = wc_dataset_sample(plain, ds->train[k], e);
            unstable += memcmp(&s, &again, sizeof s) != 0;
            shifted_otherwise += s.dx != s0.dx || s.dy != s0.dy || s0.turn != 0;
            turned += s.turn != 0, positive += s.turn > 0, total++;
            beyond += fabs(s.turn) > 40 * M_PI / 180;
        }
    NOTE("%ld of %ld training samples turned (%ld by a positive angle)", turned, total, positive);
    CHECK(plain && turned > total / 2 && beyond == 0 && unstable == 0 && positive > turned / 3 &&
              positive < 2 * turned / 3,
          "turn draw: %ld of %ld turned, %ld beyond 40 degrees, %ld unstable, %ld positive", turned,
          total, beyond, unstable, positive);
    CHECK(shifted_otherwise == 0, "--rotate changed the jitter of %ld samples", shifted_otherwise);
    wc_dataset_close(plain);
    wc_data_files_close(&f);
    wc_dataset_close(ds);
    free(raw), free(xa), free(xb), free(err), free(err_wrong);
}

/* --rotate: a turned sample's window is the smallest its own angle needs, not the largest
 * angle's, so that a sample near the raster's edge or a validation block is turned by the angles
 * that fit; and no pixel of a validation block, none off the raster, goes into a turned sample.
 * Checked against the points resample_turned takes, recomputed here, for every sample of 20
 * epochs of the sample region with small validation blocks (2 x 2 patches). */
static void test_turn_windows_fit_their_angle(void) {
    wc_data_config cfg;
    wc_data_config_default(&cfg);
    cfg.tiles = sample_path();
    cfg.patch = 64;
    cfg.val_block_px = 128;
    cfg.turn_deg = 45;
    cfg.align = 4;
    wc_dataset *ds = wc_dataset_open(&cfg, NULL);
    CHECK(ds != NULL, "sample data does not open with --rotate 45 --val-block 128");
    if (!ds) return;
    const int P = ds->P;
    const wc_sample flat = {.id = ds->train[0]};
    const double per_px = (double)wc_dataset_sample_bytes(ds, flat) / ((double)P * P);
    long turned = 0, total = 0, small = 0, wrong_side = 0, on_val = 0, off = 0;
    for (long e = 0; e < 20; e++)
        for (long k = 0; k < ds->ntrain; k++) {
            const wc_sample s = wc_dataset_sample(ds, ds->train[k], e);
            total++;
            if (s.turn == 0) continue;
            turned++;
            const int Q = (int)lrint(sqrt((double)wc_dataset_sample_bytes(ds, s) / per_px));
            small += Q < ds->turn_side;
            /* the window pixels the turned patch takes (relative to the patch's own pixels),
             * as resample_turned finds them: every neighbour of nonzero weight, the nearest */
            const double ca = cos(s.turn), sa = sin(s.turn), centre = 0.5 * P - 0.5;
            int lo = 0, hi = P - 1, x0, y0, bad = 0;
            wc_dataset_patch_origin(ds, s.id, &x0, &y0);
            x0 += s.dx, y0 += s.dy;
            for (int r = 0; r < P; r++)
                for (int c = 0; c < P; c++) {
                    const double oc = c + 0.5 - 0.5 * P, orow = r + 0.5 - 0.5 * P;
                    double sc = ca * oc + sa * orow + centre, sr = -sa * oc + ca * orow + centre;
                    if (fabs(sc - rint(sc)) < 1e-9) sc = rint(sc);
                    if (fabs(sr - rint(sr)) < 1e-9) sr = rint(sr);
                    const int c0 = (int)floor(sc), r0 = (int)floor(sr);
                    lo = WC_MIN(lo, WC_MIN(c0, r0)), hi = WC_MAX(hi, WC_MAX(c0, r0) + 1);
                    for (int n = 0; n < 4; n++) {
                        const int cc = c0 + (n & 1), rr = r0 + (n >> 1);
                        if ((n & 1 && sc == c0) || (n >> 1 && sr == r0)) continue; /* weight 0 */
                        const int px = x0 + cc, py = y0 + rr;
                        if (px < 0 || py < 0 || px >= ds->width || py >= ds->height) {
                            bad |= 1;
                            continue;
                        }
                        const int gx = px - ds->x_origin, gy = py - ds->y_origin;
                        if (gx >= 0 && gy >= 0 && gx / P < ds->cols && gy / P < ds->rows &&
                            ds->is_val[(size_t)(gy / P) * ds->cols + gx / P])
                            bad |= 2;
                    }
                }
            off += bad & 1, on_val += (bad & 2) != 0;
            /* the smallest window about the patch's centre holding lo..hi */
            wrong_side += Q != P + 2 * WC_MAX(-lo, hi - (P - 1));
        }
    NOTE("--rotate 45 --val-block 128: %ld of %ld samples turned, %ld from a window smaller "
         "than the largest angle's %d",
         turned, total, small, ds->turn_side);
    CHECK(wrong_side == 0, "%ld of %ld turned windows are not the smallest their angle needs",
          wrong_side, turned);
    CHECK(on_val == 0 && off == 0,
          "%ld turned samples take a validation pixel, %ld a pixel off the raster", on_val, off);
    CHECK(turned > total / 2 && small > turned / 2,
          "only %ld of %ld samples turned, %ld from a smaller window", turned, total, small);
    wc_sample_shares sh;
    wc_dataset_sample_shares(ds, &sh);
    long first = 0;
    for (long k = 0; k < ds->ntrain; k++) first += wc_dataset_sample(ds, ds->train[k], 0).turn != 0;
    CHECK(sh.counted == ds->ntrain && sh.turns && sh.turned == first &&
              sh.turned + sh.turn_off_raster + sh.turn_on_validation == sh.counted,
          "shares: %ld counted, %ld turned (%ld in the first epoch), %ld + %ld refused", sh.counted,
          sh.turned, first, sh.turn_off_raster, sh.turn_on_validation);
    wc_dataset_close(ds);
}

/* Applies orientation o to the vector (e, n) of pair 0 as decoding does. */
static void turn(const wc_augment *a, int o, double e, double n, double *eo, double *no) {
    const double in[2] = {e, n};
    double out[2];
    for (int side = 0; side < 2; side++) {
        int src;
        double sign;
        wc_augment_channel(a, o, a->pair[0][side], &src, &sign);
        out[side] = sign * in[src == a->pair[0][0] ? 0 : 1];
    }
    *eo = out[0], *no = out[1];
}

/* The same from the pixel map alone: the displacement (dc, dr) of an input vector, carried to
 * the output by the inverse of wc_orient_source's linear part (a signed permutation, so its
 * transpose), back in east/north. */
static void turn_by_pixels(int o, const double gt[6], int has_gt, double e, double n, double *eo,
                           double *no) {
    const double sc = has_gt ? (gt[1] > 0 ? 1 : -1) : 1, sr = has_gt ? (gt[5] > 0 ? 1 : -1) : -1;
    const double din[2] = {e * sc, n * sr}; /* (dc, dr) */
    int r0, c0, r1, c1, r2, c2;
    wc_orient_source(9, o, 4, 4, &r0, &c0);
    wc_orient_source(9, o, 4, 5, &r1, &c1); /* output column + 1 */
    wc_orient_source(9, o, 5, 4, &r2, &c2); /* output row + 1 */
    /* L maps output (dc, dr) to input (dc, dr): columns are the images of the unit steps */
    const double L[2][2] = {{c1 - c0, c2 - c0}, {r1 - r0, r2 - r0}};
    const double dc = L[0][0] * din[0] + L[1][0] * din[1], dr = L[0][1] * din[0] + L[1][1] * din[1];
    *eo = dc * sc, *no = dr * sr;
}

static void test_vector_pairs_and_when_augmentation_is_off(void) {
    const wc_augment_grid north_up = {{0, 30, 0, 0, 0, -30}, 1, 0};
    wc_augment a;
    const char *wx[] = {"elevation", "wind_u", "wind_v", "slope_sin", "slope_cos", "wind_speed"};
    CHECK(wc_augment_plan(&a, 1, 0, NULL, wx, 6, &north_up, "t") == WC_OK && a.norient == 8 &&
              a.npairs == 1 && a.pair[0][0] == 1 && a.pair[0][1] == 2,
          "pairs by name (slope_sin/cos and wind_speed are scalars): %s", a.summary);
    const char *many[] = {"Aspect_SIN", "aspect_cos", "U10",       "V10",     "ugrd_80m",
                          "vgrd_80m",   "eastness",   "northness", "doy_sin", "doy_cos"};
    CHECK(wc_augment_plan(&a, 1, 0, NULL, many, 10, &north_up, "t") == WC_OK && a.npairs == 4 &&
              a.pair[0][0] == 0 && a.pair[1][0] == 2 && a.pair[2][0] == 4 && a.pair[3][0] == 6,
          "aspect_sin, u10, UGRD, eastness pairs (any case), doy_sin a scalar: %s", a.summary);
    /* the wind components of climate products: MERRA-2 (U10M, V2M), CMIP (uas, vas), NCEP
     * reanalysis (uwnd, vwnd); before, each was a scalar, turned as one without a word */
    const char *climate[] = {"U10M", "V10M", "u2m", "v2m", "uas", "vas", "UWND", "VWND", "u10mx"};
    CHECK(wc_augment_plan(&a, 1, 0, NULL, climate, 9, &north_up, "t") == WC_OK && a.npairs == 4 &&
              a.pair[0][0] == 0 && a.pair[0][1] == 1 && a.pair[1][0] == 2 && a.pair[2][0] == 4 &&
              a.pair[3][0] == 6 && a.pair[3][1] == 7,
          "U10M:V10M, u2m:v2m, uas:vas, UWND:VWND pair (u10mx is no component): %s", a.summary);
    /* CF's standard names, as a netCDF variable's long name or a band description may carry */
    const char *cf[] = {"eastward_wind", "northward_wind", "X_WIND_10m", "Y_WIND_10m"};
    CHECK(wc_augment_plan(&a, 1, 0, NULL, cf, 4, &north_up, "t") == WC_OK && a.npairs == 2 &&
              a.pair[0][0] == 0 && a.pair[0][1] == 1 && a.pair[1][0] == 2 && a.pair[1][1] == 3,
          "eastward_wind:northward_wind, X_WIND_10m:Y_WIND_10m pair: %s", a.summary);
    const char *lone_climate[][2] = {{"elevation", "U10M"},
                                     {"elevation", "vas"},
                                     {"elevation", "uwnd"},
                                     {"elevation", "eastward_wind"},
                                     {"elevation", "y_wind"}};
    for (int k = 0; k < 5; k++)
        CHECK(wc_augment_plan(&a, 1, 0, NULL, lone_climate[k], 2, &north_up, "t") == WC_ERR,
              "'%s' should be refused as a direction without a pair", lone_climate[k][1]);
    /* a direction band without its partner: refused with --augment, fine without */
    const char *lone[][3] = {{"elevation", "Aspect", "ndvi"},  {"elevation", "th", "vs"},
                             {"elevation", "u10", "ndvi"},     {"elevation", "wind_dir", "ndvi"},
                             {"elevation", "WindDir", "ndvi"}, {"gust_u", "ndvi", "elevation"}};
    for (int k = 0; k < 6; k++) {
        CHECK(wc_augment_plan(&a, 1, 0, NULL, lone[k], 3, &north_up, "t") == WC_ERR,
              "'%s' should be refused as a direction without a pair", lone[k][1]);
        CHECK(wc_augment_plan(&a, 0, 0, NULL, lone[k], 3, &north_up, "t") == WC_OK &&
                  a.norient == 1,
              "without --augment nothing is checked");
    }
    CHECK(wc_augment_plan(&a, 1, 0, "none", lone[0], 3, &north_up, "t") == WC_OK &&
              a.norient == 8 && a.npairs == 0,
          "--vector-bands none: %s", a.summary);
    const char *given[] = {"elevation", "ws_e", "ws_n", "ndvi"};
    CHECK(wc_augment_plan(&a, 1, 0, "ws_e:ws_n", given, 4, &north_up, "t") == WC_OK &&
              a.norient == 8 && a.npairs == 1 && a.pair[0][0] == 1 && a.pair[0][1] == 2,
          "--vector-bands ws_e:ws_n: %s", a.summary);
    /* a list replaces the search but not the check */
    CHECK(wc_augment_plan(&a, 1, 0, "wind_u:wind_v", many, 10, &north_up, "t") == WC_ERR,
          "--vector-bands wind_u:wind_v leaves aspect_sin unpaired");
    const char *bad[] = {"ws_e:nope", "ws_e", "ws_e:ws_n:ndvi",     "ws_e:ws_e",
                         "",          ",",    "ws_e:ws_n,ws_n:ndvi"};
    for (int k = 0; k < 7; k++)
        CHECK(wc_augment_plan(&a, 0, 0, bad[k], given, 4, &north_up, "t") == WC_ERR,
              "--vector-bands '%s' should be refused (with or without --augment)", bad[k]);
    char names17[34][16];
    const char *p17[34];
    for (int k = 0; k < 17; k++) {
        snprintf(names17[2 * k], 16, "w%02d_u", k), snprintf(names17[2 * k + 1], 16, "w%02d_v", k);
        p17[2 * k] = names17[2 * k], p17[2 * k + 1] = names17[2 * k + 1];
    }
    CHECK(wc_augment_plan(&a, 1, 0, NULL, p17, 34, &north_up, "t") == WC_ERR,
          "a 17th pair must not be dropped silently");
    CHECK(wc_augment_plan(&a, 0, 0, NULL, p17, 34, &north_up, "t") == WC_OK && a.norient == 1,
          "without --augment (and no list) no pairs are looked for");
    /* 16 pairs of the longest band names (63 bytes, of 2-byte characters): the summary that the
     * log, report.md and report.json show names every pair whole (cut at 400 bytes, it named 4
     * of 16, its last name cut inside a character) */
    char long_names[32][WC_BAND_NAME_MAX];
    const char *longp[32];
    for (int k = 0; k < 32; k++) {
        int len = 0;
        for (int i = 0; i < 27; i++) len += snprintf(long_names[k] + len, 8, "\xc3\xa9");
        snprintf(long_names[k] + len, sizeof long_names[k] - len, "wind%03d_%c", k / 2,
                 k % 2 ? 'v' : 'u');
        longp[k] = long_names[k];
    }
    CHECK(strlen(long_names[31]) == WC_BAND_NAME_MAX - 1, "a name of %zu bytes",
          strlen(long_names[31]));
    CHECK(wc_augment_plan(&a, 1, 45, NULL, longp, 32, &north_up, "t") == WC_OK && a.npairs == 16,
          "16 pairs of long names: %d", a.npairs);
    const char *last = strstr(a.summary, long_names[30]);
    CHECK(last && strstr(last, long_names[31]) &&
              strcmp(a.summary + strlen(a.summary) - strlen(long_names[31]), long_names[31]) == 0,
          "the summary of 16 pairs of long names lacks the last pair whole (%zu bytes): ...%s",
          strlen(a.summary), a.summary + (strlen(a.summary) > 80 ? strlen(a.summary) - 80 : 0));
    /* the grid */
    const wc_augment_grid oblong = {{0, 30, 0, 0, 0, -20}, 1, 0};
    const wc_augment_grid nearly_square = {{0, 30.0000000001, 0, 0, 0, -30}, 1, 0};
    const wc_augment_grid degrees = {{0, 0.001, 0, 0, 0, -0.001}, 1, 1};
    const wc_augment_grid rotated = {{0, 30, 2, 0, 2, -30}, 1, 0};
    CHECK(wc_augment_plan(&a, 1, 0, NULL, wx, 6, &oblong, "t") == WC_OK && a.norient == 4,
          "non-square pixels allow the mirrors only: %s", a.summary);
    CHECK(wc_augment_plan(&a, 1, 0, NULL, wx, 6, &nearly_square, "t") == WC_OK && a.norient == 8,
          "square to 1e-9: %s", a.summary);
    CHECK(wc_augment_plan(&a, 1, 0, NULL, wx, 6, &degrees, "t") == WC_OK && a.norient == 4,
          "a geographic grid allows the mirrors only: %s", a.summary);
    CHECK(wc_augment_plan(&a, 1, 0, NULL, wx, 6, &rotated, "t") == WC_ERR,
          "a rotated grid with vector bands is refused");
    CHECK(wc_augment_plan(&a, 1, 0, "none", wx, 6, &rotated, "t") == WC_OK && a.norient == 8,
          "a rotated grid of scalars: %s", a.summary);
    /* sides of one length at 53 degrees to each other: rhombi, not squares (a sheared
     * geotransform, columns along x and rows along (18, -24)); a mirror, a quarter turn or a
     * turn by any angle would shear the ground, the half turn alone keeps it */
    const wc_augment_grid sheared = {{0, 30, 18, 0, 0, -24}, 1, 0};
    CHECK(wc_augment_plan(&a, 1, 0, "none", wx, 6, &sheared, "t") == WC_OK && a.norient == 2 &&
              wc_orient_drawn(&a, 0) == 0 && wc_orient_drawn(&a, 1) == 3,
          "sheared pixels (rhombi) allow the half turn only: %s", a.summary);
    CHECK(wc_augment_plan(&a, 0, 30, "none", wx, 6, &sheared, "t") == WC_ERR,
          "--rotate on sheared pixels (rhombi) must be refused");
    CHECK(wc_augment_plan(&a, 0, 30, "none", wx, 6, &rotated, "t") == WC_OK,
          "--rotate on a rotated grid of square pixels: %s", a.summary);
    /* every orientation turns (1, 0) and (0, 1) as the pixel map does, for the four sign
     * combinations of the pixel axes and without georeferencing; a scalar stays itself */
    const wc_augment_grid grids[] = {{{0, 30, 0, 0, 0, -30}, 1, 0},
                                     {{0, 30, 0, 0, 0, 30}, 1, 0},
                                     {{0, -30, 0, 0, 0, -30}, 1, 0},
                                     {{0, -30, 0, 0, 0, 30}, 1, 0},
                                     {{0, 1, 0, 0, 0, 1}, 0, 0}};
    int wrong = 0;
    for (int g = 0; g < 5; g++) {
        CHECK(wc_augment_plan(&a, 1, 0, NULL, wx, 6, &grids[g], "t") == WC_OK, "grid %d", g);
        for (int o = 0; o < WC_ORIENT_COUNT; o++)
            for (int unit = 0; unit < 2; unit++) {
                double e, n, e2, n2;
                turn(&a, o, unit == 0, unit == 1, &e, &n);
                turn_by_pixels(o, grids[g].gt, grids[g].has_gt, unit == 0, unit == 1, &e2, &n2);
                if (e != e2 || n != n2) {
                    wrong++;
                    NOTE("grid %d orientation %d (%d, %d): (%g, %g), the pixel map says (%g, %g)",
                         g, o, unit == 0, unit == 1, e, n, e2, n2);
                }
            }
    }
    CHECK(wrong == 0, "%d turned vectors disagree with the pixel map", wrong);
    int src;
    double sign;
    wc_augment_channel(&a, WC_ORIENT_TRANSPOSE | WC_ORIENT_MIRROR_COLS, 0, &src, &sign);
    CHECK(src == 0 && sign == 1, "a scalar stays itself");
}

/* A mosaic whose patch grid starts inside it (the sample cut 21 and 27 pixels in: margins of
 * 22 and 18 px before the grid, 10 and 4 after it, for 32 px patches): with the jitter, no
 * sample reaches into a margin, on any side, while most are shifted. */
static void test_jitter_stays_on_the_grid(void) {
    char dir[64], vrt[128];
    if (harness_tempdir(dir, sizeof dir, "wildcpu-test-jitter.") != 0) return;
    snprintf(vrt, sizeof vrt, "%s/cut.vrt", dir);
    char *argv[] = {"-of", "VRT", "-srcwin", "21", "27", "480", "470", NULL};
    GDALTranslateOptions *opt = GDALTranslateOptionsNew(argv, NULL);
    GDALDatasetH src = GDALOpen(sample_path(), GA_ReadOnly);
    GDALDatasetH cut = src && opt ? GDALTranslate(vrt, src, opt, NULL) : NULL;
    if (cut) GDALClose(cut);
    if (src) GDALClose(src);
    GDALTranslateOptionsFree(opt);
    wc_data_config cfg;
    wc_data_config_default(&cfg);
    cfg.tiles = vrt;
    cfg.patch = 32;
    cfg.val_fraction = 0;
    wc_dataset *ds = cut ? wc_dataset_open(&cfg, NULL) : NULL;
    CHECK(ds != NULL, "%s does not open", vrt);
    if (!ds) {
        harness_remove_tree(dir);
        return;
    }
    CHECK(ds->x_origin > 16 && ds->y_origin > 16, "the grid starts at %d, %d: no margin to reach",
          ds->x_origin, ds->y_origin);
    long reach[4] = {0, 0, 0, 0}, shifted = 0, total = 0; /* left, top, right, bottom */
    const int x_end = ds->x_origin + ds->cols * ds->P, y_end = ds->y_origin + ds->rows * ds->P;
    for (long e = 0; e < 20; e++)
        for (long k = 0; k < ds->ntrain; k++) {
            const wc_sample s = wc_dataset_sample(ds, ds->train[k], e);
            int x0, y0;
            wc_dataset_patch_origin(ds, s.id, &x0, &y0);
            x0 += s.dx, y0 += s.dy;
            reach[0] += x0 < ds->x_origin, reach[1] += y0 < ds->y_origin;
            reach[2] += x0 + ds->P > x_end, reach[3] += y0 + ds->P > y_end;
            shifted += s.dx != 0 || s.dy != 0, total++;
        }
    NOTE("of %ld samples over 20 epochs, %ld shifted; into the left, top, right and bottom "
         "margins: %ld %ld %ld %ld",
         total, shifted, reach[0], reach[1], reach[2], reach[3]);
    CHECK(reach[0] + reach[1] + reach[2] + reach[3] == 0,
          "samples reach into the margins: %ld %ld %ld %ld", reach[0], reach[1], reach[2],
          reach[3]);
    CHECK(2 * shifted > total, "only %ld of %ld samples shifted", shifted, total);
    wc_dataset_close(ds);
    harness_remove_tree(dir);
}

int main(void) {
    wc_log_set_quiet(1);
    wc_raster_init();
    RUN(test_schedule_covers_every_patch_once);
    RUN(test_georeferencing_round_trip);
    RUN(test_split_and_normalization);
    RUN(test_decode_nodata_nan_and_labels);
    RUN(test_band_types);
    RUN(test_statistics_of_hostile_values);
    RUN(test_unrepresentable_input_is_invalid);
    RUN(test_type_union_holds_both);
    RUN(test_orientations_turn_vectors_with_the_terrain);
    RUN(test_turns_resample_and_turn_vectors_with_the_terrain);
    RUN(test_turn_windows_fit_their_angle);
    RUN(test_vector_pairs_and_when_augmentation_is_off);
    RUN(test_jitter_stays_on_the_grid);
    HARNESS_EXIT();
}
