"""Values as files hand them over: the one rule for text and numbers that leave a reader.

Text: NUL and the other C0 control characters (tab, line feed and carriage return excepted) and lone surrogates
("\\ud800", which no UTF-8 encoder writes) are removed. PostgreSQL's text and JSONB refuse NUL, and a surrogate
fails any encoding, so a name holding one would fail the whole data set. Numbers: values that are not finite
(NaN, infinities, `1e999`) are missing values; JSON, and so every summary, has no such numbers. Times: a time
outside the years 1 to 9999 is no time (NaT), as Python's dates, the API's timestamps and the databases hold no
other (an ISOXML clock at year 1 read in its zone was year 0 in UTC, and failed the file as an internal error).

The text rule is `platform_site.text.storable`, the one rule for text from outside. `Reader.read` applies
`table_values_clean` (below) to every table a reader returns, and the conversion services clean every failure
message with `storable` before storing it (a reason may quote a file). Readers use `text_value` where a file gives
a value that should be text (a name in JSON metadata may be a number, an object...).
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from platform_site.text import PLAIN_NUMBER, needs_storable, storable

if TYPE_CHECKING:
    from .base import PointTable


def text_codes(values) -> tuple[list[str], np.ndarray]:
    """The distinct texts of a column (`str` of each value but None) in order of first appearance, and each value's
    index into them: -1 for None. What `np.unique(values.astype(str), return_inverse=True)` answers, without its
    fixed width: that makes every value as wide as the longest, so one long text among many points took gigabytes
    (100,000 points and one text of 40,000 characters: 16 GB). Map with a list of len(texts) + 1 whose last item
    stands for None."""
    index: dict[str, int] = {}
    codes = np.fromiter(
        (-1 if v is None else index.setdefault(v if type(v) is str else str(v), len(index)) for v in values),
        dtype=np.int64,
        count=len(values),
    )
    return list(index), codes


def text_value(value) -> str | None:
    """A value a file gives where text is expected, as text: a string cleaned and stripped; a finite number as its
    digits (`5`, `7.0` -> "7", `2.5`); None for an empty string and for anything else (booleans, objects, lists,
    NaN): such a value names nothing."""
    if isinstance(value, str):
        return storable(value).strip() or None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        if value.is_integer():
            value = int(value)
    return str(value)


_NUMBER_TYPES = (int, float, bool, type(None))


def number_from_text(text: str) -> float | None:
    """A number a file writes as text, where a number is expected ("20", " 12.5 ", "1e3": plain ASCII decimals, as
    exporters writing every value as a string give them), as a float; None for any other text: words, and what
    Python's `float()` also reads but no file means as a number (`1_000`, `nan`, `infinity`, other scripts' digits)."""
    text = text.strip()
    return float(text) if PLAIN_NUMBER.fullmatch(text) else None


def table_values_clean(table: PointTable) -> PointTable:
    """The table with the one rule for values from files applied (`readers.values`), in place: text without NUL,
    other C0 controls and lone surrogates, wherever it stands (its name, crops, varieties, products, operators,
    machines, warnings, unit names, column names and text values, raw ones included); values of the standard
    numeric columns that are not finite are missing (NaN), like a value the file does not give. Raw numeric columns
    keep what the file wrote: the raw GeoJSON leaves non-finite values out anyway."""
    table.name = storable(table.name)
    for attribute in ("crops", "varieties", "products", "operators"):
        setattr(table, attribute, _texts(getattr(table, attribute)))
    table.machines = [
        replace(m, **{k: text_value(v) for k, v in vars(m).items() if k != "kind" and v is not None})
        for m in table.machines
    ]
    table.warnings = [storable(w) for w in table.warnings]
    for attribute in ("units", "source_units", "raw_units"):
        units = {storable(k): text_value(v) or "" for k, v in getattr(table, attribute).items()}
        setattr(table, attribute, units)
    table.recorded_totals = {k: (v, u) for k, (v, u) in table.recorded_totals.items() if math.isfinite(v)}
    times = table.columns.get("timestamp")
    table.columns = _clean_columns(table.columns, standard=True)
    table.raw_columns = _clean_columns(table.raw_columns, standard=False)
    if table.columns.get("timestamp") is not times:  # (times outside the calendar dropped)
        table.refresh_time_range()
    return table


def _texts(values: list) -> list[str]:
    out: list[str] = []
    for value in values:
        text = text_value(value)
        if text and text not in out:
            out.append(text)
    return out


def _clean_columns(columns: dict[str, np.ndarray], *, standard: bool) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    for name, values in columns.items():
        key = storable(name)
        while key in out or (key != name and key in columns):
            key += "_"
        if values.dtype.kind == "f" and standard:
            infinite = np.isinf(values)
            if infinite.any():
                values = np.where(infinite, np.nan, values)
        elif values.dtype.kind == "M":
            values = _times_in_calendar(values)
        elif values.dtype.kind == "O":
            values = _clean_objects(values, standard=standard)
        out[key] = values
    return out


# The first and the last millisecond Python's `datetime` holds.
_CALENDAR_FIRST, _CALENDAR_LAST = np.datetime64("0001-01-01", "ms"), np.datetime64("9999-12-31T23:59:59.999", "ms")


def _times_in_calendar(values: np.ndarray) -> np.ndarray:
    """A time column with every time outside the years 1 to 9999 NaT; the column itself when none is."""
    outside = ~np.isnat(values) & ((values < _CALENDAR_FIRST) | (values > _CALENDAR_LAST))
    return np.where(outside, np.datetime64("NaT"), values) if outside.any() else values


def _storable_json(value):
    """A JSON value (what `json.loads` gives) with its text `storable`, keys included, and floats that are no
    number (`NaN`, which Python's JSON reader takes) None."""
    if isinstance(value, dict):
        return {storable(str(key)): _storable_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_storable_json(item) for item in value]
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _clean_objects(values: np.ndarray, *, standard: bool) -> np.ndarray:
    """An object column with its text cleaned (each distinct value once). In a standard column (crop, variety...)
    text is stripped, and None when nothing is left; a value that is neither text nor a number is None. In a raw
    column such a value (an object or a list in a GeoJSON property) is kept with its text cleaned (`_storable_json`),
    and the raw GeoJSON writes it as JSON (it was Python's writing of it, `{'a': True}`). The column itself when
    nothing changes."""
    items = values.tolist()
    try:
        unchanged = not needs_storable("".join(items))  # a column of text only, the usual one
    except TypeError:
        texts = [v for v in items if type(v) is str]
        odd = any(type(v) is not str and not isinstance(v, _NUMBER_TYPES) for v in items)
        unchanged = not odd and not needs_storable("".join(texts))
    if unchanged:
        return values
    cache: dict[str, str | None] = {}
    out = np.empty(len(items), dtype=object)
    for i, value in enumerate(items):
        if isinstance(value, _NUMBER_TYPES):
            out[i] = value
        elif type(value) is not str and standard:
            out[i] = None
        elif isinstance(value, dict | list):
            out[i] = _storable_json(value)
        else:
            text = value if type(value) is str else str(value)
            if text not in cache:
                cache[text] = text_value(text) if standard else storable(text)
            out[i] = cache[text]
    return out
