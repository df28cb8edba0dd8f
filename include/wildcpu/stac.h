/* stac.h: a STAC Item (SpatioTemporal Asset Catalog 1.0.0) describing a raster product and the
 * files that come with it, so catalogues and STAC clients find the risk map by place and time.
 *
 * The item carries the projection extension (v1.1.0: proj:epsg, or null and proj:wkt2 for a CRS
 * without an EPSG code; proj:shape; proj:transform) and the file extension (v2.1.0: every
 * asset's file:size and file:checksum, a multihash of SHA-256: "1220" + 64 hex digits, computed
 * from the files as they are on disk). bbox and geometry are WGS84 longitude/latitude (the
 * raster's outline transformed by OSR in the traditional GIS axis order, its edges densified for
 * the bbox), cut along the antimeridian or widened to a pole as RFC 7946 says; a raster without
 * georeferencing has geometry null and no bbox, as STAC allows.
 *
 * Not here: deciding what the assets are (riskmap.c), the files themselves. */
#ifndef WILDCPU_STAC_H
#define WILDCPU_STAC_H

#include <stdint.h>

typedef struct wc_stac_asset {
    const char *key;  /* the asset's name in the item: "risk_map" */
    const char *path; /* the file; its href is its name when it lies beside the item */
    const char *type; /* media type */
    const char *title;
    const char *roles; /* comma-separated: "data", "overview,visual" */
} wc_stac_asset;

typedef struct wc_stac_item {
    const char *id;
    const char *datetime; /* RFC 3339, UTC: "2026-11-30T03:14:15Z" */
    int width, height;
    const double *gt; /* (6) GDAL geotransform, or NULL */
    const char *wkt;  /* the CRS, or NULL or "" */
    const wc_stac_asset *assets;
    int nassets;
    const char *const (*props)[2]; /* more properties, string-valued: key, value */
    int nprops;
    const char *int_key; /* one integer property (wildcpu:step), or NULL */
    int64_t int_value;
    /* a JSON object of numbers (a checkpoint's validation metrics) whose members become
     * properties prefixed by metrics_prefix; NULL or "" for none */
    const char *metrics_json, *metrics_prefix;
} wc_stac_item;

/* Writes the item to path atomically (temporary file, fsync, rename). WC_OK, or WC_ERR after a
 * message naming the file (an asset that cannot be read, a transformation that fails). */
int wc_stac_write(const char *path, const wc_stac_item *item);

/* One asset of an item as wc_stac_write wrote it: its key, its href (unescaped), and the file's
 * size and SHA-256 (64 hex digits) it recorded (-1 and "" when absent). */
typedef struct wc_stac_listed {
    char *key, *href;
    int64_t size;
    char sha256[65];
} wc_stac_listed;
/* Every asset of the item text that has an href, in order, into *assets (n of them; NULL when
 * none, or the text is no item). Free with wc_stac_listed_free(*assets, n). */
int wc_stac_assets(const char *text, wc_stac_listed **assets);
void wc_stac_listed_free(wc_stac_listed *assets, int n);

#endif
