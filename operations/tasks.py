"""Operations tasks: thin and idempotent; they take ids and call `operations.services`."""

from django.utils.dateparse import parse_datetime

from platform_site.celery import app

from . import services


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def operation_file_group(file_id: str) -> None:
    """Put a processed file into its operation (or a new one) and enqueue the operation's rebuild."""
    services.operation_file_group(file_id)


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def operation_build(operation_id: str, version: int | None = None) -> None:
    """Rebuild an operation's automerged file, fields and coverage (skipped when a newer version is queued)."""
    services.operation_build(operation_id, version)


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def operation_batch_builds(batch_id: str) -> None:
    """A batch ended: send the builds its files' operations put off while it was converted."""
    services.operation_batch_builds(batch_id)


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def operation_crop_process(crop_id: str) -> None:
    """Write the points of an operation inside a field into the crop's file."""
    services.operation_crop_process(crop_id)


@app.task(ignore_result=True)
def operations_sweep(limit: str | None = None) -> None:
    """Periodic (beat): re-send or fail operation builds left processing too long (untouched since `limit`, an ISO
    8601 time: the embedded server's start, sent at its start)."""
    services.operations_sweep(limit=parse_datetime(limit) if limit else None)
