"""Task sends the broker refused: recorded after their transaction committed (`outbox_record`, called by
`platform_site.celery.send_on_commit`), and handed to the broker once it takes them again (`outbox_send`, every
minute in beat). The periodic sweeps (CONVERSION_STUCK_AFTER_SECONDS) stay the last resort, for a send that could
not even be recorded."""

import logging
from datetime import timedelta

from django.db import DatabaseError, transaction
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import KombuError

from platform_site.api import request_ids
from platform_site.celery import REQUEST_ID_HEADER, app

from .models import OutboxTask

log = logging.getLogger(__name__)

# A run holds the rows it sends this long; a run that died leaves them to a later one then (sent twice at worst:
# every task sent through the outbox is idempotent).
LEASE = timedelta(minutes=5)
# The most rows one run sends (the task sends itself again when it sent that many: more may wait).
SEND_MAX = 500


def outbox_record(*, task_name: str, args: tuple) -> bool:
    """Keep a task send the broker refused, in a short transaction of its own (the caller's has committed). False
    when even that failed (the database away too): the caller logs it, and the sweeps are the last resort."""
    try:
        with transaction.atomic():
            OutboxTask.objects.create(task_name=task_name, args=list(args), request_id=request_ids.current.get() or "")
    except (DatabaseError, TypeError, ValueError) as exc:
        log.warning("task %s%r could not be kept in the outbox either: %s", task_name, tuple(args), exc)
        return False
    return True


def outbox_send(*, limit: int = SEND_MAX) -> dict[str, int]:
    """Hand recorded tasks to the broker, oldest first, at most `limit`, deleting each row once its send succeeded.
    The same send that failed, not a new attempt: nothing of the task's work is counted here. The first send the
    broker refuses ends the run; that row and the ones after it are kept for the next run. A row whose task is not
    registered here (renamed or removed by an upgrade) is dropped, logged: no worker would run it. Each is sent with
    the id of the request that queued it, not this run's (beat's: none). Rows are leased before they are sent, so two
    runs at once do not send one twice, and nothing is sent under a row lock."""
    now = timezone.now()
    with transaction.atomic():
        free = OutboxTask.objects.filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        ids = list(free.select_for_update(skip_locked=True).order_by("pk").values_list("pk", flat=True)[:limit])
        OutboxTask.objects.filter(pk__in=ids).update(lease_until=now + LEASE)
    rows = list(OutboxTask.objects.filter(pk__in=ids).order_by("pk"))
    counts = {"sent": 0, "kept": 0, "dropped": 0}
    for position, row in enumerate(rows):
        task = app.tasks.get(row.task_name)
        if task is None:
            log.error("outbox: task %s%r is not registered; dropped", row.task_name, tuple(row.args))
            row.delete()
            counts["dropped"] += 1
            continue
        try:
            task.apply_async(args=row.args, headers={REQUEST_ID_HEADER: row.request_id})
        except (KombuError, OSError) as exc:
            kept = [later.pk for later in rows[position:]]
            OutboxTask.objects.filter(pk__in=kept).update(lease_until=None)
            counts["kept"] = len(kept)
            log.warning("outbox: the broker is still unavailable (%s); %d tasks kept for the next run", exc, len(kept))
            break
        row.delete()
        counts["sent"] += 1
    return counts
