"""Batches: receiving an upload, opening it into data sets and their files, finishing, and reading its state."""

from __future__ import annotations

import logging
import os
from pathlib import Path

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from assets.models import Provider
from platform_site.accounts.models import CoreUser
from platform_site.accounts.services import core_user_lock
from platform_site.api import idempotency
from platform_site.api.errors import NOT_FOUND, InsufficientStorage, NotFoundError, storage_full
from platform_site.celery import send_on_commit
from platform_site.text import fit, storable
from webhooks.models import EventType
from webhooks.services import event_emit

from .. import archive, storage
from ..models import (
    INTERNAL_ERROR,
    NO_VALID_FILES,
    UNABLE_TO_READ,
    Batch,
    BatchDataset,
    BatchStatus,
    DatasetStatus,
    File,
    FileStatus,
    UploadKey,
)
from ..signals import batch_ended
from .files import NAME_LENGTH, _file_fail, _file_for

log = logging.getLogger(__name__)


def _tasks():
    from .. import tasks  # tasks import this package

    return tasks


# --- upload -----------------------------------------------------------------------------------------


def _upload_file_name(upload) -> str:
    return os.path.basename(upload.name or "upload.zip")[:255] or "upload.zip"


def batch_receive(*, core_user: CoreUser, provider: str, upload, key: str | None = None) -> Batch:
    """Store a streamed zip (`conversion.uploads.ZipUploadHandler` checked its size and signature) as a
    RECEIVED batch and enqueue its opening after commit. `key`, an upload's `Idempotency-Key`, is kept with the
    batch (an IntegrityError when an upload of the owner has it: see `batch_receive_once`)."""
    if provider not in Provider.values:
        raise ValueError(f"unknown provider {provider!r}")
    batch = Batch(
        core_user=core_user,
        provider=provider,
        file_name=_upload_file_name(upload),
        size=upload.size,
        attempts=1,  # an attempt is a send of the opening task (the sweep counts its re-sends)
    )
    try:
        batch.upload.save(f"{batch.id}.zip", upload, save=False)
        with transaction.atomic():
            # The user was found before the body streamed in; deleted meanwhile, the upload is a 404 (and its
            # stored zip is removed), not a foreign-key violation at commit. Locked, it cannot go until we commit.
            if not core_user_lock(core_user.pk):
                raise NotFoundError(NOT_FOUND)
            batch.save(force_insert=True)
            if key is not None:
                # An expired row of the key is replaced: the key names a new upload.
                expired = UploadKey.objects.filter(created_time__lt=idempotency.key_horizon())
                expired.filter(owner_id=core_user.owner_id, key=key).delete()
                UploadKey.objects.create(owner_id=core_user.owner_id, key=key, batch=batch)
            send_on_commit(_tasks().batch_open, str(batch.id))
    except BaseException as exc:
        # Not when the batch committed and what failed came after (a commit hook): the zip is its data.
        if not Batch.objects.filter(pk=batch.pk).exists():
            batch.upload.delete(save=False)
        if storage_full(exc):  # the disk or the database is full: nothing was kept, try again later (507)
            raise InsufficientStorage() from exc
        raise
    return batch


# How long an upload's `Idempotency-Key` answers its batch: as long as other requests' keys.
UPLOAD_KEY_LIFETIME = idempotency.KEY_LIFETIME


class UploadKeyReused(idempotency.IdempotencyKeyReused):
    """A retry (same `Idempotency-Key`) asking for another upload than the one the key made (RFC draft
    "The Idempotency-Key HTTP Header Field", 422)."""


def batch_of_key(*, owner, key: str) -> Batch | None:
    """The batch an upload of `owner` sent with `Idempotency-Key: key` made in the last UPLOAD_KEY_LIFETIME."""
    kept = UploadKey.objects.filter(created_time__gte=idempotency.key_horizon())
    row = kept.select_related("batch").filter(owner=owner, key=key).first()
    return row.batch if row else None


def batch_replayed(batch: Batch, *, core_user: CoreUser, provider: str, upload=None) -> Batch:
    """`batch`, the answer to a retry of its upload, when the retry asks for the same: the core user and the
    provider, and the file's name and size when its body was read. 422 `idempotencyKeyReused` otherwise: a
    client that reuses a key for another upload would lose that upload."""
    differing = [
        name
        for name, same in (
            ("coreUserId", batch.core_user_id == core_user.pk),
            ("provider", batch.provider == provider),
            ("file", upload is None or (batch.file_name, batch.size) == (_upload_file_name(upload), upload.size)),
        )
        if not same
    ]
    if differing:
        raise UploadKeyReused(
            f"This Idempotency-Key was sent with another upload (batch {batch.pk}) in the last "
            f"{idempotency.KEY_LIFETIME_TEXT}, which differs in {', '.join(differing)}. "
            "Send a new key with each new upload, and the same key only to retry one.",
            field_errors=[
                {"field": name, "message": "Differs from the upload of this Idempotency-Key."} for name in differing
            ],
        )
    return batch


def batch_receive_once(*, core_user: CoreUser, provider: str, upload, key: str) -> tuple[Batch, bool]:
    """`batch_receive` for an upload sent with an `Idempotency-Key`: (its new batch, True), or (the batch an
    upload with that key made, False), the zip just streamed then not kept. Two uploads of one key at
    once make one batch: the second to commit meets the first's key (`uploadkey_unique_per_owner`)."""
    earlier = batch_of_key(owner=core_user.owner_id, key=key)
    if earlier is None:
        try:
            return batch_receive(core_user=core_user, provider=provider, upload=upload, key=key), True
        except IntegrityError:
            earlier = batch_of_key(owner=core_user.owner_id, key=key)
            if earlier is None:  # another constraint
                raise
    return batch_replayed(earlier, core_user=core_user, provider=provider, upload=upload), False


# --- opening a batch --------------------------------------------------------------------------------


def ensure_extracted(batch: Batch) -> Path:
    """The batch's zip extracted in its work folder (extracted now if a previous worker's copy is gone)."""
    target = storage.batch_work_dir(batch.id)
    done = target / ".complete"
    if done.exists():
        return target / "root"
    partial = target.with_name(f"{target.name}.{os.getpid()}.{timezone.now().timestamp():.0f}")
    storage.remove_work_dir(partial.name)
    try:
        with storage.local_path(batch.upload.name) as zip_path:
            archive.safe_extract(
                zip_path,
                partial / "root",
                max_entries=settings.CONVERSION_MAX_ENTRIES,
                max_total_bytes=settings.CONVERSION_MAX_EXPANDED_BYTES,
                max_ratio=settings.CONVERSION_MAX_RATIO,
                max_depth=settings.CONVERSION_MAX_DEPTH,
                name=batch.file_name,
            )
        (partial / ".complete").touch()
    except BaseException:
        # What was written goes at once (a disk that filled up gets its room back), not with the storage sweep.
        archive.cleanup(partial)
        raise
    try:
        partial.rename(target)
    except OSError:  # another worker got there first; use its copy
        archive.cleanup(partial)
    return target / "root"


# The most incomplete data sets (a .shp without its .dbf) the failure of an archive with no data set names.
INCOMPLETE_NAMED = 3


def batch_open(batch_id: str) -> None:
    """Extract and detect; create the data sets and their files; enqueue their conversion. Idempotent."""
    with transaction.atomic():
        batch = Batch.objects.select_for_update().filter(pk=batch_id).first()
        if batch is None or batch.status != BatchStatus.RECEIVED or batch.datasets.exists():
            return
        batch.started_at = timezone.now()  # counted as an attempt when it was sent
        batch.save(update_fields=["started_at"])
    try:
        root = ensure_extracted(batch)
        found = archive.detect(root, name=batch.file_name)
    except archive.ArchiveError as exc:
        _batch_fail(batch, UNABLE_TO_READ, str(exc))
        return
    except Exception as exc:
        log.exception("batch %s could not be opened", batch.pk)
        reason = "Internal error while opening the archive"
        if archive.disk_failure(exc):  # ours, said: the upload is fine, a retry once there is room opens it
            reason += f": the server's disk failed ({exc.strerror}); retry the batch once it is fixed"
        _batch_fail(batch, INTERNAL_ERROR, reason + ".")
        return
    if not found.datasets and not found.unsupported:
        reason = "No ISOXML, shapefile or GeoJSON point data set in the archive"
        if found.incomplete:  # what came nearest, said
            reason += ": " + "; ".join(found.incomplete[:INCOMPLETE_NAMED])
        _batch_fail(batch, NO_VALID_FILES, reason + ".")
        return
    with transaction.atomic():
        batch = Batch.objects.select_for_update().filter(pk=batch.pk).first()
        if batch is None or batch.datasets.exists():  # (None: deleted with its core user while it was extracted)
            return
        position = 0
        for ds in found.datasets:
            dataset = BatchDataset.objects.create(
                batch=batch,
                position=position,
                format=ds.format,
                path=ds.path.relative_to(root).as_posix(),
                root=ds.root.relative_to(root).as_posix(),
                name=fit(ds.name, NAME_LENGTH),
            )
            _file_for(dataset, ds.format, ds.name)
            send_on_commit(_tasks().dataset_convert, dataset.pk)
            position += 1
        for unsupported in found.unsupported:
            relative = unsupported.path.relative_to(root).as_posix()
            name = storable(Path(relative).name) or batch.file_name
            dataset = BatchDataset.objects.create(
                batch=batch,
                position=position,
                format=unsupported.format_name,
                path=relative,
                root=relative,
                name=fit(name, NAME_LENGTH),
                supported=False,
                status=DatasetStatus.FAILED,
                message=(
                    f"a zip inside the upload that cannot be read: {unsupported.reason}."
                    if unsupported.reason is not None
                    else f"{unsupported.format_name} data has no open specification; it cannot be converted."
                ),
                finished_at=timezone.now(),
            )
            file = _file_for(dataset, unsupported.format_name, name)
            _file_fail(file, UNABLE_TO_READ + f" ({dataset.message})")
            position += 1
        if not found.datasets:
            _batch_finish(batch)


# --- finishing a batch ------------------------------------------------------------------------------


def _batch_finish_if_done(batch_id) -> None:
    """Inside a transaction: finish the batch when none of its data sets is still pending or processing."""
    batch = Batch.objects.select_for_update().filter(pk=batch_id).first()
    if batch is None or batch.status != BatchStatus.RECEIVED:  # (None: deleted with its core user meanwhile)
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
        # Ours when every file failed by our doing (an error, a full disk, a worker that died, the sweep's "did not
        # finish in time": their messages begin with the internal error text, the data sets' with the reason alone).
        messages = list(files.values_list("status_message", flat=True))
        internal = bool(messages) and all((message or "").startswith(INTERNAL_ERROR) for message in messages)
        batch.status = BatchStatus.FAILED
        batch.status_details = INTERNAL_ERROR if internal else UNABLE_TO_READ
        batch.failure_reason = "; ".join(sorted({m for _, m in failed if m})) or None
    _batch_end(batch)


def _batch_end(batch: Batch) -> None:
    """Inside a transaction: record the batch's final status, announce it (a failed batch with its `statusDetails`
    and reason as `message`) and to the apps above (`signals.batch_ended`), drop its work folder after commit."""
    batch.finished_at = timezone.now()
    batch.save(update_fields=["status", "status_details", "failure_reason", "finished_at"])
    payload = {"batchId": str(batch.pk), "status": batch.status}
    if batch.status == BatchStatus.FAILED:
        payload["message"] = ": ".join(part for part in (batch.status_details, batch.failure_reason) if part)
    event_emit(type=EventType.BATCH_UPLOAD_PROCESSING_FINISHED, core_user=batch.core_user, payload=payload)
    batch_ended.send(sender=Batch, batch=batch)
    transaction.on_commit(lambda: storage.remove_work_dir(batch.pk), robust=True)


def _batch_fail(batch: Batch, details: str, reason: str) -> None:
    """The batch fails with `details` (one of the spec's texts) and `reason`, cleaned of what no database stores
    (it may quote the upload)."""
    reason = storable(reason)
    with transaction.atomic():
        batch = Batch.objects.select_for_update().select_related("core_user").filter(pk=batch.pk).first()
        if batch is None or batch.status != BatchStatus.RECEIVED:  # (None: deleted with its core user meanwhile)
            return
        batch.status, batch.status_details, batch.failure_reason = BatchStatus.FAILED, details, reason
        _batch_end(batch)


# --- reading ----------------------------------------------------------------------------------------


def batch_status(batch: Batch) -> dict:
    """`GET /batch/{id}/status`: converted, processing and failed files (failed with the step and message)."""
    converted, processing, failed = [], [], []
    files = File.objects.filter(batch=batch).order_by("dataset__position", "part")
    # Only the columns answered: a file's summary and images are kilobytes of JSON each.
    for pk, status, steps, message in files.values_list("pk", "status", "steps", "status_message"):
        if status == FileStatus.PROCESSED:
            converted.append(str(pk))
        elif status == FileStatus.PROCESSING:
            processing.append(str(pk))
        else:
            step = next((s for s, v in (steps or {}).items() if v.get("status") == "failed"), "read")
            failed.append({"id": str(pk), "step": step, "message": message})
    return {"converted": converted, "processing": processing, "failed": failed}


def batch_progress(batch: Batch) -> dict:
    """The batch and its files for a live status page (magic link upload)."""
    batch.refresh_from_db()
    files = (
        File.objects.filter(batch=batch)
        .order_by("dataset__position", "part")
        .only("pk", "file_name", "status", "status_message")
    )
    return {
        "id": str(batch.pk),
        "status": batch.status,
        "statusDetails": batch.status_details,
        "files": [
            {"id": str(f.pk), "fileName": f.file_name, "status": f.status, "message": f.status_message} for f in files
        ],
    }
