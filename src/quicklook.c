/* quicklook.c: the quick-look PNG of a risk map; see quicklook.h.
 *
 * The picture is built in a GDAL MEM dataset (4 Byte bands: R, G, B, A; the only full-size
 * buffer), filled a band of rows at a time from averaged reads of the source band, then
 * published by the raster writer as a PNG copy of it (GDAL's PNG driver): a temporary file,
 * verified, renamed over the target (rwriter.h). Only probabilities get a colour: nodata, NaN,
 * Inf and any value outside [0, 1] are transparent (the last counted and reported), never a
 * colour of the ramp.
 *
 * Not here: what the values mean (predict.c), MPI. */
#include "wildcpu/quicklook.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cpl_error.h>
#include <gdal.h>

#include "wildcpu/raster.h"
#include "wildcpu/rwriter.h"
#include "wildcpu/util.h"

/* ---- colour ramp ------------------------------------------------------------------------- */

/* ColorBrewer YlOrRd, 9 classes (matplotlib's YlOrRd): lightness falls monotonically from pale
 * yellow to dark red, so higher risk always reads darker, also in grey-scale print. */
const unsigned char WC_QUICKLOOK_RAMP[WC_QUICKLOOK_NSTOPS][3] = {
    {255, 255, 204}, {255, 237, 160}, {254, 217, 118}, {254, 178, 76}, {253, 141, 60},
    {252, 78, 42},   {227, 26, 28},   {189, 0, 38},    {128, 0, 38},
};

void wc_quicklook_color(double p, unsigned char rgb[3]) {
    if (!(p > 0)) p = 0; /* also NaN */
    if (p > 1) p = 1;
    const int last = WC_QUICKLOOK_NSTOPS - 1;
    double s = p * last;
    int i = (int)s;
    if (i > last - 1) i = last - 1;
    WC_ASSERT(i >= 0 && i < last); /* the stop below p, and the next one */
    double t = s - i;
    const unsigned char(*R)[3] = WC_QUICKLOOK_RAMP;
    for (int c = 0; c < 3; c++)
        rgb[c] = (unsigned char)lround(R[i][c] + t * (R[i + 1][c] - R[i][c]));
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
    {'c', {0x00, 0x00, 0x0E, 0x10, 0x10, 0x11, 0x0E}},
    {'d', {0x01, 0x01, 0x0D, 0x13, 0x11, 0x11, 0x0F}},
    {'e', {0x00, 0x00, 0x0E, 0x11, 0x1F, 0x10, 0x0E}},
    {'i', {0x04, 0x00, 0x0C, 0x04, 0x04, 0x04, 0x0E}},
    {'l', {0x0C, 0x04, 0x04, 0x04, 0x04, 0x04, 0x0E}},
    {'n', {0x00, 0x00, 0x16, 0x19, 0x11, 0x11, 0x11}},
    {'o', {0x00, 0x00, 0x0E, 0x11, 0x11, 0x11, 0x0E}},
    {'p', {0x00, 0x00, 0x1E, 0x11, 0x1E, 0x10, 0x10}},
    {'r', {0x00, 0x00, 0x16, 0x19, 0x10, 0x10, 0x10}},
    {'s', {0x00, 0x00, 0x0E, 0x10, 0x0E, 0x01, 0x1E}},
    {'t', {0x08, 0x08, 0x1C, 0x08, 0x08, 0x09, 0x06}},
    {'u', {0x00, 0x00, 0x11, 0x11, 0x11, 0x13, 0x0D}},
    {'v', {0x00, 0x00, 0x11, 0x11, 0x11, 0x0A, 0x04}},
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

/* A line of width u from (x0, y0) to (x1, y1), by steps of at most one pixel along the longer
 * axis. */
static void draw_line(canvas *cv, double x0, double y0, double x1, double y1, int u,
                      const unsigned char rgba[4]) {
    const int n = (int)ceil(fmax(fabs(x1 - x0), fabs(y1 - y0))) + 1;
    for (int k = 0; k <= n; k++) {
        double t = (double)k / n;
        fill_rect(cv, (int)lround(x0 + t * (x1 - x0)) - u / 2,
                  (int)lround(y0 + t * (y1 - y0)) - u / 2, u, u, rgba);
    }
}

/* ---- layout ------------------------------------------------------------------------------ */

/* In 64 bits: a side may be INT_MAX, and rounding it up to a multiple of the factor goes beyond
 * int. The results fit int: the factor is at most the longest side, the map's sides at most
 * max_side. */
void wc_quicklook_layout(int width, int height, int max_side, wc_quicklook_info *info) {
    wc_quicklook_layout_scaled(width, height, 1.0, max_side, info);
}

void wc_quicklook_layout_scaled(int width, int height, double row_scale, int max_side,
                                wc_quicklook_info *info) {
    if (max_side <= 0) max_side = WC_QUICKLOOK_MAX_SIDE;
    if (!(row_scale > 0) || !isfinite(row_scale)) row_scale = 1;
    const int64_t side = max_side;
    int64_t factor;
    if (row_scale == 1) { /* exactly, in integers: sides up to INT_MAX */
        const int64_t longest = WC_MAX(width, height);
        factor = WC_MAX(1, (longest + side - 1) / side);
    } else {
        const double longest = fmax((double)width, (double)height * row_scale);
        factor = WC_MAX(1, (int64_t)ceil(longest / (double)side));
        factor = WC_MIN(factor, (int64_t)WC_MAX(width, height));
    }
    info->factor = (int)factor;
    info->map_width = (int)(((int64_t)width + factor - 1) / factor);
    info->box_rows = (int)(((int64_t)height + factor - 1) / factor);
    info->map_height = info->box_rows;
    if (row_scale != 1)
        info->map_height = (int)WC_MIN(side, WC_MAX(1, llround(info->box_rows * row_scale)));
    info->width = WC_MAX(info->map_width, WC_QUICKLOOK_MIN_WIDTH);
    /* the legend grows with the picture so it stays legible when the PNG is viewed scaled */
    int u = WC_MAX(1, info->width / 640);
    info->legend_height = WC_QUICKLOOK_LEGEND_PX * u;
    info->height = info->map_height + info->legend_height;
}

double wc_quicklook_row_scale(const double gt[6], const char *wkt) {
    if (!wc_gt_axis_aligned(gt) || !(gt[1] != 0) || (wkt && wc_raster_crs_is_geographic(wkt)))
        return 1;
    const double r = fabs(gt[5]) / fabs(gt[1]);
    return isfinite(r) && r > 0 && fabs(r - 1) > 1e-9 ? r : 1;
}

/* The first picture row (of m) whose nearest box row (of b) is box row oy or a later one: row j
 * shows box row floor((j + 1/2) b / m). */
static int first_picture_row(int64_t oy, int64_t b, int64_t m) {
    if (oy >= b) return (int)m;
    const int64_t num = 2 * m * oy - b; /* j >= num / 2b */
    return num <= 0 ? 0 : (int)((num + 2 * b - 1) / (2 * b));
}

/* paint_map's reads: about 4 MiB of floats, and at most 8 million pixels of the map behind them
 * (a fraction of a second), so that a stop is honoured and progress said between reads */
static int rows_per_read(const wc_quicklook_info *info, int W) {
    const int64_t per_row = (int64_t)W * info->factor;
    return (int)WC_MAX(1, WC_MIN((1 << 20) / info->map_width, ((int64_t)8 << 20) / per_row));
}

size_t wc_quicklook_bytes(const wc_quicklook_info *info) {
    const size_t picture = (size_t)4 * (size_t)info->width * (size_t)info->height;
    /* a read's floats and its painted rows (at most 4 MiB, and 4 bytes a pixel of as many
     * rows), and those rows as the picture's (row-scaled: up to map_height / box_rows times as
     * many, and two) */
    const size_t rows = (size_t)(1 << 20) / (size_t)info->map_width;
    const size_t out_rows = info->map_height == info->box_rows
                                ? 0
                                : rows * (size_t)info->map_height / (size_t)info->box_rows + 2;
    return picture + ((size_t)4 << 20) + (size_t)4 * (rows + out_rows) * (size_t)info->width;
}

/* ---- writing ----------------------------------------------------------------------------- */

/* A picture of width x height RGBA pixels, built in memory (zeroed: transparent) and published
 * as a PNG copy of it (rwriter.h). */
static wc_rwriter *picture_writer(const char *png_path, int width, int height) {
    static const wc_rwriter_band rgba[4] = {
        {.color = "Red"}, {.color = "Green"}, {.color = "Blue"}, {.color = "Alpha"}};
    const wc_rwriter_opts o = {.driver = "MEM",
                               .width = width,
                               .height = height,
                               .nbands = 4,
                               .type = WC_DT_BYTE,
                               .bands = rgba,
                               .copy_driver = "PNG"};
    return wc_rwriter_create(png_path, &o);
}

struct wc_quicklook {
    wc_rwriter *w; /* the picture, drawn: its MEM dataset, published as a PNG */
    wc_quicklook_info info;
};

/* Whether GDAL knows rows [sy0, sy1) of band to hold no data (the tiles a sparse GeoTIFF never
 * stored, as a map's working file leaves those all nodata; a VRT's holes): they are not read. */
static int rows_empty(GDALRasterBandH band, int W, int sy0, int sy1) {
    const int st = GDALGetDataCoverageStatus(band, 0, sy0, W, sy1 - sy0, 0, NULL);
    /* only EMPTY: with DATA the rows are partly empty, and UNIMPLEMENTED knows nothing */
    return st == GDAL_DATA_COVERAGE_STATUS_EMPTY;
}

/* Rows [sy0, sy1) of band (W wide) into buf as nx x ny picture pixels (nx floats a row), each
 * the average of an f x f box of the map (GDAL's average skips nodata; a box with no valid pixel
 * stays nodata): the last column and row of boxes are what remains of the map, up to f wide.
 * One read of W columns into nx would make every box W / nx wide (2.9993 px for 8200 columns
 * in 2734), drifting up to f - 1 pixels from its block; so the whole boxes are one read, and
 * the remainders three thin ones. */
static CPLErr read_boxes(GDALRasterBandH band, int W, int sy0, int sy1, int f, float *buf, int nx,
                         int ny) {
    GDALRasterIOExtraArg extra;
    INIT_RASTERIO_EXTRA_ARG(extra);
    extra.eResampleAlg = f > 1 ? GRIORA_Average : GRIORA_NearestNeighbour;
    if (f == 1) /* every box a pixel: one read */
        return GDALRasterIOEx(band, GF_Read, 0, sy0, W, sy1 - sy0, buf, nx, ny, GDT_Float32, 0, 0,
                              &extra);
    const int full_w = (nx - 1) * f, full_h = (ny - 1) * f; /* whole boxes, then the rest */
    const int xs[2] = {0, full_w}, ws[2] = {full_w, W - full_w}, bx[2] = {nx - 1, 1};
    const int ys[2] = {sy0, sy0 + full_h}, hs[2] = {full_h, sy1 - sy0 - full_h},
              by[2] = {ny - 1, 1};
    const GSpacing line = (GSpacing)nx * (GSpacing)sizeof(float);
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 2; c++) {
            if (bx[c] == 0 || by[r] == 0) continue;
            float *at = buf + (size_t)(r ? ny - 1 : 0) * (size_t)nx + (size_t)(c ? nx - 1 : 0);
            const CPLErr e = GDALRasterIOEx(band, GF_Read, xs[c], ys[r], ws[c], hs[r], at, bx[c],
                                            by[r], GDT_Float32, sizeof(float), line, &extra);
            if (e != CE_None) return e;
        }
    return CE_None;
}

/* Paints the map part of the picture into the writer's MEM dataset a band of rows at a time (the
 * picture is the only full-size buffer: the MEM dataset's own), asking ask->keep_going between
 * them and saying how far it is as ask->what (when given) every WC_PROGRESS_SECONDS. Values that
 * are not probabilities are transparent and counted in *bad. Returns WC_OK, WC_ERR after a
 * message, or WC_QUICKLOOK_STOPPED. */
static int paint_map(wc_rwriter *w, GDALRasterBandH band, const char *src, int W, int H,
                     const wc_quicklook_info *info, const wc_quicklook_ask *ask, int64_t *bad) {
    /* a picture is looked at north-up, west to east: the rows of a south-up map (or the
     * columns of one whose columns run east to west) are painted the other way round; a map
     * with rotation terms is painted as stored. Terms of round-off size (a fit to GCPs leaves
     * 1e-13) are none, as for the window layout and predict's warnings (wc_gt_axis_aligned):
     * compared with 0 they left such a south-up map's picture upside down */
    double gt[6];
    const int placed =
        GDALGetGeoTransform(GDALGetBandDataset(band), gt) == CE_None && wc_gt_axis_aligned(gt);
    const int flip_y = placed && gt[5] > 0, flip_x = placed && gt[1] < 0;
    int has_nodata = 0;
    double nodata = GDALGetRasterNoDataValue(band, &has_nodata);
    const int mw = info->map_width, f = info->factor, boxes = info->box_rows;
    const int mh = info->map_height, scaled = mh != boxes;
    const int chunk = rows_per_read(info, W);
    float *buf = WC_ALLOC_FOR(sizeof(float) * (size_t)chunk * mw, "the picture's rows of the map");
    canvas cv = {.w = info->width}; /* a read's box rows, painted */
    cv.px = WC_ALLOC_FOR((size_t)4 * chunk * cv.w, "the picture's pixels");
    /* row-scaled (pixels not square on the ground): those rows as the picture's, each picture
     * row the nearest box row */
    canvas pc = {.w = info->width};
    const int most = scaled ? (int)((int64_t)chunk * mh / boxes + 2) : 0;
    if (scaled) pc.px = WC_ALLOC_FOR((size_t)4 * most * pc.w, "the picture's scaled rows");
    wc_progress progress;
    wc_progress_start(&progress);
    int rc = WC_OK;
    for (int oy0 = 0; oy0 < boxes && rc == WC_OK; oy0 += chunk) {
        if (ask && ask->keep_going && !ask->keep_going(ask->arg)) {
            rc = WC_QUICKLOOK_STOPPED;
            break;
        }
        if (ask && ask->what && wc_progress_due(&progress)) {
            const double done = (double)oy0 / boxes;
            wc_info("%s: rows 0-%" PRId64 " of %d of the map drawn (%.0f%%): %.1f s, about %.0f "
                    "s left",
                    ask->what, WC_MIN((int64_t)oy0 * f, (int64_t)H) - 1, H, 100 * done,
                    wc_progress_elapsed(&progress), wc_progress_left(&progress, done));
        }
        int oy1 = WC_MIN(boxes, oy0 + chunk);
        /* source rows in 64 bits: oy1 * f may pass INT_MAX on the last chunk of a tall map;
         * clipped to the raster they fit GDAL's int again */
        const int sy0 = (int)WC_MIN((int64_t)oy0 * f, (int64_t)H);
        const int sy1 = (int)WC_MIN((int64_t)oy1 * f, (int64_t)H);
        cv.h = oy1 - oy0;
        const size_t plane = (size_t)cv.w * cv.h;
        memset(cv.px, 0, 4 * plane);          /* transparent */
        if (!rows_empty(band, W, sy0, sy1)) { /* else transparent, as their nodata would be */
            CPLErrorReset();
            if (read_boxes(band, W, sy0, sy1, f, buf, mw, oy1 - oy0) != CE_None) {
                wc_error("quick-look: reading rows %d-%d of %s failed: %s", sy0, sy1 - 1, src,
                         CPLGetLastErrorMsg());
                rc = WC_ERR;
                break;
            }
            for (int y = 0; y < cv.h; y++)
                for (int x = 0; x < mw; x++) {
                    float v = buf[(size_t)y * mw + x];
                    const int row = flip_y && !scaled ? cv.h - 1 - y : y; /* see below */
                    size_t i = (size_t)row * cv.w + (flip_x ? mw - 1 - x : x);
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
        }
        /* the picture rows [j0, j1) these box rows make, north-up: a south-up map's rows the
         * other way round (flipped as painted when each box row is one picture row) */
        if (!scaled) {
            rc = wc_rwriter_write(w, 0, flip_y ? mh - oy1 : oy0, cv.h, cv.px, 0);
            continue;
        }
        const int j0 = first_picture_row(oy0, boxes, mh), j1 = first_picture_row(oy1, boxes, mh);
        pc.h = j1 - j0;
        const size_t pc_plane = (size_t)pc.w * pc.h;
        for (int k = 0; k < pc.h; k++) {
            const int64_t j = flip_y ? j1 - 1 - k : j0 + k;
            const int64_t box = (2 * j + 1) * boxes / (2 * (int64_t)mh); /* the nearest */
            for (int c = 0; c < 4; c++)
                memcpy(pc.px + c * pc_plane + (size_t)k * pc.w,
                       cv.px + c * plane + (size_t)(box - oy0) * cv.w, (size_t)cv.w);
        }
        if (pc.h > 0) rc = wc_rwriter_write(w, 0, flip_y ? mh - j1 : j0, pc.h, pc.px, 0);
    }
    free(pc.px);
    free(cv.px);
    free(buf);
    return rc;
}

wc_quicklook *wc_quicklook_draw(void *src_ds, const char *src_name, int band_no,
                                const char *png_path, int max_side, const wc_quicklook_ask *ask,
                                int *stopped) {
    wc_raster_init();
    *stopped = 0;
    GDALDatasetH src = src_ds;
    if (GDALGetRasterCount(src) < band_no) {
        wc_error("quick-look: cannot read band %d of %s: no such band", band_no, src_name);
        return NULL;
    }
    wc_quicklook *q = WC_CALLOC(1, sizeof *q);
    const int W = GDALGetRasterXSize(src), H = GDALGetRasterYSize(src);
    double gt[6];
    const double row_scale = GDALGetGeoTransform(src, gt) == CE_None
                                 ? wc_quicklook_row_scale(gt, GDALGetProjectionRef(src))
                                 : 1;
    wc_quicklook_layout_scaled(W, H, row_scale, max_side, &q->info);
    const wc_quicklook_info *info = &q->info;
    int64_t bad = 0;
    int rc = WC_ERR;
    if ((q->w = picture_writer(png_path, info->width, info->height)))
        rc = paint_map(q->w, GDALGetRasterBand(src, band_no), src_name, W, H, info, ask, &bad);
    if (rc == WC_OK && bad)
        wc_warn("quick-look: %" PRId64 " pixels of the picture of %s (band %d) average to values "
                "outside [0, 1], which are not probabilities: left transparent",
                bad, src_name, band_no);
    canvas cv = {.w = info->width, .h = info->legend_height};
    if (rc == WC_OK) {
        cv.px = WC_CALLOC((size_t)4 * cv.w * cv.h, 1);
        draw_legend(&cv, 0, info->legend_height / WC_QUICKLOOK_LEGEND_PX);
        rc = wc_rwriter_write(q->w, 0, info->map_height, cv.h, cv.px, 0);
        free(cv.px);
    }
    if (rc == WC_OK) return q;
    *stopped = rc == WC_QUICKLOOK_STOPPED;
    wc_quicklook_discard(q);
    return NULL;
}

int wc_quicklook_publish(wc_quicklook *q, wc_quicklook_info *info) {
    if (info) *info = q->info;
    const int rc = wc_rwriter_commit(q->w) == WC_OK ? WC_OK : WC_ERR;
    free(q);
    return rc;
}

void wc_quicklook_discard(wc_quicklook *q) {
    if (!q) return;
    wc_rwriter_abort(q->w);
    free(q);
}

int wc_quicklook_write(const char *src_path, int band_no, const char *png_path, int max_side,
                       wc_quicklook_info *info_out) {
    wc_raster_init();
    wc_gdal_errors err = {0};
    wc_gdal_errors_push(&err);
    GDALDatasetH src = GDALOpenEx(src_path, GDAL_OF_RASTER | GDAL_OF_READONLY, NULL, NULL, NULL);
    wc_quicklook *q = NULL;
    int stopped;
    if (!src)
        wc_error("quick-look: cannot read band %d of %s: %s", band_no, src_path,
                 err.failures ? err.last : "no such file");
    else
        q = wc_quicklook_draw(src, src_path, band_no, png_path, max_side, NULL, &stopped);
    const int rc = q ? wc_quicklook_publish(q, info_out) : WC_ERR;
    if (src) GDALClose(src);
    wc_gdal_errors_pop();
    return rc;
}

/* ---- the reliability diagram --------------------------------------------------------------- */

/* Layout at scale 1 (the picture is drawn at scale 2): the plot's square, its margins. */
enum { REL_SIDE = 200, REL_LEFT = 30, REL_TOP = 22, REL_RIGHT = 12, REL_BOTTOM = 34 };

int wc_quicklook_reliability(const char *png_path, int nbins, const int64_t *count,
                             const double *predicted, const double *observed) {
    static const unsigned char white[4] = {255, 255, 255, 255}, ink[4] = {40, 40, 40, 255},
                               grey[4] = {170, 170, 170, 255}, curve[4] = {60, 60, 60, 255};
    const int u = 2, side = REL_SIDE * u, x0 = REL_LEFT * u, y0 = REL_TOP * u;
    canvas cv = {.w = (REL_LEFT + REL_SIDE + REL_RIGHT) * u,
                 .h = (REL_TOP + REL_SIDE + REL_BOTTOM) * u};
    wc_raster_init();
    wc_rwriter *w = picture_writer(png_path, cv.w, cv.h);
    if (!w) return WC_ERR;
    cv.px = WC_CALLOC((size_t)4 * cv.w * cv.h, 1);
    fill_rect(&cv, 0, 0, cv.w, cv.h, white);
    /* the plot: x the mean predicted probability of a bin, y the share of it that burned; a
     * calibrated model's points lie on the diagonal */
#define PX(p) (x0 + (p) * (side - 1))
#define PY(p) (y0 + (1 - (p)) * (side - 1))
    draw_line(&cv, PX(0.0), PY(0.0), PX(1.0), PY(1.0), u, grey);
    fill_rect(&cv, x0 - u, y0 - u, side + 2 * u, u, ink); /* the frame */
    fill_rect(&cv, x0 - u, y0 + side, side + 2 * u, u, ink);
    fill_rect(&cv, x0 - u, y0 - u, u, side + 2 * u, ink);
    fill_rect(&cv, x0 + side, y0 - u, u, side + 2 * u, ink);
    static const char *ticks[] = {"0", "0.5", "1"};
    for (int k = 0; k < 3; k++) {
        const double t = k * 0.5;
        const int xt = (int)lround(PX(t)), yt = (int)lround(PY(t));
        fill_rect(&cv, xt - u / 2, y0 + side, u, 3 * u, ink);
        draw_text(&cv, xt - text_width(ticks[k], u) / 2, y0 + side + 5 * u, ticks[k], u, ink);
        fill_rect(&cv, x0 - 3 * u, yt - u / 2, 3 * u, u, ink);
        draw_text(&cv, x0 - 5 * u - text_width(ticks[k], u), yt - 3 * u, ticks[k], u, ink);
    }
    draw_text(&cv, x0, 7 * u, "reliability", u, ink);
    draw_text(&cv, x0 + side - text_width("observed", u), 7 * u, "observed", u, grey);
    draw_text(&cv, x0 + (side - text_width("predicted", u)) / 2, y0 + side + 16 * u, "predicted", u,
              ink);
    /* the curve through the non-empty bins, then each bin as a square in the ramp's colour */
    double px = NAN, py = NAN;
    for (int k = 0; k < nbins; k++) {
        if (count[k] <= 0 || !isfinite(predicted[k]) || !isfinite(observed[k])) continue;
        if (isfinite(px))
            draw_line(&cv, PX(px), PY(py), PX(predicted[k]), PY(observed[k]), u, curve);
        px = predicted[k], py = observed[k];
    }
    for (int k = 0; k < nbins; k++) {
        if (count[k] <= 0 || !isfinite(predicted[k]) || !isfinite(observed[k])) continue;
        unsigned char c[4] = {0, 0, 0, 255};
        wc_quicklook_color(predicted[k], c);
        const int cx = (int)lround(PX(predicted[k])), cy = (int)lround(PY(observed[k]));
        fill_rect(&cv, cx - 4 * u, cy - 4 * u, 8 * u, 8 * u, ink);
        fill_rect(&cv, cx - 3 * u, cy - 3 * u, 6 * u, 6 * u, c);
    }
#undef PX
#undef PY
    int rc = wc_rwriter_write(w, 0, 0, cv.h, cv.px, 0);
    free(cv.px);
    if (rc != WC_OK) {
        wc_rwriter_abort(w);
        return WC_ERR;
    }
    return wc_rwriter_commit(w) == WC_OK ? WC_OK : WC_ERR;
}
