"""API tasks: thin; they call `platform_site.api.idempotency`."""

from platform_site.celery import app

from . import idempotency


@app.task(ignore_result=True)
def idempotency_keys_sweep() -> int:
    """Periodic (beat, hourly): forget the `Idempotency-Key`s past their lifetime, and the answers kept with them."""
    return idempotency.keys_sweep()
