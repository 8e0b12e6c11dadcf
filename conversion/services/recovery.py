"""Work sent round again: a batch retried by its owner, and the sweep of whatever stayed in flight too long."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from platform_site.api.errors import ConflictError
from platform_site.celery import send_on_commit

from ..archive.detection import UNREADABLE_ZIP
from ..models import INTERNAL_ERROR, Batch, BatchDataset, BatchStatus, DatasetStatus, File, FileOrigin, FileStatus
from .batches import _batch_fail, _tasks
from .datasets import _dataset_fail
from .files import file_fail

STUCK_MESSAGE = "Processing stopped: it did not finish in time after {attempts} attempts."
UNSUPPORTED_NAMED = 5  # the most failed data sets of unsupported formats a refused retry names


@transaction.atomic
def batch_retry(*, batch: Batch) -> Batch:
    """Send the failed data sets round again (a batch that failed before any was found is opened again);
    converted files stay unchanged. The batch is RECEIVED until they end again. Nothing failed: the batch as it is;
    only data sets of unsupported formats failed: 409 `nothingToRetry`, naming them."""
    batch = Batch.objects.select_for_update().get(pk=batch.pk)
    if batch.status == BatchStatus.RECEIVED:
        raise ConflictError(
            "The batch is still being processed; retry it once it has ended.", error_key="batchProcessing"
        )
    failed = list(batch.datasets.filter(status=DatasetStatus.FAILED, supported=True))
    opened_before = batch.datasets.exists()
    if opened_before and not failed:
        unsupported = list(batch.datasets.filter(status=DatasetStatus.FAILED).order_by("position")[:UNSUPPORTED_NAMED])
        if unsupported:  # what failed no retry converts: said, rather than a 200 that did nothing
            raise ConflictError(_nothing_to_retry(unsupported), error_key="nothingToRetry")
        return batch
    batch.status, batch.status_details, batch.failure_reason, batch.finished_at = BatchStatus.RECEIVED, None, None, None
    batch.save(update_fields=["status", "status_details", "failure_reason", "finished_at"])
    if not opened_before:
        batch.attempts = 1  # this send
        batch.save(update_fields=["attempts"])
        send_on_commit(_tasks().batch_open, str(batch.pk))
        return batch
    for dataset in failed:
        dataset.status, dataset.message, dataset.attempts, dataset.finished_at = DatasetStatus.PENDING, None, 0, None
        dataset.progress_at = timezone.now()  # sent again now: the sweep judges it from here
        dataset.save(update_fields=["status", "message", "attempts", "finished_at", "progress_at"])
        dataset.files.exclude(status=FileStatus.PROCESSED).update(
            status=FileStatus.PROCESSING, status_message=None, updated_time=timezone.now()
        )
        send_on_commit(_tasks().dataset_convert, dataset.pk)
    return batch


def _nothing_to_retry(unsupported: list[BatchDataset]) -> str:
    """Why a retry of these failed data sets (none convertible, `supported=False`) would convert nothing, and what to
    upload instead: a format without an open specification, or a zip inside the upload that cannot be read."""
    damaged = ", ".join(dataset.name for dataset in unsupported if dataset.format == UNREADABLE_ZIP)
    formats = ", ".join(f"{d.name} ({d.format})" for d in unsupported if d.format != UNREADABLE_ZIP)
    said = []
    if formats:
        said.append(
            f"what failed is in a format that cannot be converted, however often it is sent: {formats}. Export it "
            "from the machine's software in a supported format and upload that."
        )
    if damaged:
        unreadable = (
            "A zip inside the upload cannot be read either (damaged or cut short)"
            if formats
            else "what failed is a zip inside the upload that cannot be read (damaged or cut short), however often "
            "it is sent"
        )
        said.append(f"{unreadable}: {damaged}. Upload a sound copy of it.")
    return "Nothing to retry: " + " ".join(said)


def stuck_limit(limit: datetime | None = None) -> datetime:
    """The sweeps' line: work in flight untouched since then counts as left (its task lost, or its worker dead).
    `limit` when given (the embedded server's start, at its start), else CONVERSION_STUCK_AFTER_SECONDS ago."""
    return limit or timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS)


def conversion_sweep(*, limit: datetime | None = None, restarted: bool = False) -> dict[str, int]:
    """Re-send batches and data sets that stayed in flight too long (their worker died, or their task was lost
    before it started), or fail them with a reason after CONVERSION_MAX_ATTEMPTS; merged files too. In flight too
    long: nothing done since `limit` (default CONVERSION_STUCK_AFTER_SECONDS ago; the embedded server's start, at
    its start: its in-memory broker lost every task of the process before it). `restarted` (that start): a data
    set whose task never started was lost with the process through no fault of its own, and is sent again without
    using an attempt (each restart of `make run` used one, and a queue of uploads waiting through three restarts
    failed "did not finish in time" unconverted)."""
    limit = stuck_limit(limit)
    counts = {"resent": 0, "failed": 0}
    # Batches not opened: never started, or started long ago by a worker that died. Each send of the opening task is
    # an attempt, counted when it is sent (a task lost before a worker took it never runs to count itself), and the
    # batch is judged again from then (`started_at`), so one that never opens ends FAILED too.
    stuck_batches = Batch.objects.filter(status=BatchStatus.RECEIVED, datasets__isnull=True, upload_timestamp__lt=limit)
    for batch in stuck_batches.filter(Q(started_at__isnull=True) | Q(started_at__lt=limit)):
        if batch.attempts >= settings.CONVERSION_MAX_ATTEMPTS:
            _batch_fail(batch, INTERNAL_ERROR, STUCK_MESSAGE.format(attempts=batch.attempts))
            counts["failed"] += 1
            continue
        claimed = Batch.objects.filter(pk=batch.pk, status=BatchStatus.RECEIVED, attempts=batch.attempts).update(
            attempts=F("attempts") + 1, started_at=timezone.now()
        )
        if claimed:
            _tasks().batch_open.delay(str(batch.pk))
            counts["resent"] += 1
    in_flight = BatchDataset.objects.filter(status=DatasetStatus.PROCESSING)
    for dataset in in_flight.filter(Q(progress_at__lt=limit) | Q(progress_at__isnull=True, started_at__lt=limit)):
        if dataset.attempts >= settings.CONVERSION_MAX_ATTEMPTS:
            message = STUCK_MESSAGE.format(attempts=dataset.attempts)
            _dataset_fail(dataset, f"{INTERNAL_ERROR} ({message})", message)
            counts["failed"] += 1
        else:
            _tasks().dataset_convert.delay(dataset.pk)
            counts["resent"] += 1
    # Data sets whose task never started (lost on its way to the broker, or its worker died before it began):
    # judged from when they were made pending (`progress_at`, or the opening of their batch for older rows).
    # Each re-send counts as an attempt, so a task that never arrives ends FAILED too.
    never_started = BatchDataset.objects.filter(status=DatasetStatus.PENDING, supported=True).filter(
        Q(progress_at__lt=limit) | Q(progress_at__isnull=True, batch__started_at__lt=limit)
    )
    for dataset in never_started:
        if dataset.attempts >= settings.CONVERSION_MAX_ATTEMPTS and not restarted:
            message = STUCK_MESSAGE.format(attempts=dataset.attempts)
            _dataset_fail(dataset, f"{INTERNAL_ERROR} ({message})", message)
            counts["failed"] += 1
            continue
        counted = {} if restarted else {"attempts": F("attempts") + 1}
        claimed = BatchDataset.objects.filter(pk=dataset.pk, status=DatasetStatus.PENDING).update(
            **counted, progress_at=timezone.now()
        )
        if claimed:
            _tasks().dataset_convert.delay(dataset.pk)
            counts["resent"] += 1
    # Merged files whose task was lost or whose worker died. Cropped and automerged files belong to their operation
    # (operations' sweep), and so do merges waiting for an automerged source's rebuild: it sends them again.
    merges = File.objects.filter(
        status=FileStatus.PROCESSING,
        dataset__isnull=True,
        origin=FileOrigin.MERGED,
        operation_crop__isnull=True,
        updated_time__lt=limit,
    ).exclude(sources__status=FileStatus.PROCESSING)
    for file in merges.select_related("core_user"):
        outcome = derived_file_sweep(file, partial(_tasks().file_merge_process.delay, str(file.pk)))
        if outcome:
            counts[outcome] += 1
    return counts


def derived_file_sweep(file: File, send: Callable[[], object]) -> str | None:
    """The sweep's step for a derived file (merged, cropped) left processing longer than
    CONVERSION_STUCK_AFTER_SECONDS since its last update: after CONVERSION_MAX_ATTEMPTS re-sends it fails with a
    reason ("failed"); before, the re-send is counted and the file judged again from now, then `send()` sends its
    task again ("resent"; its task is idempotent). None when another sweep took it first."""
    if file.sweep_attempts >= settings.CONVERSION_MAX_ATTEMPTS:
        file_fail(file, f"{INTERNAL_ERROR} ({STUCK_MESSAGE.format(attempts=file.sweep_attempts + 1)})")
        return "failed"
    claimed = File.objects.filter(pk=file.pk, status=FileStatus.PROCESSING, sweep_attempts=file.sweep_attempts).update(
        sweep_attempts=F("sweep_attempts") + 1, updated_time=timezone.now()
    )
    if not claimed:
        return None
    send()
    return "resent"
