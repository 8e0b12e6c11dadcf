"""A full disk (or a database outage) while a batch converts: our failure, not the user's data. What met it is sent
again (or may be retried) once space is back, and says so with the spec's internal error text."""

import errno
import os
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import OperationalError
from django.utils import timezone

from conversion import cleanup, outputs, standardize, storage, tasks
from conversion.archive import extraction
from conversion.models import INTERNAL_ERROR, Batch, BatchDataset, DatasetStatus, File, FileStatus
from conversion.services import datasets

from .conftest import BATCH_URL, opened_batch, upload, upload_lost, zip_folder

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

DISK_FULL = OSError(errno.ENOSPC, "No space left on device")


def _no_space(*args, **kwargs):
    raise DISK_FULL


def _database_full(*args, **kwargs):
    raise OperationalError("database or disk is full")


def _assert_retry_converts(api_client, batch_id) -> None:
    """A retry of the failed batch, once there is room, converts its 19 time logs."""
    assert api_client.put(f"{BATCH_URL}/{batch_id}/retry").status_code == 200
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "PROCESSED" and len(batch["files"]) == 19


def test_the_database_retries_of_a_run_are_no_attempts(api_client, core_user, valid_timelogs, settings, monkeypatch):
    """Each database retry of the task counted as an attempt: a disk full for a minute failed the batch for good,
    "the conversion ended abnormally 3 times (its worker stopped...)", though no worker stopped."""
    settings.CONVERSION_MAX_ATTEMPTS = 2
    batch_id, dataset_id = opened_batch(api_client, core_user, valid_timelogs, monkeypatch)
    # Given a disk full: the outputs cannot be stored, nor the failure recorded (the database cannot grow)
    with monkeypatch.context() as patch:
        patch.setattr(outputs, "produce", _no_space)
        patch.setattr(datasets, "file_fail", _database_full)
        patch.setattr(datasets, "_dataset_fail", _database_full)
        # When the task's run and its database retries (DatabaseRetryTask) meet it, more times than the attempts
        for retries in range(settings.CONVERSION_MAX_ATTEMPTS + 1):
            with pytest.raises(OperationalError):
                tasks.dataset_convert.apply(args=[dataset_id], retries=retries)
    # Then, space back, the next retry converts the batch: one attempt in all
    tasks.dataset_convert.apply(args=[dataset_id], retries=settings.CONVERSION_MAX_ATTEMPTS + 1)
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "PROCESSED", batch
    assert len(batch["files"]) == 19
    assert BatchDataset.objects.get(pk=dataset_id).attempts == 1


def test_a_database_retry_whose_worker_died_is_an_attempt(api_client, core_user, valid_timelogs, settings, monkeypatch):
    """The same retry of the task delivered again (its worker died running it) is a new attempt: a data set that
    kills its workers still ends FAILED."""
    settings.CONVERSION_MAX_ATTEMPTS = 2
    batch_id, dataset_id = opened_batch(api_client, core_user, valid_timelogs, monkeypatch)
    # Given a data set whose last attempt was begun by the task's first database retry, and never ended
    BatchDataset.objects.filter(pk=dataset_id).update(status=DatasetStatus.PROCESSING, attempts=2, task_retries=1)
    # When the broker delivers that retry again
    tasks.dataset_convert.apply(args=[dataset_id], retries=1)
    # Then it is taken for what it is: the worker died at every attempt
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "FAILED"
    assert "ended abnormally 2 times" in batch["failureReason"]


class _FullDisk:
    """A file opened for writing on a full disk: its first write fails as the kernel's does."""

    def __init__(self, file):
        self.file = file

    def write(self, data: bytes) -> int:
        raise DISK_FULL

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()


def test_a_full_disk_while_the_upload_is_extracted_fails_it_as_ours_and_a_retry_converts_it(
    api_client, core_user, valid_timelogs, monkeypatch
):
    """It failed as "Files found but unable to read" ("entry ... is corrupt or truncated ([Errno 28] No space left
    on device)"): the user was told to check a file that was fine."""
    # Given a batch whose extraction meets a full disk
    with monkeypatch.context() as patch:
        patch.setattr(extraction, "open", lambda *a: _FullDisk(open(*a)), raising=False)
        batch_id = upload(api_client, core_user.pk, zip_folder(valid_timelogs, prefix="TASKDATA/")).json()["id"]
    # Then it fails with the internal error text and says why; nothing of the extraction is left
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "FAILED"
    assert batch["statusDetails"] == INTERNAL_ERROR
    assert "No space left on device" in batch["failureReason"]
    assert not storage.batch_work_root().exists() or not any(storage.batch_work_root().iterdir())
    # And once there is room, a retry converts it
    _assert_retry_converts(api_client, batch_id)


def test_a_stored_upload_this_process_cannot_open_fails_as_ours_without_its_path(
    api_client, core_user, valid_timelogs, monkeypatch
):
    """A worker whose MEDIA_ROOT was not the API's found no stored upload: the batch failed as "Files found but
    unable to read" ("... cannot be opened as a zip archive ([Errno 2] No such file or directory: '/srv/...zip')"),
    blaming a file that was fine and showing the tenant the server's path."""
    # Given an upload whose stored zip is not where the worker looks when the batch is opened
    batch_id = upload_lost(api_client, core_user, valid_timelogs, monkeypatch)
    stored = Path(default_storage.path(Batch.objects.get(pk=batch_id).upload.name))
    aside = stored.with_name("aside.zip")
    stored.rename(aside)
    tasks.batch_open(batch_id)
    # Then it fails with the internal error text, and the reason names no path of the server
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "FAILED" and batch["statusDetails"] == INTERNAL_ERROR
    assert batch["failureReason"] == "Internal error while opening the archive."
    # And once the storage is right again, a retry converts it
    aside.rename(stored)
    _assert_retry_converts(api_client, batch_id)


def test_a_full_disk_while_a_data_set_converts_fails_it_as_ours(api_client, core_user, valid_timelogs, monkeypatch):
    # Given a data set whose outputs meet a full disk (the failure itself is recorded)
    batch_id, dataset_id = opened_batch(api_client, core_user, valid_timelogs, monkeypatch)
    with monkeypatch.context() as patch:
        patch.setattr(outputs, "produce", _no_space)
        tasks.dataset_convert(dataset_id)
    # Then the batch fails with the internal error text, its files saying why
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "FAILED" and batch["statusDetails"] == INTERNAL_ERROR
    status = api_client.get(f"{BATCH_URL}/{batch_id}/status").json()
    assert status["failed"] and all(
        f["message"].startswith(INTERNAL_ERROR) and "No space left on device" in f["message"] for f in status["failed"]
    )


def test_store_stream_renames_its_file_into_local_storage(tmp_path):
    """It wrote a temporary file and copied it into storage: twice an output's size at its peak."""
    written = {}

    def write(fileobj):
        fileobj.write(b"x" * 1000)
        written["inode"] = os.fstat(fileobj.fileno()).st_ino

    name, _ = storage.store_stream("files/test/standard.geojson", write)
    path = Path(default_storage.path(name))
    assert path.stat().st_ino == written["inode"] and path.read_bytes() == b"x" * 1000
    # A write that fails leaves nothing beside it
    with pytest.raises(OSError):
        storage.store_stream("files/test/raw.geojson", _no_space)
    assert sorted(p.name for p in path.parent.iterdir()) == ["standard.geojson"]


def test_a_failed_files_outputs_are_removed_and_a_retry_converts_it(api_client, core_user, valid_timelogs, monkeypatch):
    """A failed conversion kept its partial outputs (raw.npz, raw.geojson, points.npz: tens of MB) for ever."""
    batch_id, dataset_id = opened_batch(api_client, core_user, valid_timelogs, monkeypatch)
    # Given the disk fills up as each file's standardGeojson is written, after its other outputs
    with monkeypatch.context() as patch:
        patch.setattr(standardize, "write_standard_geojson", _no_space)
        tasks.dataset_convert(dataset_id)
    files = list(File.objects.filter(batch_id=batch_id))
    assert files and {f.status for f in files} == {FileStatus.FAILED}
    # Then none of their outputs is left; what a retry needs (the upload, the data set's zip) is
    assert all(storage.listdir(storage.file_prefix(f.pk)) == ([], []) for f in files)
    assert default_storage.exists(Batch.objects.get(pk=batch_id).upload.name)
    assert storage.listdir(f"datasets/{batch_id}")[1] == ["0.zip"]
    _assert_retry_converts(api_client, batch_id)


def test_the_storage_sweep_removes_outputs_a_failed_file_kept(api_client, core_user, valid_timelogs, monkeypatch):
    batch_id, dataset_id = opened_batch(api_client, core_user, valid_timelogs, monkeypatch)
    with monkeypatch.context() as patch:
        patch.setattr(outputs, "produce", _no_space)
        tasks.dataset_convert(dataset_id)
    # Given a failed file whose outputs stayed (it failed before they were removed on failure)
    file = File.objects.filter(batch_id=batch_id).first()
    default_storage.save(f"{storage.file_prefix(file.pk)}/points.npz", ContentFile(b"x" * 1000))
    # When the storage sweep runs past them, they go
    assert cleanup.stray_storage_sweep(limit=timezone.now() + timedelta(seconds=1))["removed"] >= 1
    assert storage.listdir(storage.file_prefix(file.pk))[1] == []
