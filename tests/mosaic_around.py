"""mosaic_around.py SRC OUT.vrt X Y WIDTH HEIGHT: a WIDTH x HEIGHT VRT on SRC's grid holding
SRC with its top-left pixel at (X, Y) and nothing elsewhere (the bands' nodata), band
descriptions kept: a mostly empty mosaic for the tests of what GDAL knows to be empty."""
import sys

from osgeo import gdal

gdal.UseExceptions()
src_path, out = sys.argv[1], sys.argv[2]
x, y, w, h = (int(v) for v in sys.argv[3:7])
src = gdal.Open(src_path)
x0, px, _, y0, _, py = src.GetGeoTransform()
left, top = x0 - x * px, y0 - y * py
v = gdal.BuildVRT(out, [src_path], outputBounds=(left, top + h * py, left + w * px, top))
for i in range(1, src.RasterCount + 1):
    v.GetRasterBand(i).SetDescription(src.GetRasterBand(i).GetDescription())
v = None
