"""Operation routes, included at `/services/operations/api/`."""

from django.urls import path

from .views import OperationViewSet

urlpatterns = [
    path("operations", OperationViewSet.as_view({"get": "list"}), name="operation-list"),
    path(
        "operations/cropOperationByField",
        OperationViewSet.as_view({"post": "crop"}),
        name="operation-crop",
    ),
    path("operations/<str:pk>", OperationViewSet.as_view({"get": "retrieve"}), name="operation-detail"),
    path("operations/<str:pk>/summary", OperationViewSet.as_view({"get": "summary"}), name="operation-summary"),
    path("operations/<str:pk>/units", OperationViewSet.as_view({"get": "units"}), name="operation-units"),
    path("operations/<str:pk>/images", OperationViewSet.as_view({"get": "images"}), name="operation-images"),
    path(
        "operations/<str:pk>/images/<str:prop>.png",
        OperationViewSet.as_view({"get": "image"}),
        name="operation-image",
    ),
    path(
        "operations/<str:pk>/standardGeojson",
        OperationViewSet.as_view({"get": "standard_geojson"}),
        name="operation-standard-geojson",
    ),
]
