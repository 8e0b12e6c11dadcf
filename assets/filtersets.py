"""Query filters of the assets lists. A value we cannot read (a bad timestamp, number or enum value)
is a 400 with a field error, never ignored and never a 500."""

import django_filters

from platform_site.api.filters import FloatFilter, UtcDateTimeFilter

from .models import Implement, Machine, MachineFile, OriginType, Provider

DISTANCE_UNITS = {"Mile": ("Mile", "mile", "mi"), "mile": ("Mile", "mile", "mi"), "Feet": ("Feet", "feet", "ft")}
DISTANCE_UNITS["ft"] = DISTANCE_UNITS["Feet"]


class MachineFilterSet(django_filters.FilterSet):
    """name (part, case-insensitive), provider and originType (enums), providerOrganizationId,
    serialNumber and vin (exact), createdTime (exact), beforeCreatedTime / afterCreatedTime."""

    name = django_filters.CharFilter(field_name="name", lookup_expr="icontains")
    provider = django_filters.ChoiceFilter(field_name="provider", choices=Provider.choices)
    providerOrganizationId = django_filters.CharFilter(field_name="provider_organization_id")
    serialNumber = django_filters.CharFilter(field_name="serial_number")
    originType = django_filters.ChoiceFilter(field_name="origin_type", choices=OriginType.choices)
    vin = django_filters.CharFilter(field_name="vin")
    createdTime = UtcDateTimeFilter(field_name="created_time", lookup_expr="exact")
    beforeCreatedTime = UtcDateTimeFilter(field_name="created_time", lookup_expr="lt")
    afterCreatedTime = UtcDateTimeFilter(field_name="created_time", lookup_expr="gt")

    class Meta:
        model = Machine
        fields: list[str] = []


class DistanceUnitFilter(django_filters.ChoiceFilter):
    """`Mile`/`mile` and `Feet`/`ft` name the same unit: each matches records stored in either spelling."""

    def filter(self, qs, value):
        if not value:
            return qs
        return qs.filter(**{f"{self.field_name}__in": DISTANCE_UNITS[value]})


class MachineFileFilterSet(django_filters.FilterSet):
    """Every machine file filter of the spec: the file, origin, the record's creation time, start and
    end times (exact or windows), the distance value (exact, greater, less) and its unit."""

    coreFileId = django_filters.UUIDFilter(field_name="core_file_id")
    originType = django_filters.ChoiceFilter(field_name="origin_type", choices=OriginType.choices)
    createdTime = UtcDateTimeFilter(field_name="created_time", lookup_expr="exact")
    beforeCreatedTime = UtcDateTimeFilter(field_name="created_time", lookup_expr="lt")
    afterCreatedTime = UtcDateTimeFilter(field_name="created_time", lookup_expr="gt")
    startTime = UtcDateTimeFilter(field_name="start_time", lookup_expr="exact")
    endTime = UtcDateTimeFilter(field_name="end_time", lookup_expr="exact")
    beforeStartTime = UtcDateTimeFilter(field_name="start_time", lookup_expr="lt")
    afterStartTime = UtcDateTimeFilter(field_name="start_time", lookup_expr="gt")
    beforeEndTime = UtcDateTimeFilter(field_name="end_time", lookup_expr="lt")
    afterEndTime = UtcDateTimeFilter(field_name="end_time", lookup_expr="gt")
    distanceValue = FloatFilter(field_name="distance_value", lookup_expr="exact")
    greaterThanDistanceValue = FloatFilter(field_name="distance_value", lookup_expr="gt")
    lessThanDistanceValue = FloatFilter(field_name="distance_value", lookup_expr="lt")
    distanceUnit = DistanceUnitFilter(field_name="distance_unit", choices=[(u, u) for u in DISTANCE_UNITS])

    class Meta:
        model = MachineFile
        fields: list[str] = []


class ImplementFilterSet(django_filters.FilterSet):
    """coreUserId, provider (enum), providerImplementId, providerOrganizationId, name (part), and
    createdTime / updatedTime: records from that time onward."""

    coreUserId = django_filters.UUIDFilter(field_name="core_user_id")
    provider = django_filters.ChoiceFilter(field_name="provider", choices=Provider.choices)
    providerImplementId = django_filters.CharFilter(field_name="provider_implement_id")
    providerOrganizationId = django_filters.CharFilter(field_name="provider_organization_id")
    createdTime = UtcDateTimeFilter(field_name="created_time", lookup_expr="gte")
    updatedTime = UtcDateTimeFilter(field_name="updated_time", lookup_expr="gte")
    name = django_filters.CharFilter(field_name="name", lookup_expr="icontains")

    class Meta:
        model = Implement
        fields: list[str] = []
