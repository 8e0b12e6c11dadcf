"""What the API keeps of its own requests."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class IdempotentRequest(models.Model):
    """A creating POST sent with an `Idempotency-Key` (`platform_site.api.idempotency`), kept with its answer so
    that a retry with the key gets that answer, not a second creation. Per API owner; forgotten after
    `idempotency.KEY_LIFETIME` (the hourly sweep, or the key's next use)."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    # The core user the request's address names, if any: its deletion takes the answer (its data) with it.
    core_user = models.ForeignKey("accounts.CoreUser", null=True, on_delete=models.CASCADE, related_name="+")
    key = models.CharField(max_length=255)
    # What the request asked for: its method, path, query and parsed body (SHA-256, hex).
    fingerprint = models.CharField(max_length=64)
    created_time = models.DateTimeField(default=timezone.now, db_index=True)
    # The answer, written before the claim commits: no other request sees a row without one.
    status_code = models.PositiveSmallIntegerField(default=0)
    content_type = models.CharField(max_length=255, blank=True)
    location = models.TextField(blank=True)
    content = models.BinaryField(default=b"")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "key"], name="idempotentrequest_unique_per_owner")]

    def __str__(self):
        return f"{self.key} ({self.status_code})"
