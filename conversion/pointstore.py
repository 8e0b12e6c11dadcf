"""A converted file's points kept as columns: a `.npz` of numpy arrays plus a JSON header, no pickle.

Every later step (images, operations, merge, crop, the GeoJSON downloads) loads points from here instead of
parsing GeoJSON back: a million points load in a few tens of milliseconds. Text columns (crop, variety,
products...) are stored as fixed-width unicode with "" for missing and come back as object arrays with None.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import IO

import numpy as np

from conversion.readers.base import MachineIdentity, PointTable

_HEADER = "__header__"
_RAW_PREFIX = "raw:"


def _encode(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind != "O":
        return values
    return np.array(["" if v is None else str(v) for v in values.tolist()], dtype=str)


def _decode(values: np.ndarray) -> np.ndarray:
    if values.dtype.kind != "U":
        return values
    out = values.astype(object)
    out[values == ""] = None
    return out


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
        "recorded_totals": {k: list(v) for k, v in table.recorded_totals.items()},
        "start": _time(table.start),
        "end": _time(table.end),
        "source_format": table.source_format,
        "warnings": table.warnings,
    }
    arrays = {name: _encode(values) for name, values in table.columns.items()}
    if include_raw:
        arrays.update({_RAW_PREFIX + name: _encode(values) for name, values in table.raw_columns.items()})
    arrays[_HEADER] = np.frombuffer(json.dumps(header).encode(), dtype=np.uint8)
    np.savez(fileobj, **arrays)


def table_load(fileobj: IO[bytes] | str, *, include_raw: bool = True) -> PointTable:
    """Read a table written by `table_save`."""
    with np.load(fileobj, allow_pickle=False) as data:
        header = json.loads(bytes(data[_HEADER]).decode())
        columns: dict[str, np.ndarray] = {}
        raw: dict[str, np.ndarray] = {}
        for key in data.files:
            if key == _HEADER:
                continue
            if key.startswith(_RAW_PREFIX):
                if include_raw:
                    raw[key[len(_RAW_PREFIX) :]] = _decode(data[key])
            else:
                columns[key] = _decode(data[key])
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
        recorded_totals={k: (v[0], v[1]) for k, v in header["recorded_totals"].items()},
        source_format=header["source_format"],
        warnings=header["warnings"],
    )
    table.refresh_time_range()
    return table
