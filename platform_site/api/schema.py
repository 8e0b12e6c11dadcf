"""OpenAPI (drf-spectacular) extensions for the cross-cutting API parts.

Imported by `ApiConfig.ready()`: an extension registers itself when its class is defined, and the schema
is generated long after start-up (`/api/schema/`, `manage.py spectacular`).
"""

import re
from collections.abc import Iterable, Iterator

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension
from drf_spectacular.openapi import AutoSchema
from drf_spectacular.plumbing import append_meta, build_bearer_security_scheme_object, is_field
from drf_spectacular.utils import OpenApiExample
from rest_framework import serializers

from platform_site.api.authentication import BEARER_CHALLENGE
from platform_site.api.errors import PROBLEM_CONTENT_TYPE
from platform_site.api.serializers import RejectUnknownFieldsMixin

PAGING_HEADERS = {
    "X-Total-Count": {"description": "Number of records of every page together.", "schema": {"type": "integer"}},
    "Link": {
        "description": 'URLs of the `first`, `prev`, `next` and `last` pages, as `<url>; rel="next"`.',
        "schema": {"type": "string"},
    },
}

# The body of every error (`errors.problem_body`), RFC 9457 with our `errorKey` and `fieldErrors`.
PROBLEM_SCHEMAS = {
    "FieldError": {
        "type": "object",
        "properties": {
            "field": {
                "type": "string",
                "description": "Dotted / indexed path of the key (`settings.backgroundColor`, `ids[2]`); empty for "
                "the body as a whole.",
            },
            "message": {"type": "string"},
        },
        "required": ["field", "message"],
    },
    "ProblemDetail": {
        "type": "object",
        "description": "Every error answer, as `application/problem+json`.",
        "properties": {
            "type": {"type": "string", "description": "`urn:problem:<errorKey>`."},
            "title": {"type": "string", "description": "The HTTP status phrase."},
            "status": {"type": "integer"},
            "detail": {"type": "string"},
            "path": {"type": "string", "description": "The request's path."},
            "errorKey": {
                "type": "string",
                "description": "Stable and machine-readable: `validation`, `notFound`, `unauthorized`, "
                "`invalidGeometry`, `providerResourceReadOnly`...",
            },
            "fieldErrors": {
                "type": "array",
                "items": {"$ref": "#/components/schemas/FieldError"},
                "description": "Validation errors only: one entry per invalid key.",
            },
        },
        "required": ["type", "title", "status", "detail", "path", "errorKey"],
    },
}
PROBLEM_REF = {"$ref": "#/components/schemas/ProblemDetail"}

# What each status means wherever the rules of `problem_statuses` give it; a view's `problem_responses` says more.
PROBLEM_DESCRIPTIONS = {
    400: "Invalid input (`validation`, with `fieldErrors`, or a more specific `errorKey`), or a body that cannot be "
    "read (`malformedRequest`).",
    401: "No bearer token, or a malformed or expired one (`unauthorized`).",
    404: "No such resource, or one of another API owner (`notFound`).",
    406: "The `Accept` header takes no JSON (`notAcceptable`).",
    408: "The body stopped arriving before its Content-Length was reached (`requestTimeout`).",
    411: "The body was sent without a Content-Length (`Transfer-Encoding: chunked`; `lengthRequired`).",
    413: "The JSON body is larger than the server accepts (`requestTooLarge`).",
    415: "The body is not JSON in UTF-8, UTF-16 or UTF-32, or comes with a `Content-Encoding` (`unsupportedMediaType`; "
    "no content coding is taken: `Accept-Encoding: identity`).",
    503: "The database is busy with another request's change (`databaseBusy`), cannot be reached "
    "(`databaseUnavailable`) or lacks a migration of this release (`databaseNotMigrated`): nothing was written. Send "
    "it again after `Retry-After` seconds.",
    507: "The server has no room left to store the change (its disk or its database is full; "
    "`insufficientStorage`): nothing of it was kept. Send it again after `Retry-After` seconds.",
}
# What an operation that takes no body answers one (`parsers.no_body`), besides `problem_statuses` (which documents
# these only where there is a body): its view lists them in its `problem_responses`.
NO_BODY_PROBLEMS = {
    400: "A body other than none or the empty JSON document `{}` (`validation`), or one that cannot be read "
    "(`malformedRequest`).",
    **{status: PROBLEM_DESCRIPTIONS[status] for status in (408, 411, 413, 415)},
}
# Methods that write: a full disk or database answers them 507.
WRITE_METHODS = ("post", "put", "patch", "delete")
DOWNLOAD_NOT_ACCEPTABLE = "The `Accept` header takes neither {media_types} nor JSON (`notAcceptable`)."
UPLOAD_PROBLEM_DESCRIPTIONS = {
    413: "The upload is larger than the server accepts (`fileTooLarge`).",
    415: "The body is not `multipart/form-data`, or comes with a `Content-Encoding` (`unsupportedMediaType`).",
}
UNAUTHORIZED_HEADERS = {
    "WWW-Authenticate": {"description": f"`{BEARER_CHALLENGE}`.", "schema": {"type": "string"}},
}
# A 429 (a refused login), a 503 and a 507 say when to try again.
RETRY_AFTER_HEADERS = {
    "Retry-After": {"description": "Seconds to wait before trying again.", "schema": {"type": "integer"}},
}
# A file answered (a download or an image) names itself: downloads as attachments, images inline.
DOWNLOAD_DISPOSITIONS = {"application/geo+json": "attachment", "application/zip": "attachment", "image/png": "inline"}
ECHO_DESCRIPTION = (
    "Read-only, as the answer has it: may be sent back, but must equal the stored value (another value is a 400)."
)
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")


class RequestRulesAutoSchema(AutoSchema):
    """The default schema class (`DEFAULT_SCHEMA_CLASS`): request bodies say the rules the server holds them to that
    drf-spectacular leaves out, so a client generated from the document refuses what the server would:
    - the body of a serializer that refuses keys it does not have (`RejectUnknownFieldsMixin`: a 400 `Unknown
      field.`) says so, `additionalProperties: false`;
    - a body that may also echo the read-only keys of an answer (a farm's or grower's PUT: `echo_validated`) names
      the answer's serializer in `schema_echoes`: those keys are optional properties that must equal the stored
      values, so that a client may put back what it read and still sends no key the server refuses;
    - a body that must hold at least some keys (a PATCH refusing `{}` with "Nothing to update") says so with the
      serializer's `schema_min_properties`: `minProperties`;
    - a list that may not be empty (`allow_empty=False`: a 400 "This list may not be empty.") has `minItems: 1`."""

    def _map_basic_serializer(self, serializer, direction):
        schema = super()._map_basic_serializer(serializer, direction)
        if direction == "request" and isinstance(serializer, RejectUnknownFieldsMixin):
            schema["additionalProperties"] = False
            if (answer := getattr(serializer, "schema_echoes", None)) is not None:
                schema.setdefault("properties", {}).update(self._echoed_properties(serializer, answer()))
            if min_properties := getattr(serializer, "schema_min_properties", 0):
                schema["minProperties"] = min_properties
        return schema

    def _echoed_properties(self, serializer, answer) -> dict:
        """The keys of `answer` that `serializer` does not take, as the answer documents them (not read-only)."""
        properties = {}
        for name, field in answer.fields.items():
            if name in serializer.fields:
                continue
            meta = self._get_serializer_field_meta(field, "response") | {"description": ECHO_DESCRIPTION}
            meta.pop("readOnly", None)
            mapped = append_meta(self._map_serializer_field(field, "response"), meta)
            mapped.pop("readOnly", None)  # (drf-spectacular drops a read-only property from a request body)
            if isinstance(mapped.get("type"), list):
                # A nullable field's mapping says "null" already, and its meta's `nullable` added it again: a type
                # with repeated entries is no JSON Schema (strict OpenAPI 3.1 tools refused the whole document).
                mapped["type"] = list(dict.fromkeys(mapped["type"]))
            properties[name] = mapped
        return properties

    def _map_serializer_field(self, field, direction, bypass_extensions=False):
        schema = super()._map_serializer_field(field, direction, bypass_extensions)
        if direction == "request" and isinstance(field, serializers.ListField) and not field.allow_empty:
            schema.setdefault("minItems", 1)
        return schema


class ApiAutoSchema(RequestRulesAutoSchema):
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
        scheme = build_bearer_security_scheme_object(
            header_name="Authorization", token_prefix="Bearer", bearer_format="JWT"
        )
        return {**scheme, "description": BEARER_DESCRIPTION}


BEARER_DESCRIPTION = (
    "The `id_token` that `POST /api/authenticate` answers for an API owner's username and password, sent as "
    "`Authorization: Bearer <id_token>` (paste the token alone into Swagger UI's Authorize box). By default it is "
    "valid 24 hours, 30 days with `rememberMe: true` (`JWT_LIFETIME_HOURS`, `JWT_REMEMBER_ME_DAYS`). A missing, "
    "malformed, expired or revoked token (the password changed since) is a 401 `unauthorized`; a deactivated "
    "owner's a 401 `ownerDeactivated`."
)


def body_example(value: dict, *, name: str = "Example") -> list[OpenApiExample]:
    """A request body's example (`extend_schema_serializer(examples=...)`), which Swagger UI fills its form with
    instead of one of its own: its own gave every key a value, and `farmId`/`growerId` 0 names no farm or grower, a
    merge one id (a 400 on the first try)."""
    return [OpenApiExample(name, value=value, request_only=True)]


def document_extra_properties(
    serializer_class,
    properties: dict | None = None,
    *,
    required: Iterable[str] = (),
    optional: Iterable[str] = (),
) -> None:
    """Document what the serializer's fields alone do not say (the schema is built from the declared fields):
    `properties`, the keys its `to_representation` adds (key: OpenAPI schema, or a serializer field, mapped as a
    declared one is: a choice field then shares its enum component); `required`, added or declared keys every
    answer sends (required in the response schema only: a request may leave a declared one out); `optional`,
    declared read-only keys sent only when they apply (drf-spectacular makes every read-only field required)."""
    always, sometimes = set(required), set(optional)

    class ExtraProperties(OpenApiSerializerExtension):
        target_class = serializer_class

        def map_serializer(self, auto_schema, direction):
            schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
            schema.setdefault("properties", {}).update(
                {
                    key: auto_schema._map_serializer_field(value, direction) if is_field(value) else value
                    for key, value in (properties or {}).items()
                }
            )
            keys = (set(schema.get("required", [])) | (always if direction == "response" else set())) - sometimes
            if keys:
                schema["required"] = sorted(keys)
            else:
                schema.pop("required", None)
            return schema

    ExtraProperties.__name__ = f"{serializer_class.__name__}ExtraProperties"


def document_one_of(serializer_class, keys: Iterable[str]) -> None:
    """Document that a request to the serializer sends exactly one of `keys` (its `validate` refuses none or two):
    the schema's `oneOf` of each key required, which a generated client or a validator can check."""
    alternatives = list(keys)

    class OneOf(OpenApiSerializerExtension):
        target_class = serializer_class

        def map_serializer(self, auto_schema, direction):
            schema = auto_schema._map_serializer(self.target, direction, bypass_extensions=True)
            if direction == "request":
                schema["oneOf"] = [{"required": [key]} for key in alternatives]
            return schema

    OneOf.__name__ = f"{serializer_class.__name__}OneOf"


def _operations(result) -> Iterator[tuple[str, str, dict]]:
    """(path, method, operation) of every operation of the schema `result`."""
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            if method in HTTP_METHODS:
                yield path, method, operation


def _answers(result, status: str) -> Iterator[tuple[dict, dict]]:
    """(operation, its documented answer of `status`) of every operation that has one."""
    for _, _, operation in _operations(result):
        if (answer := operation.get("responses", {}).get(status)) is not None:
            yield operation, answer


def postprocess_paging_headers(result, generator, request, public):
    """Every paged list (it takes the `page` parameter) answers with `X-Total-Count` and `Link` headers."""
    for operation, ok in _answers(result, "200"):
        if any(p.get("in") == "query" and p.get("name") == "page" for p in operation.get("parameters", [])):
            ok.setdefault("headers", {}).update(PAGING_HEADERS)
    return result


# The services, as the README's table names them: each operation's tag, by the start of its path (first match).
SERVICE_TAGS = (
    ("/api/authenticate", "authentication", "A bearer token for an API owner (see the `bearerAuth` scheme)."),
    ("/health", "health", "Whether the instance can serve: no login, nothing of any tenant."),
    ("/services/usermanagement/api", "core users", "The owner's core users (growers, agronomists...)."),
    ("/services/config/api", "configuration", "The owner's and each core user's settings, with inheritance."),
    ("/services/alerts/api", "webhooks", "Webhooks, and the deliveries that failed."),
    ("/services/fields/api", "fields", "Fields with their boundary history, farms, growers, intersects, weather."),
    ("/services/beta/api", "assets and catalogs", "Machines, machine files, implements, operators, products and "
     "varieties (beta)."),
    ("/services/operations/api", "operations and files", "Uploads (`/batch`), files, merges, operations, their "
     "summaries, units, images and GeoJSON."),
    ("/services/widgets/api", "magic links", "Provider, authentication and file-upload links for end users, and "
     "provider applications."),
)  # fmt: skip


def postprocess_service_tags(result, generator, request, public):
    """Each operation under its service's tag, in the README's order: drf-spectacular tagged 101 of 103 operations
    "services" (the first segment of their paths), one group of everything in Swagger UI."""
    for path, _, operation in _operations(result):
        tag = next((name for start, name, _ in SERVICE_TAGS if path.startswith(start)), None)
        if tag is not None:
            operation["tags"] = [tag]
    result["tags"] = [{"name": name, "description": description} for _, name, description in SERVICE_TAGS]
    return result


def postprocess_operation_summaries(result, generator, request, public):
    """Every operation has a one-line `summary`, which Swagger UI shows beside its path: its view's
    `operation_summaries = {action (a viewset's) or method (an APIView's): summary}`. Without them each operation had
    only its viewset's docstring, one text for every action of the viewset."""
    declared = _declared(generator, "operation_summaries", None)
    for path, method, operation in _operations(result):
        if summary := declared.get((_path_shape(path), method)):
            operation["summary"] = summary
    return result


def postprocess_created_headers(result, generator, request, public):
    """Every 201 names the address of what it created (`Location`)."""
    for _, created in _answers(result, "201"):
        created.setdefault("headers", {})["Location"] = {
            "description": "The absolute address of the resource created.",
            "schema": {"type": "string", "format": "uri"},
        }
    return result


# A schema written by hand (a dict given to `extend_schema_field`) that several operations share says its component
# name under this key: `postprocess_named_schemas` makes it one component, which each place refers to.
COMPONENT_NAME = "x-component-name"


def postprocess_named_schemas(result, generator, request, public):
    """Each hand-written schema marked with `COMPONENT_NAME` (nested ones too) becomes a component of that name, and
    its places refer to it: drf-spectacular writes such a dict inline at each use, so a field's geometry was four
    unrelated inline schemas, and a client generated from the document had as many unrelated geometry classes (82
    modules of near-identical models), none of which could be passed where another was asked for."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})

    def named(node):
        if isinstance(node, list):
            return [named(item) for item in node]
        if not isinstance(node, dict):
            return node
        node = {key: named(value) for key, value in node.items()}
        name = node.pop(COMPONENT_NAME, None)
        if name is None:
            return node
        component = schemas.setdefault(name, node)
        # (what this place says otherwise, such as its own description, stays beside the reference)
        return {"$ref": f"#/components/schemas/{name}", **{k: v for k, v in node.items() if component.get(k) != v}}

    result["paths"] = named(result.get("paths", {}))
    for name in list(schemas):
        schemas[name] = named(schemas[name])
    return result


def postprocess_request_ids(result, generator, request, public):
    """Every answer names its request in `X-Request-Id` (`request_ids`), and a request may bring its own: the header
    of every response (one component) and an optional parameter of every operation, so a typed client has an
    argument and an accessor for it (it was said only in the document's description)."""
    from .request_ids import HEADER, PLAIN_PATTERN

    components = result.setdefault("components", {})
    components.setdefault("headers", {})[HEADER] = {
        "description": "The request's id: the one it came with when plain, else a new UUID. The server's log lines "
        "about the request carry it; quote it when reporting a problem.",
        "schema": {"type": "string"},
    }
    parameter = {
        "in": "header",
        "name": HEADER,
        "required": False,
        "schema": {"type": "string", "pattern": PLAIN_PATTERN},
        "description": "Optional: an id of the client's for this request (a UUID, a trace id), kept as its "
        "`X-Request-Id` and in the server's log lines (another value is replaced by a new UUID).",
    }
    for _, _, operation in _operations(result):
        # (inline, as every parameter of the document is, where tools read each by its name)
        operation.setdefault("parameters", []).append(dict(parameter))
        for answer in operation.get("responses", {}).values():
            answer.setdefault("headers", {})[HEADER] = {"$ref": f"#/components/headers/{HEADER}"}
    return result


def postprocess_enum_names(result, generator, request, public):
    """An enum whose values differ only by case or punctuation (the spec's `distanceUnit`: `Mile` and `mile`) names
    each value (`x-enum-varnames`, read by openapi-python-client and openapi-generator): generating a client from the
    document failed on the two constants of one name (`MILE`)."""
    for node in dict_nodes(result):
        values = node.get("enum")
        if isinstance(values, list) and all(isinstance(v, str) for v in values):
            names = enum_constant_names(values)
            if len(set(names)) == len(names) and names != [_constant_name(v) for v in values]:
                node["x-enum-varnames"] = names
    return result


def dict_nodes(node) -> Iterator[dict]:
    """Every object of a JSON document (`node` itself first, if it is one), depth first."""
    if isinstance(node, dict):
        yield node
        for value in list(node.values()):
            yield from dict_nodes(value)
    elif isinstance(node, list):
        for value in node:
            yield from dict_nodes(value)


def _constant_name(value: str) -> str:
    return re.sub(r"[^0-9A-Za-z]+", "_", value).strip("_").upper() or "EMPTY"


def enum_constant_names(values: list[str]) -> list[str]:
    """A constant's name per enum value (`Feet` FEET): those whose names would be one (`Mile`, `mile`) each say their
    writing's case (MILE_TITLE, MILE_LOWER), or their place where that is one too (`per-acre`, `per_acre`)."""
    names = [_constant_name(v) for v in values]
    clashing = {name for name in names if names.count(name) > 1}
    tagged = []
    for place, (value, name) in enumerate(zip(values, names, strict=True)):
        if name in clashing:
            case = "LOWER" if value.islower() else "UPPER" if value.isupper() else "TITLE" if value.istitle() else ""
            name = f"{name}_{case or place}"
        tagged.append(name)
    return [
        f"{base}_{place}" if tagged.count(name) > 1 else name
        for place, (base, name) in enumerate(zip(names, tagged, strict=True))
    ]


def postprocess_idempotency_keys(result, generator, request, public):
    """The creating POSTs (their views' `keyed_actions`) take an `Idempotency-Key` (`platform_site.api.idempotency`):
    the header, its 422, and the `Idempotent-Replayed` header of a retry's answer. `POST /batch` declares its own
    header (its key is its own); its answers get the same `Idempotent-Replayed`."""
    from .idempotency import HEADER, KEY_LIFETIME_TEXT, KEY_PATTERN, REPLAYED_HEADER

    keyed = {
        endpoint
        for endpoint, view_class, name in _endpoint_views(generator)
        if endpoint[1] == "post" and name in getattr(view_class, "keyed_actions", ())
    }
    for path, method, operation in _operations(result):
        parameters = operation.get("parameters", [])
        declared = any(p.get("in") == "header" and p.get("name") == HEADER for p in parameters)
        if (_path_shape(path), method) in keyed and not declared:
            operation.setdefault("parameters", []).append(
                {
                    "in": "header",
                    "name": HEADER,
                    "required": False,
                    "schema": {"type": "string", "pattern": KEY_PATTERN.pattern},
                    "description": "Optional: a key of the client's for this request (a UUID, say), to retry it "
                    f"safely. A request of the same key within {KEY_LIFETIME_TEXT} is answered as the first one was, "
                    f"with `{REPLAYED_HEADER}: true`, and makes nothing again; one with another address, query or body "
                    "is a 422. A request answered with an error keeps no key.",
                }
            )
            operation.setdefault("responses", {}).setdefault(
                "422",
                {
                    "description": f"The `{HEADER}` was sent with another request in the last {KEY_LIFETIME_TEXT} "
                    "(`idempotencyKeyReused`).",
                    "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}},
                },
            )
            declared = True
        if not declared:
            continue
        for status, answer in operation.get("responses", {}).items():
            if status.startswith("2"):
                answer.setdefault("headers", {})[REPLAYED_HEADER] = {
                    "description": f"`true` when this answers a retry with the `{HEADER}` of an earlier request "
                    "(absent otherwise).",
                    "schema": {"type": "string", "enum": ["true"]},
                }
    return result


def postprocess_download_headers(result, generator, request, public):
    """Every file answered (`DOWNLOAD_DISPOSITIONS`' media types) comes with `Content-Disposition`, its file name."""
    for _, ok in _answers(result, "200"):
        kinds = {DOWNLOAD_DISPOSITIONS[media] for media in ok.get("content", {}) if media in DOWNLOAD_DISPOSITIONS}
        for kind in kinds:
            description = f'`{kind}; filename="..."`: the file\'s name (`filename*` too where it is not ASCII).'
            ok.setdefault("headers", {})["Content-Disposition"] = {
                "description": description,
                "schema": {"type": "string"},
            }
    return result


def problem_statuses(operation: dict, method: str = "get") -> dict[int, str]:
    """The error statuses every operation of its kind can answer, with what they mean there: 400 where there is
    input (a body or a query parameter), 401 behind the bearer token, 404 where the path names a resource or the
    query a core user it needs (a `coreUserId` filter of a list finds nothing instead), 406 everywhere (DRF
    negotiates every request's `Accept`), 408, 411, 413 and 415 where there is a body, 503 everywhere (the database's
    problems: `errors.database_problem`), 507 where the `method` writes."""
    parameters = operation.get("parameters", [])
    body = operation.get("requestBody", {}).get("content", {})
    upload = "multipart/form-data" in body
    statuses: dict[int, str] = {}
    if body or any(p.get("in") == "query" for p in parameters):
        statuses[400] = PROBLEM_DESCRIPTIONS[400]
    if any(requirement for requirement in operation.get("security", [])):
        statuses[401] = PROBLEM_DESCRIPTIONS[401]
    if any(p.get("in") == "path" or (p.get("name") == "coreUserId" and p.get("required")) for p in parameters):
        statuses[404] = PROBLEM_DESCRIPTIONS[404]
    statuses[406] = _not_acceptable(operation)
    if body:
        descriptions = UPLOAD_PROBLEM_DESCRIPTIONS if upload else PROBLEM_DESCRIPTIONS
        statuses[408] = PROBLEM_DESCRIPTIONS[408]
        statuses[411] = PROBLEM_DESCRIPTIONS[411]
        statuses[413] = descriptions[413]
        statuses[415] = descriptions[415]
    statuses[503] = PROBLEM_DESCRIPTIONS[503]  # (every operation reads or writes the database)
    if method in WRITE_METHODS:
        statuses[507] = PROBLEM_DESCRIPTIONS[507]
    return statuses


def _not_acceptable(operation: dict) -> str:
    """What 406 means for the operation: an `Accept` that takes none of its media types. A download answers its
    own media type and JSON too (`renderers.DownloadNegotiation`)."""
    media_types = {
        media_type
        for code, response in operation.get("responses", {}).items()
        if code.startswith("2")
        for media_type in response.get("content", {})
    }
    downloads = sorted(media_types - {"application/json"})
    if not downloads:
        return PROBLEM_DESCRIPTIONS[406]
    return DOWNLOAD_NOT_ACCEPTABLE.format(media_types=" or ".join(f"`{m}`" for m in downloads))


def _declared(generator, attribute: str, default) -> dict[tuple[str, str], object]:
    """What each endpoint's view declares of itself in `attribute`, `{action (a viewset's) or method (an APIView's):
    value}` (`problem_responses`, `operation_summaries`): the endpoint's own value, else `default`."""
    return {
        endpoint: getattr(view_class, attribute, {}).get(name, default)
        for endpoint, view_class, name in _endpoint_views(generator)
    }


def _endpoint_views(generator) -> Iterable[tuple[tuple[str, str], type | None, str]]:
    """`((path shape, method), view class, action or method name)` of each endpoint the schema documents."""
    for path, _regex, method, callback in generator.endpoints or []:
        name = (getattr(callback, "actions", None) or {}).get(method.lower(), method.lower())
        yield (_path_shape(path), method.lower()), getattr(callback, "cls", None), name


def _path_shape(path: str) -> str:
    """The path with its parameters unnamed: the endpoints say `{pk}` where the schema says `{id}`."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def postprocess_query_parameters(result, generator, request, public):
    """A query string cannot carry null: no query parameter takes null. drf-spectacular copies it from the
    nullable model field a filter reads (`provider`, `startTime`, `operationType`...): `type: [string, "null"]` in
    OpenAPI 3.1 (`nullable: true` in 3.0), and an empty value is no filter at all."""
    for _, _, operation in _operations(result):
        for parameter in operation.get("parameters", []):
            if parameter.get("in") == "query":
                _null_removed(parameter.get("schema", {}))
    return result


def _null_removed(schema: dict) -> None:
    """`schema` without the null it takes (OpenAPI 3.0's `nullable`, or 3.1's `null` type)."""
    schema.pop("nullable", None)
    if isinstance(schema.get("type"), list):
        types = [t for t in schema["type"] if t != "null"]
        schema["type"] = types[0] if len(types) == 1 else types


def postprocess_problem_responses(result, generator, request, public):
    """Every operation documents its error answers: `application/problem+json` bodies (`ProblemDetail`) with the
    statuses of `problem_statuses` and those its view declares in `problem_responses`."""
    result.setdefault("components", {}).setdefault("schemas", {}).update(PROBLEM_SCHEMAS)
    # (`problem_responses`: `{status: description}`, the statuses its services answer besides `problem_statuses`')
    declared = _declared(generator, "problem_responses", {})
    for path, method, operation in _operations(result):
        statuses = {**problem_statuses(operation, method), **declared.get((_path_shape(path), method), {})}
        responses = operation.setdefault("responses", {})
        for status in sorted(statuses):
            response = {
                "description": statuses[status],
                "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}},
            }
            if status == 401:
                response["headers"] = UNAUTHORIZED_HEADERS
            elif status in (429, 503, 507) and "Retry-After" in statuses[status]:
                response["headers"] = RETRY_AFTER_HEADERS
            responses.setdefault(str(status), response)
    return result


def _takes_no_document(schema: dict, components: dict) -> bool:
    """Whether the body schema takes what DRF reads from a request without a body: `{}` (an empty form for an
    upload). Not an object, a required key or `minProperties` and it does not."""
    while "$ref" in schema:
        schema = components.get(schema["$ref"].rsplit("/", 1)[1], {})
    return schema.get("type", "object") == "object" and not schema.get("required") and not schema.get("minProperties")


def postprocess_request_body_required(result, generator, request, public):
    """A request body is `required: true` wherever the server refuses a request without one (400), so that a generated
    client does not let it be left out: where its schema does not take the empty document DRF reads instead (an
    array, a required key, `minProperties`; drf-spectacular judges by required keys only, and never for a schema
    given as a dict), and where the view reads the body as a replacement document (`replacement_actions`:
    `parsers.replacement_document`, no body is not `{}`)."""
    components = result.get("components", {}).get("schemas", {})
    replacing = {
        endpoint
        for endpoint, view_class, name in _endpoint_views(generator)
        if name in getattr(view_class, "replacement_actions", ())
    }
    for path, method, operation in _operations(result):
        body = operation.get("requestBody")
        if not body:
            continue
        if (_path_shape(path), method) in replacing or any(
            not _takes_no_document(content.get("schema", {}), components) for content in body["content"].values()
        ):
            body["required"] = True
    return result


# The spec's names of the path parameters that the routes call `pk` (drf-spectacular: `id`): a generated client's
# method signatures follow them. The server does not read the names; only the schema is renamed.
PATH_PARAMETER_NAMES = (
    (re.compile(r"/machines/\{id\}"), "machineId"),
    (re.compile(r"/implements/\{id\}"), "implementId"),
    (re.compile(r"/operators/\{id\}"), "operatorId"),
    (re.compile(r"/boundaries/\{id\}"), "boundaryId"),
    (re.compile(r"/fields/\{fieldId\}/operations(?:/files)?/\{id\}"), "fileId"),
    (re.compile(r"/magic-link/(?:provider|authentication|file-upload)/\{id\}"), "magicLinkId"),
    (re.compile(r"/fields/\{id\}/weather$"), "fieldId"),
)


def postprocess_path_parameter_names(result, generator, request, public):
    """Paths and their `id` parameter renamed to the spec's names (`PATH_PARAMETER_NAMES`), in their order."""
    paths = {}
    for path, operations in result.get("paths", {}).items():
        name = next((name for pattern, name in PATH_PARAMETER_NAMES if pattern.search(path)), None)
        if name is not None:
            path = path.replace("{id}", f"{{{name}}}")
            for method, operation in operations.items():
                for parameter in operation.get("parameters", []) if method in HTTP_METHODS else []:
                    if parameter.get("in") == "path" and parameter.get("name") == "id":
                        parameter["name"] = name
        paths[path] = operations
    result["paths"] = paths
    return result
