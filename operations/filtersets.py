"""Query filters of `GET /operations`."""

import django_filters

from assets.models import Provider
from conversion.models import OperationType
from platform_site.api.filters import UtcDateTimeFilter

from .models import Operation


class FieldIdFilter(django_filters.CharFilter):
    """Operations covering the field."""

    def filter(self, qs, value):
        if not value:
            return qs
        return qs.filter(pk__in=Operation.objects.filter(field_links__field__public_id=value).values("pk"))


class OperationFilterSet(django_filters.FilterSet):
    """coreUserId, provider, startTime (from then on), updatedTime (from then on), endTime (until then),
    operationType, fieldId."""

    coreUserId = django_filters.UUIDFilter(field_name="core_user_id")
    provider = django_filters.ChoiceFilter(field_name="provider", choices=Provider.choices)
    startTime = UtcDateTimeFilter(field_name="start_time", lookup_expr="gte")
    updatedTime = UtcDateTimeFilter(field_name="updated_time", lookup_expr="gte")
    endTime = UtcDateTimeFilter(field_name="end_time", lookup_expr="lte")
    operationType = django_filters.ChoiceFilter(field_name="operation_type", choices=OperationType.choices)
    fieldId = FieldIdFilter()

    class Meta:
        model = Operation
        fields: list[str] = []
