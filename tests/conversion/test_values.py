"""The one rule for values leaving a reader (`readers.values`, `readers.values.table_values_clean`): text without the
characters no database stores, non-finite numbers as missing values. The API tests (api/test_file_content.py) show
it on uploads; here every place of a table that holds text from a file."""

import math

import numpy as np
import pytest

from conversion.readers.base import MachineIdentity, PointTable
from conversion.readers.values import table_values_clean, text_value
from platform_site.text import storable

pytestmark = pytest.mark.embedded


@pytest.mark.parametrize(
    ("text", "cleaned"),
    [
        ("P\x001", "P1"),
        ("P\x00\x00\x0012", "P12"),
        ("a\x01b\x08c\x0bd\x0ce\x0ef\x1fg\x7f", "abcdefg"),
        ("C1\x80\x85\x9b[31m\x9f", "C1[31m"),  # (an 8-bit CSI among them)
        ("\xa0Ünter €", "\xa0Ünter €"),
        ("tab\tline\ncarriage\r", "tab\tline\ncarriage\r"),
        ("\ud800x\udfff", "x"),
        ("Gülle 😀", "Gülle 😀"),
    ],
)
def test_storable_removes_what_no_database_stores(text, cleaned):
    assert storable(text) == cleaned
    cleaned.encode("utf-8")  # (what PostgreSQL and SQLite are sent)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (" Round\x00up ", "Roundup"),
        ("\x00 ", None),
        (5, "5"),
        (7.0, "7"),
        (2.5, "2.5"),
        (10**30, str(10**30)),
        (math.nan, None),
        (math.inf, None),
        (True, None),
        ({"name": "x"}, None),
        (["x"], None),
        (None, None),
    ],
)
def test_text_value_takes_numbers_as_their_digits_and_ignores_other_values(value, text):
    assert text_value(value) == text


def test_every_text_of_a_table_is_cleaned_and_non_finite_numbers_are_missing():
    # Given a table whose every text from the file holds a NUL, a control character or a lone surrogate, and whose
    # numbers and recorded totals are partly not finite
    table = PointTable(
        name="Task\x00 1",
        operation_type="applied",
        columns={
            "lon": np.array([10.0, 10.1, 10.2]),
            "lat": np.array([54.0, 54.0, 54.0]),
            "appliedRate": np.array([1.0, np.inf, -np.inf]),
            "variety": np.array(["P\x001", "\x00", None], dtype=object),
            "products": np.array(["A\ud800", {"x": 1}, 5], dtype=object),
        },
        units={"appliedRate": "L/ha"},
        source_units={"appliedRate": "gal\x00/ac"},
        raw_columns={
            "Note\x00": np.array(["x\x01", {"y\x01": ["z\x00", 1, math.nan]}, 1.5], dtype=object),
            "Note": np.array(["a", "b", "c"], dtype=object),
            "Rate": np.array([1.0, np.inf, 2.0]),
        },
        raw_units={"Rate\x00": "L\x00/ha"},
        crops=["co\x00rn", "\x00"],
        varieties=["P\x001", "P1", 5],
        products=["Round\ud800up"],
        machines=[MachineIdentity(kind="machine", name="Trac\x00tor", serial_number="\x00", model="M\x1f1")],
        operators=["Jane\x00 Doe"],
        recorded_totals={"totalArea": (10.0, "m2"), "totalWetMass": (math.nan, "kg"), "totalApplied": (1e999, "L")},
        warnings=["log\x00 skipped"],
    )

    # When the rule is applied
    table = table_values_clean(table)

    # Then no text holds them, and numbers that are not finite are missing
    assert table.name == "Task 1"
    assert (table.crops, table.varieties, table.products) == (["corn"], ["P1", "5"], ["Roundup"])
    assert table.machines == [MachineIdentity(kind="machine", name="Tractor", model="M1")]
    assert table.operators == ["Jane Doe"] and table.warnings == ["log skipped"]
    assert table.source_units == {"appliedRate": "gal/ac"} and table.raw_units == {"Rate": "L/ha"}
    assert table.recorded_totals == {"totalArea": (10.0, "m2")}
    assert np.array_equal(table.columns["appliedRate"], [1.0, np.nan, np.nan], equal_nan=True)
    assert table.columns["variety"].tolist() == ["P1", None, None]
    assert table.columns["products"].tolist() == ["A", None, 5]
    # (raw columns keep what the file wrote, cleaned: a name that becomes another's is kept apart)
    assert list(table.raw_columns) == ["Note_", "Note", "Rate"]
    # (an object stays one, its text cleaned, for the raw GeoJSON to write as JSON: it was Python's text of it)
    assert table.raw_columns["Note_"].tolist() == ["x", {"y": ["z", 1, None]}, 1.5]
    assert np.isinf(table.raw_columns["Rate"][1])
