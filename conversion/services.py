"""Batches and files: receiving an upload, opening it, converting each data set, finishing the batch, retry, sweep.

The state machine (spec "Batch status", supplement "Files and batches"):
- `batch_receive` stores the streamed zip as a RECEIVED batch and enqueues `batch_open` after commit.
- `batch_open` extracts the zip safely, detects data sets, and creates one `BatchDataset` and one processing
  `File` per data set (failed at once for the proprietary formats nobody can read); each readable data set
  gets a `dataset_convert` task.
- `dataset_convert` reads, cleans and stores the outputs of its data set (`conversion.outputs`), attaches the
  files to fields, pools machines, records catalogs and emits the file events; the last data set to end
  finishes the batch (`batch_finish_if_done`): PROCESSED when any file was converted, else FAILED with the
  spec's statusDetails.
- `batch_retry` sends only the failed data sets (or a batch that failed before any was found) round again;
  converted files stay as they are. `conversion_sweep` re-sends or fails whatever stayed in flight too long.
"""

from __future__ import annotations

import logging
import os
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from assets.models import Provider
from platform_site.accounts.models import CoreUser
from platform_site.api.errors import ConflictError
from webhooks.models import EventType
from webhooks.services import event_emit

from . import archive, links, outputs, storage
from .models import (
    INTERNAL_ERROR,
    NO_VALID_FILES,
    UNABLE_TO_READ,
    Batch,
    BatchDataset,
    BatchStatus,
    DatasetStatus,
    File,
    FileOrigin,
    FileStatus,
)
from .readers import UnreadableDataset, get_reader
from .readers.base import Dataset
from .signals import file_processed

log = logging.getLogger(__name__)

FINISHED_EVENTS = {
    FileOrigin.UPLOADED: EventType.UPLOADED_FILE_PROCESSING_FINISHED,
    FileOrigin.MERGED: EventType.MERGED_FILE_PROCESSING_FINISHED,
    FileOrigin.AUTOMERGED: EventType.AUTOMERGED_FILE_PROCESSING_FINISHED,
    FileOrigin.PROVIDER: EventType.PROVIDER_FILE_PROCESSING_FINISHED,
}
FAILED_EVENTS = {
    FileOrigin.UPLOADED: EventType.UPLOADED_FILE_PROCESSING_FAILED,
    FileOrigin.MERGED: EventType.MERGED_FILE_PROCESSING_FAILED,
    FileOrigin.AUTOMERGED: EventType.AUTOMERGED_FILE_PROCESSING_FAILED,
    FileOrigin.PROVIDER: EventType.PROVIDER_FILE_PROCESSING_FAILED,
}
STUCK_MESSAGE = "Processing stopped: it did not finish in time after {attempts} attempts."


def _enqueue(task, *args) -> None:
    transaction.on_commit(lambda: task.delay(*args))


def _tasks():
    from . import tasks  # tasks import this module

    return tasks


# --- upload -----------------------------------------------------------------------------------------


def batch_receive(*, core_user: CoreUser, provider: str, upload) -> Batch:
    """Store a streamed zip (`conversion.uploads.ZipUploadHandler` checked its size and signature) as a
    RECEIVED batch and enqueue its opening after commit."""
    if provider not in Provider.values:
        raise ValueError(f"unknown provider {provider!r}")
    batch = Batch(
        core_user=core_user,
        provider=provider,
        file_name=os.path.basename(upload.name or "upload.zip")[:255] or "upload.zip",
        size=upload.size,
    )
    batch.upload.save(f"{batch.id}.zip", upload, save=False)
    try:
        with transaction.atomic():
            batch.save(force_insert=True)
            _enqueue(_tasks().batch_open, str(batch.id))
    except BaseException:
        batch.upload.delete(save=False)
        raise
    return batch


# --- opening a batch --------------------------------------------------------------------------------


def ensure_extracted(batch: Batch) -> Path:
    """The batch's zip extracted in its work folder (extracted now if a previous worker's copy is gone)."""
    target = storage.batch_work_dir(batch.id)
    done = target / ".complete"
    if done.exists():
        return target / "root"
    partial = target.with_name(f"{target.name}.{os.getpid()}.{timezone.now().timestamp():.0f}")
    storage.remove_work_dir(partial.name)
    with storage.local_path(batch.upload.name) as zip_path:
        archive.safe_extract(
            zip_path,
            partial / "root",
            max_entries=settings.CONVERSION_MAX_ENTRIES,
            max_total_bytes=settings.CONVERSION_MAX_EXPANDED_BYTES,
            max_ratio=settings.CONVERSION_MAX_RATIO,
            max_depth=settings.CONVERSION_MAX_DEPTH,
        )
    (partial / ".complete").touch()
    try:
        partial.rename(target)
    except OSError:  # another worker got there first; use its copy
        archive.cleanup(partial)
    return target / "root"


def batch_open(batch_id: str) -> None:
    """Extract and detect; create the data sets and their files; enqueue their conversion. Idempotent."""
    with transaction.atomic():
        batch = Batch.objects.select_for_update().filter(pk=batch_id).first()
        if batch is None or batch.status != BatchStatus.RECEIVED or batch.datasets.exists():
            return
        batch.started_at = timezone.now()
        batch.attempts += 1
        batch.save(update_fields=["started_at", "attempts"])
    try:
        root = ensure_extracted(batch)
        found = archive.detect(root)
    except archive.ArchiveError as exc:
        _batch_fail(batch, UNABLE_TO_READ, str(exc))
        return
    except Exception:
        log.exception("batch %s could not be opened", batch.pk)
        _batch_fail(batch, INTERNAL_ERROR, "Internal error while opening the archive.")
        return
    if not found.datasets and not found.unsupported:
        _batch_fail(batch, NO_VALID_FILES, "No ISOXML, shapefile or GeoJSON point data set in the archive.")
        return
    with transaction.atomic():
        batch = Batch.objects.select_for_update().get(pk=batch.pk)
        if batch.datasets.exists():
            return
        position = 0
        for ds in found.datasets:
            dataset = BatchDataset.objects.create(
                batch=batch,
                position=position,
                format=ds.format,
                path=ds.path.relative_to(root).as_posix(),
                root=ds.root.relative_to(root).as_posix(),
                name=ds.name[:255],
            )
            _file_for(dataset, ds.format, ds.name)
            _enqueue(_tasks().dataset_convert, dataset.pk)
            position += 1
        for unsupported in found.unsupported:
            relative = unsupported.path.relative_to(root).as_posix()
            name = Path(relative).name or batch.file_name
            dataset = BatchDataset.objects.create(
                batch=batch,
                position=position,
                format=unsupported.format_name,
                path=relative,
                root=relative,
                name=name[:255],
                supported=False,
                status=DatasetStatus.FAILED,
                message=f"{unsupported.format_name} data has no open specification; it cannot be converted.",
                finished_at=timezone.now(),
            )
            file = _file_for(dataset, unsupported.format_name, name)
            _file_fail(file, UNABLE_TO_READ + f" ({dataset.message})")
            position += 1
        if not found.datasets:
            _batch_finish(batch)


def _new_file_fields(dataset: BatchDataset, file_format: str, name: str) -> dict:
    batch = dataset.batch
    return {
        "core_user_id": batch.core_user_id,
        "batch": batch,
        "file_name": name[:255],
        "file_format": file_format,
        "provider": batch.provider,
        "origin": FileOrigin.UPLOADED,
    }


def _file_for(dataset: BatchDataset, file_format: str, name: str) -> File:
    """The placeholder file of a data set, created when the batch is opened (part 0)."""
    file, _ = File.objects.get_or_create(dataset=dataset, part=0, defaults=_new_file_fields(dataset, file_format, name))
    return file


def _part_name(dataset: BatchDataset, part_name: str | None, several: bool) -> str:
    return (f"{dataset.name}/{part_name}" if several and part_name else dataset.name)[:255]


def _file_named(dataset: BatchDataset, name: str) -> File:
    """The data set's file for one of its operations, found by name (stable across retries): the placeholder
    is taken by the first operation, the others get files of their own."""
    with transaction.atomic():
        files = File.objects.select_for_update().filter(dataset=dataset).order_by("part")
        file = files.filter(file_name=name).first()
        if file is not None:
            return file
        placeholder = files.filter(part=0, file_name=dataset.name[:255]).exclude(status=FileStatus.PROCESSED).first()
        if placeholder is not None:
            placeholder.file_name = name
            placeholder.save(update_fields=["file_name", "updated_time"])
            return placeholder
        return File.objects.create(
            dataset=dataset,
            part=(files.aggregate(m=Max("part"))["m"] or 0) + 1,
            **_new_file_fields(dataset, dataset.format, name),
        )


# --- converting one data set ------------------------------------------------------------------------


def dataset_convert(dataset_id: int) -> None:
    """Convert one data set into its file(s). Idempotent: a data set that ended is left alone."""
    with transaction.atomic():
        dataset = (
            BatchDataset.objects.select_for_update()
            .select_related("batch", "batch__core_user")
            .filter(pk=dataset_id)
            .first()
        )
        if dataset is None or dataset.status not in (DatasetStatus.PENDING, DatasetStatus.PROCESSING):
            return
        dataset.status = DatasetStatus.PROCESSING
        dataset.attempts += 1
        dataset.started_at = dataset.progress_at = timezone.now()
        dataset.save(update_fields=["status", "attempts", "started_at", "progress_at"])
    batch = dataset.batch
    try:
        root = ensure_extracted(batch)
        source = Dataset(dataset.format, root / dataset.path, root / dataset.root, dataset.name)
        reader = get_reader(dataset.format)
        tables = reader.read(source)
        if not tables:
            raise UnreadableDataset("The data set holds no logged points.")
        original = outputs.store_original(dataset, source)
        failures = []
        several = len(tables) + len(reader.skipped) > 1
        for table in tables:
            # A data set of several operations names each file after its own (the task, the time log).
            file = _file_named(dataset, _part_name(dataset, table.name, several))
            if file.status == FileStatus.PROCESSED:
                continue
            # Still alive: a data set of many files may take longer than the sweep's limit as a whole.
            BatchDataset.objects.filter(pk=dataset.pk).update(progress_at=timezone.now())
            try:
                produced = outputs.produce(file, table, original_name=original)
            except UnreadableDataset as exc:
                failures.append(str(exc))
                file_fail(file, f"{UNABLE_TO_READ} ({exc})")
                continue
            file_complete(file, produced)
        for name, reason in reader.skipped:
            failures.append(reason)
            file = _file_named(dataset, _part_name(dataset, name, several))
            if file.status != FileStatus.PROCESSED:
                file_fail(file, f"{UNABLE_TO_READ} ({reason})")
    except (UnreadableDataset, archive.ArchiveError) as exc:
        _dataset_fail(dataset, f"{UNABLE_TO_READ} ({exc})", str(exc))
        return
    except Exception:
        log.exception("data set %s of batch %s failed", dataset.pk, batch.pk)
        _dataset_fail(dataset, INTERNAL_ERROR, INTERNAL_ERROR)
        return
    with transaction.atomic():
        dataset = BatchDataset.objects.select_for_update().get(pk=dataset.pk)
        # A data set with a part that failed stays FAILED, so that a retry runs it again (skipping what converted).
        dataset.status = DatasetStatus.FAILED if failures else DatasetStatus.DONE
        dataset.message = "; ".join(failures) or None
        dataset.finished_at = timezone.now()
        dataset.save(update_fields=["status", "message", "finished_at"])
        _batch_finish_if_done(dataset.batch_id)


def file_complete(file: File, produced: outputs.Produced) -> File:
    """Mark a file processed with what `outputs.produce` made; attach fields, pool assets, record catalogs and
    emit its origin's finished event, in one transaction."""
    with transaction.atomic():
        file = File.objects.select_for_update().select_related("core_user").get(pk=file.pk)
        produced.apply(file)
        file.machine_ids = links.pool_assets(file, produced.table)
        links.record_catalogs(file, produced.table)
        file.status = FileStatus.PROCESSED
        file.status_message = None
        file.save()
        links.attach_fields(file, produced.summary)
        event_emit(
            type=FINISHED_EVENTS[file.origin],
            core_user=file.core_user,
            payload=_file_event_payload(file),
        )
        file_processed.send(sender=File, file=file)
    return file


def _file_event_payload(file: File, message: str | None = None) -> dict:
    payload = {"fileId": str(file.pk)}
    if file.batch_id:
        payload["batchId"] = str(file.batch_id)
    if message:
        payload["message"] = message
    return payload


def _file_fail(file: File, message: str) -> None:
    """Inside a transaction: the file fails with `message` and its origin's failed event."""
    file.status = FileStatus.FAILED
    file.status_message = message
    file.save(update_fields=["status", "status_message", "updated_time"])
    event_emit(type=FAILED_EVENTS[file.origin], core_user=file.core_user, payload=_file_event_payload(file, message))


def file_fail(file: File, message: str) -> None:
    """Fail one file (merge, crop...) in its own transaction."""
    with transaction.atomic():
        _file_fail(File.objects.select_for_update().select_related("core_user").get(pk=file.pk), message)


def _dataset_fail(dataset: BatchDataset, file_message: str, reason: str) -> None:
    with transaction.atomic():
        dataset = BatchDataset.objects.select_for_update().get(pk=dataset.pk)
        dataset.status = DatasetStatus.FAILED
        dataset.message = reason
        dataset.finished_at = timezone.now()
        dataset.save(update_fields=["status", "message", "finished_at"])
        for file in dataset.files.select_related("core_user").exclude(status=FileStatus.PROCESSED):
            _file_fail(file, file_message)
        _batch_finish_if_done(dataset.batch_id)


# --- finishing a batch ------------------------------------------------------------------------------


def _batch_finish_if_done(batch_id) -> None:
    """Inside a transaction: finish the batch when none of its data sets is still pending or processing."""
    batch = Batch.objects.select_for_update().get(pk=batch_id)
    if batch.status != BatchStatus.RECEIVED:
        return
    if batch.datasets.filter(status__in=[DatasetStatus.PENDING, DatasetStatus.PROCESSING]).exists():
        return
    _batch_finish(batch)


def _batch_finish(batch: Batch) -> None:
    files = File.objects.filter(batch=batch)
    if files.filter(status=FileStatus.PROCESSED).exists():
        batch.status, batch.status_details, batch.failure_reason = BatchStatus.PROCESSED, None, None
    else:
        failed = list(batch.datasets.exclude(status=DatasetStatus.DONE).values_list("supported", "message"))
        internal = failed and all(supported and message == INTERNAL_ERROR for supported, message in failed)
        batch.status = BatchStatus.FAILED
        batch.status_details = INTERNAL_ERROR if internal else UNABLE_TO_READ
        batch.failure_reason = "; ".join(sorted({m for _, m in failed if m})) or None
    _batch_end(batch)


def _batch_end(batch: Batch) -> None:
    """Inside a transaction: record the batch's final status, announce it, drop its work folder after commit."""
    batch.finished_at = timezone.now()
    batch.save(update_fields=["status", "status_details", "failure_reason", "finished_at"])
    event_emit(
        type=EventType.BATCH_UPLOAD_PROCESSING_FINISHED,
        core_user=batch.core_user,
        payload={"batchId": str(batch.pk), "status": batch.status},
    )
    transaction.on_commit(lambda: storage.remove_work_dir(batch.pk))


def _batch_fail(batch: Batch, details: str, reason: str) -> None:
    with transaction.atomic():
        batch = Batch.objects.select_for_update().select_related("core_user").get(pk=batch.pk)
        if batch.status != BatchStatus.RECEIVED:
            return
        batch.status, batch.status_details, batch.failure_reason = BatchStatus.FAILED, details, reason
        _batch_end(batch)


# --- retry and sweep --------------------------------------------------------------------------------


@transaction.atomic
def batch_retry(*, batch: Batch) -> Batch:
    """Send the failed data sets round again (a batch that failed before any was found is opened again);
    converted files stay unchanged. The batch is RECEIVED until they end again."""
    batch = Batch.objects.select_for_update().get(pk=batch.pk)
    if batch.status == BatchStatus.RECEIVED:
        raise ConflictError(
            "The batch is still being processed; retry it once it has ended.", error_key="batchProcessing"
        )
    failed = list(batch.datasets.filter(status=DatasetStatus.FAILED, supported=True))
    opened_before = batch.datasets.exists()
    if opened_before and not failed:
        return batch
    batch.status, batch.status_details, batch.failure_reason, batch.finished_at = BatchStatus.RECEIVED, None, None, None
    batch.save(update_fields=["status", "status_details", "failure_reason", "finished_at"])
    if not opened_before:
        batch.attempts = 0
        batch.save(update_fields=["attempts"])
        _enqueue(_tasks().batch_open, str(batch.pk))
        return batch
    for dataset in failed:
        dataset.status, dataset.message, dataset.attempts, dataset.finished_at = DatasetStatus.PENDING, None, 0, None
        dataset.save(update_fields=["status", "message", "attempts", "finished_at"])
        dataset.files.exclude(status=FileStatus.PROCESSED).update(
            status=FileStatus.PROCESSING, status_message=None, updated_time=timezone.now()
        )
        _enqueue(_tasks().dataset_convert, dataset.pk)
    return batch


def conversion_sweep() -> dict[str, int]:
    """Re-send batches and data sets that stayed in flight too long (their worker died), or fail them with a
    reason after CONVERSION_MAX_ATTEMPTS; also fail lone files (merge, crop) stuck in processing."""
    limit = timezone.now() - timedelta(seconds=settings.CONVERSION_STUCK_AFTER_SECONDS)
    counts = {"resent": 0, "failed": 0}
    stuck_batches = Batch.objects.filter(status=BatchStatus.RECEIVED, datasets__isnull=True).filter(
        upload_timestamp__lt=limit
    )
    for batch in stuck_batches:
        if batch.started_at and batch.started_at >= limit:
            continue
        if batch.attempts >= settings.CONVERSION_MAX_ATTEMPTS:
            _batch_fail(batch, INTERNAL_ERROR, STUCK_MESSAGE.format(attempts=batch.attempts))
            counts["failed"] += 1
        else:
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
    # Merged and cropped files; automerged ones belong to their operation (operations' sweep). `updated_time`, not
    # `created_time`: a file made processing again (a retry) is judged from then.
    lone = File.objects.filter(status=FileStatus.PROCESSING, dataset__isnull=True, updated_time__lt=limit).exclude(
        origin=FileOrigin.AUTOMERGED
    )
    for file in lone.select_related("core_user"):
        file_fail(file, f"{INTERNAL_ERROR} (processing did not finish in time)")
        counts["failed"] += 1
    return counts


# --- reading ----------------------------------------------------------------------------------------


def batch_file_ids(batch: Batch) -> list[str]:
    return [
        str(i)
        for i in File.objects.filter(batch=batch).order_by("dataset__position", "part").values_list("id", flat=True)
    ]


def batch_status(batch: Batch) -> dict:
    """`GET /batch/{id}/status`: converted, processing and failed files (failed with the step and message)."""
    converted, processing, failed = [], [], []
    for file in File.objects.filter(batch=batch).order_by("dataset__position", "part"):
        if file.status == FileStatus.PROCESSED:
            converted.append(str(file.pk))
        elif file.status == FileStatus.PROCESSING:
            processing.append(str(file.pk))
        else:
            step = next((s for s, v in (file.steps or {}).items() if v.get("status") == "failed"), "read")
            failed.append({"id": str(file.pk), "step": step, "message": file.status_message})
    return {"converted": converted, "processing": processing, "failed": failed}


def batch_progress(batch: Batch) -> dict:
    """The batch and its files for a live status page (magic link upload)."""
    batch.refresh_from_db()
    files = File.objects.filter(batch=batch).order_by("dataset__position", "part")
    return {
        "id": str(batch.pk),
        "status": batch.status,
        "statusDetails": batch.status_details,
        "files": [
            {"id": str(f.pk), "fileName": f.file_name, "status": f.status, "message": f.status_message} for f in files
        ],
    }
