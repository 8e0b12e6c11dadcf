"""Delivery through a real Celery worker process on Redis (retry schedule 1 s, 1 s in the worker; an owner's share
2 of its 4 threads)."""

import json
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


def test_an_owners_deliveries_past_its_share_go_out_as_its_posts_end(
    celery_worker, owner, core_user, subscribe, webhook_receiver
):
    """Past the owner's share (2 posts at once in the worker's 4 threads), deliveries wait without asking again; each
    post that ends hands its place to the next (no beat runs here: nothing else would send them)."""
    webhook_receiver.hang = 0.3
    subscribe(owner, webhook_receiver, ["fieldCreated"], secret="k")
    for n in range(12):
        with transaction.atomic():
            event_emit(type="fieldCreated", core_user=core_user, payload={"fieldId": f"f-{n}"})
    requests = webhook_receiver.wait_for(12, timeout=60)
    assert sorted(json.loads(r.body)["fieldId"] for r in requests) == sorted(f"f-{n}" for n in range(12))
    assert len({r.headers["X-Core-Delivery"] for r in requests}) == 12
    deadline = time.monotonic() + 10
    while Delivery.objects.exclude(status=Delivery.Status.SUCCEEDED).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert list(Delivery.objects.values_list("status", "attempts").distinct()) == [(Delivery.Status.SUCCEEDED, 1)]


def test_the_workers_log_lines_of_a_delivery_name_the_request_that_caused_it(
    celery_worker, api_client, owner, core_user, subscribe, webhook_receiver
):
    """A client quoting the `X-Request-Id` of its request finds the worker's lines about what the request set off
    (here the failed first attempt of the webhook its new field fired). A worker started from the command line
    replaced Django's log handlers with its own: no request id, tokens in full, and no line under WARNING."""
    webhook_receiver.statuses = [500, 200]
    subscribe(owner, webhook_receiver, ["fieldCreated"], secret="k")
    square = [[[-93.6, 42.0], [-93.59, 42.0], [-93.59, 42.01], [-93.6, 42.01], [-93.6, 42.0]]]
    response = api_client.post(
        f"/services/fields/api/users/{core_user.id}/fields",
        {"id": "north-40", "geometry": {"type": "Polygon", "coordinates": square}},
        format="json",
        HTTP_X_REQUEST_ID="client-req-7",
    )
    assert response.status_code == 201 and response["X-Request-Id"] == "client-req-7"
    assert len(webhook_receiver.wait_for(2, timeout=30)) == 2
    delivery = Delivery.objects.get()
    line = f"webhook delivery {delivery.pk} attempt 1 failed: 500"
    deadline = time.monotonic() + 10
    while line not in (logged := celery_worker.log_path.read_text()) and time.monotonic() < deadline:
        time.sleep(0.1)
    [logged_line] = [text for text in logged.splitlines() if line in text]
    assert logged_line.endswith(f" INFO webhooks.services: [request client-req-7] {line}")  # (LOG_LEVEL: INFO)
