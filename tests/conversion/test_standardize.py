"""Derived values, cleaning, totals, summary, units and streamed GeoJSON."""

import io
import json
import re

import numpy as np
import pytest
import shapely
from shapely.geometry import shape

from conversion import standardize
from conversion.crops import CROP_STANDARDS, crop_standard, normalize_crop_name
from conversion.readers import Dataset, MachineIdentity, PointTable, get_reader
from tests.units import BUSHEL_L, POUND_KG

ISO_MS_Z = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def _table(n: int = 6, **columns) -> PointTable:
    base = {
        "timestamp": np.datetime64("2024-09-01T10:00:00", "ms") + np.arange(n) * np.timedelta64(1000, "ms"),
        "lon": 10.0 + np.arange(n) * 0.00002,
        "lat": np.full(n, 54.0),
    }
    base.update(columns)
    return PointTable(
        name="t",
        operation_type="harvested",
        columns=base,
        units={"wetMassPerArea": "kg/ha", "harvestMoisture": "percentage", "equipmentWidth": "m", "distance": "m"},
        crops=["corn"],
        machines=[MachineIdentity(kind="machine", name="Combine 1", serial_number="123")],
    )


def test_dry_value_formula_above_and_below_standard_moisture():
    wet = np.array([1000.0, 1000.0, 1000.0])
    moisture = np.array([20.0, 15.5, 10.0])
    dry = standardize.dry_from_wet(wet, moisture, 15.5)
    assert dry[0] == pytest.approx(1000 * (100 - 20) / (100 - 15.5))
    assert dry[1] == 1000.0  # M == Ms: no shrink
    assert dry[2] == 1000.0  # M < Ms: dry equals wet, never more


def test_points_of_a_crop_without_a_standard_get_no_dry_value():
    """A point of a crop with no standard moisture got dry = wet (its wet value at field moisture): the summary's
    dry mass counted it, its dry volume did not."""
    n = 6
    table = _table(
        n,
        wetMassPerArea=np.full(n, 10_000.0),
        harvestMoisture=np.full(n, 25.0),
        area=np.full(n, 100.0),
        crop=np.array(["corn"] * 3 + ["sunflower"] * 3, dtype=object),
    )
    table.crops = ["corn", "sunflower"]
    derived = standardize.derive(table)
    dry = derived.columns["dryMassPerArea"]
    assert dry[:3] == pytest.approx([10_000 * 75 / (100 - crop_standard("corn").standard_moisture)] * 3)
    assert np.isnan(dry[3:]).all()
    totals = standardize.totals(derived)
    assert totals["totalDryMass"]["value"] == pytest.approx(3 * 0.01 * dry[0])
    # A blank crop cell in a file of one crop is of that crop
    one_crop = _table(2, wetMassPerArea=np.full(2, 10_000.0), harvestMoisture=np.full(2, 25.0))
    one_crop.columns["crop"] = np.array(["corn", None], dtype=object)
    assert standardize.derive(one_crop).columns["dryMassPerArea"] == pytest.approx([dry[0], dry[0]])


def test_a_harvest_of_per_point_masses_without_a_rate_gets_dry_values_volumes_and_totals():
    """A file giving each point's wet mass and no rate had no totalWetMass, and no dry values at all."""
    wet = np.array([12.0, 15.0, 9.0, 14.0])
    table = _table(4, wetMass=wet, harvestMoisture=np.array([25.0, 20.0, 15.0, 30.0]))
    table.units["wetMass"] = "kg"
    derived = standardize.derive(table)
    ms = crop_standard("corn").standard_moisture
    dry = derived.columns["dryMass"]
    # Wet basis (FORMATS.md): dry = wet x (100 - M) / (100 - Ms) above the standard moisture, else dry = wet
    moisture = table.columns["harvestMoisture"]
    assert dry == pytest.approx(
        [w * (100 - m) / (100 - ms) if m > ms else w for w, m in zip(wet, moisture, strict=True)]
    )
    bushel = 56 * POUND_KG  # a bushel of corn weighs 56 lb
    assert derived.columns["wetVolume"] == pytest.approx(wet * BUSHEL_L / bushel)
    assert derived.columns["dryVolume"] == pytest.approx(dry * BUSHEL_L / bushel)
    assert "wetMassPerArea" not in derived.columns and "dryMassPerArea" not in derived.columns
    totals = standardize.totals(derived)
    assert totals["totalWetMass"] == {"value": pytest.approx(50.0), "unit": "kg"}
    assert totals["totalDryMass"] == {"value": pytest.approx(float(dry.sum())), "unit": "kg"}
    assert totals["totalWetVolume"] == {"value": pytest.approx(50.0 * BUSHEL_L / bushel), "unit": "L"}
    # A mass of no stated unit converts to nothing and sums to no total
    table.units["wetMass"] = "unknown"
    unknown = standardize.derive(table)
    assert not {"dryMass", "wetVolume", "dryVolume"} & set(unknown.columns)
    assert "totalWetMass" not in standardize.totals(unknown)


def test_a_harvest_of_per_point_dry_masses_alone_is_cleaned_by_them():
    """Read as a harvest, a file of dry masses alone had no column to be cleaned by: a mass of 0 or -40 kg stayed in
    its total."""
    table = _table(4, dryMass=np.array([12.0, 0.0, -40.0, 11.0]))
    table.units["dryMass"] = "kg"
    cleaned, result = standardize.standardize(table)
    assert result.reasons == {"dryMass <= 0 or missing": 2}
    assert standardize.totals(cleaned)["totalDryMass"] == {"value": pytest.approx(23.0), "unit": "kg"}


def test_a_merge_of_rates_and_per_point_masses_counts_both():
    """The points of a file of per-point masses, merged with a file of yields per area, have masses and no rate:
    the total counted only the rates' points."""
    merged = _table(
        4,
        wetMassPerArea=np.array([5_000.0, 5_000.0, np.nan, np.nan]),
        area=np.array([100.0, 100.0, np.nan, np.nan]),
        wetMass=np.array([50.0, 50.0, 10.0, 10.0]),
    )
    merged.units["wetMass"] = "kg"
    assert standardize.totals(merged)["totalWetMass"] == {"value": pytest.approx(120.0), "unit": "kg"}


def test_a_rate_of_unknown_unit_makes_no_total():
    """It summed rate x hectares of a rate per acre or per hectare, who knows: "totalApplied" of no quantity."""
    table = _table(2, appliedRate=np.array([15.0, 15.0]), area=np.array([100.0, 100.0]))
    table.operation_type, table.units = "applied", {"appliedRate": "unknown"}
    totals = standardize.totals(standardize.derive(table))
    assert "totalApplied" not in totals and totals["totalArea"]["value"] == 200.0


def test_ounces_per_acre_of_jd_metadata_are_mass():
    """`ozm1ac-1` (ADAPT: ounce of mass) was taken as fluid ounces: L/ha, and 4.3 % off."""
    from conversion.readers.units import to_canonical

    unit, factor = to_canonical("ozm1ac-1")
    assert unit == "kg/ha" and factor == pytest.approx(0.028349523125 / 0.40468564224)
    assert to_canonical("floz1ac-1")[0] == "L/ha"


def test_an_imperial_value_past_the_float_range_stays_metric():
    """1.7e308 m is a float; in feet it is infinity, which no JSON holds: the imperial summary was a 500."""
    summary = {"properties": {"elevation": {"avg": 1.0, "min": 0.0, "max": 1.7e308, "unit": "m"}}}
    converted = standardize.summary_in_units(summary, {"elevation": "m"}, {"elevation": "ft"})
    assert converted["properties"]["elevation"] == summary["properties"]["elevation"]
    small = {"properties": {"elevation": {"avg": 3.048, "min": 0.0, "max": 30.48, "unit": "m"}}}
    assert standardize.summary_in_units(small, {"elevation": "m"}, {"elevation": "ft"})["properties"]["elevation"] == {
        "avg": pytest.approx(10.0),
        "min": 0.0,
        "max": pytest.approx(100.0),
        "unit": "ft",
    }


def test_crop_table_and_names():
    assert crop_standard("corn").standard_moisture == 15.5 and crop_standard("corn").bushel_weight_lb == 56
    assert {k: (v.standard_moisture, v.bushel_weight_lb) for k, v in CROP_STANDARDS.items()} == {
        "corn": (15.5, 56),
        "soybeans": (13, 60),
        "wheat": (13.5, 60),
        "barley": (14.5, 48),
        "sorghum": (14, 56),
        "oats": (14, 32),
        "canola": (10, 50),
    }
    assert normalize_crop_name(174) == "soybeans"
    assert normalize_crop_name("173") == "corn"
    assert normalize_crop_name("Mais") == "corn"
    assert normalize_crop_name("Winterweizen") == "wheat"
    assert normalize_crop_name("Wintergerste") == "barley"
    assert normalize_crop_name("CORN_WET") == "corn"
    assert normalize_crop_name("Lupine") == "Lupine"
    assert normalize_crop_name("Körnermais") == normalize_crop_name("Koernermais") == "corn"  # grain maize
    assert normalize_crop_name("Silomais") == "Silomais"  # silage: no grain standards apply
    # Silage in any spelling stays silage (it was corn, with grain dry values and bushels from silage)
    for silage in ("Corn Silage", "CORN_SILAGE", "Silo-Mais", "Maissilage", "Maize silage", "Mais (Silage)"):
        assert normalize_crop_name(silage) == silage and crop_standard(silage) is None, silage


def test_derive_area_dry_values_and_point_totals():
    table = _table(
        3,
        distance=np.array([2.0, 3.0, 4.0]),
        equipmentWidth=np.array([9.0, 9.0, 9.0]),
        wetMassPerArea=np.array([10_000.0, 12_000.0, 8_000.0]),
        harvestMoisture=np.array([20.0, 10.0, 15.5]),
    )
    derived = standardize.derive(table)
    np.testing.assert_allclose(derived.columns["area"], [18.0, 27.0, 36.0])
    np.testing.assert_allclose(derived.columns["dryMassPerArea"], [10_000 * 80 / 84.5, 12_000, 8_000])
    np.testing.assert_allclose(derived.columns["wetMass"], np.array([10_000, 12_000, 8_000]) * [18, 27, 36] / 1e4)
    bushel_kg = 56 * POUND_KG
    np.testing.assert_allclose(
        derived.columns["wetVolumePerArea"], derived.columns["wetMassPerArea"] / bushel_kg * BUSHEL_L
    )
    assert standardize.units(derived)["dryMass"] == "kg"


def test_derived_distance_heading_and_speed_start_again_after_a_pause():
    """Between points a second apart the distance covered; after more than 30 s without a point, a new pass: no
    distance or speed to that point (the machine did not drive the gap at the speed its points tell)."""
    from pyproj import Geod

    table = _table(
        3, timestamp=np.array(["2024-09-01T10:00:00", "2024-09-01T10:00:01", "2024-09-01T10:00:32"], "M8[ms]")
    )
    derived = standardize.derive(table)
    _, _, metres = Geod(ellps="WGS84").inv(10.0, 54.0, 10.00002, 54.0)
    assert derived.columns["distance"][1] == pytest.approx(metres, rel=5e-3)
    assert derived.columns["speed"][1] == pytest.approx(metres, rel=5e-3)  # in one second
    assert np.isnan(derived.columns["distance"][[0, 2]]).all() and np.isnan(derived.columns["speed"][[0, 2]]).all()


@pytest.mark.parametrize(
    ("dlon", "dlat", "heading"), [(0, 1e-4, 0.0), (1e-4, 0, 90.0), (0, -1e-4, 180.0), (-1e-4, 0, 270.0)]
)
def test_derived_heading_is_the_compass_bearing_of_travel(dlon, dlat, heading):
    table = _table(3, lon=10.0 + np.arange(3) * dlon, lat=54.0 + np.arange(3) * dlat)
    assert standardize.derive(table).columns["heading"][1:] == pytest.approx([heading, heading], abs=1e-3)


def test_a_point_that_did_not_move_has_no_heading():
    """The bearing of no move is no direction: geodesy answers 180 for it, which pulled a Topcon file's heading
    average from 63.8 to 142.2 degrees and its maximum to 180."""
    table = _table(4, lon=np.array([10.0, 10.0001, 10.0001, 10.0002]), lat=np.full(4, 54.0))
    heading = standardize.derive(table).columns["heading"]
    assert np.isnan(heading[2]) and heading[[1, 3]] == pytest.approx([90.0, 90.0], abs=1e-3)


def test_a_point_without_moisture_takes_the_mean_of_the_usable_ones():
    """A moisture of 0 is no reading (cleaning drops that point): it does not pull the mean down."""
    table = _table(
        3,
        distance=np.array([2.0, 2.0, 2.0]),
        equipmentWidth=np.full(3, 10.0),
        wetMassPerArea=np.full(3, 10_000.0),
        harvestMoisture=np.array([25.0, 0.0, np.nan]),
    )
    dry = standardize.derive(table).columns["dryMassPerArea"]
    assert dry[2] == pytest.approx(10_000 * (100 - 25) / (100 - 15.5))  # corn's standard moisture is 15.5 %


def test_a_missing_moisture_takes_the_area_weighted_mean():
    """Two points of 10 % and 20 % moisture covering 1 and 3 m2: a point without one takes 17.5 %, not 15 %."""
    filled, count = standardize.derived.moisture_filled(np.array([10.0, 20.0, np.nan]), np.array([1.0, 3.0, 1.0]))
    assert count == 1 and filled[2] == pytest.approx(17.5)
    filled, _ = standardize.derived.moisture_filled(np.array([10.0, 20.0, np.nan]), None)
    assert filled[2] == pytest.approx(15.0)  # without areas, the plain mean


def test_a_time_that_steps_back_starts_a_new_pass():
    """A clock set back (or rows out of order) gives no speed: the point is no continuation of the one before."""
    times = np.array(["2024-09-01T10:00:05", "2024-09-01T10:00:06", "2024-09-01T10:00:01"], "M8[ms]")
    derived = standardize.derive(_table(3, timestamp=times))
    assert np.isfinite(derived.columns["speed"][1]) and np.isfinite(derived.columns["distance"][1])
    assert np.isnan(derived.columns["speed"][2]) and np.isnan(derived.columns["distance"][2])


def test_per_section_rows_get_no_distance_or_speed_from_their_track():
    """Rows of one time step, one per section, lie side by side: the track between them is no travel."""
    table = _table(4, sectionId=np.array([1.0, 2.0, 1.0, 2.0]))
    derived = standardize.derive(table)
    assert "distance" not in derived.columns and "speed" not in derived.columns
    assert "heading" in derived.columns


def test_a_harvested_point_of_no_mass_is_cleaned_away():
    """A yield rate over no area (the machine stood still) is no harvest at that point."""
    table = _table(
        3,
        distance=np.array([1.0, 0.0, 1.0]),
        equipmentWidth=np.full(3, 10.0),
        wetMassPerArea=np.full(3, 5000.0),
        harvestMoisture=np.full(3, 20.0),
    )
    result = standardize.clean(standardize.derive(table))
    assert result.reasons == {"wetMass <= 0": 1} and len(result.table) == 2


def test_a_planting_is_cleaned_by_its_seed_rate_before_its_applied_rate():
    """A planter that also applies (fertiliser at planting): a point of no seeds is no planting, whatever it applied."""
    from dataclasses import replace

    table = replace(
        _table(2, seedRate=np.array([0.0, 80_000.0]), appliedRate=np.array([50.0, 50.0])),
        operation_type="planted",
        units={"seedRate": "seeds/ha", "appliedRate": "kg/ha"},
    )
    result = standardize.clean(table)
    assert result.reasons == {"seedRate <= 0 or missing": 1}
    assert list(result.table.columns["seedRate"]) == [80_000.0]


def test_a_planting_that_logs_no_rate_at_all_keeps_its_points_and_a_missing_rate_drops_one():
    """The rate rule judges the rates a file logs: a point missing one is dropped, a file logging none keeps its
    points (their coverage), as decisions.md says."""
    from dataclasses import replace

    no_rate = replace(_table(3, equipmentWidth=np.full(3, 6.0)), operation_type="planted", units={})
    assert (standardize.clean(no_rate).dropped, len(standardize.clean(no_rate).table)) == (0, 3)
    one_missing = replace(no_rate, columns=no_rate.columns | {"seedRate": np.array([80_000.0, np.nan, 80_000.0])})
    result = standardize.clean(one_missing)
    assert result.reasons == {"seedRate <= 0 or missing": 1} and len(result.table) == 2


@pytest.mark.parametrize(
    ("given", "area", "planted", "warned"),
    [
        # Every width negative: no point has an area, so there is no total of it (they were -100 m2, -800 seeds,
        # then 0 m2 and 0 seeds, which a file without a width does not claim either)
        (
            {"equipmentWidth": np.full(5, -10.0), "distance": np.full(5, 2.0)},
            None,
            None,
            "5 points with a negative equipmentWidth: taken as unknown",
        ),
        (
            {"area": np.array([-50.0, 20.0, 20.0, 20.0, 20.0])},
            80.0,
            80_000 * 80 / 10_000,
            "1 points with a negative area: taken as unknown",
        ),
        (
            {"equipmentWidth": np.full(5, 10.0), "distance": np.array([2.0, 2.0, -2.0, 2.0, 2.0])},
            80.0,
            640.0,
            "1 points with a negative distance: taken as unknown",
        ),
    ],
)
def test_a_negative_width_distance_or_area_is_unknown_with_a_warning(given, area, planted, warned):
    from dataclasses import replace

    table = replace(
        _table(5, seedRate=np.full(5, 80_000.0), **given),
        operation_type="planted",
        units={"seedRate": "seeds/ha", "equipmentWidth": "m", "distance": "m", "area": "m2"},
    )
    derived = standardize.derive(table)
    assert derived.warnings == [warned]
    totals = standardize.totals(derived)
    if area is None:
        assert "totalArea" not in totals and "totalPlanted" not in totals
        assert totals["totalDistance"]["value"] == pytest.approx(10.0)
    else:
        assert totals["totalArea"] == {"value": pytest.approx(area), "unit": "m2"}
        assert totals["totalPlanted"]["value"] == pytest.approx(planted)
    # The points stay, with their rates: only what the width, distance or area gave is unknown
    assert len(standardize.clean(derived).table) == 5


def test_cleaning_counts_each_rule():
    table = _table(
        8,
        wetMassPerArea=np.array([5000.0, 0.0, -1.0, np.nan, 5000.0, 5000.0, 5000.0, 5000.0]),
        harvestMoisture=np.array([20.0, 20.0, 20.0, 20.0, 0.0, 100.0, 20.0, 20.0]),
        recordingStatus=np.array([1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 0.0, np.nan]),
    )
    result = standardize.clean(table)
    assert result.dropped == 6
    assert result.reasons == {
        "recordingStatus Off": 1,
        "moisture outside (0, 100)": 2,
        "wetMassPerArea <= 0 or missing": 3,
    }
    assert len(result.table) == 2
    np.testing.assert_array_equal(result.table.columns["wetMassPerArea"], [5000.0, 5000.0])


def test_totals_are_rate_times_area_never_sum_of_rates():
    rates = np.array([10_000.0, 2_000.0])
    areas = np.array([100.0, 1.0])
    table = _table(2, wetMassPerArea=rates, area=areas)
    totals = standardize.totals(standardize.derive(table))
    # 10 t/ha on 100 m2 + 2 t/ha on 1 m2 = 100.2 kg; summing rates would say 12,000.
    assert totals["totalWetMass"] == {"value": pytest.approx(100.2), "unit": "kg"}
    assert totals["totalArea"] == {"value": 101.0, "unit": "m2"}


@pytest.mark.parametrize(
    "computed, recorded, warned",
    [
        ({"value": 5.79, "unit": "L"}, {"value": 635.0, "unit": "L"}, "its points give 5.79 L (110 times less)"),
        ({"value": 18.3, "unit": "kg"}, {"value": 3.0, "unit": "kg"}, "its points give 18.3 kg (6.1 times more)"),
        ({"value": -5.0, "unit": "kg"}, {"value": 5.0, "unit": "kg"}, "records 5 kg, its points give -5 kg;"),
        ({"value": 0.0, "unit": "m2"}, {"value": 156_493.0, "unit": "m2"}, "records 156,493 m2, its points give 0 m2;"),
        ({"value": 60.0, "unit": "kg"}, {"value": 100.0, "unit": "kg"}, None),  # cleaning dropped 40 %: no warning
        ({"value": 100.0, "unit": "kg"}, {"value": 199.0, "unit": "kg"}, None),
        ({"value": 5.0, "unit": "L"}, {"value": 635.0, "unit": "kg"}, None),  # other units: not the same total
        ({"value": 0.0, "unit": "L"}, {"value": 0.0, "unit": "L"}, None),
    ],
)
def test_a_recorded_total_far_from_the_points_total_is_a_warning(computed, recorded, warned):
    properties = {"totalApplied": computed, "recordedTotals": {"totalApplied": recorded}}
    warnings = standardize.totals_disagreements(properties)
    if warned is None:
        assert warnings == []
    else:
        [warning] = warnings
        assert warning.startswith("totalApplied: the file records ") and warned in warning
    assert standardize.totals_disagreements({"totalApplied": computed}) == []  # nothing recorded, nothing to compare


def test_the_summarys_times_are_its_earliest_and_latest_whatever_the_order_of_its_points():
    """GeoJSON features and shapefile rows come as written: the first point is not always the earliest."""
    times = ["2024-09-01T10:00:02", "2024-09-01T10:00:00", "2024-09-01T10:00:03", "2024-09-01T10:00:01"]
    table = _table(4, timestamp=np.array(times, dtype="datetime64[ms]"), wetMassPerArea=np.full(4, 9000.0))
    props = standardize.summary(standardize.derive(table))["properties"]
    assert (props["startTime"], props["endTime"]) == ("2024-09-01T10:00:00.000Z", "2024-09-01T10:00:03.000Z")


def test_summary_shape_units_and_area_weighted_average():
    table = _table(
        6,
        distance=np.full(6, 2.0),
        equipmentWidth=np.array([9.0, 9.0, 9.0, 9.0, 9.0, 18.0]),
        wetMassPerArea=np.array([1000.0, 1000.0, 1000.0, 1000.0, 1000.0, 4000.0]),
        harvestMoisture=np.full(6, 18.0),
    )
    feature = standardize.summary(standardize.derive(table))
    assert feature["type"] == "Feature"
    assert feature["geometry"]["type"] == "MultiPolygon"
    props = feature["properties"]
    # Area weights: five points of 18 m2 at 1 t/ha and one of 36 m2 at 4 t/ha -> (5*18*1000 + 36*4000) / 126.
    assert props["wetMassPerArea"] == {
        "avg": pytest.approx((5 * 18 * 1000 + 36 * 4000) / 126),
        "min": 1000.0,
        "max": 4000.0,
        "unit": "kg/ha",
    }
    assert props["operationType"] == "harvested"
    assert ISO_MS_Z.match(props["startTime"]) and props["startTime"] == "2024-09-01T10:00:00.000Z"
    assert props["endTime"] == "2024-09-01T10:00:05.000Z"
    assert props["crop"] == ["corn"]
    assert props["machinery"] == [{"kind": "machine", "name": "Combine 1", "serialNumber": "123"}]
    for key in ("totalArea", "totalDistance", "totalWetMass", "totalDryMass", "totalWetVolume", "totalDryVolume"):
        assert set(props[key]) == {"value", "unit"}, key


def test_streamed_geojson_parses_back(tmp_path):
    table = _table(
        5,
        wetMassPerArea=np.array([1.5, np.nan, 3.0, 4.0, 5.0]),
        recordingStatus=np.array([1.0, 0.0, 1.0, np.nan, 1.0]),
    )
    text = io.StringIO()
    assert standardize.write_standard_geojson(table, text, chunk=2) == 5
    doc = json.loads(text.getvalue())
    assert doc["type"] == "FeatureCollection" and len(doc["features"]) == 5
    first, second = doc["features"][0], doc["features"][1]
    assert first["geometry"] == {"type": "Point", "coordinates": [10.0, 54.0]}
    assert first["properties"]["timestamp"] == "2024-09-01T10:00:00.000Z"
    assert first["properties"]["recordingStatus"] == "On" and second["properties"]["recordingStatus"] == "Off"
    assert "wetMassPerArea" not in second["properties"]  # NaN is left out, never written as NaN
    assert first["properties"]["operationType"] == "harvested" and first["properties"]["crop"] == "corn"

    binary = io.BytesIO()
    standardize.write_raw_geojson(table, binary)
    assert len(json.loads(binary.getvalue())["features"]) == 5


@pytest.fixture(scope="module")
def jd_harvest(samples_dir, tmp_path_factory):
    from conversion.archive import detect, safe_extract

    dest = tmp_path_factory.mktemp("jd")
    safe_extract(samples_dir / "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Harvest.zip", dest)
    [dataset] = detect(dest).datasets
    [table] = get_reader("SHAPEFILE").read(dataset)
    return table


def test_real_harvest_standardized_totals_match_point_sums(jd_harvest):
    cleaned, report = standardize.standardize(jd_harvest)
    assert report.dropped == len(jd_harvest) - len(cleaned)
    assert sum(report.reasons.values()) == report.dropped
    props = standardize.summary(cleaned)["properties"]
    cols = cleaned.columns
    # Independent sums over the cleaned points, in plain Python.
    area = [d * w for d, w in zip(cols["distance"].tolist(), cols["equipmentWidth"].tolist(), strict=True)]
    wet = sum(r * a / 1e4 for r, a in zip(cols["wetMassPerArea"].tolist(), area, strict=True))
    assert props["totalArea"]["value"] == pytest.approx(sum(area), rel=1e-12)
    assert props["totalWetMass"]["value"] == pytest.approx(wet, rel=1e-12)
    assert props["pointCount"] == len(cleaned)
    assert standardize.units(cleaned, imperial=True)["dryVolumePerArea"] == "bu/ac"


def test_coverage_holds_the_points(jd_harvest):
    geom = shape(standardize.coverage(jd_harvest))
    points = shapely.points(jd_harvest.columns["lon"], jd_harvest.columns["lat"])
    inside = shapely.contains(geom.buffer(1e-6), points)
    assert inside.mean() > 0.99


def test_isoxml_pipeline_total_close_to_the_recorded_task_total(samples_dir):
    folder = samples_dir / "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata/TimeLogs/ValidTimeLogs"
    tables = get_reader("ISOXML").read(Dataset("ISOXML", folder / "TASKDATA.XML", folder, "ValidTimeLogs"))
    table = next(t for t in tables if t.name == "SAV")
    props = standardize.summary(standardize.derive(table))["properties"]
    recorded = props["recordedTotals"]["totalWetMass"]
    assert recorded == {"value": 259605.0, "unit": "kg"}
    # Rate x (track distance x logged width), before cleaning, estimates what the machine's own counter summed:
    # within a few percent, which also proves the DDI units and resolutions.
    assert props["totalWetMass"]["value"] == pytest.approx(recorded["value"], rel=0.05)


@pytest.mark.parametrize(
    ("name", "crop"),
    [
        ("Soja", "soybeans"),
        ("Maize", "corn"),
        ("Dinkel", "wheat"),
        ("Orge", "barley"),
        ("Milo", "sorghum"),
        ("Avoine", "oats"),
        ("Hafer", "oats"),
        ("Raps", "canola"),
        ("Rapeseed", "canola"),
        ("Colza", "canola"),
        ("Durum", "wheat"),
        ("Gerste", "barley"),
        ("Weizen", "wheat"),
    ],
)
def test_crop_names_in_other_languages_and_trade_names_are_the_crop(name, crop):
    assert normalize_crop_name(name) == crop


def test_an_unknown_crop_id_keeps_its_digits():
    assert normalize_crop_name("999999") == "999999" and normalize_crop_name(999999) == "999999"


def test_the_point_store_gives_back_missing_texts_as_missing_and_the_raw_units():
    """A point without a crop is stored and read back without one, not with an empty name; raw columns keep units."""
    import io

    from conversion.pointstore import table_load, table_save

    table = _table(2, crop=np.array([None, "corn"], dtype=object))
    table.raw_columns = {"Elev": np.array([1.0, 2.0])}
    table.raw_units = {"Elev": "ft"}
    stored = io.BytesIO()
    table_save(table, stored)
    stored.seek(0)
    back = table_load(stored)
    assert back.columns["crop"].tolist() == [None, "corn"]
    assert back.raw_units == {"Elev": "ft"} and back.raw_columns["Elev"].tolist() == [1.0, 2.0]


def test_steps_that_go_back_in_time_are_said_they_add_no_distance():
    """A log whose clock ran backwards had no distance at all, so no area and no totals (they read 0), and nothing
    said why."""
    backwards = np.datetime64("2024-09-01T10:00:00", "ms") - np.arange(6) * np.timedelta64(1000, "ms")
    table = _table(6, timestamp=backwards, wetMassPerArea=np.full(6, 5000.0), equipmentWidth=np.full(6, 9.0))
    derived = standardize.derive(table)
    assert np.isnan(derived.columns["distance"]).all()
    assert derived.warnings == [
        "5 of 5 steps between points go back in time (a clock set back, or points out of order): they add no "
        "distance, speed or area"
    ]
    assert "totalArea" not in standardize.totals(derived)
    # One step back in an otherwise good log: said for that step alone; a good log says nothing
    one_back = _table(6).columns["timestamp"].copy()
    one_back[3] = one_back[1]
    assert standardize.derive(_table(6, timestamp=one_back)).warnings[0].startswith("1 of 5 steps")
    assert standardize.derive(_table(6)).warnings == []


def test_a_constant_rates_average_is_that_rate():
    """The area-weighted mean of one rate logged throughout came out a rounding off it, outside the summary's own
    min and max (a planter's 428580 seeds/ha target: avg 428579.99999999994)."""
    weights = np.array([15.403, 28.519, 4.41, 28.465, 9.424, 12.757, 24.848])
    table = _table(7, seedRateTarget=np.full(7, 428580.0), area=weights)
    assert standardize.summary(table)["properties"]["seedRateTarget"] | {"unit": None} == {
        "avg": 428580.0,
        "min": 428580.0,
        "max": 428580.0,
        "unit": None,
    }


@pytest.mark.parametrize("year", ["0001", "1500", "2500", "9999"])
def test_a_files_start_and_end_are_its_points_times_to_the_millisecond_in_any_year(year):
    """A file's `startTime`/`endTime` (`outputs.to_datetime`) went through float seconds: far from 1970 a quarter of
    the milliseconds came out one or two off (12:34:56.001 as 56.000), so a `startTime` filter of the summary's time
    missed the file."""
    from conversion.outputs import to_datetime

    second = np.datetime64(f"{year}-06-15T12:34:56", "ms") + np.arange(1000).astype("timedelta64[ms]")
    written = [to_datetime(stamp).isoformat(timespec="milliseconds") for stamp in second]
    assert written == [f"{stamp}+00:00" for stamp in np.datetime_as_string(second, unit="ms")]
