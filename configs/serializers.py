"""Strict validation of configuration entries; every entry optional."""

import re

from drf_spectacular.utils import extend_schema_field
from pyproj import CRS
from pyproj.exceptions import CRSError
from rest_framework import serializers

from conversion.images.ramp import ColorRamp
from platform_site.api.schema import document_extra_properties
from platform_site.api.serializers import ApiSerializer, StrictBooleanField, StrictCharField, StrictFloatField

from .defaults import DEFAULT_COLOR_RAMP, DEFAULTS

# One stop per whole percent at most. Each image's listing carries its ramp and a legend range per stop: a ramp of
# 50,000 stops made every listing of an owner's images megabytes long.
MAX_COLOR_RAMP_STOPS = 101
PERCENT_KEY = re.compile(r"^(100(\.0+)?|[1-9]?[0-9](\.[0-9]+)?)%$")


@extend_schema_field({"type": "number", "format": "double", "exclusiveMinimum": 0, "maximum": 100})
class PercentField(StrictFloatField):
    """A percentage in (0, 100]."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        if not 0 < value <= 100:
            raise serializers.ValidationError("Must be greater than 0 and at most 100.")
        return value


EPSG_CODE = r"EPSG:[0-9]{1,6}"


@extend_schema_field({"type": "string", "pattern": rf"^\s*{EPSG_CODE}\s*$", "example": "EPSG:3857"})
class ProjectionField(StrictCharField):
    """`EPSG:<code>` that pyproj knows, of a map: projected or latitude/longitude, in two dimensions. A vertical
    (heights only), geocentric, 3D or compound system was accepted and gave meaningless images."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data).strip()
        if not re.fullmatch(EPSG_CODE, value):
            raise serializers.ValidationError("Must be of the form 'EPSG:<code>', e.g. 'EPSG:3857'.")
        try:
            crs = CRS.from_user_input(value)
        except CRSError:
            raise serializers.ValidationError(f"Unknown projection '{value}'.") from None
        if not (crs.is_projected or crs.is_geographic) or len(crs.axis_info) != 2:
            raise serializers.ValidationError(
                f"'{value}' ({crs.type_name}) is not a map projection: use a projected or latitude/longitude system "
                "in two dimensions, e.g. 'EPSG:3857' or 'EPSG:4326'."
            )
        return value


def _color(value, length: int, key: str) -> list[int]:
    if (
        not isinstance(value, list)
        or len(value) != length
        or not all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c <= 255 for c in value)
    ):
        kind = "RGBA" if length == 4 else "RGB"
        raise serializers.ValidationError({key: [f"Must be an {kind} array of {length} integers from 0 to 255."]})
    return value


def _color_schema(length: int, description: str) -> dict:
    channel = {"type": "integer", "minimum": 0, "maximum": 255}
    return {"type": "array", "items": channel, "minItems": length, "maxItems": length, "description": description}


RGB_SCHEMA = _color_schema(3, "RGB colour of the stop, three integers from 0 to 255.")
COLOR_RAMP_SCHEMA = {
    "type": "object",
    "description": "Colour stops keyed by percentile of the property's values ('0%' to '100%', both ends "
    "required, any stop between such as '35%'), each an RGB array; 'nv' is the RGBA colour of cells without a value.",
    "properties": {
        "0%": RGB_SCHEMA,
        "100%": RGB_SCHEMA,
        "nv": _color_schema(4, "RGBA colour of cells without a value, four integers from 0 to 255."),
    },
    "required": ["0%", "100%", "nv"],
    "additionalProperties": RGB_SCHEMA,
    "propertyNames": {"pattern": f"^(nv|{PERCENT_KEY.pattern[1:-1]})$"},  # (what the field takes)
    "maxProperties": MAX_COLOR_RAMP_STOPS + 1,
    "example": DEFAULT_COLOR_RAMP,
}


@extend_schema_field(COLOR_RAMP_SCHEMA)
class ColorRampField(serializers.Field):
    """Stops keyed by percentage strings ('0%'...'100%', both ends required) with RGB arrays, and
    `nv` with an RGBA array for cells without a value."""

    def to_internal_value(self, data):
        if not isinstance(data, dict):
            raise serializers.ValidationError("Must be an object of percentage stops and 'nv'.")
        if len(data) - ("nv" in data) > MAX_COLOR_RAMP_STOPS:
            raise serializers.ValidationError(f"At most {MAX_COLOR_RAMP_STOPS} percentage stops.")
        ramp = {}
        for key, value in data.items():
            if key == "nv":
                ramp[key] = _color(value, 4, key)
            elif PERCENT_KEY.fullmatch(key):
                ramp[key] = _color(value, 3, key)
            else:
                raise serializers.ValidationError({key: ["Unknown key: use percentage stops such as '35%' and 'nv'."]})
        missing = [key for key in ("0%", "100%", "nv") if key not in ramp]
        if missing:
            # The ends are keyed as the schema requires them (an answer holds the keys sent, and a client checking
            # it against the schema looks for '0%'); '0.0%' is refused for '0%' with a word on why.
            written = {float(key[:-1]): key for key in ramp if key != "nv"}
            otherwise = [
                f"'{written[float(key[:-1])]}'" for key in missing if key != "nv" and float(key[:-1]) in written
            ]
            hint = f" (the ends are written '0%' and '100%', not {' or '.join(otherwise)})" if otherwise else ""
            raise serializers.ValidationError(f"Missing keys: {', '.join(missing)}{hint}.")
        try:
            ColorRamp.from_config(ramp)  # what image creation will read: e.g. '50%' and '50.0%' are one stop
        except ValueError as exc:
            raise serializers.ValidationError(str(exc).capitalize() + ".") from None
        return ramp

    def to_representation(self, value):
        return value


class ConfigurationEntriesSerializer(ApiSerializer):
    """The writable entries. `apiOwnerUsername` and `coreUserId` may be echoed back and are ignored; as every key,
    they are of their type (texts, as a GET answers them: a number was turned into text, `true` refused)."""

    apiOwnerUsername = StrictCharField(required=False, write_only=True, allow_blank=True, trim_whitespace=False)
    coreUserId = StrictCharField(required=False, write_only=True, allow_blank=True, trim_whitespace=False)
    operationsImageCreation = StrictBooleanField(required=False)
    geoimagesResolution = StrictFloatField(required=False, min_value=1e-9, max_value=1)
    geoimagesShape = serializers.ChoiceField(choices=["SQUARE", "HEXAGON"], required=False)
    geoimagesProjection = ProjectionField(required=False)
    geoimagesColorRamp = ColorRampField(required=False)
    fieldsAutoSync = StrictBooleanField(required=False)
    fieldsMergeIntersection = PercentField(required=False)
    fieldsAttachIntersection = PercentField(required=False)
    fieldsAutoMerge = StrictBooleanField(required=False)

    def entries(self) -> dict:
        """The validated configuration entries, without the echoed identity keys."""
        return {k: v for k, v in self.validated_data.items() if k not in ("apiOwnerUsername", "coreUserId")}


class ConfigurationSerializer(ConfigurationEntriesSerializer):
    """The response shape, for the OpenAPI schema: the identity keys, then every entry
    (`configuration_representation` writes it)."""

    apiOwnerUsername = serializers.CharField(read_only=True)
    coreUserId = serializers.CharField(read_only=True, help_text="The core user's id; empty for the API owner's.")


# Every entry is answered, its default when never set; only `GET /configs` (the owner's) leaves out `fieldsAutoMerge`.
document_extra_properties(ConfigurationSerializer, required=[name for name in DEFAULTS if name != "fieldsAutoMerge"])


def configuration_representation(*, owner, core_user=None, entries: dict, include_auto_merge: bool = True) -> dict:
    """The spec's response shape: identity keys first, then every entry."""
    body = {"apiOwnerUsername": owner.get_username(), "coreUserId": str(core_user.pk) if core_user else ""}
    body.update(entries)
    if not include_auto_merge:
        body.pop("fieldsAutoMerge", None)
    return body
