"""The request id of a task sent later, through the outbox, in a real Celery worker process on Redis."""

import time

import pytest

from platform_site.api import request_ids
from platform_site.outbox.models import OutboxTask
from platform_site.outbox.services import outbox_record, outbox_send
from webhooks.tasks import webhooks_deliveries_sweep

pytestmark = pytest.mark.celery_worker


def test_a_task_kept_in_the_outbox_names_the_request_that_queued_it_when_it_runs(celery_worker):
    """A task the broker refused while a request was served is sent by beat's outbox run a minute later: its lines
    named no request (the run's, beat's, has none)."""
    with request_ids.serving("outbox-req-3"):  # (as `send_on_commit` records it, the broker down)
        assert outbox_record(task_name=webhooks_deliveries_sweep.name, args=())
    assert OutboxTask.objects.get().request_id == "outbox-req-3"
    before = len(celery_worker.log_path.read_text())
    assert outbox_send() == {"sent": 1, "kept": 0, "dropped": 0}
    deadline = time.monotonic() + 20
    while not (ran := _sweep_ran(celery_worker.log_path.read_text()[before:])) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(ran) == 1 and " INFO celery.app.trace: [request outbox-req-3] Task " in ran[0], ran


def _sweep_ran(logged: str) -> list[str]:
    return [line for line in logged.splitlines() if "webhooks_deliveries_sweep[" in line and " succeeded " in line]
