"""A Python client generated from the OpenAPI document with openapi-python-client, as client developers make one,
used against the API through its WSGI application (httpx's WSGI transport: the whole request path, middleware
included, without a server). The generation itself must be clean: the default generation failed on the spec's
`distanceUnit` (`Mile` and `mile` made two constants MILE), and named geometry models made it write two models
alike and neither, so the client's geometry classes imported a missing module."""

import importlib
import json
import shutil
import subprocess
import sys
import uuid

import httpx
import pytest
from django.core.management import call_command
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections

from platform_site.api.authentication import token_issue
from tests.fields.helpers import square

pytestmark = pytest.mark.django_db

CONFIG = """package_name_override: generated_platform_client
project_name_override: generated-platform-client
post_hooks: []
content_type_overrides:
  image/png: application/octet-stream
  application/zip: application/octet-stream
"""


@pytest.fixture(scope="module")
def client_package(tmp_path_factory):
    """The generated package, imported (its generator's output is checked: no warning at all)."""
    generator = shutil.which("openapi-python-client", path=str(sys.executable.rsplit("/", 1)[0]))
    if generator is None:
        pytest.fail("openapi-python-client is not installed: `make install` installs the test tools")
    folder = tmp_path_factory.mktemp("generated-client")
    call_command("spectacular", "--format", "openapi-json", "--file", str(folder / "schema.json"))
    (folder / "config.yaml").write_text(CONFIG)
    run = subprocess.run(
        [generator, "generate", "--path", "schema.json", "--config", "config.yaml", "--output-path", "out"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
    )
    said = run.stdout + run.stderr
    assert run.returncode == 0, said
    assert "Warning" not in said and "rror" not in said, said
    sys.path.insert(0, str(folder / "out"))
    try:
        package = importlib.import_module("generated_platform_client")
        importlib.import_module("generated_platform_client.models")
        yield package
    finally:
        sys.path.remove(str(folder / "out"))
        for name in [m for m in sys.modules if m.startswith("generated_platform_client")]:
            del sys.modules[name]


def _api(package, area: str, operation: str):
    return importlib.import_module(f"{package.__name__}.api.{area}.{operation}")


@pytest.fixture
def client(client_package, owner):
    """The generated client, its requests served by the WSGI application in this thread, on the test's database
    connection: as Django's test client does, a request does not close it (`close_old_connections`)."""
    transport = httpx.WSGITransport(app=get_wsgi_application())
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield client_package.AuthenticatedClient(
            base_url="http://testserver", token=token_issue(owner), httpx_args={"transport": transport}
        )
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


def test_an_integration_through_the_generated_client(client_package, client, settings):
    models = client_package.models
    settings.WEBHOOK_ALLOW_PRIVATE_URLS = True

    users = _api(client_package, "core_users", "services_usermanagement_api_users_create")
    made = users.sync_detailed(client=client, body=models.CoreUserRequest(name="Ada", email="ada@example.com"))
    assert made.status_code == 201, made.content
    user = made.parsed
    assert isinstance(user, models.CoreUser) and user.email == "ada@example.com"

    farms = _api(client_package, "fields", "services_fields_api_users_farms_create")
    farm = farms.sync(str(user.id), client=client, body=models.FarmWriteRequest(name="Home"))
    assert isinstance(farm, models.Farm) and farm.name == "Home"

    # A field from the geometry models, with a crs naming WGS84 (the models the generation had lost)
    [[ring]] = square(-93.6, 42.0)["coordinates"]
    crs = models.GeoJSONNamedCrsInput(
        type_=models.GeoJSONNamedCrsInputType.NAME,
        properties=models.GeoJSONNamedCrsProperties(name=models.GeoJSONNamedCrsPropertiesName.EPSG4326),
    )
    geometry = models.GeoJSONPolygonInput(type_=models.GeoJSONPolygonInputType.POLYGON, coordinates=[ring], crs=crs)
    fields = _api(client_package, "fields", "services_fields_api_users_fields_create")
    key = str(uuid.uuid4())
    body = models.FieldCreateRequest(geometry=geometry, name="North", farm_id=farm.id)
    created = fields.sync_detailed(str(user.id), client=client, body=body, idempotency_key=key)
    assert created.status_code == 201, created.content
    field = created.parsed
    assert isinstance(field, models.Field) and field.name == "North" and field.area.unit == "ha"
    assert created.headers["Location"].endswith(f"/fields/{field.id}")
    # Its retry with the key: the same field, said to be replayed, documented so the client parses it
    again = fields.sync_detailed(str(user.id), client=client, body=body, idempotency_key=key)
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.parsed.id == field.id
    # The key with another body: a problem document, parsed as one
    other = models.FieldCreateRequest(geometry=geometry, name="South")
    reused = fields.sync_detailed(str(user.id), client=client, body=other, idempotency_key=key)
    assert reused.status_code == 422 and isinstance(reused.parsed, models.ProblemDetail)
    assert reused.parsed.error_key == "idempotencyKeyReused"

    intersects = _api(client_package, "fields", "services_fields_api_users_fields_intersects_create")
    query = models.IntersectsRequest(
        geometry=models.GeoJSONMultiPolygonInput(
            type_=models.GeoJSONMultiPolygonInputType.MULTIPOLYGON, coordinates=[[ring]]
        ),
        intersection_threshold=50.0,
    )
    found = intersects.sync(str(user.id), client=client, body=query)
    assert [f.id for f in found] == [field.id]

    listed = _api(client_package, "fields", "services_fields_api_fields_list").sync_detailed(client=client, size=1)
    assert listed.status_code == 200 and [f.id for f in listed.parsed] == [field.id]
    assert listed.headers["X-Total-Count"] == "1" and listed.headers["X-Request-Id"]

    # An enum of values that differ only by case: each has a constant, and the server takes it
    unit = models.ServicesBetaApiUsersMachinesFilesListDistanceUnit
    machine = _api(client_package, "assets_and_catalogs", "services_beta_api_users_machines_create").sync(
        str(user.id), client=client, body=models.MachineWriteRequest(name="8R", category="TRACTOR")
    )
    machine_files = _api(client_package, "assets_and_catalogs", "services_beta_api_users_machines_files_list")
    for constant in ("MILE_TITLE", "MILE_LOWER", "FEET", "FT"):
        answer = machine_files.sync_detailed(str(user.id), str(machine.id), client=client, distance_unit=unit[constant])
        assert answer.status_code == 200 and answer.parsed == [], answer.content

    webhook = _api(client_package, "webhooks", "services_alerts_api_alerts_webhooks_create").sync(
        client=client,
        body=models.WebhookCreateRequest(
            name="ops",
            url="http://127.0.0.1:9/hook",
            secret="s3cret-s3cret-s3cret",
            events=[models.WebhookEventNameEnum.FIELDCREATED],
        ),
    )
    assert isinstance(webhook, models.Webhook)

    link = _api(client_package, "magic_links", "services_widgets_api_magic_link_users_file_upload_create").sync(
        str(user.id), client=client, body=models.FileUploadLinkCreateRequest()
    )
    assert isinstance(link, models.MagicLinkCreated) and "/links/" in link.link and link.core_user_id == user.id

    # Another owner's user: a 404 problem document, whatever the client asks
    foreign = fields.sync_detailed(str(uuid.uuid4()), client=client, body=body)
    assert foreign.status_code == 404 and foreign.parsed.error_key == "notFound"
    # A request id of the client's is kept
    sent = "trace-1.2:3"
    traced = _api(client_package, "core_users", "services_usermanagement_api_users_list").sync_detailed(
        client=client, x_request_id=sent
    )
    assert traced.headers["X-Request-Id"] == sent and [u.id for u in traced.parsed] == [user.id]
    assert json.loads(traced.content)[0]["id"] == str(user.id)
