"""Shapefile exports of yield, seeding and application data (John Deere Operations Center, SMS / Ag Leader).

- `reader`: `ShapefileReader`, one point table per shapefile (registered on import).
- `columns`: the exporters' column names and units, the operation type, and text, status and time values.
- `decode`: the DBF records, the point and polygon geometry and the coordinate system, decoded with numpy.
"""

from .columns import (
    COLUMN_RULES,
    CROP_NAMES,
    JD_OPERATIONS,
    PRODUCT_NAMES,
    RATE_NAMES,
    TARGET_NAMES,
    TIME_ISO_NAMES,
    TIME_TEXT_NAMES,
    VARIETY_NAMES,
    ColumnRule,
)
from .reader import ShapefileReader

__all__ = [
    "COLUMN_RULES",
    "CROP_NAMES",
    "JD_OPERATIONS",
    "PRODUCT_NAMES",
    "RATE_NAMES",
    "TARGET_NAMES",
    "TIME_ISO_NAMES",
    "TIME_TEXT_NAMES",
    "VARIETY_NAMES",
    "ColumnRule",
    "ShapefileReader",
]
