"""The Celery application. Tasks live in each app's `tasks.py` and are found by autodiscovery."""

import logging
import os

from celery import Celery
from django.db import transaction
from kombu.exceptions import KombuError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_site.settings")

app = Celery("platform_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

log = logging.getLogger(__name__)


def send_on_commit(task, *args) -> None:
    """Queue `task(*args)` once the current transaction commits. A broker that cannot take it (Redis down) neither
    undoes what committed nor turns the request that committed it into a 500, and the callbacks after it still run:
    the failure is logged, and the periodic sweeps send again what never started (merged and cropped files they
    fail with a reason: the client merges or crops again)."""

    def send() -> None:
        try:
            task.delay(*args)
        except (KombuError, OSError):
            log.warning("task %s%r not queued (broker unavailable); the sweeps will see to it", task.name, args)

    transaction.on_commit(send)
