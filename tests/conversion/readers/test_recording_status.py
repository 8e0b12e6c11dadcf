"""recordingStatus, one rule for every reader (supplement, decisions): On or Off; cleaning drops only points recorded
Off; any other state (ISO 11783's 2 "error" and 3 "not available", a word we do not know) is unknown and kept."""

import io
import json

import numpy as np
import pytest
import shapefile
from pyproj import CRS

from conversion import standardize
from conversion.readers import Dataset, get_reader

pytestmark = pytest.mark.embedded

# What each status a file may write means, spelt out: JSON numbers of either type and booleans, words in any case,
# numbers written as text.
ON = [1, 1.0, True, "On", "ON", "on", "1", "1.0", "true", "True", "yes", "Yes", "Y"]
OFF = [0, 0.0, False, "Off", "OFF", "0", "0.0", "false", "no", "No", "n"]
# (Python's float() reads the last three: "\u0661" was On)
UNKNOWN = [2, 3, 2.0, -1, 0.5, "2", "3", "Unknown", "error", "", " ", None, "\u0661", "0_0", "nan"]
STATUSES = [(value, "On") for value in ON] + [(value, "Off") for value in OFF] + [(value, None) for value in UNKNOWN]


def _features(statuses: list) -> list[dict]:
    return [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [-93.0 + i * 1e-5, 41.0]},
            "properties": {"timestamp": f"2024-09-01T10:{i // 60:02d}:{i % 60:02d}Z", "Yld_Mass_W": 3000.0, **status},
        }
        for i, status in enumerate(statuses)
    ]


def _kept_statuses(table) -> tuple[list[int], list]:
    """Which points the standard GeoJSON keeps (by their position in the file) and the status it writes for each."""
    cleaned, _report = standardize.standardize(table)
    out = io.StringIO()
    standardize.write_standard_geojson(cleaned, out)
    features = json.loads(out.getvalue())["features"]
    kept = [round((f["geometry"]["coordinates"][0] + 93.0) / 1e-5) for f in features]
    return kept, [f["properties"].get("recordingStatus") for f in features]


@pytest.mark.parametrize("name", ["recordingStatus", "WorkStatus"])  # ours, and an export's column
def test_geojson_status_values_follow_the_rule(tmp_path, name):
    # Given a harvest GeoJSON whose points each write one status value
    path = tmp_path / "harvest.geojson"
    path.write_text(json.dumps({"type": "FeatureCollection", "features": _features([{name: v} for v, _ in STATUSES])}))
    [table] = get_reader("GEOJSON").read(Dataset("GEOJSON", path, tmp_path, "harvest"))

    kept, written = _kept_statuses(table)

    # Then only the points recorded Off are dropped, and each kept point says On, or nothing when unknown
    expected = [(i, meaning) for i, (_value, meaning) in enumerate(STATUSES) if meaning != "Off"]
    assert list(zip(kept, written, strict=True)) == expected


def _shapefile(path, field: tuple, values: list) -> Dataset:
    with shapefile.Writer(str(path), shapeType=shapefile.POINT) as writer:
        writer.field("Yld_Mass_W", "N", 10, 2)
        writer.field(*field)
        for i, value in enumerate(values):
            writer.point(-93.0 + i * 1e-5, 41.0)
            writer.record(3000.0, value)
    path.with_suffix(".prj").write_text(CRS.from_epsg(4326).to_wkt("WKT1_ESRI"))
    return Dataset("SHAPEFILE", path, path.parent, path.stem)


@pytest.mark.parametrize(
    ("field", "statuses"),
    [
        # A DBF text column holds the words and numbers as text; a blank one is no status.
        (("WorkStatus", "C", 10), [(v, m) for v, m in STATUSES if isinstance(v, str)]),
        # A DBF number column: 1 On, 0 Off, other numbers and blanks unknown.
        (("WorkStatus", "N", 6, 2), [(v, m) for v, m in STATUSES if type(v) in (int, float)] + [(None, None)]),
    ],
    ids=["text", "number"],
)
def test_shapefile_work_status_follows_the_same_rule(tmp_path, field, statuses):
    dataset = _shapefile(tmp_path / "sms.shp", field, [v for v, _ in statuses])
    [table] = get_reader("SHAPEFILE").read(dataset)

    kept, written = _kept_statuses(table)

    assert list(zip(kept, written, strict=True)) == [(i, m) for i, (_v, m) in enumerate(statuses) if m != "Off"]


def test_both_readers_give_one_status_for_one_value(tmp_path):
    # Given the same text statuses in a GeoJSON export and in a shapefile export
    texts = [v for v, _ in STATUSES if isinstance(v, str)]
    geojson = tmp_path / "harvest.geojson"
    geojson.write_text(
        json.dumps({"type": "FeatureCollection", "features": _features([{"WorkStatus": v} for v in texts])})
    )
    [from_geojson] = get_reader("GEOJSON").read(Dataset("GEOJSON", geojson, tmp_path, "harvest"))
    [from_shapefile] = get_reader("SHAPEFILE").read(_shapefile(tmp_path / "sms.shp", ("WorkStatus", "C", 10), texts))

    # Then both read them the same
    np.testing.assert_array_equal(from_geojson.columns["recordingStatus"], from_shapefile.columns["recordingStatus"])
