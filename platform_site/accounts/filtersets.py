import django_filters

from .models import CoreUser


class CoreUserFilterSet(django_filters.FilterSet):
    """`email` (exact, case-insensitive), `name` (part of the name), `externalId` (exact)."""

    email = django_filters.CharFilter(field_name="email", lookup_expr="iexact")
    name = django_filters.CharFilter(field_name="name", lookup_expr="icontains")
    externalId = django_filters.CharFilter(field_name="external_id")

    class Meta:
        model = CoreUser
        fields: list[str] = []
