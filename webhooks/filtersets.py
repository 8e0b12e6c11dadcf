import django_filters

from .models import DeliveryAttempt


class FailedCallFilterSet(django_filters.FilterSet):
    """`GET /webhooks/failed-calls`: webhookId, deliveryId (another owner's ids match nothing)."""

    webhookId = django_filters.UUIDFilter(field_name="delivery__webhook_id")
    deliveryId = django_filters.UUIDFilter(field_name="delivery_id")

    class Meta:
        model = DeliveryAttempt
        fields: list[str] = []
