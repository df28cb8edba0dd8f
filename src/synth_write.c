/* synth_write.c: writes a generated region as GeoTIFF tiles, a VRT mosaic and an oracle raster.
 *
 * A GeoTIFF holds one data type, so each tile is three files (Int16 elevation, the 11 Float32
 * bands, the Byte label), and tiles.vrt stitches them into one 13-band raster. The VRT is built
 * with GDAL's VRT driver (VRTAddSimpleSource), which writes source paths relative to the VRT
 * when the tiles lie below it, so the directory can be moved or committed as a whole. Every
 * file goes through the raster writer (rwriter.h): written under a temporary name, verified,
 * renamed into place, so a failed or interrupted run leaves no half-written tile behind a
 * complete-looking name, and the VRT appears only after all its tiles.
 *
 * Not here: generating the values (synth.c). GDAL's own messages are captured and reported
 * through wc_error/wc_warn, naming the file involved. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_string.h>
#include <gdal.h>
#include <gdal_vrt.h>
#include <ogr_srs_api.h>

#include "wildcpu/files.h"
#include "wildcpu/raster.h"
#include "wildcpu/rwriter.h"
#include "wildcpu/synth.h"
#include "wildcpu/util.h"

/* The message to append after a failure on a file. */
static const char *why(const wc_gdal_errors *e) {
    return e->failures ? e->last : "unknown error";
}

typedef struct writer {
    const wc_synth_config *cfg;
    const wc_synth_region *region;
    char *dir; /* out_dir without trailing slashes */
    char *wkt; /* the region's CRS */
    wc_gdal_errors err;
} writer;

enum { GROUP_I16, GROUP_F32, GROUP_U8, NGROUPS };
static const char *const group_suffix[NGROUPS] = {"i16", "f32", "u8"};
static const int group_first[NGROUPS] = {WC_SYNTH_ELEVATION, WC_SYNTH_SLOPE, WC_SYNTH_FIRE};
static const int group_count[NGROUPS] = {1, WC_SYNTH_NFLOAT, 1};
static const wc_dtype group_type[NGROUPS] = {WC_DT_INT16, WC_DT_FLOAT32, WC_DT_BYTE};

static wc_dtype band_type(int band) {
    return band == WC_SYNTH_ELEVATION ? WC_DT_INT16
           : band == WC_SYNTH_FIRE    ? WC_DT_BYTE
                                      : WC_DT_FLOAT32;
}

static char *tile_path(const char *dir, int row, int col, int group) {
    return wc_strdup(CPLSPrintf("%s/tiles/r%02d_c%02d_%s.tif", dir, row, col, group_suffix[group]));
}

/* out_dir without its trailing slashes (the root stays "/"). */
static char *trimmed_dir(const char *out_dir) {
    char *dir = wc_strdup(out_dir);
    for (size_t len = strlen(dir); len > 1 && dir[len - 1] == '/'; len--) dir[len - 1] = 0;
    return dir;
}

int wc_synth_check_out(const wc_synth_config *cfg) {
    char *dir = trimmed_dir(cfg->out_dir);
    const int last = (cfg->size + cfg->tile - 1) / cfg->tile - 1; /* the widest row, column */
    char *files[] = {tile_path(dir, last, last, GROUP_F32), tile_path(dir, last, last, GROUP_I16),
                     wc_strdup(CPLSPrintf("%s/" WC_SYNTH_ORACLE, dir)),
                     wc_strdup(CPLSPrintf("%s/" WC_SYNTH_MOSAIC, dir))};
    size_t longest = 0;
    const char *name = NULL;
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        const size_t n = wc_path_derived_length(files[i]);
        if (n > longest) longest = n, name = files[i] + strlen(dir) + 1;
    }
    const int rc = wc_check_dir_length("synth", cfg->out_dir, longest, name);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) free(files[i]);
    free(dir);
    return rc;
}

int wc_synth_check_memory(const wc_synth_config *cfg) {
    wc_address_need need = {.when = "to generate the region", .advice = "a smaller --size"};
    const int n = cfg->size;
    wc_address_need_add(&need, wc_synth_peak_bytes(n), "the %dx%d region's fields", n, n);
    return wc_check_address_space(&need);
}

/* Name, unit and nodata of a band, as the VRT and the tiles both carry them. */
static int describe_band(wc_rwriter *out, int out_band, int band) {
    const wc_rwriter_band b = {.name = wc_synth_bands[band].name,
                               .unit = wc_synth_bands[band].unit,
                               .has_nodata = 1,
                               .nodata = wc_synth_bands[band].nodata};
    return wc_rwriter_set_band(out, out_band, &b);
}

/* A tiled, DEFLATE-compressed GeoTIFF georeferenced at pixel (x0, y0) of the region. */
static wc_rwriter *create_tiff(writer *w, const char *path, int xsize, int ysize, int nbands,
                               wc_dtype type, int x0, int y0) {
    int block = WC_MIN(w->cfg->tile, 256);
    block = (block + 15) / 16 * 16; /* TIFF tiles are multiples of 16 */
    char bx[32], by[32];
    snprintf(bx, sizeof bx, "BLOCKXSIZE=%d", block);
    snprintf(by, sizeof by, "BLOCKYSIZE=%d", block);
    const char *const opt[] = {"TILED=YES",
                               bx,
                               by,
                               "COMPRESS=DEFLATE",
                               type == WC_DT_FLOAT32 ? "PREDICTOR=3" : "PREDICTOR=2",
                               "INTERLEAVE=BAND",
                               NULL};
    const double *gt = w->region->geotransform;
    const double tgt[6] = {gt[0] + x0 * gt[1], gt[1], 0, gt[3] + y0 * gt[5], 0, gt[5]};
    const wc_rwriter_opts o = {.options = opt,
                               .width = xsize,
                               .height = ysize,
                               .nbands = nbands,
                               .type = type,
                               .gt = tgt,
                               .wkt = w->wkt};
    return wc_rwriter_create(path, &o);
}

/* Writes the bands of one group for the tile at (x0, y0) of size xs x ys. */
static int write_tile(writer *w, int row, int col, int group, int x0, int y0, int xs, int ys) {
    const wc_synth_region *r = w->region;
    size_t s = (size_t)r->size, m = s * s;
    char *path = tile_path(w->dir, row, col, group);
    wc_rwriter *out = create_tiff(w, path, xs, ys, group_count[group], group_type[group], x0, y0);
    free(path);
    if (!out) return WC_ERR;
    int rc = WC_OK;
    for (int k = 0; k < group_count[group] && rc == WC_OK; k++) {
        int band = group_first[group] + k;
        size_t off = (size_t)y0 * s + (size_t)x0;
        const void *src;
        if (group == GROUP_I16)
            src = r->elevation + off;
        else if (group == GROUP_U8)
            src = r->fire + off;
        else
            src = r->features + (size_t)k * m + off;
        rc = describe_band(out, k + 1, band);
        if (rc == WC_OK)
            rc = wc_rwriter_write(out, k + 1, 0, ys, src, s * wc_dtype_size(group_type[group]));
    }
    if (rc != WC_OK) {
        wc_rwriter_abort(out);
        return rc;
    }
    return wc_rwriter_commit(out);
}

static int write_oracle(writer *w) {
    const wc_synth_region *r = w->region;
    char *path = wc_strdup(CPLSPrintf("%s/" WC_SYNTH_ORACLE, w->dir));
    wc_rwriter *out = create_tiff(w, path, r->size, r->size, 1, WC_DT_FLOAT32, 0, 0);
    free(path);
    if (!out) return WC_ERR;
    const wc_rwriter_band b = {.name = "oracle_risk",
                               .unit = "probability",
                               .has_nodata = 1,
                               .nodata = WC_SYNTH_NODATA_F32};
    if (wc_rwriter_set_band(out, 1, &b) != WC_OK ||
        wc_rwriter_write(out, 1, 0, r->size, r->oracle, 0) != WC_OK) {
        wc_rwriter_abort(out);
        return WC_ERR;
    }
    return wc_rwriter_commit(out);
}

/* Adds the sources of tile row tr to the open VRT. */
static int add_row_sources(writer *w, GDALDatasetH vrt, const char *path, int tr, int ntc) {
    const wc_synth_region *r = w->region;
    int tile = w->cfg->tile, rc = WC_OK;
    for (int tc = 0; tc < ntc && rc == WC_OK; tc++)
        for (int group = 0; group < NGROUPS && rc == WC_OK; group++) {
            int x0 = tc * tile, y0 = tr * tile;
            int xs = WC_MIN(tile, r->size - x0), ys = WC_MIN(tile, r->size - y0);
            char *src_path = tile_path(w->dir, tr, tc, group);
            GDALDatasetH src = GDALOpen(src_path, GA_ReadOnly);
            if (!src) {
                wc_error("synth: cannot open %s to build %s: %s", src_path, path, why(&w->err));
                rc = WC_ERR;
            } else {
                for (int k = 0; k < group_count[group] && rc == WC_OK; k++) {
                    int band = group_first[group] + k;
                    if (VRTAddSimpleSource(GDALGetRasterBand(vrt, band + 1),
                                           GDALGetRasterBand(src, k + 1), 0, 0, xs, ys, x0, y0, xs,
                                           ys, "near", VRT_NODATA_UNSET) != CE_None) {
                        wc_error("synth: cannot add %s to %s: %s", src_path, path, why(&w->err));
                        rc = WC_ERR;
                    }
                }
                /* The VRT took its own reference; ours goes (GDALClose would destroy it). */
                GDALReleaseDataset(src);
            }
            free(src_path);
        }
    return rc;
}

/* The mosaic, one row of tiles at a time. A source added from an open dataset stays open until
 * the VRT is closed, so adding every tile at once would need 3 file descriptors per tile (3072
 * for 8192 pixels in 256-pixel tiles, past the usual limit of 1024). Closing the VRT after each
 * row writes it; reopening it in update mode leaves the earlier sources unopened. */
static int write_vrt(writer *w, int ntr, int ntc) {
    const wc_synth_region *r = w->region;
    char *path = wc_strdup(CPLSPrintf("%s/" WC_SYNTH_MOSAIC, w->dir));
    const wc_rwriter_opts o = {
        .driver = "VRT", .width = r->size, .height = r->size, .gt = r->geotransform, .wkt = w->wkt};
    wc_rwriter *out = wc_rwriter_create(path, &o);
    int rc = out ? WC_OK : WC_ERR;
    for (int band = 0; band < WC_SYNTH_NBANDS && rc == WC_OK; band++) {
        GDALAddBand(wc_rwriter_gdal(out), (GDALDataType)wc_dtype_to_gdal(band_type(band)), NULL);
        rc = describe_band(out, band + 1, band);
    }
    for (int tr = 0; tr < ntr && rc == WC_OK; tr++) {
        if (tr > 0) rc = wc_rwriter_reopen(out);
        if (rc == WC_OK) rc = add_row_sources(w, wc_rwriter_gdal(out), path, tr, ntc);
    }
    if (rc == WC_OK)
        rc = wc_rwriter_commit(out);
    else
        wc_rwriter_abort(out);
    free(path);
    return rc;
}

int wc_synth_write(const wc_synth_config *cfg) {
    if (!cfg->out_dir || !cfg->out_dir[0]) {
        wc_error("synth: no output directory given");
        return WC_ERR;
    }
    if (cfg->tile < WC_SYNTH_MIN_TILE) {
        wc_error("synth: tile size %d is too small (at least %d pixels)", cfg->tile,
                 WC_SYNTH_MIN_TILE);
        return WC_ERR;
    }
    if (cfg->size < WC_SYNTH_MIN_SIZE || cfg->size > WC_SYNTH_MAX_SIZE) {
        wc_error("synth: region size %d is out of range (%d .. %d pixels)", cfg->size,
                 WC_SYNTH_MIN_SIZE, WC_SYNTH_MAX_SIZE);
        return WC_ERR;
    }
    if (wc_synth_check_out(cfg) != WC_OK || wc_synth_check_memory(cfg) != WC_OK) return WC_ERR;
    writer w = {.cfg = cfg, .dir = trimmed_dir(cfg->out_dir)};
    char *tiles_dir = wc_strdup(CPLSPrintf("%s/tiles", w.dir));
    if (wc_mkdir_p(tiles_dir) != WC_OK) {
        wc_error("synth: cannot create directory %s: %s", tiles_dir, strerror(errno));
        free(tiles_dir);
        free(w.dir);
        return WC_ERR;
    }
    /* the working files of a synth killed half way (SIGKILL: no handler ran), as a run
     * directory removes its own */
    wc_temp_leftovers(tiles_dir, (const char *const[]){"r*", NULL}, 1, NULL);
    wc_temp_leftovers(w.dir, (const char *const[]){WC_SYNTH_MOSAIC, WC_SYNTH_ORACLE, NULL}, 1,
                      NULL);
    free(tiles_dir);

    double t0 = wc_now();
    wc_synth_region *region = wc_synth_region_create(cfg);
    if (!region) {
        free(w.dir);
        return WC_ERR;
    }
    w.region = region;
    double t1 = wc_now();

    GDALAllRegister();
    wc_gdal_errors_push(&w.err);
    int rc = WC_OK;
    OGRSpatialReferenceH srs = OSRNewSpatialReference(NULL);
    if (OSRImportFromEPSG(srs, WC_SYNTH_EPSG) != OGRERR_NONE ||
        OSRExportToWkt(srs, &w.wkt) != OGRERR_NONE) {
        wc_error("synth: GDAL cannot build EPSG:%d (is proj.db installed?): %s", WC_SYNTH_EPSG,
                 why(&w.err));
        rc = WC_ERR;
    }
    OSRDestroySpatialReference(srs);
    int ntr = (cfg->size + cfg->tile - 1) / cfg->tile, ntc = ntr;
    /* A region written over another is a mix of the two until the last tile: the old region's
     * index and oracle go first, and the new ones come last, so a synth killed half way leaves
     * no tiles.vrt that would open as a region (GDAL would read it without complaint). */
    /* the earlier region's files removed, bit 1 its index, bit 2 its oracle: gone until the new
     * ones are (a failure names those there were, not both) */
    int replaced = 0, bit = 1;
    for (const char *const *f = (const char *const[]){WC_SYNTH_MOSAIC, WC_SYNTH_ORACLE, NULL}; *f;
         f++, bit <<= 1) {
        const char *path = CPLSPrintf("%s/%s", w.dir, *f);
        if (rc != WC_OK) break;
        if (unlink(path) == 0)
            replaced |= bit;
        else if (errno != ENOENT) {
            /* the index may be gone already: without a word the region would vanish unsaid */
            const int err = errno;
            wc_error("synth: cannot remove the previous %s: %s%s%s%s", path, strerror(err),
                     replaced & 1 ? "; the earlier region's " WC_SYNTH_MOSAIC " was removed "
                                    "before it, so there is no region in "
                                  : "",
                     replaced & 1 ? w.dir : "",
                     replaced & 1 ? " now: rerun the command once it can be removed" : "");
            rc = WC_ERR;
        }
    }
    const int started = rc == WC_OK;
    for (int tr = 0; tr < ntr && rc == WC_OK; tr++)
        for (int tc = 0; tc < ntc && rc == WC_OK; tc++)
            for (int group = 0; group < NGROUPS && rc == WC_OK; group++) {
                int x0 = tc * cfg->tile, y0 = tr * cfg->tile;
                rc = write_tile(&w, tr, tc, group, x0, y0, WC_MIN(cfg->tile, cfg->size - x0),
                                WC_MIN(cfg->tile, cfg->size - y0));
            }
    if (rc == WC_OK) rc = write_oracle(&w);
    if (rc == WC_OK) rc = write_vrt(&w, ntr, ntc);
    /* the failing file's message says that file's earlier version is untouched, which read as
     * if the earlier region were: its index is gone, and tiles before the failing one are new */
    if (rc != WC_OK && started)
        wc_error("synth: no region in %s now: %s; rerun the command to write the region", w.dir,
                 replaced == 3 ? "the earlier region's " WC_SYNTH_MOSAIC " and " WC_SYNTH_ORACLE
                                 " were removed before the first tile (some of its tiles may be "
                                 "this run's already), and this run's are written last"
                 : replaced == 1 ? "the earlier region's " WC_SYNTH_MOSAIC " was removed before "
                                   "the first tile (some of its tiles may be this run's already), "
                                   "and this run's is written last"
                 : replaced == 2
                     ? "an earlier " WC_SYNTH_ORACLE " (without a " WC_SYNTH_MOSAIC
                       ") was removed before the first tile, and this run's " WC_SYNTH_MOSAIC
                       " and " WC_SYNTH_ORACLE " are written last"
                     : "its " WC_SYNTH_MOSAIC " is written last");
    wc_gdal_errors_pop();
    CPLFree(w.wkt);
    if (rc == WC_OK)
        wc_info("synth: %dx%d region, seed %llu: %.1f%% nodata, %.2f%% of valid pixels burned; "
                "wrote %s/" WC_SYNTH_MOSAIC " (%d tile%s) in %.2f s (generation %.2f s)",
                cfg->size, cfg->size, (unsigned long long)cfg->seed, 100 * region->nodata_fraction,
                100 * region->burned_fraction, w.dir, ntr * ntc, ntr * ntc == 1 ? "" : "s",
                wc_now() - t0, t1 - t0);
    wc_synth_region_destroy(region);
    free(w.dir);
    return rc;
}
