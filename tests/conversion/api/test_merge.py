"""POST /files/merge: validation, the new file returned at once, completed by a task, its events."""

import errno
import json
from dataclasses import replace

import pytest
from shapely.geometry import shape

from conversion import merging, outputs
from conversion.models import INTERNAL_ERROR, File, FileOrigin, FileStatus
from operations.models import Operation
from tests.factories import CoreUserFactory
from tests.operations.helpers import SECTION_WIDTH_M, SECTIONS, grid_table, processed_file, section_table
from tests.tenancy import assert_problem

from .conftest import FILES_URL

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

MERGE_URL = f"{FILES_URL}/merge"


def _merge(client, ids):
    return client.post(MERGE_URL, {"ids": [str(i) for i in ids]}, format="json")


def test_merge_returns_the_new_file_at_once_and_a_task_completes_it(api_client, core_user, settings):
    first = processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    second = processed_file(core_user, grid_table(start="2024-09-03T10:00:00", seed=2))

    settings.CELERY_TASK_ALWAYS_EAGER = False  # what the client sees before the task ran
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("conversion.tasks.file_merge_process.delay", lambda file_id: None)
        response = _merge(api_client, [first.pk, second.pk])
    assert response.status_code == 201, response.content
    body = response.json()
    assert response["Location"] == f"http://testserver/services/operations/api/files/{body['id']}"
    assert body["status"] == "processing"
    assert body["origin"] == "merged"
    assert "batchId" not in body  # no batch (supplement `batchId?`); it was null
    assert body["operationType"] == "harvested"
    assert sorted(body["sources"]) == sorted([str(first.pk), str(second.pk)])

    settings.CELERY_TASK_ALWAYS_EAGER = True
    merging.file_merge_process(body["id"])
    file = api_client.get(f"{FILES_URL}/{body['id']}").json()
    assert file["status"] == "processed" and "batchId" not in file
    assert file["pointCount"] == first.point_count + second.point_count
    merged = File.objects.get(pk=body["id"])
    total = sum(f.summary["properties"]["totalWetMass"]["value"] for f in (first, second))
    assert merged.summary["properties"]["totalWetMass"]["value"] == pytest.approx(total)
    points = outputs.load_points(merged)
    assert (points.columns["timestamp"][1:] >= points.columns["timestamp"][:-1]).all()
    assert {i["property"] for i in api_client.get(f"{FILES_URL}/{body['id']}/images").json()} >= {"wetMassPerArea"}
    # A merged file is not grouped into an operation (its sources may be).
    assert not Operation.objects.filter(files__pk=merged.pk).exists()


def test_a_merge_has_its_sources_format_and_provider_when_they_share_them(api_client, core_user):
    first = processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1), provider="ProviderA")
    second = processed_file(core_user, grid_table(start="2024-09-03T10:00:00", seed=2), provider="ProviderA")
    File.objects.filter(pk__in=[first.pk, second.pk]).update(file_format="ISOXML")
    same = _merge(api_client, [first.pk, second.pk]).json()
    assert (same["fileFormat"], same["provider"]) == ("ISOXML", "ProviderA")
    File.objects.filter(pk=second.pk).update(file_format="SHAPEFILE", provider="ProviderB")
    mixed = _merge(api_client, [first.pk, second.pk]).json()
    assert (mixed["fileFormat"], mixed["provider"]) == ("MERGED", "ProviderA")  # the first source's


def test_merging_files_that_log_the_same_seconds_keeps_each_files_distance_and_width(api_client, core_user):
    # Given two per-section logs of the same seconds, the second a hair (about 0.1 mm) to the east: every row of the
    # second file shares its timestamp with the first's (the same log twice is counted once: test below)
    table = section_table()
    first = processed_file(core_user, table)
    second = processed_file(core_user, replace(table, columns=table.columns | {"lon": table.columns["lon"] + 1e-9}))
    single = first.summary["properties"]
    # A single file counts each time step's distance once (160 steps of 5 m), its sections' widths added up
    assert single["totalDistance"]["value"] == pytest.approx(160 * 5.0)
    assert single["totalArea"]["value"] == pytest.approx(160 * SECTIONS * 5.0 * SECTION_WIDTH_M)

    # When merged
    body = _merge(api_client, [first.pk, second.pk]).json()
    merged = File.objects.get(pk=body["id"])
    assert merged.status == FileStatus.PROCESSED, merged.status_message

    # Then distance adds up like area and mass: the files' time steps stay apart
    props = merged.summary["properties"]
    for key in ("totalDistance", "totalArea", "totalWetMass"):
        assert props[key]["value"] == pytest.approx(2 * single[key]["value"]), key
    # And the machine stays 12 m wide: the coverage of the same points is the single file's, not coarser cells'
    assert shape(merged.summary["geometry"]).area == pytest.approx(shape(first.summary["geometry"]).area)
    # And the files' origin is no property of the merged file's outputs
    for url in (f"{FILES_URL}/{merged.pk}/standardGeojson", f"{FILES_URL}/{merged.pk}/rawGeojson"):
        response = api_client.get(url)
        assert response.status_code == 200, url
        features = json.loads(b"".join(response.streaming_content))["features"]
        assert len(features) == 2 * first.point_count
        assert not any(k.startswith("_") for f in features for k in f["properties"]), url
    units = [api_client.get(f"{FILES_URL}/{f.pk}/units").json() for f in (first, merged)]
    assert units[0] == units[1]


def test_merging_a_file_with_the_same_data_again_counts_it_once(api_client, core_user):
    # Given one log uploaded twice
    first = processed_file(core_user, section_table())
    second = processed_file(core_user, section_table())

    # When both are merged
    merged = File.objects.get(pk=_merge(api_client, [first.pk, second.pk]).json()["id"])

    # Then the merged file is the log: its points and figures once
    assert merged.status == FileStatus.PROCESSED, merged.status_message
    assert merged.point_count == first.point_count
    for key in ("totalDistance", "totalArea", "totalWetMass"):
        assert merged.summary["properties"][key]["value"] == pytest.approx(first.summary["properties"][key]["value"])


def test_merge_events(api_client, owner, core_user, webhook_receiver, subscribe, monkeypatch):
    subscribe(owner, webhook_receiver, ["mergedFileProcessingFinished", "mergedFileProcessingFailed"])
    files = [processed_file(core_user, grid_table(start=f"2024-09-0{d}T10:00:00", seed=d)) for d in (1, 2, 3)]
    done = _merge(api_client, [f.pk for f in files]).json()

    def broken(tables, name):
        raise ValueError("cannot merge column 'wetMassPerArea'")

    monkeypatch.setattr(merging, "tables_merge", broken)
    failed = _merge(api_client, [f.pk for f in files[:2]]).json()
    events = {json.loads(e.body)["type"]: json.loads(e.body) for e in webhook_receiver.wait_for(2)}
    assert events["mergedFileProcessingFinished"]["coreFileId"] == done["id"]
    assert events["mergedFileProcessingFailed"]["coreFileId"] == failed["id"]
    assert "wetMassPerArea" in events["mergedFileProcessingFailed"]["message"]
    assert File.objects.get(pk=failed["id"]).status == FileStatus.FAILED


def test_a_merge_that_meets_a_full_disk_fails_as_ours_and_can_be_made_again(api_client, core_user, monkeypatch):
    """It failed as "The file could not be built: [Errno 28] No space left on device": the user's data to blame."""
    files = [processed_file(core_user, grid_table(start=f"2024-09-0{d}T10:00:00", seed=d)) for d in (1, 2)]
    with monkeypatch.context() as patch:
        patch.setattr(outputs, "produce", lambda *a, **k: (_ for _ in ()).throw(OSError(errno.ENOSPC, "No space")))
        failed = _merge(api_client, [f.pk for f in files]).json()
    body = api_client.get(f"{FILES_URL}/{failed['id']}").json()
    assert body["status"] == "failed"
    assert body["statusDetails"] == f"{INTERNAL_ERROR} (the server's disk failed: No space; retry once it is fixed)"
    # Once there is room, the same merge made again is processed
    again = _merge(api_client, [f.pk for f in files]).json()
    assert api_client.get(f"{FILES_URL}/{again['id']}").json()["status"] == "processed"


def test_merge_validation(api_client, owner, core_user):
    harvest = processed_file(core_user, grid_table(start="2024-09-01T10:00:00"))
    harvest2 = processed_file(core_user, grid_table(start="2024-09-02T10:00:00"))
    applied = processed_file(core_user, grid_table(start="2024-09-01T10:00:00", operation_type="applied"))
    other_user = processed_file(CoreUserFactory(owner=owner), grid_table(start="2024-09-01T10:00:00"))
    failed = File.objects.create(
        core_user=core_user, file_name="x", file_format="TEST", provider="Other", status=FileStatus.FAILED
    )
    before = File.objects.count()

    cases = [
        ([harvest.pk], "at least two"),
        ([harvest.pk, harvest.pk], "at least two"),
        ([harvest.pk, applied.pk], "operation types"),
        ([harvest.pk, other_user.pk], "different core users"),
        ([harvest.pk, harvest2.pk, failed.pk], str(failed.pk)),
    ]
    for ids, reason in cases:
        body = assert_problem(_merge(api_client, ids), 400, "mergeNotAllowed")
        assert reason in body["detail"], (ids, body)
    assert_problem(api_client.post(MERGE_URL, {"ids": []}, format="json"), 400, "validation")
    assert_problem(api_client.post(MERGE_URL, {"ids": ["nope", str(harvest.pk)]}, format="json"), 400, "validation")
    for not_strings in ([1, 2], [True, False], [str(harvest.pk), 3]):  # DRF alone reads numbers as UUIDs
        assert_problem(api_client.post(MERGE_URL, {"ids": not_strings}, format="json"), 400, "validation")
    assert_problem(api_client.post(MERGE_URL, {}, format="json"), 400, "validation")
    unknown = "00000000-0000-0000-0000-000000000000"
    body = assert_problem(_merge(api_client, [harvest.pk, unknown]), 404, "notFound")
    assert unknown in body["detail"]
    assert File.objects.count() == before


def test_another_owners_files_are_404(api_client, other_client, core_user):
    files = [processed_file(core_user, grid_table(start=f"2024-09-0{d}T10:00:00")) for d in (1, 2)]
    before = File.objects.count()
    assert_problem(_merge(other_client, [f.pk for f in files]), 404, "notFound")
    assert File.objects.count() == before
    merged = _merge(api_client, [f.pk for f in files]).json()
    assert File.objects.get(pk=merged["id"]).origin == FileOrigin.MERGED
    for url in (f"{FILES_URL}/{merged['id']}", f"{FILES_URL}/{merged['id']}/images"):
        assert_problem(other_client.get(url), 404, "notFound")


def test_a_merge_of_an_operation_file_being_rebuilt_waits_for_the_rebuild(core_user, owner):
    """Its task found the operation's automerged file being rebuilt (a file joined after the merge was accepted)
    and failed the merge for good: "a source file is no longer available"."""
    from django.db import transaction

    from fields.services import field_create
    from operations.services import operation_file_group
    from tests.operations.helpers import grid_box

    # Given an operation on a field, and a harvest of the same core user elsewhere in time
    field_create(core_user=core_user, geometry=grid_box())
    processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    operation = Operation.objects.get()
    other = processed_file(core_user, grid_table(start="2024-10-20T10:00:00", seed=4))
    with transaction.atomic():
        # When the operation's file is merged with it and, before the merge's task runs, a file joins the operation
        merged = merging.file_merge(owner=owner, ids=[operation.merged_file_id, other.pk])
        joining = processed_file(core_user, grid_table(start="2024-09-02T10:00:00", seed=2))
        operation_file_group(str(joining.pk))
        assert File.objects.get(pk=operation.merged_file_id).status == FileStatus.PROCESSING
    # Then the merge ran once the operation was rebuilt: the rebuilt file's points and the other file's
    merged.refresh_from_db()
    assert merged.status == FileStatus.PROCESSED, merged.status_message
    rebuilt = File.objects.get(pk=operation.merged_file_id)
    assert rebuilt.status == FileStatus.PROCESSED
    assert merged.point_count == rebuilt.point_count + other.point_count == 3 * len(grid_table())
