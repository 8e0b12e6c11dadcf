"""Malformed uploads are the uploader's bad files, not our errors: each fails its batch or file with a reason in
plain words (never the internal-error text), named after the file the user uploaded; points off the globe are
dropped like any unusable point."""

import io
import json
import struct
import zipfile

import pytest
import shapefile

from conversion.models import INTERNAL_ERROR, UNABLE_TO_READ, Batch

from .conftest import FILES_URL, file_record, uploaded_batch, zip_entries

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

WGS84_PRJ = (
    'GEOGCS["GCS_WGS_1984",DATUM["D_WGS_1984",SPHEROID["WGS_1984",6378137.0,298.257223563]],'
    'PRIMEM["Greenwich",0.0],UNIT["Degree",0.0174532925199433]]'
)


def _standard_geojson(client, file_id) -> dict:
    response = client.get(f"{FILES_URL}/{file_id}/standardGeojson")
    assert response.status_code == 200
    return json.loads(b"".join(response.streaming_content))


def _encrypted(entries: dict[str, bytes]) -> bytes:
    """A zip whose entries carry the 'encrypted' flag (bit 0 of the general purpose flags), as a zip made with a
    password does; zipfile refuses to read them without one."""
    data = bytearray(zip_entries(entries))
    for signature, flags_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = 0
        while (start := data.find(signature, start)) >= 0:
            flags = struct.unpack_from("<H", data, start + flags_at)[0]
            struct.pack_into("<H", data, start + flags_at, flags | 0x1)
            start += 4
    return bytes(data)


def _points(coordinates: list, **properties) -> bytes:
    features = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": xy},
            "properties": {"timestamp": f"2024-05-01T10:00:{i:02d}Z", "appliedRate": 100.0, **properties},
        }
        for i, xy in enumerate(coordinates)
    ]
    return json.dumps({"type": "FeatureCollection", "features": features}).encode()


def _good_coordinates(n: int) -> list:
    return [[10.0 + i * 1e-4, 54.0] for i in range(n)]


def _assert_user_failure(batch: dict, *reason_parts: str) -> None:
    assert batch["status"] == "FAILED", batch
    assert batch["statusDetails"] == UNABLE_TO_READ
    for part in reason_parts:
        assert part in batch["failureReason"], batch["failureReason"]
    assert "internal error" not in batch["failureReason"].lower()


# --- archives -------------------------------------------------------------------------------------------------------


def test_an_encrypted_entry_fails_the_batch_with_a_reason(api_client, core_user, caplog):
    data = _encrypted({"spray.geojson": _points(_good_coordinates(5))})
    batch = uploaded_batch(api_client, core_user, data, name="locked.zip")
    _assert_user_failure(batch, "locked.zip: entry 'spray.geojson' is encrypted (password protected)")
    assert not [r for r in caplog.records if r.exc_info]  # no traceback logged for a user's file


def test_a_name_too_long_for_the_disk_fails_the_batch_with_a_reason(api_client, core_user, caplog):
    data = zip_entries({"d" * 300 + "/spray.geojson": _points(_good_coordinates(5))})
    batch = uploaded_batch(api_client, core_user, data)
    _assert_user_failure(batch, "upload.zip: entry 'ddd", "has a name or path too long to be extracted")
    assert not [r for r in caplog.records if r.exc_info]


def test_a_data_set_deep_in_folders_is_converted(api_client, core_user, caplog):
    """Six folders of 200 characters each: every name fits the disk, the path (1,200+ characters) is longer than
    any column would hold unless the stored path is the whole path."""
    deep = "/".join(f"{n}" + "d" * 199 for n in range(6))
    data = zip_entries({f"{deep}/spray.geojson": _points(_good_coordinates(5))})
    batch = uploaded_batch(api_client, core_user, data)
    assert batch["status"] == "PROCESSED", batch
    file = file_record(api_client, batch["files"][0])
    assert file["status"] == "processed" and len(file["fileName"]) <= 255
    assert api_client.get(f"{FILES_URL}/{file['id']}/originalFile").status_code == 200
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.parametrize(
    ("entries", "reason"),
    [
        (["x", "x/y"], "entry 'x/y' needs a folder where another entry is a file of the same name"),
        (["x/y", "x"], "entry 'x' is a file where another entry needs a folder of the same name"),
    ],
)
def test_a_file_and_a_folder_of_one_name_fail_the_batch_with_a_reason(api_client, core_user, entries, reason):
    batch = uploaded_batch(api_client, core_user, zip_entries({name: b"1" for name in entries}))
    _assert_user_failure(batch, f"upload.zip: {reason}")


def test_a_truncated_archive_is_named_as_uploaded(api_client, core_user):
    data = zip_entries({"spray.geojson": _points(_good_coordinates(300))})
    batch = uploaded_batch(api_client, core_user, data[: len(data) // 2], name="harvest 2024.zip")
    _assert_user_failure(batch, "harvest 2024.zip is not a zip archive or is truncated")
    assert batch["id"] not in batch["failureReason"]  # never the name we store it under


# --- readers --------------------------------------------------------------------------------------------------------


def test_geojson_points_with_coordinates_that_are_not_numbers_are_dropped(api_client, core_user):
    coordinates = [["a", "b"], [True, 54.0], [10.0, None], [[10.0, 54.0], 1]] + _good_coordinates(5)
    batch = uploaded_batch(api_client, core_user, zip_entries({"spray.geojson": _points(coordinates)}))
    assert batch["status"] == "PROCESSED", batch
    assert len(_standard_geojson(api_client, batch["files"][0])["features"]) == 5


def test_geojson_points_off_the_globe_are_dropped(api_client, core_user):
    coordinates = [[500.0, 100.0], [10.0, 91.0], [-180.5, 54.0], [1e400, 54.0], [10**400, 54.0]] + _good_coordinates(5)
    data = zip_entries({"spray.geojson": _points(coordinates).replace(b"Infinity", b"1e400")})
    batch = uploaded_batch(api_client, core_user, data)
    assert batch["status"] == "PROCESSED", batch
    file_id = batch["files"][0]
    summary = api_client.get(f"{FILES_URL}/{file_id}/summary").json()["properties"]
    assert summary["cleaning"]["pointsRead"] == summary["pointCount"] == 5
    for feature in _standard_geojson(api_client, file_id)["features"]:
        lon, lat = feature["geometry"]["coordinates"]
        assert -180 <= lon <= 180 and -90 <= lat <= 90


def test_geojson_without_a_usable_point_fails_its_file_with_a_reason(api_client, core_user):
    data = zip_entries({"spray.geojson": _points([[500.0, 100.0], ["a", "b"]])})
    batch = uploaded_batch(api_client, core_user, data)
    _assert_user_failure(batch, "spray.geojson: no Point feature has usable coordinates")
    file = file_record(api_client, batch["files"][0])
    assert file["status"] == "failed"
    assert file["statusDetails"].startswith(UNABLE_TO_READ)
    assert "usable coordinates" in file["statusDetails"]


def test_geojson_whose_features_are_not_a_list_fails_its_file_with_a_reason(api_client, core_user):
    data = zip_entries({"spray.geojson": b'{"type": "FeatureCollection", "features": 5, "x": {"type": "Point"}}'})
    batch = uploaded_batch(api_client, core_user, data)
    _assert_user_failure(batch, "spray.geojson: the FeatureCollection's features are not a list")


@pytest.mark.parametrize(
    "crs",
    [
        {"type": "name", "properties": {"name": "EPSG:32632"}},
        {"type": "name", "properties": {"name": "urn:ogc:def:crs:EPSG::32632"}},
        {"type": "EPSG", "properties": {"code": 32632}},  # before GeoJSON 2008
    ],
)
def test_geojson_in_a_named_coordinate_system_is_reprojected(api_client, core_user, crs):
    """GeoJSON of 2008 (before RFC 7946) may name its coordinate system in a `crs` member: points in UTM zone 32N
    were read as longitude/latitude, all off the globe. Positions stay x (easting) first, y second."""
    from pyproj import Transformer

    wgs84 = _good_coordinates(5)
    to_utm = Transformer.from_crs("EPSG:4326", "EPSG:32632", always_xy=True)
    utm = [list(to_utm.transform(lon, lat)) for lon, lat in wgs84]
    doc = json.loads(_points(utm))
    doc["crs"] = crs
    batch = uploaded_batch(api_client, core_user, zip_entries({"spray.geojson": json.dumps(doc).encode()}))
    assert batch["status"] == "PROCESSED", batch
    got = [f["geometry"]["coordinates"] for f in _standard_geojson(api_client, batch["files"][0])["features"]]
    assert got == [pytest.approx(xy, abs=1e-7) for xy in wgs84]


@pytest.mark.parametrize(
    ("crs", "reason"),
    [
        ({"type": "name", "properties": {"name": "EPSG:999999"}}, "spray.geojson: its crs 'EPSG:999999' is not a"),
        ({"type": "link", "properties": {"href": "http://example.com/crs"}}, "spray.geojson: its crs is not named"),
    ],
)
def test_geojson_in_an_unknown_coordinate_system_fails_with_a_reason(api_client, core_user, crs, reason):
    doc = json.loads(_points(_good_coordinates(5)))
    doc["crs"] = crs
    batch = uploaded_batch(api_client, core_user, zip_entries({"spray.geojson": json.dumps(doc).encode()}))
    _assert_user_failure(batch, reason)


@pytest.mark.parametrize(
    ("coordinates", "code", "reason"),
    [
        # Longitude/latitude declared as UTM zone 32N: read so, all points lay off the coast of Gabon, on the equator
        (
            _good_coordinates(5),
            32632,
            "spray.geojson: the crs member names a projected coordinate system (WGS 84 / UTM zone 32N), but every "
            "coordinate is within longitude/latitude ranges (x 10 to 10.0004, y 54 to 54): in that system the points "
            "would all lie within 200 m of its origin. If they are longitude/latitude, leave the crs member out",
        ),
        # UTM metres declared as longitude/latitude: every point was dropped, and the reason said nothing of the crs
        (
            [[500_000.0 + i, 6_000_000.0] for i in range(5)],
            4326,
            "spray.geojson: the crs member names a longitude/latitude coordinate system (WGS 84), but no coordinate is "
            "within longitude -180..180 and latitude -90..90 (x 500000 to 500004, y 6e+06 to 6e+06): correct the crs "
            "member",
        ),
    ],
)
def test_geojson_whose_coordinates_contradict_its_crs_fails_with_the_reason(
    api_client, core_user, coordinates, code, reason
):
    doc = json.loads(_points(coordinates))
    doc["crs"] = {"type": "name", "properties": {"name": f"EPSG:{code}"}}
    batch = uploaded_batch(api_client, core_user, zip_entries({"spray.geojson": json.dumps(doc).encode()}))
    _assert_user_failure(batch, reason)


def _shapefile(coordinates: list[tuple[float, float]], *, prj: bool = True) -> dict[str, bytes]:
    shp, shx, dbf = io.BytesIO(), io.BytesIO(), io.BytesIO()
    with shapefile.Writer(shp=shp, shx=shx, dbf=dbf, shapeType=shapefile.POINT) as writer:
        writer.field("Rate", "N", decimal=2)
        for i, (x, y) in enumerate(coordinates):
            writer.point(x, y)
            writer.record(100.0 + i)
    parts = {"rate.shp": shp.getvalue(), "rate.shx": shx.getvalue(), "rate.dbf": dbf.getvalue()}
    if prj:
        parts["rate.prj"] = WGS84_PRJ.encode()
    return parts


def test_shapefile_points_off_the_globe_are_dropped(api_client, core_user):
    coordinates = [(10.0 + i * 1e-4, 54.0) for i in range(5)] + [(10.0, 95.0), (200.0, 54.0)]
    batch = uploaded_batch(api_client, core_user, zip_entries(_shapefile(coordinates)))
    assert batch["status"] == "PROCESSED", batch
    file_id = batch["files"][0]
    summary = api_client.get(f"{FILES_URL}/{file_id}/summary").json()["properties"]
    assert summary["cleaning"]["pointsRead"] == 5
    for feature in _standard_geojson(api_client, file_id)["features"]:
        lon, lat = feature["geometry"]["coordinates"]
        assert -180 <= lon <= 180 and -90 <= lat <= 90


@pytest.mark.parametrize(
    ("coordinates", "code", "reason"),
    [
        (
            [(10.0 + i * 1e-4, 54.0) for i in range(5)],
            32632,
            "rate.shp: the .prj names a projected coordinate system (WGS 84 / UTM zone 32N), but every coordinate is "
            "within longitude/latitude ranges (x 10 to 10.0004, y 54 to 54): in that system the points would all lie "
            "within 200 m of its origin. If they are longitude/latitude, leave the .prj out; else correct it",
        ),
        (
            [(500_000.0 + i, 6_000_000.0) for i in range(5)],
            4269,
            "rate.shp: the .prj names a longitude/latitude coordinate system (NAD83), but no coordinate is within "
            "longitude -180..180 and latitude -90..90 (x 500000 to 500004, y 6e+06 to 6e+06): correct the .prj",
        ),
    ],
)
def test_a_shapefile_whose_coordinates_contradict_its_prj_fails_with_the_reason(
    api_client, core_user, coordinates, code, reason
):
    from pyproj import CRS

    parts = _shapefile(coordinates) | {"rate.prj": CRS.from_epsg(code).to_wkt("WKT1_ESRI").encode()}
    batch = uploaded_batch(api_client, core_user, zip_entries(parts))
    _assert_user_failure(batch, reason)


def test_the_original_file_is_named_after_its_data_set_dots_and_all(api_client, core_user):
    """`Yield 2016.09.19 v1.2` was downloaded as `Yield 2016.09.19 v1.zip`: its name was cut at the last dot."""
    parts = _shapefile([(10.0 + i * 1e-4, 54.0) for i in range(5)])
    entries = {name.replace("rate", "Yield 2016.09.19 v1.2"): data for name, data in parts.items()}
    batch = uploaded_batch(api_client, core_user, zip_entries(entries))
    assert batch["status"] == "PROCESSED", batch
    file = file_record(api_client, batch["files"][0])
    assert file["fileName"] == "Yield 2016.09.19 v1.2"
    response = api_client.get(f"{FILES_URL}/{file['id']}/originalFile")
    assert response.status_code == 200
    assert response["Content-Disposition"] == 'attachment; filename="Yield 2016.09.19 v1.2.zip"'


@pytest.mark.parametrize("empty", [".shp", ".dbf", ".shx"])
def test_an_empty_shapefile_part_fails_its_file_with_a_reason(api_client, core_user, empty, caplog):
    parts = _shapefile([(10.0 + i * 1e-4, 54.0) for i in range(5)])
    parts[f"rate{empty}"] = b""
    batch = uploaded_batch(api_client, core_user, zip_entries(parts))
    _assert_user_failure(batch, f"rate.shp: the rate{empty} file is empty or cut short")
    file = file_record(api_client, batch["files"][0])
    assert file["status"] == "failed" and file["statusDetails"].startswith(UNABLE_TO_READ)
    assert INTERNAL_ERROR not in file["statusDetails"]
    assert not [r for r in caplog.records if r.exc_info]
    assert Batch.objects.get(pk=batch["id"]).status == "FAILED"


# --- a task data set at the top of the upload -----------------------------------------------------------------------


def test_a_task_data_set_at_the_top_is_named_and_packed_on_its_own(api_client, core_user, load_from_stream):
    # Given an upload whose TASKDATA.XML sits at the top, next to a shapefile, a GeoJSON and a folder of another
    # shapefile
    with zipfile.ZipFile(load_from_stream / "SingleDPD.zip") as zf:
        isoxml = {name: zf.read(name) for name in zf.namelist()}
    entries = dict(isoxml)
    entries.update(_shapefile([(10.0 + i * 1e-4, 54.0) for i in range(5)]))
    entries.update({f"shapes/{n}": b for n, b in _shapefile([(10.0 + i * 1e-4, 54.0) for i in range(5)]).items()})
    entries["spray.geojson"] = _points(_good_coordinates(5))
    batch = uploaded_batch(api_client, core_user, zip_entries(entries), name="Harvest 2024.ZIP")
    assert batch["status"] == "PROCESSED", batch
    files = [file_record(api_client, file_id) for file_id in batch["files"]]
    assert sorted(f["fileFormat"] for f in files) == ["GEOJSON", "ISOXML", "SHAPEFILE", "SHAPEFILE"]
    file = next(f for f in files if f["fileFormat"] == "ISOXML")
    # Then the task data is named after the upload, not after our work folder
    assert file["fileName"] == "Harvest 2024"
    # and its original file holds its own files only, and is what sizeInBytes measures
    response = api_client.get(f"{FILES_URL}/{file['id']}/originalFile")
    assert response.status_code == 200
    data = b"".join(response.streaming_content)
    assert sorted(zipfile.ZipFile(io.BytesIO(data)).namelist()) == sorted(isoxml)
    assert file["sizeInBytes"] == len(data)


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (  # json gives up (recursion) on a property nested a hundred thousand times
            '{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": {"type": "Point", '
            '"coordinates": [10, 54]}, "properties": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}]}",
            "notes.geojson: not valid JSON (values nested too deeply)",
        ),
        (  # cut short
            _points(_good_coordinates(20)).decode()[:700],
            "notes.geojson: not valid JSON",
        ),
    ],
    ids=["nested-too-deeply", "cut-short"],
)
def test_a_small_geojson_that_is_no_json_fails_its_own_file_and_the_rest_converts(api_client, core_user, text, reason):
    # Given an upload of a good shapefile and, next to it, a small GeoJSON of points that json cannot read
    entries = _shapefile([(10.0 + i * 1e-4, 54.0) for i in range(5)])
    entries["notes.geojson"] = text.encode()
    batch = uploaded_batch(api_client, core_user, zip_entries(entries))
    # Then the shapefile converts, and the GeoJSON fails its own file with json's reason, named after it
    files = {f["fileFormat"]: f for f in (file_record(api_client, file_id) for file_id in batch["files"])}
    assert files["SHAPEFILE"]["status"] == "processed", files
    assert files["GEOJSON"]["status"] == "failed"
    assert files["GEOJSON"]["statusDetails"].startswith(UNABLE_TO_READ)
    assert reason in files["GEOJSON"]["statusDetails"], files["GEOJSON"]


@pytest.mark.parametrize("metadata", [b"[" * 100_000 + b"]" * 100_000, b'{"DataAttributes": [', b"\xff\xfe"])
def test_a_deere_metadata_sidecar_that_is_no_json_is_left_aside(api_client, core_user, metadata):
    # Given a shapefile with a JD metadata sidecar that json cannot read (nested too deeply, cut short, no UTF-8)
    entries = _shapefile([(10.0 + i * 1e-4, 54.0) for i in range(5)])
    entries["rate-Deere-Metadata.json"] = metadata
    batch = uploaded_batch(api_client, core_user, zip_entries(entries))
    # Then the shapefile converts as one without the sidecar
    assert batch["status"] == "PROCESSED", batch
    assert file_record(api_client, batch["files"][0])["status"] == "processed"


def test_a_zip_inside_the_upload_that_cannot_be_read_fails_alone(api_client, core_user):
    """A corrupt zip among the upload's files failed the whole upload, the good data sets beside it too; it is a
    failed file of its own, with the reason, and the rest converts. A hostile one (a path out of the archive) still
    fails the whole upload."""
    good = zip_entries({"inner/spray.geojson": _points(_good_coordinates(5))})
    bad_entry = bytearray(zip_entries({"notes.txt": b"x" * 2000}))
    bad_entry[bad_entry.find(b"PK\x03\x04") + 30 + len("notes.txt") + 5] ^= 0xFF  # a byte of the deflated entry
    data = zip_entries({"a/good.zip": good, "b/cut.zip": good[: len(good) // 2], "c/bad.zip": bytes(bad_entry)})
    batch = uploaded_batch(api_client, core_user, data)
    assert batch["status"] == "PROCESSED", batch
    files = {record["fileName"]: record for record in (file_record(api_client, i) for i in batch["files"])}
    assert files["spray"]["status"] == "processed"
    assert files["cut.zip"]["status"] == files["bad.zip"]["status"] == "failed"
    assert files["cut.zip"]["statusDetails"] == (
        f"{UNABLE_TO_READ} (a zip inside the upload that cannot be read: upload.zip/cut.zip is not a zip archive or is "
        "truncated (File is not a zip file).)"
    )
    assert "upload.zip/bad.zip: entry 'notes.txt' is corrupt or truncated" in files["bad.zip"]["statusDetails"]
    hostile = bytearray(zip_entries({"xx/evil.txt": b"x"}))
    hostile[hostile.find(b"xx/evil.txt") : hostile.find(b"xx/evil.txt") + 11] = b"../evil.txt"
    hostile[hostile.rfind(b"xx/evil.txt") : hostile.rfind(b"xx/evil.txt") + 11] = b"../evil.txt"
    batch = uploaded_batch(api_client, core_user, zip_entries({"a/good.zip": good, "b/evil.zip": bytes(hostile)}))
    _assert_user_failure(batch, "upload.zip/evil.zip: entry '../evil.txt' points outside the archive")


def test_a_retry_of_a_zip_inside_the_upload_that_cannot_be_read_says_it_is_damaged(api_client, core_user, samples_dir):
    """Nothing converts it however often it is sent, so the retry is 409 `nothingToRetry`; it named it a format that
    cannot be converted ("cut.zip (ZIP)") and said to export it in a supported format, where ZIP is one we read and
    a sound copy is what converts."""
    from tests.tenancy import assert_problem

    good = zip_entries({"inner/spray.geojson": _points(_good_coordinates(5))})
    card = (samples_dir / "johndeere-sampledata/Display data/Gen4 - 4600 Harvest Data.zip").read_bytes()
    cases = [
        (
            {"a/good.zip": good, "b/cut.zip": good[:50]},
            "Nothing to retry: what failed is a zip inside the upload that cannot be read (damaged or cut short), "
            "however often it is sent: cut.zip. Upload a sound copy of it.",
        ),
        (
            {"card.zip": card, "b/cut.zip": good[:50]},
            "Nothing to retry: what failed is in a format that cannot be converted, however often it is sent: JD-Data "
            "(John Deere Gen4). Export it from the machine's software in a supported format and upload that. A zip "
            "inside the upload cannot be read either (damaged or cut short): cut.zip. Upload a sound copy of it.",
        ),
    ]
    for entries, detail in cases:
        batch = uploaded_batch(api_client, core_user, zip_entries(entries))
        retry = api_client.put(f"/services/operations/api/batch/{batch['id']}/retry")
        assert assert_problem(retry, 409, "nothingToRetry")["detail"] == detail
