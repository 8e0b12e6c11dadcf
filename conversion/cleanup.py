"""A batch's or a file's stored bytes go with its record, however the record is deleted (a core user's deletion
cascades to all of theirs): once the deletion commits, the upload, the data set zips, the work folder and the
file's outputs and images are removed from storage. Nothing is removed if the deletion rolls back.

What a task still running at that moment writes afterwards (or what a process that died between storing an upload
and recording it left) is removed later by `stray_storage_sweep`, once it is older than
CONVERSION_STUCK_AFTER_SECONDS: younger bytes may belong to a record not committed yet. The sweep also removes the
work folders that nothing else removes: a partial extraction (`<batch>.<pid>.<time>`, its worker killed or its
extraction failed) and the folder of a batch that ended (its end's removal after commit did not run)."""

import re
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from django.core.files.storage import default_storage
from django.db import transaction
from django.db.models.signals import post_delete
from django.dispatch import receiver
from django.utils import timezone

from platform_site.accounts.signals import core_user_deleting

from . import storage
from .models import Batch, BatchStatus, File, FileStatus
from .services.files import file_outputs_remove_if_failed
from .services.recovery import stuck_limit
from .uploads import UPLOAD_SUFFIX, upload_temp_dir

_CHUNK = 500
# `services.batches.ensure_extracted` extracts into `<batch>.<pid>.<time>`, then renames it to `<batch>`.
_PARTIAL_WORK_DIR = re.compile(r"(?P<batch>[0-9a-f-]{36})\.\d+\.\d+")


@receiver(post_delete, sender=Batch, dispatch_uid="conversion.batch_storage")
def _batch_deleted(sender, instance: Batch, **kwargs) -> None:
    upload, batch_id = instance.upload.name, instance.pk

    def remove() -> None:
        if upload:
            instance.upload.storage.delete(upload)
        storage.delete_tree(f"datasets/{batch_id}")
        storage.remove_work_dir(batch_id)

    transaction.on_commit(remove)


@receiver(post_delete, sender=File, dispatch_uid="conversion.file_storage")
def _file_deleted(sender, instance: File, **kwargs) -> None:
    prefix = storage.file_prefix(instance.pk)
    transaction.on_commit(lambda: storage.delete_tree(prefix))


@receiver(core_user_deleting, dispatch_uid="conversion.core_user_files")
def _core_user_deleting(sender, core_user, **kwargs) -> None:
    """The user's files and batches go ahead of the cascade, read for the receivers above by the columns these use.
    The cascade reads every column of rows whose deletion has receivers, a file's kilobytes of output JSON
    included, and it reached each file twice (through the user and through its batch): 36 s for 10,000 files."""
    File.objects.filter(core_user=core_user).only("pk").delete()
    Batch.objects.filter(core_user=core_user).only("pk", "upload").delete()


def stray_storage_sweep(*, limit: datetime | None = None) -> dict[str, int]:
    """Remove stored bytes whose record no longer exists and that nothing wrote since `limit` (default
    CONVERSION_STUCK_AFTER_SECONDS ago; the embedded server's start, at its start): upload zips
    (`batches/<batch>.zip`), data set zips (`datasets/<batch>/`), a file's outputs and images (`files/<file>/`) and
    a batch's work folder; the outputs of failed files (`files/<file>/`, none of it served); also work folders
    nothing wrote since then that no batch uses (`_work_dirs_sweep`), uploads that stopped streaming in
    (`.uploads/*.upload`: their request was cut off with its process), and partial writes of outputs
    (`_partial_writes_sweep`). Names that are not a record id are not ours: left alone."""
    limit = stuck_limit(limit)
    removed = _uploads_sweep(limit) + _partial_writes_sweep(limit)
    _, uploads = storage.listdir("batches")
    for name in _strays(Batch, uploads, key=lambda name: Path(name).stem[:36]):
        if _stored_time(f"batches/{name}") < limit:
            default_storage.delete(f"batches/{name}")
            removed += 1
    for model, folder in ((Batch, "datasets"), (File, "files")):
        for name in _strays(model, storage.listdir(folder)[0]):
            if _newest_stored(f"{folder}/{name}") < limit:
                storage.delete_tree(f"{folder}/{name}")
                removed += 1
    # Outputs of failed files, not served (their removal when they failed did not run: the process died, or they
    # failed before it was made).
    for name in _ids_of(File.objects.filter(status=FileStatus.FAILED), storage.listdir("files")[0]):
        if _newest_stored(f"files/{name}") < limit:
            file_outputs_remove_if_failed(name)
            removed += 1
    return {"removed": removed + _work_dirs_sweep(limit)}


def _ids_of(records, names: list[str]) -> list[str]:
    """The `names` that are the id of one of `records`."""
    ids = {name: _id(name) for name in names}
    found = _found(records, ids.values())
    return [name for name, i in ids.items() if i and i in found]


def _uploads_sweep(limit: datetime) -> int:
    """Remove the uploads streaming in (`uploads.upload_temp_dir()`) that nothing wrote since `limit`: a request
    writes its upload as it reads it and removes it when it ends, however it ends, but a process killed mid-request
    leaves it (up to CONVERSION_UPLOAD_MAX_BYTES each)."""
    folder = upload_temp_dir()
    removed = 0
    for path in folder.glob(f"*{UPLOAD_SUFFIX}") if folder.is_dir() else ():
        if _newest_local(path) < limit:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def _partial_writes_sweep(limit: datetime) -> int:
    """Remove the partial writes of outputs (`storage.PARTIAL_WRITE`, beside a live file's outputs too) that nothing
    wrote since `limit`: a write that fails removes its own, but a process killed mid-write left it for good (up to a
    whole output each: the output written again later has another partial's name)."""
    removed = 0
    for path in storage.partial_writes():
        if _newest_local(path) < limit:
            path.unlink(missing_ok=True)
            removed += 1
    return removed


def _work_dirs_sweep(limit: datetime) -> int:
    """Remove the work folders not written since `limit`: a batch's (`<batch>`) once its record is gone or it has
    ended (PROCESSED or FAILED), and any partial extraction (`<batch>.<pid>.<time>`), whatever its batch (an
    extraction in progress writes all the time). A batch retried or re-opened is RECEIVED again and keeps its folder;
    one retried after its folder went extracts it again (`services.batches.ensure_extracted`)."""
    work = storage.batch_work_root()
    names = [path.name for path in work.iterdir() if path.is_dir()] if work.is_dir() else []
    removed = 0
    for name in names:
        partial = _PARTIAL_WORK_DIR.fullmatch(name)
        if partial and _id(partial["batch"]) and _newest_local(work / name) < limit:
            storage.remove_work_dir(name)
            removed += 1
    for name in _strays(Batch, names):
        if _newest_local(work / name) < limit:
            storage.remove_work_dir(name)
            removed += 1
    # Batches that ended (not RECEIVED: not in progress, retried or re-opened).
    for name in _ids_of(Batch.objects.exclude(status=BatchStatus.RECEIVED), names):
        with transaction.atomic():
            # Locked: a retry (which locks the batch to make it RECEIVED) waits until the folder is gone, and its
            # task then extracts the batch again instead of reading a folder being removed.
            still_ended = Batch.objects.select_for_update().filter(pk=name).exclude(status=BatchStatus.RECEIVED)
            if still_ended.only("pk").first() is not None and _newest_local(work / name) < limit:
                storage.remove_work_dir(name)
                removed += 1
    return removed


def _strays(model, names: list[str], key: Callable[[str], str] = lambda name: name) -> list[str]:
    """The `names` whose id (`key(name)`, a UUID's canonical text) has no `model` record."""
    ids = {name: _id(key(name)) for name in names}
    found = _found(model.objects.all(), ids.values())
    return [name for name, i in ids.items() if i and i not in found]


def _found(records, ids) -> set[str]:
    """Which of `ids` (UUIDs' canonical text, None for names that are no id) are the key of one of `records`."""
    wanted = [i for i in ids if i]
    found: set[str] = set()
    for start in range(0, len(wanted), _CHUNK):
        chunk = records.filter(pk__in=wanted[start : start + _CHUNK])
        found.update(str(pk) for pk in chunk.values_list("pk", flat=True))
    return found


def _id(name: str) -> str | None:
    try:
        return str(uuid.UUID(name)) if len(name) == 36 else None
    except ValueError:
        return None


_LONG_AGO = datetime(2000, 1, 1, tzinfo=UTC)


def _stored_time(name: str) -> datetime:
    """When a stored file was last written: long ago when it is gone, now when the storage cannot tell (kept)."""
    try:
        return default_storage.get_modified_time(name)
    except NotImplementedError:
        return timezone.now()
    except OSError:
        return _LONG_AGO


def _newest_stored(prefix: str) -> datetime:
    """When anything under a storage folder was last written (the folder's own time when it is empty)."""
    folders, names = storage.listdir(prefix)
    times = [_stored_time(f"{prefix}/{name}") for name in names]
    times += [_newest_stored(f"{prefix}/{folder}") for folder in folders]
    return max(times) if times else _stored_time(prefix)


def _newest_local(path: Path) -> datetime:
    stamps = []
    for entry in (path, *path.rglob("*")):
        try:
            stamps.append(entry.stat().st_mtime)
        except OSError:
            continue
    return datetime.fromtimestamp(max(stamps), tz=UTC) if stamps else _LONG_AGO
