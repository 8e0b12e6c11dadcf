"""Delivery tasks: thin, idempotent (keyed by delivery id), acknowledged late."""

from platform_site.celery import app

from . import services


@app.task(acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def webhooks_delivery_send(delivery_id: str) -> None:
    """Post one delivery if it is due; on failure schedule the next attempt (the sweep also finds it)."""
    delay = services.delivery_attempt(delivery_id)
    if delay is not None and not app.conf.task_always_eager:
        webhooks_delivery_send.apply_async((delivery_id,), countdown=delay)


@app.task(ignore_result=True)
def webhooks_deliveries_sweep() -> int:
    """Periodic: enqueue every due delivery nobody holds, so no event is lost to a dead worker."""
    due = services.deliveries_due()
    for delivery_id in due:
        webhooks_delivery_send.delay(delivery_id)
    return len(due)
