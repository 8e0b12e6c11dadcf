"""Time the rendering of property images for a synthetic 1,000,000-point harvest file (about 50 ha).

Run from the repository root: `python bench/images_render.py [points]`. Prints figures only.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import shapely

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conversion.images import render_property_images  # noqa: E402

FIELD_WIDTH_M = 800.0
FIELD_HEIGHT_M = 625.0  # 800 m x 625 m = 50 ha
ORIGIN_LON, ORIGIN_LAT = -93.6, 42.0
METRES_PER_DEGREE = 111_320.0
PASS_SPACING_M = 9.0  # a 30 ft header


def synthetic_harvest(
    points: int, width_m: float = FIELD_WIDTH_M, height_m: float = FIELD_HEIGHT_M, seed: int = 7
) -> tuple[np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """Points along north-south passes of a combine, with six smooth-but-noisy numeric properties."""
    rng = np.random.default_rng(seed)
    passes = int(width_m // PASS_SPACING_M)
    pass_index = rng.integers(0, passes, points)
    east = pass_index * PASS_SPACING_M + rng.normal(0.0, 0.3, points)
    north = rng.random(points) * height_m
    lon = ORIGIN_LON + east / (METRES_PER_DEGREE * np.cos(np.radians(ORIGIN_LAT)))
    lat = ORIGIN_LAT + north / METRES_PER_DEGREE
    trend = np.sin(east / 120.0) + np.cos(north / 90.0)
    properties = {
        "wetMassPerArea": 11_000 + 1_500 * trend + rng.normal(0, 400, points),
        "dryMassPerArea": 9_500 + 1_300 * trend + rng.normal(0, 350, points),
        "harvestMoisture": 18 + 2 * np.cos(east / 200.0) + rng.normal(0, 0.5, points),
        "speed": 2.2 + rng.normal(0, 0.2, points),
        "elevation": 300 + east / 100.0 + north / 80.0,
        "heading": np.where(pass_index % 2 == 0, 0.0, 180.0) + rng.normal(0, 2, points),
    }
    # Some points without a moisture reading.
    properties["harvestMoisture"][rng.random(points) < 0.02] = np.nan
    return lon, lat, properties


def bench_field(points: int, width_m: float, height_m: float) -> None:
    """Render every property for SQUARE and HEXAGON, without and with a coverage polygon, and print timings."""
    lon, lat, properties = synthetic_harvest(points, width_m, height_m)
    coverage = shapely.box(lon.min(), lat.min(), lon.max(), lat.max()).buffer(-0.0005)
    print(f"{points:,} points, {len(properties)} properties, field {width_m * height_m / 10_000:,.0f} ha")
    for shape, polygon in [("SQUARE", None), ("HEXAGON", None), ("SQUARE", coverage), ("HEXAGON", coverage)]:
        started = time.perf_counter()
        images = render_property_images(lon, lat, properties, shape=shape, coverage=polygon)
        elapsed = time.perf_counter() - started
        first = images[0]
        png_bytes = sum(len(image.png) for image in images)
        label = f"{shape}{' + coverage' if polygon is not None else ''}"
        print(
            f"  {label:<20} {elapsed:6.2f} s for {len(images)} images  "
            f"{first.width} x {first.height} px  cell {first.cell_size:.3f} EPSG:3857 units  "
            f"PNG total {png_bytes / 1e6:.1f} MB"
        )


def main() -> None:
    """A 50 ha field at the default resolution, then a 1,000 ha one where the 4096 px cap coarsens the cells."""
    points = int(sys.argv[1]) if len(sys.argv) > 1 else 1_000_000
    # Warm-up: pyproj's first transformer creation reads its database.
    render_property_images(np.array([0.0, 1.0]), np.array([0.0, 1.0]), {"x": np.array([0.0, 1.0])})
    bench_field(points, FIELD_WIDTH_M, FIELD_HEIGHT_M)
    bench_field(points, 4_000.0, 2_500.0)


if __name__ == "__main__":
    main()
