"""List filters of `/fields`, `/farms` and `/growers` (the spec's query parameters)."""

import django_filters
from django.db.models import Q

from assets.models import Provider
from platform_site.api.filters import IdFilter

from .models import Farm, Field, Grower


class ProviderFilter(django_filters.ChoiceFilter):
    """`provider`: one of the spec's providers, as on every other list (anything else is a 400: a misspelt name
    answered an empty list). `ServiceOwn` names what was made in the service, which has no provider name."""

    def __init__(self, **kwargs):
        super().__init__(field_name="provider_name", choices=Provider.choices, **kwargs)

    def filter(self, qs, value):
        if value == Provider.SERVICE_OWN:
            return qs.filter(Q(provider_name__isnull=True) | Q(provider_name=""))
        return super().filter(qs, value)


class FieldFilterSet(django_filters.FilterSet):
    """`type` (ORIGINAL | MERGED; anything else is 400), `farmId`, `provider`, `coreUserId`."""

    type = django_filters.ChoiceFilter(field_name="type", choices=Field.Type.choices)
    farmId = IdFilter(field_name="farm_id")
    provider = ProviderFilter()
    coreUserId = django_filters.UUIDFilter(field_name="core_user_id")

    class Meta:
        model = Field
        fields: list[str] = []


class FarmFilterSet(django_filters.FilterSet):
    """`growerId`, `provider`, `coreUserId`."""

    growerId = IdFilter(field_name="grower_id")
    provider = ProviderFilter()
    coreUserId = django_filters.UUIDFilter(field_name="core_user_id")

    class Meta:
        model = Farm
        fields: list[str] = []


class GrowerFilterSet(django_filters.FilterSet):
    """`provider`, `coreUserId`."""

    provider = ProviderFilter()
    coreUserId = django_filters.UUIDFilter(field_name="core_user_id")

    class Meta:
        model = Grower
        fields: list[str] = []
