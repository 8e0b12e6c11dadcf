"""Conversion tasks: thin and idempotent; they take ids and call `conversion.services`."""

from django.utils.dateparse import parse_datetime

from platform_site.celery import app

from . import cleanup, services


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def batch_open(batch_id: str) -> None:
    """Extract a received batch, detect its data sets and enqueue one conversion per data set."""
    services.batch_open(batch_id)


@app.task(bind=True, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def dataset_convert(self, dataset_id: int) -> None:
    """Convert one data set of a batch into its file(s). A database retry of the task (`DatabaseRetryTask`)
    continues the attempt of the run whose database failed."""
    services.dataset_convert(dataset_id, task_retries=self.request.retries or 0)


@app.task(ignore_result=True)
def conversion_sweep(limit: str | None = None, restarted: bool = False) -> dict:
    """Periodic: re-send or fail batches, data sets and files that stayed in flight too long (untouched since
    `limit`, an ISO 8601 time: the embedded server's start, sent at its start with `restarted`)."""
    return services.conversion_sweep(limit=parse_datetime(limit) if limit else None, restarted=restarted)


@app.task(ignore_result=True)
def conversion_storage_sweep(limit: str | None = None) -> dict:
    """Periodic: remove stored bytes whose record is gone (written by a task still running at its deletion), and
    uploads a killed process left (nothing written since `limit`, as `conversion_sweep`'s)."""
    return cleanup.stray_storage_sweep(limit=parse_datetime(limit) if limit else None)


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def file_merge_process(file_id: str) -> None:
    """Complete a file made by `POST /files/merge` from its sources' points."""
    from . import merging

    merging.file_merge_process(file_id)
