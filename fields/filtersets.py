"""List filters of `/fields`, `/farms` and `/growers` (the spec's query parameters)."""

import django_filters

from platform_site.api.filters import IdFilter

from .models import Farm, Field, Grower


class FieldFilterSet(django_filters.FilterSet):
    """`type` (ORIGINAL | MERGED; anything else is 400), `farmId`, `provider`, `coreUserId`."""

    type = django_filters.ChoiceFilter(field_name="type", choices=Field.Type.choices)
    farmId = IdFilter(field_name="farm_id")
    provider = django_filters.CharFilter(field_name="provider_name")
    coreUserId = django_filters.UUIDFilter(field_name="core_user_id")

    class Meta:
        model = Field
        fields: list[str] = []


class FarmFilterSet(django_filters.FilterSet):
    """`growerId`, `provider`, `coreUserId`."""

    growerId = IdFilter(field_name="grower_id")
    provider = django_filters.CharFilter(field_name="provider_name")
    coreUserId = django_filters.UUIDFilter(field_name="core_user_id")

    class Meta:
        model = Farm
        fields: list[str] = []


class GrowerFilterSet(django_filters.FilterSet):
    """`provider`, `coreUserId`."""

    provider = django_filters.CharFilter(field_name="provider_name")
    coreUserId = django_filters.UUIDFilter(field_name="core_user_id")

    class Meta:
        model = Grower
        fields: list[str] = []
