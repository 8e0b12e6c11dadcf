"""The reader plugin interface: what a reader receives (`Dataset`), what it returns (`PointTable`), and the registry.

Readers turn one detected data set into point tables with the supplement's standard property names in canonical
metric units. They never touch Django or the database, so they can run in a worker, a test or a bench alike.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

import numpy as np

from platform_site.text import storable

from .units import convert, to_canonical
from .values import number_from_text, table_values_clean

DatasetFormat = Literal["ISOXML", "SHAPEFILE", "GEOJSON"]
OperationType = Literal["harvested", "planted", "applied", "tillage", "other"]
OPERATION_TYPES: tuple[str, ...] = ("harvested", "planted", "applied", "tillage", "other")
# Columns only a harvest has: yields per area, then each point's mass or volume (the order cleaning picks them in).
HARVEST_COLUMNS = (
    "wetMassPerArea",
    "dryMassPerArea",
    "wetVolumePerArea",
    "dryVolumePerArea",
    "wetMass",
    "dryMass",
    "wetVolume",
    "dryVolume",
)
# An internal column (never written as a property): 1 at a point whose yield values the machine says are unreliable
# (ISOXML's yield lead/lag ignore times, `readers.isoxml.ignore_times`); cleaning drops those points.
YIELD_IGNORED_COLUMN = "_yieldIgnored"


class UnreadableDataset(Exception):
    """A data set was found but cannot be converted; the message says why (shown to the uploader)."""


@dataclass(frozen=True)
class Dataset:
    """One convertible data set found in an upload.

    `path` is the main file (TASKDATA.XML, the .shp, the .geojson); `root` the folder that holds the data set;
    `name` a display name (folder or file stem).
    """

    format: DatasetFormat
    path: Path
    root: Path
    name: str


@dataclass(frozen=True)
class MachineIdentity:
    """A machine or implement named by the file (ISOXML DVC, JD metadata...)."""

    kind: Literal["machine", "implement"]
    name: str | None = None
    serial_number: str | None = None
    vin: str | None = None
    make: str | None = None
    model: str | None = None
    category: str | None = None


@dataclass
class PointTable:
    """Column-oriented points of one operation, as a reader produced them.

    `columns` hold numpy arrays of equal length: `timestamp` (datetime64[ms], UTC), `lon`/`lat` (float64, WGS84)
    and standard properties in canonical metric units (`units` names them). Per-point strings (crop, variety,
    products) are object arrays. Missing numeric values are NaN.

    `raw_columns` keep the values as the source named them (JD/SMS column names, ISOXML `DDIxxxx_DET-n`) for
    the raw GeoJSON; `source_units` remember the unit the source used for each standard property so that
    imperial units can be reported on request. `recorded_totals` are totals the file itself records
    (e.g. ISOXML TIM DLV 0x005A), as `(value, unit)` in canonical units.
    """

    name: str
    operation_type: OperationType
    columns: dict[str, np.ndarray]
    units: dict[str, str] = field(default_factory=dict)
    source_units: dict[str, str] = field(default_factory=dict)
    raw_columns: dict[str, np.ndarray] = field(default_factory=dict)
    raw_units: dict[str, str] = field(default_factory=dict)
    crops: list[str] = field(default_factory=list)
    varieties: list[str] = field(default_factory=list)
    products: list[str] = field(default_factory=list)
    machines: list[MachineIdentity] = field(default_factory=list)
    operators: list[str] = field(default_factory=list)
    operator_licenses: dict[str, str] = field(default_factory=dict)  # operator name: licence number the file states
    recorded_totals: dict[str, tuple[float, str]] = field(default_factory=dict)
    start: np.datetime64 | None = None
    end: np.datetime64 | None = None
    source_format: str = ""
    warnings: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        """Number of points."""
        ts = self.columns.get("timestamp")
        if ts is not None:
            return len(ts)
        lon = self.columns.get("lon")
        return 0 if lon is None else len(lon)

    def select(self, mask_or_index: np.ndarray) -> PointTable:
        """A copy holding only the points picked by a boolean mask or an index array (columns and raw columns)."""
        columns = {k: v[mask_or_index] for k, v in self.columns.items()}
        raw = {k: v[mask_or_index] for k, v in self.raw_columns.items()}
        table = replace(self, columns=columns, raw_columns=raw, warnings=list(self.warnings))
        table.refresh_time_range()
        return table

    def refresh_time_range(self) -> None:
        """Set `start`/`end` from the timestamp column (NaT ignored)."""
        ts = self.columns.get("timestamp")
        if ts is None or len(ts) == 0:
            self.start = self.end = None
            return
        valid = ts[~np.isnat(ts)]
        self.start = valid.min() if len(valid) else None
        self.end = valid.max() if len(valid) else None


def usable_positions(lon: np.ndarray, lat: np.ndarray) -> np.ndarray:
    """Per point, whether its position can be used: finite WGS84 coordinates on the globe (longitude -180..180,
    latitude -90..90). Every reader drops the other points, as it drops any point it cannot use: they would make
    invalid GeoJSON, areas and images."""
    lon = np.asarray(lon, dtype=float)
    lat = np.asarray(lat, dtype=float)
    return np.isfinite(lon) & np.isfinite(lat) & (np.abs(lon) <= 180) & (np.abs(lat) <= 90)


def left_out_warning(left_out: np.ndarray, total: int, why: str) -> list[str]:
    """What a reader says of the points it leaves out (`left_out`, per point of `total`), `why`: none when it keeps
    them all. A point left out is not in the point count, the totals or the coverage; said, it does not go unnoticed."""
    count = int(np.count_nonzero(left_out))
    return [f"{count} of {total} points left out: {why}."] if count else []


NO_POSITION = (
    "no position on the globe (coordinates that are not numbers, or outside longitude -180..180, latitude -90..90)"
)


_STATUS_ON = frozenset({"on", "true", "yes", "y"})
_STATUS_OFF = frozenset({"off", "false", "no", "n"})


def recording_status(values: Sequence | np.ndarray) -> np.ndarray:
    """Per point, the recording status a file gives: 1.0 On, 0.0 Off, NaN unknown (the one rule of every reader
    that reads a status column: shapefile `WorkStatus`, GeoJSON `recordingStatus`).

    A number is On when it is 1 and Off when it is 0, whatever its type (1, 1.0, True); any other number (the states 2
    "error" and 3 "not available" of ISO 11783) is unknown. Text is read case-insensitively: on/true/yes/y, off/
    false/no/n, or a number written as text ("1", "1.0"). Anything else is unknown: cleaning drops only points
    known to be Off, so a status the file does not make plain never loses a working point."""
    if isinstance(values, np.ndarray) and values.dtype.kind in "fiub":
        numbers = values.astype(float)
        return np.where(numbers == 1, 1.0, np.where(numbers == 0, 0.0, np.nan))
    items = values.tolist() if isinstance(values, np.ndarray) else list(values)
    out = np.full(len(items), np.nan)
    texts: dict[str, float] = {}
    for i, value in enumerate(items):
        if type(value) is str:
            if value not in texts:
                texts[value] = _status_of_text(value)
            out[i] = texts[value]
        elif isinstance(value, int | float | np.number | np.bool_):  # a bool is a number: True is 1
            out[i] = 1.0 if value == 1 else 0.0 if value == 0 else np.nan
    return out


def _status_of_text(text: str) -> float:
    word = text.strip().lower()
    if word in _STATUS_ON:
        return 1.0
    if word in _STATUS_OFF:
        return 0.0
    number = number_from_text(word)
    return 1.0 if number == 1 else 0.0 if number == 0 else np.nan


class Reader(abc.ABC):
    """A format plugin: reads one `Dataset` of its `format` into point tables (`read_tables`); `read` hands them
    over with their values cleaned (`table_values_clean`)."""

    format: DatasetFormat
    # Parts of the data set that `read` could not convert while others could: (name, reason), so the caller can
    # report them instead of losing them silently.
    skipped: list[tuple[str, str]]
    # Parts of the data set that met an unexpected error (a bug, logged with its traceback) while others were read:
    # their names, so the caller fails them as internal errors and converts the rest.
    failed: list[str]
    # Files `read` used from outside the data set's usual place (an ISOXML log found in a subfolder): the data set's
    # original files include them.
    extra_files: Sequence[Path] = ()

    def read(self, dataset: Dataset) -> list[PointTable]:
        """Read the data set (`read_tables`) and clean what it holds: text without the characters no database
        stores, non-finite numbers as missing values (`table_values_clean`); the names and reasons of skipped and
        failed parts likewise."""
        tables = [table_values_clean(table) for table in self.read_tables(dataset)]
        self.skipped = [(storable(name), storable(reason)) for name, reason in self.skipped]
        self.failed = [storable(name) for name in self.failed]
        return tables

    @abc.abstractmethod
    def read_tables(self, dataset: Dataset) -> list[PointTable]:
        """Read the data set as the file gives it; raise `UnreadableDataset` with a reason when it cannot be
        converted."""


_REGISTRY: dict[str, type[Reader]] = {}


def register(reader_cls: type[Reader]) -> type[Reader]:
    """Class decorator that makes a reader available through `get_reader(format)`."""
    _REGISTRY[reader_cls.format] = reader_cls
    return reader_cls


def get_reader(fmt: str) -> Reader:
    """A reader instance for a data set format ("ISOXML", "SHAPEFILE", "GEOJSON"); KeyError if none is registered."""
    try:
        reader = _REGISTRY[fmt.upper()]()
    except KeyError:
        raise KeyError(f"no reader registered for format {fmt!r}") from None
    reader.skipped = []
    reader.failed = []
    return reader


def registered_formats() -> list[str]:
    """Formats that have a reader."""
    return sorted(_REGISTRY)


def concat_tables(tables: list[PointTable], *, name: str | None = None) -> PointTable:
    """Join point tables of one operation (e.g. several time logs of one task) into one; missing columns fill NaN.

    Units as `reconcile_units`: a column in two units of one kind is converted to the first table's unit; in units
    of different kinds (a volume rate in one log, a mass rate in the next) it cannot be one column, so
    `UnreadableDataset` says which. Raw columns in disagreeing units are left out with a warning.
    """
    if len(tables) == 1:
        return tables[0]
    first = tables[0]
    lengths = [len(t) for t in tables]
    warnings = [w for t in tables for w in t.warnings]
    try:
        units, columns = reconcile_units(tables, [t.columns for t in tables], "units", strict=True, warnings=warnings)
    except ValueError as exc:
        raise UnreadableDataset(f"{name or first.name}: its parts cannot be joined ({exc})") from None
    raw_units, raw = reconcile_units(
        tables, [t.raw_columns for t in tables], "raw_units", strict=False, warnings=warnings
    )
    source_units: dict[str, str] = {}
    for table in tables:
        for key, unit in table.source_units.items():
            source_units.setdefault(key, unit)
    merged = replace(
        first,
        name=name or first.name,
        columns=_concat_columns(columns, lengths),
        raw_columns=_concat_columns(raw, lengths),
        units=units,
        source_units=source_units,
        raw_units=raw_units,
        warnings=warnings,
    )
    merged.refresh_time_range()
    return merged


def reconcile_units(
    tables: list[PointTable],
    columns_per_table: list[dict[str, np.ndarray]],
    units_attribute: str,
    *,
    strict: bool,
    warnings: list[str],
) -> tuple[dict[str, str], list[dict[str, np.ndarray]]]:
    """Units of the joined columns (first table naming one wins) and the columns converted to them: the one rule
    for joining tables, used by `concat_tables` (time logs of one task) and `conversion.merge` (files).

    A column whose unit differs from the chosen one is converted; when it cannot be (units of different kinds, e.g.
    L/ha and kg/ha), `strict` raises ValueError, otherwise the column is left out of every table with a warning.
    """
    chosen: dict[str, str] = {}
    for table in tables:
        for key, unit in getattr(table, units_attribute).items():
            if unit:
                chosen.setdefault(key, unit)
    out = [dict(columns) for columns in columns_per_table]
    dropped: set[str] = set()
    for table, columns in zip(tables, out, strict=True):
        for key, unit in getattr(table, units_attribute).items():
            target = chosen.get(key)
            if key in dropped or not unit or target is None or unit == target or key not in columns:
                continue
            try:
                factor = unit_factor(unit, target)
            except ValueError:
                if strict:
                    raise ValueError(
                        f"cannot merge column {key!r}: one table gives it in {target!r}, another in {unit!r}"
                    ) from None
                dropped.add(key)
                warnings.append(f"raw column {key!r} left out of the join: its units differ ({target!r}, {unit!r})")
                continue
            if factor != 1.0:
                columns[key] = np.asarray(columns[key], dtype=np.float64) * factor
    for columns in out:
        for key in dropped:
            columns.pop(key, None)
    return {k: v for k, v in chosen.items() if k not in dropped}, out


def unit_factor(unit: str, target: str) -> float:
    """Factor taking values in `unit` to `target` (same kind); ValueError when they are of different kinds."""
    if to_canonical(unit) is None or to_canonical(target) is None:
        raise ValueError(f"unknown unit {unit!r} or {target!r}")
    return convert(1.0, unit, target)


def _concat_columns(dicts: list[dict[str, np.ndarray]], lengths: list[int]) -> dict[str, np.ndarray]:
    keys: list[str] = []
    for d in dicts:
        keys.extend(k for k in d if k not in keys)
    out: dict[str, np.ndarray] = {}
    for key in keys:
        sample = next(d[key] for d in dicts if key in d)
        parts = []
        for d, n in zip(dicts, lengths, strict=True):
            if key in d:
                parts.append(d[key])
            else:
                parts.append(_missing(sample.dtype, n))
        out[key] = np.concatenate(parts) if parts else sample
    return out


def _missing(dtype: np.dtype, n: int) -> np.ndarray:
    if dtype.kind == "M":
        return np.full(n, np.datetime64("NaT"), dtype=dtype)
    if dtype.kind == "f":
        return np.full(n, np.nan, dtype=dtype)
    if dtype.kind in "iub":
        return np.full(n, np.nan)
    return np.full(n, None, dtype=object)
