"""One data set converted by two runs at once (the sweep re-sent a task still queued, the broker sent one twice):
the second run is harmless. Each file is announced once, nothing is announced after its batch's end, and a data set
that ended stays as it ended, whatever the other run meets (its work folder removed by the batch's end)."""

import logging
from datetime import timedelta

import pytest
from django.utils import timezone

from conversion import outputs
from conversion.models import Batch, BatchDataset, BatchStatus, DatasetStatus, File, FileStatus
from conversion.services import conversion_sweep, dataset_convert
from conversion.services import datasets as dataset_services

from .conftest import BATCH_URL, opened_batch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

EVENTS = ["uploadedFileProcessingFinished", "uploadedFileProcessingFailed", "batchUploadProcessingFinished"]


def _types(receiver) -> list[str]:
    return [event["type"] for event in receiver.events()]


def test_a_data_set_converted_twice_at_once_announces_each_file_once(
    api_client, owner, core_user, valid_timelogs, webhook_receiver, subscribe, monkeypatch
):
    # Given a data set whose task runs twice: the second run starts and converts it all while the first one is
    # making its first file's outputs
    subscribe(owner, webhook_receiver, EVENTS)
    batch_id, dataset_id = opened_batch(api_client, core_user, valid_timelogs, monkeypatch)
    produce, runs = outputs.produce, []

    def produce_while_another_run_converts(file, *args, **kwargs):
        if not runs:
            runs.append("second")
            dataset_convert(dataset_id)
        return produce(file, *args, **kwargs)

    monkeypatch.setattr(outputs, "produce", produce_while_another_run_converts)
    # When the first run goes on
    dataset_convert(dataset_id)
    # Then each file was announced once, all before the batch's end, which was announced once
    types = _types(webhook_receiver)
    assert types == ["uploadedFileProcessingFinished"] * 19 + ["batchUploadProcessingFinished"]
    file_ids = [event["coreFileId"] for event in webhook_receiver.events()[:-1]]
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "PROCESSED" and sorted(file_ids) == sorted(batch["files"])
    assert BatchDataset.objects.get(pk=dataset_id).status == DatasetStatus.DONE


def test_a_run_whose_work_folder_the_other_run_removed_leaves_the_finished_data_set_alone(
    api_client, owner, core_user, valid_timelogs, webhook_receiver, subscribe, monkeypatch, caplog
):
    # Given a run that has found its batch's work folder, and another run of the same data set that converts it
    # meanwhile, ending the batch (whose end removes the work folder)
    subscribe(owner, webhook_receiver, EVENTS)
    batch_id, dataset_id = opened_batch(api_client, core_user, valid_timelogs, monkeypatch)
    extract, runs = dataset_services.ensure_extracted, []

    def extracted_then_another_run_converts(batch):
        root = extract(batch)
        if not runs:
            runs.append("second")
            dataset_convert(dataset_id)
            assert not root.exists()
        return root

    monkeypatch.setattr(dataset_services, "ensure_extracted", extracted_then_another_run_converts)
    # When the first run reads its data set from the removed folder
    with caplog.at_level(logging.INFO):
        dataset_convert(dataset_id)
    # Then it ends quietly: the data set stays DONE, its batch PROCESSED, nothing more is announced
    dataset = BatchDataset.objects.get(pk=dataset_id)
    assert (dataset.status, dataset.message) == (DatasetStatus.DONE, None)
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert _types(webhook_receiver) == ["uploadedFileProcessingFinished"] * 19 + ["batchUploadProcessingFinished"]
    assert {f.status for f in File.objects.filter(batch_id=batch_id)} == {FileStatus.PROCESSED}
    # and a retry has nothing to send round again: the finished batch is not re-opened
    answer = api_client.put(f"{BATCH_URL}/{batch_id}/retry")
    assert answer.status_code == 200 and answer.json()["status"] == "PROCESSED"
    assert Batch.objects.get(pk=batch_id).status == BatchStatus.PROCESSED
    assert len(webhook_receiver.events()) == 20


def test_a_run_still_going_when_the_sweep_failed_its_data_set_changes_nothing(
    api_client, owner, core_user, valid_timelogs, webhook_receiver, subscribe, settings, monkeypatch
):
    # Given a run so slow that the sweep, after the last attempt, fails its data set while it makes its first file
    subscribe(owner, webhook_receiver, EVENTS)
    batch_id, dataset_id = opened_batch(api_client, core_user, valid_timelogs, monkeypatch)
    produce, swept = outputs.produce, []

    def produce_while_the_sweep_fails_it(file, *args, **kwargs):
        if not swept:
            long_ago = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS + 60)
            BatchDataset.objects.filter(pk=dataset_id).update(
                progress_at=long_ago, attempts=settings.CONVERSION_MAX_ATTEMPTS
            )
            swept.append(conversion_sweep())
        return produce(file, *args, **kwargs)

    monkeypatch.setattr(outputs, "produce", produce_while_the_sweep_fails_it)
    # When the run goes on to its end
    dataset_convert(dataset_id)
    # Then the failure stands: no file converted, nothing announced after the batch's end, the reason kept
    assert swept == [{"resent": 0, "failed": 1}]
    types = _types(webhook_receiver)
    assert types[-1] == "batchUploadProcessingFinished" and types.count("batchUploadProcessingFinished") == 1
    assert "uploadedFileProcessingFinished" not in types
    batch = api_client.get(f"{BATCH_URL}/{batch_id}").json()
    assert batch["status"] == "FAILED" and "did not finish in time" in batch["failureReason"]
    dataset = BatchDataset.objects.get(pk=dataset_id)
    assert dataset.status == DatasetStatus.FAILED and "did not finish in time" in dataset.message
    assert {f.status for f in File.objects.filter(batch_id=batch_id)} == {FileStatus.FAILED}
