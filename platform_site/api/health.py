"""`GET /health`: whether this instance can serve, for a load balancer's and a monitor's checks. No login, and
nothing of any tenant in it: `{status, database, broker, outbox}`.

- 200 while the database answers: the API takes requests. `status` is `ok`, or `degraded` when the broker cannot be
  reached or sends are waiting in the outbox (`platform_site.outbox`): uploads and merges are accepted, and wait
  for the broker's return. A load balancer keeps the instance; a monitor alerts on `degraded`. Also `degraded`: no
  broker and no worker in this process (`broker: none`; gunicorn started without CELERY_BROKER_URL), where uploads
  are taken and never converted.
- 503 `databaseUnavailable` (the API's own problem, `Retry-After`) when the database does not answer: no request
  can be served; 503 `databaseNotMigrated` while it lacks a migration of this release (`unapplied_migrations`).
"""

import threading
import time

from django.db import connection
from drf_spectacular.utils import extend_schema, inline_serializer
from kombu.exceptions import KombuError
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from platform_site.api.errors import DatabaseNotMigrated, not_migrated_logged
from platform_site.outbox.models import OutboxTask

# How long the broker may take to accept a connection before it counts as unreachable (seconds).
BROKER_CHECK_TIMEOUT_SECONDS = 2.0


# Once the database has every migration of this release it keeps them while the release runs, so that is known for
# good; until then it is asked again at most this often (reading the migrations takes a tenth of a second).
MIGRATIONS_CHECK_SECONDS = 10.0
_migrations = {"applied": False, "checked_at": None, "lock": threading.Lock()}


def unapplied_migrations() -> list[str]:
    """The migrations of this release the database has not applied (`app.name`), in the order `migrate` applies
    them; none once it has them all (a release older than the database has none left either)."""
    with _migrations["lock"]:
        now = time.monotonic()
        if _migrations["applied"]:
            return []
        checked_at = _migrations["checked_at"]
        if checked_at is not None and now - checked_at < MIGRATIONS_CHECK_SECONDS:
            return _migrations["unapplied"]
        from django.db.migrations.executor import MigrationExecutor

        executor = MigrationExecutor(connection)
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
        unapplied = [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
        _migrations.update(applied=not unapplied, checked_at=now, unapplied=unapplied)
        return unapplied


def broker_state() -> str:
    """`embedded` (tasks run in this process: no broker), `none` (no broker, and no worker in this process: what is
    sent is never run), `ok`, or `unavailable`."""
    from platform_site.celery import app, embedded_workers

    if app.conf.task_always_eager:
        return "embedded"
    if app.conf.broker_url.startswith("memory://"):
        return "embedded" if embedded_workers.is_set() else "none"
    try:
        # (Redis's own timeouts too: a host that drops packets held the check for the system's connect timeout.)
        quick = {"socket_connect_timeout": BROKER_CHECK_TIMEOUT_SECONDS, "socket_timeout": BROKER_CHECK_TIMEOUT_SECONDS}
        with app.connection_for_write(transport_options=quick) as broker:
            broker.ensure_connection(max_retries=1, interval_start=0, timeout=BROKER_CHECK_TIMEOUT_SECONDS)
    except (KombuError, OSError):
        return "unavailable"
    return "ok"


class HealthView(APIView):
    operation_summaries = {
        "get": "Check whether this instance can serve (no login)",
    }
    authentication_classes: list = []
    permission_classes: list = []
    problem_responses = {
        "get": {
            503: "The database cannot be reached (`databaseUnavailable`), or lacks migrations of this release "
            "(`databaseNotMigrated`): this instance serves no request. Ask again after `Retry-After` seconds."
        }
    }

    @extend_schema(
        operation_id="health",
        responses=inline_serializer(
            "Health",
            {
                "status": serializers.ChoiceField(["ok", "degraded"]),
                "database": serializers.ChoiceField(["ok"]),
                "broker": serializers.ChoiceField(["ok", "unavailable", "embedded", "none"]),
                "outbox": serializers.ChoiceField(["empty", "waiting"]),
            },
        ),
    )
    def get(self, request):
        with connection.cursor() as cursor:  # (a database that does not answer: the 503 of the error handler)
            cursor.execute("SELECT 1")
        if unapplied := unapplied_migrations():
            # (a request that meets what they make answers the same; this says so before one does)
            not_migrated_logged(f"{len(unapplied)} to apply, the first {unapplied[0]}")
            raise DatabaseNotMigrated()
        broker = broker_state()
        outbox = "waiting" if OutboxTask.objects.exists() else "empty"
        healthy = broker in ("ok", "embedded") and outbox == "empty"
        body = {"status": "ok" if healthy else "degraded", "database": "ok", "broker": broker, "outbox": outbox}
        return Response(body, headers={"Cache-Control": "no-store"})
