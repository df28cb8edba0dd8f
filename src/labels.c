/* labels.c: label rasters from label rasters on other grids and from burned-area polygons;
 * see labels.h. Only rank 0 touches the files; the others receive the result. */
#include "wildcpu/labels.h"

#include <errno.h>
#include <cpl_conv.h>
#include <gdal.h>
#include <gdal_utils.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/rng.h"
#include "wildcpu/util.h"

/* A name for the derived raster that changes when the source or the grid changes. */
static void derived_path(char *buf, size_t size, const char *work_dir, const char *src,
                         const wc_raster *tiles) {
    struct stat st;
    uint64_t h = wc_hash64(0x1abe16); /* changed when the derivation changes: no stale reuse */
    for (const char *p = src; *p; p++) h = wc_hash64(h ^ (unsigned char)*p);
    if (stat(src, &st) == 0)
        h = wc_hash64(h ^ (uint64_t)st.st_size) ^ wc_hash64((uint64_t)st.st_mtime);
    h = wc_hash64(h ^ ((uint64_t)tiles->width << 32 | (uint64_t)tiles->height));
    for (int i = 0; i < 6; i++) {
        uint64_t bits;
        memcpy(&bits, &tiles->gt[i], 8);
        h = wc_hash64(h ^ bits);
    }
    for (const char *p = tiles->wkt; *p; p++) h = wc_hash64(h ^ (unsigned char)*p);
    snprintf(buf, size, "%s/labels-%016llx.tif", work_dir, (unsigned long long)h);
}

/* An empty Byte GeoTIFF on the tiles' grid, filled with 0. */
static GDALDatasetH create_grid_tif(const wc_raster *tiles, const char *path) {
    GDALDriverH drv = GDALGetDriverByName("GTiff");
    const char *opts[] = {"TILED=YES", "COMPRESS=DEFLATE", "BIGTIFF=IF_SAFER", NULL};
    GDALDatasetH ds = GDALCreate(drv, path, tiles->width, tiles->height, 1, GDT_Byte,
                                 (char **)opts);
    if (!ds) {
        wc_error("cannot create %s: %s", path, CPLGetLastErrorMsg());
        return NULL;
    }
    GDALSetGeoTransform(ds, (double *)tiles->gt);
    GDALSetProjection(ds, tiles->wkt);
    GDALSetDescription(GDALGetRasterBand(ds, 1), WC_LABEL_BAND_NAME);
    return ds;
}

static int close_checked(GDALDatasetH ds, const char *path) {
    /* Write errors surface when GDAL flushes at close; GDAL 3.6's GDALClose returns nothing. */
    CPLErrorReset();
    GDALClose(ds);
    if (CPLGetLastErrorType() == CE_Failure || CPLGetLastErrorType() == CE_Fatal) {
        wc_error("writing %s failed: %s", path, CPLGetLastErrorMsg());
        return WC_ERR;
    }
    return WC_OK;
}

static void extent_of_tiles(const wc_raster *t, char *buf, size_t size) {
    double x0, y0, x1, y1;
    wc_raster_pixel_to_map(t->gt, 0, 0, &x0, &y0);
    wc_raster_pixel_to_map(t->gt, t->width, t->height, &x1, &y1);
    char crs[128];
    wc_raster_crs_name(t->wkt, crs, sizeof crs);
    snprintf(buf, size, "(%.1f, %.1f)-(%.1f, %.1f) in %s", fmin(x0, x1), fmin(y0, y1),
             fmax(x0, x1), fmax(y0, y1), crs);
}

/* Rasterizes the polygons of the first polygon layer of `vec` into tmp. */
static int rasterize(const wc_raster *tiles, GDALDatasetH vec, const char *src, const char *tmp) {
    OGRLayerH layer = NULL;
    for (int i = 0; i < GDALDatasetGetLayerCount(vec) && !layer; i++) {
        OGRLayerH l = GDALDatasetGetLayer(vec, i);
        OGRwkbGeometryType g = wkbFlatten(OGR_L_GetGeomType(l));
        if (g == wkbPolygon || g == wkbMultiPolygon || g == wkbUnknown ||
            g == wkbGeometryCollection)
            layer = l;
    }
    if (!layer || OGR_L_GetFeatureCount(layer, TRUE) == 0) {
        wc_error("%s has no polygon layer with features: --labels needs burned-area polygons",
                 src);
        return WC_ERR;
    }
    OGRSpatialReferenceH lsrs = OGR_L_GetSpatialRef(layer);
    if (!lsrs && *tiles->wkt) {
        wc_error("%s (layer %s) has no CRS, so it cannot be placed on the tiles' grid (%s); "
                 "assign one with ogr2ogr -a_srs",
                 src, OGR_L_GetName(layer), tiles->path);
        return WC_ERR;
    }
    /* Polygons of this layer only; count the burnable geometry to refuse point/line files. */
    long polygons = 0;
    OGR_L_ResetReading(layer);
    for (OGRFeatureH f; (f = OGR_L_GetNextFeature(layer)) != NULL; OGR_F_Destroy(f)) {
        OGRGeometryH g = OGR_F_GetGeometryRef(f);
        OGRwkbGeometryType t = g ? wkbFlatten(OGR_G_GetGeometryType(g)) : wkbNone;
        polygons += t == wkbPolygon || t == wkbMultiPolygon;
    }
    if (polygons == 0) {
        wc_error("%s (layer %s) has no polygons: --labels needs burned-area polygons", src,
                 OGR_L_GetName(layer));
        return WC_ERR;
    }
    GDALDatasetH dst = create_grid_tif(tiles, tmp);
    if (!dst) return WC_ERR;
    const char *argv[] = {"-burn", "1", "-l", OGR_L_GetName(layer), NULL};
    GDALRasterizeOptions *opt = GDALRasterizeOptionsNew((char **)argv, NULL);
    int usage_error = 0;
    CPLErrorReset();
    GDALDatasetH out = GDALRasterize(NULL, dst, vec, opt, &usage_error);
    GDALRasterizeOptionsFree(opt);
    if (!out) {
        wc_error("rasterizing %s onto the tiles' grid failed: %s", src, CPLGetLastErrorMsg());
        GDALClose(dst);
        return WC_ERR;
    }
    /* No burned pixel at all: the perimeters miss the tiles. */
    double minmax[2] = {0, 0};
    GDALComputeRasterMinMax(GDALGetRasterBand(dst, 1), FALSE, minmax);
    if (close_checked(dst, tmp) != WC_OK) return WC_ERR;
    if (minmax[1] < 1) {
        unlink(tmp);
        OGREnvelope env;
        char ext[256], lext[256] = "unknown";
        extent_of_tiles(tiles, ext, sizeof ext);
        if (OGR_L_GetExtent(layer, &env, TRUE) == OGRERR_NONE) {
            char crs[128] = "no CRS";
            if (lsrs) {
                char *wkt = NULL;
                OSRExportToWkt(lsrs, &wkt);
                wc_raster_crs_name(wkt, crs, sizeof crs);
                CPLFree(wkt);
            }
            snprintf(lext, sizeof lext, "(%.1f, %.1f)-(%.1f, %.1f) in %s", env.MinX, env.MinY,
                     env.MaxX, env.MaxY, crs);
        }
        wc_error("no polygon of %s overlaps the tiles: tiles cover %s, the polygons %s", src, ext,
                 lext);
        return WC_ERR;
    }
    return WC_OK;
}

/* Warps a label raster onto the tiles' grid (nearest neighbour) into tmp. */
static int warp(const wc_raster *tiles, const wc_raster *lab, int band, const char *tmp) {
    char a[512], b[512];
    wc_raster_describe_grid(tiles, a, sizeof a);
    wc_raster_describe_grid(lab, b, sizeof b);
    if (!lab->has_gt || !*lab->wkt || !tiles->has_gt || !*tiles->wkt) {
        wc_error("the label raster %s is not on the tiles' grid and cannot be reprojected onto "
                 "it (a CRS or geotransform is missing): tiles %s: %s; labels: %s",
                 lab->path, tiles->path, a, b);
        return WC_ERR;
    }
    GDALDatasetH dst = create_grid_tif(tiles, tmp);
    if (!dst) return WC_ERR;
    GDALRasterBandH db = GDALGetRasterBand(dst, 1);
    /* Ground the label raster does not cover is unknown, not unburned: the destination starts
     * as nodata, and only pixels the warp fills from valid source pixels become labels. */
    GDALSetRasterNoDataValue(db, 255);
    char bandarg[16];
    snprintf(bandarg, sizeof bandarg, "%d", band);
    const char *argv[] = {"-r",      "near", "-srcband", bandarg, "-dstband",
                          "1",       "-dstnodata", "255", "-wo", "INIT_DEST=NO_DATA",
                          NULL};
    GDALWarpAppOptions *opt = GDALWarpAppOptionsNew((char **)argv, NULL);
    int usage_error = 0;
    GDALDatasetH srcs[1] = {(GDALDatasetH)lab->ds};
    CPLErrorReset();
    GDALDatasetH out = GDALWarp(NULL, dst, 1, srcs, opt, &usage_error);
    GDALWarpAppOptionsFree(opt);
    if (!out) {
        wc_error("warping %s onto the tiles' grid failed (tiles: %s; labels: %s): %s", lab->path,
                 a, b, CPLGetLastErrorMsg());
        GDALClose(dst);
        return WC_ERR;
    }
    return close_checked(dst, tmp);
}

/* A derived label raster is reused by name on every rerun, so it appears only complete: built
 * in tmp (rc: how that went), synced, then renamed. Frees tmp. */
static int publish(int rc, char *tmp, const char *derived) {
    if (rc == WC_OK && wc_fsync_path(tmp, 0) != WC_OK) rc = WC_ERR;
    if (rc == WC_OK && rename(tmp, derived) != 0) {
        wc_error("cannot rename %s to %s: %s", tmp, derived, strerror(errno));
        rc = WC_ERR;
    }
    if (rc == WC_OK && wc_fsync_parent(derived) != WC_OK) rc = WC_ERR;
    if (rc != WC_OK) unlink(tmp);
    free(tmp);
    return rc;
}

/* Rank 0's part: returns WC_OK with path/band filled, or WC_ERR. */
static int prepare_here(const wc_raster *tiles, const char *labels, const char *band_name,
                        const char *work_dir, char *path, size_t size, int *band) {
    struct stat st;
    if (stat(labels, &st) != 0 && strncmp(labels, "/vsi", 4) != 0 && !strchr(labels, ':')) {
        wc_error("--labels %s: %s", labels, strerror(errno));
        return WC_ERR;
    }
    wc_raster_init();
    CPLErrorReset();
    GDALDatasetH ds = GDALOpenEx(labels, GDAL_OF_RASTER | GDAL_OF_VECTOR | GDAL_OF_READONLY,
                                 NULL, NULL, NULL);
    if (!ds) {
        wc_error("--labels %s is neither a raster nor a vector file GDAL can open: %s", labels,
                 CPLGetLastErrorMsg());
        return WC_ERR;
    }
    int is_raster = GDALGetRasterCount(ds) > 0;
    GDALClose(ds);
    char derived[4096];
    derived_path(derived, sizeof derived, work_dir, labels, tiles);
    if (is_raster) {
        wc_raster lab;
        if (wc_raster_open(&lab, labels) != WC_OK) return WC_ERR;
        int b = band_name && *band_name ? wc_raster_find_band(&lab, band_name) : 1;
        if (b == 0) b = 1; /* --label-band names the tiles' band by default; a label file has one */
        if (wc_raster_same_grid(tiles, &lab)) {
            snprintf(path, size, "%s", labels);
            *band = b;
            wc_raster_close(&lab);
            return WC_OK;
        }
        int rc = WC_OK;
        if (access(derived, R_OK) != 0) {
            char *tmp = wc_temp_path(derived, "tmp");
            rc = publish(warp(tiles, &lab, b, tmp), tmp, derived);
            if (rc == WC_OK)
                wc_info("labels: warped %s onto the tiles' grid into %s", labels, derived);
        }
        wc_raster_close(&lab);
        snprintf(path, size, "%s", derived);
        *band = 1;
        return rc;
    }
    if (access(derived, R_OK) != 0) {
        ds = GDALOpenEx(labels, GDAL_OF_VECTOR | GDAL_OF_READONLY, NULL, NULL, NULL);
        char *tmp = wc_temp_path(derived, "tmp");
        double t0 = wc_now();
        int rc = rasterize(tiles, ds, labels, tmp);
        GDALClose(ds);
        if (publish(rc, tmp, derived) != WC_OK) return WC_ERR;
        wc_info("labels: rasterized the polygons of %s onto the tiles' grid in %.1f s (%s)",
                labels, wc_now() - t0, derived);
    }
    snprintf(path, size, "%s", derived);
    *band = 1;
    return WC_OK;
}

int wc_labels_prepare(const wc_raster *tiles, const char *labels, const char *band_name,
                      const char *work_dir, char **out_path, int *out_band) {
    struct {
        int status, band;
        char path[4096];
    } msg = {WC_ERR, 0, ""};
    if (wc_dist_rank() == 0)
        msg.status = prepare_here(tiles, labels, band_name, work_dir, msg.path, sizeof msg.path,
                                  &msg.band);
    wc_dist_bcast(&msg, sizeof msg, 0);
    if (msg.status != WC_OK) return WC_ERR;
    *out_path = wc_strdup(msg.path);
    *out_band = msg.band;
    return WC_OK;
}
