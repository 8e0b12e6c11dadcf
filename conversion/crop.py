"""Crop a point table to a field: keep the points covered by a WGS84 polygon (cropOperationByField).

Pure numpy + shapely, no Django. A point is kept when the polygon *covers* it: inside or exactly on the boundary
(so a point logged on the field edge belongs to the field, and a polygon and its complement-free tiling never drop
a point). The test runs in GEOS over the coordinate arrays of a prepared geometry: no per-point Python loop.

Crop a table after `standardize.derive` (or `standardize.standardize`): each point then keeps the area and
distance it was logged with, so the cropped totals are exactly the sum over the kept points. Deriving after the
crop would measure distances across the gaps the crop leaves.
"""

from __future__ import annotations

import numpy as np
import shapely

from conversion.readers.base import PointTable


def points_covered(lon: np.ndarray, lat: np.ndarray, geometry) -> np.ndarray:
    """Boolean per point: whether `geometry` covers (lon, lat); False for non-finite coordinates."""
    if not isinstance(geometry, shapely.Polygon | shapely.MultiPolygon):
        raise ValueError(f"crop needs a Polygon or MultiPolygon, got {getattr(geometry, 'geom_type', geometry)!r}")
    if geometry.is_empty:
        raise ValueError("crop needs a non-empty polygon")
    lon = np.asarray(lon, dtype=np.float64)
    lat = np.asarray(lat, dtype=np.float64)
    # A prepared geometry builds its spatial index once; intersects_xy of a point with a polygon is "covered by".
    # A copy is prepared so the caller's geometry is left as it was.
    prepared = shapely.from_wkb(shapely.to_wkb(geometry))
    shapely.prepare(prepared)
    finite = np.isfinite(lon) & np.isfinite(lat)
    covered = np.zeros(len(lon), dtype=bool)
    covered[finite] = shapely.intersects_xy(prepared, lon[finite], lat[finite])
    return covered


def table_crop(table: PointTable, geometry) -> PointTable:
    """A copy of `table` with only the points covered by `geometry` (WGS84 (Multi)Polygon), raw columns aligned.

    The order of the points is kept. Totals recorded by the file (`recorded_totals`) describe the whole file, not
    the cropped part, so they are dropped; the time range is recomputed from the kept points.
    """
    covered = points_covered(table.columns["lon"], table.columns["lat"], geometry)
    cropped = table.select(covered)
    cropped.recorded_totals = {}
    return cropped
