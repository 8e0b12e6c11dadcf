"""Operations: grouping of processed files per field and window, the operation endpoints, events, tenancy."""

import json
from datetime import UTC, datetime

import numpy as np
import pytest
from django.db import transaction

from conversion import outputs
from conversion.models import File, FileOrigin, FileStatus
from fields.services import field_create
from operations.models import Operation
from operations.services import operation_build, operation_file_group
from tests.factories import CoreUserFactory
from tests.tenancy import assert_cross_tenant_404, assert_problem

from .helpers import LAT0, LON0, grid_box, grid_table, processed_file, section_box, section_table

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

OPS_URL = "/services/operations/api/operations"


@pytest.fixture
def field(core_user):
    return field_create(core_user=core_user, geometry=grid_box(), name="North")


def _day(day: int, hour: int = 10) -> str:
    return f"2024-09-{1 + day:02d}T{hour:02d}:00:00"


def test_files_on_one_field_within_five_days_form_one_operation(api_client, core_user, owner, field):
    first = processed_file(core_user, grid_table(start=_day(0), operation_type="applied", seed=1))
    second = processed_file(core_user, grid_table(start=_day(4), operation_type="applied", seed=2))

    operation = Operation.objects.get()
    body = api_client.get(f"{OPS_URL}/{operation.pk}").json()
    assert body["files"] == [str(first.pk), str(second.pk)]
    assert body["operationType"] == "applied"
    assert body["coreUserId"] == str(core_user.pk)
    assert body["apiOwnerUsername"] == owner.username
    assert body["provider"] == "Other"
    assert body["status"] == "processed"
    assert body["startTime"] == "2024-09-01T10:00:00.000Z"
    assert body["endTime"] == "2024-09-05T10:03:19.000Z"
    assert [f["id"] for f in body["fields"]] == [field.pk]
    assert 0 < body["fields"][0]["coverage"] <= 100
    # The automerged file holds both files' points and is what the operation's outputs come from.
    merged = File.objects.get(pk=body["coreFileId"])
    assert merged.origin == FileOrigin.AUTOMERGED and merged.status == FileStatus.PROCESSED
    assert merged.point_count == first.point_count + second.point_count
    assert sorted(str(s.pk) for s in merged.sources.all()) == sorted([str(first.pk), str(second.pk)])


def test_a_rebuild_leaves_a_field_whose_new_boundary_it_no_longer_covers(api_client, core_user, field):
    """An operation on two fields, one of which is then moved away: the next file's rebuild attaches the automerged
    file to the fields it covers now (as it takes a field created since), and no longer to the moved one: it stayed
    on the operation at 0 % coverage, on the automerged file, and in `?fieldId=` of the moved field."""
    from fields.services import field_update

    other = field_create(core_user=core_user, geometry=grid_box(margin=0.001), name="Around")
    processed_file(core_user, grid_table(start=_day(0), operation_type="applied", seed=1))
    operation = Operation.objects.get()
    body = api_client.get(f"{OPS_URL}/{operation.pk}").json()
    assert sorted(f["id"] for f in body["fields"]) == sorted([field.pk, other.pk])
    field_update(field=other, changes={"geometry": grid_box(lon0=LON0 + 1.0)})  # about 80 km east

    processed_file(core_user, grid_table(start=_day(2), operation_type="applied", seed=2))
    assert Operation.objects.get().pk == operation.pk
    body = api_client.get(f"{OPS_URL}/{operation.pk}").json()
    assert [f["id"] for f in body["fields"]] == [field.pk]
    assert api_client.get(OPS_URL, {"fieldId": other.pk}).json() == []
    merged = api_client.get(f"/services/operations/api/files/{body['coreFileId']}").json()
    assert merged["fields"] == [field.pk]


def test_files_six_days_apart_form_two_operations(core_user, field):
    processed_file(core_user, grid_table(start=_day(0), operation_type="planted"))
    processed_file(core_user, grid_table(start=_day(6), operation_type="planted"))
    assert Operation.objects.count() == 2
    assert all(op.files.count() == 1 for op in Operation.objects.all())


def test_a_harvest_may_last_twenty_one_days(core_user, field):
    processed_file(core_user, grid_table(start=_day(0)))
    processed_file(core_user, grid_table(start=_day(20)))
    processed_file(core_user, grid_table(start=_day(10)))
    assert Operation.objects.count() == 1
    assert Operation.objects.get().files.count() == 3


@pytest.mark.parametrize(("operation_type", "days"), [("applied", 5), ("planted", 5), ("harvested", 21)])
def test_the_window_holds_starts_exactly_its_length_apart_and_no_more(core_user, field, operation_type, days):
    start = np.datetime64("2024-09-01T10:00:00", "s")
    window = np.timedelta64(days, "D")
    first = processed_file(core_user, grid_table(start=str(start), operation_type=operation_type, seed=1))
    last = processed_file(core_user, grid_table(start=str(start + window), operation_type=operation_type, seed=2))
    late = np.timedelta64(1, "s") + window
    beyond = processed_file(core_user, grid_table(start=str(start + late), operation_type=operation_type, seed=3))
    operations = {frozenset(str(pk) for pk in op.files.values_list("pk", flat=True)) for op in Operation.objects.all()}
    assert operations == {frozenset({str(first.pk), str(last.pk)}), frozenset({str(beyond.pk)})}


def test_a_file_before_the_first_of_an_operation_does_not_stretch_it_past_its_window(core_user, field):
    """Files of days 0 and +5 make an operation; a file of day -5 is within 5 days of the first but 10 of the last:
    it starts an operation of its own (every start of an operation within its window, supplement "Operations")."""
    start = np.datetime64("2024-09-10T10:00:00", "s")
    window = np.timedelta64(5, "D")
    first = processed_file(core_user, grid_table(start=str(start), operation_type="applied", seed=1))
    last = processed_file(core_user, grid_table(start=str(start + window), operation_type="applied", seed=2))
    early = processed_file(core_user, grid_table(start=str(start - window), operation_type="applied", seed=3))
    operations = {frozenset(str(pk) for pk in op.files.values_list("pk", flat=True)) for op in Operation.objects.all()}
    assert operations == {frozenset({str(first.pk), str(last.pk)}), frozenset({str(early.pk)})}


def test_until_its_build_an_operation_spans_from_its_earliest_file_to_its_latest(api_client, core_user, field):
    """The operation's times are set as files join, before its build (which rewrites them from the merged points)
    has run: a file earlier than the first must not pull the end back. Read through the API while `processing`,
    with the `endTime` filter (the operations ending at or before a time)."""
    with transaction.atomic():  # (the builds are sent on commit: none has run inside)
        later = processed_file(core_user, grid_table(start=_day(3), operation_type="applied", seed=1))
        earlier = processed_file(core_user, grid_table(start=_day(0), operation_type="applied", seed=2))
        for file in (later, earlier):
            operation = operation_file_group(str(file.pk))
        [body] = api_client.get(OPS_URL, {"coreUserId": str(core_user.pk)}).json()
        assert (body["id"], body["status"]) == (str(operation.pk), "processing")
        assert (body["startTime"], body["endTime"]) == ("2024-09-01T10:00:00.000Z", "2024-09-04T10:03:19.000Z")
        before_the_end = {"coreUserId": str(core_user.pk), "endTime": "2024-09-02T00:00:00Z"}
        assert api_client.get(OPS_URL, before_the_end).json() == []
    assert api_client.get(f"{OPS_URL}/{operation.pk}").json()["endTime"] == "2024-09-04T10:03:19.000Z"


@pytest.mark.parametrize("start", ["0001-01-02T00:00:00", "9999-12-30T23:00:00"])
def test_files_of_the_first_and_last_days_there_are_form_operations(core_user, field, start):
    """Their window reaches past the years 1 to 9999 (was an OverflowError: processed, but in no operation)."""
    first = processed_file(core_user, grid_table(start=start, operation_type="planted", seed=1))
    second = processed_file(core_user, grid_table(start=start, operation_type="planted", seed=2))
    [operation] = Operation.objects.all()
    assert set(operation.files.values_list("pk", flat=True)) == {first.pk, second.pk}


def test_other_types_fields_and_users_form_their_own_operations(core_user, owner, field):
    processed_file(core_user, grid_table(start=_day(0), operation_type="applied"))
    processed_file(core_user, grid_table(start=_day(0), operation_type="planted"))
    # Another field far away, same type and time.
    far = dict(lon0=LON0 + 0.05, lat0=LAT0)
    field_create(core_user=core_user, geometry=grid_box(**far))
    processed_file(core_user, grid_table(start=_day(1), operation_type="applied", **far))
    # Another core user of the same owner with an identical field.
    other_user = CoreUserFactory(owner=owner)
    field_create(core_user=other_user, geometry=grid_box())
    processed_file(other_user, grid_table(start=_day(0), operation_type="applied"))
    # A file on no field forms no operation.
    processed_file(core_user, grid_table(start=_day(0), operation_type="applied", lon0=LON0 + 1.0))
    assert Operation.objects.count() == 4


def test_grouping_and_build_are_idempotent(core_user, field):
    file = processed_file(core_user, grid_table(start=_day(0)))
    operation = Operation.objects.get()
    merged_updated = File.objects.get(pk=operation.merged_file_id).updated_time
    assert operation_file_group(str(file.pk)) == operation
    operation_build(str(operation.pk), operation.version)
    operation_build(str(operation.pk), operation.version - 1)  # an outdated task does nothing
    assert Operation.objects.count() == 1
    assert File.objects.get(pk=operation.merged_file_id).updated_time == merged_updated
    assert Operation.objects.get().version == operation.version


def test_merged_and_automerged_files_are_not_grouped(core_user, field):
    processed_file(core_user, grid_table(start=_day(0)), origin=FileOrigin.MERGED)
    assert Operation.objects.count() == 0


def test_operation_outputs(api_client, core_user, field):
    first = processed_file(core_user, grid_table(start=_day(0), seed=1))
    second = processed_file(core_user, grid_table(start=_day(1), seed=2))
    operation = Operation.objects.get()

    summary = api_client.get(f"{OPS_URL}/{operation.pk}/summary").json()
    assert summary["type"] == "Feature"
    expected = sum(f.summary["properties"]["totalWetMass"]["value"] for f in (first, second))
    assert summary["properties"]["totalWetMass"]["value"] == pytest.approx(expected)
    assert summary["properties"]["pointCount"] == 400

    units = api_client.get(f"{OPS_URL}/{operation.pk}/units").json()
    assert units["wetMassPerArea"] == "kg/ha"

    response = api_client.get(f"{OPS_URL}/{operation.pk}/standardGeojson")
    assert response.status_code == 200
    geojson = json.loads(b"".join(response.streaming_content))
    assert len(geojson["features"]) == 400

    images = api_client.get(f"{OPS_URL}/{operation.pk}/images").json()
    assert {i["property"] for i in images} >= {"wetMassPerArea", "harvestMoisture"}
    image = next(i for i in images if i["property"] == "wetMassPerArea")
    assert set(image["extent"]) == {"xmin", "ymin", "xmax", "ymax"}
    assert image["legend"]["ranges"] and set(image["legend"]["ranges"][0]) == {"colorCode", "min", "max"}
    assert image["url"].endswith(f"/operations/{operation.pk}/images/wetMassPerArea.png")
    png = api_client.get(image["url"])
    assert png.status_code == 200 and png["Content-Type"] == "image/png"
    assert b"".join(png.streaming_content).startswith(b"\x89PNG")
    assert_problem(api_client.get(f"{OPS_URL}/{operation.pk}/images/nothing.png"), 404, "notFound")


def test_the_same_data_uploaded_twice_counts_once_in_its_operation(api_client, core_user, field):
    # Given a harvest log, then the same log again (uploaded twice, or by hand and by a provider)
    first = processed_file(core_user, grid_table(start=_day(0), seed=1))
    again = processed_file(core_user, grid_table(start=_day(0), seed=1))
    operation = Operation.objects.get()
    assert operation.files.count() == 2

    # Then the operation counts its points once: its figures are the log's
    summary = api_client.get(f"{OPS_URL}/{operation.pk}/summary").json()["properties"]
    assert summary["pointCount"] == first.point_count == again.point_count
    for key in ("totalWetMass", "totalArea"):
        assert summary[key]["value"] == pytest.approx(first.summary["properties"][key]["value"], rel=1e-12), key


def test_outputs_of_an_operation_being_built_are_404(api_client, core_user, field):
    processed_file(core_user, grid_table(start=_day(0)))
    operation = Operation.objects.get()
    File.objects.filter(pk=operation.merged_file_id).update(status=FileStatus.PROCESSING)
    assert_problem(api_client.get(f"{OPS_URL}/{operation.pk}/summary"), 404, "notFound")
    assert api_client.get(f"{OPS_URL}/{operation.pk}").status_code == 200


def test_outputs_read_as_the_core_user_is_deleted_are_never_a_500(api_client, core_user, field, monkeypatch):
    """The deletion of a core user removes their files before their operations: an output read between the two
    found the operation and then, in a second query, no automerged file (File.DoesNotExist, a 500). The operation
    and its file are read together now."""
    from operations.views import OperationViewSet

    processed_file(core_user, grid_table(start=_day(0)))
    operation = Operation.objects.get()
    get_object = OperationViewSet.get_object

    def found_as_the_file_goes(self):
        found = get_object(self)
        File.objects.filter(pk=operation.merged_file_id).delete()
        return found

    monkeypatch.setattr(OperationViewSet, "get_object", found_as_the_file_goes)
    for output in ("summary", "units", "images"):
        response = api_client.get(f"{OPS_URL}/{operation.pk}/{output}")
        assert response.status_code in (200, 404), (output, response.status_code)


def test_an_automerged_file_being_rebuilt_serves_no_earlier_outputs(api_client, core_user, field):
    """While a joining file had it rebuilt, the automerged file served its earlier images and GeoJSON (no summary),
    its record kept the download links and its status showed every step processed."""
    processed_file(core_user, grid_table(start=_day(0), seed=1))
    merged_id = Operation.objects.get().merged_file_id
    url = f"/services/operations/api/files/{merged_id}"
    outputs_ = ("summary", "units", "images", "images/wetMassPerArea.png", "standardGeojson", "rawGeojson")
    assert all(api_client.get(f"{url}/{output}").status_code == 200 for output in outputs_)
    with transaction.atomic():
        # When a second file joins (its rebuild runs once this commits)
        operation_file_group(str(processed_file(core_user, grid_table(start=_day(1), seed=2)).pk))
        # Then the file is processing and has no output yet: no earlier ones either
        for output in outputs_:
            assert_problem(api_client.get(f"{url}/{output}"), 404, "notFound")
        record = api_client.get(url).json()
        assert (record["status"], record["standardGeojson"], record["rawGeojson"]) == ("processing", None, None)
        steps = api_client.get(f"{url}/status").json()["steps"]
        assert {step["status"] for step in steps.values()} == {"processing"}
    # Rebuilt: the outputs are back, of both files
    assert all(api_client.get(f"{url}/{output}").status_code == 200 for output in outputs_)
    record = api_client.get(url).json()
    assert record["status"] == "processed" and record["standardGeojson"].endswith("/standardGeojson")
    assert File.objects.get(pk=merged_id).point_count == 2 * len(grid_table())


def test_list_filters_paging_and_sort(api_client, core_user, owner, field):
    processed_file(core_user, grid_table(start=_day(0), operation_type="applied"))
    processed_file(core_user, grid_table(start=_day(10), operation_type="applied"))
    processed_file(core_user, grid_table(start=_day(0), operation_type="planted"))
    other_user = CoreUserFactory(owner=owner)
    processed_file(other_user, grid_table(start=_day(0)))  # no field: no operation
    ops = {(o.operation_type, o.start_time.day): str(o.pk) for o in Operation.objects.all()}

    def ids(**query):
        response = api_client.get(OPS_URL, query)
        assert response.status_code == 200, response.content
        return [o["id"] for o in response.json()]

    # Two of one startTime: the id (a UUID) ends every ordering, ascending
    assert ids(sort="startTime,asc") == [*sorted([ops["applied", 1], ops["planted", 1]]), ops["applied", 11]]
    assert ids(sort="startTime,desc") == [ops["applied", 11], *sorted([ops["applied", 1], ops["planted", 1]])]
    assert ids(operationType="planted") == [ops["planted", 1]]
    assert ids()[0] == ops["applied", 11]  # newest first unless asked otherwise
    assert set(ids(fieldId=field.pk)) == set(ops.values())
    assert ids(fieldId="elsewhere") == []
    assert ids(startTime="2024-09-05T00:00:00Z") == [ops["applied", 11]]
    assert set(ids(endTime="2024-09-02T00:00:00Z")) == {ops["applied", 1], ops["planted", 1]}
    assert set(ids(coreUserId=str(core_user.pk))) == set(ops.values())
    assert ids(coreUserId=str(other_user.pk)) == []
    assert ids(provider="ProviderA") == []
    assert len(ids(updatedTime="2000-01-01T00:00:00Z")) == 3
    page = api_client.get(OPS_URL, {"size": 2, "page": 1, "sort": "startTime,desc"})
    assert page["X-Total-Count"] == "3" and len(page.json()) == 1
    assert_problem(api_client.get(OPS_URL, {"sort": "nothing"}), 400, "validation")
    assert_problem(api_client.get(OPS_URL, {"startTime": "yesterday"}), 400, "validation")


def test_every_operation_endpoint_is_404_for_another_owner(api_client, other_client, core_user, field):
    processed_file(core_user, grid_table(start=_day(0)))
    operation = Operation.objects.get()
    base = f"{OPS_URL}/{operation.pk}"
    assert_cross_tenant_404(
        owner_client=api_client,
        other_client=other_client,
        detail_url=base,
        resource_id=operation.pk,
        list_urls=[OPS_URL, f"{OPS_URL}?coreUserId={core_user.pk}"],
        delete=False,
        extra_urls=[
            ("get", f"{base}/summary", None),
            ("get", f"{base}/units", None),
            ("get", f"{base}/images", None),
            ("get", f"{base}/images/wetMassPerArea.png", None),
            ("get", f"{base}/standardGeojson", None),
            ("post", f"{OPS_URL}/cropOperationByField", {"id": str(operation.pk)}),
        ],
        core_user=core_user,
    )
    assert_problem(api_client.get(f"{OPS_URL}/not-a-uuid"), 404, "notFound")


def test_operation_events(owner, core_user, field, webhook_receiver, subscribe):
    subscribe(
        owner,
        webhook_receiver,
        [
            "operationCreated",
            "operationUpdated",
            "operationProcessingFinished",
            "automergedFileProcessingFinished",
        ],
    )
    processed_file(core_user, grid_table(start=_day(0)))
    second = processed_file(core_user, grid_table(start=_day(2)))
    operation = Operation.objects.get()
    events = webhook_receiver.wait_for(6)
    by_type = {}
    for event in (json.loads(e.body) for e in events):
        by_type.setdefault(event["type"], []).append(event)
    assert len(by_type["operationCreated"]) == 1 and len(by_type["operationUpdated"]) == 1
    assert by_type["operationUpdated"][0]["sourceFileId"] == str(second.pk)
    assert {e["operationId"] for e in by_type["operationProcessingFinished"]} == {str(operation.pk)}
    assert len(by_type["operationProcessingFinished"]) == 2
    assert {e["coreFileId"] for e in by_type["automergedFileProcessingFinished"]} == {str(operation.merged_file_id)}


def test_a_failed_build_fails_the_automerged_file_with_its_event(
    owner, core_user, field, webhook_receiver, subscribe, monkeypatch
):
    subscribe(owner, webhook_receiver, ["automergedFileProcessingFailed"])

    def broken(file):
        raise OSError("storage unavailable")

    monkeypatch.setattr(outputs, "load_points", broken)
    processed_file(core_user, grid_table(start=_day(0)))
    operation = Operation.objects.get()
    assert operation.status == Operation.Status.FAILED
    merged = File.objects.get(pk=operation.merged_file_id)
    assert merged.status == FileStatus.FAILED and "storage unavailable" in merged.status_message
    (event,) = webhook_receiver.wait_for(1)
    assert json.loads(event.body)["coreFileId"] == str(merged.pk)


def test_coverage_is_the_percent_of_the_field_covered(core_user):
    # A field twice as wide as the grid's coverage: about half of it is covered.
    wide = grid_box(columns=40)
    field = field_create(core_user=core_user, geometry=wide)
    processed_file(core_user, grid_table(start=_day(0)))
    (link,) = Operation.objects.get().field_links.all()
    assert link.field_id == field.pk
    assert 35 < link.coverage < 65
    assert np.isfinite(link.coverage)


def test_coverage_of_files_logging_the_same_seconds_is_the_union_of_their_points(core_user):
    # Given a field around one per-section log, and that log's coverage of it
    field = field_create(core_user=core_user, geometry=section_box())
    first = processed_file(core_user, section_table(start=_day(0)))
    (alone,) = Operation.objects.get().field_links.all()
    assert alone.field_id == field.pk and 0 < alone.coverage < 100
    # When the same log is uploaded again (every row shares its timestamp with the first file's)
    second = processed_file(core_user, section_table(start=_day(0)))
    operation = Operation.objects.get()
    assert operation.files.count() == 2
    # Then the operation covers the same part of the field: the machine is no wider for being logged twice
    (link,) = operation.field_links.all()
    assert link.coverage == pytest.approx(alone.coverage)
    # And its automerged file counts the log's distance once (the same data twice is counted once)
    merged = File.objects.get(pk=operation.merged_file_id)
    distance = [f.summary["properties"]["totalDistance"]["value"] for f in (first, second)]
    assert merged.summary["properties"]["totalDistance"]["value"] == pytest.approx(distance[0]) == distance[1]


def test_time_filters_hold_their_bounds_and_end_time_sorts_by_the_end(api_client, core_user, field):
    """An operation of two applications (days 0 and 3) starts before a planting of day 1 and ends after it."""
    processed_file(core_user, grid_table(start=_day(0), operation_type="applied"))
    processed_file(core_user, grid_table(start=_day(3), operation_type="applied"))
    processed_file(core_user, grid_table(start=_day(1), operation_type="planted"))
    applied = Operation.objects.get(operation_type="applied")
    planted = Operation.objects.get(operation_type="planted")
    assert applied.start_time < planted.start_time and applied.end_time > planted.end_time

    def ids(**query):
        response = api_client.get(OPS_URL, query)
        assert response.status_code == 200, response.content
        return [o["id"] for o in response.json()]

    assert ids(sort="startTime,asc") == [str(applied.pk), str(planted.pk)]
    assert ids(sort="endTime,asc") == [str(planted.pk), str(applied.pk)]
    body = {o["id"]: o for o in api_client.get(OPS_URL).json()}[str(planted.pk)]
    # each bound is the planting's own time to the millisecond: it is within
    assert str(planted.pk) in ids(startTime=body["startTime"])
    assert str(planted.pk) in ids(endTime=body["endTime"])
    # (updated at a whole millisecond, as the filter's value is written)
    Operation.objects.filter(pk=planted.pk).update(updated_time=datetime(2030, 1, 1, tzinfo=UTC))
    assert ids(updatedTime="2030-01-01T00:00:00.000Z") == [str(planted.pk)]
    assert ids(updatedTime="2030-01-01T00:00:00.001Z") == []


def test_the_files_of_one_upload_build_their_operation_once_when_it_ends(
    api_client, owner, core_user, samples_dir, webhook_receiver, subscribe
):
    """Each file of an upload that joined an operation rebuilt it from all its files while the upload's other files
    were converted: a task data file of eight tasks on one field took twice as long with its field as without
    (performance review). An operation is built once the upload ends, with every file of it that joined."""
    from shapely.geometry import MultiPolygon, box

    from conversion.readers import Dataset, get_reader
    from tests.conversion.api.conftest import uploaded_batch, zip_folder

    folder = samples_dir / "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata/TimeLogs/ValidTimeLogs"
    # Given a field around every point the task data logged
    tables = get_reader("ISOXML").read(Dataset("ISOXML", folder / "TASKDATA.XML", folder, "ValidTimeLogs"))
    lon = np.concatenate([t.columns["lon"] for t in tables])
    lat = np.concatenate([t.columns["lat"] for t in tables])
    margin = 0.001
    bounds = (np.nanmin(lon) - margin, np.nanmin(lat) - margin, np.nanmax(lon) + margin, np.nanmax(lat) + margin)
    field_create(core_user=core_user, geometry=MultiPolygon([box(*bounds)]), name="Around")
    subscribe(owner, webhook_receiver, ["operationProcessingFinished", "batchUploadProcessingFinished"])
    # When it is uploaded
    batch = uploaded_batch(api_client, core_user, zip_folder(folder))
    assert batch["status"] == "PROCESSED"
    # Then every operation was built once, at its last version, from all its files
    operations = list(Operation.objects.prefetch_related("files"))
    assert max(len(operation.files.all()) for operation in operations) > 1  # (an operation of several files)
    expected = 1 + len(operations)
    events = [json.loads(event.body) for event in webhook_receiver.wait_for(expected)]
    finished = [event["operationId"] for event in events if event["type"] == "operationProcessingFinished"]
    assert sorted(finished) == sorted(str(operation.pk) for operation in operations)
    for operation in operations:
        assert (operation.status, operation.built_version) == (Operation.Status.PROCESSED, operation.version)
        assert operation.merged_file.status == FileStatus.PROCESSED
        assert operation.merged_file.point_count == sum(f.point_count for f in operation.files.all())
