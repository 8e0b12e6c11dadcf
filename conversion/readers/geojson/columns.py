"""What a GeoJSON point's properties mean: which one carries which standard property, in which unit, and its time.

Standard names, spelt exactly as ours, are taken as already in canonical units (supplement: units of GeoJSON uploads
are the exporting system's defaults, and ours is metric). Other names go through the same column rules as shapefiles
(JD's `DISTANCE` is feet, its `WetMass` lb/ac; a rate in the unit written after its name, `Rt_Apd_gal_ac`), and a
name no exporter uses that is ours in other letter case is ours. The time comes from the best time property that
parses: `timestamp`, then JD's `IsoTime` (UTC), then a `Time` text.
"""

from __future__ import annotations

import numpy as np

from conversion.readers.base import HARVEST_COLUMNS, recording_status
from conversion.readers.shapefile.columns import (
    COLUMN_RULES,
    RATE_NAMES,
    TARGET_NAMES,
    TIME_ISO_NAMES,
    TIME_TEXT_NAMES,
    column_match,
    normalized_name,
    parse_text_times,
    rate_operation,
    rate_property,
    time_warnings,
    unit_from_suffix,
)
from conversion.readers.units import normalize_unit, to_canonical

from .points import _object_array, _Points

STANDARD_UNITS: dict[str, str] = {
    "area": "m2",
    "distance": "m",
    "heading": "arcdeg",
    "speed": "m/s",
    "elevation": "m",
    "equipmentWidth": "m",
    "sectionId": "",
    "seedRate": "seeds/ha",
    "seedRateTarget": "seeds/ha",
    "seedDepth": "m",
    "appliedRate": "L/ha",
    "appliedRateTarget": "L/ha",
    "wetMass": "kg",
    "wetMassPerArea": "kg/ha",
    "dryMass": "kg",
    "dryMassPerArea": "kg/ha",
    "wetVolume": "L",
    "wetVolumePerArea": "L/ha",
    "dryVolume": "L",
    "dryVolumePerArea": "L/ha",
    "harvestMoisture": "percentage",
    "cropFlow": "kg/s",
}
_STANDARD_BY_NORM = {normalized_name(k): k for k in STANDARD_UNITS}
_STRING_PROPS = {"crop": "crop", "variety": "variety", "products": "products", "product": "products"}
# Where a point's time is looked for, best first: our own `timestamp`, then the exporters' columns as the shapefile
# reader ranks them (JD's IsoTime, UTC with ms, before its local `Time` text).
_TIME_NAMES = ("timestamp", *TIME_ISO_NAMES, *TIME_TEXT_NAMES)


def _guess_operation(columns: dict[str, np.ndarray]) -> str:
    if any(k in columns for k in HARVEST_COLUMNS):
        return "harvested"
    if "seedRate" in columns:
        return "planted"
    if "appliedRate" in columns:
        return "applied"
    return "other"


def _exporter_columns(
    points: _Points,
    keep,
    by_norm: dict[str, str],
    operation: str | None,
    columns: dict[str, np.ndarray],
    units: dict[str, str],
    source_units: dict[str, str],
) -> list[str]:
    """Properties named as an exporter names its columns (JD, SMS), read by the shapefile reader's column rules
    (`shapefile.columns.COLUMN_RULES`): a unit written in the name, else the exporter's default (US) unit,
    converted to canonical. Rates as the shapefile reader takes them: the unit written after the rate name, else,
    in a planting (`operation`, the file's own `operationType`, else the shapefile reader's `rate_operation` rule), a
    seed rate in JD's seeds/ac; else the unit is unknown, with a warning (returned, as the shapefile reader words it).
    A property already given under its standard name keeps that."""
    warnings: list[str] = []
    used: set[str] = set()
    for rule in COLUMN_RULES:
        name = column_match(by_norm, rule.names, used)
        if name is None or rule.prop in columns:
            continue
        column = points.columns[name]
        if rule.prop == "recordingStatus":
            columns[rule.prop] = recording_status(column.values(keep))
            used.add(name)
            continue
        numbers = column.numbers_at(keep)
        if np.isnan(numbers).all():
            continue
        used.add(name)
        if rule.prop == "sectionId":
            columns[rule.prop] = numbers
            continue
        _converted_column(rule.prop, numbers, unit_from_suffix(name) or rule.default_unit, columns, units, source_units)
    rate_name = column_match(by_norm, RATE_NAMES, used, prefix=True)
    target_name = column_match(by_norm, TARGET_NAMES, used, prefix=True)
    if rate_name is not None or target_name is not None:
        operation = operation or rate_operation(None, columns, rate_name, target_name, {}, by_norm)
    for name, names, is_target in ((rate_name, RATE_NAMES, False), (target_name, TARGET_NAMES, True)):
        if name is None:
            continue
        prop, unit = rate_property(operation, _rate_unit(name, names), target=is_target)
        numbers = points.columns[name].numbers_at(keep)
        if prop in columns or np.isnan(numbers).all():
            continue
        _converted_column(prop, numbers, unit, columns, units, source_units)
        used.add(name)
        if units[prop] == "unknown":
            warnings.append(f"{name}: no unit in the file; the value is kept as it is")
    # A name no exporter uses that is ours in other letter case or with separators (`WET_MASS_PER_AREA`).
    for nkey, name in by_norm.items():
        prop = _STANDARD_BY_NORM.get(nkey)
        if prop is None or prop in columns or name in used:
            continue
        _standard_column(prop, points.columns[name].numbers_at(keep), columns, units, source_units)
    return warnings


def _rate_unit(name: str, names: tuple[str, ...]) -> str | None:
    """The unit written after the rate name that `name` begins with (`AppliedRate (gal/ac)`, `Rt_Apd_lb_ac`,
    `Applied Rate seeds/ac`), read by `unit_from_suffix` from the name as the rule matched it (letters and digits
    only: a GeoJSON name may hold spaces, brackets and slashes where a DBF one cannot); None when none is."""
    key = normalized_name(name)
    wanted = max((w for w in names if key.startswith(w)), key=len)
    return unit_from_suffix(f"{wanted}_{key[len(wanted) :]}")


def _converted_column(
    prop: str,
    numbers: np.ndarray,
    unit: str | None,
    columns: dict[str, np.ndarray],
    units: dict[str, str],
    source_units: dict[str, str],
) -> None:
    """An exporter's column in `unit`, converted to canonical; kept as it is, its unit `unknown`, when the unit is
    not known."""
    conv = to_canonical(unit)
    columns[prop] = numbers * conv[1] if conv else numbers
    units[prop] = conv[0] if conv else "unknown"
    if conv:
        source_units[prop] = normalize_unit(unit) or conv[0]


def _standard_column(
    prop: str, numbers: np.ndarray, columns: dict[str, np.ndarray], units: dict[str, str], source_units: dict[str, str]
) -> None:
    """A standard property, already in its canonical unit (`STANDARD_UNITS`), unless no point has a number of it."""
    if np.isnan(numbers).all():
        return
    columns[prop] = numbers
    if STANDARD_UNITS[prop]:
        units[prop] = source_units[prop] = STANDARD_UNITS[prop]


def _timestamps(
    points: _Points, keep, count: int, keys: list[str], by_norm: dict[str, str]
) -> tuple[np.ndarray, list[str]]:
    """The `count` kept points' times from the first time property in `_TIME_NAMES` order that gives any (our own
    `timestamp` first, then the exporters' names in any letter case; a column none of whose values parses gives way
    to the next); NaT without one. With the reader's warnings about them (`time_warnings`): a `timestamp` of epoch
    seconds gave no time and no word why."""
    candidates = ["timestamp"] if "timestamp" in keys else []
    candidates += [by_norm[name] for name in _TIME_NAMES if name in by_norm]
    candidates = list(dict.fromkeys(candidates))
    for name in candidates:
        stamps = _times(points.columns[name].values(keep))
        if not np.isnat(stamps).all():
            return stamps, time_warnings(stamps, name)
    stamps = np.full(count, np.datetime64("NaT", "ms"))
    return stamps, time_warnings(stamps, candidates[0] if candidates else None)


def _times(values: list) -> np.ndarray:
    """Text as the shapefile reader reads its time columns (`parse_text_times`: ISO 8601 as UTC, else the exporters'
    formats); NaT for anything else (a number, a boolean)."""
    return parse_text_times(_object_array([v if isinstance(v, str) else None for v in values]))
