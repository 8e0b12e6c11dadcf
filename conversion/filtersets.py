"""Query filters of the file lists (`GET /files` and the operation files of a field) and of `GET /batch`."""

import django_filters

from assets.models import Provider
from platform_site.api.filters import FloatFilter, UtcDateTimeFilter

from .models import Batch, BatchStatus, File, FileOrigin, FileStatus, OperationType
from .outputs import crop_key


class CropFilter(django_filters.CharFilter):
    """A crop name (case and spacing aside) among the file's crops."""

    def filter(self, qs, value):
        if not value or not value.strip():
            return qs
        key = "|" + crop_key(value) + "|"
        if len(key) > File._meta.get_field("crop_keys").max_length:
            # No file's crops can hold it; and SQLite refuses a LIKE pattern over 50,000 bytes (a 500).
            return qs.none()
        return qs.filter(crop_keys__contains=key)


class FileFilterSet(django_filters.FilterSet):
    """`GET /files`: coreUserId, provider, status, origin, organizationId, batchId, createdTime (from then on),
    updatedTime (from then on: not in the spec's list, which leaves a syncing client no way to find the files that
    changed, as the operations list has), startTime (from then on), endTime (until then), operationType, minArea
    (square metres)."""

    coreUserId = django_filters.UUIDFilter(field_name="core_user_id")
    provider = django_filters.ChoiceFilter(field_name="provider", choices=Provider.choices)
    status = django_filters.ChoiceFilter(field_name="status", choices=FileStatus.choices)
    origin = django_filters.ChoiceFilter(field_name="origin", choices=FileOrigin.choices)
    organizationId = django_filters.CharFilter(field_name="provider_organization_id")
    batchId = django_filters.UUIDFilter(field_name="batch_id")
    createdTime = UtcDateTimeFilter(field_name="created_time", lookup_expr="gte")
    updatedTime = UtcDateTimeFilter(field_name="updated_time", lookup_expr="gte")
    startTime = UtcDateTimeFilter(field_name="start_time", lookup_expr="gte")
    endTime = UtcDateTimeFilter(field_name="end_time", lookup_expr="lte")
    operationType = django_filters.ChoiceFilter(field_name="operation_type", choices=OperationType.choices)
    minArea = FloatFilter(field_name="area", lookup_expr="gte")

    class Meta:
        model = File
        fields: list[str] = []


class FieldFileFilterSet(django_filters.FilterSet):
    """Operation files of a field: operationType, provider, origin, crop, startTime (started after it),
    endTime (ended before it)."""

    operationType = django_filters.ChoiceFilter(field_name="operation_type", choices=OperationType.choices)
    provider = django_filters.ChoiceFilter(field_name="provider", choices=Provider.choices)
    origin = django_filters.ChoiceFilter(field_name="origin", choices=FileOrigin.choices)
    crop = CropFilter()
    startTime = UtcDateTimeFilter(field_name="start_time", lookup_expr="gte")
    endTime = UtcDateTimeFilter(field_name="end_time", lookup_expr="lte")

    class Meta:
        model = File
        fields: list[str] = []


class BatchFilterSet(django_filters.FilterSet):
    """`GET /batch`: coreUserId, provider, status."""

    coreUserId = django_filters.UUIDFilter(field_name="core_user_id")
    provider = django_filters.ChoiceFilter(field_name="provider", choices=Provider.choices)
    status = django_filters.ChoiceFilter(field_name="status", choices=BatchStatus.choices)

    class Meta:
        model = Batch
        fields: list[str] = []
