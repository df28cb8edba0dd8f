#!/usr/bin/python3
"""synth_mosaic.py: several `wildcpu synth` regions side by side on one grid, as one VRT mosaic
to train on (docs/quality.md, "More ground": one region is too little data).

    /usr/bin/python3 tools/synth_mosaic.py OUT SEED [SEED ...] [--cols N] [--size PX]
                                               [--wildcpu PATH]

Generates one region per seed (`wildcpu synth --out OUT/seed-S --seed S --size PX`, unless
OUT/seed-S/tiles.vrt is already there: one of another size is refused) and writes

    OUT/tiles.vrt        the regions' bands, region k at column k % N, row k // N of regions
    OUT/oracle_risk.tif  their oracles, the same way (a VRT under that name, which training
                         and `evaluate` pick up beside the tiles)

Every synthetic region has the same origin, so each is moved to its place on the grid first
(a VRT of its own with a shifted geotransform; no pixel is copied or resampled). The band
descriptions, nodata values and types are those of the first region, and every region must
have the same bands and size. N (--cols) defaults to ceil(sqrt(number of seeds)). GDAL's
Python bindings (python3-gdal) only.
"""
import argparse
import math
import os
import subprocess
import sys

from osgeo import gdal

gdal.UseExceptions()


def bands_of(ds):
    """(description, data type, nodata) of every band; a NaN nodata as the string "nan", so
    that two bands with NaN nodata compare equal."""
    out = []
    for i in range(1, ds.RasterCount + 1):
        b = ds.GetRasterBand(i)
        nodata = b.GetNoDataValue()
        out.append((b.GetDescription(), b.DataType,
                    "nan" if nodata is not None and math.isnan(nodata) else nodata))
    return out


def placed(src, dst, col, row, width, height):
    """A VRT of src moved to (col, row) regions from its own origin; returns dst."""
    ds = gdal.Open(src)
    x0, dx, _, y0, _, dy = ds.GetGeoTransform()
    ulx, uly = x0 + col * width * dx, y0 + row * height * dy
    gdal.Translate(dst, ds, format="VRT",
                   outputBounds=[ulx, uly, ulx + width * dx, uly + height * dy])
    return dst


def mosaic(out, parts, like):
    """gdalbuildvrt of parts into out, then the bands named and typed as `like` says."""
    gdal.BuildVRT(out, parts).FlushCache()
    ds = gdal.Open(out, gdal.GA_Update)
    for i, (name, _, nodata) in enumerate(like, start=1):
        b = ds.GetRasterBand(i)
        b.SetDescription(name)
        if nodata is not None:
            b.SetNoDataValue(float(nodata))
    ds.FlushCache()
    ds = None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("seeds", nargs="+", type=int)
    ap.add_argument("--cols", type=int, default=0)
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--wildcpu", default=os.path.join(os.path.dirname(__file__), "..", "build",
                                                      "wildcpu"))
    a = ap.parse_args()
    cols = a.cols if a.cols > 0 else math.ceil(math.sqrt(len(a.seeds)))
    os.makedirs(a.out, exist_ok=True)
    regions = []
    for s in a.seeds:
        d = os.path.join(a.out, "seed-%d" % s)
        if os.path.exists(os.path.join(d, "tiles.vrt")):
            # an earlier run's region, kept only when it is of the size asked for: one of
            # another --size made a mosaic of other sizes than asked, without a word
            ds = gdal.Open(os.path.join(d, "tiles.vrt"))
            if (ds.RasterXSize, ds.RasterYSize) != (a.size, a.size):
                sys.exit("synth_mosaic: %s is an earlier region of %d x %d px, not --size %d: "
                         "remove it to have it made again, or give --size %d" %
                         (d, ds.RasterXSize, ds.RasterYSize, a.size, ds.RasterXSize))
        else:
            cmd = [a.wildcpu, "synth", "--out", d, "--seed", str(s), "--size", str(a.size)]
            try:
                subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
            except (OSError, subprocess.CalledProcessError) as e:
                sys.exit("synth_mosaic: %s failed: %s" % (" ".join(cmd), e))
        regions.append(d)
    first = gdal.Open(os.path.join(regions[0], "tiles.vrt"))
    like, width, height = bands_of(first), first.RasterXSize, first.RasterYSize
    parts, oracles = [], []
    for k, d in enumerate(regions):
        ds = gdal.Open(os.path.join(d, "tiles.vrt"))
        if bands_of(ds) != like or (ds.RasterXSize, ds.RasterYSize) != (width, height):
            sys.exit("synth_mosaic: %s does not have the bands and size of %s" % (d, regions[0]))
        col, row = k % cols, k // cols
        parts.append(placed(os.path.join(d, "tiles.vrt"),
                            os.path.join(a.out, "part-%d.vrt" % k), col, row, width, height))
        oracles.append(placed(os.path.join(d, "oracle_risk.tif"),
                              os.path.join(a.out, "oracle-%d.vrt" % k), col, row, width, height))
    mosaic(os.path.join(a.out, "tiles.vrt"), parts, like)
    mosaic(os.path.join(a.out, "oracle_risk.tif"), oracles,
           bands_of(gdal.Open(os.path.join(regions[0], "oracle_risk.tif"))))
    rows = math.ceil(len(regions) / cols)
    print("synth_mosaic: %s/tiles.vrt, %d x %d px: seeds %s, %d to a row" %
          (a.out, cols * width, rows * height, ", ".join(map(str, a.seeds)), cols))


if __name__ == "__main__":
    main()
