"""Outbox task: thin; it calls `platform_site.outbox.services`."""

from platform_site.celery import app

from . import services


@app.task(ignore_result=True)
def outbox_send() -> dict:
    """Periodic (beat, every minute): send the tasks the broker refused when they were sent, once it takes them. A
    run that sent as many as it may sends itself again for the rest."""
    counts = services.outbox_send()
    if counts["sent"] + counts["dropped"] >= services.SEND_MAX and not app.conf.task_always_eager:
        outbox_send.delay()
    return counts
