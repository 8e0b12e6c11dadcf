"""Shapes of fields, boundaries, farms and growers (the spec's camelCase names), and strict inputs."""

from collections.abc import Mapping, Sequence
from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from platform_site.api import wording
from platform_site.api.schema import COMPONENT_NAME, body_example, document_extra_properties
from platform_site.api.serializers import (
    ApiModelSerializer,
    ApiSerializer,
    StrictCharField,
    StrictFloatField,
    StrictIntegerField,
    TimestampField,
    format_timestamp,
)

from .geometry import from_geos, parse_multipolygon, to_geojson, to_geojson_each
from .models import Boundary, Farm, Field, Grower

# Keys of a field that only a provider field has; absent from fields created through the service.
FIELD_PROVIDER_KEYS = (
    "providerName",
    "providerId",
    "providerFieldId",
    "providerFieldName",
    "providerBoundaryId",
    "organizationId",
)


# GeoJSON positions, rings and polygons as they nest (RFC 7946 3.1): an array whose items were left undescribed made
# generated clients drop every operation that takes or answers a field's geometry.
_POSITION_SCHEMA = {
    "type": "array",
    "items": {"type": "number"},
    "minItems": 2,
    "maxItems": 3,
    "description": "`[longitude, latitude]` in WGS84 (an altitude may follow; it is dropped).",
}
_RING_SCHEMA = {"type": "array", "items": _POSITION_SCHEMA, "minItems": 4}
_POLYGON_SCHEMA = {"type": "array", "items": _RING_SCHEMA, "minItems": 1}


# The optional members a request's geometry may carry besides `type` and `coordinates`. A `crs` (GeoJSON of 2008)
# is taken only when it names WGS84 (`fields.geometry._check_crs`): the names below, or any other spelling pyproj
# reads as WGS84 (the schema gives the usual ones, so a client it validates is never refused for its crs).
_WGS84_NAMES = [
    "urn:ogc:def:crs:OGC:1.3:CRS84",
    "urn:ogc:def:crs:OGC::CRS84",
    "OGC:CRS84",
    "EPSG:4326",
    "urn:ogc:def:crs:EPSG::4326",
]
_GEOMETRY_MEMBERS = {
    "crs": {
        COMPONENT_NAME: "GeoJSONCrsInput",
        "description": "Optional, GeoJSON of 2008: positions are always WGS84 longitude/latitude (RFC 7946), and a "
        "crs naming another coordinate system is a 400 `invalidGeometry`.",
        # (each part a component of its own: inline, openapi-python-client named two of their models alike and wrote
        # neither, and the client's geometry classes imported the missing module)
        "oneOf": [
            {
                COMPONENT_NAME: "GeoJSONNamedCrsInput",
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": ["name"]},
                    "properties": {
                        COMPONENT_NAME: "GeoJSONNamedCrsProperties",
                        "type": "object",
                        "properties": {"name": {"type": "string", "enum": _WGS84_NAMES}},
                        "required": ["name"],
                    },
                },
                "required": ["type", "properties"],
            },
            {
                COMPONENT_NAME: "GeoJSONEpsgCrsInput",
                "type": "object",
                "properties": {
                    "type": {"type": "string", "enum": ["EPSG"]},
                    "properties": {
                        COMPONENT_NAME: "GeoJSONEpsgCrsProperties",
                        "type": "object",
                        "properties": {"code": {"type": "integer", "enum": [4326]}},
                        "required": ["code"],
                    },
                },
                "required": ["type", "properties"],
            },
        ],
    },
    "bbox": {
        "type": "array",
        "items": {"type": "number"},
        "description": "Optional (RFC 7946 5); not read: the server works from the coordinates.",
    },
}


def _geometry_schema(kind: str, coordinates: dict) -> dict:
    return {
        COMPONENT_NAME: f"GeoJSON{kind}Input",
        "type": "object",
        "properties": {"type": {"type": "string", "enum": [kind]}, "coordinates": coordinates, **_GEOMETRY_MEMBERS},
        "required": ["type", "coordinates"],
    }


# What a request may send. One whole object per type: a `type` and a `coordinates` nesting described apart let a
# Polygon's rings pass as a MultiPolygon's (and the reverse), which the server refuses (400 `invalidGeometry`; found
# by Schemathesis).
MULTIPOLYGON_SCHEMA = {
    COMPONENT_NAME: "GeoJSONGeometryInput",
    "description": "A GeoJSON MultiPolygon (a Polygon is taken too, and answered as a MultiPolygon), in WGS84.",
    "oneOf": [
        _geometry_schema("MultiPolygon", {"type": "array", "items": _POLYGON_SCHEMA, "description": "Its polygons."}),
        _geometry_schema("Polygon", {**_POLYGON_SCHEMA, "description": "Its rings."}),
    ],
    # (Swagger UI's own example, rings of [0, 0] four times, is a 400: each geometry operation's first try failed)
    "example": {
        "type": "MultiPolygon",
        "coordinates": [[[[-93.6, 42.0], [-93.59, 42.0], [-93.59, 42.01], [-93.6, 42.01], [-93.6, 42.0]]]],
    },
}


@extend_schema_field(MULTIPOLYGON_SCHEMA)
class GeoJSONMultiPolygonField(serializers.Field):
    """GeoJSON MultiPolygon (a Polygon is promoted) -> validated shapely MultiPolygon; invalid input is a
    400 `invalidGeometry` with the reason."""

    def to_internal_value(self, data):
        return parse_multipolygon(data)

    def to_representation(self, value):
        return to_geojson(value)


class GeoJSONMultiPolygonSerializer(ApiSerializer):
    """A GeoJSON MultiPolygon in WGS84 as the server answers one (`POST .../fields/intersect`): polygons of linear
    rings of positions; no polygon at all (`coordinates: []`) when the area is empty."""

    # (bounded as a request's polygons are: `_POLYGON_SCHEMA`)
    coordinates = serializers.ListField(
        child=serializers.ListField(
            child=serializers.ListField(
                child=serializers.ListField(child=serializers.FloatField(), min_length=2, max_length=3), min_length=4
            ),
            min_length=1,
        ),
        help_text="Polygons, each a list of linear rings (the exterior first), each a list of positions.",
    )


@extend_schema_field(GeoJSONMultiPolygonSerializer)
class GeoJSONMultiPolygonAnswerField(GeoJSONMultiPolygonField):
    """A geometry the server answers (read only): a MultiPolygon always, the intersect answer's component."""


# The columns of a field that its representation reads (besides its boundaries, files and sources).
FIELD_COLUMNS = (
    "public_id",
    "core_user_id",
    "name",
    "type",
    "farm_id",
    "merged_field_id",
    "provider_name",
    "provider_id",
    "provider_field_id",
    "provider_field_name",
    "provider_boundary_id",
    "organization_id",
    "legacy",
    "created_at",
    "updated_at",
)


def area_representation(boundary: Boundary | None) -> dict | None:
    return {"value": boundary.area_ha, "unit": "ha"} if boundary is not None else None


def geometry_representation(boundary: Boundary | None) -> dict | None:
    return to_geojson(from_geos(boundary.geometry)) if boundary is not None else None


class AreaSerializer(ApiSerializer):
    """`{value, unit}`: a geodesic area in hectares."""

    value = serializers.FloatField()
    unit = serializers.CharField()


class BoundarySerializer(ApiModelSerializer):
    """A boundary: immutable geometry and area, status and provider status."""

    providerStatus = serializers.ChoiceField(
        choices=Boundary.ProviderStatus.choices, source="provider_status", read_only=True, allow_null=True
    )
    area = serializers.SerializerMethodField()
    geometry = serializers.SerializerMethodField()
    createdTime = TimestampField(source="created_at", read_only=True)

    class Meta:
        model = Boundary
        fields = ["id", "status", "providerStatus", "geometry", "area", "createdTime"]
        read_only_fields = fields

    @extend_schema_field(AreaSerializer)
    def get_area(self, boundary) -> dict:
        return area_representation(boundary)

    @extend_schema_field(GeoJSONMultiPolygonSerializer)
    def get_geometry(self, boundary) -> dict:
        return geometry_representation(boundary)


def field_representation(row: Mapping[str, Any]) -> dict:
    """The API shape of a field from plain values: the model's column names (`public_id`, `core_user_id`, `name`,
    `type`, `farm_id`, `merged_field_id`, `provider_*`, `organization_id`, `legacy`, `created_at`,
    `updated_at`), its merged field's public id `merged_public_id`, its active boundary's `area_ha` and shapely
    `geometry` (None without one) and the id lists `boundary_ids` (in creation order), `file_ids` and the sources'
    public ids `source_ids` (sorted). One dict per field, no DRF field
    machinery: `FieldSerializer` and the intersects query (which reads rows, not models) both answer this."""
    return field_representations([row])[0]


def field_representations(rows: Sequence[Mapping[str, Any]]) -> list[dict]:
    """`field_representation` of each row, the geometries of all written as GeoJSON in one pass."""
    geometries = iter(to_geojson_each([row["geometry"] for row in rows if row["geometry"] is not None]))
    return [_field_data(row, next(geometries) if row["geometry"] is not None else None) for row in rows]


def _field_data(row: Mapping[str, Any], geometry: dict | None) -> dict:
    provider = bool(row["provider_name"])
    data = {
        "id": row["public_id"],
        "coreUserId": str(row["core_user_id"]),
        "name": row["name"],
        "area": {"value": row["area_ha"], "unit": "ha"} if row["area_ha"] is not None else None,
        "geometry": geometry,
        "boundaries": [str(boundary_id) for boundary_id in row["boundary_ids"]],
    }
    if provider:
        data.update(
            providerName=row["provider_name"],
            providerId=row["provider_id"],
            providerFieldId=row["provider_field_id"],
            providerFieldName=row["provider_field_name"],
            providerBoundaryId=row["provider_boundary_id"],
            organizationId=row["organization_id"],
        )
    data.update(
        type=row["type"],
        createdTime=format_timestamp(row["created_at"]),
        updatedTime=format_timestamp(row["updated_at"]),
        farmId=row["farm_id"],
    )
    if row["merged_field_id"] is not None:
        data["mergedFieldId"] = row["merged_public_id"]
    if row["type"] == Field.Type.MERGED:
        data["sources"] = sorted(row["source_ids"])
    data["files"] = list(row["file_ids"])
    data["legacy"] = row["legacy"]
    return data


@extend_schema_serializer(deprecate_fields=["area", "geometry"])  # the spec's deprecated keys: use the boundaries
class FieldSerializer(ApiModelSerializer):
    """A field with its active boundary's area and geometry (deprecated keys, still served), the ids of
    its boundaries and files; `mergedFieldId` / `sources` and provider keys only when they apply.

    The declared fields document the shape (OpenAPI); `field_representation` renders it."""

    coreUserId = serializers.UUIDField(source="core_user_id", read_only=True)
    area = AreaSerializer(read_only=True, allow_null=True)
    geometry = GeoJSONMultiPolygonAnswerField(read_only=True, allow_null=True)
    boundaries = serializers.ListField(child=serializers.CharField(), read_only=True)
    providerName = serializers.CharField(source="provider_name", read_only=True)
    providerId = serializers.IntegerField(source="provider_id", read_only=True, allow_null=True)
    providerFieldId = serializers.CharField(source="provider_field_id", read_only=True, allow_null=True)
    providerFieldName = serializers.CharField(source="provider_field_name", read_only=True, allow_null=True)
    providerBoundaryId = serializers.CharField(source="provider_boundary_id", read_only=True, allow_null=True)
    organizationId = serializers.CharField(source="organization_id", read_only=True, allow_null=True)
    createdTime = TimestampField(source="created_at", read_only=True)
    updatedTime = TimestampField(source="updated_at", read_only=True)
    farmId = serializers.IntegerField(source="farm_id", read_only=True, allow_null=True)
    mergedFieldId = serializers.CharField(source="merged_field_id", read_only=True)
    sources = serializers.ListField(child=serializers.CharField(), read_only=True)
    files = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Field
        fields = [
            "id",
            "coreUserId",
            "name",
            "area",
            "geometry",
            "boundaries",
            *FIELD_PROVIDER_KEYS,
            "type",
            "createdTime",
            "updatedTime",
            "farmId",
            "mergedFieldId",
            "sources",
            "files",
            "legacy",
        ]
        read_only_fields = fields

    def to_representation(self, field):
        boundary = field.boundary
        return field_representation(
            {
                **{column: getattr(field, column) for column in FIELD_COLUMNS},
                "area_ha": boundary.area_ha if boundary is not None else None,
                "geometry": from_geos(boundary.geometry) if boundary is not None else None,
                "boundary_ids": [b.id for b in field.boundaries.all()],
                "file_ids": [link.file_id for link in field.file_links.all()],
                "merged_public_id": field.merged_field.public_id if field.merged_field_id else None,
                "source_ids": [s.public_id for s in field.sources.all()] if field.type == Field.Type.MERGED else [],
            }
        )


class CoreUserRowIdField(StrictIntegerField):
    """A long id (`farmId`, `growerId`) naming a row of `model` that belongs to the core user in the
    serializer's context; answers the row (None detaches)."""

    def __init__(self, *, model, noun: str, **kwargs):
        self.model = model
        self.noun = noun
        super().__init__(**kwargs)

    def to_internal_value(self, data):
        row_id = super().to_internal_value(data)
        row = self.model.objects.filter(core_user=self.context["core_user"], pk=row_id).first()
        if row is None:
            raise serializers.ValidationError(f"No {self.noun} {row_id} for this user.")
        return row


@extend_schema_serializer(examples=body_example({"name": "North 40", "geometry": MULTIPOLYGON_SCHEMA["example"]}))
class FieldCreateSerializer(ApiSerializer):
    """POST body: `geometry` required; `id` (client-chosen, kept for ever) and `name` optional."""

    answered_by = FieldSerializer

    # Taken as sent: trimmed, " north-40 " became "north-40", an id the client never sent.
    id = StrictCharField(required=False, max_length=255, trim_whitespace=False)
    name = StrictCharField(required=False, allow_blank=True, max_length=255)
    geometry = GeoJSONMultiPolygonField()
    farmId = CoreUserRowIdField(model=Farm, noun="farm", required=False, allow_null=True, source="farm")


@extend_schema_serializer(examples=body_example({"name": "North 40"}))
class FieldUpdateSerializer(ApiSerializer):
    """PATCH body: any of `name`, `farmId` (null detaches), `geometry` (creates a new boundary); at least one."""

    answered_by = FieldSerializer

    schema_min_properties = 1  # (OpenAPI: `{}` is "Nothing to update")

    name = StrictCharField(required=False, allow_blank=True, max_length=255)
    farmId = CoreUserRowIdField(model=Farm, noun="farm", required=False, allow_null=True, source="farm")
    geometry = GeoJSONMultiPolygonField(required=False)

    def validate(self, attrs):
        if not attrs:
            raise serializers.ValidationError("Nothing to update: send name, farmId or geometry.")
        return attrs


@extend_schema_serializer(examples=body_example({"geometry": MULTIPOLYGON_SCHEMA["example"]}))
class GeometrySerializer(ApiSerializer):
    """`{geometry}`: PUT of the active boundary and the deprecated intersects query."""

    geometry = GeoJSONMultiPolygonField()


@extend_schema_serializer(
    examples=body_example({"geometry": MULTIPOLYGON_SCHEMA["example"], "intersectionThreshold": 25})
)
class IntersectsSerializer(ApiSerializer):
    """`{geometry, intersectionThreshold}` (percent, 0.01 to 100, default 0.01)."""

    geometry = GeoJSONMultiPolygonField()
    intersectionThreshold = StrictFloatField(required=False, default=0.01, min_value=0.01, max_value=100)


MAX_INTERSECT_FIELDS = 1000
# `services.writes.FIELD_ID_PATTERN` in OpenAPI (ECMA) syntax; the reserved ids are said in words, not in a lookahead
# that not every client generator's regex engine takes.
FIELD_ID_SCHEMA_PATTERN = r"^[A-Za-z0-9._~:-]{1,255}$"
INTERSECT_BODY_SCHEMA = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": 255},
    "minItems": 2,
    "maxItems": MAX_INTERSECT_FIELDS,
    "uniqueItems": True,
    "description": "The ids of at least two different fields of the core user, each with an active boundary (fewer "
    "than two different ids is a 400; the server counts a repeated id once, the schema asks for none).",
}


class FieldIdsField(serializers.ListField):
    """The body of `POST .../fields/intersect`: a JSON array of at most MAX_INTERSECT_FIELDS field ids."""

    child = StrictCharField(max_length=255)

    def __init__(self, **kwargs):
        kwargs.setdefault("max_length", MAX_INTERSECT_FIELDS)
        super().__init__(**kwargs)
        wording.reword(self)  # (the view runs it alone, outside a serializer's fields)
        self.error_messages["null"] = wording.NOT_A_LIST  # (it is the whole body: `null` is no array of ids)


# --- OpenAPI documentation only: the GeoJSON answers of the geometric queries and the weather ---------------------
class WeatherValueSerializer(ApiSerializer):
    """One day's value of a weather property."""

    time = serializers.CharField()
    value = serializers.FloatField(allow_null=True, help_text="null when the weather source has none for the day.")


class WeatherSeriesSerializer(ApiSerializer):
    """A weather property: one value per day of the range, and its unit."""

    values = WeatherValueSerializer(many=True)
    unit = serializers.CharField()


class WeatherPropertiesSerializer(ApiSerializer):
    """The six daily weather properties (units: rainSum `mm`, the temperatures `°C`, snowfallSum `cm`,
    shortwaveRadiationSum `MJ/m²`) and when they were read."""

    rainSum = WeatherSeriesSerializer()
    maxTemperature = WeatherSeriesSerializer()
    meanTemperature = WeatherSeriesSerializer()
    minTemperature = WeatherSeriesSerializer()
    snowfallSum = WeatherSeriesSerializer()
    shortwaveRadiationSum = WeatherSeriesSerializer()
    processedTime = TimestampField()


class GeoJSONPointSerializer(ApiSerializer):
    """A GeoJSON Point in WGS84."""


class WeatherSerializer(ApiSerializer):
    """The weather of a field (`GET .../fields/{fieldId}/weather`): a GeoJSON Feature at the centroid of its active
    boundary with the daily weather in its properties."""

    geometry = GeoJSONPointSerializer()
    properties = WeatherPropertiesSerializer()


class FarmSerializer(ApiModelSerializer):
    """A farm (long id) with the ids of its fields."""

    providerId = serializers.IntegerField(source="provider_id", read_only=True, allow_null=True)
    providerName = serializers.CharField(source="provider_name", read_only=True, allow_null=True)
    providerFarmName = serializers.CharField(source="provider_farm_name", read_only=True, allow_null=True)
    providerFarmId = serializers.UUIDField(source="provider_farm_id", read_only=True, allow_null=True)
    coreUserId = serializers.UUIDField(source="core_user_id", read_only=True)
    growerId = serializers.IntegerField(source="grower_id", read_only=True, allow_null=True)
    fieldIds = serializers.SerializerMethodField()

    class Meta:
        model = Farm
        fields = [
            "id",
            "name",
            "providerId",
            "providerName",
            "providerFarmName",
            "providerFarmId",
            "coreUserId",
            "growerId",
            "fieldIds",
        ]
        read_only_fields = fields

    def get_fieldIds(self, farm) -> list[str]:  # noqa: N802 (the spec's name)
        return sorted(f.public_id for f in farm.fields.all())


@extend_schema_serializer(examples=body_example({"name": "Home"}))
class FarmWriteSerializer(ApiSerializer):
    """POST / PUT body of a farm: `name`, `growerId`, both optional (PUT: absent means none)."""

    answered_by = FarmSerializer

    name = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=255)
    growerId = CoreUserRowIdField(model=Grower, noun="grower", required=False, allow_null=True, source="grower")


class FarmReplaceSerializer(FarmWriteSerializer):
    """PUT body of a farm: also the farm's other keys, as a GET answered them (`echo_validated`: a changed one is a
    400)."""

    schema_echoes = FarmSerializer  # (OpenAPI: the answer's read-only keys, optional)


class GrowerSerializer(ApiModelSerializer):
    """A grower (long id) with the ids of its farms; `name` only when there is one."""

    coreUserId = serializers.UUIDField(source="core_user_id", read_only=True)
    providerName = serializers.CharField(source="provider_name", read_only=True, allow_null=True)
    providerOrganizationId = serializers.CharField(source="provider_organization_id", read_only=True, allow_null=True)
    providerCompanyId = serializers.CharField(source="provider_company_id", read_only=True, allow_null=True)
    providerUserId = serializers.CharField(source="provider_user_id", read_only=True, allow_null=True)
    providerGrowerId = serializers.CharField(source="provider_grower_id", read_only=True, allow_null=True)
    farmIds = serializers.SerializerMethodField()

    class Meta:
        model = Grower
        fields = [
            "id",
            "name",
            "coreUserId",
            "providerName",
            "providerOrganizationId",
            "providerCompanyId",
            "providerUserId",
            "providerGrowerId",
            "farmIds",
        ]
        read_only_fields = fields

    def get_farmIds(self, grower) -> list[int]:  # noqa: N802 (the spec's name)
        return sorted(f.id for f in grower.farms.all())

    def to_representation(self, grower):
        data = super().to_representation(grower)
        if grower.name is None:
            data.pop("name")
        return data


@extend_schema_serializer(examples=body_example({"name": "Smith"}))
class GrowerWriteSerializer(ApiSerializer):
    """POST / PUT body of a grower: `name` only (PUT: absent means none)."""

    answered_by = GrowerSerializer

    name = StrictCharField(required=False, allow_null=True, allow_blank=True, max_length=255)


class GrowerReplaceSerializer(GrowerWriteSerializer):
    """PUT body of a grower: also the grower's other keys, as a GET answered them (`echo_validated`: a changed one is
    a 400)."""

    schema_echoes = GrowerSerializer  # (OpenAPI: the answer's read-only keys, optional)


# --- OpenAPI documentation: keys sent only when they apply, and the GeoJSON `type`s ------------------------------
document_extra_properties(FieldSerializer, optional=(*FIELD_PROVIDER_KEYS, "mergedFieldId", "sources"))
document_extra_properties(GrowerSerializer, optional=("name",))
document_extra_properties(
    FieldCreateSerializer,
    {
        "id": {
            "type": "string",
            "pattern": FIELD_ID_SCHEMA_PATTERN,
            "description": "Chosen by the client (a UUID is made when absent), kept for ever: 1 to 255 letters, digits "
            "or `. _ ~ : -`, and not `intersects`, `intersect`, `.` or `..` (path segments of other routes).",
        }
    },
)
document_extra_properties(
    GeoJSONMultiPolygonSerializer, {"type": {"type": "string", "enum": ["MultiPolygon"]}}, required=("type",)
)
document_extra_properties(
    GeoJSONPointSerializer,
    {
        "type": {"type": "string", "enum": ["Point"]},
        # (the centroid has no altitude)
        "coordinates": {**_POSITION_SCHEMA, "maxItems": 2, "description": "`[longitude, latitude]` in WGS84."},
    },
    required=("type", "coordinates"),
)
document_extra_properties(WeatherSerializer, {"type": {"type": "string", "enum": ["Feature"]}}, required=("type",))
document_extra_properties(
    WeatherValueSerializer,
    {
        "time": {
            "type": "string",
            "pattern": r"^\d{4}-\d{2}-\d{2}T00:00:00$",
            "description": "The day in UTC, without timezone: `YYYY-MM-DDT00:00:00`.",
        }
    },
)
