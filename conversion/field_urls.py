"""Operation files of a field, included under the fields service prefix `/services/fields/api/`."""

from django.urls import path

from .views import FieldFileDeprecatedListViewSet, FieldFileViewSet

prefix = "users/<str:coreUserId>/fields/<str:fieldId>/operations"

urlpatterns = [
    path(f"{prefix}/files", FieldFileViewSet.as_view({"get": "list"}), name="field-file-list"),
    path(f"{prefix}/files/<str:pk>", FieldFileViewSet.as_view({"get": "retrieve"}), name="field-file-detail"),
    # Deprecated paths: the same list, and the one file as a one-element array.
    path(prefix, FieldFileDeprecatedListViewSet.as_view({"get": "list"}), name="field-file-list-deprecated"),
    path(f"{prefix}/<str:pk>", FieldFileViewSet.as_view({"get": "retrieve_outline"}), name="field-file-deprecated"),
]
