"""Map images of a processed file: drawn with the configuration, stored, listed and served with the token.
PNGs are decoded back with Pillow and checked against the points that made them."""

import io
import math

import numpy as np
import pytest
from PIL import Image

from configs.defaults import DEFAULT_COLOR_RAMP
from configs.services import config_user_set
from tests.operations.helpers import STEP, grid_table, processed_file
from tests.tenancy import assert_problem

from .conftest import FILES_URL

pytestmark = [pytest.mark.django_db, pytest.mark.embedded]

RESOLUTION = STEP / 4  # each point alone in its cell, empty cells between points


def _png(client, url) -> Image.Image:
    response = client.get(url)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "image/png"
    return Image.open(io.BytesIO(b"".join(response.streaming_content))).convert("RGBA")


def test_images_match_extent_resolution_nv_and_ramp(api_client, core_user):
    config_user_set(
        core_user=core_user,
        entries={"geoimagesProjection": "EPSG:4326", "geoimagesResolution": RESOLUTION},
        replace=False,
    )
    table = grid_table(operation_type="applied")
    file = processed_file(core_user, table)
    assert file.steps["propertiesPNGs"] == {"status": "processed", "message": None}

    listing = api_client.get(f"{FILES_URL}/{file.pk}/images").json()
    entry = next(i for i in listing if i["property"] == "appliedRate")
    assert entry["ramp"] == DEFAULT_COLOR_RAMP
    extent = entry["extent"]
    image = _png(api_client, entry["url"])

    # Size: the extent divided by the resolution (EPSG:4326: degrees), and it holds every point.
    assert image.size == (entry["width"], entry["height"])
    assert image.width == round((extent["xmax"] - extent["xmin"]) / RESOLUTION)
    assert image.height == round((extent["ymax"] - extent["ymin"]) / RESOLUTION)
    lon, lat = table.columns["lon"], table.columns["lat"]
    assert extent["xmin"] <= lon.min() and lon.max() <= extent["xmax"]
    assert extent["ymin"] <= lat.min() and lat.max() <= extent["ymax"]

    pixels = np.asarray(image)
    # Pixels of the points: the cell side actually used (the resolution, up to rounding) from the west / north edge.
    file.refresh_from_db()
    cell = next(i for i in file.images if i["property"] == "appliedRate")["cellSize"]
    assert cell == pytest.approx(RESOLUTION)
    cols = np.minimum(((lon - extent["xmin"]) / cell).astype(int), image.width - 1)
    rows = np.minimum(((extent["ymax"] - lat) / cell).astype(int), image.height - 1)
    painted = np.zeros(pixels.shape[:2], dtype=bool)
    painted[rows, cols] = True
    # Cells with no point are the ramp's nv colour: transparent.
    assert (pixels[~painted][:, 3] == 0).all()
    assert (pixels[rows, cols][:, 3] == 255).all()

    # A cell holds one point: its colour is the ramp stop of its value (lowest: 0 %, highest: 100 %).
    values = table.columns["appliedRate"]
    for index, stop in ((int(np.argmin(values)), "0%"), (int(np.argmax(values)), "100%")):
        assert tuple(pixels[rows[index], cols[index]][:3]) == tuple(DEFAULT_COLOR_RAMP[stop])
    # The legend's ranges run from the lowest to the highest value.
    ranges = entry["legend"]["ranges"]
    assert ranges[0]["min"] == pytest.approx(values.min()) and ranges[-1]["max"] == pytest.approx(values.max())
    assert all(r["colorCode"].startswith("#") and len(r["colorCode"]) == 7 for r in ranges)


def test_default_projection_is_web_mercator(api_client, core_user):
    file = processed_file(core_user, grid_table())
    listing = api_client.get(f"{FILES_URL}/{file.pk}/images").json()
    assert {i["property"] for i in listing} == set(file.units)
    entry = listing[0]
    # 0.00001 degree of latitude is about 1.1 m on the ground, ~1.5 Web Mercator units at 41.6 N.
    expected_cell = 0.00001 * 111_320 / math.cos(math.radians(41.6))
    width = entry["extent"]["xmax"] - entry["extent"]["xmin"]
    assert entry["width"] == pytest.approx(width / expected_cell, rel=0.02)
    assert _png(api_client, entry["url"]).size == (entry["width"], entry["height"])


def test_image_creation_turned_off_skips_the_step(api_client, core_user):
    config_user_set(core_user=core_user, entries={"operationsImageCreation": False}, replace=False)
    file = processed_file(core_user, grid_table())
    step = api_client.get(f"{FILES_URL}/{file.pk}/status").json()["steps"]["propertiesPNGs"]
    assert step["status"] == "skipped" and "operationsImageCreation" in step["message"]
    assert api_client.get(f"{FILES_URL}/{file.pk}/images").json() == []


def test_a_rendering_failure_fails_only_its_step(api_client, core_user):
    config_user_set(core_user=core_user, entries={"geoimagesProjection": "EPSG:999999"}, replace=False)
    file = processed_file(core_user, grid_table())
    body = api_client.get(f"{FILES_URL}/{file.pk}/status").json()
    assert body["status"] == "processed"
    assert body["steps"]["propertiesPNGs"]["status"] == "failed"
    assert "EPSG:999999" in body["steps"]["propertiesPNGs"]["message"]
    assert body["steps"]["summary"]["status"] == "processed"
    assert api_client.get(f"{FILES_URL}/{file.pk}/images").json() == []


def test_images_are_404_for_another_owner(api_client, other_client, core_user):
    file = processed_file(core_user, grid_table())
    url = api_client.get(f"{FILES_URL}/{file.pk}/images").json()[0]["url"]
    assert_problem(other_client.get(f"{FILES_URL}/{file.pk}/images"), 404, "notFound")
    assert_problem(other_client.get(url), 404, "notFound")
    assert_problem(api_client.get(f"{FILES_URL}/{file.pk}/images/unknown.png"), 404, "notFound")
    assert api_client.get(url).status_code == 200


def test_cells_outside_the_files_coverage_are_transparent_whatever_the_nv_colour(api_client, core_user):
    """An L of points: the missing corner is inside the image's extent but outside the file's coverage, so it stays
    transparent even with a visible no-value colour (cells without points inside the coverage take that colour)."""
    config_user_set(
        core_user=core_user,
        entries={
            "geoimagesProjection": "EPSG:4326",
            "geoimagesResolution": RESOLUTION,
            "geoimagesColorRamp": DEFAULT_COLOR_RAMP | {"nv": [9, 9, 9, 99]},
        },
        replace=False,
    )
    table = grid_table(operation_type="applied")
    lon, lat = table.columns["lon"], table.columns["lat"]
    corner = (lon > lon.min() + 9.5 * STEP) & (lat > lat.min() + 4.5 * STEP)
    file = processed_file(core_user, table.select(~corner))
    entry = next(i for i in api_client.get(f"{FILES_URL}/{file.pk}/images").json() if i["property"] == "appliedRate")
    pixels = np.asarray(_png(api_client, entry["url"]))
    extent = entry["extent"]
    cell = (extent["xmax"] - extent["xmin"]) / entry["width"]

    def pixel(x, y):
        return tuple(pixels[int((extent["ymax"] - y) / cell), int((x - extent["xmin"]) / cell)])

    assert extent["xmax"] >= lon.max() and extent["ymax"] >= lat.max()  # the corner is within the picture
    assert pixel(lon.min() + 14.5 * STEP, lat.min() + 7.5 * STEP) == (0, 0, 0, 0)
    # between two points of the L, inside its coverage: the no-value colour
    assert pixel(lon.min() + 2.5 * STEP, lat.min() + 2.5 * STEP) == (9, 9, 9, 99)


def test_a_file_processed_again_with_images_turned_off_keeps_no_old_images(core_user):
    from conversion import outputs, storage
    from conversion.file_images import images_prefix

    table = grid_table()
    file = processed_file(core_user, table)
    assert storage.listdir(images_prefix(file.pk))[1]
    config_user_set(core_user=core_user, entries={"operationsImageCreation": False}, replace=False)
    produced = outputs.produce(file, table, clean=False)
    assert produced.images == [] and produced.steps["propertiesPNGs"]["status"] == "skipped"
    assert storage.listdir(images_prefix(file.pk)) == ([], [])
