"""The vectorised GeoJSON writers give exactly what the plain per-point writer (kept below as the reference) gave."""

import io
import json

import numpy as np
import pytest

from conversion import standardize
from conversion.archive import detect, safe_extract
from conversion.readers import Dataset, PointTable, get_reader

DOTNET_TIMELOGS = "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata/TimeLogs/ValidTimeLogs"
JD_HARVEST = "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Harvest.zip"


# -- reference: the writer as it was, one dict and one json.dumps per point -----------------------------------


def _reference_lists(columns, names, lo, hi):
    out = []
    for name in names:
        values = columns[name][lo:hi]
        kind = values.dtype.kind
        if kind == "M":
            text = np.datetime_as_string(values.astype("datetime64[ms]"), unit="ms").astype(object) + "Z"
            text[np.isnat(values)] = None
            out.append(text.tolist())
        elif kind == "f":
            rounded = np.round(values, 8 if name in ("lon", "lat") else 6).astype(object)
            rounded[~np.isfinite(values)] = None
            out.append(rounded.tolist())
        elif kind in "iub":
            out.append(values.tolist())
        else:
            out.append([None if v is None else str(v) for v in values])
    return out


def _reference_stream(columns, names, constants, converters=None) -> str:
    n = len(columns["lon"])
    dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode
    lists = _reference_lists(columns, ["lon", "lat", *names], 0, n)
    lons, lats, rest = lists[0], lists[1], lists[2:]
    for i, name in enumerate(names):
        if converters and name in converters:
            rest[i] = [converters[name](v) for v in rest[i]]
    parts = []
    for row in range(n):
        props = dict(constants)
        for key, values in zip(names, rest, strict=True):
            if values[row] is not None:
                props[key] = values[row]
        lon = "null" if lons[row] is None else repr(lons[row])
        lat = "null" if lats[row] is None else repr(lats[row])
        parts.append(
            '{"type":"Feature","geometry":{"type":"Point","coordinates":['
            f'{lon},{lat}]}},"properties":{dumps(props)}}}'
        )
    return '{"type":"FeatureCollection","features":[' + ",".join(parts) + "]}"


def reference_standard(table: PointTable) -> str:
    names = ["timestamp"] + [n for n in standardize.PROPERTY_ORDER if n in table.columns]
    names += [n for n in ("crop", "variety", "products", "recordingStatus") if n in table.columns]
    constants = {"operationType": table.operation_type}
    if "crop" not in table.columns and len(table.crops) == 1:
        constants["crop"] = table.crops[0]
    if "variety" not in table.columns and len(table.varieties) == 1:
        constants["variety"] = table.varieties[0]
    converters = {"recordingStatus": lambda v: None if v is None else ("On" if v else "Off")}
    return _reference_stream(table.columns, names, constants, converters)


def reference_raw(table: PointTable) -> str:
    if not table.raw_columns:
        return _reference_stream(table.columns, [n for n in table.columns if n not in ("lon", "lat")], {})
    columns = dict(table.raw_columns)
    columns["lon"], columns["lat"] = table.columns["lon"], table.columns["lat"]
    names = [n for n in table.raw_columns if n not in ("lon", "lat")]
    if "timestamp" in table.columns and "timestamp" not in columns:
        columns["timestamp"] = table.columns["timestamp"]
        names.insert(0, "timestamp")
    return _reference_stream(columns, names, {})


def _written(writer, table: PointTable, *, chunk: int = 20_000, binary: bool = False) -> str:
    buffer = io.BytesIO() if binary else io.StringIO()
    assert writer(table, buffer, chunk=chunk) == len(table)
    return buffer.getvalue().decode("utf-8") if binary else buffer.getvalue()


# -- real files -----------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_tables(samples_dir, tmp_path_factory) -> list[PointTable]:
    dest = tmp_path_factory.mktemp("jd")
    safe_extract(samples_dir / JD_HARVEST, dest)
    [dataset] = detect(dest).datasets
    tables = get_reader("SHAPEFILE").read(dataset)
    folder = samples_dir / DOTNET_TIMELOGS
    isoxml = get_reader("ISOXML").read(Dataset("ISOXML", folder / "TASKDATA.XML", folder, "ValidTimeLogs"))
    return tables + isoxml[:3]


def _first_difference(written: str, expected: str) -> str | None:
    """None when equal, else where they part, in a few lines: pytest's own diff of two documents of megabytes
    took over ten minutes to build, a failure that looked like a hung run."""
    if written == expected:
        return None
    pairs = enumerate(zip(written, expected, strict=False))
    at = next((i for i, (a, b) in pairs if a != b), min(len(written), len(expected)))
    around = slice(max(at - 80, 0), at + 80)
    return f"at character {at} of {len(expected)}: written {written[around]!r}, expected {expected[around]!r}"


def test_standard_geojson_is_byte_identical_to_the_reference_on_real_files(real_tables):
    for table in real_tables:
        cleaned, _ = standardize.standardize(table)
        expected = reference_standard(cleaned)
        assert _first_difference(_written(standardize.write_standard_geojson, cleaned), expected) is None, table.name
        # Chunk borders and binary files change nothing.
        written = _written(standardize.write_standard_geojson, cleaned, chunk=997, binary=True)
        assert _first_difference(written, expected) is None, table.name
        doc = json.loads(expected)
        assert len(doc["features"]) == len(cleaned)


def test_raw_geojson_is_byte_identical_to_the_reference_on_real_files(real_tables):
    for table in real_tables:
        expected = reference_raw(table)
        assert _first_difference(_written(standardize.write_raw_geojson, table, chunk=1000), expected) is None, (
            table.name
        )
        assert json.loads(expected)["features"][0]["properties"]


# -- values that take the slow paths --------------------------------------------------------------------------


def _edge_table() -> PointTable:
    n = 12
    timestamps = np.array(
        ["2024-09-01T10:00:00.123", "NaT", "1969-12-31T23:59:59.999", "1900-02-28T00:00:00", "2400-02-29T23:59:59"]
        + ["2024-12-31T12:34:56.789"] * 7,
        dtype="datetime64[ms]",
    )
    speed = np.array([0.0, -0.0, -1e-9, 1e-5, 5e-6, 1.2345675, 9.99999949, 1e16, 1.5e300, np.nan, np.inf, -123.456])
    return PointTable(
        name="edge",
        operation_type="applied",
        columns={
            "timestamp": timestamps,
            "lon": np.array([10.0, -0.0, np.nan, 1e-9, 179.123456789, -180.0, 1e-5, 2.5, 3.0, 4.0, 5.0, 6.0]),
            "lat": np.linspace(-89.9, 89.9, n),
            "speed": speed,
            "elevation": np.linspace(-1000, 1000, n).astype(np.float32),
            "sectionId": np.arange(n, dtype=np.int64) - 3,
            "appliedRate": np.full(n, np.nan),
            "products": np.array(['Urea "46"', None, "Gülle", "a\\b\n", "", 3, 1.0, True, None, "x", "y", "z"], object),
            "recordingStatus": np.array([1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 1, 1], dtype=np.int8),
        },
        units={"speed": "m/s"},
        crops=["Wintergerste"],
        varieties=["KWS Meridian"],
    )


def test_standard_geojson_edge_values_match_the_reference():
    table = _edge_table()
    assert _written(standardize.write_standard_geojson, table, chunk=5) == reference_standard(table)
    table.columns["recordingStatus"] = np.array([1.0, 0.0, np.nan, 1e-7, 2.0, 1, 1, 1, 0, 0, 1, 1])
    assert _written(standardize.write_standard_geojson, table) == reference_standard(table)


def test_the_points_of_a_file_of_several_crops_name_none_of_them():
    """A file's one crop is every point's; of two (and no crop per point), naming the first on every point says a
    soybean point is corn."""
    table = _edge_table()
    table.crops = ["corn", "soybeans"]
    written = json.loads(_written(standardize.write_standard_geojson, table))
    assert [f["properties"].get("crop") for f in written["features"]] == [None] * 12
    table.crops = ["corn"]
    written = json.loads(_written(standardize.write_standard_geojson, table))
    assert [f["properties"].get("crop") for f in written["features"]] == ["corn"] * 12


def test_raw_geojson_without_raw_columns_leaves_out_the_leading_comma():
    table = _edge_table()
    table.columns["flag"] = np.array([True, False] * 6)
    # Points whose first properties are all missing start their properties at the first one present.
    table.columns["timestamp"] = np.full(12, np.datetime64("NaT"), dtype="datetime64[ms]")
    expected = reference_raw(table)
    assert _written(standardize.write_raw_geojson, table, chunk=7) == expected
    json.loads(expected)


def test_random_floats_round_and_print_as_repr():
    rng = np.random.default_rng(3)
    n = 20_000
    values = np.concatenate(
        [rng.normal(0, 1, n), rng.normal(0, 1e-4, n), rng.lognormal(0, 8, n), rng.integers(-99, 99, n) / 8]
    )
    table = PointTable(
        name="floats",
        operation_type="other",
        columns={"lon": rng.uniform(-180, 180, len(values)), "lat": rng.uniform(-90, 90, len(values)), "x": values},
    )
    assert _written(standardize.write_raw_geojson, table) == reference_raw(table)


def test_raw_geojson_keeps_each_property_value_as_json_through_the_point_store(tmp_path):
    """A GeoJSON property of whole numbers with a gap, booleans, objects and lists: each was written as text
    (`1260` as "1260", `true` as "True", an object as Python's `{'a': 1}`), in the raw GeoJSON and after the point
    store (the file's `raw.npz`)."""
    from conversion.pointstore import table_load, table_save

    nested = {"a": 1, "b": [True, None, "x\u0085y"]}
    values = [
        {"SECTIONID": 1260, "flag": True, "nested": nested, "mixed": "text"},
        {"SECTIONID": None, "flag": False, "nested": [1.5, 2], "mixed": 7},
        {"SECTIONID": 1262, "flag": None, "nested": None, "mixed": 2.25},
    ]
    table = _points_read(tmp_path, values)
    stored = io.BytesIO()
    table_save(table, stored)
    stored.seek(0)
    for written_from in (table, table_load(stored)):
        raw = json.loads(_written(standardize.write_raw_geojson, written_from))
        got = [{k: f["properties"].get(k) for k in ("SECTIONID", "flag", "nested", "mixed")} for f in raw["features"]]
        assert got == [
            {"SECTIONID": 1260, "flag": True, "nested": {"a": 1, "b": [True, None, "xy"]}, "mixed": "text"},
            {"SECTIONID": None, "flag": False, "nested": [1.5, 2], "mixed": 7},
            {"SECTIONID": 1262, "flag": None, "nested": None, "mixed": 2.25},
        ]


def test_raw_geojson_writes_the_nan_of_an_object_as_null_and_cleans_its_keys(tmp_path):
    """Python's JSON reader takes NaN: inside an object it made the writer fail (no JSON holds it); a key's control
    characters are cleaned as any text; a float of a mixed column is rounded as number columns are."""
    values = [
        {"obj": {"a": float("nan"), "k\u0085": 1}, "mixed": "t"},
        {"obj": None, "mixed": float("nan")},
        {"obj": [1], "mixed": 0.1 + 0.2},
    ]
    table = _points_read(tmp_path, values)
    raw = json.loads(_written(standardize.write_raw_geojson, table))
    got = [{k: f["properties"].get(k, "absent") for k in ("obj", "mixed")} for f in raw["features"]]
    assert got == [
        {"obj": {"a": None, "k": 1}, "mixed": "t"},
        {"obj": "absent", "mixed": "absent"},
        {"obj": [1], "mixed": 0.3},
    ]


def _points_read(tmp_path, properties: list[dict]) -> PointTable:
    """The table the GeoJSON reader makes of points with these `properties`, one point each."""
    features = [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [10.0 + i / 1e4, 54.0]}, "properties": p}
        for i, p in enumerate(properties)
    ]
    (tmp_path / "points.geojson").write_text(json.dumps({"type": "FeatureCollection", "features": features}))
    [dataset] = detect(tmp_path).datasets
    [table] = get_reader("GEOJSON").read(dataset)
    return table


def test_raw_geojson_writes_numpy_numbers_in_a_column_of_values_as_json_numbers():
    """A raw column of mixed values may hold numpy's scalars (a reader's arithmetic): json could not write them."""
    table = _edge_table()
    table.raw_columns = {"mixed": np.array([np.int64(5), np.float64(2.5), np.bool_(True), "x"] * 3, dtype=object)}
    raw = json.loads(_written(standardize.write_raw_geojson, table))
    assert [f["properties"]["mixed"] for f in raw["features"][:4]] == [5, 2.5, True, "x"]
