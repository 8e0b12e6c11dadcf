"""The GeoJSON reader reads the file as a stream: what the document says wherever it says it, values cut by the
reader's pieces, JSON errors reported where `json` reports them, and memory that does not grow with the file."""

import json
import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from pyproj import Transformer

from conversion.readers import Dataset, UnreadableDataset, get_reader

pytestmark = pytest.mark.embedded

REPO = Path(__file__).resolve().parents[3]


def _point(lon, lat, **props) -> dict:
    return {"type": "Feature", "geometry": {"type": "Point", "coordinates": [lon, lat]}, "properties": props}


def _read(path: Path) -> list:
    return get_reader("GEOJSON").read(Dataset("GEOJSON", path, path.parent, path.stem))


def _write(tmp_path: Path, text: str, name: str = "points.geojson") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_crs_member_after_the_features_reprojects_them(tmp_path):
    # Given a GeoJSON of 2008 whose crs member (UTM zone 32N) comes after its features, and `type` last
    features = [_point(500_000.0, 6_000_000.0 + i, seedRate=80000.0) for i in range(3)]
    crs = {"type": "name", "properties": {"name": "EPSG:32632"}}
    text = json.dumps({"features": features, "crs": crs, "type": "FeatureCollection"})

    [table] = _read(_write(tmp_path, text))

    # Then the positions are the file's UTM positions in WGS84
    lon, lat = Transformer.from_crs("EPSG:32632", "EPSG:4326", always_xy=True).transform(
        [500_000.0] * 3, [6_000_000.0, 6_000_001.0, 6_000_002.0]
    )
    np.testing.assert_allclose(table.columns["lon"], lon)
    np.testing.assert_allclose(table.columns["lat"], lat)
    assert table.columns["lon"][0] == pytest.approx(9.0)  # the zone's central meridian


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("IAU_2015:49900", "names 'Mars (2015) - Sphere / Ocentric', which no transformation leads from to WGS84"),
        ("EPSG:4978", "names 'WGS 84' (Geocentric CRS), not a longitude/latitude or map coordinate system"),
    ],
)
def test_a_crs_member_of_no_place_on_the_earth_fails_the_data_set_with_the_reason(tmp_path, name, reason):
    features = [_point(10.0, 50.0, seedRate=80000.0), _point(10.001, 50.0, seedRate=80000.0)]
    crs = {"type": "name", "properties": {"name": name}}
    text = json.dumps({"type": "FeatureCollection", "crs": crs, "features": features})
    with pytest.raises(UnreadableDataset, match="^" + re.escape(f"points.geojson: the crs member {reason}")):
        _read(_write(tmp_path, text))


def test_a_collection_whose_type_comes_last_is_read(tmp_path):
    features = [_point(10.0, 54.0, seedRate=80000.0), _point(10.001, 54.0, seedRate=81000.0)]
    text = json.dumps(
        {"name": "planting", "features": features, "bbox": [10, 54, 10.001, 54], "type": "FeatureCollection"}
    )

    [table] = _read(_write(tmp_path, text))

    np.testing.assert_array_equal(table.columns["seedRate"], [80000.0, 81000.0])


def test_a_document_whose_last_type_is_not_a_feature_collection_is_unreadable(tmp_path):
    # Given points read in full, but the top-level `type` (given twice, the last one counts as in json) is not one
    text = json.dumps({"type": "FeatureCollection", "features": [_point(10.0, 54.0, area=1.0)]})[:-1] + ', "type": "X"}'

    with pytest.raises(UnreadableDataset, match=r"^points.geojson: not a GeoJSON FeatureCollection$"):
        _read(_write(tmp_path, text))


def test_the_last_features_member_counts(tmp_path):
    first = json.dumps([_point(10.0, 54.0, area=1.0)] * 3)
    second = json.dumps([_point(11.0, 55.0, area=2.0)])
    text = f'{{"type": "FeatureCollection", "features": {first}, "features": {second}}}'

    [table] = _read(_write(tmp_path, text))

    np.testing.assert_array_equal(table.columns["lon"], [11.0])
    np.testing.assert_array_equal(table.columns["area"], [2.0])


@pytest.mark.parametrize("features", ["[]", "[ \n ]", "null"])
def test_an_empty_features_list_is_unreadable(tmp_path, features):
    text = f'{{"type": "FeatureCollection", "features": {features}}}'

    with pytest.raises(UnreadableDataset, match=r"^points.geojson: the FeatureCollection holds no Point features$"):
        _read(_write(tmp_path, text))


def test_properties_named_only_after_the_first_thousand_points_are_left_out(tmp_path):
    # Given 1000 points with a seed rate, then points that also give an elevation and a crop
    features = [_point(10.0 + i * 1e-6, 54.0, seedRate=80000.0) for i in range(1000)]
    features += [_point(10.01, 54.0, seedRate=81000.0, elevation=12.0, crop="Mais") for _ in range(5)]

    [table] = _read(_write(tmp_path, json.dumps({"type": "FeatureCollection", "features": features})))

    # Then every point is read, with the seed rate only
    assert len(table) == 1005
    assert table.columns["seedRate"][-1] == 81000.0
    assert "elevation" not in table.columns and "crop" not in table.columns
    assert list(table.raw_columns) == ["seedRate"]


def test_properties_are_named_by_the_first_thousand_usable_points(tmp_path):
    # Given points off the globe first (dropped), which name a property the usable points never give
    features = [_point(500.0, 54.0, elevation=1.0) for _ in range(5)]
    features += [_point(10.0, 54.0, seedRate=float(i), elevation=None if i else 3.0) for i in range(1000)]
    features += [_point(10.0, 54.0, seedRate=1.0, area=5.0)]

    [table] = _read(_write(tmp_path, json.dumps({"type": "FeatureCollection", "features": features})))

    assert len(table) == 1001
    assert list(table.raw_columns) == ["seedRate", "elevation"]
    assert table.columns["elevation"][0] == 3.0 and np.isnan(table.columns["elevation"][1:]).all()


def test_raw_columns_keep_the_values_as_the_file_gives_them(tmp_path):
    features = [
        _point(10.0, 54.0, n=3, rate=1.25, note="a", mixed=1, flag=True, gap=None),
        _point(10.0, 54.0, n=4, rate=2, note="b", mixed="x", flag=False, gap=5),
    ]

    [table] = _read(_write(tmp_path, json.dumps({"type": "FeatureCollection", "features": features})))

    raw = table.raw_columns
    assert raw["n"].tolist() == [3, 4] and raw["n"].dtype.kind == "i"
    assert raw["rate"].tolist() == [1.25, 2.0]
    assert raw["note"].tolist() == ["a", "b"]
    assert raw["mixed"].tolist() == [1, "x"] and type(raw["mixed"][0]) is int
    assert raw["flag"].tolist() == [True, False]
    # Whole numbers with a gap stay whole numbers (they were written as 5.0).
    assert raw["gap"].tolist() == [None, 5] and type(raw["gap"][1]) is int


def test_values_cut_by_the_readers_pieces_read_as_json_reads_them(tmp_path):
    # Given a pretty-printed file of several MiB whose numbers, strings and literals have all lengths, so that the
    # reader's 1 MiB pieces end inside each kind of value somewhere
    features = []
    for i in range(12_000):
        digits = i % 17 + 1
        features.append(
            _point(
                10.0 + (i % 1000) * 1e-5,
                54.0 + (i % 997) * 1.234567e-5,
                area=round(1.0 + i / 7.0, digits % 9),
                count=10**digits + i,
                note="é" * (i % 13) + f"row {i}" + "\\" * (i % 3),
                weird=[None, True, False, math.nan, math.inf, -math.inf, "", {"a": [1, {}]}][i % 8],
            )
        )
    text = json.dumps({"type": "FeatureCollection", "features": features}, indent=2)
    path = _write(tmp_path, text)
    assert path.stat().st_size > 4 * 2**20

    [table] = _read(path)

    # Then every value is the one json.load reads
    expected = json.loads(text)["features"]
    assert len(table) == len(expected)
    np.testing.assert_array_equal(table.columns["lon"], [f["geometry"]["coordinates"][0] for f in expected])
    np.testing.assert_array_equal(table.columns["lat"], [f["geometry"]["coordinates"][1] for f in expected])
    np.testing.assert_array_equal(table.columns["area"], [f["properties"]["area"] for f in expected])
    assert table.raw_columns["count"].tolist() == [f["properties"]["count"] for f in expected]
    assert table.raw_columns["note"].tolist() == [f["properties"]["note"] for f in expected]
    weird = [str(f["properties"]["weird"]) for f in expected]
    assert [str(v) for v in table.raw_columns["weird"].tolist()] == weird


def _json_error(text: str) -> str:
    with pytest.raises(json.JSONDecodeError) as exc:
        json.loads(text)
    return str(exc.value)


@pytest.mark.parametrize("cut", [0.3, 0.5, 0.9, 0.99999])
def test_a_file_cut_short_is_unreadable_with_the_reason_json_gives(tmp_path, cut):
    # Given a multi-line file of about 3 MiB cut in the middle of a feature
    features = [
        _point(10.0 + i * 1e-6, 54.0, timestamp=f"2024-05-01T10:00:{i % 60:02d}Z", area=1.5) for i in range(15_000)
    ]
    text = json.dumps({"type": "FeatureCollection", "features": features}, indent=1)
    text = text[: int(len(text) * cut)]

    with pytest.raises(UnreadableDataset) as exc:
        _read(_write(tmp_path, text))

    # Then the reason is json's, with the line, column and character where the text stops making sense
    assert str(exc.value) == f"points.geojson: not valid JSON ({_json_error(text)})"


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        '{"type": "FeatureCollection", "features": [1 2]}',
        '{"type": "FeatureCollection", "features": [1,]}',
        '{"type": "FeatureCollection", "features": []} []',
        '{"type": "FeatureCollection" "features": []}',
        '{"type": "FeatureCollection", "features" []}',
        '{"type": "FeatureCollection", }',
        '{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": nul}]}',
        '{"type": "FeatureCollection", "features": [{"a": "\\x"}]}',
        '\n\n  {"type": "FeatureCollection",\n "features": [\n{"a": 1}\n{"b": 2}]}',
    ],
)
def test_text_that_is_not_json_is_unreadable_with_the_reason_json_gives(tmp_path, text):
    with pytest.raises(UnreadableDataset) as exc:
        _read(_write(tmp_path, text))

    assert str(exc.value) == f"points.geojson: not valid JSON ({_json_error(text)})"


def test_a_byte_order_mark_is_skipped(tmp_path):
    path = tmp_path / "points.geojson"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"type": "FeatureCollection", "features": [_point(10, 54)]}).encode())

    [table] = _read(path)

    assert table.columns["lon"].tolist() == [10.0]


def test_values_nested_too_deeply_are_unreadable_with_a_reason(tmp_path):
    # Given a feature whose property is an array nested a hundred thousand times (json gives up: recursion)
    deep = "[" * 100_000 + "]" * 100_000
    text = f'{{"type": "FeatureCollection", "features": [{{"type": "Feature", "properties": {{"a": {deep}}}}}]}}'

    with pytest.raises(UnreadableDataset, match=r"^points.geojson: not valid JSON \(values nested too deeply\)$"):
        _read(_write(tmp_path, text))


def test_memory_does_not_grow_with_the_points_of_the_file(tmp_path):
    # Given a GeoJSON of about 60 MB: 200,000 points with eight properties (numbers, a time, a crop)
    path = tmp_path / "big.geojson"
    with open(path, "w") as fh:
        fh.write('{"type": "FeatureCollection", "features": [')
        for i in range(200_000):
            props = (
                f'"timestamp": "2024-05-01T10:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z", "crop": "Corn", '
                f'"seedRate": {80000 + i % 977 / 10}, "speed": {1 + i % 89 / 100}, "elevation": {100 + i % 97 / 3}, '
                f'"heading": {i % 360 + 0.5}, "appliedRate": {i % 50 / 7}, "sectionId": {i % 12}'
            )
            fh.write(("," if i else "") + '{"type": "Feature", "geometry": {"type": "Point", "coordinates": ')
            fh.write(f"[{-93 + i % 1000 * 1e-5}, {41 + i % 777 * 1e-5}]}}, " + '"properties": {' + props + "}}")
        fh.write("]}")
    size = path.stat().st_size

    # When a fresh process reads it (and nothing else)
    script = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from conversion.readers import Dataset, get_reader\n"
        "path = Path(sys.argv[1])\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "[table] = get_reader('GEOJSON').read(Dataset('GEOJSON', path, path.parent, path.stem))\n"
        "print(len(table), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script, str(path)], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    points, growth_kib = (int(v) for v in result.stdout.split())

    # Then it holds every point in less memory than the file takes (json.load and a dict per point: about 6x)
    assert points == 200_000
    assert growth_kib * 1024 < size
