"""Routes of the fields service (mounted at `/services/fields/api/`), without trailing slashes."""

from django.urls import path

from .views import (
    BoundaryViewSet,
    FarmListViewSet,
    FarmViewSet,
    FieldListViewSet,
    FieldViewSet,
    GrowerListViewSet,
    GrowerViewSet,
)

USER = "users/<str:coreUserId>"
FIELD = f"{USER}/fields/<str:fieldId>"

urlpatterns = [
    path("fields", FieldListViewSet.as_view({"get": "list"}), name="field-list"),
    path(
        "fields/query/intersects", FieldListViewSet.as_view({"post": "query_intersects"}), name="field-query-intersects"
    ),
    path(f"{USER}/fields", FieldViewSet.as_view({"post": "create"}), name="field-create"),
    path(f"{USER}/fields/intersects", FieldViewSet.as_view({"post": "intersects"}), name="field-intersects"),
    path(f"{USER}/fields/intersect", FieldViewSet.as_view({"post": "intersect"}), name="field-intersect"),
    path(
        f"{USER}/fields/<str:pk>",
        FieldViewSet.as_view({"get": "retrieve", "patch": "partial_update", "delete": "destroy"}),
        name="field-detail",
    ),
    path(f"{USER}/fields/<str:pk>/weather", FieldViewSet.as_view({"get": "weather"}), name="field-weather"),
    path(f"{FIELD}/boundaries", BoundaryViewSet.as_view({"get": "list"}), name="boundary-list"),
    path(f"{FIELD}/boundaries/<str:pk>", BoundaryViewSet.as_view({"get": "retrieve"}), name="boundary-detail"),
    path(f"{FIELD}/boundary", BoundaryViewSet.as_view({"get": "active", "put": "replace"}), name="boundary-active"),
    path("farms", FarmListViewSet.as_view({"get": "list"}), name="farm-list"),
    path(f"{USER}/farms", FarmViewSet.as_view({"post": "create"}), name="farm-create"),
    path(f"{USER}/farms/<str:pk>", FarmViewSet.as_view({"get": "retrieve", "put": "update"}), name="farm-detail"),
    path("growers", GrowerListViewSet.as_view({"get": "list"}), name="grower-list"),
    path(f"{USER}/growers", GrowerViewSet.as_view({"post": "create"}), name="grower-create"),
    path(f"{USER}/growers/<str:pk>", GrowerViewSet.as_view({"get": "retrieve", "put": "update"}), name="grower-detail"),
]
