"""Crop to a field: exactly the points the polygon covers, checked point by point with shapely, and their totals."""

import numpy as np
import pytest
import shapely
from shapely.geometry import MultiPolygon, Point, Polygon, box

from conversion import standardize
from conversion.archive import detect, safe_extract
from conversion.crop import table_crop
from conversion.readers import Dataset, PointTable, get_reader

DOTNET_TIMELOGS = "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata/TimeLogs/ValidTimeLogs"
JD_HARVEST = "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Harvest.zip"


@pytest.fixture(scope="module")
def jd_cleaned(samples_dir, tmp_path_factory) -> PointTable:
    dest = tmp_path_factory.mktemp("jd")
    safe_extract(samples_dir / JD_HARVEST, dest)
    [dataset] = detect(dest).datasets
    [table] = get_reader(dataset.format).read(dataset)
    cleaned, _ = standardize.standardize(table)
    return cleaned


@pytest.fixture(scope="module")
def isoxml_cleaned(samples_dir) -> PointTable:
    folder = samples_dir / DOTNET_TIMELOGS
    tables = get_reader("ISOXML").read(Dataset("ISOXML", folder / "TASKDATA.XML", folder, "ValidTimeLogs"))
    cleaned, _ = standardize.standardize(next(t for t in tables if t.name == "SAV"))
    return cleaned


def _bbox(table: PointTable) -> tuple[float, float, float, float]:
    lon, lat = table.columns["lon"], table.columns["lat"]
    return float(lon.min()), float(lat.min()), float(lon.max()), float(lat.max())


def _western_half(table: PointTable) -> Polygon:
    west, south, east, north = _bbox(table)
    return box(west, south, (west + east) / 2, north)


def _concave_with_hole(table: PointTable) -> Polygon:
    """A U shape over the bounding box (open to the north) with a hole in its bottom bar."""
    w, s, e, n = _bbox(table)
    dx, dy = e - w, n - s
    shell = [(w, s), (e, s), (e, n), (w + 0.7 * dx, n), (w + 0.7 * dx, s + 0.4 * dy), (w + 0.3 * dx, s + 0.4 * dy)]
    shell += [(w + 0.3 * dx, n), (w, n)]
    hole = Point(w + 0.5 * dx, s + 0.2 * dy).buffer(0.1 * min(dx, dy))
    return Polygon(shell, [list(hole.exterior.coords)])


def _expected_mask(table: PointTable, geometry) -> np.ndarray:
    """The independent check: one shapely Point per point, kept when the polygon covers it."""
    lon, lat = table.columns["lon"].tolist(), table.columns["lat"].tolist()
    return np.array([Point(x, y).covered_by(geometry) for x, y in zip(lon, lat, strict=True)])


def _point_sums(table: PointTable, mask: np.ndarray) -> dict[str, float]:
    """Totals from per-point contributions in plain Python: area, and rate x area for each rate."""
    area = table.columns["area"][mask].tolist()
    sums = {"totalArea": sum(a for a in area if a == a)}
    for total, rate in (("totalWetMass", "wetMassPerArea"), ("totalDryMass", "dryMassPerArea")):
        if rate in table.columns:
            pairs = zip(table.columns[rate][mask].tolist(), area, strict=True)
            sums[total] = sum(r * a / 1e4 for r, a in pairs if r == r and a == a)
    return sums


@pytest.mark.parametrize("shape", [_western_half, _concave_with_hole])
@pytest.mark.parametrize("fixture", ["jd_cleaned", "isoxml_cleaned"])
def test_crop_keeps_exactly_the_covered_points_and_their_totals(request, fixture, shape):
    # Given a cleaned real harvest and a polygon over part of it
    table = request.getfixturevalue(fixture)
    geometry = shape(table)
    expected = _expected_mask(table, geometry)
    assert 0 < expected.sum() < len(table)
    # When cropped
    cropped = table_crop(table, geometry)
    # Then the kept points are those shapely finds covered, in order, with every column (and raw column) aligned
    assert len(cropped) == int(expected.sum())
    for name, values in table.columns.items():
        kept = values[expected]
        if values.dtype.kind == "f":
            np.testing.assert_array_equal(cropped.columns[name], kept, err_msg=name)
        else:
            assert list(cropped.columns[name]) == list(kept), name
    for name, values in table.raw_columns.items():
        assert len(cropped.raw_columns[name]) == len(cropped), name
        assert list(cropped.raw_columns[name][:50]) == list(values[expected][:50]), name
    # And its totals are the sums over those points of their own contributions
    totals = standardize.totals(cropped)
    for key, value in _point_sums(table, expected).items():
        assert totals[key]["value"] == pytest.approx(value, rel=1e-9), key
    assert cropped.recorded_totals == {}
    ts = table.columns["timestamp"][expected]
    assert cropped.start == ts.min() and cropped.end == ts.max()


def test_boundary_points_are_kept_and_a_multipolygon_crops_each_part():
    lon = np.array([0.0, 1.0, 0.5, 2.0, 5.0, 5.5, np.nan, 9.0])
    lat = np.array([0.0, 0.5, 0.5, 2.0, 5.0, 5.5, 1.0, 9.0])
    table = PointTable(
        name="t",
        operation_type="other",
        columns={"lon": lon, "lat": lat, "v": np.arange(8.0)},
        raw_columns={"V": np.arange(8)},
    )
    # Corner (0, 0) and edge point (1, 0.5) lie on the first square's boundary; (9, 9) is outside both parts.
    geometry = MultiPolygon([box(0, 0, 1, 1), box(5, 5, 6, 6)])
    cropped = table_crop(table, geometry)
    assert cropped.columns["v"].tolist() == [0.0, 1.0, 2.0, 4.0, 5.0]
    assert cropped.raw_columns["V"].tolist() == [0, 1, 2, 4, 5]
    assert not shapely.is_prepared(geometry)


def test_crop_refuses_what_is_not_a_polygon():
    table = PointTable(name="t", operation_type="other", columns={"lon": np.zeros(1), "lat": np.zeros(1)})
    with pytest.raises(ValueError, match="Polygon"):
        table_crop(table, Point(0, 0))
    with pytest.raises(ValueError, match="non-empty"):
        table_crop(table, Polygon())
