from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from drf_spectacular.plumbing import ResolvedComponent
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from platform_site.api.schema import document_extra_properties
from platform_site.api.serializers import ApiSerializer, StrictCharField, TimestampField, format_timestamp

from .models import EVENT_ALIASES, SECRET_MIN_LENGTH, DeliveryAttempt, EventType, Webhook
from .services import webhook_events

EVENT_NAMES = sorted([*EventType.values, *EVENT_ALIASES])


class EventsField(serializers.ListField):
    """A list of event names, or one name alone, taken as a list of one (the spec writes `events` as an enum)."""

    def to_internal_value(self, data):
        return super().to_internal_value([data] if isinstance(data, str) else data)


class EventsFieldSchema(OpenApiSerializerFieldExtension):
    """OpenAPI: one event name or a list of them, as `EventsField` takes (the schema said a list only, so a client
    generated from it could not send the name alone the spec shows)."""

    target_class = EventsField

    def map_serializer_field(self, auto_schema, direction):
        names = ResolvedComponent(
            name="WebhookEventNameEnum",
            type=ResolvedComponent.SCHEMA,
            object="WebhookEventNameEnum",
            schema={"type": "string", "enum": EVENT_NAMES},
        )
        auto_schema.registry.register_on_missing(names)
        listed = {"type": "array", "items": names.ref, "minItems": 1}
        return {"oneOf": [listed, names.ref], "description": "The events to receive: a list of names, or one name."}


class WebhookCreateSerializer(ApiSerializer):
    """`{name, url, secret, events: [...]}`; the secret signs deliveries and is never returned."""

    name = StrictCharField(max_length=255)
    # Not trimmed: a URL with spaces is refused (`urlsafety.url_host`), not quietly changed.
    url = serializers.URLField(max_length=2000, trim_whitespace=False)
    secret = StrictCharField(
        min_length=SECRET_MIN_LENGTH,
        max_length=512,
        trim_whitespace=False,
        error_messages={"min_length": f"The secret must be at least {SECRET_MIN_LENGTH} characters long."},
    )
    events = EventsField(child=serializers.ChoiceField(choices=EVENT_NAMES), allow_empty=False)

    def validate_url(self, value):
        if not value.lower().startswith(("http://", "https://")):
            raise serializers.ValidationError("Only http and https URLs can receive webhooks.")
        return value

    def validate_secret(self, value):
        if not value.strip():
            raise serializers.ValidationError("The secret must not be empty.")
        return value


class WebhookSerializer(serializers.ModelSerializer):
    """`{id, name, url, events, createdTime}`."""

    events = serializers.SerializerMethodField()
    createdTime = TimestampField(source="created_at")

    class Meta:
        model = Webhook
        fields = ["id", "name", "url", "events", "createdTime"]

    @extend_schema_field(serializers.ListField(child=serializers.ChoiceField(choices=EventType.choices)))
    def get_events(self, webhook) -> list[str]:
        return webhook_events(webhook)


class FailedCallSerializer(serializers.ModelSerializer):
    """A failed delivery attempt: `{id, webhookId, deliveryId, url, event, createdAt, status, response,
    requestBody, connectionError?, attempt, willRetry, nextAttemptAt?}`."""

    class Meta:
        model = DeliveryAttempt
        fields = ["id"]

    def to_representation(self, attempt):
        delivery = attempt.delivery
        body = {
            "id": str(attempt.id),
            "webhookId": str(delivery.webhook_id),
            "deliveryId": str(delivery.id),
            # Where this attempt was posted (the webhook's URL may have changed since); an attempt recorded before
            # that was kept shows the webhook's URL.
            "url": attempt.url or delivery.webhook.url,
            "event": delivery.event,
            "createdAt": format_timestamp(attempt.attempted_at),
            "status": attempt.status_code,
            "response": attempt.response,
            "requestBody": delivery.body,
            "attempt": attempt.number,
            "willRetry": attempt.will_retry,
            "durationMs": attempt.duration_ms,
        }
        if attempt.error:
            body["connectionError"] = attempt.error
        # The retry of an earlier attempt was the attempt after it: only the latest says when the next one is.
        if attempt.will_retry and delivery.status == delivery.Status.PENDING and attempt.number == delivery.attempts:
            body["nextAttemptAt"] = format_timestamp(delivery.next_attempt_at)
        return body


# --- OpenAPI documentation: the keys `FailedCallSerializer.to_representation` writes -------------------------------
_TIMESTAMP = {"type": "string", "format": "date-time"}
document_extra_properties(
    FailedCallSerializer,
    {
        "webhookId": {"type": "string", "format": "uuid"},
        "deliveryId": {"type": "string", "format": "uuid"},
        "url": {"type": "string", "format": "uri"},
        "event": serializers.ChoiceField(choices=EventType.choices),  # the component of a webhook's `events`
        "createdAt": {**_TIMESTAMP, "description": "When the attempt was made."},
        "status": {
            "type": ["integer", "null"],
            "description": "The receiver's HTTP status; null when no answer came (see `connectionError`).",
        },
        "response": {"type": "string", "description": "The start of the receiver's answer (may be empty)."},
        "requestBody": {"type": "string", "description": "The exact JSON body that was posted (and signed)."},
        "attempt": {"type": "integer", "minimum": 1},
        "willRetry": {"type": "boolean"},
        "durationMs": {"type": "integer", "minimum": 0},
        "connectionError": {"type": "string", "description": "Why no answer came (only then)."},
        "nextAttemptAt": {
            **_TIMESTAMP,
            "description": "When it is tried again (only on the latest attempt of a delivery still pending).",
        },
    },
    required=(
        "webhookId",
        "deliveryId",
        "url",
        "event",
        "createdAt",
        "status",
        "response",
        "requestBody",
        "attempt",
        "willRetry",
        "durationMs",
    ),
)


# (each write serializer's answer, defined after it: `RejectUnknownFieldsMixin.answered_by`)
WebhookCreateSerializer.answered_by = WebhookSerializer
