"""Webhook deliveries per second: events emitted in one transaction each, posted by a real Celery
worker (threads pool) on Redis to a receiver on loopback; then to a receiver that takes 0.1 s to answer."""

import os
import subprocess
import sys
import time

from _django import REPO_ROOT, scratch_database

WORKER_ARGS = os.environ.get("BENCH_WORKER_ARGS", "--pool=threads --concurrency=8").split()
EVENTS = int(os.environ.get("BENCH_EVENTS", 1000))
# Then events to a receiver that takes this long to answer: the owner's share of the worker (at most
# WEBHOOK_MAX_IN_FLIGHT_PER_OWNER posts at once) sets the pace.
SLOW_EVENTS, SLOW_RECEIVER_SECONDS = 200, 0.1


def main() -> None:
    with scratch_database() as name:
        from django.conf import settings
        from django.db import transaction

        from platform_site.accounts.models import CoreUser
        from platform_site.accounts.services import owner_ensure
        from platform_site.celery import app
        from tests.receiver import Receiver, start_receiver
        from webhooks.services import event_emit, webhook_register

        if settings.CELERY_BROKER_URL.startswith("memory"):
            sys.exit("set CELERY_BROKER_URL=redis://... (make bench does)")
        settings.WEBHOOK_ALLOW_PRIVATE_URLS = True
        receiver = Receiver()
        server = start_receiver(receiver)
        owner, _ = owner_ensure(username="bench", password="bench-password")
        core_user = CoreUser.objects.create(owner=owner, name="bench")
        webhook_register(owner=owner, name="bench", url=receiver.url, secret="s", events=["fieldCreated"])

        db = settings.DATABASES["default"]
        env = os.environ | {
            "DATABASE_URL": f"postgis://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{name}",
            "WEBHOOK_ALLOW_PRIVATE_URLS": "true",
        }
        app.control.purge()
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "platform_site", "worker", "--without-heartbeat", "--without-mingle",
             "--without-gossip", "--loglevel=WARNING", *WORKER_ARGS],
            cwd=REPO_ROOT, env=env,
        )  # fmt: skip
        try:
            while not app.control.ping(timeout=0.5):
                time.sleep(0.2)
            for events, answer_seconds in ((EVENTS, 0.0), (SLOW_EVENTS, SLOW_RECEIVER_SECONDS)):
                receiver.hang, receiver.received = answer_seconds, []
                started = time.perf_counter()
                for i in range(events):
                    with transaction.atomic():
                        event_emit(type="fieldCreated", core_user=core_user, payload={"fieldId": str(i)})
                emitted = time.perf_counter() - started
                receiver.wait_for(events, timeout=300)
                elapsed = time.perf_counter() - started
                rate = events / emitted
                print(f"emitted {events} events in {emitted:.2f} s ({rate:.0f} events/s, one transaction each)")
                print(
                    f"delivered {len(receiver.received)}/{events} in {elapsed:.2f} s: "
                    f"{len(receiver.received) / elapsed:.0f} deliveries/s (worker: 8 threads; one owner, at most "
                    f"{settings.WEBHOOK_MAX_IN_FLIGHT_PER_OWNER} posted at once; the receiver answers in "
                    f"{answer_seconds:g} s)"
                )
            from django.db.models import Count

            from webhooks.models import DeliveryAttempt

            failures = (
                DeliveryAttempt.objects.filter(succeeded=False).values("error", "status_code").annotate(n=Count("id"))
            )
            for failure in failures[:5]:
                print("failed attempts:", failure["n"], failure["status_code"], failure["error"][:150])
        finally:
            worker.terminate()
            worker.wait(timeout=30)
            server.shutdown()


if __name__ == "__main__":
    main()
