"""Units and summary: the `{property: unit}` map, the totals and the summary Feature.

Totals are rate x area summed over points, never a sum of rates.
"""

from __future__ import annotations

import math

import numpy as np

from conversion.readers.base import PointTable
from conversion.readers.units import IMPERIAL_OF, normalize_unit, to_canonical

from .covered_area import coverage
from .properties import DERIVED_UNITS, HA_M2, PROPERTY_ORDER, RATE_PROPERTIES, in_derived_unit, section_steps

_NON_SUMMARY = frozenset({"lon", "lat", "timestamp", "sectionId", "recordingStatus"})


def units(table: PointTable, *, imperial: bool = False) -> dict[str, str]:
    """Flat `{property: unit}` of the numeric properties some point has a value of.

    With `imperial`, properties whose source used imperial units are reported in them (`imperial_units`).
    """
    out: dict[str, str] = {}
    for name in PROPERTY_ORDER:
        values = table.columns.get(name)
        # A column no point has a value in (speed of points without times) is not a property of the file.
        if values is not None and np.asarray(values).dtype.kind == "f" and np.isfinite(values).any():
            unit = table.units.get(name) or DERIVED_UNITS.get(name, "")
            if unit:
                out[name] = unit
    return imperial_units(table, out) if imperial else out


def imperial_units(table: PointTable, metric_units: dict[str, str]) -> dict[str, str]:
    """The `units` map `metric_units` of `table` with the properties whose source used imperial units reported in
    them (the values stay metric; the summary is converted on request: `summary_in_units`). From the metric map, so
    the columns are not scanned again."""
    return {name: _imperial_unit(table, name, unit) for name, unit in metric_units.items()}


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


# The summary's totals and the per-point property whose unit system each follows (rates for the applied and planted
# totals, which have no per-point property: their imperial unit is the metric one's).
_TOTAL_PROPERTIES = {
    "totalArea": "area",
    "totalDistance": "distance",
    "totalWetMass": "wetMass",
    "totalDryMass": "dryMass",
    "totalWetVolume": "wetVolume",
    "totalDryVolume": "dryVolume",
    "totalApplied": "appliedRate",
    "totalPlanted": "seedRate",
}


def summary_in_units(summary: dict, metric_units: dict[str, str], target_units: dict[str, str]) -> dict:
    """A copy of a stored (metric) summary with each numeric property, total and recorded total in the unit
    `target_units` (a `units` map, e.g. the imperial one) gives its property: avg/min/max and values converted,
    `unit` renamed. What has no other unit there, or no known conversion, stays as it is."""
    converted = dict(summary)
    props = converted["properties"] = dict(summary.get("properties") or {})
    for name, value in props.items():
        if name == "recordedTotals" and isinstance(value, dict):
            props[name] = {key: _measure_in(total, _total_unit(key, total, metric_units, target_units))
                           for key, total in value.items()}  # fmt: skip
        elif name in _TOTAL_PROPERTIES:
            props[name] = _measure_in(value, _total_unit(name, value, metric_units, target_units))
        elif isinstance(value, dict) and value.get("unit") == metric_units.get(name):
            props[name] = _measure_in(value, target_units.get(name))
    return converted


def _total_unit(name: str, total, metric_units: dict[str, str], target_units: dict[str, str]) -> str | None:
    prop = _TOTAL_PROPERTIES.get(name)
    if prop is None or not isinstance(total, dict) or metric_units.get(prop) == target_units.get(prop):
        return None
    if name in ("totalApplied", "totalPlanted"):
        return IMPERIAL_OF.get(total.get("unit"))
    return target_units.get(prop)


def _measure_in(measure, unit: str | None):
    """`measure` ({avg, min, max, unit} or {value, unit}, metric) in `unit`, when one converts it; else as it is."""
    if not isinstance(measure, dict) or not unit or unit == measure.get("unit"):
        return measure
    conversion = to_canonical(unit)
    if conversion is None or conversion[0] != measure.get("unit"):
        return measure
    factor = conversion[1]
    out = {key: (value / factor if isinstance(value, int | float) and not isinstance(value, bool) else value)
           for key, value in measure.items() if key != "unit"}  # fmt: skip
    if not all(math.isfinite(v) for v in out.values() if isinstance(v, float)):
        return measure  # past the float range in `unit` (JSON has no infinity): left in its metric unit
    out["unit"] = unit
    return out


def _iso(ts: np.datetime64 | None) -> str | None:
    if ts is None or np.isnat(ts):
        return None
    return str(np.datetime_as_string(ts.astype("datetime64[ms]"), unit="ms")) + "Z"


def _camel_case(name: str) -> str:
    """`serial_number` -> `serialNumber`: the API's spelling of keys."""
    head, *rest = name.split("_")
    return head + "".join(part.capitalize() for part in rest)


def _sum(values: np.ndarray) -> float | None:
    """The sum of the values a point has (NaN: missing); None when no point has one (no total is known: 0 claimed
    that nothing was harvested, planted or covered) or when it is beyond the float range. Values from files are
    finite (`readers.values.table_values_clean`); an infinite one is a product that overflowed."""
    values = np.asarray(values, dtype=float)
    if not (~np.isnan(values)).any():
        return None
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.nansum(values))
    return total if math.isfinite(total) else None


def _mean(values: np.ndarray, weights: np.ndarray | None = None) -> float:
    """The (weighted) mean of finite values (weights finite and > 0). It lies between the least and the greatest
    value, so it is a float even where their sum is not: then it is taken on values and weights scaled to at most 1."""
    with np.errstate(over="ignore", invalid="ignore"):
        mean = float(np.mean(values) if weights is None else np.average(values, weights=weights))
        if not math.isfinite(mean):
            scale = float(np.abs(values).max())
            if weights is None:
                mean = scale * float(np.mean(values / scale))
            else:
                mean = scale * float(np.average(values / scale, weights=weights / float(weights.max())))
    # Rounding put the mean of equal values past them (428579.9999999999 of 428580.0), and past the greatest float
    return float(np.clip(mean, values.min(), values.max()))


def totals(table: PointTable) -> dict[str, dict]:
    """Totals as `{value, unit}`: each is the sum over points of rate x point area (area itself for totalArea; a
    harvest file's per-point masses or volumes where it gives no rate), over the points whose value is finite. A
    total no point has a value for, or beyond the float range (JSON has no infinity), is left out."""
    cols = table.columns
    out: dict[str, dict] = {}

    def put(name: str, values: np.ndarray, unit: str) -> None:
        value = _sum(values)
        if value is not None:
            out[name] = {"value": value, "unit": unit}

    area = cols.get("area")
    if area is not None:
        put("totalArea", area, "m2")
    if "distance" in cols:
        dist = np.asarray(cols["distance"], dtype=float)
        steps = section_steps(cols)
        if steps is not None:
            # One row per section per time step repeats the distance travelled; count each time step once.
            _, first = np.unique(steps, return_index=True)
            dist = dist[first]
        put("totalDistance", dist, "m")
    area_ha = None if area is None else np.asarray(area, dtype=float) / HA_M2
    specs = (
        ("totalWetMass", "wetMassPerArea", "wetMass"),
        ("totalDryMass", "dryMassPerArea", "dryMass"),
        ("totalWetVolume", "wetVolumePerArea", "wetVolume"),
        ("totalDryVolume", "dryVolumePerArea", "dryVolume"),
        ("totalApplied", "appliedRate", None),
        ("totalPlanted", "seedRate", None),
    )
    for total, rate, amount in specs:
        # The points' own amounts (a file giving each point's mass), in the unit of the total.
        amounts = (
            np.asarray(cols[amount], dtype=float) if amount in cols and in_derived_unit(table.units, amount) else None
        )
        if rate not in cols:
            if amounts is not None:
                put(total, amounts, DERIVED_UNITS[amount])
            continue
        rate_unit = table.units.get(rate) or DERIVED_UNITS.get(rate, "")
        if area_ha is None or not rate_unit.endswith("/ha"):
            continue  # a rate of unknown unit (per acre? per hectare?) makes no total: a number of no quantity
        unit = rate_unit.removesuffix("/ha")
        with np.errstate(over="ignore", invalid="ignore"):
            values = np.asarray(cols[rate], dtype=float) * area_ha
        if amounts is not None and unit == DERIVED_UNITS[amount]:
            # A merge of a file of rates with one of per-point masses: a point without a rate counts its own mass.
            values = np.where(np.isfinite(values), values, amounts)
        put(total, values, unit)
    return out


# A total the file records and the same total its points give may differ by what cleaning dropped (a quarter of one
# task's mass, seen) or what the file counts differently; past this factor one of them is not what it says.
TOTALS_DISAGREE_FACTOR = 2.0


def _amount(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def totals_disagreements(properties: dict) -> list[str]:
    """Warnings for each total of a summary's `properties` that its `recordedTotals` gives in the same unit and
    that differs from it by more than TOTALS_DISAGREE_FACTOR either way, or is of the other sign. Neither is
    corrected: which is right is not known (seen in real task data: a device logging a rate at a hundredth of its
    resolution, a distance counter counting seconds, a mass counter counting one section of six, task totals over
    far more than the time logs)."""
    out = []
    for name, recorded in (properties.get("recordedTotals") or {}).items():
        computed = properties.get(name)
        if not isinstance(computed, dict) or computed.get("unit") != recorded["unit"]:
            continue
        ours, theirs = computed["value"], recorded["value"]
        low, high = sorted((abs(ours), abs(theirs)))
        opposite = ours * theirs < 0  # one negative: no factor says how far apart
        if not opposite and (high == 0 or high <= low * TOTALS_DISAGREE_FACTOR):
            continue
        unit = recorded["unit"]
        ratio = high / low if low and not opposite else None
        times = (
            ""
            if ratio is None
            else f" ({ratio:,.{0 if ratio >= 10 else 1}f} times {'less' if abs(ours) < abs(theirs) else 'more'})"
        )
        out.append(
            f"{name}: the file records {_amount(theirs)} {unit}, its points give {_amount(ours)} {unit}{times}; "
            "they count different things (time logs covering part of the task, a device logging a value at another "
            "resolution or for one section): check before relying on either"
        )
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
        avg = _mean(values[finite])
        if name in RATE_PROPERTIES and area is not None:
            w = np.asarray(area, dtype=float)
            ok = finite & np.isfinite(w) & (w > 0)
            if ok.any():
                avg = _mean(values[ok], w[ok])
        props[name] = {
            "avg": avg,
            "min": float(values[finite].min()),
            "max": float(values[finite].max()),
            "unit": table_units.get(name, ""),
        }
    props.update(totals(table))
    recorded = {k: {"value": v, "unit": u} for k, (v, u) in table.recorded_totals.items() if math.isfinite(v)}
    if recorded:
        props["recordedTotals"] = recorded
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
