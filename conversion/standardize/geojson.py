"""GeoJSON output: the standard and the raw points of a table, streamed as a FeatureCollection of Points."""

from __future__ import annotations

import io
import json
import math
import numbers
from typing import IO

import numpy as np

from conversion.readers.base import YIELD_IGNORED_COLUMN, PointTable

from .properties import PROPERTY_ORDER, SOURCE_COLUMN

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
    with np.errstate(over="ignore", invalid="ignore"):
        # numpy rounds through value x 10**decimals, which overflows for huge values; from 2**53 on a float is whole
        # anyway, and Python's round leaves it as it is.
        rounded = np.where(np.abs(values) < 2.0**53, np.round(values, decimals), values).astype(np.float64, copy=False)
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


def _text_field(values: list, *, typed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Cells of the JSON string of `str(value)` per point (None: absent), each distinct value written once. `typed`
    (the raw points' own columns): the JSON of each value as it is instead (`_json_value`; a float that is no number
    absent), so a GeoJSON property of mixed values keeps them: every value was written as text (`1260` as "1260",
    `true` as "True", an object as Python's writing of it). The standard text properties (crop, variety, products)
    are text whatever a file held."""
    write = _json_value if typed else _json_text
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
            text = cache[key] = write(value)
        except TypeError:  # (an object or a list: not hashable)
            text = write(value)
        texts.append(text)
    return _text_cells(texts), np.array([t != b"" for t in texts], dtype=bool)


def _json_text(value) -> bytes:
    return json.dumps(str(value), ensure_ascii=False).encode()


def _json_value(value) -> bytes:
    """One value of an object column as JSON: text as a string, a boolean as one, a whole number as it is, a float
    rounded as number columns are (`_float_field`), an object or a list as JSON; b"" for a float that is no number."""
    if isinstance(value, bool | np.bool_):
        return b"true" if value else b"false"
    if isinstance(value, numbers.Integral):  # (numpy's integers too)
        return str(int(value)).encode()
    if isinstance(value, numbers.Real):
        value = float(value)
        return repr(round(value, _PROPERTY_DECIMALS)).encode() if math.isfinite(value) else b""
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False).encode()
    return json.dumps(value, ensure_ascii=False, allow_nan=False).encode()


def _value_field(values: np.ndarray, *, typed: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Cells of the JSON text of each point's value, and which points have one (`typed`: see `_text_field`)."""
    kind = values.dtype.kind
    if kind == "f":
        return _float_field(values, _PROPERTY_DECIMALS)
    if kind == "b":
        return _text_cells([b"false", b"true"])[values.astype(np.intp)], np.ones(len(values), dtype=bool)
    if kind in "iu":
        return _text_cells(values.astype("S24").tolist()), np.ones(len(values), dtype=bool)
    if kind == "M":
        return _timestamp_field(values)
    return _text_field(values.tolist(), typed=typed)


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
    typed: bool = False,
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
            cells, present = _value_field(columns[name][lo:hi], typed=typed)
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
    *,
    typed: bool = False,
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
        data = _feature_chunk(columns, names, properties_head, fields or {}, lo, hi, typed)
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
        names = [n for n in table.columns if n not in ("lon", "lat", SOURCE_COLUMN, YIELD_IGNORED_COLUMN)]
        return _stream_features(fileobj, table.columns, names, {}, chunk)
    columns = dict(table.raw_columns)
    columns["lon"], columns["lat"] = table.columns["lon"], table.columns["lat"]
    names = [n for n in table.raw_columns if n not in ("lon", "lat")]
    if "timestamp" in table.columns and "timestamp" not in columns:
        columns["timestamp"] = table.columns["timestamp"]
        names.insert(0, "timestamp")
    return _stream_features(fileobj, columns, names, {}, chunk, typed=True)
