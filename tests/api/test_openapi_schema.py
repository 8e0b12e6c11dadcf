"""The OpenAPI schema, generated as `manage.py spectacular --validate --fail-on-warn` does: complete (every
endpoint of the spec's tables), warning-free, and with the bearer token declared where it is needed."""

import io
import json
import re

import pytest
import yaml
from django.core.management import call_command
from drf_spectacular.drainage import GENERATOR_STATS
from drf_spectacular.management.commands.spectacular import SchemaGenerationError, SchemaValidationError

pytestmark = pytest.mark.embedded

AUTH = "/api/authenticate"
USERS = "/services/usermanagement/api"
CONFIG = "/services/config/api"
BETA = "/services/beta/api"
FIELDS = "/services/fields/api"
OPERATIONS = "/services/operations/api"
WIDGETS = "/services/widgets/api"
ALERTS = "/services/alerts/api/alerts"
FIELD = "/users/{coreUserId}/fields/{fieldId}"

# api-spec.md "Endpoints" tables (paths relative to their service base), with the prefixes and the endpoints of
# supplement.md. Path parameter names are compared as `{}`: the spec writes {machineId} where a route says {id}.
SPEC_ENDPOINTS = [
    ("POST", AUTH),
    # supplement "Core users"
    ("GET", f"{USERS}/users"),
    ("GET", f"{USERS}/users/{{id}}"),
    ("POST", f"{USERS}/users"),
    ("PUT", f"{USERS}/users"),
    ("DELETE", f"{USERS}/users/{{id}}"),
    # Configuration service
    ("GET", f"{CONFIG}/configs"),
    ("GET", f"{CONFIG}/configs/{{coreUserId}}"),
    ("POST", f"{CONFIG}/configs/{{coreUserId}}"),
    ("PATCH", f"{CONFIG}/configs"),
    ("PATCH", f"{CONFIG}/configs/{{coreUserId}}"),
    ("DELETE", f"{CONFIG}/configs/{{coreUserId}}"),
    # Assets service (beta)
    ("GET", f"{BETA}/users/{{coreUserId}}/machines"),
    ("GET", f"{BETA}/users/{{coreUserId}}/machines/{{machineId}}"),
    ("GET", f"{BETA}/users/{{coreUserId}}/machines/{{machineId}}/files"),
    ("POST", f"{BETA}/users/{{coreUserId}}/machines"),
    ("PATCH", f"{BETA}/users/{{coreUserId}}/machines/{{machineId}}"),
    ("DELETE", f"{BETA}/users/{{coreUserId}}/machines/{{machineId}}"),
    ("GET", f"{BETA}/users/{{coreUserId}}/implements"),
    ("GET", f"{BETA}/users/{{coreUserId}}/implements/{{implementId}}"),
    ("GET", f"{BETA}/users/{{coreUserId}}/operators"),
    ("GET", f"{BETA}/users/{{coreUserId}}/operators/{{operatorId}}"),
    # Fields service: fields
    ("GET", f"{FIELDS}/fields"),
    ("GET", f"{FIELDS}/users/{{coreUserId}}/fields/{{id}}"),
    ("POST", f"{FIELDS}/users/{{coreUserId}}/fields"),
    ("PATCH", f"{FIELDS}/users/{{coreUserId}}/fields/{{id}}"),
    ("DELETE", f"{FIELDS}/users/{{coreUserId}}/fields/{{id}}"),
    ("POST", f"{FIELDS}/users/{{coreUserId}}/fields/intersects"),
    ("POST", f"{FIELDS}/fields/query/intersects"),
    ("POST", f"{FIELDS}/users/{{coreUserId}}/fields/intersect"),
    ("GET", f"{FIELDS}{FIELD}/weather"),
    # operation files of a field
    ("GET", f"{FIELDS}{FIELD}/operations/files"),
    ("GET", f"{FIELDS}{FIELD}/operations"),
    ("GET", f"{FIELDS}{FIELD}/operations/files/{{fileId}}"),
    ("GET", f"{FIELDS}{FIELD}/operations/{{fileId}}"),
    # Fields service: boundaries
    ("GET", f"{FIELDS}{FIELD}/boundaries"),
    ("GET", f"{FIELDS}{FIELD}/boundaries/{{boundaryId}}"),
    ("GET", f"{FIELDS}{FIELD}/boundary"),
    ("PUT", f"{FIELDS}{FIELD}/boundary"),
    # Fields service: farms and growers
    ("GET", f"{FIELDS}/farms"),
    ("GET", f"{FIELDS}/users/{{coreUserId}}/farms/{{id}}"),
    ("POST", f"{FIELDS}/users/{{coreUserId}}/farms"),
    ("PUT", f"{FIELDS}/users/{{coreUserId}}/farms/{{id}}"),
    ("GET", f"{FIELDS}/growers"),
    ("GET", f"{FIELDS}/users/{{coreUserId}}/growers/{{id}}"),
    ("POST", f"{FIELDS}/users/{{coreUserId}}/growers"),
    ("PUT", f"{FIELDS}/users/{{coreUserId}}/growers/{{id}}"),
    # Magic links: list, get one, create for an existing user, delete, create with user creation
    *[
        (method, f"{WIDGETS}{path.format(kind=kind)}")
        for kind in ("provider", "authentication", "file-upload")
        for method, path in [
            ("GET", "/magic-link/{kind}"),
            ("GET", "/magic-link/{kind}/{{magicLinkId}}"),
            ("POST", "/magic-link/users/{{coreUserId}}/{kind}"),
            ("DELETE", "/magic-link/{kind}/{{magicLinkId}}"),
            ("POST", "/magic-link/{kind}"),
        ]
    ],
    # Catalogs (beta)
    ("GET", f"{BETA}/users/{{coreUserId}}/products"),
    ("GET", f"{BETA}/users/products"),
    ("GET", f"{BETA}/users/{{coreUserId}}/products/search"),
    ("GET", f"{BETA}/products/search"),
    ("GET", f"{BETA}/users/{{coreUserId}}/varieties"),
    ("GET", f"{BETA}/users/varieties"),
    # Operations service (+ supplement: standardGeojson)
    ("GET", f"{OPERATIONS}/operations"),
    ("GET", f"{OPERATIONS}/operations/{{id}}"),
    ("GET", f"{OPERATIONS}/operations/{{id}}/summary"),
    ("GET", f"{OPERATIONS}/operations/{{id}}/images"),
    ("GET", f"{OPERATIONS}/operations/{{id}}/units"),
    ("GET", f"{OPERATIONS}/operations/{{id}}/standardGeojson"),
    ("POST", f"{OPERATIONS}/operations/cropOperationByField"),
    # Machine file conversion (+ supplement: status, downloads)
    ("GET", f"{OPERATIONS}/files"),
    ("GET", f"{OPERATIONS}/files/{{id}}"),
    ("GET", f"{OPERATIONS}/files/{{id}}/summary"),
    ("GET", f"{OPERATIONS}/files/{{id}}/images"),
    ("GET", f"{OPERATIONS}/files/{{id}}/units"),
    ("GET", f"{OPERATIONS}/files/{{id}}/status"),
    ("GET", f"{OPERATIONS}/files/{{id}}/standardGeojson"),
    ("GET", f"{OPERATIONS}/files/{{id}}/rawGeojson"),
    ("GET", f"{OPERATIONS}/files/{{id}}/originalFile"),
    ("POST", f"{OPERATIONS}/batch"),
    ("GET", f"{OPERATIONS}/batch/{{id}}"),
    ("GET", f"{OPERATIONS}/batch"),
    ("GET", f"{OPERATIONS}/batch/{{id}}/status"),
    ("PUT", f"{OPERATIONS}/batch/{{id}}/retry"),
    ("POST", f"{OPERATIONS}/files/merge"),
    # Webhooks (+ supplement: failed calls)
    ("POST", f"{ALERTS}/webhooks"),
    ("GET", f"{ALERTS}/webhooks/{{id}}"),
    ("GET", f"{ALERTS}/webhooks"),
    ("DELETE", f"{ALERTS}/webhooks/{{id}}"),
    ("GET", f"{ALERTS}/webhooks/failed-calls"),
]
HTTP_METHODS = {"get", "post", "put", "patch", "delete"}


def _shape(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "{}", path)


@pytest.fixture(scope="module")
def schema(tmp_path_factory):
    """The schema as `manage.py spectacular --validate --fail-on-warn --file ...` writes it, and what the command
    reported (its output, or the exception it failed with)."""
    target = tmp_path_factory.mktemp("schema") / "schema.yaml"
    GENERATOR_STATS.reset()  # warnings of an earlier generation in this process (e.g. GET /api/schema/)
    out, err = io.StringIO(), io.StringIO()
    try:
        # SchemaGenerationError on any warning or error, SchemaValidationError on an invalid document.
        call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target), stdout=out, stderr=err)
        failure = None
    except (SchemaGenerationError, SchemaValidationError) as exc:
        failure = exc
        # Still write the document, so that the other tests show what else is wrong.
        call_command("spectacular", "--file", str(target), stdout=io.StringIO(), stderr=io.StringIO())
    return yaml.safe_load(target.read_text()), out.getvalue() + err.getvalue(), failure


def test_the_schema_generates_without_any_warning_or_error(schema):
    _, output, failure = schema
    assert failure is None, output
    assert "Warning" not in output and "Error" not in output, output


def test_every_endpoint_of_the_spec_tables_is_in_the_schema(schema):
    document, *_ = schema
    documented = {
        (method.upper(), _shape(path))
        for path, operations in document["paths"].items()
        for method in operations
        if method in HTTP_METHODS
    }
    missing = [(method, path) for method, path in SPEC_ENDPOINTS if (method, _shape(path)) not in documented]
    assert missing == []


def test_every_operation_but_authenticate_and_health_declares_the_bearer_token(schema):
    document, *_ = schema
    schemes = document["components"]["securitySchemes"]
    bearer = [
        name
        for name, scheme in schemes.items()
        if {**scheme, "description": ""}
        == {"type": "http", "scheme": "bearer", "bearerFormat": "JWT", "description": ""}
    ]
    assert len(bearer) == 1
    assert "security" not in document  # no global requirement: each operation states its own
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            if method not in HTTP_METHODS:
                continue
            if path in (AUTH, "/health"):  # `[{}]` or nothing: no scheme, anonymous access
                assert all(requirement == {} for requirement in operation.get("security", [])), (method, path)
            else:
                assert operation.get("security") == [{bearer[0]: []}], (method, path)


def test_core_user_configuration_operations_have_their_bodies(schema):
    """They were left out ("unable to guess serializer") and shared operation ids with the owner's ones."""
    document, *_ = schema
    operations = document["paths"][f"{CONFIG}/configs/{{coreUserId}}"]
    ids = [op["operationId"] for path in document["paths"].values() for op in path.values() if "operationId" in op]
    assert len(ids) == len(set(ids))
    for method in ("post", "patch"):
        assert operations[method]["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert {code for code in operations["post"]["responses"] if code < "300"} == {"200", "201"}
    assert {code for code in operations["delete"]["responses"] if code < "300"} == {"204"}
    response = operations["get"]["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    configuration = document["components"]["schemas"][response.rsplit("/", 1)[1]]
    assert {"apiOwnerUsername", "coreUserId", "geoimagesColorRamp"} <= set(configuration["properties"])
    ramp = configuration["properties"]["geoimagesColorRamp"]
    assert ramp["type"] == "object" and ramp["required"] == ["0%", "100%", "nv"]
    assert ramp["properties"]["nv"]["minItems"] == ramp["properties"]["nv"]["maxItems"] == 4
    assert ramp["additionalProperties"]["minItems"] == ramp["additionalProperties"]["maxItems"] == 3


def test_paged_lists_are_arrays_with_their_paging_headers(schema):
    """`page`/`size` and the `X-Total-Count`/`Link` headers on the lists, and a page is an array of records
    (it was documented as an array of arrays); an answer that is a plain array takes no paging parameters."""
    document, *_ = schema
    machines = document["paths"][f"{BETA}/users/{{coreUserId}}/machines"]["get"]
    assert {"page", "size", "sort"} <= {p["name"] for p in machines["parameters"]}
    ok = machines["responses"]["200"]
    assert set(ok["headers"]) == {"X-Total-Count", "Link", "X-Request-Id"}
    page = document["components"]["schemas"][ok["content"]["application/json"]["schema"]["$ref"].rsplit("/", 1)[1]]
    assert page == {"type": "array", "items": {"$ref": "#/components/schemas/Machine"}}
    images = document["paths"][f"{OPERATIONS}/files/{{id}}/images"]["get"]
    assert [p["name"] for p in images["parameters"]] == ["id", "X-Request-Id"]
    assert images["responses"]["200"]["content"]["application/json"]["schema"]["type"] == "array"


def test_each_set_of_choices_is_one_enum(schema):
    """A client generator makes one type per enum component: two components of the same values would give it two
    types a value cannot pass between (a magic link's provider and a provider application's, say)."""
    document, _, _ = schema
    by_values: dict[tuple, list[str]] = {}
    for name, component in document["components"]["schemas"].items():
        if "enum" in component and name != "NullEnum":
            by_values.setdefault(tuple(sorted(map(str, component["enum"]))), []).append(name)
    assert [names for names in by_values.values() if len(names) > 1] == []


def test_path_parameters_have_the_spec_names(schema):
    """A generated client's method signatures name the path parameters as the spec does (`machineId`, `fileId`,
    `magicLinkId`...), not `id` wherever a route's keyword is `pk`."""
    document, *_ = schema
    documented = {
        (method.upper(), path)
        for path, operations in document["paths"].items()
        for method in operations
        if method in HTTP_METHODS
    }
    assert [(method, path) for method, path in SPEC_ENDPOINTS if (method, path) not in documented] == []
    for path, operations in document["paths"].items():
        names = re.findall(r"\{(\w+)\}", path)
        for method, operation in operations.items():
            if method in HTTP_METHODS:
                in_path = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
                assert sorted(in_path) == sorted(names), (method, path)


def _schemas(node, path="#"):
    """Every JSON Schema in the document (components, parameters, bodies, answers, webhooks), with where it is."""
    if isinstance(node, dict):
        if "type" in node or "oneOf" in node or "$ref" in node:
            yield path, node
        for key, value in node.items():
            yield from _schemas(value, f"{path}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _schemas(value, f"{path}/{index}")


def test_every_schema_is_valid_json_schema_and_every_array_says_its_items(schema):
    """Strict OpenAPI 3.1 tools refused the whole document (a property typed ["string", "null", "null"]), and a
    generated client dropped every operation on a field's geometry (an array of arrays of nothing said)."""
    import jsonschema

    document, *_ = schema
    for component in document["components"]["schemas"].values():
        jsonschema.Draft202012Validator.check_schema(component)
    unsaid = [
        path
        for path, node in _schemas(document)
        if "array" in (node.get("type") if isinstance(node.get("type"), list) else [node.get("type")])
        and "items" not in node
        and "prefixItems" not in node
    ]
    assert unsaid == []


@pytest.mark.parametrize(
    ("events", "valid"),
    [(["fieldCreated", "machineDeleted"], True), ("fieldCreated", True), ([], False), ("nope", False), (1, False)],
)
def test_a_webhooks_events_are_a_list_of_names_or_one_name_as_the_server_takes_them(schema, events, valid):
    """The server took one name alone (the spec writes `events` as an enum) where the schema said a list only."""
    import jsonschema

    document, *_ = schema
    request = {"$ref": "#/components/schemas/WebhookCreateRequest", "components": document["components"]}
    body = {"name": "n", "url": "https://example.com/hook", "secret": "s" * 16, "events": events}
    assert jsonschema.Draft202012Validator(request).is_valid(body) is valid


@pytest.mark.parametrize(
    ("keys", "valid"),
    [({"provider": "ProviderA"}, True), ({"allowedProviders": ["ProviderA"]}, True), ({}, False),
     ({"provider": "ProviderA", "allowedProviders": ["ProviderB"]}, False)],
)  # fmt: skip
def test_a_provider_link_with_its_user_names_either_provider_or_allowed_providers_in_the_schema_too(
    schema, keys, valid
):
    """The server refuses neither and both (400 "Give either provider or allowedProviders."); the schema took both."""
    import jsonschema

    document, *_ = schema
    request = {"$ref": "#/components/schemas/ProviderLinkWithUserCreateRequest", "components": document["components"]}
    assert jsonschema.Draft202012Validator(request).is_valid({"externalId": "x1", **keys}) is valid


@pytest.mark.parametrize(
    ("request_schema", "valid"),
    [("FileUploadLinkCreateRequest", False), ("FileUploadLinkWithUserCreateRequest", False),
     ("ProviderLinkCreateRequest", True), ("AuthenticationLinkCreateRequest", True)],
)  # fmt: skip
def test_only_links_that_disconnect_offer_disconnected_enabled_in_the_schema(schema, request_schema, valid):
    """A file-upload link's `settings.disconnectedEnabled` is a 400 ("Only provider and authentication links can
    disconnect."), yet its request schema, the settings of every link, offered it (found by Schemathesis)."""
    import jsonschema

    document, *_ = schema
    request = {"$ref": f"#/components/schemas/{request_schema}", "components": document["components"]}
    body = {
        "FileUploadLinkCreateRequest": {},
        "FileUploadLinkWithUserCreateRequest": {"externalId": "x1"},
        "ProviderLinkCreateRequest": {"allowedProviders": ["ProviderA"]},
        "AuthenticationLinkCreateRequest": {"provider": "ProviderA"},
    }[request_schema]
    body["settings"] = {"disconnectedEnabled": False}
    assert jsonschema.Draft202012Validator(request).is_valid(body) is valid
    assert jsonschema.Draft202012Validator(request).is_valid({**body, "settings": {"companyName": "Acme"}})


@pytest.mark.parametrize(
    ("stop", "valid"),
    [("35%", True), ("35.5%", True), ("99.25%", True), ("x", False), ("35", False), ("101%", False), ("-1%", False),
     ("05%", False)],
)  # fmt: skip
def test_a_colour_ramps_keys_are_described_as_the_server_takes_them(schema, api_client, stop, valid):
    """A key that is no percentage is a 400 ("Unknown key: use percentage stops such as '35%' and 'nv'."), yet the
    schema took any key (found by Schemathesis). The schema and the server agree on each key here."""
    import jsonschema

    document, *_ = schema
    ramp = {"0%": [0, 0, 0], "100%": [255, 255, 255], "nv": [0, 0, 0, 0], stop: [9, 9, 9]}
    request = {"$ref": "#/components/schemas/ConfigurationEntriesRequest", "components": document["components"]}
    assert jsonschema.Draft202012Validator(request).is_valid({"geoimagesColorRamp": ramp}) is valid
    answer = api_client.patch("/services/config/api/configs", {"geoimagesColorRamp": ramp}, format="json")
    assert answer.status_code == (200 if valid else 400), answer.json()


def test_a_merge_is_documented_as_the_server_takes_it(schema):
    """One id was documented as enough (`minItems: 1`), and Swagger UI's example of one id was refused: the server
    merges two different files at least."""
    import jsonschema

    document, *_ = schema
    request = jsonschema.Draft202012Validator(
        {"$ref": "#/components/schemas/FileMergeRequest", "components": document["components"]}
    )
    one, other = "6f1c5f4e-1111-4111-8111-111111111111", "6f1c5f4e-2222-4222-8222-222222222222"
    assert [request.is_valid({"ids": ids}) for ids in ([one], [one, one], [one, other])] == [False, False, True]


def test_every_operation_is_grouped_under_its_service_and_the_token_says_where_it_comes_from(schema):
    """Swagger UI showed 101 of 103 operations under one tag, "services"; the Authorize box said only
    "bearerAuth (http, Bearer)" (found by the try-it-out review)."""
    document, *_ = schema
    tags = {(path.split("/api")[0], operation["tags"][0]) for path, ops in document["paths"].items()
            for method, operation in ops.items() if method in ("get", "post", "put", "patch", "delete")}  # fmt: skip
    assert tags == {
        ("", "authentication"), ("/health", "health"), ("/services/usermanagement", "core users"),
        ("/services/config", "configuration"), ("/services/alerts", "webhooks"), ("/services/fields", "fields"),
        ("/services/beta", "assets and catalogs"), ("/services/operations", "operations and files"),
        ("/services/widgets", "magic links"),
    }  # fmt: skip
    assert [tag["name"] for tag in document["tags"]][:3] == ["authentication", "health", "core users"]
    assert all(tag["description"] for tag in document["tags"])
    scheme = document["components"]["securitySchemes"]["bearerAuth"]
    assert "POST /api/authenticate" in scheme["description"] and "`id_token`" in scheme["description"]


def test_every_operation_has_a_summary_of_its_own(schema):
    """Swagger UI lists operations by their one-line summary: only the health check had one; every other operation
    showed its viewset's docstring, one text for up to eleven operations (a file's summary, units, images,
    downloads...)."""
    document, *_ = schema
    operations = {
        (method.upper(), path): operation.get("summary", "")
        for path, ops in document["paths"].items()
        for method, operation in ops.items()
        if method in ("get", "post", "put", "patch", "delete")
    }
    assert [key for key, summary in operations.items() if not summary] == []
    assert len(set(operations.values())) == len(operations), "two operations share a summary"
    assert all(
        summary[0].isupper() and not summary.endswith(".") and len(summary) <= 80 for summary in operations.values()
    )
    # Each says what its own operation does, not its neighbour's.
    assert operations["PUT", f"{FIELDS}{FIELD}/boundary"] == "Replace a field's boundary"
    assert operations["GET", f"{FIELDS}{FIELD}/boundary"] == "Get a field's active boundary"
    assert operations["POST", f"{WIDGETS}/magic-link/users/{{coreUserId}}/file-upload"] == (
        "Create a file-upload link for a core user"
    )
    assert operations["GET", f"{OPERATIONS}/files/{{id}}/rawGeojson"] == "Download a file's raw GeoJSON"


def test_the_documented_geometry_example_is_a_field_the_server_takes(schema, api_client, core_user):
    """Without an example, Swagger UI filled every geometry with rings of [0, 0], a 400 on each first try."""
    import jsonschema

    document, *_ = schema
    request = document["components"]["schemas"]["FieldCreateRequest"]
    # (one component, which each geometry of a request refers to)
    assert request["properties"]["geometry"] == {"$ref": "#/components/schemas/GeoJSONGeometryInput"}
    example = document["components"]["schemas"]["GeoJSONGeometryInput"]["example"]
    jsonschema.validate({"geometry": example}, {**request, "components": document["components"]})
    created = api_client.post(f"/services/fields/api/users/{core_user.id}/fields", {"geometry": example}, format="json")
    assert created.status_code == 201 and created.json()["geometry"] == example, created.json()


_RING = [[-93.6, 42.0], [-93.59, 42.0], [-93.59, 42.01], [-93.6, 42.01], [-93.6, 42.0]]


@pytest.mark.parametrize(
    ("geometry", "valid"),
    [({"type": "MultiPolygon", "coordinates": [[_RING]]}, True), ({"type": "Polygon", "coordinates": [_RING]}, True),
     ({"type": "MultiPolygon", "coordinates": [_RING]}, False), ({"type": "Polygon", "coordinates": [[_RING]]}, False),
     ({"type": "Point", "coordinates": [1, 2]}, False),
     # The optional members: a crs naming WGS84 in either form of GeoJSON 2008, another system, a bbox
     *[({"type": "Polygon", "coordinates": [_RING], "crs": {"type": "name", "properties": {"name": name}}}, True)
       for name in ("urn:ogc:def:crs:OGC:1.3:CRS84", "urn:ogc:def:crs:OGC::CRS84", "OGC:CRS84", "EPSG:4326",
                    "urn:ogc:def:crs:EPSG::4326")],
     ({"type": "Polygon", "coordinates": [_RING], "crs": {"type": "EPSG", "properties": {"code": 4326}}}, True),
     ({"type": "Polygon", "coordinates": [_RING], "crs": {"type": "name", "properties": {"name": "EPSG:32632"}}},
      False),
     ({"type": "Polygon", "coordinates": [_RING], "crs": {"type": "EPSG", "properties": {"code": 32632}}}, False),
     ({"type": "Polygon", "coordinates": [_RING], "crs": "EPSG:4326"}, False),
     ({"type": "MultiPolygon", "coordinates": [[_RING]], "bbox": [-93.6, 42.0, -93.59, 42.01]}, True),
     ({"type": "Polygon", "coordinates": [_RING], "crs": {"type": "name", "properties": {}}}, False),
     ({"type": "Polygon", "coordinates": [_RING], "crs": {"properties": {"name": "EPSG:4326"}}}, False),
     ({"type": "Polygon", "coordinates": [[[*position, 310.5] for position in _RING]]}, True)],
)  # fmt: skip
def test_a_geometrys_type_and_nesting_are_described_together_as_the_server_takes_them(
    schema, api_client, core_user, geometry, valid
):
    """The schema described `type` and the nesting of `coordinates` apart: a Polygon's rings under
    `type: MultiPolygon` (or the reverse) passed it, and the server refused them (found by Schemathesis). The
    optional `crs` and `bbox` members were not described at all."""
    import jsonschema

    document, *_ = schema
    request = {"$ref": "#/components/schemas/FieldCreateRequest", "components": document["components"]}
    assert jsonschema.Draft202012Validator(request).is_valid({"geometry": geometry}) is valid
    answer = api_client.post(f"/services/fields/api/users/{core_user.id}/fields", {"geometry": geometry}, format="json")
    assert answer.status_code == (201 if valid else 400), answer.json()


def test_a_geometrys_optional_members_and_the_weather_centroid_are_described(schema):
    """What validation alone does not show: the document names `bbox` (a client generated from it keeps the member),
    and the weather's centroid is a position without altitude."""
    document, *_ = schema
    schemas = document["components"]["schemas"]
    request = schemas[schemas["FieldCreateRequest"]["properties"]["geometry"]["$ref"].rsplit("/", 1)[1]]
    for variant in request["oneOf"]:
        variant = schemas[variant["$ref"].rsplit("/", 1)[1]]
        assert {"type", "coordinates", "crs", "bbox"} <= set(variant["properties"]), variant
    centroid = schemas["GeoJSONPoint"]["properties"]["coordinates"]
    assert (centroid["minItems"], centroid["maxItems"]) == (2, 2)


@pytest.mark.parametrize(
    ("day", "valid"),
    [("2024-05-01", True), ("2024-05-01T23:30:00-05:00", True), ("x", False), ("\u00c0", False), ("2024-13-01", False)],
)
def test_the_weather_days_are_described_as_the_server_takes_them(schema, day, valid):
    """The days were a plain string in the schema, "YYYY-MM-DD" in words only: anything passed it, and the server
    answered 400 (found by Schemathesis). The server's side: tests/fields/test_weather.py."""
    from datetime import datetime

    import jsonschema

    from fields.weather import parse_day
    from platform_site.api.errors import DomainError

    document, *_ = schema
    weather = document["paths"]["/services/fields/api/users/{coreUserId}/fields/{fieldId}/weather"]["get"]
    days = {p["name"]: p["schema"] for p in weather["parameters"] if p["in"] == "query"}
    assert set(days) == {"startTime", "endTime"}
    formats = jsonschema.FormatChecker(["date"])  # (jsonschema checks date-time only with a package we do not need)

    @formats.checks("date-time", raises=ValueError)
    def rfc3339(value) -> bool:
        return "T" in value.upper() and datetime.fromisoformat(value.replace("Z", "+00:00")).tzinfo is not None

    for parameter in days.values():
        assert jsonschema.Draft202012Validator(parameter, format_checker=formats).is_valid(day) is valid
    try:
        parse_day(day, "startTime")
        taken = True
    except DomainError:
        taken = False
    assert taken is valid


MULTIPOLYGON_EXAMPLE = {
    "type": "MultiPolygon",
    "coordinates": [[[[-93.6, 42.0], [-93.59, 42.0], [-93.59, 42.01], [-93.6, 42.01], [-93.6, 42.0]]]],
}


def test_each_body_example_is_taken_by_the_server(schema, api_client, core_user):
    """Swagger UI fills its form with a body's example, else with one of its own that the server refused: `farmId` 0
    names no farm, a merge of one id repeated is one file (found by the try-it-out reviews)."""
    import jsonschema

    document, *_ = schema
    field_id = api_client.post(
        f"/services/fields/api/users/{core_user.id}/fields", {"geometry": MULTIPOLYGON_EXAMPLE}, format="json"
    ).json()["id"]
    farm_id = api_client.post(f"/services/fields/api/users/{core_user.id}/farms", {}, format="json").json()["id"]
    grower_id = api_client.post(f"/services/fields/api/users/{core_user.id}/growers", {}, format="json").json()["id"]
    ids = {"coreUserId": str(core_user.id), "fieldId": field_id}
    sent = 0
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            content = operation.get("requestBody", {}).get("content", {}).get("application/json", {})
            for example in content.get("examples", {}).values():
                body_schema = {**content["schema"], "components": document["components"]}
                jsonschema.validate(example["value"], body_schema)
                if path.endswith("/files/merge"):
                    assert len(set(example["value"]["ids"])) == 2  # (made up: no file has them)
                    continue
                pk = {"farms": farm_id, "growers": grower_id, "fields": field_id}[path.split("/")[-2]] if (
                    path.endswith("/{id}")) else None  # fmt: skip
                url = path.format(**ids, id=pk)
                answer = getattr(api_client, method)(url, example["value"], format="json")
                assert answer.status_code in (200, 201), (method, path, answer.json())
                sent += 1
    assert sent >= 8


def _answers_of_status(document: dict, status: str) -> dict:
    """Each operation's documented answer of `status`, by (method, path)."""
    return {
        (method, path): answer
        for path, operations in document["paths"].items()
        for method, operation in operations.items()
        if method in HTTP_METHODS and (answer := operation["responses"].get(status))
    }


def test_every_file_answered_documents_its_content_disposition(schema):
    """Downloads come as attachments and images inline, each with its name: the header was sent, not documented."""
    document, *_ = schema
    files = {
        key: ok
        for key, ok in _answers_of_status(document, "200").items()
        if set(ok.get("content", {})) & {"application/geo+json", "application/zip", "image/png"}
    }
    assert len(files) == 6
    undocumented = [key for key, ok in files.items() if "Content-Disposition" not in ok.get("headers", {})]
    assert undocumented == []


def test_every_201_documents_the_location_of_what_it_created(schema):
    document, *_ = schema
    created = _answers_of_status(document, "201")
    assert len(created) >= 12
    assert [key for key, answer in created.items() if "Location" not in answer.get("headers", {})] == []


def test_every_answer_documents_its_request_id_and_every_operation_takes_one(schema, api_client):
    """`X-Request-Id` was said only in the document's description: a typed client had no argument or accessor."""
    document, *_ = schema
    assert document["components"]["headers"]["X-Request-Id"]["schema"] == {"type": "string"}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            [parameter] = [p for p in operation["parameters"] if p["name"] == "X-Request-Id"]
            assert parameter["in"] == "header" and not parameter["required"], (path, method)
            for status, answer in operation["responses"].items():
                assert answer["headers"]["X-Request-Id"] == {"$ref": "#/components/headers/X-Request-Id"}, status
    pattern = parameter["schema"]["pattern"]
    sent = "trace-7f3a.1:2"
    assert re.fullmatch(pattern, sent)
    assert api_client.get("/services/usermanagement/api/users", HTTP_X_REQUEST_ID=sent)["X-Request-Id"] == sent
    assert not re.fullmatch(pattern, "two words")
    assert api_client.get("/services/usermanagement/api/users", HTTP_X_REQUEST_ID="two words")["X-Request-Id"] != (
        "two words"
    )


def test_every_operation_documents_the_databases_503_with_retry_after(schema):
    """Any request can meet a busy, unreachable or unmigrated database (`errors.database_problem`); a generated
    client failed on the undocumented status (UnexpectedStatus) and never saw the problem or its Retry-After."""
    document, *_ = schema
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            unavailable = operation["responses"]["503"]
            assert "Retry-After" in unavailable.get("headers", {}), (path, method)
            assert "application/problem+json" in unavailable["content"], (path, method)


def test_enum_values_that_differ_only_by_case_have_names_of_their_own(schema):
    """openapi-python-client failed to generate a client: `Mile` and `mile` both made the constant MILE."""
    document, *_ = schema
    files = document["paths"][f"{BETA}/users/{{coreUserId}}/machines/{{machineId}}/files"]["get"]
    [unit] = [p["schema"] for p in files["parameters"] if p["name"] == "distanceUnit"]
    names = dict(zip(unit["enum"], unit["x-enum-varnames"], strict=True))
    assert names == {"Feet": "FEET", "Mile": "MILE_TITLE", "ft": "FT", "mile": "MILE_LOWER"}
    # (the enums of distinct names get none: a generator names their constants itself)
    assert json.dumps(document).count("x-enum-varnames") == 1


def test_a_named_schemas_places_refer_to_it_and_keep_what_they_say_otherwise():
    """`postprocess_named_schemas`: one component per name, each place a reference, with what it says otherwise."""
    from platform_site.api.schema import COMPONENT_NAME, postprocess_named_schemas

    def place(description):
        body = {COMPONENT_NAME: "Geo", "type": "object", "description": description}
        return {"post": {"requestBody": {"content": {"application/json": {"schema": body}}}}}

    done = postprocess_named_schemas({"paths": {"/a": place("First"), "/b": place("Second")}}, None, None, True)

    def schema_of(path):
        return done["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]

    assert done["components"]["schemas"]["Geo"] == {"type": "object", "description": "First"}
    assert schema_of("/a") == {"$ref": "#/components/schemas/Geo"}
    assert schema_of("/b") == {"$ref": "#/components/schemas/Geo", "description": "Second"}


def test_no_operation_declares_a_parameter_twice(schema):
    document, *_ = schema
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            named = [(p["in"], p["name"]) for p in operation.get("parameters", [])]
            assert len(named) == len(set(named)), (method, path, named)


@pytest.mark.parametrize(
    ("values", "names"),
    [
        (["Feet", "Mile", "ft", "mile"], ["FEET", "MILE_TITLE", "FT", "MILE_LOWER"]),
        (["per-acre", "per_acre", "PER ACRE"], ["PER_ACRE_0", "PER_ACRE_1", "PER_ACRE_UPPER"]),
        (["a", "b"], ["A", "B"]),
    ],
)
def test_enum_constant_names_are_distinct(values, names):
    from platform_site.api.schema import enum_constant_names

    assert enum_constant_names(values) == names
