"""Shapes of batches and files (supplement "Files and batches"), and the upload / merge request bodies."""

from django.urls import reverse
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from assets.models import Provider
from configs.serializers import ColorRampField
from platform_site.api.schema import body_example, document_extra_properties
from platform_site.api.serializers import ApiModelSerializer, ApiSerializer, StrictUUIDField, TimestampField

from .links import file_field_ids, file_machine_ids
from .models import Batch, File, FileStatus, OperationType

UPLOAD_PROVIDERS = Provider.values


class BatchUploadQuerySerializer(ApiSerializer):
    """`coreUserId` and `provider` of an upload, from the query string or the form fields."""

    coreUserId = serializers.UUIDField(error_messages={"invalid": "Must be a core user id (UUID)."})
    provider = serializers.ChoiceField(choices=UPLOAD_PROVIDERS)


class BatchReceivedSerializer(ApiModelSerializer):
    """The upload (and retry) response."""

    coreUserId = serializers.UUIDField(source="core_user_id", read_only=True)
    fileName = serializers.CharField(source="file_name", read_only=True)
    uploadTimestamp = TimestampField(source="upload_timestamp", read_only=True)

    class Meta:
        model = Batch
        fields = ["id", "coreUserId", "fileName", "size", "provider", "status", "uploadTimestamp"]
        read_only_fields = fields


class BatchSerializer(ApiModelSerializer):
    """`GET /batch/{id}`: status, statusDetails (FAILED only), failureReason, the generated file ids."""

    coreUserId = serializers.UUIDField(source="core_user_id", read_only=True)
    fileName = serializers.CharField(source="file_name", read_only=True)
    uploadTimestamp = TimestampField(source="upload_timestamp", read_only=True)
    files = serializers.SerializerMethodField()

    class Meta:
        model = Batch
        fields = ["id", "coreUserId", "provider", "fileName", "size", "status", "uploadTimestamp", "files"]
        read_only_fields = fields

    def get_files(self, batch) -> list[str]:
        ids = getattr(batch, "file_ids", None)
        if ids is None:
            ids = [str(i) for i in batch.files.order_by("dataset__position", "part").values_list("id", flat=True)]
        return ids

    def to_representation(self, batch):
        data = super().to_representation(batch)
        if batch.status_details:
            data["statusDetails"] = batch.status_details
        if batch.failure_reason:
            data["failureReason"] = batch.failure_reason
        return data


class FileSerializer(ApiModelSerializer):
    """A file record. `fields` and `machines` come from the context maps `field_ids` and `machine_ids` when the
    view has built them for a page."""

    coreUserId = serializers.UUIDField(source="core_user_id", read_only=True)
    apiOwnerUsername = serializers.CharField(source="core_user.owner.username", read_only=True)
    # Only on a file of an upload: merged, automerged, cropped and provider files have no batch (supplement `batchId?`,
    # as the webhook bodies of their events leave it out).
    batchId = serializers.UUIDField(source="batch_id", read_only=True)
    fileName = serializers.CharField(source="file_name", read_only=True)
    fileFormat = serializers.CharField(source="file_format", read_only=True)
    providerFileId = serializers.CharField(source="provider_file_id", read_only=True, allow_null=True)
    organizationId = serializers.CharField(source="provider_organization_id", read_only=True, allow_null=True)
    operationType = serializers.ChoiceField(
        choices=OperationType.choices, source="operation_type", read_only=True, allow_null=True
    )
    createdTime = TimestampField(source="created_time", read_only=True)
    updatedTime = TimestampField(source="updated_time", read_only=True)
    startTime = TimestampField(source="start_time", read_only=True, allow_null=True)
    endTime = TimestampField(source="end_time", read_only=True, allow_null=True)
    sizeInBytes = serializers.IntegerField(source="size_in_bytes", read_only=True, allow_null=True)
    pointCount = serializers.IntegerField(source="point_count", read_only=True, allow_null=True)
    machines = serializers.ListField(source="machine_ids", child=serializers.UUIDField(), read_only=True)
    crops = serializers.ListField(child=serializers.CharField(), read_only=True)
    varieties = serializers.ListField(child=serializers.CharField(), read_only=True)
    warnings = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="What the conversion noted about the points: data left unread, values kept unconverted, values "
        "derived by assumption. In the order they were noted; empty when none. At most 100 entries of at most 1000 "
        "characters each (a last entry says how many more there were). Plain text for people: not to be parsed.",
    )

    class Meta:
        model = File
        fields = [
            "id",
            "coreUserId",
            "apiOwnerUsername",
            "batchId",
            "fileName",
            "fileFormat",
            "provider",
            "providerFileId",
            "organizationId",
            "origin",
            "operationType",
            "status",
            "createdTime",
            "updatedTime",
            "startTime",
            "endTime",
            "sizeInBytes",
            "pointCount",
            "machines",
            "crops",
            "varieties",
            "warnings",
        ]
        read_only_fields = fields

    def to_representation(self, file):
        data = super().to_representation(file)
        data["fields"] = self._of_page("field_ids", file, lambda: file_field_ids([file.pk]))
        data["machines"] = self._of_page("machine_ids", file, lambda: file_machine_ids([file]))
        data["sources"] = [str(s.pk) for s in file.sources.all()]
        if file.batch_id is None:
            del data["batchId"]
        if file.status_message:
            data["statusDetails"] = file.status_message
        request = self.context.get("request")
        processed = file.status == FileStatus.PROCESSED  # outputs of an earlier build are not served meanwhile
        links = {
            "originalFile": ("file-original", file.original_name),
            "rawGeojson": ("file-raw-geojson", file.raw_geojson_name if processed else ""),
            "standardGeojson": ("file-standard-geojson", file.standard_geojson_name if processed else ""),
        }
        for key, (route, stored) in links.items():
            if not stored:
                data[key] = None
                continue
            path = reverse(route, kwargs={"pk": file.pk})
            data[key] = request.build_absolute_uri(path) if request is not None else path
        return data

    def _of_page(self, key: str, file, read_alone):
        """The file's entry of the context map `key` the view read for its page, else `read_alone()`'s."""
        page_map = self.context.get(key)
        if page_map is None or str(file.pk) not in page_map:
            page_map = read_alone()
        return page_map[str(file.pk)]


def file_context(files, context: dict) -> dict:
    """Serializer context with the fields of a page of files read in one query, and its machines in another."""
    return {**context, "field_ids": file_field_ids([f.pk for f in files]), "machine_ids": file_machine_ids(files)}


MERGE_MAX_FILES = 1000


@extend_schema_field(
    {
        "type": "array",
        "items": {"type": "string", "format": "uuid"},
        "minItems": 2,
        "maxItems": MERGE_MAX_FILES,
        "uniqueItems": True,
        "description": "The ids of at least two different processed files of one core user (fewer than two different "
        "ids is a 400 `mergeNotAllowed`; the server counts a repeated id once, the schema asks for none).",
    }
)
class MergeIdsField(serializers.ListField):
    """The files of a merge, as the schema says them: one id was documented as enough (`minItems: 1`), and Swagger
    UI's example of one id was refused ("A merge needs at least two different files.", `conversion.merging`)."""


# (Swagger UI made its example of the schema's: one id, repeated to two, counted once by `uniqueItems`)
MERGE_EXAMPLE = {"ids": ["3fa85f64-5717-4562-b3fc-2c963f66afa6", "6f1c5f4e-2222-4222-8222-222222222222"]}


@extend_schema_serializer(examples=body_example(MERGE_EXAMPLE, name="Two files"))
class FileMergeSerializer(ApiSerializer):
    """`POST /files/merge` body."""

    ids = MergeIdsField(child=StrictUUIDField(), allow_empty=False, max_length=MERGE_MAX_FILES)


def images_data(images: list[dict], *, request, route: str, pk) -> list[dict]:
    """`GET .../images`: `{property, ramp, url, extent, legend, width, height, unit}` per stored PNG; `url` is the
    PNG under the resource (`route` with kwargs pk and prop), served with the bearer token."""
    out = []
    for image in images or []:
        path = reverse(route, kwargs={"pk": pk, "prop": image["property"]})
        out.append(
            {
                "property": image["property"],
                "ramp": image.get("ramp"),
                "url": request.build_absolute_uri(path) if request is not None else path,
                "extent": image["extent"],
                "legend": image["legend"],
                "width": image.get("width"),
                "height": image.get("height"),
                "projection": image.get("projection"),
                "unit": image.get("unit"),
            }
        )
    return out


# --- OpenAPI documentation: keys written by `to_representation`, and answers built from stored JSON --------------
DOWNLOAD_LINK = {"type": ["string", "null"], "format": "uri", "description": "Served with the bearer token."}
document_extra_properties(
    BatchSerializer,
    {
        "statusDetails": {"type": "string", "description": "Why the batch FAILED (only then)."},
        "failureReason": {"type": "string", "description": "The uploader's mistake that failed the batch, if any."},
    },
)
document_extra_properties(
    FileSerializer,
    {
        # Field ids are the client's own strings when it chose them (POST /fields `id`), not always UUIDs.
        "fields": {"type": "array", "items": {"type": "string"}, "description": "Ids of the fields it covers."},
        "sources": {"type": "array", "items": {"type": "string", "format": "uuid"}, "description": "Merged files."},
        "statusDetails": {"type": "string", "description": "Why the file failed (only then)."},
        "originalFile": DOWNLOAD_LINK,
        "rawGeojson": DOWNLOAD_LINK,
        "standardGeojson": DOWNLOAD_LINK,
    },
    required=("fields", "sources", "originalFile", "rawGeojson", "standardGeojson"),
    optional=("batchId",),
)


@extend_schema_serializer(many=False)  # the page is one object, not an array of them
class FilePageSerializer(serializers.Serializer):
    """`GET /files`: the page of files under `operations` (OpenAPI documentation only)."""

    operations = FileSerializer(many=True)


class BatchFailedFileSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    step = serializers.CharField(help_text="The step that failed (`read` when none recorded one).")
    message = serializers.CharField(allow_null=True)


class BatchStatusSerializer(serializers.Serializer):
    """`GET /batch/{id}/status` (OpenAPI documentation only)."""

    converted = serializers.ListField(child=serializers.UUIDField())
    processing = serializers.ListField(child=serializers.UUIDField())
    failed = BatchFailedFileSerializer(many=True)


class FileStepSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["processing", "processed", "failed", "skipped"])
    message = serializers.CharField(allow_null=True)


class FileStepStatusSerializer(serializers.Serializer):
    """`GET /files/{id}/status`: each step (rawGeojson, standardGeojson, summary, units, propertiesPNGs) with its
    status and message (OpenAPI documentation only)."""

    id = serializers.UUIDField()
    status = serializers.ChoiceField(choices=FileStatus.choices)
    steps = serializers.DictField(child=FileStepSerializer())


class ImageExtentSerializer(serializers.Serializer):
    xmin = serializers.FloatField()
    ymin = serializers.FloatField()
    xmax = serializers.FloatField()
    ymax = serializers.FloatField()


class ImageLegendRangeSerializer(serializers.Serializer):
    colorCode = serializers.CharField(help_text="#RRGGBB")
    min = serializers.FloatField()
    max = serializers.FloatField()


class ImageLegendSerializer(serializers.Serializer):
    ranges = ImageLegendRangeSerializer(many=True)


class ImageSerializer(serializers.Serializer):
    """One entry of `GET .../images` (`images_data`; OpenAPI documentation only)."""

    property = serializers.CharField()
    ramp = ColorRampField(help_text="The colour ramp the image was drawn with (`geoimagesColorRamp`).")
    url = serializers.URLField(help_text="The PNG, served with the bearer token.")
    extent = ImageExtentSerializer(help_text="Bounds in the projection's units.")
    legend = ImageLegendSerializer()
    width = serializers.IntegerField(allow_null=True)
    height = serializers.IntegerField(allow_null=True)
    projection = serializers.CharField(allow_null=True)
    unit = serializers.CharField(allow_null=True)


SUMMARY_SCHEMA = {
    "type": "object",
    "description": "A GeoJSON Feature: `geometry` the covered area (MultiPolygon); `properties` the numeric "
    "properties as `{avg, min, max, unit}`, totals as `{value, unit}`, operationType, startTime, endTime, crop, "
    "varieties, products, machinery.",
    "properties": {
        "type": {"type": "string", "enum": ["Feature"]},
        "geometry": {"type": ["object", "null"], "additionalProperties": True},
        "properties": {"type": "object", "additionalProperties": True},
    },
    "required": ["type", "geometry", "properties"],
}
UNITS_SCHEMA = {
    "type": "object",
    "description": "Each property of the standardGeojson with its unit.",
    "additionalProperties": {"type": "string"},
    "example": {"wetMass": "kg", "wetMassPerArea": "kg/ha", "speed": "m/s", "harvestMoisture": "percentage"},
}
GEOJSON_DOWNLOAD = {
    (200, "application/geo+json"): {
        "type": "object",
        "description": "A GeoJSON FeatureCollection of Point features (downloaded as an attachment).",
        "additionalProperties": True,
    }
}
