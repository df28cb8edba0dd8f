/* test_synth.c: the synthetic region, read back through GDAL's own readers.
 *
 * A 256x256 region with 128-pixel tiles is written once under a fresh /tmp directory and
 * checked for structure (bands, types, nodata, units, georeferencing, tiling, compression,
 * relative VRT paths), content (nodata rules, ranges, quantization, burn rate, contiguity),
 * the oracle (valid where the label is, calibrated: pixels given probability p burn a fraction p
 * of the time), determinism, and failures. Everything is removed at the end. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <gdal.h>
#include <ogr_srs_api.h>

#include "harness.h"
#include "wildcpu/synth.h"
#include "wildcpu/util.h"

enum { SIZE = 256, TILE = 128, NPIX = SIZE * SIZE };
static const uint64_t SEED = 7;

static char root[64];    /* the mkdtemp directory holding everything below */
static char region[128]; /* root/region: the fixture, seed SEED */

/* ---- helpers -------------------------------------------------------------------------------- */

static int write_region(const char *dir, int size, int tile, uint64_t seed) {
    wc_synth_config cfg;
    wc_synth_config_default(&cfg);
    cfg.out_dir = dir;
    cfg.size = size;
    cfg.tile = tile;
    cfg.seed = seed;
    return wc_synth_write(&cfg);
}

/* All of band b (1-based) of ds as doubles; NULL if the read fails. The caller frees. */
static double *read_band(GDALDatasetH ds, int b) {
    int w = GDALGetRasterXSize(ds), h = GDALGetRasterYSize(ds);
    double *v = WC_ALLOC((size_t)w * h * sizeof(double));
    if (GDALRasterIO(GDALGetRasterBand(ds, b), GF_Read, 0, 0, w, h, v, w, h, GDT_Float64, 0, 0) !=
        CE_None) {
        free(v);
        return NULL;
    }
    return v;
}

/* The 13 bands of the VRT under dir, band-major (13, h, w), or NULL. */
static double *read_vrt(const char *dir, int *size) {
    char path[256];
    snprintf(path, sizeof path, "%s/tiles.vrt", dir);
    GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
    if (!ds) return NULL;
    int n = GDALGetRasterXSize(ds);
    size_t m = (size_t)n * n;
    double *all = WC_ALLOC(WC_SYNTH_NBANDS * m * sizeof(double));
    int ok = GDALGetRasterCount(ds) == WC_SYNTH_NBANDS && GDALGetRasterYSize(ds) == n;
    for (int b = 0; b < WC_SYNTH_NBANDS && ok; b++) {
        double *v = read_band(ds, b + 1);
        ok = v != NULL;
        if (v) memcpy(all + b * m, v, m * sizeof(double));
        free(v);
    }
    GDALClose(ds);
    if (!ok) {
        free(all);
        return NULL;
    }
    *size = n;
    return all;
}

static double *read_oracle(const char *dir) {
    char path[256];
    snprintf(path, sizeof path, "%s/oracle_risk.tif", dir);
    GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
    if (!ds) return NULL;
    double *v = read_band(ds, 1);
    GDALClose(ds);
    return v;
}

static int is_nodata(int band, double v) {
    return v == wc_synth_bands[band].nodata;
}

/* The fixture's bands, read once. */
static double *fx;     /* (13, SIZE, SIZE) */
static double *oracle; /* (SIZE, SIZE) */
#define BAND(b, p) fx[(size_t)(b)*NPIX + (p)]

/* Runs f with stderr sent to a file; returns what it wrote (caller frees). */
static char *capture_stderr(int (*f)(const char *), const char *arg, int *rc) {
    char path[160];
    snprintf(path, sizeof path, "%s/stderr.txt", root);
    fflush(stderr);
    int saved = dup(2);
    FILE *tmp = fopen(path, "w+");
    if (saved < 0 || !tmp) {
        *rc = 0;
        return wc_strdup("");
    }
    dup2(fileno(tmp), 2);
    *rc = f(arg);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fseek(tmp, 0, SEEK_END);
    long len = ftell(tmp);
    char *text = WC_ALLOC((size_t)len + 1);
    rewind(tmp);
    size_t got = fread(text, 1, (size_t)len, tmp);
    text[got] = '\0';
    fclose(tmp);
    remove(path);
    return text;
}

/* ---- structure ------------------------------------------------------------------------------ */

static void test_vrt_bands_and_georeferencing(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/tiles.vrt", region);
    GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
    CHECK(ds != NULL, "cannot open %s", path);
    if (!ds) return;
    CHECK(strcmp(GDALGetDriverShortName(GDALGetDatasetDriver(ds)), "VRT") == 0, "driver %s",
          GDALGetDriverShortName(GDALGetDatasetDriver(ds)));
    CHECK(GDALGetRasterXSize(ds) == SIZE && GDALGetRasterYSize(ds) == SIZE, "size %dx%d",
          GDALGetRasterXSize(ds), GDALGetRasterYSize(ds));
    CHECK(GDALGetRasterCount(ds) == WC_SYNTH_NBANDS, "%d bands", GDALGetRasterCount(ds));
    static const char *names[WC_SYNTH_NBANDS] = {
        "elevation",     "slope",     "aspect_sin",   "aspect_cos", "ndvi",
        "fuel_moisture", "temp_max",  "rel_humidity", "wind_u",     "wind_v",
        "precip_30d",    "dist_road", "fire"};
    static const char *units[WC_SYNTH_NBANDS] = {"m", "degrees", "",    "",   "",  "%", "degC",
                                                 "%", "m/s",     "m/s", "mm", "m", ""};
    for (int b = 0; b < WC_SYNTH_NBANDS && b < GDALGetRasterCount(ds); b++) {
        GDALRasterBandH band = GDALGetRasterBand(ds, b + 1);
        GDALDataType want = b == 0 ? GDT_Int16 : b == 12 ? GDT_Byte : GDT_Float32;
        double want_nodata = b == 0 ? -32768 : b == 12 ? 255 : -9999;
        int has = 0;
        double nodata = GDALGetRasterNoDataValue(band, &has);
        CHECK(strcmp(GDALGetDescription(band), names[b]) == 0, "band %d is '%s', want '%s'", b + 1,
              GDALGetDescription(band), names[b]);
        CHECK(GDALGetRasterDataType(band) == want, "band %s has type %s", names[b],
              GDALGetDataTypeName(GDALGetRasterDataType(band)));
        CHECK(has && nodata == want_nodata, "band %s nodata %g (set: %d)", names[b], nodata, has);
        CHECK(strcmp(GDALGetRasterUnitType(band), units[b]) == 0, "band %s unit '%s', want '%s'",
              names[b], GDALGetRasterUnitType(band), units[b]);
    }
    double gt[6];
    CHECK(GDALGetGeoTransform(ds, gt) == CE_None, "no geotransform");
    CHECK(gt[1] == 30 && gt[5] == -30 && gt[2] == 0 && gt[4] == 0,
          "pixel size %g x %g, rotation %g %g", gt[1], gt[5], gt[2], gt[4]);
    /* Inside UTM zone 11 (false easting 500 km, zone about 166-834 km wide) at Idaho's latitude. */
    CHECK(gt[0] > 200000 && gt[0] + SIZE * 30 < 800000 && gt[3] > 4.6e6 && gt[3] < 5.4e6,
          "origin %.0f, %.0f", gt[0], gt[3]);
    OGRSpatialReferenceH srs = GDALGetSpatialRef(ds);
    const char *code = srs ? OSRGetAuthorityCode(srs, NULL) : NULL;
    CHECK(code && strcmp(code, "32611") == 0, "EPSG code %s", code ? code : "(none)");
    GDALClose(ds);
}

static void test_vrt_sources_are_relative(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/tiles.vrt", region);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL, "cannot read %s", path);
    if (!f) return;
    char line[1024];
    int sources = 0, relative = 0, absolute = 0;
    while (fgets(line, sizeof line, f)) {
        char *s = strstr(line, "<SourceFilename");
        if (!s) continue;
        sources++;
        relative += strstr(s, "relativeToVRT=\"1\">tiles/") != NULL;
        absolute += strstr(s, root) != NULL;
    }
    fclose(f);
    int ntiles = (SIZE / TILE) * (SIZE / TILE);
    CHECK(sources == WC_SYNTH_NBANDS * ntiles, "%d sources, want %d", sources,
          WC_SYNTH_NBANDS * ntiles);
    CHECK(relative == sources, "%d of %d sources relative to the VRT", relative, sources);
    CHECK(absolute == 0, "%d sources name the absolute directory", absolute);
}

static void test_tiles_are_tiled_deflate_georeferenced(void) {
    static const char *suffix[] = {"i16", "f32", "u8"};
    static const char *predictor[] = {"2", "3", "2"};
    static const int nbands[] = {1, WC_SYNTH_NFLOAT, 1};
    for (int r = 0; r < SIZE / TILE; r++)
        for (int c = 0; c < SIZE / TILE; c++)
            for (int k = 0; k < 3; k++) {
                char path[256];
                snprintf(path, sizeof path, "%s/tiles/r%02d_c%02d_%s.tif", region, r, c, suffix[k]);
                GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
                CHECK(ds != NULL, "cannot open %s", path);
                if (!ds) continue;
                const char *comp = GDALGetMetadataItem(ds, "COMPRESSION", "IMAGE_STRUCTURE");
                const char *pred = GDALGetMetadataItem(ds, "PREDICTOR", "IMAGE_STRUCTURE");
                CHECK(comp && strcmp(comp, "DEFLATE") == 0, "%s: compression %s", path,
                      comp ? comp : "none");
                CHECK(pred && strcmp(pred, predictor[k]) == 0, "%s: predictor %s", path,
                      pred ? pred : "none");
                /* Strips of a 128-wide compressed image would be 16-64 rows high. */
                int bx, by;
                GDALGetBlockSize(GDALGetRasterBand(ds, 1), &bx, &by);
                CHECK(bx == TILE && by == TILE, "%s: blocks %dx%d", path, bx, by);
                CHECK(GDALGetRasterCount(ds) == nbands[k], "%s: %d bands", path,
                      GDALGetRasterCount(ds));
                double gt[6], want_x = 640000.0 + c * TILE * 30, want_y = 4930000.0 - r * TILE * 30;
                CHECK(GDALGetGeoTransform(ds, gt) == CE_None && gt[0] == want_x && gt[3] == want_y,
                      "%s: origin %.0f %.0f, want %.0f %.0f", path, gt[0], gt[3], want_x, want_y);
                GDALClose(ds);
            }
}

/* Uneven tiles (200 = 128 + 72) mosaic back to exactly what the generator computed. */
static void test_uneven_tiles_match_generator(void) {
    char dir[160];
    snprintf(dir, sizeof dir, "%s/uneven", root);
    CHECK(write_region(dir, 200, TILE, 3) == WC_OK, "write failed");
    int n = 0;
    double *v = read_vrt(dir, &n);
    double *o = read_oracle(dir);
    CHECK(v && o && n == 200, "cannot read back %s (size %d)", dir, n);
    wc_synth_config cfg;
    wc_synth_config_default(&cfg);
    cfg.size = 200;
    cfg.seed = 3;
    wc_synth_region *r = wc_synth_region_create(&cfg);
    if (v && o && n == 200) {
        size_t m = 200 * 200;
        long bad = 0;
        for (size_t p = 0; p < m; p++) {
            bad += v[p] != r->elevation[p];
            for (int b = 0; b < WC_SYNTH_NFLOAT; b++)
                bad += v[(b + 1) * m + p] != r->features[b * m + p];
            bad += v[12 * m + p] != r->fire[p];
            bad += o[p] != r->oracle[p];
        }
        CHECK(bad == 0, "%ld values differ between the files and the generator", bad);
    }
    char path[256];
    snprintf(path, sizeof path, "%s/tiles/r01_c01_f32.tif", dir);
    GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
    CHECK(ds && GDALGetRasterXSize(ds) == 72 && GDALGetRasterYSize(ds) == 72,
          "the corner tile is not 72x72");
    if (ds) GDALClose(ds);
    wc_synth_region_destroy(r);
    free(v);
    free(o);
}

static void test_vrt_opens_after_move(void) {
    char moved[160];
    snprintf(moved, sizeof moved, "%s/moved elsewhere", root);
    int rc = rename(region, moved);
    CHECK(rc == 0, "cannot rename %s", region);
    if (rc != 0) return;
    int n = 0;
    double *v = read_vrt(moved, &n);
    CHECK(v != NULL && n == SIZE, "the VRT does not open or read after the move");
    if (v) {
        long bad = 0;
        for (size_t i = 0; i < (size_t)WC_SYNTH_NBANDS * NPIX; i++) bad += v[i] != fx[i];
        CHECK(bad == 0, "%ld values changed with the move", bad);
    }
    free(v);
    CHECK(rename(moved, region) == 0, "cannot rename back");
}

/* ---- content -------------------------------------------------------------------------------- */

static void test_oracle_valid_where_label_is(void) {
    long outside = 0, misplaced = 0, valid = 0;
    for (int p = 0; p < NPIX; p++) {
        int label_nodata = BAND(WC_SYNTH_FIRE, p) == 255;
        int oracle_nodata = oracle[p] == -9999;
        misplaced += label_nodata != oracle_nodata;
        if (!oracle_nodata) {
            valid++;
            outside += !(oracle[p] >= 0 && oracle[p] <= 1);
        }
    }
    CHECK(misplaced == 0, "%ld pixels where oracle nodata != label nodata", misplaced);
    CHECK(outside == 0, "%ld oracle values outside [0, 1]", outside);
    CHECK(valid > NPIX / 2, "only %ld valid oracle pixels", valid);
}

static void test_nodata_rules(void) {
    long feature_nodata_labelled = 0, lake_partial = 0, label_nodata = 0, strip = 0;
    for (int p = 0; p < NPIX; p++) {
        int any = 0, all = 1;
        for (int b = 0; b < WC_SYNTH_FIRE; b++) {
            int nd = is_nodata(b, BAND(b, p));
            any |= nd;
            all &= nd;
        }
        int label = (int)BAND(WC_SYNTH_FIRE, p);
        feature_nodata_labelled += any && label != 255;
        lake_partial += is_nodata(WC_SYNTH_ELEVATION, BAND(WC_SYNTH_ELEVATION, p)) && !all;
        strip += any && !all;
        label_nodata += label == 255;
    }
    double frac = (double)label_nodata / NPIX;
    CHECK(feature_nodata_labelled == 0, "%ld pixels with a nodata feature have a 0/1 label",
          feature_nodata_labelled);
    CHECK(lake_partial == 0, "%ld lake pixels keep some features", lake_partial);
    CHECK(strip > 0, "no missing-data strip (pixels with some but not all features nodata)");
    CHECK(frac >= 0.03 && frac <= 0.10, "nodata fraction %.4f outside [0.03, 0.10]", frac);
}

static void test_band_ranges_and_quantization(void) {
    static const double lo[WC_SYNTH_FIRE] = {500, 0, -1, -1, -1, 0, -20, 0, -30, -30, 0, 0};
    static const double hi[WC_SYNTH_FIRE] = {4500, 90, 1, 1, 1, 40, 50, 100, 30, 30, 500, 50000};
    long out[WC_SYNTH_FIRE] = {0}, unquantized[WC_SYNTH_FIRE] = {0}, bad_aspect = 0, sloped = 0;
    double ndvi_lo = 1, ndvi_hi = -1;
    for (int p = 0; p < NPIX; p++) {
        for (int b = 0; b < WC_SYNTH_FIRE; b++) {
            double v = BAND(b, p);
            if (is_nodata(b, v)) continue;
            out[b] += v < lo[b] || v > hi[b];
            double k = v / wc_synth_bands[b].quantum;
            unquantized[b] += k != (double)(long long)k;
        }
        double nd = BAND(WC_SYNTH_NDVI, p);
        if (!is_nodata(WC_SYNTH_NDVI, nd)) {
            ndvi_lo = fmin(ndvi_lo, nd);
            ndvi_hi = fmax(ndvi_hi, nd);
        }
        double s = BAND(WC_SYNTH_SLOPE, p), a = BAND(WC_SYNTH_ASPECT_SIN, p),
               c = BAND(WC_SYNTH_ASPECT_COS, p);
        if (!is_nodata(WC_SYNTH_SLOPE, s) && s > 0) {
            sloped++;
            bad_aspect += fabs(a * a + c * c - 1) > 0.01;
        }
    }
    for (int b = 0; b < WC_SYNTH_FIRE; b++) {
        CHECK(out[b] == 0, "%ld %s values outside [%g, %g]", out[b], wc_synth_bands[b].name, lo[b],
              hi[b]);
        CHECK(unquantized[b] == 0, "%ld %s values are not multiples of %g", unquantized[b],
              wc_synth_bands[b].name, wc_synth_bands[b].quantum);
    }
    CHECK(ndvi_lo >= -0.1 && ndvi_hi <= 0.9 && ndvi_hi - ndvi_lo > 0.5, "ndvi spans %g .. %g",
          ndvi_lo, ndvi_hi);
    CHECK(sloped > NPIX / 2, "only %ld pixels have a slope", sloped);
    CHECK(bad_aspect == 0, "%ld pixels with aspect_sin^2 + aspect_cos^2 off 1 by > 0.01",
          bad_aspect);
}

static void test_burn_rate_matches_oracle_mean(void) {
    long valid = 0, burned = 0;
    double mean = 0;
    for (int p = 0; p < NPIX; p++) {
        int label = (int)BAND(WC_SYNTH_FIRE, p);
        if (label == 255) continue;
        CHECK(label == 0 || label == 1, "label %d", label);
        valid++;
        burned += label == 1;
        mean += oracle[p];
    }
    double rate = (double)burned / (double)valid;
    mean /= (double)valid;
    NOTE("burned %.4f of valid pixels, oracle mean %.4f", rate, mean);
    CHECK(rate >= 0.03 && rate <= 0.10, "burned fraction %.4f outside [0.03, 0.10]", rate);
    /* Both estimate the same expectation; one 256x256 region has a spread of about 0.006. */
    CHECK(fabs(rate - mean) < 0.02, "burned fraction %.4f vs oracle mean %.4f", rate, mean);
}

/* The oracle is the probability of the label: pooled over regions, pixels the oracle gives
 * probability in a bin burn as often as the bin's mean probability says. */
static void test_oracle_is_calibrated(void) {
    static const double edge[] = {0, 0.05, 0.2, 0.5, 0.8, 1.0000001};
    enum { NBIN = 5, NREGION = 12 };
    double n[NBIN] = {0}, p_sum[NBIN] = {0}, burned[NBIN] = {0};
    wc_synth_config cfg;
    wc_synth_config_default(&cfg);
    cfg.size = SIZE;
    for (int s = 0; s < NREGION; s++) {
        cfg.seed = 1000 + (uint64_t)s;
        wc_synth_region *r = wc_synth_region_create(&cfg);
        CHECK(r != NULL, "generation failed");
        if (!r) return;
        for (int p = 0; p < NPIX; p++) {
            if (r->fire[p] == 255) continue;
            int k = 0;
            while (k < NBIN - 1 && r->oracle[p] >= edge[k + 1]) k++;
            n[k]++;
            p_sum[k] += r->oracle[p];
            burned[k] += r->fire[p];
        }
        wc_synth_region_destroy(r);
    }
    for (int k = 0; k < NBIN; k++) {
        double want = p_sum[k] / n[k], got = burned[k] / n[k];
        NOTE("oracle in [%.2f, %.2f): %8.0f px, mean p %.4f, burned %.4f", edge[k], edge[k + 1],
             n[k], want, got);
        /* About 2.5 standard deviations: labels come in patches, so the effective number of
         * independent pixels is a few hundred per bin. */
        double tol = k == 0 ? 0.002 + 0.3 * want : 0.06;
        CHECK(n[k] > 1000 && fabs(got - want) < tol,
              "bin %d: %0.f px, mean oracle %.4f but %.4f burned", k, n[k], want, got);
    }
}

/* Burned areas are patches, not salt and pepper. */
static void test_burned_pixels_are_contiguous(void) {
    long burned = 0, surrounded = 0, isolated = 0;
    for (int i = 0; i < SIZE; i++)
        for (int j = 0; j < SIZE; j++) {
            if (BAND(WC_SYNTH_FIRE, i * SIZE + j) != 1) continue;
            int k = 0;
            for (int di = -1; di <= 1; di++)
                for (int dj = -1; dj <= 1; dj++) {
                    int y = i + di, x = j + dj;
                    if ((di || dj) && y >= 0 && x >= 0 && y < SIZE && x < SIZE)
                        k += BAND(WC_SYNTH_FIRE, y * SIZE + x) == 1;
                }
            burned++;
            surrounded += k >= 5;
            isolated += k == 0;
        }
    double frac = (double)surrounded / (double)burned;
    NOTE("%.3f of burned pixels have >= 5 of 8 burned neighbours, %ld isolated", frac, isolated);
    CHECK(frac > 0.75, "only %.3f of burned pixels have >= 5 burned neighbours", frac);
    CHECK(isolated < burned / 100, "%ld of %ld burned pixels are isolated", isolated, burned);
}

static void test_deterministic_per_seed(void) {
    char same[160], other[160];
    snprintf(same, sizeof same, "%s/same", root);
    snprintf(other, sizeof other, "%s/other", root);
    CHECK(write_region(same, SIZE, TILE, SEED) == WC_OK, "write failed");
    CHECK(write_region(other, SIZE, TILE, SEED + 1) == WC_OK, "write failed");
    int n1 = 0, n2 = 0;
    double *a = read_vrt(same, &n1), *b = read_vrt(other, &n2);
    double *oa = read_oracle(same), *ob = read_oracle(other);
    CHECK(a && b && oa && ob && n1 == SIZE && n2 == SIZE, "cannot read back");
    if (a && b && oa && ob) {
        long differ_same = 0, differ_other[WC_SYNTH_NBANDS] = {0};
        for (int band = 0; band < WC_SYNTH_NBANDS; band++)
            for (int p = 0; p < NPIX; p++) {
                size_t i = (size_t)band * NPIX + p;
                differ_same += memcmp(&a[i], &fx[i], sizeof(double)) != 0;
                differ_other[band] += b[i] != fx[i];
            }
        for (int p = 0; p < NPIX; p++)
            differ_same += memcmp(&oa[p], &oracle[p], sizeof(double)) != 0;
        CHECK(differ_same == 0, "%ld values differ between two runs with seed %llu", differ_same,
              (unsigned long long)SEED);
        for (int band = 0; band < WC_SYNTH_NBANDS; band++)
            CHECK(differ_other[band] > NPIX / 20, "seeds %llu and %llu agree on %s",
                  (unsigned long long)SEED, (unsigned long long)SEED + 1,
                  wc_synth_bands[band].name);
    }
    free(a);
    free(b);
    free(oa);
    free(ob);
}

/* ---- failures ------------------------------------------------------------------------------- */

static int write_to(const char *dir) {
    return write_region(dir, SIZE, TILE, SEED);
}

static void test_errors_are_reported(void) {
    char file[160], under_file[200], blocked[160], blocker[200];
    snprintf(file, sizeof file, "%s/a file", root);
    FILE *f = fopen(file, "w");
    CHECK(f != NULL, "cannot create %s", file);
    if (f) fclose(f);
    /* The output directory cannot be created: a file is in the way. */
    snprintf(under_file, sizeof under_file, "%s/region", file);
    int rc = 0;
    char *msg = capture_stderr(write_to, under_file, &rc);
    CHECK(rc == WC_ERR, "writing under a regular file returned %d", rc);
    CHECK(strstr(msg, file) != NULL, "the message does not name %s: '%s'", file, msg);
    free(msg);
    /* A GDAL failure: the VRT's path is taken by a directory. */
    snprintf(blocked, sizeof blocked, "%s/blocked", root);
    snprintf(blocker, sizeof blocker, "%s/tiles.vrt", blocked);
    mkdir(blocked, 0755);
    mkdir(blocker, 0755);
    msg = capture_stderr(write_to, blocked, &rc);
    CHECK(rc == WC_ERR, "writing over a directory named tiles.vrt returned %d", rc);
    CHECK(strstr(msg, blocker) != NULL, "the message does not name %s: '%s'", blocker, msg);
    free(msg);
    /* Invalid configurations. */
    wc_synth_config cfg;
    wc_synth_config_default(&cfg);
    cfg.size = 8;
    CHECK(wc_synth_region_create(&cfg) == NULL, "accepted a region of 8 pixels");
    char never[160];
    snprintf(never, sizeof never, "%s/never", root);
    cfg.out_dir = never;
    struct stat st;
    CHECK(wc_synth_write(&cfg) == WC_ERR && stat(never, &st) != 0,
          "a region of 8 pixels was accepted or left a directory behind");
    cfg.size = SIZE;
    cfg.out_dir = NULL;
    CHECK(wc_synth_write(&cfg) == WC_ERR, "accepted no output directory");
    cfg.out_dir = blocked;
    cfg.tile = 4;
    CHECK(wc_synth_write(&cfg) == WC_ERR, "accepted tiles of 4 pixels");
}

int main(void) {
    wc_log_set_quiet(1);
    GDALAllRegister();
    if (harness_tempdir(root, sizeof root, "wc_test_synth_") != 0) return 1;
    snprintf(region, sizeof region, "%s/region", root);
    if (write_region(region, SIZE, TILE, SEED) != WC_OK) {
        printf("not ok - fixture: cannot write %s\n", region);
        harness_remove_tree(root);
        return 1;
    }
    int n = 0;
    fx = read_vrt(region, &n);
    oracle = read_oracle(region);
    if (!fx || !oracle || n != SIZE) {
        printf("not ok - fixture: cannot read %s back\n", region);
        harness_remove_tree(root);
        return 1;
    }

    RUN(test_vrt_bands_and_georeferencing);
    RUN(test_vrt_sources_are_relative);
    RUN(test_tiles_are_tiled_deflate_georeferenced);
    RUN(test_uneven_tiles_match_generator);
    RUN(test_vrt_opens_after_move);
    RUN(test_oracle_valid_where_label_is);
    RUN(test_nodata_rules);
    RUN(test_band_ranges_and_quantization);
    RUN(test_burn_rate_matches_oracle_mean);
    RUN(test_oracle_is_calibrated);
    RUN(test_burned_pixels_are_contiguous);
    RUN(test_deterministic_per_seed);
    RUN(test_errors_are_reported);

    free(fx);
    free(oracle);
    harness_remove_tree(root);
    HARNESS_EXIT();
}
