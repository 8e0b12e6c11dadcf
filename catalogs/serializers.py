"""The camelCase shapes of products, varieties and their owner-wide summaries."""

from rest_framework import serializers

from platform_site.api.serializers import QueryIntegerField, TimestampField

from .models import Product, Variety


class ProductSerializer(serializers.ModelSerializer):
    """A product record: `files` are the ids of the converted files that name it."""

    coreUserId = serializers.UUIDField(source="core_user_id", read_only=True)
    normalizedName = serializers.CharField(source="normalized_name", read_only=True)
    files = serializers.SerializerMethodField()
    createdTime = TimestampField(source="created_time", read_only=True)
    updatedTime = TimestampField(source="updated_time", read_only=True)

    class Meta:
        model = Product
        fields = ["id", "coreUserId", "name", "normalizedName", "files", "createdTime", "updatedTime"]
        read_only_fields = fields

    def get_files(self, obj) -> list[str]:
        return sorted(str(link.core_file_id) for link in obj.files.all())


class VarietySerializer(serializers.ModelSerializer):
    """A variety record with the crops it was seen as and the files that name it."""

    coreUserId = serializers.UUIDField(source="core_user_id", read_only=True)
    normalizedName = serializers.CharField(source="normalized_name", read_only=True)
    crops = serializers.SerializerMethodField()
    files = serializers.SerializerMethodField()
    createdTime = TimestampField(source="created_time", read_only=True)
    updatedTime = TimestampField(source="updated_time", read_only=True)

    class Meta:
        model = Variety
        fields = ["id", "coreUserId", "name", "normalizedName", "crops", "files", "createdTime", "updatedTime"]
        read_only_fields = fields

    def get_crops(self, obj) -> list[str]:
        return sorted({link.crop for link in obj.files.all() if link.crop})

    def get_files(self, obj) -> list[str]:
        return sorted({str(link.core_file_id) for link in obj.files.all()})


class ProductSummarySerializer(serializers.Serializer):
    """One unique product across the owner's core users: normalised name and related file count."""

    normalizedName = serializers.CharField(source="normalized_name")
    fileCount = serializers.IntegerField(source="file_count")


class VarietySummarySerializer(ProductSummarySerializer):
    """One unique variety across the owner's core users, with its crops and related file count."""

    crops = serializers.ListField(child=serializers.CharField())


class ProductSearchQuerySerializer(serializers.Serializer):
    """`maxResults`: 1 to 20 (default 20); more is a 400. `search` and `coreFileId` go to the filterset."""

    maxResults = QueryIntegerField(
        min_value=1, max_value=20, required=False, default=20, help_text="1 to 20, default 20"
    )
