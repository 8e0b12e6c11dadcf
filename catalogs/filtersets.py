"""Query filters of the catalog lists. Names match on their normalised form, so `name=ROUNDUP` finds
"Roundup PowerMAX"; a malformed coreFileId is a 400."""

import django_filters
from django.db.models import Q

from .models import Product, Variety
from .normalize import crop_name, normalize_name


class NormalizedNameFilter(django_filters.CharFilter):
    """Part of the name, compared in normalised form (case, accents, punctuation, spacing aside)."""

    def filter(self, qs, value):
        if value in (None, ""):
            return qs
        term = normalize_name(value)
        if not term:  # only punctuation or spaces: no name is without letters or digits, so none matches
            return qs.none()
        return qs.filter(normalized_name__contains=term)


class ProductFilterSet(django_filters.FilterSet):
    """`name`: part of the product name."""

    name = NormalizedNameFilter()

    class Meta:
        model = Product
        fields: list[str] = []


class ProductSearchFilterSet(django_filters.FilterSet):
    """`search`: part of the product name; `coreFileId`: products named in that file."""

    search = NormalizedNameFilter()
    coreFileId = django_filters.UUIDFilter(field_name="files__core_file_id", distinct=True)

    class Meta:
        model = Product
        fields: list[str] = []


class OwnerProductFilterSet(django_filters.FilterSet):
    """`normalizedName`: part of the normalised name; `coreFileId`: products named in that file."""

    normalizedName = NormalizedNameFilter()
    coreFileId = django_filters.UUIDFilter(field_name="files__core_file_id", distinct=True)

    class Meta:
        model = Product
        fields: list[str] = []


class CropsFilter(django_filters.CharFilter):
    """`crops=corn` or `crops=corn,soybeans`: varieties seen as any of these crops (case-insensitive)."""

    def filter(self, qs, value):
        crops = [crop_name(c) for c in (value or "").split(",") if c.strip()]
        if not crops:
            return qs
        return qs.filter(Q(files__crop__in=crops)).distinct()


class VarietyFilterSet(django_filters.FilterSet):
    """`name`: part of the variety name; `crops`: one or more crop names, comma-separated."""

    name = NormalizedNameFilter()
    crops = CropsFilter()

    class Meta:
        model = Variety
        fields: list[str] = []
