"""Uploads of the real samples through the API, checked against what the files themselves record (read here
independently of our readers): task counts, recorded totals, device identities, shapefile columns."""

import io
import json
import xml.etree.ElementTree as ET
import zipfile

import numpy as np
import pytest
import shapefile

from conversion.models import INTERNAL_ERROR, NO_VALID_FILES, UNABLE_TO_READ
from tests.tenancy import assert_problem
from tests.units import BUSHEL_L

from .conftest import BATCH_URL, FILES_URL, opened_batch, upload, upload_lost, zip_entries, zip_folder

pytestmark = pytest.mark.django_db(transaction=True)

ACRE_FT2 = 43_560.0


def _batch(client, batch_id) -> dict:
    response = client.get(f"{BATCH_URL}/{batch_id}")
    assert response.status_code == 200, response.content
    return response.json()


def _upload_ok(client, core_user, data: bytes, **kwargs) -> dict:
    response = upload(client, core_user.pk, data, **kwargs)
    assert response.status_code == 201, response.content
    return _batch(client, response.json()["id"])


@pytest.fixture
def isoxml_reader_crashes():
    """The ISOXML reader meets an unexpected error (a bug of ours, "worker crashed") until `.undo()`."""
    from conversion.services import datasets

    real_reader = datasets.get_reader

    def crashing_for_isoxml(fmt):
        if fmt == "ISOXML":
            raise RuntimeError("worker crashed")
        return real_reader(fmt)

    patch = pytest.MonkeyPatch()
    patch.setattr(datasets, "get_reader", crashing_for_isoxml)
    yield patch
    patch.undo()


def _get(client, url):
    response = client.get(url)
    assert response.status_code == 200, (url, response.content[:300])
    return response


def _taskdata(folder):
    return ET.parse(folder / "TASKDATA.XML").getroot()


@pytest.mark.embedded
def test_isoxml_task_data_becomes_one_file_per_task_with_the_recorded_totals(api_client, core_user, valid_timelogs):
    root = _taskdata(valid_timelogs)
    tasks = root.findall("TSK")
    batch = _upload_ok(api_client, core_user, zip_folder(valid_timelogs, prefix="SD card/TASKDATA/"))
    assert batch["status"] == "PROCESSED"
    assert "statusDetails" not in batch
    assert len(batch["files"]) == len(tasks) == 19

    status = _get(api_client, f"{BATCH_URL}/{batch['id']}/status").json()
    assert status == {"converted": batch["files"], "processing": [], "failed": []}

    first = _get(api_client, f"{FILES_URL}/{batch['files'][0]}").json()
    assert first["status"] == "processed"
    assert first["fileFormat"] == "ISOXML"
    assert first["origin"] == "uploaded"
    assert first["operationType"] == "harvested"
    assert first["batchId"] == batch["id"]
    assert first["fileName"] == f"SD card/TASKDATA/{tasks[0].get('B')}"

    # The first task's TIM records the yield total mass (DDI 0x005A) in kg: the summary reports it.
    tim = tasks[0].find("TIM")
    recorded = {int(d.get("A"), 16): int(d.get("B")) for d in tim.findall("DLV")}
    summary = _get(api_client, f"{FILES_URL}/{first['id']}/summary").json()
    assert summary["type"] == "Feature"
    assert summary["geometry"]["type"] == "MultiPolygon"
    props = summary["properties"]
    assert props["recordedTotals"]["totalWetMass"] == {"value": recorded[0x005A], "unit": "kg"}
    assert props["recordedTotals"]["totalWetMass"]["value"] == 259605
    assert props["operationType"] == "harvested"
    # The time range lies within the task's TIM start and stop.
    assert first["startTime"][:19] >= tim.get("A")[:19]
    assert first["startTime"] == props["startTime"] and first["endTime"] == props["endTime"]

    units = _get(api_client, f"{FILES_URL}/{first['id']}/units").json()
    assert units["wetMass"] == "kg" and units["wetMassPerArea"] == "kg/ha" and units["harvestMoisture"] == "percentage"

    # The device of the task data became a pooled machine with its serial number (DVC E).
    dvc = root.find("DVC")
    machines = _get(api_client, f"/services/beta/api/users/{core_user.pk}/machines").json()
    assert [m["serialNumber"] for m in machines] == [dvc.get("E")]
    assert machines[0]["originType"] == "FILE_POOLED"
    assert first["machines"] == [machines[0]["id"]]


@pytest.mark.embedded
def test_downloads_are_the_points_and_the_original_files(api_client, core_user, valid_timelogs):
    batch = _upload_ok(api_client, core_user, zip_folder(valid_timelogs, prefix="TASKDATA/"))
    file_id = batch["files"][0]
    summary = _get(api_client, f"{FILES_URL}/{file_id}/summary").json()["properties"]

    standard = json.loads(b"".join(_get(api_client, f"{FILES_URL}/{file_id}/standardGeojson").streaming_content))
    assert standard["type"] == "FeatureCollection"
    assert (
        len(standard["features"])
        == summary["pointCount"]
        == summary["cleaning"]["pointsRead"] - summary["cleaning"]["pointsDropped"]
    )
    feature = standard["features"][0]
    assert feature["geometry"]["type"] == "Point"
    assert feature["properties"]["operationType"] == "harvested"
    assert feature["properties"]["timestamp"].endswith("Z")
    total = sum(f["properties"]["wetMassPerArea"] * f["properties"]["area"] / 10_000 for f in standard["features"])
    # (the GeoJSON's values are rounded: their sum is the total to a few parts in a billion)
    assert summary["totalWetMass"]["value"] == pytest.approx(total, rel=1e-7)

    raw = json.loads(b"".join(_get(api_client, f"{FILES_URL}/{file_id}/rawGeojson").streaming_content))
    assert len(raw["features"]) == summary["cleaning"]["pointsRead"]

    original = _get(api_client, f"{FILES_URL}/{file_id}/originalFile")
    assert original["Content-Type"] == "application/zip"
    names = zipfile.ZipFile(io.BytesIO(b"".join(original.streaming_content))).namelist()
    assert sorted(names) == sorted(p.name for p in valid_timelogs.iterdir())


@pytest.mark.embedded
def test_john_deere_harvest_shapefile_totals_equal_its_own_columns(api_client, core_user, jd_shapefiles, tmp_path):
    data = (jd_shapefiles / "Export From MyJohnDeere - Harvest.zip").read_bytes()
    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path)
    shp = next(tmp_path.rglob("*.shp"))
    records = shapefile.Reader(str(shp)).records()
    moisture = np.array([r["Moisture"] for r in records], dtype=float)
    wet = np.array([r["WetMass"] for r in records], dtype=float)
    kept = (moisture > 0) & (moisture < 100) & (wet > 0)  # the supplement's default cleaning
    bushels = sum(
        r["VRYIELDVOL"] * r["DISTANCE"] * r["SWATHWIDTH"] / ACRE_FT2 for r, k in zip(records, kept, strict=True) if k
    )
    times = sorted(r["IsoTime"] for r, k in zip(records, kept, strict=True) if k)

    batch = _upload_ok(api_client, core_user, data, provider="ProviderA")
    assert batch["status"] == "PROCESSED" and len(batch["files"]) == 1
    file = _get(api_client, f"{FILES_URL}/{batch['files'][0]}").json()
    assert file["fileFormat"] == "SHAPEFILE"
    assert file["provider"] == "ProviderA"
    assert file["operationType"] == "harvested"
    assert file["crops"] == ["soybeans"]
    assert file["varieties"] == [records[0]["VARIETY"]]
    assert file["startTime"] == times[0] and file["endTime"] == times[-1]
    props = _get(api_client, f"{FILES_URL}/{file['id']}/summary").json()["properties"]
    assert props["cleaning"]["pointsRead"] == len(records) == 40960
    assert props["pointCount"] == int(kept.sum())
    assert props["totalDryVolume"]["unit"] == "L"
    assert props["totalDryVolume"]["value"] / BUSHEL_L == pytest.approx(bushels, rel=1e-9)
    # The variety went into the core user's catalog.
    varieties = _get(api_client, f"/services/beta/api/users/{core_user.pk}/varieties").json()
    assert [v["name"] for v in varieties] == [records[0]["VARIETY"]]


@pytest.mark.embedded
@pytest.mark.parametrize(
    "card",
    [
        "GS3 - 2630 Planting With 4 Rates.zip",
        "Gen4 - 4600 Harvest Data.zip",
        "GS2 - 2600 Documentation Data - Field 1.zip",
    ],
)
def test_proprietary_display_cards_fail_with_the_spec_text(api_client, core_user, samples_dir, card):
    data = (samples_dir / "johndeere-sampledata/Display data" / card).read_bytes()
    batch = _upload_ok(api_client, core_user, data, provider="ProviderA")
    assert batch["status"] == "FAILED"
    assert batch["statusDetails"] == UNABLE_TO_READ
    assert "no open specification" in batch["failureReason"]
    status = _get(api_client, f"{BATCH_URL}/{batch['id']}/status").json()
    assert status["converted"] == [] and status["processing"] == []
    assert [f["id"] for f in status["failed"]] == batch["files"]
    assert all(f["message"].startswith(UNABLE_TO_READ) for f in status["failed"])
    assert all(f["step"] == "read" for f in status["failed"])  # they fail being read


@pytest.mark.embedded
def test_a_zip_without_data_sets_fails_with_no_valid_files(api_client, core_user, load_from_stream):
    batch = _upload_ok(api_client, core_user, (load_from_stream / "InvalidArchive.zip").read_bytes())
    assert batch["status"] == "FAILED"
    assert batch["statusDetails"] == NO_VALID_FILES
    assert batch["files"] == []
    assert batch["failureReason"] == "No ISOXML, shapefile or GeoJSON point data set in the archive."


@pytest.mark.embedded
def test_a_shapefile_without_its_dbf_is_named_in_the_failure(api_client, core_user):
    """It failed with the same sentence as an archive of holiday photos: the user could not tell what was missing."""
    data = zip_entries({"export/Yield.shp": b"\x00\x00\x27\x0a" + bytes(96), "export/Yield.prj": b"GEOGCS[]"})
    batch = _upload_ok(api_client, core_user, data)
    assert batch["status"] == "FAILED" and batch["statusDetails"] == NO_VALID_FILES
    assert batch["failureReason"] == (
        "No ISOXML, shapefile or GeoJSON point data set in the archive: export/Yield.shp: no Yield.dbf beside it "
        "(a shapefile's values are in its .dbf: zip the .shp, .shx, .dbf and .prj together)."
    )


@pytest.mark.embedded
def test_a_good_data_set_next_to_a_card_we_cannot_read_still_processes(
    api_client, core_user, valid_timelogs, samples_dir, tmp_path
):
    card = samples_dir / "johndeere-sampledata/Display data/GS3 - 2630 Planting With 4 Rates.zip"
    data = zip_entries(
        {"GS3.zip": card.read_bytes(), "iso/TASKDATA.XML": (valid_timelogs / "TASKDATA.XML").read_bytes()}
    )
    # TASKDATA without its binary logs cannot be read either; add the logs to make it good.
    buffer = io.BytesIO(data)
    with zipfile.ZipFile(buffer, "a") as zf:
        for path in valid_timelogs.glob("TLG*"):
            zf.write(path, f"iso/{path.name}")
    batch = _upload_ok(api_client, core_user, buffer.getvalue())
    assert batch["status"] == "PROCESSED"
    status = _get(api_client, f"{BATCH_URL}/{batch['id']}/status").json()
    assert len(status["converted"]) == 19
    assert len(status["failed"]) == 1 and status["failed"][0]["message"].startswith(UNABLE_TO_READ)


@pytest.mark.embedded
def test_geojson_points_with_standard_names(api_client, core_user):
    features = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [10.0 + i * 1e-4, 54.0]},
            "properties": {
                "timestamp": f"2024-05-01T10:00:{i:02d}Z",
                "appliedRate": 100.0 + i,
                "equipmentWidth": 12.0,
                "products": "UAN 28",
            },
        }
        for i in range(30)
    ]
    data = zip_entries({"spray.geojson": json.dumps({"type": "FeatureCollection", "features": features}).encode()})
    batch = _upload_ok(api_client, core_user, data)
    assert batch["status"] == "PROCESSED", batch
    file = _get(api_client, f"{FILES_URL}/{batch['files'][0]}").json()
    assert file["fileFormat"] == "GEOJSON"
    assert file["operationType"] == "applied"
    assert file["startTime"] == "2024-05-01T10:00:00.000Z" and file["endTime"] == "2024-05-01T10:00:29.000Z"


# --- hostile input --------------------------------------------------------------------------------------------------


@pytest.mark.embedded
def test_truncated_zip_fails_the_batch_with_a_reason(api_client, core_user, valid_timelogs):
    data = zip_folder(valid_timelogs)
    batch = _upload_ok(api_client, core_user, data[: len(data) // 2])
    assert batch["status"] == "FAILED"
    assert batch["statusDetails"] == UNABLE_TO_READ
    assert batch["failureReason"].startswith("upload.zip is not a zip archive or is truncated ("), batch[
        "failureReason"
    ]


@pytest.mark.embedded
@pytest.mark.parametrize("name", ["../../etc/evil.txt", "/abs/evil.txt", "a/../../evil.txt"])
def test_path_traversal_fails_the_batch_and_writes_nothing_outside(api_client, core_user, name, settings, tmp_path):
    settings.CONVERSION_WORK_DIR = str(tmp_path / "work" / "deep")
    batch = _upload_ok(api_client, core_user, zip_entries({name: b"owned"}))
    assert batch["status"] == "FAILED"
    assert batch["statusDetails"] == UNABLE_TO_READ
    assert not any(p.name == "evil.txt" for p in tmp_path.rglob("*"))


@pytest.mark.embedded
def test_zip_bomb_fails_the_batch_without_filling_the_disk(api_client, core_user, settings, tmp_path):
    settings.CONVERSION_WORK_DIR = str(tmp_path / "work")
    settings.CONVERSION_MAX_EXPANDED_BYTES = 50 * 1024 * 1024
    bomb = io.BytesIO()
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open("zeros.bin", "w", force_zip64=True) as entry:
            chunk = b"\0" * (1024 * 1024)
            for _ in range(200):
                entry.write(chunk)
    assert len(bomb.getvalue()) < 1024 * 1024
    batch = _upload_ok(api_client, core_user, bomb.getvalue())
    assert batch["status"] == "FAILED"
    assert batch["statusDetails"] == UNABLE_TO_READ
    assert "ratio" in batch["failureReason"] or "expand" in batch["failureReason"] or "large" in batch["failureReason"]
    written = sum(p.stat().st_size for p in (tmp_path / "work").rglob("*") if p.is_file())
    assert written < 60 * 1024 * 1024


@pytest.mark.embedded
def test_corrupt_time_log_binary_fails_its_task_and_nothing_else(api_client, core_user, valid_timelogs):
    root = _taskdata(valid_timelogs)
    broken_task = next(t for t in root.findall("TSK") if t.find("TLG").get("A") == "TLG00001")
    entries = {p.name: p.read_bytes() for p in valid_timelogs.iterdir()}
    entries["TLG00001.bin"] = entries["TLG00001.bin"][:1000] + b"\xff" * 37
    batch = _upload_ok(api_client, core_user, zip_entries({f"TASKDATA/{k}": v for k, v in entries.items()}))
    assert batch["status"] == "PROCESSED"
    status = _get(api_client, f"{BATCH_URL}/{batch['id']}/status").json()
    assert len(status["converted"]) == 18
    assert len(status["failed"]) == 1
    assert status["failed"][0]["message"].startswith(UNABLE_TO_READ)
    failed = _get(api_client, f"{FILES_URL}/{status['failed'][0]['id']}").json()
    assert failed["fileName"] == f"TASKDATA/{broken_task.get('B')}"
    assert failed["status"] == "failed"
    assert "TLG00001" in failed["statusDetails"]


@pytest.mark.embedded
def test_xml_external_entities_are_not_resolved(api_client, core_user, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-VALUE")
    xml = (
        f'<?xml version="1.0"?><!DOCTYPE ISO11783_TaskData [<!ENTITY xxe SYSTEM "file://{secret}">]>'
        '<ISO11783_TaskData VersionMajor="4" VersionMinor="2" DataTransferOrigin="1">'
        '<TSK A="TSK1" B="&xxe;" G="4"><TLG A="TLG00001"/></TSK></ISO11783_TaskData>'
    ).encode()
    batch = _upload_ok(api_client, core_user, zip_entries({"TASKDATA/TASKDATA.XML": xml}))
    assert batch["status"] == "FAILED"
    assert batch["statusDetails"] == UNABLE_TO_READ
    dump = json.dumps([batch, _get(api_client, f"{FILES_URL}?batchId={batch['id']}").json()])
    assert "TOP-SECRET-VALUE" not in dump


@pytest.mark.embedded
def test_an_internal_error_fails_with_the_spec_text_and_retry_converts_only_what_failed(
    api_client, core_user, valid_timelogs, jd_shapefiles, isoxml_reader_crashes
):
    shp_zip = zipfile.ZipFile(jd_shapefiles / "Export From MyJohnDeere - Seeding.zip")
    entries = {f"shp/{n}": shp_zip.read(n) for n in shp_zip.namelist()}
    entries.update({f"iso/{p.name}": p.read_bytes() for p in valid_timelogs.iterdir()})
    batch = _upload_ok(api_client, core_user, zip_entries(entries))
    assert batch["status"] == "PROCESSED"  # the shapefile converted
    status = _get(api_client, f"{BATCH_URL}/{batch['id']}/status").json()
    assert len(status["converted"]) == 1 and len(status["failed"]) == 1
    assert status["failed"][0]["message"] == INTERNAL_ERROR
    converted = _get(api_client, f"{FILES_URL}/{status['converted'][0]}").json()

    isoxml_reader_crashes.undo()
    response = api_client.put(f"{BATCH_URL}/{batch['id']}/retry")
    assert response.status_code == 200, response.content
    assert response.json()["id"] == batch["id"]
    after = _batch(api_client, batch["id"])
    assert after["status"] == "PROCESSED"
    assert len(after["files"]) == 20  # 19 tasks + the shapefile
    status = _get(api_client, f"{BATCH_URL}/{batch['id']}/status").json()
    assert len(status["converted"]) == 20 and status["failed"] == []
    # The file converted the first time is untouched.
    assert _get(api_client, f"{FILES_URL}/{converted['id']}").json() == converted


@pytest.mark.parametrize("with_card", [False, True])
def test_a_batch_fails_with_the_internal_error_text_only_when_every_failure_was_ours(
    api_client, core_user, valid_timelogs, samples_dir, isoxml_reader_crashes, with_card
):
    """A card we cannot read beside a crash of ours: the batch could not be read (the card), not only our error."""
    entries = {f"iso/{p.name}": p.read_bytes() for p in valid_timelogs.iterdir()}
    if with_card:
        entries["card.zip"] = (
            samples_dir / "johndeere-sampledata/Display data/Gen4 - 4600 Harvest Data.zip"
        ).read_bytes()
    batch = _upload_ok(api_client, core_user, zip_entries(entries))
    assert batch["status"] == "FAILED"
    assert batch["statusDetails"] == (UNABLE_TO_READ if with_card else INTERNAL_ERROR)


@pytest.mark.embedded
def test_retry_of_a_batch_that_failed_to_open_opens_it_again(api_client, core_user, load_from_stream):
    batch = _upload_ok(api_client, core_user, (load_from_stream / "InvalidArchive.zip").read_bytes())
    assert batch["status"] == "FAILED"
    response = api_client.put(f"{BATCH_URL}/{batch['id']}/retry")
    assert response.status_code == 200
    assert _batch(api_client, batch["id"])["status"] == "FAILED"


@pytest.mark.embedded
def test_a_batch_still_being_processed_cannot_be_retried(api_client, core_user, valid_timelogs, monkeypatch):
    for batch_id in (
        upload_lost(api_client, core_user, valid_timelogs, monkeypatch),  # not opened yet
        opened_batch(api_client, core_user, valid_timelogs, monkeypatch)[0],  # its data set not converted yet
    ):
        assert_problem(api_client.put(f"{BATCH_URL}/{batch_id}/retry"), 409, "batchProcessing")
        assert _batch(api_client, batch_id)["status"] == "RECEIVED"


def test_retrying_a_batch_of_what_cannot_be_read_is_409_and_changes_nothing(
    api_client, owner, core_user, samples_dir, webhook_receiver, subscribe
):
    """A display card stays unreadable: the retry says so (it was a 200 that did nothing), sends nothing round again,
    and announces nothing."""
    subscribe(owner, webhook_receiver, ["uploadedFileProcessingFailed", "batchUploadProcessingFinished"])
    card = (samples_dir / "johndeere-sampledata/Display data/Gen4 - 4600 Harvest Data.zip").read_bytes()
    batch = _upload_ok(api_client, core_user, card)
    assert batch["status"] == "FAILED" and len(webhook_receiver.wait_for(2)) == 2
    files = _get(api_client, f"{FILES_URL}?batchId={batch['id']}").json()
    problem = assert_problem(api_client.put(f"{BATCH_URL}/{batch['id']}/retry"), 409, "nothingToRetry")
    assert problem["detail"].startswith("Nothing to retry: what failed is in a format that cannot be converted")
    assert (
        "failed is in a format that cannot be converted, however often it is sent: JD-Data (John Deere Gen4). "
        in (problem["detail"])
    )
    assert _batch(api_client, batch["id"]) == batch
    assert _get(api_client, f"{FILES_URL}?batchId={batch['id']}").json() == files
    assert len(webhook_receiver.wait_for(3, timeout=0.5)) == 2


def test_a_retry_takes_no_body_or_an_empty_document(api_client, core_user, samples_dir):
    """It ignored any body (XML, a form, broken JSON) and ran: a body is refused as on every other write."""
    card = (samples_dir / "johndeere-sampledata/Display data/Gen4 - 4600 Harvest Data.zip").read_bytes()
    url = f"{BATCH_URL}/{_upload_ok(api_client, core_user, card)['id']}/retry"
    assert_problem(api_client.put(url, b"{", content_type="application/json"), 400, "malformedRequest")
    assert_problem(api_client.put(url, b"<a/>", content_type="application/xml"), 415, "unsupportedMediaType")
    refused = assert_problem(api_client.put(url, {"force": True}, format="json"), 400, "validation")
    assert refused["fieldErrors"] == [
        {"field": "", "message": "This request takes no body (or the empty JSON document {})."}
    ]  # (it said "body": no key the client sent)
    # (past the body's check: the card cannot be converted, and the retry says so)
    assert_problem(api_client.put(url, {}, format="json"), 409, "nothingToRetry")
    assert_problem(api_client.put(url), 409, "nothingToRetry")
    # Another owner's batch is 404 whatever the body
    assert_problem(api_client.put(f"{BATCH_URL}/00000000-0000-0000-0000-000000000000/retry", b"{",
                                  content_type="application/json"), 404, "notFound")  # fmt: skip


# --- events ---------------------------------------------------------------------------------------------------------


def test_events_per_file_and_one_per_batch(
    api_client, owner, core_user, jd_shapefiles, samples_dir, webhook_receiver, subscribe
):
    subscribe(
        owner,
        webhook_receiver,
        ["uploadedFileProcessingFinished", "uploadedFileProcessingFailed", "batchUploadProcessingFinished"],
    )
    card = samples_dir / "johndeere-sampledata/Display data/Gen4 - 4600 Harvest Data.zip"
    data = zip_entries(
        {
            "harvest.zip": (jd_shapefiles / "Export From MyJohnDeere - Harvest.zip").read_bytes(),
            "gen4.zip": card.read_bytes(),
        }
    )
    batch = _upload_ok(api_client, core_user, data)
    webhook_receiver.wait_for(3)
    events = webhook_receiver.events()
    by_type = {}
    for event in events:
        by_type.setdefault(event["type"], []).append(event)
    assert [e["batchId"] for e in by_type["batchUploadProcessingFinished"]] == [batch["id"]]
    assert by_type["batchUploadProcessingFinished"][0]["status"] == "PROCESSED"
    finished, failed = by_type["uploadedFileProcessingFinished"], by_type["uploadedFileProcessingFailed"]
    assert len(finished) == 1 and len(failed) == 1
    assert {finished[0]["coreFileId"], failed[0]["coreFileId"]} == set(batch["files"])
    assert finished[0]["batchId"] == failed[0]["batchId"] == batch["id"]
    assert failed[0]["message"].startswith(UNABLE_TO_READ)
    assert "message" not in by_type["batchUploadProcessingFinished"][0]

    # A batch that fails says why, as its record does
    failed_batch = _upload_ok(api_client, core_user, zip_entries({"notes.txt": b"no machine data here"}))
    assert failed_batch["status"] == "FAILED"
    webhook_receiver.wait_for(4)
    event = [e for e in webhook_receiver.events() if e.get("batchId") == failed_batch["id"]]
    expected = ": ".join(filter(None, (failed_batch.get("statusDetails"), failed_batch.get("failureReason"))))
    assert [(e["type"], e["status"], e["message"]) for e in event] == [
        ("batchUploadProcessingFinished", "FAILED", expected)
    ]
    assert expected.startswith(NO_VALID_FILES)
    assert all(e["coreUserId"] == str(core_user.pk) for e in events)
