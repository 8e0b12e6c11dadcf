"""Nothing stays in flight: the sweep re-sends what a dead worker left behind, and fails it with a reason after
CONVERSION_MAX_ATTEMPTS."""

import threading
from datetime import timedelta

import pytest
from django.db import connections
from django.utils import timezone

from conversion import outputs, tasks
from conversion.models import INTERNAL_ERROR, Batch, BatchDataset, BatchStatus, DatasetStatus, File, FileStatus
from conversion.services import batch_open, conversion_sweep, datasets
from tests.concurrency import needs_postgresql

from .conftest import BATCH_URL, opened_batch, upload_lost

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]


def _stalled_upload(api_client, core_user, folder, settings, monkeypatch) -> str:
    """An upload whose batch was opened, then whose data set conversion 'died' while processing."""
    batch_id, _ = opened_batch(api_client, core_user, folder, monkeypatch)
    long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    BatchDataset.objects.filter(batch_id=batch_id).update(
        status=DatasetStatus.PROCESSING, started_at=long_ago, attempts=1
    )
    return batch_id


def test_a_data_set_left_processing_is_sent_again(api_client, core_user, valid_timelogs, settings, monkeypatch):
    batch_id = _stalled_upload(api_client, core_user, valid_timelogs, settings, monkeypatch)
    assert conversion_sweep()["resent"] == 1
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "PROCESSED"
    assert len(batch["files"]) == 19


def test_a_long_data_set_still_making_progress_is_left_alone(
    api_client, core_user, valid_timelogs, settings, monkeypatch
):
    batch_id = _stalled_upload(api_client, core_user, valid_timelogs, settings, monkeypatch)
    # Started long ago, but its task finished a file a moment ago: it is alive, not stuck
    BatchDataset.objects.filter(batch_id=batch_id).update(progress_at=timezone.now())
    assert conversion_sweep() == {"resent": 0, "failed": 0}
    long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    BatchDataset.objects.filter(batch_id=batch_id).update(progress_at=long_ago)
    assert conversion_sweep()["resent"] == 1


def test_each_finished_file_is_a_sign_of_life(api_client, core_user, valid_timelogs, settings, monkeypatch):
    batch_id = upload_lost(api_client, core_user, valid_timelogs, monkeypatch)
    seen = []
    real_produce = outputs.produce

    def produce(file, table, **kwargs):
        seen.append(BatchDataset.objects.get(batch_id=batch_id).progress_at)
        return real_produce(file, table, **kwargs)

    monkeypatch.setattr(outputs, "produce", produce)
    batch_open(batch_id)
    assert len(seen) == 19 and seen == sorted(seen) and seen[0] < seen[-1]
    dataset = BatchDataset.objects.get(batch_id=batch_id)
    assert dataset.started_at <= seen[0] and dataset.progress_at == seen[-1]


def test_a_data_set_stuck_after_the_last_attempt_fails_with_a_reason(
    api_client, core_user, valid_timelogs, settings, monkeypatch
):
    batch_id = _stalled_upload(api_client, core_user, valid_timelogs, settings, monkeypatch)
    BatchDataset.objects.filter(batch_id=batch_id).update(attempts=settings.CONVERSION_MAX_ATTEMPTS)
    assert conversion_sweep()["failed"] == 1
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "FAILED"
    assert "did not finish in time" in batch["failureReason"]
    assert batch["statusDetails"] == INTERNAL_ERROR  # ours, not "Files found but unable to read"
    assert {f.status for f in File.objects.filter(batch_id=batch_id)} == {FileStatus.FAILED}


@pytest.mark.parametrize("died", [1, 2])
def test_a_data_set_whose_worker_dies_at_every_attempt_fails_when_sent_again(
    api_client, core_user, valid_timelogs, settings, monkeypatch, died
):
    """A worker killed mid-conversion (out of memory) leaves its task unacknowledged, and the broker sends it again
    at once: the data set never looks stuck to the sweep, and each run killed the next worker, forever."""
    settings.CONVERSION_MAX_ATTEMPTS = 2
    batch_id = _stalled_upload(api_client, core_user, valid_timelogs, settings, monkeypatch)
    dataset = BatchDataset.objects.get(batch_id=batch_id)
    # Its last run began a moment ago and never ended.
    BatchDataset.objects.filter(pk=dataset.pk).update(attempts=died, progress_at=timezone.now())
    tasks.dataset_convert(dataset.pk)  # sent again by the broker
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    if died < settings.CONVERSION_MAX_ATTEMPTS:
        assert batch["status"] == "PROCESSED" and len(batch["files"]) == 19
        return
    assert batch["status"] == "FAILED"
    assert "ended abnormally 2 times" in batch["failureReason"]
    assert batch["statusDetails"] == INTERNAL_ERROR
    assert {f.status for f in File.objects.filter(batch_id=batch_id)} == {FileStatus.FAILED}


def test_a_copy_of_the_task_arriving_while_a_live_run_converts_leaves_it_alone(
    api_client, core_user, valid_timelogs, settings, monkeypatch
):
    """A live run also leaves its data set PROCESSING: a copy of its task arriving after the last attempt (a
    sweep's re-send of a task that waited behind a backlog, a broker redelivery) took it for dead and failed the
    data set under it. The live run holds its lease on its own connection; only a dead one's is free."""
    needs_postgresql()
    batch_id = _stalled_upload(api_client, core_user, valid_timelogs, settings, monkeypatch)
    dataset = BatchDataset.objects.get(batch_id=batch_id)
    BatchDataset.objects.filter(pk=dataset.pk).update(attempts=settings.CONVERSION_MAX_ATTEMPTS)
    holding, release = threading.Event(), threading.Event()

    def live_run():  # a run converting on another worker: its own database session holds the lease
        with datasets._run_lease(dataset.pk) as only:
            assert only
            holding.set()
            release.wait(30)
        connections.close_all()

    worker = threading.Thread(target=live_run)
    worker.start()
    try:
        assert holding.wait(30)
        tasks.dataset_convert(dataset.pk)  # the copy
        assert BatchDataset.objects.get(pk=dataset.pk).status == DatasetStatus.PROCESSING
        assert api_client.get(f"{BATCH_URL}/{batch_id}").json()["status"] == "RECEIVED"
    finally:
        release.set()
        worker.join(30)
    # Its worker gone (the lease free), the next copy finds the run dead after its last attempt.
    tasks.dataset_convert(dataset.pk)
    assert "ended abnormally" in api_client.get(f"{BATCH_URL}/{batch_id}").json()["failureReason"]


def test_a_batch_never_opened_is_opened_by_the_sweep(api_client, core_user, valid_timelogs, settings, monkeypatch):
    batch_id = upload_lost(api_client, core_user, valid_timelogs, monkeypatch)
    long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    Batch.objects.filter(pk=batch_id).update(upload_timestamp=long_ago)
    assert conversion_sweep()["resent"] == 1
    assert Batch.objects.get(pk=batch_id).status == BatchStatus.PROCESSED


def test_a_recent_batch_is_left_alone(api_client, core_user, valid_timelogs, settings, monkeypatch):
    upload_lost(api_client, core_user, valid_timelogs, monkeypatch)
    assert conversion_sweep() == {"resent": 0, "failed": 0}


def _pending_upload(api_client, core_user, folder, settings, monkeypatch) -> str:
    """An upload opened into data sets whose conversion tasks never reached a worker (the broker was down)."""
    batch_id = upload_lost(api_client, core_user, folder, monkeypatch)
    with monkeypatch.context() as patch:
        patch.setattr(tasks.dataset_convert, "delay", lambda *a: None)
        batch_open(batch_id)
    long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    Batch.objects.filter(pk=batch_id).update(started_at=long_ago)
    return batch_id


def test_a_data_set_whose_task_never_started_is_sent_again(
    api_client, core_user, valid_timelogs, settings, monkeypatch
):
    batch_id = _pending_upload(api_client, core_user, valid_timelogs, settings, monkeypatch)
    assert BatchDataset.objects.get(batch_id=batch_id).status == DatasetStatus.PENDING
    assert conversion_sweep() == {"resent": 1, "failed": 0}
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "PROCESSED"
    assert len(batch["files"]) == 19


def test_a_recent_pending_data_set_is_left_alone(api_client, core_user, valid_timelogs, settings, monkeypatch):
    batch_id = upload_lost(api_client, core_user, valid_timelogs, monkeypatch)
    with monkeypatch.context() as patch:
        patch.setattr(tasks.dataset_convert, "delay", lambda *a: None)
        batch_open(batch_id)
    assert conversion_sweep() == {"resent": 0, "failed": 0}


def test_a_data_set_whose_task_never_arrives_fails_with_a_reason(
    api_client, core_user, valid_timelogs, settings, monkeypatch
):
    batch_id = _pending_upload(api_client, core_user, valid_timelogs, settings, monkeypatch)
    long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    monkeypatch.setattr(tasks.dataset_convert, "delay", lambda *a: None)  # the broker stays unreachable
    for _ in range(settings.CONVERSION_MAX_ATTEMPTS):
        assert conversion_sweep() == {"resent": 1, "failed": 0}
        assert conversion_sweep() == {"resent": 0, "failed": 0}  # just sent: judged again from now
        BatchDataset.objects.filter(batch_id=batch_id).update(progress_at=long_ago)
    assert conversion_sweep() == {"resent": 0, "failed": 1}
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "FAILED"
    assert f"did not finish in time after {settings.CONVERSION_MAX_ATTEMPTS} attempts" in batch["failureReason"]
    assert {f.status for f in File.objects.filter(batch_id=batch_id)} == {FileStatus.FAILED}
    # Ended: the owner may retry it now
    assert api_client.put(f"{BATCH_URL}/{batch_id}/retry").status_code == 200
    assert conversion_sweep() == {"resent": 0, "failed": 0}  # the retry's own task is not sent twice


def test_at_the_embedded_servers_start_a_data_set_that_never_started_uses_no_attempt(
    api_client, core_user, valid_timelogs, settings, monkeypatch
):
    """Its task was lost with the process (the in-memory broker), not through a fault of its own: each restart of
    `make run` used an attempt, and a data set waiting through CONVERSION_MAX_ATTEMPTS restarts failed unconverted.
    A data set a run began (PROCESSING) still counts its runs: one that kills the process must end."""
    batch_id = _pending_upload(api_client, core_user, valid_timelogs, settings, monkeypatch)
    BatchDataset.objects.filter(batch_id=batch_id).update(attempts=settings.CONVERSION_MAX_ATTEMPTS)
    with monkeypatch.context() as patch:
        patch.setattr(tasks.dataset_convert, "delay", lambda *a: None)  # (lost again)
        assert conversion_sweep(limit=timezone.now(), restarted=True) == {"resent": 1, "failed": 0}
    assert BatchDataset.objects.get(batch_id=batch_id).attempts == settings.CONVERSION_MAX_ATTEMPTS
    # The periodic sweep still counts a task that never arrives, and ends it
    assert conversion_sweep(limit=timezone.now()) == {"resent": 0, "failed": 1}
    assert api_client.get(f"{BATCH_URL}/{batch_id}").json()["status"] == "FAILED"


def test_the_embedded_servers_start_converts_a_data_set_left_pending(
    api_client, core_user, valid_timelogs, settings, monkeypatch
):
    batch_id = _pending_upload(api_client, core_user, valid_timelogs, settings, monkeypatch)
    assert tasks.conversion_sweep(timezone.now().isoformat(), True) == {"resent": 1, "failed": 0}
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "PROCESSED" and len(batch["files"]) == 19
    assert BatchDataset.objects.get(batch_id=batch_id).attempts == 1  # (its one run)


def test_a_batch_whose_opening_never_arrives_fails_with_a_reason(
    api_client, core_user, valid_timelogs, settings, monkeypatch
):
    # Given an upload whose opening task was lost, and a broker that stays unreachable
    batch_id = upload_lost(api_client, core_user, valid_timelogs, monkeypatch)
    long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
    Batch.objects.filter(pk=batch_id).update(upload_timestamp=long_ago)
    with monkeypatch.context() as patch:
        patch.setattr(tasks.batch_open, "delay", lambda *a: None)
        # When the sweep sends it again until the upload's send and its re-sends make CONVERSION_MAX_ATTEMPTS
        for _ in range(settings.CONVERSION_MAX_ATTEMPTS - 1):
            assert conversion_sweep() == {"resent": 1, "failed": 0}
            assert conversion_sweep() == {"resent": 0, "failed": 0}  # just sent: judged again from now
            Batch.objects.filter(pk=batch_id).update(started_at=long_ago)
        # Then the next sweep fails it with the reason, and it is never sent again
        assert conversion_sweep() == {"resent": 0, "failed": 1}
        batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
        assert batch["status"] == "FAILED"
        assert batch["statusDetails"] == INTERNAL_ERROR
        assert f"did not finish in time after {settings.CONVERSION_MAX_ATTEMPTS} attempts" in batch["failureReason"]
        assert conversion_sweep() == {"resent": 0, "failed": 0}
    # The owner may retry it: a fresh send, opened as soon as a worker takes it
    assert api_client.put(f"{BATCH_URL}/{batch_id}/retry").status_code == 200
    assert api_client.get(f"{BATCH_URL}/{batch_id}").json()["status"] == "PROCESSED"


@pytest.mark.parametrize("found", [True, False], ids=["data sets found", "nothing found"])
def test_a_batch_deleted_with_its_core_user_while_it_was_opened_ends_its_task_quietly(
    api_client, core_user, valid_timelogs, monkeypatch, found
):
    """Its task read the batch again to write the data sets (or the failure) it had found, with `get`: it raised
    DoesNotExist, an error in the worker's log for a deletion the API had answered 204."""
    from conversion.services import batches
    from platform_site.accounts.services import core_user_delete

    batch_id = upload_lost(api_client, core_user, valid_timelogs, monkeypatch)
    detect = batches.archive.detect

    def detect_then_delete(root, **kwargs):
        detected = detect(root, **kwargs)
        core_user_delete(core_user=core_user)
        return detected if found else type(detected)()

    monkeypatch.setattr(batches.archive, "detect", detect_then_delete)
    batch_open(batch_id)
    assert not Batch.objects.exists() and not BatchDataset.objects.exists() and not File.objects.exists()
