"""The Point features of a GeoJSON collection kept as columns: positions and numeric properties as doubles, a
property holding anything else as its values.
"""

from __future__ import annotations

import math
from array import array

import numpy as np

from ..values import number_from_text

# Property names are taken from the first KEY_SAMPLE points (a property that first appears later is left out): a
# column per name of every point, so a file naming a new property on each point cannot make millions of columns.
KEY_SAMPLE = 1000
# At most this many property columns: each holds a value for every point, so 1,000 sampled points naming 200
# properties each of their own made 200,000 columns of every point (a 3 MB file took 13 GB and 213 s). Exporters
# write a few dozen; names past this many are left out, and said (`names_left_out`).
MAX_COLUMNS = 256
_STRING_CACHE = 1 << 16
_FLOAT, _INT, _MISSING = 0, 1, 2  # what a numeric column's double stands for
_EXACT_INT = 2**53
_ALL = slice(None)


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
        self.left_out = 0  # features that are no Point with two coordinates
        self.multi = 0  # MultiPoints of several points (each read at its first)
        self.names_left_out: set[str] = set()  # property names past MAX_COLUMNS

    def add(self, feature) -> None:
        """Take the feature when it is a Point (or the first point of a MultiPoint) with two coordinates; count
        it in `left_out` otherwise (an entry of `features` that is no object at all too: it went unsaid)."""
        if not isinstance(feature, dict):
            self.left_out += 1
            return
        geom = feature.get("geometry")
        geom = geom if isinstance(geom, dict) else {}
        coords = geom.get("coordinates")
        if geom.get("type") == "MultiPoint" and isinstance(coords, list) and coords:
            self.multi += len(coords) > 1
            coords = coords[0]
        if geom.get("type") not in ("Point", "MultiPoint") or not isinstance(coords, list) or len(coords) < 2:
            self.left_out += 1
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
            if key not in self.columns:
                if len(self.columns) >= MAX_COLUMNS:
                    self.names_left_out.add(key)
                    continue
                self.columns[key] = _Column(len(self.lon), self._strings)
            keys.setdefault(key)


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


def _coordinate(value) -> float:
    """A coordinate as a float; NaN (an unusable point) when it is not a number."""
    if not isinstance(value, int | float) or isinstance(value, bool):
        return np.nan
    try:
        return float(value)
    except OverflowError:  # an integer beyond float range
        return np.nan


def _floats(values: list) -> np.ndarray:
    """The values as floats; NaN where one is not a number or an integer beyond float range (missing values). A
    number written as text ("20", " 12.5 ", "1e3": plain ASCII decimals, as exporters writing every property as a
    string give them) is that number: a moisture of "20" was dropped, and with it every dry value, without a word."""
    out = np.full(len(values), np.nan)
    for i, v in enumerate(values):
        if type(v) is str:
            v = number_from_text(v)
        if isinstance(v, int | float) and not isinstance(v, bool):
            try:
                out[i] = v
            except OverflowError:
                continue
    return out
