"""GeoJSON reader and detection of GeoJSON data sets."""

import codecs
import json

import numpy as np
import pytest

from conversion.archive import detect
from conversion.readers import Dataset, UnreadableDataset, get_reader
from tests.units import LB_AC_IN_KG_HA


def _collection(features: list[dict]) -> dict:
    return {"type": "FeatureCollection", "features": features}


def _point(lon, lat, **props) -> dict:
    return {"type": "Feature", "geometry": {"type": "Point", "coordinates": [lon, lat]}, "properties": props}


def test_standard_property_names_are_read_as_canonical(tmp_path):
    features = [
        _point(10.0, 54.0, timestamp="2024-05-01T10:00:00.000Z", seedRate=80000.0, crop="Mais", recordingStatus="On"),
        _point(
            10.001, 54.0, timestamp="2024-05-01T10:00:01.500Z", seedRate=82000.0, crop="Mais", recordingStatus="Off"
        ),
    ]
    (tmp_path / "planting.geojson").write_text(json.dumps(_collection(features)))
    [dataset] = detect(tmp_path).datasets
    assert dataset.format == "GEOJSON"
    [table] = get_reader("GEOJSON").read(dataset)
    assert table.operation_type == "planted"
    assert table.crops == ["corn"]
    np.testing.assert_array_equal(table.columns["seedRate"], [80000.0, 82000.0])
    assert table.units["seedRate"] == "seeds/ha"
    np.testing.assert_array_equal(table.columns["recordingStatus"], [1.0, 0.0])
    assert table.end - table.start == np.timedelta64(1500, "ms")


def test_sms_names_in_geojson_are_converted(tmp_path):
    features = [_point(-93.0, 41.0, Yld_Mass_W=3000.0, Moisture=18.0, Speed_mph_=5.0)]
    (tmp_path / "yield.json").write_text(json.dumps(_collection(features)))
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    assert table.operation_type == "harvested"
    assert table.columns["wetMassPerArea"][0] == pytest.approx(3000 * LB_AC_IN_KG_HA)
    assert table.columns["speed"][0] == pytest.approx(5 * 0.44704)


def test_a_standard_property_wins_over_an_exporter_column_of_the_same_measure(tmp_path):
    """wetMassPerArea (kg/ha, the standard's own name) and an exporter's Yld_Mass_W (lb/ac) in one point: the
    standard one is read as it is, not replaced by the other converted."""
    features = [_point(-93.0, 41.0, wetMassPerArea=5000.0, Yld_Mass_W=4000.0, harvestMoisture=18.0)]
    (tmp_path / "yield.geojson").write_text(json.dumps(_collection(features)))
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    assert table.columns["wetMassPerArea"][0] == 5000.0 and table.units["wetMassPerArea"] == "kg/ha"


def test_a_time_column_of_no_times_gives_way_to_one_that_has_them(tmp_path):
    features = [
        _point(10.0 + i * 1e-4, 54.0, timestamp="n/a", IsoTime=f"2024-05-01T10:00:0{i}Z", seedRate=80000.0)
        for i in range(3)
    ]
    (tmp_path / "planting.geojson").write_text(json.dumps(_collection(features)))
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    assert table.columns["timestamp"].astype("datetime64[s]").astype(str).tolist() == [
        f"2024-05-01T10:00:0{i}" for i in range(3)
    ]


@pytest.mark.parametrize(
    "encode",
    [
        lambda text: text.encode("utf-16"),  # with its BOM: Windows' "Unicode"
        lambda text: codecs.BOM_UTF16_BE + text.encode("utf-16-be"),
        lambda text: text.encode("utf-32"),
        lambda text: codecs.BOM_UTF8 + text.encode("utf-8"),
    ],
    ids=["utf-16", "utf-16-be", "utf-32", "utf-8-bom"],
)
def test_a_collection_in_utf16_or_utf32_is_found_and_read(tmp_path, encode):
    """Detection matched bytes that UTF-16's NULs interleave: the batch failed "No ISOXML, shapefile or GeoJSON
    point data set", or the file was dropped from a mixed upload unsaid."""
    features = [_point(10.0 + i * 1e-4, 54.0, seedRate=80000.0 + i, variety="Säule") for i in range(3)]
    (tmp_path / "planting.geojson").write_bytes(encode(json.dumps(_collection(features), ensure_ascii=False)))
    [dataset] = detect(tmp_path).datasets
    assert dataset.format == "GEOJSON"
    [table] = get_reader("GEOJSON").read(dataset)
    np.testing.assert_array_equal(table.columns["seedRate"], [80000.0, 80001.0, 80002.0])
    np.testing.assert_array_equal(table.columns["lon"], [10.0, 10.0001, 10.0002])
    assert table.varieties == ["Säule"]


def test_non_point_collections_and_jd_sidecars_are_not_data_sets(tmp_path):
    polygon = {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}}
    (tmp_path / "field.geojson").write_text(json.dumps(_collection([polygon])))
    (tmp_path / "Farm-Field-Corn-Deere-Metadata.json").write_text(json.dumps({"Operation": "Harvest"}))
    (tmp_path / "other.json").write_text(json.dumps({"hello": "world"}))
    assert detect(tmp_path).datasets == []


def test_collection_without_points_is_unreadable(tmp_path):
    path = tmp_path / "empty.geojson"
    path.write_text(json.dumps(_collection([])))

    with pytest.raises(UnreadableDataset, match="no Point features"):
        get_reader("GEOJSON").read(Dataset("GEOJSON", path, tmp_path, "empty"))


def test_a_property_that_only_contains_a_rates_name_is_not_that_rate(tmp_path):
    features = [_point(-93.0 + i * 1e-4, 41.0, MaxAppliedRate=90.0, Yld_Mass_W=3000.0) for i in range(2)]
    (tmp_path / "yield.geojson").write_text(json.dumps(_collection(features)))
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    assert "appliedRate" not in table.columns and table.operation_type == "harvested"


def test_numbers_written_as_text_are_read_as_numbers(tmp_path):
    """An exporter that writes every property as a string: a moisture of "20" was dropped without a word, and with
    it every dry value. Text that is no plain number stays a missing value; the raw column keeps the text."""
    features = [
        _point(-93.0, 41.0, wetMassPerArea="5000", harvestMoisture="20", Moisture_2=" 18.5 ", crop="Corn"),
        _point(-93.0001, 41.0, wetMassPerArea="4.8e3", harvestMoisture="n/a", crop="Corn"),
        _point(-93.0002, 41.0, wetMassPerArea=5200, harvestMoisture="1_0", crop="Corn"),
    ]
    (tmp_path / "yield.geojson").write_text(json.dumps(_collection(features)))
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    np.testing.assert_array_equal(table.columns["wetMassPerArea"], [5000.0, 4800.0, 5200.0])
    np.testing.assert_array_equal(table.columns["harvestMoisture"], [20.0, np.nan, np.nan])
    assert table.raw_columns["harvestMoisture"].tolist() == ["20", "n/a", "1_0"]


def test_features_that_are_no_points_are_left_out_with_a_warning(tmp_path):
    polygon = {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}
    features = [
        _point(10.0, 54.0, appliedRate=3.0),
        {"type": "Feature", "geometry": polygon, "properties": {}},
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [1]}, "properties": {}},
        {"type": "Feature", "geometry": None, "properties": {}},
        _point(10.0001, 54.0, appliedRate=3.0),
        # Entries that are no feature object at all: they vanished unsaid
        "junk",
        None,
        42,
        [1, 2],
    ]
    (tmp_path / "rate.geojson").write_text(json.dumps(_collection(features)))
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    assert len(table.columns["lon"]) == 2
    assert (
        "7 features left out: not a Point (or MultiPoint) with two coordinates (lines, polygons, a missing geometry, "
        "an entry that is no object)." in table.warnings
    ), table.warnings


def test_a_multipoint_is_read_at_its_first_point(tmp_path):
    features = [
        {
            "type": "Feature",
            "geometry": {"type": "MultiPoint", "coordinates": [[10.0, 54.0], [10.5, 54.5], [11.0, 55.0]]},
            "properties": {"appliedRate": 2.0},
        },
        _point(10.0001, 54.0, appliedRate=3.0),
    ]
    (tmp_path / "rate.geojson").write_text(json.dumps(_collection(features)))
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    assert (table.columns["lon"][0], table.columns["lat"][0]) == (10.0, 54.0)


def test_points_off_the_globe_are_left_out_with_a_warning(tmp_path):
    """They were left out without a word: the point count fell and nothing said why."""
    good = [_point(10.0 + i * 1e-4, 54.0, appliedRate=3.0, timestamp=f"2024-05-01T10:00:{i:02}Z") for i in range(20)]
    bad = [_point(200, 54.5), _point(10, 95), _point(-181, 0), _point(1e308 * 10, 0), _point(10, -90.0001)]
    text = json.dumps(_collection(good[:10] + bad + good[10:])).replace("Infinity", "1e999")
    (tmp_path / "rate.geojson").write_text(text)
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    assert len(table) == 20
    assert table.warnings == [
        "5 of 25 points left out: no position on the globe (coordinates that are not numbers, or outside longitude "
        "-180..180, latitude -90..90)."
    ]
    # and none said when every point is kept
    (tmp_path / "rate.geojson").write_text(json.dumps(_collection(good)))
    assert get_reader("GEOJSON").read(dataset)[0].warnings == []


@pytest.mark.parametrize(
    ("odd", "read_as"),
    [
        ("0001-01-01T00:30:00+01:00", None),  # the year 0 in UTC: was an OverflowError, failing the whole file
        ("9999-12-31T23:59:00-01:00", None),  # the year 10000 in UTC
        ("\u0662024-05-01T10:00:09Z", None),  # another script's digit
        ("2024-05-01t10:00:09z", "2024-05-01T10:00:09"),  # RFC 3339's lower case
        ("2024-05-01T12:00:09+02:00", "2024-05-01T10:00:09"),
    ],
)
def test_a_time_out_of_range_or_unreadable_leaves_that_point_without_one(tmp_path, odd, read_as):
    features = [_point(10.0 + i * 1e-4, 54.0, timestamp=f"2024-05-01T10:00:0{i}Z", seedRate=8e4) for i in range(9)]
    features.append(_point(10.001, 54.0, timestamp=odd, seedRate=8e4))
    (tmp_path / "planting.geojson").write_text(json.dumps(_collection(features)))
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    times = table.columns["timestamp"].astype("datetime64[s]").astype(str).tolist()
    assert len(times) == 10
    assert times[:9] == [f"2024-05-01T10:00:0{i}" for i in range(9)]
    assert times[9] == ("NaT" if read_as is None else read_as)


def test_points_on_the_edges_of_the_globe_are_kept_and_past_them_left_out(tmp_path):
    """Longitude -180 and 180, latitude -90 and 90 are on the globe; a point past them is left out, said."""
    features = [
        _point(180.0, 10.0, appliedRate=1.0),
        _point(-180.0, 10.0, appliedRate=2.0),
        _point(10.0, 90.0, appliedRate=3.0),
        _point(10.0, -90.0, appliedRate=4.0),
        _point(180.0001, 10.0, appliedRate=5.0),
        _point(10.0, -90.0001, appliedRate=6.0),
    ]
    (tmp_path / "edges.geojson").write_text(json.dumps(_collection(features)))
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    assert sorted(table.columns["appliedRate"].tolist()) == [1.0, 2.0, 3.0, 4.0]
    assert any(warning.startswith("2 of 6 points left out") for warning in table.warnings), table.warnings


def test_property_names_past_the_column_limit_are_left_out_and_said(tmp_path):
    """Each name is a column of every point: 1,200 points naming 200 properties each of their own made 240,000
    columns of 1,200 values (a 3 MB file took 13 GB). The first MAX_COLUMNS names are kept."""
    from conversion.readers.geojson.points import MAX_COLUMNS

    features = [
        _point(10.0 + i * 1e-5, 54.0, seedRate=80000.0, **{f"k{j}_{i}": j for j in range(20)}) for i in range(30)
    ]
    (tmp_path / "wide.geojson").write_text(json.dumps(_collection(features)))
    [table] = get_reader("GEOJSON").read(Dataset("GEOJSON", tmp_path / "wide.geojson", tmp_path, "wide"))
    assert len(table.raw_columns) == MAX_COLUMNS == 256  # seedRate and 255 of the others, in their order
    assert list(table.raw_columns)[:3] == ["seedRate", "k0_0", "k1_0"]
    np.testing.assert_array_equal(table.columns["seedRate"], [80000.0] * 30)
    assert f"{30 * 20 - 255} property names left out past the first 256 (a column each)." in table.warnings


def test_points_after_a_polygon_are_a_data_set_and_a_boundary_with_a_label_point_is_none(tmp_path):
    """A collection of points that began with a polygon was passed over unsaid (its upload PROCESSED without it)."""
    polygon = {"type": "Feature", "geometry": {"type": "Polygon", "coordinates": [[[0, 0], [1, 0], [1, 1], [0, 0]]]}}
    points = [_point(10.0 + i * 1e-5, 54.0, seedRate=80000.0) for i in range(200)]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "planting.geojson").write_text(json.dumps(_collection([polygon, *points])))
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "field.geojson").write_text(json.dumps(_collection([polygon, polygon, _point(0.5, 0.5)])))
    [dataset] = detect(tmp_path).datasets
    assert dataset.path == tmp_path / "a" / "planting.geojson"
    [table] = get_reader("GEOJSON").read(dataset)
    assert len(table) == 200
    assert any(warning.startswith("1 features left out: not a Point") for warning in table.warnings)


def test_a_time_property_of_numbers_gives_no_time(tmp_path):
    """A number is not guessed as a time: `20160919` would read as that date were it text."""
    features = [_point(10.0 + i / 1e4, 54.0, Time=20160919 + i, Yld_Mass_D=100.0) for i in range(3)]
    (tmp_path / "p.geojson").write_text(json.dumps(_collection(features)))
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    assert np.isnat(table.columns["timestamp"]).all()


def test_a_multipoint_of_several_points_is_read_at_its_first_and_said(tmp_path):
    features = [
        {"type": "Feature", "geometry": {"type": "MultiPoint", "coordinates": [[10.0, 54.0], [10.1, 54.1]]},
         "properties": {"Yld_Mass_D": 100.0}},
        {"type": "Feature", "geometry": {"type": "MultiPoint", "coordinates": [[10.2, 54.2]]},
         "properties": {"Yld_Mass_D": 100.0}},
    ]  # fmt: skip
    (tmp_path / "m.geojson").write_text(json.dumps(_collection(features)))
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    assert table.columns["lon"].tolist() == [10.0, 10.2]
    assert "1 features are MultiPoints of several points; each is read at its first." in table.warnings
