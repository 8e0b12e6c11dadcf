"""OpenAPI (drf-spectacular) extensions for the cross-cutting API parts.

Imported by `ApiConfig.ready()`: an extension registers itself when its class is defined, and the schema
is generated long after start-up (`/api/schema/`, `manage.py spectacular`).
"""

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import build_bearer_security_scheme_object

PAGING_HEADERS = {
    "X-Total-Count": {"description": "Number of records of every page together.", "schema": {"type": "integer"}},
    "Link": {
        "description": 'URLs of the `first`, `prev`, `next` and `last` pages, as `<url>; rel="next"`.',
        "schema": {"type": "string"},
    },
}


class ApiAutoSchema(AutoSchema):
    """Only a viewset's `list` is paged, sorted and filtered (`PagePagination` and the filter backends serve
    `list()` alone): other actions that answer an array (`/images`, a deprecated one-element outline) are
    plain arrays, without `page`/`size`/filter parameters."""

    def _pages_and_filters(self) -> bool:
        return getattr(self.view, "action", None) in (None, "list")

    def _get_paginator(self):
        return super()._get_paginator() if self._pages_and_filters() else None

    def get_filter_backends(self):
        return super().get_filter_backends() if self._pages_and_filters() else []


class BearerTokenScheme(OpenApiAuthenticationExtension):
    """`Authorization: Bearer <JWT>` from `POST /api/authenticate`: the security scheme of every other operation."""

    target_class = "platform_site.api.authentication.BearerTokenAuthentication"
    name = "bearerAuth"

    def get_security_definition(self, auto_schema):
        return build_bearer_security_scheme_object(
            header_name="Authorization", token_prefix="Bearer", bearer_format="JWT"
        )


def document_extra_properties(serializer_class, properties: dict) -> None:
    """Document the keys a serializer's `to_representation` adds beyond its declared fields (the schema is
    built from the declared fields only). `properties` maps each key to its OpenAPI schema."""

    class ExtraProperties(OpenApiSerializerExtension):
        target_class = serializer_class

        def map_serializer(self, auto_schema, direction):
            schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
            schema.setdefault("properties", {}).update(properties)
            return schema

    ExtraProperties.__name__ = f"{serializer_class.__name__}ExtraProperties"


def postprocess_paging_headers(result, generator, request, public):
    """Every paged list (it takes the `page` parameter) answers with `X-Total-Count` and `Link` headers."""
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict):
                continue
            if any(p.get("in") == "query" and p.get("name") == "page" for p in operation.get("parameters", [])):
                ok = operation.get("responses", {}).get("200")
                if ok is not None:
                    ok.setdefault("headers", {}).update(PAGING_HEADERS)
    return result
