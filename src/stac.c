/* stac.c: the STAC Item of a raster product; see stac.h.
 *
 * Not here: the assets' content, the SHA-256 itself (sha256.c). */
#include "wildcpu/stac.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_conv.h>
#include <cpl_string.h>
#include <ogr_srs_api.h>

#include "wildcpu/files.h"
#include "wildcpu/json.h"
#include "wildcpu/raster.h"
#include "wildcpu/sha256.h"
#include "wildcpu/util.h"

#define STAC_PROJ "https://stac-extensions.github.io/projection/v1.1.0/schema.json"
#define STAC_FILE "https://stac-extensions.github.io/file/v2.1.0/schema.json"

/* Points per edge of the outline: a projected rectangle is curved in longitude/latitude, and its
 * corners alone can miss the extreme latitude of an edge. */
#define EDGE_POINTS 16

/* ---- where ------------------------------------------------------------------------------------
 */

/* The CRS of the item, with the traditional GIS axis order (x = easting/longitude), or NULL. */
static OGRSpatialReferenceH srs_of(const char *wkt) {
    if (!wkt || !*wkt) return NULL;
    OGRSpatialReferenceH s = OSRNewSpatialReference(NULL);
    if (OSRImportFromWkt(s, (char **)&wkt) != OGRERR_NONE) {
        OSRDestroySpatialReference(s);
        return NULL;
    }
    OSRSetAxisMappingStrategy(s, OAMS_TRADITIONAL_GIS_ORDER);
    return s;
}

/* The EPSG code of the CRS, or 0: its own authority, else what GDAL identifies it as. */
static int epsg_of(OGRSpatialReferenceH s) {
    const char *auth = OSRGetAuthorityName(s, NULL), *code = OSRGetAuthorityCode(s, NULL);
    if (auth && code && EQUAL(auth, "EPSG")) return atoi(code);
    OGRSpatialReferenceH c = OSRClone(s);
    int epsg = 0;
    if (OSRAutoIdentifyEPSG(c) == OGRERR_NONE) {
        auth = OSRGetAuthorityName(c, NULL), code = OSRGetAuthorityCode(c, NULL);
        if (auth && code && EQUAL(auth, "EPSG")) epsg = atoi(code);
    }
    OSRDestroySpatialReference(c);
    return epsg;
}

/* The outline in WGS84: the raster's boundary walked TL, BL, BR, TR (counter-clockwise for a
 * north-up raster; write_geometry turns it where it is not), EDGE_POINTS per edge, into lon/lat
 * (4 x EDGE_POINTS points). WC_ERR when the transformation fails. */
static int outline_wgs84(const wc_stac_item *it, OGRSpatialReferenceH srs, double *lon,
                         double *lat) {
    const double W = it->width, H = it->height;
    const double corner[5][2] = {{0, 0}, {0, H}, {W, H}, {W, 0}, {0, 0}};
    const int n = 4 * EDGE_POINTS;
    for (int e = 0, k = 0; e < 4; e++)
        for (int i = 0; i < EDGE_POINTS; i++, k++) {
            const double t = (double)i / EDGE_POINTS;
            const double c = corner[e][0] + t * (corner[e + 1][0] - corner[e][0]);
            const double r = corner[e][1] + t * (corner[e + 1][1] - corner[e][1]);
            wc_raster_pixel_to_map(it->gt, c, r, &lon[k], &lat[k]);
        }
    OGRSpatialReferenceH wgs = OSRNewSpatialReference(NULL);
    OSRSetWellKnownGeogCS(wgs, "WGS84");
    OSRSetAxisMappingStrategy(wgs, OAMS_TRADITIONAL_GIS_ORDER);
    OGRCoordinateTransformationH ct = OCTNewCoordinateTransformation(srs, wgs);
    int ok = ct && OCTTransform(ct, n, lon, lat, NULL);
    for (int k = 0; ok && k < n; k++) ok = isfinite(lon[k]) && isfinite(lat[k]);
    if (ct) OCTDestroyCoordinateTransformation(ct);
    OSRDestroySpatialReference(wgs);
    return ok ? WC_OK : WC_ERR;
}

static void write_position(wc_json *j, double lon, double lat) {
    wc_json_array(j);
    wc_json_num(j, lon);
    wc_json_num(j, lat);
    wc_json_end(j);
}

/* A closed ring of n points, their longitudes moved by `shift`. */
static void write_ring(wc_json *j, const double *x, const double *y, int n, double shift) {
    wc_json_array(j);
    for (int k = 0; k <= n; k++) write_position(j, x[k % n] + shift, y[k % n]);
    wc_json_end(j);
}

/* The part of ring (x, y) of n points on one side of the meridian x = at (left: x <= at),
 * Sutherland-Hodgman's clip against one line, into (cx, cy); its point count. */
static int clip_ring(const double *x, const double *y, int n, double at, int left, double *cx,
                     double *cy) {
    int m = 0;
    for (int k = 0; k < n; k++) {
        const double x0 = x[k], y0 = y[k], x1 = x[(k + 1) % n], y1 = y[(k + 1) % n];
        const int in0 = left ? x0 <= at : x0 >= at, in1 = left ? x1 <= at : x1 >= at;
        if (in0) cx[m] = x0, cy[m++] = y0;
        if (in0 != in1) cx[m] = at, cy[m++] = y0 + (y1 - y0) * (at - x0) / (x1 - x0);
    }
    return m;
}

/* A Polygon of one ring of n points, their longitudes moved by `shift`. */
static void write_polygon(wc_json *j, const double *x, const double *y, int n, double shift) {
    wc_json_kstr(j, "type", "Polygon");
    wc_json_key(j, "coordinates");
    wc_json_array(j);
    write_ring(j, x, y, n, shift);
    wc_json_end(j);
}

/* geometry (a polygon of the four corners) and bbox (of the densified outline), as RFC 7946
 * wants them: exterior rings counter-clockwise, longitudes within [-180, 180]; where the map
 * spans the antimeridian a bbox whose west is east of its east and the polygon cut in two along
 * 180 degrees; where it holds a pole, or goes all the way round, the band of every longitude
 * between its outline's latitudes (and the pole). */
static void write_geometry(wc_json *j, const double *lon, const double *lat_in) {
    const int n = 4 * EDGE_POINTS;
    /* the outline's longitudes unrolled: no jump of more than 180 degrees between neighbours,
     * so a walk around a pole ends 360 degrees from where it started */
    double u[4 * EDGE_POINTS + 1], lat[4 * EDGE_POINTS], lo = INFINITY, hi = -INFINITY;
    double south = INFINITY, north = -INFINITY, area = 0;
    for (int k = 0; k < n; k++) lat[k] = fmax(-90, fmin(90, lat_in[k]));
    u[0] = lon[0];
    for (int k = 1; k <= n; k++) /* whole turns only: exact where there are none */
        u[k] = lon[k % n] + 360 * nearbyint((u[k - 1] - lon[k % n]) / 360);
    for (int k = 0; k < n; k++) {
        lo = fmin(lo, u[k]), hi = fmax(hi, u[k]);
        south = fmin(south, lat[k]), north = fmax(north, lat[k]);
        area += u[k] * lat[(k + 1) % n] - u[k + 1] * lat[k];
    }
    const int pole = fabs(u[n] - u[0]) > 180, round = pole || hi - lo >= 360;
    /* whole turns that bring the west end into [-180, 180); the antimeridian east of it, which
     * the outline crosses when it reaches beyond */
    const double turns = 360 * floor((lo + 180) / 360), meridian = 180 + turns;
    const int spans = !round && hi > meridian;
    double b[4] = {lo - turns, south, hi - turns - (spans ? 360 : 0), north};
    wc_json_key(j, "geometry");
    wc_json_object(j);
    if (round) {
        /* the pole the outline walks around: the one it is nearer */
        if (pole && north + south > 0) north = 90;
        if (pole && north + south <= 0) south = -90;
        b[0] = -180, b[1] = south, b[2] = 180, b[3] = north;
        const double x[4] = {-180, 180, 180, -180}, y[4] = {south, south, north, north};
        write_polygon(j, x, y, 4, 0);
    } else {
        /* the corners, counter-clockwise (a raster flipped on one axis walks the other way) */
        double cx[4], cy[4];
        for (int c = 0; c < 4; c++) {
            const int k = (area >= 0 ? c : 4 - c) % 4 * EDGE_POINTS;
            cx[c] = u[k], cy[c] = lat[k];
        }
        if (!spans) {
            write_polygon(j, cx, cy, 4, -turns);
        } else {
            double px[2][8], py[2][8];
            int pn[2];
            pn[0] = clip_ring(cx, cy, 4, meridian, 1, px[0], py[0]);
            pn[1] = clip_ring(cx, cy, 4, meridian, 0, px[1], py[1]);
            const int parts = (pn[0] >= 3) + (pn[1] >= 3);
            if (parts < 2) {
                const int p = pn[0] >= 3 ? 0 : 1; /* touching the meridian only */
                write_polygon(j, px[p], py[p], pn[p], -turns - 360 * p);
            } else {
                wc_json_kstr(j, "type", "MultiPolygon");
                wc_json_key(j, "coordinates");
                wc_json_array(j);
                for (int p = 0; p < 2; p++) {
                    wc_json_array(j);
                    write_ring(j, px[p], py[p], pn[p], -turns - 360 * p);
                    wc_json_end(j);
                }
                wc_json_end(j);
            }
        }
    }
    wc_json_end(j);
    wc_json_key(j, "bbox");
    wc_json_array(j);
    for (int i = 0; i < 4; i++) wc_json_num(j, b[i]);
    wc_json_end(j);
}

/* ---- what -------------------------------------------------------------------------------------
 */

static void write_projection(wc_json *j, const wc_stac_item *it, OGRSpatialReferenceH srs) {
    const int epsg = srs ? epsg_of(srs) : 0;
    wc_json_key(j, "proj:epsg");
    if (epsg)
        wc_json_int(j, epsg);
    else
        wc_json_null(j);
    if (!epsg && srs) {
        char *wkt2 = NULL;
        const char *const opts[] = {"FORMAT=WKT2_2019", NULL};
        if (OSRExportToWktEx(srs, &wkt2, opts) == OGRERR_NONE) wc_json_kstr(j, "proj:wkt2", wkt2);
        CPLFree(wkt2);
    }
    wc_json_key(j, "proj:shape");
    wc_json_array(j);
    wc_json_int(j, it->height);
    wc_json_int(j, it->width);
    wc_json_end(j);
    if (it->gt) { /* STAC's order is the affine's rows: a, b, c, d, e, f */
        const double *g = it->gt;
        const double a[6] = {g[1], g[2], g[0], g[4], g[5], g[3]};
        wc_json_key(j, "proj:transform");
        wc_json_array(j);
        for (int i = 0; i < 6; i++) wc_json_num(j, a[i]);
        wc_json_end(j);
    }
}

/* The checkpoint's metrics, each a property named prefix + its key. */
static void write_metrics(wc_json *j, const char *text, const char *prefix) {
    if (!text || !*text) return;
    wc_json_doc doc;
    char why[256];
    if (wc_json_parse(text, &doc, why, sizeof why) != WC_OK) { /* checked when loaded */
        wc_warn("STAC item: the checkpoint's metrics are not readable (%s): left out", why);
        return;
    }
    for (int i = 0; i < doc.n; i++) {
        const wc_json_member *m = &doc.members[i];
        if (m->kind != WC_JSON_NUMBER) continue;
        char key[160];
        snprintf(key, sizeof key, "%s%s", prefix ? prefix : "", m->key);
        /* a count stays a whole number (11694, not 11694.0): as the checkpoint wrote it */
        const size_t digits = strspn(text + m->value_at, "-0123456789");
        if (digits == m->value_len && fabs(m->number) < 0x1p53)
            wc_json_kint(j, key, (int64_t)m->number);
        else
            wc_json_knum(j, key, m->number);
    }
    wc_json_doc_free(&doc);
}

/* The asset's href: its file name when it lies in the item's directory (the item and its files
 * move together), else its absolute path. */
static char *href_of(const char *item_path, const char *asset_path) {
    const char *as = strrchr(asset_path, '/'), *name = as ? as + 1 : asset_path;
    char *beside = wc_sibling_path(item_path, ""); /* only for its directory */
    char *slash = strrchr(beside, '/');
    size_t n = strlen(beside) + strlen(name) + 2;
    char *guess = WC_ALLOC(n);
    snprintf(guess, n, "%.*s%s", slash ? (int)(slash - beside + 1) : 0, beside, name);
    free(beside);
    if (wc_same_file(guess, asset_path)) {
        free(guess);
        return wc_strdup(name);
    }
    free(guess);
    char *abs = realpath(asset_path, NULL);
    return abs ? abs : wc_strdup(asset_path);
}

static int write_asset(wc_json *j, const char *item_path, const wc_stac_asset *a) {
    char hex[65], multihash[70];
    int64_t size;
    if (wc_sha256_file(a->path, hex, &size) != WC_OK) return WC_ERR;
    snprintf(multihash, sizeof multihash, "1220%s", hex); /* sha2-256, 32 bytes */
    char *href = href_of(item_path, a->path);
    wc_json_key(j, a->key);
    wc_json_object(j);
    wc_json_kstr(j, "href", href);
    wc_json_kstr(j, "type", a->type);
    wc_json_kstr(j, "title", a->title);
    wc_json_key(j, "roles");
    wc_json_array(j);
    char **roles = CSLTokenizeString2(a->roles, ",", 0);
    for (int i = 0; roles && roles[i]; i++) wc_json_str(j, roles[i]);
    CSLDestroy(roles);
    wc_json_end(j);
    wc_json_kstr(j, "file:checksum", multihash);
    wc_json_kint(j, "file:size", size);
    wc_json_end(j);
    free(href);
    return WC_OK;
}

int wc_stac_write(const char *path, const wc_stac_item *it) {
    OGRSpatialReferenceH srs = srs_of(it->wkt);
    double lon[4 * EDGE_POINTS], lat[4 * EDGE_POINTS];
    const int where = it->gt && srs && outline_wgs84(it, srs, lon, lat) == WC_OK;
    if (it->gt && srs && !where)
        wc_warn("STAC item %s: the outline of the raster does not transform to WGS84: geometry "
                "null",
                path);
    wc_json j;
    wc_json_init(&j);
    wc_json_object(&j);
    wc_json_kstr(&j, "type", "Feature");
    wc_json_kstr(&j, "stac_version", "1.0.0");
    wc_json_key(&j, "stac_extensions");
    wc_json_array(&j);
    wc_json_str(&j, STAC_PROJ);
    wc_json_str(&j, STAC_FILE);
    wc_json_end(&j);
    wc_json_kstr(&j, "id", it->id);
    if (where) {
        write_geometry(&j, lon, lat);
    } else {
        wc_json_key(&j, "geometry");
        wc_json_null(&j);
    }
    wc_json_key(&j, "properties");
    wc_json_object(&j);
    wc_json_kstr(&j, "datetime", it->datetime);
    write_projection(&j, it, srs);
    for (int i = 0; i < it->nprops; i++) wc_json_kstr(&j, it->props[i][0], it->props[i][1]);
    if (it->int_key) wc_json_kint(&j, it->int_key, it->int_value);
    write_metrics(&j, it->metrics_json, it->metrics_prefix);
    wc_json_end(&j);
    wc_json_key(&j, "links");
    wc_json_array(&j);
    wc_json_end(&j);
    wc_json_key(&j, "assets");
    wc_json_object(&j);
    int rc = WC_OK;
    for (int i = 0; i < it->nassets && rc == WC_OK; i++) rc = write_asset(&j, path, &it->assets[i]);
    if (srs) OSRDestroySpatialReference(srs);
    if (rc != WC_OK) {
        wc_error("the STAC item %s is not written: an asset cannot be checksummed", path);
        wc_json_free(&j);
        return WC_ERR;
    }
    wc_json_end(&j);
    wc_json_end(&j);
    wc_atomic_file af;
    rc = wc_atomic_open(&af, path, "w");
    if (rc == WC_OK) {
        fputs(wc_json_text(&j), af.f);
        fputc('\n', af.f);
        rc = wc_atomic_commit(&af);
    }
    wc_json_free(&j);
    return rc;
}

/* The text of the object that member key of the object text[0..*len) holds, into *text and
 * *len; WC_ERR when the text does not parse or the member is absent or no object. */
static int member_object(const char **text, size_t *len, const char *key) {
    wc_json_doc doc;
    if (wc_json_parse_n(*text, *len, &doc, NULL, 0) != WC_OK) return WC_ERR;
    const wc_json_member *m = wc_json_get(&doc, key);
    const int found = m && m->kind == WC_JSON_NESTED && (*text)[m->value_at] == '{';
    if (found) *text += m->value_at, *len = m->value_len;
    wc_json_doc_free(&doc);
    return found ? WC_OK : WC_ERR;
}

int wc_stac_assets(const char *text, wc_stac_listed **assets) {
    *assets = NULL;
    size_t len = strlen(text);
    wc_json_doc doc; /* empty when it does not parse */
    if (member_object(&text, &len, "assets") != WC_OK ||
        wc_json_parse_n(text, len, &doc, NULL, 0) != WC_OK)
        return 0;
    int n = 0;
    if (doc.n > 0) *assets = WC_ALLOC(sizeof **assets * (size_t)doc.n);
    for (int i = 0; i < doc.n; i++) {
        const wc_json_member *m = &doc.members[i];
        wc_json_doc asset = {0};
        const int object =
            m->kind == WC_JSON_NESTED && text[m->value_at] == '{' &&
            wc_json_parse_n(text + m->value_at, m->value_len, &asset, NULL, 0) == WC_OK;
        const char *href = object ? wc_json_get_str(&asset, "href") : NULL;
        if (href) {
            wc_stac_listed *a = &(*assets)[n++];
            a->key = wc_strdup(m->key);
            a->href = wc_strdup(href);
            const double size = wc_json_get_num(&asset, "file:size");
            a->size = size >= 0 && size < 0x1p62 ? (int64_t)size : -1;
            const char *sum = wc_json_get_str(&asset, "file:checksum"); /* multihash: 1220 hex */
            snprintf(a->sha256, sizeof a->sha256, "%s",
                     sum && strlen(sum) == 68 && strncmp(sum, "1220", 4) == 0 ? sum + 4 : "");
        }
        wc_json_doc_free(&asset);
    }
    wc_json_doc_free(&doc);
    if (n == 0) free(*assets), *assets = NULL;
    return n;
}

void wc_stac_listed_free(wc_stac_listed *assets, int n) {
    for (int i = 0; i < n; i++) free(assets[i].key), free(assets[i].href);
    free(assets);
}
