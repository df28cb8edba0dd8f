/* test_rwriter.c: the raster writer against real files, read back through GDAL's own readers.
 *
 * A commit publishes exactly what was written (values, georeferencing, descriptions, metadata,
 * category names in the sidecar) and leaves no temporary file, nor the replaced file's sidecar,
 * external overviews or mask; an abort, a stop at any of the
 * points the writer asks, a directory in the way and a write error that surfaces only when GDAL
 * flushes at close (a real file-size limit, EFBIG) all leave the previous target byte for byte
 * as it was and no temporary file, and so does a target directory renamed mid-write (its
 * temporaries removed from where they went); a sparse working file copied to a COG and a MEM
 * picture copied to a PNG come out as their drivers say. */
#include <dirent.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cpl_string.h>
#include <gdal.h>

#include "harness.h"
#include "wildcpu/files.h"
#include "wildcpu/raster.h"
#include "wildcpu/rwriter.h"
#include "wildcpu/util.h"

static char root[64];

/* Files in dir whose name holds a writer's temporary tag. */
static int temporaries_in(const char *dir) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, ".tmp-") != NULL || strstr(e->d_name, ".out-") != NULL;
    if (d) closedir(d);
    return n;
}

static int temporaries(void) {
    return temporaries_in(root);
}

static void path_in(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "%s/%s", root, name);
}

static const double GT[6] = {500000, 30, 0, 4900000, 0, -30};

/* W x H Float32, value(x, y) = y * W + x (exact in float for these sizes) */
enum { W = 300, H = 200 };
static float values[H][W];

static wc_rwriter *create_float(const char *target, int nbands, const char *copy_driver,
                                const char *const *copy_options) {
    static const char *const opt[] = {"TILED=YES", "COMPRESS=DEFLATE", "SPARSE_OK=TRUE", NULL};
    const wc_rwriter_band bands[2] = {
        {.name = "first", .unit = "m", .has_nodata = 1, .nodata = -9999},
        {.name = "second", .has_nodata = 1, .nodata = -9999},
    };
    const wc_rwriter_opts o = {.options = opt,
                               .width = W,
                               .height = H,
                               .nbands = nbands,
                               .type = WC_DT_FLOAT32,
                               .gt = GT,
                               .bands = bands,
                               .copy_driver = copy_driver,
                               .copy_options = copy_options};
    return wc_rwriter_create(target, &o);
}

/* Band b of path equals `values` (plus `add`). */
static int same_values(const char *path, int b, float add) {
    GDALDatasetH ds = GDALOpen(path, GA_ReadOnly);
    if (!ds) return 0;
    static float got[H][W];
    int ok = GDALRasterIO(GDALGetRasterBand(ds, b), GF_Read, 0, 0, W, H, got, W, H, GDT_Float32, 0,
                          0) == CE_None;
    for (int y = 0; y < H && ok; y++)
        for (int x = 0; x < W && ok; x++) ok = got[y][x] == values[y][x] + add;
    GDALClose(ds);
    return ok;
}

static char *slurp(const char *path) {
    char why[160];
    char *s = wc_read_file_limited(path, 1u << 20, why, sizeof why);
    return s ? s : wc_strdup("(missing)");
}

static void test_commit_publishes_what_was_written(void) {
    char target[128], aux[160];
    path_in(target, sizeof target, "a.tif");
    snprintf(aux, sizeof aux, "%s.aux.xml", target);
    wc_rwriter *w = create_float(target, 2, NULL, NULL);
    CHECK(w != NULL, "create");
    if (!w) return;
    CHECK(access(target, F_OK) != 0, "the target appears only at the commit");
    /* two pieces of rows, the second with lines further apart than the width */
    CHECK(wc_rwriter_write(w, 1, 0, 120, values, 0) == WC_OK, "rows 0-119");
    static float wide[80][W + 7];
    for (int y = 0; y < 80; y++) memcpy(wide[y], values[120 + y], sizeof values[0]);
    CHECK(wc_rwriter_write(w, 1, 120, 80, wide, sizeof wide[0]) == WC_OK, "rows 120-199");
    static float back[H][W];
    CHECK(wc_rwriter_read(w, 1, 0, H, back, 0) == WC_OK, "read back");
    CHECK(memcmp(back, values, sizeof back) == 0, "read back what was written");
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) back[y][x] += 1;
    CHECK(wc_rwriter_write(w, 2, 0, H, back, 0) == WC_OK, "band 2");
    CHECK(wc_rwriter_set_metadata(w, 0, "made_by", "test") == WC_OK, "dataset metadata");
    CHECK(wc_rwriter_set_metadata(w, 2, "meaning", "plus one") == WC_OK, "band metadata");
    const char *const names[] = {"zero", "one", NULL};
    CHECK(wc_rwriter_set_categories(w, 2, names) == WC_OK, "categories");
    CHECK(wc_rwriter_commit(w) == WC_OK, "commit");
    CHECK(temporaries() == 0, "no temporary file left");
    CHECK(same_values(target, 1, 0) && same_values(target, 2, 1), "values");
    GDALDatasetH ds = GDALOpen(target, GA_ReadOnly);
    CHECK(ds != NULL, "opens");
    if (!ds) return;
    double gt[6];
    CHECK(GDALGetGeoTransform(ds, gt) == CE_None && memcmp(gt, GT, sizeof gt) == 0, "gt");
    GDALRasterBandH b1 = GDALGetRasterBand(ds, 1), b2 = GDALGetRasterBand(ds, 2);
    int has = 0;
    CHECK(strcmp(GDALGetDescription(b1), "first") == 0, "description");
    CHECK(strcmp(GDALGetRasterUnitType(b1), "m") == 0, "unit");
    CHECK(GDALGetRasterNoDataValue(b2, &has) == -9999 && has, "nodata");
    const char *md = GDALGetMetadataItem(ds, "made_by", NULL);
    CHECK(md && strcmp(md, "test") == 0, "dataset metadata read back");
    char **cats = GDALGetRasterCategoryNames(b2);
    CHECK(cats && CSLCount(cats) == 2 && strcmp(cats[1], "one") == 0, "category names");
    GDALClose(ds);
    CHECK(access(aux, F_OK) == 0, "the category names' sidecar followed the file");
}

static void test_stale_sidecar_removed(void) {
    char target[128], aux[160];
    path_in(target, sizeof target, "a.tif");
    snprintf(aux, sizeof aux, "%s.aux.xml", target);
    CHECK(access(aux, F_OK) == 0, "the previous test left a sidecar");
    wc_rwriter *w = create_float(target, 1, NULL, NULL);
    CHECK(w && wc_rwriter_write(w, 1, 0, H, values, 0) == WC_OK, "write");
    CHECK(w && wc_rwriter_commit(w) == WC_OK, "commit");
    CHECK(access(aux, F_OK) != 0, "a sidecar describing the earlier file is gone");
    GDALDatasetH ds = GDALOpen(target, GA_ReadOnly);
    CHECK(ds && GDALGetRasterCount(ds) == 1, "the new file replaced the old");
    if (ds) GDALClose(ds);
}

/* Overviews made with gdaladdo -ro (QGIS's Build Pyramids) and a mask beside the target are
 * the earlier file's: GDAL would read them with the new one, and a GIS zoomed out would show
 * the earlier raster. A commit removes them. */
static void test_stale_externals_removed(void) {
    char target[128], ovr[160], msk[160];
    path_in(target, sizeof target, "ext.tif");
    snprintf(ovr, sizeof ovr, "%s.ovr", target);
    snprintf(msk, sizeof msk, "%s.msk", target);
    wc_rwriter *w = create_float(target, 1, NULL, NULL);
    CHECK(w && wc_rwriter_write(w, 1, 0, H, values, 0) == WC_OK && wc_rwriter_commit(w) == WC_OK,
          "the earlier file");
    GDALDatasetH ds = GDALOpen(target, GA_ReadOnly); /* read-only: external overviews */
    int level = 2;
    CHECK(ds && GDALBuildOverviews(ds, "AVERAGE", 1, &level, 0, NULL, NULL, NULL) == CE_None,
          "gdaladdo -ro");
    CPLSetConfigOption("GDAL_TIFF_INTERNAL_MASK", "NO");
    CHECK(ds && GDALCreateDatasetMaskBand(ds, GMF_PER_DATASET) == CE_None, "an external mask");
    CPLSetConfigOption("GDAL_TIFF_INTERNAL_MASK", NULL);
    if (ds) GDALClose(ds);
    CHECK(access(ovr, F_OK) == 0 && access(msk, F_OK) == 0, "the earlier file's .ovr and .msk");
    w = create_float(target, 1, NULL, NULL);
    static float later[H][W];
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) later[y][x] = values[y][x] + 7;
    CHECK(w && wc_rwriter_write(w, 1, 0, H, later, 0) == WC_OK && wc_rwriter_commit(w) == WC_OK,
          "the later file");
    CHECK(access(ovr, F_OK) != 0, "the earlier file's overviews are gone");
    CHECK(access(msk, F_OK) != 0, "the earlier file's mask is gone");
    ds = GDALOpen(target, GA_ReadOnly);
    GDALRasterBandH b = ds ? GDALGetRasterBand(ds, 1) : NULL;
    CHECK(b && GDALGetOverviewCount(b) == 0, "GDAL sees no overviews of the earlier file");
    CHECK(b && GDALGetMaskFlags(b) == GMF_NODATA, "GDAL masks the new file by its nodata");
    if (ds) GDALClose(ds);
}

static void test_abort_leaves_target(void) {
    char target[128];
    path_in(target, sizeof target, "a.tif");
    char *before = slurp(target);
    wc_rwriter *w = create_float(target, 2, "GTiff", NULL);
    CHECK(w && wc_rwriter_write(w, 1, 0, H, values, 0) == WC_OK, "write");
    wc_rwriter_abort(w);
    char *after = slurp(target);
    CHECK(strcmp(before, after) == 0 && temporaries() == 0, "target untouched, nothing left");
    free(before), free(after);
    wc_rwriter_abort(NULL);
}

/* keep_going answers yes `left` times, then no. */
static int countdown(void *arg) {
    int *left = arg;
    return (*left)-- > 0;
}

/* A stop at each point the writer asks (after the close, during the copy, before the rename):
 * STOPPED, the target as it was, no temporary file; with enough yeses the commit completes. */
static void test_stop_at_every_point(void) {
    char target[128];
    path_in(target, sizeof target, "a.tif");
    char *before = slurp(target);
    static const char *const cog[] = {"COMPRESS=DEFLATE", "BLOCKSIZE=256", NULL};
    int asked = -1;
    for (int yeses = 0; yeses < 100; yeses++) {
        int left = yeses;
        static const char *const opt[] = {"TILED=YES", "SPARSE_OK=TRUE", NULL};
        const wc_rwriter_opts o = {.options = opt,
                                   .width = W,
                                   .height = H,
                                   .nbands = 1,
                                   .type = WC_DT_FLOAT32,
                                   .gt = GT,
                                   .copy_driver = "COG",
                                   .copy_options = cog,
                                   .keep_going = countdown,
                                   .arg = &left};
        wc_rwriter *w = wc_rwriter_create(target, &o);
        CHECK(w && wc_rwriter_write(w, 1, 0, H, values, 0) == WC_OK, "write");
        if (!w) return;
        const int rc = wc_rwriter_commit(w);
        char *now = slurp(target);
        CHECK(temporaries() == 0, "nothing left after a commit asked %d times", yeses + 1);
        if (rc == WC_OK) {
            asked = yeses;
            free(now);
            break;
        }
        CHECK(rc == WC_RWRITER_STOPPED, "stop %d: status %d", yeses, rc);
        CHECK(strcmp(before, now) == 0, "stop %d: the target changed", yeses);
        free(now);
    }
    NOTE("the commit asked %d times before it completed", asked);
    CHECK(asked >= 3,
          "stopped at fewer points than after the close, in the copy, before the "
          "rename (%d)",
          asked);
    free(before);
    GDALDatasetH ds = GDALOpen(target, GA_ReadOnly);
    const char *lay = ds ? GDALGetMetadataItem(ds, "LAYOUT", "IMAGE_STRUCTURE") : NULL;
    CHECK(lay && strcmp(lay, "COG") == 0, "a COG once complete");
    if (ds) GDALClose(ds);
    CHECK(same_values(target, 1, 0), "the COG holds the values of the working file");
}

static void test_directory_target_refused(void) {
    char target[128];
    path_in(target, sizeof target, "dir.tif");
    mkdir(target, 0755);
    CHECK(create_float(target, 1, NULL, NULL) == NULL, "a directory as the target");
    CHECK(temporaries() == 0, "nothing left");
    rmdir(target);
}

/* A write error that GDAL reports only when it flushes at close: a file-size limit well below
 * the raster's size (uncompressed, so the bytes are really there). */
/* wc_rwriter_commit(w) with stderr captured; its status in *rc, what it printed returned
 * (caller frees). A file-size limit, if given, applies to the commit alone. */
static char *commit_capturing(wc_rwriter *w, const struct rlimit *fsize, int *rc) {
    char err_path[160];
    path_in(err_path, sizeof err_path, "stderr.txt");
    fflush(stderr);
    const int saved = dup(2);
    FILE *tmp = fopen(err_path, "w+");
    if (!tmp) {
        *rc = wc_rwriter_commit(w);
        return wc_strdup("(stderr not captured)");
    }
    dup2(fileno(tmp), 2);
    struct rlimit was;
    getrlimit(RLIMIT_FSIZE, &was);
    if (fsize) setrlimit(RLIMIT_FSIZE, fsize);
    *rc = wc_rwriter_commit(w);
    if (fsize) setrlimit(RLIMIT_FSIZE, &was);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fclose(tmp);
    char *msg = slurp(err_path);
    remove(err_path);
    return msg;
}

static void test_error_at_close(void) {
    char target[128];
    path_in(target, sizeof target, "a.tif");
    char *before = slurp(target);
    const wc_rwriter_opts o = {
        .width = W, .height = H, .nbands = 4, .type = WC_DT_FLOAT32, .gt = GT};
    wc_rwriter *w = wc_rwriter_create(target, &o);
    CHECK(w != NULL, "create");
    if (!w) return;
    int rc = WC_OK;
    for (int b = 1; b <= 4 && rc == WC_OK; b++) rc = wc_rwriter_write(w, b, 0, H, values, 0);
    CHECK(rc == WC_OK, "the rows go to GDAL's cache");
    struct rlimit lim;
    getrlimit(RLIMIT_FSIZE, &lim);
    lim.rlim_cur = 256 << 10; /* of 960 KiB */
    signal(SIGXFSZ, SIG_IGN);
    char *msg = commit_capturing(w, &lim, &rc);
    CHECK(rc == WC_ERR, "commit status %d", rc);
    CHECK(strstr(msg, target) != NULL, "the message names the target: %s", msg);
    NOTE("%.*s", (int)strcspn(msg, "\n"), msg);
    char *after = slurp(target);
    CHECK(strcmp(before, after) == 0 && temporaries() == 0, "target untouched, nothing left");
    free(before), free(after), free(msg);
}

/* The target's directory renamed (mv) while the raster is written: the commit fails with a
 * message saying the directory is gone, and the temporary files are removed from the directory
 * they are now in. */
static void test_directory_moved_away(void) {
    char dir[128], moved[128], target[160];
    path_in(dir, sizeof dir, "out");
    path_in(moved, sizeof moved, "out-moved");
    snprintf(target, sizeof target, "%s/m.tif", dir);
    mkdir(dir, 0755);
    static const char *const cog[] = {"COMPRESS=DEFLATE", NULL};
    wc_rwriter *w = create_float(target, 1, "COG", cog);
    CHECK(w && wc_rwriter_write(w, 1, 0, H, values, 0) == WC_OK, "write");
    if (!w) return;
    CHECK(temporaries_in(dir) > 0, "the working file is in the target's directory");
    CHECK(rename(dir, moved) == 0, "mv");
    int rc;
    char *msg = commit_capturing(w, NULL, &rc);
    CHECK(rc == WC_ERR, "commit status %d", rc);
    CHECK(strstr(msg, "the directory") && strstr(msg, "is gone"), "the message: %s", msg);
    NOTE("%.*s", (int)strcspn(msg, "\n"), msg);
    CHECK(temporaries_in(moved) == 0, "no temporary file left in the moved directory");
    free(msg);
}

static void test_mem_picture_to_png(void) {
    char target[128];
    path_in(target, sizeof target, "p.png");
    static const wc_rwriter_band rgba[4] = {
        {.color = "Red"}, {.color = "Green"}, {.color = "Blue"}, {.color = "Alpha"}};
    const wc_rwriter_opts o = {.driver = "MEM",
                               .width = 64,
                               .height = 32,
                               .nbands = 4,
                               .type = WC_DT_BYTE,
                               .bands = rgba,
                               .copy_driver = "PNG"};
    wc_rwriter *w = wc_rwriter_create(target, &o);
    CHECK(w != NULL, "create");
    if (!w) return;
    static unsigned char px[4][32][64]; /* band-sequential */
    for (int c = 0; c < 4; c++)
        for (int y = 0; y < 32; y++)
            for (int x = 0; x < 64; x++) px[c][y][x] = (unsigned char)(c * 60 + y + x);
    CHECK(wc_rwriter_write(w, 0, 0, 32, px, 0) == WC_OK, "every band at once");
    CHECK(wc_rwriter_commit(w) == WC_OK, "commit");
    GDALDatasetH ds = GDALOpen(target, GA_ReadOnly);
    CHECK(ds && strcmp(GDALGetDriverShortName(GDALGetDatasetDriver(ds)), "PNG") == 0, "a PNG");
    if (!ds) return;
    CHECK(GDALGetRasterColorInterpretation(GDALGetRasterBand(ds, 4)) == GCI_AlphaBand, "alpha");
    static unsigned char got[4][32][64];
    CHECK(GDALDatasetRasterIO(ds, GF_Read, 0, 0, 64, 32, got, 64, 32, GDT_Byte, 4, NULL, 0, 0, 0) ==
                  CE_None &&
              memcmp(got, px, sizeof got) == 0,
          "pixels");
    GDALClose(ds);
    CHECK(temporaries() == 0, "nothing left");
}

int main(void) {
    wc_log_set_quiet(1);
    wc_raster_init();
    if (harness_tempdir(root, sizeof root, "test_rwriter.") != 0) return 1;
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) values[y][x] = (float)(y * W + x);
    RUN(test_commit_publishes_what_was_written);
    RUN(test_stale_sidecar_removed);
    RUN(test_stale_externals_removed);
    RUN(test_abort_leaves_target);
    RUN(test_stop_at_every_point);
    RUN(test_directory_target_refused);
    RUN(test_error_at_close);
    RUN(test_directory_moved_away);
    RUN(test_mem_picture_to_png);
    harness_remove_tree(root);
    HARNESS_EXIT();
}
