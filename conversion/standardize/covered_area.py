"""Coverage: the area a table's points cover, as a GeoJSON MultiPolygon built on a grid of cells."""

from __future__ import annotations

import math

import numpy as np
import shapely
from shapely.geometry import MultiPolygon, mapping

from conversion.readers.base import PointTable

from .properties import EARTH_RADIUS_M, section_steps

DEFAULT_CELL_M = 10.0
MAX_COVERAGE_CELLS = 4_000_000


def coverage(table: PointTable, *, cell_size: float | None = None) -> dict:
    """Covered area as a GeoJSON MultiPolygon: points binned into square cells about one machine width wide,
    one-cell gaps closed, runs of cells merged per row, then unioned. Linear in the number of points. Points
    recorded Off or with a working width of 0 (every section off) cover nothing.
    """
    lon = np.asarray(table.columns.get("lon", np.empty(0)), dtype=float)
    lat = np.asarray(table.columns.get("lat", np.empty(0)), dtype=float)
    ok = np.isfinite(lon) & np.isfinite(lat)
    status = table.columns.get("recordingStatus")
    if status is not None:
        ok &= np.asarray(status, dtype=float) != 0
    width = table.columns.get("equipmentWidth")
    if width is not None:
        # A point whose working width is 0 (every section off) covers nothing.
        ok &= np.asarray(width, dtype=float) != 0
    lon, lat = lon[ok], lat[ok]
    if len(lon) == 0:
        return {"type": "MultiPolygon", "coordinates": []}
    if cell_size is None:
        cell_size = _machine_width(table, ok)
    lon0, lat0 = float(np.median(lon)), float(np.median(lat))
    kx = math.radians(1) * EARTH_RADIUS_M * math.cos(math.radians(lat0))
    ky = math.radians(1) * EARTH_RADIUS_M
    x = (lon - lon0) * kx
    y = (lat - lat0) * ky
    extent = max(float(np.ptp(x)), 1.0) * max(float(np.ptp(y)), 1.0)
    # Keep the grid to a few million cells however spread out the points are.
    cell_size = max(cell_size, math.sqrt(extent / MAX_COVERAGE_CELLS))
    # Cell indices start at 1 so the grid has an empty border for the closing below.
    origin_x = math.floor(float(x.min()) / cell_size) - 1
    origin_y = math.floor(float(y.min()) / cell_size) - 1
    ix = np.floor(x / cell_size).astype(np.int64) - origin_x
    iy = np.floor(y / cell_size).astype(np.int64) - origin_y
    grid = np.zeros((int(iy.max()) + 2, int(ix.max()) + 2), dtype=bool)
    grid[iy, ix] = True
    # Closing (dilate then erode, 3 x 3): fills the one-cell gaps between neighbouring passes and rows, which
    # would otherwise become thousands of holes.
    grid = _erode(_dilate(grid))
    rows, cols_ = np.nonzero(grid)
    # Merge each row's consecutive cells into one rectangle: a new run starts where the row changes or a cell is
    # skipped.
    brk = np.ones(len(rows), dtype=bool)
    brk[1:] = (rows[1:] != rows[:-1]) | (cols_[1:] != cols_[:-1] + 1)
    starts = np.flatnonzero(brk)
    ends = np.append(starts[1:], len(rows)) - 1
    x0 = (cols_[starts] + origin_x) * cell_size
    x1 = (cols_[ends] + origin_x + 1) * cell_size
    y0 = (rows[starts] + origin_y) * cell_size
    y1 = y0 + cell_size
    boxes = shapely.box(x0, y0, x1, y1)
    merged = shapely.union_all(boxes, grid_size=cell_size / 1000.0)
    merged = shapely.simplify(merged, cell_size * 0.25)

    def to_lonlat(coords: np.ndarray) -> np.ndarray:
        return np.column_stack((lon0 + coords[:, 0] / kx, lat0 + coords[:, 1] / ky))

    geom = shapely.transform(merged, to_lonlat)
    if geom.geom_type == "Polygon":
        geom = MultiPolygon([geom])
    elif geom.geom_type != "MultiPolygon":
        polys = [g for g in getattr(geom, "geoms", []) if g.geom_type == "Polygon"]
        geom = MultiPolygon(polys)
    return mapping(geom)


def _machine_width(table: PointTable, ok: np.ndarray) -> float:
    """Typical working width (m): per time step the sum of section widths when rows are per section."""
    width = table.columns.get("equipmentWidth")
    if width is None:
        return DEFAULT_CELL_M
    w = np.asarray(width, dtype=float)[ok]
    steps = section_steps(table.columns)
    if steps is not None:
        _, inverse = np.unique(steps[ok], return_inverse=True)
        w = np.bincount(inverse, weights=np.nan_to_num(w))
    w = w[np.isfinite(w) & (w > 0)]
    return float(np.clip(np.median(w), 1.0, 50.0)) if len(w) else DEFAULT_CELL_M


def _dilate(grid: np.ndarray) -> np.ndarray:
    out = grid.copy()
    out[1:, :] |= grid[:-1, :]
    out[:-1, :] |= grid[1:, :]
    tmp = out.copy()
    out[:, 1:] |= tmp[:, :-1]
    out[:, :-1] |= tmp[:, 1:]
    return out


def _erode(grid: np.ndarray) -> np.ndarray:
    return ~_dilate(~grid)
