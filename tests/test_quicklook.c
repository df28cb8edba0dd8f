/* test_quicklook.c: the risk map's quick-look picture: the colour ramp is perceptually ordered,
 * the layout (downsampling factor, legend, minimum width) follows its rules up to sides of
 * INT_MAX, and a written PNG has nodata transparent, the ramp's end colours where the map is 0
 * and 1, values that are not probabilities (NaN, Inf, outside [0, 1]) transparent, and a
 * downsampled size when the raster exceeds the limit, also for a VRT INT_MAX pixels a side.
 * Reads the PNG back through GDAL. */
#include <gdal.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <ogr_srs_api.h>

#include "harness.h"
#include "wildcpu/quicklook.h"
#include "wildcpu/raster.h"
#include "wildcpu/util.h"

static double luminance(const unsigned char c[3]) {
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
}

static void test_ramp_darkens_monotonically(void) {
    unsigned char prev[3], c[3];
    wc_quicklook_color(0, prev);
    CHECK(prev[0] == 255 && prev[1] == 255 && prev[2] == 204, "p=0 is %d,%d,%d", prev[0], prev[1],
          prev[2]);
    /* between the ramp's 9 stops: strictly darker */
    for (int i = 1; i <= 8; i++) {
        wc_quicklook_color(i / 8.0, c);
        CHECK(luminance(c) < luminance(prev) - 5, "stop %d not darker", i);
        memcpy(prev, c, 3);
    }
    /* finely: never lighter by more than one 8-bit rounding step of blue (0.0722) */
    wc_quicklook_color(0, prev);
    for (int i = 1; i <= 1000; i++) {
        wc_quicklook_color(i / 1000.0, c);
        CHECK(luminance(c) <= luminance(prev) + 0.075, "lighter at p=%g", i / 1000.0);
        memcpy(prev, c, 3);
    }
    CHECK(c[0] == 128 && c[1] == 0 && c[2] == 38, "p=1 is %d,%d,%d", c[0], c[1], c[2]);
    wc_quicklook_color(-3, c);
    CHECK(c[0] == 255 && c[1] == 255, "below 0 clamps");
    wc_quicklook_color(7, c);
    CHECK(c[0] == 128 && c[1] == 0, "above 1 clamps");
}

static void test_layout(void) {
    wc_quicklook_info q;
    wc_quicklook_layout(512, 512, 0, &q);
    CHECK(q.factor == 1 && q.width == 512 && q.map_height == 512, "512: factor %d width %d",
          q.factor, q.width);
    CHECK(q.height == 512 + WC_QUICKLOOK_LEGEND_PX, "512: height %d", q.height);
    wc_quicklook_layout(10000, 300, 4096, &q);
    CHECK(q.factor == 3 && q.map_width == 3334 && q.map_height == 100, "10000x300: %d, %dx%d",
          q.factor, q.map_width, q.map_height);
    CHECK(q.legend_height == WC_QUICKLOOK_LEGEND_PX * (3334 / 640), "legend %d", q.legend_height);
    CHECK(WC_MAX(q.map_width, q.map_height) <= 4096, "within the limit");
    wc_quicklook_layout(100, 50, 0, &q);
    CHECK(q.width == WC_QUICKLOOK_MIN_WIDTH && q.map_width == 100, "narrow map padded: %d",
          q.width);
    wc_quicklook_layout(4097, 10, 4096, &q);
    CHECK(q.factor == 2 && q.map_width == 2049, "just over the limit: %d %d", q.factor,
          q.map_width);
}

/* Pixels not square on the ground: the map's rows scaled to the ground's shape, within the
 * limit. */
static void test_layout_scaled(void) {
    wc_quicklook_info q;
    wc_quicklook_layout_scaled(256, 384, 20.0 / 30.0, 0, &q); /* 30 x 20 m pixels */
    CHECK(q.factor == 1 && q.map_width == 256 && q.map_height == 256 && q.box_rows == 384,
          "30 x 20 m: factor %d, %dx%d of %d box rows", q.factor, q.map_width, q.map_height,
          q.box_rows);
    wc_quicklook_layout_scaled(1000, 100, 3.0, 0, &q);
    CHECK(q.factor == 1 && q.map_height == 300 && q.box_rows == 100, "taller: %d of %d",
          q.map_height, q.box_rows);
    wc_quicklook_layout_scaled(4096, 4096, 1.5, 4096, &q);
    CHECK(q.factor == 2 && q.map_width == 2048 && q.map_height == 3072 && q.box_rows == 2048,
          "1.5 within 4096: factor %d, %dx%d", q.factor, q.map_width, q.map_height);
    wc_quicklook_layout_scaled(512, 512, 1.0, 0, &q);
    CHECK(q.map_height == 512 && q.box_rows == 512, "square: %d", q.map_height);
    const double north_up[6] = {0, 30, 0, 0, 0, -45}, turned[6] = {0, 30, 5, 0, 5, -45};
    CHECK(fabs(wc_quicklook_row_scale(north_up, "") - 1.5) < 1e-12, "30 x 45 m: %g",
          wc_quicklook_row_scale(north_up, ""));
    CHECK(wc_quicklook_row_scale(turned, "") == 1, "a rotated grid is painted as stored");
    CHECK(wc_quicklook_row_scale(north_up, SRS_WKT_WGS84_LAT_LONG) == 1,
          "degrees are drawn as stored");
}

/* Sides up to INT_MAX: the factor and the map's sides come out right, without overflow. */
static void test_layout_enormous(void) {
    wc_quicklook_info q;
    wc_quicklook_layout(INT_MAX, INT_MAX, 4096, &q);
    CHECK(q.factor == 524288 && q.map_width == 4096 && q.map_height == 4096,
          "INT_MAX x INT_MAX: factor %d, %dx%d", q.factor, q.map_width, q.map_height);
    wc_quicklook_layout(INT_MAX, 1, 0, &q);
    CHECK(q.factor == 524288 && q.map_width == 4096 && q.map_height == 1,
          "INT_MAX x 1: factor %d, %dx%d", q.factor, q.map_width, q.map_height);
    wc_quicklook_layout(7, INT_MAX, 1, &q);
    CHECK(q.factor == INT_MAX && q.map_width == 1 && q.map_height == 1,
          "7 x INT_MAX, limit 1: factor %d, %dx%d", q.factor, q.map_width, q.map_height);
    CHECK(q.height == 1 + q.legend_height && q.width == WC_QUICKLOOK_MIN_WIDTH, "%dx%d", q.width,
          q.height);
}

static void read_px(GDALDatasetH ds, int x, int y, int rgba[4]) {
    for (int b = 0; b < 4; b++) {
        unsigned char v = 0;
        if (GDALRasterIO(GDALGetRasterBand(ds, b + 1), GF_Read, x, y, 1, 1, &v, 1, 1, GDT_Byte, 0,
                         0) != CE_None)
            v = 77;
        rgba[b] = v;
    }
}

/* A one-band Float32 map of w x h values v (row after row) with nodata -9999, at path. */
static void write_map(const char *path, int w, int h, const float *v) {
    wc_raster_init();
    GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), path, w, h, 1, GDT_Float32, NULL);
    CHECK(ds != NULL, "create %s", path);
    if (!ds) return;
    GDALRasterBandH b = GDALGetRasterBand(ds, 1);
    GDALSetRasterNoDataValue(b, -9999);
    CHECK(GDALRasterIO(b, GF_Write, 0, 0, w, h, (void *)v, w, h, GDT_Float32, 0, 0) == CE_None,
          "write %s", path);
    GDALClose(ds);
}

/* A map and its picture in a temporary directory of their own. */
typedef struct {
    char dir[32], src[64], png[64];
} scratch;

static void scratch_open(scratch *t) {
    snprintf(t->dir, sizeof t->dir, "/tmp/test_quicklook.XXXXXX");
    CHECK(mkdtemp(t->dir) != NULL, "mkdtemp");
    snprintf(t->src, sizeof t->src, "%s/map.tif", t->dir);
    snprintf(t->png, sizeof t->png, "%s/map.png", t->dir);
}

static void scratch_close(const scratch *t) {
    unlink(t->src);
    unlink(t->png);
    rmdir(t->dir);
}

/* The picture of t's map at most `limit` px a side, after checking its layout (factor, the map's
 * part in picture pixels); the opened PNG, or NULL after a failed check. */
static GDALDatasetH picture_of(const scratch *t, int limit, int factor, int mw, int mh,
                               wc_quicklook_info *q) {
    CHECK(wc_quicklook_write(t->src, 1, t->png, limit, q) == WC_OK, "write png");
    CHECK(q->factor == factor && q->map_width == mw && q->map_height == mh, "factor %d, %dx%d",
          q->factor, q->map_width, q->map_height);
    GDALDatasetH p = GDALOpen(t->png, GA_ReadOnly);
    CHECK(p != NULL, "png opens");
    return p;
}

/* 300x200: left half 0, right half 1, a 42x42 nodata block at the top left; limit 100 px. */
static void test_write_downsampled(void) {
    scratch t;
    scratch_open(&t);
    const char *src = t.src, *png = t.png, *dir = t.dir;
    static float v[200][300];
    for (int y = 0; y < 200; y++)
        for (int x = 0; x < 300; x++) v[y][x] = y < 42 && x < 42 ? -9999.f : x < 150 ? 0.f : 1.f;
    write_map(src, 300, 200, &v[0][0]);
    wc_quicklook_info q;
    GDALDatasetH p = picture_of(&t, 100, 3, 100, 67, &q);
    if (p) {
        CHECK(GDALGetRasterXSize(p) == WC_QUICKLOOK_MIN_WIDTH && GDALGetRasterYSize(p) == q.height,
              "size %dx%d", GDALGetRasterXSize(p), GDALGetRasterYSize(p));
        CHECK(GDALGetRasterCount(p) == 4, "RGBA");
        int c[4];
        read_px(p, 5, 5, c);
        CHECK(c[3] == 0, "nodata transparent (alpha %d)", c[3]);
        read_px(p, 20, 40, c);
        CHECK(c[0] == 255 && c[1] == 255 && c[2] == 204 && c[3] == 255,
              "0 is pale yellow: %d,%d,%d,%d", c[0], c[1], c[2], c[3]);
        read_px(p, 80, 40, c);
        CHECK(c[0] == 128 && c[1] == 0 && c[2] == 38 && c[3] == 255, "1 is dark red: %d,%d,%d,%d",
              c[0], c[1], c[2], c[3]);
        read_px(p, 130, 10, c);
        CHECK(c[3] == 0, "padding beside a narrow map is transparent");
        read_px(p, 2, q.map_height + 2, c);
        CHECK(c[3] == 255 && c[0] == 255 && c[1] == 255, "legend strip is opaque white");
        GDALClose(p);
    }
    /* an unwritable destination fails cleanly and leaves nothing */
    char bad[96];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.png", dir);
    CHECK(wc_quicklook_write(src, 1, bad, 100, NULL) == WC_ERR, "bad directory refused");
    CHECK(wc_quicklook_write(src, 3, png, 100, NULL) == WC_ERR, "missing band refused");
    p = GDALOpen(png, GA_ReadOnly); /* the earlier picture survives the failed rewrite */
    CHECK(p != NULL, "earlier picture kept");
    if (p) GDALClose(p);
    scratch_close(&t);
}

/* Each picture pixel averages its own f x f block of the map, the last ones what remains: on a
 * 301 x 7 map at factor 4 (76 x 2), a valid pixel at column 299, row 3 (all else nodata) colours
 * picture pixel (74, 0) alone; one read of 301 columns into 76 made 3.96-pixel boxes, and the
 * pixel fell in box 75. */
static void test_write_exact_boxes(void) {
    scratch t;
    scratch_open(&t);
    static float v[7][301];
    for (int y = 0; y < 7; y++)
        for (int x = 0; x < 301; x++) v[y][x] = -9999.f;
    v[3][299] = 0.5f;
    write_map(t.src, 301, 7, &v[0][0]);
    wc_quicklook_info q;
    GDALDatasetH p = picture_of(&t, 100, 4, 76, 2, &q);
    for (int y = 0; p && y < 2; y++)
        for (int x = 0; x < 76; x++) {
            int c[4];
            read_px(p, x, y, c);
            CHECK((c[3] != 0) == (x == 74 && y == 0), "picture pixel (%d, %d): alpha %d", x, y,
                  c[3]);
        }
    if (p) GDALClose(p);
    scratch_close(&t);
}

/* The picture is north-up, west to east: a map stored south-up, or with its columns east to
 * west, is painted the other way round, also when its geotransform carries rotation terms of
 * round-off size (1e-13 of a pixel, as a fit to GCPs leaves them, which GDAL, QGIS and
 * wildcpu's own checks take for none); a map really turned is painted as stored. A 4 x 3 map
 * with one valid pixel, stored at column 0, row 0. */
static void test_orientation(void) {
    static const struct {
        double gt[6];
        int x, y; /* where the valid pixel is painted */
        const char *what;
    } cases[] = {
        {{500000, 30, 0, 4900000, 0, -30}, 0, 0, "north-up"},
        {{500000, 30, 0, 4899910, 0, 30}, 0, 2, "south-up"},
        {{500000, 30, 1e-13, 4899910, -1e-13, 30}, 0, 2, "south-up, round-off rotation terms"},
        {{500120, -30, 0, 4900000, 0, -30}, 3, 0, "columns east to west"},
        {{500120, -30, 2e-14, 4900000, 3e-15, -30},
         3,
         0,
         "columns east to west, round-off rotation terms"},
        {{500000, 25.98, 15, 4900000, 15, -25.98}, 0, 0, "turned by 30 degrees: as stored"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        scratch t;
        scratch_open(&t);
        float v[3][4];
        for (int y = 0; y < 3; y++)
            for (int x = 0; x < 4; x++) v[y][x] = x == 0 && y == 0 ? 0.5f : -9999.f;
        write_map(t.src, 4, 3, &v[0][0]);
        GDALDatasetH ds = GDALOpen(t.src, GA_Update);
        CHECK(ds && GDALSetGeoTransform(ds, (double *)cases[i].gt) == CE_None, "%s: gt",
              cases[i].what);
        if (ds) GDALClose(ds);
        wc_quicklook_info q;
        GDALDatasetH p = picture_of(&t, 0, 1, 4, 3, &q);
        for (int y = 0; p && y < 3; y++)
            for (int x = 0; x < 4; x++) {
                int c[4];
                read_px(p, x, y, c);
                CHECK((c[3] != 0) == (x == cases[i].x && y == cases[i].y),
                      "%s: picture pixel (%d, %d) alpha %d, the valid pixel belongs at (%d, %d)",
                      cases[i].what, x, y, c[3], cases[i].x, cases[i].y);
            }
        if (p) GDALClose(p);
        scratch_close(&t);
    }
}

/* A map whose band holds values that are not probabilities (as a broken writer or another
 * program might leave): they are transparent, never a colour of the ramp. One row of 8 pixels
 * at full resolution: 0.5, 7, -3, NaN, +Inf, -Inf, nodata, 1. */
static void test_not_probabilities_transparent(void) {
    char dir[] = "/tmp/test_quicklook.XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char src[64], png[64];
    snprintf(src, sizeof src, "%s/odd.tif", dir);
    snprintf(png, sizeof png, "%s/odd.png", dir);
    wc_raster_init();
    GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), src, 8, 1, 1, GDT_Float32, NULL);
    float v[8] = {0.5f, 7.0f, -3.0f, NAN, INFINITY, -INFINITY, -9999.0f, 1.0f};
    GDALRasterBandH b = GDALGetRasterBand(ds, 1);
    GDALSetRasterNoDataValue(b, -9999);
    CHECK(GDALRasterIO(b, GF_Write, 0, 0, 8, 1, v, 8, 1, GDT_Float32, 0, 0) == CE_None, "write");
    GDALClose(ds);
    CHECK(wc_quicklook_write(src, 1, png, 0, NULL) == WC_OK, "write png");
    GDALDatasetH p = GDALOpen(png, GA_ReadOnly);
    CHECK(p != NULL, "png opens");
    if (p) {
        static const int want_alpha[8] = {255, 0, 0, 0, 0, 0, 0, 255};
        for (int x = 0; x < 8; x++) {
            int c[4];
            read_px(p, x, 0, c);
            CHECK(c[3] == want_alpha[x], "value %g: alpha %d, want %d", (double)v[x], c[3],
                  want_alpha[x]);
        }
        GDALClose(p);
    }
    unlink(src);
    unlink(png);
    rmdir(dir);
}

/* A VRT INT_MAX pixels a side whose only source is a small GeoTIFF in its corner: the picture
 * is downsampled 524288 times to 4096 x 4096 (plus the legend), quickly, in bounded memory. */
static void test_write_enormous(void) {
    char dir[] = "/tmp/test_quicklook.XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char small[64], vrt[64], png[64];
    snprintf(small, sizeof small, "%s/small.tif", dir);
    snprintf(vrt, sizeof vrt, "%s/huge.vrt", dir);
    snprintf(png, sizeof png, "%s/huge.png", dir);
    wc_raster_init();
    GDALDatasetH ds = GDALCreate(GDALGetDriverByName("GTiff"), small, 64, 64, 1, GDT_Float32, NULL);
    static float v[64 * 64];
    for (int i = 0; i < 64 * 64; i++) v[i] = 0.25f;
    GDALRasterBandH b = GDALGetRasterBand(ds, 1);
    GDALSetRasterNoDataValue(b, -9999);
    CHECK(GDALRasterIO(b, GF_Write, 0, 0, 64, 64, v, 64, 64, GDT_Float32, 0, 0) == CE_None, "tif");
    GDALClose(ds);
    FILE *f = fopen(vrt, "w");
    CHECK(f != NULL, "vrt");
    if (!f) return;
    fprintf(f,
            "<VRTDataset rasterXSize=\"%d\" rasterYSize=\"%d\">\n"
            "  <VRTRasterBand dataType=\"Float32\" band=\"1\">\n"
            "    <NoDataValue>-9999</NoDataValue>\n"
            "    <SimpleSource><SourceFilename relativeToVRT=\"0\">%s</SourceFilename>\n"
            "      <SourceBand>1</SourceBand><SrcRect xOff=\"0\" yOff=\"0\" xSize=\"64\" "
            "ySize=\"64\" /><DstRect xOff=\"0\" yOff=\"0\" xSize=\"64\" ySize=\"64\" />\n"
            "    </SimpleSource>\n  </VRTRasterBand>\n</VRTDataset>\n",
            INT_MAX, INT_MAX, small);
    fclose(f);
    wc_quicklook_info q;
    CHECK(wc_quicklook_write(vrt, 1, png, 0, &q) == WC_OK, "write png");
    CHECK(q.factor == 524288 && q.map_width == 4096 && q.map_height == 4096, "factor %d, %dx%d",
          q.factor, q.map_width, q.map_height);
    GDALDatasetH p = GDALOpen(png, GA_ReadOnly);
    CHECK(p != NULL, "png opens");
    if (p) {
        CHECK(GDALGetRasterXSize(p) == 4096 && GDALGetRasterYSize(p) == 4096 + q.legend_height,
              "size %dx%d", GDALGetRasterXSize(p), GDALGetRasterYSize(p));
        int c[4];
        read_px(p, 4095, 4095, c);
        CHECK(c[3] == 0, "the empty far corner is transparent (alpha %d)", c[3]);
        GDALClose(p);
    }
    unlink(small);
    unlink(vrt);
    unlink(png);
    rmdir(dir);
}

int main(void) {
    wc_log_set_quiet(1);
    RUN(test_ramp_darkens_monotonically);
    RUN(test_layout);
    RUN(test_layout_enormous);
    RUN(test_layout_scaled);
    RUN(test_write_downsampled);
    RUN(test_write_exact_boxes);
    RUN(test_orientation);
    RUN(test_not_probabilities_transparent);
    RUN(test_write_enormous);
    HARNESS_EXIT();
}
