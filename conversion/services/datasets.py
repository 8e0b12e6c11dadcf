"""Converting one data set: read it, store the outputs of each of its operations, and end it."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from platform_site.db import session_lock
from platform_site.text import storable

from .. import archive, outputs
from ..models import INTERNAL_ERROR, UNABLE_TO_READ, Batch, BatchDataset, DatasetStatus, File, FileStatus
from ..readers import UnreadableDataset, get_reader
from ..readers.base import Dataset
from .batches import _batch_finish_if_done, ensure_extracted
from .files import _file_fail, _file_named, _part_name, file_complete, file_fail, internal_error

log = logging.getLogger(__name__)

WORKER_DIED_MESSAGE = (
    "Processing stopped: the conversion ended abnormally {attempts} times (its worker stopped; the data set may need "
    "more memory than the workers have)."
)


# Advisory lock keys of data set runs: this space, then the data set's id.
_RUN_LOCK_SPACE = 1 << 48


def _run_lease(dataset_id: int):
    """Whether this is the only run of the data set now (a context manager): a session lock held for the run, so a
    worker that dies leaves it free at once, while a run that is alive keeps it. Without it, a copy of the task
    arriving while the first run converts (a sweep's re-send, a broker redelivery) could not tell a live run from
    a dead one. SQLite serialises writers and its in-process broker never redelivers: every run may go."""
    return session_lock(_RUN_LOCK_SPACE + dataset_id)


def dataset_convert(dataset_id: int, *, task_retries: int = 0) -> None:
    """Convert one data set into its file(s). Idempotent: a data set that ended is left alone, and a copy of the
    task arriving while another run converts it stops at once. `task_retries`: the task's database retries
    (`DatabaseRetryTask`); a retry continues the attempt of the run whose database failed, it is no new attempt."""
    with _run_lease(dataset_id) as only:
        if not only:
            log.info("data set %s: another run of it is converting it; this one stops", dataset_id)
            return
        _dataset_convert(dataset_id, task_retries)


def _dataset_convert(dataset_id: int, task_retries: int) -> None:
    with transaction.atomic():
        dataset = (
            BatchDataset.objects.select_for_update()
            .select_related("batch", "batch__core_user")
            .filter(pk=dataset_id)
            .first()
        )
        if dataset is None or dataset.status not in (DatasetStatus.PENDING, DatasetStatus.PROCESSING):
            return
        # A later database retry of the task that last began it: that run's database failed (an outage, a full
        # disk) and it could not record its end; this run continues its attempt. Counted as one, a brief outage
        # used up the attempts in a minute and failed the data set as if its worker had died again and again.
        continued = dataset.status == DatasetStatus.PROCESSING and task_retries > dataset.task_retries
        # PROCESSING, and no other run holds it (`_run_lease`): a run began and never ended. Its worker died (out of
        # memory, killed) and the broker sent the unacknowledged task again at once, so the sweep (which waits for
        # silence) never sees it stuck.
        died = (
            not continued
            and dataset.status == DatasetStatus.PROCESSING
            and dataset.attempts >= settings.CONVERSION_MAX_ATTEMPTS
        )
        if not died:
            dataset.status = DatasetStatus.PROCESSING
            dataset.attempts += 0 if continued else 1
            dataset.task_retries = task_retries
            dataset.started_at = dataset.progress_at = timezone.now()
            dataset.save(update_fields=["status", "attempts", "task_retries", "started_at", "progress_at"])
    if died:
        message = WORKER_DIED_MESSAGE.format(attempts=dataset.attempts)
        _dataset_fail(dataset, f"{INTERNAL_ERROR} ({message})", message)
        return
    batch = dataset.batch
    try:
        root = ensure_extracted(batch)
        source = Dataset(dataset.format, root / dataset.path, root / dataset.root, dataset.name)
        reader = get_reader(dataset.format)
        tables = reader.read(source)
        if not tables and not reader.failed:
            raise UnreadableDataset("The data set holds no logged points.")
        original = outputs.store_original(dataset, source, extra=reader.extra_files)
        failures = []
        several = len(tables) + len(reader.skipped) + len(reader.failed) > 1
        while tables:
            # Each table let go once its file is made: they were all held until the last was converted.
            table = tables.pop(0)
            # A data set of several operations names each file after its own (the task, the time log).
            file = _file_named(dataset, _part_name(dataset, table.name, several))
            if file is None:
                # Ended (or deleted) meanwhile: another run of it (a task sent twice) or the sweep ended it.
                log.info("data set %s ended during this run of it; it stops", dataset.pk)
                return
            if file.status == FileStatus.PROCESSED:
                continue
            # Still alive: a data set of many files may take longer than the sweep's limit as a whole.
            BatchDataset.objects.filter(pk=dataset.pk).update(progress_at=timezone.now())
            try:
                file_complete(file, outputs.produce(file, table, original_name=original))
            except UnreadableDataset as exc:
                failures.append(str(exc))
                file_fail(file, f"{UNABLE_TO_READ} ({exc})", table.operation_type)
            except Exception as exc:
                if not Batch.objects.filter(pk=batch.pk).exists():
                    raise  # deleted meanwhile: the handler below ends quietly
                if File.objects.filter(pk=file.pk, status=FileStatus.PROCESSED).exists():
                    # Committed: what failed came after (sending its follow-up tasks); the file stays converted.
                    log.exception("file %s of data set %s: an error after it was processed", file.pk, dataset.pk)
                    continue
                # One operation's unexpected error (a bug its data meets) fails its own file; the others convert.
                log.exception("file %s (%s) of data set %s failed", file.pk, table.name, dataset.pk)
                internal = internal_error(exc)
                failures.append(internal)
                file_fail(file, internal, table.operation_type)
        # Parts the reader could not read (with a reason) or met a bug in (it logged the error): each fails its file.
        unread = [(name, reason, f"{UNABLE_TO_READ} ({reason})") for name, reason in reader.skipped]
        unread += [(name, INTERNAL_ERROR, INTERNAL_ERROR) for name in reader.failed]
        for name, failure, message in unread:
            failures.append(failure)
            file = _file_named(dataset, _part_name(dataset, name, several))
            if file is not None:
                file_fail(file, message)  # a file that ended (converted by another run) is left as it is
    except (UnreadableDataset, archive.ArchiveError) as exc:
        _dataset_fail(dataset, f"{UNABLE_TO_READ} ({exc})", str(exc))
        return
    except Exception as exc:
        if not Batch.objects.filter(pk=batch.pk).exists():
            # Deleted meanwhile (its core user was): nothing is left to convert for. What this run stored after
            # the deletion's own cleanup is removed by the storage sweep.
            log.info("data set %s: batch %s was deleted during its conversion", dataset.pk, batch.pk)
            return
        if not BatchDataset.objects.filter(pk=dataset.pk, status=DatasetStatus.PROCESSING).exists():
            # Another run of it (a task sent twice) ended it meanwhile, and the end of its batch removed the work
            # folder this run was reading: what this run met is no failure of the data set.
            log.info("data set %s ended during this run of it; it stops", dataset.pk)
            return
        log.exception("data set %s of batch %s failed", dataset.pk, batch.pk)
        internal = internal_error(exc)
        _dataset_fail(dataset, internal, internal)
        return
    with transaction.atomic():
        dataset = BatchDataset.objects.select_for_update().filter(pk=dataset.pk).first()
        if dataset is None or dataset.status != DatasetStatus.PROCESSING:
            # Deleted, or ended by another run of it (and perhaps sent round again since, by a retry): that run's
            # end stands.
            return
        # A data set with a part that failed stays FAILED, so that a retry runs it again (skipping what converted).
        dataset.status = DatasetStatus.FAILED if failures else DatasetStatus.DONE
        dataset.message = storable("; ".join(dict.fromkeys(failures))) or None
        dataset.finished_at = timezone.now()
        dataset.save(update_fields=["status", "message", "finished_at"])
        _batch_finish_if_done(dataset.batch_id)


def _dataset_fail(dataset: BatchDataset, file_message: str, reason: str) -> None:
    """The data set and its files still processing fail: the files with `file_message`, the data set with `reason`
    (cleaned of what no database stores: a reason may quote the file). A data set that already ended (DONE or
    FAILED, by another run of it) is left as it is."""
    reason = storable(reason)
    with transaction.atomic():
        dataset = BatchDataset.objects.select_for_update().filter(pk=dataset.pk).first()
        if dataset is None or dataset.status not in (DatasetStatus.PENDING, DatasetStatus.PROCESSING):
            return  # deleted meanwhile (with its batch), or ended
        dataset.status = DatasetStatus.FAILED
        dataset.message = reason
        dataset.finished_at = timezone.now()
        dataset.save(update_fields=["status", "message", "finished_at"])
        for file in dataset.files.select_related("core_user").filter(status=FileStatus.PROCESSING):
            _file_fail(file, file_message)
        _batch_finish_if_done(dataset.batch_id)
