"""Coverage: the area a table's points cover, as a GeoJSON MultiPolygon built on a grid of cells."""

from __future__ import annotations

import math

import numpy as np
import shapely
import shapely.geometry
from shapely.geometry import box, mapping

from conversion.readers.base import PointTable
from fields.geodesy import as_multipolygon

from .properties import EARTH_RADIUS_M, SOURCE_COLUMN, section_steps

DEFAULT_CELL_M = 10.0


# Cells are this fraction of the machine's width: a swath's edge is drawn within a quarter width (cells one width
# wide made a boom's pass two cells wide wherever it ran across the grid's lines: 42 % more than the swaths covered).
CELLS_PER_WIDTH = 4
# Not finer than this (m): a narrow machine's swaths would take many samples each.
MIN_CELL_M = 1.0
# Samples of a swath per cell, across and along: at most a cell apart, so the cells a swath crosses are neighbours
# (the closing fills what a diagonal between two samples leaves out).
SAMPLES_PER_CELL = 1
# A point's swath is drawn at most this wide and this long (m): a width or a distance logged wrong (a spike of
# kilometres) would otherwise take millions of samples. No boom is wider, and a pass breaks after a 100 m jump.
MAX_SWATH_M = 100.0
# The grid's degree of longitude is measured at most this far from the equator (a pole's is 0 m).
MAX_GRID_LATITUDE = 89.9
# Samples taken at once, at most (bounds their memory; a point's own are never split).
CHUNK_SAMPLES = 250_000


# What the coverage of a table reads of its columns.
COVERAGE_COLUMNS = (
    "lon", "lat", "recordingStatus", "equipmentWidth", "heading", "distance", "sectionId", "timestamp", SOURCE_COLUMN
)  # fmt: skip


def coverage(table: PointTable, *, cell_size: float | None = None) -> dict:
    """Covered area as a GeoJSON MultiPolygon (`_coverage`). A table of several files (a merge, an operation's
    automerged file: `SOURCE_COLUMN`) covers the union of what each file's points cover, each drawn as the file alone
    is: on one grid for them all, the cells' size (the median machine's width) and place (the points' median) moved
    with whichever files were merged, so the same ground came out differently. An operation covered less of a field
    than one of its files did, and its coverage went up or down by points as files elsewhere joined."""
    source = table.columns.get(SOURCE_COLUMN)
    if source is None or cell_size is not None:
        return _coverage(table, cell_size=cell_size)
    source = np.asarray(source)
    files = np.unique(source)
    if len(files) < 2:
        return _coverage(table)
    parts = []
    for file in files:
        rows = source == file
        columns = {k: np.asarray(table.columns[k])[rows] for k in COVERAGE_COLUMNS if k in table.columns}
        part = _coverage(PointTable(name=table.name, operation_type=table.operation_type, columns=columns, units={}))
        parts.append(shapely.geometry.shape(part))
    return mapping(as_multipolygon(shapely.union_all(parts)))


def _coverage(table: PointTable, *, cell_size: float | None = None) -> dict:
    """Covered area as a GeoJSON MultiPolygon: each point's swath (its working width across its heading, its
    distance from the previous point along it) drawn on square cells a quarter of the machine's width, one-cell gaps
    closed, runs of cells merged per row, then unioned. Without a working width or a heading, the cells holding a
    point, one machine width wide (10 m without a width). Time and memory follow the number of points, not their
    extent (`_closed_cells`). Points recorded Off or with a working width of 0 (every section off) cover nothing.
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
    if not ok.any():
        return {"type": "MultiPolygon", "coordinates": []}
    machine_width = _machine_width(table, ok)
    heading = table.columns.get("heading")
    heading = np.asarray(heading, dtype=float)[ok] if heading is not None else None
    swaths = width is not None and heading is not None and bool(np.isfinite(heading).any())
    if cell_size is None:
        # Without a direction of travel a swath cannot be drawn: each point covers its cell, one width wide.
        cell_size = max(machine_width / CELLS_PER_WIDTH, MIN_CELL_M) if swaths else machine_width
    lon, lat = lon[ok], lat[ok]
    lon0, lat0 = float(np.median(lon)), float(np.median(lat))
    # (at a pole a degree of longitude is no distance: points there would be spread over any number of degrees)
    kx = math.radians(1) * EARTH_RADIUS_M * math.cos(math.radians(min(abs(lat0), MAX_GRID_LATITUDE)))
    ky = math.radians(1) * EARTH_RADIUS_M
    # Metres from the points' median, which lies in the middle of a cell: on a cell's edge (the grid's origin), a pass
    # through it ran along the coverage's edge, half its swath left out and its points on the boundary.
    half = cell_size / 2
    x = (lon - lon0) * kx + half
    y = (lat - lat0) * ky + half
    if swaths:
        x, y = _swath_samples(table, ok, heading, x, y, machine_width, cell_size / SAMPLES_PER_CELL)
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
    west, south, east, north = geom.bounds
    if west < -180 or south < -90 or east > 180 or north > 90:
        # A swath reaching past a pole or the antimeridian: what lies on the globe (no wrapping round).
        geom = shapely.intersection(geom, box(-180, -90, 180, 90))
    return mapping(as_multipolygon(geom))


def _swath_samples(
    table: PointTable,
    ok: np.ndarray,
    heading: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
    machine_width: float,
    spacing: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Positions (m, as `x`, `y`) spread over the swath of each point `ok` at most `spacing` apart: the rectangle its
    working width wide across its `heading` (of the points `ok`), reaching back its distance from the previous point
    (the ground it covered since then). A point without a heading takes its pass's next one (the first point of a
    pass), else the last; without a distance (a pass's first point), the swath is a line across; without a width,
    the machine's."""
    n = len(x)
    w = np.asarray(table.columns["equipmentWidth"], dtype=float)[ok]
    w = np.minimum(np.where(np.isfinite(w) & (w > 0), w, machine_width), MAX_SWATH_M)
    d = table.columns.get("distance")
    d = np.nan_to_num(np.asarray(d, dtype=float)[ok], nan=0.0, posinf=0.0) if d is not None else np.zeros(n)
    d = np.clip(d, 0.0, MAX_SWATH_M)
    theta = np.radians(_filled(heading))
    # Direction of travel (heading clockwise from north) and the machine's right hand, in metres east and north.
    fx, fy = np.sin(theta), np.cos(theta)
    across = np.maximum(np.ceil(w / spacing), 1).astype(np.int64)
    along = np.maximum(np.ceil(d / spacing), 1).astype(np.int64)
    xs, ys = [], []
    samples = across * along
    total = np.cumsum(samples)
    bounds = np.searchsorted(total, np.arange(CHUNK_SAMPLES, int(total[-1]), CHUNK_SAMPLES), side="right")
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, n], strict=True):
        if hi <= lo:
            continue
        part = slice(int(lo), int(hi))
        ka, kb = across[part], along[part]
        count = samples[part]
        point = np.repeat(np.arange(len(count)), count)
        rank = np.arange(int(count.sum())) - np.repeat(np.cumsum(count) - count, count)
        i, j = rank // ka[point], rank % ka[point]
        u = (w[part][point]) * ((j + 0.5) / ka[point] - 0.5)  # across: -w/2 .. w/2
        t = -d[part][point] * ((i + 0.5) / kb[point])  # along: back towards the previous point
        px, py = x[part][point], y[part][point]
        sx = px + t * fx[part][point] + u * fy[part][point]
        sy = py + t * fy[part][point] - u * fx[part][point]
        # One sample per small square of side `spacing` is enough: the cells are whole numbers of them.
        cx, cy = np.floor(sx / spacing).astype(np.int64), np.floor(sy / spacing).astype(np.int64)
        x_min, y_min = int(cx.min()), int(cy.min())
        stride = int(cy.max()) - y_min + 1
        keys = _distinct((cx - x_min) * stride + (cy - y_min))
        xs.append((keys // stride + x_min + 0.5) * spacing)
        ys.append((keys % stride + y_min + 0.5) * spacing)
    return np.concatenate(xs), np.concatenate(ys)


def _distinct(keys: np.ndarray) -> np.ndarray:
    """The distinct values of `keys`, sorted (numpy's `unique` hashes integers: several times slower here)."""
    keys = np.sort(keys)
    return keys[np.r_[True, keys[1:] != keys[:-1]]]


def _filled(h: np.ndarray) -> np.ndarray:
    """`h` with each NaN taken from the next value, and trailing NaNs from the last one."""
    valid = np.flatnonzero(~np.isnan(h))
    if len(valid) in (0, len(h)):
        return h
    return h[valid[np.minimum(np.searchsorted(valid, np.arange(len(h))), len(valid) - 1)]]


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
