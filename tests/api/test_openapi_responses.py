"""The published OpenAPI document describes what the server really answers: real responses of records built
through the API (and a real upload, a real failed webhook call) validate against the schema generated in-process,
and every operation documents its `application/problem+json` error answers."""

import io
import json
import re
import time
import uuid
import zipfile

import jsonschema
import pytest
from django.db import transaction
from drf_spectacular.generators import SchemaGenerator
from shapely.geometry import MultiPoint, MultiPolygon, mapping

from assets.models import Implement, Operator, OriginType
from configs.defaults import DEFAULT_COLOR_RAMP
from configs.services import config_owner_update, config_user_set
from fields.services.writes import FIELD_ID_PATTERN
from magiclinks.services.connections import credentials_unauthenticated
from platform_site.api.schema import dict_nodes
from tests.fields.helpers import provider_field, square
from tests.magiclinks.helpers import APPLICATION_BODY
from tests.tenancy import assert_problem
from webhooks.models import EventType
from webhooks.services import event_emit, sign

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.embedded]

USERS = "/services/usermanagement/api/users"
BETA = "/services/beta/api"
FIELDS = "/services/fields/api"
OPERATIONS = "/services/operations/api"
CONFIG = "/services/config/api"
WIDGETS = "/services/widgets/api"
ALERTS = "/services/alerts/api/alerts"
PROBLEM = "application/problem+json"
HTTP_METHODS = {"get", "post", "put", "patch", "delete"}


@pytest.fixture(scope="module")
def schema():
    """The document `GET /api/schema` publishes, generated in this process."""
    return SchemaGenerator().get_schema(request=None, public=True)


def json_schema(node, components: dict):
    """OpenAPI 3.1 schema (JSON Schema 2020-12, nullable as a `null` type) -> a JSON Schema the validator reads on its
    own: `$ref`s inlined, and objects that list their properties closed to undeclared keys (a key the server sends
    must be documented; an `if` only tests the keys it lists)."""
    if isinstance(node, list):
        return [json_schema(item, components) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        target = json_schema(components[node["$ref"].rsplit("/", 1)[1]], components)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        return {"allOf": [target], **json_schema(siblings, components)} if siblings else target
    out = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties"):
            out[key] = {name: json_schema(sub, components) for name, sub in value.items()}
        elif key in ("readOnly", "writeOnly", "deprecated", "example", "discriminator", "xml"):
            continue
        elif key == "if":  # a condition on some keys (a webhook body's `status`), not a closed object
            out[key] = {k: v for k, v in json_schema(value, components).items() if k != "additionalProperties"}
        else:
            out[key] = json_schema(value, components)
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def operation(schema, method: str, template: str) -> dict:
    return schema["paths"][template][method.lower()]


def errors_of(schema, sub_schema, instance) -> list[str]:
    validator = jsonschema.Draft202012Validator(
        json_schema(sub_schema, schema["components"]["schemas"]), format_checker=jsonschema.FormatChecker()
    )
    return sorted(f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(instance))


# Documented headers sent only in some answers: a retry's (`Idempotency-Key`).
SOMETIMES_SENT = frozenset({"Idempotent-Replayed"})


def assert_documented(schema, method: str, template: str, response):
    """The response's status and media type are documented for the operation, it sends the headers documented for
    them, and its body validates."""
    documented = operation(schema, method, template)["responses"]
    assert str(response.status_code) in documented, (method, template, response.status_code, list(documented))
    headers = documented[str(response.status_code)].get("headers", {})
    missing = [name for name in headers if not response.has_header(name) and name not in SOMETIMES_SENT]
    assert missing == [], (method, template, response.status_code)
    media_type = response["Content-Type"].split(";")[0].strip()
    content = documented[str(response.status_code)]["content"]
    assert media_type in content, (method, template, media_type, list(content))
    assert errors_of(schema, content[media_type]["schema"], response.json()) == [], (method, template)


def assert_request_documented(schema, method: str, template: str, body: dict):
    content = operation(schema, method, template)["requestBody"]["content"]["application/json"]
    assert errors_of(schema, content["schema"], body) == [], (method, template, body)


def required(schema, component: str) -> set[str]:
    """The keys the component says are always there."""
    return set(schema["components"]["schemas"][component].get("required", []))


def test_every_operation_documents_its_problem_answers(schema):
    problem = schema["components"]["schemas"]["ProblemDetail"]
    assert set(problem["required"]) == {"type", "title", "status", "detail", "path", "errorKey"}
    assert "fieldErrors" in problem["properties"]
    for path, operations in schema["paths"].items():
        for method, op in operations.items():
            if method not in HTTP_METHODS:
                continue
            errors = {code: r for code, r in op["responses"].items() if code >= "400"}
            assert errors, (method, path)
            for response in errors.values():
                assert response["content"][PROBLEM]["schema"] == {"$ref": "#/components/schemas/ProblemDetail"}
            if path not in ("/api/authenticate", "/health"):  # (the two without a login)
                assert "401" in errors, (method, path)
            if "{" in path:
                assert "404" in errors, (method, path)
            assert "406" in errors, (method, path)  # DRF negotiates `Accept` on every operation
            if "requestBody" in op:
                assert {"400", "411", "413", "415"} <= set(errors), (method, path)
    read_only = f"{FIELDS}/users/{{coreUserId}}/fields/{{id}}"
    assert {"403"} <= set(operation(schema, "patch", read_only)["responses"])
    assert {"403"} <= set(
        operation(schema, "delete", f"{BETA}/users/{{coreUserId}}/machines/{{machineId}}")["responses"]
    )
    assert "409" in operation(schema, "post", f"{FIELDS}/users/{{coreUserId}}/fields")["responses"]
    weather = f"{FIELDS}/users/{{coreUserId}}/fields/{{fieldId}}/weather"
    assert "503" in operation(schema, "get", weather)["responses"]
    # An operation that takes no body refuses one (it documented none of these), and a deletion that kept meeting
    # concurrent writes is a 409
    retry = operation(schema, "put", f"{OPERATIONS}/batch/{{id}}/retry")
    assert "requestBody" not in retry and {"400", "408", "411", "413", "415", "409"} <= set(retry["responses"])
    assert "409" in operation(schema, "delete", f"{USERS}/{{id}}")["responses"]


def test_real_error_answers_are_documented_problems(schema, api_client, core_user, client):
    fields = f"{FIELDS}/users/{core_user.pk}/fields"
    template = f"{FIELDS}/users/{{coreUserId}}/fields"
    one = f"{template}/{{id}}"
    # Given a provider field and a field with a chosen id
    provider = provider_field(core_user)
    assert api_client.post(fields, {"id": "north-40", "geometry": square(10, 50)}, format="json").status_code == 201
    answers = [
        ("post", template, api_client.post(fields, {"geometry": {"type": "Point"}}, format="json"), 400),
        ("post", template, api_client.post(fields, {"id": "north-40", "geometry": square(11, 50)}, format="json"), 409),
        ("post", template, api_client.post(fields, "<x/>", content_type="application/xml"), 415),
        ("get", one, client.get(f"{fields}/north-40"), 401),
        ("get", one, api_client.get(f"{fields}/missing"), 404),
        ("patch", one, api_client.patch(f"{fields}/{provider.pk}", {"name": "x"}, format="json"), 403),
        ("delete", one, api_client.delete(f"{fields}/{provider.pk}"), 403),
    ]
    for method, path, response, status in answers:
        assert response.status_code == status, (method, path, response.content)
        assert response["Content-Type"] == PROBLEM
        assert_documented(schema, method, path, response)


def test_a_put_of_an_unknown_or_foreign_core_user_is_a_documented_404(schema, api_client, other_client):
    # Given a core user of another owner: the id travels in the body, not in the path
    foreign = other_client.post(USERS, {"name": "Theirs"}, format="json").json()["id"]
    for user_id in (foreign, str(uuid.uuid4())):
        response = api_client.put(USERS, {"id": user_id, "name": "Mine"}, format="json")
        assert response.status_code == 404 and response.json()["errorKey"] == "notFound", response.content
        assert_documented(schema, "put", USERS, response)


def test_a_refused_login_carries_the_bearer_challenge(schema, client):
    refused = client.post(
        "/api/authenticate", {"username": "nobody", "password": "not-the-password"}, content_type="application/json"
    )
    assert refused.status_code == 401 and refused.json()["errorKey"] == "invalidCredentials"
    assert_documented(schema, "post", "/api/authenticate", refused)  # with its documented WWW-Authenticate
    # The challenge a request without its bearer token gets
    assert refused["WWW-Authenticate"] == client.get(USERS)["WWW-Authenticate"] == 'Bearer realm="api"'


def test_a_login_refused_for_too_many_failures_is_a_documented_429_with_retry_after(schema, client, settings):
    settings.LOGIN_FAILURES_PER_USER_AND_ADDRESS = 1
    body = {"username": "nobody", "password": "not-the-password"}
    client.post("/api/authenticate", body, content_type="application/json")
    refused = client.post("/api/authenticate", body, content_type="application/json")
    assert refused.status_code == 429 and int(refused["Retry-After"]) > 0
    assert "Retry-After" in operation(schema, "post", "/api/authenticate")["responses"]["429"]["headers"]
    assert_documented(schema, "post", "/api/authenticate", refused)


def test_an_accept_the_operation_cannot_answer_is_a_documented_406(schema, api_client):
    # Negotiation comes before the lookup: any id shows it
    some = uuid.uuid4()
    answers = [  # (path under /files/{id} or /operations/{id}, what its 406 names)
        ("files", "/standardGeojson", "application/geo+json"),
        ("files", "/rawGeojson", "application/geo+json"),
        ("files", "/originalFile", "application/zip"),
        ("files", "/images/{prop}.png", "image/png"),
        ("operations", "/standardGeojson", "application/geo+json"),
        ("operations", "/images/{prop}.png", "image/png"),
        ("files", "", "JSON"),
    ]
    for resources, sub_path, media_type in answers:
        template = f"{OPERATIONS}/{resources}/{{id}}{sub_path}"
        response = api_client.get(template.format(id=some, prop="wetMass"), HTTP_ACCEPT="text/csv")
        assert response.status_code == 406 and response.json()["errorKey"] == "notAcceptable", template
        assert_documented(schema, "get", template, response)
        assert media_type in operation(schema, "get", template)["responses"]["406"]["description"], template
    refused = api_client.post(USERS, {"name": "x"}, format="json", HTTP_ACCEPT="image/png")
    assert refused.status_code == 406
    assert_documented(schema, "post", USERS, refused)


def test_fields_plain_provider_and_merged_match_the_schema(schema, api_client, core_user):
    # Given fields merged automatically, a plain one, a provider one (each sends only the keys that apply)
    config_user_set(core_user=core_user, entries={"fieldsAutoMerge": True}, replace=True)
    fields = f"{FIELDS}/users/{core_user.pk}/fields"
    plain = api_client.post(fields, {"geometry": square(20, 50)}, format="json")
    api_client.post(fields, {"id": "a", "geometry": square(10, 50)}, format="json")
    api_client.post(fields, {"id": "b", "geometry": square(10.005, 50)}, format="json")
    provider = provider_field(core_user, geometry=square(30, 50))
    assert_documented(schema, "post", f"{FIELDS}/users/{{coreUserId}}/fields", plain)
    listed = api_client.get(f"{FIELDS}/fields", {"coreUserId": core_user.pk})
    kinds = {(f["type"], "providerName" in f, "mergedFieldId" in f, f["farmId"]) for f in listed.json()}
    assert {("MERGED", False, False, None), ("ORIGINAL", False, True, None), ("ORIGINAL", True, False, None)} <= kinds
    assert_documented(schema, "get", f"{FIELDS}/fields", listed)
    for field in listed.json():
        one = api_client.get(f"{fields}/{field['id']}")
        assert_documented(schema, "get", f"{FIELDS}/users/{{coreUserId}}/fields/{{id}}", one)
    boundaries = api_client.get(f"{fields}/{plain.json()['id']}/boundaries")
    assert boundaries.json()[0]["providerStatus"] is None
    assert_documented(schema, "get", f"{FIELDS}/users/{{coreUserId}}/fields/{{fieldId}}/boundaries", boundaries)
    boundary = api_client.get(f"{fields}/{provider.pk}/boundary")
    assert_documented(schema, "get", f"{FIELDS}/users/{{coreUserId}}/fields/{{fieldId}}/boundary", boundary)


def test_farms_growers_and_machines_match_the_schema(schema, api_client, core_user):
    user = f"{FIELDS}/users/{core_user.pk}"
    grower = api_client.post(f"{user}/growers", {}, format="json")  # no name: the key is left out
    assert "name" not in grower.json()
    assert_documented(schema, "post", f"{FIELDS}/users/{{coreUserId}}/growers", grower)
    farm = api_client.post(f"{user}/farms", {"name": "Home"}, format="json")  # no grower, no provider
    assert farm.json()["growerId"] is None
    assert_documented(schema, "post", f"{FIELDS}/users/{{coreUserId}}/farms", farm)
    assert_documented(schema, "get", f"{FIELDS}/farms", api_client.get(f"{FIELDS}/farms"))
    assert_documented(schema, "get", f"{FIELDS}/growers", api_client.get(f"{FIELDS}/growers"))
    machines = f"{BETA}/users/{core_user.pk}/machines"
    created = api_client.post(machines, {"name": "Combine"}, format="json")
    assert created.json()["serialNumber"] is None and created.json()["modelYear"] is None
    assert_documented(schema, "post", f"{BETA}/users/{{coreUserId}}/machines", created)
    assert_documented(schema, "get", f"{BETA}/users/{{coreUserId}}/machines", api_client.get(machines))


def test_a_core_user_without_email_matches_the_schema(schema, api_client):
    created = api_client.post(USERS, {"name": "No mail"}, format="json")
    assert created.status_code == 201 and created.json()["email"] == ""
    assert_documented(schema, "post", USERS, created)
    assert_documented(schema, "get", f"{USERS}/{{id}}", api_client.get(f"{USERS}/{created.json()['id']}"))


def test_a_magic_link_users_externalid_email_matches_the_schema(schema, api_client):
    """Such a user's email is its externalId (spec), no address: documented as a string of up to 255 characters in
    answers; a request's is still an address (or empty)."""
    link = api_client.post(f"{WIDGETS}/magic-link/file-upload", {"externalId": "p" + "e" * 254}, format="json")
    user = api_client.get(f"{USERS}/{link.json()['coreUserId']}")
    assert user.json()["email"] == "p" + "e" * 254
    assert_documented(schema, "get", f"{USERS}/{{id}}", user)
    assert_documented(schema, "get", USERS, api_client.get(USERS))
    assert_documented(schema, "put", USERS, api_client.put(USERS, user.json() | {"name": "N"}, format="json"))
    request = operation(schema, "post", USERS)["requestBody"]["content"]["application/json"]["schema"]
    assert errors_of(schema, request, {"email": "ann@example.com"}) == []
    assert errors_of(schema, request, {"email": ""}) == []
    assert errors_of(schema, request, {"email": "not-an-address"}) != []


def test_core_users_and_configurations_require_every_key_they_always_send(schema, api_client, core_user):
    # A core user with no optional key set still answers them all
    created = api_client.post(USERS, {}, format="json")
    assert (
        required(schema, "CoreUser") == set(created.json()) == {"id", "name", "email", "phone", "address", "externalId"}
    )
    assert required(schema, "CoreUserRequest") == set()  # a request may still leave any out
    # Every configuration entry is answered, the defaults too; the owner's leaves out `fieldsAutoMerge` only
    owner_config = api_client.get(f"{CONFIG}/configs")
    user_config = api_client.get(f"{CONFIG}/configs/{core_user.pk}")
    assert (
        required(schema, "Configuration") == set(owner_config.json()) == set(user_config.json()) - {"fieldsAutoMerge"}
    )
    assert_documented(schema, "get", f"{CONFIG}/configs", owner_config)
    assert_documented(schema, "get", f"{CONFIG}/configs/{{coreUserId}}", user_config)


def test_a_failed_webhook_call_matches_the_schema(schema, api_client, owner, core_user, subscribe, webhook_receiver):
    # Given a receiver on loopback that answers 500
    webhook_receiver.statuses = [500]
    subscribe(owner, webhook_receiver, ["fieldCreated"])
    with transaction.atomic():
        event_emit(type="fieldCreated", core_user=core_user, payload={"fieldId": "f-1"})
    assert len(webhook_receiver.wait_for(1)) == 1
    failed = api_client.get(f"{ALERTS}/webhooks/failed-calls")
    [call] = failed.json()
    assert call["status"] == 500 and "connectionError" not in call
    assert_documented(schema, "get", f"{ALERTS}/webhooks/failed-calls", failed)
    # Its event is a webhook's event: one component, not a second identical one
    components = schema["components"]["schemas"]
    assert components["FailedCall"]["properties"]["event"] == {"$ref": "#/components/schemas/WebhookEventEnum"}
    assert "EventEnum" not in components
    assert_documented(schema, "get", f"{ALERTS}/webhooks", api_client.get(f"{ALERTS}/webhooks"))


def test_a_provider_application_update_matches_its_documented_body(schema, api_client, settings):
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True  # the example hosts do not resolve here
    urls = {key: APPLICATION_BODY[key] for key in ("authorizeUrl", "tokenUrl")}
    created = api_client.post(f"{WIDGETS}/provider-applications", APPLICATION_BODY, format="json")
    assert created.status_code == 201, created.content
    # Every key is always answered; `scopes` is the list of scope tokens
    assert required(schema, "ProviderApplication") == set(created.json())
    scopes = schema["components"]["schemas"]["ProviderApplication"]["properties"]["scopes"]
    assert scopes == {"type": "array", "items": {"type": "string"}}
    # When it is changed without provider (refused on update) and without clientSecret (kept)
    body = {"clientId": "cid2", **urls}
    assert_request_documented(schema, "put", f"{WIDGETS}/provider-applications/{{id}}", body)
    changed = api_client.put(f"{WIDGETS}/provider-applications/{created.json()['id']}", body, format="json")
    assert changed.status_code == 200, changed.content
    assert_documented(schema, "put", f"{WIDGETS}/provider-applications/{{id}}", changed)
    refused = api_client.put(
        f"{WIDGETS}/provider-applications/{created.json()['id']}", {**body, "provider": "ProviderA"}, format="json"
    )
    assert refused.status_code == 400
    request = operation(schema, "put", f"{WIDGETS}/provider-applications/{{id}}")["requestBody"]
    assert errors_of(schema, request["content"]["application/json"]["schema"], {**body, "provider": "ProviderA"})


def _hull(data: bytes, tmp_path) -> dict:
    """The convex hull of a shapefile export's points, read with pyshp, as a GeoJSON MultiPolygon."""
    import shapefile

    zipfile.ZipFile(io.BytesIO(data)).extractall(tmp_path)
    shp = next(tmp_path.rglob("*.shp"))
    return mapping(MultiPolygon([MultiPoint([s.points[0] for s in shapefile.Reader(str(shp)).shapes()]).convex_hull]))


def _upload(api_client, core_user, data: bytes) -> dict:
    file = io.BytesIO(data)
    file.name = "upload.zip"
    response = api_client.post(f"{OPERATIONS}/batch?coreUserId={core_user.pk}&provider=Other", {"file": file})
    assert response.status_code == 201, response.content
    return api_client.get(f"{OPERATIONS}/batch/{response.json()['id']}").json()


def test_files_processed_and_failed_match_the_schema(schema, api_client, core_user, samples_dir, tmp_path):
    harvest = (samples_dir / "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Harvest.zip").read_bytes()
    # Given a field with a client-chosen id under the harvest, the harvest uploaded and an unreadable upload
    fields = f"{FIELDS}/users/{core_user.pk}/fields"
    assert api_client.post(fields, {"id": "jt-01", "geometry": _hull(harvest, tmp_path)}, format="json").status_code
    processed = _upload(api_client, core_user, harvest)
    assert processed["status"] == "PROCESSED", processed
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        point = {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": ["a", "b"]}}
        archive.writestr("spray.geojson", json.dumps({"type": "FeatureCollection", "features": [point]}))
    failed = _upload(api_client, core_user, buffer.getvalue())
    # Then every file answer validates: nulls of a file without provider ids, or of a failed one
    files = api_client.get(f"{OPERATIONS}/files")
    by_status = {f["status"]: f for f in files.json()["operations"]}
    assert by_status["processed"]["fields"] == ["jt-01"] and by_status["processed"]["organizationId"] is None
    assert by_status["failed"]["pointCount"] is None and by_status["failed"]["operationType"] is None
    assert_documented(schema, "get", f"{OPERATIONS}/files", files)
    for file_id in (processed["files"][0], failed["files"][0]):
        assert_documented(schema, "get", f"{OPERATIONS}/files/{{id}}", api_client.get(f"{OPERATIONS}/files/{file_id}"))
    field_files = api_client.get(f"{fields}/jt-01/operations/files")
    assert_documented(schema, "get", f"{FIELDS}/users/{{coreUserId}}/fields/{{fieldId}}/operations/files", field_files)


def test_pooled_assets_and_map_images_match_the_schema(schema, api_client, core_user, samples_dir):
    # Given ISOXML task data (its device becomes a pooled machine, each task a machine file with the distance and fuel
    # the task records, and a file with map images), a machine made through the API, a provider's implement and operator
    folder = samples_dir / "isoxml-dotnet/Dev4Agriculture.ISO11783.ISOXML.Test/testdata/TimeLogs/ValidTimeLogs"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(p for p in folder.rglob("*") if p.is_file()):
            archive.write(path, "TASKDATA/" + path.relative_to(folder).as_posix())
    file_id, *_ = _upload(api_client, core_user, buffer.getvalue())["files"]
    user = f"{BETA}/users/{core_user.pk}"
    made = api_client.post(f"{user}/machines", {"name": "Tractor"}, format="json").json()
    provider = {"core_user": core_user, "provider": "ProviderA", "origin_type": OriginType.PROVIDER_POOLED}
    Implement.objects.create(name="Planter", **provider)
    Operator.objects.create(name="Ann", **provider)
    components = schema["components"]["schemas"]
    # Then `originType` is one enum wherever it is answered
    assert sorted(components["OriginTypeEnum"]["enum"]) == sorted(OriginType.values)
    for name in ("Machine", "MachineChanged", "MachineFile", "Implement", "Operator"):
        assert "#/components/schemas/OriginTypeEnum" in json.dumps(components[name]["properties"]["originType"]), name
    # and the answers validate: machines of both origins, a machine's change, its files, implements, operators
    template = f"{BETA}/users/{{coreUserId}}"
    machines = api_client.get(f"{user}/machines")
    assert {m["originType"] for m in machines.json()} == {"FILE_POOLED", "USER_CREATED"}
    assert_documented(schema, "get", f"{template}/machines", machines)
    changed = api_client.patch(f"{user}/machines/{made['id']}", {"make": "Fendt"}, format="json")
    assert_documented(schema, "patch", f"{template}/machines/{{machineId}}", changed)
    [pooled] = [m for m in machines.json() if m["originType"] == "FILE_POOLED"]
    files = api_client.get(f"{user}/machines/{pooled['id']}/files")
    assert {(f["distance"]["unit"], f["fuelConsumption"]["unit"]) for f in files.json()} == {("ft", "US gal")}
    assert_documented(schema, "get", f"{template}/machines/{{machineId}}/files", files)
    for key in ("distance", "fuelConsumption"):  # `{value, unit}` or null, not any object
        measure = components["MachineFile"]["properties"][key]
        assert errors_of(schema, measure, None) == [] and errors_of(schema, measure, {"value": 1.0}), key
    assert_documented(schema, "get", f"{template}/implements", api_client.get(f"{user}/implements"))
    assert_documented(schema, "get", f"{template}/operators", api_client.get(f"{user}/operators"))
    # A map image's `ramp` is the configuration's colour ramp, not any value
    images = api_client.get(f"{OPERATIONS}/files/{file_id}/images")
    assert images.json() and all(image["ramp"] == DEFAULT_COLOR_RAMP for image in images.json())
    assert_documented(schema, "get", f"{OPERATIONS}/files/{{id}}/images", images)
    assert errors_of(schema, components["Image"]["properties"]["ramp"], {"0%": "red"})


def test_a_file_with_warnings_matches_the_schema(schema, api_client, core_user):
    # Given an application whose rate states no unit: its file record carries a warning
    file = schema["components"]["schemas"]["File"]
    assert file["properties"]["warnings"]["type"] == "array"
    assert file["properties"]["warnings"]["items"] == {"type": "string"}
    assert "warnings" in file["required"]
    points = [
        {"type": "Feature", "geometry": {"type": "Point", "coordinates": [-93.0 + i * 1e-5, 41.0]}}
        | {"properties": {"timestamp": f"2024-05-01T10:00:0{i}Z", "Rt Apd Ms Wet": 150.0}}
        for i in range(3)
    ]
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("spray.geojson", json.dumps({"type": "FeatureCollection", "features": points}))
    [file_id] = _upload(api_client, core_user, buffer.getvalue())["files"]
    # Then the record and the list answer validate with it
    one = api_client.get(f"{OPERATIONS}/files/{file_id}")
    assert one.json()["warnings"] == ["Rt Apd Ms Wet: no unit in the file; the value is kept as it is"]
    assert_documented(schema, "get", f"{OPERATIONS}/files/{{id}}", one)
    assert_documented(schema, "get", f"{OPERATIONS}/files", api_client.get(f"{OPERATIONS}/files"))


def test_query_parameters_the_server_honours_are_documented(schema, api_client, core_user):
    search = {p["name"]: p for p in operation(schema, "get", f"{BETA}/products/search")["parameters"]}
    assert search["coreUserId"]["required"] is True
    assert api_client.get(f"{BETA}/products/search").status_code == 400
    for summary in ("products", "varieties"):
        parameters = {p["name"]: p for p in operation(schema, "get", f"{BETA}/users/{summary}")["parameters"]}
        assert re.search(r"fileCount.*normalizedName", parameters["sort"]["description"])
        pattern = parameters["sort"]["schema"]["items"]["pattern"]
        for value, taken in (("fileCount,desc", True), (" normalizedName ", True), ("name", False), ("desc", False)):
            assert (re.search(pattern, value) is not None) is taken, value
            response = api_client.get(f"{BETA}/users/{summary}", {"sort": value})
            assert response.status_code == (200 if taken else 400), (value, response.content)
    farms = {p["name"]: p for p in operation(schema, "get", f"{FIELDS}/farms")["parameters"]}
    assert farms["growerId"]["schema"]["type"] == "integer"
    # `size` above the largest page is clamped, not refused: no `maximum` in the schema
    assert "maximum" not in farms["size"]["schema"]
    assert api_client.get(f"{FIELDS}/farms", {"size": 1000}).status_code == 200


def test_numbers_the_server_reads_as_doubles_are_documented_as_doubles(schema):
    """The distance and area filters were documented as 32-bit floats: a client generated from the document could
    not send the distance a file reports, and an exact `distanceValue` then matched nothing."""
    formats = set()

    for node in dict_nodes(schema):
        if node.get("type") == "number" or "number" in (node.get("type") or []):
            formats.add(node.get("format"))
    assert formats == {"double", None}  # (no format: a GeoJSON position's numbers)
    machine_files = operation(schema, "get", f"{BETA}/users/{{coreUserId}}/machines/{{machineId}}/files")
    for path_operation, names in (
        (operation(schema, "get", f"{OPERATIONS}/files"), ["minArea"]),
        (machine_files, ["distanceValue", "greaterThanDistanceValue", "lessThanDistanceValue"]),
    ):
        parameters = {p["name"]: p for p in path_operation["parameters"]}
        assert [parameters[name]["schema"] for name in names] == [{"type": "number", "format": "double"}] * len(names)


@pytest.mark.parametrize(
    ("method", "template", "body", "field", "taken"),
    [
        ("patch", f"{CONFIG}/configs", {"geoimagesProjection": "EPSG:3857"}, None, True),
        ("patch", f"{CONFIG}/configs", {"geoimagesProjection": " EPSG:4326 "}, None, True),
        ("patch", f"{CONFIG}/configs", {"geoimagesProjection": "3857"}, "geoimagesProjection", False),
        ("patch", f"{CONFIG}/configs", {"geoimagesProjection": "EPSG:"}, "geoimagesProjection", False),
        ("patch", f"{CONFIG}/configs", {"fieldsMergeIntersection": 100}, None, True),
        ("patch", f"{CONFIG}/configs", {"fieldsMergeIntersection": 0.001}, None, True),
        ("patch", f"{CONFIG}/configs", {"fieldsMergeIntersection": 0}, "fieldsMergeIntersection", False),
        ("patch", f"{CONFIG}/configs", {"fieldsAttachIntersection": 100.5}, "fieldsAttachIntersection", False),
        (
            "post",
            f"{WIDGETS}/magic-link/users/{{coreUserId}}/file-upload",
            {"settings": {"backgroundColor": "#a0B0c0"}},
            None,
            True,
        ),
        (
            "post",
            f"{WIDGETS}/magic-link/users/{{coreUserId}}/file-upload",
            {"settings": {"backgroundColor": "red"}},
            "settings.backgroundColor",
            False,
        ),
        (
            "post",
            f"{WIDGETS}/magic-link/users/{{coreUserId}}/file-upload",
            {"settings": {"backgroundColor": "#FFF"}},
            "settings.backgroundColor",
            False,
        ),
        (
            "post",
            f"{WIDGETS}/magic-link/users/{{coreUserId}}/provider",
            {"allowedProviders": []},
            "allowedProviders",
            False,
        ),
        ("post", f"{OPERATIONS}/files/merge", {"ids": []}, "ids", False),
        ("patch", f"{FIELDS}/users/{{coreUserId}}/fields/{{id}}", {}, "", False),
        (
            "post",
            f"{ALERTS}/webhooks",
            {"name": "w", "url": "https://example.com/", "secret": "s" * 16, "events": []},
            "events",
            False,
        ),
    ],
)
def test_request_constraints_the_server_holds_are_documented(
    schema, api_client, core_user, method, template, body, field, taken
):
    """What a body's values must look like is in the request schema, as the server judges it: an EPSG code, a
    `#RRGGBB` colour, a list that may not be empty (they were plain strings and arrays)."""
    request = operation(schema, method, template)["requestBody"]["content"]["application/json"]["schema"]
    assert (errors_of(schema, request, body) == []) is taken, body
    url = template.replace("{coreUserId}", str(core_user.pk))
    if "{id}" in url:  # a field's
        made = api_client.post(f"{FIELDS}/users/{core_user.pk}/fields", {"geometry": square(10, 50)}, format="json")
        url = url.replace("{id}", made.json()["id"])
    response = getattr(api_client, method)(url, body, format="json")
    if taken:
        assert response.status_code < 300, response.content
    else:
        problem = assert_problem(response, 400)
        assert field in [error["field"] for error in problem["fieldErrors"]]


def test_request_bodies_say_they_take_no_other_keys(schema, api_client, core_user):
    """A body key the resource does not have is a 400 (`Unknown field.`): every request body says so
    (`additionalProperties: false`), a farm's and grower's too; their PUT lists the answer's read-only keys it takes
    back (unchanged), which their POST refuses."""
    bodies = {
        name: component.get("additionalProperties")
        for name, component in schema["components"]["schemas"].items()
        if name.endswith("Request") and "properties" in component
    }
    assert {name for name, taken in bodies.items() if taken is not False} == set()

    request = operation(schema, "post", USERS)["requestBody"]["content"]["application/json"]["schema"]
    assert errors_of(schema, request, {"name": "x", "favouriteColour": "red"}) != []
    problem = assert_problem(api_client.post(USERS, {"name": "x", "favouriteColour": "red"}, format="json"), 400)
    assert [error["field"] for error in problem["fieldErrors"]] == ["favouriteColour"]

    user = f"{FIELDS}/users/{core_user.pk}"
    grower = api_client.post(f"{user}/growers", {"name": "G"}, format="json").json()
    farm = api_client.post(f"{user}/farms", {"name": "F", "growerId": grower["id"]}, format="json").json()
    for kind, record, change in (("farms", farm, {"name": "F2", "growerId": None}), ("growers", grower, {"name": "H"})):
        template = f"{FIELDS}/users/{{coreUserId}}/{kind}"
        put = operation(schema, "put", f"{template}/{{id}}")["requestBody"]["content"]["application/json"]["schema"]
        post = operation(schema, "post", template)["requestBody"]["content"]["application/json"]["schema"]
        # The answer, changed and put back, is a documented body and taken
        assert errors_of(schema, put, record | change) == [], kind
        answer = api_client.put(f"{user}/{kind}/{record['id']}", record | change, format="json")
        assert answer.status_code == 200 and answer.json()["name"] == change["name"], answer.content
        # A key no answer has is refused by both
        assert errors_of(schema, put, record | {"favouriteColour": "red"}), kind
        problem = assert_problem(
            api_client.put(f"{user}/{kind}/{record['id']}", record | {"favouriteColour": "red"}, format="json"), 400
        )
        assert [error["field"] for error in problem["fieldErrors"]] == ["favouriteColour"]
        # A POST takes no read-only key
        assert errors_of(schema, post, {"name": "N", "id": record["id"]}), kind
        assert_problem(api_client.post(f"{user}/{kind}", {"name": "N", "id": record["id"]}, format="json"), 400)
        # The echoed keys say they must be the stored values (a changed one is a 400)
        component = schema["components"]["schemas"][put["$ref"].rsplit("/", 1)[1]]
        echoed = set(record) - set(post_properties(schema, post))
        assert echoed and echoed <= set(component["properties"]) and not echoed & set(component.get("required", []))
        assert all("stored value" in json.dumps(component["properties"][key]) for key in echoed), kind
        changed = api_client.put(
            f"{user}/{kind}/{record['id']}", record | {"coreUserId": str(uuid.uuid4())}, format="json"
        )
        assert [error["field"] for error in assert_problem(changed, 400)["fieldErrors"]] == ["coreUserId"]


def post_properties(schema, request) -> dict:
    return schema["components"]["schemas"][request["$ref"].rsplit("/", 1)[1]]["properties"]


def test_no_query_parameter_is_nullable(schema):
    """A query string cannot carry null (a nullable filtered column made its filter take a `null` type)."""
    nullable = [
        (method, path, parameter["name"])
        for path, operations in schema["paths"].items()
        for method, op in operations.items()
        if method in HTTP_METHODS
        for parameter in op.get("parameters", [])
        if parameter["in"] == "query" and "null" in json.dumps(parameter["schema"])
    ]
    assert nullable == []


def test_the_document_is_openapi_3_1_without_any_3_0_keyword(schema):
    """OpenAPI 3.1 schemas are JSON Schema: `nullable` and a boolean `exclusiveMinimum` (3.0's) mean nothing there, so
    a client generated from the document would refuse the null (or take the bound) the server sends."""
    assert schema["openapi"].startswith("3.1.")
    text = json.dumps(schema)
    assert '"nullable"' not in text
    assert '"exclusiveMinimum": true' not in text and '"exclusiveMaximum": true' not in text


def test_product_searches_document_the_max_results_they_take(schema, api_client, core_user):
    for template, url, query in (
        (f"{BETA}/users/{{coreUserId}}/products/search", f"{BETA}/users/{core_user.pk}/products/search", {}),
        (f"{BETA}/products/search", f"{BETA}/products/search", {"coreUserId": core_user.pk}),
    ):
        parameters = {p["name"]: p for p in operation(schema, "get", template)["parameters"]}
        max_results = parameters["maxResults"]["schema"]
        assert (max_results["minimum"], max_results["maximum"]) == (1, 20)
        # The schema takes what the server takes
        for value, status in ((0, 400), (1, 200), (20, 200), (21, 400)):
            response = api_client.get(url, {**query, "maxResults": value})
            assert response.status_code == status, (url, value)
            assert_documented(schema, "get", template, response)
            assert (errors_of(schema, max_results, value) == []) == (status == 200), (template, value)


def test_deprecated_keys_and_enums_are_documented(schema):
    components = schema["components"]["schemas"]
    assert components["Field"]["properties"]["area"]["deprecated"] is True
    assert components["Field"]["properties"]["geometry"]["deprecated"] is True
    file_type = json_schema(components["File"]["properties"]["operationType"], components)
    assert "planted" in json.dumps(file_type)
    assert "fieldCreated" in json.dumps(json_schema(components["Webhook"]["properties"]["events"], components))
    assert components["File"]["properties"]["crops"]["items"] == {"type": "string"}
    # The spec's deprecated paths, and only those (the preferred ones share their views).
    field_files = "/services/fields/api/users/{coreUserId}/fields/{fieldId}/operations"
    for path, deprecated in (
        (field_files, True),
        (f"{field_files}/{{fileId}}", True),
        (f"{field_files}/files", None),
        (f"{field_files}/files/{{fileId}}", None),
        ("/services/fields/api/fields/query/intersects", True),
    ):
        method = "post" if path.endswith("intersects") else "get"
        assert schema["paths"][path][method].get("deprecated") is deprecated, path


def test_a_request_body_is_required_exactly_where_the_server_refuses_none(schema, api_client, core_user, settings):
    """Every operation that declares a body says `required: true` when the server refuses the request sent without
    one (400), and not when it takes it: a generated client otherwise lets a body be left out that the server
    refuses (a farm's PUT, `POST /configs/{coreUserId}`), or insists on one it does not need."""
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True  # the provider application's example hosts do not resolve here
    user = f"{FIELDS}/users/{core_user.pk}"
    # Given one record of each kind a body-taking path names
    ids = {
        "coreUserId": core_user.pk,
        "machines": api_client.post(f"{BETA}/users/{core_user.pk}/machines", {"name": "M"}, format="json").json()["id"],
        "farms": api_client.post(f"{user}/farms", {"name": "F"}, format="json").json()["id"],
        "growers": api_client.post(f"{user}/growers", {"name": "G"}, format="json").json()["id"],
        "fields": api_client.post(f"{user}/fields", {"geometry": square(10, 50)}, format="json").json()["id"],
        "provider-applications": api_client.post(
            f"{WIDGETS}/provider-applications", APPLICATION_BODY, format="json"
        ).json()["id"],
    }
    ids["fieldId"] = ids["fields"]
    mismatches, probed = [], 0
    for template, operations in schema["paths"].items():
        for method, op in operations.items():
            if method not in HTTP_METHODS or "requestBody" not in op:
                continue
            # When it is sent without a body (path ids of real records, required query parameters given)
            url = re.sub(r"/([^/]+)/\{(\w+)\}", lambda m: f"/{m[1]}/{ids[m[2] if m[2] in ids else m[1]]}", template)
            query = {
                p["name"]: core_user.pk if p["name"] == "coreUserId" else p["schema"].get("enum", ["Other"])[0]
                for p in op.get("parameters", [])
                if p["in"] == "query" and p.get("required")
            }
            if query:
                url += "?" + "&".join(f"{key}={value}" for key, value in query.items())
            response = getattr(api_client, method)(url)
            probed += 1
            # Then the server refuses it (400) where the schema requires the body, and takes it elsewhere
            refused = response.status_code == 400
            assert refused or response.status_code < 300, (method, template, response.status_code, response.content)
            if refused != bool(op["requestBody"].get("required")):
                mismatches.append((method.upper(), template, response.status_code, response.content[:150]))
    assert probed >= 25
    assert mismatches == [], "\n".join(map(str, mismatches))


def test_an_intersection_and_a_weather_answer_match_their_schemas(schema, api_client, core_user, settings):
    """Both were documented as any object (`responses=dict`): the intersection is a GeoJSON MultiPolygon (empty
    coordinates when the fields do not overlap), the weather the spec's Feature."""
    settings.WEATHER_SOURCE = "tests.fields.test_weather.SunnyDays"  # 12.5 mm of rain, no other value
    fields = f"{FIELDS}/users/{core_user.pk}/fields"
    template = f"{FIELDS}/users/{{coreUserId}}/fields"
    # Given two overlapping fields and a third apart
    for field_id, lon in (("a", 10), ("b", 10.005), ("c", 30)):
        assert api_client.post(fields, {"id": field_id, "geometry": square(lon, 50)}, format="json").status_code == 201
    overlap = api_client.post(f"{fields}/intersect", ["a", "b"], format="json")
    apart = api_client.post(f"{fields}/intersect", ["a", "c"], format="json")
    assert overlap.json()["type"] == "MultiPolygon" and len(overlap.json()["coordinates"]) == 1
    assert apart.json() == {"type": "MultiPolygon", "coordinates": []}
    for answer in (overlap, apart):
        assert_documented(schema, "post", f"{template}/intersect", answer)
    ok = operation(schema, "post", f"{template}/intersect")["responses"]["200"]["content"]["application/json"]
    assert errors_of(schema, ok["schema"], {"type": "Polygon", "coordinates": []})
    assert errors_of(schema, ok["schema"], {"anything": 1})
    # When the weather of a field is asked for
    [weather_path] = [path for path in schema["paths"] if path.startswith(template) and path.endswith("/weather")]
    answer = api_client.get(f"{fields}/a/weather", {"startTime": "2024-03-01", "endTime": "2024-03-02"})
    assert answer.status_code == 200, answer.content
    properties = answer.json()["properties"]
    assert properties["rainSum"] == {
        "values": [{"time": "2024-03-01T00:00:00", "value": 12.5}, {"time": "2024-03-02T00:00:00", "value": 12.5}],
        "unit": "mm",
    }
    assert properties["snowfallSum"]["values"][0]["value"] is None
    assert_documented(schema, "get", weather_path, answer)
    ok = operation(schema, "get", weather_path)["responses"]["200"]["content"]["application/json"]
    assert errors_of(schema, ok["schema"], answer.json() | {"geometry": {"type": "MultiPolygon", "coordinates": []}})
    assert errors_of(schema, ok["schema"], answer.json() | {"properties": {"rainSum": {}}})


def test_field_ids_the_server_refuses_are_refused_by_the_schema(schema, api_client, core_user):
    """A client-chosen field id takes letters, digits and `. _ ~ : -` only (a `pattern`; the reserved ids are named in
    its description), and an intersection needs at least two different ids (`minItems: 2`, `uniqueItems`)."""
    fields = f"{FIELDS}/users/{core_user.pk}/fields"
    template = f"{FIELDS}/users/{{coreUserId}}/fields"
    create = operation(schema, "post", template)["requestBody"]["content"]["application/json"]["schema"]
    for field_id, taken in (("a.b~c:d-e_F9", True), ("b", True), ("north 40", False), ("a/b", False), ("é", False)):
        body = {"id": field_id, "geometry": square(10, 50)}
        assert (errors_of(schema, create, body) == []) is taken, field_id
        response = api_client.post(fields, body, format="json")
        assert response.status_code == (201 if taken else 400), (field_id, response.content)
    schemas = schema["components"]["schemas"]
    id_schema = json_schema(schemas["FieldCreateRequest"], schemas)["properties"]["id"]
    assert id_schema["pattern"] == f"^{FIELD_ID_PATTERN.pattern}$"  # the rule the service holds ids to
    assert all(word in id_schema["description"] for word in ("`intersects`", "`intersect`", "`.`", "`..`"))
    intersect = operation(schema, "post", f"{template}/intersect")["requestBody"]["content"]["application/json"]
    for ids, taken in ((["a.b~c:d-e_F9", "b"], True), (["b"], False), (["b", "b"], False), ([], False)):
        assert (errors_of(schema, intersect["schema"], ids) == []) is taken, ids
        response = api_client.post(f"{fields}/intersect", ids, format="json")
        assert response.status_code == (200 if taken else 400), (ids, response.content)


def test_format_is_no_query_parameter(schema, api_client):
    """DRF's `?format=` override is off (`URL_FORMAT_OVERRIDE`): the media type is the `Accept` header's. A `format`
    was declared on the downloads ([json, png] on an image that answered the PNG whatever it said) and answered
    404 `notFound` on a list for a value no renderer has (`?format=xml`); now no operation declares it and it is
    ignored as any query parameter an operation does not take."""
    declared = [
        (method, path)
        for path, operations in schema["paths"].items()
        for method, op in operations.items()
        if method in HTTP_METHODS and any(p["name"] == "format" for p in op.get("parameters", []))
    ]
    assert declared == []
    for value in ("json", "xml", "api"):
        response = api_client.get(f"{FIELDS}/farms", {"format": value})
        assert response.status_code == 200 and response["Content-Type"] == "application/json", (value, response)


# What README "Webhooks" says can be registered but is not sent yet: no webhook in the document.
NOT_SENT_EVENTS = {"providerFileProcessingFinished", "providerFileProcessingFailed", "newSatelliteImage"}


def test_every_event_sent_is_a_webhook_of_the_document(schema):
    """A receiver generated from the document knows every event it may get, and none that never comes."""
    assert set(schema["webhooks"]) == set(EventType.values) - NOT_SENT_EVENTS
    for event, item in schema["webhooks"].items():
        body = item["post"]["requestBody"]["content"]["application/json"]["schema"]
        properties = json_schema(body, schema["components"]["schemas"])["properties"]
        assert properties["type"] == {"type": "string", "const": event}
        assert {"2XX", "default"} <= set(item["post"]["responses"])


def test_delivered_events_match_their_webhooks(
    schema, api_client, owner, core_user, subscribe, webhook_receiver, samples_dir, tmp_path
):
    """Every body a receiver gets validates against its event's webhook, with the headers it documents: the signature
    the receiver checks, and the delivery id the body repeats."""
    # Given a receiver of every event, and fields that merge
    subscribe(owner, webhook_receiver, set(EventType.values) - NOT_SENT_EVENTS, secret="a-receivers-secret")
    config_owner_update(owner=owner, entries={"fieldsAutoMerge": True})
    harvest = (samples_dir / "johndeere-sampledata/Shapefiles/Export From MyJohnDeere - Harvest.zip").read_bytes()
    fields = f"{FIELDS}/users/{core_user.pk}/fields"
    # When fields are created, merged and given new boundaries
    hull = _hull(harvest, tmp_path)
    assert api_client.post(fields, {"id": "jt-01", "geometry": hull}, format="json").status_code == 201
    assert api_client.post(fields, {"id": "jt-02", "geometry": hull}, format="json").status_code == 201
    assert api_client.put(f"{fields}/jt-02/boundary", {"geometry": square(10, 50)}, format="json").status_code == 200
    # a harvest is uploaded (a file, its batch, its operation, pooled assets) and a file that cannot be read
    assert _upload(api_client, core_user, harvest)["status"] == "PROCESSED"
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        point = {"type": "Feature", "properties": {}, "geometry": {"type": "Point", "coordinates": ["a", "b"]}}
        archive.writestr("spray.geojson", json.dumps({"type": "FeatureCollection", "features": [point]}))
    assert _upload(api_client, core_user, buffer.getvalue())["status"] == "FAILED"
    # a machine is made, changed and deleted, and a provider refuses the end user's tokens
    machines = f"{BETA}/users/{core_user.pk}/machines"
    machine = api_client.post(machines, {"name": "Tractor"}, format="json").json()
    assert api_client.patch(f"{machines}/{machine['id']}", {"name": "Old tractor"}, format="json").status_code == 200
    assert api_client.delete(f"{machines}/{machine['id']}").status_code == 204
    credentials_unauthenticated(core_user=core_user, provider="ProviderA", message="invalid_grant")
    # Then each delivery matches its event's webhook
    expected = {
        "fieldCreated",
        "fieldUpdated",
        "fieldBoundaryCreated",
        "fieldBoundaryUpdated",
        "mergedFieldCreated",
        "mergedFieldUpdated",
        "uploadedFileProcessingFinished",
        "uploadedFileProcessingFailed",
        "batchUploadProcessingFinished",
        "operationCreated",
        "automergedFileProcessingFinished",
        "operationProcessingFinished",
        "machineCreated",
        "machineUpdated",
        "machineDeleted",
        "credentialsUnauthenticated",
    }
    deadline = time.monotonic() + 20
    while not expected <= {e["type"] for e in webhook_receiver.events()} and time.monotonic() < deadline:
        time.sleep(0.05)
    assert expected <= {e["type"] for e in webhook_receiver.events()}
    components = schema["components"]["schemas"]
    for delivery in webhook_receiver.received:
        body = json.loads(delivery.body)
        webhook = schema["webhooks"][body["type"]]["post"]
        content = webhook["requestBody"]["content"]["application/json"]
        assert errors_of(schema, content["schema"], body) == [], body
        for header in webhook["parameters"]:
            assert header["in"] == "header" and header["name"] in delivery.headers, header["name"]
            assert errors_of(schema, header["schema"], delivery.headers[header["name"]]) == [], header["name"]
        assert delivery.headers["X-Core-Signature"] == sign("a-receivers-secret", delivery.body)
        assert delivery.headers["X-Core-Delivery"] == body["deliveryId"]
        assert delivery.headers["Content-Type"] == "application/json"
    # and a failed upload's event says why, a processed one's does not
    batches = {e["status"]: e for e in webhook_receiver.events() if e["type"] == "batchUploadProcessingFinished"}
    assert "message" in batches["FAILED"] and "message" not in batches["PROCESSED"]
    batch_schema = json_schema(components["BatchUploadProcessingFinishedEvent"], components)
    assert not jsonschema.Draft202012Validator(batch_schema).is_valid({**batches["FAILED"], "status": "PROCESSED"})
