"""Delivery through a real Celery worker process on Redis (retry schedule 1 s, 1 s in the worker)."""

import time

import pytest
from django.db import transaction

from webhooks.models import Delivery
from webhooks.services import event_emit

pytestmark = pytest.mark.celery_worker


def test_the_worker_delivers_and_retries_with_backoff(celery_worker, owner, core_user, subscribe, webhook_receiver):
    webhook_receiver.statuses = [500, 200]
    subscribe(owner, webhook_receiver, ["fieldCreated"], secret="k")
    with transaction.atomic():
        event_emit(type="fieldCreated", core_user=core_user, payload={"fieldId": "f-9"})
    requests = webhook_receiver.wait_for(2, timeout=30)
    assert len(requests) == 2
    assert requests[0].body == requests[1].body
    deadline = time.monotonic() + 10
    while Delivery.objects.get().status != Delivery.Status.SUCCEEDED and time.monotonic() < deadline:
        time.sleep(0.1)
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == (Delivery.Status.SUCCEEDED, 2)
    first, second = delivery.attempt_log.order_by("number")
    # The retry waited for the backoff of the schedule (1 s), not a moment less.
    assert (second.attempted_at - first.attempted_at).total_seconds() >= 0.9
