"""The point store (`conversion.pointstore`): what a converted file keeps of its points, read back by every later
step. Text columns are kept as their distinct texts: one long text among many points costs its own length once."""

import io
import json

import numpy as np
import pytest

from conversion.pointstore import table_load, table_save
from conversion.readers.base import PointTable

pytestmark = pytest.mark.embedded


def _table(count: int, **columns) -> PointTable:
    return PointTable(
        name="t",
        operation_type="harvested",
        columns={"lon": np.linspace(10, 10.01, count), "lat": np.full(count, 54.5), **columns},
        units={},
    )


def _round_trip(table: PointTable, **options) -> tuple[PointTable, int]:
    stored = io.BytesIO()
    table_save(table, stored, **options)
    size = stored.tell()
    stored.seek(0)
    return table_load(stored, **options), size


def test_one_long_text_among_many_points_is_stored_once():
    count = 10_000
    note = np.full(count, "x", dtype=object)
    note[0] = "abcdefghij" * 4_000  # 40,000 characters
    table = _table(count)
    table.raw_columns = {"note": note}
    back, size = _round_trip(table)
    # Fixed-width text made every value 40,000 characters of 4 bytes: 1.6 GB for this column.
    assert size < 1_000_000, size
    assert back.raw_columns["note"].tolist() == note.tolist()


def test_operators_come_back_with_their_licence_numbers():
    table = _table(2)
    table.operators, table.operator_licenses = ["Peter Driver", "Helper"], {"Peter Driver": "LIC-123"}
    back, _ = _round_trip(table)
    assert back.operators == ["Peter Driver", "Helper"] and back.operator_licenses == {"Peter Driver": "LIC-123"}


def test_texts_come_back_as_given_in_the_columns_order():
    crop = np.array([None, "corn", "", "Gülle 😀", "corn", "lone \ud800 surrogate"], dtype=object)
    mixed = np.array([1, "a", None, 2.5, "a", "b"], dtype=object)
    table = _table(6, crop=crop, speed=np.arange(6.0))
    table.raw_columns = {"Z": mixed, "A": np.arange(6)}
    back, _ = _round_trip(table)
    assert list(back.columns) == ["lon", "lat", "crop", "speed"]
    assert list(back.raw_columns) == ["Z", "A"]
    # Missing stays missing ("" is missing too); a column of other values than text comes back as they were (they
    # came back as their text: 1 as "1").
    assert back.columns["crop"].tolist() == [None, "corn", None, "Gülle 😀", "corn", "lone \ud800 surrogate"]
    assert back.raw_columns["Z"].tolist() == [1, "a", None, 2.5, "a", "b"]
    assert back.columns["speed"].tolist() == list(range(6)) and back.raw_columns["A"].tolist() == list(range(6))
    cleaned, _ = _round_trip(table, include_raw=False)
    assert list(cleaned.columns) == ["lon", "lat", "crop", "speed"] and cleaned.raw_columns == {}


def test_an_empty_text_column_and_a_column_of_no_text():
    table = _table(0, crop=np.array([], dtype=object))
    assert _round_trip(table)[0].columns["crop"].tolist() == []
    table = _table(2, crop=np.array([None, None], dtype=object))
    assert _round_trip(table)[0].columns["crop"].tolist() == [None, None]


def test_tables_stored_before_the_text_columns_still_load():
    """Stored before 2026-11-29: text as fixed-width unicode, "" for missing, the order of the arrays."""
    header = {
        "name": "old", "operation_type": "harvested", "units": {}, "source_units": {}, "raw_units": {},
        "crops": [], "varieties": [], "products": [], "machines": [], "operators": [], "recorded_totals": {},
        "start": None, "end": None, "source_format": None, "warnings": [],
    }  # fmt: skip
    stored = io.BytesIO()
    np.savez(
        stored,
        lon=np.array([10.0, 10.1]),
        lat=np.array([54.0, 54.1]),
        crop=np.array(["", "corn"]),
        **{"raw:note": np.array(["a", ""])},
        __header__=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
    )
    stored.seek(0)
    back = table_load(stored)
    assert list(back.columns) == ["lon", "lat", "crop"]
    assert back.columns["crop"].tolist() == [None, "corn"] and back.raw_columns["note"].tolist() == ["a", None]
