"""The Celery application. Tasks live in each app's `tasks.py` and are found by autodiscovery."""

import logging
import os

from celery import Celery, Task
from django.db import InterfaceError, OperationalError, close_old_connections, transaction
from kombu.exceptions import KombuError

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_site.settings")

log = logging.getLogger(__name__)


class DatabaseRetryTask(Task):
    """A task acknowledged late whose database went away under it (PostgreSQL restarted, a failover, a network
    cut) is sent again after a pause that doubles each time (TASK_DATABASE_RETRY_SECONDS, up to
    TASK_DATABASE_RETRIES times), instead of ending there and waiting for a periodic sweep to find its work stuck.
    Such tasks are idempotent, so a run that stopped half way is simply run again. A task run in the caller's
    thread (eager, or called directly) raises as before: its caller handles the error."""

    def __call__(self, *args, **kwargs):
        try:
            return super().__call__(*args, **kwargs)
        except (InterfaceError, OperationalError) as exc:
            from django.conf import settings

            request = self.request
            if not self.acks_late or request.called_directly or request.is_eager:
                raise
            if request.retries >= settings.TASK_DATABASE_RETRIES:
                raise
            close_old_connections()  # the broken connection goes; the next run opens a new one
            log.warning("task %s%r: the database failed (%s); sent again", self.name, tuple(args), exc)
            raise self.retry(exc=exc, countdown=settings.TASK_DATABASE_RETRY_SECONDS * 2**request.retries) from exc


app = Celery("platform_site", task_cls=DatabaseRetryTask)
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


def send_on_commit(task, *args, outbox: bool = True) -> None:
    """Queue `task(*args)` once the current transaction commits. A broker that cannot take it (Redis down) neither
    undoes what committed nor turns the request that committed it into a 500, and the callbacks after it still run:
    the send is kept in the outbox (`platform_site.outbox`), whose task sends it within a minute of the broker's
    return, as the same send (no attempt counted). `outbox=False` for a task whose own row is its outbox (a webhook
    delivery: the deliveries sweep sends it). Were the outbox's write to fail too, it is logged, and the periodic
    sweeps send again what never started, after CONVERSION_STUCK_AFTER_SECONDS."""

    def send() -> None:
        try:
            task.delay(*args)
        except (KombuError, OSError):
            # (Run eagerly, the task raised this itself: no broker was asked; nothing to send again.)
            if outbox and not task.app.conf.task_always_eager:
                from platform_site.outbox.services import outbox_record

                if outbox_record(task_name=task.name, args=args):
                    log.warning("task %s%r not queued (broker unavailable); kept in the outbox", task.name, args)
                    return
            log.warning("task %s%r not queued (broker unavailable); the sweeps will see to it", task.name, args)

    transaction.on_commit(send)
