#!/usr/bin/env bash
# tools/qgis-view.sh WILDCPU OUT.png: the bundled sample's risk map as QGIS draws it (headless,
# with the map's own risk.qml) plus its legend, for the README (make docs-qgis). Trains for a
# few steps: the picture shows what QGIS makes of the files, not a good model.
set -eu
bin=$1 out=$2
root=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d /tmp/wildcpu-qgis-view.XXXXXX)
trap 'rm -rf "$T"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 XDG_RUNTIME_DIR=$T QT_QPA_PLATFORM=offscreen
"$bin" --tiles "$root/data/sample/tiles.vrt" --out "$T/run" --steps 40 --batch 8 >"$T/log" 2>&1 ||
    { tail -5 "$T/log"; exit 1; }
/usr/bin/python3 - "$T/run/risk.tif" "$out" <<'EOF'
import os, sys
from qgis.core import (QgsApplication, QgsLayout, QgsLayoutExporter, QgsLayoutItemLegend,
                       QgsLayoutItemMap, QgsLayoutPoint, QgsLayoutSize, QgsProject,
                       QgsRasterLayer, QgsUnitTypes)
from qgis.PyQt.QtGui import QColor, QFont
app = QgsApplication([], False)
app.initQgis()
lyr = QgsRasterLayer(sys.argv[1], "risk.tif")  # picks up risk.qml beside it
assert lyr.renderer().type() == "singlebandpseudocolor", lyr.renderer().type()
QgsProject.instance().addMapLayer(lyr)
layout = QgsLayout(QgsProject.instance())
layout.initializeDefaults()
mm = QgsUnitTypes.LayoutMillimeters
page = layout.pageCollection().page(0)
page.setPageSize(QgsLayoutSize(185, 110, mm))
m = QgsLayoutItemMap(layout)
m.attemptMove(QgsLayoutPoint(5, 5, mm))
m.attemptResize(QgsLayoutSize(100, 100, mm))
m.setLayers([lyr])
m.setExtent(lyr.extent())
layout.addLayoutItem(m)
leg = QgsLayoutItemLegend(layout)
leg.setTitle(lyr.customProperty("wildcpu/legend_title", "burn probability"))  # from risk.qml
leg.setLinkedMap(m)
leg.attemptMove(QgsLayoutPoint(108, 5, mm))
layout.addLayoutItem(leg)
settings = QgsLayoutExporter.ImageExportSettings()
settings.dpi = 110
rc = QgsLayoutExporter(layout).exportToImage(sys.argv[2], settings)
assert rc == QgsLayoutExporter.Success, rc
print("wrote", sys.argv[2])
os._exit(0)  # QGIS 3.22's teardown can crash after rendering
EOF
