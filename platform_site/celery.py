"""The Celery application. Tasks live in each app's `tasks.py` and are found by autodiscovery."""

import logging
import logging.config
import os
import threading
import time

from celery import Celery, Task, signals
from celery.beat import PersistentScheduler
from django.db import InterfaceError, OperationalError, close_old_connections, transaction
from kombu.exceptions import KombuError

from platform_site.api import request_ids

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "platform_site.settings")

log = logging.getLogger(__name__)

# The message header naming the request that queued a task.
REQUEST_ID_HEADER = "request_id"
# The headers of a send whose task names the requests of its log lines itself (a webhook delivery: its row's), not
# the one served where it was queued (a delivery handed over by another request's).
UNATTRIBUTED = {REQUEST_ID_HEADER: ""}


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


class SweepScheduler(PersistentScheduler):
    """Beat's scheduler (CELERY_BEAT_SCHEDULER): Celery's, which keeps each entry's last run in its schedule file, but
    an entry that has never run by the file is due at once. Celery starts such an entry's interval when beat starts,
    so on a first start, and after a `kill -9` left the file corrupted (Celery removes it and starts afresh), the
    hourly sweeps (stray storage, expired links) waited an hour of uptime. Every entry is a sweep that may run at any
    moment."""

    def setup_schedule(self):
        super().setup_schedule()
        for entry in self.schedule.values():
            run_every = getattr(entry.schedule, "run_every", None)
            if entry.total_run_count == 0 and run_every is not None:
                entry.last_run_at = entry.default_now() - run_every

    def sync(self):
        """Celery's, then the file closed and opened again where its dbm has no `sync` of its own (Debian's Python
        shelves in Berkeley DB's ndbm, `<file>.db`, which writes on close only): a beat killed at any moment before
        it stopped lost every run since it started, and its next start sent every sweep again (a production try-out).
        With CELERY_BEAT_SYNC_EVERY at 1, each send is on disk once it is made."""
        super().sync()
        if self._store is not None and not hasattr(self._store.dict, "sync"):
            self._store.close()
            self._store = self._open_schedule()


app = Celery("platform_site", task_cls=DatabaseRetryTask)
# Set once `manage.py serve` runs its worker threads on the in-memory broker: then, and only then, a task sent
# without a broker runs (`health.broker_state`).
embedded_workers = threading.Event()
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


# A worker or beat started without CELERY_BROKER_URL runs on an in-memory broker of its own, which no other process
# sends to: it said "ready" and never took a conversion, or sent the sweeps to nobody (a production try-out).
NO_BROKER_PROCESS = (
    "CELERY_BROKER_URL is not set: {process} on the in-memory broker shares no task with any other process (only "
    "`manage.py serve` runs its tasks so, inside itself). Give it the environment of the API, CELERY_BROKER_URL "
    'included (README "Production").'
)


@signals.celeryd_init.connect
def _worker_needs_a_broker(**kwargs):
    """`celery worker` (`manage.py serve` starts its workers otherwise, and sends no `celeryd_init`). SystemExit:
    Celery logs an exception of a signal handler and goes on."""
    from django.conf import settings

    if settings.CELERY_EMBEDDED:
        raise SystemExit(NO_BROKER_PROCESS.format(process="a Celery worker"))


@signals.beat_init.connect
def _beat_needs_a_broker(**kwargs):
    """`celery beat`; the embedded beat of `manage.py serve` starts once its workers have."""
    from django.conf import settings

    if settings.CELERY_EMBEDDED and not embedded_workers.is_set():
        raise SystemExit(NO_BROKER_PROCESS.format(process="Celery beat"))


@signals.before_task_publish.connect
def _request_id_sent(headers=None, **kwargs):
    """A task queued while a request is served (or by a task that one queued) carries the request's id."""
    served = request_ids.current.get()
    if served and headers is not None:
        headers.setdefault(REQUEST_ID_HEADER, served)


@signals.task_prerun.connect
def _request_id_taken(task=None, **kwargs):
    """While the task runs, its log lines name the request that queued it (`request_ids.RequestIdFilter`); a task
    run in the request's thread (eagerly) keeps the request's."""
    # (a worker finds a message's own headers among the request's; a task run eagerly, in `headers`)
    sent = task.request.get(REQUEST_ID_HEADER) or (task.request.get("headers") or {}).get(REQUEST_ID_HEADER)
    if sent:
        task.request.request_id_reset = request_ids.current.set(sent)


@signals.task_postrun.connect
def _request_id_dropped(task=None, **kwargs):
    if (token := getattr(task.request, "request_id_reset", None)) is not None:
        request_ids.current.reset(token)


@signals.setup_logging.connect
def _django_logging(logfile=None, **kwargs):
    """Workers and beat log as the API does, through settings LOGGING (its filters: link tokens and query tokens
    redacted, request ids; its format: time, level, logger; LOG_LEVEL), which `django.setup()` put in place. Without
    a receiver of this signal, `celery worker` replaced Django's handlers with its own (`worker_hijack_root_logger`):
    tokens in full, no request id, and its level WARNING unless `--loglevel` said otherwise (no task's line at all).
    Celery's `--loglevel` is not used then; a `--logfile` (where a detached worker writes: its standard error goes
    nowhere) gets the lines standard error gets."""
    from django.conf import settings

    logging.config.dictConfig(settings.LOGGING)
    if logfile:
        root = logging.getLogger()
        [console] = [handler for handler in root.handlers if handler.name == "console"]
        written = logging.FileHandler(logfile, encoding="utf-8")
        written.setFormatter(console.formatter)
        for kept_out in console.filters:
            written.addFilter(kept_out)
        root.addHandler(written)


# After the broker refused a send, the sends of this process during this many seconds are not tried: each try costs
# the broker's retries (about 0.6 s when Redis refuses connections, CELERY_BROKER_TIMEOUT_SECONDS when it takes them
# and never answers), and a write that queues several tasks or deliveries paid it once for each.
BROKER_REFUSED_PAUSE_SECONDS = 10.0


class _BrokerRefused:
    """When (monotonic) the last refusal's pause ends, and at which broker address (another address is tried)."""

    until = 0.0
    url = ""

    @classmethod
    def pausing(cls, url: str) -> bool:
        return url == cls.url and time.monotonic() < cls.until

    @classmethod
    def refused(cls, url: str) -> None:
        cls.url, cls.until = url, time.monotonic() + BROKER_REFUSED_PAUSE_SECONDS


def send_on_commit(task, *args, outbox: bool = True) -> None:
    """Queue `task(*args)` once the current transaction commits. A broker that cannot take it (Redis down) neither
    undoes what committed nor turns the request that committed it into a 500, and the callbacks after it still run:
    the send is kept in the outbox (`platform_site.outbox`), whose task sends it within a minute of the broker's
    return, as the same send (no attempt counted). `outbox=False` for a task whose own row is its outbox (a webhook
    delivery: the deliveries sweep sends it). Were the outbox's write to fail too, it is logged, and the periodic
    sweeps send again what never started, after CONVERSION_STUCK_AFTER_SECONDS. Once the broker refused a send, the
    sends of the next BROKER_REFUSED_PAUSE_SECONDS are kept without being tried."""

    def keep(eager: bool) -> None:
        # (Run eagerly, the task raised this itself: no broker was asked; nothing to send again.)
        if outbox and not eager:
            from platform_site.outbox.services import outbox_record

            if outbox_record(task_name=task.name, args=args):
                log.warning("task %s%r not queued (broker unavailable); kept in the outbox", task.name, args)
                return
        log.warning("task %s%r not queued (broker unavailable); the sweeps will see to it", task.name, args)

    def send() -> None:
        eager, url = task.app.conf.task_always_eager, task.app.conf.broker_url
        if not eager and _BrokerRefused.pausing(url):
            keep(eager)
            return
        try:
            task.delay(*args)
        except (KombuError, OSError):
            if not eager:
                _BrokerRefused.refused(url)
            keep(eager)

    transaction.on_commit(send)
