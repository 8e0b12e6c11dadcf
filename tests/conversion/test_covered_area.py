"""The covered area (the summary's geometry): the points' swaths drawn on cells, gaps closed."""

import math

import numpy as np
import pytest
import shapely
from shapely.geometry import shape

from conversion import standardize
from conversion.merge import tables_merge
from conversion.readers import PointTable
from conversion.standardize import EARTH_RADIUS_M
from fields.geodesy import geodesic_area_m2


def _table(lon, lat, width: float = 10.0) -> PointTable:
    lon, lat = np.asarray(lon, dtype=float), np.asarray(lat, dtype=float)
    return PointTable(
        name="t",
        operation_type="applied",
        columns={"lon": lon, "lat": lat, "equipmentWidth": np.full(len(lon), width)},
        units={"equipmentWidth": "m"},
    )


def _lawn(rows: int = 10, columns: int = 20, step_m: float = 5.0, lon0: float = -93.152, lat0: float = 41.668):
    """Points every `step_m` metres on a rows x columns grid."""
    dlat = step_m / (math.radians(1) * EARTH_RADIUS_M)
    dlon = dlat / math.cos(math.radians(lat0))
    lon, lat = np.meshgrid(lon0 + np.arange(columns) * dlon, lat0 + np.arange(rows) * dlat)
    return lon.ravel(), lat.ravel()


def test_the_coverage_keeps_within_a_cell_of_the_points():
    lon, lat = _lawn()
    covered = shape(standardize.coverage(_table(lon, lat)))
    cell_lat = 10.0 / (math.radians(1) * EARTH_RADIUS_M)
    cell_lon = cell_lat / math.cos(math.radians(41.668))
    west, south, east, north = covered.bounds
    # The cells holding points, and no more: an extra row of cells along the edges of the points' extent (2 cells
    # from the points) was counted in once.
    assert lon.min() - cell_lon < west <= lon.min()
    assert lat.min() - cell_lat < south <= lat.min()
    assert lon.max() <= east < lon.max() + cell_lon
    assert lat.max() <= north < lat.max() + cell_lat
    assert shapely.contains(covered.buffer(1e-9), shapely.points(lon, lat)).all()


def test_a_stray_position_far_away_adds_one_cell_not_the_land_between():
    lon, lat = _lawn()
    alone = shape(standardize.coverage(_table(lon, lat)))
    # One position logged in Germany by a machine working in Iowa (a GPS glitch, a log of another day)
    stray = shape(standardize.coverage(_table(np.append(lon, 8.0), np.append(lat, 52.0))))
    near = stray.intersection(shapely.box(-94, 41, -92, 42))
    # (the grid is laid from the points' median, which the stray point moves a little)
    assert geodesic_area_m2(near) == pytest.approx(geodesic_area_m2(alone), rel=0.25)
    assert shapely.contains(stray.buffer(1e-9), shapely.points([-93.152, 8.0], [41.668, 52.0])).all()
    # It covers a cell of about 10 m x 10 m there, and nothing on the way (it was squares of kilometres).
    far = stray.difference(shapely.box(-94, 41, -92, 42))
    assert 25.0 < geodesic_area_m2(far) < 400.0
    assert not stray.intersects(shapely.box(-90.0, 40.0, 0.0, 50.0))


@pytest.mark.parametrize("bearing", [0.0, 30.0, 45.0, 90.0])
def test_a_boom_pass_covers_its_swath_in_any_direction(bearing):
    """A 30 m boom driven 600 m, logging every 2 m: its swath is 1.8 ha, whichever way it runs. Cells one width wide
    made it a band two cells wide wherever the pass ran across the grid's lines (3.2 ha on the diagonal): the summary's
    covered area of a JD sprayer file was 42 % over the union of its swaths."""
    step, width, lat0, lon0 = 2.0, 30.0, 41.668, -93.152
    metres = np.arange(301) * step
    north = metres * math.cos(math.radians(bearing))
    east = metres * math.sin(math.radians(bearing))
    lat = lat0 + np.degrees(north / EARTH_RADIUS_M)
    lon = lon0 + np.degrees(east / (EARTH_RADIUS_M * math.cos(math.radians(lat0))))
    table = standardize.derive(_table(lon, lat, width=width))
    covered = shape(standardize.coverage(table))
    assert geodesic_area_m2(covered) == pytest.approx(600 * 30, rel=0.15)
    # Within a quarter width of the swath's edges, all round
    swath = shapely.LineString(np.column_stack((east, north))).buffer(width / 2, cap_style="flat")
    kx = math.radians(1) * EARTH_RADIUS_M * math.cos(math.radians(lat0))
    ky = math.radians(1) * EARTH_RADIUS_M
    local = shapely.transform(covered, lambda c: np.column_stack(((c[:, 0] - lon0) * kx, (c[:, 1] - lat0) * ky)))
    assert local.difference(swath.buffer(width / 4)).area < 1.0
    assert swath.difference(local.buffer(width / 4)).area < 1.0


def test_a_width_or_distance_logged_wrong_is_drawn_at_most_100_m():
    """One point logging a working width of 1,000 km and a distance of 1,000 km (a spike): its swath would take
    billions of samples; it is drawn 100 m at most, and the rest of the pass as logged."""
    lon, lat = _lawn(rows=1, columns=50)
    table = standardize.derive(_table(lon, lat, width=10.0))
    table.columns["equipmentWidth"][25] = 1e6
    table.columns["distance"][25] = 1e6
    covered = geodesic_area_m2(shape(standardize.coverage(table)))
    assert 245 * 10 < covered < 245 * 10 + 100 * 100 + 100 * 10


@pytest.mark.parametrize(("lon0", "lat0"), [(10.0, 90.0), (10.0, -90.0), (10.0, 89.99995), (179.9999, 45.0)])
def test_points_at_a_pole_or_the_antimeridian_cover_ground_on_the_globe(lon0, lat0):
    """At latitude 90 a degree of longitude is no distance: the grid's was 0 m and the coverage reached longitudes of
    1e11 (the file failed with an internal error when its fields were looked for). Swaths past a pole or the
    antimeridian are cut there."""
    lon = lon0 + np.arange(50) * 1e-5
    table = standardize.derive(_table(np.minimum(lon, 180.0), np.full(50, lat0), width=10.0))
    covered = shape(standardize.coverage(table))
    assert covered.is_valid and not covered.is_empty
    west, south, east, north = covered.bounds
    assert -180 <= west and east <= 180 and -90 <= south and north <= 90
    assert 0 < geodesic_area_m2(covered) < 1e6


def test_rows_written_per_section_take_each_section_s_own_heading():
    """Three 10 m sections side by side, one row each per second, driving north 600 m, no heading logged: in table
    order the previous row is the next section at the same moment, so the derived heading ran east-west across the
    boom, and the swaths were drawn along it."""
    lat0, lon0, seconds = 41.668, -93.152, 301
    kx = math.radians(1) * EARTH_RADIUS_M * math.cos(math.radians(lat0))
    north = np.repeat(np.arange(seconds) * 2.0, 3)
    east = np.tile([-10.0, 0.0, 10.0], seconds)
    table = _table(lon0 + east / kx, lat0 + np.degrees(north / EARTH_RADIUS_M), width=10.0)
    table.columns["sectionId"] = np.tile([1.0, 2.0, 3.0], seconds)
    table.columns["timestamp"] = np.datetime64("2024-05-01T10:00:00", "ms") + np.repeat(
        np.arange(seconds) * np.timedelta64(1000, "ms"), 3
    )
    table.columns["distance"] = np.where(north > 0, 2.0, np.nan)
    derived = standardize.derive(table)
    heading = derived.columns["heading"]
    assert np.isnan(heading[:3]).all() and np.allclose(heading[3:] % 360, 0.0, atol=1e-6)
    # The whole 30 m swath, and at most a cell (a quarter of the boom) more on each side (it was 13,700 m2)
    covered = geodesic_area_m2(shape(standardize.coverage(derived)))
    assert 600 * 30 * 0.99 < covered < 600 * (30 + 2 * 7.5)


def _pass(bearing: float, width: float, *, start_m=(0.0, 0.0), length_m: float = 400.0, second: int = 0) -> PointTable:
    """A machine `width` wide driven `length_m` from `start_m` (metres east and north of the origin) on `bearing`,
    logging every 2 m, one point a second from `second`."""
    lat0, lon0 = 41.668, -93.152
    metres = np.arange(int(length_m / 2) + 1) * 2.0
    north = start_m[1] + metres * math.cos(math.radians(bearing))
    east = start_m[0] + metres * math.sin(math.radians(bearing))
    lat = lat0 + np.degrees(north / EARTH_RADIUS_M)
    lon = lon0 + np.degrees(east / (EARTH_RADIUS_M * math.cos(math.radians(lat0))))
    table = _table(lon, lat, width=width)
    table.columns["timestamp"] = np.datetime64("2024-04-24T10:00:00", "ms") + (
        (second + np.arange(len(lon))) * 1000
    ).astype("timedelta64[ms]")
    return standardize.derive(table)


def test_the_coverage_of_several_files_is_each_files_coverage_together():
    """The files of a merge (an operation's automerged file) were drawn on one grid, its cells as wide as a quarter of
    the median machine and laid from the median point: the same ground came out differently as files joined, and
    an operation covered less of a field than one of its files did (a reviewer saw 71.5 % of a field where one of its
    files covered 72.1 %, the figure moving by points as files on another field joined)."""
    boom = _pass(10.0, 36.0)
    narrow = _pass(100.0, 6.0, start_m=(-100.0, 200.0), second=1_000)
    elsewhere = _pass(0.0, 6.0, start_m=(3_000.0, 0.0), second=2_000)
    alone, two, three = (
        shape(standardize.coverage(tables_merge(tables, name="op")))
        for tables in ([boom], [boom, narrow], [boom, narrow, elsewhere])
    )
    # Each file's covered ground stays covered, whatever joins it
    for covered in (two, three):
        assert alone.difference(covered).area < 1e-12
        assert shape(standardize.coverage(narrow)).difference(covered).area < 1e-12
    # A file elsewhere changes nothing here, and the same file twice adds nothing
    here = shapely.box(-93.16, 41.66, -93.145, 41.68)
    assert three.intersection(here).symmetric_difference(two).area < 1e-12
    assert shape(standardize.coverage(tables_merge([boom, boom], name="twice"))).equals(alone)
