"""Webhooks of API owners, the deliveries of events to them, and every delivery attempt."""

import uuid

from django.conf import settings
from django.core.validators import MinLengthValidator
from django.db import models
from django.db.models import Q

from platform_site.db.fields import UpdatedTimeField


class EventType(models.TextChoices):
    """Every event the platform emits (supplement "Webhooks and events"). Apps name events from here."""

    FIELD_CREATED = "fieldCreated"
    FIELD_UPDATED = "fieldUpdated"
    MERGED_FIELD_CREATED = "mergedFieldCreated"
    MERGED_FIELD_UPDATED = "mergedFieldUpdated"
    FIELD_BOUNDARY_CREATED = "fieldBoundaryCreated"
    FIELD_BOUNDARY_UPDATED = "fieldBoundaryUpdated"
    BATCH_UPLOAD_PROCESSING_FINISHED = "batchUploadProcessingFinished"
    UPLOADED_FILE_PROCESSING_FINISHED = "uploadedFileProcessingFinished"
    UPLOADED_FILE_PROCESSING_FAILED = "uploadedFileProcessingFailed"
    MERGED_FILE_PROCESSING_FINISHED = "mergedFileProcessingFinished"
    MERGED_FILE_PROCESSING_FAILED = "mergedFileProcessingFailed"
    AUTOMERGED_FILE_PROCESSING_FINISHED = "automergedFileProcessingFinished"
    AUTOMERGED_FILE_PROCESSING_FAILED = "automergedFileProcessingFailed"
    PROVIDER_FILE_PROCESSING_FINISHED = "providerFileProcessingFinished"
    PROVIDER_FILE_PROCESSING_FAILED = "providerFileProcessingFailed"
    OPERATION_CREATED = "operationCreated"
    OPERATION_UPDATED = "operationUpdated"
    OPERATION_PROCESSING_FINISHED = "operationProcessingFinished"
    MACHINE_CREATED = "machineCreated"
    MACHINE_UPDATED = "machineUpdated"
    MACHINE_DELETED = "machineDeleted"
    IMPLEMENT_CREATED = "implementCreated"
    IMPLEMENT_UPDATED = "implementUpdated"
    CREDENTIALS_UNAUTHENTICATED = "credentialsUnauthenticated"
    CREDENTIALS_LIMITED_PERMISSION = "credentialsLimitedPermission"
    NEW_SATELLITE_IMAGE = "newSatelliteImage"


# Spellings accepted on registration and stored as the canonical name.
EVENT_ALIASES = {"newSatelliteImages": EventType.NEW_SATELLITE_IMAGE}


# The shortest signing secret a webhook takes (the API and the admin): a receiver's check is only as strong as the
# secret, and a short one can be found by trying every string against one signed delivery.
SECRET_MIN_LENGTH = 16


class Webhook(models.Model):
    """A server URL of an API owner that receives the events it listens to, signed with `secret`."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="webhooks")
    name = models.CharField(max_length=255)
    url = models.URLField(max_length=2000)
    # Needed in clear to sign each delivery; never returned by the API.
    secret = models.CharField(max_length=512, validators=[MinLengthValidator(SECRET_MIN_LENGTH)])
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.name} ({self.url})"


class WebhookEvent(models.Model):
    """One event a webhook listens to. The unique constraint is the "no two webhooks of one owner on
    the same event" rule, enforced by the database even under concurrent registrations."""

    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="subscriptions")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    event = models.CharField(max_length=64, choices=EventType.choices)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["owner", "event"], name="webhook_event_once_per_owner")]

    def __str__(self):
        return f"{self.event} -> {self.webhook_id}"


class Delivery(models.Model):
    """One event to post to one webhook. Written in the emitter's transaction, sent after commit."""

    class Status(models.TextChoices):
        PENDING = "PENDING"
        SUCCEEDED = "SUCCEEDED"
        FAILED = "FAILED"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    webhook = models.ForeignKey(Webhook, on_delete=models.CASCADE, related_name="deliveries")
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    event = models.CharField(max_length=64, choices=EventType.choices)
    core_user_id = models.UUIDField(null=True, blank=True)
    # The exact bytes that are signed and posted (compact JSON).
    body = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    # A worker holds the delivery until then; a dead worker's claim simply runs out.
    lease_until = models.DateTimeField(null=True, blank=True)
    # The X-Request-Id of the request whose change fired it ("" for none): its log lines name it, whichever task
    # posts it (a post handed over runs in the task of another request's delivery).
    request_id = models.CharField(max_length=128, blank=True, default="", db_default="")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = UpdatedTimeField()

    class Meta:
        indexes = [
            models.Index(fields=["status", "next_attempt_at"]),
            # An owner's deliveries being posted (`_owner_busy`, before each post) and due (`_hand_over`, after
            # each): through the owner's index alone, both read every delivery the owner has kept, delivered ones
            # (kept WEBHOOK_DELIVERED_KEEP_DAYS) included, and each post took longer as the history grew.
            models.Index(fields=["owner", "status", "lease_until"], name="webhooks_delivery_owner_lease"),
            models.Index(fields=["owner", "status", "next_attempt_at"], name="webhooks_delivery_owner_due"),
        ]
        verbose_name_plural = "deliveries"

    def __str__(self):
        return f"{self.event} -> {self.webhook_id} ({self.status})"


class DeliveryAttempt(models.Model):
    """One POST of a delivery: what the receiver answered, or why there was no answer."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    delivery = models.ForeignKey(Delivery, on_delete=models.CASCADE, related_name="attempt_log")
    # The delivery's owner, kept with the attempt so that `failed-calls` reads the owner's failed attempts alone
    # (through the delivery, it read every delivery the owner kept). Null only for an attempt recorded by a release
    # before it, which migration 0006 gave its delivery's owner.
    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", null=True, db_index=False
    )
    number = models.PositiveIntegerField()
    attempted_at = models.DateTimeField(auto_now_add=True)
    # The address posted to: a webhook's URL may be changed (in the admin) while its deliveries wait for a retry,
    # and each attempt is listed with where it went. Attempts recorded before it was kept were given their webhook's
    # URL by migration 0005 (empty: written by a release without it, listed with the webhook's URL).
    url = models.URLField(max_length=2000, blank=True, db_default="", default="")
    status_code = models.PositiveIntegerField(null=True, blank=True)
    response = models.TextField(blank=True, default="")
    error = models.TextField(blank=True, default="")
    duration_ms = models.PositiveIntegerField(default=0)
    succeeded = models.BooleanField(default=False)
    will_retry = models.BooleanField(default=False)

    class Meta:
        ordering = ["-attempted_at"]
        indexes = [
            models.Index(fields=["succeeded", "attempted_at"]),
            models.Index(
                fields=["owner", "attempted_at"], condition=Q(succeeded=False), name="webhooks_attempt_owner_failed"
            ),
        ]

    def __str__(self):
        return f"attempt {self.number} of {self.delivery_id}: {self.status_code or self.error[:40]}"
