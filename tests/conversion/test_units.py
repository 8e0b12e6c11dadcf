"""Source units (ADAPT codes of John Deere metadata, plain spellings) to the canonical ones, against the exact
definitions of the units (NIST Handbook 44): an acre is 4046.8564224 m2, a US gallon 3.785411784 L, a US bushel
35.23907016688 L, a pound 0.45359237 kg; an ounce is a sixteenth of a pound, a fluid ounce 1/128 gallon."""

import pytest

from conversion.readers.units import to_canonical
from tests.units import ACRE_HA, BUSHEL_L, GALLON_L, POUND_KG


@pytest.mark.parametrize(
    ("code", "unit", "factor"),
    [
        ("bu1ac-1", "L/ha", BUSHEL_L / ACRE_HA),
        ("lb1ac-1", "kg/ha", POUND_KG / ACRE_HA),
        ("ozm1ac-1", "kg/ha", POUND_KG / 16 / ACRE_HA),
        ("gal1ac-1", "L/ha", GALLON_L / ACRE_HA),
        ("floz1ac-1", "L/ha", GALLON_L / 128 / ACRE_HA),
        ("seeds1ac-1", "seeds/ha", 1 / ACRE_HA),
        ("ksds1ac-1", "seeds/ha", 1000 / ACRE_HA),  # thousands of seeds per acre
        ("seeds1ha-1", "seeds/ha", 1.0),
        ("t1ha-1", "kg/ha", 1000.0),
        ("lb1sec-1", "kg/s", POUND_KG),
        ("mi1hr-1", "m/s", 1609.344 / 3600),
        ("km1hr-1", "m/s", 1000 / 3600),
        ("ft1sec-1", "m/s", 0.3048),
    ],
)
def test_an_adapt_rate_code_converts_by_the_units_definitions(code, unit, factor):
    canonical, got = to_canonical(code)
    assert canonical == unit and got == pytest.approx(factor, rel=1e-12)


def test_an_unknown_unit_converts_to_nothing():
    assert to_canonical("furlongs1fortnight-1") is None


def test_an_applied_total_answers_in_gallons_when_its_rate_does():
    """The applied and planted totals have no per-point property of their own: they follow the rate's system."""
    from conversion.standardize.summaries import summary_in_units

    stored = {
        "properties": {
            "appliedRate": {"avg": 187.0, "min": 150.0, "max": 200.0, "unit": "L/ha"},
            "totalApplied": {"value": 378.5411784, "unit": "L"},
        }
    }
    imperial = summary_in_units(stored, {"appliedRate": "L/ha"}, {"appliedRate": "gal/ac"})["properties"]
    assert imperial["totalApplied"]["unit"] == "gal"
    assert imperial["totalApplied"]["value"] == pytest.approx(378.5411784 / GALLON_L)
    assert imperial["appliedRate"]["unit"] == "gal/ac"
    assert imperial["appliedRate"]["avg"] == pytest.approx(187.0 / GALLON_L * ACRE_HA)
    # The same summary asked for in its own units is unchanged
    assert summary_in_units(stored, {"appliedRate": "L/ha"}, {"appliedRate": "L/ha"}) == stored


@pytest.mark.parametrize("spelling", ["kg / ha", " kg/ha ", "KG/HA", "Kg / Ha"])
def test_a_unit_written_with_spaces_or_in_capitals_is_known(spelling):
    from conversion.readers.units import normalize_unit

    assert normalize_unit(spelling) == "kg/ha"


def test_per_section_rows_without_times_are_steps_of_increasing_section_ids():
    """1, 1, 1: each row a step of its own (an id that does not increase starts a new step); 1, 2, 1, 2: two."""
    import numpy as np

    from conversion.standardize.properties import section_steps

    assert list(section_steps({"sectionId": np.array([1.0, 1.0, 1.0])})) == [0, 1, 2]
    assert list(section_steps({"sectionId": np.array([1.0, 2.0, 1.0, 2.0])})) == [0, 0, 1, 1]
