"""Coverage: the area a table's points cover, as a GeoJSON MultiPolygon built on a grid of cells."""

from __future__ import annotations

import math

import numpy as np
import shapely
from shapely.geometry import MultiPolygon, mapping

from conversion.readers.base import PointTable

from .properties import EARTH_RADIUS_M, section_steps

DEFAULT_CELL_M = 10.0


def coverage(table: PointTable, *, cell_size: float | None = None) -> dict:
    """Covered area as a GeoJSON MultiPolygon: points binned into square cells about one machine width wide,
    one-cell gaps closed, runs of cells merged per row, then unioned. Time and memory follow the number of points,
    not their extent (`_closed_cells`). Points recorded Off or with a working width of 0 (every section off) cover
    nothing.
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
    # Metres from the points' median, which lies in the middle of a cell: on a cell's edge (the grid's origin), a pass
    # through it ran along the coverage's edge, half its swath left out and its points on the boundary.
    half = cell_size / 2
    x = (lon - lon0) * kx + half
    y = (lat - lat0) * ky + half
    # Cell indices start at 1 so that every neighbour of a cell has an index >= 0.
    origin_x = math.floor(float(x.min()) / cell_size) - 1
    origin_y = math.floor(float(y.min()) / cell_size) - 1
    ix = np.floor(x / cell_size).astype(np.int64) - origin_x
    iy = np.floor(y / cell_size).astype(np.int64) - origin_y
    # Closing (dilate then erode, 3 x 3): fills the one-cell gaps between neighbouring passes and rows, which
    # would otherwise become thousands of holes.
    rows, cols_ = _closed_cells(ix, iy)
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
        return np.column_stack((lon0 + (coords[:, 0] - half) / kx, lat0 + (coords[:, 1] - half) / ky))

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


def _closed_cells(ix: np.ndarray, iy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns, in row-major order, of the 3 x 3 closing of the cells holding a point (column `ix`, row
    `iy`, both >= 1). Only occupied cells and their neighbours are held, as sorted keys `row * stride + column`,
    never a grid over the points' extent: memory and time follow the number of points, so one stray position a
    continent away costs one more cell (a dense grid had to coarsen its cells to the extent, to kilometres).
    A square's dilation and erosion are a row's then a column's."""
    stride = int(ix.max()) + 3  # a row's neighbours never wrap into the next one: column stride - 1 stays empty
    cells = np.unique(iy * stride + ix)

    def dilate(keys: np.ndarray, step: int) -> np.ndarray:
        return np.unique(np.concatenate((keys - step, keys, keys + step)))

    def erode(keys: np.ndarray, step: int) -> np.ndarray:
        def held(wanted: np.ndarray) -> np.ndarray:
            found = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
            return keys[found] == wanted

        return keys[held(keys - step) & held(keys + step)]

    closed = erode(erode(dilate(dilate(cells, 1), stride), 1), stride)
    return closed // stride, closed % stride
