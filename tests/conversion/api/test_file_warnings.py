"""A file record's `warnings`: what the reader and the standardisation noted about the points (data left unread,
values kept unconverted, values derived by assumption) reach the user on every answer that shows the record."""

import io
import json
import shutil
import xml.etree.ElementTree as ET
import zipfile
from pathlib import Path

import pytest
from shapely.geometry import MultiPolygon, box

from conversion import outputs
from conversion import services as conversion
from conversion.models import File, FileStatus
from fields.services import field_create
from operations.models import Operation
from tests.conversion.readers.conftest import walk_tlg
from tests.operations.helpers import grid_box, grid_table, processed_file
from tests.tenancy import assert_cross_tenant_404

from .conftest import BATCH_URL, FILES_URL, upload, zip_entries, zip_folder

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

FIELD_FILES = "/services/fields/api/users/{user}/fields/{field}/operations"
OPS_URL = "/services/operations/api/operations"
LON0, LAT0 = -93.0, 41.0
NO_UNIT = "Rt Apd Ms Wet: no unit in the file; the value is kept as it is"


def _points(properties: list[dict]) -> bytes:
    """A GeoJSON FeatureCollection of points 1e-5 degree apart, one second apart, with these properties."""
    features = [
        {
            "type": "Feature",
            "geometry": {"type": "Point", "coordinates": [LON0 + i * 1e-5, LAT0]},
            "properties": {"timestamp": f"2024-05-01T10:00:{i:02d}Z", **props},
        }
        for i, props in enumerate(properties)
    ]
    return json.dumps({"type": "FeatureCollection", "features": features}).encode()


def _converted(api_client, core_user, data: bytes) -> list[dict]:
    """The file records of an upload, once converted."""
    batch = upload(api_client, core_user.pk, data).json()
    body = api_client.get(f"{BATCH_URL}/{batch['id']}").json()
    assert body["status"] == "PROCESSED", body
    return [api_client.get(f"{FILES_URL}/{file_id}").json() for file_id in body["files"]]


def _listed(response) -> dict[str, dict]:
    assert response.status_code == 200, response.content[:300]
    body = response.json()
    return {f["id"]: f for f in (body["operations"] if isinstance(body, dict) else body)}


@pytest.fixture
def unit_less_rate() -> bytes:
    """An application whose rate column (an SMS export's `Rt Apd Ms Wet`) states no unit."""
    return zip_entries({"spray.geojson": _points([{"Rt Apd Ms Wet": 150.0 + i} for i in range(5)])})


def test_a_rate_without_a_unit_is_told_on_the_file_record_and_in_every_list(api_client, core_user, unit_less_rate):
    # Given a field under the points, and an application whose rate has no unit uploaded
    field = field_create(
        core_user=core_user,
        name="Spray",
        geometry=MultiPolygon([box(LON0 - 1e-3, LAT0 - 1e-3, LON0 + 1e-3, LAT0 + 1e-3)]),
    )
    [record] = _converted(api_client, core_user, unit_less_rate)

    # Then the file record says the value was kept as it is
    assert record["status"] == "processed"
    assert record["warnings"] == [NO_UNIT]
    # And so does every answer that shows the record
    assert _listed(api_client.get(FILES_URL))[record["id"]]["warnings"] == [NO_UNIT]
    assert _listed(api_client.get(FILES_URL, {"batchId": record["batchId"]}))[record["id"]] == record
    field_files = FIELD_FILES.format(user=core_user.pk, field=field.pk)
    assert _listed(api_client.get(f"{field_files}/files"))[record["id"]] == record
    assert api_client.get(f"{field_files}/files/{record['id']}").json() == record
    assert api_client.get(f"{field_files}/{record['id']}").json() == [record]  # deprecated outline


def test_points_without_a_moisture_are_told_after_standardisation(api_client, core_user):
    # Given a corn harvest whose moisture is logged at some points only
    points = [
        {"operationType": "harvested", "crop": "corn", "wetMassPerArea": 9000.0 + i, "equipmentWidth": 10.0}
        | ({"harvestMoisture": 18.0} if i % 3 else {})
        for i in range(9)
    ]
    without = sum(1 for p in points if "harvestMoisture" not in p)
    [record] = _converted(api_client, core_user, zip_entries({"harvest.geojson": _points(points)}))

    # Then the record says those points were dried at the file's mean moisture
    assert record["warnings"] == [f"{without} points without a moisture: dry values at the file's mean moisture"]


def test_a_time_log_cut_inside_a_record_is_told_on_its_tasks_file_only(api_client, core_user, valid_timelogs, tmp_path):
    # Given the CCI export (copied here) with TLG00003, task zJY's only log, cut one byte into its last record
    export = Path(shutil.copytree(valid_timelogs, tmp_path / "TASKDATA"))
    records = walk_tlg(valid_timelogs / "TLG00003.xml", valid_timelogs / "TLG00003.bin")["records"]
    last_start = records[-2]["end"]
    data = (valid_timelogs / "TLG00003.bin").read_bytes()
    (export / "TLG00003.bin").write_bytes(data[: last_start + 1])

    # When it is uploaded
    files = {
        f["fileName"].rsplit("/", 1)[-1]: f
        for f in _converted(api_client, core_user, zip_folder(export, prefix="TASKDATA/"))
    }

    # Then the task's file says what was left unread, and the other tasks' files have nothing to say
    assert files["zJY"]["warnings"] == [
        f"TLG00003.bin ends inside a record: 1 byte at its end (a partial record) left unread, "
        f"the {len(records) - 1} complete records before it read"
    ]
    assert len(files) == 19
    assert {name: f["warnings"] for name, f in files.items() if name != "zJY"} == {
        name: [] for name in files if name != "zJY"
    }


def test_a_total_the_file_records_far_from_what_its_points_give_is_a_warning(api_client, core_user, load_from_stream):
    # Given GreenDB's two planting tasks, whose task totals give an effective total distance (DDI 0x0075, mm) of a
    # few metres: the counter logs the working seconds (it equals DDI 0x0077, s, at every record)
    data = (load_from_stream / "AllFieldsMoved_Or_Simplified_Out.zip").read_bytes()
    root = ET.fromstring(zipfile.ZipFile(io.BytesIO(data)).read("AllFieldsMoved_Or_Simplified_Out/TASKDATA.XML"))
    recorded_m = [
        float(next(d.get("B") for d in task.findall("TIM")[-1].findall("DLV") if d.get("A") == "0075")) / 1000
        for task in root.findall("TSK")
    ]

    # When it is uploaded
    records = _converted(api_client, core_user, data)

    # Then each file keeps both figures and says they disagree, by how much: its tracks run kilometres
    assert len(records) == 2
    for record, recorded in zip(records, recorded_m, strict=True):
        summary = api_client.get(f"{FILES_URL}/{record['id']}/summary").json()["properties"]
        assert summary["recordedTotals"]["totalDistance"] == {"value": pytest.approx(recorded), "unit": "m"}
        track = summary["totalDistance"]["value"]
        assert track > 1000 * recorded
        # (area and the other totals agree with the file's: only the distance is said)
        assert [w for w in record["warnings"] if w.startswith("total")] == [
            f"totalDistance: the file records {recorded:.3g} m, its points give {track:,.0f} m "
            f"({track / recorded:,.0f} times more); they count different things (time logs covering part of the "
            "task, a device logging a value at another resolution or for one section): check before relying on "
            "either"
        ]


def test_a_clean_file_has_an_empty_list(api_client, core_user, jd_shapefiles):
    # Given the Merriweather Farms harvest export, which its reader reads whole
    harvest = (jd_shapefiles / "Export From MyJohnDeere - Harvest.zip").read_bytes()
    [record] = _converted(api_client, core_user, harvest)
    # Then its record and the list carry the key, empty
    assert record["status"] == "processed" and record["warnings"] == []
    assert _listed(api_client.get(FILES_URL))[record["id"]]["warnings"] == []


def test_a_failed_file_has_an_empty_list(api_client, core_user):
    # Given a GeoJSON whose points all have a rate of 0 (cleaning drops every one)
    data = zip_entries({"spray.geojson": _points([{"appliedRate": 0.0} for _ in range(3)])})
    batch = upload(api_client, core_user.pk, data).json()
    [file_id] = api_client.get(f"{BATCH_URL}/{batch['id']}").json()["files"]
    record = api_client.get(f"{FILES_URL}/{file_id}").json()
    assert record["status"] == "failed" and record["warnings"] == []


def test_a_merged_file_carries_its_merges_warnings(api_client, core_user):
    # Given two processed files, each with warnings of its own and one in common
    first = grid_table(start="2024-09-01T10:00:00", seed=1)
    first.warnings = ["log A ends inside a record", "seedRate: no unit in the file; the value is kept as it is"]
    second = grid_table(start="2024-09-02T10:00:00", seed=2)
    second.warnings = ["seedRate: no unit in the file; the value is kept as it is", "log B is empty"]
    files = [processed_file(core_user, first), processed_file(core_user, second)]
    assert [f.warnings for f in files] == [first.warnings, second.warnings]

    # When they are merged
    merge = api_client.post(f"{FILES_URL}/merge", {"ids": [str(f.pk) for f in files]}, format="json")
    assert merge.status_code == 201, merge.content

    # Then the merged file carries both files' warnings, in their order, each once
    merged = api_client.get(f"{FILES_URL}/{merge.json()['id']}").json()
    assert merged["status"] == "processed"
    assert merged["warnings"] == [
        "log A ends inside a record",
        "seedRate: no unit in the file; the value is kept as it is",
        "log B is empty",
    ]


def test_an_operation_rebuilt_replaces_its_files_warnings_and_a_crop_keeps_them(api_client, core_user):
    # Given a field and a file with a warning: its operation's automerged file carries it
    field_create(core_user=core_user, id="whole", geometry=grid_box())
    first = grid_table(start="2024-09-01T10:00:00", seed=1)
    first.warnings = ["first log: 2 points without a position left out"]
    processed_file(core_user, first)
    operation = Operation.objects.get()
    automerged = f"{FILES_URL}/{operation.merged_file_id}"
    assert api_client.get(automerged).json()["warnings"] == first.warnings

    # When a second file joins (the operation is built again)
    second = grid_table(start="2024-09-02T10:00:00", seed=2)
    second.warnings = ["second log: 1 byte left unread"]
    processed_file(core_user, second)

    # Then the automerged file's warnings are the new build's
    rebuilt = api_client.get(automerged).json()
    assert rebuilt["status"] == "processed" and rebuilt["pointCount"] == len(first) + len(second)
    assert rebuilt["warnings"] == [*first.warnings, *second.warnings]
    # And a crop of the operation keeps the warnings of the points it was cut from
    crop = api_client.post(f"{OPS_URL}/cropOperationByField", {"id": str(operation.pk)}, format="json")
    assert crop.status_code == 202, crop.content
    cropped = api_client.get(f"{FILES_URL}/{crop.json()['coreFileId']}").json()
    assert cropped["status"] == "processed" and cropped["warnings"] == rebuilt["warnings"]


def test_a_file_completed_again_replaces_its_warnings_and_a_failure_empties_them(api_client, core_user):
    # Given a processed file with a warning, being converted again
    table = grid_table()
    table.warnings = ["an earlier build's warning"]
    file = processed_file(core_user, table)
    File.objects.filter(pk=file.pk).update(status=FileStatus.PROCESSING)

    # When it completes with other points, then its warnings are theirs
    again = grid_table(seed=3)
    again.warnings = ["this build's warning"]
    conversion.file_complete(file, outputs.produce(file, again, clean=False))
    assert api_client.get(f"{FILES_URL}/{file.pk}").json()["warnings"] == ["this build's warning"]

    # When it is converted again and fails, then it has none
    File.objects.filter(pk=file.pk).update(status=FileStatus.PROCESSING)
    conversion.file_fail(file, "The file could not be built: a source file is no longer available")
    record = api_client.get(f"{FILES_URL}/{file.pk}").json()
    assert record["status"] == "failed" and record["warnings"] == []


def test_stored_warnings_are_cleaned_deduplicated_and_capped(api_client, core_user):
    # Given a table with text no database stores, repeats, a very long warning and far too many warnings
    table = grid_table()
    table.warnings = [
        "column\x00 A: no unit in the file\ud800",
        "column A: no unit in the file",
        "  ",
        "x" * 5000,
        *(f"log {i} is empty" for i in range(200)),
        "column A: no unit in the file",
    ]
    file = processed_file(core_user, table)

    # Then the record holds 100 entries: the first 99, cleaned, each once, and how many more there were
    warnings = api_client.get(f"{FILES_URL}/{file.pk}").json()["warnings"]
    assert len(warnings) == outputs.WARNINGS_MAX == 100
    assert warnings[0] == "column A: no unit in the file"
    assert warnings[1] == "x" * 999 + "\u2026"
    assert warnings[2:99] == [f"log {i} is empty" for i in range(97)]
    # 1 unique column warning + 1 long one + 200 logs = 202 distinct entries; 99 shown
    assert warnings[99] == "103 more warnings not shown"
    assert all(len(w) <= outputs.WARNING_MAX_CHARS for w in warnings)
    assert File.objects.get(pk=file.pk).warnings == warnings


def test_another_owner_sees_no_file_record_nor_its_warnings(api_client, other_client, core_user, unit_less_rate):
    # Given a file with a warning
    [record] = _converted(api_client, core_user, unit_less_rate)
    assert record["warnings"] == [NO_UNIT]
    # Then another owner gets 404 for it and never sees it, nor its warning, in a list
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=f"{FILES_URL}/{record['id']}",
        resource_id=record["id"],
        list_urls=[FILES_URL, f"{FILES_URL}?coreUserId={core_user.pk}", f"{FILES_URL}?batchId={record['batchId']}"],
        delete=False,
        extra_urls=[("get", f"{FILES_URL}/{record['id']}/status", None)],
        core_user=core_user,
    )
    for url in (FILES_URL, BATCH_URL, f"{FILES_URL}?batchId={record['batchId']}"):
        response = other_client.get(url)
        assert response.status_code in (200, 400, 404) and NO_UNIT.encode() not in response.content, url


def test_warnings_at_exactly_the_caps_are_kept_whole():
    assert outputs.file_warnings(["y" * outputs.WARNING_MAX_CHARS]) == ["y" * outputs.WARNING_MAX_CHARS]
    exactly = [f"log {i} is empty" for i in range(outputs.WARNINGS_MAX)]
    assert outputs.file_warnings(exactly) == exactly
    one_more = [*exactly, "one more"]
    assert outputs.file_warnings(one_more) == [*exactly[:-1], "2 more warnings not shown"]
