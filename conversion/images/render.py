"""Render one PNG map image per numeric property of a file's points."""

from __future__ import annotations

import io
import math
import os
from collections import deque
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import shapely
from PIL import Image

from .grid import (
    HEXAGON,
    MAX_IMAGE_SIDE,
    SHAPES,
    SQUARE,
    Raster,
    cell_size_for,
    coverage_cells,
    hexagon_raster,
    project,
    square_raster,
    transformer_to,
)
from .ramp import TRANSPARENT, ColorRamp

DEFAULT_RESOLUTION = 0.00001
DEFAULT_SHAPE = SQUARE
DEFAULT_PROJECTION = "EPSG:3857"
# zlib level 1 encodes several times faster than the default 6 and map images (flat runs, large transparent
# areas) barely grow; the encoding is the largest part of rendering time.
PNG_COMPRESS_LEVEL = 1


@dataclass(frozen=True)
class PropertyImage:
    """The rendered map of one property.

    `png` is an RGBA PNG of `width` x `height` pixels whose bounds in the target projection's units are `extent`
    (`xmin`, `ymin`, `xmax`, `ymax`; row 0 is the north edge). `cell_size` is the side of the square cell (or of
    the square with the hexagon's area) actually used, in projection units. `legend` is
    `{"ranges": [{"colorCode": "#RRGGBB", "min": float, "max": float}]}` in the property's own units (`unit`).
    """

    property: str
    png: bytes
    width: int
    height: int
    extent: dict[str, float]
    projection: str
    cell_size: float
    legend: dict
    unit: str | None = None


def _as_vector(values, name: str) -> np.ndarray:
    """`values` as a 1-D float64 array; ValueError when they are not numbers."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold numbers (NaN for no value)") from None
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional")
    return array


@dataclass(frozen=True)
class _Occupancy:
    """The cells holding at least one point, and each point's position among them.

    Shared by all properties of a call: per-property sums then run over occupied cells only, not over the whole
    grid (which may have 16 M cells for a million points).
    """

    cells: np.ndarray
    point_slots: np.ndarray

    @classmethod
    def of(cls, raster: Raster) -> _Occupancy:
        """Occupied cells of `raster`, found with a dense marker instead of a sort."""
        marker = np.zeros(raster.cell_count, dtype=bool)
        marker[raster.point_cells] = True
        cells = np.flatnonzero(marker)
        slots = np.empty(raster.cell_count, dtype=np.int32)
        slots[cells] = np.arange(len(cells), dtype=np.int32)
        return cls(cells, slots[raster.point_cells])


def _inside_with_points(inside: np.ndarray, coverage, lon: np.ndarray, lat: np.ndarray, raster: Raster) -> np.ndarray:
    """`inside` (per cell: whether its centre lies in `coverage`), with the cells holding a point that lies in the
    coverage (its edge included) taken in too. A file's coverage is drawn on cells one machine width wide, so the
    cell of a point near its edge may have its centre just outside: that point was not drawn. Only the points of
    cells left out are looked at."""
    candidates = np.flatnonzero(~inside[raster.point_cells])
    if not len(candidates):
        return inside
    shapely.prepare(coverage)
    within = candidates[shapely.intersects_xy(coverage, lon[candidates], lat[candidates])]
    if not len(within):
        return inside
    inside = inside.copy()
    inside[raster.point_cells[within]] = True
    return inside


def _pack(rgba) -> np.ndarray:
    """RGBA rows (uint8, (n, 4)) as one native uint32 per colour, so a pixel is copied in one operation."""
    return np.ascontiguousarray(rgba, dtype=np.uint8).reshape(-1, 4).view(np.uint32).ravel()


def _cell_colors(
    values: np.ndarray, occupancy: _Occupancy, cell_count: int, ramp: ColorRamp, outside: np.ndarray | None
) -> tuple[np.ndarray, np.ndarray | None]:
    """Packed RGBA per cell (uint32, cell_count) for one property's point values, and its stop values (None if none).

    A cell's value is the mean of its points' finite values; a cell without any gets the ramp's no-value colour,
    and cells outside the coverage are transparent.
    """
    colors = np.full(cell_count, _pack(ramp.no_value)[0], dtype=np.uint32)
    stops = None
    finite = np.isfinite(values)
    if finite.any():
        kept, slots = values[finite], occupancy.point_slots[finite]
        sums = np.bincount(slots, weights=kept, minlength=len(occupancy.cells))
        counts = np.bincount(slots, minlength=len(occupancy.cells))
        filled = counts > 0
        stops = ramp.stop_values(kept)
        rgba = np.empty((int(filled.sum()), 4), dtype=np.uint8)
        rgba[:, :3] = ramp.colorize(sums[filled] / counts[filled], stops)
        rgba[:, 3] = 255
        colors[occupancy.cells[filled]] = _pack(rgba)
    if outside is not None:
        colors[outside] = _pack(TRANSPARENT)[0]
    return colors, stops


def _encode_png(colors: np.ndarray, raster: Raster) -> bytes:
    """PNG bytes of the image whose pixels show their cells' packed colours."""
    packed = colors if raster.pixel_cells is None else colors[raster.pixel_cells]
    pixels = packed.view(np.uint8).reshape(raster.height, raster.width, 4)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG", compress_level=PNG_COMPRESS_LEVEL)
    return buffer.getvalue()


def render_property_images(
    lon,
    lat,
    properties: Mapping[str, np.ndarray],
    *,
    resolution: float = DEFAULT_RESOLUTION,
    shape: str = DEFAULT_SHAPE,
    projection: str = DEFAULT_PROJECTION,
    color_ramp: Mapping | None = None,
    coverage=None,
    units: Mapping[str, str] | None = None,
    max_side: int = MAX_IMAGE_SIDE,
) -> list[PropertyImage]:
    """Render one PNG per property from points, with the configuration's geoimages settings.

    `lon`, `lat` are WGS84 degrees; `properties` maps a property name to one value per point (NaN: no value).
    Points are projected to `projection` (`EPSG:<code>`) and binned into SQUARE or HEXAGON cells whose side is
    `resolution` degrees of latitude at the data's centre, in projection units; the image is at most `max_side`
    pixels on its long side, coarsening the cells when needed. A cell's colour is the `color_ramp` colour of the
    mean of its points' values, the ramp stops being percentiles of the property's values; cells without a value
    get the ramp's `nv` colour. With `coverage` (a WGS84 shapely polygon or multipolygon), cells whose centre lies
    outside it are transparent, unless one of their points lies in it (`_inside_with_points`); a point outside it is
    not drawn. All images of one call share the grid and extent.

    Points whose coordinates are not finite, off the globe or not projectable are ignored; with none left (or no
    properties) the result is empty.
    Raises ValueError for arrays of different lengths, an unknown shape or projection, a non-positive resolution
    or a malformed ramp.
    """
    lon, lat = _as_vector(lon, "lon"), _as_vector(lat, "lat")
    if len(lon) != len(lat):
        raise ValueError(f"lon and lat differ in length ({len(lon)} != {len(lat)})")
    columns = {name: _as_vector(values, f"property {name!r}") for name, values in properties.items()}
    for name, values in columns.items():
        if len(values) != len(lon):
            raise ValueError(f"property {name!r} has {len(values)} values for {len(lon)} points")
    shape_name = str(shape).upper()
    if shape_name not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; expected one of {', '.join(SHAPES)}")
    try:
        cell_degrees = float(resolution)
    except (TypeError, ValueError):
        cell_degrees = math.nan
    if not (math.isfinite(cell_degrees) and cell_degrees > 0):
        raise ValueError(f"resolution must be a positive number, got {resolution!r}")
    ramp = ColorRamp.from_config(color_ramp)
    transformer = transformer_to(projection)

    if not columns:
        return []

    # Out-of-range degrees would project (or pass through EPSG:4326) as nonsense far away from the field.
    with np.errstate(invalid="ignore"):
        on_earth = (np.abs(lon) <= 180.0) & (np.abs(lat) <= 90.0)
    x, y = project(transformer, lon, lat)
    located = on_earth & np.isfinite(x) & np.isfinite(y)
    if not located.any():
        return []
    if not located.all():
        x, y, lon, lat = x[located], y[located], lon[located], lat[located]
        columns = {name: values[located] for name, values in columns.items()}

    cell = cell_size_for(cell_degrees, lon, lat, transformer)
    build = hexagon_raster if shape_name == HEXAGON else square_raster
    raster = build(x, y, cell, max_side)
    outside = None
    if coverage is not None:
        # (a mask, a byte a cell: an index of the cells outside took eight)
        outside = ~_inside_with_points(coverage_cells(coverage, transformer, raster), coverage, lon, lat, raster)
    occupancy = _Occupancy.of(raster)

    # Colouring is numpy; PNG compression (most of the time for large rasters) runs in threads: zlib releases the GIL.
    # A property's colours (4 bytes a cell) are made when a thread is free for them, not all before the first PNG:
    # 14 properties at the size cap held 433 MB.
    threads = min(4, os.cpu_count() or 1)
    encoded: list[tuple[str, np.ndarray | None, bytes]] = []
    with ThreadPoolExecutor(max_workers=threads) as pool:
        encoding: deque = deque()
        for name, values in columns.items():
            if len(encoding) == threads:
                done, done_stops, png = encoding.popleft()
                encoded.append((done, done_stops, png.result()))
            colors, stops = _cell_colors(values, occupancy, raster.cell_count, ramp, outside)
            encoding.append((name, stops, pool.submit(_encode_png, colors, raster)))
            del colors
        encoded.extend((name, stops, png.result()) for name, stops, png in encoding)
    return [
        PropertyImage(
            property=name,
            png=png,
            width=raster.width,
            height=raster.height,
            extent=raster.extent,
            projection=projection,
            cell_size=raster.cell_size,
            legend=ramp.legend(stops),
            unit=(units or {}).get(name),
        )
        for name, stops, png in encoded
    ]
