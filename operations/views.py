"""`/operations` of the owner's core users: list, one operation, its merged outputs (served from its automerged
file) and cropOperationByField. Configuration only; the rules live in `services.py`."""

from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound
from rest_framework.response import Response

from conversion import outputs
from conversion.models import File, FileStatus
from conversion.serializers import GEOJSON_DOWNLOAD, SUMMARY_SCHEMA, UNITS_SCHEMA, ImageSerializer, images_data
from conversion.views import UNIT_SYSTEM_PARAMETER, stored_download, stored_image, unit_system
from platform_site.api.renderers import DownloadNegotiation, GeoJSONDownload, PNGDownload
from platform_site.api.viewsets import OwnerScopedViewSet, get_or_404

from . import services
from .filtersets import OperationFilterSet
from .models import Operation, OperationField
from .serializers import OperationCropResultSerializer, OperationCropSerializer, OperationSerializer

OPERATION_SORT_FIELDS = {
    "id": "id",
    "coreUserId": "core_user_id",
    "operationType": "operation_type",
    "provider": "provider",
    "startTime": "start_time",
    "endTime": "end_time",
    "updatedTime": "updated_time",
}


class OperationViewSet(DownloadNegotiation, mixins.ListModelMixin, mixins.RetrieveModelMixin, OwnerScopedViewSet):
    """Operations of the owner's core users, each with its files and the fields it covers."""

    operation_summaries = {
        "list": "List operations",
        "retrieve": "Get an operation",
        "summary": "Get an operation's summary",
        "units": "Get an operation's properties and their units",
        "images": "List an operation's map images",
        "image": "Get an operation's map image of one property (PNG)",
        "standard_geojson": "Download an operation's standard GeoJSON",
        "crop": "Crop an operation to a field's boundary, as a new file",
    }

    serializer_class = OperationSerializer
    filterset_class = OperationFilterSet
    keyed_actions = frozenset({"crop"})
    download_renderers = {"image": PNGDownload, "standard_geojson": GeoJSONDownload}
    problem_responses = {
        "crop": {
            400: "The operation covers no field, or the field is unknown or has no active boundary (`validation`).",
            404: "No such operation, or one of another API owner (`notFound`).",
            409: "The operation is being built (`operationProcessing`) or its build failed (`operationFailed`).",
        }
    }
    sort_fields = OPERATION_SORT_FIELDS
    default_sort = ("-start_time",)

    def get_queryset(self):
        operations = Operation.objects.filter(core_user__owner=self.owner)
        if self.action not in ("list", "retrieve"):
            # The outputs: read from the automerged file alone, joined (read apart, it could be gone by then: the
            # deletion of its core user removes the files first, a 500).
            return operations.select_related("merged_file")
        return operations.select_related("core_user__owner").prefetch_related(
            Prefetch("files", queryset=File.objects.only("id", "start_time")),
            Prefetch(
                "field_links",
                queryset=OperationField.objects.select_related("field")
                .only("operation_id", "coverage", "field__public_id")
                .order_by("-coverage", "field__public_id"),
            ),
        )

    def _merged_file(self) -> File:
        """The operation's automerged file, once it is processed."""
        file = self.get_object().merged_file
        if file is None or file.status != FileStatus.PROCESSED:
            raise NotFound("The operation has no such output yet (it is not processed).")
        return file

    @extend_schema(parameters=[UNIT_SYSTEM_PARAMETER], responses={200: SUMMARY_SCHEMA})
    @action(detail=True)
    def summary(self, request, pk=None):
        return Response(outputs.file_summary(self._merged_file(), unit_system(request)))

    @extend_schema(parameters=[UNIT_SYSTEM_PARAMETER], responses={200: UNITS_SCHEMA})
    @action(detail=True)
    def units(self, request, pk=None):
        return Response(outputs.file_units(self._merged_file(), unit_system(request)))

    @extend_schema(responses=ImageSerializer(many=True))
    @action(detail=True)
    def images(self, request, pk=None):
        file = self._merged_file()
        return Response(images_data(file.images, request=request, route="operation-image", pk=pk))

    @extend_schema(responses={(200, "image/png"): bytes})
    def image(self, request, pk=None, prop=None):
        """One map image (PNG) of the operation, by property."""
        return stored_image(self._merged_file().images, prop)

    @extend_schema(responses=GEOJSON_DOWNLOAD)
    @action(detail=True, url_path="standardGeojson")
    def standard_geojson(self, request, pk=None):
        file = self._merged_file()
        return stored_download(
            file.standard_geojson_name, filename=f"{pk}.standard.geojson", content_type="application/geo+json"
        )

    @extend_schema(request=OperationCropSerializer, responses={202: OperationCropResultSerializer})
    @action(detail=False, methods=["post"], url_path="cropOperationByField")
    def crop(self, request):
        body = OperationCropSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        operation = get_or_404(self.get_queryset(), pk=body.validated_data["id"])
        crop = services.operation_crop(operation=operation, field_id=body.validated_data.get("fieldId"))
        return Response(OperationCropResultSerializer(crop).data, status=status.HTTP_202_ACCEPTED)
