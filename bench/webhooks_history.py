"""What an owner's kept webhook history costs each new delivery and the failed-calls list, on both databases: PostGIS
(DATABASE_URL) and the embedded SpatiaLite of `make run` (a scratch file).

One owner with BENCH_DELIVERIES delivered deliveries (kept WEBHOOK_DELIVERED_KEEP_DAYS: 400,000 is a week at 0.66
events a second), each with its successful attempt, and 50 failed attempts among them. Then, each the median of
REPEAT runs:
- the check before every post of whether the owner has WEBHOOK_MAX_IN_FLIGHT_PER_OWNER posts going
  (`_owner_busy`), and the look for the owner's next due delivery after every post (`_hand_over`, finding none);
- `GET /webhooks/failed-calls` (a page of 20 and the count) through Django's request handling in-process.
"""

import os
import time
import uuid
from datetime import timedelta

from _django import median_seconds, on_both_databases, scratch_database

DELIVERIES = int(os.environ.get("BENCH_DELIVERIES", 200_000))
FAILED = 50
REPEAT = 20
CHUNK = 5_000


def load(owner, webhook) -> None:
    from django.db import connection
    from django.utils import timezone

    from webhooks.models import Delivery, DeliveryAttempt

    now = timezone.now()
    for first in range(0, DELIVERIES, CHUNK):
        deliveries, attempts = [], []
        for index in range(first, min(first + CHUNK, DELIVERIES)):
            delivery = Delivery(
                id=uuid.uuid4(),
                webhook=webhook,
                owner=owner,
                event="fieldCreated",
                body="{}",
                status=Delivery.Status.SUCCEEDED,
                attempts=1,
                next_attempt_at=now - timedelta(seconds=DELIVERIES - index),
            )
            deliveries.append(delivery)
            failed = index % (DELIVERIES // FAILED) == 0
            attempts.append(
                DeliveryAttempt(
                    delivery=delivery, owner=owner, number=1, status_code=500 if failed else 200, succeeded=not failed
                )
            )
        Delivery.objects.bulk_create(deliveries)
        DeliveryAttempt.objects.bulk_create(attempts)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def median_ms(run) -> float:
    return median_seconds(run, REPEAT) * 1000


def measure(label: str) -> None:
    with scratch_database():
        from django.utils import timezone
        from rest_framework.test import APIClient

        from platform_site.api.authentication import token_issue
        from tests.factories import OwnerFactory
        from webhooks import services
        from webhooks.models import Delivery, Webhook

        owner = OwnerFactory()
        webhook = Webhook.objects.create(owner=owner, name="hook", url="https://receiver.example/hook", secret="s" * 32)
        started = time.perf_counter()
        load(owner, webhook)
        print(f"{label:10s} loaded {DELIVERIES:,} delivered deliveries in {time.perf_counter() - started:.1f} s")
        posting = Delivery.objects.create(
            webhook=webhook,
            owner=owner,
            event="fieldCreated",
            body="{}",
            next_attempt_at=timezone.now(),
            lease_until=timezone.now() + timedelta(seconds=30),
        )
        busy = median_ms(lambda: services._owner_busy(posting))
        assert services._hand_over(posting) is None  # (none due: it looks, and changes nothing)
        hand_over = median_ms(lambda: services._hand_over(posting))
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(owner)}")

        def failed_calls():
            response = client.get("/services/alerts/api/alerts/webhooks/failed-calls?size=20")
            assert response.status_code == 200 and response["X-Total-Count"] == str(FAILED), response.content[:300]

        listed = median_ms(failed_calls)
        print(
            f"{label:10s} before each post: in-flight check {busy:7.2f} ms, next due {hand_over:7.2f} ms; "
            f"GET failed-calls (20 of {FAILED}) {listed:7.1f} ms"
        )


if __name__ == "__main__":
    on_both_databases(measure)
