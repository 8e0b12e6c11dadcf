"""Merging tables of one operation: every point once, in time order, totals and lists summed or united."""

from dataclasses import replace

import numpy as np
import pytest
from shapely.geometry import shape

from conversion import standardize
from conversion.merge import tables_merge
from conversion.readers import Dataset, MachineIdentity, PointTable, get_reader
from conversion.standardize.covered_area import _machine_width
from tests.operations.helpers import section_table

DOTNET_TIMELOGS = "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata/TimeLogs/ValidTimeLogs"


@pytest.fixture(scope="module")
def isoxml_tasks(samples_dir) -> dict[str, PointTable]:
    folder = samples_dir / DOTNET_TIMELOGS
    tables = get_reader("ISOXML").read(Dataset("ISOXML", folder / "TASKDATA.XML", folder, "ValidTimeLogs"))
    return {t.name: t for t in tables}


def test_merging_two_isoxml_tasks_sums_points_and_totals_and_unites_the_time_range(isoxml_tasks):
    # Given two harvest tasks of the same export, passed later one first
    first, second = isoxml_tasks["SAV"], isoxml_tasks["A02"]
    # When merged
    merged = tables_merge([second, first], name="SAV + A02")
    # Then every point is there once, in time order, raw columns alongside
    assert len(merged) == len(first) + len(second)
    ts = merged.columns["timestamp"]
    assert (np.diff(ts.astype(np.int64)) >= 0).all()
    np.testing.assert_array_equal(ts, np.concatenate([first.columns["timestamp"], second.columns["timestamp"]]))
    for name in first.raw_columns:
        assert len(merged.raw_columns[name]) == len(merged), name
    np.testing.assert_array_equal(
        merged.columns["wetMassPerArea"],
        np.concatenate([first.columns["wetMassPerArea"], second.columns["wetMassPerArea"]]),
    )
    assert (merged.start, merged.end) == (first.start, second.end)
    # And the files' own totals add up, as do the totals computed from the points
    assert merged.recorded_totals["totalWetMass"] == (259605.0 + 242461.0, "kg")
    for key in ("totalArea", "totalDistance"):
        assert merged.recorded_totals[key][0] == pytest.approx(
            first.recorded_totals[key][0] + second.recorded_totals[key][0]
        )
    merged_totals = standardize.totals(standardize.derive(merged))
    for key in ("totalArea", "totalWetMass"):
        parts = [standardize.totals(standardize.derive(t))[key]["value"] for t in (first, second)]
        assert merged_totals[key]["value"] == pytest.approx(sum(parts), rel=1e-9), key
    assert merged.name == "SAV + A02" and merged.operation_type == "harvested"
    assert merged.machines == first.machines and merged.units == first.units


def _table(name: str, start: str, n: int, **kwargs) -> PointTable:
    columns = {
        "timestamp": np.datetime64(start, "ms") + np.arange(n) * np.timedelta64(1000, "ms"),
        "lon": np.linspace(10, 10.001, n),
        "lat": np.full(n, 54.0),
    }
    columns.update(kwargs.pop("columns", {}))
    return PointTable(name=name, operation_type=kwargs.pop("operation_type", "harvested"), columns=columns, **kwargs)


def test_missing_columns_fill_and_lists_unite_in_first_seen_order():
    a = _table(
        "a",
        "2024-09-01T10:00:05",
        3,
        columns={"wetMassPerArea": np.array([1.0, 2.0, 3.0]), "sectionId": np.array([1, 2, 3])},
        units={"wetMassPerArea": "kg/ha"},
        crops=["corn"],
        products=["P1"],
        machines=[MachineIdentity(kind="machine", name="M1")],
        operators=["Ann"],
        operator_licenses={"Ann": "A-1"},
        recorded_totals={"totalWetMass": (10.0, "kg"), "totalArea": (5.0, "m2")},
    )
    b = _table(
        "b",
        "2024-09-01T10:00:00",
        2,
        columns={"harvestMoisture": np.array([20.0, 21.0]), "sectionId": np.array([4, 5])},
        units={"harvestMoisture": "percentage"},
        crops=["soybeans"],
        products=["P2", "P1"],
        machines=[MachineIdentity(kind="machine", name="M2"), MachineIdentity(kind="machine", name="M1")],
        operators=["Bob", "Ann"],
        operator_licenses={"Bob": "B-2", "Ann": "A-9"},
        recorded_totals={"totalWetMass": (4.0, "kg")},
    )
    merged = tables_merge([a, b], name="m")
    # b's points come first (earlier); a column b lacks is NaN there, an integer column both have stays integer
    assert merged.columns["wetMassPerArea"][:2].tolist() == [pytest.approx(np.nan, nan_ok=True)] * 2
    assert merged.columns["wetMassPerArea"][2:].tolist() == [1.0, 2.0, 3.0]
    assert merged.columns["harvestMoisture"][:2].tolist() == [20.0, 21.0]
    assert np.isnan(merged.columns["harvestMoisture"][2:]).all()
    assert merged.columns["sectionId"].tolist() == [4, 5, 1, 2, 3]
    assert merged.columns["sectionId"].dtype.kind == "i"
    assert merged.crops == ["corn", "soybeans"] and merged.products == ["P1", "P2"]
    assert [m.name for m in merged.machines] == ["M1", "M2"] and merged.operators == ["Ann", "Bob"]
    assert merged.operator_licenses == {"Ann": "A-1", "Bob": "B-2"}  # the first table's where they differ
    # Two crops: each point keeps its own (standard moisture and bushel weight per point)
    assert merged.columns["crop"].tolist() == ["soybeans", "soybeans", "corn", "corn", "corn"]
    # Only totals every table records are summed
    assert merged.recorded_totals == {"totalWetMass": (14.0, "kg")}
    # And only in one unit: kilograms and pounds are not added up
    b.recorded_totals["totalWetMass"] = (4.0, "lb")
    assert tables_merge([a, b], name="m").recorded_totals == {}
    assert merged.units == {"wetMassPerArea": "kg/ha", "harvestMoisture": "percentage"}


def test_units_are_converted_to_the_first_table_or_refused():
    a = _table(
        "a", "2024-09-01T10:00:00", 2, columns={"equipmentWidth": np.array([9.0, 9.0])}, units={"equipmentWidth": "m"}
    )
    b = _table(
        "b", "2024-09-01T11:00:00", 1, columns={"equipmentWidth": np.array([12000.0])}, units={"equipmentWidth": "mm"}
    )
    merged = tables_merge([a, b], name="m")
    assert merged.columns["equipmentWidth"].tolist() == [9.0, 9.0, 12.0]
    assert merged.units["equipmentWidth"] == "m"

    c = _table(
        "c", "2024-09-01T12:00:00", 1, columns={"equipmentWidth": np.array([1.0])}, units={"equipmentWidth": "kg"}
    )
    with pytest.raises(ValueError, match="equipmentWidth"):
        tables_merge([a, c], name="m")


def test_raw_columns_with_unreconcilable_units_are_left_out_with_a_warning():
    a = _table(
        "a",
        "2024-09-01T10:00:00",
        1,
        raw_columns={"X": np.array([1.0]), "Y": np.array([2.0])},
        raw_units={"X": "m", "Y": "m"},
    )
    b = _table(
        "b",
        "2024-09-01T11:00:00",
        1,
        raw_columns={"X": np.array([3.0]), "Y": np.array([400.0])},
        raw_units={"X": "kg", "Y": "cm"},
    )
    merged = tables_merge([a, b], name="m")
    assert "X" not in merged.raw_columns and "X" not in merged.raw_units
    assert merged.raw_columns["Y"].tolist() == [2.0, 4.0]
    assert any("'X'" in w for w in merged.warnings)


def test_merge_refuses_mixed_operation_types_and_nothing():
    with pytest.raises(ValueError, match="operation types"):
        tables_merge([_table("a", "2024-01-01", 1), _table("b", "2024-01-01", 1, operation_type="planted")], name="m")
    with pytest.raises(ValueError, match="no tables"):
        tables_merge([], name="m")


@pytest.mark.embedded
def test_time_steps_never_span_source_files():
    # Given one per-section log and a copy of it a hair (about 0.1 mm) to the east, as a second machine logging at
    # the same times (an exact copy would be the same data twice: `test_the_same_task_merged_twice...`), and a
    # merge of that merge with a third copy
    single = standardize.derive(section_table())

    def beside(shift: float) -> PointTable:
        return replace(single, columns=single.columns | {"lon": single.columns["lon"] + shift})

    twice = tables_merge([single, beside(1e-9)], name="twice")
    thrice = tables_merge([twice, beside(2e-9)], name="thrice")
    for merged, copies in ((twice, 2), (thrice, 3)):
        # Then the distance of each file's time steps counts, and the machine is as wide as one file's
        expected = copies * standardize.totals(single)["totalDistance"]["value"]
        assert standardize.totals(merged)["totalDistance"]["value"] == pytest.approx(expected)
        assert _machine_width(merged, np.ones(len(merged), dtype=bool)) == _machine_width(
            single, np.ones(len(single), dtype=bool)
        )
        # and its coverage is the one file's (the union of the copies', each a hair from the others)
        covered, alone = shape(standardize.coverage(merged)), shape(standardize.coverage(single))
        assert covered.hausdorff_distance(alone) < 1e-8 and covered.area == pytest.approx(alone.area, rel=1e-6)
    # And a single table keeps its figures (one step per second: 160 steps of 5 m, 12 m wide)
    assert standardize.totals(tables_merge([single], name="one")) == standardize.totals(single)
    assert standardize.totals(single)["totalDistance"]["value"] == pytest.approx(160 * 5.0)
    assert _machine_width(single, np.ones(len(single), dtype=bool)) == 12.0


@pytest.mark.embedded
def test_rows_without_time_start_a_step_where_the_source_file_changes():
    # Given two files of untimed per-section rows, the first ending on section 1, the second starting on section 2
    def untimed(sections: list[int]) -> PointTable:
        n = len(sections)
        table = _table("u", "2024-09-01", n, columns={"sectionId": np.array(sections), "distance": np.full(n, 5.0)})
        table.columns["timestamp"] = np.full(n, np.datetime64("NaT", "ms"))
        return table

    merged = tables_merge([untimed([1, 2, 1]), untimed([2, 3])], name="m")
    # Then each file's rows form their own steps: (1, 2), (1) and (2, 3)
    assert standardize.totals(merged)["totalDistance"]["value"] == 15.0


def test_the_same_task_merged_twice_counts_its_points_once(isoxml_tasks):
    # Given a harvest task, and the same task again (the same data uploaded twice), with another task
    task, other = isoxml_tasks["SAV"], isoxml_tasks["A02"]
    alone = standardize.totals(standardize.derive(tables_merge([task, other], name="once")))

    # When all three are merged
    merged = tables_merge([task, other, task], name="twice")

    # Then each point is there once, and the totals are those of the two tasks
    assert len(merged) == len(task) + len(other)
    totals = standardize.totals(standardize.derive(merged))
    for key in ("totalArea", "totalWetMass", "totalDistance"):
        assert totals[key]["value"] == pytest.approx(alone[key]["value"], rel=1e-12), key
    assert merged.recorded_totals["totalWetMass"] == (259605.0 + 242461.0, "kg")
    # And a warning says how many points were repeats
    assert f"{len(task)} points repeat points of another file (the same time and position) and are counted once" in (
        merged.warnings
    )


def test_overlapping_files_count_the_shared_points_once_and_sum_no_recorded_total():
    # Given two logs of one machine sharing their last and first three seconds (exports that overlap), each with
    # its own recorded total
    first = _table("a", "2024-07-01T10:00:00", 10, recorded_totals={"totalWetMass": (100.0, "kg")})
    second = _table("b", "2024-07-01T10:00:07", 10, recorded_totals={"totalWetMass": (100.0, "kg")})
    second.columns["lon"][:3] = first.columns["lon"][-3:]

    merged = tables_merge([first, second], name="overlap")

    # Then the shared points are there once, the first file's
    assert len(merged) == 17
    assert merged.columns["timestamp"].tolist() == sorted(
        set(first.columns["timestamp"].tolist()) | set(second.columns["timestamp"].tolist())
    )
    # And no recorded total is summed (it would count the shared part twice)
    assert merged.recorded_totals == {}


def test_points_at_the_same_time_elsewhere_or_repeated_in_one_file_are_kept():
    # Given two machines logging at the same times in different places, one of them standing still (the same point
    # twice), and points without a time
    a = _table("a", "2024-07-01T10:00:00", 5)
    a.columns["lon"][1] = a.columns["lon"][0]
    a.columns["timestamp"][1] = a.columns["timestamp"][0]
    b = _table("b", "2024-07-01T10:00:00", 5)
    b.columns["lat"] = b.columns["lat"] + 0.001
    c = _table("c", "2024-07-01T10:00:00", 2)
    c.columns["timestamp"][:] = np.datetime64("NaT")
    d = _table("d", "2024-07-01T10:00:00", 2)
    d.columns["timestamp"][:] = np.datetime64("NaT")

    merged = tables_merge([a, b, c, d], name="kept")

    # Then every point is kept
    assert len(merged) == 14
    assert not any("repeat" in w for w in merged.warnings)


def test_points_of_one_time_keep_their_files_order():
    """Two machines logging the same seconds (a combine's sections, say): among equal times each file's own order
    stays, first file first. An unstable sort shuffled them."""
    times = np.repeat(np.datetime64("2024-07-01T10:00:00", "ms"), 200)
    a = _table("a", "2024-07-01T10:00:00", 200, columns={"timestamp": times, "sectionId": np.arange(200)})
    b = _table("b", "2024-07-01T10:00:00", 200, columns={"timestamp": times, "sectionId": np.arange(200, 400)})
    b.columns["lat"] = np.full(200, 54.001)  # elsewhere: not a repeat of a's points
    merged = tables_merge([a, b], name="m")
    assert merged.columns["sectionId"].tolist() == list(range(400))
