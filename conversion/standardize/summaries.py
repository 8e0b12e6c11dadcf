"""Units and summary: the `{property: unit}` map, the totals and the summary Feature.

Totals are rate x area summed over points, never a sum of rates.
"""

from __future__ import annotations

import numpy as np

from conversion.readers.base import PointTable
from conversion.readers.units import IMPERIAL_OF, normalize_unit

from .covered_area import coverage
from .properties import DERIVED_UNITS, HA_M2, PROPERTY_ORDER, RATE_PROPERTIES, section_steps

_NON_SUMMARY = frozenset({"lon", "lat", "timestamp", "sectionId", "recordingStatus"})


def units(table: PointTable, *, imperial: bool = False) -> dict[str, str]:
    """Flat `{property: unit}` of the numeric properties some point has a value of.

    With `imperial`, properties whose source used imperial units are reported in them (the GeoJSON values stay
    metric; this map is for display on request).
    """
    out: dict[str, str] = {}
    for name in PROPERTY_ORDER:
        values = table.columns.get(name)
        # A column no point has a value in (speed of points without times) is not a property of the file.
        if values is not None and np.asarray(values).dtype.kind == "f" and np.isfinite(values).any():
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


def _camel_case(name: str) -> str:
    """`serial_number` -> `serialNumber`: the API's spelling of keys."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def totals(table: PointTable) -> dict[str, dict]:
    """Totals as `{value, unit}`: each is the sum over points of rate x point area (area itself for totalArea)."""
    cols = table.columns
    out: dict[str, dict] = {}
    area = cols.get("area")
    if area is not None:
        out["totalArea"] = {"value": float(np.nansum(area)), "unit": "m2"}
    if "distance" in cols:
        dist = np.asarray(cols["distance"], dtype=float)
        steps = section_steps(cols)
        if steps is not None:
            # One row per section per time step repeats the distance travelled; count each time step once.
            _, first = np.unique(steps, return_index=True)
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
    props["machinery"] = [{_camel_case(k): v for k, v in vars(m).items() if v is not None} for m in table.machines]
    props["pointCount"] = len(table)
    return {"type": "Feature", "geometry": coverage(table), "properties": props}
