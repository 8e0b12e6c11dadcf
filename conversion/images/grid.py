"""Projection of points, square and hexagonal cell grids, and the raster (pixels -> cells) that draws them.

Everything is vectorised: points are binned into cells with array arithmetic, and a hexagonal grid is drawn by
computing, for every pixel centre, the hexagon that contains it (the same axial rounding used for the points).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import shapely
from pyproj import CRS, Transformer
from pyproj.exceptions import CRSError

from fields.geodesy import pyproj_arrays

SQUARE = "SQUARE"
HEXAGON = "HEXAGON"
SHAPES = (SQUARE, HEXAGON)

MAX_IMAGE_SIDE = 4096
# A hexagon must span a few pixels to be seen as one; 4 pixels per cell side gives hexagons ~4.3 px wide and ~5 px
# tall while keeping the image (and PNG encoding time) 16 times the size of the square-cell image.
HEX_PIXELS_PER_CELL = 4
# Circumradius of a hexagon with the area of a square cell of side 1: 3*sqrt(3)/2 * R^2 = 1.
HEX_RADIUS_PER_CELL = math.sqrt(2.0 / (3.0 * math.sqrt(3.0)))
SQRT3 = math.sqrt(3.0)
HEX_RASTER_CHUNK_ROWS = 256


@lru_cache(maxsize=32)
def transformer_to(projection: str) -> Transformer:
    """Transformer from WGS84 lon/lat to `projection` (`EPSG:<code>`), x = easting first; ValueError if unknown."""
    try:
        target = CRS.from_user_input(projection)
    except (CRSError, TypeError) as exc:
        raise ValueError(f"unknown projection {projection!r}: {exc}") from None
    return Transformer.from_crs("EPSG:4326", target, always_xy=True)


def project(transformer: Transformer, lon: np.ndarray, lat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Projected x, y arrays of lon/lat arrays (inf where the projection fails)."""
    return pyproj_arrays(transformer.transform, lon, lat)


def cell_size_for(resolution: float, lon: np.ndarray, lat: np.ndarray, transformer: Transformer) -> float:
    """Side of a square cell in projection units: `resolution` degrees of latitude at the data's centre.

    In EPSG:4326 this is `resolution` itself; in a conformal projection (3857, UTM) it is about the same ground
    length everywhere (`resolution` x 111 km), expressed in that projection's units.
    """
    lon0 = (float(lon.min()) + float(lon.max())) / 2.0
    half = resolution / 2.0
    lat0 = min(max((float(lat.min()) + float(lat.max())) / 2.0, -90.0 + half), 90.0 - half)
    x, y = transformer.transform(np.array([lon0, lon0]), np.array([lat0 - half, lat0 + half]))
    size = math.hypot(x[1] - x[0], y[1] - y[0])
    if not math.isfinite(size) or size <= 0.0:
        raise ValueError(f"resolution {resolution} gives no usable cell size in this projection")
    return size


@dataclass(frozen=True)
class Raster:
    """Cells over the points and the image that draws them.

    Cells are numbered 0..cell_count-1. `point_cells` gives each point's cell. For square cells one pixel is one
    cell (row-major, `pixel_cells` is None); for hexagons `pixel_cells` (height x width) gives each pixel's cell and
    `centre_pixels` the flat pixel holding each cell's centre (-1 when outside the image).
    """

    width: int
    height: int
    pixel_size: float
    cell_size: float
    xmin: float
    ymax: float
    cell_count: int
    point_cells: np.ndarray
    pixel_cells: np.ndarray | None = None
    centre_pixels: np.ndarray | None = None

    @property
    def extent(self) -> dict[str, float]:
        """Bounds of the image in projection units."""
        return {
            "xmin": self.xmin,
            "ymin": self.ymax - self.height * self.pixel_size,
            "xmax": self.xmin + self.width * self.pixel_size,
            "ymax": self.ymax,
        }


def _capped_pixel(pixel: float, span_x: float, span_y: float, max_side: int, margin: float) -> float:
    """Smallest pixel size >= `pixel` keeping `span / pixel + margin + 1` pixels on each side within `max_side`."""
    room = max_side - 1 - margin
    if room <= 0:
        raise ValueError(f"max_side {max_side} is too small for this shape")
    return max(pixel, span_x / room, span_y / room)


def square_raster(x: np.ndarray, y: np.ndarray, cell: float, max_side: int) -> Raster:
    """Square cells of side `cell` (coarsened to keep the image within `max_side`), one pixel each.

    The grid starts at the points' west and north bounds, so the image is as small as the data allow.
    """
    xmin, xmax, ymin, ymax = float(x.min()), float(x.max()), float(y.min()), float(y.max())
    pixel = _capped_pixel(cell, xmax - xmin, ymax - ymin, max_side, 0)
    width = int((xmax - xmin) // pixel) + 1
    height = int((ymax - ymin) // pixel) + 1
    cols = np.minimum(((x - xmin) / pixel).astype(np.intp), width - 1)
    rows = np.minimum(((ymax - y) / pixel).astype(np.intp), height - 1)
    return Raster(width, height, pixel, pixel, xmin, ymax, width * height, rows * width + cols)


def _hex_round(x: np.ndarray, y: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
    """Axial coordinates (q, r) of the pointy-topped hexagon of circumradius `radius` containing each (x, y).

    Standard cube rounding: round the three cube coordinates and recompute the one that moved most.
    """
    q = (SQRT3 / 3.0 * x - y / 3.0) / radius
    r = (2.0 / 3.0 * y) / radius
    s = -q - r
    rq, rr, rs = np.rint(q), np.rint(r), np.rint(s)
    dq, dr, ds = np.abs(rq - q), np.abs(rr - r), np.abs(rs - s)
    fix_q = (dq > dr) & (dq > ds)
    fix_r = ~fix_q & (dr > ds)
    rq = np.where(fix_q, -rr - rs, rq)
    rr = np.where(fix_r, -rq - rs, rr)
    return rq.astype(np.int64), rr.astype(np.int64)


def _hex_centre(q: np.ndarray, r: np.ndarray, radius: float) -> tuple[np.ndarray, np.ndarray]:
    """Centre (x, y) of pointy-topped hexagons given in axial coordinates."""
    return radius * SQRT3 * (q + r / 2.0), radius * 1.5 * r


def hexagon_raster(x: np.ndarray, y: np.ndarray, cell: float, max_side: int) -> Raster:
    """Pointy-topped hexagons with the area of a `cell` x `cell` square, drawn `HEX_PIXELS_PER_CELL` pixels per cell.

    The image covers every hexagon holding a point, whole. Cells are numbered by offset coordinates (row = axial r,
    column = q + floor(r / 2)) over the hexagons that touch the image.
    """
    x0, y0 = float(x.min()), float(y.min())
    # Work relative to the data's corner: projected coordinates can be ~1e7 while cells are ~1.
    dx, dy = x - x0, y - y0
    # A hexagon holding a point reaches at most one hexagon width (x) or two radii (y) beyond it on each side.
    hex_width_px = SQRT3 * HEX_RADIUS_PER_CELL * HEX_PIXELS_PER_CELL
    hex_height_px = 2.0 * HEX_RADIUS_PER_CELL * HEX_PIXELS_PER_CELL
    pixel = _capped_pixel(
        cell / HEX_PIXELS_PER_CELL,
        float(dx.max()),
        float(dy.max()),
        max_side,
        2.0 * max(hex_width_px, hex_height_px) + 2.0,
    )
    radius = pixel * HEX_PIXELS_PER_CELL * HEX_RADIUS_PER_CELL

    q, r = _hex_round(dx, dy, radius)
    cx, cy = _hex_centre(q, r, radius)
    left = float(cx.min()) - SQRT3 / 2.0 * radius
    top = float(cy.max()) + radius
    width = math.ceil((float(cx.max()) + SQRT3 / 2.0 * radius - left) / pixel)
    height = math.ceil((top - float(cy.min()) + radius) / pixel)

    # Offset coordinates of every hexagon touching the image: r ~ 2y / 3R and q + floor(r / 2) ~ x / (sqrt(3) R),
    # each within one of those estimates; a margin of two keeps the numbering simple and safe.
    bottom, right = top - height * pixel, left + width * pixel
    row0 = math.floor(2.0 * bottom / (3.0 * radius)) - 2
    col0 = math.floor(left / (SQRT3 * radius)) - 2
    rows = math.ceil(2.0 * top / (3.0 * radius)) + 2 - row0 + 1
    columns = math.ceil(right / (SQRT3 * radius)) + 2 - col0 + 1

    def cell_of(q: np.ndarray, r: np.ndarray) -> np.ndarray:
        return (r - row0) * columns + (q + np.floor_divide(r, 2) - col0)

    # Each pixel belongs to the hexagon holding its centre; rows in chunks to bound the temporaries' memory.
    px = left + (np.arange(width) + 0.5) * pixel
    py = top - (np.arange(height) + 0.5) * pixel
    pixel_cells = np.empty((height, width), dtype=np.int32)
    for start in range(0, height, HEX_RASTER_CHUNK_ROWS):
        stop = min(start + HEX_RASTER_CHUNK_ROWS, height)
        pixel_cells[start:stop] = cell_of(*_hex_round(px[None, :], py[start:stop, None], radius))

    # Pixel of each cell's centre, for clipping cells to a coverage polygon.
    cell_rows, cell_cols = np.divmod(np.arange(rows * columns), columns)
    cr = cell_rows + row0
    ccx, ccy = _hex_centre(cell_cols + col0 - np.floor_divide(cr, 2), cr, radius)
    ci = np.floor((top - ccy) / pixel).astype(np.int64)
    cj = np.floor((ccx - left) / pixel).astype(np.int64)
    inside = (ci >= 0) & (ci < height) & (cj >= 0) & (cj < width)
    centre_pixels = np.where(inside, ci * width + cj, -1)

    return Raster(
        width=width,
        height=height,
        pixel_size=pixel,
        cell_size=pixel * HEX_PIXELS_PER_CELL,
        xmin=left + x0,
        ymax=top + y0,
        cell_count=rows * columns,
        point_cells=cell_of(q, r),
        pixel_cells=pixel_cells,
        centre_pixels=centre_pixels,
    )


def coverage_cells(coverage, transformer: Transformer, raster: Raster) -> np.ndarray:
    """Boolean per cell: whether the cell's centre lies in `coverage` (a WGS84 shapely geometry).

    The polygon is projected and rasterised into a pixel mask by scanlines through the pixel centres (a pixel is in
    when its centre is: its row's centre line crosses the rings an odd number of times to its left), then read at
    each cell's centre pixel. Pillow's polygon fill is not used: it truncates vertices to whole pixels, which takes
    in one more row and column of pixels past the west and north edges.
    """
    projected = shapely.transform(coverage, lambda lon, lat: project(transformer, lon, lat), interleaved=False)
    mask = _centres_inside(projected, raster).ravel()
    if raster.centre_pixels is None:
        return mask
    return np.where(raster.centre_pixels >= 0, mask[np.maximum(raster.centre_pixels, 0)], False)


def _centres_inside(geometry, raster: Raster) -> np.ndarray:
    """(height, width) booleans: whether each pixel's centre lies inside the polygons of `geometry` (even-odd over
    every ring, so holes are out), in the raster's projected units."""
    height, width = raster.height, raster.width
    edges = []
    # Twice: a collection may hold multipolygons.
    for part in shapely.get_parts(shapely.get_parts(geometry)):
        if not isinstance(part, shapely.Polygon) or part.is_empty:
            continue
        for ring in (part.exterior, *part.interiors):
            coords = shapely.get_coordinates(ring)
            if not np.isfinite(coords).all():
                continue  # (a ring that does not project whole would leave rows an odd number of crossings)
            # pixel units: column j spans [j, j + 1) from the west edge, row i [i, i + 1) from the north edge
            u = (coords[:, 0] - raster.xmin) / raster.pixel_size
            v = (raster.ymax - coords[:, 1]) / raster.pixel_size
            edges.append(np.column_stack([u[:-1], v[:-1], u[1:], v[1:]]))
    inside = np.zeros((height, width), dtype=bool)
    if not edges:
        return inside
    u0, v0, u1, v1 = np.concatenate(edges).T
    # Each edge crosses the centre lines (v = i + 0.5) of the rows from its upper end (included) to its lower end
    # (not included), so a vertex between two edges is counted once; horizontal edges cross none.
    top, bottom = np.minimum(v0, v1), np.maximum(v0, v1)
    first = np.clip(np.ceil(top - 0.5), 0, height).astype(np.int64)
    stop = np.clip(np.ceil(bottom - 0.5), 0, height).astype(np.int64)
    counts = np.maximum(stop - first, 0)
    if not counts.any():
        return inside
    edge = np.repeat(np.arange(len(u0)), counts)
    row = first[edge] + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
    centre = row + 0.5
    x = u0[edge] + (centre - v0[edge]) * (u1[edge] - u0[edge]) / (v1[edge] - v0[edge])
    # Sorted by row, then across: each row crosses the closed rings an even number of times, so crossings pair up
    # as (in, out) spans; a pixel is in when its centre j + 0.5 lies in [in, out).
    order = np.lexsort((x, row))
    row, x = row[order], x[order]
    span_row, start, end = row[0::2], x[0::2], x[1::2]
    first_column = np.clip(np.ceil(start - 0.5), 0, width).astype(np.int64)
    stop_column = np.clip(np.ceil(end - 0.5), 0, width).astype(np.int64)
    toggles = np.zeros((height, width + 1), dtype=np.int8)
    np.add.at(toggles, (span_row, first_column), 1)
    np.add.at(toggles, (span_row, stop_column), -1)
    np.cumsum(toggles[:, :width], axis=1, out=toggles[:, :width])
    return toggles[:, :width] > 0
