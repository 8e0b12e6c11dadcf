"""Shapefile reader on John Deere and SMS-style exports; totals recomputed independently from the raw DBF."""

import json
import re
import shutil
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
import shapefile
from pyproj import CRS, Proj, Transformer

from conversion import standardize
from conversion.readers import Dataset, UnreadableDataset, get_reader
from tests.units import ACRE_HA, BUSHEL_L, GALLON_L, LB_AC_IN_KG_HA

JD = "johndeere-sampledata/Shapefiles"
ACRE_FT2 = 43_560.0
LB = 0.45359237


def _only_dataset(found) -> Dataset:
    [dataset] = found.datasets
    assert dataset.format == "SHAPEFILE"
    return dataset


def _records(dataset: Dataset) -> list[dict]:
    with shapefile.Reader(str(dataset.path)) as reader:
        return [r.as_dict() for r in reader.records()]


def _read(dataset: Dataset):
    [table] = get_reader("SHAPEFILE").read(dataset)
    return table


@pytest.fixture(scope="module")
def harvest(detect_zip):
    dataset = _only_dataset(detect_zip(f"{JD}/Export From MyJohnDeere - Harvest.zip"))
    return dataset, _read(dataset), _records(dataset)


def test_jd_harvest_points_crop_variety_and_time_range(harvest):
    dataset, table, records = harvest
    assert len(table) == len(records) == 40_960
    assert table.operation_type == "harvested"
    assert table.crops == ["soybeans"]
    assert table.varieties == sorted({r["VARIETY"] for r in records})
    iso = sorted(datetime.fromisoformat(r["IsoTime"].replace("Z", "")) for r in records)
    assert table.start == np.datetime64(iso[0], "ms")
    assert table.end == np.datetime64(iso[-1], "ms")
    assert table.source_units["dryVolumePerArea"] == "bu/ac"


def test_jd_harvest_total_dry_bushels_equal_the_file(harvest):
    _dataset, table, records = harvest
    # Independently: dry bushels = VRYIELDVOL (bu/ac) x DISTANCE x SWATHWIDTH (ft) / 43,560 ft2 per acre.
    bushels = sum(r["VRYIELDVOL"] * r["DISTANCE"] * r["SWATHWIDTH"] / ACRE_FT2 for r in records)
    wet_lb = sum(r["WetMass"] * r["DISTANCE"] * r["SWATHWIDTH"] / ACRE_FT2 for r in records)
    props = standardize.summary(standardize.derive(table))["properties"]
    assert props["totalDryVolume"]["unit"] == "L"
    assert props["totalDryVolume"]["value"] / BUSHEL_L == pytest.approx(bushels, rel=1e-9)
    assert props["totalWetMass"]["value"] / LB == pytest.approx(wet_lb, rel=1e-9)
    # Our dry mass (wet x shrink at Ms 13 %) agrees with JD's dry bushels x 60 lb within 0.1 %.
    assert props["totalDryMass"]["value"] / LB == pytest.approx(bushels * 60, rel=1e-3)


def test_jd_seeding_seed_totals(detect_zip):
    dataset = _only_dataset(detect_zip(f"{JD}/Export From MyJohnDeere - Seeding.zip"))
    table, records = _read(dataset), _records(dataset)
    assert len(table) == len(records) == 55_285
    assert table.operation_type == "planted"
    assert table.units["seedRate"] == "seeds/ha"
    seeds = sum(r["AppliedRat"] * r["DISTANCE"] * r["SWATHWIDTH"] / ACRE_FT2 for r in records)
    props = standardize.summary(standardize.derive(table))["properties"]
    assert props["totalPlanted"] == {"value": pytest.approx(seeds, rel=1e-9), "unit": "seeds"}
    assert table.varieties == ["23A42"]


def test_jd_application_products_and_volume(detect_zip):
    found = detect_zip(f"{JD}/Export From MyJohnDeere - Application.zip")
    assert len(found.datasets) == 4  # the four -Deere-Metadata.json sidecars are not data sets
    for dataset in found.datasets:
        table, records = _read(dataset), _records(dataset)
        assert table.operation_type == "applied"
        assert records[0]["Product"].strip() in table.products
        assert table.units["appliedRate"] == "L/ha"
        gallons = sum(r["AppliedRat"] * r["DISTANCE"] * r["SWATHWIDTH"] / ACRE_FT2 for r in records)
        total = standardize.totals(standardize.derive(table))["totalApplied"]
        assert total["unit"] == "L"
        assert total["value"] / GALLON_L == pytest.approx(gallons, rel=1e-9)


def test_sms_abbreviated_yield_and_as_applied(samples_dir):
    folder = samples_dir / "ofpetrial-difm" / "inst" / "extdata"
    yield_set = Dataset("SHAPEFILE", folder / "yield-simple1.shp", folder, "yield-simple1")
    table = _read(yield_set)
    raw = np.array([r["Yld_Vol_Dr"] for r in _records(yield_set)])
    assert table.operation_type == "harvested"
    assert len(table) == len(raw) == 3365
    assert table.source_units["dryVolumePerArea"] == "bu/ac"
    np.testing.assert_allclose(table.columns["dryVolumePerArea"] / (BUSHEL_L / ACRE_HA), raw)

    applied_set = Dataset("SHAPEFILE", folder / "as-applied-simple1.shp", folder, "as-applied-simple1")
    table = _read(applied_set)
    records = _records(applied_set)
    assert table.operation_type == "applied"
    assert len(table) == len(records) == 2081
    np.testing.assert_allclose(table.columns["speed"], [r["Speed_mph_"] * 0.44704 for r in records])
    np.testing.assert_allclose(table.columns["elevation"], [r["Elevation_"] * 0.3048 for r in records])
    # "Tgt_Rate_k" does not say its unit: the value is kept, and the unit reported as unknown.
    assert table.units["appliedRateTarget"] == "unknown"
    assert any("Tgt_Rate_k" in w for w in table.warnings)


def _write_points(path: Path, lonlat: list[tuple[float, float]], crs: CRS | None, yields: list[float]) -> None:
    with shapefile.Writer(str(path), shapeType=shapefile.POINT) as writer:
        writer.field("Yld_Mass_D", "N", 8, 2)
        writer.field("Moisture", "N", 6, 2)
        for (x, y), value in zip(lonlat, yields, strict=True):
            writer.point(x, y)
            writer.record(value, 15.0)
    if crs is not None:
        path.with_suffix(".prj").write_text(crs.to_wkt("WKT1_ESRI"))


def _write(path: Path, fields: list[tuple], rows: list[tuple], *, shape_type=shapefile.POINT, z=None) -> Dataset:
    """A shapefile of points at (-93.0 - i * 1e-4, 41.0) with `fields` ((name, type, size, decimals)) and a WGS84
    .prj; `z`: elevations of a PointZ file."""
    with shapefile.Writer(str(path), shapeType=shape_type) as writer:
        for field in fields:
            writer.field(*field)
        for i, row in enumerate(rows):
            if z is None:
                writer.point(-93.0 - i * 1e-4, 41.0)
            else:
                writer.pointz(-93.0 - i * 1e-4, 41.0, z[i])
            writer.record(*row)
    path.with_suffix(".prj").write_text(CRS.from_epsg(4326).to_wkt("WKT1_ESRI"))
    return Dataset("SHAPEFILE", path, path.parent, path.stem)


def test_projected_shapefile_is_reprojected_to_wgs84(tmp_path):
    lonlat = [(-93.15, 41.667), (-93.151, 41.668), (-93.152, 41.6685)]
    utm = CRS.from_epsg(32615)
    to_utm = Transformer.from_crs(4326, utm, always_xy=True)
    xy = [to_utm.transform(lon, lat) for lon, lat in lonlat]
    _write_points(tmp_path / "utm.shp", xy, utm, [100.0, 200.0, 300.0])
    table = _read(Dataset("SHAPEFILE", tmp_path / "utm.shp", tmp_path, "utm"))
    np.testing.assert_allclose(table.columns["lon"], [p[0] for p in lonlat], atol=1e-8)
    np.testing.assert_allclose(table.columns["lat"], [p[1] for p in lonlat], atol=1e-8)
    np.testing.assert_allclose(table.columns["dryMassPerArea"], np.array([100, 200, 300]) * LB_AC_IN_KG_HA)


MARS_2000 = (
    'GEOGCS["Mars 2000",DATUM["D_Mars_2000",SPHEROID["Mars_2000_IAU_IAG",3396190.0,169.894447]],'
    'PRIMEM["Greenwich",0],UNIT["Decimal_Degree",0.0174532925199433]]'
)
LOCAL = 'LOCAL_CS["Arbitrary",LOCAL_DATUM["x",0],UNIT["Meter",1],AXIS["X",EAST],AXIS["Y",NORTH]]'


@pytest.mark.parametrize(
    ("prj", "reason"),
    [
        (MARS_2000, "names 'Mars 2000', which no transformation leads from to WGS84"),
        (
            CRS.from_user_input("IAU_2015:30100").to_wkt("WKT1_ESRI"),
            "names 'GCS_Moon_2015_-_Sphere_Ocentric', which no transformation leads from to WGS84",
        ),
        (LOCAL, "names 'Arbitrary' (Engineering CRS), not a longitude/latitude or map coordinate system"),
        (CRS.from_epsg(4978).to_wkt("WKT1_GDAL"), "names 'WGS 84' (Geocentric CRS), not a longitude/latitude or map"),
    ],
)
def test_a_prj_of_no_place_on_the_earth_fails_the_data_set_with_the_reason(tmp_path, prj, reason):
    """Such a .prj was an internal error (pyproj found no transformation), or a geocentric one read nonsense."""
    from conversion.readers import UnreadableDataset

    _write_points(tmp_path / "odd.shp", [(10.0, 50.0), (10.001, 50.001)], None, [1.0, 2.0])
    (tmp_path / "odd.prj").write_text(prj)
    with pytest.raises(UnreadableDataset, match="^" + re.escape(f"odd.shp: the .prj file {reason}")):
        _read(Dataset("SHAPEFILE", tmp_path / "odd.shp", tmp_path, "odd"))


def test_points_off_the_globe_are_left_out_with_a_warning(tmp_path):
    positions = [(-93.0, 41.0), (200.0, 41.0), (-93.001, 41.0), (-93.0, 95.0), (-93.002, 41.0)]
    _write_points(tmp_path / "off.shp", positions, CRS.from_epsg(4326), [1.0, 2.0, 3.0, 4.0, 5.0])
    table = _read(Dataset("SHAPEFILE", tmp_path / "off.shp", tmp_path, "off"))
    assert table.columns["dryMassPerArea"].tolist() == pytest.approx(np.array([1.0, 3.0, 5.0]) * LB_AC_IN_KG_HA)
    said = "2 of 5 points left out: no position on the globe (coordinates that are not numbers, or outside "
    assert any(warning.startswith(said) for warning in table.warnings), table.warnings


def test_metre_coordinates_without_a_prj_are_refused(tmp_path):
    from conversion.readers import UnreadableDataset

    _write_points(tmp_path / "noprj.shp", [(500_000.0, 4_600_000.0), (500_010.0, 4_600_010.0)], None, [1.0, 2.0])
    with pytest.raises(UnreadableDataset, match="no .prj file and the coordinates are not longitude/latitude"):
        _read(Dataset("SHAPEFILE", tmp_path / "noprj.shp", tmp_path, "noprj"))


@pytest.mark.filterwarnings("error::DeprecationWarning")  # NumPy will make pyproj's scalar path for it an error
def test_one_projected_point_is_reprojected(tmp_path):
    utm = CRS.from_epsg(32615)
    x, y = Transformer.from_crs(4326, utm, always_xy=True).transform(-93.15, 41.667)
    _write_points(tmp_path / "one.shp", [(x, y)], utm, [100.0])
    table = _read(Dataset("SHAPEFILE", tmp_path / "one.shp", tmp_path, "one"))
    assert len(table) == 1
    np.testing.assert_allclose(table.columns["lon"], [-93.15], atol=1e-8)
    np.testing.assert_allclose(table.columns["lat"], [41.667], atol=1e-8)


def test_overflowed_numbers_are_null(tmp_path):
    _write_points(tmp_path / "y.shp", [(-93.0, 41.0), (-93.1, 41.1)], CRS.from_epsg(4326), [10.0, 20.0])
    dbf = tmp_path / "y.dbf"
    data = bytearray(dbf.read_bytes())
    # DBF writers print **** when a number does not fit its field; patch the second record's yield so.
    header_len = int.from_bytes(data[8:10], "little")
    record_len = int.from_bytes(data[10:12], "little")
    start = header_len + record_len + 1
    data[start : start + 8] = b"    ****"
    dbf.write_bytes(bytes(data))
    table = _read(Dataset("SHAPEFILE", tmp_path / "y.shp", tmp_path, "y"))
    assert table.columns["dryMassPerArea"][0] == pytest.approx(10 * LB_AC_IN_KG_HA)
    assert np.isnan(table.columns["dryMassPerArea"][1])
    assert not [w for w in table.warnings if "not numbers" in w]  # (`****`: a number too wide, no damage)


def test_numbers_in_text_columns_are_read_as_a_geojson_file_reads_them(tmp_path):
    """A text (C) column of plain decimals is read as numbers, by the rule GeoJSON files have
    (conversion.readers.values.number_from_text): `1_000`, `nan` and other scripts' digits, which Python's `float()`
    reads, are missing values (1_000 became a yield of 1000, "\u0661\u0662" one of 12)."""
    texts = ["20", " 12.5 ", "1e3", "1_000", "\u0661\u0662", "nan", "abc", "-.5"]
    fields = [("Yld_Mass_D", "C", 20), ("Moisture", "C", 20)]
    table = _read(_write(tmp_path / "text.shp", fields, [(text, text) for text in texts]))
    expected = [20.0, 12.5, 1000.0, np.nan, np.nan, np.nan, np.nan, -0.5]
    np.testing.assert_allclose(table.columns["harvestMoisture"], expected)
    np.testing.assert_allclose(table.columns["dryMassPerArea"], np.array(expected) * LB_AC_IN_KG_HA)


@pytest.mark.parametrize("written", [b"   1_000", b"  1_0.00", b"  0x10.0"])
def test_a_numeric_column_value_that_is_no_plain_number_is_a_missing_value(tmp_path, written):
    _write_points(tmp_path / "y.shp", [(-93.0, 41.0), (-93.1, 41.1)], CRS.from_epsg(4326), [10.0, 20.0])
    dbf = tmp_path / "y.dbf"
    data = bytearray(dbf.read_bytes())
    header_len = int.from_bytes(data[8:10], "little")
    record_len = int.from_bytes(data[10:12], "little")
    start = header_len + record_len + 1  # the second record's yield
    data[start : start + 8] = written
    dbf.write_bytes(bytes(data))
    table = _read(Dataset("SHAPEFILE", tmp_path / "y.shp", tmp_path, "y"))
    assert table.columns["dryMassPerArea"][0] == pytest.approx(10 * LB_AC_IN_KG_HA)
    assert np.isnan(table.columns["dryMassPerArea"][1])
    # Said: the value is there, and no number
    assert "Yld_Mass_D: 1 of 2 values are not numbers; read as none" in table.warnings


def test_a_damaged_number_in_a_real_dbf_is_said_not_silently_dropped(samples_dir, tmp_path):
    """One value of yield-simple1.dbf damaged (`54.9891999;9999997`): its point was dropped by cleaning as if its
    yield were missing, and nothing said the file was damaged."""
    folder = samples_dir / "ofpetrial-difm" / "inst" / "extdata"
    for suffix in (".shp", ".shx", ".prj"):
        shutil.copy(folder / f"yield-simple1{suffix}", tmp_path)
    data = (folder / "yield-simple1.dbf").read_bytes()
    assert data.count(b"54.989199999999997") == 1
    (tmp_path / "yield-simple1.dbf").write_bytes(data.replace(b"54.989199999999997", b"54.9891999;9999997"))
    table = _read(Dataset("SHAPEFILE", tmp_path / "yield-simple1.shp", tmp_path, "yield-simple1"))
    assert len(table) == 3365 and int(np.isnan(table.columns["dryVolumePerArea"]).sum()) == 1
    [said] = [w for w in table.warnings if "not numbers" in w]
    assert said.endswith(": 1 of 3365 values are not numbers; read as none")
    # The undamaged file says nothing of the kind
    original = _read(Dataset("SHAPEFILE", folder / "yield-simple1.shp", folder, "yield-simple1"))
    assert not [w for w in original.warnings if "not numbers" in w]


def test_iso_times_with_an_offset_are_taken_to_utc(tmp_path):
    stamps = ["2016-09-19T16:45:10+02:00", "2016-09-19T09:45:11-05:00", "2016-09-19T14:45:12Z"]
    fields = [("Yld_Mass_D", "N", 8, 2), ("IsoTime", "C", 40)]
    table = _read(_write(tmp_path / "t.shp", fields, [(100.0, stamp) for stamp in stamps]))
    assert table.columns["timestamp"].astype("datetime64[s]").astype(str).tolist() == [
        "2016-09-19T14:45:10",
        "2016-09-19T14:45:11",
        "2016-09-19T14:45:12",
    ]


def _read_polygons(tmp_path, records: list, crs: CRS | None = None):
    """A polygon export (an `AppliedRate` per record) of `records`, each a record's rings, in `crs` (WGS84), read."""
    crs = crs or CRS.from_epsg(4326)
    path = tmp_path / "cells.shp"
    with shapefile.Writer(str(path), shapeType=shapefile.POLYGON) as writer:
        writer.field("AppliedRate", "N", 10, 2)
        for number, rings in enumerate(records):
            writer.poly(rings)
            writer.record(10.0 + number)
    path.with_suffix(".prj").write_text(crs.to_wkt("WKT1_ESRI"))
    return _read(Dataset("SHAPEFILE", path, tmp_path, "cells"))


def test_polygon_export_gives_centroids_and_areas(tmp_path):
    table = _read_polygons(
        tmp_path, [[[(-93.0, 41.0), (-93.0, 41.0001), (-92.9999, 41.0001), (-92.9999, 41.0), (-93.0, 41.0)]]]
    )
    assert table.columns["lon"][0] == pytest.approx(-92.99995)
    assert table.columns["lat"][0] == pytest.approx(41.00005)
    # 0.0001 deg x 0.0001 deg at 41 N is about 11.1 m x 8.4 m.
    assert 85 < table.columns["area"][0] < 100
    assert table.operation_type == "applied"


def test_polygons_read_in_chunks_are_each_measured_as_alone(tmp_path, monkeypatch, caplog):
    """Polygons were measured one call each (a yield export of a million cells read in minutes); they are measured
    in chunks of array calls now, each as when alone: its centroid (a point on it when it crosses itself) and its
    area on the ellipsoid (of the ground it covers, when it crosses itself), in the order of the records. pyshp's
    warning for each polygon of only counter-clockwise rings is not logged: a line a record."""
    from shapely.geometry import Polygon

    from conversion.readers.shapefile import decode
    from fields.geodesy import geodesic_area_m2

    monkeypatch.setattr(decode, "POLYGON_CHUNK", 2)
    square = [(-93.0, 41.0), (-93.0, 41.0001), (-92.9999, 41.0001), (-92.9999, 41.0), (-93.0, 41.0)]
    bow_tie = [(-93.0, 41.0), (-92.9999, 41.0001), (-92.9999, 41.0), (-93.0, 41.0001), (-93.0, 41.0)]
    hole = [(-92.99997, 41.00003), (-92.99993, 41.00003), (-92.99993, 41.00007), (-92.99997, 41.00003)]
    east = [(x + 0.001, y) for x, y in square]
    records = [[square], [bow_tie], [square, hole], [square[::-1]], [east]]
    table = _read_polygons(tmp_path, records)
    assert len(table) == len(records)
    # The bow tie covers its two triangles, which meet where its diagonals cross (measured as drawn, they cancelled
    # out: 0 m2)
    crossing = (-92.99995, 41.00005)
    lobes = [Polygon([bow_tie[1], bow_tie[2], crossing]), Polygon([bow_tie[3], bow_tie[0], crossing])]
    covered = {1: sum(geodesic_area_m2(lobe) for lobe in lobes)}
    assert covered[1] == pytest.approx(geodesic_area_m2(Polygon(square)) / 2, rel=1e-6)
    for number, rings in enumerate(records):
        polygon = Polygon(rings[0], rings[1:])
        centre = polygon.centroid if polygon.is_valid else polygon.representative_point()
        located = (table.columns["lon"][number], table.columns["lat"][number])
        assert located == pytest.approx((centre.x, centre.y), abs=1e-12), number
        area = covered.get(number, geodesic_area_m2(polygon))
        assert table.columns["area"][number] == pytest.approx(area, rel=1e-9), number
    assert not [record for record in caplog.records if record.name == "shapefile"]


def test_a_degenerate_polygon_is_a_cell_without_area_not_a_failed_data_set(tmp_path):
    """A ring of one position repeated (GEOS cannot segmentize it to measure it) failed the whole data set with an
    internal error (regression review); it is read as a cell of no area, the others as they are."""
    from shapely.geometry import Polygon

    from fields.geodesy import geodesic_area_m2

    square = [(-93.0, 41.0), (-93.0, 41.0001), (-92.9999, 41.0001), (-92.9999, 41.0), (-93.0, 41.0)]
    table = _read_polygons(tmp_path, [[square], [[(-93.0, 41.0)] * 4], [square]])
    assert len(table) == 3
    assert table.columns["area"][1] == 0
    assert table.columns["area"][0] == table.columns["area"][2] == pytest.approx(geodesic_area_m2(Polygon(square)))
    assert (table.columns["lon"][1], table.columns["lat"][1]) == (-93.0, 41.0)


@pytest.mark.parametrize(
    "bad_ring",
    [
        [(-93.0, 41.0)],  # one position: an IndexError failed the data set
        [(-93.0, 41.0), (-93.0, 41.0001), (float("nan"), 41.0001), (-93.0, 41.0)],
        [(-93.0, 41.0), (float("inf"), 41.0001), (-92.9999, 41.0), (-93.0, 41.0)],  # "Tolerance is too small"
        [(-93.0, 41.0), (-93.0, 41.0001), (-92.9999, 41.0001), (float("nan"), float("nan"))],  # a ring not closed
    ],
    ids=["one position", "a NaN position", "an infinite position", "a NaN closing position"],
)
def test_a_polygon_record_of_no_shape_is_left_out_not_a_failed_data_set(tmp_path, bad_ring):
    """Each failed the whole data set with an internal error; the record is left out, as one without a shape."""
    square = [(-93.0, 41.0), (-93.0, 41.0001), (-92.9999, 41.0001), (-92.9999, 41.0), (-93.0, 41.0)]
    table = _read_polygons(tmp_path, [[square], [bad_ring], [square]])
    assert len(table) == 2 and table.columns["appliedRate"].tolist() == [10.0, 12.0]
    assert any("1 " in warning and "left out" in warning for warning in table.warnings), table.warnings


def test_a_polygon_far_off_the_globe_is_not_measured(tmp_path):
    """A single cell 3,000,000 units wide without a .prj (no longitude/latitude) was measured on the ellipsoid, cut
    into one-degree pieces, before the data set was refused for it: 2.9 GB and 23 s for a 408-byte upload."""
    import tracemalloc

    path = tmp_path / "cells.shp"
    with shapefile.Writer(str(path), shapeType=shapefile.POLYGON) as writer:
        writer.field("AppliedRate", "N", 10, 2)
        writer.poly([[(0.0, 0.0), (0.0, 3e5), (3e5, 3e5), (3e5, 0.0), (0.0, 0.0)]])
        writer.record(10.0)
    tracemalloc.start()
    try:
        with pytest.raises(UnreadableDataset, match="no .prj file and the coordinates are not longitude/latitude"):
            _read(Dataset("SHAPEFILE", path, tmp_path, "cells"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 20 * 2**20  # (measured, a 3e5-wide cell took 290 MB)


@pytest.mark.parametrize("shape_type", [99, -1])
def test_a_shp_of_a_shape_type_no_shapefile_has_says_so(tmp_path, shape_type):
    """The message naming the type failed itself (a KeyError): "Leaf internal error" for a file at fault."""
    dataset = _write(tmp_path / "a.shp", [("AppliedRat", "N", 8, 2)], [(50.0,)])
    for part in ("a.shp", "a.shx"):
        data = bytearray((tmp_path / part).read_bytes())
        data[32:36] = shape_type.to_bytes(4, "little", signed=True)
        (tmp_path / part).write_bytes(bytes(data))
    message = f"a.shp: geometry type {shape_type}, which no shapefile has, is not points or polygons"
    with pytest.raises(UnreadableDataset, match="^" + re.escape(message)):
        _read(dataset)


def test_a_dbf_field_without_a_name_is_read_named_by_its_place(tmp_path):
    """A name of NUL bytes only: numpy renamed the field, and reading it failed the data set (an internal error)."""
    dataset = _write(tmp_path / "a.shp", [("Notes", "N", 8, 2), ("AppliedRat", "N", 8, 2)], [(7.0, 50.0), (8.0, 60.0)])
    data = bytearray((tmp_path / "a.dbf").read_bytes())
    data[32:43] = bytes(11)  # the first field's name
    (tmp_path / "a.dbf").write_bytes(bytes(data))
    table = _read(dataset)
    assert table.raw_columns["FIELD1"].tolist() == [7.0, 8.0]
    assert table.columns["appliedRate"].tolist() == [50.0, 60.0]


def test_projected_polygons_are_measured_on_the_ellipsoid(tmp_path):
    """A polygon export in UTM metres: the area is that of the polygon on the ground, not of its metre
    coordinates read as degrees. Checked against the projection's own areal scale at that place: a UTM square
    of 100 m x 100 m covers 10,000 m2 / areal scale of the ground."""
    utm = CRS.from_epsg(32615)
    x0, y0 = Transformer.from_crs(4326, utm, always_xy=True).transform(-93.4, 41.67)
    table = _read_polygons(
        tmp_path, [[[(x0, y0), (x0, y0 + 100), (x0 + 100, y0 + 100), (x0 + 100, y0), (x0, y0)]]], utm
    )

    lon, lat = Transformer.from_crs(utm, 4326, always_xy=True).transform(x0 + 50, y0 + 50)
    assert table.columns["lon"][0] == pytest.approx(lon, abs=1e-9)
    assert table.columns["lat"][0] == pytest.approx(lat, abs=1e-9)
    areal_scale = Proj(utm).get_factors(lon, lat).areal_scale
    assert areal_scale != pytest.approx(1.0, abs=1e-4)  # the check below can tell projected from ground area
    assert table.columns["area"][0] == pytest.approx(10_000 / areal_scale, rel=1e-5)


def test_a_deleted_record_is_no_point(tmp_path):
    """A DBF record flagged deleted (`*`) is gone from the file's data: its point is not read."""
    _write_points(
        tmp_path / "d.shp", [(-93.0, 41.0), (-93.1, 41.1), (-93.2, 41.2)], CRS.from_epsg(4326), [1.0, 2.0, 3.0]
    )
    dbf = tmp_path / "d.dbf"
    data = bytearray(dbf.read_bytes())
    header_len = int.from_bytes(data[8:10], "little")
    assert data[header_len : header_len + 1] == b" "
    data[header_len] = ord("*")
    dbf.write_bytes(bytes(data))
    table = _read(Dataset("SHAPEFILE", tmp_path / "d.shp", tmp_path, "d"))
    np.testing.assert_allclose(table.columns["dryMassPerArea"], np.array([2.0, 3.0]) * LB_AC_IN_KG_HA)
    np.testing.assert_allclose(table.columns["lon"], [-93.1, -93.2])


@pytest.mark.parametrize(
    ("flag", "status"), [("T", 1.0), ("Y", 1.0), ("t", 1.0), ("F", 0.0), ("N", 0.0), ("?", np.nan)]
)
def test_a_logical_work_status_reads_true_yes_false_and_no(tmp_path, flag, status):
    dataset = _write(tmp_path / "w.shp", [("Yld_Mass_D", "N", 8, 2), ("WorkStatus", "L")], [(100.0, True)] * 2)
    dbf = tmp_path / "w.dbf"
    data = bytearray(dbf.read_bytes())
    header_len, record_len = int.from_bytes(data[8:10], "little"), int.from_bytes(data[10:12], "little")
    for record in range(2):  # the logical field is each record's last byte: written as the exporter wrote it
        at = header_len + (record + 1) * record_len - 1
        assert data[at : at + 1] == b"T"
        data[at] = ord(flag)
    dbf.write_bytes(bytes(data))
    table = _read(dataset)
    np.testing.assert_array_equal(table.columns["recordingStatus"], [status, status])


def test_an_empty_yield_column_does_not_make_an_application_a_harvest(tmp_path):
    """An exporter's blank yield column (every value missing) is no yield: the rate the file holds decides."""
    fields = [("AppliedRat", "N", 8, 2), ("Yld_Vol_Dr", "N", 8, 2)]
    table = _read(_write(tmp_path / "a.shp", fields, [(50.0, None)] * 3))
    assert table.operation_type == "applied"
    assert "dryVolumePerArea" not in table.columns and "appliedRate" in table.columns


@pytest.mark.parametrize(
    ("column", "unit", "factor"),
    # without a unit in the name or a metadata file, the rate is kept as it is, its unit said unknown
    [("AppldRt", "unknown", 1.0), ("AppliedRat", "unknown", 1.0), ("Rt_Apd_lb_", "kg/ha", LB_AC_IN_KG_HA)],
)
def test_applied_rate_columns_of_exporters_and_their_re_exports(tmp_path, column, unit, factor):
    dataset = _write(tmp_path / "a.shp", [(column, "N", 8, 2)], [(50.0,), (60.0,)])
    table = _read(dataset)
    assert table.operation_type == "applied" and table.units["appliedRate"] == unit
    np.testing.assert_allclose(table.columns["appliedRate"], np.array([50.0, 60.0]) * factor)


@pytest.mark.parametrize(
    ("attributes", "unit", "factor"),
    [
        # a DBF name is cut to 10 characters: the metadata's full name it begins is the column's
        ([("AppliedRate", "gal1ac-1")], "L/ha", GALLON_L / ACRE_HA),
        # a name of its own wins over a longer name it begins
        ([("AppliedRateTarget", "gal1ac-1"), ("AppliedRat", "lb1ac-1")], "kg/ha", LB_AC_IN_KG_HA),
        # two full names it begins, of two units: neither is known to be the column's
        ([("AppliedRateA", "gal1ac-1"), ("AppliedRateB", "lb1ac-1")], "unknown", 1.0),
        # a full name that only shares its start is another column's
        ([("AppliedRa", "gal1ac-1")], "unknown", 1.0),
    ],
)
def test_a_cut_column_name_takes_the_unit_of_the_one_metadata_name_it_begins(tmp_path, attributes, unit, factor):
    dataset = _write(tmp_path / "rate.shp", [("AppliedRat", "N", 8, 2)], [(50.0,), (60.0,)])
    metadata = {"DataAttributes": [{"Name": name, "Unit": value} for name, value in attributes]}
    (tmp_path / "rate-Deere-Metadata.json").write_text(json.dumps(metadata))
    table = _read(dataset)
    assert table.units["appliedRate"] == unit
    np.testing.assert_allclose(table.columns["appliedRate"], np.array([50.0, 60.0]) * factor)


def test_a_column_that_only_contains_a_rates_name_is_not_that_rate(tmp_path):
    dataset = _write(tmp_path / "a.shp", [("Yld_Mass_D", "N", 8, 2), ("MaxApplRat", "N", 8, 2)], [(100.0, 5.0)])
    table = _read(dataset)
    assert "appliedRate" not in table.columns and table.operation_type == "harvested"


def test_blank_iso_times_give_way_to_the_time_column(tmp_path):
    fields = [("Yld_Mass_D", "N", 8, 2), ("IsoTime", "C", 30), ("Time", "C", 30)]
    rows = [(100.0, "", f"9/19/2016 4:45:{10 + i} PM") for i in range(3)]
    table = _read(_write(tmp_path / "t.shp", fields, rows))
    assert table.columns["timestamp"].astype("datetime64[s]").astype(str).tolist() == [
        f"2016-09-19T16:45:{10 + i}" for i in range(3)
    ]


def test_an_elevation_column_wins_over_the_points_z(tmp_path):
    """The exporter's Elevation column (ft) is what it logged; a PointZ's z may be the receiver's raw height."""
    dataset = _write(
        tmp_path / "z.shp",
        [("Yld_Mass_D", "N", 8, 2), ("Elevation_", "N", 8, 2)],
        [(100.0, 1000.0), (100.0, 1010.0)],
        shape_type=shapefile.POINTZ,
        z=[500.0, 501.0],
    )
    table = _read(dataset)
    np.testing.assert_allclose(table.columns["elevation"], np.array([1000.0, 1010.0]) * 0.3048)
    assert table.units["elevation"] == "m"
    without = _write(
        tmp_path / "z2.shp",
        [("Yld_Mass_D", "N", 8, 2)],
        [(100.0,), (100.0,)],
        shape_type=shapefile.POINTZ,
        z=[500.0, 501.0],
    )
    np.testing.assert_allclose(_read(without).columns["elevation"], [500.0, 501.0])


def test_a_pointz_whose_z_is_zero_everywhere_has_no_elevation(tmp_path):
    """Exporters that write PointZ without a height fill z with 0: that is no elevation of 0 m (it gave an elevation
    in the units, the summary and an image)."""
    dataset = _write(
        tmp_path / "flat.shp", [("Yld_Mass_D", "N", 8, 2)], [(100.0,), (100.0,)], shape_type=shapefile.POINTZ, z=[0, 0]
    )
    table = _read(dataset)
    assert "elevation" not in table.columns and "elevation" not in table.units


def test_longitudes_past_180_without_a_prj_are_refused(tmp_path):
    from conversion.readers import UnreadableDataset

    _write_points(tmp_path / "far.shp", [(200.0, 41.0), (200.001, 41.0)], None, [1.0, 2.0])
    with pytest.raises(UnreadableDataset, match="not longitude/latitude"):
        _read(Dataset("SHAPEFILE", tmp_path / "far.shp", tmp_path, "far"))


def test_bytes_past_the_records_the_dbf_declares_are_not_read(tmp_path):
    """Some exporters leave a stray record past the count in the DBF header: the header's count is what there is."""
    _write_points(tmp_path / "s.shp", [(-93.0, 41.0), (-93.1, 41.1)], CRS.from_epsg(4326), [1.0, 2.0])
    dbf = tmp_path / "s.dbf"
    data = dbf.read_bytes()
    record_len = int.from_bytes(data[10:12], "little")
    body = data[:-1] if data.endswith(b"\x1a") else data  # (pyshp writes no end-of-file mark)
    dbf.write_bytes(body + body[-record_len:])  # the last record once more, uncounted
    table = _read(Dataset("SHAPEFILE", tmp_path / "s.shp", tmp_path, "s"))
    np.testing.assert_allclose(table.columns["dryMassPerArea"], np.array([1.0, 2.0]) * LB_AC_IN_KG_HA)


def test_column_names_of_eleven_characters_are_read_whole_and_twins_are_each_kept(tmp_path):
    """pyshp cut a name of all 11 bytes to 10, so `TargetRate1` and `TargetRate2` were one column `TargetRate` (the
    second in the first's place, unsaid); a writer's two columns of one name were one too."""
    fields = [("A", "N", 8, 2), ("B", "N", 8, 2), ("Moisture", "N", 6, 2), ("Moisture", "N", 6, 2)]
    dataset = _write(tmp_path / "t.shp", fields, [(1.5, 2.5, 10.0, 20.0), (1.6, 2.6, 11.0, 21.0)])
    # (pyshp writes at most 10 characters: the names of all 11 bytes, without a NUL, as John Deere's exports have)
    dbf = tmp_path / "t.dbf"
    data = bytearray(dbf.read_bytes())
    data[32:43], data[64:75] = b"TargetRate1", b"TargetRate2"
    dbf.write_bytes(bytes(data))
    table = _read(dataset)
    assert list(table.raw_columns) == ["TargetRate1", "TargetRate2", "Moisture", "Moisture_2"]
    assert table.raw_columns["TargetRate2"].tolist() == [2.5, 2.6]
    assert table.raw_columns["Moisture_2"].tolist() == [20.0, 21.0]
    assert table.columns["harvestMoisture"].tolist() == [10.0, 11.0]  # the first of the twins, as a reader meets it
    assert "Moisture: another column has this name; the one at place 4 is read as Moisture_2" in table.warnings


def test_jd_exports_keep_their_eleven_character_column_names(detect_zip):
    dataset = _only_dataset(detect_zip(f"{JD}/Export From MyJohnDeere - Seeding.zip"))
    raw = _read(dataset).raw_columns
    assert {"AppliedRate", "ControlRate"} <= set(raw) and not {"AppliedRat", "ControlRat"} & set(raw)


@pytest.mark.parametrize("column", ["Time", "DateTime", "Date"])
def test_iso_8601_text_in_a_time_column_is_read(tmp_path, column):
    """Such a column gave no time at all, said as "no value is a time (ISO 8601, ...)"."""
    rows = [(100.0, "2016-09-19T16:45:10.000Z"), (100.0, "2016-09-19T16:45:11Z"), (100.0, "2016-09-19 18:45:12+02:00")]
    table = _read(_write(tmp_path / "t.shp", [("Yld_Mass_D", "N", 8, 2), (column, "C", 30)], rows))
    assert table.columns["timestamp"].astype("datetime64[s]").astype(str).tolist() == [
        "2016-09-19T16:45:10",
        "2016-09-19T16:45:11",
        "2016-09-19T16:45:12",
    ]
    assert not [w for w in table.warnings if "time" in w.lower()]


@pytest.mark.parametrize("written", [["now", "today", "now"], ["2016-09", "2016-10", "2016"]], ids=["clock", "months"])
def test_iso_times_that_are_no_instants_are_no_time(tmp_path, written):
    """numpy's parser read `now` and `today` (the conversion's clock) and `2016-09` (the month's first instant)."""
    rows = [(100.0, value) for value in written]
    table = _read(_write(tmp_path / "t.shp", [("Yld_Mass_D", "N", 8, 2), ("IsoTime", "C", 30)], rows))
    assert np.isnat(table.columns["timestamp"]).all()
    assert "IsoTime: no value is a time (ISO 8601, or as the exporters write it); points have no timestamp" in (
        table.warnings
    )


def test_a_dbf_date_column_reads_as_iso_dates_and_no_date_as_none(tmp_path):
    """`00000000` is dBase's (and GDAL's) writing of no date: it was the value "00000000". A date column is read as
    the day's first instant when no other column gives times."""
    fields = [("Yld_Mass_D", "N", 8, 2), ("Date", "D")]
    table = _read(_write(tmp_path / "t.shp", fields, [(100.0, "20160919"), (100.0, "00000000"), (100.0, "")]))
    assert table.raw_columns["Date"].tolist() == ["2016-09-19", None, None]
    assert table.columns["timestamp"].astype("datetime64[s]").astype(str).tolist()[0] == "2016-09-19T00:00:00"
    assert np.isnat(table.columns["timestamp"][1:]).all()


def test_a_multipoint_file_is_read_at_the_first_point_of_each_record(tmp_path):
    """As a GeoJSON MultiPoint is; the file was refused whole."""
    path = tmp_path / "m.shp"
    with shapefile.Writer(str(path), shapeType=shapefile.MULTIPOINTZ) as writer:
        writer.field("Yld_Mass_D", "N", 8, 2)
        writer.multipointz([[-93.0, 41.0, 300.0]])
        writer.record(100.0)
        writer.multipointz([[-93.1, 41.1, 301.0], [-93.2, 41.2, 302.0]])
        writer.record(200.0)
    path.with_suffix(".prj").write_text(CRS.from_epsg(4326).to_wkt("WKT1_ESRI"))
    table = _read(Dataset("SHAPEFILE", path, tmp_path, "m"))
    np.testing.assert_allclose(table.columns["lon"], [-93.0, -93.1])
    np.testing.assert_allclose(table.columns["elevation"], [300.0, 301.0])
    assert "m.shp: 1 of 2 records are several points; each is read at its first" in table.warnings


def test_a_deleted_record_of_a_pointz_file_takes_its_elevation_with_it(tmp_path):
    dataset = _write(
        tmp_path / "z.shp",
        [("Yld_Mass_D", "N", 8, 2)],
        [(1.0,), (2.0,), (3.0,)],
        shape_type=shapefile.POINTZ,
        z=[300.0, 301.0, 302.0],
    )
    dbf = tmp_path / "z.dbf"
    data = bytearray(dbf.read_bytes())
    data[int.from_bytes(data[8:10], "little")] = ord("*")
    dbf.write_bytes(bytes(data))
    table = _read(dataset)
    np.testing.assert_allclose(table.columns["elevation"], [301.0, 302.0])
    np.testing.assert_allclose(table.columns["lon"], [-93.0001, -93.0002])


@pytest.mark.parametrize(
    ("unit", "meridian", "expected"),
    [
        ('UNIT["Grad",0.015707963267948967]', 'PRIMEM["Greenwich",0.0]', (-83.8413, 36.9)),
        ('UNIT["Degree",0.0174532925199433]', 'PRIMEM["Paris",2.33722917]', (-90.81977083, 41.0)),
        ('UNIT["Degree",0.0174532925199433]', 'PRIMEM["Greenwich",0.0]', (-93.157, 41.0)),
    ],
    ids=["grads", "paris", "plain"],
)
def test_a_longitude_latitude_prj_on_the_wgs84_ellipsoid_counts_in_its_own_unit_and_meridian(
    tmp_path, unit, meridian, expected
):
    """Any such system was taken as WGS84 degrees from Greenwich (GDAL: -93.157 grads are -83.841 degrees)."""
    path = tmp_path / "g.shp"
    with shapefile.Writer(str(path), shapeType=shapefile.POINT) as writer:
        writer.field("Yld_Mass_D", "N", 8, 2)
        writer.point(-93.157, 41.0)
        writer.record(100.0)
    path.with_suffix(".prj").write_text(
        f'GEOGCS["GCS_Own",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],{meridian},{unit}]'
    )
    table = _read(Dataset("SHAPEFILE", path, tmp_path, "g"))
    assert (table.columns["lon"][0], table.columns["lat"][0]) == pytest.approx(expected, abs=1e-7)


@pytest.mark.parametrize("epsg", [31467, 27200, 21781, 32632])
def test_a_prj_with_a_datum_grid_reads_as_gdal_reads_it(tmp_path, epsg):
    """GDAL (the gdal-bin `make run` and `make test` install) is the oracle: Debian's PROJ uses the datum shift grids
    of proj-data (DHDN's BETA2007, NZGD49's, Switzerland's CHENYX06); pyproj's wheel has none and fell back to a
    Helmert shift, 0.5 to 2.5 m off."""
    import subprocess

    transform = shutil.which("gdaltransform")
    if transform is None:
        pytest.skip("gdaltransform (gdal-bin) is not installed")
    crs = CRS.from_epsg(epsg)
    # A point near the middle of the system's area of use
    area = crs.area_of_use
    lon, lat = (area.west + area.east) / 2, (area.south + area.north) / 2
    x, y = Transformer.from_crs(CRS.from_epsg(4326), crs, always_xy=True).transform(lon, lat)
    _write_points(tmp_path / "p.shp", [(x, y)], crs, [100.0])
    table = _read(Dataset("SHAPEFILE", tmp_path / "p.shp", tmp_path, "p"))
    gdal = subprocess.run(
        [transform, "-s_srs", f"EPSG:{epsg}", "-t_srs", "OGC:CRS84", "-output_xy"],
        input=f"{x!r} {y!r}\n",
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert table.columns["lon"][0] == pytest.approx(float(gdal[0]), abs=1e-7)
    assert table.columns["lat"][0] == pytest.approx(float(gdal[1]), abs=1e-7)


def test_whole_numbers_longer_than_a_double_holds_are_read_exactly(tmp_path):
    """An id in an N(18,0) field was read through a double: 123456789012345678 as 1.2345678901234568e+17, and
    9007199254740993 as ...992 (GDAL reads such a field as a 64-bit integer)."""
    fields = [("Yld_Mass_D", "N", 8, 2), ("BigId", "N", 18, 0)]
    rows = [(100.0, 123456789012345678), (100.0, 9007199254740993), (100.0, None), (100.0, 12)]
    table = _read(_write(tmp_path / "b.shp", fields, rows))
    assert table.raw_columns["BigId"].tolist() == [123456789012345678, 9007199254740993, None, 12]
    raw = json.loads(_written_raw(table))
    assert [f["properties"].get("BigId") for f in raw["features"]] == [123456789012345678, 9007199254740993, None, 12]


def _written_raw(table) -> str:
    import io

    buffer = io.StringIO()
    standardize.write_raw_geojson(table, buffer)
    return buffer.getvalue()


def test_three_columns_of_one_name_are_each_kept(tmp_path):
    table = _read(_write(tmp_path / "t.shp", [("Moisture", "N", 6, 2)] * 3, [(10.0, 20.0, 30.0), (11.0, 21.0, 31.0)]))
    assert list(table.raw_columns) == ["Moisture", "Moisture_2", "Moisture_3"]
    assert table.raw_columns["Moisture_3"].tolist() == [30.0, 31.0]


def test_a_multipoint_file_with_a_damaged_index_is_refused(tmp_path):
    """As a point or polygon file's is: its .shx is checked whole."""
    path = tmp_path / "m.shp"
    with shapefile.Writer(str(path), shapeType=shapefile.MULTIPOINT) as writer:
        writer.field("Yld_Mass_D", "N", 8, 2)
        for i in range(3):
            writer.multipoint([[-93.0 - i * 1e-4, 41.0]])
            writer.record(100.0)
    path.with_suffix(".prj").write_text(CRS.from_epsg(4326).to_wkt("WKT1_ESRI"))
    shx = path.with_suffix(".shx")
    shx.write_bytes(shx.read_bytes()[:-3])  # cut inside its last entry
    with pytest.raises(UnreadableDataset, match="index is cut short"):
        _read(Dataset("SHAPEFILE", path, tmp_path, "m"))


def test_numbers_of_many_decimals_stay_a_column_of_floats(tmp_path):
    """Only whole numbers longer than a double holds make a column of exact values: one of coordinates written to 14
    decimals stays floats."""
    fields = [("Yld_Mass_D", "N", 8, 2), ("Longitude", "N", 19, 14)]
    table = _read(_write(tmp_path / "f.shp", fields, [(100.0, -93.12345678901234), (100.0, -93.5)]))
    assert table.raw_columns["Longitude"].dtype.kind == "f"
    assert table.raw_columns["Longitude"].tolist() == pytest.approx([-93.12345678901234, -93.5], abs=1e-13)
