/* raster.c: GDAL datasets behind wc_raster; see raster.h. */
#include "wildcpu/raster.h"

#include <cpl_conv.h>
#include <cpl_error.h>
#include <cpl_minixml.h>
#include <cpl_string.h>
#include <dirent.h>
#include <float.h>
#include <gdal.h>
#include <limits.h>
#include <malloc.h>
#include <math.h>
#include <ogr_srs_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "wildcpu/dist.h"
#include "wildcpu/files.h"
#include "wildcpu/util.h"

size_t wc_dtype_size(wc_dtype t) {
    static const size_t sizes[] = {1, 2, 2, 4, 4, 4, 8};
    return sizes[t];
}

const char *wc_dtype_name(wc_dtype t) {
    static const char *names[] = {"Byte",  "UInt16",  "Int16",  "UInt32",
                                  "Int32", "Float32", "Float64"};
    return names[t];
}

int wc_dtype_to_gdal(wc_dtype t) {
    static const GDALDataType map[] = {GDT_Byte,  GDT_UInt16,  GDT_Int16,  GDT_UInt32,
                                       GDT_Int32, GDT_Float32, GDT_Float64};
    return map[t];
}

/* GDAL 3.6 has no Int8 type: signed bytes are Byte bands flagged PIXELTYPE=SIGNEDBYTE, which
 * RasterIO would convert as unsigned. They are refused rather than read wrongly. */
static int signed_bytes(GDALRasterBandH b) {
    const char *pt = GDALGetMetadataItem(b, "PIXELTYPE", "IMAGE_STRUCTURE");
    return GDALGetRasterDataType(b) == GDT_Byte && pt && strcmp(pt, "SIGNEDBYTE") == 0;
}

static int from_gdal(GDALRasterBandH b, wc_dtype *t) {
    switch (GDALGetRasterDataType(b)) {
    case GDT_Byte:
        *t = WC_DT_BYTE;
        return signed_bytes(b) ? WC_ERR : WC_OK;
    case GDT_UInt16:
        *t = WC_DT_UINT16;
        return WC_OK;
    case GDT_Int16:
        *t = WC_DT_INT16;
        return WC_OK;
    case GDT_UInt32:
        *t = WC_DT_UINT32;
        return WC_OK;
    case GDT_Int32:
        *t = WC_DT_INT32;
        return WC_OK;
    case GDT_Float32:
        *t = WC_DT_FLOAT32;
        return WC_OK;
    case GDT_Float64:
        *t = WC_DT_FLOAT64;
        return WC_OK;
    default:
        return WC_ERR;
    }
}

wc_dtype wc_dtype_union(wc_dtype a, wc_dtype b) {
    if (a == b) return a;
    if (a > b) {
        wc_dtype t = a;
        a = b, b = t;
    }
    /* now a < b in the order Byte, UInt16, Int16, UInt32, Int32, Float32, Float64 */
    if (b == WC_DT_FLOAT64) return WC_DT_FLOAT64;
    /* 32-bit integers do not fit a float32's 24-bit mantissa */
    if (b == WC_DT_FLOAT32) return a == WC_DT_UINT32 || a == WC_DT_INT32 ? WC_DT_FLOAT64 : b;
    if (b == WC_DT_INT32) return a == WC_DT_UINT32 ? WC_DT_FLOAT64 : b;
    if (b == WC_DT_UINT32) return a == WC_DT_INT16 ? WC_DT_FLOAT64 : b;
    if (b == WC_DT_INT16) return a == WC_DT_UINT16 ? WC_DT_INT32 : b;
    return b; /* UInt16 with Byte */
}

double wc_dtype_get(const void *buf, wc_dtype t, size_t i) {
    switch (t) {
    case WC_DT_BYTE:
        return ((const uint8_t *)buf)[i];
    case WC_DT_UINT16:
        return ((const uint16_t *)buf)[i];
    case WC_DT_INT16:
        return ((const int16_t *)buf)[i];
    case WC_DT_UINT32:
        return ((const uint32_t *)buf)[i];
    case WC_DT_INT32:
        return ((const int32_t *)buf)[i];
    case WC_DT_FLOAT32:
        return ((const float *)buf)[i];
    case WC_DT_FLOAT64:
        return ((const double *)buf)[i];
    }
    return NAN;
}

/* GDAL's own messages go through our log, with the rank prefix, instead of "ERROR 4: ...".
 * Failures are reported again by the caller with context, so GDAL's errors are debug detail:
 * shown as warnings only when they are not about to be reported. */
static void gdal_message(CPLErr cls, CPLErrorNum num, const char *msg) {
    (void)num;
    if (cls == CE_Warning) wc_warn("GDAL: %s", msg);
    /* CE_Failure/CE_Fatal: the caller reports them with CPLGetLastErrorMsg and context. */
}

static pthread_once_t gdal_once = PTHREAD_ONCE_INIT;
/* GDAL's block cache defaults to 5% of RAM per process; wildcpu runs a process per core and
 * reads each patch once per epoch, so it caps the cache (unless GDAL_CACHEMAX says otherwise)
 * and counts it in its memory plan. */
#define WC_GDAL_CACHE_DEFAULT ((int64_t)256 << 20)
/* The least wc_raster_cache_fit leaves: a few blocks of every band of a small raster. */
#define WC_GDAL_CACHE_MIN ((int64_t)16 << 20)

/* The process's open files now (MPI's sockets and shared memory, the libraries'). */
static int files_open_now(void) {
    DIR *d = opendir("/proc/self/fd");
    int n = 0;
    if (!d) return 32; /* without /proc: about what a rank holds at start */
    for (struct dirent *e; (e = readdir(d)) != NULL;) n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the listing's own */
}

/* GDAL keeps up to GDAL_MAX_DATASET_POOL_SIZE (default 100) of a VRT's sources open, beside the
 * process's other files: under a lower limit of open files (ulimit -n 64 or 96, as some batch
 * and login nodes set) opening a tile failed with EMFILE, which GDAL does not say, and the run
 * stopped on "read error ... GDAL gave no reason". The soft limit is raised as far as the pool
 * needs and the hard limit allows; when the hard limit is lower, GDAL keeps fewer files open
 * (slower reads of a mosaic of many files, the same pixels), unless the user set the pool. */
/* What fit_open_files found wrong on this process (a limit lower than the pool the user set),
 * for a read error GDAL gives no reason for: every rank's, though only rank 0 warns at start
 * (each process has its own limit: a node's may be lower than rank 0's). */
static char open_files_note[256];

static void fit_open_files(void) {
    enum { BESIDE_POOL = 48 }; /* the run's own files, datasets outside the pool, GDAL's */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return;
    const char *set = CPLGetConfigOption("GDAL_MAX_DATASET_POOL_SIZE", NULL);
    const long pool = set ? atol(set) : 100, open_now = files_open_now();
    const rlim_t want = (rlim_t)(open_now + WC_MAX(pool, 2) + BESIDE_POOL);
    if (rl.rlim_cur >= want) return;
    struct rlimit raised = rl;
    raised.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &raised) == 0) rl = raised;
    if (rl.rlim_cur >= want) return;
    const long fit = WC_MAX((long)rl.rlim_cur - open_now - BESIDE_POOL, 2);
    if (set) {
        /* the user's pool stands; said, since GDAL says nothing when an open fails with EMFILE
         * (the run stopped on "read error ... GDAL gave no reason", with no word of the limit) */
        snprintf(open_files_note, sizeof open_files_note,
                 "; this process may open %llu files, %ld open already, and "
                 "GDAL_MAX_DATASET_POOL_SIZE=%s lets GDAL keep %ld more: out of files? (ulimit "
                 "-n)",
                 (unsigned long long)rl.rlim_cur, open_now, set, pool);
        if (wc_dist_rank() == 0)
            wc_warn("GDAL_MAX_DATASET_POOL_SIZE=%s lets GDAL keep %ld of a mosaic's files open, "
                    "but the limit of open files (ulimit -n) is %llu, with %ld open already: "
                    "reads of a mosaic of more files may fail (\"GDAL gave no reason\"); set it "
                    "to %ld or less, or raise the limit to %llu or more",
                    set, pool, (unsigned long long)rl.rlim_cur, open_now, fit,
                    (unsigned long long)want);
        return;
    }
    char value[32];
    snprintf(value, sizeof value, "%ld", fit);
    CPLSetConfigOption("GDAL_MAX_DATASET_POOL_SIZE", value);
    if (wc_dist_rank() == 0)
        wc_warn("the limit of open files (ulimit -n) is %llu, with %ld open already: GDAL keeps "
                "%ld of a mosaic's files open instead of %ld (GDAL_MAX_DATASET_POOL_SIZE), so a "
                "mosaic of more files reads slower; raise the limit to %llu or more",
                (unsigned long long)rl.rlim_cur, open_now, fit, pool, (unsigned long long)want);
}

static void gdal_setup(void) {
    GDALAllRegister();
    fit_open_files();
    CPLSetErrorHandler(gdal_message);
    if (!CPLGetConfigOption("GDAL_CACHEMAX", NULL) && GDALGetCacheMax64() > WC_GDAL_CACHE_DEFAULT)
        GDALSetCacheMax64(WC_GDAL_CACHE_DEFAULT);
    /* Opening a file, GDAL lists its whole directory to find side-car files (.aux.xml, .ovr,
     * .msk, world files); a mosaic's tiles share one directory and are opened again and again
     * (GDAL keeps 100 open), so the listings grow with the square of the tiles: 12,288 files
     * trained 1 step in 40 s, 31 s without them. GDAL then looks for each side-car by name,
     * which finds the same files. A value the user set stands. */
    if (!CPLGetConfigOption("GDAL_DISABLE_READDIR_ON_OPEN", NULL))
        CPLSetConfigOption("GDAL_DISABLE_READDIR_ON_OPEN", "YES");
}

void wc_raster_init(void) {
    pthread_once(&gdal_once, gdal_setup);
}

/* Names and units travel in checkpoints as lists (a,b,c or name:unit,...) inside key=value;...
 * text: those separators (',' ';' '=', and `more`), and control characters, become '_' here,
 * once, for every reader. */
static void replace_separators(char *s, const char *more) {
    for (char *c = s; *c; c++)
        if (strchr(",;=", *c) || strchr(more, *c) || wc_band_name_control((unsigned char)*c))
            *c = '_';
    /* C1 controls and bytes that are not UTF-8 as '?', the rule of a checkpoint's text
     * (snapshot.c), so that the names a model was trained on are found again */
    wc_text_sanitize(s);
}

/* A band's unit as wc_band.unit keeps it: cut at a character's boundary, separators as '_'
 * (':' too: it ends the name before it in name:unit). */
static void unit_of(const char *gdal_unit, char unit[WC_BAND_UNIT_MAX]) {
    size_t keep = gdal_unit ? strlen(gdal_unit) : 0;
    if (keep >= WC_BAND_UNIT_MAX) {
        keep = WC_BAND_UNIT_MAX - 1;
        while (keep > 0 && ((unsigned char)gdal_unit[keep] & 0xC0) == 0x80) keep--;
    }
    snprintf(unit, WC_BAND_UNIT_MAX, "%.*s", (int)keep, keep ? gdal_unit : "");
    replace_separators(unit, ":");
}

/* The float nearest v (finite): a value beyond the largest float by less than half the step
 * between floats there is nearest to it (round to nearest); one beyond that has none, and
 * stays as it is (it matches no pixel, as in GDAL). */
static double nearest_float(double v) {
    const double beyond = ldexp(1.0, 128) - ldexp(1.0, 103); /* FLT_MAX + half its step */
    if (fabs(v) <= FLT_MAX) return (double)(float)v;
    return fabs(v) < beyond ? copysign(FLT_MAX, v) : v;
}

/* The latitude (degrees) of r's corner furthest from the equator, when r's CRS is geographic
 * and that corner lies beyond a pole by more than a pixel (a grid of cell centres may reach half
 * a pixel past one): such a geotransform is wrong (a projected grid given a geographic CRS, or
 * rows counted the wrong way), and every position, distance and label would be too. 0 for a
 * raster within the poles or in another CRS. */
static double beyond_the_poles(const wc_raster *r) {
    if (!r->has_gt || !r->wkt[0]) return 0;
    OGRSpatialReferenceH s = OSRNewSpatialReference(r->wkt);
    double degrees = 0; /* of one unit of the CRS */
    if (s && OSRIsGeographic(s)) degrees = OSRGetAngularUnits(s, NULL) * 180 / M_PI;
    OSRDestroySpatialReference(s);
    if (!(degrees > 0)) return 0;
    double furthest = 0;
    for (int c = 0; c < 4; c++) {
        const double col = c & 1 ? r->width : 0, row = c & 2 ? r->height : 0;
        const double lat = (r->gt[3] + col * r->gt[4] + row * r->gt[5]) * degrees;
        if (fabs(lat) > fabs(furthest)) furthest = lat;
    }
    const double pixel = (fabs(r->gt[4]) + fabs(r->gt[5])) * degrees;
    return fabs(furthest) > 90 + pixel ? furthest : 0;
}

/* A geotransform every position can be computed from: finite, of pixels with an area, within
 * the poles in a geographic CRS. WC_ERR after a message naming the fix. */
static int check_geotransform(const wc_raster *r, const char *path) {
    /* pixels of no size, or a non-number: every position on the ground would be wrong */
    int finite = 1;
    for (int i = 0; i < 6; i++) finite &= isfinite(r->gt[i]);
    const double det = r->gt[1] * r->gt[5] - r->gt[2] * r->gt[4];
    if (!finite || det == 0 || !isfinite(det)) {
        wc_error("%s has a degenerate geotransform (%g, %g, %g, %g, %g, %g): %s; fix it "
                 "(gdal_edit.py -a_ullr or -a_gt) or remove it (gdal_edit.py -unsetgt)",
                 path, r->gt[0], r->gt[1], r->gt[2], r->gt[3], r->gt[4], r->gt[5],
                 !finite          ? "a value that is not a finite number"
                 : !isfinite(det) ? "its pixels are too large for any coordinate "
                                    "(their area overflows a double)"
                                  : "its pixels have no area (a size of 0)");
        return WC_ERR;
    }
    const double pole = beyond_the_poles(r);
    if (pole != 0) {
        char grid[512];
        wc_raster_describe_grid(r, grid, sizeof grid);
        wc_error("%s reaches latitude %.6g, beyond the pole, in a geographic CRS (%s): its "
                 "geotransform or its CRS is wrong; fix it (gdal_edit.py -a_srs or -a_ullr)",
                 path, pole, grid);
        return WC_ERR;
    }
    return WC_OK;
}

/* The message for a dataset without bands: a container of several rasters (netCDF or HDF
 * variables, a GeoPackage's tables) has none of its own, so name what it holds, one of which is
 * the path to give. */
static void say_no_bands(GDALDatasetH ds, const char *path) {
    char **sub = GDALGetMetadata(ds, "SUBDATASETS");
    int nsub = 0;
    for (int i = 0; sub && sub[i]; i++) nsub += strstr(sub[i], "_NAME=") != NULL;
    if (!nsub) {
        wc_error("%s has no raster bands", path);
        return;
    }
    size_t cap = 256, len = 0;
    for (int i = 0; sub[i]; i++) cap += strlen(sub[i]) + 8;
    char *list = WC_ALLOC(cap);
    list[0] = 0;
    for (int i = 0, shown = 0; sub[i] && shown < 8; i++) {
        const char *v = strstr(sub[i], "_NAME=");
        if (!v) continue;
        len += (size_t)snprintf(list + len, cap - len, "%s%s", shown++ ? ", " : "", v + 6);
    }
    if (nsub > 8) snprintf(list + len, cap - len, ", and %d more", nsub - 8);
    wc_error("%s has no raster bands of its own but %d subdatasets: %s (give one of them as the "
             "path, or a VRT of the ones to use: gdalbuildvrt -separate)",
             path, nsub, list);
    free(list);
}

/* Band `i` (0-based) of `path` as wildcpu reads it: name, unit, type, nodata, mask, packing.
 * WC_ERR after a message for a type or packing it cannot read. */
static int describe_band(GDALRasterBandH b, int i, const char *path, wc_band *bd) {
    const char *desc = GDALGetDescription(b);
    if (desc && *desc)
        bd->renamed = wc_band_name_of(desc, bd->name);
    else
        snprintf(bd->name, sizeof bd->name, "band_%d", i + 1), bd->undescribed = 1;
    unit_of(GDALGetRasterUnitType(b), bd->unit);
    if (from_gdal(b, &bd->type) != WC_OK) {
        GDALDataType gt = GDALGetRasterDataType(b);
        wc_error("%s, band %d (%s): data type %s is not supported (use Byte, UInt16, Int16, "
                 "UInt32, Int32, Float32 or Float64; gdal_translate -ot converts)",
                 path, i + 1, bd->name,
                 gt == GDT_Byte ? "signed Byte (Int8)" : GDALGetDataTypeName(gt));
        return WC_ERR;
    }
    bd->nodata = bd->nodata_declared = GDALGetRasterNoDataValue(b, &bd->has_nodata);
    /* A Float32 band holds floats: a nodata value no float equals exactly (-9999.9, the
     * -3.4028235e+38 of .flt/.bil headers, just beyond the largest float) marks the float
     * nearest it, as GDAL's own masks take it; compared unrounded it would match no pixel. */
    if (bd->has_nodata && bd->type == WC_DT_FLOAT32 && isfinite(bd->nodata)) {
        const double rounded = nearest_float(bd->nodata);
        bd->nodata_rounded = rounded != bd->nodata;
        bd->nodata = rounded;
    }
    /* A mask made of the band's own nodata value is compared here; any other (an internal
     * or .msk mask, NODATA_VALUES's per-dataset mask: all bands at their values at once)
     * is read from GDAL. */
    const int mask_flags = GDALGetMaskFlags(b);
    const int own_nodata = (mask_flags & GMF_NODATA) && !(mask_flags & GMF_PER_DATASET);
    bd->masked = !(mask_flags & GMF_ALL_VALID) && !(own_nodata && bd->has_nodata);
    bd->own_mask = bd->masked && !(mask_flags & GMF_ALPHA);
    bd->scale = GDALGetRasterScale(b, NULL);
    bd->offset = GDALGetRasterOffset(b, NULL);
    if (!isfinite(bd->scale) || bd->scale == 0 || !isfinite(bd->offset)) {
        wc_error("%s, band %d (%s): scale %g and offset %g cannot unpack its values (the "
                 "scale must be finite and non-zero, the offset finite); fix the band's "
                 "metadata (gdal_edit.py -scale and -offset set them)",
                 path, i + 1, bd->name, bd->scale, bd->offset);
        return WC_ERR;
    }
    return WC_OK;
}

/* WC_ERR after a message when the directory of the raster at path (with its last '/') is too
 * long for GDAL's path buffers: GDAL opens the file itself, but CPLGetPath gives "" for its
 * directory, so it finds none of its side-cars (.aux.xml, .msk: nodata values, band
 * descriptions, masks) and resolves a VRT's relative source names from the current directory:
 * a run read tiles of the same names there, another region, and mapped them with status 0. */
static int refuse_long_directory(const char *path) {
    const char *slash = strrchr(path, '/');
    const size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    if (dir < WC_GDAL_PATH_BUFFER) return WC_OK;
    wc_error("%.60s...%s: its directory is %zu bytes long, and GDAL takes directories shorter "
             "than %d bytes: it would find none of the file's side-cars (nodata values, band "
             "descriptions, masks) and read a VRT's sources named relative to it from the "
             "current directory instead; give a relative path from a directory nearer the file "
             "(cd there first), or move the files",
             path, slash, dir, WC_GDAL_PATH_BUFFER);
    return WC_ERR;
}

int wc_raster_open(wc_raster *r, const char *path) {
    wc_raster_init();
    memset(r, 0, sizeof *r);
    if (wc_refuse_special_file("the raster", path) != WC_OK) return WC_ERR;
    if (refuse_long_directory(path) != WC_OK) return WC_ERR;
    CPLErrorReset();
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY | GDAL_OF_VERBOSE_ERROR,
                                 NULL, NULL, NULL);
    if (!ds) {
        const char *why = CPLGetLastErrorMsg();
        wc_error("cannot open %s as a raster: %s", path, why && *why ? why : "not recognized");
        return WC_ERR;
    }
    r->ds = ds;
    r->path = wc_strdup(path);
    r->width = GDALGetRasterXSize(ds);
    r->height = GDALGetRasterYSize(ds);
    r->nbands = GDALGetRasterCount(ds);
    r->has_gt = GDALGetGeoTransform(ds, r->gt) == CE_None;
    r->gcps = GDALGetGCPCount(ds); /* read now: a planned run releases the dataset */
    r->gcp = r->gcps > 0 ? WC_ALLOC(sizeof *r->gcp * (size_t)r->gcps) : NULL;
    const GDAL_GCP *gcp = GDALGetGCPs(ds);
    for (int i = 0; i < r->gcps; i++)
        r->gcp[i] = (wc_raster_gcp){gcp[i].dfGCPPixel, gcp[i].dfGCPLine, gcp[i].dfGCPX,
                                    gcp[i].dfGCPY, gcp[i].dfGCPZ};
    const char *gcp_wkt = GDALGetGCPProjection(ds);
    r->gcp_wkt = wc_strdup(gcp_wkt ? gcp_wkt : "");
    if (!r->has_gt) {
        double id[6] = {0, 1, 0, 0, 0, 1};
        memcpy(r->gt, id, sizeof id);
    }
    const char *wkt = GDALGetProjectionRef(ds);
    r->wkt = wc_strdup(wkt ? wkt : "");
    if (r->has_gt && check_geotransform(r, path) != WC_OK) goto fail;
    if (r->nbands < 1) {
        say_no_bands(ds, path);
        goto fail;
    }
    r->bands = WC_CALLOC(r->nbands, sizeof(wc_band));
    for (int i = 0; i < r->nbands; i++)
        if (describe_band(GDALGetRasterBand(ds, i + 1), i, path, &r->bands[i]) != WC_OK) goto fail;
    /* An alpha band (a gdalwarp -dstalpha collar: 0 where no data) masks every other band; GDAL
     * itself applies it only to 2- and 4-band rasters, so any other count would train on the
     * collar's zeros. The first one counts. */
    for (int i = 0; i < r->nbands && !r->alpha; i++)
        if (GDALGetRasterColorInterpretation(GDALGetRasterBand(ds, i + 1)) == GCI_AlphaBand)
            r->alpha = i + 1;
    for (int i = 0; i < r->nbands && r->alpha; i++) {
        r->bands[i].is_alpha = i + 1 == r->alpha;
        r->bands[i].masked = i + 1 != r->alpha;
    }
    return WC_OK;
fail:
    wc_raster_close(r);
    return WC_ERR;
}

void wc_raster_close(wc_raster *r) {
    if (!r) return;
    if (r->ds) GDALClose((GDALDatasetH)r->ds);
    free(r->path);
    free(r->wkt);
    free(r->gcp);
    free(r->gcp_wkt);
    free(r->bands);
    free(r->mask);
    wc_strv_free(r->files);
    memset(r, 0, sizeof *r);
}

char *const *wc_raster_files(wc_raster *r) {
    if (!r->files) r->files = wc_gdal_file_list(r->path);
    return r->files;
}

/* How many of a VRT's sources wc_raster_open_files_bytes opens to measure one. */
#define PROBED_SOURCES 4

/* The heap in use, as glibc counts it (both its arenas and its large mappings). */
static size_t heap_in_use(void) {
    const struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

/* The data files behind r: r's own file, or a VRT mosaic's first PROBED_SOURCES sources (a
 * mosaic's tile is often several files, of other layouts), which stand for every file. Returns
 * how many were put in probe[]; *sources, when given, gets a VRT's count of sources (0 for a
 * file). */
static int probed_files(wc_raster *r, const char *probe[PROBED_SOURCES], int *sources) {
    wc_raster_init();
    char *const *list = wc_raster_files(r);
    int n = 0;
    while (list && list[n]) n++;
    GDALDriverH drv = GDALIdentifyDriver(r->path, NULL);
    const int vrt = drv && !strcmp(GDALGetDriverShortName(drv), "VRT") && n > 1;
    if (sources) *sources = vrt ? n - 1 : 0;
    if (!vrt) {
        probe[0] = r->path;
        return 1;
    }
    const int k = WC_MIN(n - 1, PROBED_SOURCES);
    for (int i = 0; i < k; i++) probe[i] = list[1 + i];
    return k;
}

size_t wc_raster_open_files_bytes(wc_raster *r, int handles, int *files, size_t *per_file) {
    const char *probes[PROBED_SOURCES];
    int sources;
    const int nprobe = probed_files(r, probes, &sources);
    const int pool = atoi(CPLGetConfigOption("GDAL_MAX_DATASET_POOL_SIZE", "100"));
    const int open_files = sources ? WC_MIN(sources * handles, WC_MAX(pool, 1)) : handles;
    /* the costliest file stands for every file */
    size_t cost = 0;
    CPLPushErrorHandler(CPLQuietErrorHandler); /* a file the reads will say is broken */
    for (int i = 0; i < nprobe; i++) {
        const char *probe = probes[i];
        const size_t heap0 = heap_in_use(), cache0 = wc_raster_cache_used();
        GDALDatasetH ds = GDALOpenEx(probe, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
        if (!ds) continue;
        float v;
        for (int b = 1; b <= GDALGetRasterCount(ds); b++)
            if (GDALRasterIO(GDALGetRasterBand(ds, b), GF_Read, 0, 0, 1, 1, &v, 1, 1, GDT_Float32,
                             0, 0) != CE_None)
                break;
        const size_t heap1 = heap_in_use(), cache1 = wc_raster_cache_used();
        const size_t grown = cache1 > cache0 ? cache1 - cache0 : 0;
        if (heap1 > heap0 + grown) cost = WC_MAX(cost, heap1 - heap0 - grown);
        GDALClose(ds);
    }
    CPLPopErrorHandler();
    CPLErrorReset();
    if (files) *files = open_files;
    if (per_file) *per_file = cost;
    return cost * (size_t)open_files;
}

size_t wc_raster_mosaic_bytes(wc_raster *r, size_t *opening) {
    *opening = 0;
    int sources;
    const char *probes[PROBED_SOURCES];
    probed_files(r, probes, &sources);
    if (!sources) return 0;
    /* the heap the open handle keeps (its sources' descriptions), and the pages its opening
     * touched beyond that (the XML's tree, freed once parsed): freed heap is returned to the
     * system first, so that the opening cannot reuse pages that are resident already */
    malloc_trim(0);
    const size_t heap0 = heap_in_use(), rss0 = wc_current_rss_bytes();
    CPLPushErrorHandler(CPLQuietErrorHandler); /* the reads say what is wrong with it */
    GDALDatasetH ds = GDALOpenEx(r->path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    CPLPopErrorHandler();
    CPLErrorReset();
    if (!ds) return 0;
    const size_t heap1 = heap_in_use(), rss1 = wc_current_rss_bytes();
    GDALClose(ds);
    malloc_trim(0);
    const size_t held = heap1 > heap0 ? heap1 - heap0 : 0;
    const size_t touched = rss1 > rss0 ? rss1 - rss0 : 0;
    *opening = touched > held ? touched - held : 0;
    return held;
}

/* Blocks of size b a span of t pixels can touch, wherever it lies: (t - 1) / b + 1 when it
 * starts on a block's edge, one more otherwise; at most the n a file has (0: a mosaic's tile,
 * whose neighbours hold the blocks beyond it). */
static int64_t blocks_spanned(int64_t t, int64_t b, int64_t n) {
    const int64_t k = (t - 1) / b + 2;
    return n > 0 ? WC_MIN(k, n) : k;
}

size_t wc_raster_window_blocks_bytes(wc_raster *r, int64_t w, int64_t h) {
    const char *probes[PROBED_SOURCES];
    int sources;
    const int nprobe = probed_files(r, probes, &sources);
    size_t most = 0;
    CPLPushErrorHandler(CPLQuietErrorHandler); /* a file the reads will say is broken */
    for (int i = 0; i < nprobe; i++) {
        GDALDatasetH ds =
            GDALOpenEx(probes[i], GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
        if (!ds) continue;
        const int64_t fw = GDALGetRasterXSize(ds), fh = GDALGetRasterYSize(ds);
        size_t bytes = 0;
        for (int b = 1; b <= GDALGetRasterCount(ds); b++) {
            GDALRasterBandH band = GDALGetRasterBand(ds, b);
            int bx = 0, by = 0;
            GDALGetBlockSize(band, &bx, &by);
            if (bx <= 0 || by <= 0) continue;
            const int64_t nx = blocks_spanned(w, bx, sources ? 0 : (fw + bx - 1) / bx);
            const int64_t ny = blocks_spanned(h, by, sources ? 0 : (fh + by - 1) / by);
            bytes += (size_t)(nx * ny) * (size_t)bx * (size_t)by *
                     (size_t)GDALGetDataTypeSizeBytes(GDALGetRasterDataType(band));
        }
        most = WC_MAX(most, bytes);
        GDALClose(ds);
    }
    CPLPopErrorHandler();
    CPLErrorReset();
    return most;
}

void wc_raster_release(wc_raster *r) {
    if (r->ds) GDALClose((GDALDatasetH)r->ds);
    r->ds = NULL;
}

static void CPL_STDCALL on_write_error(CPLErr cls, CPLErrorNum num, const char *msg) {
    (void)num;
    wc_gdal_errors *e = CPLGetErrorHandlerUserData();
    if (cls == CE_Warning) {
        wc_warn("GDAL: %s", msg);
        return;
    }
    if (cls < CE_Failure) return;
    e->failures++;
    snprintf(e->last, sizeof e->last, "%s", msg);
}

void wc_gdal_errors_push(wc_gdal_errors *e) {
    CPLPushErrorHandlerEx(on_write_error, e);
}
void wc_gdal_errors_pop(void) {
    CPLPopErrorHandler();
}

size_t wc_raster_cache_used(void) {
    return (size_t)GDALGetCacheUsed64();
}
size_t wc_raster_cache_max(void) {
    return (size_t)GDALGetCacheMax64();
}
void wc_raster_cache_set(size_t bytes) {
    GDALSetCacheMax64((int64_t)bytes);
}
int wc_raster_cache_user_set(void) {
    return CPLGetConfigOption("GDAL_CACHEMAX", NULL) != NULL;
}

size_t wc_raster_cache_most(uint64_t host_ranks) {
    return wc_physical_memory_bytes() / 4 / (size_t)WC_MAX(host_ranks, 1);
}

size_t wc_raster_cache_fit(size_t bytes, size_t most) {
    wc_raster_init();
    if (CPLGetConfigOption("GDAL_CACHEMAX", NULL)) return 0; /* the user's choice stands */
    /* blocks at the raster's edges extend beyond it: a quarter more covers them */
    const double want = WC_MAX((double)bytes * 1.25, (double)WC_GDAL_CACHE_MIN);
    const double cap = most ? (double)WC_MAX(most, WC_GDAL_CACHE_MIN) : WC_GDAL_CACHE_DEFAULT;
    GDALSetCacheMax64((int64_t)WC_MIN(want, cap));
    return want > cap ? (size_t)want : 0;
}

/* Masked pixels of the masked bands among `bands` become NaN in dst (band k's first pixel at
 * dst + k * plane elements, rows `stride` elements apart). A mask shared by consecutive bands
 * (a per-dataset mask is one band for all) is read once. */
static int apply_masks(wc_raster *r, const int *bands, int nb, wc_dtype type, char *dst, int gx,
                       int gy, int gw, int gh, size_t plane, size_t stride) {
    /* read as double: an alpha band may be of any type (0..1 floats too); 0 is masked */
    const size_t need = (size_t)gw * (size_t)gh;
    /* the alpha band first, where there is one; then GDAL's own masks of the bands, beside it
     * (where there is one) or alone */
    for (int pass = r->alpha ? 0 : 1; pass < 2; pass++) {
        GDALRasterBandH last = NULL;
        for (int k = 0; k < nb; k++) {
            const wc_band *b = &r->bands[bands[k] - 1];
            if (!b->masked || (pass == 1 && r->alpha && !b->own_mask)) continue;
            WC_ASSERT(type == WC_DT_FLOAT32 || type == WC_DT_FLOAT64);
            GDALDatasetH ds = (GDALDatasetH)r->ds;
            GDALRasterBandH mb = pass == 0 ? GDALGetRasterBand(ds, r->alpha)
                                           : GDALGetMaskBand(GDALGetRasterBand(ds, bands[k]));
            if (mb != last) {
                if (r->mask_cap < need) { /* grown once to the largest window, not per read */
                    free(r->mask);
                    r->mask = WC_ALLOC(sizeof(double) * need);
                    r->mask_cap = need;
                }
                if (GDALRasterIO(mb, GF_Read, gx, gy, gw, gh, r->mask, gw, gh, GDT_Float64, 0, 0) !=
                    CE_None) {
                    wc_error("read error in %s, the %s of band %d, window x=%d y=%d %dx%d: %s",
                             r->path, pass == 0 ? "alpha band, the mask" : "mask", bands[k], gx, gy,
                             gw, gh, CPLGetLastErrorMsg());
                    return WC_ERR;
                }
                last = mb;
            }
            for (int y = 0; y < gh; y++)
                for (int x = 0; x < gw; x++) {
                    const double m = r->mask[(size_t)y * gw + x];
                    if (m != 0 && !isnan(m)) continue; /* a NaN alpha masks too */
                    const size_t i = (size_t)k * plane + (size_t)y * stride + (size_t)x;
                    if (type == WC_DT_FLOAT32)
                        ((float *)dst)[i] = NAN;
                    else
                        ((double *)dst)[i] = NAN;
                }
        }
    }
    return WC_OK;
}

/* After a read of several bands failed: the first of them that fails alone over the same
 * window (into a scratch buffer; 0 when none does, or there is no memory to try), with GDAL's
 * message for it in msg. A failure is a rare path: the cost of the second reads is no matter. */
static int failing_band(wc_raster *r, int gx, int gy, int gw, int gh, const int *bands, int nb,
                        GDALDataType gt, size_t esz, char *msg, size_t size) {
    void *tmp = malloc((size_t)gw * (size_t)gh * esz);
    int found = 0;
    for (int k = 0; tmp && k < nb && !found; k++) {
        CPLErrorReset();
        GDALRasterBandH b = GDALGetRasterBand((GDALDatasetH)r->ds, bands[k]);
        if (GDALRasterIO(b, GF_Read, gx, gy, gw, gh, tmp, gw, gh, gt, 0, 0) != CE_None) {
            found = bands[k];
            /* GDAL says why a VRT's source fails to open only the first time (Permission
             * denied, not a TIFF): a silent retry keeps the first read's reason */
            if (*CPLGetLastErrorMsg()) snprintf(msg, size, "%s", CPLGetLastErrorMsg());
        }
    }
    free(tmp);
    return found;
}

int wc_raster_read(wc_raster *r, int64_t x0, int64_t y0, int64_t w, int64_t h, const int *bands,
                   int nb, wc_dtype type, void *buf) {
    /* the part of the window inside the raster: within GDAL's int range, since the raster is */
    const int64_t ix0 = WC_MAX(x0, 0), iy0 = WC_MAX(y0, 0);
    const int64_t ix1 = WC_MIN(x0 + w, (int64_t)r->width), iy1 = WC_MIN(y0 + h, (int64_t)r->height);
    if (ix1 <= ix0 || iy1 <= iy0) return WC_OK;
    WC_ASSERT(ix1 <= INT_MAX && iy1 <= INT_MAX);
    const int gx = (int)ix0, gy = (int)iy0, gw = (int)(ix1 - ix0), gh = (int)(iy1 - iy0);
    const size_t esz = wc_dtype_size(type);
    char *dst = (char *)buf + ((size_t)(iy0 - y0) * (size_t)w + (size_t)(ix0 - x0)) * esz;
    const GDALDataType gt = (GDALDataType)wc_dtype_to_gdal(type);
    CPLErrorReset();
    CPLErr err = GDALDatasetRasterIOEx((GDALDatasetH)r->ds, GF_Read, gx, gy, gw, gh, dst, gw, gh,
                                       gt, nb, (int *)bands, (GSpacing)esz, (GSpacing)esz * w,
                                       (GSpacing)esz * w * h, NULL);
    if (err != CE_None) {
        /* GDAL's own buffers (a block, a decompression buffer) are no plan's: when one could
         * not be allocated, what ran out is said as for ours */
        char cause[1024] = "", msg[1024], band[WC_BAND_NAME_MAX + 32] = "";
        const int oom = CPLGetLastErrorNo() == CPLE_OutOfMemory;
        snprintf(msg, sizeof msg, "%s", CPLGetLastErrorMsg());
        if (oom) {
            cause[0] = ':', cause[1] = ' ';
            wc_out_of_memory_cause(0, cause + 2, sizeof cause - 2);
        }
        /* which band: the one a user must fix (a VRT's derived band, one tile's band) */
        const int k = nb > 1 && !oom
                          ? failing_band(r, gx, gy, gw, gh, bands, nb, gt, esz, msg, sizeof msg)
                      : nb == 1 ? bands[0]
                                : 0;
        if (k) snprintf(band, sizeof band, ", band %d (%s)", k, r->bands[k - 1].name);
        wc_error("read error in %s, window x=%d y=%d %dx%d%s: %s%s%s", r->path, gx, gy, gw, gh,
                 band,
                 *msg ? msg
                      : "GDAL gave no reason (a VRT's derived band whose pixel function "
                        "failed, or a driver that fails without saying why?)",
                 *msg ? "" : open_files_note, cause);
        return WC_ERR;
    }
    return apply_masks(r, bands, nb, type, dst, gx, gy, gw, gh, (size_t)w * (size_t)h, (size_t)w);
}

enum vrt_kind { NOT_VRT, VRT_MOSAIC, VRT_WARPED };
static enum vrt_kind vrt_kind_of(const char *path);
static int is_vrt_file(const char *path);

/* GDAL answers a VRT's coverage by its sources' rectangles, so a nested VRT (a mosaic of
 * mosaics) counts as covered wherever it is placed: its own holes are asked of it. The first
 * VRT within r's mosaic with a part no source covers (in any band), or NULL; *covered its
 * percentage covered. */
static char *nested_vrt_with_hole(wc_raster *r, double *covered) {
    char *const *files = wc_raster_files(r);
    char *found = NULL;
    for (int i = 1; files[i] && !found; i++) {
        if (wc_special_file_kind(files[i]) || vrt_kind_of(files[i]) != VRT_MOSAIC) continue;
        CPLPushErrorHandler(CPLQuietErrorHandler);
        GDALDatasetH ds = GDALOpenEx(files[i], GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
        CPLPopErrorHandler();
        for (int b = 1; ds && !found && b <= GDALGetRasterCount(ds); b++) {
            *covered = 100;
            const int st =
                GDALGetDataCoverageStatus(GDALGetRasterBand(ds, b), 0, 0, GDALGetRasterXSize(ds),
                                          GDALGetRasterYSize(ds), 0, covered);
            if ((st & GDAL_DATA_COVERAGE_STATUS_EMPTY) &&
                !(st & GDAL_DATA_COVERAGE_STATUS_UNIMPLEMENTED))
                found = wc_strdup(files[i]);
        }
        if (ds) GDALClose(ds);
    }
    return found;
}

int wc_raster_check_coverage(wc_raster *r, const int *bands, int nb) {
    GDALDatasetH ds = (GDALDatasetH)r->ds;
    GDALDriverH drv = GDALGetDatasetDriver(ds);
    if (!drv || strcmp(GDALGetDriverShortName(drv), "VRT") != 0) return WC_OK;
    int asked = 0;
    for (int k = 0; k < nb; k++) {
        const wc_band *b = &r->bands[bands[k] - 1];
        if (b->has_nodata || b->masked) continue;
        double covered = 100;
        asked = bands[k];
        const int st = GDALGetDataCoverageStatus(GDALGetRasterBand(ds, bands[k]), 0, 0, r->width,
                                                 r->height, 0, &covered);
        if (!(st & GDAL_DATA_COVERAGE_STATUS_EMPTY) ||
            (st & GDAL_DATA_COVERAGE_STATUS_UNIMPLEMENTED))
            continue;
        wc_error("%s: %.3g%% of its extent has no source (a tile missing from the mosaic?) and "
                 "band %d (%s) has no nodata value, so GDAL would read 0 there and it would be "
                 "taken for data; give the mosaic's bands a nodata value (gdalbuildvrt "
                 "-vrtnodata, or a <NoDataValue> in each band)",
                 r->path, 100 - covered, bands[k], b->name);
        return WC_ERR;
    }
    double covered = 100;
    char *nested = asked ? nested_vrt_with_hole(r, &covered) : NULL;
    if (nested) {
        wc_error("%s: %.3g%% of %s, a VRT within it, has no source (a tile missing from the "
                 "mosaic?) and band %d (%s) of the mosaic has no nodata value, so GDAL would "
                 "read 0 or that VRT's nodata value there and it would be taken for data; give "
                 "the mosaic's bands a nodata value (gdalbuildvrt -vrtnodata, or a <NoDataValue> "
                 "in each band)",
                 r->path, 100 - covered, nested, asked, r->bands[asked - 1].name);
        free(nested);
        return WC_ERR;
    }
    return WC_OK;
}

/* The band that stands for all in the coverage questions: the first with a nodata value. */
static int coverage_band(const wc_raster *r, const int *bands, int nb) {
    for (int k = 0; k < nb; k++)
        if (r->bands[bands[k] - 1].has_nodata) return bands[k];
    return 0;
}

/* What GDAL says of a window, as wildcpu uses it. */
enum { COV_COVERED, COV_EMPTY, COV_PARTIAL };

/* GDAL's coverage of the window, clipped to the raster, in band b. Only an exact EMPTY is
 * empty. COVERED needs DATA alone with 100% covered, or UNIMPLEMENTED (the driver cannot tell:
 * read it), or nothing to ask about. DATA with EMPTY is partly covered, and so is DATA
 * without a percentage: GDAL 3.6 gives up (-1) once the uncovered part of a VRT's window
 * falls apart in pieces, and a mosaic of scattered tiles is exactly that. */
static int coverage_of(const wc_raster *r, int64_t x0, int64_t y0, int64_t w, int64_t h, int b) {
    const int64_t ix0 = WC_MAX(x0, 0), iy0 = WC_MAX(y0, 0);
    const int64_t ix1 = WC_MIN(x0 + w, (int64_t)r->width), iy1 = WC_MIN(y0 + h, (int64_t)r->height);
    if (b == 0 || ix1 <= ix0 || iy1 <= iy0) return COV_COVERED;
    double pct = -1;
    const int st = GDALGetDataCoverageStatus(GDALGetRasterBand((GDALDatasetH)r->ds, b), (int)ix0,
                                             (int)iy0, (int)(ix1 - ix0), (int)(iy1 - iy0), 0, &pct);
    if (st == GDAL_DATA_COVERAGE_STATUS_EMPTY) return COV_EMPTY;
    if (st & GDAL_DATA_COVERAGE_STATUS_UNIMPLEMENTED) return COV_COVERED;
    if (!(st & GDAL_DATA_COVERAGE_STATUS_EMPTY) && pct >= 100) return COV_COVERED;
    return COV_PARTIAL;
}

/* Whether a window GDAL reports empty reads as nodata in band b, read as `type` (what the
 * callers read): checked once per raster, on up to 64 x 64 pixels of the first such window.
 * GDAL promises only a fill value, and a nodata its type cannot hold (Byte -1), or a Float32
 * nodata that is no float (-9999.9) read as Float64, fills with something wildcpu reads as
 * data: then nothing is skipped, and a warning says so. */
static int holes_read_as_nodata(wc_raster *r, int b, wc_dtype type, int64_t x0, int64_t y0,
                                int64_t w, int64_t h) {
    if (r->holes_checked) return r->holes_checked == 1;
    const int64_t ix0 = WC_MAX(x0, 0), iy0 = WC_MAX(y0, 0);
    const int64_t sw = WC_MIN(64, WC_MIN(x0 + w, (int64_t)r->width) - ix0);
    const int64_t sh = WC_MIN(64, WC_MIN(y0 + h, (int64_t)r->height) - iy0);
    const wc_band *band = &r->bands[b - 1];
    char *buf = WC_ALLOC(wc_dtype_size(type) * (size_t)sw * (size_t)sh);
    if (wc_raster_read(r, ix0, iy0, sw, sh, &b, 1, type, buf) != WC_OK) {
        /* nothing was read (the error says why): no window is taken for empty, none probed
         * again (an error each), and the window's own read fails the run */
        free(buf);
        r->holes_checked = 3;
        return 0;
    }
    int nodata = 1;
    double seen = 0;
    for (int64_t i = 0; nodata && i < sw * sh; i++)
        if (!wc_band_is_nodata(band, seen = wc_dtype_get(buf, type, (size_t)i))) nodata = 0;
    free(buf);
    r->holes_checked = nodata ? 1 : 2;
    if (!nodata)
        wc_warn("%s: where the mosaic has no source, band %d (%s) reads %.17g, which is not its "
                "nodata value (%.17g): those pixels count as data, and every window is read",
                r->path, b, band->name, seen, band->nodata);
    return nodata;
}

/* Whether GDAL reports data over the whole raster in band b (then no window can be empty),
 * asked once per band. */
static int covered_everywhere(wc_raster *r, int b) {
    if (r->covered == 0 || r->covered_band != b) {
        r->covered = coverage_of(r, 0, 0, r->width, r->height, b) == COV_COVERED ? 1 : 2;
        r->covered_band = b;
    }
    return r->covered == 1;
}

int wc_raster_window_empty(wc_raster *r, int64_t x0, int64_t y0, int64_t w, int64_t h,
                           const int *bands, int nb, wc_dtype type) {
    const int b = coverage_band(r, bands, nb);
    if (b == 0 || covered_everywhere(r, b) || r->holes_checked >= 2) return 0;
    return coverage_of(r, x0, y0, w, h, b) == COV_EMPTY &&
           holes_read_as_nodata(r, b, type, x0, y0, w, h);
}

/* wc_raster_empty_cells over the block of nc x nr cells at cell (c0, r0); the count marked. */
static long empty_block(wc_raster *r, int b, wc_dtype type, int64_t x0, int64_t y0, int cell,
                        int cols, int c0, int r0, int nc, int nr, uint8_t *empty) {
    const int64_t bx = x0 + (int64_t)c0 * cell, by = y0 + (int64_t)r0 * cell;
    const int cov = coverage_of(r, bx, by, (int64_t)nc * cell, (int64_t)nr * cell, b);
    if (cov == COV_EMPTY) {
        if (!holes_read_as_nodata(r, b, type, bx, by, (int64_t)nc * cell, (int64_t)nr * cell))
            return 0;
        for (int j = r0; j < r0 + nr; j++) memset(empty + (size_t)j * cols + c0, 1, (size_t)nc);
        return (long)nc * nr;
    }
    /* covered (or unknown) throughout, or a single cell partly covered: not empty */
    if (cov == COV_COVERED || (nc == 1 && nr == 1)) return 0;
    if (nc >= nr)
        return empty_block(r, b, type, x0, y0, cell, cols, c0, r0, nc / 2, nr, empty) +
               empty_block(r, b, type, x0, y0, cell, cols, c0 + nc / 2, r0, nc - nc / 2, nr, empty);
    return empty_block(r, b, type, x0, y0, cell, cols, c0, r0, nc, nr / 2, empty) +
           empty_block(r, b, type, x0, y0, cell, cols, c0, r0 + nr / 2, nc, nr - nr / 2, empty);
}

long wc_raster_empty_cells(wc_raster *r, const int *bands, int nb, wc_dtype type, int64_t x0,
                           int64_t y0, int cell, int cols, int rows, uint8_t *empty) {
    if (cols <= 0 || rows <= 0) return 0;
    memset(empty, 0, (size_t)cols * (size_t)rows);
    const int b = coverage_band(r, bands, nb);
    if (b == 0 || covered_everywhere(r, b)) return 0;
    return empty_block(r, b, type, x0, y0, cell, cols, 0, 0, cols, rows, empty);
}

int wc_band_name_of(const char *desc, char name[WC_BAND_NAME_MAX]) {
    if (strlen(desc) >= WC_BAND_NAME_MAX) {
        /* Too long to keep: its start, cut at a character's boundary, and a hash of the whole,
         * so that two descriptions alike in their first 63 bytes stay two names (a model must
         * not take one band for another). */
        size_t keep = WC_BAND_NAME_MAX - 18;
        while (keep > 0 && ((unsigned char)desc[keep] & 0xC0) == 0x80) keep--;
        snprintf(name, WC_BAND_NAME_MAX, "%.*s~%016llx", (int)keep, desc,
                 (unsigned long long)wc_fnv1a64(desc, strlen(desc)));
    } else {
        snprintf(name, WC_BAND_NAME_MAX, "%s", desc);
    }
    replace_separators(name, "");
    return strcmp(name, desc) != 0;
}

int wc_raster_say_empty_bands(const wc_raster *r, const int *bands, int nb, const char *why,
                              int as_error) {
    /* a sample of the whole raster, nearest pixels: enough to tell a band that is nodata
     * everywhere from one that is merely patchy. GDAL reads the blocks the sample touches
     * (most of a raster without overviews): it is for failure paths, said once. */
    const int sw = WC_MIN(r->width, 256), sh = WC_MIN(r->height, 256);
    double *v = WC_ALLOC(sizeof(double) * (size_t)sw * (size_t)sh);
    int said = 0;
    for (int k = 0; k < nb; k++) {
        const wc_band *b = &r->bands[bands[k] - 1];
        CPLPushErrorHandler(CPLQuietErrorHandler);
        const CPLErr e = GDALRasterIO(GDALGetRasterBand((GDALDatasetH)r->ds, bands[k]), GF_Read, 0,
                                      0, r->width, r->height, v, sw, sh, GDT_Float64, 0, 0);
        CPLPopErrorHandler();
        if (e != CE_None) continue;
        long empty = 0;
        for (long i = 0; i < (long)sw * sh; i++) empty += wc_band_is_nodata(b, v[i]);
        if (empty * 100 < 99L * sw * sh) continue;
        (as_error ? wc_error : wc_warn)("%s, band %d (%s) is nodata in %.1f%% of a %dx%d sample "
                                        "of the raster%s",
                                        r->path, bands[k], b->name,
                                        100.0 * (double)empty / ((double)sw * sh), sw, sh, why);
        said++;
    }
    free(v);
    return said;
}

/* A VRT source's rectangle `tag` (SrcRect, DstRect) in its XML: offset (x, y) and size (w, h);
 * 0 when absent. */
static int source_rect(const char *xml, const char *tag, double r[4]) {
    char open[32];
    snprintf(open, sizeof open, "<%s ", tag);
    const char *at = strstr(xml, open), *end = at ? strchr(at, '>') : NULL;
    static const char *const keys[4] = {"xOff=\"", "yOff=\"", "xSize=\"", "ySize=\""};
    for (int k = 0; k < 4; k++) {
        const char *v = at ? strstr(at, keys[k]) : NULL;
        if (!end || !v || v > end) return 0;
        r[k] = atof(v + strlen(keys[k]));
    }
    return 1;
}

/* The source file named in a VRT source's XML (malloc'd), its XML escapes undone (a.tif&amp;b
 * for a name with '&'); NULL when the XML names none. */
static char *source_name(const char *xml) {
    const char *f = strstr(xml, "<SourceFilename"), *f0 = f ? strchr(f, '>') : NULL;
    const char *f1 = f0 ? strstr(f0, "</SourceFilename>") : NULL;
    if (!f1) return NULL;
    const int len = (int)(f1 - f0 - 1);
    char *escaped = WC_ALLOC((size_t)len + 1);
    snprintf(escaped, (size_t)len + 1, "%.*s", len, f0 + 1);
    char *unescaped = CPLUnescapeString(escaped, NULL, CPLES_XML);
    char *name = wc_strdup(unescaped);
    CPLFree(unescaped);
    free(escaped);
    return name;
}

/* Checks the sources of every band of the VRT `path` (one of a mosaic's, perhaps nested): one
 * whose source rectangle is of another size than its destination rectangle is resampled by
 * GDAL (gdalbuildvrt -resolution over tiles of two resolutions); one placed a fraction of a
 * pixel off the mosaic's grid (DstRect xOff="128.5": a tile whose origin is off the grid) is
 * read shifted to the nearest pixel. Warns about the first of each (when its count is 0) and
 * counts them in found[0] and found[1]. A warped VRT has no such sources: it resamples on
 * purpose. */
static void check_resampled_sources(const char *mosaic, const char *path, int found[2]) {
    CPLPushErrorHandler(CPLQuietErrorHandler);
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    CPLPopErrorHandler();
    if (!ds) return;
    for (int b = 1; b <= GDALGetRasterCount(ds); b++) {
        char **md = GDALGetMetadata(GDALGetRasterBand(ds, b), "vrt_sources");
        for (int i = 0; md && md[i]; i++) {
            double src[4], dst[4];
            if (!source_rect(md[i], "SrcRect", src) || !source_rect(md[i], "DstRect", dst))
                continue;
            const double fx = fabs(dst[0] - round(dst[0])), fy = fabs(dst[1] - round(dst[1]));
            const int off = (fx > 1e-6 || fy > 1e-6) && found[1]++ == 0;
            const int resampled =
                (fabs(src[2] - dst[2]) > 1e-6 * dst[2] || fabs(src[3] - dst[3]) > 1e-6 * dst[3]) &&
                found[0]++ == 0;
            if (!off && !resampled) continue;
            char *name = source_name(md[i]);
            const char *shown = name ? name : "?";
            if (off)
                wc_warn("%s: the source %s (band %d of %s) lies %g x %g pixels off the "
                        "mosaic's grid (its destination starts at %g, %g): GDAL reads it "
                        "shifted to the nearest pixel, so its ground is placed up to half a pixel "
                        "from where it lies; resample it onto the grid first (gdalwarp -tr -tap, "
                        "or -te of the mosaic) if that is not what you meant",
                        mosaic, shown, b, path, fx, fy, dst[0], dst[1]);
            if (resampled)
                wc_warn("%s: the source %s (band %d of %s) is resampled onto the mosaic's grid, "
                        "%gx%g of its pixels into %gx%g (a VRT built with gdalbuildvrt -resolution "
                        "over tiles of other resolutions): GDAL resamples it, nearest neighbour "
                        "unless the VRT says otherwise, so its ground is seen at another "
                        "resolution than the rest; resample the sources to one resolution first "
                        "(gdalwarp -tr) if that is not what you meant",
                        mosaic, shown, b, path, src[2], src[3], dst[2], dst[3]);
            free(name);
        }
    }
    GDALClose(ds);
}

/* A VRT source's file (SourceFilename, its XML escapes undone, resolved against the VRT's
 * directory when the element says relativeToVRT="1", as GDAL resolves it) and band
 * (SourceBand). NULL when absent. */
static char *source_file_and_band(const char *vrt, const char *xml, int *band) {
    const char *sb = strstr(xml, "<SourceBand>");
    char *file = sb ? source_name(xml) : NULL;
    if (!file) return NULL;
    *band = atoi(sb + strlen("<SourceBand>"));
    const char *f = strstr(xml, "<SourceFilename"), *text = strchr(f, '>');
    const char *rel = strstr(f, "relativeToVRT=\"1\"");
    if (rel && rel < text) {
        char *dir = CPLStrdup(CPLGetPath(vrt));
        char *joined = wc_strdup(CPLProjectRelativeFilename(dir, file));
        CPLFree(dir);
        free(file);
        file = joined;
    }
    return file;
}

/* The length of the path GDAL would form for a source named relative to the VRT vrt (its
 * directory, '/', the name), or 0 for a source named otherwise. An absolute name marked
 * relativeToVRT="1" (a VRT edited by hand or by a script) is taken as it is by GDAL
 * (CPLProjectRelativeFilename), whatever the VRT's directory: 0 too. */
static size_t relative_source_length(const char *vrt, const char *xml) {
    const char *f = strstr(xml, "<SourceFilename"), *text = f ? strchr(f, '>') : NULL;
    const char *rel = f ? strstr(f, "relativeToVRT=\"1\"") : NULL;
    char *name = rel && rel < text ? source_name(xml) : NULL;
    if (name && !CPLIsFilenameRelative(name)) {
        free(name);
        name = NULL;
    }
    if (!name) return 0;
    const char *slash = strrchr(vrt, '/');
    const size_t n = (slash ? (size_t)(slash - vrt) + 1 : 0) + strlen(name);
    free(name);
    return n;
}

int wc_raster_source_names(const char *path, int nbands, char (*names)[WC_BAND_NAME_MAX]) {
    for (int b = 0; b < nbands; b++) names[b][0] = '\0';
    CPLPushErrorHandler(CPLQuietErrorHandler);
    GDALDatasetH vrt = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    int named = 0;
    GDALDatasetH src = NULL;
    char *open_file = NULL;
    for (int b = 1; vrt && b <= nbands && b <= GDALGetRasterCount(vrt); b++) {
        char **md = GDALGetMetadata(GDALGetRasterBand(vrt, b), "vrt_sources");
        int sband = 0;
        char *file = md && md[0] ? source_file_and_band(path, md[0], &sband) : NULL;
        if (!file || wc_special_file_kind(file)) {
            free(file);
            continue;
        }
        if (!open_file || strcmp(open_file, file) != 0) {
            if (src) GDALClose(src);
            src = GDALOpenEx(file, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
            free(open_file);
            open_file = file;
        } else {
            free(file);
        }
        const char *desc = src && sband >= 1 && sband <= GDALGetRasterCount(src)
                               ? GDALGetDescription(GDALGetRasterBand(src, sband))
                               : "";
        if (*desc) wc_band_name_of(desc, names[b - 1]), named++;
    }
    if (src) GDALClose(src);
    free(open_file);
    if (vrt) GDALClose(vrt);
    CPLPopErrorHandler();
    return named;
}

void wc_raster_undescribed_hint(const wc_raster *r, const char *const *wanted, int n, char *hint,
                                size_t size) {
    hint[0] = '\0';
    int undescribed = 0;
    for (int b = 0; b < r->nbands; b++) undescribed += r->bands[b].undescribed;
    if (undescribed == 0 || n == 0) return;
    char(*names)[WC_BAND_NAME_MAX] = WC_CALLOC((size_t)r->nbands, WC_BAND_NAME_MAX);
    int covered = 0;
    if (wc_raster_source_names(r->path, r->nbands, names) > 0)
        for (int i = 0; i < n; i++) {
            int found = 0;
            for (int b = 0; b < r->nbands && !found; b++) {
                const wc_band *bd = &r->bands[b];
                found = strcmp(bd->undescribed ? names[b] : bd->name, wanted[i]) == 0;
            }
            covered += found;
        }
    if (covered == n)
        snprintf(hint, size,
                 ". Its sources do describe their bands (band 1 of its first source: '%s'), "
                 "but %d of its own bands have no description (GDAL 3.6's gdalbuildvrt does not "
                 "copy them): give the mosaic's bands their names (a <Description> element in "
                 "each VRTRasterBand, or SetDescription in GDAL's Python bindings)",
                 names[0], undescribed);
    free(names);
}

/* A unit in one spelling of its kind: lower case, without spaces, underscores or dots, then
 * the first spelling of its row below. GDAL's unit types are free text: one driver writes
 * "metre" where another writes "m", and "degC", "deg C" and "Celsius" are one scale. */
static void unit_spelling(const char *unit, char *out, size_t size) {
    static const char *const same[][9] = {
        {"%", "percent", "pct", "percentage"},
        {"1", "fraction", "dimensionless", "unitless"},
        {"degc", "°c", "celsius", "degreec", "degreesc", "degreecelsius", "degreescelsius"},
        {"k", "kelvin", "kelvins", "degk", "°k"},
        {"degf", "°f", "fahrenheit", "degreef", "degreesf", "degreefahrenheit",
         "degreesfahrenheit"},
        {"m", "metre", "meter", "metres", "meters"},
        {"km", "kilometre", "kilometer", "kilometres", "kilometers"},
        {"mm", "millimetre", "millimeter", "millimetres", "millimeters"},
        {"ft", "foot", "feet", "internationalfoot"},
        {"deg", "degree", "degrees", "°", "arcdegree"},
        {"rad", "radian", "radians"},
        {"m/s", "ms-1", "ms^-1", "ms**-1", "m/sec", "metrepersecond", "meterpersecond",
         "metrespersecond", "meterspersecond"},
        {"km/h", "kmh-1", "km/hr", "kph", "kilometresperhour", "kilometersperhour"},
        {"mph", "mi/h", "milesperhour"},
    };
    size_t n = 0;
    for (const char *c = unit; *c && n + 1 < size; c++)
        if (!strchr(" _.", *c)) out[n++] = (char)((*c >= 'A' && *c <= 'Z') ? *c - 'A' + 'a' : *c);
    out[n] = '\0';
    for (size_t row = 0; row < sizeof same / sizeof same[0]; row++)
        for (size_t i = 0; i < 9 && same[row][i]; i++)
            if (strcmp(out, same[row][i]) == 0) {
                snprintf(out, size, "%s", same[row][0]);
                return;
            }
}

int wc_units_same(const char *a, const char *b) {
    char sa[WC_BAND_UNIT_MAX], sb[WC_BAND_UNIT_MAX];
    unit_spelling(a, sa, sizeof sa);
    unit_spelling(b, sb, sizeof sb);
    return strcmp(sa, sb) == 0;
}

/* What the sources of a mosaic's VRTs say against the VRTs that read them (check_source_files). */
typedef struct {
    int reordered; /* a VRT band reads a source band described otherwise */
    int unit;      /* a VRT band reads a source band of another unit */
    int cut;       /* a source smaller than the rectangle the VRT reads of it */
    int moved;     /* a source whose georeferencing puts it elsewhere than the VRT places it */
    int hidden;    /* a VRT whose bands hide their nodata value */
    int refused;   /* a cut source whose missing part reads as data */
    int missing;   /* a source that does not exist (refused) */
    int filled;    /* a source whose nodata pixels read as 0, data (refused) */
    int passed;    /* a source whose declared nodata value reads as data */
    int mixed;     /* a VRT band reads sources of different data types */
    int unmasked;  /* a source whose mask (per-dataset, alpha) the VRT does not apply */
    int packed;    /* a VRT band reads a source packed otherwise (scale, offset) than it says */
} source_findings;

/* What a mosaic's band does with the pixels a source skips (its <NODATA>): fills them with its
 * own nodata value, which marks them, or, without one and without a mask, with 0, data. */
typedef struct {
    int has_nodata; /* as GDAL reads the band: a hidden one (HideNoDataValue) is none */
    double nodata;
    int fills_nodata; /* the band declares a value, hidden or not, which skipped pixels get */
    int all_valid;    /* no mask: only the nodata value, if any, marks a pixel */
} mosaic_band_nodata;

/* The nodata values the VRT `path` declares, read from its XML once: which bands declare one,
 * hidden or not (GDAL's API hides a hidden one), the value its skipped pixels are filled with,
 * where 0 is without one; and the bands that hide theirs (HideNoDataValue: gdalbuildvrt
 * -hidenodata, meant for a background colour), whose pixels at that value, a missing tile's and
 * a label's nodata too, are then read as data: warned about once per VRT, naming its first such
 * band, and counted in f->hidden. */
static void read_declared_nodata(const char *mosaic, const char *path, GDALDatasetH vrt,
                                 mosaic_band_nodata *fill, int nb, source_findings *f) {
    char **xml = GDALGetMetadata(vrt, "xml:VRT");
    CPLXMLNode *root = xml && xml[0] ? CPLParseXMLString(xml[0]) : NULL;
    CPLXMLNode *ds = root ? CPLGetXMLNode(root, "=VRTDataset") : NULL;
    int hidden = 0, first = 0;
    double value = 0;
    for (CPLXMLNode *b = ds ? ds->psChild : NULL; b; b = b->psNext) {
        if (b->eType != CXT_Element || strcmp(b->pszValue, "VRTRasterBand") != 0) continue;
        const int band = atoi(CPLGetXMLValue(b, "band", "0"));
        const char *nodata = CPLGetXMLValue(b, "NoDataValue", NULL);
        if (band >= 1 && band <= nb) fill[band - 1].fills_nodata = nodata != NULL;
        if (!nodata || !CPLTestBool(CPLGetXMLValue(b, "HideNoDataValue", "0"))) continue;
        if (hidden++ == 0) first = band, value = CPLAtof(nodata);
    }
    if (hidden && f->hidden++ == 0)
        wc_warn("%s: %d band%s of %s declare%s a nodata value but hide%s it (band %d: %g; "
                "HideNoDataValue, gdalbuildvrt -hidenodata): GDAL then reads the pixels at that "
                "value, and a missing tile's, as data; build the mosaic without -hidenodata if "
                "they are not",
                mosaic, hidden, hidden > 1 ? "s" : "", path, hidden > 1 ? "" : "s",
                hidden > 1 ? "" : "s", first, value);
    if (root) CPLDestroyXMLNode(root);
}

/* A source whose nodata pixels the mosaic reads as data. A ComplexSource's <NODATA> pixels are
 * skipped, and the band holds its fill there: its nodata value, or 0 in a band without one.
 * gdalbuildvrt gives the band the first tile's nodata, so a mosaic whose first tile declares
 * none turns every later tile's nodata pixels into zeros, labels included (refused: nothing
 * marks them). A SimpleSource (or -srcnodata None) passes a tile's declared nodata value on as
 * a value, data unless the band declares the same one (warned: it may be meant). */
static void check_source_nodata(const char *mosaic, const char *path, int b,
                                const mosaic_band_nodata *mb, GDALDatasetH src, const char *file,
                                int sband, const char *xml, source_findings *f) {
    if (!mb->all_valid) return;
    const char *skip = strstr(xml, "<NODATA>");
    if (skip) {
        if (mb->fills_nodata || f->filled++ > 0) return;
        skip += strlen("<NODATA>");
        wc_error("%s: band %d of %s has no nodata value, and its source %s marks its nodata "
                 "pixels (%.*s): GDAL reads them through the mosaic as 0, taken for data (labels "
                 "as unburned); gdalbuildvrt gives a mosaic the first tile's nodata value, and "
                 "that tile has none? Give the mosaic's bands the tiles' value (gdal_edit.py "
                 "-a_nodata VALUE %s, or gdalbuildvrt -vrtnodata VALUE)",
                 mosaic, b, path, file, (int)strcspn(skip, "<"), skip, path);
        return;
    }
    if (!src || sband < 1 || sband > GDALGetRasterCount(src)) return;
    GDALRasterBandH sb = GDALGetRasterBand(src, sband);
    int declared = 0;
    const double value = GDALGetRasterNoDataValue(sb, &declared);
    if (!declared || !(GDALGetMaskFlags(sb) & GMF_NODATA)) return; /* its mask rules, not this */
    if (mb->has_nodata && (mb->nodata == value || (isnan(value) && isnan(mb->nodata)))) return;
    if (f->passed++ > 0) return;
    char band_value[64] = "none";
    if (mb->has_nodata) snprintf(band_value, sizeof band_value, "%.17g", mb->nodata);
    wc_warn("%s: its source %s declares the nodata value %.17g (band %d), but %s reads it "
            "without it (a SimpleSource, or -srcnodata None) into band %d, whose nodata value is "
            "%s: those pixels are read as the value %.17g, data; if they are not, build the "
            "mosaic again with gdalbuildvrt (it writes each tile's nodata value)",
            mosaic, file, value, sband, path, b, band_value, value);
}

/* A band read from a source that describes itself as another quantity: a tile written with its
 * bands in another order (gdalbuildvrt takes band numbers, not names, and GDAL reads it as the
 * VRT says), or in another unit. Bands without descriptions (units) on either side say
 * nothing. */
/* A source of another data type than the band's other sources (a tile written again as Int16
 * behind a mosaic of Float32 tiles: GDAL converts its values, which lost their fractions; a
 * freshly built mosaic refuses mixed types). *first_type: the type of the band's first source
 * checked (GDT_Unknown before it). */
static void check_source_type(const char *mosaic, const char *path, int b, const char *name,
                              GDALRasterBandH sb, const char *file, int sband,
                              GDALDataType *first_type, char **first_file, source_findings *f) {
    const GDALDataType t = GDALGetRasterDataType(sb);
    if (*first_type == GDT_Unknown) {
        *first_type = t, *first_file = wc_strdup(file);
        return;
    }
    if (t != *first_type && f->mixed++ == 0)
        wc_warn("%s: band %d (%s) of %s reads its source %s (band %d) as %s, and its source %s "
                "as %s: a tile written again in another type since the mosaic was built? GDAL "
                "converts its values as they are (an Int16 copy of Float32 data lost its "
                "fractions); build the mosaic again from sources of one type (gdalbuildvrt "
                "refuses mixed types)",
                mosaic, b, *name ? name : "undescribed", path, file, sband, GDALGetDataTypeName(t),
                *first_file, GDALGetDataTypeName(*first_type));
}

/* A source whose own mask (a per-dataset mask, an alpha band) the VRT does not apply: a
 * SimpleSource reads the hidden pixels as data, unless the source says <UseMaskBand> or the VRT
 * has a mask of its own (gdalbuildvrt writes one from the sources' masks). */
static void check_source_mask(const char *mosaic, const char *path, int b, GDALRasterBandH vb,
                              GDALRasterBandH sb, const char *file, const char *xml,
                              source_findings *f) {
    const int has = GDALGetMaskFlags(sb), applied = GDALGetMaskFlags(vb);
    if ((has & GMF_ALL_VALID) || !(has & (GMF_PER_DATASET | GMF_ALPHA))) return;
    if ((applied & (GMF_PER_DATASET | GMF_ALPHA)) || strstr(xml, "<UseMaskBand>true")) return;
    if (f->unmasked++ == 0)
        wc_warn("%s: its source %s has a mask (%s) that %s does not apply: the pixels it hides "
                "are read as data, band %d among them; build the mosaic again (gdalbuildvrt "
                "carries the sources' masks)",
                mosaic, file, has & GMF_ALPHA ? "an alpha band" : "a mask band", path, b);
}

/* Whether a VRT band's packing is its source's: gdalbuildvrt copies a tile's scale and offset
 * into <Scale> and <Offset> with 16 significant digits (%.16g), which do not give back every
 * double (a netCDF scale_factor of 0.13437290046996012 reads back 0.1343729004699601), so a
 * mosaic as built differs from its tiles in the last bit or two: the same packing. A tile
 * packed otherwise differs by far more. The offset is compared within the same fraction of the
 * larger of both offsets and the scale (one stored step), as an offset of 0 has no digits. */
static int same_packing(double vs, double vo, double ss, double so) {
    const double tol = 1e-13;
    return fabs(vs - ss) <= tol * fmax(fabs(vs), fabs(ss)) &&
           fabs(vo - so) <= tol * fmax(fmax(fabs(vo), fabs(so)), fabs(vs));
}

/* A source packed otherwise than the band that reads it (a tile written again with another
 * scale or offset since the mosaic was built, or packed under a band that says none): GDAL
 * reads the source's stored values and the band's scale and offset make them values, so that
 * ground's values are wrong (gdalbuildvrt refuses sources of different packings). A source the
 * VRT rescales itself (a ComplexSource's ScaleRatio, ScaleOffset, LUT or Exponent) is read as
 * the VRT means. */
static void check_source_packing(const char *mosaic, const char *path, int b, GDALRasterBandH vb,
                                 GDALRasterBandH sb, const char *file, int sband, const char *xml,
                                 source_findings *f) {
    if (strstr(xml, "<ScaleRatio>") || strstr(xml, "<ScaleOffset>") || strstr(xml, "<LUT>") ||
        strstr(xml, "<Exponent>"))
        return;
    int has = 0;
    double vs = GDALGetRasterScale(vb, &has), vo = GDALGetRasterOffset(vb, &has);
    double ss = GDALGetRasterScale(sb, &has), so = GDALGetRasterOffset(sb, &has);
    if (same_packing(vs, vo, ss, so)) return;
    if (f->packed++ > 0) return;
    const char *name = GDALGetDescription(vb);
    wc_warn("%s: band %d (%s) of %s makes values of its sources' stored values at scale %.9g "
            "and offset %.9g, but its source %s (band %d) is packed at scale %.9g and offset "
            "%.9g: a tile written again with another packing since the mosaic was built? GDAL "
            "reads that ground's stored value 1000 as %.9g where the tile means %.9g; build the "
            "mosaic again from sources of one packing (gdalbuildvrt refuses others), or unpack "
            "them first (gdal_translate -unscale -ot Float32)",
            mosaic, b, *name ? name : "undescribed", path, vs, vo, file, sband, ss, so,
            1000 * vs + vo, 1000 * ss + so);
}

static void check_source_band(const char *mosaic, const char *path, int b, GDALRasterBandH vb,
                              GDALDatasetH src, const char *file, int sband, const char *xml,
                              GDALDataType *first_type, char **first_file, source_findings *f) {
    if (!src || sband < 1 || sband > GDALGetRasterCount(src)) return;
    GDALRasterBandH sb = GDALGetRasterBand(src, sband);
    check_source_type(mosaic, path, b, GDALGetDescription(vb), sb, file, sband, first_type,
                      first_file, f);
    check_source_mask(mosaic, path, b, vb, sb, file, xml, f);
    check_source_packing(mosaic, path, b, vb, sb, file, sband, xml, f);
    const char *want = GDALGetDescription(vb), *has = GDALGetDescription(sb);
    if (*want && *has && strcmp(has, want) != 0 && f->reordered++ == 0)
        wc_warn("%s: band %d (%s) of %s is read from band %d of %s, which that file describes "
                "as '%s': a source with its bands in another order than the mosaic's "
                "(gdalbuildvrt takes band numbers, not names)? GDAL reads it as the mosaic says, "
                "so that ground gets another quantity; rebuild the mosaic from sources of one "
                "band order (gdal_translate -b reorders)",
                mosaic, b, want, path, sband, file, has);
    /* a source of another unit (one tile's temperatures in degF): gdalbuildvrt gives the band
     * the first source's unit, so only the sources tell; a side without a unit says nothing */
    const char *unit = GDALGetRasterUnitType(vb), *src_unit = GDALGetRasterUnitType(sb);
    if (unit && src_unit && *unit && *src_unit && !wc_units_same(unit, src_unit) && f->unit++ == 0)
        wc_warn("%s: band %d (%s) of %s is in %s, but its source %s (band %d) says %s: a tile "
                "in another unit? GDAL reads its values as they are, so that ground gets "
                "another scale; convert the tile to %s (gdal_calc.py) and set its unit "
                "(gdal_edit.py -units)",
                mosaic, b, *want ? want : "undescribed", path, unit, file, sband, src_unit, unit);
}

/* `wkt` parsed into `s` without its vertical part: a compound CRS (a DEM's EPSG:32611+5703,
 * UTM with NAVD88 heights) places a geotransform's pixels where its horizontal CRS does. */
static int parse_horizontal(OGRSpatialReferenceH s, const char *wkt) {
    if (OSRSetFromUserInput(s, wkt) != OGRERR_NONE) return 0;
    if (OSRIsCompound(s)) OSRStripVertical(s);
    return 1;
}

/* Whether two CRSs (WKT) place a geotransform's pixels on the same ground: 1 for the same
 * text, the same CRS in other words (an .img or a GeoTIFF of another writer names its datum and
 * projection otherwise; GDAL's gdalbuildvrt takes them for one), or the same but for a
 * vertical CRS, which moves no pixel; 0 for two others; -1 when either is missing or does not
 * parse (nothing to compare). */
static int compare_place_crs(const char *a, const char *b) {
    if (strcmp(a, b) == 0) return *a ? 1 : -1;
    if (!*a || !*b) return -1;
    const char *opts[] = {"IGNORE_DATA_AXIS_TO_SRS_AXIS_MAPPING=YES",
                          "CRITERION=EQUIVALENT_EXCEPT_AXIS_ORDER_GEOGCRS", NULL};
    CPLPushErrorHandler(CPLQuietErrorHandler);
    OGRSpatialReferenceH sa = OSRNewSpatialReference(NULL), sb = OSRNewSpatialReference(NULL);
    const int parsed = parse_horizontal(sa, a) && parse_horizontal(sb, b);
    const int same = parsed ? OSRIsSameEx(sa, sb, opts) != 0 : -1;
    OSRDestroySpatialReference(sa), OSRDestroySpatialReference(sb);
    CPLPopErrorHandler();
    return same;
}

/* The CRSs (WKT) place pixels alike (compare_place_crs); so do two without a CRS. */
static int same_place_crs(const char *a, const char *b) {
    return strcmp(a, b) == 0 || compare_place_crs(a, b) == 1;
}

int wc_raster_crs_same_place(const char *a, const char *b) {
    return compare_place_crs(a, b);
}

/* A source that changed since the VRT was built (a tile cropped, shifted or written again on
 * another grid): GDAL reads the rectangle the VRT names, so a smaller source leaves part of it
 * without data (0 where the band has no nodata value: refused when `holes_are_data`), and a
 * moved one puts its pixels where it no longer lies (compared where both are north-up in one
 * CRS, by the georeferencing of the source's first read pixel, to half a pixel). */
static void check_source_extent(const char *mosaic, const char *path, GDALDatasetH vrt,
                                GDALDatasetH src, const char *file, const char *xml,
                                int holes_are_data, source_findings *f) {
    double sr[4], dr[4], vgt[6], sgt[6];
    if (!src || !source_rect(xml, "SrcRect", sr) || !source_rect(xml, "DstRect", dr)) return;
    const int sw = GDALGetRasterXSize(src), sh = GDALGetRasterYSize(src);
    if (sr[0] + sr[2] > sw + 1e-6 || sr[1] + sr[3] > sh + 1e-6) {
        if (holes_are_data && f->refused++ == 0)
            wc_error("%s: its source %s is %dx%d pixels, but %s reads %gx%g of it from pixel "
                     "%g, %g: the source changed since the mosaic was built? GDAL reads the "
                     "rest of that rectangle as 0, and a band of the mosaic has no nodata value "
                     "to mark it, so it would be taken for data; build the mosaic again "
                     "(gdalbuildvrt)",
                     mosaic, file, sw, sh, path, sr[2], sr[3], sr[0], sr[1]);
        else if (!holes_are_data && f->cut++ == 0)
            wc_warn("%s: its source %s is %dx%d pixels, but %s reads %gx%g of it from pixel "
                    "%g, %g: the source changed since the mosaic was built? The rest of that "
                    "rectangle is read as nodata; build the mosaic again (gdalbuildvrt)",
                    mosaic, file, sw, sh, path, sr[2], sr[3], sr[0], sr[1]);
        return;
    }
    if (GDALGetGeoTransform(vrt, vgt) != CE_None || GDALGetGeoTransform(src, sgt) != CE_None ||
        !wc_gt_axis_aligned(vgt) || !wc_gt_axis_aligned(sgt) || vgt[1] == 0 || vgt[5] == 0)
        return;
    const char *vrt_crs = GDALGetProjectionRef(vrt), *src_crs = GDALGetProjectionRef(src);
    if (!vrt_crs || !src_crs || !same_place_crs(vrt_crs, src_crs)) return; /* warned elsewhere */
    const double dx = (sgt[0] + sr[0] * sgt[1] - (vgt[0] + dr[0] * vgt[1])) / vgt[1];
    const double dy = (sgt[3] + sr[1] * sgt[5] - (vgt[3] + dr[1] * vgt[5])) / vgt[5];
    if ((fabs(dx) > 0.5 || fabs(dy) > 0.5) && f->moved++ == 0)
        wc_warn("%s: its source %s lies %.6g x %.6g pixels from where %s places it, by its own "
                "georeferencing: the source changed since the mosaic was built? GDAL reads it "
                "where the mosaic says, so its ground is misplaced; build the mosaic again "
                "(gdalbuildvrt)",
                mosaic, file, round(dx * 10) / 10 + 0.0, round(dy * 10) / 10 + 0.0, path);
}

static int compare_paths(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Why GDAL cannot read `name`, a VRT source named by what only GDAL resolves, into why; 0 when
 * it can (or when only GDAL could tell: /vsicurl/ and other remote names are left to it). A
 * name inside a local archive is looked up (VSIStatL reads the archive's directory); a
 * connection string (GPKG:tiles.gpkg:layer) is opened, since its table may be gone too. */
static int named_source_unreadable(const char *name, char *why, size_t size) {
    static const char *const archives[] = {"/vsizip/", "/vsitar/", "/vsigzip/", "/vsi7z/",
                                           "/vsirar/"};
    struct stat st_file; /* a file whose name only looks like a connection string (a:b.tif) */
    if (strncmp(name, "/vsi", 4) != 0 && stat(name, &st_file) == 0) return 0;
    if (strncmp(name, "/vsi", 4) == 0) {
        int local = 0;
        for (size_t k = 0; k < sizeof archives / sizeof archives[0]; k++)
            local |= strncmp(name, archives[k], strlen(archives[k])) == 0;
        VSIStatBufL st;
        if (!local || VSIStatL(name, &st) == 0) return 0;
        snprintf(why, size, "does not exist");
        return 1;
    }
    CPLPushErrorHandler(CPLQuietErrorHandler);
    CPLErrorReset();
    GDALDatasetH ds = GDALOpenEx(name, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    char gdal_why[300];
    snprintf(gdal_why, sizeof gdal_why, "%s", CPLGetLastErrorMsg());
    CPLPopErrorHandler();
    if (ds) {
        GDALClose(ds);
        return 0;
    }
    size_t at, len;
    if (wc_file_behind(name, &at, &len))
        snprintf(why, size, "cannot be opened (%.*s exists: %s)", (int)len, name + at,
                 *gdal_why ? gdal_why : "GDAL gives no reason");
    else
        snprintf(why, size, "does not exist%s",
                 !strstr(name, ":/") && !strstr(name, ":\"/")
                     ? " (a relative path in a connection string is taken from the current "
                       "directory, not from the VRT's)"
                     : "");
    return 1;
}

/* Whether a source of the VRT vrt (at path) cannot be read, after an error naming the first:
 * GDAL finds such a source only when it reads its pixels, hours into a run, and leaves a file
 * that does not exist out of the mosaic's file list, so no other check sees it. Every source of
 * every band; a file in `listed` (sorted: the files GDAL found) is not looked up, so a mosaic
 * of existing tiles costs no file-system call; a source named by what only GDAL resolves
 * (GPKG:f.gpkg:table) is opened, once per name. */
static int missing_source(const char *mosaic, const char *path, GDALDatasetH vrt,
                          char *const *listed, size_t nlisted) {
    char **named_ok = NULL; /* the GDAL-named sources found readable */
    int missing = 0;
    for (int b = 1; b <= GDALGetRasterCount(vrt) && !missing; b++) {
        char **md = GDALGetMetadata(GDALGetRasterBand(vrt, b), "vrt_sources");
        for (int i = 0; md && md[i] && !missing; i++) {
            int sband = 0;
            char *file = source_file_and_band(path, md[i], &sband);
            char why[600] = "does not exist";
            VSIStatBufL st;
            /* GDAL forms its path in a buffer of WC_GDAL_PATH_BUFFER bytes: past it, the
             * source's path is "", which no check below would tell from a missing file */
            const size_t resolved = relative_source_length(path, md[i]);
            if (resolved >= WC_GDAL_PATH_BUFFER) {
                char *name = source_name(md[i]);
                wc_error("%s: its source %s (band %d of %s) is named relative to the VRT, and "
                         "the path it makes is %zu bytes long: GDAL takes paths shorter than %d "
                         "bytes and would not find it; give the mosaic by a relative path from "
                         "a directory nearer it (cd there first), or move the files",
                         mosaic, name, b, path, resolved, WC_GDAL_PATH_BUFFER);
                free(name);
                missing = 1;
            } else if (!file || CSLFindStringCaseSensitive(named_ok, file) >= 0) {
            } else if (wc_gdal_name(file)) {
                missing = named_source_unreadable(file, why, sizeof why);
                if (!missing) named_ok = CSLAddString(named_ok, file);
            } else {
                missing = !bsearch(&file, listed, nlisted, sizeof *listed, compare_paths) &&
                          VSIStatL(file, &st) != 0;
            }
            if (missing && resolved < WC_GDAL_PATH_BUFFER)
                wc_error("%s: its source %s (band %d of %s) %s: GDAL would fail when it reads "
                         "that part of the mosaic; restore the file or build the mosaic again",
                         mosaic, file, b, path, why);
            free(file);
        }
    }
    CSLDestroy(named_ok);
    return missing;
}

/* The sources of the VRT `path` (one of a mosaic's, perhaps nested) against the VRT's bands:
 * missing_source, check_source_band and check_source_extent. Each source file is opened once,
 * for all the bands that read it; with more than MAX sources, MAX spread over them (a mosaic
 * of tiles from one producer has one band order, and thousands of headers on a parallel file
 * system take long). */
static void check_source_files(const char *mosaic, const char *path, int holes_are_data,
                               char *const *listed, size_t nlisted, source_findings *f) {
    enum { MAX = 500 };
    CPLPushErrorHandler(CPLQuietErrorHandler);
    GDALDatasetH vrt = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    CPLPopErrorHandler();
    if (!vrt) return;
    if (!f->missing && missing_source(mosaic, path, vrt, listed, nlisted)) f->missing = 1;
    const int nb = GDALGetRasterCount(vrt);
    /* each band's sources as XML, asked for once: GDAL serializes all of a band's sources on
     * every call (asked per source and band, 256 tiles of 13 bands took 8 s) */
    char ***sources = WC_CALLOC((size_t)nb + 1, sizeof(char **));
    for (int b = 1; b <= nb; b++)
        sources[b - 1] = CSLDuplicate(GDALGetMetadata(GDALGetRasterBand(vrt, b), "vrt_sources"));
    mosaic_band_nodata *fill = WC_CALLOC((size_t)nb + 1, sizeof *fill);
    for (int b = 1; b <= nb; b++) {
        GDALRasterBandH vb = GDALGetRasterBand(vrt, b);
        fill[b - 1].nodata = GDALGetRasterNoDataValue(vb, &fill[b - 1].has_nodata);
        const int flags = GDALGetMaskFlags(vb);
        fill[b - 1].all_valid = (flags & GMF_ALL_VALID) || (flags == GMF_NODATA);
    }
    read_declared_nodata(mosaic, path, vrt, fill, nb, f);
    GDALDataType *first_type = WC_CALLOC((size_t)nb + 1, sizeof *first_type); /* GDT_Unknown */
    char **first_file = WC_CALLOC((size_t)nb + 1, sizeof *first_file);
    /* rounded up: n / MAX checked up to 999 of 999 sources (512 of a 1,024-tile mosaic) */
    const int n = nb > 0 ? CSLCount(sources[0]) : 0, stride = n > MAX ? (n + MAX - 1) / MAX : 1;
    for (int i = 0; i < n; i += stride) {
        GDALDatasetH src = NULL;
        char *open_file = NULL;
        for (int b = 1; b <= nb; b++) {
            GDALRasterBandH vb = GDALGetRasterBand(vrt, b);
            char **md = sources[b - 1];
            int sband = 0;
            char *file = i < CSLCount(md) ? source_file_and_band(path, md[i], &sband) : NULL;
            if (!file || wc_special_file_kind(file)) {
                free(file);
                continue;
            }
            if (!open_file || strcmp(open_file, file) != 0) {
                if (src) GDALClose(src);
                CPLPushErrorHandler(CPLQuietErrorHandler);
                src = GDALOpenEx(file, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
                CPLPopErrorHandler();
                free(open_file);
                open_file = wc_strdup(file);
                /* one source file is one extent, whichever band reads it */
                check_source_extent(mosaic, path, vrt, src, file, md[i], holes_are_data, f);
            }
            check_source_band(mosaic, path, b, vb, src, file, sband, md[i], &first_type[b - 1],
                              &first_file[b - 1], f);
            check_source_nodata(mosaic, path, b, &fill[b - 1], src, file, sband, md[i], f);
            free(file);
        }
        if (src) GDALClose(src);
        free(open_file);
    }
    for (int b = 0; b < nb; b++) CSLDestroy(sources[b]), free(first_file[b]);
    free(sources), free(first_type), free(first_file);
    free(fill);
    GDALClose(vrt);
}

/* A source of the mosaic that GDAL would wait on when it reads its pixels (a pipe, a device,
 * standard input): the run would hang in the middle of planning, deaf to a stop signal (the
 * process is blocked in open()). Every source is checked (a stat each). */
static int refuse_waiting_sources(const wc_raster *r, char *const *files) {
    for (int i = 1; files[i]; i++) {
        const char *kind = wc_special_file_kind(files[i]);
        if (!kind) continue;
        wc_error("%s: its source %s is %s, not a file GDAL can read (it would wait on it, or "
                 "read it without end)",
                 r->path, files[i], kind);
        return WC_ERR;
    }
    return WC_OK;
}

/* An integer band whose nodata value its type cannot hold (-1 in a Byte band, 2.5 in an Int16
 * one, as GDAL lets them be declared) has no nodata pixel: the pixels meant as nodata hold
 * another value, taken as data. */
static void warn_impossible_nodata(const wc_raster *r) {
    static const double lo[] = {0, 0, -32768, 0, -2147483648.0};
    static const double hi[] = {255, 65535, 32767, 4294967295.0, 2147483647.0};
    for (int i = 0; i < r->nbands; i++) {
        const wc_band *b = &r->bands[i];
        if (!b->has_nodata || b->masked || b->type >= WC_DT_FLOAT32) continue;
        const double v = b->nodata;
        if (v == floor(v) && v >= lo[b->type] && v <= hi[b->type]) continue;
        wc_warn("%s, band %d (%s): its nodata value %.17g cannot occur in a %s band, so no pixel "
                "is nodata: the pixels meant as nodata hold another value (GDAL's fill is %g), "
                "taken as data; declare a value the band can hold (gdal_edit.py -a_nodata)",
                r->path, i + 1, b->name, v, wc_dtype_name(b->type),
                isfinite(v) ? fmin(fmax(round(v), lo[b->type]), hi[b->type]) : 0.0);
    }
}

void wc_raster_warn_unplaced(const wc_raster *r, const char *consequence) {
    if (r->has_gt) return;
    const int gcps = r->gcps;
    if (gcps > 0)
        wc_warn("%s is placed by %d GCPs and has no geotransform: %s (warp the raster first, "
                "gdalwarp, to place it)",
                r->path, gcps, consequence);
    else
        wc_warn("%s has no georeferencing (no geotransform): %s (gdal_edit.py -a_ullr -a_srs "
                "georeferences it)",
                r->path, consequence);
}

/* Which of a mosaic's files (files[0] the mosaic itself) are read through a warped VRT
 * (gdalwarp -of VRT) within it, the mosaic included: such a VRT reprojects its sources, so their
 * CRS is not the mosaic's on purpose. An array of nfiles flags (caller frees). */
static char *mark_behind_warps(char *const *files, int nfiles) {
    char *behind = WC_CALLOC((size_t)nfiles + 1, 1);
    for (int i = 0; i < nfiles; i++) {
        if (wc_special_file_kind(files[i]) || vrt_kind_of(files[i]) != VRT_WARPED) continue;
        char **its = wc_gdal_file_list(files[i]);
        for (int k = 1; its && its[k]; k++)
            for (int j = 0; j < nfiles; j++)
                if (strcmp(files[j], its[k]) == 0) behind[j] = 1;
        wc_strv_free(its);
    }
    return behind;
}

int wc_raster_check_sources(wc_raster *r) {
    warn_impossible_nodata(r);
    GDALDriverH drv = GDALGetDatasetDriver((GDALDatasetH)r->ds);
    if (!drv || strcmp(GDALGetDriverShortName(drv), "VRT") != 0) return WC_OK;
    char *const *files = wc_raster_files(r);
    if (refuse_waiting_sources(r, files) != WC_OK) return WC_ERR;
    /* every source of a mosaic of up to MAX_CRS_CHECKS, else that many spread over it (each is
     * opened: thousands of headers on a parallel file system take long) */
    enum { MAX_CRS_CHECKS = 2000 };
    int nfiles = 0, other = 0, checked = 0, resampled[2] = {0, 0}, status = WC_OK;
    while (files[nfiles]) nfiles++;
    char *behind_warp = mark_behind_warps(files, nfiles);
    /* rounded up: nfiles / MAX_CRS_CHECKS checked every file of a mosaic of up to twice as
     * many (3,072 of 3,072 files, 6 s at 2 ms a header, where 2,000 were meant) */
    const int sources = nfiles - 1;
    const int stride =
        sources > MAX_CRS_CHECKS ? (sources + MAX_CRS_CHECKS - 1) / MAX_CRS_CHECKS : 1;
    for (int i = 1; i < nfiles; i += stride) {
        if (wc_special_file_kind(files[i])) continue;
        checked++;
        CPLPushErrorHandler(CPLQuietErrorHandler);
        GDALDatasetH s = GDALOpenEx(files[i], GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
        const char *wkt = s ? GDALGetProjectionRef(s) : NULL;
        const int differs = !behind_warp[i] && wkt && compare_place_crs(r->wkt, wkt) == 0;
        CPLPopErrorHandler();
        /* a VRT declares signed bytes Byte (gdalbuildvrt does), and GDAL then reads -1 as 255 */
        for (int b = 1; s && status == WC_OK && b <= GDALGetRasterCount(s); b++)
            if (signed_bytes(GDALGetRasterBand(s, b))) {
                wc_error("%s: its source %s, band %d, holds signed bytes (PIXELTYPE=SIGNEDBYTE), "
                         "which GDAL reads through the mosaic as unsigned (-1 as 255): convert "
                         "the sources first (gdal_translate -ot Int16) and build the mosaic again",
                         r->path, files[i], b);
                status = WC_ERR;
            }
        if (differs && other++ == 0) {
            char a[128], b[128];
            wc_raster_crs_describe(wkt, a, sizeof a);
            wc_raster_crs_describe(r->wkt, b, sizeof b);
            wc_warn("%s: its source %s is in %s, the mosaic in %s: GDAL places that source's "
                    "pixels as if they were in %s, so they lie on the wrong ground (a VRT built "
                    "with -allow_projection_difference); reproject it first (gdalwarp -t_srs)",
                    r->path, files[i], a, b, b);
        }
        if (s) GDALClose(s);
    }
    /* a hole in the mosaic reads as data in a band with neither nodata nor a mask */
    int holes_are_data = 0;
    for (int b = 0; b < r->nbands; b++)
        holes_are_data |= !r->bands[b].has_nodata && !r->bands[b].masked;
    source_findings found = {0};
    char **listed = WC_ALLOC(sizeof(char *) * (size_t)(nfiles + 1));
    memcpy(listed, files, sizeof(char *) * (size_t)nfiles);
    qsort(listed, (size_t)nfiles, sizeof *listed, compare_paths);
    for (int i = 0; i < nfiles; i++) /* the mosaic, and the VRTs within it */
        if ((i == 0 || is_vrt_file(files[i])) && !wc_special_file_kind(files[i])) {
            check_resampled_sources(r->path, files[i], resampled);
            check_source_files(r->path, files[i], holes_are_data, listed, (size_t)nfiles, &found);
        }
    free(listed);
    if (found.refused || found.missing || found.filled) status = WC_ERR;
    if (found.passed > 1)
        wc_warn("%s: %d of its sources declare a nodata value it reads as data (counted per band "
                "and source)",
                r->path, found.passed);
    if (other > 1 && stride == 1)
        wc_warn("%s: %d of its sources are in another CRS than the mosaic", r->path, other);
    else if (other > 1)
        wc_warn("%s: %d of the %d of its %d files checked (one in every %d) are in another CRS "
                "than the mosaic",
                r->path, other, checked, sources, stride);
    if (resampled[0] > 1)
        wc_warn("%s: %d of its sources (counted per band) are resampled onto its grid", r->path,
                resampled[0]);
    if (resampled[1] > 1)
        wc_warn("%s: %d of its sources (counted per band) lie off its pixel grid", r->path,
                resampled[1]);
    if (found.unit > 1)
        wc_warn("%s: %d of its bands read a source band of another unit (counted per band and "
                "source)",
                r->path, found.unit);
    if (found.reordered > 1)
        wc_warn("%s: %d of its bands read a source band described otherwise (counted per band "
                "and source)",
                r->path, found.reordered);
    if (found.packed > 1)
        wc_warn("%s: %d of its bands read a source packed otherwise (counted per band and "
                "source)",
                r->path, found.packed);
    if (found.cut > 1)
        wc_warn("%s: %d of its sources are smaller than the mosaic reads", r->path, found.cut);
    if (found.moved > 1)
        wc_warn("%s: %d of its sources lie elsewhere than the mosaic places them", r->path,
                found.moved);
    free(behind_warp);
    return status;
}

const char *wc_raster_renamed_note(const wc_raster *r, const char *name) {
    for (int i = 0; i < r->nbands; i++)
        if (r->bands[i].renamed && strcmp(r->bands[i].name, name) == 0)
            return " (as wildcpu reads the descriptions: ',' ';' '=' and control characters "
                   "become '_', and a description of 64 bytes or more is cut)";
    return "";
}

void wc_raster_pixel_to_map(const double gt[6], double col, double row, double *x, double *y) {
    *x = gt[0] + col * gt[1] + row * gt[2];
    *y = gt[3] + col * gt[4] + row * gt[5];
}

int wc_raster_map_to_pixel(const double gt[6], double x, double y, double *col, double *row) {
    double det = gt[1] * gt[5] - gt[2] * gt[4];
    if (det == 0) return WC_ERR;
    double dx = x - gt[0], dy = y - gt[3];
    *col = (gt[5] * dx - gt[2] * dy) / det;
    *row = (-gt[4] * dx + gt[1] * dy) / det;
    return WC_OK;
}

int wc_raster_same_grid(const wc_raster *a, const wc_raster *b) {
    if (a->width != b->width || a->height != b->height) return 0;
    double px = fmax(fabs(a->gt[1]), fabs(a->gt[5]));
    for (int i = 0; i < 6; i++)
        if (fabs(a->gt[i] - b->gt[i]) > 1e-9 * fmax(px, 1e-12) * (i == 0 || i == 3 ? 1 : 1e-3))
            return 0;
    return same_place_crs(a->wkt, b->wkt);
}

void wc_raster_crs_name(const char *wkt, char *buf, size_t size) {
    if (!wkt || !*wkt) {
        snprintf(buf, size, "no CRS");
        return;
    }
    OGRSpatialReferenceH s = OSRNewSpatialReference(wkt);
    const char *auth = s ? OSRGetAuthorityName(s, NULL) : NULL;
    const char *code = s ? OSRGetAuthorityCode(s, NULL) : NULL;
    if (auth && code)
        snprintf(buf, size, "%s:%s", auth, code);
    else if (s && OSRGetName(s))
        snprintf(buf, size, "%s", OSRGetName(s));
    else
        snprintf(buf, size, "unnamed CRS");
    OSRDestroySpatialReference(s);
}

void wc_raster_crs_describe(const char *wkt, char *buf, size_t size) {
    wc_raster_crs_name(wkt, buf, size);
    if (strcmp(buf, "unknown") != 0) return;
    /* a CRS made from a PROJ string is named "unknown": its definition says more */
    OGRSpatialReferenceH s = OSRNewSpatialReference(wkt);
    char *proj4 = NULL;
    if (s && OSRExportToProj4(s, &proj4) == OGRERR_NONE && proj4 && *proj4) {
        snprintf(buf, size, "%s", proj4);
        for (size_t n = strlen(buf); n > 0 && buf[n - 1] == ' ';) buf[--n] = '\0';
    }
    CPLFree(proj4);
    OSRDestroySpatialReference(s);
}

int wc_raster_crs_is_geographic(const char *wkt) {
    if (!wkt || !*wkt) return 0;
    OGRSpatialReferenceH s = OSRNewSpatialReference(wkt);
    const int geographic = s && OSRIsGeographic(s);
    OSRDestroySpatialReference(s);
    return geographic;
}

double wc_raster_crs_metres_per_unit(const char *crs) {
    if (!crs || !*crs || !strcmp(crs, "no CRS")) return NAN;
    OGRSpatialReferenceH s = OSRNewSpatialReference(NULL);
    double per_unit = NAN;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    if (s && OSRSetFromUserInput(s, crs) == OGRERR_NONE) {
        if (OSRIsGeographic(s))
            per_unit = 0;
        else if (OSRIsProjected(s))
            per_unit = OSRGetLinearUnits(s, NULL);
    }
    CPLPopErrorHandler();
    OSRDestroySpatialReference(s);
    return per_unit > 0 || per_unit == 0 ? per_unit : NAN;
}

/* The point (longitude, latitude in degrees) on an ellipsoid (semi-major axis a, squared
 * eccentricity e2) in earth-centred cartesian metres. */
static void ellipsoid_xyz(double a, double e2, const double lonlat[2], double xyz[3]) {
    const double rad = M_PI / 180;
    const double lam = lonlat[0] * rad, phi = lonlat[1] * rad;
    const double n = a / sqrt(1 - e2 * sin(phi) * sin(phi));
    xyz[0] = n * cos(phi) * cos(lam), xyz[1] = n * cos(phi) * sin(lam);
    xyz[2] = n * (1 - e2) * sin(phi);
}

/* The ground distance of a small step between two points of one ellipsoid (degrees): the chord
 * between them, which a step of one pixel equals to a few parts in a billion. Exact at a pole,
 * where a step in longitude and latitude (a first-order formula at the mean latitude) is not:
 * a raster centred on the pole got pixels of 39 x 57 m for 31 x 31. */
static double ellipsoid_step_metres(double a, double e2, const double from[2], const double to[2]) {
    double p[3], q[3];
    ellipsoid_xyz(a, e2, from, p);
    ellipsoid_xyz(a, e2, to, q);
    return sqrt((p[0] - q[0]) * (p[0] - q[0]) + (p[1] - q[1]) * (p[1] - q[1]) +
                (p[2] - q[2]) * (p[2] - q[2]));
}

int wc_raster_ground_pixel_size(const char *crs, const double gt[6], int width, int height,
                                double *px_width_m, double *px_height_m) {
    if (!crs || !*crs || !strcmp(crs, "no CRS")) return WC_ERR;
    OGRSpatialReferenceH s = OSRNewSpatialReference(NULL), geo = NULL;
    OGRCoordinateTransformationH to_geo = NULL;
    int rc = WC_ERR;
    CPLPushErrorHandler(CPLQuietErrorHandler);
    if (s && OSRSetFromUserInput(s, crs) == OGRERR_NONE &&
        (OSRIsProjected(s) || OSRIsGeographic(s)))
        geo = OSRCloneGeogCS(s);
    if (geo) {
        OSRSetAxisMappingStrategy(s, OAMS_TRADITIONAL_GIS_ORDER);
        OSRSetAxisMappingStrategy(geo, OAMS_TRADITIONAL_GIS_ORDER); /* longitude, latitude */
        to_geo = OCTNewCoordinateTransformation(s, geo);
    }
    OGRErr err = OGRERR_NONE;
    const double a = geo ? OSRGetSemiMajor(geo, &err) : 0,
                 invf = geo ? OSRGetInvFlattening(geo, NULL) : 0;
    if (to_geo && err == OGRERR_NONE && a > 0) {
        /* the raster's centre, one column and one row on */
        const double c = 0.5 * width, r = 0.5 * height;
        double x[3] = {gt[0] + c * gt[1] + r * gt[2], 0, 0},
               y[3] = {gt[3] + c * gt[4] + r * gt[5], 0, 0};
        x[1] = x[0] + gt[1], y[1] = y[0] + gt[4];
        x[2] = x[0] + gt[2], y[2] = y[0] + gt[5];
        int ok[3] = {0, 0, 0};
        if (OCTTransformEx(to_geo, 3, x, y, NULL, ok) && ok[0] && ok[1] && ok[2]) {
            const double f = invf > 0 ? 1 / invf : 0, e2 = f * (2 - f);
            /* the geographic CRS's angles in degrees (grads, say, in EPSG:4807) */
            const double deg = OSRGetAngularUnits(geo, NULL) / (M_PI / 180);
            const double p0[2] = {x[0] * deg, y[0] * deg}, p1[2] = {x[1] * deg, y[1] * deg},
                         p2[2] = {x[2] * deg, y[2] * deg};
            *px_width_m = ellipsoid_step_metres(a, e2, p0, p1);
            *px_height_m = ellipsoid_step_metres(a, e2, p0, p2);
            const int sized = isfinite(*px_width_m) && isfinite(*px_height_m) && *px_width_m > 0 &&
                              *px_height_m > 0;
            rc = sized ? WC_OK : WC_ERR;
        }
    }
    CPLPopErrorHandler();
    if (to_geo) OCTDestroyCoordinateTransformation(to_geo);
    OSRDestroySpatialReference(geo);
    OSRDestroySpatialReference(s);
    return rc;
}

void wc_raster_describe_grid(const wc_raster *r, char *buf, size_t size) {
    /* every term in full: the message sets two grids that differ side by side, and 6 digits
     * wrote an origin 5 m off (4930005 against 4930000) and a pixel of 30.00001 alike */
    char crs[128], t[6][32], turn[96] = "";
    wc_raster_crs_describe(r->wkt, crs, sizeof crs);
    for (int i = 0; i < 6; i++) wc_fmt_exact(t[i], sizeof t[i], r->gt[i]);
    if (r->gt[2] != 0 || r->gt[4] != 0)
        snprintf(turn, sizeof turn, ", rotation terms (%s, %s)", t[2], t[4]);
    snprintf(buf, size, "%dx%d px of %sx%s, origin (%s, %s)%s, %s", r->width, r->height, t[1], t[5],
             t[0], t[3], turn, crs);
}

/* What path (through GDAL's virtual file systems, so also inside an archive) holds: a VRT (its
 * text starts with <VRTDataset), a warped one (gdalwarp -of VRT: subClass="VRTWarpedDataset" in
 * that element), or neither. GeoTIFF tiles, most of a mosaic's files, are not read. */
static enum vrt_kind vrt_kind_of(const char *path) {
    const char *dot = strrchr(path, '.');
    if (dot && (EQUAL(dot, ".tif") || EQUAL(dot, ".tiff"))) return NOT_VRT;
    VSILFILE *f = VSIFOpenL(path, "rb");
    if (!f) return NOT_VRT;
    char head[512] = "";
    const size_t n = VSIFReadL(head, 1, sizeof head - 1, f);
    VSIFCloseL(f);
    head[n] = '\0';
    const char *p = head;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (strncmp(p, "<VRTDataset", 11) != 0) return NOT_VRT;
    char *end = strchr(p, '>');
    if (end) *end = '\0';
    return strstr(p, "subClass=\"VRTWarpedDataset\"") ? VRT_WARPED : VRT_MOSAIC;
}

static int is_vrt_file(const char *path) {
    return vrt_kind_of(path) != NOT_VRT;
}

/* The regular file a GDAL name reads when it is not one itself (wc_file_behind: an archive
 * holding it, the GeoPackage of a GPKG:f.gpkg:table). NULL for none. */
static char *local_file_of(const char *name) {
    char *p = wc_file_behind_dup(name);
    struct stat st;
    if (p && (stat(p, &st) != 0 || !S_ISREG(st.st_mode))) free(p), p = NULL;
    return p;
}

static void list_append(char ***out, size_t *n, char *path) {
    char **more = realloc(*out, sizeof(char *) * (*n + 2));
    if (!more) wc_fatal("out of memory listing the files of %s", path);
    *out = more;
    (*out)[(*n)++] = path;
    (*out)[*n] = NULL;
}

/* A file's identity for "listed already": device and inode when it is a local file (so
 * d/sub/../A.vrt is d/A.vrt), else its path as written. */
static char *file_key(const char *path) {
    struct stat st;
    if (strncmp(path, "/vsi", 4) != 0 && stat(path, &st) == 0)
        return wc_strdup(
            CPLSPrintf("%llu:%llu", (unsigned long long)st.st_dev, (unsigned long long)st.st_ino));
    return wc_strdup(path);
}

/* A VRT's sources named by what only GDAL resolves (GPKG:f.gpkg:table, NETCDF:"f.nc":var,
 * /vsizip/...), which GDAL's file list leaves out: appended to *out (n entries) once each, so
 * that what is checked per source, agreed between ranks and hashed for derived labels covers
 * them, and the files behind them are listed in turn. */
static void list_named_sources(const char *path, GDALDatasetH vrt, char ***out, size_t *n) {
    for (int b = 1; b <= GDALGetRasterCount(vrt); b++) {
        char **md = GDALGetMetadata(GDALGetRasterBand(vrt, b), "vrt_sources");
        for (int k = 0; md && md[k]; k++) {
            int sband = 0;
            char *name = source_file_and_band(path, md[k], &sband);
            int listed = !name || !wc_gdal_name(name);
            for (size_t i = 0; i < *n && !listed; i++) listed = strcmp((*out)[i], name) == 0;
            if (listed)
                free(name);
            else
                list_append(out, n, name);
        }
    }
}

/* VRTs listed at most: a guard against a chain GDAL would only refuse when it reads a pixel. */
#define MAX_VRTS_LISTED 100000

char **wc_gdal_file_list(const char *path) {
    wc_raster_init();
    size_t n = 0;
    char **out = WC_CALLOC(2, sizeof(char *));
    list_append(&out, &n, wc_strdup(path));
    /* A VRT may name other VRTs (a mosaic of mosaics), whose files GDAL does not list: each one
     * found is listed in turn, once (two VRTs naming each other form a cycle, which GDAL only
     * refuses when it reads pixels); an archive holding many of them is listed once. */
    char **seen = NULL; /* file_key of each VRT expanded, and each archive listed */
    int nvrt = 0;
    for (size_t i = 0; i < n; i++) {
        char *archive = wc_gdal_name(out[i]) ? local_file_of(out[i]) : NULL;
        if (archive) {
            char *key = file_key(archive);
            if (CSLFindStringCaseSensitive(seen, key) < 0) {
                seen = CSLAddString(seen, key);
                list_append(&out, &n, archive);
            } else {
                free(archive);
            }
            free(key);
        }
        /* a pipe or standard input: opening it would wait */
        if (wc_special_file_kind(out[i])) continue;
        if (i > 0 && !is_vrt_file(out[i])) continue;
        char *key = file_key(out[i]);
        const int again = CSLFindStringCaseSensitive(seen, key) >= 0;
        if (!again) seen = CSLAddString(seen, key);
        free(key);
        if (again || ++nvrt > MAX_VRTS_LISTED) continue;
        CPLPushErrorHandler(CPLQuietErrorHandler);
        GDALDatasetH ds = GDALOpenEx(out[i], GDAL_OF_RASTER | GDAL_OF_VECTOR | GDAL_OF_READONLY,
                                     NULL, NULL, NULL);
        CPLPopErrorHandler();
        char **files = ds ? GDALGetFileList(ds) : NULL;
        for (int k = 0; files && files[k]; k++)
            if (strcmp(files[k], out[i]) != 0) list_append(&out, &n, wc_strdup(files[k]));
        CSLDestroy(files);
        if (ds && is_vrt_file(out[i])) list_named_sources(out[i], ds, &out, &n);
        if (ds) GDALClose(ds);
    }
    CSLDestroy(seen);
    return out;
}

/* v (a raster's origin in pixels of the grid) rounded to the nearest whole pixel, ties and
 * values within 1e-6 of one upward. Only differences matter: a window cut at column k of a
 * raster must get its origin + k. Rasters on half-pixel origins are common (grids defined by
 * pixel centres), and llround (ties away from zero) breaks that where v crosses zero, as does
 * any exact rounding where the window's origin, computed in floating point by whoever cut it,
 * falls a hair either side of the tie (-479943.49999999994 against -480000.5 + 57). */
static long long grid_index(double v) {
    return (long long)floor(v + 0.5 + 1e-6);
}

int wc_gt_axis_aligned(const double gt[6]) {
    return fabs(gt[2]) <= 1e-9 * hypot(gt[2], gt[5]) && fabs(gt[4]) <= 1e-9 * hypot(gt[1], gt[4]);
}

int wc_raster_global_origin(const wc_raster *r, long long *gcol, long long *grow) {
    *gcol = *grow = 0;
    if (!r->has_gt || !wc_gt_axis_aligned(r->gt) || r->gt[1] == 0 || r->gt[5] == 0) return 0;
    double c = r->gt[0] / r->gt[1], w = r->gt[3] / r->gt[5];
    if (!(fabs(c) < 1e15 && fabs(w) < 1e15)) return 0;
    *gcol = grid_index(c), *grow = grid_index(w);
    return 1;
}

int wc_pmod(long long v, int m) {
    long long r = v % m;
    return (int)(r < 0 ? r + m : r);
}
