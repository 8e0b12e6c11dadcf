from django.urls import path

from .views import FailedCallViewSet, WebhookViewSet

urlpatterns = [
    path("webhooks", WebhookViewSet.as_view({"get": "list", "post": "create"}), name="webhook-list"),
    path("webhooks/failed-calls", FailedCallViewSet.as_view({"get": "list"}), name="webhook-failed-calls"),
    path("webhooks/<str:pk>", WebhookViewSet.as_view({"get": "retrieve", "delete": "destroy"}), name="webhook-detail"),
]
