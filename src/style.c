/* style.c: the QGIS styles (.qml) of the risk map and of its class raster; see style.h.
 *
 * The document is what QGIS 3.22 itself saves for a singleband pseudocolor layer (Layer
 * Properties > Style > Save as QML), reduced to the renderer: QGIS fills in every element left
 * out with its defaults. Min and max are fixed (classificationMin/Max 0 and 1, limits None), so
 * QGIS does not stretch the ramp to the map's statistics; nodataColor empty keeps nodata
 * transparent. The ramp's first and last stops are the gradient's color1 and color2, the others
 * its intermediate stops at k / 8, and the shader lists all nine as items. The class raster's
 * is QGIS's paletted renderer with one entry per class: without it QGIS lists every entry of
 * the GeoTIFF's colour table, 256 of them, as classes.
 *
 * Not here: where the files go (riskmap.c derives NAME.qml and NAME_classes.qml from the
 * map's name). */
#include "wildcpu/style.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "wildcpu/files.h"
#include "wildcpu/quicklook.h"
#include "wildcpu/util.h"

/* In the file's first line, so a later run can tell its own style from a user's. */
#define MARK_PREFIX        "<!-- written by wildcpu: "
#define STYLE_MARK         MARK_PREFIX "the risk map's style -->"
#define CLASSES_STYLE_MARK MARK_PREFIX "the class raster's style -->"

static void rgba(char *buf, size_t n, int k) {
    const unsigned char *c = WC_QUICKLOOK_RAMP[k];
    snprintf(buf, n, "%d,%d,%d,255", c[0], c[1], c[2]);
}

static void write_ramp(FILE *f) {
    const int last = WC_QUICKLOOK_NSTOPS - 1;
    char c1[32], c2[32], stops[512] = "";
    rgba(c1, sizeof c1, 0);
    rgba(c2, sizeof c2, last);
    for (int k = 1, n = 0; k < last; k++) {
        char c[32];
        rgba(c, sizeof c, k);
        n += snprintf(stops + n, sizeof stops - (size_t)n, "%s%.3f;%s", k > 1 ? ":" : "",
                      (double)k / last, c);
    }
    const char *const props[][2] = {{"color1", c1},
                                    {"color2", c2},
                                    {"discrete", "0"},
                                    {"rampType", "gradient"},
                                    {"stops", stops}};
    fprintf(f, "          <colorramp type=\"gradient\" name=\"[source]\">\n"
               "            <Option type=\"Map\">\n");
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++)
        fprintf(f, "              <Option type=\"QString\" name=\"%s\" value=\"%s\"/>\n",
                props[i][0], props[i][1]);
    fprintf(f, "            </Option>\n");
    for (size_t i = 0; i < sizeof props / sizeof props[0]; i++) /* QGIS < 3.20 reads these */
        fprintf(f, "            <prop k=\"%s\" v=\"%s\"/>\n", props[i][0], props[i][1]);
    fprintf(f, "          </colorramp>\n");
    for (int k = 0; k <= last; k++) {
        const unsigned char *c = WC_QUICKLOOK_RAMP[k];
        fprintf(f,
                "          <item alpha=\"255\" color=\"#%02x%02x%02x\" label=\"%g\" "
                "value=\"%g\"/>\n",
                c[0], c[1], c[2], (double)k / last, (double)k / last);
    }
}

/* The document's opening, up to the renderer's element: the mark, the legend title and
 * wildcpu's version as the layer's custom properties. */
static void write_head(FILE *f, const char *mark, const char *legend_title) {
    fprintf(f, "<!DOCTYPE qgis PUBLIC 'http://mrcc.com/qgis.dtd' 'SYSTEM'>%s\n", mark);
    fprintf(f,
            "<qgis version=\"3.22.0\" styleCategories=\"AllStyleCategories\" "
            "hasScaleBasedVisibilityFlag=\"0\" minScale=\"1e+08\" maxScale=\"0\">\n"
            "  <customproperties>\n"
            "    <Option type=\"Map\">\n"
            "      <Option type=\"QString\" name=\"wildcpu/legend_title\" value=\"%s\"/>\n"
            "      <Option type=\"QString\" name=\"wildcpu/version\" value=\"" WC_VERSION "\"/>\n"
            "    </Option>\n"
            "  </customproperties>\n"
            "  <pipe>\n",
            legend_title);
}

/* What QGIS saves of a renderer's statistics; no limits (None): nothing is stretched. */
static void write_min_max_origin(FILE *f) {
    fprintf(f, "      <rasterTransparency/>\n"
               "      <minMaxOrigin>\n"
               "        <limits>None</limits>\n"
               "        <extent>WholeRaster</extent>\n"
               "        <statAccuracy>Exact</statAccuracy>\n"
               "        <cumulativeCutLower>0.02</cumulativeCutLower>\n"
               "        <cumulativeCutUpper>0.98</cumulativeCutUpper>\n"
               "        <stdDevFactor>2</stdDevFactor>\n"
               "      </minMaxOrigin>\n");
}

/* After the renderer's element: the pipe's other stages at QGIS's defaults. */
static void write_tail(FILE *f) {
    fprintf(f, "    <brightnesscontrast brightness=\"0\" contrast=\"0\" gamma=\"1\"/>\n"
               "    <huesaturation saturation=\"0\" grayscaleMode=\"0\" invertColors=\"0\" "
               "colorizeOn=\"0\" colorizeRed=\"255\" colorizeGreen=\"128\" colorizeBlue=\"128\" "
               "colorizeStrength=\"100\"/>\n"
               "    <rasterresampler maxOversampling=\"2\"/>\n"
               "    <resamplingStage>resamplingFilter</resamplingStage>\n"
               "  </pipe>\n"
               "  <blendMode>0</blendMode>\n"
               "</qgis>\n");
}

int wc_style_write_qml(const char *path) {
    wc_atomic_file af;
    if (wc_atomic_open(&af, path, "w") != WC_OK) return WC_ERR;
    FILE *f = af.f;
    write_head(f, STYLE_MARK, WC_STYLE_LEGEND_TITLE);
    fprintf(f, "    <rasterrenderer type=\"singlebandpseudocolor\" band=\"1\" opacity=\"1\" "
               "alphaBand=\"-1\" nodataColor=\"\" classificationMin=\"0\" "
               "classificationMax=\"1\">\n");
    write_min_max_origin(f);
    fprintf(f, "      <rastershader>\n"
               "        <colorrampshader colorRampType=\"INTERPOLATED\" classificationMode=\"1\" "
               "clip=\"0\" minimumValue=\"0\" maximumValue=\"1\" labelPrecision=\"3\">\n");
    write_ramp(f);
    fprintf(f, "          <rampLegendSettings minimumLabel=\"0\" maximumLabel=\"1\" prefix=\"\" "
               "suffix=\"\" orientation=\"2\" direction=\"0\" useContinuousLegend=\"1\"/>\n"
               "        </colorrampshader>\n"
               "      </rastershader>\n"
               "    </rasterrenderer>\n");
    write_tail(f);
    return wc_atomic_commit(&af);
}

void wc_style_class_rgb(int c, int nclasses, unsigned char rgb[3]) {
    WC_ASSERT(nclasses >= 2 && c >= 0 && c < nclasses);
    memcpy(rgb, WC_QUICKLOOK_RAMP[c * (WC_QUICKLOOK_NSTOPS - 1) / (nclasses - 1)], 3);
}

int wc_style_write_classes_qml(const char *path, const char *const names[], int nclasses) {
    wc_atomic_file af;
    if (wc_atomic_open(&af, path, "w") != WC_OK) return WC_ERR;
    FILE *f = af.f;
    write_head(f, CLASSES_STYLE_MARK, WC_STYLE_CLASSES_LEGEND_TITLE);
    fprintf(f, "    <rasterrenderer type=\"paletted\" band=\"1\" opacity=\"1\" "
               "alphaBand=\"-1\" nodataColor=\"\">\n");
    write_min_max_origin(f);
    fprintf(f, "      <colorPalette>\n");
    for (int c = 0; c < nclasses; c++) {
        unsigned char rgb[3];
        wc_style_class_rgb(c, nclasses, rgb);
        fprintf(f,
                "        <paletteEntry value=\"%d\" color=\"#%02x%02x%02x\" alpha=\"255\" "
                "label=\"%s\"/>\n",
                c, rgb[0], rgb[1], rgb[2], names[c]);
    }
    fprintf(f, "      </colorPalette>\n"
               "    </rasterrenderer>\n");
    write_tail(f);
    return wc_atomic_commit(&af);
}

int wc_style_is_ours(const char *path) {
    struct stat st; /* a pipe of that name must not be opened: fopen would wait on it */
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) return 0;
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[256] = "";
    const int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    return got && strstr(line, MARK_PREFIX) != NULL;
}
