import django_filters

from .models import MagicLink


class MagicLinkFilterSet(django_filters.FilterSet):
    """`coreUserId`: the links of one core user."""

    coreUserId = django_filters.UUIDFilter(field_name="core_user_id")

    class Meta:
        model = MagicLink
        fields: list[str] = []
