"""Files made from other files: `POST /files/merge` and the completion of any derived file (merged, cropped,
an operation's automerged file).

A derived file is created at once with status processing (the client gets its id) and completed by a task that
builds its point table from stored points, writes the outputs (`outputs.produce`, no second cleaning: the sources'
points are already clean) and calls `services.file_complete` (field links, pooling, the origin's finished event);
any error fails the file with a message and the origin's failed event.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from platform_site.accounts.services import core_user_lock
from platform_site.api.errors import DomainError, NotFoundError
from platform_site.celery import send_on_commit

from . import archive, outputs, services
from .merge import tables_merge
from .models import File, FileOrigin, FileStatus
from .readers import UnreadableDataset
from .readers.base import PointTable

log = logging.getLogger(__name__)

MERGED_FORMAT = "MERGED"


class MergeNotAllowed(DomainError):
    error_key = "mergeNotAllowed"


def merge_send(file_id) -> None:
    """Send the merge's task after commit (the task completes the merged file)."""
    from . import tasks  # tasks import this module

    send_on_commit(tasks.file_merge_process, str(file_id))


@transaction.atomic
def file_merge(*, owner, ids: list) -> File:
    """A new `merged` file of the owner's files `ids`, returned at once (processing); a task completes it.

    Ids the owner does not have (unknown or another owner's) are 404, as everywhere. The files must be at
    least two, of one core user, of one operation type and processed: otherwise 400 `mergeNotAllowed` with the
    reason."""
    unique = list(dict.fromkeys(str(i) for i in ids))
    # Only the columns the checks read: a file's outputs are kilobytes of JSON each, and a merge takes up to 1000.
    candidates = File.objects.filter(core_user__owner=owner, pk__in=unique).only(
        "pk", "core_user", "status", "operation_type", "file_format", "provider"
    )
    found = {str(f.pk): f for f in candidates}
    missing = [i for i in unique if i not in found]
    if missing:
        raise NotFoundError(f"No such file: {', '.join(missing)}.")
    files = [found[i] for i in unique]
    if len(files) < 2:
        raise MergeNotAllowed("A merge needs at least two different files.")
    if len({f.core_user_id for f in files}) > 1:
        raise MergeNotAllowed("The files belong to different core users.")
    not_processed = [str(f.pk) for f in files if f.status != FileStatus.PROCESSED]
    if not_processed:
        raise MergeNotAllowed(f"Only processed files can be merged; not processed: {', '.join(not_processed)}.")
    types = sorted({f.operation_type or "unknown" for f in files})
    if len(types) > 1:
        raise MergeNotAllowed(f"The files have different operation types: {', '.join(types)}.")
    core_user_id = files[0].core_user_id
    # Serialise merges of one core user with its other derived-file writes. Deleted meanwhile, with its files: 404.
    if not core_user_lock(core_user_id):
        raise NotFoundError(f"No such file: {', '.join(unique)}.")
    formats = {f.file_format for f in files}
    providers = {f.provider for f in files}
    merged = File.objects.create(
        core_user_id=core_user_id,
        file_name=f"Merge of {len(files)} files"[:255],
        file_format=formats.pop() if len(formats) == 1 else MERGED_FORMAT,
        provider=providers.pop() if len(providers) == 1 else files[0].provider,
        origin=FileOrigin.MERGED,
        operation_type=files[0].operation_type,
        status=FileStatus.PROCESSING,
    )
    merged.sources.set(files)
    merge_send(merged.pk)
    return merged


def file_derive_complete(
    file_id,
    build: Callable[[File], PointTable],
    *,
    origin: str | None = None,
    guard: Callable[[], bool] | None = None,
    disk_then: str = "retry once it is fixed",
) -> File | None:
    """Complete the processing derived file `file_id` with the points `build(file)` returns, or fail it with a
    message. Returns the file (processed or failed), or None when nothing was done: the file is gone or no longer
    processing (idempotent), or `guard()` (called first inside the final transaction, to take the caller's locks
    and check that the result is still wanted) said no. A failure of the server's disk fails it as ours
    (`services.internal_error`), saying what happens once the disk is fixed (`disk_then`)."""
    file = File.objects.select_related("core_user").filter(pk=file_id).first()
    if file is None or file.status != FileStatus.PROCESSING or (origin and file.origin != origin):
        return None
    produced, message = None, None
    try:
        produced = outputs.produce(file, build(file), clean=False)
    except UnreadableDataset as exc:
        message = str(exc)
    except (ValueError, OSError) as exc:
        if archive.disk_failure(exc):
            log.error("derived file %s: the disk failed: %s", file.pk, exc)
            message = services.internal_error(exc, then=disk_then)
        else:
            message = f"The file could not be built: {exc}"
    except Exception:
        log.exception("derived file %s failed", file.pk)
        message = "Internal error while building the file. Please contact Support"
    with transaction.atomic():
        if guard is not None and not guard():
            return None
        current = File.objects.select_for_update().filter(pk=file.pk).first()
        if current is None or current.status != FileStatus.PROCESSING:
            return None
        if produced is None:
            services.file_fail(current, message)
            current.refresh_from_db()
            return current
        return services.file_complete(current, produced)


def _merged_points(file: File) -> PointTable:
    sources = list(file.sources.order_by("start_time", "created_time", "pk"))
    gone = [s for s in sources if s.status != FileStatus.PROCESSED or not s.points_name]
    if len(sources) < 2 or gone:
        raise ValueError("a source file is no longer available")
    return tables_merge([outputs.load_points(s) for s in sources], name=file.file_name)


def file_merge_process(file_id) -> None:
    """Task body: merge the sources' points into the merged file."""
    derived_file_process(file_id, _merged_points)


def derived_file_process(file_id, build: Callable[[File], PointTable]) -> File | None:
    """Complete a file derived from other files' points (a merge, a crop) with `build(file)`, as
    `file_derive_complete` does. While a source is being rebuilt (an operation's automerged file a new file joined)
    it waits: the operation's build sends it again when it ends (`operations.services.grouping._waiting_resend`),
    where it failed for good ("a source file is no longer available"). A source that changed while its points were read
    leaves it to that resend too. None when nothing was done."""
    file = File.objects.filter(pk=file_id).only("core_user_id").first()
    if file is None:
        return None
    started = timezone.now()
    sources = File.objects.filter(derived=file_id)
    if sources.filter(status=FileStatus.PROCESSING).exists():
        return None

    def sources_unchanged() -> bool:
        # In the core user's lock, which grouping and builds take first: no file joins and no build ends before
        # this commits.
        core_user_lock(file.core_user_id)
        return not sources.filter(Q(status=FileStatus.PROCESSING) | Q(updated_time__gt=started)).exists()

    return file_derive_complete(file_id, build, origin=FileOrigin.MERGED, guard=sources_unchanged)
