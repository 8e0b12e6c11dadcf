"""A converted file's points kept as columns: a `.npz` of numpy arrays plus a JSON header, no pickle.

Every later step (images, operations, merge, crop, the GeoJSON downloads) loads points from here instead of
parsing GeoJSON back: a million points load in a few tens of milliseconds. Text columns (crop, variety,
products, a GeoJSON file's own properties...) are stored as their distinct texts (UTF-8, one after another, and
their offsets) and each point's index into them, -1 for missing (None; "" too), and come back as object arrays.
(Fixed-width unicode made every value as wide as the longest: one long text among many points took gigabytes.)
A column that holds other values than text (a GeoJSON property of numbers and text, booleans, objects) is stored
as the JSON of each value, named in the header's `json`, and comes back as those values (it came back as their
text: `1260` as "1260", `true` as "True").
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import IO

import numpy as np

from conversion.readers.base import MachineIdentity, PointTable
from conversion.readers.values import text_codes

_HEADER = "__header__"
_RAW_PREFIX = "raw:"
_TEXT_PREFIX = "__text__"


def _encode(
    key: str, values: np.ndarray, arrays: dict[str, np.ndarray], text: dict[str, list[str]], as_json: list[str]
) -> None:
    """Put column `key` in `arrays`: as it is, or a text column as three arrays named in `text[key]` (a column of
    other values than text as the JSON of each, its key added to `as_json`)."""
    if values.dtype.kind != "O":
        arrays[key] = values
        return
    if any(value is not None and type(value) is not str for value in values.tolist()):
        as_json.append(key)
        values = np.array([None if v is None else json.dumps(v, ensure_ascii=False) for v in values.tolist()], object)
    texts, codes = text_codes(values)
    if "" in texts:  # ("" is missing, as None)
        empty = texts.index("")
        codes = np.where(codes == empty, -1, np.where(codes > empty, codes - 1, codes))
        texts.remove("")
    encoded = [t.encode("utf-8", "surrogatepass") for t in texts]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    names = text[key] = [f"{_TEXT_PREFIX}{len(text)}.{part}" for part in ("codes", "utf8", "offsets")]
    for name, array in zip(
        names, (codes.astype(np.int32), np.frombuffer(b"".join(encoded), dtype=np.uint8), offsets), strict=True
    ):
        arrays[name] = array


def _decode(data, key: str, text: dict[str, list[str]], as_json: frozenset[str] = frozenset()) -> np.ndarray:
    if key not in text:
        values = data[key]
        if values.dtype.kind != "U":
            return values
        out = values.astype(object)  # (as tables were stored before the text columns: fixed-width, "" missing)
        out[values == ""] = None
        return out
    codes, utf8, offsets = (data[name] for name in text[key])
    blob = utf8.tobytes()
    lookup = np.empty(len(offsets), dtype=object)  # (the last stays None: code -1)
    lookup[:-1] = [blob[a:b].decode("utf-8", "surrogatepass") for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    if key in as_json:
        lookup[:-1] = [json.loads(item) for item in lookup[:-1]]
    return lookup[codes]


def _time(value) -> str | None:
    return None if value is None or np.isnat(value) else str(np.datetime64(value, "ms"))


def table_save(table: PointTable, fileobj: IO[bytes], *, include_raw: bool = True) -> None:
    """Write `table` to a binary file object (uncompressed npz: fast to write and to read)."""
    header = {
        "name": table.name,
        "operation_type": table.operation_type,
        "units": table.units,
        "source_units": table.source_units,
        "raw_units": table.raw_units if include_raw else {},
        "crops": table.crops,
        "varieties": table.varieties,
        "products": table.products,
        "machines": [asdict(m) for m in table.machines],
        "operators": table.operators,
        "operator_licenses": table.operator_licenses,
        "recorded_totals": {k: list(v) for k, v in table.recorded_totals.items()},
        "start": _time(table.start),
        "end": _time(table.end),
        "source_format": table.source_format,
        "warnings": table.warnings,
    }
    arrays: dict[str, np.ndarray] = {}
    text: dict[str, list[str]] = {}
    as_json: list[str] = []
    for name, values in table.columns.items():
        _encode(name, values, arrays, text, as_json)
    if include_raw:
        for name, values in table.raw_columns.items():
            _encode(_RAW_PREFIX + name, values, arrays, text, as_json)
    header["order"] = [*table.columns, *(_RAW_PREFIX + name for name in table.raw_columns if include_raw)]
    header["text"] = text
    header["json"] = as_json
    arrays[_HEADER] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(fileobj, **arrays)


def table_load(fileobj: IO[bytes] | str, *, include_raw: bool = True) -> PointTable:
    """Read a table written by `table_save`."""
    with np.load(fileobj, allow_pickle=False) as data:
        header = json.loads(bytes(data[_HEADER]).decode())
        text = header.get("text", {})
        as_json = frozenset(header.get("json", ()))  # (tables stored before it have none)
        columns: dict[str, np.ndarray] = {}
        raw: dict[str, np.ndarray] = {}
        # (the columns' order: a text column's arrays have names of their own; before them, the arrays' order)
        for key in header.get("order") or [k for k in data.files if k != _HEADER]:
            if key.startswith(_RAW_PREFIX):
                if include_raw:
                    raw[key[len(_RAW_PREFIX) :]] = _decode(data, key, text, as_json)
            else:
                columns[key] = _decode(data, key, text, as_json)
    table = PointTable(
        name=header["name"],
        operation_type=header["operation_type"],
        columns=columns,
        units=header["units"],
        source_units=header["source_units"],
        raw_columns=raw,
        raw_units=header["raw_units"] if include_raw else {},
        crops=header["crops"],
        varieties=header["varieties"],
        products=header["products"],
        machines=[MachineIdentity(**m) for m in header["machines"]],
        operators=header["operators"],
        operator_licenses=header.get("operator_licenses", {}),  # (tables stored before it was kept have none)
        recorded_totals={k: (v[0], v[1]) for k, v in header["recorded_totals"].items()},
        source_format=header["source_format"],
        warnings=header["warnings"],
    )
    table.refresh_time_range()
    return table
