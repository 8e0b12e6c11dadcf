"""Webhook deliveries per second: events emitted in one transaction each, posted by a real Celery
worker (threads pool) on Redis to a receiver on loopback; then to a receiver that takes 0.1 s to answer. Then how
long another owner's deliveries take while one owner's backlog waits on a receiver that never answers."""

import json
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
# Then an owner's events to a receiver that never answers (the worker gives up after HANGING_TIMEOUT_SECONDS), and
# meanwhile another owner's, one every OTHER_EVERY_SECONDS to a receiver answering at once.
HANGING_EVENTS, HANGING_TIMEOUT_SECONDS, OTHER_EVENTS, OTHER_EVERY_SECONDS = 300, 2, 20, 0.5


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
            "WEBHOOK_TIMEOUT_SECONDS": str(HANGING_TIMEOUT_SECONDS),
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
            other_latencies(owner, core_user, receiver)
            from django.db.models import Count

            from webhooks.models import DeliveryAttempt

            failures = (
                DeliveryAttempt.objects.filter(succeeded=False).values("error", "status_code").annotate(n=Count("id"))
            )
            for failure in failures[:5]:
                print("failed attempts:", failure["n"], failure["status_code"], failure["error"][:150])
        finally:
            worker.terminate()
            try:
                worker.wait(timeout=30)
            except subprocess.TimeoutExpired:  # (posts to the receiver that never answers)
                worker.kill()
                worker.wait()
            server.shutdown()


def other_latencies(owner, core_user, receiver) -> None:
    """Another owner's events, one every OTHER_EVERY_SECONDS, while the first owner's HANGING_EVENTS wait on a
    receiver that never answers: how long each took to arrive (its receiver records the time)."""
    import statistics

    from django.db import transaction

    from platform_site.accounts.models import CoreUser
    from platform_site.accounts.services import owner_ensure
    from tests.receiver import Receiver, start_receiver
    from webhooks.services import event_emit, webhook_register

    receiver.hang, receiver.received = HANGING_TIMEOUT_SECONDS + 3, []
    for i in range(HANGING_EVENTS):
        with transaction.atomic():
            event_emit(type="fieldCreated", core_user=core_user, payload={"fieldId": f"hang-{i}"})
    other_receiver = Receiver()
    arrived = {}

    def record(request):
        arrived[json.loads(request.body)["fieldId"]] = time.perf_counter()

    other_receiver.on_request = record
    server = start_receiver(other_receiver)
    other, _ = owner_ensure(username="bench-other", password="bench-password")
    other_user = CoreUser.objects.create(owner=other, name="other")
    webhook_register(owner=other, name="other", url=other_receiver.url, secret="s", events=["fieldCreated"])
    emitted = {}
    for i in range(OTHER_EVENTS):
        emitted[str(i)] = time.perf_counter()
        with transaction.atomic():
            event_emit(type="fieldCreated", core_user=other_user, payload={"fieldId": str(i)})
        time.sleep(OTHER_EVERY_SECONDS)
    other_receiver.wait_for(OTHER_EVENTS, timeout=60)
    server.shutdown()
    took = sorted(arrived[i] - emitted[i] for i in emitted if i in arrived)
    if took:
        print(
            f"another owner's {len(took)}/{OTHER_EVENTS} events while {HANGING_EVENTS} of the first owner's wait on "
            f"a receiver that never answers (timeout {HANGING_TIMEOUT_SECONDS} s): p50 "
            f"{statistics.median(took) * 1000:.0f} ms, max {took[-1] * 1000:.0f} ms; the first owner's receiver "
            f"got {len(receiver.received)} posts meanwhile"
        )


if __name__ == "__main__":
    main()
