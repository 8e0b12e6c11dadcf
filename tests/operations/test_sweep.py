"""Nothing of an operation stays processing: the sweep re-sends a build whose task was lost and fails it with a
reason after CONVERSION_MAX_ATTEMPTS, and does the same for crops; the conversion sweep leaves automerged and
cropped files to it and does the same for merges."""

import errno
from datetime import timedelta

import pytest
from django.utils import timezone

from conversion import outputs
from conversion.models import (
    INTERNAL_ERROR,
    Batch,
    BatchDataset,
    BatchStatus,
    DatasetStatus,
    File,
    FileOrigin,
    FileStatus,
)
from conversion.services import conversion_sweep
from fields.services import field_create
from operations import tasks
from operations.models import Operation
from operations.services import operations_sweep

from .helpers import grid_box, grid_table, processed_file

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

CROP_URL = "/services/operations/api/operations/cropOperationByField"
OPS_URL = "/services/operations/api/operations"
FILES_URL = "/services/operations/api/files"


@pytest.fixture
def field(core_user):
    return field_create(core_user=core_user, geometry=grid_box(), name="North")


@pytest.fixture
def lost_build(core_user, field, settings, monkeypatch) -> Operation:
    """An operation whose build task was lost (the worker died), last touched longer ago than the stuck limit."""
    with monkeypatch.context() as patch:
        patch.setattr(tasks.operation_build, "delay", lambda *a: None)
        processed_file(core_user, grid_table(start="2024-09-01T10:00:00"))
    long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    Operation.objects.update(updated_time=long_ago)
    File.objects.filter(origin=FileOrigin.AUTOMERGED).update(updated_time=long_ago, created_time=long_ago)
    return Operation.objects.get()


def test_a_lost_build_is_sent_again_and_the_operation_is_processed(api_client, lost_build):
    assert api_client.get(f"{OPS_URL}/{lost_build.pk}").json()["status"] == "processing"
    assert operations_sweep() == {"resent": 1, "failed": 0, "grouped": 0}
    body = api_client.get(f"{OPS_URL}/{lost_build.pk}").json()
    assert body["status"] == "processed"
    assert File.objects.get(pk=body["coreFileId"]).status == FileStatus.PROCESSED
    assert api_client.get(f"{OPS_URL}/{lost_build.pk}/summary").json()["properties"]["pointCount"] == 200


def test_a_recent_operation_is_left_alone(lost_build):
    Operation.objects.update(updated_time=timezone.now())
    assert operations_sweep() == {"resent": 0, "failed": 0, "grouped": 0}
    assert Operation.objects.get().status == Operation.Status.PROCESSING


def test_after_the_last_attempt_the_operation_and_its_file_fail_with_a_reason(api_client, lost_build, settings):
    Operation.objects.update(sweep_attempts=settings.CONVERSION_MAX_ATTEMPTS)
    assert operations_sweep() == {"resent": 0, "failed": 1, "grouped": 0}
    body = api_client.get(f"{OPS_URL}/{lost_build.pk}").json()
    assert body["status"] == "failed"
    merged = File.objects.get(pk=body["coreFileId"])
    assert merged.status == FileStatus.FAILED and "not built in time" in merged.status_message
    assert operations_sweep() == {"resent": 0, "failed": 0, "grouped": 0}  # nothing left in flight
    # And a crop of it says it failed (it said "still being processed": its version was never built)
    crop = api_client.post(CROP_URL, {"id": str(lost_build.pk)}, format="json")
    assert (crop.status_code, crop.json()["errorKey"]) == (409, "operationFailed")


def test_a_file_joining_gives_the_new_version_fresh_attempts(core_user, lost_build, settings):
    Operation.objects.update(sweep_attempts=settings.CONVERSION_MAX_ATTEMPTS)
    processed_file(core_user, grid_table(start="2024-09-02T10:00:00", seed=3))
    operation = Operation.objects.get()
    assert operation.sweep_attempts == 0
    assert operation.status == Operation.Status.PROCESSED and operation.files.count() == 2


def _no_space(*args, **kwargs):
    raise OSError(errno.ENOSPC, "No space left on device")


def _long_ago(settings):
    return timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)


@pytest.fixture
def disk_failed_build(api_client, lost_build, monkeypatch) -> Operation:
    """An operation whose build met a full disk as it wrote the operation's file."""
    with monkeypatch.context() as patch:
        patch.setattr(outputs, "produce", _no_space)
        tasks.operation_build(str(lost_build.pk))
    return Operation.objects.get()


def test_a_build_failed_on_a_full_disk_says_it_is_ours_and_is_built_again(api_client, disk_failed_build, settings):
    """It stayed failed for good: its file said "The file could not be built: [Errno 28] ...", a data failure to any
    reader, which no sweep could tell from one, and no client can ask for a build."""
    operation_url = f"{OPS_URL}/{disk_failed_build.pk}"
    body = api_client.get(operation_url).json()
    assert body["status"] == "failed"
    details = api_client.get(f"{FILES_URL}/{body['coreFileId']}").json()["statusDetails"]
    assert details.startswith(INTERNAL_ERROR) and "No space left on device" in details
    assert "built again automatically" in details
    # The sweep leaves it alone until it is as old as the stuck limit
    assert operations_sweep() == {"resent": 0, "failed": 0, "grouped": 0}
    assert api_client.get(operation_url).json()["status"] == "failed"
    # When the sweep passes after that, with room again, the operation is built
    Operation.objects.update(updated_time=_long_ago(settings))
    assert operations_sweep() == {"resent": 1, "failed": 0, "grouped": 0}
    assert api_client.get(operation_url).json()["status"] == "processed"
    assert api_client.get(f"{FILES_URL}/{body['coreFileId']}").json()["status"] == "processed"
    assert api_client.get(f"{operation_url}/summary").json()["properties"]["pointCount"] == 200


def _batch_of(file_ids, core_user, **values) -> Batch:
    """A batch (RECEIVED unless `values` say otherwise) holding the files `file_ids` as its upload's."""
    batch = Batch.objects.create(
        core_user=core_user, provider="Other", file_name="upload.zip", size=1, upload="batches/upload.zip", **values
    )
    File.objects.filter(pk__in=file_ids).update(batch=batch)
    return batch


def test_the_sweep_leaves_an_operation_waiting_for_its_running_upload_to_it(core_user, lost_build, settings):
    """An operation is built once the uploads of its files end: the sweep re-sent its build again and again meanwhile,
    counting each against its attempts, and failed it after the last (regression review)."""
    _batch_of(lost_build.files.values_list("pk", flat=True), core_user)  # (still being converted)
    for _ in range(settings.CONVERSION_MAX_ATTEMPTS + 1):
        Operation.objects.update(updated_time=_long_ago(settings))
        assert operations_sweep()["resent"] == 0
    operation = Operation.objects.get()
    assert (operation.status, operation.sweep_attempts) == (Operation.Status.PROCESSING, 0)


def test_an_operation_rebuilt_after_a_full_disk_while_its_upload_is_retried_is_built_when_the_upload_ends(
    core_user, disk_failed_build, settings, monkeypatch
):
    """The sweep's rebuild after a full disk keeps the operation's version; put off by the retried upload of one of
    its files, it was not sent when the upload ended (the batch's end sent only builds behind their version): the
    operation stayed processing until the next sweep (regression review)."""
    from conversion import tasks as conversion_tasks
    from conversion.services import batch_retry
    from conversion.services.datasets import _dataset_fail

    # Given the upload of the operation's file, ended with a data set that failed, retried now (slow to convert)
    batch = _batch_of(
        disk_failed_build.files.values_list("pk", flat=True), core_user, status=BatchStatus.PROCESSED,
        finished_at=timezone.now(),
    )  # fmt: skip
    failed = BatchDataset.objects.create(
        batch=batch, position=1, format="ISOXML", path="b/TASKDATA.XML", root="b", name="b",
        status=DatasetStatus.FAILED, message="unreadable",
    )  # fmt: skip
    monkeypatch.setattr(conversion_tasks.dataset_convert, "delay", lambda *args: None)
    batch_retry(batch=batch)
    # And the sweep's rebuild of the operation, which waits for the upload
    Operation.objects.update(updated_time=_long_ago(settings))
    assert operations_sweep()["resent"] == 1
    assert Operation.objects.get().status == Operation.Status.PROCESSING
    # When the upload ends (its data set fails again)
    _dataset_fail(BatchDataset.objects.get(pk=failed.pk), "still unreadable", "still unreadable")
    assert Batch.objects.get(pk=batch.pk).status == BatchStatus.PROCESSED
    # Then the operation is built
    operation = Operation.objects.get()
    assert (operation.status, operation.merged_file.status) == (Operation.Status.PROCESSED, FileStatus.PROCESSED)


def test_a_build_that_keeps_failing_on_the_disk_stays_failed_after_the_last_attempt(
    api_client, disk_failed_build, settings, monkeypatch
):
    # Given a disk that stays full through every attempt
    monkeypatch.setattr(outputs, "produce", _no_space)
    for _ in range(settings.CONVERSION_MAX_ATTEMPTS):
        Operation.objects.update(updated_time=_long_ago(settings))
        assert operations_sweep()["resent"] == 1
        assert Operation.objects.get().status == Operation.Status.FAILED
    # Then the sweep stops building it, and the operation says it failed, with the cause
    Operation.objects.update(updated_time=_long_ago(settings))
    assert operations_sweep() == {"resent": 0, "failed": 0, "grouped": 0}
    body = api_client.get(f"{OPS_URL}/{disk_failed_build.pk}").json()
    assert body["status"] == "failed"
    assert "No space left on device" in File.objects.get(pk=body["coreFileId"]).status_message


def test_a_build_failed_by_its_data_is_not_built_again(api_client, lost_build, settings, monkeypatch):
    # Given a build that fails for a reason of its own (a stored point table that cannot be read)
    with monkeypatch.context() as patch:
        patch.setattr(outputs, "produce", lambda *a, **k: (_ for _ in ()).throw(ValueError("a bad table")))
        tasks.operation_build(str(lost_build.pk))
    assert Operation.objects.get().status == Operation.Status.FAILED
    # Then no sweep builds it again: it would fail the same way
    Operation.objects.update(updated_time=_long_ago(settings))
    assert operations_sweep() == {"resent": 0, "failed": 0, "grouped": 0}
    merged = File.objects.get(origin=FileOrigin.AUTOMERGED)
    assert merged.status_message == "The file could not be built: a bad table"


def test_the_conversion_sweep_leaves_automerged_files_to_their_operation(lost_build):
    assert conversion_sweep()["failed"] == 0
    assert File.objects.get(pk=lost_build.merged_file_id).status == FileStatus.PROCESSING
    # An automerged file failed while its operation waits (as an earlier sweep did) is rebuilt, not left failed.
    File.objects.filter(pk=lost_build.merged_file_id).update(status=FileStatus.FAILED, status_message="lost")
    assert operations_sweep()["resent"] == 1
    assert File.objects.get(pk=lost_build.merged_file_id).status == FileStatus.PROCESSED
    assert Operation.objects.get().status == Operation.Status.PROCESSED


def _touched_long_ago(settings, file_id) -> None:
    long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    File.objects.filter(pk=file_id).update(updated_time=long_ago)


def _file(api_client, file_id) -> dict:
    response = api_client.get(f"{FILES_URL}/{file_id}")
    assert response.status_code == 200, response.content
    return response.json()


@pytest.fixture
def lost_merge(api_client, core_user, monkeypatch) -> str:
    """The id of a merge accepted (201) whose task never reached a worker (the broker was down)."""
    first = processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    second = processed_file(core_user, grid_table(start="2024-09-01T14:00:00", seed=2))
    with monkeypatch.context() as patch:
        patch.setattr("conversion.tasks.file_merge_process.delay", lambda file_id: None)
        response = api_client.post(f"{FILES_URL}/merge", {"ids": [str(first.pk), str(second.pk)]}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


def test_a_merge_whose_task_was_lost_is_sent_again_judged_from_its_last_update(api_client, lost_merge, settings):
    """The sweep failed it ("processing did not finish in time"): a merge asked for while the broker was down, or
    whose worker died, was lost for good."""
    long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    File.objects.filter(pk=lost_merge).update(created_time=long_ago)  # created long ago, but touched just now
    assert conversion_sweep() == {"resent": 0, "failed": 0}
    assert _file(api_client, lost_merge)["status"] == "processing"

    _touched_long_ago(settings, lost_merge)
    assert conversion_sweep() == {"resent": 1, "failed": 0}
    body = _file(api_client, lost_merge)
    assert body["status"] == "processed", body
    assert body["pointCount"] == 2 * len(grid_table())
    assert conversion_sweep() == {"resent": 0, "failed": 0}


def test_a_merge_waiting_for_a_source_being_rebuilt_is_left_to_the_rebuild(api_client, lost_merge, settings):
    # Given a lost merge one of whose sources is being rebuilt (an operation's automerged file a file joined)
    source = File.objects.filter(derived=lost_merge).first()
    File.objects.filter(pk=source.pk).update(status=FileStatus.PROCESSING)
    _touched_long_ago(settings, lost_merge)
    # Then the sweep leaves it to the rebuild, which sends it again when it ends
    assert conversion_sweep() == {"resent": 0, "failed": 0}
    assert _file(api_client, lost_merge)["status"] == "processing"


def test_a_merge_that_never_completes_fails_after_the_last_re_send(api_client, lost_merge, settings, monkeypatch):
    monkeypatch.setattr("conversion.tasks.file_merge_process.delay", lambda file_id: None)  # every send is lost
    for _ in range(settings.CONVERSION_MAX_ATTEMPTS):
        _touched_long_ago(settings, lost_merge)
        assert conversion_sweep() == {"resent": 1, "failed": 0}
        assert conversion_sweep() == {"resent": 0, "failed": 0}  # just sent: judged again from now
        assert _file(api_client, lost_merge)["status"] == "processing"
    _touched_long_ago(settings, lost_merge)
    assert conversion_sweep() == {"resent": 0, "failed": 1}
    body = _file(api_client, lost_merge)
    assert body["status"] == "failed"
    assert f"did not finish in time after {settings.CONVERSION_MAX_ATTEMPTS + 1} attempts" in body["statusDetails"]
    _touched_long_ago(settings, lost_merge)
    assert conversion_sweep() == {"resent": 0, "failed": 0}  # nothing left in flight


@pytest.fixture
def lost_crop(api_client, core_user, field, monkeypatch) -> dict:
    """A crop accepted (202) whose task never reached a worker, and its operation."""
    processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    processed_file(core_user, grid_table(start="2024-09-02T10:00:00", seed=2))
    operation = Operation.objects.get()
    with monkeypatch.context() as patch:
        patch.setattr(tasks.operation_crop_process, "delay", lambda crop_id: None)
        response = api_client.post(f"{OPS_URL}/cropOperationByField", {"id": str(operation.pk)}, format="json")
    assert response.status_code == 202, response.content
    return {"file": response.json()["coreFileId"], "operation": operation}


def test_a_crop_whose_task_was_lost_is_sent_again_by_the_operations_sweep(api_client, lost_crop, settings):
    assert operations_sweep() == {"resent": 0, "failed": 0, "grouped": 0}  # too recent: its task may be on its way
    _touched_long_ago(settings, lost_crop["file"])
    assert conversion_sweep() == {"resent": 0, "failed": 0}  # a crop belongs to its operation
    assert operations_sweep() == {"resent": 1, "failed": 0, "grouped": 0}
    body = _file(api_client, lost_crop["file"])
    assert body["status"] == "processed", body
    assert body["pointCount"] == 2 * len(grid_table())  # the field covers the whole grid
    assert operations_sweep() == {"resent": 0, "failed": 0, "grouped": 0}


def test_a_crop_waiting_for_its_operations_rebuild_is_left_to_the_build(api_client, lost_crop, settings):
    merged_file_id = lost_crop["operation"].merged_file_id
    File.objects.filter(pk=merged_file_id).update(status=FileStatus.PROCESSING)  # being rebuilt
    _touched_long_ago(settings, lost_crop["file"])
    assert operations_sweep() == {"resent": 0, "failed": 0, "grouped": 0}
    assert _file(api_client, lost_crop["file"])["status"] == "processing"
    File.objects.filter(pk=merged_file_id).update(status=FileStatus.PROCESSED)  # built; the build's send was lost
    assert operations_sweep() == {"resent": 1, "failed": 0, "grouped": 0}
    assert _file(api_client, lost_crop["file"])["status"] == "processed"


def test_a_crop_that_never_completes_fails_after_the_last_re_send(api_client, lost_crop, settings):
    File.objects.filter(pk=lost_crop["file"]).update(sweep_attempts=settings.CONVERSION_MAX_ATTEMPTS)
    _touched_long_ago(settings, lost_crop["file"])
    assert operations_sweep() == {"resent": 0, "failed": 1, "grouped": 0}
    body = _file(api_client, lost_crop["file"])
    assert body["status"] == "failed"
    assert f"did not finish in time after {settings.CONVERSION_MAX_ATTEMPTS + 1} attempts" in body["statusDetails"]


def test_a_file_whose_grouping_was_lost_joins_its_operation_at_the_next_sweep(api_client, core_user, field, settings):
    """The grouping task is sent once, after the file's commit: lost (the broker was down, or restarted without its
    queue), the file stayed on its field in no operation, for good."""
    grouped = processed_file(core_user, grid_table(start="2024-09-01T10:00:00", seed=1))
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tasks.operation_file_group, "delay", lambda *a: None)  # lost on its way to the broker
        lost = processed_file(core_user, grid_table(start="2024-09-02T10:00:00", seed=2))
    elsewhere = processed_file(core_user, grid_table(start="2024-09-02T10:00:00", lon0=10.0, seed=3))  # no field
    operation = Operation.objects.get()
    assert list(operation.files.all()) == [grouped]

    assert operations_sweep()["grouped"] == 0  # too recent: its task may still be on its way
    long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    File.objects.filter(pk__in=[lost.pk, elsewhere.pk]).update(updated_time=long_ago)
    assert operations_sweep()["grouped"] == 1
    body = api_client.get(f"{OPS_URL}/{operation.pk}").json()
    assert body["files"] == [str(grouped.pk), str(lost.pk)] and body["status"] == "processed"
    assert operations_sweep()["grouped"] == 0
