"""The spec's camelCase shapes of machines, machine files, implements and operators."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from platform_site.api.serializers import (
    ApiModelSerializer,
    ApiSerializer,
    StrictCharField,
    StrictIntegerField,
    TimestampField,
)

from .models import Implement, Machine, MachineFile, Operator, OriginType


class MachineSerializer(ApiModelSerializer):
    """A machine as listed and read."""

    coreUserId = serializers.UUIDField(source="core_user_id", read_only=True)
    providerMachineId = serializers.CharField(source="provider_machine_id", read_only=True, allow_null=True)
    providerOrganizationId = serializers.CharField(source="provider_organization_id", read_only=True, allow_null=True)
    originType = serializers.ChoiceField(source="origin_type", choices=OriginType.choices, read_only=True)
    createdTime = TimestampField(source="created_time", read_only=True)
    serialNumber = serializers.CharField(source="serial_number", read_only=True, allow_null=True)
    modelYear = serializers.IntegerField(source="model_year", read_only=True, allow_null=True)

    class Meta:
        model = Machine
        fields = [
            "id",
            "coreUserId",
            "name",
            "provider",
            "providerMachineId",
            "providerOrganizationId",
            "originType",
            "createdTime",
            "serialNumber",
            "vin",
            "model",
            "make",
            "category",
            "modelYear",
        ]
        read_only_fields = fields


class MachineChangedSerializer(MachineSerializer):
    """Create and update responses also carry `createdAt` (the spec lists it there only)."""

    createdAt = TimestampField(source="created_time", read_only=True)

    class Meta(MachineSerializer.Meta):
        fields = [*MachineSerializer.Meta.fields, "createdAt"]
        read_only_fields = fields


class MachineWriteSerializer(ApiSerializer):
    """Create / update body: name, serialNumber, vin, model, make, category (strings), modelYear.
    On create a non-blank name is required; on update (PATCH) every entry is optional."""

    answered_by = MachineChangedSerializer

    name = StrictCharField(max_length=255)
    serialNumber = StrictCharField(
        source="serial_number", max_length=255, required=False, allow_null=True, allow_blank=True
    )
    vin = StrictCharField(max_length=64, required=False, allow_null=True, allow_blank=True)
    model = StrictCharField(max_length=255, required=False, allow_null=True, allow_blank=True)
    make = StrictCharField(max_length=255, required=False, allow_null=True, allow_blank=True)
    category = StrictCharField(max_length=255, required=False, allow_null=True, allow_blank=True)
    modelYear = StrictIntegerField(source="model_year", required=False, allow_null=True, min_value=1900, max_value=2100)


class MeasureSerializer(serializers.Serializer):
    """`{value, unit}`."""

    value = serializers.FloatField()
    unit = serializers.CharField()


class MachineFileSerializer(ApiModelSerializer):
    """A machine's operation file: id, coreFileId, machineId, startTime, endTime, distance, fuelConsumption."""

    coreFileId = serializers.UUIDField(source="core_file_id", read_only=True)
    machineId = serializers.UUIDField(source="machine_id", read_only=True)
    coreUserId = serializers.UUIDField(source="core_user_id", read_only=True)
    originType = serializers.ChoiceField(source="origin_type", choices=OriginType.choices, read_only=True)
    startTime = TimestampField(source="start_time", read_only=True, allow_null=True)
    endTime = TimestampField(source="end_time", read_only=True, allow_null=True)
    createdTime = TimestampField(source="created_time", read_only=True)
    distance = serializers.SerializerMethodField()
    fuelConsumption = serializers.SerializerMethodField()

    class Meta:
        model = MachineFile
        fields = [
            "id",
            "coreFileId",
            "machineId",
            "coreUserId",
            "originType",
            "startTime",
            "endTime",
            "createdTime",
            "distance",
            "fuelConsumption",
        ]
        read_only_fields = fields

    @staticmethod
    def _measure(value, unit) -> dict | None:
        return None if value is None else {"value": value, "unit": unit}

    @extend_schema_field(MeasureSerializer(allow_null=True))
    def get_distance(self, obj) -> dict | None:
        return self._measure(obj.distance_value, obj.distance_unit)

    @extend_schema_field(MeasureSerializer(allow_null=True))
    def get_fuelConsumption(self, obj) -> dict | None:  # noqa: N802 (the spec's name)
        return self._measure(obj.fuel_consumption_value, obj.fuel_consumption_unit)


class ImplementSerializer(ApiModelSerializer):
    """An implement: all strings, as the spec lists them."""

    coreUserId = serializers.UUIDField(source="core_user_id", read_only=True)
    providerImplementId = serializers.CharField(source="provider_implement_id", read_only=True, allow_null=True)
    providerOrganizationId = serializers.CharField(source="provider_organization_id", read_only=True, allow_null=True)
    originType = serializers.ChoiceField(source="origin_type", choices=OriginType.choices, read_only=True)
    serialNumber = serializers.CharField(source="serial_number", read_only=True, allow_null=True)
    createdTime = TimestampField(source="created_time", read_only=True)
    updatedTime = TimestampField(source="updated_time", read_only=True)

    class Meta:
        model = Implement
        fields = [
            "id",
            "name",
            "provider",
            "providerImplementId",
            "providerOrganizationId",
            "coreUserId",
            "originType",
            "serialNumber",
            "model",
            "make",
            "category",
            "createdTime",
            "updatedTime",
        ]
        read_only_fields = fields


class OperatorSerializer(ApiModelSerializer):
    """An operator: id, name, provider, providerOperatorId, providerOrganizationId, originType,
    license, updatedTime, status."""

    providerOperatorId = serializers.CharField(source="provider_operator_id", read_only=True, allow_null=True)
    providerOrganizationId = serializers.CharField(source="provider_organization_id", read_only=True, allow_null=True)
    originType = serializers.ChoiceField(source="origin_type", choices=OriginType.choices, read_only=True)
    updatedTime = TimestampField(source="updated_time", read_only=True)

    class Meta:
        model = Operator
        fields = [
            "id",
            "name",
            "provider",
            "providerOperatorId",
            "providerOrganizationId",
            "originType",
            "license",
            "updatedTime",
            "status",
        ]
        read_only_fields = fields
