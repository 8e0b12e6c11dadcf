"""Grouping processed files into operations, building an operation's automerged file and recording the fields it
covers (`coverage`), and the sweep of stuck work (supplement "Operations"); cropping is `crop`.

Flow: conversion sends `file_processed` inside the transaction that finishes a file; `on_file_processed` enqueues
`operation_file_group` after commit. Grouping (serialised per core user) puts the file into the operation of the
same core user and operation type that shares a field with it and whose files all started within the window of
the file's start (5 days; 21 for harvested), or creates one; either way the operation's version grows and
`operation_build` rebuilds its automerged file (`tables_merge` of the files' points) through conversion's derived
file completion (events automergedFileProcessingFinished / Failed), then records the fields it covers with their
coverage and emits operationProcessingFinished.

Only files of origin `uploaded` and `provider` are grouped: merged, automerged and cropped files are made from
them and would count their points twice.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from conversion import merging, outputs
from conversion import services as conversion
from conversion.links import linked_file_ids
from conversion.merge import tables_merge
from conversion.models import DISK_FAILED, INTERNAL_ERROR, BatchStatus, File, FileOrigin, FileStatus, OperationType
from fields.models import FieldFile
from platform_site.accounts.services import core_user_lock
from platform_site.celery import send_on_commit
from platform_site.db import session_lock, uuid_lock_key
from webhooks.models import EventType
from webhooks.services import event_emit

from ..models import Operation, OperationCrop
from .coverage import fields_record

log = logging.getLogger(__name__)

GROUPED_ORIGINS = (FileOrigin.UPLOADED, FileOrigin.PROVIDER)
WINDOW_DAYS = 5
HARVEST_WINDOW_DAYS = 21
AUTOMERGED_FORMAT = "AUTOMERGED"
UNGROUPED_HORIZON = timedelta(days=7)
BUILD_LOCK_CLASS = 0x0B17  # the key space of operation build locks (two-int advisory locks)
BUILD_LOCK_WAIT_SECONDS = 300
DISK_REBUILT = "it is built again automatically"  # what happens to a build that failed on the disk (the sweep)


def operation_window(operation_type: str) -> timedelta:
    """How far apart the start times of one operation's files may be."""
    return timedelta(days=HARVEST_WINDOW_DAYS if operation_type == OperationType.HARVESTED else WINDOW_DAYS)


def _tasks():
    from .. import tasks  # tasks import this module

    return tasks


def on_file_processed(sender, file: File, **kwargs) -> None:
    """`conversion.signals.file_processed` receiver: group the file after commit (a task)."""
    if file.origin not in GROUPED_ORIGINS:
        return
    file_id = str(file.pk)
    send_on_commit(_tasks().operation_file_group, file_id)


def on_batch_ended(sender, batch, **kwargs) -> None:
    """`conversion.signals.batch_ended` receiver: after commit, the builds put off while the batch was converted
    (`operation_batch_builds`)."""
    send_on_commit(_tasks().operation_batch_builds, str(batch.pk))


# An operation a file of which belongs to a batch still being converted. Its build is put off until that batch ends
# (`operation_batch_builds`), and the sweep leaves it alone meanwhile: each file of a batch that joined the operation
# rebuilt it from all its files, so a task data file of eight tasks on one field took twice as long with its field
# as without.
WAITS_FOR_A_BATCH = Q(files__batch__status=BatchStatus.RECEIVED)


def _waits_for_a_batch(operation: Operation) -> bool:
    return Operation.objects.filter(WAITS_FOR_A_BATCH, pk=operation.pk).exists()


def operation_batch_builds(batch_id: str) -> int:
    """Send the build of every operation holding a file of the batch that waits for one (their builds were put off
    while the batch was converted: `_waits_for_a_batch`), as `_operation_build` tells: not built at its version, or
    its automerged file reopened (the sweep's rebuild after a full disk keeps the version); how many. Run after the
    batch ended was committed: a file that joins an operation later sends its build itself, which then finds the
    batch ended."""
    waiting = Q(built_version__lt=F("version")) | Q(merged_file__status=FileStatus.PROCESSING)
    outdated = Operation.objects.filter(waiting, files__batch_id=batch_id).distinct()
    operations = list(outdated.only("pk", "version"))
    for operation in operations:
        _enqueue_build(operation)
    return len(operations)


def _file_field_ids(file_ids: list[str]) -> set[str]:
    return set(FieldFile.objects.filter(file_id__in=[str(i) for i in file_ids]).values_list("field_id", flat=True))


def _moved(moment: datetime, delta: timedelta) -> datetime:
    """`moment + delta`, held within the years 1 to 9999: a file of the first or last days of those has a window
    reaching past them (Python's OverflowError failed its grouping)."""
    try:
        return moment + delta
    except OverflowError:
        return (datetime.max if delta > timedelta(0) else datetime.min).replace(tzinfo=moment.tzinfo)


def _candidate(file: File, field_ids: set[str]) -> Operation | None:
    """The operation the file belongs to: same core user and type, a shared field, every start in the window."""
    window = operation_window(file.operation_type)
    candidates = Operation.objects.filter(
        core_user_id=file.core_user_id,
        operation_type=file.operation_type,
        start_time__gte=_moved(file.start_time, -window),
        start_time__lte=_moved(file.start_time, window),
    ).order_by("created_time", "pk")
    for operation in candidates:
        members = list(operation.files.values_list("pk", "start_time"))
        starts = [s for _, s in members if s is not None] + [file.start_time]
        if max(starts) - min(starts) > window:
            continue
        if field_ids & _file_field_ids([str(pk) for pk, _ in members]):
            return operation
    return None


def operation_file_group(file_id: str) -> Operation | None:
    """Put a processed file into its operation (creating it when none fits) and enqueue the rebuild. Idempotent:
    a file already in an operation only re-enqueues that operation's build when it is not built yet."""
    with transaction.atomic():
        file = File.objects.select_related("core_user").filter(pk=file_id).first()
        if file is None or file.status != FileStatus.PROCESSED or file.origin not in GROUPED_ORIGINS:
            return None
        if not file.operation_type or file.start_time is None:
            return None
        # One grouping at a time per core user: two files of one operation must not create two operations.
        core_user_lock(file.core_user_id)
        current = file.operations.first()
        if current is not None:
            if current.built_version < current.version:
                _enqueue_build(current)
            return current
        field_ids = _file_field_ids([file.pk])
        if not field_ids:
            return None  # an operation groups files per field: a file on no field forms none
        operation = _candidate(file, field_ids)
        created = operation is None
        now = timezone.now()
        if created:
            operation = Operation.objects.create(
                core_user=file.core_user,
                operation_type=file.operation_type,
                provider=file.provider,
                start_time=file.start_time,
                end_time=file.end_time,
                created_time=now,
                updated_time=now,
            )
            operation.merged_file = File.objects.create(
                core_user=file.core_user,
                file_name=f"Operation {operation.pk}",
                file_format=AUTOMERGED_FORMAT,
                provider=file.provider,
                origin=FileOrigin.AUTOMERGED,
                operation_type=file.operation_type,
                status=FileStatus.PROCESSING,
            )
        else:
            operation = Operation.objects.select_for_update().get(pk=operation.pk)
            operation.version += 1
            operation.sweep_attempts = 0
            operation.start_time = min(t for t in (operation.start_time, file.start_time) if t is not None)
            operation.end_time = max((t for t in (operation.end_time, file.end_time) if t is not None), default=None)
        operation.status = Operation.Status.PROCESSING
        operation.updated_time = now
        operation.save()
        operation.files.add(file)
        merged = operation.merged_file
        merged.sources.add(file)
        _merged_file_reopen(merged, now)
        event_emit(
            type=EventType.OPERATION_CREATED if created else EventType.OPERATION_UPDATED,
            core_user=file.core_user,
            payload={"operationId": str(operation.pk), "sourceFileId": str(file.pk), "coreFileId": str(merged.pk)},
        )
        _enqueue_build(operation)
    return operation


def _merged_file_reopen(merged: File, now) -> None:
    """The automerged file is being (re)built: processing, no message, no steps done (its build is enqueued after
    commit); its status showed every step of the earlier build processed."""
    File.objects.filter(pk=merged.pk).update(
        status=FileStatus.PROCESSING, status_message=None, steps={}, updated_time=now
    )


def _enqueue_build(operation: Operation) -> None:
    operation_id, version = str(operation.pk), operation.version
    send_on_commit(_tasks().operation_build, operation_id, version)


def _merged_points(operation: Operation):
    files = list(operation.files.filter(status=FileStatus.PROCESSED).order_by("start_time", "created_time", "pk"))
    if not files:
        raise ValueError("the operation has no processed file left")
    return tables_merge([outputs.load_points(f) for f in files], name=f"Operation {operation.pk}")


def _build_lock(operation_id: str):
    """One build of an operation at a time (a context manager). Builds write the automerged file's outputs in place
    before they learn whether they are still wanted: an outdated build finishing after a newer one overwrote its
    stored points, GeoJSON and images (the record kept the newer summary). A session lock, waited for up to
    BUILD_LOCK_WAIT_SECONDS (then the task is sent again, `DatabaseRetryTask`); it goes with a dead worker's
    connection. SQLite serialises writers and runs tasks one at a time: nothing to hold."""
    return session_lock(BUILD_LOCK_CLASS, uuid_lock_key(operation_id), wait_seconds=BUILD_LOCK_WAIT_SECONDS)


def operation_build(operation_id: str, version: int | None = None) -> Operation | None:
    """Rebuild the automerged file of an operation from its files, then its fields and coverage. Idempotent: an
    operation already built at its current version is left alone, and an outdated task (the operation changed
    since it was enqueued) leaves the work to the newer one. Builds of one operation run one at a time."""
    with _build_lock(operation_id):
        return _operation_build(operation_id, version)


def _operation_build(operation_id: str, version: int | None) -> Operation | None:
    operation = Operation.objects.select_related("merged_file", "core_user").filter(pk=operation_id).first()
    if operation is None or operation.merged_file is None:
        return None
    if version is not None and version < operation.version:
        return None
    if operation.built_version >= operation.version and operation.merged_file.status != FileStatus.PROCESSING:
        return operation
    if _waits_for_a_batch(operation):
        return None  # built when the batch ends (`operation_batch_builds`), with every file of it that joins
    version = operation.version

    def still_current() -> bool:
        # The grouping's lock order (core user, then operation): a file joining meanwhile waits or wins.
        core_user_lock(operation.core_user_id)
        return Operation.objects.select_for_update().filter(pk=operation.pk, version=version).exists()

    with transaction.atomic():
        merged = merging.file_derive_complete(
            operation.merged_file_id,
            lambda _file: _merged_points(operation),
            guard=still_current,
            disk_then=DISK_REBUILT,
        )
        if merged is None:
            return None  # a file joined meanwhile (its build is queued) or another task finished this one
        operation = Operation.objects.select_for_update().select_related("core_user").get(pk=operation.pk)
        operation.built_version = version
        operation.updated_time = timezone.now()
        _waiting_resend(operation)
        if merged.status != FileStatus.PROCESSED:
            operation.status = Operation.Status.FAILED
            operation.save(update_fields=["built_version", "updated_time", "status"])
            return operation
        operation.status = Operation.Status.PROCESSED
        operation.start_time, operation.end_time = merged.start_time, merged.end_time
        operation.save(update_fields=["built_version", "updated_time", "status", "start_time", "end_time"])
        fields_record(operation, merged)
        event_emit(
            type=EventType.OPERATION_PROCESSING_FINISHED,
            core_user=operation.core_user,
            payload={"operationId": str(operation.pk), "coreFileId": str(merged.pk)},
        )
    return operation


def _waiting_resend(operation: Operation) -> None:
    """After a build: send again the crops of the operation and the merges of its automerged file (POST
    /files/merge) that waited for it (they fail if the build did)."""
    waiting = OperationCrop.objects.filter(operation=operation, file__status=FileStatus.PROCESSING)
    for crop_id in waiting.values_list("pk", flat=True):
        send_on_commit(_tasks().operation_crop_process, str(crop_id))
    merges = File.objects.filter(
        origin=FileOrigin.MERGED,
        status=FileStatus.PROCESSING,
        sources=operation.merged_file_id,
        operation_crop__isnull=True,
    )
    for file_id in merges.values_list("pk", flat=True):
        merging.merge_send(file_id)


def _sweep_lock(operation_id, status: str, limit: datetime) -> Operation | None:
    """The operation, locked with its automerged file read, if it is still `status` and untouched since `limit`
    (another sweep may have taken it meanwhile)."""
    return (
        Operation.objects.select_for_update(of=("self",))
        .select_related("merged_file")
        .filter(pk=operation_id, status=status, updated_time__lt=limit)
        .first()
    )


def _sweep_rebuild(operation: Operation, now) -> None:
    """The sweep's re-send of a build, counted as an attempt: the operation processing, its automerged file too."""
    if operation.merged_file.status != FileStatus.PROCESSING:
        _merged_file_reopen(operation.merged_file, now)
    operation.status = Operation.Status.PROCESSING
    operation.sweep_attempts += 1
    operation.updated_time = now
    operation.save(update_fields=["status", "sweep_attempts", "updated_time"])
    _enqueue_build(operation)


def operations_sweep(*, limit: datetime | None = None) -> dict[str, int]:
    """Re-send the build of operations left processing longer than CONVERSION_STUCK_AFTER_SECONDS (its task was
    lost or its worker died), or, after CONVERSION_MAX_ATTEMPTS re-sends, fail the operation and its automerged
    file with a reason. An automerged file failed while its operation still waits is made processing again. An
    operation whose build failed on the server's disk (`DISK_FAILED`: full...) that long ago is built again, as many
    times at most: nothing else would (its files did nothing wrong, and no client can ask for it). Crops
    left processing that long are sent again, or failed after as many re-sends. Group again the processed files on
    a field that are in no operation that long after their processing. That long: untouched since `limit` (default
    CONVERSION_STUCK_AFTER_SECONDS ago; see `conversion.services.conversion_sweep`)."""
    now = timezone.now()
    limit = conversion.stuck_limit(limit)
    counts = {"resent": 0, "failed": 0, "grouped": 0}
    # (one waiting for a batch is built when the batch ends; the conversion sweep ends a stuck batch)
    stuck = Operation.objects.filter(status=Operation.Status.PROCESSING, updated_time__lt=limit).exclude(
        WAITS_FOR_A_BATCH
    )
    for operation_id in stuck.values_list("pk", flat=True):
        with transaction.atomic():
            operation = _sweep_lock(operation_id, Operation.Status.PROCESSING, limit)
            if operation is None or operation.merged_file is None:
                continue
            merged = operation.merged_file
            if operation.sweep_attempts >= settings.CONVERSION_MAX_ATTEMPTS:
                if merged.status == FileStatus.PROCESSING:
                    conversion.file_fail(merged, f"{INTERNAL_ERROR} (the operation was not built in time)")
                operation.status = Operation.Status.FAILED
                operation.updated_time = now
                operation.save(update_fields=["status", "updated_time"])
                _waiting_resend(operation)  # the crops that waited for the build fail now, with a reason
                counts["failed"] += 1
                continue
            _sweep_rebuild(operation, now)
            counts["resent"] += 1
    disk_failed = Operation.objects.filter(
        status=Operation.Status.FAILED,
        updated_time__lt=limit,
        sweep_attempts__lt=settings.CONVERSION_MAX_ATTEMPTS,
        merged_file__status=FileStatus.FAILED,
        merged_file__status_message__startswith=DISK_FAILED,
    )
    for operation_id in disk_failed.values_list("pk", flat=True):
        with transaction.atomic():
            operation = _sweep_lock(operation_id, Operation.Status.FAILED, limit)
            if operation is None or operation.merged_file.status != FileStatus.FAILED:
                continue
            _sweep_rebuild(operation, now)
            counts["resent"] += 1
    # Crops whose task was lost (the broker down when it was sent, or its worker died). A crop waiting for its
    # operation's rebuild is left to it: the build sends it again when it ends (`_waiting_resend`).
    crops = (
        OperationCrop.objects.filter(file__status=FileStatus.PROCESSING, file__updated_time__lt=limit)
        .exclude(source_file__status=FileStatus.PROCESSING)
        .select_related("file__core_user")
    )
    for crop in crops:
        send = partial(_tasks().operation_crop_process.delay, str(crop.pk))
        outcome = conversion.derived_file_sweep(crop.file, send)
        if outcome:
            counts[outcome] += 1
    # Files that never joined an operation: their grouping task was lost (the broker was down when it was sent,
    # or restarted without its queue). Looked for among the files processed within UNGROUPED_HORIZON.
    ungrouped = (
        File.objects.filter(
            status=FileStatus.PROCESSED,
            origin__in=GROUPED_ORIGINS,
            start_time__isnull=False,
            updated_time__lt=limit,
            updated_time__gte=now - UNGROUPED_HORIZON,
            operations__isnull=True,
            pk__in=linked_file_ids(),
        )
        .exclude(operation_type="")
        .exclude(operation_type__isnull=True)
    )
    for file_id in ungrouped.values_list("pk", flat=True):
        _tasks().operation_file_group.delay(str(file_id))
        counts["grouped"] += 1
    return counts
