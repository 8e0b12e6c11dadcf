"""Configuration defaults (supplement "Configuration defaults"). No Django imports: the image
renderer uses the same ramp as its fallback."""

from typing import Any

# Red (low) through yellow to green (high): ColorBrewer RdYlGn, one colour per default stop.
DEFAULT_COLOR_RAMP = {
    "0%": [215, 25, 28],
    "35%": [253, 174, 97],
    "45%": [255, 255, 191],
    "55%": [217, 239, 139],
    "65%": [166, 217, 106],
    "75%": [102, 189, 99],
    "100%": [26, 150, 65],
    "nv": [0, 0, 0, 0],
}

DEFAULTS: dict[str, Any] = {
    "operationsImageCreation": True,
    "geoimagesResolution": 0.00001,
    "geoimagesShape": "SQUARE",
    "geoimagesProjection": "EPSG:3857",
    "geoimagesColorRamp": DEFAULT_COLOR_RAMP,
    "fieldsAutoSync": True,
    "fieldsMergeIntersection": 0.01,
    "fieldsAttachIntersection": 0.01,
    "fieldsAutoMerge": False,
}
