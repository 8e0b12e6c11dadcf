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
    bushel_kg = 56 * 0.45359237
    np.testing.assert_allclose(
        derived.columns["wetVolumePerArea"], derived.columns["wetMassPerArea"] / bushel_kg * 35.23907016688
    )
    assert standardize.units(derived)["dryMass"] == "kg"


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
