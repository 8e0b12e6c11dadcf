"""Issue 7 figures on a synthetic 1,000,000-point harvest of a ~100 ha field: property images (and the same points
spread over ~1,000 ha, where the image size cap applies), crop, GeoJSON, npz.

Run from the repository root: `python bench/images.py [points]` (or `make bench BENCH=images`). Prints figures only.

The table is what the pipeline holds after `standardize.derive`: a combine with a 12 m header driving serpentine
north-south passes over a 1,000 m x 1,000 m field at about 2 m/s, logging wetMassPerArea, harvestMoisture,
cropFlow, elevation and its width; distance, heading, speed, area, dry yields, volumes and per-point masses are
derived. Images use the configuration defaults (configs/defaults.py): resolution, projection, colour ramp, and
both shapes; the field polygon (a rectangle with a notch and a pond) is the coverage and the crop boundary.
"""

from __future__ import annotations

import io
import math
import sys
import time
from pathlib import Path

import numpy as np
import shapely

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from configs.defaults import DEFAULTS  # noqa: E402
from conversion import standardize  # noqa: E402
from conversion.crop import table_crop  # noqa: E402
from conversion.images import render_property_images  # noqa: E402
from conversion.pointstore import table_load, table_save  # noqa: E402
from conversion.readers.base import MachineIdentity, PointTable  # noqa: E402

FIELD_M = 1_000.0  # 1,000 m x 1,000 m = 100 ha
HEADER_M = 12.0
SPEED_MS = 2.0
ORIGIN_LON, ORIGIN_LAT = 9.8, 53.5
METRES_PER_DEGREE = 111_320.0


def _to_lonlat(east: np.ndarray, north: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lon = ORIGIN_LON + east / (METRES_PER_DEGREE * math.cos(math.radians(ORIGIN_LAT)))
    return lon, ORIGIN_LAT + north / METRES_PER_DEGREE


def synthetic_harvest(points: int, seed: int = 7) -> PointTable:
    """A derived harvest table of `points` points along the serpentine passes of a 12 m header."""
    rng = np.random.default_rng(seed)
    passes = int(FIELD_M // HEADER_M)
    per_pass = points // passes
    along = np.tile(np.linspace(0.0, FIELD_M, per_pass), passes)
    pass_index = np.repeat(np.arange(passes), per_pass)
    extra = points - len(along)
    along = np.concatenate([along, np.linspace(0.0, FIELD_M, extra)])
    pass_index = np.concatenate([pass_index, np.full(extra, passes - 1)])
    north = np.where(pass_index % 2 == 0, along, FIELD_M - along) + rng.normal(0.0, 0.3, points)
    east = (pass_index + 0.5) * HEADER_M + rng.normal(0.0, 0.3, points)
    lon, lat = _to_lonlat(east, north)
    step_ms = int(round(FIELD_M / per_pass / SPEED_MS * 1000.0)) or 1
    # A 40 s headland turn between passes keeps the passes apart in time (a new pass for `derive`).
    elapsed = np.arange(points, dtype=np.int64) * step_ms + pass_index * 40_000
    timestamp = np.datetime64("2024-09-01T08:00:00", "ms") + elapsed.astype("timedelta64[ms]")
    trend = np.sin(east / 120.0) + np.cos(north / 90.0)
    moisture = 18 + 2 * np.cos(east / 200.0) + rng.normal(0, 0.5, points)
    moisture[rng.random(points) < 0.02] = np.nan
    wet_rate = np.clip(11_000 + 1_500 * trend + rng.normal(0, 400, points), 100, None)
    table = PointTable(
        name="synthetic harvest",
        operation_type="harvested",
        columns={
            "timestamp": timestamp,
            "lon": lon,
            "lat": lat,
            "elevation": 30 + east / 100.0 + north / 80.0 + rng.normal(0, 0.05, points),
            "equipmentWidth": np.full(points, HEADER_M),
            "wetMassPerArea": wet_rate,
            "harvestMoisture": moisture,
            "cropFlow": wet_rate * HEADER_M * SPEED_MS / 10_000 + rng.normal(0, 0.2, points),
            "recordingStatus": np.ones(points),
        },
        units={
            "elevation": "m",
            "equipmentWidth": "m",
            "wetMassPerArea": "kg/ha",
            "harvestMoisture": "percentage",
            "cropFlow": "kg/s",
        },
        crops=["corn"],
        machines=[MachineIdentity(kind="machine", name="Combine 1")],
        source_format="ISOXML",
    )
    table.refresh_time_range()
    return standardize.derive(table)


def field_polygon() -> shapely.Polygon:
    """The field: the 100 ha square less a 150 m x 200 m notch in the north-east corner, with a 60 m pond."""
    corners = [(0, 0), (FIELD_M, 0), (FIELD_M, 800), (850, 800), (850, FIELD_M), (0, FIELD_M)]
    pond = shapely.Point(400, 500).buffer(30, quad_segs=16)
    east, north = np.array(corners, dtype=float).T
    shell = np.column_stack(_to_lonlat(east, north))
    hole = np.column_stack(_to_lonlat(*shapely.get_coordinates(pond.exterior).T))
    return shapely.Polygon(shell, [hole])


class _CountingSink(io.RawIOBase):
    """A binary file that only counts what is written: the writers' own time, without memory or disk."""

    size = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.size += len(data)
        return len(data)


def timed(fn):
    """Wall time of one call, and its result."""
    started = time.perf_counter()
    result = fn()
    return time.perf_counter() - started, result


def main() -> None:
    points = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    # Warm-up: pyproj reads its database on the first transformer.
    render_property_images(np.array([0.0, 1.0]), np.array([0.0, 1.0]), {"x": np.array([0.0, 1.0])})

    seconds, table = timed(lambda: synthetic_harvest(points))
    properties = {name: table.columns[name] for name in standardize.units(table)}
    print(f"{len(table):,} points, {len(properties)} numeric properties, table built and derived in {seconds:.2f} s")

    seconds, coverage = timed(lambda: shapely.geometry.shape(standardize.coverage(table)))
    print(f"coverage polygon             {seconds:6.2f} s")
    config = {
        "resolution": DEFAULTS["geoimagesResolution"],
        "projection": DEFAULTS["geoimagesProjection"],
        "color_ramp": DEFAULTS["geoimagesColorRamp"],
    }
    for shape in ("SQUARE", "HEXAGON"):
        for polygon in (None, coverage):
            seconds, images = timed(
                lambda shape=shape, polygon=polygon: render_property_images(
                    table.columns["lon"], table.columns["lat"], properties, shape=shape, coverage=polygon, **config
                )
            )
            first = images[0]
            label = f"images {shape}{' + coverage' if polygon is not None else ''}"
            print(
                f"{label:<28} {seconds:6.2f} s  {len(images)} PNGs of {first.width} x {first.height} px, "
                f"{sum(len(i.png) for i in images) / 1e6:.1f} MB"
            )

    # The same points spread over a field ten times larger (~1,000 ha): the 4096 px cap on an image side
    # coarsens the hexagon cells; square cells stay at the configured resolution.
    spread = math.sqrt(10.0)
    wide_lon = ORIGIN_LON + (table.columns["lon"] - ORIGIN_LON) * spread
    wide_lat = ORIGIN_LAT + (table.columns["lat"] - ORIGIN_LAT) * spread
    for shape in ("SQUARE", "HEXAGON"):
        seconds, images = timed(
            lambda shape=shape: render_property_images(wide_lon, wide_lat, properties, shape=shape, **config)
        )
        first = images[0]
        print(
            f"{'images ' + shape + ' ~1,000 ha':<28} {seconds:6.2f} s  {len(images)} PNGs of {first.width} x "
            f"{first.height} px, cell {first.cell_size:.2f} EPSG:3857 units"
        )

    field = field_polygon()
    seconds, cropped = timed(lambda: table_crop(table, field))
    print(f"table_crop                   {seconds:6.2f} s  {len(cropped):,} of {len(table):,} points kept")

    for name, writer in (
        ("write_standard_geojson", standardize.write_standard_geojson),
        ("write_raw_geojson", standardize.write_raw_geojson),
    ):
        buffer = io.BytesIO()
        seconds, _ = timed(lambda writer=writer, buffer=buffer: writer(table, buffer))
        print(f"{name:<28} {seconds:6.2f} s  {len(table) / seconds / 1e6:.2f} M points/s, {buffer.tell() / 1e6:.0f} MB")

    buffer = io.BytesIO()
    seconds, _ = timed(lambda: table_save(table, buffer))
    print(f"table_save (npz)             {seconds:6.2f} s  {buffer.tell() / 1e6:.0f} MB")
    buffer.seek(0)
    seconds, loaded = timed(lambda: table_load(buffer))
    assert len(loaded) == len(table)
    print(f"table_load (npz)             {seconds:6.2f} s")


if __name__ == "__main__":
    main()
