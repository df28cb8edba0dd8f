/* labels.c: label rasters from label rasters on other grids and from burned-area polygons, and
 * the choice of a label band; see labels.h. Only rank 0 touches the files; the others receive
 * the result (and take part in the stop agreement while they wait).
 *
 * Not here: writing and publishing the derived rasters (the raster writer, rwriter.h, does:
 * GDAL warps and rasterizes into its working file), reading labels (dataset.c). */
#include "wildcpu/labels.h"

#include <cpl_conv.h>
#include <cpl_string.h>
#include <ctype.h>
#include <errno.h>
#include <gdal.h>
#include <gdal_utils.h>
#include <inttypes.h>
#include <math.h>
#include <ogr_api.h>
#include <ogr_srs_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/rng.h"
#include "wildcpu/rwriter.h"
#include "wildcpu/stop.h"
#include "wildcpu/util.h"

/* ---- choosing the label band ------------------------------------------------------------- */

/* "elevation, slope, fire" for messages, cut to fit. */
static void band_list(const wc_raster *r, char *buf, size_t size) {
    size_t n = 0;
    buf[0] = '\0';
    for (int i = 0; i < r->nbands; i++) {
        int w = snprintf(buf + n, size - n, "%s%s", i ? ", " : "", r->bands[i].name);
        if (w < 0 || (size_t)w + 5 >= size - n) {
            snprintf(buf + n, size - n, "%s...", i ? ", " : "");
            return;
        }
        n += (size_t)w;
    }
}

void wc_labels_describe(char *out, size_t size, int band, const char *name, const char *path,
                        const char *labels) {
    if (name) {
        snprintf(out, size, "band %d '%s' of %s", band, name, path);
        return;
    }
    const int derived = labels && strcmp(labels, path) != 0;
    snprintf(out, size, "band %d of %s%s%s%s", band, path, derived ? " (from " : "",
             derived ? labels : "", derived ? ")" : "");
}

int wc_labels_name_like(const char *a, const char *b) {
    while (isspace((unsigned char)*a)) a++;
    while (isspace((unsigned char)*b)) b++;
    size_t na = strlen(a), nb = strlen(b);
    while (na && isspace((unsigned char)a[na - 1])) na--;
    while (nb && isspace((unsigned char)b[nb - 1])) nb--;
    if (na != nb) return 0;
    for (size_t i = 0; i < na; i++)
        if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i])) return 0;
    return 1;
}

/* "; band N is described 'Fire', ...": the bands named like `name` but not as it (case,
 * blanks), which the list of bands shows alike ('fire ' reads as 'fire'); "" when none */
static void like_hint(const wc_raster *r, const char *name, char *out, size_t size) {
    size_t n = 0;
    out[0] = '\0';
    for (int b = 1; b <= r->nbands && n + 64 < size; b++) {
        const char *d = r->bands[b - 1].name;
        if (strcmp(d, name) == 0 || !wc_labels_name_like(d, name)) continue;
        int w = snprintf(out + n, size - n, "%sband %d is described '%s'", n ? ", " : "; ", b, d);
        if (w < 0 || (size_t)w >= size - n) break;
        n += (size_t)w;
    }
    if (n && n + 40 < size)
        snprintf(out + n, size - n, ", not '%s' (--label-band N takes it by number)", name);
}

int wc_labels_find_band(const wc_raster *r, const char *sel, int in_tiles, int *by_number) {
    const int dflt = !sel || !*sel;
    char name[WC_BAND_NAME_MAX]; /* as band descriptions are kept */
    wc_band_name_of(dflt ? WC_LABEL_BAND_NAME : sel, name);
    char what[4200], list[1024];
    snprintf(what, sizeof what, "%s%s", in_tiles ? "" : "the label raster ", r->path);
    band_list(r, list, sizeof list);
    *by_number = 0;
    int found = 0, named = 0;
    char numbers[256] = "";
    for (int b = 1; b <= r->nbands; b++) {
        if (strcmp(r->bands[b - 1].name, name) != 0) continue;
        size_t n = strlen(numbers);
        if (n + 16 < sizeof numbers)
            snprintf(numbers + n, sizeof numbers - n, "%s%d", n ? ", " : "", b);
        found = found ? found : b;
        named++;
    }
    if (named > 1) {
        wc_error("%s: bands %s are all described '%s'%s, so which one holds the labels is "
                 "ambiguous; --label-band N picks one by its number",
                 what, numbers, name, wc_raster_renamed_note(r, name));
        return 0;
    }
    if (found) return found;
    if (dflt) {
        /* one band besides an alpha band (the mask of the others, never the labels) */
        int only = 0, candidates = 0;
        for (int b = 1; b <= r->nbands; b++)
            if (!r->bands[b - 1].is_alpha) candidates++, only = b;
        if (candidates == 1) {
            *by_number = 1;
            return only;
        }
        char like[512];
        like_hint(r, WC_LABEL_BAND_NAME, like, sizeof like);
        wc_error("%s has %d bands and none is described '%s' (its bands: %s)%s: say which one "
                 "holds the labels with --label-band NAME|N",
                 what, r->nbands, WC_LABEL_BAND_NAME, list, like);
        return 0;
    }
    char *end;
    long n = strtol(sel, &end, 10);
    if (*sel >= '0' && *sel <= '9' && !*end) {
        if (n >= 1 && n <= r->nbands) {
            *by_number = 1;
            return (int)n;
        }
        wc_error("%s has no band %s: it has %d (its bands: %s); --label-band takes a band's "
                 "description or its number",
                 what, sel, r->nbands, list);
        return 0;
    }
    char hint[512], like[512];
    wc_raster_undescribed_hint(r, &sel, 1, hint, sizeof hint);
    like_hint(r, name, like, sizeof like);
    wc_error("%s has no label band '%s' (its bands: %s)%s; name it with --label-band NAME|N%s%s",
             what, sel, list, like, in_tiles ? ", or give labels with --labels" : "", hint);
    return 0;
}

/* ---- the stop agreement ------------------------------------------------------------------ */

/* Rank 0 works on the labels while the other ranks wait for it, meeting them to agree on a stop
 * (dist.h, wc_dist_solo; from GDAL's progress callback and from its own loops). */
typedef wc_dist_solo agreement;

/* Rank 0, while working: 1 to go on, 0 once the ranks agreed to stop. */
static int go_on(agreement *a) {
    return wc_dist_solo_go_on(a);
}

/* One of rank 0's GDAL operations on the labels (a warp, a rasterization, reading them back):
 * onto a huge grid it takes minutes, said in a line every WC_PROGRESS_SECONDS; GDAL's progress
 * callback (gdal_go_on) says it and asks the stop agreement. */
typedef struct {
    agreement *a;
    const char *what;
    wc_progress progress;
} gdal_job;

static gdal_job job_of(agreement *a, const char *what) {
    gdal_job j = {.a = a, .what = what};
    wc_progress_start(&j.progress);
    return j;
}

/* GDAL's progress callback: returning FALSE makes GDAL cancel the operation. */
static int CPL_STDCALL gdal_go_on(double done, const char *msg, void *arg) {
    (void)msg;
    gdal_job *j = arg;
    if (done > 0 && done < 1 && wc_progress_due(&j->progress))
        wc_info("labels: %s: %.0f%%: %.1f s, about %.0f s left", j->what, 100 * done,
                wc_progress_elapsed(&j->progress), wc_progress_left(&j->progress, done));
    return go_on(j->a);
}

/* ---- derived rasters --------------------------------------------------------------------- */

/* A name for the derived raster that changes when the source, the band taken from it (0 for
 * polygons) or the grid changes. The source is every file GDAL reads for it (a VRT and the
 * rasters it references, a shapefile and its .dbf), each by size, inode and modification time
 * to the nanosecond: a tile of a label VRT rewritten in place gives a new name, not the
 * previous labels. */
static void derived_path(char *buf, size_t size, const char *work_dir, const char *src, int band,
                         const wc_raster *tiles) {
    struct stat st;
    /* changed when a derivation changes, so no stale raster is reused. Polygons: 0x1abe1d
     * burns polygons in the tiles' CRS uncut (0x1abe1c cut them to the region), 0x1abe1c
     * refuses a layer whose CRS cannot be transformed into the tiles' (0x1abe1b burned its
     * coordinates as the tiles'), 0x1abe1b takes
     * a polygon written across the antimeridian unsplit the short way, 0x1abe1a tags the raster
     * (DERIVED_TAG), 0x1abe17 burned only polygonal geometry (0x1abe16 points and
     * lines too). Warped rasters: 0x1abe19 honours the band's mask (alpha) and tags the raster,
     * 0x1abe18 kept the values (Float32/Float64, NaN nodata; 0x1abe17 narrowed them to Byte). */
    uint64_t h = wc_hash64(band ? 0x1abe19 : 0x1abe1d);
    for (const char *p = src; *p; p++) h = wc_hash64(h ^ (unsigned char)*p);
    char **files = wc_gdal_file_list(src);
    for (size_t i = 0; files[i]; i++) {
        /* a SQLite database (a GeoPackage) in WAL mode, held open by the program editing it
         * (QGIS, while a layer is being edited), takes its commits in FILE-wal, which GDAL reads
         * and does not list; FILE itself changes only at a checkpoint, so a perimeter deleted
         * there left the previous labels reused. A FILE-wal shorter than its 32-byte header
         * holds no commit: any program that merely opens the database (QGIS showing the layer,
         * ogrinfo) makes an empty one and removes it at close, which gave new labels, and one
         * more labels-<hash>.tif, for every such session though nothing had changed */
        char *wal = wc_strdup(CPLSPrintf("%s-wal", files[i]));
        for (const char *f = files[i]; f; f = f == files[i] ? wal : NULL) {
            if (stat(f, &st) != 0 || (f == wal && st.st_size < 32)) continue;
            h = wc_hash64(h ^ (uint64_t)st.st_size) ^ wc_hash64((uint64_t)st.st_ino);
            h = wc_hash64(h ^ (uint64_t)st.st_mtim.tv_sec) ^
                wc_hash64((uint64_t)st.st_mtim.tv_nsec);
        }
        free(wal);
    }
    wc_strv_free(files);
    h = wc_hash64(h ^ (uint64_t)band);
    h = wc_hash64(h ^ ((uint64_t)tiles->width << 32 | (uint64_t)tiles->height));
    for (int i = 0; i < 6; i++) {
        uint64_t bits;
        memcpy(&bits, &tiles->gt[i], 8);
        h = wc_hash64(h ^ bits);
    }
    for (const char *p = tiles->wkt; *p; p++) h = wc_hash64(h ^ (unsigned char)*p);
    snprintf(buf, size, "%s/labels-%016llx.tif", work_dir, (unsigned long long)h);
}

/* Whether every block a GeoTIFF says it has lies within the file: one truncated (by hand, a
 * full disk under another tool) may still open, and fail only when a block is read, minutes in.
 * From the TIFF's own block table (metadata, no pixel read); a sparse file's unwritten blocks
 * have none. */
static int blocks_within_file(GDALDatasetH ds, const char *path) {
    struct stat st;
    if (stat(path, &st) != 0) return 0;
    GDALRasterBandH b = GDALGetRasterBand(ds, 1);
    int bw, bh;
    GDALGetBlockSize(b, &bw, &bh);
    const int nx = (GDALGetRasterXSize(ds) + bw - 1) / bw;
    const int ny = (GDALGetRasterYSize(ds) + bh - 1) / bh;
    for (int y = 0; y < ny; y++)
        for (int x = 0; x < nx; x++) {
            const char *at = GDALGetMetadataItem(b, CPLSPrintf("BLOCK_OFFSET_%d_%d", x, y), "TIFF");
            const char *n = GDALGetMetadataItem(b, CPLSPrintf("BLOCK_SIZE_%d_%d", x, y), "TIFF");
            if (at && n && strtoull(at, NULL, 10) + strtoull(n, NULL, 10) > (uint64_t)st.st_size)
                return 0;
        }
    return 1;
}

/* The metadata item every derived label raster carries: a raster of that name without it is not
 * wildcpu's (a map written there with evaluate --map), and is neither read as labels nor
 * replaced. */
#define DERIVED_TAG       "WILDCPU_DERIVED_LABELS"
#define DERIVED_TAG_VALUE "1"

/* Counts, silently, what GDAL reports while an earlier derived raster is opened and its tag
 * read that says the file is damaged: an error, or a read that failed; a file whose end was cut
 * off (the tag's bytes, written last, with the TIFF directory) opens with "IO error during
 * reading of GDALMetadata; tag ignored", a warning. Other warnings are no damage: an intact
 * raster whose TIFF tags are out of order opens with "tags are not sorted in ascending order",
 * and one that is not wildcpu's was then removed rather than refused. */
static void CPL_STDCALL count_gdal_reports(CPLErr cls, CPLErrorNum num, const char *msg) {
    (void)num;
    if (cls >= CE_Failure ||
        (cls == CE_Warning && msg && (strstr(msg, "IO error") || strstr(msg, "Read error"))))
        (*(int *)CPLGetErrorHandlerUserData())++;
}

/* Whether the derived raster of an earlier run may be reused (1) or is to be made (0): present,
 * opened by GDAL, tagged, one band on the tiles' grid. One that is not (damaged, truncated by
 * hand) is removed, said, and made again, rather than reused or refused: it is wildcpu's own
 * cache of the --labels source. -1 after a message: a raster there that is not wildcpu's. */
static int derived_reusable(const char *derived, const wc_raster *tiles, const char *src) {
    if (access(derived, F_OK) != 0) return 0;
    int reports = 0;
    CPLPushErrorHandlerEx(count_gdal_reports, &reports);
    GDALDatasetH ds = GDALOpenEx(derived, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    const char *tag = ds ? GDALGetMetadataItem(ds, DERIVED_TAG, NULL) : NULL;
    /* A raster without the tag is another's, refused; but one GDAL reads only with read errors
     * is damaged, and a damaged file's missing tag says nothing of whose it is: a derived raster
     * truncated by 264 of its 2264 bytes lost its tag (not its grid) and was refused as "a map
     * written there?", though damaged ones are documented to be made again. */
    if (ds && !(tag && strcmp(tag, DERIVED_TAG_VALUE) == 0) && reports == 0) {
        GDALClose(ds);
        CPLPopErrorHandler();
        wc_error("%s is where wildcpu keeps the labels it derives from %s, and holds a raster "
                 "that is not such labels (no %s tag: a map written there?): it is neither "
                 "read as labels nor replaced; move it away",
                 derived, src, DERIVED_TAG);
        return -1;
    }
    double gt[6];
    int ok = ds && GDALGetRasterCount(ds) == 1 && GDALGetRasterXSize(ds) == tiles->width &&
             GDALGetRasterYSize(ds) == tiles->height && GDALGetGeoTransform(ds, gt) == CE_None &&
             gt[0] == tiles->gt[0] && gt[1] == tiles->gt[1] && gt[2] == tiles->gt[2] &&
             gt[3] == tiles->gt[3] && gt[4] == tiles->gt[4] &&
             gt[5] == tiles->gt[5]; /* as numbers: -0.0 is 0.0 */
    ok = ok && reports == 0 && tag && blocks_within_file(ds, derived);
    if (ds) GDALClose(ds);
    CPLPopErrorHandler();
    if (ok) return 1;
    if (unlink(derived) == 0)
        wc_warn("%s, the labels derived from %s by an earlier run, cannot be read as they were "
                "written: removed, and made again",
                derived, src);
    return 0;
}

/* The raster writer asks this between closing its working file and the rename: flushing and
 * syncing a large grid take seconds, during which a stop is still agreed promptly (and leaves
 * no derived raster). */
static int writer_go_on(void *arg) {
    return go_on(arg);
}

/* The writer of an empty GeoTIFF of `type` on the tiles' grid, to become `derived`; nodata:
 * its band's nodata value, or NULL for none. Sparse: blocks never written take no space and
 * read as 0 (or as the nodata value), which keeps a huge, mostly unburned grid small and lets a
 * cancelled write close quickly. NULL after a message. */
static wc_rwriter *create_grid(const wc_raster *tiles, const char *derived, wc_dtype type,
                               const double *nodata, agreement *a) {
    static const char *const opts[] = {"TILED=YES", "COMPRESS=DEFLATE", "BIGTIFF=IF_SAFER",
                                       "SPARSE_OK=TRUE", NULL};
    const wc_rwriter_band band = {
        .name = WC_LABEL_BAND_NAME, .has_nodata = nodata != NULL, .nodata = nodata ? *nodata : 0};
    const wc_rwriter_opts o = {.options = opts,
                               .width = tiles->width,
                               .height = tiles->height,
                               .nbands = 1,
                               .type = type,
                               .gt = tiles->has_gt ? tiles->gt : NULL,
                               .wkt = tiles->wkt,
                               .bands = &band,
                               .keep_going = writer_go_on,
                               .arg = a};
    return wc_rwriter_create(derived, &o);
}

/* Publishes a derived raster, tagged as such (after the warp: GDALWarp replaces the metadata of
 * its destination with its source's). */
static int commit_grid(wc_rwriter *w) {
    GDALSetMetadataItem(wc_rwriter_gdal(w), DERIVED_TAG, DERIVED_TAG_VALUE, NULL);
    return wc_rwriter_commit(w) == WC_OK ? WC_OK : WC_ERR;
}

/* The tiles' extent in their CRS, lo and hi (x, y), from all four corners: a rotated grid's
 * box is wider than the two corners (0, 0) and (W, H) give. */
static void tiles_box(const wc_raster *t, double lo[2], double hi[2]) {
    lo[0] = lo[1] = INFINITY, hi[0] = hi[1] = -INFINITY;
    for (int c = 0; c < 4; c++) {
        double x, y;
        wc_raster_pixel_to_map(t->gt, c & 1 ? t->width : 0, c & 2 ? t->height : 0, &x, &y);
        lo[0] = fmin(lo[0], x), hi[0] = fmax(hi[0], x);
        lo[1] = fmin(lo[1], y), hi[1] = fmax(hi[1], y);
    }
}

static void extent_of_tiles(const wc_raster *t, char *buf, size_t size) {
    double lo[2], hi[2];
    tiles_box(t, lo, hi);
    char crs[128];
    wc_raster_crs_describe(t->wkt, crs, sizeof crs);
    snprintf(buf, size, "(%.10g, %.10g)-(%.10g, %.10g) in %s", lo[0], lo[1], hi[0], hi[1], crs);
}

/* ---- polygons ---------------------------------------------------------------------------- */

static int is_polygonal(OGRwkbGeometryType t) {
    return OGR_GT_IsSubClassOf(t, wkbSurface) || OGR_GT_IsSubClassOf(t, wkbMultiSurface);
}

/* Where the polygons go: into the tiles' CRS, by wildcpu rather than by GDALRasterize, which
 * drops a polygon it cannot reproject without a word (a polygon reaching far from the tiles'
 * projection: a continent in UTM). A polygon is first cut to the tiles' region (with a margin),
 * expressed in the polygons' CRS, so that only the part that can burn a pixel is reprojected;
 * one that still cannot be is counted, and the labels refused. */
typedef struct {
    OGRCoordinateTransformationH to_tiles; /* NULL: no reprojection (no CRS on either side) */
    OGRGeometryH region;                   /* the tiles' region in the polygons' CRS, or NULL */
    OGREnvelope box_env[3];                /* the envelopes of its boxes: a polygon meeting none */
    int nbox;                              /* cannot burn a pixel */
    int longitudes;                        /* x is longitude in degrees (boxes a turn apart) */
    OGREnvelope uncut_env;                 /* a polygon within it lies within the region */
    int cut;                               /* cut polygons to the region (not in the tiles' CRS) */
    long seen;                             /* polygons found, wherever they lie */
    long failed;                           /* polygons over the region that cannot be reprojected */
    long long first_fid;                   /* the first of them */
    long long fid;                         /* the feature being added */
    const wc_raster *tiles;                /* whose pixels the polygons burn */
} placement;

static int envelopes_meet(const OGREnvelope *a, const OGREnvelope *b) {
    return a->MinX <= b->MaxX && b->MinX <= a->MaxX && a->MinY <= b->MaxY && b->MinY <= a->MaxY;
}

static int envelope_within(const OGREnvelope *a, const OGREnvelope *b) {
    return a->MinX >= b->MinX && a->MaxX <= b->MaxX && a->MinY >= b->MinY && a->MaxY <= b->MaxY;
}

static long add_polygons(OGRLayerH mem, OGRGeometryH g, long *skipped, placement *pl);

/* Whether an edge of g (a polygon in degrees, or one of its rings) goes more than half a turn of
 * longitude: a polygon written across the antimeridian without being split (179.99 then
 * -179.99), meant the short way over it, as its vertices reprojected one by one draw it, or a
 * band around the globe (-179 then 179), meant the long way, as its edges straight in degrees
 * draw it. */
static int edge_wraps(OGRGeometryH g) {
    for (int i = 0; i < OGR_G_GetGeometryCount(g); i++)
        if (edge_wraps(OGR_G_GetGeometryRef(g, i))) return 1;
    for (int i = 1; i < OGR_G_GetPointCount(g); i++)
        if (fabs(OGR_G_GetX(g, i) - OGR_G_GetX(g, i - 1)) > 180) return 1;
    return 0;
}

/* Whether a ring, its edges each taken the short way, goes once around the pole (its steps of
 * longitude sum to a turn): such a ring means what it says, the long way. */
static int ring_goes_around(OGRGeometryH ring) {
    double turn = 0;
    for (int i = 1; i < OGR_G_GetPointCount(ring); i++)
        turn += remainder(OGR_G_GetX(ring, i) - OGR_G_GetX(ring, i - 1), 360);
    return fabs(turn) > 180;
}

/* The envelope of polygon g (or a ring) with every vertex west of `mid` a turn east. */
static void shifted_envelope(OGRGeometryH g, double mid, OGREnvelope *env) {
    for (int i = 0; i < OGR_G_GetGeometryCount(g); i++)
        shifted_envelope(OGR_G_GetGeometryRef(g, i), mid, env);
    for (int i = 0; i < OGR_G_GetPointCount(g); i++) {
        const double x = OGR_G_GetX(g, i) + (OGR_G_GetX(g, i) < mid ? 360 : 0);
        env->MinX = fmin(env->MinX, x), env->MaxX = fmax(env->MaxX, x);
        env->MinY = fmin(env->MinY, OGR_G_GetY(g, i)),
        env->MaxY = fmax(env->MaxY, OGR_G_GetY(g, i));
    }
}

/* Moves every vertex of g west of `mid` a turn east: a polygon around the antimeridian is then
 * one shape, 179.99 to 180.01 (or 359.99 to 360.01 around Greenwich, written in 0..360), which
 * the region's boxes a turn apart meet, and PROJ places as the ground it means. */
static void unwrap_longitudes(OGRGeometryH g, double mid) {
    for (int i = 0; i < OGR_G_GetGeometryCount(g); i++)
        unwrap_longitudes(OGR_G_GetGeometryRef(g, i), mid);
    for (int i = 0; i < OGR_G_GetPointCount(g); i++)
        if (OGR_G_GetX(g, i) < mid)
            OGR_G_SetPoint_2D(g, i, OGR_G_GetX(g, i) + 360, OGR_G_GetY(g, i));
}

/* Each polygon of the multipolygon mp written across the antimeridian unsplit is taken the short
 * way over it when that way meets the region (as ogr2ogr -t_srs EPSG:4326 leaves a polygon of
 * projected data), else as written, edges straight in degrees: the long way, a band around the
 * globe. Decided polygon by polygon (a fire at 180 and one at 0 in one feature), never for a
 * polygon whose outer ring goes around a pole. */
static void unwrap_antimeridian(OGRGeometryH mp, const placement *pl) {
    for (int k = 0; k < OGR_G_GetGeometryCount(mp); k++) {
        OGRGeometryH part = OGR_G_GetGeometryRef(mp, k);
        if (!edge_wraps(part) || OGR_G_GetGeometryCount(part) < 1 ||
            ring_goes_around(OGR_G_GetGeometryRef(part, 0)))
            continue;
        OGREnvelope env, shifted = {INFINITY, -INFINITY, INFINITY, -INFINITY};
        OGR_G_GetEnvelope(part, &env);
        const double mid = 0.5 * (env.MinX + env.MaxX);
        shifted_envelope(part, mid, &shifted);
        int meets = 0;
        for (int b = 0; b < pl->nbox && !meets; b++)
            meets = envelopes_meet(&shifted, &pl->box_env[b]);
        if (meets) unwrap_longitudes(part, mid);
    }
}

static OGRGeometryH dense_box(double x0, double y0, double x1, double y1, int per_side);

/* GDAL's rasterizer walks a polygon's edges in int pixel coordinates: a vertex more than 2^31
 * pixels from the tiles (a stray vertex at 1e12 m on 30 m pixels) overflows them, and the
 * polygon burns a few rows of what it covers, or nothing (gdal_rasterize alike; measured on the
 * sample's grid: 2.0e9 pixels away burned every pixel, 2.3e9 none). Such a polygon (g, in the
 * tiles' CRS, taken) is cut to the tiles' box with a margin of a tenth of it first: a cut edge's
 * ends move by round-off at the margin, far from any pixel centre. NULL when nothing is left;
 * uncut when GEOS refuses the geometry (a self-crossing ring). */
#define RASTERIZER_REACH_PX 1073741824.0 /* 2^30: half of int's range, for safety */
static OGRGeometryH within_rasterizer_reach(OGRGeometryH g, const wc_raster *tiles) {
    if (!tiles || !tiles->has_gt) return g;
    double lo[2], hi[2];
    tiles_box(tiles, lo, hi);
    const double *t = tiles->gt;
    const double px = fmin(hypot(t[1], t[4]), hypot(t[2], t[5])); /* the shorter side */
    OGREnvelope e;
    OGR_G_GetEnvelope(g, &e);
    const double far =
        fmax(fmax(lo[0] - e.MinX, e.MaxX - hi[0]), fmax(lo[1] - e.MinY, e.MaxY - hi[1]));
    if (!(px > 0) || far / px <= RASTERIZER_REACH_PX) return g;
    const double mx = 0.1 * (hi[0] - lo[0]) + 2 * px, my = 0.1 * (hi[1] - lo[1]) + 2 * px;
    OGRGeometryH box = dense_box(lo[0] - mx, lo[1] - my, hi[0] + mx, hi[1] + my, 1);
    CPLPushErrorHandler(CPLQuietErrorHandler);
    OGRGeometryH cut = OGR_G_Intersection(g, box);
    CPLPopErrorHandler();
    OGR_G_DestroyGeometry(box);
    if (!cut) return g;
    OGR_G_DestroyGeometry(g);
    if (OGR_G_IsEmpty(cut)) {
        OGR_G_DestroyGeometry(cut);
        return NULL;
    }
    return OGR_G_ForceToMultiPolygon(cut);
}

/* Adds a linear 2D multipolygon (taken) in the tiles' CRS: cut to the region, then reprojected.
 * Returns the parts added (0 when it lies off the region), -1 on an OGR failure. */
static long add_placed(OGRLayerH mem, OGRGeometryH copy, placement *pl) {
    if (pl->to_tiles) {
        OGREnvelope env;
        OGR_G_GetEnvelope(copy, &env);
        if (pl->longitudes && edge_wraps(copy)) {
            unwrap_antimeridian(copy, pl);
            OGR_G_GetEnvelope(copy, &env);
        }
        int meets = !pl->region;
        for (int k = 0; k < pl->nbox && !meets; k++) meets = envelopes_meet(&env, &pl->box_env[k]);
        if (!meets) {
            OGR_G_DestroyGeometry(copy); /* cannot burn a pixel */
            return 0;
        }
        if (pl->region && pl->cut && !envelope_within(&env, &pl->uncut_env)) {
            /* only a valid geometry is cut: GEOS refuses some invalid ones (a self-crossing
             * ring: NULL) but cuts others its own way (a hole outside its shell, dropped, where
             * gdal_rasterize burns it), so an invalid one goes uncut, burned as it is */
            CPLPushErrorHandler(CPLQuietErrorHandler);
            OGRGeometryH cut = OGR_G_IsValid(copy) ? OGR_G_Intersection(copy, pl->region) : NULL;
            CPLPopErrorHandler();
            if (cut) {
                OGR_G_DestroyGeometry(copy);
                long ignored = 0;
                placement inside = *pl;
                inside.region = NULL; /* cut already */
                long n = add_polygons(mem, cut, &ignored, &inside);
                pl->failed = inside.failed, pl->first_fid = inside.first_fid; /* not `seen` */
                OGR_G_DestroyGeometry(cut);
                return n;
            }
        }
        CPLPushErrorHandler(CPLQuietErrorHandler);
        const OGRErr err = OGR_G_Transform(copy, pl->to_tiles);
        CPLPopErrorHandler();
        if (err != OGRERR_NONE) {
            if (pl->failed++ == 0) pl->first_fid = pl->fid;
            OGR_G_DestroyGeometry(copy);
            return 0;
        }
    }
    copy = within_rasterizer_reach(copy, pl->tiles);
    if (!copy) return 0; /* all of it far off the tiles */
    OGRFeatureH f = OGR_F_Create(OGR_L_GetLayerDefn(mem));
    OGR_F_SetGeometryDirectly(f, copy);
    OGRErr err = OGR_L_CreateFeature(mem, f);
    OGR_F_Destroy(f);
    return err == OGRERR_NONE ? 1 : -1;
}

/* Adds the polygonal parts of g to `mem` as features, one each, linear and 2D, placed as `pl`
 * says; counts in *skipped the parts that mark no area (points, lines). Generic geometry
 * collections are searched member by member. Returns the number of parts added, or -1 on an
 * OGR failure. */
static long add_polygons(OGRLayerH mem, OGRGeometryH g, long *skipped, placement *pl) {
    if (!g || OGR_G_IsEmpty(g)) return 0;
    OGRwkbGeometryType t = OGR_GT_Flatten(OGR_G_GetGeometryType(g));
    if (t == wkbGeometryCollection) {
        long added = 0;
        for (int i = 0; i < OGR_G_GetGeometryCount(g); i++) {
            long n = add_polygons(mem, OGR_G_GetGeometryRef(g, i), skipped, pl);
            if (n < 0) return -1;
            added += n;
        }
        return added;
    }
    if (!is_polygonal(t)) {
        (*skipped)++;
        return 0;
    }
    pl->seen++;
    /* GDALRasterize burns linear polygons; curves are approximated with GDAL's default step */
    OGRGeometryH copy =
        OGR_G_HasCurveGeometry(g, FALSE) ? OGR_G_GetLinearGeometry(g, 0, NULL) : OGR_G_Clone(g);
    copy = OGR_G_ForceToMultiPolygon(copy);
    OGR_G_FlattenTo2D(copy);
    return add_placed(mem, copy, pl);
}

/* Whether layer l may hold polygons (by its declared geometry type). */
static int may_hold_polygons(OGRLayerH l) {
    OGRwkbGeometryType g = OGR_GT_Flatten(OGR_L_GetGeomType(l));
    return is_polygonal(g) || g == wkbUnknown || g == wkbGeometryCollection;
}

/* Whether g is, or a collection holds, a non-empty polygon. */
static int holds_polygon(OGRGeometryH g) {
    if (!g || OGR_G_IsEmpty(g)) return 0;
    OGRwkbGeometryType t = OGR_GT_Flatten(OGR_G_GetGeometryType(g));
    if (t == wkbGeometryCollection) {
        for (int i = 0; i < OGR_G_GetGeometryCount(g); i++)
            if (holds_polygon(OGR_G_GetGeometryRef(g, i))) return 1;
        return 0;
    }
    return is_polygonal(t);
}

/* Whether layer l has burned areas to offer: features, and for a layer whose declared type
 * says nothing (KML, GML, DXF folders), one that holds a polygon, read until found. */
static int offers_polygons(OGRLayerH l) {
    if (OGR_L_GetFeatureCount(l, TRUE) <= 0) return 0;
    if (is_polygonal(OGR_GT_Flatten(OGR_L_GetGeomType(l)))) return 1;
    int found = 0;
    OGR_L_ResetReading(l);
    for (OGRFeatureH f; !found && (f = OGR_L_GetNextFeature(l)) != NULL; OGR_F_Destroy(f))
        found = holds_polygon(OGR_F_GetGeometryRef(f));
    OGR_L_ResetReading(l);
    return found;
}

/* The layer of vec that holds the burned areas: the one layer that offers polygons (else the
 * first that may hold them, for the messages of an empty one or one of points). When two or
 * more offer polygons, *many is set after an error naming them: burning them all could take a
 * study area for a fire, and taking the first would drop the others silently. */
static OGRLayerH polygon_layer(GDALDatasetH vec, const char *src, int *many) {
    OGRLayerH first = NULL, with_features = NULL;
    char names[1024] = "";
    size_t n = 0;
    int count = 0;
    for (int i = 0; i < GDALDatasetGetLayerCount(vec); i++) {
        OGRLayerH l = GDALDatasetGetLayer(vec, i);
        if (!may_hold_polygons(l)) continue;
        if (!first) first = l;
        if (!offers_polygons(l)) continue;
        const GIntBig features = OGR_L_GetFeatureCount(l, TRUE);
        if (!with_features) with_features = l;
        count++;
        if (n + 128 < sizeof names)
            n += (size_t)snprintf(names + n, sizeof names - n, "%s%s (%lld feature%s)",
                                  n ? ", " : "", OGR_L_GetName(l), (long long)features,
                                  features == 1 ? "" : "s");
    }
    *many = count > 1;
    if (*many) {
        wc_error("%s has %d layers that may hold burned-area polygons: %s; --labels takes one "
                 "layer: copy it out (ogr2ogr fires.gpkg %s LAYER) or merge them (ogr2ogr "
                 "-append)",
                 src, count, names, src);
        return NULL;
    }
    return with_features ? with_features : first;
}

/* The polygons of `layer` copied into an in-memory layer named "polygons" of *mem (in `srs`,
 * placed as `pl` says), so GDALRasterize burns them and nothing else. Returns the number
 * copied (0 when none lies over the tiles' region), -1 after an error, or -2 when the ranks
 * agreed to stop. */
static long copy_polygons(OGRLayerH layer, const char *src, agreement *a, GDALDatasetH *mem,
                          OGRSpatialReferenceH srs, placement *pl) {
    *mem = GDALCreate(GDALGetDriverByName("Memory"), "", 0, 0, 0, GDT_Unknown, NULL);
    OGRLayerH ml =
        *mem ? GDALDatasetCreateLayer(*mem, "polygons", srs, wkbMultiPolygon, NULL) : NULL;
    if (!ml) {
        wc_error("cannot hold the polygons of %s in memory: %s", src, CPLGetLastErrorMsg());
        return -1;
    }
    long polygons = 0, skipped = 0;
    OGR_L_ResetReading(layer);
    for (OGRFeatureH f; (f = OGR_L_GetNextFeature(layer)) != NULL; OGR_F_Destroy(f)) {
        if (!go_on(a)) {
            OGR_F_Destroy(f);
            return -2;
        }
        pl->fid = (long long)OGR_F_GetFID(f);
        long n = add_polygons(ml, OGR_F_GetGeometryRef(f), &skipped, pl);
        if (n < 0) {
            wc_error("cannot copy a polygon of %s (layer %s, feature %lld): %s", src,
                     OGR_L_GetName(layer), (long long)OGR_F_GetFID(f), CPLGetLastErrorMsg());
            OGR_F_Destroy(f);
            return -1;
        }
        polygons += n;
    }
    if (pl->seen == 0 && skipped == 0) {
        wc_error("%s (layer %s) has no polygons: its %lld features' geometries are empty or "
                 "missing (--labels needs burned-area polygons)",
                 src, OGR_L_GetName(layer), (long long)OGR_L_GetFeatureCount(layer, TRUE));
        return -1;
    }
    if (pl->seen == 0) {
        wc_error("%s (layer %s) has no polygons: --labels needs burned-area polygons (%ld "
                 "points or lines, which mark no area)",
                 src, OGR_L_GetName(layer), skipped);
        return -1;
    }
    if (skipped)
        wc_warn("labels: skipped %ld non-polygon geometries (points, lines) of %s (%s): only "
                "polygons mark burned ground",
                skipped, OGR_L_GetName(layer), src);
    return polygons;
}

/* The placement of the polygons of `layer` on the tiles' grid: a transformation into the tiles'
 * CRS and the tiles' region (their extent and a margin of a tenth of it, at least 2 pixels)
 * in the polygons' CRS. Without a CRS on either side the polygons are taken as they are (the
 * caller refuses a layer without one for georeferenced tiles). Returns the tiles' spatial
 * reference for the layer of placed polygons (to be released), or NULL. */
/* A ring along the box [x0, x1] x [y0, y1] with `per_side` points a side: a polygon cut by it
 * keeps those points on its new edges, which stay close to the curves they become in another
 * CRS (a 4-point box would give straight chords there, a few percent of a continent's area). */
static OGRGeometryH dense_box(double x0, double y0, double x1, double y1, int per_side) {
    OGRGeometryH ring = OGR_G_CreateGeometry(wkbLinearRing);
    const double cx[5] = {x0, x1, x1, x0, x0}, cy[5] = {y0, y0, y1, y1, y0};
    for (int side = 0; side < 4; side++)
        for (int i = 0; i < per_side; i++) {
            const double f = (double)i / per_side;
            OGR_G_AddPoint_2D(ring, cx[side] + f * (cx[side + 1] - cx[side]),
                              cy[side] + f * (cy[side + 1] - cy[side]));
        }
    OGR_G_AddPoint_2D(ring, x0, y0);
    OGRGeometryH box = OGR_G_CreateGeometry(wkbPolygon);
    OGR_G_AddGeometryDirectly(box, ring);
    return box;
}

/* Whether a geographic CRS puts longitude first in the coordinates as they are stored (its
 * data axis mapping: a GeoJSON's EPSG:4326 does, the authority's order is latitude first). */
static int longitude_is_x(OGRSpatialReferenceH srs) {
    if (!OSRIsGeographic(srs)) return 0;
    int n = 0;
    const int *mapping = OSRGetDataAxisToSRSAxisMapping(srs, &n);
    const int x_axis = n >= 1 ? abs(mapping[0]) : 1; /* 1-based SRS axis of the data's x */
    OGRAxisOrientation first = OAO_Other;            /* of the CRS's own first axis */
    OSRGetAxis(srs, NULL, 0, &first);
    const int lon_axis = first == OAO_North || first == OAO_South ? 2 : 1;
    return x_axis == lon_axis;
}

static OGRSpatialReferenceH place_on_tiles(const wc_raster *tiles, OGRLayerH layer, placement *pl) {
    memset(pl, 0, sizeof *pl);
    pl->tiles = tiles;
    OGRSpatialReferenceH from = OGR_L_GetSpatialRef(layer);
    if (!from || !*tiles->wkt) return NULL;
    OGRSpatialReferenceH to = OSRNewSpatialReference(tiles->wkt);
    OGRSpatialReferenceH src = OSRClone(from); /* with the layer's own axis mapping */
    if (!to || !src) {
        if (to) OSRRelease(to);
        if (src) OSRRelease(src);
        return NULL;
    }
    OSRSetAxisMappingStrategy(to, OAMS_TRADITIONAL_GIS_ORDER); /* x east, as the geotransform */
    CPLPushErrorHandler(CPLQuietErrorHandler);
    pl->to_tiles = OCTNewCoordinateTransformation(src, to);
    OGRCoordinateTransformationH back = OCTNewCoordinateTransformation(to, src);
    CPLPopErrorHandler();
    double lo[2], hi[2];
    tiles_box(tiles, lo, hi);
    const double px =
        2 * (fabs(tiles->gt[1]) + fabs(tiles->gt[2]) + fabs(tiles->gt[4]) + fabs(tiles->gt[5]));
    const double mx = fmax(0.1 * (hi[0] - lo[0]), px), my = fmax(0.1 * (hi[1] - lo[1]), px);
    double b[4];
    CPLPushErrorHandler(CPLQuietErrorHandler);
    const int have_bounds = pl->to_tiles && back &&
                            OCTTransformBounds(back, lo[0] - mx, lo[1] - my, hi[0] + mx, hi[1] + my,
                                               &b[0], &b[1], &b[2], &b[3], 21) &&
                            b[1] < b[3] && isfinite(b[0] + b[1] + b[2] + b[3]);
    CPLPopErrorHandler();
    /* Already in the tiles' CRS and axis order, nothing is reprojected, so nothing need be cut
     * (the region still drops polygons that lie off it). A cut moves the ends of an edge
     * crossing the region's boundary to crossing points rounded off the line, which tips the
     * pixels whose centres lie on that edge: a diagonal through pixel centres burned 255 pixels
     * more than gdal_rasterize of the same polygons. */
    pl->cut = !OSRIsSame(src, to);
    if (have_bounds && longitude_is_x(src)) {
        /* Longitudes: the region's (xmin > xmax across the antimeridian, as GDAL gives it) as
         * one interval, and that interval a turn east and west, since polygons may be written
         * in -180..180 or 0..360 (PROJ places 244.8 where -115.2 is) */
        double x0 = b[0], x1 = b[0] < b[2] ? b[2] : b[2] + 360;
        const int all_around = x1 - x0 >= 360; /* (polar tiles): every longitude, either way */
        if (all_around) x0 = -540, x1 = 540;
        pl->region = OGR_G_CreateGeometry(wkbMultiPolygon);
        for (int k = all_around ? 0 : -1; k <= (all_around ? 0 : 1); k++) {
            OGR_G_AddGeometryDirectly(pl->region,
                                      dense_box(x0 + 360 * k, b[1], x1 + 360 * k, b[3], 64));
            pl->box_env[pl->nbox++] = (OGREnvelope){x0 + 360 * k, x1 + 360 * k, b[1], b[3]};
        }
        pl->uncut_env = (OGREnvelope){x0, x1, b[1], b[3]};
        pl->longitudes = !all_around; /* every longitude is the region's: nothing to unwrap */
    } else if (have_bounds && b[0] < b[2]) {
        pl->region = dense_box(b[0], b[1], b[2], b[3], 64);
        pl->uncut_env = pl->box_env[pl->nbox++] = (OGREnvelope){b[0], b[2], b[1], b[3]};
    } /* else polygons go uncut, reprojected whole as GDALRasterize would */
    if (back) OCTDestroyCoordinateTransformation(back);
    OSRRelease(src);
    if (!pl->to_tiles) {
        OSRRelease(to);
        return NULL;
    }
    return to;
}

static void placement_free(placement *pl) {
    if (pl->to_tiles) OCTDestroyCoordinateTransformation(pl->to_tiles);
    if (pl->region) OGR_G_DestroyGeometry(pl->region);
}

/* Copies the polygons of `layer` into an in-memory layer "polygons" of *mem, placed in the
 * tiles' CRS. Returns their number (> 0), -1 after a message, -2 when the ranks agreed to stop. */
static long collect_polygons(const wc_raster *tiles, OGRLayerH layer, const char *src, agreement *a,
                             GDALDatasetH *mem) {
    placement pl;
    OGRSpatialReferenceH srs = place_on_tiles(tiles, layer, &pl);
    long rc = copy_polygons(layer, src, a, mem, srs ? srs : OGR_L_GetSpatialRef(layer), &pl);
    if (rc >= 0 && pl.failed) {
        char from[128] = "its CRS", to[128];
        char *wkt = NULL;
        if (OSRExportToWkt(OGR_L_GetSpatialRef(layer), &wkt) == OGRERR_NONE)
            wc_raster_crs_describe(wkt, from, sizeof from);
        CPLFree(wkt);
        wc_raster_crs_describe(tiles->wkt, to, sizeof to);
        wc_error("%ld polygon%s of %s (layer %s; the first in feature %lld) cannot be "
                 "reprojected from %s into the tiles' %s%s: the ground they mark burned would be "
                 "missing from the labels; reproject or clip them first (ogr2ogr -t_srs, "
                 "-clipsrc)",
                 pl.failed, pl.failed == 1 ? "" : "s", src, OGR_L_GetName(layer), pl.first_fid,
                 from, to, pl.region ? ", even cut to the tiles' region" : "");
        rc = -1;
    }
    placement_free(&pl);
    if (srs) OSRRelease(srs);
    return rc;
}

/* Whether any pixel of band 1 of ds is burned (1: the rasterized polygons, 0 elsewhere), or,
 * with `labelled`, holds a label (is not NaN, the warped labels' nodata); -1 when the ranks
 * agreed to stop (or the raster cannot be read, after a message). Rows are read until the first
 * such pixel, so labelled ground costs a strip; ground without any costs a pass (with progress:
 * on a huge grid minutes of blocks), still far less than the map an evaluate would draw before
 * finding out. */
static int any_pixel(GDALDatasetH ds, const char *path, agreement *a, int labelled) {
    GDALRasterBandH b = GDALGetRasterBand(ds, 1);
    const int w = GDALGetRasterXSize(ds), h = GDALGetRasterYSize(ds);
    const int rows = (int)fmax(1, fmin(h, (1 << 18) / fmax(1, w))); /* about 2 MiB */
    double *buf =
        WC_ALLOC_FOR((size_t)w * (size_t)rows * sizeof *buf, "rows of the labels read back");
    char what[4200];
    snprintf(what, sizeof what, "reading back %s", path);
    gdal_job job = job_of(a, what);
    int found = 0;
    for (int y = 0; y < h && !found; y += rows) {
        const int n = y + rows <= h ? rows : h - y;
        if (!gdal_go_on((double)y / h, NULL, &job)) {
            found = -1;
            break;
        }
        CPLErrorReset();
        if (GDALRasterIO(b, GF_Read, 0, y, w, n, buf, w, n, GDT_Float64, 0, 0) != CE_None) {
            wc_error("reading back %s failed (rows %d-%d): %s", path, y, y + n - 1,
                     CPLGetLastErrorMsg());
            found = -1;
            break;
        }
        for (size_t i = 0; i < (size_t)w * (size_t)n && !found; i++)
            found = labelled ? !isnan(buf[i]) : buf[i] >= 1;
    }
    free(buf);
    return found;
}

/* Whether polygons of `layer` within `env` would lie over the tiles' region with their x and y
 * swapped: latitude written where the file's format puts longitude (a GeoJSON written lat, lon,
 * as EPSG:4326's authority order has it), which places Yellowstone's fires at latitude -110
 * ("not degrees", said before 2026-12-06) or, where longitudes are within 90 degrees of
 * Greenwich, somewhere else on the globe without a word. */
static int swapped_would_meet(const wc_raster *tiles, OGRLayerH layer, const OGREnvelope *env) {
    placement pl;
    OGRSpatialReferenceH srs = place_on_tiles(tiles, layer, &pl);
    const OGREnvelope swapped = {env->MinY, env->MaxY, env->MinX, env->MaxX};
    int meets = 0, swapped_meets = 0;
    for (int k = 0; k < pl.nbox; k++) {
        meets |= envelopes_meet(env, &pl.box_env[k]);
        swapped_meets |= envelopes_meet(&swapped, &pl.box_env[k]);
    }
    placement_free(&pl);
    if (srs) OSRRelease(srs);
    /* polygons whose extent already spans the tiles' region (fires of a continent, none over
     * the tiles) say nothing of their axes: swapped, that extent spans it too, and the hint
     * sent such a file round again to the same refusal */
    return swapped_meets && !meets;
}

/* "No polygon overlaps", or, for polygons placed over the tiles (or their margin) that burned no
 * pixel, that none covers a pixel's centre: both extents, for the message. A polygon narrower
 * than a pixel, or a sliver along the tiles' edge, overlaps them and still burns nothing, since
 * GDAL burns the pixels whose centre it covers (all-touched off); "no polygon overlaps" was said
 * of such polygons too, beside extents that plainly overlap. */
static void report_no_overlap(const wc_raster *tiles, OGRLayerH layer, const char *src,
                              int placed) {
    OGREnvelope env;
    char ext[256], lext[5200] = "unknown";
    extent_of_tiles(tiles, ext, sizeof ext);
    if (OGR_L_GetExtent(layer, &env, TRUE) == OGRERR_NONE) {
        char crs[128] = "no CRS";
        OGRSpatialReferenceH lsrs = OGR_L_GetSpatialRef(layer);
        if (lsrs) {
            char *wkt = NULL;
            OSRExportToWkt(lsrs, &wkt);
            wc_raster_crs_describe(wkt, crs, sizeof crs);
            CPLFree(wkt);
        }
        snprintf(lext, sizeof lext, "(%.10g, %.10g)-(%.10g, %.10g) in %s", env.MinX, env.MinY,
                 env.MaxX, env.MaxY, crs);
        if (lsrs && OSRIsGeographic(lsrs) && swapped_would_meet(tiles, layer, &env)) {
            const char *geom = OGR_L_GetGeometryColumn(layer);
            snprintf(lext + strlen(lext), sizeof lext - strlen(lext),
                     "; with their x and y swapped they would lie over the tiles: the file "
                     "writes latitude where GDAL reads longitude (GeoJSON, GeoPackage and "
                     "shapefiles put longitude first, whatever EPSG:4326 says); swap them "
                     "(ogr2ogr -dialect sqlite -sql \"SELECT SwapCoordinates(%s) FROM %s\" "
                     "fixed.gpkg %s)",
                     geom && *geom ? geom : "geometry", OGR_L_GetName(layer), src);
        }
        /* a GeoJSON without a "crs" member is WGS 84 by its standard, whatever it holds */
        else if (lsrs && OSRIsGeographic(lsrs) &&
                 (fmax(fabs(env.MinX), fabs(env.MaxX)) > 360 ||
                  fmax(fabs(env.MinY), fabs(env.MaxY)) > 90))
            snprintf(lext + strlen(lext), sizeof lext - strlen(lext),
                     "; those coordinates are not degrees: the file does not name the CRS they "
                     "are in and GDAL took %s (GeoJSON's default)? Name it (ogr2ogr -a_srs "
                     "EPSG:NNNN)",
                     crs);
    }
    if (placed)
        wc_error("no polygon of %s covers the centre of a pixel of the tiles, so none burns a "
                 "pixel (a pixel is burned when its centre lies inside a polygon: all-touched "
                 "off, as gdal_rasterize without -at): tiles cover %s (pixels %.10g x %.10g), "
                 "the polygons %s",
                 src, ext, fabs(tiles->gt[1]), fabs(tiles->gt[5]), lext);
    else
        wc_error("no polygon of %s overlaps the tiles with its area (one whose hole holds them "
                 "does not): tiles cover %s, the polygons %s",
                 src, ext, lext);
}

/* wc_fs_shortage of the directory of path (a static buffer: one message at a time). */
static const char *disk_hint(const char *path) {
    static char hint[4400];
    char *dir = wc_dir_of(path);
    wc_fs_shortage(dir, hint, sizeof hint);
    free(dir);
    return hint;
}

/* Whether the polygons of `layer` can be placed on georeferenced tiles: a layer without a CRS,
 * or with a GeoPackage's "undefined" one (srs_id -1, "Undefined Cartesian SRS", or 0, "Undefined
 * geographic SRS", which GDAL writes for a layer created without a CRS), cannot; nor can one PROJ
 * has no transformation from (a local engineering CRS, site coordinates in feet). Without this,
 * the polygons went unreprojected to GDALRasterize, which burned their coordinates as the
 * tiles' (feet taken as metres) with only its own warning, or reprojected the "undefined
 * geographic" metres as degrees and burned nothing. Tiles without a CRS take the polygons as
 * they are. WC_OK, or WC_ERR after a message naming the file, layer and both CRSs. */
static int layer_crs_placeable(const wc_raster *tiles, OGRLayerH layer, const char *src) {
    if (!*tiles->wkt) return WC_OK;
    OGRSpatialReferenceH from = OGR_L_GetSpatialRef(layer);
    const char *name = from ? OSRGetName(from) : NULL;
    if (!from || (name && (strcmp(name, "Undefined geographic SRS") == 0 ||
                           strcmp(name, "Undefined Cartesian SRS") == 0))) {
        char which[96] = "";
        if (from) snprintf(which, sizeof which, " (GeoPackage's \"%s\", which names none)", name);
        wc_error("%s (layer %s) has no CRS%s, so it cannot be placed on the tiles' grid (%s); "
                 "assign one with ogr2ogr -a_srs",
                 src, OGR_L_GetName(layer), which, tiles->path);
        return WC_ERR;
    }
    OGRSpatialReferenceH to = OSRNewSpatialReference(tiles->wkt);
    OGRCoordinateTransformationH ct = NULL;
    if (to) {
        OSRSetAxisMappingStrategy(to, OAMS_TRADITIONAL_GIS_ORDER);
        CPLPushErrorHandler(CPLQuietErrorHandler);
        ct = OCTNewCoordinateTransformation(from, to);
        CPLPopErrorHandler();
        OSRRelease(to);
    }
    if (ct) {
        OCTDestroyCoordinateTransformation(ct);
        return WC_OK;
    }
    char *wkt = NULL, lcrs[128] = "its CRS", tcrs[128];
    if (OSRExportToWkt(from, &wkt) == OGRERR_NONE) wc_raster_crs_describe(wkt, lcrs, sizeof lcrs);
    CPLFree(wkt);
    wc_raster_crs_describe(tiles->wkt, tcrs, sizeof tcrs);
    wc_error("%s (layer %s) is in %s, which PROJ cannot transform into the tiles' %s (%s), so its "
             "polygons cannot be placed on their grid; reproject them first (ogr2ogr -t_srs), or "
             "name their CRS if it is wrong (ogr2ogr -a_srs)",
             src, OGR_L_GetName(layer), lcrs, tcrs, tiles->path);
    return WC_ERR;
}

/* Rasterizes the polygons of the first polygon layer of `vec` into the derived raster. */
static int rasterize(const wc_raster *tiles, GDALDatasetH vec, const char *src, const char *derived,
                     agreement *a) {
    int many = 0;
    OGRLayerH layer = polygon_layer(vec, src, &many);
    if (many) return WC_ERR;
    if (!layer || OGR_L_GetFeatureCount(layer, TRUE) == 0) {
        wc_error("%s has no polygon layer with features: --labels needs burned-area polygons", src);
        return WC_ERR;
    }
    if (layer_crs_placeable(tiles, layer, src) != WC_OK) return WC_ERR;
    GDALDatasetH mem = NULL;
    const long placed = collect_polygons(tiles, layer, src, a, &mem);
    if (placed <= 0) {
        if (placed == 0) report_no_overlap(tiles, layer, src, 0);
        if (mem) GDALClose(mem);
        return WC_ERR;
    }
    wc_rwriter *w = create_grid(tiles, derived, WC_DT_BYTE, NULL, a); /* 0 and 1 */
    if (!w) {
        GDALClose(mem);
        return WC_ERR;
    }
    const char *argv[] = {"-burn", "1", "-l", "polygons", NULL};
    GDALRasterizeOptions *opt = GDALRasterizeOptionsNew((char **)argv, NULL);
    GDALDatasetH out = NULL;
    CPLErrorReset();
    char what[4200];
    snprintf(what, sizeof what, "rasterizing the polygons of %s onto the tiles' grid", src);
    gdal_job job = job_of(a, what);
    if (opt) {
        GDALRasterizeOptionsSetProgress(opt, gdal_go_on, &job);
        int usage_error = 0;
        out = GDALRasterize(NULL, wc_rwriter_gdal(w), mem, opt, &usage_error);
        GDALRasterizeOptionsFree(opt);
    }
    int burned = out ? any_pixel(wc_rwriter_gdal(w), derived, a, 0) : -1;
    if (!out && !a->stop)
        wc_error("rasterizing %s onto the tiles' grid, into %s, failed: %s%s", src, derived,
                 CPLGetLastErrorMsg(), disk_hint(derived));
    int rc = WC_ERR;
    if (burned > 0) {
        rc = commit_grid(w);
    } else {
        wc_rwriter_abort(w);
        if (burned == 0) report_no_overlap(tiles, layer, src, 1);
    }
    GDALClose(mem);
    return rc;
}

/* The type a warped label keeps its meaning in (> 0 burned, else unburned, or nodata). Integers
 * of up to 32 bits become Float32: rounding may change a large value, never its sign or whether
 * it is 0. Floats keep their own type, so 0.3 or 1e-300 stays > 0. The destination's nodata is
 * NaN, which no label can be (a NaN label is nodata already), so no value collides with it. */
static wc_dtype warped_type(wc_dtype t) {
    return t == WC_DT_FLOAT64 ? WC_DT_FLOAT64 : WC_DT_FLOAT32;
}

/* Warps band `band` of a label raster onto the tiles' grid (nearest neighbour) into the derived
 * raster. GDAL 3.6's warp has no band selection (-srcband came in 3.7), so it warps an
 * in-memory VRT holding that band alone. */
static int warp(const wc_raster *tiles, const wc_raster *lab, int band, const char *derived,
                agreement *a) {
    char ga[512], gb[512];
    wc_raster_describe_grid(tiles, ga, sizeof ga);
    wc_raster_describe_grid(lab, gb, sizeof gb);
    if (!lab->has_gt || !*lab->wkt || !tiles->has_gt || !*tiles->wkt) {
        wc_error("the label raster %s is not on the tiles' grid and cannot be reprojected onto "
                 "it (a CRS or geotransform is missing): tiles %s: %s; labels: %s",
                 lab->path, tiles->path, ga, gb);
        return WC_ERR;
    }
    /* The band's mask goes with it as the view's mask, which the warp honours: taking the band
     * alone would leave an alpha band behind, and the pixels it hides would be read as labels.
     * The alpha band itself where there is one (GDAL makes it band N's mask only for 2- and
     * 4-band rasters without nodata; wildcpu reads it as every band's), else GDAL's mask of the
     * band (an internal or .msk one). */
    const wc_band *src = &lab->bands[band - 1];
    if (lab->alpha && src->own_mask)
        wc_warn("the label raster %s has an alpha band (band %d) and a mask of its own for band "
                "%d: reprojected onto the tiles' grid, its labels are masked by the alpha band "
                "only, so pixels its own mask alone hides are read as labels; make one mask of "
                "both first (set the pixels either hides to the band's nodata value)",
                lab->path, lab->alpha, band);
    char bandarg[16], maskarg[32];
    snprintf(bandarg, sizeof bandarg, "%d", band);
    if (lab->alpha)
        snprintf(maskarg, sizeof maskarg, "%d", lab->alpha);
    else
        snprintf(maskarg, sizeof maskarg, "mask,%d", band);
    const char *targv[] = {"-of", "VRT", "-b", bandarg, "-mask", src->masked ? maskarg : "none",
                           NULL};
    GDALTranslateOptions *topt = GDALTranslateOptionsNew((char **)targv, NULL);
    int usage_error = 0;
    CPLErrorReset();
    GDALDatasetH view = topt ? GDALTranslate("", (GDALDatasetH)lab->ds, topt, &usage_error) : NULL;
    if (topt) GDALTranslateOptionsFree(topt);
    if (!view) {
        wc_error("cannot take band %d of the label raster %s: %s", band, lab->path,
                 CPLGetLastErrorMsg());
        return WC_ERR;
    }
    /* Ground the label raster does not cover is unknown, not unburned: the destination starts
     * as nodata, and only pixels the warp fills from valid source pixels become labels. The
     * band's nodata is named to the warper rather than left to its defaults, so a source nodata
     * pixel stays nodata and is never read as a label. */
    const double nodata = NAN;
    wc_rwriter *w = create_grid(tiles, derived, warped_type(src->type), &nodata, a);
    if (!w) {
        GDALClose(view);
        return WC_ERR;
    }
    char srcnodata[32] = "nan"; /* spelled so GDAL parses it: printf may write "-nan" */
    if (!isnan(src->nodata)) snprintf(srcnodata, sizeof srcnodata, "%.17g", src->nodata);
    const char *argv[] = {"-r",
                          "near",
                          "-dstnodata",
                          "nan",
                          "-wo",
                          "INIT_DEST=NO_DATA",
                          src->has_nodata ? "-srcnodata" : NULL,
                          srcnodata,
                          NULL};
    GDALWarpAppOptions *opt = GDALWarpAppOptionsNew((char **)argv, NULL);
    GDALDatasetH out = NULL;
    CPLErrorReset();
    char what[4200];
    snprintf(what, sizeof what, "warping %s onto the tiles' grid", lab->path);
    gdal_job job = job_of(a, what);
    if (opt) {
        GDALWarpAppOptionsSetProgress(opt, gdal_go_on, &job);
        out = GDALWarp(NULL, wc_rwriter_gdal(w), 1, &view, opt, &usage_error);
        GDALWarpAppOptionsFree(opt);
    }
    GDALClose(view);
    if (!out) {
        if (!a->stop)
            wc_error("warping %s onto the tiles' grid, into %s, failed (tiles: %s; labels: %s): "
                     "%s%s",
                     lab->path, derived, ga, gb, CPLGetLastErrorMsg(), disk_hint(derived));
        wc_rwriter_abort(w);
        return WC_ERR;
    }
    /* Labels that land on no pixel of the tiles (another place, a wrong CRS) are refused here,
     * as polygons that burn none are, not after a whole map has been drawn to score against
     * nothing. */
    const int labelled = any_pixel(wc_rwriter_gdal(w), derived, a, 1);
    if (labelled <= 0) {
        if (labelled == 0) {
            char ext[256], crs[128];
            extent_of_tiles(tiles, ext, sizeof ext);
            wc_raster_crs_describe(lab->wkt, crs, sizeof crs);
            double lo[2], hi[2];
            tiles_box(lab, lo, hi);
            wc_error("the label raster %s (band %d) gives no pixel of the tiles a label once "
                     "reprojected onto their grid: it does not overlap them, or holds only nodata "
                     "where it does (tiles cover %s; the labels (%.10g, %.10g)-(%.10g, %.10g) in "
                     "%s)",
                     lab->path, band, ext, lo[0], lo[1], hi[0], hi[1], crs);
        }
        wc_rwriter_abort(w);
        return WC_ERR;
    }
    return commit_grid(w);
}

/* Rank 0's part for a label raster: its chosen band, warped onto the grid when it is not on it. */
static int prepare_raster(const wc_raster *tiles, const char *labels, const char *band_name,
                          const char *work_dir, char *path, size_t size, int *band, int *source,
                          agreement *a) {
    wc_raster lab;
    if (wc_raster_open(&lab, labels) != WC_OK) return WC_ERR;
    int by_number, b = 0;
    /* a label mosaic's sources as the tiles' (signed bytes: -1 read as 255, a burn) */
    if (wc_raster_check_sources(&lab) == WC_OK)
        b = wc_labels_find_band(&lab, band_name, 0, &by_number);
    if (!b) {
        wc_raster_close(&lab);
        return WC_ERR;
    }
    *source = b;
    if (wc_raster_same_grid(tiles, &lab)) {
        snprintf(path, size, "%s", labels);
        *band = b;
        wc_raster_close(&lab);
        return WC_OK;
    }
    char derived[4096];
    derived_path(derived, sizeof derived, work_dir, labels, b, tiles);
    const int reusable = derived_reusable(derived, tiles, labels);
    int rc = reusable < 0 ? WC_ERR : WC_OK;
    if (reusable == 0) {
        double t0 = wc_now();
        rc = warp(tiles, &lab, b, derived, a);
        if (rc == WC_OK)
            wc_info("labels: warped band %d of %s onto the tiles' grid in %.1f s (%s)", b, labels,
                    wc_now() - t0, derived);
    }
    wc_raster_close(&lab);
    snprintf(path, size, "%s", derived);
    *band = 1;
    return rc;
}

/* Rank 0's part for polygons: rasterized onto the grid, once per source and grid. */
static int prepare_polygons(const wc_raster *tiles, const char *labels, const char *band_name,
                            const char *work_dir, char *path, size_t size, agreement *a) {
    if (band_name && *band_name)
        wc_warn("--label-band %s is ignored: --labels %s is a vector file, whose polygons are "
                "the labels",
                band_name, labels);
    if (!tiles->has_gt) {
        wc_error("--labels %s: polygons are placed by their coordinates, and %s has no "
                 "geotransform (no pixel has a position on the ground): give the tiles their "
                 "georeferencing, or the labels as a raster on the tiles' grid",
                 labels, tiles->path);
        return WC_ERR;
    }
    char derived[4096];
    derived_path(derived, sizeof derived, work_dir, labels, 0, tiles);
    const int reusable = derived_reusable(derived, tiles, labels);
    if (reusable < 0) return WC_ERR;
    if (reusable == 0) {
        GDALDatasetH vec = GDALOpenEx(labels, GDAL_OF_VECTOR | GDAL_OF_READONLY, NULL, NULL, NULL);
        if (!vec) {
            wc_error("cannot open --labels %s as a vector file: %s", labels, CPLGetLastErrorMsg());
            return WC_ERR;
        }
        double t0 = wc_now();
        int rc = rasterize(tiles, vec, labels, derived, a);
        GDALClose(vec);
        if (rc != WC_OK) return WC_ERR;
        wc_info("labels: rasterized the polygons of %s onto the tiles' grid in %.1f s (%s)", labels,
                wc_now() - t0, derived);
    }
    snprintf(path, size, "%s", derived);
    return WC_OK;
}

/* Rank 0's part: returns WC_OK with path/band/source filled, or WC_ERR. */
static int prepare_here(const wc_raster *tiles, const char *labels, const char *band_name,
                        const char *work_dir, char *path, size_t size, int *band, int *source,
                        agreement *a) {
    struct stat st;
    if (stat(labels, &st) != 0 && strncmp(labels, "/vsi", 4) != 0 && !strchr(labels, ':')) {
        wc_error("--labels %s: %s", labels, strerror(errno));
        return WC_ERR;
    }
    if (wc_refuse_special_file("--labels", labels) != WC_OK) return WC_ERR;
    wc_raster_init();
    CPLErrorReset();
    GDALDatasetH ds =
        GDALOpenEx(labels, GDAL_OF_RASTER | GDAL_OF_VECTOR | GDAL_OF_READONLY, NULL, NULL, NULL);
    if (!ds) {
        /* GDAL gives no reason when no driver recognizes the file (an empty one, say) */
        const char *why = CPLGetLastErrorMsg();
        char bytes[96] = "";
        size_t at, len;
        if (!*why && stat(labels, &st) == 0 && S_ISDIR(st.st_mode))
            /* its size is the directory's own listing: no number of bytes of labels */
            snprintf(bytes, sizeof bytes,
                     "it is a directory, which no GDAL driver recognizes "
                     "(a directory of shapefiles would be)");
        else if (!*why && stat(labels, &st) == 0)
            snprintf(bytes, sizeof bytes, "no GDAL driver recognizes it (%lld bytes)",
                     (long long)st.st_size);
        else if (!*why && !wc_file_behind(labels, &at, &len))
            snprintf(bytes, sizeof bytes,
                     "GDAL finds nothing there, and no local file it "
                     "names exists");
        wc_error("--labels %s is neither a raster nor a vector file GDAL can open: %s", labels,
                 *why     ? why
                 : *bytes ? bytes
                          : "no GDAL driver recognizes it");
        return WC_ERR;
    }
    int is_raster = GDALGetRasterCount(ds) > 0;
    GDALClose(ds);
    if (is_raster)
        return prepare_raster(tiles, labels, band_name, work_dir, path, size, band, source, a);
    *band = 1;
    *source = 0;
    return prepare_polygons(tiles, labels, band_name, work_dir, path, size, a);
}

int wc_labels_prepare(const wc_raster *tiles, const char *labels, const char *band_name,
                      const char *work_dir, wc_labels *out) {
    struct {
        int status, band, source;
        char path[4096];
    } msg = {WC_ERR, 0, 0, ""};
    agreement a;
    wc_dist_solo_start(&a);
    memset(out, 0, sizeof *out);
    if (wc_dist_rank() == 0)
        msg.status = prepare_here(tiles, labels, band_name, work_dir, msg.path, sizeof msg.path,
                                  &msg.band, &msg.source, &a);
    wc_dist_solo_end(&a);
    wc_dist_bcast(&msg, sizeof msg, 0);
    if (a.stop) {
        out->stopped = 1;
        return WC_ERR;
    }
    if (msg.status != WC_OK) return WC_ERR;
    out->path = wc_strdup(msg.path);
    out->band = msg.band;
    out->source_band = msg.source;
    return WC_OK;
}

void wc_label_tally_say(wc_label_tally *t, const char *source) {
    int64_t n[3] = {t->labelled, t->other, t->infinite};
    double range[2] = {t->hi, -t->lo};
    wc_dist_sum_i64(n, 3);
    wc_dist_max_f64(range, 2);
    if (wc_dist_rank() == 0 && n[2] > 0)
        wc_warn("labels %s: %" PRId64 " pixel%s read hold an infinite label (+Inf or -Inf), "
                "which is no 0 or 1: left out as nodata, like NaN. If they mark burned pixels, "
                "rewrite them as 1 (gdal_calc.py --calc='where(isinf(A), 1, A)')",
                source, n[2], n[2] == 1 ? "" : "s");
    if (wc_dist_rank() != 0 || n[1] == 0) return;
    const double hi = range[0], lo = -range[1];
    char values[64], nodata[160] = "";
    if (lo == hi)
        snprintf(values, sizeof values, "all %g", hi);
    else
        snprintf(values, sizeof values, "from %g to %g", lo, hi);
    /* a whole number below 0 or above 1 may be a nodata value nobody declared: -9999, -1 and
     * -32768 as often as 255, 65535 or 9999; a negative one is the likelier (it counts as
     * unburned, so nothing else in the metrics gives it away) */
    const double suspect = lo < 0 && lo == floor(lo) ? lo : hi;
    if ((suspect < 0 || suspect > 1) && suspect == floor(suspect))
        snprintf(nodata, sizeof nodata,
                 "If %g marks pixels without a label, declare it the band's nodata (gdal_edit.py "
                 "-a_nodata %g). ",
                 suspect, suspect);
    wc_warn("labels %s: %" PRId64 " of the %" PRId64 " labelled pixels read (%.2f%%) are neither "
            "0 nor 1 (%s), and count as %s (a label > 0 is burned, any other unburned). %sIf "
            "the labels are a percentage, a probability or a count, threshold them into 0 and 1 "
            "(gdal_calc.py --calc='A>=50', say)",
            source, n[1], n[0], 100.0 * (double)n[1] / (double)n[0], values,
            lo > 0    ? "burned"
            : hi <= 0 ? "unburned"
                      : "burned where > 0",
            nodata);
}
