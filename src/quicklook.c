/* quicklook.c: the quick-look PNG of a risk map; see quicklook.h.
 *
 * The picture is built in a GDAL MEM dataset (4 Byte bands: R, G, B, A; the only full-size
 * buffer), filled a band of rows at a time from averaged reads of the source band, then copied
 * to PNG with GDAL's PNG driver into a temporary file that is renamed over the target once GDAL
 * reports no error. Only probabilities get a colour: nodata, NaN, Inf and any value outside
 * [0, 1] are transparent (the last counted and reported), never a colour of the ramp.
 *
 * Not here: what the values mean (predict.c), MPI. */
#include "wildcpu/quicklook.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cpl_conv.h>
#include <cpl_error.h>
#include <gdal.h>

#include "wildcpu/files.h"
#include "wildcpu/raster.h"
#include "wildcpu/util.h"

/* ---- colour ramp ------------------------------------------------------------------------- */

/* ColorBrewer YlOrRd, 9 classes (matplotlib's YlOrRd): lightness falls monotonically from pale
 * yellow to dark red, so higher risk always reads darker, also in grey-scale print. */
static const unsigned char YLORRD[9][3] = {
    {255, 255, 204}, {255, 237, 160}, {254, 217, 118}, {254, 178, 76}, {253, 141, 60},
    {252, 78, 42},   {227, 26, 28},   {189, 0, 38},    {128, 0, 38},
};

void wc_quicklook_color(double p, unsigned char rgb[3]) {
    if (!(p > 0)) p = 0; /* also NaN */
    if (p > 1) p = 1;
    double s = p * 8.0;
    int i = (int)s;
    if (i > 7) i = 7;
    WC_ASSERT(i >= 0 && i <= 7); /* the stop below p, and the next one */
    double t = s - i;
    for (int c = 0; c < 3; c++)
        rgb[c] = (unsigned char)lround(YLORRD[i][c] + t * (YLORRD[i + 1][c] - YLORRD[i][c]));
}

/* ---- a 5x7 bitmap font, only the characters the legend needs ------------------------------- */

typedef struct glyph {
    char c;
    unsigned char rows[7]; /* 5 bits per row, most significant bit = leftmost column */
} glyph;

static const glyph FONT[] = {
    {'0', {0x0E, 0x11, 0x13, 0x15, 0x19, 0x11, 0x0E}},
    {'1', {0x04, 0x0C, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'2', {0x0E, 0x11, 0x01, 0x02, 0x04, 0x08, 0x1F}},
    {'3', {0x1F, 0x02, 0x04, 0x02, 0x01, 0x11, 0x0E}},
    {'4', {0x02, 0x06, 0x0A, 0x12, 0x1F, 0x02, 0x02}},
    {'5', {0x1F, 0x10, 0x1E, 0x01, 0x01, 0x11, 0x0E}},
    {'6', {0x06, 0x08, 0x10, 0x1E, 0x11, 0x11, 0x0E}},
    {'7', {0x1F, 0x01, 0x02, 0x04, 0x08, 0x08, 0x08}},
    {'8', {0x0E, 0x11, 0x11, 0x0E, 0x11, 0x11, 0x0E}},
    {'9', {0x0E, 0x11, 0x11, 0x0F, 0x01, 0x02, 0x0C}},
    {'.', {0x00, 0x00, 0x00, 0x00, 0x00, 0x0C, 0x0C}},
    {'a', {0x00, 0x00, 0x0E, 0x01, 0x0F, 0x11, 0x0F}},
    {'b', {0x10, 0x10, 0x16, 0x19, 0x11, 0x11, 0x1E}},
    {'i', {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E}},
    {'l', {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'n', {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'o', {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E}},
    {'p', {0x00, 0x00, 0x1E, 0x11, 0x1E, 0x10, 0x10}},
    {'r', {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}},
    {'t', {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06}},
    {'u', {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D}},
    {'y', {0x00, 0x00, 0x11, 0x11, 0x0F, 0x01, 0x0E}},
};

static const glyph *find_glyph(char c) {
    for (size_t i = 0; i < sizeof FONT / sizeof FONT[0]; i++)
        if (FONT[i].c == c) return &FONT[i];
    return NULL; /* space and anything unknown: blank */
}

/* An RGBA picture as 4 planes (the layout GDAL's band-sequential RasterIO wants). */
typedef struct canvas {
    int w, h;
    unsigned char *px; /* (4, h, w) */
} canvas;

static void put(canvas *cv, int x, int y, const unsigned char rgba[4]) {
    if (x < 0 || y < 0 || x >= cv->w || y >= cv->h) return;
    size_t plane = (size_t)cv->w * cv->h, i = (size_t)y * cv->w + x;
    for (int c = 0; c < 4; c++) cv->px[c * plane + i] = rgba[c];
}

static void fill_rect(canvas *cv, int x0, int y0, int w, int h, const unsigned char rgba[4]) {
    for (int y = y0; y < y0 + h; y++)
        for (int x = x0; x < x0 + w; x++) put(cv, x, y, rgba);
}

/* Characters advance 6 font pixels; each font pixel is u x u picture pixels. */
static int text_width(const char *s, int u) {
    return s[0] ? ((int)strlen(s) * 6 - 1) * u : 0;
}

static void draw_text(canvas *cv, int x, int y, const char *s, int u, const unsigned char rgba[4]) {
    for (; *s; s++, x += 6 * u) {
        const glyph *g = find_glyph(*s);
        if (!g) continue;
        for (int r = 0; r < 7; r++)
            for (int c = 0; c < 5; c++)
                if (g->rows[r] & (0x10 >> c)) fill_rect(cv, x + c * u, y + r * u, u, u, rgba);
    }
}

/* The legend in rows [top, top + 42u) (see WC_QUICKLOOK_LEGEND_PX): title at 4u, bar at 14u..26u,
 * ticks to 29u, labels at 31u..38u, 4u of padding below. */
static void draw_legend(canvas *cv, int top, int u) {
    static const unsigned char white[4] = {255, 255, 255, 255}, ink[4] = {40, 40, 40, 255};
    static const char *labels[] = {"0", "0.25", "0.5", "0.75", "1"};
    fill_rect(cv, 0, top, cv->w, WC_QUICKLOOK_LEGEND_PX * u, white);
    int pad = 14 * u, bx0 = pad, bx1 = cv->w - pad; /* bar columns [bx0, bx1) */
    draw_text(cv, pad, top + 4 * u, "burn probability", u, ink);
    int by0 = top + 14 * u, bh = 12 * u;
    for (int x = bx0; x < bx1; x++) {
        unsigned char rgba[4] = {0, 0, 0, 255};
        wc_quicklook_color((double)(x - bx0) / (bx1 - 1 - bx0), rgba);
        fill_rect(cv, x, by0, 1, bh, rgba);
    }
    /* a thin frame keeps the pale end of the bar visible against the white strip */
    fill_rect(cv, bx0 - 1, by0 - 1, bx1 - bx0 + 2, 1, ink);
    fill_rect(cv, bx0 - 1, by0 + bh, bx1 - bx0 + 2, 1, ink);
    fill_rect(cv, bx0 - 1, by0 - 1, 1, bh + 2, ink);
    fill_rect(cv, bx1, by0 - 1, 1, bh + 2, ink);
    for (int k = 0; k < 5; k++) {
        int xt = bx0 + (int)lround(k * 0.25 * (bx1 - 1 - bx0));
        fill_rect(cv, xt - (u - 1) / 2, by0 + bh, u, 3 * u, ink);
        draw_text(cv, xt - text_width(labels[k], u) / 2, top + 31 * u, labels[k], u, ink);
    }
}

/* ---- layout ------------------------------------------------------------------------------ */

/* In 64 bits: a side may be INT_MAX, and rounding it up to a multiple of the factor goes beyond
 * int. The results fit int: the factor is at most the longest side, the map's sides at most
 * max_side. */
void wc_quicklook_layout(int width, int height, int max_side, wc_quicklook_info *info) {
    if (max_side <= 0) max_side = WC_QUICKLOOK_MAX_SIDE;
    const int64_t longest = WC_MAX(width, height), side = max_side;
    const int64_t factor = WC_MAX(1, (longest + side - 1) / side);
    info->factor = (int)factor;
    info->map_width = (int)(((int64_t)width + factor - 1) / factor);
    info->map_height = (int)(((int64_t)height + factor - 1) / factor);
    info->width = WC_MAX(info->map_width, WC_QUICKLOOK_MIN_WIDTH);
    /* the legend grows with the picture so it stays legible when the PNG is viewed scaled */
    int u = WC_MAX(1, info->width / 640);
    info->legend_height = WC_QUICKLOOK_LEGEND_PX * u;
    info->height = info->map_height + info->legend_height;
}

/* ---- writing ----------------------------------------------------------------------------- */


/* Writes rows [y0, y0 + cv->h) of the picture from a canvas into the MEM dataset. */
static int put_rows(GDALDatasetH mem, int y0, const canvas *cv) {
    return GDALDatasetRasterIO(mem, GF_Write, 0, y0, cv->w, cv->h, cv->px, cv->w, cv->h, GDT_Byte,
                               4, NULL, 0, 0, 0) == CE_None
               ? WC_OK
               : WC_ERR;
}

/* Paints the map part of the picture into the MEM dataset a band of rows at a time (the picture
 * is the only full-size buffer: the MEM dataset's own). Values that are not probabilities are
 * transparent and counted in *bad. */
static int paint_map(GDALDatasetH mem, GDALRasterBandH band, const char *src, int W, int H,
                     const wc_quicklook_info *info, int64_t *bad) {
    int has_nodata = 0;
    double nodata = GDALGetRasterNoDataValue(band, &has_nodata);
    const int mw = info->map_width, f = info->factor;
    const int chunk = WC_MAX(1, (1 << 20) / mw); /* about 4 MiB of floats per read */
    float *buf = WC_ALLOC(sizeof(float) * (size_t)chunk * mw);
    canvas cv = {.w = info->width};
    cv.px = WC_ALLOC((size_t)4 * chunk * cv.w);
    int rc = WC_OK;
    for (int oy0 = 0; oy0 < info->map_height && rc == WC_OK; oy0 += chunk) {
        int oy1 = WC_MIN(info->map_height, oy0 + chunk);
        /* source rows in 64 bits: oy1 * f may pass INT_MAX on the last chunk of a tall map;
         * clipped to the raster they fit GDAL's int again */
        const int sy0 = (int)WC_MIN((int64_t)oy0 * f, (int64_t)H);
        const int sy1 = (int)WC_MIN((int64_t)oy1 * f, (int64_t)H);
        GDALRasterIOExtraArg extra;
        INIT_RASTERIO_EXTRA_ARG(extra);
        /* averaging skips nodata; a box with no valid pixel stays nodata */
        extra.eResampleAlg = f > 1 ? GRIORA_Average : GRIORA_NearestNeighbour;
        CPLErrorReset();
        if (GDALRasterIOEx(band, GF_Read, 0, sy0, W, sy1 - sy0, buf, mw, oy1 - oy0, GDT_Float32, 0,
                           0, &extra) != CE_None) {
            wc_error("quick-look: reading rows %d-%d of %s failed: %s", sy0, sy1 - 1, src,
                     CPLGetLastErrorMsg());
            rc = WC_ERR;
            break;
        }
        cv.h = oy1 - oy0;
        const size_t plane = (size_t)cv.w * cv.h;
        memset(cv.px, 0, 4 * plane); /* transparent */
        for (int y = 0; y < cv.h; y++)
            for (int x = 0; x < mw; x++) {
                float v = buf[(size_t)y * mw + x];
                size_t i = (size_t)y * cv.w + x;
                if (!isfinite(v) || (has_nodata && v == (float)nodata)) continue;
                if (!(v >= 0.0f && v <= 1.0f)) { /* not a probability: no colour fits it */
                    (*bad)++;
                    continue;
                }
                unsigned char rgb[3];
                wc_quicklook_color(v, rgb);
                cv.px[i] = rgb[0], cv.px[plane + i] = rgb[1], cv.px[2 * plane + i] = rgb[2];
                cv.px[3 * plane + i] = 255;
            }
        if (put_rows(mem, oy0, &cv) != WC_OK) {
            wc_error("quick-look: building the picture of %s in memory failed", src);
            rc = WC_ERR;
        }
    }
    free(cv.px);
    free(buf);
    return rc;
}

int wc_quicklook_write(const char *src_path, int band_no, const char *png_path, int max_side,
                       wc_quicklook_info *info_out) {
    wc_raster_init();
    wc_quicklook_info info;
    wc_gdal_errors err = {0};
    wc_gdal_errors_push(&err);
    int rc = WC_ERR;
    char *tmp = wc_temp_path(png_path, "tmp");
    canvas cv = {0};
    GDALDatasetH mem = NULL, png = NULL;
    GDALDatasetH src = GDALOpenEx(src_path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    if (!src || GDALGetRasterCount(src) < band_no) {
        wc_error("quick-look: cannot read band %d of %s: %s", band_no, src_path,
                 err.failures ? err.last : "no such band");
        goto out;
    }
    const int W = GDALGetRasterXSize(src), H = GDALGetRasterYSize(src);
    wc_quicklook_layout(W, H, max_side, &info);
    GDALDriverH memdrv = GDALGetDriverByName("MEM"), pngdrv = GDALGetDriverByName("PNG");
    if (!memdrv || !pngdrv) {
        wc_error("quick-look: GDAL lacks the %s driver", memdrv ? "PNG" : "MEM");
        goto out;
    }
    mem = GDALCreate(memdrv, "", info.width, info.height, 4, GDT_Byte, NULL); /* zeroed */
    if (!mem) {
        wc_error("quick-look: cannot allocate a %dx%d picture: %s", info.width, info.height,
                 err.failures ? err.last : "unknown error");
        goto out;
    }
    int64_t bad = 0;
    if (paint_map(mem, GDALGetRasterBand(src, band_no), src_path, W, H, &info, &bad) != WC_OK)
        goto out;
    if (bad)
        wc_warn("quick-look: %" PRId64 " pixels of the picture of %s (band %d) average to values "
                "outside [0, 1], which are not probabilities: left transparent",
                bad, src_path, band_no);
    cv.w = info.width, cv.h = info.legend_height;
    cv.px = WC_CALLOC((size_t)4 * cv.w * cv.h, 1);
    draw_legend(&cv, 0, info.legend_height / WC_QUICKLOOK_LEGEND_PX);
    if (put_rows(mem, info.map_height, &cv) != WC_OK) {
        wc_error("quick-look: drawing the legend failed: %s",
                 err.failures ? err.last : "unknown error");
        goto out;
    }
    static const GDALColorInterp ci[4] = {GCI_RedBand, GCI_GreenBand, GCI_BlueBand, GCI_AlphaBand};
    for (int b = 0; b < 4; b++)
        GDALSetRasterColorInterpretation(GDALGetRasterBand(mem, b + 1), ci[b]);
    int before = err.failures;
    png = GDALCreateCopy(pngdrv, tmp, mem, FALSE, NULL, NULL, NULL);
    if (png) GDALClose(png); /* the PNG is encoded and flushed here: errors surface now */
    if (!png || err.failures != before) {
        wc_error("quick-look: writing %s failed: %s", png_path,
                 err.failures ? err.last : "unknown error");
        goto out;
    }
    /* reopen: a complete PNG of the expected size, not a truncated file */
    GDALDatasetH chk = GDALOpenEx(tmp, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    int good = chk && GDALGetRasterXSize(chk) == info.width &&
               GDALGetRasterYSize(chk) == info.height && GDALGetRasterCount(chk) == 4;
    if (chk) GDALClose(chk);
    if (!good) {
        wc_error("quick-look: %s does not read back as a %dx%d RGBA picture", png_path, info.width,
                 info.height);
        goto out;
    }
    if (wc_fsync_path(tmp, 0) != WC_OK) goto out;
    if (rename(tmp, png_path) != 0) {
        wc_error("quick-look: cannot rename %s to %s: %s", tmp, png_path, strerror(errno));
        goto out;
    }
    if (wc_fsync_parent(png_path) != WC_OK)
        wc_warn("%s is complete, but its directory entry may not survive a crash", png_path);
    if (info_out) *info_out = info;
    rc = WC_OK;
out:
    if (mem) GDALClose(mem);
    if (src) GDALClose(src);
    if (rc != WC_OK) {
        unlink(tmp);
        char *aux = WC_ALLOC(strlen(tmp) + 16);
        sprintf(aux, "%s.aux.xml", tmp);
        unlink(aux);
        free(aux);
    }
    wc_gdal_errors_pop();
    free(cv.px);
    free(tmp);
    return rc;
}
