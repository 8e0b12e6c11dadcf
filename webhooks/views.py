from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from platform_site.api.errors import DomainError
from platform_site.api.viewsets import OwnerScopedViewSet, deleted_response

from . import services
from .filtersets import FailedCallFilterSet
from .models import DeliveryAttempt, Webhook
from .serializers import FailedCallSerializer, WebhookCreateSerializer, WebhookSerializer


def _events_as_sent(exc: ValidationError | DomainError) -> None:
    """`events` sent as one name (taken as a list of one): its errors name `events`, as sent, not `events[0]`."""
    if isinstance(exc, DomainError):
        for error in exc.field_errors or []:
            if error.get("field") == "events[0]":
                error["field"] = "events"
    elif isinstance(exc.detail, dict) and isinstance(exc.detail.get("events"), dict):
        exc.detail["events"] = exc.detail["events"].get(0, exc.detail["events"])


class WebhookViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, OwnerScopedViewSet):
    """Webhooks of the API owner: register, list, read, delete (no update: delete and create again)."""

    operation_summaries = {
        "list": "List webhooks",
        "create": "Register a webhook",
        "retrieve": "Get a webhook",
        "destroy": "Delete a webhook",
    }

    serializer_class = WebhookSerializer
    # The spec's list answers "all webhooks": with at most one per event type, one default page holds them all.
    page_size_default = 100
    sort_fields = {"id": "id", "name": "name", "createdTime": "created_at", "url": "url"}
    default_sort = ("created_at",)

    def get_queryset(self):
        return Webhook.objects.filter(owner=self.owner).prefetch_related("subscriptions")

    @extend_schema(request=WebhookCreateSerializer, responses={201: WebhookSerializer})
    def create(self, request):
        try:
            data = WebhookCreateSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            webhook = services.webhook_register(owner=self.owner, **data.validated_data)
        except (ValidationError, DomainError) as exc:
            if isinstance(request.data, dict) and isinstance(request.data.get("events"), str):
                _events_as_sent(exc)
            raise
        return Response(WebhookSerializer(webhook).data, status=status.HTTP_201_CREATED)

    def destroy(self, request, pk=None):
        return deleted_response(services.webhook_delete(webhook=self.get_object()))


class FailedCallViewSet(mixins.ListModelMixin, OwnerScopedViewSet):
    """Every failed delivery attempt of the owner's webhooks, newest first."""

    operation_summaries = {
        "list": "List failed webhook delivery attempts",
    }

    serializer_class = FailedCallSerializer
    filterset_class = FailedCallFilterSet
    sort_fields = {"createdAt": "attempted_at"}
    default_sort = ("-attempted_at",)

    def get_queryset(self):
        return DeliveryAttempt.objects.filter(owner=self.owner, succeeded=False).select_related("delivery__webhook")
