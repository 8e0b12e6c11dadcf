"""Joining the tables of one operation (the time logs of one task): one unit per column, as a merge of files."""

import numpy as np
import pytest

from conversion import standardize
from conversion.readers import PointTable, UnreadableDataset
from conversion.readers.base import concat_tables
from tests.units import ACRE_HA, GALLON_L


def _log(rate: float, unit: str, n: int = 4) -> PointTable:
    return PointTable(
        name="spread",
        operation_type="applied",
        columns={
            "lon": np.linspace(8.0, 8.001, n),
            "lat": np.full(n, 52.0),
            "area": np.full(n, 100.0),
            "appliedRate": np.full(n, rate),
        },
        units={"appliedRate": unit, "area": "m2"},
        source_units={"appliedRate": unit},
        raw_columns={"rate": np.full(n, rate)},
        raw_units={"rate": unit},
    )


def test_a_rate_in_two_units_of_one_kind_is_converted_to_the_first():
    # Given two logs of one task, 200 L/ha then 20 gal/ac
    joined = concat_tables([_log(200.0, "L/ha"), _log(20.0, "gal/ac")], name="spread")
    # Then the joined column is in L/ha throughout, so the average and the total are of one unit
    gal_ac_in_l_ha = 20.0 * GALLON_L / ACRE_HA
    assert joined.units["appliedRate"] == "L/ha"
    np.testing.assert_allclose(joined.columns["appliedRate"], [200.0] * 4 + [gal_ac_in_l_ha] * 4)
    summary = standardize.summary(joined)["properties"]
    assert summary["appliedRate"]["unit"] == "L/ha"
    assert summary["totalApplied"] == {"value": pytest.approx((200.0 + gal_ac_in_l_ha) * 4 * 0.01), "unit": "L"}


def test_a_rate_in_volume_and_in_mass_cannot_be_one_column():
    with pytest.raises(UnreadableDataset, match="appliedRate.*'L/ha'.*'kg/ha'"):
        concat_tables([_log(200.0, "L/ha"), _log(150.0, "kg/ha")], name="spread")
