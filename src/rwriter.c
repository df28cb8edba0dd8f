/* rwriter.c: a raster written through GDAL, published atomically once verified; see rwriter.h.
 *
 * Every GDAL call is made between wc_gdal_errors_push and _pop, so a failure that GDAL reports
 * only as a message (a full disk at GDALClose) is counted and its text named in our message.
 * The target is touched only by the final rename (and its sidecar's); until then everything
 * lives under temporary names next to it, which abort removes.
 *
 * Not here: choosing creation options or metadata (the callers know what their files are),
 * checking output paths against inputs (files.h). */
#include "wildcpu/rwriter.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cpl_error.h>
#include <cpl_string.h>
#include <gdal.h>

#include "wildcpu/files.h"
#include "wildcpu/raster.h"
#include "wildcpu/util.h"

struct wc_rwriter {
    char *target;
    char *work;      /* the working file; NULL for a MEM dataset */
    char *copy;      /* the CreateCopy that is published; NULL: the working file is */
    GDALDatasetH ds; /* the working dataset while it is open */
    int W, H;        /* GDAL's sizes: int */
    GDALDataType type;
    int has_gt;
    double gt[6];
    char *wkt;     /* the CRS set; NULL: none */
    int ngcps;     /* GCPs set */
    char *gcp_wkt; /* their CRS; NULL: none */
    char *copy_driver;
    char **copy_options;
    int (*keep_going)(void *arg);
    void (*before_publish)(void *arg);
    void *arg;
    char *progress;        /* NULL: the copy says nothing */
    wc_progress copy_time; /* of the copy, for its progress lines */
    wc_gdal_errors err;
    /* The target's directory, held open: the temporary files are removed from it even after
     * the directory was renamed (mv) while the raster was written. -1 for a MEM dataset. */
    int dir_fd;
};

/* The working dataset in messages. */
static const char *work_name(const wc_rwriter *w) {
    return w->work ? w->work : "the dataset in memory";
}

/* Why GDAL failed: its message; when it failed without one, what the file system says of the
 * target's directory (removed or renamed while the raster was written, the usual cause); then a
 * file system nearly full, and that the existing target is untouched (nothing replaces it
 * before the commit). */
static const char *gdal_why(const wc_rwriter *w) {
    char *dir = wc_dir_of(w->target);
    struct stat st;
    const char *why;
    if (w->err.failures)
        why = w->err.last;
    else if (stat(dir, &st) != 0)
        why = CPLSPrintf("GDAL gave no reason; the directory %s is gone (%s): was it removed or "
                         "renamed while the raster was written?",
                         dir, strerror(errno));
    else
        why = "GDAL gave no reason";
    /* (CPLSPrintf's ring of buffers: a result may be the argument of the next) */
    char shortage[4400];
    wc_fs_shortage(dir, shortage, sizeof shortage);
    why = CPLSPrintf("%s%s", why, shortage);
    if (stat(w->target, &st) == 0)
        why = CPLSPrintf("%s; the existing %s is untouched", why, w->target);
    free(dir);
    return why;
}

/* Equal as numbers (-0.0 is 0.0: GDAL may write a zero rotation term either way). */
static int same_values(const double *a, const double *b, int n) {
    for (int i = 0; i < n; i++)
        if (!(a[i] == b[i])) return 0;
    return 1;
}

static int keep_going(const wc_rwriter *w) {
    return !w->keep_going || w->keep_going(w->arg);
}

/* The test hook of a slow disk at the end: WILDCPU_TEST_SLOW_COMMIT=SECONDS waits that long
 * (or until keep_going says stop) before a verified file is published, so that tests can stop
 * a map or evaluate at that moment, deterministically. */
static void slow_commit(const wc_rwriter *w) {
    const char *s = getenv("WILDCPU_TEST_SLOW_COMMIT");
    const double secs = s ? atof(s) : 0;
    for (double waited = 0; waited < secs && waited < 600 && keep_going(w); waited += 0.05)
        usleep(50000);
}

static char *aux_path(const char *path) {
    size_t n = strlen(path) + 9;
    char *a = WC_ALLOC(n);
    snprintf(a, n, "%s.aux.xml", path);
    return a;
}

/* Removes a temporary file and its sidecar, from the directory they were created in. */
static void unlink_with_aux(const wc_rwriter *w, const char *path) {
    if (!path) return;
    const char *slash = strrchr(path, '/'), *name = slash ? slash + 1 : path;
    const int at = w->dir_fd >= 0 ? w->dir_fd : AT_FDCWD;
    char *a = aux_path(w->dir_fd >= 0 ? name : path), *shown = aux_path(path);
    wc_remove_working_file(at, w->dir_fd >= 0 ? name : path, path);
    wc_remove_working_file(at, a, shown);
    free(a);
    free(shown);
}

static void writer_free(wc_rwriter *w) {
    if (w->dir_fd >= 0) close(w->dir_fd);
    free(w->target);
    free(w->work);
    free(w->copy);
    free(w->wkt);
    free(w->gcp_wkt);
    free(w->copy_driver);
    free(w->progress);
    CSLDestroy(w->copy_options);
    free(w);
}

void wc_rwriter_abort(wc_rwriter *w) {
    if (!w) return;
    if (w->ds) {
        /* whatever GDAL says while closing a file that is about to be removed is moot */
        CPLPushErrorHandler(CPLQuietErrorHandler);
        GDALClose(w->ds);
        CPLPopErrorHandler();
        w->ds = NULL;
    }
    unlink_with_aux(w, w->work);
    unlink_with_aux(w, w->copy);
    writer_free(w);
}

/* ---- creating and describing ----------------------------------------------------------------- */

static int set_band(wc_rwriter *w, int band, const wc_rwriter_band *b) {
    const int before = w->err.failures;
    wc_gdal_errors_push(&w->err);
    GDALRasterBandH h = GDALGetRasterBand(w->ds, band);
    if (h && b->name) GDALSetDescription(h, b->name);
    if (h && b->unit) GDALSetRasterUnitType(h, b->unit);
    if (h && b->has_nodata) GDALSetRasterNoDataValue(h, b->nodata);
    if (h && b->color)
        GDALSetRasterColorInterpretation(h, GDALGetColorInterpretationByName(b->color));
    wc_gdal_errors_pop();
    if (!h || w->err.failures != before) {
        wc_error("cannot describe band %d of %s (for %s): %s", band, work_name(w), w->target,
                 h ? gdal_why(w) : "no such band");
        return WC_ERR;
    }
    return WC_OK;
}

int wc_rwriter_set_band(wc_rwriter *w, int band, const wc_rwriter_band *b) {
    return set_band(w, band, b);
}

/* The GCPs of o on the working dataset (a GCP's id and info are GDAL's own: empty). */
static void set_gcps(wc_rwriter *w, const wc_rwriter_opts *o) {
    GDAL_GCP *g = WC_CALLOC((size_t)o->ngcps, sizeof *g);
    for (int i = 0; i < o->ngcps; i++)
        g[i] = (GDAL_GCP){"",           "",           o->gcps[i].pixel, o->gcps[i].line,
                          o->gcps[i].x, o->gcps[i].y, o->gcps[i].z};
    GDALSetGCPs(w->ds, o->ngcps, g, o->gcp_wkt ? o->gcp_wkt : "");
    free(g);
    w->ngcps = o->ngcps;
    w->gcp_wkt = o->gcp_wkt && *o->gcp_wkt ? wc_strdup(o->gcp_wkt) : NULL;
}

wc_rwriter *wc_rwriter_create(const char *target, const wc_rwriter_opts *o) {
    struct stat st;
    if (stat(target, &st) == 0 && S_ISDIR(st.st_mode)) {
        wc_error("cannot write %s: it is a directory", target);
        return NULL;
    }
    const char *driver = o->driver ? o->driver : "GTiff";
    const int in_memory = strcmp(driver, "MEM") == 0;
    WC_ASSERT(!in_memory || o->copy_driver); /* a MEM dataset alone publishes nothing */
    wc_rwriter *w = WC_CALLOC(1, sizeof *w);
    w->target = wc_strdup(target);
    w->work = in_memory ? NULL : wc_temp_path(target, "tmp");
    w->copy = o->copy_driver ? wc_temp_path(target, "out") : NULL;
    w->W = o->width, w->H = o->height;
    w->type = o->nbands > 0 ? (GDALDataType)wc_dtype_to_gdal(o->type) : GDT_Unknown;
    if (o->gt) memcpy(w->gt, o->gt, sizeof w->gt), w->has_gt = 1;
    w->wkt = o->wkt && *o->wkt ? wc_strdup(o->wkt) : NULL;
    w->copy_driver = o->copy_driver ? wc_strdup(o->copy_driver) : NULL;
    w->copy_options = CSLDuplicate((char **)o->copy_options);
    w->keep_going = o->keep_going, w->before_publish = o->before_publish, w->arg = o->arg;
    w->progress = o->progress ? wc_strdup(o->progress) : NULL;
    w->dir_fd = -1;
    if (!in_memory) {
        char *dir = wc_dir_of(target);
        w->dir_fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC); /* no read right needed */
        free(dir);
    }

    wc_gdal_errors_push(&w->err);
    GDALDriverH drv = GDALGetDriverByName(driver);
    w->ds = drv ? GDALCreate(drv, w->work ? w->work : "", w->W, w->H, o->nbands, w->type,
                             (char **)o->options)
                : NULL;
    int before = w->err.failures;
    if (w->ds && o->gt) GDALSetGeoTransform(w->ds, w->gt);
    if (w->ds && o->wkt && *o->wkt) GDALSetProjection(w->ds, o->wkt);
    if (w->ds && o->ngcps > 0) set_gcps(w, o);
    const int bad = w->ds && w->err.failures != before;
    wc_gdal_errors_pop();
    if (!w->ds) {
        wc_error("cannot create %s (for %s): %s", work_name(w), target,
                 drv ? gdal_why(w) : CPLSPrintf("GDAL lacks the %s driver", driver));
    } else if (bad) {
        wc_error("cannot georeference %s (for %s): %s", work_name(w), target, gdal_why(w));
    } else {
        int rc = WC_OK;
        for (int b = 0; o->bands && b < o->nbands && rc == WC_OK; b++)
            rc = set_band(w, b + 1, &o->bands[b]);
        if (rc == WC_OK) return w;
    }
    wc_rwriter_abort(w);
    return NULL;
}

int wc_rwriter_set_metadata(wc_rwriter *w, int band, const char *key, const char *value) {
    const int before = w->err.failures;
    wc_gdal_errors_push(&w->err);
    GDALMajorObjectH h = band ? (GDALMajorObjectH)GDALGetRasterBand(w->ds, band) : w->ds;
    if (h) GDALSetMetadataItem(h, key, value, NULL);
    wc_gdal_errors_pop();
    if (!h || w->err.failures != before) {
        wc_error("cannot set the metadata item %s of %s%s (for %s): %s", key,
                 band ? CPLSPrintf("band %d of ", band) : "", work_name(w), w->target,
                 h ? gdal_why(w) : "no such band");
        return WC_ERR;
    }
    return WC_OK;
}

int wc_rwriter_set_categories(wc_rwriter *w, int band, const char *const *names) {
    const int before = w->err.failures;
    wc_gdal_errors_push(&w->err);
    GDALRasterBandH h = GDALGetRasterBand(w->ds, band);
    if (h) GDALSetRasterCategoryNames(h, (char **)names);
    wc_gdal_errors_pop();
    if (!h || w->err.failures != before) {
        wc_error("cannot set the category names of band %d of %s (for %s): %s", band, work_name(w),
                 w->target, h ? gdal_why(w) : "no such band");
        return WC_ERR;
    }
    return WC_OK;
}

int wc_rwriter_set_colors(wc_rwriter *w, int band, const unsigned char (*rgba)[4], int ncolors) {
    const int before = w->err.failures;
    wc_gdal_errors_push(&w->err);
    GDALRasterBandH h = GDALGetRasterBand(w->ds, band);
    GDALColorTableH ct = GDALCreateColorTable(GPI_RGB);
    for (int i = 0; i < ncolors; i++) {
        const GDALColorEntry e = {rgba[i][0], rgba[i][1], rgba[i][2], rgba[i][3]};
        GDALSetColorEntry(ct, i, &e);
    }
    if (h) GDALSetRasterColorTable(h, ct);
    if (h) GDALSetRasterColorInterpretation(h, GCI_PaletteIndex);
    GDALDestroyColorTable(ct);
    wc_gdal_errors_pop();
    if (!h || w->err.failures != before) {
        wc_error("cannot set the colour table of band %d of %s (for %s): %s", band, work_name(w),
                 w->target, h ? gdal_why(w) : "no such band");
        return WC_ERR;
    }
    return WC_OK;
}

/* ---- rows ------------------------------------------------------------------------------------ */

static int rows_io(wc_rwriter *w, GDALRWFlag rw, int band, int64_t y0, int64_t n, void *rows,
                   size_t line_bytes) {
    /* rows of the raster: GDAL's int sizes hold them */
    WC_ASSERT(y0 >= 0 && n > 0 && y0 + n <= w->H);
    WC_ASSERT(band >= 0 && band <= GDALGetRasterCount(w->ds));
    const int before = w->err.failures;
    wc_gdal_errors_push(&w->err);
    CPLErr e =
        band ? GDALRasterIO(GDALGetRasterBand(w->ds, band), rw, 0, (int)y0, w->W, (int)n, rows,
                            w->W, (int)n, w->type, 0, (int)line_bytes)
             : GDALDatasetRasterIO(w->ds, rw, 0, (int)y0, w->W, (int)n, rows, w->W, (int)n, w->type,
                                   GDALGetRasterCount(w->ds), NULL, 0, (int)line_bytes, 0);
    const int bad = e != CE_None || w->err.failures != before;
    wc_gdal_errors_pop();
    if (bad) {
        wc_error("%s rows %" PRId64 "-%" PRId64 " of %s of %s (for %s) failed: %s",
                 rw == GF_Write ? "writing" : "reading back", y0, y0 + n - 1,
                 band ? CPLSPrintf("band %d", band) : "every band", work_name(w), w->target,
                 gdal_why(w));
        return WC_ERR;
    }
    return WC_OK;
}

int wc_rwriter_write(wc_rwriter *w, int band, int64_t y0, int64_t n, const void *rows,
                     size_t line_bytes) {
    return rows_io(w, GF_Write, band, y0, n, (void *)rows, line_bytes);
}

int wc_rwriter_read(wc_rwriter *w, int band, int64_t y0, int64_t n, void *rows, size_t line_bytes) {
    return rows_io(w, GF_Read, band, y0, n, rows, line_bytes);
}

void *wc_rwriter_gdal(wc_rwriter *w) {
    return w->ds;
}

/* ---- closing, copying, verifying, publishing ------------------------------------------------- */

/* Closes the working file: write errors (a full disk) surface when GDAL flushes here. */
static int close_work(wc_rwriter *w) {
    const int before = w->err.failures;
    wc_gdal_errors_push(&w->err);
    GDALClose(w->ds);
    w->ds = NULL;
    wc_gdal_errors_pop();
    if (w->err.failures != before) {
        wc_error("writing %s (for %s) failed: %s", w->work, w->target, gdal_why(w));
        return WC_ERR;
    }
    return WC_OK;
}

int wc_rwriter_flush(wc_rwriter *w) {
    WC_ASSERT(w->ds);
    const int before = w->err.failures;
    wc_gdal_errors_push(&w->err);
    GDALFlushCache(w->ds); /* void in GDAL 3.6: its failures are messages */
    wc_gdal_errors_pop();
    if (w->err.failures != before) {
        wc_error("cannot write %s (for %s): %s", work_name(w), w->target, gdal_why(w));
        return WC_ERR;
    }
    return WC_OK;
}

int wc_rwriter_reopen(wc_rwriter *w) {
    WC_ASSERT(w->work && w->ds);
    if (close_work(w) != WC_OK) return WC_ERR;
    wc_gdal_errors_push(&w->err);
    w->ds = GDALOpenEx(w->work, GDAL_OF_RASTER | GDAL_OF_UPDATE, NULL, NULL, NULL);
    wc_gdal_errors_pop();
    if (!w->ds) {
        wc_error("cannot reopen %s (for %s): %s", w->work, w->target, gdal_why(w));
        return WC_ERR;
    }
    return WC_OK;
}

/* GDAL's progress callback for the copy, which can take minutes on a large map: returning FALSE
 * makes GDAL abandon it. */
static int CPL_STDCALL copy_progress(double done, const char *msg, void *arg) {
    (void)msg;
    wc_rwriter *w = arg;
    if (w->progress && done > 0 && done < 1 && wc_progress_due(&w->copy_time))
        wc_info("%s: %.0f%% copied: %.1f s, about %.0f s left", w->progress, 100 * done,
                wc_progress_elapsed(&w->copy_time), wc_progress_left(&w->copy_time, done));
    return keep_going(w);
}

/* The published file: a CreateCopy of the working dataset (closed and reopened read-only when
 * it is a file) through the copy driver. Returns WC_OK, WC_ERR or WC_RWRITER_STOPPED. */
static int copy_out(wc_rwriter *w) {
    const int before = w->err.failures;
    wc_gdal_errors_push(&w->err);
    GDALDriverH drv = GDALGetDriverByName(w->copy_driver);
    GDALDatasetH src =
        w->ds ? w->ds : GDALOpenEx(w->work, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    wc_progress_start(&w->copy_time);
    GDALDatasetH dst =
        drv && src ? GDALCreateCopy(drv, w->copy, src, FALSE, w->copy_options, copy_progress, w)
                   : NULL;
    if (dst) GDALClose(dst); /* written and flushed here: errors surface now */
    if (src && src != w->ds) GDALClose(src);
    const int bad = !drv || !src || !dst || w->err.failures != before;
    wc_gdal_errors_pop();
    if (bad && !keep_going(w)) return WC_RWRITER_STOPPED;
    if (bad) {
        wc_error("writing %s (for %s, a copy of %s) failed: %s", w->copy, w->target, work_name(w),
                 !drv ? CPLSPrintf("GDAL lacks the %s driver", w->copy_driver) : gdal_why(w));
        return WC_ERR;
    }
    return WC_OK;
}

/* What the published file must be, taken from the working dataset before it is closed. */
typedef struct shape {
    int nbands;
    GDALDataType *types; /* (nbands) */
    int *ncategories;    /* (nbands) category names set */
} shape;

static void shape_of(GDALDatasetH ds, shape *s) {
    s->nbands = GDALGetRasterCount(ds);
    const size_t n = (size_t)(s->nbands > 0 ? s->nbands : 1);
    s->types = WC_ALLOC(sizeof(GDALDataType) * n);
    s->ncategories = WC_ALLOC(sizeof(int) * n);
    for (int b = 0; b < s->nbands; b++) {
        GDALRasterBandH h = GDALGetRasterBand(ds, b + 1);
        s->types[b] = GDALGetRasterDataType(h);
        s->ncategories[b] = CSLCount(GDALGetRasterCategoryNames(h));
    }
}

/* Whether GDAL_PAM_ENABLED is off: GDAL then writes no .aux.xml sidecar, where GeoTIFF keeps
 * what its tags cannot hold (category names, some CRSs). */
static int pam_off(void) {
    const char *pam = CPLGetConfigOption("GDAL_PAM_ENABLED", NULL);
    return pam && !CPLTestBool(pam);
}

/* Category names a file lost on the way to disk: GeoTIFF keeps them only in the .aux.xml
 * sidecar, which GDAL does not write when GDAL_PAM_ENABLED is off. The raster is whole; its
 * readers (QGIS) show the values without their names, so a warning, not a failure. */
static void warn_lost_categories(const wc_rwriter *w, GDALDatasetH ds, const shape *s) {
    /* GDAL 3.6's GeoTIFF reads its sidecar once the dataset's metadata or georeferencing is
     * asked for, not for category names: without this, a map with no geotransform (placed by
     * GCPs, or nowhere) read back none and was warned about */
    GDALGetMetadata(ds, NULL);
    for (int b = 0; b < s->nbands; b++) {
        const int kept = CSLCount(GDALGetRasterCategoryNames(GDALGetRasterBand(ds, b + 1)));
        if (s->ncategories[b] == 0 || kept == s->ncategories[b]) continue;
        wc_warn("%s: the %d category names of band %d were not stored (%d read back)%s: GIS "
                "clients show the values without their names",
                w->target, s->ncategories[b], b + 1, kept,
                pam_off() ? "; GDAL_PAM_ENABLED is off, and GeoTIFF keeps them only in the "
                            ".aux.xml sidecar GDAL then does not write"
                          : "");
    }
}

/* The CRS of the file at path, when one was set: it must read back as the one written (a
 * warning, naming both, when it does not; a CRS that does not parse is not compared), and the
 * file should carry it itself. GeoTIFF's keys
 * hold most CRSs but not all (a projection method GeoTIFF has no code for, such as Equal
 * Earth): GDAL then keeps the CRS in the .aux.xml sidecar alone, and the file copied without
 * it (a COG uploaded or served by itself) is placed in no CRS, which QGIS asks the user for.
 * Warnings, not failures: with its sidecar, the file is right. */
static void check_crs(const wc_rwriter *w, GDALDatasetH ds, const char *path) {
    char want[160], got[160];
    wc_raster_crs_describe(w->wkt, want, sizeof want);
    const char *read = GDALGetProjectionRef(ds);
    if (!read || !*read || wc_raster_crs_same_place(w->wkt, read) == 0) {
        wc_raster_crs_describe(read ? read : "", got, sizeof got);
        /* one name, two definitions (an engineering CRS whose datum GeoTIFF drops): say so */
        const int one_name = strcmp(got, want) == 0;
        wc_warn("%s: its CRS reads back as %s, not the %s written%s%s: GIS clients place it "
                "wrongly; give it the CRS with gdal_edit.py -a_srs",
                w->target, got, want,
                one_name ? " (the same name, another definition: its datum, axes or units; "
                           "gdalsrsinfo of the map and of the input shows them)"
                         : "",
                pam_off() ? "; GDAL_PAM_ENABLED is off, so GDAL wrote no .aux.xml sidecar, where "
                            "it keeps a CRS GeoTIFF's keys cannot hold"
                          : "");
        return;
    }
    /* the file alone: GDAL reads the sidecar when the CRS is first asked for, not at the open,
     * so the option holds until then */
    char *saved = NULL;
    const char *was = CPLGetThreadLocalConfigOption("GDAL_PAM_ENABLED", NULL);
    if (was) saved = wc_strdup(was);
    CPLSetThreadLocalConfigOption("GDAL_PAM_ENABLED", "NO");
    GDALDatasetH bare = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    const char *own = bare ? GDALGetProjectionRef(bare) : NULL;
    const int alone = own && *own && wc_raster_crs_same_place(w->wkt, own) != 0;
    CPLSetThreadLocalConfigOption("GDAL_PAM_ENABLED", saved);
    free(saved);
    if (!bare) return; /* it opened a moment ago: nothing to learn here */
    if (!alone)
        wc_warn("%s: its CRS (%s) is not one the file's GeoTIFF keys can hold, so GDAL keeps it "
                "in %s.aux.xml beside it: keep the two together (a copy of the file alone is "
                "placed in no CRS), or reproject the input to a CRS GeoTIFF can hold (a UTM "
                "zone, an Albers or Lambert projection: gdalwarp -t_srs)",
                w->target, want, w->target);
    GDALClose(bare);
}

/* The GCPs' CRS, read back (with the sidecar) as the one written: GDAL 3.6 keeps GCPs whose CRS
 * GeoTIFF's keys cannot hold (Equal Earth) without any CRS, the sidecar included. A warning: the
 * GCPs place the map nowhere then. */
static void check_gcp_crs(const wc_rwriter *w, GDALDatasetH ds) {
    const char *read = GDALGetGCPProjection(ds);
    if (read && *read && wc_raster_crs_same_place(w->gcp_wkt, read) != 0) return;
    char want[160], got[160];
    wc_raster_crs_describe(w->gcp_wkt, want, sizeof want);
    wc_raster_crs_describe(read ? read : "", got, sizeof got);
    wc_warn("%s: the CRS of its GCPs reads back as %s, not the %s written: GeoTIFF cannot hold "
            "it, and the GCPs place the map nowhere; reproject the input's GCPs to a CRS "
            "GeoTIFF can hold (a UTM zone: gdalwarp places the raster) before mapping it",
            w->target, got, want);
}

/* Reopens path: a complete file of the working dataset's size, bands, types and geotransform
 * (and COG layout for the COG driver), not a truncated or mangled one. */
static int verify(wc_rwriter *w, const char *path, const shape *s) {
    wc_gdal_errors_push(&w->err);
    GDALDatasetH ds = GDALOpenEx(path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    char why[640] = "";
    if (!ds) {
        snprintf(why, sizeof why, "it does not open: %s", gdal_why(w));
    } else {
        double gt[6];
        if (GDALGetRasterXSize(ds) != w->W || GDALGetRasterYSize(ds) != w->H)
            snprintf(why, sizeof why, "its size is %dx%d, not %dx%d", GDALGetRasterXSize(ds),
                     GDALGetRasterYSize(ds), w->W, w->H);
        else if (GDALGetRasterCount(ds) != s->nbands)
            snprintf(why, sizeof why, "it has %d bands, not %d", GDALGetRasterCount(ds), s->nbands);
        for (int b = 0; b < s->nbands && !*why; b++) {
            GDALDataType t = GDALGetRasterDataType(GDALGetRasterBand(ds, b + 1));
            if (t != s->types[b])
                snprintf(why, sizeof why, "band %d is %s, not %s", b + 1, GDALGetDataTypeName(t),
                         GDALGetDataTypeName(s->types[b]));
        }
        if (!*why && w->has_gt &&
            (GDALGetGeoTransform(ds, gt) != CE_None || !same_values(gt, w->gt, 6)))
            snprintf(why, sizeof why, "its geotransform differs from the one written");
        if (!*why && GDALGetGCPCount(ds) != w->ngcps)
            snprintf(why, sizeof why, "it has %d GCPs, not the %d written", GDALGetGCPCount(ds),
                     w->ngcps);
        if (!*why && w->copy_driver && strcmp(w->copy_driver, "COG") == 0) {
            const char *lay = GDALGetMetadataItem(ds, "LAYOUT", "IMAGE_STRUCTURE");
            if (!lay || strcmp(lay, "COG") != 0)
                snprintf(why, sizeof why, "GDAL does not report it as a COG layout");
        }
        if (!*why && w->wkt) check_crs(w, ds, path);
        if (!*why && w->gcp_wkt) check_gcp_crs(w, ds);
        if (!*why) warn_lost_categories(w, ds, s);
        GDALClose(ds);
    }
    wc_gdal_errors_pop();
    if (*why) {
        wc_error("verifying %s (for %s) failed: %s", path, w->target, why);
        return WC_ERR;
    }
    return WC_OK;
}

/* GDAL's external files of a raster that hold pixels of their own: its overviews (gdaladdo -ro,
 * QGIS's Build Pyramids in its default external format) and its per-dataset mask, each in both
 * of the cases GDAL looks for. GDAL takes them for those of whatever file bears the raster's
 * name: left beside a new target they are the replaced file's, and QGIS draws the earlier map
 * wherever it reads overviews (any view zoomed out), or hides the new one's pixels by the
 * earlier one's mask. */
static const struct {
    const char *suffix, *what, *again;
} EXTERNALS[] = {
    {".ovr", "external overviews", "gdaladdo -ro"},
    {".OVR", "external overviews", "gdaladdo -ro"},
    {".msk", "external mask", NULL},
    {".MSK", "external mask", NULL},
};

/* Removes the target's external overviews and mask (EXTERNALS) left from the file it
 * replaced, saying so: the user made them, and may make them again for the new file. */
static void remove_stale_externals(const wc_rwriter *w) {
    for (size_t i = 0; i < sizeof EXTERNALS / sizeof EXTERNALS[0]; i++) {
        const size_t n = strlen(w->target) + strlen(EXTERNALS[i].suffix) + 1;
        char *p = WC_ALLOC(n);
        snprintf(p, n, "%s%s", w->target, EXTERNALS[i].suffix);
        struct stat st;
        if (lstat(p, &st) == 0 && !S_ISDIR(st.st_mode)) {
            if (unlink(p) == 0)
                wc_warn("removed %s, the %s of the earlier %s: GDAL reads them with whatever "
                        "file bears that name, so GIS clients would have shown the replaced "
                        "raster's pixels through them%s%s%s",
                        p, EXTERNALS[i].what, w->target,
                        EXTERNALS[i].again ? " (make them again with " : "",
                        EXTERNALS[i].again ? EXTERNALS[i].again : "",
                        EXTERNALS[i].again ? ")" : "");
            else
                wc_warn("%s, the %s of the earlier %s, could not be removed (%s): GDAL reads "
                        "them with the new file, so GIS clients show the replaced raster's "
                        "pixels through them; remove it",
                        p, EXTERNALS[i].what, w->target, strerror(errno));
        }
        free(p);
    }
}

/* The verified file renamed over the target; the sidecar follows its file, and a stale one
 * from an earlier target (category names of a map that had classes) would describe this one
 * wrongly, so it goes, as do the earlier target's external overviews and mask. */
static int publish(wc_rwriter *w, const char *final) {
    if (rename(final, w->target) != 0) {
        wc_error("cannot rename %s to %s: %s", final, w->target, strerror(errno));
        return WC_ERR;
    }
    char *faux = aux_path(final), *taux = aux_path(w->target);
    int rc = WC_OK;
    if (access(faux, F_OK) == 0) {
        if (rename(faux, taux) != 0) {
            wc_error("cannot rename %s to %s: %s", faux, taux, strerror(errno));
            rc = WC_ERR;
        }
    } else if (access(taux, F_OK) == 0 && unlink(taux) != 0) {
        wc_warn("%s is left from an earlier %s and could not be removed: %s", taux, w->target,
                strerror(errno));
    }
    free(faux);
    free(taux);
    remove_stale_externals(w);
    if (wc_fsync_parent(w->target) != WC_OK)
        wc_warn("%s is complete, but its directory entry may not survive a crash", w->target);
    return rc;
}

int wc_rwriter_commit(wc_rwriter *w) {
    WC_ASSERT(w->ds);
    shape s;
    shape_of(w->ds, &s);
    int rc = WC_OK;
    if (w->work) rc = close_work(w); /* a MEM dataset stays open: the copy reads it */
    if (rc == WC_OK && !keep_going(w)) rc = WC_RWRITER_STOPPED;
    if (rc == WC_OK && w->copy) {
        rc = copy_out(w);
        if (rc == WC_OK) unlink_with_aux(w, w->work);
    }
    const char *final = w->copy ? w->copy : w->work;
    if (rc == WC_OK && (verify(w, final, &s) != WC_OK || wc_fsync_path(final, 0) != WC_OK))
        rc = WC_ERR;
    if (rc == WC_OK) slow_commit(w);
    /* the last moment a stop can leave the target as it was */
    if (rc == WC_OK && !keep_going(w)) rc = WC_RWRITER_STOPPED;
    if (rc == WC_OK && w->before_publish) w->before_publish(w->arg);
    if (rc == WC_OK) rc = publish(w, final);
    free(s.types);
    free(s.ncategories);
    wc_rwriter_abort(w); /* the MEM dataset, and whatever temporary file is left */
    return rc;
}
