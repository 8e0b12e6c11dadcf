"""A full disk (or a database outage) while a batch converts: our failure, not the user's data. What met it is sent
again (or may be retried) once space is back, and says so with the spec's internal error text."""

import errno

import pytest
from django.db import OperationalError

from conversion import outputs, tasks
from conversion.models import BatchDataset, DatasetStatus
from conversion.services import datasets

from .conftest import BATCH_URL, opened_batch

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

DISK_FULL = OSError(errno.ENOSPC, "No space left on device")


def _no_space(*args, **kwargs):
    raise DISK_FULL


def _database_full(*args, **kwargs):
    raise OperationalError("database or disk is full")


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
