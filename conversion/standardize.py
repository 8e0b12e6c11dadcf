"""Pure functions on point tables: derived values, default cleaning, summary, units and GeoJSON output.

Rules from the supplement: cleaning drops points with rate or mass <= 0, moisture outside (0, 100) and
recordingStatus Off; dry = wet x (100 - M) / (100 - Ms) when M > Ms, else dry = wet; totals are rate x area summed
over points, never a sum of rates.
"""

from __future__ import annotations

import io
import json
import math
from dataclasses import dataclass, field, replace
from typing import IO

import numpy as np
import shapely
from shapely.geometry import MultiPolygon, mapping

from conversion.crops import crop_standard
from conversion.readers.base import PointTable
from conversion.readers.units import IMPERIAL_OF, US_BUSHEL_L, normalize_unit

EARTH_RADIUS_M = 6_371_008.8
HA_M2 = 10_000.0
# A gap longer than this (s) or a jump longer than this (m) between consecutive logged points is a new pass,
# not distance covered.
PASS_BREAK_SECONDS = 30.0
PASS_BREAK_METRES = 100.0
DEFAULT_CELL_M = 10.0
MAX_COVERAGE_CELLS = 4_000_000

DERIVED_UNITS: dict[str, str] = {
    "area": "m2",
    "distance": "m",
    "heading": "arcdeg",
    "speed": "m/s",
    "wetMass": "kg",
    "dryMass": "kg",
    "wetVolume": "L",
    "dryVolume": "L",
    "dryMassPerArea": "kg/ha",
    "wetVolumePerArea": "L/ha",
    "dryVolumePerArea": "L/ha",
}
# Output order of point properties (supplement names).
PROPERTY_ORDER: tuple[str, ...] = (
    "area",
    "distance",
    "heading",
    "speed",
    "elevation",
    "equipmentWidth",
    "sectionId",
    "seedRate",
    "seedRateTarget",
    "seedDepth",
    "appliedRate",
    "appliedRateTarget",
    "wetMass",
    "wetMassPerArea",
    "dryMass",
    "dryMassPerArea",
    "wetVolume",
    "wetVolumePerArea",
    "dryVolume",
    "dryVolumePerArea",
    "harvestMoisture",
    "cropFlow",
)
RATE_PROPERTIES = frozenset(
    {
        "seedRate",
        "seedRateTarget",
        "appliedRate",
        "appliedRateTarget",
        "wetMassPerArea",
        "dryMassPerArea",
        "wetVolumePerArea",
        "dryVolumePerArea",
        "harvestMoisture",
    }
)
PRIMARY_RATES: dict[str, tuple[str, ...]] = {
    "harvested": ("wetMassPerArea", "dryMassPerArea", "wetVolumePerArea", "dryVolumePerArea", "wetMass"),
    "planted": ("seedRate", "appliedRate"),
    "applied": ("appliedRate",),
}
_NON_SUMMARY = frozenset({"lon", "lat", "timestamp", "sectionId", "recordingStatus"})


@dataclass
class CleanResult:
    """A cleaned table, how many points were dropped, and how many for each reason (first failing rule)."""

    table: PointTable
    dropped: int
    reasons: dict[str, int] = field(default_factory=dict)


# -- derived values -------------------------------------------------------------------------------------------


def _per_point_standard(table: PointTable, attribute: str) -> np.ndarray | None:
    """`attribute` of the crop standard per point, from the per-point crop or the table's single crop; None if
    no point's crop has a standard."""
    crops = table.columns.get("crop")
    if crops is not None:
        uniques, inverse = np.unique(np.asarray(crops, dtype=object).astype(str), return_inverse=True)
        standards = [_standard(name) for name in uniques]
        values = np.array([getattr(std, attribute) if std else np.nan for std in standards])[inverse]
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
    """Dry value at standard moisture: wet x (100 - M) / (100 - Ms) where M > Ms, else the wet value itself."""
    wet = np.asarray(wet, dtype=float)
    m = np.asarray(moisture, dtype=float)
    ms = np.broadcast_to(np.asarray(standard_moisture, dtype=float), wet.shape)
    shrink = np.where(m > ms, (100.0 - m) / (100.0 - ms), 1.0)
    return wet * shrink


def track_distance_heading(table: PointTable) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Distance (m) and heading (arcdeg) from the previous point, and speed (m/s), in the table's order.

    The first point of each pass (after a long gap or a jump) gets NaN distance and speed.
    """
    lon = np.radians(table.columns["lon"])
    lat = np.radians(table.columns["lat"])
    n = len(lon)
    dist = np.full(n, np.nan)
    heading = np.full(n, np.nan)
    speed = np.full(n, np.nan)
    if n < 2:
        return dist, heading, speed
    dlat = lat[1:] - lat[:-1]
    dlon = lon[1:] - lon[:-1]
    a = np.sin(dlat / 2) ** 2 + np.cos(lat[:-1]) * np.cos(lat[1:]) * np.sin(dlon / 2) ** 2
    d = 2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(np.clip(a, 0, 1)))
    y = np.sin(dlon) * np.cos(lat[1:])
    x = np.cos(lat[:-1]) * np.sin(lat[1:]) - np.sin(lat[:-1]) * np.cos(lat[1:]) * np.cos(dlon)
    h = (np.degrees(np.arctan2(y, x)) + 360.0) % 360.0
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


def derive(table: PointTable) -> PointTable:
    """A copy with derived values added where the source lacks them.

    distance/heading/speed from the track; `area` = distance x equipmentWidth; dry yields from wet via crop
    standard moisture; volumes from masses via standard bushel weight (bushels as volume, 35.239 L); per-point
    totals `wetMass`, `dryMass`, `wetVolume`, `dryVolume` = rate x area.
    """
    cols = dict(table.columns)
    units = dict(table.units)

    def put(name: str, values: np.ndarray) -> None:
        cols[name] = values
        units[name] = DERIVED_UNITS[name]

    if "distance" not in cols or "heading" not in cols or "speed" not in cols:
        dist, heading, speed = track_distance_heading(replace(table, columns=cols))
        if "distance" not in cols and "sectionId" not in cols:
            put("distance", dist)
        if "heading" not in cols:
            put("heading", heading)
        if "speed" not in cols and "sectionId" not in cols:
            put("speed", speed)
    if "area" not in cols and "distance" in cols and "equipmentWidth" in cols:
        put("area", cols["distance"] * cols["equipmentWidth"])

    derived_table = replace(table, columns=cols)
    ms = point_standard_moisture(derived_table)
    bushel = point_bushel_weight_kg(derived_table)
    moisture = cols.get("harvestMoisture")
    if "dryMassPerArea" not in cols and "wetMassPerArea" in cols and ms is not None:
        m = moisture if moisture is not None else np.full(len(table), np.nan)
        put("dryMassPerArea", dry_from_wet(cols["wetMassPerArea"], m, ms))
    if bushel is not None:
        litres_per_kg = US_BUSHEL_L / bushel
        if "wetVolumePerArea" not in cols and "wetMassPerArea" in cols:
            put("wetVolumePerArea", cols["wetMassPerArea"] * litres_per_kg)
        if "dryVolumePerArea" not in cols and "dryMassPerArea" in cols:
            put("dryVolumePerArea", cols["dryMassPerArea"] * litres_per_kg)
    if "area" in cols:
        area_ha = cols["area"] / HA_M2
        for total, rate in (
            ("wetMass", "wetMassPerArea"),
            ("dryMass", "dryMassPerArea"),
            ("wetVolume", "wetVolumePerArea"),
            ("dryVolume", "dryVolumePerArea"),
        ):
            if total not in cols and rate in cols:
                put(total, cols[rate] * area_ha)
    return replace(table, columns=cols, units=units, warnings=list(table.warnings))


# -- cleaning -------------------------------------------------------------------------------------------------


def primary_rate(table: PointTable) -> str | None:
    """The column that says how much was harvested / planted / applied at each point, if any."""
    for name in PRIMARY_RATES.get(table.operation_type, ()):
        if name in table.columns:
            return name
    return None


def clean(table: PointTable) -> CleanResult:
    """Default cleaning: drop recordingStatus Off, moisture outside (0, 100), and rate or mass <= 0 (or missing).

    Each dropped point is counted under the first rule it fails, in that order.
    """
    n = len(table)
    keep = np.ones(n, dtype=bool)
    reasons: dict[str, int] = {}

    def drop(mask: np.ndarray, reason: str) -> None:
        newly = keep & mask
        count = int(newly.sum())
        if count:
            reasons[reason] = reasons.get(reason, 0) + count
        keep[newly] = False

    status = table.columns.get("recordingStatus")
    if status is not None:
        drop(np.asarray(status, dtype=float) == 0, "recordingStatus Off")
    moisture = table.columns.get("harvestMoisture")
    if moisture is not None:
        m = np.asarray(moisture, dtype=float)
        drop(np.isfinite(m) & ((m <= 0) | (m >= 100)), "moisture outside (0, 100)")
    rate_name = primary_rate(table)
    if rate_name is not None:
        rate = np.asarray(table.columns[rate_name], dtype=float)
        drop(~(rate > 0), f"{rate_name} <= 0 or missing")
    if table.operation_type == "harvested" and "wetMass" in table.columns and rate_name != "wetMass":
        mass = np.asarray(table.columns["wetMass"], dtype=float)
        drop(np.isfinite(mass) & (mass <= 0), "wetMass <= 0")
    dropped = n - int(keep.sum())
    return CleanResult(table.select(keep) if dropped else table, dropped, reasons)


def standardize(table: PointTable) -> tuple[PointTable, CleanResult]:
    """Derive then clean: the table behind standardGeojson, and the cleaning report."""
    result = clean(derive(table))
    return result.table, result


# -- units and summary ----------------------------------------------------------------------------------------


def units(table: PointTable, *, imperial: bool = False) -> dict[str, str]:
    """Flat `{property: unit}` of the numeric properties present.

    With `imperial`, properties whose source used imperial units are reported in them (the GeoJSON values stay
    metric; this map is for display on request).
    """
    out: dict[str, str] = {}
    for name in PROPERTY_ORDER:
        if name in table.columns and np.asarray(table.columns[name]).dtype.kind == "f":
            unit = table.units.get(name) or DERIVED_UNITS.get(name, "")
            if not unit:
                continue
            if imperial:
                unit = _imperial_unit(table, name, unit)
            out[name] = unit
    return out


_IMPERIAL_SOURCES = frozenset({"ft", "ac", "mph", "lb", "lb/ac", "lb/s", "gal", "gal/ac", "bu/ac", "seeds/ac"})
# Harvest volumes are reported in bushels, not gallons.
_IMPERIAL_VOLUME = {"wetVolume": "bu", "dryVolume": "bu", "wetVolumePerArea": "bu/ac", "dryVolumePerArea": "bu/ac"}


def _imperial_unit(table: PointTable, name: str, unit: str) -> str:
    source = normalize_unit(table.source_units.get(name))
    if source in _IMPERIAL_SOURCES:
        return source
    if not any(normalize_unit(u) in _IMPERIAL_SOURCES for u in table.source_units.values()):
        return unit
    return _IMPERIAL_VOLUME.get(name) or IMPERIAL_OF.get(unit, unit)


def _iso(ts: np.datetime64 | None) -> str | None:
    if ts is None or np.isnat(ts):
        return None
    return str(np.datetime_as_string(ts.astype("datetime64[ms]"), unit="ms")) + "Z"


def totals(table: PointTable) -> dict[str, dict]:
    """Totals as `{value, unit}`: each is the sum over points of rate x point area (area itself for totalArea)."""
    cols = table.columns
    out: dict[str, dict] = {}
    area = cols.get("area")
    if area is not None:
        out["totalArea"] = {"value": float(np.nansum(area)), "unit": "m2"}
    if "distance" in cols:
        dist = np.asarray(cols["distance"], dtype=float)
        if "sectionId" in cols and "timestamp" in cols:
            # One row per section per time step repeats the distance travelled; count each time step once.
            _, first = np.unique(cols["timestamp"], return_index=True)
            dist = dist[first]
        out["totalDistance"] = {"value": float(np.nansum(dist)), "unit": "m"}
    if area is None:
        return out
    area_ha = np.asarray(area, dtype=float) / HA_M2
    specs = (
        ("totalWetMass", "wetMassPerArea"),
        ("totalDryMass", "dryMassPerArea"),
        ("totalWetVolume", "wetVolumePerArea"),
        ("totalDryVolume", "dryVolumePerArea"),
        ("totalApplied", "appliedRate"),
        ("totalPlanted", "seedRate"),
    )
    for total, rate in specs:
        if rate not in cols:
            continue
        rate_unit = table.units.get(rate) or DERIVED_UNITS.get(rate, "")
        unit = rate_unit.removesuffix("/ha") if rate_unit.endswith("/ha") else rate_unit
        values = np.asarray(cols[rate], dtype=float) * area_ha
        out[total] = {"value": float(np.nansum(values)), "unit": unit}
    return out


def summary(table: PointTable) -> dict:
    """The summary Feature: coverage MultiPolygon and property statistics, totals and context (supplement)."""
    cols = table.columns
    props: dict[str, object] = {}
    area = cols.get("area")
    table_units = units(table)
    for name in PROPERTY_ORDER:
        if name in _NON_SUMMARY or name not in cols:
            continue
        values = np.asarray(cols[name])
        if values.dtype.kind != "f":
            continue
        finite = np.isfinite(values)
        if not finite.any():
            continue
        avg = float(values[finite].mean())
        if name in RATE_PROPERTIES and area is not None:
            w = np.asarray(area, dtype=float)
            ok = finite & np.isfinite(w) & (w > 0)
            if ok.any():
                avg = float(np.average(values[ok], weights=w[ok]))
        props[name] = {
            "avg": avg,
            "min": float(values[finite].min()),
            "max": float(values[finite].max()),
            "unit": table_units.get(name, ""),
        }
    props.update(totals(table))
    if table.recorded_totals:
        props["recordedTotals"] = {k: {"value": v, "unit": u} for k, (v, u) in table.recorded_totals.items()}
    props["operationType"] = table.operation_type
    ts = cols.get("timestamp")
    start = end = None
    if ts is not None and len(ts) and not np.isnat(ts).all():
        valid = ts[~np.isnat(ts)]
        start, end = valid.min(), valid.max()
    props["startTime"] = _iso(start)
    props["endTime"] = _iso(end)
    props["crop"] = list(table.crops)
    props["varieties"] = list(table.varieties)
    props["products"] = list(table.products)
    props["machinery"] = [{k: v for k, v in vars(m).items() if v is not None} for m in table.machines]
    props["pointCount"] = len(table)
    return {"type": "Feature", "geometry": coverage(table), "properties": props}


# -- coverage -------------------------------------------------------------------------------------------------


def coverage(table: PointTable, *, cell_size: float | None = None) -> dict:
    """Covered area as a GeoJSON MultiPolygon: points binned into square cells about one machine width wide,
    one-cell gaps closed, runs of cells merged per row, then unioned. Linear in the number of points.
    """
    lon = np.asarray(table.columns.get("lon", np.empty(0)), dtype=float)
    lat = np.asarray(table.columns.get("lat", np.empty(0)), dtype=float)
    ok = np.isfinite(lon) & np.isfinite(lat)
    status = table.columns.get("recordingStatus")
    if status is not None:
        ok &= np.asarray(status, dtype=float) != 0
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
    ts = table.columns.get("timestamp")
    if "sectionId" in table.columns and ts is not None:
        _, inverse = np.unique(np.asarray(ts)[ok], return_inverse=True)
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


# -- GeoJSON output -------------------------------------------------------------------------------------------
#
# Features are formatted a chunk at a time with array arithmetic, never one Python object per point. A chunk is a
# matrix with one row per point whose cells are 4-byte groups of text; every piece of a feature (the constant
# text, each coordinate, each `,"name":value` property) is a run of cells, and bytes a piece does not use are
# NUL: a number is written three digits per cell from lookup tables, an absent property (NaN, NaT, None) is all
# NUL. Dropping the NUL bytes of the matrix leaves the features. The output equals `json.dumps` of the property
# dicts: floats rounded to 6 decimals (lon/lat 8) written as Python's `repr` writes them, timestamps ISO 8601 with
# milliseconds and Z, text JSON-escaped (UTF-8, not \u-escaped).

_COORDINATE_DECIMALS = 8
_PROPERTY_DECIMALS = 6
# Beyond 15 significant digits a rounded float's repr is not its decimal digits; such values (and those repr
# writes with an exponent: below 1e-4) go through `repr` itself.
_MAX_EXACT_DIGITS = 10**15
_MS_PER_DAY = 86_400_000


def _cells(texts) -> np.ndarray:
    """Byte strings of at most 4 bytes as one uint32 cell each (NUL-padded)."""
    return np.frombuffer(b"".join(t.ljust(4, b"\0") for t in texts), dtype=np.uint32)


def _text_cells(texts: list[bytes]) -> np.ndarray:
    """Byte strings as an (n, cells) uint32 matrix, NUL-padded to a whole number of cells."""
    width = max((len(t) for t in texts), default=0)
    width = max(4, -(-width // 4) * 4)
    array = np.array(texts, dtype=f"S{width}")
    return array.view(np.uint32).reshape(len(texts), width // 4)


def _constant(text: bytes) -> np.ndarray:
    """A constant piece of every row, as cells."""
    return _text_cells([text])[0]


# Tables of 3-digit groups (2-digit where a fraction of 8 decimals starts): leading group of the integer part
# (no leading zeros, optionally signed), inner groups, the first fraction group (with the point) and the last
# non-zero fraction group (trailing zeros dropped).
_GROUP = {size: _cells(b"%0*d" % (size, i) for i in range(10**size)) for size in (2, 3)}
_LEADING = _cells(b"%d" % i for i in range(1000))
_LEADING_NEGATIVE = _cells(b"-%d" % i for i in range(1000))
_POINT_GROUP = {size: _cells(b".%0*d" % (size, i) for i in range(10**size)) for size in (2, 3)}
_LAST_GROUP = {size: _cells((b"%0*d" % (size, i)).rstrip(b"0") for i in range(10**size)) for size in (2, 3)}
_POINT_LAST_GROUP = {
    size: _cells(b"." + ((b"%0*d" % (size, i)).rstrip(b"0") or b"0") for i in range(10**size)) for size in (2, 3)
}
_TWO_DIGITS_AND = {sep: _cells(b"%02d%s" % (i, sep) for i in range(100)) for sep in (b":", b".")}
_MILLIS_Z = _cells(b"%03dZ" % i for i in range(1000))
_QUOTE = _constant(b'"')


def _groups(number: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    """Digit groups (most significant first) of whole numbers held as float64 below 10**15, as table indexes."""
    out = []
    rest = number
    for size in reversed(sizes):
        # Exact in float64 below 10**15.
        higher = np.floor(rest / 10.0**size)
        out.append((rest - higher * 10.0**size).astype(np.intp))
        rest = higher
    return out[::-1]


def _float_field(values: np.ndarray, decimals: int) -> tuple[np.ndarray, np.ndarray]:
    """Cells of `repr(round(value, decimals))` per point, and which points have a finite value."""
    rounded = np.round(values, decimals).astype(np.float64, copy=False)
    n = len(rounded)
    finite = np.isfinite(rounded)
    scale = 10.0**decimals
    with np.errstate(invalid="ignore", over="ignore"):
        scaled = np.rint(rounded * scale)
        magnitude = np.abs(scaled)
        # The digits of `scaled` are repr's digits when `rounded` is the double nearest to scaled / 10**decimals
        # (a float32 column's values are not) and have at most 15 significant digits.
        exact = (
            finite
            & (rounded == scaled / scale)
            & ((magnitude == 0) | ((magnitude >= 10 ** (decimals - 4)) & (magnitude < _MAX_EXACT_DIGITS)))
        )
        magnitude = np.where(exact, magnitude, 0.0)
        whole = np.floor(magnitude / scale)
        fraction = magnitude - whole * scale
    negative = np.signbit(scaled)
    int_groups = max(1, -(-len(str(int(whole.max()) if n else 0)) // 3))
    fraction_sizes = ([decimals % 3] if decimals % 3 else []) + [3] * (decimals // 3)
    out = np.zeros((n, int_groups + len(fraction_sizes)), dtype=np.uint32)

    # Integer part: nothing before the first non-zero group (the last one for 0), which has no leading zeros.
    groups = _groups(whole, [3] * int_groups)
    first = np.full(n, int_groups - 1)
    for i in range(int_groups - 2, -1, -1):
        first = np.where(groups[i] != 0, i, first)
    for i, group in enumerate(groups):
        leading = np.where(negative, _LEADING_NEGATIVE[group], _LEADING[group])
        out[:, i] = np.where(first == i, leading, np.where(first < i, _GROUP[3][group], 0))

    # Fraction: the point, then groups up to the last non-zero one (at least one digit), trailing zeros dropped.
    groups = _groups(fraction, fraction_sizes)
    last = np.zeros(n, dtype=np.intp)
    for i in range(1, len(groups)):
        last = np.where(groups[i] != 0, i, last)
    for i, (group, size) in enumerate(zip(groups, fraction_sizes, strict=True)):
        full, end = (_POINT_GROUP[size], _POINT_LAST_GROUP[size]) if i == 0 else (_GROUP[size], _LAST_GROUP[size])
        out[:, int_groups + i] = np.where(last == i, end[group], np.where(last > i, full[group], 0))

    if not exact.all():
        out[~exact] = 0
    others = np.flatnonzero(finite & ~exact)
    if len(others):
        texts = _text_cells([repr(v).encode() for v in rounded[others].tolist()])
        if texts.shape[1] > out.shape[1]:
            out = np.pad(out, ((0, 0), (0, texts.shape[1] - out.shape[1])))
        out[others, : texts.shape[1]] = texts
    return out, finite


def _timestamp_field(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cells of `"YYYY-MM-DDTHH:MM:SS.mmmZ"` (quoted) per point, and which points have a time.

    Dates come from numpy for the few distinct days of a chunk; the time of day from tables.
    """
    ms = values.astype("datetime64[ms]")
    present = ~np.isnat(ms)
    count = ms.view(np.int64)
    days = np.where(present, count // _MS_PER_DAY, 0)
    in_day = np.where(present, count - days * _MS_PER_DAY, 0)
    unique_days, inverse = np.unique(days, return_inverse=True)
    dates = np.datetime_as_string(unique_days.astype("datetime64[D]"))
    date_cells = _text_cells([f'"{d}T'.encode() for d in dates.tolist()])[inverse.ravel()]
    hours, rest = np.divmod(in_day, 3_600_000)
    minutes, rest = np.divmod(rest, 60_000)
    seconds, millis = np.divmod(rest, 1000)
    clock = np.column_stack(
        [
            _TWO_DIGITS_AND[b":"][hours],
            _TWO_DIGITS_AND[b":"][minutes],
            _TWO_DIGITS_AND[b"."][seconds],
            _MILLIS_Z[millis],
            np.broadcast_to(_QUOTE, (len(values), 1)),
        ]
    )
    return np.concatenate([date_cells, clock], axis=1), present


def _text_field(values: list) -> tuple[np.ndarray, np.ndarray]:
    """Cells of the JSON string of `str(value)` per point (None: absent), each distinct value escaped once."""
    cache: dict = {}
    texts = []
    for value in values:
        if value is None:
            texts.append(b"")
            continue
        key = (type(value), value)
        try:
            text = cache[key]
        except KeyError:
            text = cache[key] = json.dumps(str(value), ensure_ascii=False).encode()
        except TypeError:
            text = json.dumps(str(value), ensure_ascii=False).encode()
        texts.append(text)
    return _text_cells(texts), np.array([v is not None for v in values], dtype=bool)


def _value_field(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cells of the JSON text of each point's value, and which points have one."""
    kind = values.dtype.kind
    if kind == "f":
        return _float_field(values, _PROPERTY_DECIMALS)
    if kind == "b":
        return _text_cells([b"false", b"true"])[values.astype(np.intp)], np.ones(len(values), dtype=bool)
    if kind in "iu":
        return _text_cells(values.astype("S24").tolist()), np.ones(len(values), dtype=bool)
    if kind == "M":
        return _timestamp_field(values)
    return _text_field(values.tolist())


def _recording_status(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cells of "On" / "Off" per point from a recordingStatus column, and which points have a status."""
    if values.dtype.kind in "fiub":
        number = np.round(values, _PROPERTY_DECIMALS) if values.dtype.kind == "f" else values
        words = _text_cells([b'"Off"', b'"On"'])
        present = np.isfinite(number) if values.dtype.kind == "f" else np.ones(len(values), dtype=bool)
        return words[(number != 0).astype(np.intp)], present
    # Any other kind is written as text, and any non-empty text reads as "On".
    return _text_field([None if v is None else ("On" if str(v) else "Off") for v in values.tolist()])


def _feature_chunk(
    columns: dict[str, np.ndarray],
    names: list[str],
    properties_head: bytes,
    fields: dict[str, tuple[np.ndarray, np.ndarray]],
    lo: int,
    hi: int,
) -> bytes:
    """Features lo..hi-1, each followed by a comma. `fields` holds cells already made for some columns."""
    n = hi - lo
    parts: list[np.ndarray] = [_constant(b'{"type":"Feature","geometry":{"type":"Point","coordinates":[')]
    for axis, after in (("lon", b","), ("lat", b']},"properties":' + properties_head)):
        cells, present = _float_field(columns[axis][lo:hi], _COORDINATE_DECIMALS)
        cells[~present] = 0
        cells[~present, 0] = _constant(b"null")[0]
        parts += [cells, _constant(after)]
    pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for name in names:
        if name in fields:
            cells, present = (a[lo:hi] for a in fields[name])
        else:
            cells, present = _value_field(columns[name][lo:hi])
        key = _constant(b"," + json.dumps(name, ensure_ascii=False).encode() + b":")
        pieces.append((key, cells, present))
    tail = _constant(b"}},")
    width = sum(p.shape[-1] for p in parts) + sum(len(k) + c.shape[1] for k, c, _ in pieces) + len(tail)
    rows = np.empty((n, width), dtype=np.uint32)
    start = 0
    for part in parts:
        rows[:, start : start + part.shape[-1]] = part
        start += part.shape[-1]
    comma_cells: list[tuple[int, np.ndarray]] = []
    for key, cells, present in pieces:
        stop = start + len(key) + cells.shape[1]
        rows[:, start : start + len(key)] = key
        rows[:, start + len(key) : stop] = cells
        if not present.all():
            rows[~present, start:stop] = 0
        comma_cells.append((start, present))
        start = stop
    rows[:, start:] = tail
    if comma_cells and properties_head == b"{":
        # No constant properties: the first property a point has takes no comma (the first byte of its key).
        presence = np.stack([present for _, present in comma_cells], axis=1)
        first = np.argmax(presence, axis=1)
        has_any = presence.any(axis=1)
        offsets = np.array([offset for offset, _ in comma_cells])
        row_bytes = rows.view(np.uint8)
        row_bytes[np.flatnonzero(has_any), offsets[first[has_any]] * 4] = 0
    flat = rows.view(np.uint8).ravel()
    return flat[flat.astype(bool)].tobytes()


def _stream_features(
    fileobj: IO,
    columns: dict[str, np.ndarray],
    names: list[str],
    constants: dict,
    chunk: int,
    fields: dict[str, tuple[np.ndarray, np.ndarray]] | None = None,
) -> int:
    n = len(columns["lon"])
    text = isinstance(fileobj, io.TextIOBase)

    def write(data: bytes) -> None:
        fileobj.write(data.decode("utf-8") if text else data)

    # The constant properties open every properties object: '{"operationType":"harvested"' (or '{').
    properties_head = json.dumps(constants, separators=(",", ":"), ensure_ascii=False).encode()[:-1]
    write(b'{"type":"FeatureCollection","features":[')
    for lo in range(0, n, chunk):
        hi = min(n, lo + chunk)
        data = _feature_chunk(columns, names, properties_head, fields or {}, lo, hi)
        write(data[:-1] if hi == n else data)
    write(b"]}")
    return n


def write_standard_geojson(table: PointTable, fileobj: IO, *, chunk: int = 20_000) -> int:
    """Stream the table as a FeatureCollection of Point features with the supplement's property names.

    Writes in chunks so a million points never sit in memory as one document; returns the number of features.
    `fileobj` may be text or binary. NaN / NaT / None properties are left out of a point's properties.
    """
    names = ["timestamp"] + [n for n in PROPERTY_ORDER if n in table.columns]
    for extra in ("crop", "variety", "products", "recordingStatus"):
        if extra in table.columns:
            names.append(extra)
    constants: dict[str, object] = {"operationType": table.operation_type}
    if "crop" not in table.columns and len(table.crops) == 1:
        constants["crop"] = table.crops[0]
    if "variety" not in table.columns and len(table.varieties) == 1:
        constants["variety"] = table.varieties[0]
    fields = {}
    if "recordingStatus" in table.columns:
        fields["recordingStatus"] = _recording_status(np.asarray(table.columns["recordingStatus"]))
    return _stream_features(fileobj, table.columns, names, constants, chunk, fields)


def write_raw_geojson(table: PointTable, fileobj: IO, *, chunk: int = 20_000) -> int:
    """Stream the points as read (before cleaning), with the source's own column names where it has them."""
    if not table.raw_columns:
        names = [n for n in table.columns if n not in ("lon", "lat")]
        return _stream_features(fileobj, table.columns, names, {}, chunk)
    columns = dict(table.raw_columns)
    columns["lon"], columns["lat"] = table.columns["lon"], table.columns["lat"]
    names = [n for n in table.raw_columns if n not in ("lon", "lat")]
    if "timestamp" in table.columns and "timestamp" not in columns:
        columns["timestamp"] = table.columns["timestamp"]
        names.insert(0, "timestamp")
    return _stream_features(fileobj, columns, names, {}, chunk)
