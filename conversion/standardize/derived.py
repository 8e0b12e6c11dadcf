"""Derived values: what a source lacks and the outputs need, computed from what it has.

Distance, heading and speed from the track; area from distance and working width; wet yield from the flow when only
the flow is logged (flow / (speed x width)); dry yields from wet at the crop's
standard moisture: dry = wet x (100 - M) / (100 - Ms) when M > Ms, else dry = wet (a point without a moisture takes
the file's area-weighted mean moisture; a file without any gets no dry values); volumes from masses via the
standard bushel weight; per-point totals as rate x area. A file giving only each point's mass gets the same per point.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from pyproj import Geod

from conversion.crops import crop_standard
from conversion.readers.base import HARVEST_COLUMNS, PointTable
from conversion.readers.units import US_BUSHEL_L
from conversion.readers.values import text_codes
from fields.geodesy import pyproj_arrays

from .properties import DERIVED_UNITS, HA_M2, in_derived_unit

# A gap longer than this (s) or a jump longer than this (m) between consecutive logged points is a new pass,
# not distance covered.
PASS_BREAK_SECONDS = 30.0
PASS_BREAK_METRES = 100.0
WGS84_GEOD = Geod(ellps="WGS84")


def _per_point_standard(table: PointTable, attribute: str) -> np.ndarray | None:
    """`attribute` of the crop standard per point, from the per-point crop or the table's single crop; None if
    no point's crop has a standard."""
    crops = table.columns.get("crop")
    if crops is not None:
        names, codes = text_codes(crops)
        # A point whose crop cell is blank, in a file of one crop, is of that crop.
        fallback = table.crops[0] if len(table.crops) == 1 else ""
        standards = [_standard(fallback if name in (None, "None", "") else name) for name in [*names, None]]
        values = np.array([getattr(std, attribute) if std else np.nan for std in standards])[codes]
        return None if np.isnan(values).all() else values
    if len(table.crops) == 1 and (std := crop_standard(table.crops[0])):
        return np.full(len(table), getattr(std, attribute))
    return None


def point_standard_moisture(table: PointTable) -> np.ndarray | None:
    """Standard moisture (%) per point from the per-point crop or the table's single crop; None if unknown."""
    return _per_point_standard(table, "standard_moisture")


def point_bushel_weight_kg(table: PointTable) -> np.ndarray | None:
    """Standard bushel weight (kg) per point, like `point_standard_moisture`."""
    return _per_point_standard(table, "bushel_weight_kg")


def _standard(name: str):
    return crop_standard(name) if name not in ("None", "") else None


def dry_from_wet(wet: np.ndarray, moisture: np.ndarray, standard_moisture: np.ndarray | float) -> np.ndarray:
    """Dry value at standard moisture: wet x (100 - M) / (100 - Ms) where M > Ms, else the wet value itself;
    missing (NaN) where the moisture is missing (a point without one is not known to be dry) and where the standard
    is (a point of a crop without one: its wet value was taken as dry)."""
    wet = np.asarray(wet, dtype=float)
    m = np.asarray(moisture, dtype=float)
    ms = np.broadcast_to(np.asarray(standard_moisture, dtype=float), wet.shape)
    unknown = np.isnan(m) | np.isnan(ms)
    shrink = np.where(unknown, np.nan, np.where(m > ms, (100.0 - m) / (100.0 - ms), 1.0))
    return wet * shrink


def moisture_filled(moisture: np.ndarray, area: np.ndarray | None) -> tuple[np.ndarray, int]:
    """Moisture per point for dry values: a point without a value takes the file's area-weighted mean of the points
    with one in (0, 100) (a plain mean without areas; values outside, which cleaning drops anyway, do not count).
    Returns the values and how many points were filled; unchanged when no point has a usable moisture."""
    m = np.asarray(moisture, dtype=float)
    known = np.isfinite(m) & (m > 0) & (m < 100)
    missing = ~np.isfinite(m)
    if not known.any() or not missing.any():
        return m, 0
    mean = float(m[known].mean())
    if area is not None:
        w = np.asarray(area, dtype=float)
        ok = known & np.isfinite(w) & (w > 0)
        if ok.any():
            mean = float(np.average(m[ok], weights=w[ok]))
    return np.where(missing, mean, m), int(missing.sum())


def track_distance_heading(table: PointTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distance (m) and heading (arcdeg) from the previous point, and speed (m/s), in the table's order.

    Distances and headings are geodesic on the WGS84 ellipsoid (pyproj), as field areas are: on a sphere of the
    mean radius they were 0.1-0.35 % off (shorter at 55 N, longer at 39 N), and so were the areas and totals made
    from them. The first point of each pass (after a long gap or a jump) gets NaN distance and speed.
    """
    lon = np.asarray(table.columns["lon"], dtype=float)
    lat = np.asarray(table.columns["lat"], dtype=float)
    n = len(lon)
    dist = np.full(n, np.nan)
    heading = np.full(n, np.nan)
    speed = np.full(n, np.nan)
    if n < 2:
        return dist, heading, speed
    azimuth, _, d = pyproj_arrays(WGS84_GEOD.inv, lon[:-1], lat[:-1], lon[1:], lat[1:])
    h = (azimuth + 360.0) % 360.0
    ts = table.columns.get("timestamp")
    if ts is not None and not np.isnat(ts).all():
        dt = (ts[1:] - ts[:-1]).astype("timedelta64[ms]").astype(np.int64) / 1000.0
        dt = np.where(np.isnat(ts[1:]) | np.isnat(ts[:-1]), np.nan, dt)
    else:
        dt = np.full(n - 1, np.nan)
    brk = (d > PASS_BREAK_METRES) | (dt > PASS_BREAK_SECONDS) | (dt < 0)
    dist[1:] = np.where(brk, np.nan, d)
    heading[1:] = np.where(d > 0, h, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        speed[1:] = np.where(brk | ~(dt > 0), np.nan, d / dt)
    return dist, heading, speed


def _steps_back_in_time(timestamps: np.ndarray | None) -> int:
    """How many steps from one point to the next, both timed, go back in time (`track_distance_heading` gives them
    no distance)."""
    if timestamps is None or len(timestamps) < 2:
        return 0
    timed = ~np.isnat(timestamps[1:]) & ~np.isnat(timestamps[:-1])
    return int(np.count_nonzero(timed & (timestamps[1:] < timestamps[:-1])))


def _section_headings(table: PointTable, cols: dict[str, np.ndarray]) -> np.ndarray:
    """Heading of rows written per section: along each section's own track. In table order the previous row is
    mostly the next section at the same moment, so the bearing between them ran across the boom (the covered area
    drew such swaths along the boom, and the points said so)."""
    sections = np.asarray(cols["sectionId"])
    heading = np.full(len(sections), np.nan)
    track = {name: np.asarray(cols[name]) for name in ("lon", "lat", "timestamp") if name in cols}
    for section in np.unique(sections[~_missing(sections)]):
        rows = np.flatnonzero(sections == section)
        _, heading[rows], _ = track_distance_heading(replace(table, columns={k: v[rows] for k, v in track.items()}))
    return heading


def _missing(values: np.ndarray) -> np.ndarray:
    return np.isnan(values) if values.dtype.kind == "f" else np.zeros(len(values), dtype=bool)


def yield_from_flow(columns: dict[str, np.ndarray], units: dict[str, str]) -> np.ndarray | None:
    """Wet mass per area (kg/ha) where only the flow is logged (FORMATS.md 2.6, 5.2): flow / (speed x width), i.e.
    kg/s over the m2/s the machine covers, x 10,000 m2/ha. NaN at a point without a positive speed and width (a
    stationary machine covers nothing, so no rate can be told). None without the three columns in kg/s, m/s, m."""
    needed = {"cropFlow": "kg/s", "speed": "m/s", "equipmentWidth": "m"}
    if any(name not in columns or units.get(name) != unit for name, unit in needed.items()):
        return None
    flow, speed, width = (np.asarray(columns[name], dtype=float) for name in needed)
    covering = (speed > 0) & (width > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(covering, flow / (speed * width) * HA_M2, np.nan)


# (wet mass, dry mass, wet volume, dry volume): per area, or of each point (the readers' harvest columns, in that
# order).
HARVEST_PER_AREA, HARVEST_PER_POINT = HARVEST_COLUMNS[:4], HARVEST_COLUMNS[4:]
HARVEST_AMOUNTS = (HARVEST_PER_AREA, HARVEST_PER_POINT)


def derive(table: PointTable) -> PointTable:
    """A copy with derived values added where the source lacks them.

    distance/heading/speed from the track; `area` = distance x equipmentWidth; wet mass per area from the flow when
    only the flow is logged (`yield_from_flow`); dry yields from wet via crop
    standard moisture and the points' moisture (`moisture_filled`); volumes from masses via standard bushel weight
    (bushels as volume, 35.239 L); per-point totals `wetMass`, `dryMass`, `wetVolume`, `dryVolume` = rate x area.
    A file giving each point's wet mass and no rate gets its dry mass and volumes the same way, per point.
    """
    cols = dict(table.columns)
    units = dict(table.units)

    def put(name: str, values: np.ndarray) -> None:
        cols[name] = values
        units[name] = DERIVED_UNITS[name]

    warnings = list(table.warnings)
    # A negative working width, distance or area measures nothing (a sign error of the source): taken as unknown, so
    # the point adds no area or total rather than taking some off the file's.
    for name in ("equipmentWidth", "distance", "area"):
        if name in cols:
            values = np.asarray(cols[name], dtype=float)
            negative = values < 0
            if negative.any():
                cols[name] = np.where(negative, np.nan, values)
                warnings.append(f"{int(negative.sum())} points with a negative {name}: taken as unknown")
    if "distance" not in cols or "heading" not in cols or "speed" not in cols:
        dist, heading, speed = track_distance_heading(replace(table, columns=cols))
        if "distance" not in cols and "sectionId" not in cols:
            put("distance", dist)
            if back := _steps_back_in_time(cols.get("timestamp")):
                # A clock run backwards gave no distance at all, so no area nor total, and nothing said why.
                warnings.append(
                    f"{back} of {len(dist) - 1} steps between points go back in time (a clock set back, or points "
                    "out of order): they add no distance, speed or area"
                )
        if "heading" not in cols:
            put("heading", heading if "sectionId" not in cols else _section_headings(table, cols))
        if "speed" not in cols and "sectionId" not in cols:
            put("speed", speed)
    if "area" not in cols and "distance" in cols and "equipmentWidth" in cols:
        put("area", cols["distance"] * cols["equipmentWidth"])
    if "wetMassPerArea" not in cols and (rate := yield_from_flow(cols, units)) is not None:
        cols["wetMassPerArea"] = rate
        units["wetMassPerArea"] = "kg/ha"

    derived_table = replace(table, columns=cols)
    ms = point_standard_moisture(derived_table)
    bushel = point_bushel_weight_kg(derived_table)
    moisture = cols.get("harvestMoisture")
    # Dry values and volumes from wet masses: per area when the file gives rates, else per point when it gives only
    # each point's mass (totals then sum those).
    wet, dry, wet_volume, dry_volume = next(
        (names for names in HARVEST_AMOUNTS if names[0] in cols or names[1] in cols), HARVEST_AMOUNTS[0]
    )
    wet_known = wet in cols and in_derived_unit(units, wet)
    if dry not in cols and wet_known and ms is not None and moisture is not None:
        m, filled = moisture_filled(moisture, cols.get("area"))
        if filled:
            warnings.append(f"{filled} points without a moisture: dry values at the file's mean moisture")
        put(dry, dry_from_wet(cols[wet], m, ms))
    if bushel is not None:
        litres_per_kg = US_BUSHEL_L / bushel
        if wet_volume not in cols and wet_known:
            put(wet_volume, cols[wet] * litres_per_kg)
        if dry_volume not in cols and dry in cols and in_derived_unit(units, dry):
            put(dry_volume, cols[dry] * litres_per_kg)
    if "area" in cols:
        area_ha = cols["area"] / HA_M2
        for total, rate in zip(HARVEST_PER_POINT, HARVEST_PER_AREA, strict=True):
            if total not in cols and rate in cols:
                put(total, cols[rate] * area_ha)
    return replace(table, columns=cols, units=units, warnings=warnings)
