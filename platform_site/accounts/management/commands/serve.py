"""`manage.py serve [ADDR:PORT]`: the embedded default in one process.

Serves the API and, when no CELERY_BROKER_URL is configured, runs the tasks in-process: a Celery
worker thread on the in-memory broker and an embedded beat thread for the periodic sweeps. With a
real broker, it only serves (run `celery -A platform_site worker --beat` beside it).
"""

import threading

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Serve the API; run tasks in-process when no broker is configured."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")

    def handle(self, *args, addrport, **options):
        if settings.CELERY_EMBEDDED and not settings.CELERY_TASK_ALWAYS_EAGER:
            start_embedded_worker()
            self.stdout.write("Tasks run in-process (no CELERY_BROKER_URL): embedded worker and beat started.")
        call_command("runserver", addrport, use_reloader=False, use_threading=True, insecure_serving=True)


def start_embedded_worker() -> None:
    """A Celery worker and beat as daemon threads of this process, on the in-memory broker."""
    from celery.beat import EmbeddedService

    from platform_site.celery import app

    worker = app.WorkController(
        pool_cls="threads",
        concurrency=2,
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
        loglevel="INFO",
    )
    threading.Thread(target=worker.start, name="celery-worker", daemon=True).start()
    beat = EmbeddedService(app, thread=True, schedule_filename=str(settings.VAR_DIR / "celerybeat-schedule"))
    beat.start()
