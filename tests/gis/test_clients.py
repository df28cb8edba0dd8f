"""tests/gis/test_clients.py DIR: risk.tif, risk_classes.tif (COG) and risk.png in DIR, made by
wildcpu predict --classes --cog --png, as QGIS and rasterio see them.

QGIS (headless): the map picks up risk.qml as its default style (singleband pseudocolor, 0..1,
the quick-look's end colours, read from the PNG's own legend bar); the class raster picks up
risk_classes.qml: the five named, coloured classes and nothing else in its legend (left to the
GeoTIFF's colour table, QGIS lists all 256 entries); both rendered to
PNG through QgsMapRendererSequentialJob, pixel for pixel on the raster grid, have the colours the
quick-look and the colour table give at pixels of known probability and class, and nodata
transparent. rasterio: CRS, transform, nodata, overviews of both COGs.
Prints "ok - ..." per case and, last, "N passed, N failed"."""
import os
import sys
import warnings

import numpy as np
import rasterio
import rasterio.errors
from qgis.core import (QgsApplication, QgsMapRendererSequentialJob, QgsMapSettings, QgsRasterLayer)
from qgis.PyQt.QtCore import QSize
from qgis.PyQt.QtGui import QColor

D = sys.argv[1]
MAP, CLASSES, PNG = (os.path.join(D, n) for n in ("risk.tif", "risk_classes.tif", "risk.png"))
NAMES = ["low", "moderate", "high", "very high", "extreme"]
results = {"passed": 0, "failed": 0}


def case(name, fn):
    try:
        note = fn()
    except Exception as e:  # a failed check, or anything a client raised
        print(f"not ok - {name}\n#   {type(e).__name__}: {e}")
        results["failed"] += 1
        return
    print(f"ok - {name}")
    if note:
        print(f"#   {note}")
    results["passed"] += 1


def render(layer, path):
    """The layer on its own grid, one picture pixel per raster pixel, transparent background."""
    ms = QgsMapSettings()
    ms.setLayers([layer])
    ms.setDestinationCrs(layer.crs())
    ms.setExtent(layer.extent())
    ms.setOutputSize(QSize(layer.width(), layer.height()))
    ms.setBackgroundColor(QColor(0, 0, 0, 0))
    job = QgsMapRendererSequentialJob(ms)
    job.start()
    job.waitForFinished()
    img = job.renderedImage()
    assert img.save(path, "PNG"), f"cannot save {path}"
    return img


def rgba(img, x, y):
    c = img.pixelColor(x, y)
    return (c.red(), c.green(), c.blue(), c.alpha())


app = QgsApplication([], False)
app.initQgis()
with rasterio.open(MAP) as m:
    prob = m.read(1)
with rasterio.open(CLASSES) as c:
    cls = c.read(1)
with warnings.catch_warnings():  # a PNG has no georeferencing, and needs none
    warnings.simplefilter("ignore", rasterio.errors.NotGeoreferencedWarning)
    with rasterio.open(PNG) as q:
        look = np.moveaxis(q.read(), 0, -1)  # (H, W, RGBA): the quick-look, full resolution here
H, W = prob.shape
valid = prob != -9999
lyr = QgsRasterLayer(MAP, "risk")
clyr = QgsRasterLayer(CLASSES, "risk_classes")


def style_picked_up():
    assert lyr.isValid(), MAP
    r = lyr.renderer()
    assert r.type() == "singlebandpseudocolor", r.type()
    assert r.band() == 1 and (r.classificationMin(), r.classificationMax()) == (0.0, 1.0)
    ramp = r.shader().rasterShaderFunction().sourceColorRamp()
    # the quick-look legend's bar: 14 px in from each side, rows 14-26 below the map
    lo, hi = tuple(look[H + 20, 14][:3]), tuple(look[H + 20, W - 15][:3])
    got = (ramp.color1().getRgb()[:3], ramp.color2().getRgb()[:3])
    assert got == (lo, hi), f"QGIS ramp ends {got}, quick-look legend ends {(lo, hi)}"
    assert lyr.customProperty("wildcpu/legend_title") == "burn probability"
    return f"ramp ends {got[0]} .. {got[1]}, as the quick-look's legend"


def classes_named():
    assert clyr.isValid(), CLASSES
    r = clyr.renderer()
    assert r.type() == "paletted", r.type()
    got = {int(c.value): (c.label, c.color.getRgb()[:3]) for c in r.classes()}
    assert sorted(got) == list(range(5)), f"{len(got)} classes: {sorted(got)[:8]}"
    assert [got[k][0] for k in range(5)] == NAMES, [got.get(k) for k in range(5)]
    legend = [label for label, _ in r.legendSymbologyItems()]
    assert legend == NAMES, legend
    assert clyr.customProperty("wildcpu/legend_title") == "burn risk class"
    return "; ".join(f"{k} {got[k][0]} {got[k][1]}" for k in range(5))


def map_rendered():
    img = render(lyr, os.path.join(D, "qgis_risk.png"))
    ys, xs = np.nonzero(valid)
    order = np.argsort(prob[valid])
    # the lowest, the median and the highest probability, and a spread of others
    picks = [order[0], order[len(order) // 2], order[-1]] + list(order[:: max(1, len(order) // 40)])
    worst = 0
    for k in picks:
        x, y = int(xs[k]), int(ys[k])
        want, got = tuple(int(v) for v in look[y, x]), rgba(img, x, y)
        d = max(abs(a - b) for a, b in zip(want, got))
        worst = max(worst, d)
        assert d <= 3, f"pixel ({x}, {y}) p={prob[y, x]:.4f}: QGIS {got}, quick-look {want}"
    ny, nx = np.argwhere(~valid)[0]
    assert rgba(img, int(nx), int(ny))[3] == 0, "nodata is not transparent in QGIS"
    return f"{len(picks)} pixels (p {prob[valid].min():.4f}..{prob[valid].max():.4f}) within {worst} of the quick-look; nodata transparent"


def classes_rendered():
    img = render(clyr, os.path.join(D, "qgis_classes.png"))
    table = {int(c.value): c.color.getRgb()[:3] for c in clyr.renderer().classes()}
    with rasterio.open(CLASSES) as c:
        cmap = c.colormap(1)
    for k in range(5):
        ys, xs = np.nonzero(cls == k)
        assert len(xs), f"no pixel of class {k}"
        for i in (0, len(xs) // 2, len(xs) - 1):
            got = rgba(img, int(xs[i]), int(ys[i]))
            assert got[:3] == tuple(cmap[k][:3]) == table[k] and got[3] == 255, (k, got, cmap[k])
    ny, nx = np.argwhere(cls == 255)[0]
    assert rgba(img, int(nx), int(ny))[3] == 0, "class nodata is not transparent"
    assert ((cls == 255) == ~valid).all(), "class nodata differs from the map's"
    return "every class shows its colour-table colour; nodata transparent"


def rasterio_view():
    notes = []
    for path, nodata, dtype in ((MAP, -9999, "float32"), (CLASSES, 255, "uint8")):
        with rasterio.open(path) as s:
            assert s.crs.to_epsg() == 32611, s.crs
            assert tuple(s.transform)[:6] == (30.0, 0.0, 640000.0, 0.0, -30.0, 4930000.0), s.transform
            assert s.nodata == nodata and s.dtypes[0] == dtype, (s.nodata, s.dtypes)
            ov = s.overviews(1)
            assert ov, f"{path}: no overviews"
            assert s.block_shapes[0] == (256, 256), s.block_shapes
            assert s.tags(ns="IMAGE_STRUCTURE").get("LAYOUT") == "COG", s.tags(ns="IMAGE_STRUCTURE")
            notes.append(f"{os.path.basename(path)} {dtype} overviews {ov}")
    return "; ".join(notes)


def replaced_zoomed_out():
    """replaced.tif: a map given external overviews (gdaladdo -ro), mapped again without the
    sample's north-west tile. QGIS zoomed out reads overviews: the earlier map's, if they were
    left beside it, would fill the new map's hole with colour."""
    path = os.path.join(D, "replaced.tif")
    with rasterio.open(path) as s:
        full = s.read(1)
    hole = full[:256, :256] == -9999
    assert hole.all() and (full[256:, 256:] != -9999).any(), "the new map lacks the hole"
    layer = QgsRasterLayer(path, "replaced")
    assert layer.isValid(), path
    ms = QgsMapSettings()
    ms.setLayers([layer])
    ms.setDestinationCrs(layer.crs())
    ms.setExtent(layer.extent())
    ms.setOutputSize(QSize(layer.width() // 4, layer.height() // 4))
    ms.setBackgroundColor(QColor(0, 0, 0, 0))
    job = QgsMapRendererSequentialJob(ms)
    job.start()
    job.waitForFinished()
    img = job.renderedImage()
    shown = [(x, y) for y in range(4, 60, 8) for x in range(4, 60, 8) if rgba(img, x, y)[3]]
    assert not shown, f"{len(shown)} of 49 pixels of the hole drawn at 1/4 scale, first {shown[0]}"
    assert not os.path.exists(path + ".ovr"), f"{path}.ovr, the earlier map's overviews, is left"
    return "the hole is transparent at 1/4 scale; no overviews of the earlier map left"


case("QGIS picks up risk.qml: singleband pseudocolor on band 1, 0..1, the quick-look's ramp ends", style_picked_up)
case("QGIS picks up risk_classes.qml: the five names and colours alone (paletted renderer)", classes_named)
case("QGIS renders the map with the quick-look's colours at pixels of known probability", map_rendered)
case("QGIS renders each class in its colour-table colour", classes_rendered)
case("QGIS zoomed out draws a map mapped again, not the earlier map's overviews", replaced_zoomed_out)
case("rasterio: CRS, transform, nodata, 256x256 tiles, overviews and COG layout of both", rasterio_view)
print(f"{results['passed'] + 1} passed, {results['failed']} failed", flush=True)  # + the run's case
# QGIS 3.22's teardown (exitQgis, or the interpreter's) can crash once layers have rendered; the
# results are out, so leave without it
del lyr, clyr
os._exit(1 if results["failed"] else 0)
