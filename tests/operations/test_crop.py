"""cropOperationByField: the new file keeps exactly the operation's points inside the field's active boundary."""

import json

import numpy as np
import pytest
from django.db import transaction
from shapely.geometry import Point

from conversion import outputs
from conversion.models import File, FileOrigin, FileStatus
from fields.services import field_create
from operations.models import Operation
from operations.services import operation_crop, operation_file_group
from tests.factories import CoreUserFactory
from tests.tenancy import assert_problem

from .helpers import LAT0, LON0, STEP, grid_box, grid_table, processed_file

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

CROP_URL = "/services/operations/api/operations/cropOperationByField"
FILES_URL = "/services/operations/api/files"


@pytest.fixture
def operation(core_user):
    field_create(core_user=core_user, id="whole", geometry=grid_box())
    processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    processed_file(core_user, grid_table(start="2024-09-02T10:00:00", seed=2))
    return Operation.objects.get()


def test_crop_keeps_exactly_the_points_inside_and_its_totals_are_theirs(
    api_client, owner, core_user, operation, webhook_receiver, subscribe
):
    subscribe(owner, webhook_receiver, ["mergedFileProcessingFinished"])
    # The western part of the grid, its edge between two columns of points.
    west = grid_box(columns=8, margin=STEP / 2)
    field_create(core_user=core_user, id="west", geometry=west)

    response = api_client.post(CROP_URL, {"id": str(operation.pk), "fieldId": "west"}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert body["id"] == str(operation.pk) and body["message"]
    cropped = File.objects.get(pk=body["coreFileId"])
    assert cropped.status == FileStatus.PROCESSED, cropped.status_message
    assert cropped.origin == FileOrigin.MERGED
    assert [str(s.pk) for s in cropped.sources.all()] == [str(operation.merged_file_id)]

    # Independent check: shapely, one point at a time, on the operation's own points.
    whole = outputs.load_points(File.objects.get(pk=operation.merged_file_id))
    inside = np.array(
        [west.covers(Point(x, y)) for x, y in zip(whole.columns["lon"], whole.columns["lat"], strict=True)]
    )
    assert 0 < inside.sum() < len(inside)
    kept = outputs.load_points(cropped)
    assert len(kept) == inside.sum()
    np.testing.assert_array_equal(kept.columns["lon"], whole.columns["lon"][inside])
    np.testing.assert_array_equal(kept.columns["lat"], whole.columns["lat"][inside])

    totals = cropped.summary["properties"]
    area = whole.columns["area"][inside]
    assert totals["totalArea"]["value"] == pytest.approx(area.sum())
    expected_mass = (whole.columns["wetMassPerArea"][inside] * area / 10_000).sum()
    assert totals["totalWetMass"]["value"] == pytest.approx(expected_mass)
    assert api_client.get(f"{FILES_URL}/{cropped.pk}/status").json()["status"] == "processed"
    assert {i["property"] for i in api_client.get(f"{FILES_URL}/{cropped.pk}/images").json()} >= {"wetMassPerArea"}
    (event,) = webhook_receiver.wait_for(1)
    assert json.loads(event.body)["coreFileId"] == str(cropped.pk)


def test_default_field_is_the_one_of_largest_coverage(api_client, core_user):
    # "corner" lies inside the grid, its edges through points (covered whole: a grid_box's margin, a step past the
    # points, lies past their swath); "a-wide" reaches as far again past it (about half covered);
    # their ids sort the other way round.
    field_create(core_user=core_user, id="corner", geometry=grid_box(columns=4, rows=3, margin=0))
    field_create(core_user=core_user, id="a-wide", geometry=grid_box(columns=40))
    processed_file(core_user, grid_table(start="2024-09-01T10:00:00"))
    operation = Operation.objects.get()
    coverage = {link.field.public_id: link.coverage for link in operation.field_links.all()}
    assert coverage["corner"] > 90 and coverage["a-wide"] < 60
    # The operation lists its fields largest coverage first
    answered = api_client.get(f"/services/operations/api/operations/{operation.pk}").json()["fields"]
    assert [f["id"] for f in answered] == ["corner", "a-wide"]
    # A fieldId of null is no fieldId
    response = api_client.post(CROP_URL, {"id": str(operation.pk), "fieldId": None}, format="json")
    assert response.status_code == 202, response.content
    body = response.json()
    assert operation.crops.get().field.public_id == "corner"
    assert File.objects.get(pk=body["coreFileId"]).status == FileStatus.PROCESSED


def test_fields_of_equal_coverage_are_taken_in_id_order(api_client, core_user):
    field_create(core_user=core_user, id="corner", geometry=grid_box(columns=4, rows=3, margin=0))
    field_create(core_user=core_user, id="big", geometry=grid_box(margin=0))
    processed_file(core_user, grid_table(start="2024-09-01T10:00:00"))
    operation = Operation.objects.get()
    coverage = {link.field.public_id: link.coverage for link in operation.field_links.all()}
    assert coverage["big"] == coverage["corner"] == 100.0  # both covered whole
    api_client.post(CROP_URL, {"id": str(operation.pk)}, format="json")
    assert operation.crops.get().field.public_id == "big"


def test_without_a_field_id_a_field_that_lost_its_boundary_gives_way_to_the_next(api_client, core_user):
    """The crop answered 400 on `fieldId` (which the client had not sent): "Field big has no active boundary"."""
    from fields.models import Boundary, Field

    field_create(core_user=core_user, id="corner", geometry=grid_box(columns=4, rows=3, margin=0))
    field_create(core_user=core_user, id="big", geometry=grid_box())
    processed_file(core_user, grid_table(start="2024-09-01T10:00:00"))
    operation = Operation.objects.get()
    # Given the field of largest coverage without a current boundary (deleted on its provider)
    Boundary.objects.filter(field__public_id="big").update(status=Boundary.Status.DELETED_ON_PROVIDER)
    Field.objects.filter(public_id="big").update(boundary=None)
    # Then the crop is of the next field
    response = api_client.post(CROP_URL, {"id": str(operation.pk)}, format="json")
    assert response.status_code == 202, response.content
    assert operation.crops.get().field.public_id == "corner"
    # And with none left, the problem says so
    Boundary.objects.filter(field__public_id="corner").update(status=Boundary.Status.INACTIVE)
    body = assert_problem(api_client.post(CROP_URL, {"id": str(operation.pk)}, format="json"), 400, "validation")
    assert "no field with an active boundary" in body["detail"]
    # And a field named whose boundary is not active is no field to crop to either
    body = assert_problem(
        api_client.post(CROP_URL, {"id": str(operation.pk), "fieldId": "corner"}, format="json"), 400, "validation"
    )
    assert body["fieldErrors"][0]["field"] == "fieldId" and "active boundary" in body["detail"]
    assert operation.crops.count() == 1


def test_a_field_without_points_fails_the_file_with_a_reason(api_client, core_user, operation):
    field_create(core_user=core_user, id="far", geometry=grid_box(lon0=LON0 + 1, lat0=LAT0))
    body = api_client.post(CROP_URL, {"id": str(operation.pk), "fieldId": "far"}, format="json").json()
    file = File.objects.get(pk=body["coreFileId"])
    assert file.status == FileStatus.FAILED
    assert "no point" in file.status_message


def test_crop_validation(api_client, owner, core_user, operation):
    other_users_field = field_create(core_user=CoreUserFactory(owner=owner), geometry=grid_box())
    body = assert_problem(
        api_client.post(CROP_URL, {"id": str(operation.pk), "fieldId": other_users_field.public_id}, format="json"),
        400,
        "validation",
    )
    assert body["fieldErrors"][0]["field"] == "fieldId"
    assert_problem(api_client.post(CROP_URL, {"id": str(operation.pk), "fieldId": "nope"}, format="json"), 400)
    assert_problem(api_client.post(CROP_URL, {"fieldId": "whole"}, format="json"), 400, "validation")
    assert_problem(api_client.post(CROP_URL, {"id": "x"}, format="json"), 400, "validation")
    assert_problem(api_client.post(CROP_URL, {"id": 1}, format="json"), 400, "validation")
    assert_problem(api_client.post(CROP_URL, {"id": True}, format="json"), 400, "validation")
    assert_problem(api_client.post(CROP_URL, {"id": str(operation.pk), "extra": 1}, format="json"), 400)
    missing = "00000000-0000-0000-0000-000000000000"
    assert_problem(api_client.post(CROP_URL, {"id": missing}, format="json"), 404, "notFound")
    # An operation still being built cannot be cropped yet.
    Operation.objects.filter(pk=operation.pk).update(version=operation.version + 1)
    assert_problem(api_client.post(CROP_URL, {"id": str(operation.pk)}, format="json"), 409, "operationProcessing")
    assert operation.crops.count() == 0


def test_a_failed_operation_cannot_be_cropped_and_says_so(api_client, operation):
    """It answered 409 "still being processed": a client waiting for the build waited for ever."""
    # Given an operation whose last build failed (its automerged file with it)
    Operation.objects.filter(pk=operation.pk).update(status=Operation.Status.FAILED)
    File.objects.filter(pk=operation.merged_file_id).update(status=FileStatus.FAILED, status_message="it broke")
    body = assert_problem(api_client.post(CROP_URL, {"id": str(operation.pk)}, format="json"), 409, "operationFailed")
    assert "failed to build" in body["detail"]
    assert operation.crops.count() == 0


def test_a_crop_asked_for_before_a_file_joins_waits_for_the_rebuild(core_user, operation):
    """The crop's task found the operation's file being rebuilt (a file joined after the crop was accepted) and
    failed the crop for good: "the operation's merged file is not available"."""
    with transaction.atomic():
        # The crop is accepted while the operation is processed; before its task runs, a third file joins
        crop = operation_crop(operation=operation)
        joining = processed_file(core_user, grid_table(start="2024-09-03T10:00:00", seed=3))
        operation_file_group(str(joining.pk))
        assert File.objects.get(pk=operation.merged_file_id).status == FileStatus.PROCESSING
    # Its task ran once the operation was rebuilt: the crop holds the three files' points (all inside the field)
    cropped = File.objects.get(pk=crop.file_id)
    assert cropped.status == FileStatus.PROCESSED, cropped.status_message
    rebuilt = File.objects.get(pk=operation.merged_file_id)
    assert rebuilt.status == FileStatus.PROCESSED
    assert cropped.point_count == rebuilt.point_count == 3 * len(grid_table())


def test_a_file_joining_while_a_crop_runs_has_the_crop_done_again_with_its_points(core_user, operation, monkeypatch):
    """The crop's task read the operation's points, a file joined (its rebuild queued) and the crop completed with
    the points of before: the build then found it processed and never sent it again."""
    from operations import services, tasks
    from operations.services import crop as crop_module

    real_crop, queued = crop_module.table_crop, []

    def crop_while_a_file_joins(table, geometry):
        monkeypatch.setattr(crop_module, "table_crop", real_crop)
        with monkeypatch.context() as patch:  # the file joins and commits; its build waits in the queue
            patch.setattr(tasks.operation_build, "delay", lambda *args: queued.append(args))
            processed_file(core_user, grid_table(start="2024-09-03T10:00:00", seed=3))
        return real_crop(table, geometry)

    # Given a crop whose task runs while a third file joins the operation
    monkeypatch.setattr(crop_module, "table_crop", crop_while_a_file_joins)
    crop = operation_crop(operation=operation)
    assert File.objects.get(pk=crop.file_id).status == FileStatus.PROCESSING  # left for the rebuild
    # When the rebuild runs
    services.operation_build(*queued[0])
    # Then the crop holds the rebuilt points: the three files'
    cropped, rebuilt = File.objects.get(pk=crop.file_id), File.objects.get(pk=operation.merged_file_id)
    assert cropped.status == FileStatus.PROCESSED, cropped.status_message
    assert cropped.point_count == rebuilt.point_count == 3 * len(grid_table())


def test_an_operation_whose_fields_are_gone_needs_a_field_id(api_client, core_user, operation):
    operation.field_links.all().delete()
    body = assert_problem(api_client.post(CROP_URL, {"id": str(operation.pk)}, format="json"), 400, "validation")
    assert "no field with an active boundary" in body["detail"]


def test_a_crop_arriving_while_its_field_is_being_deleted_is_a_400_unknown_field(owner, make_client, operation):
    """The crop read the field and its boundary, then inserted its record: the deletion committed meanwhile and
    the record's foreign keys failed at commit, a 500."""
    from fields.models import Field
    from fields.services import field_delete
    from tests.concurrency import needs_postgresql, request_later, run_meanwhile

    needs_postgresql()
    with transaction.atomic():
        field_delete(field=Field.objects.get(public_id="whole"))
        crop = run_meanwhile(
            request_later(make_client, owner, "post", CROP_URL, {"id": str(operation.pk), "fieldId": "whole"})
        )
    body = assert_problem(crop(), 400, "validation")
    assert body["fieldErrors"] == [{"field": "fieldId", "message": "Unknown field whole for this user."}]
    assert not File.objects.filter(origin=FileOrigin.MERGED).exclude(operations__isnull=False).exists()


def test_a_field_deleted_while_a_crop_to_it_is_under_way_goes_with_the_crop(owner, make_client, operation, monkeypatch):
    from fields.models import Field
    from operations import tasks
    from operations.models import OperationCrop
    from tests.concurrency import needs_postgresql, request_later, run_meanwhile

    needs_postgresql()
    monkeypatch.setattr(tasks.operation_crop_process, "delay", lambda *args: None)
    field = Field.objects.get(public_id="whole")
    with transaction.atomic():
        operation_crop(operation=Operation.objects.get(pk=operation.pk), field_id="whole")
        deletion = run_meanwhile(
            request_later(make_client, owner, "delete", f"/services/fields/api/users/{field.core_user_id}/fields/whole")
        )
    assert deletion().status_code == 204
    assert not Field.objects.filter(pk=field.pk).exists()
    [crop] = OperationCrop.objects.all()
    assert (crop.field_id, crop.boundary_id) == (None, None)  # the crop's file is not left processing: see below


def test_a_field_deleted_while_a_crop_holds_its_operation_waits_for_the_crop(
    owner, make_client, operation, monkeypatch
):
    """The crop locks its operation, then its field; the field's deletion locks the field, then updates the
    operations that covered it (their fields changed). Deleting between the crop's two locks was a deadlock, one of
    the two failed. The crop takes its core user first now, as the deletion does: the deletion waits for it."""
    import threading

    from fields.models import Field
    from operations import tasks
    from operations.models import OperationCrop
    from tests.concurrency import needs_postgresql, request_later, run_meanwhile

    needs_postgresql()
    monkeypatch.setattr(tasks.operation_crop_process, "delay", lambda *args: None)
    field = Field.objects.get(public_id="whole")
    url = f"/services/fields/api/users/{field.core_user_id}/fields/whole"
    crop_thread, deletion = threading.get_ident(), {}
    manager = type(Field.objects)
    select_for_update = manager.select_for_update

    def deleting_first(self, *args, **kwargs):
        if self.model is Field and threading.get_ident() == crop_thread and "answer" not in deletion:
            deletion["answer"] = run_meanwhile(request_later(make_client, owner, "delete", url))
        return select_for_update(self, *args, **kwargs)

    monkeypatch.setattr(manager, "select_for_update", deleting_first)
    with transaction.atomic():
        crop = operation_crop(operation=Operation.objects.get(pk=operation.pk), field_id="whole")
    assert deletion["answer"]().status_code == 204
    assert OperationCrop.objects.get(pk=crop.pk).field_id is None  # the field went after the crop was made
    assert not Field.objects.filter(pk=field.pk).exists()


def test_a_field_deleted_as_a_crop_begins_goes_first_and_the_crop_is_a_400_unknown_field(
    owner, make_client, operation, monkeypatch
):
    """The crop takes nothing before its core user: its operation locked first, a field's deletion arriving then
    (it locks the user, then updates the operations that covered the field) deadlocked with it, a 503."""
    from operations import tasks
    from operations.services import crop
    from platform_site.api.errors import DomainError
    from tests.concurrency import needs_postgresql, request_later, run_meanwhile

    needs_postgresql()
    monkeypatch.setattr(tasks.operation_crop_process, "delay", lambda *args: None)
    url = f"/services/fields/api/users/{operation.core_user_id}/fields/whole"
    lock, deletion = crop.core_user_lock, {}

    def deleting_first(core_user_id):
        if "answer" not in deletion:
            deletion["answer"] = run_meanwhile(request_later(make_client, owner, "delete", url))
        return lock(core_user_id)

    monkeypatch.setattr(crop, "core_user_lock", deleting_first)
    with pytest.raises(DomainError) as refused, transaction.atomic():
        operation_crop(operation=Operation.objects.get(pk=operation.pk), field_id="whole")
    assert refused.value.status_code == 400
    assert deletion["answer"]().status_code == 204


def test_a_crop_of_an_operation_whose_user_was_deleted_meanwhile_is_a_404(api_client, core_user, operation):
    """The crop read the operation, then waited for its core user while the user's deletion ran: the operation was
    gone when it was read again (Operation.DoesNotExist, a 500)."""
    from platform_site.accounts.models import CoreUser
    from platform_site.accounts.services import core_user_delete
    from platform_site.api.errors import NotFoundError

    read_by_the_crop = Operation.objects.get(pk=operation.pk)
    core_user_delete(core_user=CoreUser.objects.get(pk=core_user.pk))
    with pytest.raises(NotFoundError):
        operation_crop(operation=read_by_the_crop, field_id="whole")


def test_a_crop_whose_field_is_deleted_before_it_is_made_fails_saying_so(api_client, core_user, operation, monkeypatch):
    """Its record went with the field, and its file stayed processing (no event) until the sweeps gave up on it
    hours later."""
    from operations import tasks

    field_create(core_user=core_user, id="kept", geometry=grid_box(lon0=LON0, lat0=LAT0))
    made = api_client.post(CROP_URL, {"id": str(operation.pk), "fieldId": "kept"}, format="json").json()
    assert File.objects.get(pk=made["coreFileId"]).status == FileStatus.PROCESSED
    queued = []
    monkeypatch.setattr(tasks.operation_crop_process, "delay", lambda *args: queued.append(args))
    pending = api_client.post(CROP_URL, {"id": str(operation.pk), "fieldId": "whole"}, format="json").json()
    fields_url = f"/services/fields/api/users/{core_user.pk}/fields"
    assert api_client.delete(f"{fields_url}/whole").status_code == 204
    assert api_client.delete(f"{fields_url}/kept").status_code == 204
    [args] = queued
    tasks.operation_crop_process(*args)
    failed = api_client.get(f"{FILES_URL}/{pending['coreFileId']}").json()
    assert failed["status"] == "failed"
    assert File.objects.get(pk=pending["coreFileId"]).status_message == (
        "The file could not be built: the field was deleted before its crop was made"
    )
    # The crop made before its field was deleted keeps its file
    assert api_client.get(f"{FILES_URL}/{made['coreFileId']}").json()["status"] == "processed"
