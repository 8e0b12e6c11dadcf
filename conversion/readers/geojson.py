"""GeoJSON FeatureCollections of points with the standard property names (or recognisable SMS/JD ones).

Standard names, spelt exactly as ours, are taken as already in canonical units (supplement: units of GeoJSON uploads
are the exporting system's defaults, and ours is metric). Other names go through the same column rules as shapefiles
(JD's `DISTANCE` is feet, its `WetMass` lb/ac), and a name no exporter uses that is ours in other letter case is ours.
The time comes from the best time property that parses: `timestamp`, then JD's `IsoTime` (UTC), then a `Time` text.

The file is read as a stream (uploads may be gigabytes): the top-level object member by member, the `features`
array one feature at a time, each decoded by the standard library's JSON scanner (so values read exactly as
`json.load` reads them: NaN, Infinity, numbers beyond float range, lone surrogates), and kept as columns: positions
and numeric properties as doubles, a property holding anything else as its values.
"""

from __future__ import annotations

import json
import math
import re
from array import array
from datetime import datetime
from typing import IO

import numpy as np

from conversion.crops import normalize_crop_name
from conversion.readers.base import (
    Dataset,
    PointTable,
    Reader,
    UnreadableDataset,
    recording_status,
    register,
    usable_positions,
)
from conversion.readers.crs import wgs84_transformer
from conversion.readers.shapefile.columns import (
    COLUMN_RULES,
    RATE_NAMES,
    TARGET_NAMES,
    TIME_ISO_NAMES,
    TIME_TEXT_NAMES,
    column_match,
    normalized_name,
    parse_text_times,
    unit_from_suffix,
)
from conversion.readers.units import normalize_unit, to_canonical
from conversion.readers.values import text_value
from fields.geodesy import geojson_crs

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


# Property names are taken from the first KEY_SAMPLE points (a property that first appears later is left out): a
# column per name of every point, so a file naming a new property on each point cannot make millions of columns.
KEY_SAMPLE = 1000
_READ_CHARS = 1 << 20
_STRING_CACHE = 1 << 16
_WHITESPACE = re.compile(r"[ \t\n\r]*")
_VALUE_START = frozenset('{["-0123456789tfnNI')
_FLOAT, _INT, _MISSING = 0, 1, 2  # what a numeric column's double stands for
_EXACT_INT = 2**53
_ALL = slice(None)


@register
class GeojsonReader(Reader):
    """FeatureCollection of Point features."""

    format = "GEOJSON"

    def read_tables(self, dataset: Dataset) -> list[PointTable]:
        """One table for the collection; UnreadableDataset when it is not a FeatureCollection of points."""
        name = dataset.path.name
        try:
            with open(dataset.path, encoding="utf-8-sig") as fh:
                members = _read_collection(_JsonStream(fh), name)
        except _NotJson as exc:
            raise UnreadableDataset(f"{name}: not valid JSON ({exc})") from None
        except (OSError, ValueError) as exc:
            raise UnreadableDataset(f"{name}: not valid JSON ({exc})") from exc
        except RecursionError:
            raise UnreadableDataset(f"{name}: not valid JSON (values nested too deeply)") from None
        if members.get("type") != "FeatureCollection":
            raise UnreadableDataset(f"{name}: not a GeoJSON FeatureCollection")
        points = members.get("features") or _Points()
        if not isinstance(points, _Points):
            raise UnreadableDataset(f"{name}: the FeatureCollection's features are not a list")
        if not points.lon:
            raise UnreadableDataset(f"{name}: the FeatureCollection holds no Point features")
        lon_array, lat_array = np.frombuffer(points.lon), np.frombuffer(points.lat)
        to_wgs84 = _crs_transformer(dataset, members.get("crs"))
        if to_wgs84 is not None:
            lon_array, lat_array = (np.asarray(a, float) for a in to_wgs84.transform(lon_array, lat_array))
        usable = usable_positions(lon_array, lat_array)
        if not usable.any():
            raise UnreadableDataset(
                f"{name}: no Point feature has usable coordinates (numbers, WGS84 longitude -180..180 "
                "and latitude -90..90)"
            )
        keep = _ALL if usable.all() else usable
        # Without a crs the first points with usable positions name the properties, as those are the points kept;
        # with one, positions are only known usable after reprojection, once the file is read: the first points
        # with numbers as coordinates name them.
        keys = points.keys_finite if members.get("crs") is not None else points.keys_on_globe
        return [self._table(dataset, lon_array[keep], lat_array[keep], points, list(keys), keep)]

    def _table(
        self, dataset: Dataset, lon: np.ndarray, lat: np.ndarray, points: _Points, keys: list[str], keep
    ) -> PointTable:
        columns: dict[str, np.ndarray] = {"lon": lon, "lat": lat}
        units: dict[str, str] = {}
        source_units: dict[str, str] = {}
        raw: dict[str, np.ndarray] = {}
        # Names that are not our own spelling, by normalised name (the first spelling of one wins): the exporters'.
        by_norm: dict[str, str] = {}
        operation = None
        for key in keys:
            column = points.columns[key]
            raw[key] = column.raw(keep)
            nkey = normalized_name(key)
            if key == "operationType":
                found = {v for v in column.values(keep) if isinstance(v, str) and v}
                operation = found.pop() if len(found) == 1 else operation
            elif nkey in _STRING_PROPS:
                # Names as `readers.values.text_value` takes them: a number is its digits, an object no name.
                mapper = normalize_crop_name if nkey == "crop" else text_value
                columns[_STRING_PROPS[nkey]] = np.asarray([mapper(v) for v in column.values(keep)], dtype=object)
            elif key == "recordingStatus":
                columns[key] = recording_status(column.values(keep))
            elif key in STANDARD_UNITS:
                _standard_column(key, column.numbers_at(keep), columns, units, source_units)
            else:
                by_norm.setdefault(nkey, key)
        _exporter_columns(points, keep, by_norm, columns, units, source_units)
        columns["timestamp"] = _timestamps(points, keep, len(lon), keys, by_norm)
        if operation not in ("harvested", "planted", "applied", "tillage", "other"):
            operation = _guess_operation(columns)
        table = PointTable(
            name=dataset.path.stem,
            operation_type=operation,  # type: ignore[arg-type]
            columns=columns,
            units=units,
            source_units=source_units,
            raw_columns=raw,
            crops=_uniques(columns.get("crop")),
            varieties=_uniques(columns.get("variety")),
            products=_uniques(columns.get("products")),
            source_format="GEOJSON",
        )
        table.refresh_time_range()
        return table


class _NotJson(Exception):
    """The text is not JSON; the message says where, as `json.JSONDecodeError` does."""


class _JsonStream:
    """A JSON text read a piece at a time, values decoded by the standard library's scanner at `pos` of `text`.

    A value cut by the end of the piece at hand is decoded again once the piece holds more of the file (pieces
    grow to hold the longest value), so the file is never in memory as a whole.
    """

    def __init__(self, fh: IO[str]):
        self._fh = fh
        self._scan = json.JSONDecoder().scan_once
        self._eof = False
        self._base = 0  # characters of the file before `text`
        self._lines = 0  # newlines among them
        self._last_newline = -1  # where the last of them stands in the file
        self.text = ""
        self.pos = 0

    def _more(self) -> bool:
        """Read on (keeping the text from `pos`); False at the end of the file."""
        if self._eof:
            return False
        piece = self._fh.read(max(_READ_CHARS, len(self.text) - self.pos))
        if not piece:
            self._eof = True
            return False
        newlines = self.text.count("\n", 0, self.pos)
        if newlines:
            self._lines += newlines
            self._last_newline = self._base + self.text.rfind("\n", 0, self.pos)
        self._base += self.pos
        self.text = self.text[self.pos :] + piece
        self.pos = 0
        return True

    def peek(self) -> str:
        """The next character that is not blank, '' at the end of the file; `pos` stands on it."""
        while True:
            self.pos = _WHITESPACE.match(self.text, self.pos).end()
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self._more():
                return ""

    def expect(self, char: str, message: str) -> None:
        """Step over `char`, the next character that is not blank; `_NotJson` with `message` when it is another."""
        if self.peek() != char:
            raise self.error(message, self.pos)
        self.pos += 1

    def value(self):
        """Decode the next value and step over it."""
        self.peek()
        while True:
            try:
                value, end = self._scan(self.text, self.pos)
            except StopIteration as exc:
                # Nothing a value begins with, or a literal (null, -Infinity...) cut by the end of the piece.
                if len(self.text) - exc.value < 16 and self._more():
                    continue
                raise self.error("Expecting value", exc.value) from None
            except json.JSONDecodeError as exc:
                if (exc.msg.startswith("Unterminated string") or len(self.text) - exc.pos < 16) and self._more():
                    continue
                raise self.error(exc.msg, exc.pos) from None
            if end == len(self.text) and self._more():
                continue  # a number may go on in the next piece
            self.pos = end
            return value

    def error(self, message: str, pos: int) -> _NotJson:
        """`message` at `pos` of the text, with its line, column and character in the file as `json` says them."""
        where = self._base + pos
        line = self._lines + self.text.count("\n", 0, pos) + 1
        newline = self.text.rfind("\n", 0, pos)
        column = where - (self._base + newline if newline >= 0 else self._last_newline)
        return _NotJson(f"{message}: line {line} column {column} (char {where})")


def _read_collection(stream: _JsonStream, name: str) -> dict:
    """The top-level members of the document (the last of a repeated name, as `json.load`), its `features` array
    read as `_Points`. UnreadableDataset when the document is not an object; `_NotJson` when it is not JSON."""
    first = stream.peek()
    if first != "{":
        if first in _VALUE_START and first:
            raise UnreadableDataset(f"{name}: not a GeoJSON FeatureCollection")
        raise stream.error("Expecting value", stream.pos)
    stream.pos += 1
    members: dict = {}
    if stream.peek() == "}":
        stream.pos += 1
    else:
        while True:
            if stream.peek() != '"':
                raise stream.error("Expecting property name enclosed in double quotes", stream.pos)
            key = stream.value()
            stream.expect(":", "Expecting ':' delimiter")
            if key == "features" and stream.peek() == "[":
                members[key] = _read_features(stream)
            elif key in ("type", "crs", "features"):
                members[key] = stream.value()
            else:
                stream.value()
            separator = stream.peek()
            stream.pos += 1
            if separator == "}":
                break
            if separator != ",":
                raise stream.error("Expecting ',' delimiter", stream.pos - 1)
    if stream.peek():
        raise stream.error("Extra data", stream.pos)
    return members


def _read_features(stream: _JsonStream) -> _Points:
    """The array at `pos`, one feature at a time."""
    points = _Points()
    stream.pos += 1
    if stream.peek() == "]":
        stream.pos += 1
        return points
    while True:
        feature = stream.value()
        if isinstance(feature, dict):
            points.add(feature)
        separator = stream.peek()
        stream.pos += 1
        if separator == "]":
            return points
        if separator != ",":
            raise stream.error("Expecting ',' delimiter", stream.pos - 1)


class _Points:
    """The Point features of a collection as columns: positions as given (NaN where not a number), and a column
    per property named by the first KEY_SAMPLE points with numbers as coordinates (`keys_finite`) or with
    coordinates on the globe (`keys_on_globe`), in the order they appear."""

    def __init__(self):
        self.lon = array("d")
        self.lat = array("d")
        self.columns: dict[str, _Column] = {}
        self.keys_finite: dict[str, None] = {}
        self.keys_on_globe: dict[str, None] = {}
        self._sampled_finite = 0
        self._sampled_on_globe = 0
        self._strings: dict[str, str] = {}

    def add(self, feature: dict) -> None:
        """Take the feature when it is a Point (or the first point of a MultiPoint) with two coordinates."""
        geom = feature.get("geometry")
        geom = geom if isinstance(geom, dict) else {}
        coords = geom.get("coordinates")
        if geom.get("type") == "MultiPoint" and isinstance(coords, list) and coords:
            coords = coords[0]
        if geom.get("type") not in ("Point", "MultiPoint") or not isinstance(coords, list) or len(coords) < 2:
            return
        lon, lat = _coordinate(coords[0]), _coordinate(coords[1])
        properties = feature.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        if self._sampled_finite < KEY_SAMPLE and math.isfinite(lon) and math.isfinite(lat):
            self._sampled_finite += 1
            self._name_columns(properties, self.keys_finite)
        if self._sampled_on_globe < KEY_SAMPLE and abs(lon) <= 180 and abs(lat) <= 90:
            self._sampled_on_globe += 1
            self._name_columns(properties, self.keys_on_globe)
        for key, column in self.columns.items():
            column.append(properties.get(key))
        self.lon.append(lon)
        self.lat.append(lat)

    def _name_columns(self, properties: dict, keys: dict[str, None]) -> None:
        for key in properties:
            keys.setdefault(key)
            if key not in self.columns:
                self.columns[key] = _Column(len(self.lon), self._strings)


class _Column:
    """One property's values: doubles while every value is a number (or missing), the values themselves once one
    is not (text, true/false, an object, an integer a double cannot hold)."""

    __slots__ = ("numbers", "kinds", "objects", "_strings")

    def __init__(self, missing: int, strings: dict[str, str]):
        self.numbers: array | None = array("d", [math.nan]) * missing
        # Per value _FLOAT, _INT or _MISSING; None while every value is a float.
        self.kinds: bytearray | None = bytearray([_MISSING]) * missing if missing else None
        self.objects: list | None = None
        self._strings = strings  # one str object for text that repeats (crop names...)

    def append(self, value) -> None:
        if self.objects is None:
            kind = type(value)
            if kind is float:
                self.numbers.append(value)
                if self.kinds is not None:
                    self.kinds.append(_FLOAT)
                return
            if value is None:
                return self._append_number(math.nan, _MISSING)
            if kind is int and -_EXACT_INT <= value <= _EXACT_INT:
                return self._append_number(float(value), _INT)
            self.objects = self._numbers_as_values()
            self.numbers = self.kinds = None
        if type(value) is str:
            cached = self._strings.get(value)
            if cached is not None:
                value = cached
            elif len(self._strings) < _STRING_CACHE:
                self._strings[value] = value
        self.objects.append(value)

    def _append_number(self, number: float, kind: int) -> None:
        if self.kinds is None:
            self.kinds = bytearray(len(self.numbers))
        self.numbers.append(number)
        self.kinds.append(kind)

    def _numbers_as_values(self, keep=_ALL) -> list:
        numbers = np.frombuffer(self.numbers)[keep].tolist()
        if self.kinds is None:
            return numbers
        kinds = np.frombuffer(self.kinds, dtype=np.uint8)[keep].tolist()
        return [None if k == _MISSING else int(n) if k == _INT else n for n, k in zip(numbers, kinds, strict=True)]

    def values(self, keep) -> list:
        """The values of the kept points, as the file gives them."""
        if self.objects is not None:
            return _object_array(self.objects)[keep].tolist()
        return self._numbers_as_values(keep)

    def numbers_at(self, keep) -> np.ndarray:
        """The values of the kept points as floats; NaN where one is not a number (missing values)."""
        if self.objects is not None:
            return _floats(self.values(keep))
        return np.frombuffer(self.numbers)[keep]

    def raw(self, keep) -> np.ndarray:
        """The raw column of the kept points: the doubles, or integers when every value is a whole number (as
        objects, None where one is missing: 1 stays 1, not 1.0), or the values as objects."""
        if self.objects is not None:
            return _object_array(self.objects)[keep]
        numbers = np.frombuffer(self.numbers)[keep]
        if self.kinds is None or not len(numbers):
            return numbers
        kinds = np.frombuffer(self.kinds, np.uint8)[keep]
        if (kinds == _INT).all():
            return numbers.astype(np.int64)
        if not (kinds == _FLOAT).any():
            return _object_array(self._numbers_as_values(keep))
        return numbers


def _object_array(values: list) -> np.ndarray:
    """A one-dimensional object array of the values (lists among them stay lists)."""
    return np.fromiter(values, dtype=object, count=len(values))


def _crs_transformer(dataset: Dataset, member):
    """To WGS84 from the coordinate system a `crs` member names (`fields.geodesy.geojson_crs`); None without one."""
    try:
        crs = geojson_crs(member)
    except ValueError as exc:
        raise UnreadableDataset(
            f"{dataset.path.name}: {exc} (a named coordinate system can be read, or none for WGS84 longitude/latitude)"
        ) from None
    return wgs84_transformer(crs) if crs is not None else None


def _guess_operation(columns: dict[str, np.ndarray]) -> str:
    if any(k in columns for k in ("wetMassPerArea", "dryMassPerArea", "wetVolumePerArea", "dryVolumePerArea")):
        return "harvested"
    if "seedRate" in columns:
        return "planted"
    if "appliedRate" in columns:
        return "applied"
    return "other"


def _coordinate(value) -> float:
    """A coordinate as a float; NaN (an unusable point) when it is not a number."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return np.nan
    try:
        return float(value)
    except OverflowError:  # an integer beyond float range
        return np.nan


def _floats(values: list) -> np.ndarray:
    """The values as floats; NaN where one is not a number or an integer beyond float range (missing values)."""
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        if isinstance(v, int | float) and not isinstance(v, bool):
            try:
                out[i] = v
            except OverflowError:
                continue
    return out


def _exporter_columns(
    points: _Points,
    keep,
    by_norm: dict[str, str],
    columns: dict[str, np.ndarray],
    units: dict[str, str],
    source_units: dict[str, str],
) -> None:
    """Properties named as an exporter names its columns (JD, SMS), read by the shapefile reader's column rules
    (`shapefile.columns.COLUMN_RULES`): a unit written in the name, else the exporter's default (US) unit,
    converted to canonical. A property already given under its standard name keeps that."""
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
        unit = unit_from_suffix(name) or rule.default_unit
        conv = to_canonical(unit)
        columns[rule.prop] = numbers * conv[1] if conv else numbers
        units[rule.prop] = conv[0] if conv else "unknown"
        if conv:
            source_units[rule.prop] = normalize_unit(unit) or conv[0]
    for prop, names in (("appliedRate", RATE_NAMES), ("appliedRateTarget", TARGET_NAMES)):
        name = column_match(by_norm, names, used, prefix=True)
        if name is None or prop in columns:
            continue
        numbers = points.columns[name].numbers_at(keep)
        if not np.isnan(numbers).all():
            # The rate's unit is not known (no metadata, as in a JD or SMS shapefile export): kept as it is.
            columns[prop] = numbers
            units[prop] = "unknown"
            used.add(name)
    # A name no exporter uses that is ours in other letter case or with separators (`WET_MASS_PER_AREA`).
    for nkey, name in by_norm.items():
        prop = _STANDARD_BY_NORM.get(nkey)
        if prop is None or prop in columns or name in used:
            continue
        _standard_column(prop, points.columns[name].numbers_at(keep), columns, units, source_units)


def _standard_column(
    prop: str, numbers: np.ndarray, columns: dict[str, np.ndarray], units: dict[str, str], source_units: dict[str, str]
) -> None:
    """A standard property, already in its canonical unit (`STANDARD_UNITS`), unless no point has a number of it."""
    if np.isnan(numbers).all():
        return
    columns[prop] = numbers
    if STANDARD_UNITS[prop]:
        units[prop] = source_units[prop] = STANDARD_UNITS[prop]


def _timestamps(points: _Points, keep, count: int, keys: list[str], by_norm: dict[str, str]) -> np.ndarray:
    """The `count` kept points' times from the first time property in `_TIME_NAMES` order that gives any (our own
    `timestamp` first, then the exporters' names in any letter case; a column none of whose values parses gives way
    to the next); NaT without one."""
    candidates = ["timestamp"] if "timestamp" in keys else []
    candidates += [by_norm[name] for name in _TIME_NAMES if name in by_norm]
    for name in dict.fromkeys(candidates):
        stamps = _times(points.columns[name].values(keep))
        if not np.isnat(stamps).all():
            return stamps
    return np.full(count, np.datetime64("NaT", "ms"))


def _times(values: list) -> np.ndarray:
    """ISO 8601 text as UTC (an offset honoured, none taken as UTC); other text in the exporters' formats
    (`9/19/2016 4:45:10 PM`, as the shapefile reader reads it); NaT for anything else."""
    out = np.full(len(values), np.datetime64("NaT", "ms"))
    other: list[int] = []
    for i, v in enumerate(values):
        if not isinstance(v, str):
            continue
        try:
            stamp = datetime.fromisoformat(v.strip().replace("Z", "+00:00"))
        except ValueError:
            other.append(i)
            continue
        if stamp.tzinfo is not None:
            stamp = (stamp - stamp.utcoffset()).replace(tzinfo=None)
        out[i] = np.datetime64(stamp, "ms")
    if other:
        out[other] = parse_text_times(_object_array([values[i] for i in other]))
    return out


def _uniques(values: np.ndarray | None) -> list[str]:
    if values is None:
        return []
    out: list[str] = []
    for v in values:
        if v is not None and v not in out:
            out.append(v)
    return out
