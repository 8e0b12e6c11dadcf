"""Shapes of operations (supplement "Operations") and the cropOperationByField request and response."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from conversion.models import OperationType
from platform_site.api.serializers import (
    ApiModelSerializer,
    ApiSerializer,
    StrictCharField,
    StrictUUIDField,
    TimestampField,
)

from .models import Operation


class OperationFieldCoverageSerializer(serializers.Serializer):
    """One field an operation covers, and how much of it (OpenAPI documentation only)."""

    id = serializers.CharField(help_text="The field's id.")
    coverage = serializers.FloatField()


class OperationSerializer(ApiModelSerializer):
    """`id, coreUserId, apiOwnerUsername, operationType, startTime, endTime, updatedTime, provider, files,
    fields: [{id, coverage}]` plus `status` and `coreFileId` (the automerged file holding the merged points)."""

    coreUserId = serializers.UUIDField(source="core_user_id", read_only=True)
    apiOwnerUsername = serializers.CharField(source="core_user.owner.username", read_only=True)
    operationType = serializers.ChoiceField(choices=OperationType.choices, source="operation_type", read_only=True)
    startTime = TimestampField(source="start_time", read_only=True, allow_null=True)
    endTime = TimestampField(source="end_time", read_only=True, allow_null=True)
    updatedTime = TimestampField(source="updated_time", read_only=True)
    coreFileId = serializers.UUIDField(source="merged_file_id", read_only=True, allow_null=True)
    files = serializers.SerializerMethodField()
    fields = serializers.SerializerMethodField(method_name="field_coverage")

    class Meta:
        model = Operation
        fields = [
            "id",
            "coreUserId",
            "apiOwnerUsername",
            "operationType",
            "startTime",
            "endTime",
            "updatedTime",
            "provider",
            "status",
            "coreFileId",
            "files",
            "fields",
        ]
        read_only_fields = fields

    def get_files(self, operation) -> list[str]:
        return [str(f.pk) for f in sorted(operation.files.all(), key=lambda f: (f.start_time, str(f.pk)))]

    @extend_schema_field(OperationFieldCoverageSerializer(many=True))
    def field_coverage(self, operation) -> list[dict]:
        return [{"id": link.field.public_id, "coverage": link.coverage} for link in operation.field_links.all()]


class OperationCropSerializer(ApiSerializer):
    """`POST /operations/cropOperationByField` body: the operation and, optionally, the field."""

    id = StrictUUIDField()
    fieldId = StrictCharField(required=False, allow_null=True, max_length=255)


class OperationCropResultSerializer(serializers.Serializer):
    """`{id, message, coreFileId}`: the operation, what happens, the file to follow."""

    id = serializers.UUIDField(source="operation_id")
    message = serializers.SerializerMethodField()
    coreFileId = serializers.UUIDField(source="file_id")

    def get_message(self, crop) -> str:
        return (
            f"Cropping operation {crop.operation_id} to field {crop.field.public_id}; "
            f"follow file {crop.file_id} (GET /files/{crop.file_id}/status or its events)."
        )
