"""Property map images: decoded back with Pillow and checked against values computed here independently."""

import io
import math
import os
import re

import numpy as np
import pytest
import shapely
from PIL import Image
from pyproj import Transformer

from conversion.images import DEFAULT_COLOR_RAMP, MAX_IMAGE_SIDE, render_property_images

LON0, LAT0 = -93.5, 42.0
RES = 0.001  # coarse cells keep images small and points well inside their cells
RAMP = {
    "0%": [255, 0, 0],
    "35%": [200, 100, 0],
    "45%": [150, 150, 0],
    "55%": [100, 200, 0],
    "65%": [50, 200, 50],
    "75%": [0, 200, 100],
    "100%": [0, 0, 255],
    "nv": [0, 0, 0, 0],
}
STOP_PERCENTS = [0, 35, 45, 55, 65, 75, 100]


def decode(image) -> np.ndarray:
    """Pixels (rows from the north) of an image's PNG, which must be RGBA of the announced size."""
    png = Image.open(io.BytesIO(image.png))
    assert png.format == "PNG"
    assert png.mode == "RGBA"
    assert png.size == (image.width, image.height)
    return np.asarray(png)


def pixel_size(image) -> float:
    """Side of one pixel in projection units, from the extent and the image width."""
    return (image.extent["xmax"] - image.extent["xmin"]) / image.width


def pixel_at(image, x: float, y: float) -> tuple[int, int]:
    """(row, column) of the pixel holding the projected point (x, y)."""
    size = pixel_size(image)
    return int((image.extent["ymax"] - y) // size), int((x - image.extent["xmin"]) // size)


def lattice(cols: int, rows: int, res: float = RES) -> tuple[np.ndarray, np.ndarray]:
    """An anchor point at the grid's north-west corner, then one point in the middle of each of cols x rows cells.

    The grid starts at the westmost and northmost coordinates, so the anchor fixes the cell boundaries; its
    values are NaN (`with_anchor`).
    """
    i, j = np.meshgrid(np.arange(cols), np.arange(rows))
    lon = np.concatenate([[LON0], LON0 + (i.ravel() + 0.5) * res])
    lat = np.concatenate([[LAT0], LAT0 - (j.ravel() + 0.5) * res])
    return lon, lat


def with_anchor(values) -> np.ndarray:
    """Values for `lattice` points: NaN for the anchor, then one per cell."""
    return np.concatenate([[np.nan], np.asarray(values, dtype=float)])


def scattered(seed: int, n: int = 20_000) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """`n` points at random over a 0.04 degree square north-east of (LON0, LAT0), with random values."""
    rng = np.random.default_rng(seed)
    return LON0 + rng.random(n) * 0.04, LAT0 + rng.random(n) * 0.04, rng.random(n)


def render_one(lon, lat, values, **options):
    """Render a single property `v` in EPSG:4326 square cells of RES degrees unless told otherwise."""
    settings = {"resolution": RES, "shape": "SQUARE", "projection": "EPSG:4326", "color_ramp": RAMP} | options
    (image,) = render_property_images(lon, lat, {"v": values}, **settings)
    return image


def test_square_image_size_follows_extent_and_resolution():
    lon, lat = lattice(7, 3)
    image = render_one(lon, lat, with_anchor(np.arange(21)))

    assert (image.width, image.height) == (7, 3)
    assert image.extent == pytest.approx(
        {"xmin": LON0, "xmax": LON0 + 7 * RES, "ymin": LAT0 - 3 * RES, "ymax": LAT0}, abs=1e-12
    )
    assert pixel_size(image) == pytest.approx(RES)
    assert decode(image).shape == (3, 7, 4)


def test_projected_cell_is_resolution_degrees_of_latitude_at_the_data_centre():
    lon, lat = lattice(40, 25)
    image = render_one(lon, lat, with_anchor(np.arange(1000)), projection="EPSG:3857")

    to_3857 = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True)
    xs, ys = to_3857.transform(lon, lat)
    lat_centre = (lat.min() + lat.max()) / 2
    _, (y_south, y_north) = to_3857.transform([LON0, LON0], [lat_centre - RES / 2, lat_centre + RES / 2])
    cell = y_north - y_south
    assert image.cell_size == pytest.approx(cell)
    assert image.width == math.floor((xs.max() - xs.min()) / cell) + 1
    assert image.height == math.floor((ys.max() - ys.min()) / cell) + 1
    assert pixel_size(image) == pytest.approx(cell)


def test_extents_are_in_the_target_projection_units():
    lon, lat = lattice(10, 10)
    values = with_anchor(np.arange(100))

    geographic = render_one(lon, lat, values, projection="EPSG:4326")
    mercator = render_one(lon, lat, values, projection="EPSG:3857")

    assert geographic.extent["xmin"] == pytest.approx(LON0)
    assert geographic.extent["ymax"] == pytest.approx(LAT0)
    xs, ys = Transformer.from_crs("EPSG:4326", "EPSG:3857", always_xy=True).transform(lon, lat)
    assert mercator.extent["xmin"] == pytest.approx(xs.min())
    assert mercator.extent["ymax"] == pytest.approx(ys.max())
    assert mercator.extent["xmax"] == pytest.approx(xs.min() + mercator.width * mercator.cell_size)
    assert mercator.extent["ymin"] == pytest.approx(ys.max() - mercator.height * mercator.cell_size)
    assert mercator.projection == "EPSG:3857"


@pytest.mark.parametrize("wide", [True, False], ids=["wide", "tall"])
def test_image_long_side_is_capped_by_coarsening_cells(wide):
    # 0.2 degrees at 1e-5 would be 20,000 cells across (or down).
    long, short = 0.2, 0.05
    east, south = (long, short) if wide else (short, long)
    lon = np.array([LON0, LON0 + east, LON0 + 0.02])
    lat = np.array([LAT0, LAT0 - south, LAT0 - 0.02])
    image = render_one(lon, lat, np.array([1.0, 2.0, 3.0]), resolution=0.00001)

    assert max(image.width, image.height) <= MAX_IMAGE_SIDE
    side = image.width if wide else image.height
    assert side > MAX_IMAGE_SIDE - 2
    assert image.cell_size == pytest.approx(pixel_size(image))
    assert image.cell_size == pytest.approx(long / (side - 1), rel=1e-3)
    assert decode(image).shape[:2] == (image.height, image.width)


@pytest.mark.parametrize("shape", ["SQUARE", "HEXAGON"])
def test_smaller_caps_are_honoured(shape):
    lon = np.array([LON0, LON0 + 0.2, LON0 + 0.1])
    lat = np.array([LAT0, LAT0 - 0.15, LAT0 - 0.02])
    image = render_one(lon, lat, np.array([1.0, 2.0, 3.0]), resolution=0.00001, shape=shape, max_side=300)

    assert max(image.width, image.height) <= 300
    assert max(image.width, image.height) > 250


def test_cell_without_points_has_the_default_transparent_no_value_colour():
    lon, lat = lattice(3, 3)
    values = with_anchor([1, 2, 3, 4, 5, 6, 7, 8, 9])
    keep = np.ones(len(lon), dtype=bool)
    keep[5] = False  # the middle cell (second row, second column) loses its only point
    image = render_one(lon[keep], lat[keep], values[keep], color_ramp=DEFAULT_COLOR_RAMP)

    pixels = decode(image)
    assert tuple(pixels[1, 1]) == (0, 0, 0, 0)
    assert pixels[1, 0, 3] == 255


def test_cell_without_value_has_a_configured_no_value_colour():
    lon, lat = lattice(3, 1)
    values = with_anchor([1.0, np.nan, 3.0])
    image = render_one(lon, lat, values, color_ramp=RAMP | {"nv": [10, 20, 30, 200]})

    pixels = decode(image)
    assert tuple(pixels[0, 1]) == (10, 20, 30, 200)
    assert tuple(pixels[0, 0]) == (255, 0, 0, 255)
    assert tuple(pixels[0, 2]) == (0, 0, 255, 255)


def test_stop_colours_apply_at_the_percentiles_and_interpolate_between():
    # 0, 0.5, ... 100 in 201 cells: the k-th percentile is k.
    values = np.arange(201) * 0.5
    lon, lat = lattice(21, 10)
    image = render_one(lon[:202], lat[:202], with_anchor(values))

    pixels = decode(image)

    def colour_of(value):
        cell = int(np.flatnonzero(values == value)[0])
        return tuple(pixels[cell // 21, cell % 21])

    assert colour_of(0.0) == (255, 0, 0, 255)
    assert colour_of(100.0) == (0, 0, 255, 255)
    assert colour_of(35.0) == (200, 100, 0, 255)
    assert colour_of(75.0) == (0, 200, 100, 255)
    assert colour_of(40.0) == (175, 125, 0, 255)  # halfway from the 35% to the 45% colour
    assert colour_of(87.5) == (0, 100, 178, 255)  # halfway from 75% to 100% (177.5 rounds to even)


def test_cell_colour_is_that_of_the_mean_of_its_points_values():
    ramp = {"0%": [0, 0, 0], "100%": [200, 200, 200]}
    centre = LON0 + 0.5 * RES, LAT0 - 0.5 * RES
    # Cell 0 holds 20 and 60 (mean 40); cell 1 holds 30 and NaN; cells 2 and 3 fix the range to 0..100.
    lon = np.array([LON0, *(centre[0] + RES * np.array([0, 0, 1, 1, 2, 3]))])
    lat = np.array([LAT0, *[centre[1]] * 6])
    values = np.array([np.nan, 20.0, 60.0, 30.0, np.nan, 0.0, 100.0])
    image = render_one(lon, lat, values, color_ramp=ramp)

    pixels = decode(image)
    assert tuple(pixels[0, 0]) == (80, 80, 80, 255)
    assert tuple(pixels[0, 1]) == (60, 60, 60, 255)


def test_legend_ranges_are_the_percentile_intervals_in_order():
    rng = np.random.default_rng(3)
    lon = LON0 + rng.random(5000) * 0.05
    lat = LAT0 + rng.random(5000) * 0.03
    values = rng.gamma(4.0, 2.5, 5000)
    values[::50] = np.nan
    image = render_one(lon, lat, values, color_ramp=DEFAULT_COLOR_RAMP)

    expected = np.percentile(values[np.isfinite(values)], STOP_PERCENTS)
    ranges = image.legend["ranges"]
    assert len(ranges) == 6
    assert [r["min"] for r in ranges] == pytest.approx(expected[:-1])
    assert [r["max"] for r in ranges] == pytest.approx(expected[1:])
    for previous, following in zip(ranges, ranges[1:], strict=False):
        assert previous["max"] == following["min"]
        assert previous["min"] < previous["max"]
    assert all(re.fullmatch(r"#[0-9A-F]{6}", r["colorCode"]) for r in ranges)


def test_legend_colour_is_what_the_picture_shows_in_the_middle_of_each_range():
    values = np.arange(201) * 0.5
    lon, lat = lattice(21, 10)
    image = render_one(lon[:202], lat[:202], with_anchor(values))

    pixels = decode(image)
    for legend_range in image.legend["ranges"]:
        middle = (legend_range["min"] + legend_range["max"]) / 2
        cell = int(np.flatnonzero(values == middle)[0])
        r, g, b, _ = pixels[cell // 21, cell % 21]
        assert legend_range["colorCode"] == f"#{r:02X}{g:02X}{b:02X}"


def test_tied_percentiles_leave_no_empty_range_and_match_the_picture():
    # Half the values are 1: the 0%, 35% and 45% stops all equal 1.
    values = np.array([1.0] * 10 + [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0])
    lon, lat = lattice(20, 1)
    image = render_one(lon, lat, with_anchor(values))

    ranges = image.legend["ranges"]
    assert ranges[0]["min"] == 1.0
    assert ranges[-1]["max"] == 11.0
    assert all(r["min"] < r["max"] for r in ranges)
    assert all(a["max"] == b["min"] for a, b in zip(ranges, ranges[1:], strict=False))
    pixels = decode(image)
    # A value at the tied stops starts the first range: the 45% colour; the maximum ends the last: 100%.
    assert tuple(pixels[0, 0]) == (150, 150, 0, 255)
    assert tuple(pixels[0, 19]) == (0, 0, 255, 255)


def test_maximum_tied_with_upper_stops_ends_the_last_legend_range():
    # Half the values are 20, the maximum: the 55% ... 100% stops all equal 20.
    values = np.array([2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0] + [20.0] * 10)
    lon, lat = lattice(20, 1)
    image = render_one(lon, lat, with_anchor(values))

    ranges = image.legend["ranges"]
    assert ranges[-1]["max"] == 20.0
    assert len(ranges) == 3
    pixels = decode(image)
    # The last range runs from the 45% to the 55% colour, so the maximum shows the 55% colour.
    assert tuple(pixels[0, 19]) == (100, 200, 0, 255)
    assert tuple(pixels[0, 0]) == (255, 0, 0, 255)


def test_constant_property_is_one_colour_with_one_legend_range():
    lon, lat = lattice(4, 2)
    image = render_one(lon, lat, with_anchor([7.5] * 8))

    pixels = decode(image)
    painted = pixels[pixels[..., 3] > 0]
    assert len(painted) == 8
    assert len(np.unique(painted, axis=0)) == 1
    # The ramp's middle (50%): halfway between the 45% and 55% colours.
    assert tuple(painted[0]) == (125, 175, 0, 255)
    assert image.legend == {"ranges": [{"colorCode": "#7DAF00", "min": 7.5, "max": 7.5}]}


def test_property_without_any_value_gives_an_empty_picture_and_legend():
    lon, lat = lattice(3, 2)
    properties = {"v": np.full(len(lon), np.nan), "w": with_anchor(range(6))}
    options = {
        "resolution": RES,
        "shape": "SQUARE",
        "projection": "EPSG:4326",
        "color_ramp": RAMP | {"nv": [1, 2, 3, 4]},
    }
    images = render_property_images(lon, lat, properties, **options)

    assert [image.property for image in images] == ["v", "w"]
    pixels = decode(images[0])
    assert (pixels == (1, 2, 3, 4)).all()
    assert images[0].legend == {"ranges": []}
    assert (images[0].width, images[0].extent) == (images[1].width, images[1].extent)


def test_hexagon_cells_are_drawn_as_hexagons():
    # One point alone: the image is its hexagon's bounding box.
    lon = np.array([LON0, LON0 + 0.5])
    lat = np.array([LAT0, LAT0 + 0.3])
    image = render_one(lon, lat, np.array([1.0, 2.0]), shape="HEXAGON", resolution=0.01)

    pixels = decode(image)
    row, col = pixel_at(image, LON0, LAT0)
    painted = pixels[..., 3] == 255
    # The isolated hexagon around the first point: find its pixels near the point.
    window = painted[max(row - 8, 0) : row + 9, max(col - 8, 0) : col + 9]
    rows, cols = np.nonzero(window)
    box = window[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1]
    height, width = box.shape
    assert height > width  # pointy-topped: taller than wide
    assert box[height // 2, width // 2]
    assert not box[0, 0] and not box[0, -1] and not box[-1, 0] and not box[-1, -1]
    row_widths = box.sum(axis=1)
    assert row_widths[0] < row_widths[height // 2] and row_widths[-1] < row_widths[height // 2]
    # Its area is that of a square cell of side `resolution`: cell_size / pixel size squared pixels.
    assert box.sum() == pytest.approx((image.cell_size / pixel_size(image)) ** 2, rel=0.25)


def test_hexagons_tile_the_plane_without_gaps():
    rng = np.random.default_rng(5)
    lon = LON0 + rng.random(40_000) * 0.02
    lat = LAT0 + rng.random(40_000) * 0.02
    image = render_one(lon, lat, lon + lat, shape="HEXAGON")

    pixels = decode(image)
    # Well inside the data every hexagon holds points (about 40 each), so every pixel is painted.
    inner = pixels[10:-10, 10:-10]
    assert (inner[..., 3] == 255).all()
    assert image.width == pytest.approx(0.02 / pixel_size(image), abs=12)


def test_hexagon_pixels_show_the_value_of_the_point_inside():
    rng = np.random.default_rng(8)
    # Isolated points 20 cells apart, each with its own value.
    i, j = np.meshgrid(np.arange(8), np.arange(8))
    lon = LON0 + i.ravel() * 20 * RES + rng.random(64) * RES
    lat = LAT0 + j.ravel() * 20 * RES + rng.random(64) * RES
    values = rng.permutation(64).astype(float)
    image = render_one(lon, lat, values, shape="HEXAGON", color_ramp={"0%": [0, 0, 0], "100%": [252, 0, 0]})

    pixels = decode(image)
    for x, y, value in zip(lon, lat, values, strict=True):
        expected = (round(value * 4), 0, 0, 255)
        row, col = pixel_at(image, x, y)
        around = pixels[max(row - 1, 0) : row + 2, max(col - 1, 0) : col + 2].reshape(-1, 4)
        assert expected in {tuple(p) for p in around}
        same = (pixels == expected).all(axis=2).sum()
        assert same == pytest.approx((image.cell_size / pixel_size(image)) ** 2, rel=0.25)


@pytest.mark.parametrize("shape", ["SQUARE", "HEXAGON"])
def test_cells_outside_the_coverage_are_transparent(shape):
    lon, lat, values = scattered(seed=2)
    values[(lon > LON0 + 0.025) & (lat > LAT0 + 0.025)] = np.nan  # a data gap inside the coverage
    coverage = shapely.box(LON0 + 0.01, LAT0 + 0.01, LON0 + 0.04, LAT0 + 0.04)
    image = render_one(lon, lat, values, shape=shape, coverage=coverage, color_ramp=RAMP | {"nv": [9, 9, 9, 99]})

    pixels = decode(image)
    assert tuple(pixels[pixel_at(image, LON0 + 0.005, LAT0 + 0.02)]) == (0, 0, 0, 0)
    assert tuple(pixels[pixel_at(image, LON0 + 0.02, LAT0 + 0.005)]) == (0, 0, 0, 0)
    assert pixels[pixel_at(image, LON0 + 0.02, LAT0 + 0.02)][3] == 255
    assert tuple(pixels[pixel_at(image, LON0 + 0.03, LAT0 + 0.03)]) == (9, 9, 9, 99)


@pytest.mark.parametrize("shape", ["SQUARE", "HEXAGON"])
def test_a_hole_in_the_coverage_is_transparent(shape):
    lon, lat, values = scattered(seed=3)
    hole = shapely.box(LON0 + 0.015, LAT0 + 0.015, LON0 + 0.025, LAT0 + 0.025)
    coverage = shapely.box(LON0, LAT0, LON0 + 0.04, LAT0 + 0.04).difference(hole)
    image = render_one(lon, lat, values, shape=shape, coverage=coverage)

    pixels = decode(image)
    assert tuple(pixels[pixel_at(image, LON0 + 0.02, LAT0 + 0.02)]) == (0, 0, 0, 0)
    assert pixels[pixel_at(image, LON0 + 0.01, LAT0 + 0.02)][3] == 255
    assert pixels[pixel_at(image, LON0 + 0.03, LAT0 + 0.02)][3] == 255


def test_coverage_edges_on_cell_edges_keep_exactly_the_cells_inside():
    """Square cells, a coverage whose edges run along cell edges: every cell inside is painted, every cell outside
    is transparent (not one row or column shifted)."""
    cols, rows = 7, 5
    lon, lat = lattice(cols, rows)
    coverage = shapely.box(LON0 + RES, LAT0 - 4 * RES, LON0 + 5 * RES, LAT0 - RES)  # columns 1-4, rows 1-3
    image = render_one(lon, lat, with_anchor(np.arange(1.0, cols * rows + 1)), coverage=coverage)

    assert (image.width, image.height) == (cols, rows)
    inside = np.zeros((rows, cols), dtype=bool)
    inside[1:4, 1:5] = True
    alpha = decode(image)[:, :, 3]
    assert (alpha[inside] == 255).all()
    assert (alpha[~inside] == 0).all()


def test_the_painted_cells_are_those_whose_centre_lies_in_the_coverage():
    """A coverage of several parts with holes, edges at every angle: exactly the cells whose centre it contains are
    painted (shapely's own point-in-polygon decides here)."""
    cols, rows = 60, 40
    lon, lat = lattice(cols, rows)
    rng = np.random.default_rng(5)
    blobs = shapely.buffer(
        shapely.points(LON0 + rng.random(12) * cols * RES, LAT0 - rng.random(12) * rows * RES), 7 * RES
    )
    holes = shapely.buffer(
        shapely.points(LON0 + rng.random(5) * cols * RES, LAT0 - rng.random(5) * rows * RES), 2.3 * RES
    )
    coverage = shapely.union_all(blobs).difference(shapely.union_all(holes))
    assert len(shapely.get_parts(coverage)) > 1 and any(len(p.interiors) for p in shapely.get_parts(coverage))
    image = render_one(lon, lat, with_anchor(np.ones(cols * rows)), coverage=coverage)

    assert (image.width, image.height) == (cols, rows)
    j, i = np.meshgrid(np.arange(cols), np.arange(rows))
    inside = shapely.contains_xy(coverage, LON0 + (j + 0.5) * RES, LAT0 - (i + 0.5) * RES)
    assert 0 < inside.sum() < inside.size
    assert ((decode(image)[:, :, 3] > 0) == inside).all()


def test_a_point_in_the_coverage_is_drawn_though_the_centre_of_its_cell_is_outside():
    """A file's coverage is drawn on cells a machine width wide, so the cell of a point at its edge may have its
    centre just outside: the point is drawn. A point outside the coverage is not."""
    lon = np.array([LON0, LON0 + 0.1 * RES, LON0 + 1.1 * RES])  # the anchor, then a point in each of two cells
    lat = np.array([LAT0, LAT0 - 0.5 * RES, LAT0 - 0.5 * RES])
    coverage = shapely.box(LON0 + 0.05 * RES, LAT0 - RES, LON0 + 0.3 * RES, LAT0)  # the first point, no centre
    image = render_one(lon, lat, np.array([np.nan, 1.0, 2.0]), coverage=coverage)

    assert (image.width, image.height) == (2, 1)
    alpha = decode(image)[0, :, 3]
    assert list(alpha) == [255, 0]


def test_points_without_usable_coordinates_are_ignored():
    lon = np.array([LON0, np.nan, LON0 + 0.5 * RES])
    lat = np.array([LAT0, 10.0, LAT0 - 0.5 * RES])
    image = render_one(lon, lat, np.array([1.0, 50.0, 2.0]))

    assert (image.width, image.height) == (1, 1)
    assert image.legend["ranges"][-1]["max"] == 2.0


def test_points_off_the_globe_are_ignored_even_in_geographic_output():
    lon = np.array([LON0, 200.0, LON0 + 0.5 * RES])
    lat = np.array([LAT0, LAT0, LAT0 - 0.5 * RES])
    image = render_one(lon, lat, np.array([1.0, 50.0, 2.0]), projection="EPSG:4326")

    assert image.extent["xmax"] == pytest.approx(LON0 + RES)


def test_points_past_a_pole_are_ignored_even_in_geographic_output():
    lon = np.array([LON0, LON0, LON0 + 0.5 * RES])
    lat = np.array([LAT0, 95.0, LAT0 - 0.5 * RES])
    image = render_one(lon, lat, np.array([1.0, 50.0, 2.0]), projection="EPSG:4326")

    assert image.extent["ymax"] == pytest.approx(LAT0)
    assert image.legend["ranges"][-1]["max"] == 2.0


def test_no_located_points_or_no_properties_give_no_images():
    assert render_property_images(np.array([np.inf]), np.array([0.0]), {"v": np.array([1.0])}) == []
    assert render_property_images(np.array([LON0]), np.array([LAT0]), {}) == []


def test_units_are_carried_to_the_images():
    lon, lat = lattice(2, 1)
    (image,) = render_property_images(lon, lat, {"v": with_anchor([1, 2])}, units={"v": "kg/ha"})
    assert image.unit == "kg/ha"
    assert image.projection == "EPSG:3857"


@pytest.mark.parametrize(
    ("lon", "lat", "properties", "options"),
    [
        pytest.param([1.0, 2.0], [1.0], {"v": [1.0]}, {}, id="lat-shorter"),
        pytest.param([1.0, 2.0], [1.0, 2.0], {"v": [1.0]}, {}, id="property-shorter"),
        pytest.param([1.0], [1.0], {"v": [1.0]}, {"shape": "TRIANGLE"}, id="unknown-shape"),
        pytest.param([1.0], [1.0], {"v": [1.0]}, {"projection": "EPSG:999999"}, id="unknown-projection"),
        pytest.param([1.0], [1.0], {"v": [1.0]}, {"resolution": 0}, id="zero-resolution"),
        pytest.param([1.0], [1.0], {"v": [1.0]}, {"resolution": "fine"}, id="text-resolution"),
        pytest.param([1.0], [1.0], {"v": ["a"]}, {}, id="text-values"),
        pytest.param([1.0], [1.0], {"v": [1.0]}, {"color_ramp": {"nv": [0, 0, 0, 0]}}, id="ramp-without-stops"),
        pytest.param([1.0], [1.0], {"v": [1.0]}, {"color_ramp": {"50%": [0, 0]}}, id="ramp-short-colour"),
        pytest.param([1.0], [1.0], {"v": [1.0]}, {"color_ramp": {"120%": [0, 0, 0]}}, id="ramp-beyond-100"),
        pytest.param([1.0], [1.0], {"v": [1.0]}, {"color_ramp": {"50%": [0, 0, 300]}}, id="ramp-out-of-range"),
    ],
)
def test_invalid_input_raises_value_error(lon, lat, properties, options):
    with pytest.raises(ValueError):
        render_property_images(np.array(lon), np.array(lat), properties, **options)


def test_partial_ramp_is_extended_flat_to_0_and_100_percent():
    values = np.arange(201) * 0.5
    lon, lat = lattice(21, 10)
    ramp = {"25%": [0, 0, 0], "75%": [200, 0, 0]}
    image = render_one(lon[:202], lat[:202], with_anchor(values), color_ramp=ramp)

    pixels = decode(image)
    assert tuple(pixels[0, 0]) == (0, 0, 0, 255)  # value 0, below the 25% stop
    assert tuple(pixels[9, 11]) == (200, 0, 0, 255)  # value 100 (cell 200), above the 75% stop
    assert [r["min"] for r in image.legend["ranges"]] == [0.0, 25.0, 75.0]


def test_memory_follows_one_image_not_one_raster_per_property():
    """Every property's full colour raster (4 bytes a cell) was made before any PNG was collected, with an index of
    8 bytes a cell outside the coverage: two far apart patches of 3,520 points with 14 properties drew at the 4096 px
    cap and took 433 MB more (performance review). At most one raster per encoding thread is alive now."""
    import tracemalloc

    from shapely.geometry import box

    from conversion.images import render

    rng = np.random.default_rng(7)
    lon = np.concatenate([rng.uniform(8.0, 8.001, 500), rng.uniform(8.1, 8.101, 500)])
    lat = np.concatenate([rng.uniform(47.0, 47.001, 500), rng.uniform(47.1, 47.101, 500)])
    properties = {f"p{n}": rng.uniform(0, 10, len(lon)) for n in range(12)}
    coverage = box(8.0, 47.0, 8.001, 47.001).union(box(8.1, 47.1, 8.101, 47.101))
    options = {"resolution": 0.00001, "projection": "EPSG:4326", "coverage": coverage, "max_side": 1500}
    tracemalloc.start()
    try:
        images = render.render_property_images(lon, lat, properties, **options)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    cells = images[0].width * images[0].height
    assert len(images) == 12 and cells > 2_000_000
    threads = min(4, os.cpu_count() or 1)
    # (a raster per thread encoding, the one being coloured, and the PNG encoder's copy of one)
    assert peak < (threads + 4) * 4 * cells, (peak / cells, threads)
