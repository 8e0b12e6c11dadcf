"""Delivery tasks: thin, idempotent (keyed by delivery id), acknowledged late."""

import time

from platform_site.celery import UNATTRIBUTED, app

from . import services

# How long one task goes on posting the deliveries each post hands its place to (`services._hand_over`): past it,
# the next is sent as a task of its own (a worker's warm shutdown waits for its tasks).
HAND_OVERS_SECONDS = 10.0


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def webhooks_delivery_send(delivery_id: str, lease: str | None = None) -> None:
    """Post one delivery if it is due (`lease`: claimed for it already); on failure schedule the next attempt (the
    sweep also finds it). The owner's delivery its post hands its place to is posted next, by this thread, for up to
    HAND_OVERS_SECONDS: sent as a task of its own, it waited, claimed, behind every task queued meanwhile. Each
    delivery's lines name the request that fired it (its row's), not the one this task was queued for: the retries
    and hand-overs it sends carry no request id (`UNATTRIBUTED`)."""
    started = time.monotonic()
    while True:
        delay, handed = services.delivery_post(delivery_id, lease)
        if delay is not None and not app.conf.task_always_eager:
            webhooks_delivery_send.apply_async((delivery_id,), countdown=delay, headers=UNATTRIBUTED)
        if handed is None:
            return
        delivery_id, lease = handed
        if time.monotonic() - started > HAND_OVERS_SECONDS:
            webhooks_delivery_send.apply_async((delivery_id, lease), headers=UNATTRIBUTED)
            return


@app.task(ignore_result=True)
def webhooks_deliveries_sweep() -> int:
    """Periodic: enqueue every due delivery nobody holds, so no event is lost to a dead worker; forget the ones
    delivered long ago (`services.deliveries_forget`)."""
    due = services.deliveries_due()
    for delivery_id in due:
        webhooks_delivery_send.delay(delivery_id)
    services.deliveries_forget()
    return len(due)
