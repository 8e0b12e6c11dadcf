"""GeoJSON points named as an exporter names its columns (a John Deere shapefile export's records written as GeoJSON)
are read with the shapefile reader's column rules: JD's units, and the time from IsoTime. Only our own spelling of a
standard name is taken as standard, in metric units."""

import json
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
import shapefile

from conversion import standardize
from conversion.readers import Dataset, get_reader
from tests.units import BUSHEL_L, GALLON_L

pytestmark = pytest.mark.embedded

JD_HARVEST = "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Harvest.zip"
FT = 0.3048
LB = 0.45359237
ACRE_FT2 = 43_560.0


@pytest.fixture(scope="module")
def jd_points(extracted) -> list[tuple[list[float], dict]]:
    """The JD harvest export's points as pyshp reads them: (lon, lat) and the DBF record."""
    [shp] = extracted(JD_HARVEST).rglob("*.shp")
    with shapefile.Reader(str(shp)) as reader:
        return [
            (shape.points[0][:2], record.as_dict())
            for shape, record in zip(reader.shapes(), reader.records(), strict=True)
        ]


def _geojson(path: Path, points: list[tuple[list[float], dict]]):
    features = [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": list(xy)}, "properties": props}
        for xy, props in points
    ]
    path.write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    [table] = get_reader("GEOJSON").read(Dataset("GEOJSON", path, path.parent, path.stem))
    return table


def test_jd_export_as_geojson_gives_the_exports_own_totals_and_times(tmp_path, jd_points):
    # Given the JD harvest export's records written as GeoJSON points (DISTANCE, SWATHWIDTH, WetMass, Elevation,
    # Time, IsoTime... as the export names them)
    table = _geojson(tmp_path / "harvest.geojson", jd_points)
    records = [record for _xy, record in jd_points]

    props = standardize.summary(standardize.derive(table))["properties"]

    # Then the totals are the export's own, in JD's units (FORMATS.md 5.1): point area = DISTANCE x SWATHWIDTH ft2,
    # wet mass = WetMass lb/ac x area, dry volume = VRYIELDVOL bu/ac x area.
    acres = [r["DISTANCE"] * r["SWATHWIDTH"] / ACRE_FT2 for r in records]
    assert props["totalArea"]["value"] == pytest.approx(sum(acres) * ACRE_FT2 * FT**2, rel=1e-9)
    wet_kg = sum(r["WetMass"] * a for r, a in zip(records, acres, strict=True)) * LB
    assert props["totalWetMass"] == {"value": pytest.approx(wet_kg, rel=1e-9), "unit": "kg"}
    dry_l = sum(r["VRYIELDVOL"] * a for r, a in zip(records, acres, strict=True)) * BUSHEL_L
    assert props["totalDryVolume"] == {"value": pytest.approx(dry_l, rel=1e-9), "unit": "L"}
    # And each point has the time its IsoTime (UTC) says, and its elevation in metres from feet
    iso = [np.datetime64(datetime.fromisoformat(r["IsoTime"].replace("Z", "")), "ms") for r in records]
    np.testing.assert_array_equal(table.columns["timestamp"], iso)
    np.testing.assert_allclose(table.columns["elevation"], [r["Elevation"] * FT for r in records], rtol=1e-12)


def test_jd_export_as_geojson_reads_as_the_shapefile_does(tmp_path, jd_points, extracted):
    [shp] = extracted(JD_HARVEST).rglob("*.shp")
    [from_shapefile] = get_reader("SHAPEFILE").read(Dataset("SHAPEFILE", shp, shp.parent, shp.stem))
    from_geojson = _geojson(tmp_path / "harvest.geojson", jd_points)

    from_both = [standardize.summary(standardize.derive(t))["properties"] for t in (from_shapefile, from_geojson)]

    for total in ("totalArea", "totalDistance", "totalWetMass", "totalDryMass", "totalWetVolume", "totalDryVolume"):
        assert from_both[1][total]["value"] == pytest.approx(from_both[0][total]["value"], rel=1e-9), total
    assert (from_both[1]["startTime"], from_both[1]["endTime"]) == (from_both[0]["startTime"], from_both[0]["endTime"])


def _point(i: int, **props) -> tuple[list[float], dict]:
    return [-93.0 + i * 1e-5, 41.0], props


def test_our_own_spelling_is_metric_and_an_exporters_is_its_unit(tmp_path):
    table = _geojson(
        tmp_path / "names.geojson",
        [_point(0, distance=2.0, equipmentWidth=10.0, wetMassPerArea=5000.0, elevation=300.0)],
    )
    exported = _geojson(
        tmp_path / "jd.geojson", [_point(0, DISTANCE=2.0, SWATHWIDTH=10.0, WetMass=5000.0, Elevation=300.0)]
    )

    given = {"distance": 2.0, "equipmentWidth": 10.0, "wetMassPerArea": 5000.0, "elevation": 300.0}
    assert {p: table.columns[p][0] for p in given} == given
    assert [exported.columns[p][0] for p in ("distance", "equipmentWidth", "elevation")] == pytest.approx(
        [2.0 * FT, 10.0 * FT, 300.0 * FT]
    )
    # lb/ac to kg/ha: x 0.45359237 kg / 0.40468564 ha
    assert exported.columns["wetMassPerArea"][0] == pytest.approx(5000.0 * LB / (ACRE_FT2 * FT**2 / 1e4))


def test_utc_iso_time_is_taken_before_a_local_time_text(tmp_path):
    # Given a local `Time` text five hours off UTC, named before the IsoTime
    points = [_point(0, Time="9/19/2016 11:45:10 AM", IsoTime="2016-09-19T16:45:10.250Z", WetMass=1.0)]
    table = _geojson(tmp_path / "jd.geojson", points)

    assert table.columns["timestamp"].tolist() == [datetime(2016, 9, 19, 16, 45, 10, 250_000)]


def test_a_time_text_alone_is_read_as_the_shapefile_reader_reads_it(tmp_path):
    table = _geojson(tmp_path / "jd.geojson", [_point(0, Time="9/19/2016 4:45:10 PM", WetMass=1.0)])

    assert table.columns["timestamp"].tolist() == [datetime(2016, 9, 19, 16, 45, 10)]


JD_SEEDING = "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Seeding.zip"
JD_APPLICATION = "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Application.zip"
GAL_AC_IN_L_HA = GALLON_L / (ACRE_FT2 * FT**2 / 1e4)
LB_AC_IN_KG_HA = LB / (ACRE_FT2 * FT**2 / 1e4)
SEEDS_AC_IN_SEEDS_HA = 1e4 / (ACRE_FT2 * FT**2)
MPH_IN_M_S = 5280 * FT / 3600


def _records_of(extracted, relative: str) -> list[list[tuple[list[float], dict]]]:
    """Each shapefile of a sample zip as its points: (lon, lat) and the DBF record, as pyshp reads them."""
    out = []
    for shp in sorted(extracted(relative).rglob("*.shp")):
        with shapefile.Reader(str(shp)) as reader:
            out.append([(s.points[0][:2], r.as_dict()) for s, r in zip(reader.shapes(), reader.records(), strict=True)])
    return out


@pytest.mark.parametrize(
    ("name", "prop", "unit", "factor"),
    [
        ("Rt_Apd_gal_ac", "appliedRate", "L/ha", GAL_AC_IN_L_HA),
        ("Rt_Apd_lb_ac", "appliedRate", "kg/ha", LB_AC_IN_KG_HA),
        ("Tgt_Rate_lb_ac", "appliedRateTarget", "kg/ha", LB_AC_IN_KG_HA),
        ("TrgtRt_lb", "appliedRateTarget", "kg/ha", LB_AC_IN_KG_HA),
        ("AppliedRate_kg_ha", "appliedRate", "kg/ha", 1.0),
        ("AppliedRate_L_ha", "appliedRate", "L/ha", 1.0),
        ("AppliedRate (gal/ac)", "appliedRate", "L/ha", GAL_AC_IN_L_HA),
        ("Applied Rate (lb/ac)", "appliedRate", "kg/ha", LB_AC_IN_KG_HA),
        ("TargetRate [kg/ha]", "appliedRateTarget", "kg/ha", 1.0),
        ("AppliedRate seeds/ac", "seedRate", "seeds/ha", SEEDS_AC_IN_SEEDS_HA),
        ("Rt_Apd_sds_ac", "seedRate", "seeds/ha", SEEDS_AC_IN_SEEDS_HA),
        ("Rt_Apd_ksds", "seedRate", "seeds/ha", 1000 * SEEDS_AC_IN_SEEDS_HA),
        ("Rt_Apd_sds", "seedRate", "seeds/ha", SEEDS_AC_IN_SEEDS_HA),  # seeds, not thousands (as `ksds`)
    ],
)
def test_a_rate_whose_name_says_its_unit_is_in_that_unit(tmp_path, name, prop, unit, factor):
    # Given a rate column whose name ends in its unit, as SMS names them (`Rt_Apd_gal_ac`) or written out
    table = _geojson(tmp_path / "rate.geojson", [_point(0, **{name: 12.5, "Speed_mph_": 5.0})])

    # Then the units map gives that unit (in canonical metric) and the value is converted into it, as the shapefile
    # reader does for the same names
    assert standardize.units(table)[prop] == unit
    assert table.columns[prop][0] == pytest.approx(12.5 * factor, rel=1e-12)
    # And a seed rate makes the operation a planting, as in a shapefile
    if prop == "seedRate":
        assert table.operation_type == "planted"


@pytest.mark.parametrize(
    ("name", "prop", "unit", "factor", "source"),
    [
        ("Crop_Flw_M", "cropFlow", "kg/s", LB, "lb/s"),  # SMS's crop flow (FORMATS.md 5.2)
        ("spd_mp_", "speed", "m/s", MPH_IN_M_S, "mph"),  # a re-export's abbreviated Speed_mph_
        ("SPEED", "speed", "m/s", MPH_IN_M_S, "mph"),
    ],
)
def test_an_exporters_column_without_a_unit_in_its_name_is_in_the_exporters_unit(
    tmp_path, name, prop, unit, factor, source
):
    table = _geojson(tmp_path / "plain.geojson", [_point(0, Yld_Mass_W=3009.5, **{name: 19.39})])
    assert table.columns[prop][0] == pytest.approx(19.39 * factor, rel=1e-12)
    assert (table.units[prop], table.source_units[prop]) == (unit, source)


def test_jd_seeding_as_geojson_that_says_planted_has_seed_rates_in_seeds_per_acre(tmp_path, extracted):
    # Given the JD seeding export's records as GeoJSON points of a planting (JD writes seeding rates in seeds1ac-1,
    # FORMATS.md 5.1), and the same export read as a shapefile (its metadata names the unit)
    [points] = _records_of(extracted, JD_SEEDING)
    table = _geojson(tmp_path / "seeding.geojson", [(xy, {**r, "operationType": "planted"}) for xy, r in points])
    [shp] = extracted(JD_SEEDING).rglob("*.shp")
    [from_shapefile] = get_reader("SHAPEFILE").read(Dataset("SHAPEFILE", shp, shp.parent, shp.stem))

    # Then the rates are seed rates in seeds/ha, as the shapefile reader reads them
    assert standardize.units(table)["seedRate"] == standardize.units(from_shapefile)["seedRate"] == "seeds/ha"
    assert standardize.units(table)["seedRateTarget"] == "seeds/ha"
    assert standardize.units(table, imperial=True)["seedRate"] == "seeds/ac"
    # And the seeds planted are the export's own: AppliedRat seeds/ac x DISTANCE x SWATHWIDTH ft2
    seeds = sum(r["AppliedRat"] * r["DISTANCE"] * r["SWATHWIDTH"] / ACRE_FT2 for _xy, r in points)
    props = standardize.summary(standardize.derive(table))["properties"]
    assert props["totalPlanted"] == {"value": pytest.approx(seeds, rel=1e-9), "unit": "seeds"}


def test_a_rate_whose_unit_nothing_states_stays_unknown(tmp_path, extracted):
    # Given JD application records as GeoJSON (AppliedRat is gal/ac or lb/ac by product; only the metadata sidecar of
    # the shapefile says which), and rates whose names state no unit
    jd_tables = [_geojson(tmp_path / f"{i}.geojson", p) for i, p in enumerate(_records_of(extracted, JD_APPLICATION))]
    unnamed = [
        _geojson(tmp_path / "sms.geojson", [_point(0, **{"Rt Apd Ms Wet": 150.0, "Tgt_Rate_k": 140.0})]),
        _geojson(tmp_path / "jd.geojson", [_point(0, AppliedRate=150.0, TargetRate=140.0)]),
    ]

    # Then their unit is unknown and the values are kept as the file gives them
    for table in [*jd_tables, *unnamed]:
        assert table.operation_type == "applied"
        assert {p: standardize.units(table)[p] for p in ("appliedRate", "appliedRateTarget")} == {
            "appliedRate": "unknown",
            "appliedRateTarget": "unknown",
        }
    assert [unnamed[0].columns[p][0] for p in ("appliedRate", "appliedRateTarget")] == [150.0, 140.0]
    # And the file's warnings say so, as a shapefile's do (its points have no time either)
    assert unnamed[0].warnings == [
        "Rt Apd Ms Wet: no unit in the file; the value is kept as it is",
        "Tgt_Rate_k: no unit in the file; the value is kept as it is",
        "no time column; points have no timestamp",
    ]


def test_times_that_cannot_be_read_are_warned_of(tmp_path):
    # Epoch seconds are no time the supplement names (`timestamp` is ISO 8601): the points had none, and no word why
    epoch = _geojson(
        tmp_path / "epoch.geojson", [_point(i, timestamp=1633089600 + i, appliedRate=1.0) for i in range(3)]
    )
    assert np.isnat(epoch.columns["timestamp"]).all()
    assert epoch.warnings[-1] == (
        "timestamp: no value is a time (ISO 8601, or as the exporters write it); points have no timestamp"
    )
    some = _geojson(
        tmp_path / "some.geojson",
        [_point(0, timestamp="2024-09-01T10:00:00Z"), _point(1, timestamp="soon"), _point(2, timestamp=None)],
    )
    assert np.isnat(some.columns["timestamp"]).tolist() == [False, True, True]
    assert some.warnings[-1] == "timestamp: 2 of 3 values are no time; those points have no timestamp"
    # Every point with a time: nothing to say
    fine = _geojson(tmp_path / "fine.geojson", [_point(i, timestamp=f"2024-09-01T10:00:0{i}Z") for i in range(3)])
    assert fine.warnings == []
