"""Fields service endpoints. Viewsets are configuration; rules live in `services`."""

from django.db.models import Prefetch
from django.utils.functional import cached_property
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.response import Response

from platform_site.api.parsers import replacement_document
from platform_site.api.serializers import echo_validated
from platform_site.api.viewsets import CoreUserScopedViewSet, OwnerScopedViewSet, deleted_response, get_or_404

from . import services, weather
from .filtersets import FarmFilterSet, FieldFilterSet, GrowerFilterSet
from .geometry import to_geojson
from .intersects import fields_intersecting_rows
from .models import Boundary, Farm, Field, Grower
from .serializers import (
    INTERSECT_BODY_SCHEMA,
    BoundarySerializer,
    FarmReplaceSerializer,
    FarmSerializer,
    FarmWriteSerializer,
    FieldCreateSerializer,
    FieldIdsField,
    FieldSerializer,
    FieldUpdateSerializer,
    GeoJSONMultiPolygonSerializer,
    GeometrySerializer,
    GrowerReplaceSerializer,
    GrowerSerializer,
    GrowerWriteSerializer,
    IntersectsSerializer,
    WeatherSerializer,
    field_representations,
)

# A UTC day; a date-time is taken for its UTC date (`weather.parse_day`). Said in the schema (a plain string let
# generated clients send anything, a 400 the schema did not foretell; found by Schemathesis).
WEATHER_DAY_SCHEMA = {"type": "string", "anyOf": [{"format": "date"}, {"format": "date-time"}]}
WEATHER_DAY_DESCRIPTION = "A day, YYYY-MM-DD (UTC; a date-time is taken for its UTC date)."

FIELD_SORT_FIELDS = {
    "id": "public_id",
    "name": "name",
    "type": "type",
    "farmId": "farm_id",
    "createdTime": "created_at",
    "updatedTime": "updated_at",
}


def _valid(serializer_class, data, **context):
    serializer = serializer_class(data=data, context=context)
    serializer.is_valid(raise_exception=True)
    return serializer.validated_data


def _farm_queryset():
    return Farm.objects.prefetch_related(Prefetch("fields", queryset=Field.objects.only("id", "public_id", "farm_id")))


def _grower_queryset():
    return Grower.objects.prefetch_related(Prefetch("farms", queryset=Farm.objects.only("id", "grower_id")))


class FieldListViewSet(mixins.ListModelMixin, OwnerScopedViewSet):
    """`GET /fields`: the fields of all the owner's core users; the deprecated `POST /fields/query/intersects`."""

    operation_summaries = {
        "list": "List the fields of every core user",
        "query_intersects": "Find the fields of every core user that intersect a geometry (deprecated)",
    }

    serializer_class = FieldSerializer
    filterset_class = FieldFilterSet
    sort_fields = FIELD_SORT_FIELDS
    default_sort = ("created_at",)

    def get_queryset(self):
        return services.field_queryset(Field.objects.filter(core_user__owner=self.owner))

    @extend_schema(request=GeometrySerializer, responses=FieldSerializer(many=True), deprecated=True)
    @action(detail=False, methods=["post"], url_path="query/intersects", filter_backends=[], pagination_class=None)
    def query_intersects(self, request):
        data = _valid(GeometrySerializer, request.data)
        rows = fields_intersecting_rows(
            owner=self.owner, geometry=data["geometry"], threshold=services.DEFAULT_INTERSECTION_THRESHOLD
        )
        return Response(field_representations(rows))


FIELD_READ_ONLY = {403: "The field came from a provider: the API may not change it (`providerResourceReadOnly`)."}


class FieldViewSet(mixins.RetrieveModelMixin, CoreUserScopedViewSet):
    """`/users/{coreUserId}/fields...`: one core user's fields and the geometric queries over them."""

    operation_summaries = {
        "create": "Create a field",
        "retrieve": "Get a field",
        "partial_update": "Change a field's name, farm or geometry",
        "destroy": "Delete a field",
        "intersects": "Find a core user's fields that intersect a geometry",
        "intersect": "Get the intersection of fields",
        "weather": "Get the daily weather at a field",
    }

    serializer_class = FieldSerializer
    # The path's id is the field's API id, unique per core user (`Field.public_id`); the primary key is ours.
    lookup_field = "public_id"
    lookup_url_kwarg = "pk"
    problem_responses = {
        "create": {409: "The core user already has a field of this `id` (`fieldAlreadyExists`)."},
        "partial_update": FIELD_READ_ONLY,
        "destroy": FIELD_READ_ONLY,
        "weather": {
            400: "Invalid or missing dates, a range over 366 days, a field without boundary "
            "(`fieldWithoutBoundary`), or days the weather source refuses (`weatherRequestRejected`).",
            503: "The weather source cannot be reached (`weatherSourceUnavailable`), or the database is busy, cannot "
            "be reached or lacks a migration (`databaseBusy`, `databaseUnavailable`, `databaseNotMigrated`: send it "
            "again after `Retry-After` seconds).",
        },
    }
    filter_backends: list = []
    pagination_class = None

    def get_queryset(self):
        return services.field_queryset(Field.objects.filter(core_user=self.core_user))

    @extend_schema(request=FieldCreateSerializer, responses={201: FieldSerializer})
    def create(self, request, coreUserId=None):
        data = _valid(FieldCreateSerializer, request.data, core_user=self.core_user)
        field = services.field_create(core_user=self.core_user, **data)
        return Response(FieldSerializer(field).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=FieldUpdateSerializer, responses=FieldSerializer)
    def partial_update(self, request, coreUserId=None, pk=None):
        field = self.get_object()  # a missing or foreign id is 404 whatever the body
        services.field_check_writable(field)  # and a provider's field 403
        changes = _valid(FieldUpdateSerializer, request.data, core_user=self.core_user)
        field = services.field_update(field=field, changes=changes)
        return Response(FieldSerializer(field).data)

    def destroy(self, request, coreUserId=None, pk=None):
        return deleted_response(services.field_delete(field=self.get_object()))

    @extend_schema(request=IntersectsSerializer, responses=FieldSerializer(many=True))
    @action(detail=False, methods=["post"])
    def intersects(self, request, coreUserId=None):
        data = _valid(IntersectsSerializer, request.data)
        rows = fields_intersecting_rows(
            core_user=self.core_user, geometry=data["geometry"], threshold=data["intersectionThreshold"]
        )
        return Response(field_representations(rows))

    @extend_schema(
        request={"application/json": INTERSECT_BODY_SCHEMA},
        responses=GeoJSONMultiPolygonSerializer,
    )
    @action(detail=False, methods=["post"])
    def intersect(self, request, coreUserId=None):
        field_ids = FieldIdsField().run_validation(request.data)
        geometry = services.fields_intersection(core_user=self.core_user, field_ids=field_ids)
        return Response(to_geojson(geometry))

    @extend_schema(
        parameters=[
            OpenApiParameter(name, WEATHER_DAY_SCHEMA, required=True, description=WEATHER_DAY_DESCRIPTION)
            for name in ("startTime", "endTime")
        ],
        responses=WeatherSerializer,
    )
    @action(detail=True, methods=["get"])
    def weather(self, request, coreUserId=None, pk=None):
        field = self.get_object()
        start, end = weather.weather_range(request.query_params.get("startTime"), request.query_params.get("endTime"))
        return Response(weather.field_weather(field=field, start=start, end=end))


class BoundaryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, CoreUserScopedViewSet):
    """`/users/{coreUserId}/fields/{fieldId}/boundaries...` and the active `.../boundary` (GET, PUT)."""

    operation_summaries = {
        "list": "List a field's boundaries, oldest first",
        "retrieve": "Get a boundary of a field",
        "active": "Get a field's active boundary",
        "replace": "Replace a field's boundary",
    }

    serializer_class = BoundarySerializer
    filter_backends: list = []
    pagination_class = None
    problem_responses = {"replace": FIELD_READ_ONLY}

    @cached_property
    def field(self) -> Field:
        return get_or_404(Field.objects.filter(core_user=self.core_user), public_id=self.kwargs["fieldId"])

    def get_queryset(self):
        return Boundary.objects.filter(field=self.field).order_by("created_at", "id")

    @action(detail=False, methods=["get"])
    def active(self, request, coreUserId=None, fieldId=None):
        boundary = get_or_404(Boundary.objects.filter(field=self.field), pk=self.field.boundary_id)
        return Response(BoundarySerializer(boundary).data)

    @extend_schema(request=GeometrySerializer, responses=FieldSerializer)
    @active.mapping.put
    def replace(self, request, coreUserId=None, fieldId=None):
        field = self.field  # a missing or foreign id is 404 whatever the body
        services.field_check_writable(field)  # and a provider's field 403
        data = _valid(GeometrySerializer, request.data)
        field = services.field_boundary_set(field=field, geometry=data["geometry"])
        return Response(FieldSerializer(field).data)


class FarmListViewSet(mixins.ListModelMixin, OwnerScopedViewSet):
    """`GET /farms` of all the owner's core users."""

    operation_summaries = {
        "list": "List the farms of every core user",
    }

    serializer_class = FarmSerializer
    filterset_class = FarmFilterSet
    sort_fields = {"id": "id", "name": "name", "growerId": "grower_id"}
    default_sort = ("id",)

    def get_queryset(self):
        return _farm_queryset().filter(core_user__owner=self.owner)


class FarmViewSet(mixins.RetrieveModelMixin, CoreUserScopedViewSet):
    """`/users/{coreUserId}/farms...`: create, get, replace (PUT)."""

    operation_summaries = {
        "create": "Create a farm",
        "retrieve": "Get a farm",
        "update": "Replace a farm",
    }

    replacement_actions = ("update",)  # OpenAPI: the PUT's body is required (`replacement_document`)

    serializer_class = FarmSerializer

    def get_queryset(self):
        return _farm_queryset().filter(core_user=self.core_user)

    @extend_schema(request=FarmWriteSerializer, responses={201: FarmSerializer})
    def create(self, request, coreUserId=None):
        data = _valid(FarmWriteSerializer, request.data, core_user=self.core_user)
        farm = services.farm_create(core_user=self.core_user, **data)
        return Response(FarmSerializer(self.get_queryset().get(pk=farm.pk)).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=FarmReplaceSerializer, responses=FarmSerializer)
    def update(self, request, coreUserId=None, pk=None):
        farm = self.get_object()  # a missing or foreign id is 404 whatever the body
        data = echo_validated(
            FarmReplaceSerializer, replacement_document(request), FarmSerializer(farm).data, core_user=self.core_user
        )
        farm = services.farm_replace(farm=farm, **data)
        return Response(FarmSerializer(self.get_queryset().get(pk=farm.pk)).data)


class GrowerListViewSet(mixins.ListModelMixin, OwnerScopedViewSet):
    """`GET /growers` of all the owner's core users."""

    operation_summaries = {
        "list": "List the growers of every core user",
    }

    serializer_class = GrowerSerializer
    filterset_class = GrowerFilterSet
    sort_fields = {"id": "id", "name": "name"}
    default_sort = ("id",)

    def get_queryset(self):
        return _grower_queryset().filter(core_user__owner=self.owner)


class GrowerViewSet(mixins.RetrieveModelMixin, CoreUserScopedViewSet):
    """`/users/{coreUserId}/growers...`: create, get, replace (PUT, name only)."""

    operation_summaries = {
        "create": "Create a grower",
        "retrieve": "Get a grower",
        "update": "Replace a grower",
    }

    replacement_actions = ("update",)  # OpenAPI: the PUT's body is required (`replacement_document`)

    serializer_class = GrowerSerializer

    def get_queryset(self):
        return _grower_queryset().filter(core_user=self.core_user)

    @extend_schema(request=GrowerWriteSerializer, responses={201: GrowerSerializer})
    def create(self, request, coreUserId=None):
        data = _valid(GrowerWriteSerializer, request.data)
        grower = services.grower_create(core_user=self.core_user, **data)
        return Response(GrowerSerializer(self.get_queryset().get(pk=grower.pk)).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=GrowerReplaceSerializer, responses=GrowerSerializer)
    def update(self, request, coreUserId=None, pk=None):
        grower = self.get_object()  # a missing or foreign id is 404 whatever the body
        data = echo_validated(GrowerReplaceSerializer, replacement_document(request), GrowerSerializer(grower).data)
        grower = services.grower_replace(grower=grower, **data)
        return Response(GrowerSerializer(self.get_queryset().get(pk=grower.pk)).data)
