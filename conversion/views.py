"""Batch and file endpoints (`/services/operations/api/batch`, `/files`) and the operation files of a field
(under the fields service prefix). Configuration only; the rules live in `services`."""

from django.core.files.storage import default_storage
from django.db.models import Prefetch
from django.http import FileResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.parsers import MultiPartParser
from rest_framework.response import Response

from fields.models import Field
from platform_site.api import idempotency
from platform_site.api.errors import DomainError
from platform_site.api.parsers import no_body
from platform_site.api.renderers import DownloadNegotiation, GeoJSONDownload, PNGDownload, ZipDownload
from platform_site.api.schema import NO_BODY_PROBLEMS
from platform_site.api.viewsets import (
    CoreUserScopedViewSet,
    OwnerScopedViewSet,
    created_location,
    get_or_404,
    owned_core_user_or_404,
)

from . import merging, outputs, services
from .filtersets import BatchFilterSet, FieldFileFilterSet, FileFilterSet
from .links import batch_file_ids, field_file_ids
from .models import FILE_STEPS, Batch, File, FileStatus
from .serializers import (
    GEOJSON_DOWNLOAD,
    SUMMARY_SCHEMA,
    UNITS_SCHEMA,
    UPLOAD_PROVIDERS,
    BatchReceivedSerializer,
    BatchSerializer,
    BatchStatusSerializer,
    BatchUploadQuerySerializer,
    FileMergeSerializer,
    FilePageSerializer,
    FileSerializer,
    FileStepStatusSerializer,
    ImageSerializer,
    file_context,
    images_data,
)
from .uploads import not_a_zip, upload_parse

FILE_SORT_FIELDS = {
    "id": "id",
    "coreUserId": "core_user_id",
    "fileName": "file_name",
    "provider": "provider",
    "origin": "origin",
    "operationType": "operation_type",
    "status": "status",
    "createdTime": "created_time",
    "updatedTime": "updated_time",
    "startTime": "start_time",
    "endTime": "end_time",
    "sizeInBytes": "size_in_bytes",
}
BATCH_SORT_FIELDS = {
    "id": "id",
    "coreUserId": "core_user_id",
    "provider": "provider",
    "status": "status",
    "uploadTimestamp": "upload_timestamp",
    "fileName": "file_name",
    "size": "size",
}


UNIT_SYSTEM_PARAMETER = OpenApiParameter(
    "unitSystem",
    str,
    enum=list(outputs.UNIT_SYSTEMS),
    description="`metric` (default), or `imperial`: the units the source used where it used imperial ones.",
)


def unit_system(request) -> str:
    """The `unitSystem` a summary or units map is asked in (`metric` when absent or empty); another value is 400."""
    value = request.query_params.get("unitSystem") or "metric"
    if value not in outputs.UNIT_SYSTEMS:
        message = f"Must be one of: {', '.join(outputs.UNIT_SYSTEMS)}."
        raise DomainError(f"unitSystem: {message}", field_errors=[{"field": "unitSystem", "message": message}])
    return value


def _files_of(owner):
    return File.objects.filter(core_user__owner=owner)


# A file's outputs (summary, units, images, steps) are kilobytes of JSON each, answered only by their own endpoints.
_OUTPUT_COLUMNS = ("summary", "units", "imperial_units", "images", "steps")


def _file_records(files):
    """`files` read for the file record: its owner's name and its sources' ids, not its outputs (nor the rows of
    the sources: a merged file may have a thousand)."""
    return (
        files.select_related("core_user__owner")
        .prefetch_related(Prefetch("sources", queryset=File.objects.only("pk")))
        .defer(*_OUTPUT_COLUMNS)
    )


def stored_download(name: str, *, filename: str, content_type: str):
    if not name or not default_storage.exists(name):
        raise NotFound("This output is not available for the file.")
    return FileResponse(
        default_storage.open(name, "rb"), as_attachment=True, filename=filename, content_type=content_type
    )


def stored_image(images: list[dict], prop: str):
    """The stored PNG of one property (listed in a file's `images`), shown inline; 404 when there is none."""
    entry = next((i for i in images or [] if i.get("property") == prop), None)
    if entry is None or not default_storage.exists(entry["name"]):
        raise NotFound("No image of this property.")
    return FileResponse(default_storage.open(entry["name"], "rb"), content_type="image/png", filename=f"{prop}.png")


class FileListMixin:
    """A page of files rendered with their fields read in one query."""

    def file_page(self, queryset):
        queryset = self.filter_queryset(queryset)
        page = self.paginate_queryset(queryset)
        context = file_context(page, self.get_serializer_context())
        return FileSerializer(page, many=True, context=context).data


class FileViewSet(DownloadNegotiation, FileListMixin, mixins.RetrieveModelMixin, OwnerScopedViewSet):
    """`/files`: the owner's files, each with its outputs."""

    operation_summaries = {
        "list": "List files",
        "retrieve": "Get a file",
        "summary": "Get a file's summary",
        "units": "Get a file's properties and their units",
        "images": "List a file's map images",
        "image": "Get a file's map image of one property (PNG)",
        "merge": "Merge files into a new one",
        "step_status": "Get the status of each conversion step of a file",
        "standard_geojson": "Download a file's standard GeoJSON",
        "raw_geojson": "Download a file's raw GeoJSON",
        "original_file": "Download the original files of a file's data set (zip)",
    }

    keyed_actions = frozenset({"merge"})
    problem_responses = {
        "merge": {
            400: "Fewer than two files, or files of several core users or operation types, or not processed "
            "(`mergeNotAllowed`); or an invalid body (`validation`).",
            404: "A listed file does not exist or belongs to another API owner (`notFound`).",
        }
    }
    download_renderers = {
        "image": PNGDownload,
        "standard_geojson": GeoJSONDownload,
        "raw_geojson": GeoJSONDownload,
        "original_file": ZipDownload,
    }
    serializer_class = FileSerializer
    filterset_class = FileFilterSet
    sort_fields = FILE_SORT_FIELDS
    default_sort = ("-created_time",)

    def get_queryset(self):
        files = _files_of(self.owner)
        return _file_records(files) if self.action in ("list", "retrieve") else files

    @extend_schema(responses=FilePageSerializer)
    def list(self, request):
        data = self.file_page(self.get_queryset())
        return Response({"operations": data}, headers=self.paginator.page_headers())

    def _processed_file(self) -> File:
        """The file, if processed: outputs belong to a processed file only. An automerged file being rebuilt (a file
        joined its operation) or whose rebuild failed served its earlier images and GeoJSON, but no summary."""
        file = self.get_object()
        if file.status != FileStatus.PROCESSED:
            raise NotFound("The file has no such output (it is not processed).")
        return file

    def _processed_output(self, read):
        output = read(self._processed_file(), unit_system(self.request))
        if output is None:
            raise NotFound("The file has no such output (it is not processed).")
        return Response(output)

    @extend_schema(parameters=[UNIT_SYSTEM_PARAMETER], responses={200: SUMMARY_SCHEMA})
    @action(detail=True)
    def summary(self, request, pk=None):
        return self._processed_output(outputs.file_summary)

    @extend_schema(parameters=[UNIT_SYSTEM_PARAMETER], responses={200: UNITS_SCHEMA})
    @action(detail=True)
    def units(self, request, pk=None):
        return self._processed_output(outputs.file_units)

    @extend_schema(responses=ImageSerializer(many=True))
    @action(detail=True)
    def images(self, request, pk=None):
        file = self._processed_file()
        return Response(images_data(file.images, request=request, route="file-image", pk=file.pk))

    @extend_schema(responses={(200, "image/png"): bytes})
    def image(self, request, pk=None, prop=None):
        """One map image (PNG) of the file, by property."""
        return stored_image(self._processed_file().images, prop)

    @extend_schema(request=FileMergeSerializer, responses={201: FileSerializer})
    @action(detail=False, methods=["post"])
    def merge(self, request):
        body = FileMergeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        file = merging.file_merge(owner=self.owner, ids=body.validated_data["ids"])
        file = _file_records(_files_of(self.owner)).get(pk=file.pk)
        return Response(
            FileSerializer(file, context=self.get_serializer_context()).data,
            status=status.HTTP_201_CREATED,
            headers={"Location": created_location(request, request.path.removesuffix("/merge"), file.pk)},
        )

    @extend_schema(responses=FileStepStatusSerializer)
    @action(detail=True, url_path="status")
    def step_status(self, request, pk=None):
        file = self.get_object()
        steps = dict(file.steps or {})
        if file.status == FileStatus.FAILED and not any(v.get("status") == "failed" for v in steps.values()):
            steps = {name: {"status": "failed", "message": file.status_message} for name in FILE_STEPS}
        elif file.status == FileStatus.PROCESSING and not steps:
            steps = {name: {"status": "processing", "message": None} for name in FILE_STEPS}
        return Response({"id": str(file.pk), "status": file.status, "steps": steps})

    @extend_schema(responses=GEOJSON_DOWNLOAD)
    @action(detail=True, url_path="standardGeojson")
    def standard_geojson(self, request, pk=None):
        file = self._processed_file()
        return stored_download(
            file.standard_geojson_name, filename=f"{file.pk}.standard.geojson", content_type="application/geo+json"
        )

    @extend_schema(responses=GEOJSON_DOWNLOAD)
    @action(detail=True, url_path="rawGeojson")
    def raw_geojson(self, request, pk=None):
        file = self._processed_file()
        return stored_download(
            file.raw_geojson_name, filename=f"{file.pk}.raw.geojson", content_type="application/geo+json"
        )

    @extend_schema(responses={(200, "application/zip"): bytes})
    @action(detail=True, url_path="originalFile")
    def original_file(self, request, pk=None):
        file = self.get_object()
        return stored_download(
            file.original_name, filename=outputs.original_download_name(file), content_type="application/zip"
        )


class BatchViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, OwnerScopedViewSet):
    """`/batch`: uploads of the owner's core users."""

    operation_summaries = {
        "list": "List batches (uploads)",
        "create": "Upload a zip of machine files",
        "retrieve": "Get a batch and the files it produced",
        "batch_status": "Get the conversion status of each of a batch's files",
        "retry": "Convert a batch's failed data sets again",
    }

    serializer_class = BatchSerializer
    parser_classes = [MultiPartParser]
    # An upload's `Idempotency-Key` is its own (`services.batch_receive_once`): its retry is answered before its
    # body is read, and answers the batch as it is now.
    keyed_actions = frozenset()
    problem_responses = {
        "create": {
            422: "The `Idempotency-Key` was sent with another upload in the last 24 hours, for another core user or "
            "provider, or (`coreUserId` and `provider` sent as form fields) another file (`idempotencyKeyReused`).",
        },
        "retry": {
            **NO_BODY_PROBLEMS,
            409: "The batch is still being processed (`batchProcessing`), or only data sets of formats that cannot be "
            "converted failed (`nothingToRetry`).",
        },
    }
    filterset_class = BatchFilterSet
    sort_fields = BATCH_SORT_FIELDS
    default_sort = ("-upload_timestamp",)

    def get_queryset(self):
        return Batch.objects.filter(core_user__owner=self.owner)

    def list(self, request):
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        batch_file_ids(page)
        return Response(self.get_serializer(page, many=True).data, headers=self.paginator.page_headers())

    @extend_schema(
        parameters=[
            OpenApiParameter("coreUserId", OpenApiTypes.UUID, required=True, description="query string or form field"),
            OpenApiParameter(
                "provider", str, enum=UPLOAD_PROVIDERS, required=True, description="query string or form field"
            ),
            OpenApiParameter(
                "Idempotency-Key",
                str,
                OpenApiParameter.HEADER,
                pattern=idempotency.KEY_PATTERN.pattern,
                description="Optional: a key of the client's for this upload (a UUID, say), to retry it safely. An "
                "upload of the same key within 24 hours answers the batch the first one made, as it is now, with "
                "`Idempotent-Replayed: true`, and stores nothing; one for another core user or provider is a 422. "
                "With `coreUserId` and `provider` in the query string (as declared here) the retry is answered "
                "before its body is read, so its file is not compared: send a new key with each new file. With "
                "them as form fields, the file's name and size are compared too (another is a 422).",
            ),
        ],
        request={
            "multipart/form-data": {
                "type": "object",
                "properties": {"file": {"type": "string", "format": "binary"}},
                "required": ["file"],
            }
        },
        responses={201: BatchReceivedSerializer},
    )
    def create(self, request):
        # Parameters in the query string are checked before the body is read: a wrong user costs no upload, nor the
        # retry of an upload already received.
        upload_key = idempotency.request_key(request)
        params = {key: request.query_params.get(key) for key in ("coreUserId", "provider")}
        if all(params.values()):
            core_user, provider = self._upload_target(params)
            earlier = None if upload_key is None else services.batch_of_key(owner=self.owner, key=upload_key)
            if earlier is not None:
                return self._received(services.batch_replayed(earlier, core_user=core_user, provider=provider), False)
        upload = upload_parse(request).get("file")
        differing = [key for key, value in params.items() if value and request.data.get(key) not in (None, value)]
        if differing:  # which one counts? (the query's did, silently)
            raise DomainError(
                f"{', '.join(differing)}: the query string and the form say different things; give one, or both alike.",
                field_errors=[{"field": key, "message": "Differs between query string and form."} for key in differing],
            )
        if not all(params.values()):
            params = {key: params[key] or request.data.get(key) for key in params}
            core_user, provider = self._upload_target(params)
        if upload is None and "file" in request.data:
            raise DomainError(
                "Send the zip as the multipart form field `file` with a file name (`filename=` in its "
                "Content-Disposition, as `curl -F file=@upload.zip` sends it): the part `file` is a text field.",
                field_errors=[{"field": "file", "message": "A file is required, not text."}],
            )
        if upload is None:
            raise DomainError(
                "Send the zip as the multipart form field `file`: the body holds no complete part of that name (a "
                "body cut short, or without its closing boundary, has none; nor has a part whose headers are not "
                "UTF-8, such as a file name in another encoding: it is not read at all).",
                field_errors=[{"field": "file", "message": "This field is required."}],
            )
        if upload.size == 0:
            raise not_a_zip()
        if upload_key is None:
            return self._received(services.batch_receive(core_user=core_user, provider=provider, upload=upload), True)
        return self._received(
            *services.batch_receive_once(core_user=core_user, provider=provider, upload=upload, key=upload_key)
        )

    @staticmethod
    def _received(batch, created: bool) -> Response:
        """The upload's answer: its batch, 201 again for a retry of an upload received (`Idempotency-Key`), as the
        first answer was (the draft's "same response"), with `Idempotent-Replayed: true`."""
        headers = {} if created else {"Idempotent-Replayed": "true"}
        return Response(BatchReceivedSerializer(batch).data, status=status.HTTP_201_CREATED, headers=headers)

    def _upload_target(self, params: dict):
        query = BatchUploadQuerySerializer(data={k: v for k, v in params.items() if v is not None})
        query.is_valid(raise_exception=True)
        return owned_core_user_or_404(self.owner, query.validated_data["coreUserId"]), query.validated_data["provider"]

    @extend_schema(responses=BatchStatusSerializer)
    @action(detail=True, url_path="status")
    def batch_status(self, request, pk=None):
        return Response(services.batch_status(self.get_object()))

    @extend_schema(request=None, responses=BatchReceivedSerializer)
    @action(detail=True, methods=["put"])
    def retry(self, request, pk=None):
        batch = self.get_object()  # a missing or foreign id is 404 whatever the body
        no_body(request)
        batch = services.batch_retry(batch=batch)
        return Response(BatchReceivedSerializer(batch).data)


class FieldFileViewSet(FileListMixin, CoreUserScopedViewSet):
    """Operation files of a field, under the fields service: `/users/{coreUserId}/fields/{fieldId}/operations`."""

    operation_summaries = {
        "list": "List a field's operation files",
        "retrieve": "Get an operation file of a field",
        "retrieve_outline": "Get an operation file of a field, as an array (deprecated)",
    }

    queryset = File.objects.none()  # for the schema; get_queryset scopes to the core user and the field
    serializer_class = FileSerializer
    filterset_class = FieldFileFilterSet
    sort_fields = FILE_SORT_FIELDS
    default_sort = ("-start_time", "-created_time")

    def get_queryset(self):
        field = get_or_404(Field.objects.filter(core_user=self.core_user), public_id=self.kwargs["fieldId"])
        return _file_records(_files_of(self.owner).filter(core_user=self.core_user, pk__in=field_file_ids(field)))

    def list(self, request, coreUserId=None, fieldId=None):
        data = self.file_page(self.get_queryset())
        return Response(data, headers=self.paginator.page_headers())

    def retrieve(self, request, coreUserId=None, fieldId=None, pk=None):
        file = self.get_object()
        return Response(FileSerializer(file, context=self.get_serializer_context()).data)

    @extend_schema(
        operation_id="services_fields_api_users_fields_operations_retrieve_deprecated",
        responses=FileSerializer(many=True),
        deprecated=True,
    )
    def retrieve_outline(self, request, coreUserId=None, fieldId=None, pk=None):
        """Deprecated path: the same file, as a one-element array."""
        file = self.get_object()
        return Response([FileSerializer(file, context=self.get_serializer_context()).data])


@extend_schema_view(list=extend_schema(deprecated=True))
class FieldFileDeprecatedListViewSet(FieldFileViewSet):
    """The deprecated path of the same list, `/users/{coreUserId}/fields/{fieldId}/operations`."""

    operation_summaries = {
        "list": "List a field's operation files (deprecated path)",
    }
