"""Batch and file routes, included at `/services/operations/api/`."""

from django.urls import path

from platform_site.api.parsers import JSONParser

from .views import BatchViewSet, FileViewSet

files = FileViewSet.as_view({"get": "list"})
file = FileViewSet.as_view({"get": "retrieve"})
batches = BatchViewSet.as_view({"get": "list", "post": "create"})
batch = BatchViewSet.as_view({"get": "retrieve"})

urlpatterns = [
    path("files", files, name="file-list"),
    path("files/merge", FileViewSet.as_view({"post": "merge"}), name="file-merge"),
    path("files/<str:pk>", file, name="file-detail"),
    path("files/<str:pk>/images", FileViewSet.as_view({"get": "images"}), name="file-images"),
    path("files/<str:pk>/images/<str:prop>.png", FileViewSet.as_view({"get": "image"}), name="file-image"),
    path("files/<str:pk>/summary", FileViewSet.as_view({"get": "summary"}), name="file-summary"),
    path("files/<str:pk>/units", FileViewSet.as_view({"get": "units"}), name="file-units"),
    path("files/<str:pk>/status", FileViewSet.as_view({"get": "step_status"}), name="file-status"),
    path(
        "files/<str:pk>/standardGeojson", FileViewSet.as_view({"get": "standard_geojson"}), name="file-standard-geojson"
    ),
    path("files/<str:pk>/rawGeojson", FileViewSet.as_view({"get": "raw_geojson"}), name="file-raw-geojson"),
    path("files/<str:pk>/originalFile", FileViewSet.as_view({"get": "original_file"}), name="file-original"),
    path("batch", batches, name="batch-list"),
    path("batch/<str:pk>", batch, name="batch-detail"),
    path("batch/<str:pk>/status", BatchViewSet.as_view({"get": "batch_status"}), name="batch-status"),
    # (the view reads uploads, a form; a retry takes no body, or `{}`)
    path(
        "batch/<str:pk>/retry", BatchViewSet.as_view({"put": "retry"}, parser_classes=[JSONParser]), name="batch-retry"
    ),
]
