"""Shapefile exports of yield, seeding and application data (John Deere Operations Center, SMS / Ag Leader).

- `reader`: `ShapefileReader`, one point table per shapefile (registered on import).
- `columns`: the exporters' column names and units, the operation type, and text, status and time values.
- `decode`: the DBF records, the point and polygon geometry and the coordinate system, decoded with numpy.
"""

from .reader import ShapefileReader

__all__ = ["ShapefileReader"]
