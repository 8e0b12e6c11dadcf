from django.core.serializers.json import DjangoJSONEncoder
from django.db import models
from django.utils import timezone


class OutboxTask(models.Model):
    """A task send the broker refused (Redis down) after its transaction committed: the task's registered name and
    its JSON arguments, kept until `outbox_send` hands it to the broker (then deleted). Its work is waiting on it
    meanwhile (a batch RECEIVED, a merge processing); sent again, it is the same send, not a new attempt."""

    task_name = models.CharField(max_length=200)
    args = models.JSONField(default=list, encoder=DjangoJSONEncoder)  # (ids; a UUID is sent as its text)
    created_at = models.DateTimeField(default=timezone.now)
    # Held by the run sending it until then (a run that died leaves it to the next one once this has passed).
    lease_until = models.DateTimeField(null=True, blank=True)
    # The X-Request-Id of the request that queued it ("" for none), sent on with it (`platform_site.celery`).
    request_id = models.CharField(max_length=128, blank=True, default="", db_default="")

    def __str__(self):
        return f"{self.task_name}{tuple(self.args)!r} (not sent since {self.created_at:%Y-%m-%d %H:%M:%S})"
