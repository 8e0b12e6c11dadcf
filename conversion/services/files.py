"""The files of a batch: each data set's files (one per operation, stable across retries), and a file's end,
processed or failed, with its origin's event."""

from __future__ import annotations

from django.db import transaction
from django.db.models import Max

from platform_site.accounts.services import core_user_lock
from platform_site.text import fit, storable
from webhooks.models import EventType
from webhooks.services import event_emit

from .. import archive, links, outputs, storage
from ..models import DISK_FAILED, INTERNAL_ERROR, BatchDataset, DatasetStatus, File, FileOrigin, FileStatus
from ..signals import file_processed

NAME_LENGTH = File._meta.get_field("file_name").max_length
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


def internal_error(exc: BaseException, *, then: str = "retry once it is fixed") -> str:
    """The internal error text of a failure that is ours, not the data's; with the cause and what `then` happens when
    it is the server's disk (`DISK_FAILED`: full, read-only, failing). A retry once there is room converts it."""
    if archive.disk_failure(exc):
        return f"{DISK_FAILED}{exc.strerror}; {then})"
    return INTERNAL_ERROR


def _new_file_fields(dataset: BatchDataset, file_format: str, name: str) -> dict:
    batch = dataset.batch
    return {
        "core_user_id": batch.core_user_id,
        "batch": batch,
        "file_name": fit(name, NAME_LENGTH),
        "file_format": file_format,
        "provider": batch.provider,
        "origin": FileOrigin.UPLOADED,
    }


def _file_for(dataset: BatchDataset, file_format: str, name: str) -> File:
    """The placeholder file of a data set, created when the batch is opened (part 0)."""
    file, _ = File.objects.get_or_create(dataset=dataset, part=0, defaults=_new_file_fields(dataset, file_format, name))
    return file


def _part_name(dataset: BatchDataset, part_name: str | None, several: bool) -> str:
    return fit(f"{dataset.name}/{part_name}" if several and part_name else dataset.name, NAME_LENGTH)


def _file_named(dataset: BatchDataset, name: str) -> File | None:
    """The data set's file for one of its operations, found by name (stable across retries): the placeholder
    is taken by the first operation, the others get files of their own. None once the data set is no longer
    processing (ended by another run of it, or deleted): no file is made that nothing would end."""
    with transaction.atomic():
        running = BatchDataset.objects.select_for_update().filter(pk=dataset.pk, status=DatasetStatus.PROCESSING)
        if running.only("pk").first() is None:
            return None
        files = File.objects.select_for_update().filter(dataset=dataset).order_by("part")
        file = files.filter(file_name=name).first()
        if file is not None:
            return file
        placeholder = files.filter(part=0, file_name=fit(dataset.name, NAME_LENGTH))
        placeholder = placeholder.exclude(status=FileStatus.PROCESSED).first()
        if placeholder is not None:
            placeholder.file_name = name
            placeholder.save(update_fields=["file_name", "updated_time"])
            return placeholder
        return File.objects.create(
            dataset=dataset,
            part=(files.aggregate(m=Max("part"))["m"] or 0) + 1,
            **_new_file_fields(dataset, dataset.format, name),
        )


def file_complete(file: File, produced: outputs.Produced) -> File:
    """Mark a file processed with what `outputs.produce` made (its warnings those of the table produced, replacing
    any earlier ones); attach fields, pool assets, record catalogs and emit its origin's finished event, in one
    transaction. A file that is no longer processing (another run of its data set, a task sent twice, completed it;
    or it failed meanwhile) is answered as it is: no event, no rewrite."""
    with transaction.atomic():
        # Its user's other derived writes (pooling, merges, builds) queue here (`core_user_lock`); a change of the
        # user's fields, farms or machines (which keeps the user, `core_user_keep`) does not wait for the file. The
        # user before the file, as those writes and the user's deletion take them (the file locked first waited
        # at the deletion's gate while the deletion waited for the file: a deadlock). Deleted meanwhile, with the
        # file: File.DoesNotExist, as for a file deleted before.
        core_user_lock(file.core_user_id)
        file = File.objects.select_for_update(of=("self",)).select_related("core_user").get(pk=file.pk)
        if file.status != FileStatus.PROCESSING:
            return file
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
    payload = {"coreFileId": str(file.pk)}
    if file.batch_id:
        payload["batchId"] = str(file.batch_id)
    if message:
        payload["message"] = message
    return payload


def _file_fail(file: File, message: str, operation_type: str | None = None) -> None:
    """Inside a transaction: the file fails with `message` (and the `operation_type` its points were read as, if
    known) and its origin's failed event. The message is cleaned of what no database stores (NUL...): it may quote
    the file. The warnings of an earlier build (an automerged file rebuilt) go: they spoke of outputs no longer
    served."""
    message = storable(message)
    file.status = FileStatus.FAILED
    file.status_message = message
    file.warnings = []
    update_fields = ["status", "status_message", "warnings", "updated_time"]
    if operation_type:
        file.operation_type = operation_type
        update_fields.append("operation_type")
    file.save(update_fields=update_fields)
    event_emit(type=FAILED_EVENTS[file.origin], core_user=file.core_user, payload=_file_event_payload(file, message))
    file_id = file.pk
    transaction.on_commit(lambda: file_outputs_remove_if_failed(file_id), robust=True)


def file_outputs_remove_if_failed(file_id) -> None:
    """Remove a failed file's outputs (`files/<id>/`: its points, GeoJSON, images), nothing of which is served for
    a failed file: a failed conversion kept tens of megabytes for ever (and a full disk stayed full). The bytes its
    retry needs stay: the upload and the data set's zip (`originalFile`). Under the file's lock, and only while it
    is still failed: a retry making it processing meanwhile waits, then writes its outputs anew."""
    with transaction.atomic():
        if File.objects.select_for_update().filter(pk=file_id, status=FileStatus.FAILED).exists():
            storage.delete_tree(storage.file_prefix(file_id))


def file_fail(file: File, message: str, operation_type: str | None = None) -> None:
    """Fail one file (merge, crop...) in its own transaction. A file that ended meanwhile (processed or failed by
    another run of its data set) is left as it is: no second event."""
    with transaction.atomic():
        file = File.objects.select_for_update().select_related("core_user").get(pk=file.pk)
        if file.status == FileStatus.PROCESSING:
            _file_fail(file, message, operation_type)
