/* style.h: the QGIS style of a risk map: NAME.qml beside NAME.tif, which QGIS loads as the
 * layer's default style when it opens the map.
 *
 * The style is the quick-look's colour ramp (quicklook.h's stops, so the picture and QGIS show
 * the same colours for the same probability) as a singleband pseudocolor renderer on band 1,
 * interpolated over the absolute scale 0..1 (never stretched to the map's own range, so two
 * maps compare by eye), nodata transparent. It says nothing about a particular map, so a style
 * beside a newer map still describes it correctly.
 *
 * The class raster NAME_classes.tif has its own, NAME_classes.qml: QGIS's paletted renderer with
 * one entry per class (its colour and name). The colours are also the raster's colour table, so
 * any GDAL client shows them; but a GeoTIFF's table has 256 entries, and QGIS, left to it, lists
 * all 256 as classes (the 251 unused ones black).
 *
 * Not here: the map itself (riskmap.h). */
#ifndef WILDCPU_STYLE_H
#define WILDCPU_STYLE_H

/* The legend title the style carries (QGIS 3.22 heads a raster legend with the band's name; the
 * title is the layer's custom property wildcpu/legend_title, which docs/qgis-view.png uses). */
#define WC_STYLE_LEGEND_TITLE         "burn probability"
#define WC_STYLE_CLASSES_LEGEND_TITLE "burn risk class"

/* Writes the style to path atomically (temporary file, fsync, rename): an existing style is
 * replaced only by a complete one. WC_OK, or WC_ERR after a message naming the file. */
int wc_style_write_qml(const char *path);

/* The colour of class c of nclasses (the quick-look ramp's stops, from its first to its last):
 * the class raster's colour table and its style. */
void wc_style_class_rgb(int c, int nclasses, unsigned char rgb[3]);

/* The class raster's style (classes 0..nclasses-1 named names[c]) to path, as
 * wc_style_write_qml writes the map's. */
int wc_style_write_classes_qml(const char *path, const char *const names[], int nclasses);

/* Whether path is a style wildcpu wrote, either (it carries wildcpu's mark); 0 when it is
 * absent, unreadable or someone else's. */
int wc_style_is_ours(const char *path);

#endif
