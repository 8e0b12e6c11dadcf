"""Merge point tables of one operation type into one (POST /files/merge, automerged operation files).

Pure numpy, no Django. The merged table holds every point of every table, sorted by time (stable, so points of
one time keep their file order; points without a time come last), every column of any table (NaN / NaT / None
where a table lacks it), and the union of the tables' crops, varieties, products, machines and operators in
first-seen order. A point that repeats one of an earlier file (the same time and position: the same data uploaded
twice, overlapping exports) is counted once, with a warning.

Units: readers give standard columns in canonical metric units, but a column may still come in two spellings or
scales (e.g. `m` and `mm`); those are converted to the first table's unit. Units of different kinds cannot be
merged and raise ValueError naming the column. Raw columns keep the source's values: a raw column whose units
disagree is converted when possible and otherwise left out of the merged raw columns, with a warning.

Each row remembers its source file in the internal column `SOURCE_COLUMN` (never written as a property), so that
rows of different files sharing a timestamp stay apart where rows are grouped into time steps (a step's distance
counted once, its section widths added up); a merged table merged again keeps its own sources apart.

Recorded totals (the machine's own counters) are summed when every table records that total in the same unit;
a total that only some tables record is dropped, since a partial sum would look like a whole.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from conversion.readers.base import PointTable, reconcile_units
from conversion.standardize.properties import SOURCE_COLUMN

# Per-point text columns that a table may instead give once for all its points (`crops`, `varieties`).
_PER_POINT_LISTS = {"crop": "crops", "variety": "varieties"}


def tables_merge(tables: list[PointTable], *, name: str) -> PointTable:
    """One table holding the points of `tables` (all of one operation type), sorted by timestamp.

    Raises ValueError for no tables, mixed operation types, or a standard column whose units cannot be reconciled.
    """
    if not tables:
        raise ValueError("nothing to merge: no tables")
    types = sorted({t.operation_type for t in tables})
    if len(types) > 1:
        raise ValueError(f"cannot merge tables of different operation types: {', '.join(types)}")
    lengths = [len(t) for t in tables]
    warnings = [w for t in tables for w in t.warnings]

    crops = _union(t.crops for t in tables)
    varieties = _union(t.varieties for t in tables)
    columns_per_table = [_with_per_point_lists(t, crops, varieties) for t in tables]
    sources, source_count = _source_index(tables)

    units, converted = reconcile_units(tables, columns_per_table, "units", strict=True, warnings=warnings)
    raw_units, raw_converted = reconcile_units(
        tables, [t.raw_columns for t in tables], "raw_units", strict=False, warnings=warnings
    )
    columns = _concat(converted, lengths)
    raw_columns = _concat(raw_converted, lengths)
    totals = _summed_totals(tables)
    repeated = _repeats(columns, sources) if source_count > 1 else None
    if repeated is not None:
        keep = ~repeated
        columns = {k: v[keep] for k, v in columns.items()}
        raw_columns = {k: v[keep] for k, v in raw_columns.items()}
        sources = sources[keep]
        bounds = np.cumsum([0, *lengths])
        kept = [int(keep[a:b].sum()) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        # A file whose points all repeat another's adds nothing to the totals; one repeating only some would count
        # those twice, so no total is summed then.
        partial = any(0 < k < n for k, n in zip(kept, lengths, strict=True))
        totals = {} if partial else _summed_totals([t for t, k in zip(tables, kept, strict=True) if k])
        warnings.append(
            f"{int(repeated.sum())} points repeat points of another file (the same time and position) and are "
            "counted once"
        )
    if source_count > 1:
        columns[SOURCE_COLUMN] = sources

    n = len(columns["lon"])
    timestamps = columns.get("timestamp")
    if timestamps is not None and n > 1:
        # NaT sorts last; a stable sort keeps each table's own order among equal times.
        order = np.argsort(timestamps, kind="stable")
        if not np.array_equal(order, np.arange(n)):
            columns = {k: v[order] for k, v in columns.items()}
            raw_columns = {k: v[order] for k, v in raw_columns.items()}

    source_units: dict[str, str] = {}
    for table in tables:
        for key, unit in table.source_units.items():
            source_units.setdefault(key, unit)
    formats = _union([t.source_format] for t in tables if t.source_format)
    merged = replace(
        tables[0],
        name=name,
        columns=columns,
        units=units,
        source_units=source_units,
        raw_columns=raw_columns,
        raw_units=raw_units,
        crops=crops,
        varieties=varieties,
        products=_union(t.products for t in tables),
        machines=_union(t.machines for t in tables),
        operators=_union(t.operators for t in tables),
        operator_licenses={k: v for t in reversed(tables) for k, v in t.operator_licenses.items()},  # first wins
        recorded_totals=totals,
        source_format="+".join(formats),
        warnings=warnings,
    )
    merged.refresh_time_range()
    return merged


def _union(lists) -> list:
    """Distinct items of several lists, in first-seen order."""
    out: list = []
    for items in lists:
        out.extend(item for item in items if item not in out)
    return out


def _with_per_point_lists(table: PointTable, crops: list[str], varieties: list[str]) -> dict[str, np.ndarray]:
    """The table's columns, plus a per-point crop (variety) column when the merged tables name several.

    A table that names one crop for all its points would otherwise lose it once the merged table names two, and
    the standard moisture of its points (dry yields) with it.
    """
    columns = dict(table.columns)
    columns.pop(SOURCE_COLUMN, None)  # replaced by the merged table's own (`_source_index`)
    for column, attribute in _PER_POINT_LISTS.items():
        merged_list = crops if attribute == "crops" else varieties
        own = getattr(table, attribute)
        if column in columns or len(merged_list) < 2:
            continue
        value = own[0] if len(own) == 1 else None
        columns[column] = np.full(len(table), value, dtype=object)
    return columns


def _source_index(tables: list[PointTable]) -> tuple[np.ndarray, int]:
    """Per row of the concatenated tables, the index of the source file it came from, and how many sources there are.
    A table that is itself a merge keeps its own sources apart."""
    parts: list[np.ndarray] = []
    offset = 0
    for table in tables:
        own = table.columns.get(SOURCE_COLUMN)
        if own is None or len(own) == 0:
            index, count = np.zeros(len(table), dtype=np.int64), 1
        else:
            kinds, index = np.unique(np.asarray(own), return_inverse=True)
            index, count = index.reshape(-1).astype(np.int64), len(kinds)
        parts.append(offset + index)
        offset += count
    return np.concatenate(parts), offset


def _repeats(columns: dict[str, np.ndarray], sources: np.ndarray) -> np.ndarray | None:
    """Per row, whether it repeats a point of an earlier source file: the same time, longitude and latitude (the
    same data uploaded twice, exports that overlap). The first file's points stay, repeats within one file too (a
    machine standing still); points without a time are never repeats. None when no row is one."""
    times = columns.get("timestamp")
    if times is None:
        return None
    timed = np.flatnonzero(~np.isnat(times))
    if not len(timed):
        return None
    keys = np.empty(len(timed), dtype=[("t", np.int64), ("lon", np.float64), ("lat", np.float64)])
    keys["t"] = times[timed].view(np.int64)
    keys["lon"] = columns["lon"][timed]
    keys["lat"] = columns["lat"][timed]
    # Stable: the first row of each point, in table order, names the file that keeps it.
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    owner = sources[timed][first][inverse.reshape(-1)]
    repeated = np.zeros(len(times), dtype=bool)
    repeated[timed] = sources[timed] != owner
    return repeated if repeated.any() else None


def _concat(dicts: list[dict[str, np.ndarray]], lengths: list[int]) -> dict[str, np.ndarray]:
    """Column-wise concatenation; a table lacking a column contributes NaN, NaT or None."""
    keys = _union(list(d) for d in dicts)
    out: dict[str, np.ndarray] = {}
    for key in keys:
        present = [np.asarray(d[key]) for d in dicts if key in d]
        dtype = _common_dtype(present, complete=len(present) == len(dicts))
        parts = [
            np.asarray(d[key]).astype(dtype, copy=False) if key in d else _missing(dtype, n)
            for d, n in zip(dicts, lengths, strict=True)
        ]
        out[key] = np.concatenate(parts)
    return out


def _common_dtype(arrays: list[np.ndarray], *, complete: bool) -> np.dtype:
    """A dtype holding every array's values: their common one, float when numbers must also hold a missing value
    (NaN), object for text or a mix."""
    kinds = {a.dtype.kind for a in arrays}
    if kinds == {"M"}:
        return np.result_type(*(a.dtype for a in arrays))
    if kinds <= {"f", "i", "u", "b"}:
        common = np.result_type(*(a.dtype for a in arrays))
        return common if complete or common.kind == "f" else np.dtype(np.float64)
    return np.dtype(object)


def _missing(dtype: np.dtype, n: int) -> np.ndarray:
    if dtype.kind == "M":
        return np.full(n, np.datetime64("NaT"), dtype=dtype)
    if dtype.kind == "f":
        return np.full(n, np.nan)
    return np.full(n, None, dtype=object)


def _summed_totals(tables: list[PointTable]) -> dict[str, tuple[float, str]]:
    """Recorded totals every table records in one unit, summed; the others dropped."""
    out: dict[str, tuple[float, str]] = {}
    for key, (_, unit) in tables[0].recorded_totals.items():
        values = [t.recorded_totals.get(key) for t in tables]
        if all(v is not None and v[1] == unit for v in values):
            out[key] = (float(sum(v[0] for v in values)), unit)
    return out
