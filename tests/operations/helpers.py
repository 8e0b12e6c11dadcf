"""Synthetic processed files for the operations, merge, crop and image tests: a grid of logged points over a
small rectangle, written through conversion's own outputs and `file_complete` (so the file_processed signal,
field links and events run as in production)."""

from __future__ import annotations

import numpy as np
from shapely.geometry import MultiPolygon, box

from conversion import outputs
from conversion import services as conversion
from conversion.models import File, FileOrigin
from conversion.readers.base import PointTable

# A 20 x 10 grid of points, 0.0001 degree apart (about 11 m x 7 m), near 41.6 N, 93.6 W.
LON0, LAT0, STEP = -93.6, 41.6, 0.0001
COLUMNS, ROWS = 20, 10

RATES = {
    "harvested": ("wetMassPerArea", "kg/ha"),
    "applied": ("appliedRate", "L/ha"),
    "planted": ("seedRate", "seeds/ha"),
}


def grid_table(
    *,
    start: str = "2024-09-01T10:00:00",
    operation_type: str = "harvested",
    lon0: float = LON0,
    lat0: float = LAT0,
    columns: int = COLUMNS,
    rows: int = ROWS,
    seed: int = 0,
) -> PointTable:
    """Points on a grid, one second apart, each covering 50 m2, with a rate that varies from point to point."""
    n = columns * rows
    index = np.arange(n)
    lon = lon0 + (index % columns) * STEP
    lat = lat0 + (index // columns) * STEP
    rng = np.random.default_rng(seed)
    rate_name, rate_unit = RATES[operation_type]
    base = {"harvested": 9000.0, "applied": 150.0, "planted": 80000.0}[operation_type]
    rate = base * (0.5 + rng.random(n))
    timestamps = np.datetime64(start, "ms") + index.astype("timedelta64[s]")
    columns_ = {
        "timestamp": timestamps,
        "lon": lon,
        "lat": lat,
        "area": np.full(n, 50.0),
        "equipmentWidth": np.full(n, 10.0),
        rate_name: rate,
    }
    units = {"area": "m2", "equipmentWidth": "m", rate_name: rate_unit}
    if operation_type == "harvested":
        columns_["harvestMoisture"] = 15.0 + 5.0 * rng.random(n)
        units["harvestMoisture"] = "percentage"
    table = PointTable(
        name="grid", operation_type=operation_type, columns=columns_, units=units, crops=["corn"], source_format="TEST"
    )
    table.refresh_time_range()
    return table


def grid_box(*, lon0: float = LON0, lat0: float = LAT0, columns: int = COLUMNS, rows: int = ROWS, margin=STEP):
    """A field boundary around the grid (a MultiPolygon)."""
    return MultiPolygon(
        [box(lon0 - margin, lat0 - margin, lon0 + (columns - 1) * STEP + margin, lat0 + (rows - 1) * STEP + margin)]
    )


def processed_file(core_user, table: PointTable, *, provider: str = "Other", origin=FileOrigin.UPLOADED) -> File:
    """A processed file of `core_user` holding `table` (its outputs stored, fields attached, events sent)."""
    file = File.objects.create(
        core_user=core_user,
        file_name=f"{table.operation_type}.zip",
        file_format="TEST",
        provider=provider,
        origin=origin,
    )
    produced = outputs.produce(file, table, clean=False)
    return conversion.file_complete(file, produced)


# A machine of three 4 m sections logging one row per section per second (John Deere style): passes 12 m apart.
SECTION_WIDTH_M, SECTIONS, STEP_M = 4.0, 3, 5.0
_M_PER_DEGREE_LAT = 111_195.0
_M_PER_DEGREE_LON = _M_PER_DEGREE_LAT * np.cos(np.radians(LAT0))


def section_table(*, start: str = "2024-09-01T10:00:00", steps: int = 40, passes: int = 4) -> PointTable:
    """Per-section rows: each time step (one second) repeats its distance travelled (5 m) on each section's row and
    splits the machine's 12 m width into three 4 m sections; `passes` passes of `steps` steps, 12 m apart."""
    step = np.repeat(np.arange(steps * passes), SECTIONS)
    section = np.tile(np.arange(SECTIONS), steps * passes)
    along = (step % steps) * STEP_M
    across = (step // steps) * SECTION_WIDTH_M * SECTIONS + (section - 1) * SECTION_WIDTH_M
    n = len(step)
    table = PointTable(
        name="sections",
        operation_type="harvested",
        columns={
            "timestamp": np.datetime64(start, "ms") + step.astype("timedelta64[s]"),
            "lon": LON0 + along / _M_PER_DEGREE_LON,
            "lat": LAT0 + across / _M_PER_DEGREE_LAT,
            "distance": np.full(n, STEP_M),
            "equipmentWidth": np.full(n, SECTION_WIDTH_M),
            "area": np.full(n, STEP_M * SECTION_WIDTH_M),
            "sectionId": section + 1,
            "wetMassPerArea": np.full(n, 9000.0),
        },
        units={"distance": "m", "equipmentWidth": "m", "area": "m2", "wetMassPerArea": "kg/ha"},
        crops=["corn"],
        source_format="TEST",
    )
    table.refresh_time_range()
    return table


def section_box(*, steps: int = 40, passes: int = 4, margin_m: float = 40.0) -> MultiPolygon:
    """A field boundary around `section_table`'s passes, `margin_m` wider on every side."""
    west, east = -margin_m, (steps - 1) * STEP_M + margin_m
    south = -SECTION_WIDTH_M - margin_m
    north = (passes - 1) * SECTION_WIDTH_M * SECTIONS + SECTION_WIDTH_M + margin_m
    return MultiPolygon(
        [
            box(
                LON0 + west / _M_PER_DEGREE_LON,
                LAT0 + south / _M_PER_DEGREE_LAT,
                LON0 + east / _M_PER_DEGREE_LON,
                LAT0 + north / _M_PER_DEGREE_LAT,
            )
        ]
    )
